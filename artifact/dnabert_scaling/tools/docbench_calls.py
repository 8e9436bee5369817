"""The generated blocks of single GPU calls that answer one question each beside the shipped
tracing-cost file: Score-P loaded without CUDA recording (call F), CUPTI's buffer size (call L), and
the stream reference cache with CUPTI's launch callbacks (calls N, O, P). Each reads its call's JSON;
the shared table, wording and targets come from :mod:`docbench`."""

from __future__ import annotations

import statistics

from dnabert_scaling.tools.docbench import (
    CACHE_BENCH,
    CACHE_OFF,
    DEFAULT_MODE,
    DEFAULT_SAID,
    NAMES,
    SCOREP_RATIO_TARGETS,
    TABLE_HEAD,
    _builds,
    _cache_in_builds,
    _launch_spread,
    _method,
    _mode_row,
    _paired_phrase,
    _round_ratios,
    _rounds_cheaper,
    _scorep_targets,
)
from dnabert_scaling.tools.docfacts import Facts

# the run that measured the buffer sizes (call L): CUPTI alone and Score-P, each in 4 MB and 8 kB buffers
BUFFERS_BENCH = "h200-bench/gpu-call-2026-12-04-cupti/bench-l.json"


# the run that measured Score-P loaded without CUDA recording (call F), beside kernel recording only
PRESENCE_BENCH = "h200-bench/gpu-call-2026-12-04-stream-sync/bench-f.json"


def bench_trace_scorep_presence(facts: Facts, _: str | None) -> str:
    """Call F: Score-P loaded with no CUDA recording against kernel recording only, torch.profiler and
    no tracer, in the same lockstep rounds; whether the cost of Score-P without `driver` is Score-P's presence or its
    kernel recording, judged from the medians."""
    data = facts.bench(PRESENCE_BENCH) or {}
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{PRESENCE_BENCH}` shipped)"
    by = {(m["mode"], m["config"]): m for m in modes}
    calls = {c.get("mode"): c for c in data.get("per_call") or []}
    launch = {k: c["launch_ns"] for k, c in calls.items() if isinstance(c.get("launch_ns"), (int, float))}
    text = "\n".join([*TABLE_HEAD, *(_mode_row(m) for m in modes)]) + "\n\n" + _method(data)
    if launch:
        spread = _launch_spread(calls)
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
            f"{lo:.2f}x against {hi:.2f}x at {c}{_rounds_cheaper(by, c, 'scorep-nocuda', 'scorep-nodriver')}"
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
    data = facts.bench(BUFFERS_BENCH) or {}
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{BUFFERS_BENCH}` shipped)"
    by = {(m["mode"], m["config"]): m for m in modes}
    configs = list(dict.fromkeys(m["config"] for m in modes))
    text = "\n".join([*TABLE_HEAD, *(_mode_row(m) for m in modes)]) + "\n\n" + _method(data)
    sentences = []
    for big, small in (*BUFFER_PAIRS, ("cupti-kernels", "scorep-nodriver-chunk4m")):
        figures = [f for c in configs if (f := _paired_phrase(by, c, big, small))]
        if figures:
            sentences.append(f"{NAMES[big]} against {NAMES[small]}: {'; '.join(figures)}")
    return text + (" " + ". ".join(sentences) + "." if sentences else "")


def _paired_gain(by: dict, config: str, mode: str, other: str) -> float | None:
    """The median over the rounds both ran of ``other``'s round ratio minus ``mode``'s (what ``mode`` saves)."""
    a, b = _round_ratios(by, mode, config), _round_ratios(by, other, config)
    common = [k for k in a if k in b]
    return statistics.median(b[k] - a[k] for k in common) if common else None


def bench_trace_stream_cache(facts: Facts, _: str | None) -> str:
    """Calls N, O and P: launch-only Score-P with and without the stream reference cache, beside CUPTI
    alone without and with launch callbacks, Score-P without `driver`, torch.profiler and no tracer, in
    the same lockstep rounds; the paired comparisons, and the default mode's targets on these rounds."""
    data = facts.bench(CACHE_BENCH) or {}
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{CACHE_BENCH}` shipped)"
    runs, _, cached = _builds(data)
    names = dict(NAMES)
    if cached == runs:
        names[DEFAULT_MODE] = "Score-P, launch-only, 4 MB buffers, stream reference cache on (default)"
    by = {(m["mode"], m["config"]): m for m in modes}
    configs = list(dict.fromkeys(m["config"] for m in modes))
    text = "\n".join([*TABLE_HEAD, *(_mode_row(m, names) for m in modes)]) + "\n\n" + _method(data) + _cache_in_builds(data)
    sentences = []
    for mode, other in ((DEFAULT_MODE, CACHE_OFF), ("cupti-launch", DEFAULT_MODE), ("cupti-kernels", "cupti-launch")):
        figures = []
        for c in configs:
            phrase, gain = _paired_phrase(by, c, mode, other), _paired_gain(by, c, mode, other)
            if phrase and gain is not None:
                figures.append(f"{phrase}, by a median of {gain:.3f} per round")
        if figures:
            sentences.append(f"{names[mode]} against {names[other]}: {'; '.join(figures)}")
    if sentences:
        text += " " + ". ".join(sentences) + "."
    readings = []
    for config, bound in SCOREP_RATIO_TARGETS if cached == runs else ():  # only where every run had the cache to turn off
        on, off = by.get((DEFAULT_MODE, config)), by.get((CACHE_OFF, config))
        if not (on and off):
            continue
        a, b = on["ratio_median"], off["ratio_median"]
        if a <= bound < b:
            verdict = "met with the cache, missed without it"
        elif a <= bound and b <= bound:
            verdict = "met with the cache off too: these rounds meet it, not the cache"
        elif a > bound and b > bound:
            verdict = "missed with the cache and without it"
        else:
            verdict = "missed with the cache, met without it"
        readings.append(f"at {config} {a:.2f}x with the cache, {b:.2f}x without it, against <= {bound:.2f}x: {verdict}")
    if readings:
        text += " On these rounds, " + "; ".join(readings) + "."
    return (
        text
        + "\n\n"
        + _scorep_targets(modes, data, said=f"{DEFAULT_SAID}, stream reference cache on" if cached == runs else DEFAULT_SAID)
    )
