"""The generated blocks of single GPU calls that answer one question each beside the shipped
tracing-cost file: Score-P loaded without CUDA recording (call F), CUPTI's buffer size (call L), the
stream reference cache with CUPTI's launch callbacks (calls N, O, P), and where the host time of a
traced step goes (calls A, B, C of 2026-12-04's second day of calls: CPU accounting per step and a
sampled round). Each reads its call's JSON; the shared table, wording and targets come from
:mod:`docbench`."""

from __future__ import annotations

import statistics

from dnabert_scaling.tools.docbench import (
    CACHE_BENCH,
    CACHE_OFF,
    LAUNCH_MODE,
    LAUNCH_SAID,
    NAMES,
    SCOREP_RATIO_TARGETS,
    TABLE_HEAD,
    bench_file,
    build_counts,
    cache_in_builds,
    launch_spread,
    method_text,
    mode_row,
    paired_differences,
    paired_phrase,
    rounds_cheaper,
    scorep_targets,
)
from dnabert_scaling.tools import cost_verdicts as cv
from dnabert_scaling.analysis.stats import is_finite_number
from dnabert_scaling.tools.docfacts import Facts

# the run that measured the buffer sizes (call L): CUPTI alone and Score-P, each in 4 MB and 8 kB buffers
BUFFERS_BENCH = "h200-bench/gpu-call-2026-12-04-cupti/bench-l.json"


# the run that measured Score-P loaded without CUDA recording (call F), beside kernel recording only
PRESENCE_BENCH = "h200-bench/gpu-call-2026-12-04-stream-sync/bench-f.json"


def bench_trace_scorep_presence(facts: Facts, _: str | None) -> str:
    """Call F: Score-P loaded with no CUDA recording against kernel recording only, torch.profiler and
    no tracer, in the same lockstep rounds; whether the cost of Score-P without `driver` is Score-P's presence or its
    kernel recording, judged from the medians."""
    data = bench_file(facts, PRESENCE_BENCH)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{PRESENCE_BENCH}` shipped)"
    by = {(m["mode"], m["config"]): m for m in modes}
    calls = {c.get("mode"): c for c in data.get("per_call") or []}
    launch = {k: c["launch_ns"] for k, c in calls.items() if isinstance(c.get("launch_ns"), (int, float))}
    text = "\n".join([*TABLE_HEAD, *(mode_row(m) for m in modes)]) + "\n\n" + method_text(data)
    if launch:
        spread = launch_spread(calls)
        text += (
            " One launch (host µs, median of the per-call turns): "
            + ", ".join(f"{NAMES.get(k, k)} {v / 1e3:.1f}" for k, v in launch.items())
            + (f"; {spread}" if spread else "")
            + "."
        )
    configs = [c for c, _ in SCOREP_RATIO_TARGETS if ("scorep-nocuda", c) in by and ("scorep-nodriver", c) in by]
    if configs:
        pairs = [(by[("scorep-nocuda", c)]["ratio_median"], by[("scorep-nodriver", c)]["ratio_median"]) for c in configs]
        figures = "; ".join(
            f"{lo:.2f}x against {hi:.2f}x at {c}{rounds_cheaper(by, c, 'scorep-nocuda', 'scorep-nodriver')}"
            for c, (lo, hi) in zip(configs, pairs)
        )
        if all(lo <= 1.05 and hi - lo >= 0.05 for lo, hi in pairs):
            verdict = (
                "so what Score-P without `driver` costs is its kernel recording (CUPTI's activity records and Score-P's "
                "handling of them), not Score-P being loaded"
            )
        elif all(lo > 1.05 for lo, _ in pairs):
            verdict = "so Score-P being loaded already accounts for part of what Score-P without `driver` costs"
        else:
            verdict = "too close, or too mixed, to say which part of what Score-P without `driver` costs is which"
        text += f" Score-P loaded without CUDA recording, against kernel recording only: {figures}: {verdict}."
    return text


# call L's comparisons: (the 4 MB mode, the 8 kB mode)
BUFFER_PAIRS = (
    ("cupti-kernels", "cupti-kernels-8k"),
    ("scorep-nodriver-chunk4m", "scorep-nodriver"),
    ("scorep-launch-chunk4m", "scorep-launch"),
)


def bench_trace_cupti_buffers(facts: Facts, _: str | None) -> str:
    """Call L: CUPTI alone and Score-P, each in 4 MB and in 8 kB buffers, in the same lockstep rounds:
    the table, and each 4 MB mode against its 8 kB twin and Score-P (4 MB) against CUPTI alone (4 MB),
    on the rounds both ran, with the rounds the first was the cheaper in."""
    data = bench_file(facts, BUFFERS_BENCH)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{BUFFERS_BENCH}` shipped)"
    by = {(m["mode"], m["config"]): m for m in modes}
    configs = list(dict.fromkeys(m["config"] for m in modes))
    text = "\n".join([*TABLE_HEAD, *(mode_row(m) for m in modes)]) + "\n\n" + method_text(data)
    sentences = []
    for big, small in (*BUFFER_PAIRS, ("cupti-kernels", "scorep-nodriver-chunk4m")):
        figures = [f for c in configs if (f := paired_phrase(by, c, big, small))]
        if figures:
            sentences.append(f"{NAMES[big]} against {NAMES[small]}: {'; '.join(figures)}")
    return text + (" " + ". ".join(sentences) + "." if sentences else "")


