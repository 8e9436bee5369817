"""The run and sweep folder layouts: one spelling, read back by the analysis."""

import json

import pytest

from dnabert_scaling.analysis.runs import discover, trace_paths
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout, SweepLayout, parse_run_name, run_name, scorep_rank_of
from dnabert_scaling.run.sweep.spec import RunSpec
from dnabert_scaling.run.sweep.driver import plan_runs


@pytest.mark.parametrize(
    "ws,tracer,repeat,variant", [(1, "none", 0, ""), (8, "scorep", 0, ""), (1, "none", 2, "noddp"), (4, "torch", 11, "")]
)
def test_run_name_round_trip(ws, tracer, repeat, variant):
    name = run_name(ws, tracer, repeat, variant)
    parsed = parse_run_name(name)
    assert (parsed.world_size, parsed.tracer, parsed.repeat, parsed.variant) == (ws, tracer, repeat, variant)


@pytest.mark.parametrize("name", ["ws1-perf-r0", "ws-none-r0", "ws1-none-r0.failed-1", "busbw-ws4", "ws1-none"])
def test_parse_run_name_refuses_other_folders(name):
    assert parse_run_name(name) is None


def test_scorep_rank_dir_names():
    assert scorep_rank_of(RunLayout("x").scorep_dir(7).name) == 7
    assert scorep_rank_of("scorep-rank") is None and scorep_rank_of("rank3") is None


def test_sweep_plan_uses_the_layout(tmp_path):
    plan = plan_runs(tmp_path, [1, 4], "scorep", 2, True, ["--steps", "3"])
    assert [s.run_dir.name for s in plan] == [
        "ws1-none-r0",
        "ws1-none-r1",
        "ws1-none-r0-noddp",
        "ws1-none-r1-noddp",
        "ws1-scorep-r0",
        "ws4-none-r0",
        "ws4-none-r1",
        "ws4-scorep-r0",
    ]
    assert all(s.name == s.run_dir.name for s in plan)
    assert RunSpec(1, "none", 0, tmp_path, variant="noddp").name == "ws1-none-r0-noddp"


def _write_run(layout: RunLayout, ws: int, tracer: str) -> None:
    layout.root.mkdir(parents=True)
    layout.summary.write_text(json.dumps({"status": "ok", "world_size": ws, "tracer": tracer}))


def test_discover_reads_what_the_layout_names(tmp_path):
    sweep = SweepLayout(tmp_path)
    torch_run = sweep.run(2, "torch", 0)
    _write_run(sweep.run(2, "none", 0), 2, "none")
    _write_run(torch_run, 2, "torch")
    torch_run.traces.mkdir()
    for r in (1, 0):
        torch_run.kineto_trace(r).write_bytes(b"")
    (tmp_path / "ws2-none-r0.failed-20260101").mkdir()  # a folder the sweep set aside: not a run
    sweep.busbw(2).write_text(json.dumps({"sizes_source": "test"}))
    sweep.busbw_log(2).write_text("log")
    inputs = discover([tmp_path])
    assert [r.name for r in inputs.runs] == ["ws2-none-r0", "ws2-torch-r0"]
    assert inputs.busbw == {2: {"sizes_source": "test"}}
    assert [p.name for p in trace_paths(inputs.runs[1])] == ["rank0.json.gz", "rank1.json.gz"]
    assert sweep.run_dirs() == [sweep.run(2, "none", 0).root, torch_run.root]


def test_discover_refuses_a_folder_without_runs(tmp_path):
    SweepLayout(tmp_path).busbw(1).write_text("{}")
    with pytest.raises(ArtifactError, match="holds no run folders"):
        discover([tmp_path])
    assert SweepLayout(tmp_path / "absent").run_dirs() == []


def test_rank_files():
    run = RunLayout("run")
    assert str(run.steps(3)) == "run/rank3/steps.jsonl"
    assert str(run.rank_summary(0)) == "run/rank0/summary.json"
    assert [str(p) for p in run.rank_traces(1)] == [
        "run/traces/rank1.json.gz",
        "run/traces/rank1.json",
        "run/traces/scorep-rank1",
    ]
