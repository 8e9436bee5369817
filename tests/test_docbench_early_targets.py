"""The first build's targets in ARTIFACT.md F (tools/docbench_early_targets.py) are judged by the rule of
every measured target (tools/cost_verdicts.py) on the shipped repeats and rounds, never from a median of
a few alone: the port's speed-up over eager attention and its MFU per repeat, the default torch tracer's
cost over the lockstep rounds of every benchmark file that ran it."""

from __future__ import annotations

import json

import pytest

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import docbench_early_targets as early
from dnabert_scaling.tools.docbench_targets import TARGET_SETS
from dnabert_scaling.tools.docfacts import Facts

PEAK = 1e15


def _train(tmp_path, sdpa_ms, eager_ms, params=1e8, shape=(128, 128)):
    folder = tmp_path / "expected" / "reference" / "h200-bench"
    folder.mkdir(parents=True, exist_ok=True)
    batch, seq = shape
    rows = [
        {"batch": batch, "seq": seq, "attention": a, "params": params, "step_ms_repeats": ms}
        for a, ms in (("sdpa", sdpa_ms), ("eager", eager_ms))
    ]
    (folder / "bench_train.json").write_text(json.dumps({"peak_bf16_flops": PEAK, "results": rows}))
    return Facts(tmp_path)


def test_repeats_that_all_clear_a_lower_bound_meet_it_only_when_they_are_enough(tmp_path):
    sdpa = [10.0] * 6
    eager = [16.0, 16.5, 17.0, 17.5, 18.0, 19.0]  # 1.6-1.9x in every repeat
    text = early.port_targets(_train(tmp_path, sdpa, eager), None)
    assert "sdpa over eager at 128 x 128 (>= 1.5x): 1.73x (repeats 1.60x-1.90x, 6 of 6 at or above the bound), met" in text
    # MFU per repeat: 6 x 1e8 x 128 x 128 FLOPs in 10 ms against a 1e15 peak = 98.3%, with its own verdict
    assert "MFU of sdpa at 128 x 128 (>= 35%): 98.3% (repeats 98.3%-98.3%, 6 of 6 at or above the bound), met" in text


def test_three_repeats_below_a_bound_are_not_established_as_missed(tmp_path):
    text = early.port_targets(_train(tmp_path, [43.4, 43.4, 43.4], [51.2, 51.2, 51.3], params=1.17e8), None)
    assert "1.18x (repeats 1.18x-1.18x, 0 of 3 at or above the bound)" in text
    assert text.endswith("each not established: 3 repeats, too few for a 95% interval of the median")
    assert "missed" not in text and "not met" not in text


def test_repeats_that_cannot_be_paired_or_read_are_not_established(tmp_path):
    text = early.port_targets(_train(tmp_path, [10.0] * 6, [16.0] * 5), None)
    assert "sdpa over eager at 128 x 128 (>= 1.5x), not established (sdpa and eager differ in their number of repeats)" in text
    text = early.port_targets(_train(tmp_path, [10.0] * 5 + [None], [16.0] * 6), None)
    assert "not established (1 of 6 repeats hold a step time that is not a positive number)" in text
    assert ", met" not in text.split("MFU")[0] and "missed" not in text
    for impossible in (0.0, -16.0):  # no step takes no time, or less
        text = early.port_targets(_train(tmp_path / str(impossible), [10.0] * 6, [16.0] * 5 + [impossible]), None)
        assert text.startswith("sdpa over eager at 128 x 128 (>= 1.5x), not established (1 of 6 repeats hold a step time")
    text = early.port_targets(_train(tmp_path / "tiny", [5e-324] * 6, [16.0] * 6), None)  # underflows to 0 s
    assert "missed" not in text and "met" not in text
    text = early.port_targets(_train(tmp_path / "nosdpa", [], [16.0] * 6), None)
    assert "sdpa over eager at 128 x 128 (>= 1.5x), not established (no repeats of sdpa)" in text


