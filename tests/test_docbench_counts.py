"""Figures ARTIFACT.md quotes in its prose about the shipped benchmark come from the shipped file
(tools/docbench_counts.py), and the list of GPU call folders from the folders shipped
(docfolders.gpu_call_folders): nothing there is typed by hand."""

from __future__ import annotations

import json

from dnabert_scaling.tools import docbench_counts, docfolders
from dnabert_scaling.tools.docfacts import Facts


def _shipped(tmp_path, **doc):
    path = tmp_path / "expected" / "reference" / docbench_counts.SHIPPED
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return Facts(tmp_path)


def _experiment(enters, queries, launches, rnd=0, source="bench-a.json"):
    regions = {"cuCtxGetDevice_v2": queries, "cuDevicePrimaryCtxGetState": queries // 4, "cuLaunchKernel": launches}
    regions["cuLaunchKernelEx"] = 0
    return {"host_enters": enters, "top_host_regions": regions, "source": source, "round": rnd}


def test_host_events_are_the_counted_experiments_of_each_mode(tmp_path):
    counts = {
        "scorep-all": {"experiments": [_experiment(1000, 600, 50), _experiment(1200, 720, 60, rnd=1)]},
        "scorep-launch": {"experiments": [{"host_enters": 80, "round": 0}, {"host_enters": 80, "round": 1}]},
    }
    text = docbench_counts.host_events(_shipped(tmp_path, counts=counts, configs=["8x70"], warmup=5, steps=30), None)
    assert text.startswith("1,000-1,200 Enter events in each of 2 counted processes of Score-P as released")
    assert "5 warm-up and 30 measured steps at each of 8x70" in text
    assert "60.0% of them `cuCtxGetDevice_v2` and 15.0% `cuDevicePrimaryCtxGetState`, 5.0% kernel launches" in text
    assert "launch-only Score-P (`scorep-launch`) records 80 for the same work" in text
    # an experiment that counted nothing is not a process of zero events
    counts["scorep-all"]["experiments"] = [{"host_enters": 0}, {"host_enters": None}]
    assert docbench_counts.host_events(_shipped(tmp_path, counts=counts), None).startswith("(no counted experiment")


def test_the_untraced_spread_gives_every_round_and_the_widest_run(tmp_path):
    rounds = [
        {"round": k, "source": src, "steps_ms": {"8x70": {"untraced": [x, x, x]}}}
        for k, (src, x) in enumerate([("a.json", 20.0), ("a.json", 30.0), ("b.json", 40.0), ("b.json", 42.0)])
    ]
    rounds.append({"round": 4, "source": "b.json", "steps_ms": {"8x70": {"untraced": [None]}}})  # not a step time
    text = docbench_counts.untraced_spread(_shipped(tmp_path, configs=["8x70"], rounds=rounds), None)
    assert "20.0-42.0 ms at 8x70 (2.10x over 4 rounds of 2 runs; within one run up to 1.50x, a.json)" in text
    assert docbench_counts.untraced_spread(_shipped(tmp_path, configs=["8x70"], rounds=[]), None).startswith("(no untraced")


def test_the_gpu_call_folders_are_those_shipped(tmp_path):
    assert docfolders.gpu_call_folders(Facts(tmp_path), None) == "(no GPU call folder shipped)"
    base = tmp_path / "expected" / "reference" / "h200-bench"
    for name in ("gpu-call-2026-12-04", "gpu-call-2026-12-03"):
        (base / name).mkdir(parents=True)
        (base / name / "NOTES.md").write_text("notes")
    (base / "gpu-call-2026-12-05").mkdir()
    (base / "gpu-call-file").write_text("not a folder")
    other = tmp_path / "expected" / "reference" / "h100-bench" / "gpu-call-2026-12-06"  # a call that got an H100
    other.mkdir(parents=True)
    (other / "NOTES.md").write_text("notes")
    (tmp_path / "expected" / "reference" / "cpu-bench" / "gpu-call-x").mkdir(parents=True)  # not a card's folder
    assert docfolders.gpu_call_folders(Facts(tmp_path), None) == (
        "`h200-bench/gpu-call-2026-12-03/`, `h200-bench/gpu-call-2026-12-04/`, "
        "`h200-bench/gpu-call-2026-12-05/` (no `NOTES.md`) and `h100-bench/gpu-call-2026-12-06/`"
    )


def test_a_hand_edited_file_of_other_shapes_reads_as_holding_nothing_there(tmp_path):
    for counts in ([1], {"scorep-all": [1]}, {"scorep-all": {"experiments": {"a": 1}}}):
        assert docbench_counts.host_events(_shipped(tmp_path, counts=counts), None).startswith("(no counted experiment")
    for regions in (
        {"cuCtxGetDevice_v2": "x"},
        {"cuCtxGetDevice_v2": 11},
        {"cuCtxGetDevice_v2": -1},
    ):  # no count, or more than all
        odd = {"scorep-all": {"experiments": [{"host_enters": 10, "top_host_regions": regions}]}}
        text = docbench_counts.host_events(_shipped(tmp_path, counts=odd, configs="8x70"), None)
        assert text.endswith(
            "are not read: a counted process of `scorep-all` has a region count that is not a whole number at most its events)"
        )
    twice = {"scorep-all": {"experiments": [_experiment(1000, 600, 50)] * 2}}  # one process counted twice
    assert "are not read: `scorep-all` lists one counted process twice" in docbench_counts.host_events(
        _shipped(tmp_path, counts=twice), None
    )
    unlisted = {"scorep-all": {"experiments": [{"host_enters": 10, "top_host_regions": {"cuLaunchKernel": 2}, "round": 0}]}}
    text = docbench_counts.host_events(_shipped(tmp_path, counts=unlisted), None)  # a top list, not every region: no 0%
    assert "a share not known (not among the listed regions) of them `cuCtxGetDevice_v2`" in text
    assert docbench_counts.host_events(
        _shipped(tmp_path, counts={"scorep-all": {"experiments": [{"host_enters": True}]}}), None
    ).startswith("(no counted experiment")
    for rounds in ([{"steps_ms": [1]}], [{"steps_ms": {"8x70": [20.0]}}]):
        assert docbench_counts.untraced_spread(_shipped(tmp_path, configs=["8x70"], rounds=rounds), None).startswith(
            "(no untraced"
        )
    assert docbench_counts.untraced_spread(_shipped(tmp_path, configs="8x70"), None).startswith("(no untraced")
    again = [{"round": 0, "source": "a.json", "steps_ms": {"8x70": {"untraced": [20.0]}}}] * 2
    assert "one round of one run is listed twice" in docbench_counts.untraced_spread(
        _shipped(tmp_path, configs=["8x70"], rounds=again), None
    )
