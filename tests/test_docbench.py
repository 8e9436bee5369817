"""The generated block on Score-P's tracing cost (tools/docbench.py) says what its JSON says: the
targets met, missed or not established from the 95% interval of the median of the rounds, the
per-call reading from the per-call figures, and the device-synchronisation caveat only for rounds
that ended their steps that way."""

from __future__ import annotations

import json
import statistics

import pytest
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import cost_verdicts, docbench, docbench_calls, docbench_targets
from dnabert_scaling.tools.docfacts import Facts

D = docbench.LAUNCH_MODE  # the artifact's default Score-P mode: the targets are judged on its rows


def _row(mode, config, ratio, **extra):
    return {"mode": mode, "config": config, "ratio_median": ratio, "ratio_min": ratio, "ratio_max": ratio, "rounds": 3,
            "pooled_ratio_median": ratio, "pooled_ratio_q1": ratio, "pooled_ratio_q3": ratio, "pairs": 90,
            "step_ms_median": 20.0, "trace_bytes_per_step": None, "kernels_found_share": None, **extra}  # fmt: skip


def _doc(**parts):
    """A bench-trace output of 30 measured steps after 5 warm-up steps, each ended by a stream wait."""
    return {"device": "GPU", "steps": 30, "warmup": 5, "step_sync": "stream", **parts}


def _block(tmp_path, **doc):
    folder = tmp_path / "expected" / "reference" / "h200-bench"
    folder.mkdir(parents=True)
    (folder / "bench-trace-scorep.json").write_text(json.dumps(doc))
    return docbench.bench_trace_scorep(Facts(tmp_path), None)


def test_targets_and_per_call_reading_come_from_the_data(tmp_path):
    def rr(x):  # one round, ratio x
        return {"round_ratios": [[0, x]]}

    modes = [
        _row("untraced", "8x70", 1.0),
        _row("torch", "8x70", 1.30, **rr(1.30)),
        _row(D, "8x70", 1.20, trace_bytes_per_step=60e3, kernels_found_share=1.0, **rr(1.20)),
        _row("scorep-nodriver", "8x70", 1.10),
        _row("torch", "32x70", 1.05, **rr(1.05)),
        _row(D, "32x70", 1.10, trace_bytes_per_step=60e3, kernels_found_share=1.0, **rr(1.10)),
    ]
    turns = {  # per-call turns of the one round that timed them: (cuCtxGetDevice ns, launch ns)
        "untraced": (500.0, 9000.0), "scorep-all": (1200.0, 15000.0), "scorep-launch": (510.0, 12400.0),
        "scorep-nodriver": (505.0, 12000.0), "cupti-kernels": (505.0, 11000.0)}  # fmt: skip
    per_call = {m: [{"cuCtxGetDevice_ns": q, "launch_ns": x}] for m, (q, x) in turns.items()}
    calls = [{"mode": m, "turns": 9, "cuCtxGetDevice_ns": q, "launch_ns": x} for m, (q, x) in turns.items()]
    rounds = [{"round": 0, "per_call": per_call}, {"round": 1, "per_call": {"torch": [{"launch_ns": 99000.0}]}}]
    text = _block(tmp_path, device="GPU", steps=30, warmup=5, step_sync="stream", modes=modes, per_call=calls, rounds=rounds)
    # one round is a median below the bound, not a result: too few rounds for an interval
    assert "8x70: 1.20x against <= 1.25x (not established: 1 round, too few for a 95% interval of the median; 1 of 1" in text
    assert (
        "8x70: 1.20x against torch.profiler's 1.30x, medians of the 1 rounds both ran (not established, the cheaper in 1 of 1 "
        "rounds, sign test p = 1; Score-P's ratio minus torch.profiler's, per round: 1 round, too few" in text
    )
    assert (
        "32x70: 1.10x against <= 1.12x (not established: 1 round" in text
        and "32x70: 1.10x against torch.profiler's 1.05x, medians" in text
    )
    assert "(met" not in text.split("trace 60 kB")[0].split("Targets of the default mode")[1]
    assert "CUPTI's kernel records alone (the bare client) add 2.0 µs to a launch" in text
    assert "torch.profiler adds" not in text  # torch timed its calls in another round than untraced: not compared
    assert "a `cuCtxGetDevice` takes under launch-only Score-P (8 kB) 510 ns instead of 500 ns" in text
    assert "trace 60 kB per step against <= 100 kB (met)" in text and "kernels found: 100.00% (met)" in text
    assert "add 3.0 µs to a launch (1 round), the launch-only subscription 0.4 µs more (1 round)" in text
    assert "`cuCtxGetDevice` take 1,200 ns instead of 500 ns" in text
    assert "Score-P without `driver`, 8 kB buffers 1.10x at 8x70 (3 rounds)" in text  # kernel records alone, where measured
    assert "Targets of the default mode without the records patch (launch-only Score-P in 4 MB buffers): 8x70" in text
    assert "ended in a device synchronisation" not in text  # these rounds waited on the stream
    assert "Every timed step ended by waiting on its stream" in text
    assert "8 kB chunk" not in text and "CUPTI alone costs" not in text  # no such ratio rows: no sentence about them


def test_the_buffer_variant_and_the_spread_of_the_turns_are_read_from_the_data(tmp_path):
    # the 8 kB launch-only mode also ran round 3, without the default: the two are compared on rounds 0-2 only
    launch = _row("scorep-launch", "8x70", 1.25, round_ratios=[[0, 1.3], [1, 1.2], [2, 1.3], [3, 1.0]])
    chunk = _row(D, "8x70", 1.24, round_ratios=[[0, 1.2], [1, 1.25], [2, 1.1]])
    calls = [
        {"mode": "untraced", "turns": 2, "rounds": [1, 7], "launch_ns": 9000.0, "launch_ns_all": [8000.0, 10000.0]},
        {"mode": "torch", "turns": 2, "rounds": [1, 7], "launch_ns": 14000.0, "launch_ns_all": [10800.0, 18300.0]},
    ]
    modes = [_row("untraced", "8x70", 1.0), launch, chunk]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, per_call=calls, rounds=[{}] * 3)
    assert (
        "(which the artifact used until it set 4 MB after call M (2026-12-04)) launch-only costs 1.30x against the default's 1.20x at 8x70"
        in text
    )
    assert "(medians of the 3 rounds that ran both), the default the cheaper in 2 of 3 rounds" in text
    assert "in 2 process(es) per mode, and one mode's turns lie up to 7.5 µs apart (torch: 10.8-18.3 µs a launch)" in text
    assert "| Score-P, launch-only, 4 MB buffers (default without the records patch) | 8x70 | 1.24x" in text