def test_a_bench_train_file_of_another_shape_is_refused_naming_it(tmp_path):
    folder = tmp_path / "expected" / "reference" / "h200-bench"
    folder.mkdir(parents=True)
    (folder / "bench_train.json").write_text(json.dumps({"results": {"batch": 8}}))
    with pytest.raises(ArtifactError) as err:
        early.port_targets(Facts(tmp_path), None)
    assert "bench_train.json" in str(err.value) and "'results' is not a list" in str(err.value)
    (folder / "bench_train.json").write_text(json.dumps({"results": [{"batch": [8], "seq": 70}]}))
    with pytest.raises(ArtifactError, match="batch and seq"):
        early.port_targets(Facts(tmp_path), None)
    assert early.port_targets(Facts(tmp_path / "none"), None).startswith("not judged")
    text = early.port_targets(_train(tmp_path / "p", [10.0] * 6, [16.0] * 6, params="many"), None)
    assert "MFU of sdpa at 128 x 128 (>= 35%), not judged (no sdpa row at 128 x 128 with a positive parameter count" in text
    text = early.port_targets(_train(tmp_path / "q", [10.0] * 6, [16.0] * 6, params=-1), None)
    assert "MFU of sdpa at 128 x 128 (>= 35%), not judged" in text
    (folder / "bench_train.json").write_text(json.dumps({"results": []}))
    assert early.port_targets(Facts(tmp_path), None) == "not judged: `h200-bench/bench_train.json` holds no results"
    row = {"batch": 8, "seq": 70, "attention": "sdpa", "step_ms_repeats": [1.0]}
    (folder / "bench_train.json").write_text(json.dumps({"results": [row, row]}))
    with pytest.raises(ArtifactError, match="lists sdpa at 8 x 70 twice"):
        early.port_targets(Facts(tmp_path), None)


def _lockstep(root, relative, rounds_by_run, config="32x70"):
    """A merge of runs (one per list) of the torch mode's round ratios at ``config``."""
    runs, ratios, rounds = [], [], []
    for i, xs in enumerate(rounds_by_run):
        name = f"bench-{i}.json"
        runs.append({"file": name, "rounds": len(xs), "date": "2026-12-04", "revision": f"{relative}:{i}", "wall_s": 10.0 + i})
        for x in xs:
            rounds.append({"round": len(ratios), "source": name, "processes": {"untraced": {}, "torch": {}}})
            ratios.append([len(ratios), x])
    path = root / "expected" / "reference" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    modes = [{"mode": "torch", "config": config, "ratio_median": 1.0, "round_ratios": ratios}]
    path.write_text(json.dumps({"modes": modes, "rounds": rounds, "merged_from": runs, "configs": [config]}))


def test_the_torch_target_pools_every_file_that_ran_torch_and_holds_the_runs_against_it(tmp_path):
    assert early.torch_target(Facts(tmp_path), None).startswith("not judged")
    (first, said_first), (second, said_second) = TARGET_SETS[0], TARGET_SETS[2]
    _lockstep(tmp_path, first, [[1.30, 1.35, 1.40, 1.42], [1.38, 1.41, 1.44]])
    _lockstep(tmp_path, second, [[1.36, 1.39, 1.45]])
    text = early.torch_target(Facts(tmp_path), None)
    assert text.startswith(
        f"missed: 1.40x over the lockstep rounds ({said_first}'s 7, {said_second}'s 3; 95% interval of the median"
    )
    # one run of six rounds wholly under the bound vetoes the verdict the pooled rounds alone would give
    _lockstep(tmp_path, first, [[1.30, 1.32, 1.35, 1.38, 1.40, 1.42]] * 3)
    _lockstep(tmp_path, second, [[1.00, 1.01, 1.02, 1.03, 1.04, 1.00]])
    text = early.torch_target(Facts(tmp_path), None)
    assert text.startswith("not established: ") and "but the interval of a run's own rounds lies on the other side" in text