def _paired_gain(by: dict, config: str, mode: str, other: str) -> float | None:
    """The median over the rounds both ran of ``other``'s round ratio minus ``mode``'s (what ``mode`` saves)."""
    differences = paired_differences(by, config, other, mode)
    return statistics.median(differences.values()) if differences else None


def _cache_run_head(data: dict, modes: list[dict]) -> tuple[str, dict, dict, list[str], int, int]:
    """The table and method of a run on a build that may carry the stream reference cache (the default
    mode named as cached where every run's build lists the patch): (text, names, rows by (mode, config),
    configurations, runs with the cache, runs)."""
    runs, _, cached = build_counts(data)
    names = dict(NAMES)
    if cached == runs:
        names[LAUNCH_MODE] = "Score-P, launch-only, 4 MB buffers, stream reference cache on (default without the records patch)"
    by = {(m["mode"], m["config"]): m for m in modes}
    configs = list(dict.fromkeys(m["config"] for m in modes))
    text = "\n".join([*TABLE_HEAD, *(mode_row(m, names) for m in modes)]) + "\n\n" + method_text(data) + cache_in_builds(data)
    return text, names, by, configs, cached, runs


def _paired_sentences(by: dict, configs: list[str], names: dict, pairs) -> str:
    """Each (mode, other) on the rounds both ran, per configuration: the medians, the rounds ``mode`` was
    the cheaper in with the sign test, and whether it was cheaper or dearer by the median paired difference,
    by how much per round (the two can point different ways: the sign test counts rounds, the median weighs
    them)."""
    sentences = []
    for mode, other in pairs:
        figures = []
        for c in configs:
            phrase, gain = paired_phrase(by, c, mode, other), _paired_gain(by, c, mode, other)
            if phrase and gain is not None:
                side = "cheaper" if gain > 0 else "dearer" if gain < 0 else "no different"
                figures.append(f"{phrase}; {side} by a median of {abs(gain):.3f} per round")
        if figures:
            sentences.append(f"{names[mode]} against {names[other]}: {'; '.join(figures)}")
    return " " + ". ".join(sentences) + "." if sentences else ""