def test_rounds_ended_by_a_device_sync_say_so(tmp_path):
    modes = [_row("untraced", "8x70", 1.0), _row(D, "8x70", 1.3)]
    text = _block(tmp_path, device="GPU", steps=30, warmup=5, modes=modes, rounds=[{}])  # no step_sync: the first version
    assert "Every timed step ended in a device synchronisation" in text
    # no per-round ratios (the first version of the file): a median alone judges nothing, and it says why
    assert (
        "8x70: 1.30x against <= 1.25x (not established: the run's scorep-launch-chunk4m at 8x70 keeps no per-round ratios" in text
    )
    assert "kernels found: not counted (not met)" in text  # no count of launches: the target is not met by silence


def test_the_torch_comparison_counts_the_rounds_launch_only_was_cheaper(tmp_path):
    torch = _row("torch", "8x70", 1.3, round_ratios=[[0, 1.3], [1, 1.2], [2, 1.4], [3, 1.3]])
    launch = _row(D, "8x70", 1.2, round_ratios=[[0, 1.2], [1, 1.3], [2, 1.1]])  # round 3: none
    modes = [_row("untraced", "8x70", 1.0), torch, launch]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=[{}] * 4)
    assert (
        "torch.profiler's 1.30x, medians of the 3 rounds both ran (not established, the cheaper in 2 of 3 rounds, sign test p = 1"
        in text
    )


def _presence(tmp_path, nocuda: float, nodriver: float = 1.2) -> str:
    folder = tmp_path / "expected" / "reference" / Path(docbench_calls.PRESENCE_BENCH).parent
    folder.mkdir(parents=True)
    modes = [_row("untraced", c, 1.0) for c in ("8x70", "32x70")]
    modes += [_row("scorep-nodriver", c, nodriver, trace_bytes_per_step=25e3) for c in ("8x70", "32x70")]
    modes += [_row("scorep-nocuda", c, nocuda, trace_bytes_per_step=300.0) for c in ("8x70", "32x70")]
    calls = [{"mode": "scorep-nocuda", "launch_ns": 6300.0}, {"mode": "untraced", "launch_ns": 6400.0}]
    doc = _doc(modes=modes, per_call=calls, rounds=[{}] * 9)
    (tmp_path / "expected" / "reference" / docbench_calls.PRESENCE_BENCH).write_text(json.dumps(doc))
    return docbench_calls.bench_trace_scorep_presence(Facts(tmp_path), None)


def test_the_presence_run_says_whether_the_floor_is_score_p_being_loaded(tmp_path):
    assert "(no `" in docbench_calls.bench_trace_scorep_presence(Facts(tmp_path), None)  # nothing shipped: said so
    text = _presence(tmp_path / "a", 1.01)
    assert (
        "1.01x against 1.20x at 8x70; 1.01x against 1.20x at 32x70: so what Score-P without `driver` costs is its kernel" in text
    )
    assert "| Score-P loaded, no CUDA recording | 8x70 | 1.01x" in text and "| 300 B |" in text
    assert "Score-P loaded, no CUDA recording 6.3" in text and "untraced 6.4" in text
    assert "already accounts for part of what Score-P without `driver` costs" in _presence(tmp_path / "b", 1.10)
    assert "too close, or too mixed" in _presence(tmp_path / "c", 1.00, nodriver=1.02)  # no floor to attribute


def test_targets_say_how_the_rounds_and_the_runs_lie_around_the_bound(tmp_path):
    launch = _row(D, "8x70", 1.27, round_ratios=[[0, 1.30], [1, 1.28], [2, 1.20], [3, 1.24]])
    counts = {D: {"experiments": [
        {"launches": 10, "kernels": 10, "source": "d.json"}, {"launches": 10, "kernels": 9, "source": "e.json"}]}}  # fmt: skip
    rounds = [{"round": 0, "source": "d.json"}, {"round": 1, "source": "d.json"}]
    rounds += [{"round": 2, "source": "e.json"}, {"round": 3, "source": "e.json"}]
    launch.update(kernels_found_share=0.95, kernels_found=19, launches_counted=20, experiments_counted=2)
    modes = [_row("untraced", "8x70", 1.0), launch]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds, counts=counts)
    assert (
        "8x70: 1.27x against <= 1.25x (not established: 4 rounds, too few for a 95% interval of the median; 2 of 4 rounds at or "
        "below it; per run 1.29x (d.json), 1.22x (e.json))" in text
    )
    assert "(missed; per run 10 of 10 (d.json), 9 of 10 (e.json); lost: 1 in e.json's counted experiment)" in text


def test_one_kernel_lost_of_many_is_shown_as_counts_and_misses_the_target(tmp_path):
    lost = dict(trace_bytes_per_step=62e3, kernels_found_share=214_801 / 214_802, kernels_found=214_801,
                launches_counted=214_802, experiments_counted=2)  # fmt: skip
    modes = [_row("untraced", "8x70", 1.0), _row(D, "8x70", 1.27, **lost)]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=[{}] * 2)
    assert "| 214,801 of 214,802 |" in text and "100.0%" not in text  # never rounded up to complete
    assert "kernels found: 214,801 of 214,802 launches in 2 counted experiment(s) (missed)" in text


def test_runs_that_count_every_round_are_summed_per_run_and_the_lost_round_named(tmp_path):
    counts = {D: {"experiments": [
        {"launches": 10, "kernels": 10, "source": "d.json"},
        {"launches": 10, "kernels": 10, "round": 0, "source": "g.json"},
        {"launches": 10, "kernels": 8, "round": 2, "source": "g.json"}]}}  # fmt: skip
    launch = _row(D, "8x70", 1.2, kernels_found_share=28 / 30, kernels_found=28, launches_counted=30, trace_bytes_per_step=6e4,
                  experiments_counted=3)  # fmt: skip
    modes = [_row("untraced", "8x70", 1.0), launch]
    rounds = [{"round": i, "source": src} for i, src in enumerate(["d.json", "d.json", "g.json", "g.json"])]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds, counts=counts)
    assert "kernels found: 28 of 30 launches in 3 counted experiment(s) (missed" in text
    assert "per run 10 of 10 (d.json), 18 of 20 (g.json, 2 experiments); lost: 2 in g.json's round 2)" in text
    assert (
        "the processes of Score-P, launch-only, 4 MB buffers (default without the records patch) counted: 1 of 2 rounds (d.json), 2 of 2 rounds (g.json)"
        in text
    )


