"""Several ranks: discovery in the run layout, rank identity, duplicates, missing ranks, parallelism."""

import json
import shutil

import pandas as pd
import pytest

from conftest import DATA
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces import read_run_traces
from dnabert_scaling.traces.model import validate
from dnabert_scaling.tools.synth import write_study_trace
from tracegen import write_ground_truth


def kineto_doc(rank, world, start=1.0):
    return {
        "distributedInfo": {"rank": rank, "world_size": world},
        "traceEvents": [
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": 0,
                "tid": 7,
                "ts": start,
                "dur": 2.5 + rank,  # ranks of one run never have one GPU timeline (traces.identity)
                "args": {"device": rank, "stream": 7, "correlation": 1},
            }
        ],
    }


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("run")
    write_study_trace(run, ranks=2, steps=2, warmup=1, kernels_per_step=30, buckets=2, host_factor=5)
    return run


def test_run_layout_scorep_ranks_from_directory_names(study_run):
    tr = read_run_traces(study_run, world_size=2, workers=1)
    validate(tr)
    assert tr.rank_ids == [0, 1]
    assert [tr.ranks[r]["world_size"] for r in (0, 1)] == [2, 2]  # filled in from the caller
    assert tr.ranks[1]["source"].endswith("traces/scorep-rank1/traces.otf2")
    assert sorted(tr.gpu["device"].unique().tolist()) == [0, 1]


def test_parallel_read_equals_serial(study_run):
    serial = read_run_traces(study_run / "traces", workers=1)
    parallel = read_run_traces(study_run / "traces", workers=2)
    pd.testing.assert_frame_equal(serial.gpu, parallel.gpu)
    pd.testing.assert_frame_equal(serial.host, parallel.host)
    assert serial.ranks == parallel.ranks


def test_missing_rank_is_named(study_run):
    with pytest.raises(ArtifactError, match=r"rank\(s\) 2, 3 of world size 4 missing .* \(found ranks \[0, 1\]\)"):
        read_run_traces(study_run, world_size=4, workers=1)
    with pytest.raises(ArtifactError, match=r"rank\(s\) 1 outside world size 1"):
        read_run_traces(study_run, world_size=1, workers=1)


def test_duplicate_ranks_are_named(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(kineto_doc(0, 2)))
    b.write_text(json.dumps(kineto_doc(0, 2, start=5.0)))
    with pytest.raises(ArtifactError, match=r"rank 0 appears twice: in .*a\.json and in .*b\.json"):
        read_run_traces([a, b], workers=1)


def test_kineto_run_directory_and_recorded_world_size(tmp_path):
    traces = tmp_path / "run" / "traces"
    traces.mkdir(parents=True)
    for r in (0, 1, 2):
        (traces / f"rank{r}.json").write_text(json.dumps(kineto_doc(r, 3)))
    tr = read_run_traces(tmp_path / "run", workers=1)
    assert tr.rank_ids == [0, 1, 2] and tr.format == "kineto"
    (traces / "rank1.json").unlink()
    with pytest.raises(ArtifactError, match=r"rank\(s\) 1 of world size 3 missing"):
        read_run_traces(tmp_path / "run", workers=1)
    with pytest.raises(ArtifactError, match=r"expected world size 2, but the traces record \[3\]"):
        read_run_traces(tmp_path / "run", world_size=2, workers=1)


def test_mixed_formats_refused(tmp_path):
    traces = tmp_path / "traces"
    write_ground_truth(traces / "scorep-rank0")
    (traces / "rank1.json").write_text(json.dumps(kineto_doc(1, 2)))
    with pytest.raises(ArtifactError, match="both Kineto files"):
        read_run_traces(tmp_path, workers=1)


def test_mpi_archive_holds_all_ranks():
    tr = read_run_traces([DATA / "traces" / "scorep-cuda-2rank"], world_size=2, workers=1)
    assert tr.rank_ids == [0, 1]


def test_scorep_failed_directories_are_pointed_out(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copytree(DATA / "traces" / "scorep-mpi-pingpong", traces / "scorep-failed-20250101_1200")
    with pytest.raises(ArtifactError, match="scorep-failed-20250101_1200"):
        read_run_traces(tmp_path)


def test_an_untraced_run_folder_is_named_as_one(tmp_path):
    """A tester's case: summarize or predict on an untraced run (tracer none) said its config.json was not a Kineto
    trace; a run folder whose records are there and whose traces/ folder is not is named as one."""
    import shutil

    from conftest import ROOT

    from dnabert_scaling.errors import ArtifactError
    from dnabert_scaling.traces.loader import discover

    run = tmp_path / "ws1-none-r0"
    shutil.copytree(ROOT / "expected/reference/h200-b8/ws1-none-r0", run)
    with pytest.raises(ArtifactError, match="a run folder without a traces/ folder: the run was not traced"):
        discover(run)