def test_the_in_process_rounds_are_said_beside_and_judged_by_the_same_rule(tmp_path):
    folder = tmp_path / "expected" / "reference" / "h200-bench"
    folder.mkdir(parents=True)
    row = {"batch": 32, "seq": 70, "mode": "torch:cuda", "dilation_rounds": [1.25, 1.0505, 1.06, 1.22, 1.15]}
    (folder / "bench_trace.json").write_text(json.dumps({"rows": [row]}))
    text = early.torch_target(Facts(tmp_path), None)
    assert "the table's in-process rounds: 5 of 5 above the bound (the lowest 1.0505), not established (5 rounds, too few" in text
    row["dilation_rounds"] = [-1.0] * 8  # no ratio of step times is 0 or below: never "met"
    (folder / "bench_trace.json").write_text(json.dumps({"rows": [row]}))
    assert early.torch_target(Facts(tmp_path), None).endswith(
        "the table's in-process rounds: not established (a round's ratio is not a positive number)"
    )


def test_the_lockstep_figure_at_another_size_is_a_figure_with_its_interval(tmp_path):
    assert early.torch_lockstep(Facts(tmp_path), "128x128").startswith("(no lockstep rounds")
    first, said = TARGET_SETS[0]
    _lockstep(tmp_path, first, [[1.10, 1.12, 1.14, 1.16, 1.18, 1.20]], config="128x128")
    assert early.torch_lockstep(Facts(tmp_path), "128x128") == (
        f"1.15x over the lockstep rounds at 128x128 ({said}'s 6; 95% interval of the median 1.10-1.20)"
    )


def test_every_shipped_lockstep_file_is_pooled_once_and_the_rest_said(tmp_path):
    merged, _ = TARGET_SETS[0]
    _lockstep(tmp_path, merged, [[1.30, 1.32, 1.35, 1.38, 1.40, 1.42]] * 2)
    # one of the merge's runs shipped again as a file of its own: its rounds are pooled once
    inner = json.loads((tmp_path / "expected" / "reference" / merged).read_text())
    run = inner["merged_from"][0]
    single = {
        "modes": [{"mode": "torch", "config": "32x70", "round_ratios": [[k, x] for k, x in enumerate([1.30, 1.32, 1.35, 1.38, 1.40, 1.42])]}],
        "rounds": [{"round": k, "processes": {"untraced": {}, "torch": {}}} for k in range(6)],
        "date": run["date"], "revision": run["revision"], "wall_s": run["wall_s"], "configs": ["32x70"],
    }  # fmt: skip
    calls = tmp_path / "expected" / "reference" / "h200-bench" / "gpu-call-x"
    calls.mkdir(parents=True)
    (calls / "bench-0.json").write_text(json.dumps(single))
    _lockstep(tmp_path, "h200-bench/gpu-call-y/bench-y.json", [[1.36, 1.37, 1.39]])  # a run of its own
    older = {
        "modes": [{"mode": "torch", "config": "32x70", "ratio_median": 1.4}],
        "rounds": [{"round": 0, "processes": {"torch": {}}}],
    }
    (calls / "bench-old.json").write_text(json.dumps(older))
    (calls / "bench-notes.json").write_text(json.dumps({"what": "not a benchmark output"}))  # no modes: not read
    text = early.torch_target(Facts(tmp_path), None)
    assert text.startswith(f"missed: 1.37x over the lockstep rounds ({TARGET_SETS[0][1]}'s 12, `gpu-call-y/bench-y.json`'s 3; ")
    assert "left out: `gpu-call-x/bench-old.json` (its torch at 32x70 keeps no per-round ratios)" in text
    # a file whose every round started torch yet kept no ratio is said, never passed over
    (calls / "bench-old.json").write_text(
        json.dumps({**older, "modes": [{"mode": "torch", "config": "32x70", "round_ratios": []}]})
    )
    text = early.torch_target(Facts(tmp_path), None)
    assert "`gpu-call-x/bench-old.json`'s 0" in text and text.split("; the table")[0].endswith(
        "; 1 round cut short or with a failed process, not counted)"
    )