def test_a_merge_gives_the_range_of_the_runs_untraced_steps(tmp_path):
    """Runs on machines of different speed: the pooled untraced step comes with each run's median."""

    def rnd(i, src, ms):
        return {"round": i, "source": src, "steps_ms": {"8x70": {"untraced": ms}}}

    rounds = [rnd(0, "d.json", [30.0, 31.0]), rnd(1, "d.json", [32.0, 33.0]), rnd(2, "g.json", [40.0, 40.0])]
    calls = [{"mode": "untraced", "turns": 1, "rounds": [0], "launch_ns": 9000.0, "launch_ns_all": [9000.0]}]
    modes = [_row("untraced", "8x70", 1.0)]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds, per_call=calls)
    assert "20.0 ms at 8x70 (the runs' medians 31.5-40.0 ms)" in text  # 20.0: the row's own median (_row)
    single = _block(
        tmp_path / "one", device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds[:2], per_call=calls
    )
    assert "the runs' medians" not in single


def test_an_experiment_that_could_not_be_counted_keeps_every_kernel_found_from_being_met(tmp_path):
    complete = dict(kernels_found_share=1.0, kernels_found=20, launches_counted=20, experiments_counted=2)
    for uncountable, verdict in ((0, "(met"), (1, "(not met")):
        row = _row(D, "8x70", 1.2, experiments_uncountable=uncountable, **complete)
        modes = [_row("untraced", "8x70", 1.0), row]
        text = _block(tmp_path / str(uncountable), device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=[{}])
        assert (
            f"kernels found: 20 of 20 launches in 2 counted experiment(s){', 1 experiment(s) that could not be counted' if uncountable else ''} {verdict}"
            in text
        )


def test_without_the_default_mode_the_targets_are_not_judged(tmp_path):
    modes = [_row("untraced", "8x70", 1.0), _row("scorep-launch", "8x70", 1.1, kernels_found_share=1.0)]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=[{}])
    assert "Targets of the default mode without the records patch (launch-only Score-P in 4 MB buffers): not judged" in text
    assert "(met" not in text  # another mode's figures never stand in for the default's


def test_cupti_alone_says_where_a_bound_lies_against_it(tmp_path):
    def text_for(folder, at_8x70, at_32x70):  # six rounds each: the fewest a 95% interval of a median needs
        cupti = [
            _row("cupti-kernels", c, statistics.median(xs), round_ratios=[[k, x] for k, x in enumerate(xs)])
            for c, xs in (("8x70", at_8x70), ("32x70", at_32x70))
        ]
        modes = [_row("untraced", c, 1.0) for c in ("8x70", "32x70")] + [_row(D, c, 1.3) for c in ("8x70", "32x70")] + cupti
        return _block(folder, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=[{}] * 6)

    text = text_for(tmp_path / "a", [1.10, 1.12, 1.13, 1.15, 1.16, 1.17], [1.05, 1.08, 1.11, 1.13, 1.15, 1.18])
    assert "CUPTI alone (bare client), 4 MB buffers 1.14x at 8x70, 1.12x at 32x70 (3 rounds)" in text
    assert (  # the interval holds the bound: at it, not below it
        "At 32x70 CUPTI alone costs 1.12x (95% interval of the median 1.05-1.18; 3 of 6 rounds at or below it): the bound of "
        "1.12x lies at what CUPTI alone costs" in text
    )
    assert "At 8x70 CUPTI alone" not in text  # wholly below 1.25x: nothing to say
    above = text_for(tmp_path / "b", [1.26, 1.27, 1.28, 1.30, 1.31, 1.33], [1.121, 1.14, 1.15, 1.15, 1.18, 1.19])
    assert (
        "At 8x70 CUPTI alone costs 1.29x (95% interval of the median 1.26-1.33; 0 of 6 rounds at or below it): the bound" in above
    )
    assert (  # an end that would read as the bound itself gets a third digit
        "At 32x70 CUPTI alone costs 1.15x (95% interval of the median 1.121-1.190; 0 of 6 rounds at or below it): the bound of "
        "1.12x lies below what CUPTI alone costs" in above
    )
    # a median just over the bound with rounds on both sides: at it, never "below what CUPTI costs"
    mixed = text_for(tmp_path / "c", [1.10] * 6, [1.02, 1.05, 1.14, 1.15, 1.20, 1.22])
    assert "1.12x lies at what CUPTI alone costs" in mixed and "lies below what" not in mixed


def test_the_8_kb_chunk_sentence_gives_its_own_kernels_found_and_the_lost_one(tmp_path):
    counts = {"scorep-launch": {"experiments": [
        {"launches": 10, "kernels": 10, "round": 0, "source": "d.json"}, {"launches": 10, "kernels": 9, "round": 1, "source": "e.json"}]}}  # fmt: skip
    eight = _row("scorep-launch", "8x70", 1.3, round_ratios=[[0, 1.3], [1, 1.3]], kernels_found_share=0.95, kernels_found=19,
                 launches_counted=20, experiments_counted=2)  # fmt: skip
    modes = [_row("untraced", "8x70", 1.0), _row(D, "8x70", 1.2, round_ratios=[[0, 1.2], [1, 1.4]]), eight]
    rounds = [{"round": 0, "source": "d.json"}, {"round": 1, "source": "e.json"}]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds, counts=counts)
    assert (
        "the default the cheaper in 1 of 2 rounds, sign test p = 1; its kernels found: 19 of 20 launches in 2 counted experiment(s)"
        in text
    )
    assert "per run 10 of 10 (d.json), 9 of 10 (e.json); lost: 1 in e.json's round 1." in text
    assert "kernels found: not counted (not met)" in text  # the default's own count is missing: not met by the 8 kB one


def test_the_buffer_run_compares_each_4_mb_mode_with_its_8_kb_twin(tmp_path):
    assert "(no `" in docbench_calls.bench_trace_cupti_buffers(Facts(tmp_path), None)  # nothing shipped: said so
    folder = tmp_path / "expected" / "reference" / Path(docbench_calls.BUFFERS_BENCH).parent
    folder.mkdir(parents=True)
    pairs = {"cupti-kernels": [1.10, 1.20], "cupti-kernels-8k": [1.15, 1.10], "scorep-nodriver-chunk4m": [1.17, 1.19]}
    modes = [_row("untraced", "8x70", 1.0)]
    modes += [_row(m, "8x70", max(r), round_ratios=[[0, r[0]], [1, r[1]]]) for m, r in pairs.items()]
    doc = {"device": "GPU", "steps": 30, "warmup": 5, "step_sync": "stream", "modes": modes, "rounds": [{}] * 2}
    (tmp_path / "expected" / "reference" / docbench_calls.BUFFERS_BENCH).write_text(json.dumps(doc))
    text = docbench_calls.bench_trace_cupti_buffers(Facts(tmp_path), None)
    assert "| CUPTI alone (bare client), 8 kB buffers | 8x70 | 1.15x" in text
    assert (
        "4 MB buffers against CUPTI alone (bare client), 8 kB buffers: 1.15x against 1.12x at 8x70, the cheaper in 1 of 2 rounds"
        in text
    )
    assert "against Score-P without `driver`, 4 MB buffers: 1.15x against 1.18x at 8x70, the cheaper in 1 of 2 rounds" in text
    assert "launch-only" not in text  # modes the run did not have: no sentence