def bench_trace_stream_cache(facts: Facts, _: str | None) -> str:
    """Calls N, O and P: launch-only Score-P with and without the stream reference cache, beside CUPTI
    alone without and with launch callbacks, Score-P without `driver`, torch.profiler and no tracer, in
    the same lockstep rounds; the paired comparisons, and the default mode's targets on these rounds."""
    data = bench_file(facts, CACHE_BENCH)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{CACHE_BENCH}` shipped)"
    text, names, by, configs, cached, runs = _cache_run_head(data, modes)
    text += _paired_sentences(
        by, configs, names, ((LAUNCH_MODE, CACHE_OFF), ("cupti-launch", LAUNCH_MODE), ("cupti-kernels", "cupti-launch"))
    )
    readings = []
    for config, bound in SCOREP_RATIO_TARGETS if cached == runs else ():  # only where every run had the cache to turn off
        on, off = by.get((LAUNCH_MODE, config)), by.get((CACHE_OFF, config))
        if not (on and off):
            continue
        a, b = on["ratio_median"], off["ratio_median"]
        v_on, i_on = cv.judge([cv.rounds_of(data, config, LAUNCH_MODE)], bound)
        v_off, i_off = cv.judge([cv.rounds_of(data, config, CACHE_OFF)], bound)
        if v_on == v_off:
            verdict = f"the target is {v_on} both with the cache and without it"
            if v_on == "met":
                verdict += ": these rounds meet it, not the cache"
        else:
            verdict = f"the target is {v_on} with the cache and {v_off} without it"
        readings.append(
            f"at {config} {a:.2f}x with the cache ({i_on}), {b:.2f}x without it ({i_off}), against <= {bound:.2f}x: {verdict}"
        )
    if readings:
        text += " On these rounds, " + "; ".join(readings) + "."
    return (
        text
        + "\n\n"
        + scorep_targets(modes, data, said=f"{LAUNCH_SAID}, stream reference cache on" if cached == runs else LAUNCH_SAID)
    )


# calls A, B and C: the lockstep rounds (merged), the sampled round of call C and its profiles
PROFILE_DIR = "h200-bench/gpu-call-2026-12-04-profile"
PROFILE_BENCH = f"{PROFILE_DIR}/bench-abc.json"
PROFILE_SAMPLED = f"{PROFILE_DIR}/sampled-c.json"  # the sampled round itself (bench_trace.py --sample)
PROFILE_CPU = f"{PROFILE_DIR}/profile-c.json"  # host_profile.py on the GPU machine: every library named
PROFILE_FOCUS = f"{PROFILE_DIR}/profile-c-focus.json"  # the same samples, --focus on Score-P's and OTF2's libraries
FOCUS_OF = {LAUNCH_MODE: "Score-P's and OTF2's own code", "cupti-launch": "the client's own callback"}


def bench_trace_host_profile(facts: Facts, _: str | None) -> str:
    """Calls A, B and C: the lockstep rounds of the default mode beside CUPTI alone with and without
    launch callbacks, Score-P without `driver`, torch.profiler and no tracer; the paired comparisons;
    where a step's time goes (the process's CPU time, the stepping thread's, the closing wait); the
    sampled round; the default mode's targets on these rounds."""
    data = bench_file(facts, PROFILE_BENCH)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{PROFILE_BENCH}` shipped)"
    text, names, by, configs, cached, runs = _cache_run_head(data, modes)
    pairs = (
        ("cupti-launch", LAUNCH_MODE),
        ("scorep-nodriver-chunk4m", LAUNCH_MODE),
        ("cupti-kernels", "scorep-nodriver-chunk4m"),
        ("cupti-kernels", "cupti-launch"),
    )
    text += _paired_sentences(by, configs, names, pairs)
    beyond = [g for c in configs if (g := _paired_gain(by, c, "cupti-launch", LAUNCH_MODE)) is not None]
    text += _step_accounting(data) + _sampled_round(facts, names, by, beyond)
    said = f"{LAUNCH_SAID}, stream reference cache on" if cached == runs else LAUNCH_SAID
    return text + "\n\n" + scorep_targets(modes, data, said=said)


def nonnegative_number(x) -> bool:
    return is_finite_number(x) and x >= 0


