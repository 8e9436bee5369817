"""Bad input: every case is an ArtifactError naming the file and the problem (no traceback)."""

import gzip
import json
import shutil

import numpy as np
import pytest

from conftest import DATA
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces import NoGpuActivityError, read_run_traces, read_trace
from dnabert_scaling.traces.otf2_writer import OP_ENTER, OP_LEAVE, ScoreP9Writer

CASITA = DATA / "traces" / "scorep-cuda-2rank"
H200 = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"


@pytest.fixture
def casita_copy(tmp_path):
    d = tmp_path / "exp"
    shutil.copytree(CASITA, d)
    return d


def test_missing_anchor(tmp_path):
    from dnabert_scaling.traces.otf2_reader import read_otf2

    empty = tmp_path / "scorep-rank0"
    empty.mkdir()
    with pytest.raises(ArtifactError, match=r"no OTF2 anchor file \(traces.otf2\) in this directory") as exc:
        read_otf2(empty)
    assert str(empty) in str(exc.value)
    with pytest.raises(ArtifactError, match="OTF2 anchor file not found"):
        read_trace(tmp_path / "nothing" / "traces.otf2")
    with pytest.raises(ArtifactError, match="trace not found"):
        read_trace(tmp_path / "nothing")


def test_missing_definitions(casita_copy):
    (casita_copy / "traces.def").unlink()
    with pytest.raises(ArtifactError, match=r"traces\.def of this archive is missing") as exc:
        read_trace(casita_copy)
    assert str(casita_copy / "traces.otf2") in str(exc.value)


def test_missing_event_file(casita_copy):
    (casita_copy / "traces" / "8589934592.evt").unlink()
    with pytest.raises(
        ArtifactError, match=r"event file traces/8589934592\.evt of location 'CUDA\[0:7\]' \(MPI Rank 0\) is missing"
    ):
        read_trace(casita_copy)


def test_truncated_event_file(casita_copy):
    evt = casita_copy / "traces" / "8589934592.evt"
    evt.write_bytes(evt.read_bytes()[:900])
    with pytest.raises(ArtifactError, match=r"traces/8589934592\.evt, location 'CUDA\[0:7\]'.*truncated or corrupt"):
        read_trace(casita_copy)


def test_corrupt_anchor(casita_copy):
    (casita_copy / "traces.otf2").write_text("not an anchor\n")
    with pytest.raises(ArtifactError, match="not a readable OTF2 archive"):
        read_trace(casita_copy)


def test_definitions_promise_more_events_than_the_file_holds(tmp_path):
    d = tmp_path / "scorep-rank0"
    with ScoreP9Writer(d, creator="test") as w:
        s = w.stream(0, 7)
        w.thread("Master thread")
        w.cuda_window()
        r = w.region("k", "kernel")._ref
        w.write_events(s, np.arange(10) * 5, [OP_ENTER, OP_LEAVE] * 5, [r] * 10)
        s._number_of_events_written += 4  # as if the file had been cut at a chunk boundary
    with pytest.raises(ArtifactError, match=r"10 of 14 events could be read: the file is truncated"):
        read_trace(d)


def test_non_monotonic_timestamps(tmp_path):
    """OTF2's writer refuses decreasing times, so the event file is edited after writing: OTF2
    stores each timestamp as a raw little-endian uint64, which is found and replaced."""
    import otf2

    d = tmp_path / "scorep-rank0"
    times = [1_000_003, 2_000_003, 3_000_003, 4_000_003]
    with ScoreP9Writer(d, creator="test") as w:
        s = w.stream(0, 7)
        w.thread("Master thread")
        w.cuda_window()
        r = w.region("k", "kernel")._ref
        w.write_events(s, times, [OP_ENTER, OP_LEAVE, OP_ENTER, OP_LEAVE], [r] * 4)
        ref = s._ref
    evt = d / "traces" / f"{ref}.evt"
    data = evt.read_bytes()
    old, new = (3_000_003).to_bytes(8, "little"), (1_500_003).to_bytes(8, "little")
    assert data.count(old) == 1
    evt.write_bytes(data.replace(old, new))
    with otf2.reader.open(str(d / "traces.otf2")) as tr:  # still well-formed OTF2
        assert [ev.time for _, ev in tr.events] == [1_000_003, 2_000_003, 1_500_003, 4_000_003]
    with pytest.raises(
        ArtifactError, match=r"CUDA\[0:7\].*not monotonic \(event 3 at tick 1500003 follows tick 2000003\)"
    ) as exc:
        read_trace(d)
    assert f"traces/{ref}.evt" in str(exc.value)


def test_corrupt_and_truncated_gzip(tmp_path):
    bad = tmp_path / "rank0.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage-garbage-garbage")
    with pytest.raises(ArtifactError, match="corrupt or truncated gzip") as exc:
        read_trace(bad)
    assert str(bad) in str(exc.value)
    cut = tmp_path / "rank1.json.gz"
    cut.write_bytes(H200.read_bytes()[:200_000])
    with pytest.raises(ArtifactError, match="corrupt or truncated gzip"):
        read_trace(cut)


def test_invalid_json(tmp_path):
    p = tmp_path / "rank0.json"
    p.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel",')
    with pytest.raises(ArtifactError, match=r"not valid JSON \(line 1, column"):
        read_trace(p)
    q = tmp_path / "rank1.json"
    q.write_text(json.dumps({"events": []}))
    with pytest.raises(ArtifactError, match="no 'traceEvents' list"):
        read_trace(q)
    z = tmp_path / "rank2.json.gz"
    z.write_bytes(gzip.compress(b"[1, 2"))
    with pytest.raises(ArtifactError, match="not valid JSON"):
        read_trace(z)


def test_kineto_without_gpu_activity(tmp_path):
    p = tmp_path / "rank0.json"
    p.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0},
                    {"ph": "X", "cat": "user_annotation", "name": "ds:step", "pid": 1, "tid": 1, "ts": 0.5, "dur": 9.0},
                ]
            }
        )
    )
    with pytest.raises(NoGpuActivityError, match="no GPU activity in this trace"):
        read_trace(p)


def test_kineto_negative_duration(tmp_path):
    p = tmp_path / "rank0.json"
    p.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5.0, "dur": -1.0, "args": {"stream": 7}}
                ]
            }
        )
    )
    with pytest.raises(ArtifactError, match="negative duration"):
        read_trace(p)


def test_not_a_trace(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    with pytest.raises(ArtifactError, match="not a trace"):
        read_trace(p)
    with pytest.raises(ArtifactError, match="no traces found"):
        read_run_traces(tmp_path)


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    rc = cli_main(["summarize", str(DATA / "traces" / "scorep-mpi-pingpong")])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("dnabert-scaling summarize: error: ") and "no GPU streams" in err
    assert "Traceback" not in err
    bad = tmp_path / "rank0.json.gz"
    bad.write_bytes(b"nope")
    assert cli_main(["summarize", str(bad)]) == 2
    assert "corrupt or truncated gzip" in capsys.readouterr().err
