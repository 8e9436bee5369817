"""The generated block of GPU calls R and S (2026-12-05): is reading the clock part of what a launch record
costs? The lockstep rounds of the default Score-P mode beside the same mode with Score-P's TSC timer and
the bare CUPTI client with the same launch callbacks; what one clock reading costs on the machine
(``scripts/clock_cost.c``, run in each call); the stepping thread's system CPU time per step; the
default mode's targets on these rounds. The shared table, wording and targets come from :mod:`docbench`
and :mod:`docbench_calls`."""

from __future__ import annotations

import statistics

from dnabert_scaling.analysis.stats import is_finite_number

from dnabert_scaling.tools.docbench import (
    LAUNCH_MODE,
    LAUNCH_SAID,
    NAMES,
    bench_file,
    scorep_targets,
    sign_split,
)
from dnabert_scaling.tools.docbench_calls import _cache_run_head, _paired_sentences, step_figures
from dnabert_scaling.tools.docfacts import Facts

TIMER_DIR = "h200-bench/gpu-call-2026-12-05"
TIMER_BENCH = f"{TIMER_DIR}/bench-rs.json"  # calls R and S merged
TIMER_CLOCKS = (f"{TIMER_DIR}/clock-r.json", f"{TIMER_DIR}/clock-s.json")  # scripts/clock_cost.c in each call
TSC_MODE = "scorep-launch-chunk4m-tsc"  # the default mode with Score-P's TSC timer (its name: docbench.NAMES)
# the readings the block quotes: (the probe's key, what the block calls it)
READINGS = (
    ("clock_gettime(CLOCK_MONOTONIC_RAW)", "`clock_gettime(CLOCK_MONOTONIC_RAW)`, Score-P's clock_gettime timer"),
    ("clock_gettime(CLOCK_MONOTONIC)", "`clock_gettime(CLOCK_MONOTONIC)`, the bare client's"),
    ("syscall clock_gettime(CLOCK_MONOTONIC_RAW)", "the same through the system call"),
    ("rdtsc", "`rdtsc`, Score-P's TSC timer"),
)


def bench_trace_timer(facts: Facts, _: str | None) -> str:
    """Calls R and S: the table; the TSC timer and the bare client with launch callbacks against the default
    mode on the rounds both ran; what one clock reading costs; the system CPU time per step; the targets."""
    data = bench_file(facts, TIMER_BENCH)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{TIMER_BENCH}` shipped)"
    text, names, by, configs, cached, runs = _cache_run_head(data, modes)
    text += _paired_sentences(by, configs, names, ((TSC_MODE, LAUNCH_MODE), ("cupti-launch", LAUNCH_MODE)))
    text += _clock_sentence(facts, _timer_told_apart(by, configs)) + _system_time_sentence(data, names)
    said = f"{LAUNCH_SAID}, stream reference cache on" if cached == runs else LAUNCH_SAID
    return text + "\n\n" + scorep_targets([m for m in modes if m.get("mode") != TSC_MODE], data, said=said)


def _timer_told_apart(by: dict, configs: list[str]) -> bool | None:
    """Whether the TSC timer and clock_gettime told the default mode apart at some configuration (the sign test
    over the rounds both ran, p < 0.05); None where no round ran both."""
    splits = [split for c in configs if (split := sign_split(by, c, TSC_MODE, LAUNCH_MODE)) is not None]
    return any(p < 0.05 for _, _, p in splits) if splits else None


def _clock_sentence(facts: Facts, told_apart: bool | None) -> str:
    """What one clock reading cost in each call (the probe's median over its batches), as a range over the calls,
    and the clocksource; set against the two readings a launch record takes and against the TSC mode's rounds
    (``told_apart``: whether the timer changed the default mode's cost there)."""
    probes = [p for f in TIMER_CLOCKS if isinstance(p := facts.bench(f), dict) and isinstance(p.get("ns_per_reading"), dict)]
    if not probes:
        return ""
    parts = []
    for key, said in READINGS:
        values = [p["ns_per_reading"][key] for p in probes if is_finite_number(p["ns_per_reading"].get(key))]
        if values:
            lo, hi = min(values), max(values)
            parts.append(f"{said} {lo:.0f} ns" if f"{lo:.0f}" == f"{hi:.0f}" else f"{said} {lo:.0f}-{hi:.0f} ns")
    sources = sorted({str(p.get("clocksource")) for p in probes})
    clock = [v for p in probes if is_finite_number(v := p["ns_per_reading"].get("clock_gettime(CLOCK_MONOTONIC_RAW)"))]
    syscall = [v for p in probes if is_finite_number(v := p["ns_per_reading"].get("syscall clock_gettime(CLOCK_MONOTONIC_RAW)"))]
    text = (
        f" What one clock reading costs on the machine (`scripts/clock_cost.c` in each of the {len(probes)} calls; "
        f"clocksource {', '.join(sources)}; median of 9 batches): " + "; ".join(parts) + "."
    )
    if not clock:
        return text
    text += f" A launch record takes two readings: at most {2 * max(clock) / 1e3:.2f} µs of Score-P's clock a launch"
    served = bool(syscall) and max(clock) < 0.5 * min(syscall)
    text += ", read through the vDSO (under half the system call's cost)" if served else ""
    if told_apart is False and served:
        text += (
            ", and the TSC timer did not tell the default mode apart from itself on clock_gettime in any configuration "
            "(sign test p >= 0.05): reading the clock is not where Score-P's cost beyond the bare client lies"
        )
    elif told_apart:
        text += "; the TSC timer told the default mode apart from itself on clock_gettime (sign test p < 0.05, above)"
    return text + "."


def _system_time_sentence(data: dict, names: dict) -> str:
    """The stepping thread's system (kernel) CPU time per step, per mode: the mean over every measured step of
    every round that recorded it (the kernel accounts a thread's time in whole ticks, so a step holds 0 or a
    tick: the mean, not the median, estimates it), over that mode's mean step time."""
    pairs, _ = step_figures(data, "steps_sys_ms")
    sums = {mode: [x for x, _ in xt] for mode, xt in pairs.items()}
    steps = {mode: [t for _, t in xt] for mode, xt in pairs.items()}
    if not sums:
        return ""
    parts = [
        f"{names.get(m, 'no tracer' if m == 'untraced' else m)} {statistics.mean(xs):.2f} ms "
        f"({100 * statistics.mean(xs) / statistics.mean(steps[m]):.1f}% of its mean step)"
        for m, xs in sums.items()
        if xs and statistics.mean(steps[m]) > 0
    ]
    return (
        " The stepping thread's system CPU time per step (`getrusage` of the thread; the mean over every measured step, as "
        "the kernel counts it in whole ticks): " + "; ".join(parts) + "."
    )