def step_figures(data: dict, key: str) -> tuple[dict[str, list[tuple[float, float]]], int]:
    """Per mode, every measured step's ``key`` figure with the step's time in ms, pooled over the configurations
    and the rounds that recorded that figure; and how many rounds those are. A round's list that is not one
    finite, non-negative number per step (a hand-edited or damaged file) is left out."""
    out: dict[str, list[tuple[float, float]]] = {}
    rounds = 0
    for r in data.get("rounds") or []:
        per_cfg = r.get(key) if isinstance(r, dict) else None
        if not isinstance(per_cfg, dict) or not per_cfg:
            continue
        rounds += 1
        for cfg, per_mode in per_cfg.items():
            times = ((r.get("steps_ms") or {}).get(cfg) or {}) if isinstance(r.get("steps_ms"), dict) else {}
            for mode, xs in (per_mode or {}).items() if isinstance(per_mode, dict) else ():
                ts = times.get(mode) if isinstance(times, dict) else None
                if isinstance(xs, list) and isinstance(ts, list) and len(xs) == len(ts) and all(map(nonnegative_number, xs + ts)):
                    out.setdefault(mode, []).extend(zip(xs, ts))
    return out, rounds


def _step_ratios(data: dict, key: str) -> tuple[dict[str, list[float]], int]:
    """Per mode, every measured step's ``key`` figure over its time (:func:`step_figures`); and the rounds."""
    pairs, rounds = step_figures(data, key)
    return {mode: [x / t for x, t in xt if t > 0] for mode, xt in pairs.items()}, rounds


def _rounds(n: int) -> str:
    return f"{n} round{'' if n == 1 else 's'}"


def _step_accounting(data: dict) -> str:
    """How a step's wall time splits: the process's CPU time over it (all threads), the stepping
    thread's, and the closing synchronisation's, each the range of the modes' medians over their steps
    and over the rounds that recorded it."""
    (proc, n_proc), (main, n_main), (wait, n_wait) = (
        _step_ratios(data, k) for k in ("steps_proc_cpu_ms", "steps_cpu_ms", "steps_sync_ms")
    )
    if not proc:
        return ""

    def span(per_mode: dict[str, list[float]]) -> tuple[float, float]:
        medians = [statistics.median(xs) for xs in per_mode.values() if xs]
        return min(medians), max(medians)

    def said(lo: float, hi: float, fmt: str) -> str:
        a, b = format(lo, fmt), format(hi, fmt)
        return f"is {a} in every mode" if a == b else f"lies between {a} and {b}"

    (plo, phi), (mlo, mhi) = span(proc), span(main)
    text = (
        " Where a step's time goes, each figure per step over the step's wall time, the median of each mode's steps: "
        f"the CPU time of all the process's threads {said(plo, phi, '.2f')} ({_rounds(n_proc)}); the stepping thread's "
        f"{said(mlo, mhi, '.2f')} ({_rounds(n_main)}; PyTorch runs the backward pass on a thread of its own while the "
        "stepping thread waits)"
    )
    host_bound = 0.9 <= plo and phi <= 1.1
    if wait:
        wlo, whi = span(wait)
        text += f"; the step's closing wait for its stream {said(100 * wlo, 100 * whi, '.1f')}% ({_rounds(n_wait)})"
        if host_bound and whi <= 0.02:
            text += (
                ": the threads' CPU time adds up to the step and the step barely waits for the GPU at its end, so "
                "the steps are host-bound and what a tracer costs here is CPU time on the threads that launch"
            )
    return text + "."


def _sampled_rate(facts: Facts, procs: dict) -> tuple[float, float] | None:
    """The samples per second of CPU time each sampled process got (its samples over the CPU time of all
    its threads in its measured steps, from the sampled round's JSON): the lowest and highest."""
    sampled = bench_file(facts, PROFILE_SAMPLED)
    rounds = [r for r in sampled.get("rounds") or [] if isinstance(r, dict) and r.get("steps_proc_cpu_ms")]
    if not rounds:
        return None
    rates = []
    for mode, p in procs.items():
        cpu_s = sum(sum(per_mode.get(mode) or []) for per_mode in rounds[0]["steps_proc_cpu_ms"].values()) / 1e3
        if cpu_s > 0 and p.get("samples"):
            rates.append(p["samples"] / cpu_s)
    return (min(rates), max(rates)) if rates else None