def test_the_default_mode_is_the_benchmark_mode_of_the_artifacts_score_p_settings():
    """docbench judges the mode whose settings the artifact uses by default (a contract between three files)."""
    import importlib
    import sys

    from conftest import ROOT
    from dnabert_scaling.run.tracing import scorep

    if str(ROOT / "scripts") not in sys.path:  # the benchmark's modules import each other by name
        sys.path.insert(0, str(ROOT / "scripts"))
    bt_modes = importlib.import_module("bench_trace_modes")
    assert bt_modes.MODES[D] == (
        scorep.DEFAULT_CUDA_ENABLE,
        "launch",
        {"SCOREP_CUDA_BUFFER_CHUNK": scorep.DEFAULT_CUDA_BUFFER_CHUNK},
    )
    assert D in bt_modes.DEFAULT_MODES  # `make bench-trace` measures the default it judges
    # and records mode where the installed Score-P has its patch (the default there)
    assert bt_modes.MODES[bt_modes.RECORDS_DEFAULT][1] == "records"
    assert bt_modes.default_modes(None) == bt_modes.DEFAULT_MODES
    assert bt_modes.default_modes(["8.4-cupti-launch-callbacks.patch"]) == bt_modes.DEFAULT_MODES
    with_records = bt_modes.default_modes(["8.4-cupti-launch-callbacks.patch", "8.4-cupti-launch-records.patch"])
    assert with_records == (*bt_modes.DEFAULT_MODES, "scorep-records-chunk4m")


def test_per_call_differences_inside_the_spread_of_the_turns_are_said_to_indicate_only(tmp_path):
    turns = {"untraced": [9000.0, 16000.0], "scorep-nodriver": [11000.0], "scorep-launch": [11500.0]}  # untraced: 7 µs apart
    rounds = [{"round": 0, "per_call": {m: [{"launch_ns": x} for x in xs] for m, xs in turns.items()}}]
    calls = [{"mode": m, "turns": len(xs), "rounds": [0], "launch_ns_all": xs} for m, xs in turns.items()]
    modes = [_row("untraced", "8x70", 1.0), _row("scorep-nodriver", "8x70", 1.1)]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, per_call=calls, rounds=rounds)
    assert "add -1.5 µs to a launch (1 round)" in text  # 11.0 against the untraced median 12.5
    assert "every difference above is smaller than that: the per-call figures indicate, they do not measure" in text


def test_the_kernels_found_cell_gives_the_counts_even_when_complete(tmp_path):
    row = _row(D, "8x70", 1.2, kernels_found_share=1.0, kernels_found=107_401, launches_counted=107_401, experiments_counted=1)
    modes = [_row("untraced", "8x70", 1.0), row]
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=[{}])
    assert "| 107,401 of 107,401 |" in text and "| 100.0% |" not in text


