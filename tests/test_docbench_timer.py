"""The generated block of calls R and S (tools/docbench_timer.py) says what its files say: the clock's
cost from the probe's files, a conclusion about the timer only where the probe shows the vDSO serving
the clock and the TSC rounds do not tell the default mode apart, and the system CPU time as the mean
of the steps (the kernel counts it in whole ticks)."""

from __future__ import annotations

import json

from dnabert_scaling.tools import docbench, docbench_timer
from dnabert_scaling.tools.docfacts import Facts

D, T = docbench.LAUNCH_MODE, docbench_timer.TSC_MODE


def _row(mode, ratios):
    return {"mode": mode, "config": "8x70", "ratio_median": sorted(ratios)[len(ratios) // 2], "ratio_min": min(ratios),
            "ratio_max": max(ratios), "rounds": len(ratios), "pooled_ratio_median": 1.0, "pooled_ratio_q1": 1.0,
            "pooled_ratio_q3": 1.0, "pairs": 30 * len(ratios), "round_ratios": [[i, x] for i, x in enumerate(ratios)],
            "trace_bytes_per_step": None, "kernels_found_share": None}  # fmt: skip


def _write(tmp_path, tsc, default, clock_ns, syscall_ns, sys_ms=None):
    folder = tmp_path / "expected" / "reference" / docbench_timer.TIMER_DIR
    folder.mkdir(parents=True)
    rounds = []
    for i in range(len(default)):
        n = len(sys_ms) if sys_ms is not None else 2
        r = {"round": i, "steps_ms": {"8x70": {"untraced": [10.0] * n, D: [12.0] * n}}}
        if sys_ms is not None:
            r["steps_sys_ms"] = {"8x70": {"untraced": [0.0] * n, D: sys_ms}}
        rounds.append(r)
    doc = {"device": "GPU", "steps": 2, "warmup": 1, "step_sync": "stream", "rounds": rounds,
           "modes": [_row("untraced", [1.0] * len(default)), _row(D, default), _row(T, tsc)]}  # fmt: skip
    (tmp_path / "expected" / "reference" / docbench_timer.TIMER_BENCH).write_text(json.dumps(doc))
    probe = {"clocksource": "tsc", "ns_per_reading": {"clock_gettime(CLOCK_MONOTONIC_RAW)": clock_ns,
             "syscall clock_gettime(CLOCK_MONOTONIC_RAW)": syscall_ns, "rdtsc": 18.0}}  # fmt: skip
    (tmp_path / "expected" / "reference" / docbench_timer.TIMER_CLOCKS[0]).write_text(json.dumps(probe))
    return docbench_timer.bench_trace_timer(Facts(tmp_path), None)


def test_nothing_shipped_is_said(tmp_path):
    assert "(no `" in docbench_timer.bench_trace_timer(Facts(tmp_path), None)


def test_a_cheap_clock_and_rounds_that_do_not_tell_the_timers_apart_clear_the_clock(tmp_path):
    mixed = [1.2, 1.3, 1.1, 1.25, 1.22, 1.28, 1.18, 1.21]
    text = _write(
        tmp_path,
        tsc=[x + (0.01 if i % 2 else -0.01) for i, x in enumerate(mixed)],
        default=mixed,
        clock_ns=30.0,
        syscall_ns=160.0,
    )
    assert "at most 0.06 µs of Score-P's clock a launch" in text and "read through the vDSO" in text
    assert "reading the clock is not where Score-P's cost beyond the bare client lies" in text
    assert "Score-P, launch-only, 4 MB buffers, TSC timer" in text  # the mode named in the table


def test_a_clock_the_vdso_does_not_serve_is_not_cleared(tmp_path):
    mixed = [1.2, 1.3, 1.1, 1.25, 1.22, 1.28, 1.18, 1.21]
    text = _write(tmp_path, tsc=mixed, default=mixed, clock_ns=150.0, syscall_ns=160.0)
    assert "vDSO" not in text and "not where" not in text


def test_a_tsc_timer_cheaper_in_every_round_is_said_to_tell_the_mode_apart(tmp_path):
    default = [1.2, 1.3, 1.1, 1.25, 1.22, 1.28, 1.18, 1.21]
    text = _write(tmp_path, tsc=[x - 0.05 for x in default], default=default, clock_ns=30.0, syscall_ns=160.0)
    assert "the TSC timer told the default mode apart" in text and "not where" not in text


def test_the_system_time_is_the_mean_of_the_steps_not_their_median(tmp_path):
    default = [1.2, 1.3, 1.1]
    # one tick of 4 ms in three steps of 12 ms, in every round: the mean is 1.33 ms, the median would say 0
    text = _write(tmp_path, tsc=default, default=default, clock_ns=30.0, syscall_ns=160.0, sys_ms=[0.0, 4.0, 0.0])
    assert "Score-P, launch-only, 4 MB buffers (default without the records patch) 1.33 ms (11.1% of its mean step)" in text
    assert "no tracer 0.00 ms (0.0% of its mean step)" in text


def test_a_damaged_step_figure_is_left_out_not_a_crash(tmp_path):
    default = [1.2, 1.3, 1.1]
    text = _write(tmp_path, tsc=default, default=default, clock_ns=30.0, syscall_ns=160.0, sys_ms=[0.0, "4", 0.0])
    assert (
        "Score-P, launch-only, 4 MB buffers (default without the records patch) "
        not in text.split("system CPU time per step")[-1]
    )
    assert "no tracer 0.00 ms" in text  # the undamaged mode is still given