def _sampled_round(facts: Facts, names: dict, by: dict, beyond: list[float]) -> str:
    """Call C's sampled round: per mode its CPU-time samples against no tracer's, CUPTI's share, and the
    tracer's own code (the focus profile); why one round does not order the modes; Score-P's own code
    set beside ``beyond``, what the default mode cost beyond CUPTI alone with launch callbacks."""
    cpu, focus = facts.bench(PROFILE_CPU) or {}, facts.bench(PROFILE_FOCUS) or {}
    listed = [p for p in cpu.get("processes") or [] if isinstance(p, dict)]
    procs = {str(p.get("label", "")).split(" ")[0]: p for p in listed}
    own = {str(p.get("label", "")).split(" ")[0]: p.get("focus") for p in focus.get("processes") or [] if isinstance(p, dict)}
    if len(procs) < len(listed):  # one sampled process per mode is what this reads; never one of several
        return " The sampled profile holds more than one process of a mode (more than one round): not summarised here."
    base = (procs.get("untraced") or {}).get("samples")
    if not base:
        return ""
    parts = [f"no tracer {base:,} samples"]
    for mode, p in procs.items():
        if mode == "untraced" or not p.get("samples"):
            continue
        n = p["samples"]
        cupti = next((x[2] for x in p.get("library_inclusive") or [] if str(x[0]).startswith("libcupti")), 0.0)
        part = f"{names.get(mode, mode)} {n:,} ({n / base:.2f}x; libcupti on the stack in {100 * cupti:.1f}% of them"
        mine = own.get(mode) if mode in FOCUS_OF else None
        if mine and mine.get("samples") is not None:
            part += f", {FOCUS_OF[mode]} in {100 * mine['samples'] / n:.1f}%"
            entry = mine.get("entered_at") or []
            if mode == LAUNCH_MODE and entry and entry[0][1] == mine["samples"]:
                part += f", every one entered through {str(entry[0][0]).split(' (')[0]}, which libcupti calls"
        parts.append(part + ")")
    rate = _sampled_rate(facts, procs)
    asked = procs["untraced"].get("hz")
    got = "" if not rate else f"{rate[0]:.0f}" if f"{rate[0]:.0f}" == f"{rate[1]:.0f}" else f"{rate[0]:.0f}-{rate[1]:.0f}"
    pace = f"its timer asked for {asked} Hz" + (f" and the samples came at {got} per second of CPU time" if got else "")
    text = (
        " One round sampled with `scripts/host_sampler.c` (call C: 100 measured steps per configuration, the CPU time of "
        f"every thread; {pace}; read with `scripts/host_profile.py`; samples in the measured steps): " + "; ".join(parts) + "."
    )
    spread = [(m["ratio_min"], m["ratio_max"]) for (mode, _), m in by.items() if mode == LAUNCH_MODE]
    if spread:
        lo, hi = min(a for a, _ in spread), max(b for _, b in spread)
        text += (
            " The counts follow that round's CPU time, and one round's ratios scatter as much as the rounds above do (the "
            f"default mode's ranged over {lo:.2f}-{hi:.2f}x), so the round does not order modes a few per cent apart."
        )
    mine = own.get(LAUNCH_MODE) or {}
    if mine.get("samples"):
        share = mine["samples"] / base  # Score-P's own code, in steps of no tracer
        text += f" It does locate Score-P's own code: {share:.3f} of an untraced step's CPU time"
        inner = mine.get("innermost") or []
        if inner and inner[0][1] <= 0.2 * mine["samples"]:
            text += (
                f" (as innermost Score-P or OTF2 function none holds more than {inner[0][1]} of its {mine['samples']} samples)"
            )
        if beyond:
            lo, hi = min(beyond), max(beyond)
            cost = f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"
            text += (
                f", against the {cost} of an untraced step that launch-only Score-P cost beyond CUPTI alone with launch "
                "callbacks over the rounds above"
            )
            if share < 0.6 * lo:
                text += ": the rest of that is not in Score-P's code as sampled, and this round does not locate it"
        text += "."
    return text