def _cache_run(tmp_path, on, off, patches):
    """A stream-cache run: the default mode (cache on) and its cache-off twin over the same rounds."""
    folder = tmp_path / "expected" / "reference" / Path(docbench.CACHE_BENCH).parent
    folder.mkdir(parents=True, exist_ok=True)
    modes = [_row("untraced", "8x70", 1.0)]
    for mode, rs in ((D, on), (docbench_calls.CACHE_OFF, off)):
        modes.append(_row(mode, "8x70", sorted(rs)[len(rs) // 2], round_ratios=[[k, x] for k, x in enumerate(rs)]))
    runs = [
        {"file": f"bench-{k}.json", "rounds": 1, "date": "2026-12-04", "machine": {"scorep_patches": p}}
        for k, p in enumerate(patches)
    ]
    rounds = [{"round": k, "source": f"bench-{k % len(runs)}.json"} for k in range(len(on))]  # each round names its run
    doc = _doc(modes=modes, merged_from=runs, rounds=rounds)
    (tmp_path / "expected" / "reference" / docbench.CACHE_BENCH).write_text(json.dumps(doc))
    return docbench_calls.bench_trace_stream_cache(Facts(tmp_path), None)


def test_the_stream_cache_block_pairs_the_cache_with_its_absence_and_reads_the_target(tmp_path):
    assert "(no `" in docbench_calls.bench_trace_stream_cache(Facts(tmp_path), None)  # nothing shipped: said so
    four = ["8.4-cupti-launch-callbacks.patch", docbench.CACHE_PATCH]
    text = _cache_run(tmp_path, [1.20, 1.24, 1.30], [1.26, 1.22, 1.35], [four, four, four])
    assert (
        "| Score-P, launch-only, 4 MB buffers, stream reference cache on (default without the records patch) | 8x70 | 1.24x"
        in text
    )
    assert (
        "in every run (3): the default mode ran with the stream reference cache, `scorep-launch-nocache-chunk4m` without it"
        in text
    )
    # paired over the rounds both ran: cheaper in rounds 0 and 2, by a median of 0.05 (0.06, -0.02, 0.05)
    assert (
        "1.24x against 1.26x at 8x70, the cheaper in 2 of 3 rounds, sign test p = 1; cheaper by a median of 0.050 per round"
        in text
    )
    # the sign test and the median can point different ways, and the sentence says which way the median does:
    # cheaper in 1 of 3 rounds by much (0.20), dearer in 2 by a little (0.01, 0.02): dearer by a median of 0.010
    flip = _cache_run(tmp_path / "flip", [1.10, 1.26, 1.27], [1.30, 1.25, 1.25], [four, four, four])
    assert "the cheaper in 1 of 3 rounds, sign test p = 1; dearer by a median of 0.010 per round" in flip
    assert (  # three rounds on either side of the bound decide nothing, with the cache or without it
        "at 8x70 1.24x with the cache (3 rounds, too few for a 95% interval of the median), 1.26x without it (3 rounds, too few "
        "for a 95% interval of the median), against <= 1.25x: the target is not established both with the cache and without it"
        in text
    )
    assert (
        "Targets of the default mode without the records patch (launch-only Score-P in 4 MB buffers, stream reference cache on): 8x70: 1.24x"
        in text
    )
    on, off = [1.15, 1.17, 1.18, 1.20, 1.21, 1.23], [1.22, 1.24, 1.26, 1.27, 1.28, 1.30]
    text = _cache_run(tmp_path / "split", on, off, [four])
    assert "against <= 1.25x: the target is met with the cache and not established without it" in text


def test_the_stream_cache_block_does_not_credit_the_cache_with_a_target_both_meet(tmp_path):
    four = [docbench.CACHE_PATCH]
    text = _cache_run(tmp_path, [1.20, 1.21, 1.22, 1.20, 1.19, 1.18], [1.21, 1.22, 1.23, 1.22, 1.20, 1.21], [four])
    assert "the target is met both with the cache and without it: these rounds meet it, not the cache" in text
    # a build without the patch: its launch-only mode is not labelled as cached
    text = _cache_run(tmp_path / "b", [1.30], [1.31], [["8.4-cupti-launch-callbacks.patch"], None])
    assert "cache on (default without the records patch)" not in text and "(launch-only Score-P in 4 MB buffers)" in text
    assert "None of the 1 of 2 runs that list their Score-P build's patches lists `8.4-cupti-stream-ref-cache.patch`" in text
    assert "with the cache" not in text  # no reading of a cache some runs did not have
    text = _cache_run(tmp_path / "c", [1.30, 1.31, 1.32, 1.33, 1.34, 1.35], [1.31] * 6, [four])
    assert "against <= 1.25x: the target is missed both with the cache and without it" in text


def _target_file(root, path, builds, at_8x70, at_32x70, cupti=None, device="NVIDIA H200"):
    """A benchmark file of the default mode's round ratios, its runs listing ``builds`` (one per run, each
    a run of its own date, revision and wall time, on ``device``); the rounds go to the runs in turn."""
    modes = [
        _row(D, c, statistics.median(xs), round_ratios=[[k, x] for k, x in enumerate(xs)])
        for c, xs in (("8x70", at_8x70), ("32x70", at_32x70))
    ]
    if cupti:
        modes.append(_row("cupti-kernels", "32x70", statistics.median(cupti), round_ratios=[[k, x] for k, x in enumerate(cupti)]))
        callbacks = [x - 0.05 for x in at_32x70]  # the bare client with launch callbacks: 0.05 cheaper each round
        modes.append(_row("cupti-launch", "32x70", 1.0, round_ratios=[[k, x] for k, x in enumerate(callbacks)]))
    name = Path(path).parent.name
    runs = [
        {"file": f"{name}-{k}.json", "rounds": 1, "date": "2026-12-04", "revision": f"{name}{k}", "wall_s": 100.0 + k,
         "machine": {"scorep_patches": b, "device": device}}
        for k, b in enumerate(builds)
    ]  # fmt: skip
    n = max(len(at_8x70), len(at_32x70), len(cupti or []))
    rounds = [{"round": k, "source": runs[k % len(runs)]["file"]} for k in range(n)]
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(json.dumps({"modes": modes, "merged_from": runs, "rounds": rounds}))


def test_the_targets_summary_judges_each_file_and_pools_the_build_the_artifact_ships(tmp_path):
    assert docbench_targets.scorep_targets_summary(Facts(tmp_path), None).startswith("not judged")
    series = tmp_path / docbench_targets.SERIES
    series.parent.mkdir(parents=True)
    series.write_text("# the series\na.patch verified note\nb.patch verified\nc.patch candidate\n")
    root = tmp_path / "expected" / "reference"
    (shipped, _), _call_l, (calls_nop, _), (calls_abc, _) = docbench_targets.TARGET_SETS[:4]
    old, ours = ["a.patch"], ["a.patch", "b.patch"]  # the shipped build: the series' verified patches, in order
    _target_file(root, shipped, [old, None], [1.26, 1.27, 1.28, 1.29, 1.30, 1.31], [1.20] * 6, cupti=[1.10] * 6)
    _target_file(root, calls_nop, [ours, ours], [1.20, 1.22, 1.24, 1.25, 1.26, 1.27], [1.10] * 6, cupti=[1.14] * 6)
    _target_file(root, calls_abc, [ours], [1.19, 1.20, 1.21, 1.22, 1.23, 1.26], [1.11] * 6, cupti=[1.14] * 6)
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    # each file on its own: the older build's misses, the others' intervals hold the bound
    assert text.startswith(
        "at 8x70 (<= 1.25x) not established for the build the artifact ships: 1.29x over calls D to M's 6 rounds "
        "(missed: 95% interval of the median 1.26-1.31; another build), 1.25x over calls N, O and P's 6 rounds (not established: "
    )  # D to M's runs list different builds: "another build" without naming one
    # the shipped build's twelve rounds pooled, the older build's left out
    assert "the 12 rounds of that build (calls N, O and P and calls A, B and C) pooled: 1.23x (not established: " in text
    assert "at 32x70 (<= 1.12x) met for the build the artifact ships:" in text
    assert "1.20x over calls D to M's 6 rounds (missed: 95% interval of the median 1.20-1.20; another build)" in text
    assert "pooled: 1.10x (met: 95% interval of the median 1.10-1.11)" in text
    # CUPTI alone is said only beside a target the build does not meet
    assert "CUPTI alone" not in text.split("at 32x70")[1]
    _target_file(root, calls_abc, [ours], [1.19, 1.20, 1.21, 1.22, 1.23, 1.26], [1.14] * 6, cupti=[1.14] * 6)
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert "at 32x70 (<= 1.12x) not established for the build the artifact ships:" in text
    # CUPTI alone over every file's rounds, whatever its Score-P build: the client loads none
    assert "CUPTI alone (the bare client, no Score-P) over the 18 rounds of every file that ran it: 1.14x" in text
    assert (
        "the default mode beyond the bare client that takes the launches the same way, paired in 12 rounds of that build: "
        "+0.050 of an untraced step, more than that client (the differences' 95% interval of the median 0.05-0.05)" in text
    )
    # no file of the shipped build: the files must agree, or the target is not established
    series.write_text("z.patch verified\n")
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert text.startswith(
        "at 8x70 (<= 1.25x) not judged for the build the artifact ships (no file ran it); over the other builds not established: "
    )
    assert "pooled" not in text
    # a file of one other build says how it differs from the shipped one
    assert "over calls A, B and C's 6 rounds (" in text and "another build: with a.patch, b.patch; without z.patch)" in text
    _target_file(root, calls_nop, [ours, ours], [1.26] * 6, [1.20] * 6)
    _target_file(root, calls_abc, [ours], [1.30] * 6, [1.20] * 6)
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert (
        "at 8x70 (<= 1.25x) not judged for the build the artifact ships (no file ran it); over the other builds missed: " in text
    )
    assert (
        "at 32x70 (<= 1.12x) not judged for the build the artifact ships (no file ran it); over the other builds missed: " in text
    )


def test_rounds_of_another_card_are_never_pooled_with_the_h200s(tmp_path):
    """The targets are of the H200: a target file with a run on another card stops the documents (the file
    and the cards named) instead of pooling its rounds."""
    series = tmp_path / docbench_targets.SERIES
    series.parent.mkdir(parents=True)
    series.write_text("a.patch verified\n")
    root = tmp_path / "expected" / "reference"
    _shipped, _call_l, (calls_nop, _), (calls_abc, said_abc) = docbench_targets.TARGET_SETS[:4]
    _target_file(root, calls_nop, [["a.patch"]], [1.20] * 6, [1.15] * 6)
    _target_file(root, calls_abc, [["a.patch"]], [1.20] * 6, [1.15] * 6, device="NVIDIA H100 80GB HBM3")
    with pytest.raises(ArtifactError) as exc:
        docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert f"{said_abc}: its runs ran on NVIDIA H100 80GB HBM3, not only on the NVIDIA H200" in str(exc.value)
    assert calls_abc in str(exc.value)
    _target_file(root, calls_abc, [["a.patch"]], [1.20] * 6, [1.15] * 6)
    assert "pooled" in docbench_targets.scorep_targets_summary(Facts(tmp_path), None)


def test_the_pooled_verdict_holds_the_runs_against_it_and_counts_no_run_twice(tmp_path):
    series = tmp_path / docbench_targets.SERIES
    series.parent.mkdir(parents=True)
    series.write_text("a.patch verified\n")
    root = tmp_path / "expected" / "reference"
    _shipped, _call_l, (calls_nop, _), (calls_abc, _) = docbench_targets.TARGET_SETS[:4]
    above = [1.20 + 0.01 * (k % 8) for k in range(20)]
    # two runs: the pooled rounds lie above 1.12x, but one run's own rounds lie wholly below it
    _target_file(root, calls_nop, [["a.patch"]], [1.25] * 20, above)
    _target_file(root, calls_abc, [["a.patch"]], [1.25] * 6, [1.05, 1.06, 1.07, 1.08, 1.09, 1.10])
    assert cost_verdicts.bound_verdict(above + [1.05, 1.06, 1.07, 1.08, 1.09, 1.10], 1.12)[0] == "missed"  # rounds alone
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert "at 32x70 (<= 1.12x) not established for the build the artifact ships:" in text
    assert "but the interval of a run's own rounds lies on the other side (gpu-call-2026-12-04-profile-0.json 1.05-1.10)" in text
    # a run whose median is below the bound but whose own interval holds it does not overrule the rest
    _target_file(root, calls_abc, [["a.patch"]], [1.25] * 6, [1.10, 1.11, 1.11, 1.11, 1.30, 1.30])
    assert "at 32x70 (<= 1.12x) missed for the build the artifact ships:" in docbench_targets.scorep_targets_summary(
        Facts(tmp_path), None
    )
    # six runs or more: the interval of the runs' medians must lie on the same side
    _target_file(root, calls_nop, [["a.patch"]] * 6, [1.25] * 24, [1.10 if k % 6 == 5 else 1.20 for k in range(24)])
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert "but over the 7 runs' medians the interval is 1.10-1.20" in text and "at 32x70 (<= 1.12x) not established" in text
    # two files that hold the same run are not pooled as two: the same rounds would count twice
    nop = json.loads((root / calls_nop).read_text())
    abc = json.loads((root / calls_abc).read_text())
    abc["merged_from"] = nop["merged_from"][:1] + abc["merged_from"]
    abc["rounds"] = [{**r, "source": abc["merged_from"][k % 2]["file"]} for k, r in enumerate(abc["rounds"])]
    (root / calls_abc).write_text(json.dumps(abc))
    text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert "not established: one run is in two of the pooled files (gpu-call-2026-12-04-cache-0.json and " in text


def test_rounds_that_cannot_be_read_whole_are_not_judged(tmp_path):
    """What a tester breaks in a shipped file gives "not established" and the reason, never a verdict or a traceback."""
    root = tmp_path / "expected" / "reference"
    (shipped, _), *_ = docbench_targets.TARGET_SETS[:4]
    cases = {
        "a null ratio": lambda doc: doc["modes"][0]["round_ratios"][0].__setitem__(1, None),
        "a repeated round": lambda doc: doc["modes"][0]["round_ratios"].append([0, 1.2]),
        "a malformed entry": lambda doc: doc["modes"][0]["round_ratios"].append([1.2]),
        "a round of no run": lambda doc: doc["rounds"][0].pop("source"),
    }
    for what, damage in cases.items():
        _target_file(root, shipped, [None, None], [1.10 + 0.01 * k for k in range(8)], [1.10] * 8)
        doc = json.loads((root / shipped).read_text())
        damage(doc)
        (root / shipped).write_text(json.dumps(doc))
        text = docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
        first = text.split("; at 32x70")[0]
        assert "(met" not in first, (what, first)
        block = _block(tmp_path / what.replace(" ", "-"), device="GPU", steps=2, warmup=1, step_sync="stream", **doc)
        assert "8x70: " in block and "(met" not in block.split("Targets of the default mode")[1].split("; 32x70")[0], what
    # a row without its median: the verdict is the rounds', the median shown is "-", no traceback
    _target_file(root, shipped, [None, None], [1.10 + 0.01 * k for k in range(8)], [1.10] * 8)
    doc = json.loads((root / shipped).read_text())
    doc["modes"][0].pop("ratio_median")
    (root / shipped).write_text(json.dumps(doc))
    block = _block(tmp_path / "no-median", device="GPU", steps=2, warmup=1, step_sync="stream", **doc)
    assert "8x70: - against <= 1.25x (met: 95% interval of the median 1.10-1.17" in block
    # a file whose top level is not a bench-trace output: an error that names it, not a traceback
    doc["merged_from"].append("bench-x.json")
    (root / shipped).write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="'merged_from' is not a list of objects") as e:
        docbench_targets.scorep_targets_summary(Facts(tmp_path), None)
    assert e.value.path == str(root / shipped)


def test_the_sign_test_gives_how_likely_a_split_is_without_a_difference():
    assert docbench.sign_test_p(14, 7) == pytest.approx(0.1892, abs=1e-4)  # 14 of 21: not distinguishable from noise
    assert docbench.sign_test_p(21, 0) == pytest.approx(2 / 2**21)
    assert docbench.sign_test_p(3, 3) == 1.0 and docbench.sign_test_p(0, 0) == 1.0
    assert docbench.sign_test_p(2, 7) == docbench.sign_test_p(7, 2)  # two-sided
    by = {
        (D, "8x70"): {"round_ratios": [[k, 1.1] for k in range(21)]},
        ("torch", "8x70"): {"round_ratios": [[k, 1.4] for k in range(21)]},
    }
    assert docbench.rounds_cheaper(by, "8x70") == ", the cheaper in 21 of 21 rounds, sign test p < 0.001"


def _profile_facts(tmp_path, bench: dict | None = None) -> Facts:
    """The host-profile block's files: the shipped ones, or ``bench`` in place of the merged rounds."""
    import shutil

    from conftest import ROOT

    src = ROOT / "expected" / "reference" / docbench_calls.PROFILE_DIR
    dst = tmp_path / "expected" / "reference" / docbench_calls.PROFILE_DIR
    dst.mkdir(parents=True)
    for name in ("bench-abc.json", "sampled-c.json", "profile-c.json", "profile-c-focus.json"):
        shutil.copy(src / name, dst / name)
    if bench is not None:
        (dst / "bench-abc.json").write_text(json.dumps(bench))
    return Facts(tmp_path)


def test_the_host_profile_block_says_what_its_files_say(tmp_path):
    assert "(no `" in docbench_calls.bench_trace_host_profile(Facts(tmp_path), None)  # nothing shipped: said so
    facts = _profile_facts(tmp_path)
    text = docbench_calls.bench_trace_host_profile(facts, None)
    # Score-P's own code, counted here from the focus profile, against the untraced process's samples
    focus = {p["label"].split()[0]: p for p in facts.bench(docbench_calls.PROFILE_FOCUS)["processes"]}
    base = next(p["samples"] for p in facts.bench(docbench_calls.PROFILE_CPU)["processes"] if p["label"].startswith("untraced"))
    share = focus[D]["focus"]["samples"] / base
    assert f"It does locate Score-P's own code: {share:.3f} of an untraced step's CPU time" in text
    assert f"no tracer {base:,} samples" in text
    assert "(no mode turned it off)" in text  # the cache-off mode did not run in these calls
    # each step's CPU: the whole process busy for the whole step, and so the conclusion drawn
    assert "the CPU time of all the process's threads is 1.00 in every mode (6 rounds)" in text
    assert "so the steps are host-bound and what a tracer costs here is CPU time on the threads that launch" in text
    # the sampling rate is what the samples came at (samples over the sampled processes' CPU time), not the timer's ask
    assert "its timer asked for 997 Hz and the samples came at 249 per second of CPU time" in text
    assert (
        "Targets of the default mode without the records patch (launch-only Score-P in 4 MB buffers, stream reference cache on)"
        in text
    )


def test_the_host_profile_block_reads_one_sampled_process_per_mode_or_none(tmp_path):
    facts = _profile_facts(tmp_path)
    path = tmp_path / "expected" / "reference" / docbench_calls.PROFILE_CPU
    doc = json.loads(path.read_text())
    doc["processes"].append({**doc["processes"][0], "pid": 1, "label": "untraced (round 1)", "samples": 5})
    path.write_text(json.dumps(doc))
    text = docbench_calls.bench_trace_host_profile(facts, None)
    assert "more than one process of a mode (more than one round): not summarised here" in text
    assert "no tracer 5 samples" not in text and "locate Score-P's own code" not in text


def test_the_host_profile_block_draws_no_cpu_conclusion_from_steps_that_wait(tmp_path):
    def steps(x):
        return {"8x70": {"untraced": [x, x], D: [x, x]}}

    rounds = [{"round": 0, "steps_ms": steps(10.0), "steps_proc_cpu_ms": steps(6.0), "steps_cpu_ms": steps(5.0)}]
    rr = {"round_ratios": [[0, 1.2]]}
    doc = {"device": "GPU", "steps": 2, "warmup": 1, "step_sync": "stream", "rounds": rounds,
           "modes": [_row("untraced", "8x70", 1.0), _row(D, "8x70", 1.2, **rr)]}  # fmt: skip
    text = docbench_calls.bench_trace_host_profile(_profile_facts(tmp_path, doc), None)
    assert "the CPU time of all the process's threads is 0.60 in every mode (1 round)" in text
    assert "host-bound" not in text and "closing wait" not in text  # no wait recorded: none said, nothing concluded


def test_a_round_cut_short_is_said_beside_the_verdict(tmp_path):
    """A round whose default-mode process failed gives no ratio; the verdict says it was left out."""
    ratios = [[k, 1.20] for k in range(6)]
    modes = [_row("untraced", "8x70", 1.0), _row(D, "8x70", 1.20, round_ratios=ratios)]
    rounds = [{"round": k, "processes": {D: {}, "untraced": {}}} for k in range(7)]  # round 6 started it, paired nothing
    text = _block(tmp_path, device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds)
    assert (
        "8x70: 1.20x against <= 1.25x (met: 95% interval of the median 1.20-1.20; 1 round cut short or with a failed process, not counted;"
        in text
    )
    # torch.profiler ran in rounds 0-5 only: the rounds without it are not cut short for the comparison
    modes.append(_row("torch", "8x70", 1.40, round_ratios=[[k, 1.40] for k in range(6)]))
    for r in rounds[:6]:
        r["processes"]["torch"] = {}
    text = _block(tmp_path / "torch", device="GPU", steps=2, warmup=1, step_sync="stream", modes=modes, rounds=rounds)
    assert "per round: 95% interval of the median -0.20 to -0.20)" in text and text.count("cut short") == 1


def test_the_target_reading_comes_from_the_same_files_and_rule_as_the_summary(tmp_path):
    from dnabert_scaling.tools import docbench_reading

    assert docbench_reading.scorep_target_reading(Facts(tmp_path), "8x70").startswith("not judged")
    series = tmp_path / docbench_targets.SERIES
    series.parent.mkdir(parents=True)
    series.write_text("a.patch verified\n")
    root = tmp_path / "expected" / "reference"
    _shipped, _call_l, (calls_nop, _), (calls_abc, _) = docbench_targets.TARGET_SETS[:4]
    # two runs of the shipped build: the rounds straddle 1.25x at 8x70; at 32x70 they lie above 1.12x, but one run
    # lies wholly below it
    _target_file(root, calls_nop, [["a.patch"]], [1.20, 1.30] * 10, [1.20 + 0.01 * (k % 8) for k in range(20)], cupti=[1.13] * 20)
    _target_file(root, calls_abc, [["a.patch"]], [1.22] * 6, [1.05, 1.06, 1.07, 1.08, 1.09, 1.10])
    facts = Facts(tmp_path)
    eight = docbench_reading.scorep_target_reading(facts, "8x70")
    assert eight.startswith("not established for the shipped build: over its 26 rounds (calls N, O and P and calls A, B and C)")
    assert "16 of those 26 rounds lie at or below the bound, and 2 of the 2 runs' medians" in eight
    assert "the bound lies among the rounds and among the runs" in eight
    assert eight.endswith("Each file on its own: calls N, O and P not established; calls A, B and C met")
    summary = docbench_targets.scorep_targets_summary(facts, None)
    assert summary.startswith("at 8x70 (<= 1.25x) not established for the build the artifact ships")  # the same verdict
    thirty_two = docbench_reading.scorep_target_reading(facts, "32x70")
    assert (
        "The rounds alone lie above the bound (their interval lies wholly above 1.12x), but the runs do not agree" in thirty_two
    )
    assert "1 of the 2 runs' medians (above it: gpu-call-2026-12-04-cache-0.json 1.23x)" in thirty_two  # a tie: those above named
    cupti = docbench_reading.scorep_target_reading(facts, "cupti")
    assert cupti.startswith("CUPTI alone, in 4 MB buffers with no Score-P loaded, is above the bound over every file's 20 rounds")
    relative = docbench_reading.scorep_target_reading(facts, "relative")  # the helper's client: 0.05 cheaper each round
    assert relative.startswith("against a bound of at most 0.05 of an untraced step above that client, at 32x70 +0.050")
    assert "over 20 paired rounds" in relative and "8x70" not in relative  # only where the file ran the client
    assert "not judged: no counted experiment" in docbench_reading.scorep_target_reading(facts, "kernels")
    with pytest.raises(ArtifactError, match="no part 'nine'"):
        docbench_reading.scorep_target_reading(facts, "nine")


def test_the_kernels_reading_is_not_met_where_an_experiment_could_not_be_counted(tmp_path):
    from dnabert_scaling.tools import docbench_reading

    root = tmp_path / "expected" / "reference"
    _shipped, _call_l, (calls_nop, _), (calls_abc, _) = docbench_targets.TARGET_SETS[:4]
    _target_file(root, calls_nop, [["a.patch"]], [1.20] * 6, [1.10] * 6)
    _target_file(root, calls_abc, [["a.patch"]], [1.20] * 6, [1.10] * 6)
    for path, uncountable in ((calls_nop, 0), (calls_abc, 1)):
        doc = json.loads((root / path).read_text())
        for m in doc["modes"]:
            m.update(kernels_found=100, launches_counted=100, experiments_counted=2, kernels_found_share=1.0)
            m["experiments_uncountable"] = uncountable
        (root / path).write_text(json.dumps(doc))
    text = docbench_reading.scorep_target_reading(Facts(tmp_path), "kernels")
    # every counted kernel found, but one experiment could not be counted: it may hold a lost kernel
    assert text.startswith("not met by the default mode: 200 of 200 launches found in 4 counted experiments")
    assert "1 experiment(s) that could not be counted: not met" in text


def test_the_floor_reading_holds_the_default_to_the_bound_and_to_both_bare_clients_on_the_same_rounds(tmp_path):
    """Call ZF's reading (G): the shipped build's default at 32 x 70 against the bound, CUPTI alone against the bound
    and the default's paired addition to the bare client with the same records against 0, all from one file whose
    runs list the records patch (so its default is records mode); nothing shipped is said."""
    from dnabert_scaling.tools import docbench_parts, docbench_reading

    assert docbench_reading.scorep_target_reading(Facts(tmp_path), "floor") == (
        "call ZF's rounds of the default mode at 32x70 are not shipped"
    )
    build = ["8.4-cupti-launch-callbacks.patch", "8.4-cupti-launch-records.patch"]
    series = tmp_path / docbench_targets.SERIES  # the build the artifact ships: the series' verified patches
    series.parent.mkdir(parents=True)
    series.write_text("".join(f"{p} verified\n" for p in build))
    records = [1.18 + 0.01 * (k % 5) for k in range(20)]
    rows = {
        docbench_parts.SCOREP_RECORDS: records,
        "cupti-kernels": [1.12 + 0.01 * (k % 3) for k in range(20)],
        "cupti-launch-records": [x - 0.05 for x in records],  # 0.05 of an untraced step cheaper in every round
    }
    modes = [_row(m, "32x70", statistics.median(xs), round_ratios=[[k, x] for k, x in enumerate(xs)]) for m, xs in rows.items()]
    runs = [{"file": f"zf{k}.json", "rounds": 10, "date": "2026-12-06", "revision": "r", "wall_s": 1.0,
             "machine": {"scorep_patches": build, "device": "NVIDIA H100 80GB HBM3"}} for k in (1, 2)]  # fmt: skip
    path = tmp_path / "expected" / "reference" / docbench_parts.CUPTI_FLOOR_BENCH
    path.parent.mkdir(parents=True)
    rounds = [{"round": k, "source": runs[k % 2]["file"]} for k in range(20)]
    path.write_text(json.dumps({"modes": modes, "merged_from": runs, "rounds": rounds}))
    text = docbench_reading.scorep_target_reading(Facts(tmp_path), "floor")
    assert text.startswith(
        "on the lent cards of call ZF (NVIDIA H100 80GB HBM3; 20 rounds in 2 runs at 32x70, never pooled with the H200's), "
        "the shipped build's default missed the bound (1.20x, 95% interval of the median"
    )
    assert "; CUPTI alone on the same rounds is not told from the bound (1.13x" in text
    assert text.endswith(
        "+0.050 of an untraced step, more than that client (the differences' 95% interval of the median 0.05-0.05)"
    )
    series.write_text("8.4-cupti-launch-callbacks.patch verified\n")  # the file's runs no longer ran the shipped build
    again = docbench_reading.scorep_target_reading(Facts(tmp_path), "floor")
    assert "never pooled with the H200's), another build's default missed the bound" in again
