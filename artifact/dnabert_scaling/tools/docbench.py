"""The generated parts of the documents that quote the Score-P tracing-cost benchmark
(``expected/reference/h200-bench/bench-trace-scorep.json``): the table per mode and configuration,
and the launch-only mode against its targets (issue 24). A ratio target is met or missed only where
the 95% interval of the median of the rounds lies on one side of it (:func:`bound_verdict`); else it
is not established."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from dnabert_scaling.analysis.stats import median_interval
from dnabert_scaling.tools.docfacts import Facts
from dnabert_scaling.tools.scorep_series import read_series


# The artifact's default Score-P mode, as the benchmark names it: launch-only driver callbacks, CUPTI's
# buffers in 4 MB chunks (run/tracing/scorep.py: DEFAULT_CUDA_BUFFER_CHUNK). The targets are its.
DEFAULT_MODE = "scorep-launch-chunk4m"
DEFAULT_SAID = "launch-only Score-P in 4 MB buffers"
CHUNK_CHANGED = "after call M (2026-12-04)"  # when the artifact set 4 MB chunks (Score-P's released chunk is 8 kB)
NAMES = {
    "torch": "torch.profiler (CUDA)",
    "scorep-all": "Score-P, every driver call, 8 kB buffers",
    "scorep-launch": "Score-P, launch-only, 8 kB buffers",
    "scorep-nodriver": "Score-P without `driver`, 8 kB buffers",
    "scorep-launch-chunk4m": "Score-P, launch-only, 4 MB buffers (default)",
    "scorep-nodriver-chunk4m": "Score-P without `driver`, 4 MB buffers",
    "scorep-nocuda": "Score-P loaded, no CUDA recording",
    "cupti-kernels": "CUPTI alone (bare client), 4 MB buffers",
    "cupti-kernels-8k": "CUPTI alone (bare client), 8 kB buffers",
    "cupti-launch": "CUPTI alone with launch callbacks (bare client), 4 MB buffers",
    "scorep-launch-nocache-chunk4m": "Score-P, launch-only, 4 MB buffers, stream reference cache off",
}
TABLE_HEAD = (
    "| mode | config | ratio: median of rounds (range) | step pairs: median (quartiles) | rounds / pairs | trace per step | kernels found |",
    "|---|---|---|---|---|---|---|",
)
# the runs that measured the stream reference cache (calls N, O, P, merged), on a build that carries it
CACHE_BENCH = "h200-bench/gpu-call-2026-12-04-cache/bench-nop.json"
CACHE_PATCH = "8.4-cupti-stream-ref-cache.patch"
CACHE_OFF = "scorep-launch-nocache-chunk4m"  # the default mode with the cache turned off


def mode_row(m: dict, names: dict | None = None) -> str:
    size = m.get("trace_bytes_per_step")
    return (
        f"| {(names or NAMES)[m['mode']]} | {m.get('config')} | {m.get('ratio_median', 0):.2f}x "
        f"({m.get('ratio_min', 0):.2f}-{m.get('ratio_max', 0):.2f}) | {m.get('pooled_ratio_median', 0):.2f}x "
        f"({m.get('pooled_ratio_q1', 0):.2f}-{m.get('pooled_ratio_q3', 0):.2f}) | {m.get('rounds')} / {m.get('pairs')} | "
        f"{_size(size)} | "
        f"{_found(m)} |"
    )


def _found(m: dict) -> str:
    """The kernels-found cell: the counts where there are counts (a rounded share would read 100.0% for
    one kernel lost of 200,000), else the share."""
    share, found, launches = m.get("kernels_found_share"), m.get("kernels_found"), m.get("launches_counted")
    if not isinstance(share, (int, float)):
        return "-"
    if isinstance(found, int) and isinstance(launches, int):  # the counts, complete or not, so rows compare
        return f"{found:,} of {launches:,}"
    return _pct(share, 1)


def build_counts(data: dict) -> tuple[int, int, int]:
    """Of a merge's runs (a single run: itself): how many, how many list their Score-P build's patches,
    and how many of those list the stream reference cache patch."""
    runs = data.get("merged_from") or [{"machine": data.get("machine") or {}}]
    listed = [r["machine"]["scorep_patches"] for r in runs if isinstance((r.get("machine") or {}).get("scorep_patches"), list)]
    return len(runs), len(listed), sum(CACHE_PATCH in p for p in listed)


def cache_in_builds(data: dict) -> str:
    """Whether the Score-P that ran a benchmark carried the stream reference cache, from its runs' records."""
    runs, listed, cached = build_counts(data)
    if cached == runs:
        ran_off = any(m.get("mode") == CACHE_OFF for m in data.get("modes") or [] if isinstance(m, dict))
        return (
            f" Score-P was built with `{CACHE_PATCH}` in every run ({runs}): the default mode ran with the stream reference cache"
            + (f", `{CACHE_OFF}` without it." if ran_off else " (no mode turned it off).")
        )
    if cached == 0:
        unknown = f"; the other {runs - listed} kept no such record" if listed < runs else ""
        return (
            f" None of the {listed} of {runs} runs that list their Score-P build's patches lists `{CACHE_PATCH}`{unknown}. "
            "The figures with the stream reference cache: the stream-cache block below."
        )
    return f" {cached} of {runs} runs' Score-P list `{CACHE_PATCH}`: launch-only Score-P ran with and without the stream reference cache."


# the benchmark files whose default-mode rows the targets are judged on, with what the documents call them
TARGET_SETS = (
    ("h200-bench/bench-trace-scorep.json", "calls D to M"),  # the shipped file
    (CACHE_BENCH, "calls N, O and P"),
    ("h200-bench/gpu-call-2026-12-04-profile/bench-abc.json", "calls A, B and C"),
)


SERIES = "containers/scorep-patches/series-8.4"  # the build the artifact ships: this series' verified patches


def shipped_build(facts: Facts) -> tuple[str, ...] | None:
    """The patches, in order, of the Score-P the artifact builds (the verified entries of its series);
    None where the series cannot be read."""
    try:
        entries, _ = read_series(facts.root / SERIES)
    except OSError:
        return None
    return tuple(e.file for e in entries if e.status == "verified") or None


def scorep_targets_summary(facts: Facts, _: str | None) -> str:
    """Each ratio target of the default mode over every benchmark file that ran it, each file judged by
    :func:`bound_verdict` on its own rounds and runs. The verdict that heads the line is that of the build
    the artifact ships: the rounds of every file whose runs all list that build's patches, pooled (more
    rounds of one build, a narrower interval, every run's median held against it); where no file ran it,
    all files must agree. Beside a target the build does not meet: CUPTI alone over every file's rounds
    (the bare client loads no Score-P, so no build), and what the default mode adds to the bare client
    with the same launch callbacks, paired per round over the pooled rounds."""
    build = shipped_build(facts)
    found = []
    for path, said in TARGET_SETS:
        data = facts.bench(path) or {}
        by = {(m.get("mode"), m.get("config")): m for m in data.get("modes") or []}
        if any(mode == DEFAULT_MODE for mode, _ in by):
            found.append((said, data, by, build is not None and _build_of(data) == build))
    if not found:
        return "not judged: no benchmark file with the default mode is shipped"
    shared = _shared_runs([(said, data) for said, data, _, ours in found if ours])
    parts = []
    for config, bound in SCOREP_RATIO_TARGETS:
        seen = [(said, data, by, ours) for said, data, by, ours in found if (DEFAULT_MODE, config) in by]
        if not seen:
            parts.append(f"at {config} not judged (no rounds)")
            continue
        figures, verdicts = [], []
        for said, data, by, _ours in seen:
            verdict, interval = judge(data, by, config, bound, DEFAULT_MODE)
            n = len(round_ratios(by, DEFAULT_MODE, config))
            verdicts.append(verdict)
            figures.append(f"{by[(DEFAULT_MODE, config)]['ratio_median']:.2f}x over {said}'s {n} rounds ({verdict}: {interval})")
        ours = [(said, data, by) for said, data, by, mine in seen if mine]
        if ours and not shared:
            values, runs = _pool(ours, config, DEFAULT_MODE)
            verdict, interval = bound_verdict(values, bound, runs)
            head = f"{verdict} for the build the artifact ships"
            tail = (
                f"; the {len(values)} rounds of that build ({' and '.join(said for said, _, _ in ours)}) pooled: "
                f"{statistics.median(values):.2f}x ({verdict}: {interval})"
                if len(ours) > 1
                else ""
            )
            if verdict != "met":
                tail += _cupti_beside(seen, ours, config, bound)
        else:
            head = verdicts[0] if len(set(verdicts)) == 1 else "not established"
            tail = f"; not pooled: {shared}" if shared else ""
        parts.append(f"at {config} (<= {bound:.2f}x) {head}: " + ", ".join(figures) + tail)
    return "; ".join(parts)


def _pool(files: list, config: str, mode: str, minus: str | None = None) -> tuple[list[float], dict[str, list[float]]]:
    """``mode``'s round ratios at ``config`` (or their paired differences from ``minus``'s) in several files
    pooled, and each run's values (a merge's rounds name their run; a file of one run is that run)."""
    pooled: list[float] = []
    runs: dict[str, list[float]] = {}
    for said, data, by in files:
        values = _paired_differences(by, config, mode, minus) if minus else round_ratios(by, mode, config)
        pooled += list(values.values())
        for name, xs in (_runs_of(data, values) or {said: list(values.values())}).items():
            runs.setdefault(name, []).extend(xs)
    return pooled, runs


def _shared_runs(files: list[tuple[str, dict]]) -> str:
    """Why files may not be pooled: two of them list a run of the same name (the same rounds would count
    twice, and narrow the interval falsely); "" where none do."""
    owner: dict[str, str] = {}
    for said, data in files:
        for run in data.get("merged_from") or []:
            name = str(run.get("file"))
            if name in owner and owner[name] != said:
                return f"{owner[name]} and {said} both list a run {name}"
            owner[name] = said
    return ""


def _cupti_beside(seen: list, ours: list, config: str, bound: float) -> str:
    """Beside a target the shipped build does not meet: CUPTI alone over every file's rounds, and what the
    default mode adds to the bare client with the same launch callbacks over the pooled rounds."""
    text = ""
    alone, runs = _pool([(s, d, b) for s, d, b, _ in seen], config, "cupti-kernels")
    if alone:
        verdict, interval = bound_verdict(alone, bound, runs)
        side = {"met": "below the bound", "missed": "above the bound"}.get(verdict, "not told from the bound")
        text += (
            f"; CUPTI alone (the bare client, no Score-P) over the {len(alone)} rounds of every file that ran it: "
            f"{_near(statistics.median(alone), bound)}x, {side} ({interval})"
        )
    beyond, _ = _pool(ours, config, DEFAULT_MODE, minus="cupti-launch")
    if beyond:
        iv = median_interval(beyond, CONFIDENCE)
        ends = "" if iv is None else f"{iv.lo:.3f} to {iv.hi:.3f}" if iv.lo < 0 else f"{iv.lo:.3f}-{iv.hi:.3f}"
        said = f", 95% interval {ends}" if iv else ": too few rounds for an interval"
        text += (
            f"; the default mode beyond the bare client with the same launch callbacks, paired in {len(beyond)} rounds "
            f"of that build: {statistics.median(beyond):+.3f} of an untraced step (median per round{said})"
        )
    return text


def _build_of(data: dict) -> tuple[str, ...] | None:
    """The Score-P build (its patches, in order) that every run of a benchmark file lists; None where a
    run lists none or the runs differ."""
    runs = data.get("merged_from") or [{"machine": data.get("machine") or {}}]
    builds = {tuple(p) if isinstance(p := (r.get("machine") or {}).get("scorep_patches"), list) else None for r in runs}
    return builds.pop() if len(builds) == 1 and None not in builds else None


def _size(size: Any) -> str:
    if not isinstance(size, (int, float)):
        return "-"
    return f"{size / 1e3:,.0f} kB" if size >= 1e3 else f"{size:,.0f} B"


def _pct(x: Any, digits: int = 0) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x * 100:.{digits}f}%"


def bench_trace_scorep(facts: Facts, _: str | None) -> str:
    """``bench-trace-scorep.json``: per mode and configuration, the step time over the untraced
    step of the same turn (median and range of the per-round medians, and the median and quartiles
    of all step pairs), trace bytes per step, kernels found; the per-call figures; the targets."""
    data = facts.bench("h200-bench/bench-trace-scorep.json") or {}
    rows = list(TABLE_HEAD)
    rows += [mode_row(m) for m in data.get("modes") or [] if m.get("mode") in NAMES]
    for c in data.get("per_call") or []:
        if c.get("mode") in NAMES or c.get("mode") == "untraced":
            label = NAMES.get(c["mode"], "untraced")
            rows.append(
                f"| {label}: one `cuCtxGetDevice` / one launch (host ns, median of {c.get('turns')} turns) | - | "
                f"{c.get('cuCtxGetDevice_ns') or 0:,.0f} / {c.get('launch_ns') or 0:,.0f} | - | - | - | - |"
            )
    if len(rows) <= 2:
        return "(no `h200-bench/bench-trace-scorep.json` shipped)"
    parts = [method_text(data) + cache_in_builds(data), _per_call_reading(data), scorep_targets(data.get("modes") or [], data)]
    return "\n".join(rows) + "\n\n" + "\n\n".join(p for p in parts if p)


def _per_call_reading(data: dict) -> str:
    """What the per-call rows say about the ratios: the host cost each subscription adds to a
    launch and to a driver query, and how launch-bound the untraced steps are."""
    calls = {c.get("mode"): c for c in data.get("per_call") or []}

    said: list[float] = []  # the launch differences given, to hold against the spread of the turns

    def diff(a: str, b: str, key: str) -> tuple[float, str] | None:
        paired = _per_call_paired(data, a, b, key)
        if not paired:
            return None
        said.append(paired[0] - paired[1])
        return paired[0] - paired[1], f" ({paired[2]} round{'s' if paired[2] > 1 else ''})"

    out = []
    alone = diff("cupti-kernels", "untraced", "launch_ns")
    if alone is not None:
        out.append(f"CUPTI's kernel records alone (the bare client) add {alone[0] / 1e3:.1f} µs to a launch{alone[1]}")
    kernels, launch = diff("scorep-nodriver", "untraced", "launch_ns"), diff("scorep-launch", "scorep-nodriver", "launch_ns")
    if kernels is not None and launch is not None:
        torch = diff("torch", "untraced", "launch_ns")
        also = f" (torch.profiler adds {torch[0] / 1e3:.1f} µs in all{torch[1]})" if torch is not None else ""
        out.append(
            f"Score-P's kernel records (Score-P without `driver`, 8 kB buffers) add {kernels[0] / 1e3:.1f} µs to a "
            f"launch{kernels[1]}{also}, the launch-only subscription {launch[0] / 1e3:.1f} µs more{launch[1]}"
        )
    spread = launch_spread(calls)
    if spread:
        lo, hi, _ = _widest_launch_turns(calls) or (0.0, 0.0, "")
        if said and all(abs(x) < hi - lo for x in said):
            spread += "; every difference above is smaller than that: the per-call figures indicate, they do not measure"
        out.append(spread)
    query = _per_call_paired(data, "scorep-all", "untraced", "cuCtxGetDevice_ns")
    if query:
        out.append(f"recording every driver call makes a `cuCtxGetDevice` take {query[0]:,.0f} ns instead of {query[1]:,.0f} ns")
    others = [
        f"{label} {q[0]:,.0f} ns instead of {q[1]:,.0f} ns"
        for mode, label in (("torch", "torch.profiler"), ("scorep-launch", "launch-only Score-P (8 kB)"))
        for q in [_per_call_paired(data, mode, "untraced", "cuCtxGetDevice_ns")]
        if q
    ]
    if others:
        out.append("a `cuCtxGetDevice` takes under " + ", under ".join(others))
    steps = [
        f"{m['step_ms_median']:.1f} ms at {m['config']}{_untraced_per_run(data, m['config'])}"
        for m in data.get("modes") or []
        if m.get("mode") == "untraced" and isinstance(m.get("step_ms_median"), (int, float))
    ]
    if steps:
        out.append("the untraced step took " + ", ".join(steps))
    if not out:
        return ""
    return "Per call (each difference from the turns of the rounds that timed both modes): " + "; ".join(out) + "."


def _per_call_paired(data: dict, a: str, b: str, key: str) -> tuple[float, float, int] | None:
    """The medians of ``a``'s and ``b``'s per-call turns (``key``) over the rounds that timed both, and
    how many those are: per-call figures of different rounds come from different processes, often on
    different machines, and are not compared."""
    xs: list[float] = []
    ys: list[float] = []
    n = 0
    for r in data.get("rounds") or []:
        calls = (r.get("per_call") or {}) if isinstance(r, dict) else {}
        ta = [t[key] for t in calls.get(a) or [] if isinstance(t, dict) and isinstance(t.get(key), (int, float))]
        tb = [t[key] for t in calls.get(b) or [] if isinstance(t, dict) and isinstance(t.get(key), (int, float))]
        if ta and tb:
            xs, ys, n = xs + ta, ys + tb, n + 1
    return (statistics.median(xs), statistics.median(ys), n) if n else None


def _widest_launch_turns(calls: dict) -> tuple[float, float, str] | None:
    """The lowest and highest per-launch turn (ns) of the mode whose turns lie widest apart, and that mode."""
    widest = None
    for mode, c in calls.items():
        xs = [x for x in c.get("launch_ns_all") or [] if isinstance(x, (int, float))]
        if len(xs) > 1 and (widest is None or max(xs) - min(xs) > widest[1] - widest[0]):
            widest = (min(xs), max(xs), mode)
    return widest


def launch_spread(calls: dict) -> str:
    """How far one mode's per-launch turns lie apart (the widest mode), and how many processes the
    figures come from: a difference between two medians smaller than that spread is within the noise."""
    widest = _widest_launch_turns(calls)
    if widest is None:
        return ""
    procs = {len(c.get("rounds") or [None]) for c in calls.values()}
    lo, hi, mode = widest
    return (
        f"each per-call figure is the median of its turns in {'/'.join(str(n) for n in sorted(procs))} process(es) per mode, "
        f"and one mode's turns lie up to {(hi - lo) / 1e3:.1f} µs apart ({mode}: {lo / 1e3:.1f}-{hi / 1e3:.1f} µs a launch), "
        "so a difference between two of these medians smaller than that is within the noise"
    )


def method_text(data: dict) -> str:
    """How the shipped figures were taken: sources, rounds, and how a timed step ended."""
    sources = data.get("merged_from") or [{"rounds": len(data.get("rounds") or []), "date": data.get("date")}]
    dates = sorted({str(s.get("date")) for s in sources})
    rounds = sum(int(s.get("rounds") or 0) for s in sources)
    text = (
        f"{data.get('device', 'GPU')}, {', '.join(dates)}: {rounds} rounds ({len(sources)} run(s) of the benchmark), "
        f"{data.get('steps')} measured steps per configuration and process after {data.get('warmup')} warm-up steps."
    )
    if data.get("step_sync", "device") == "stream":
        text += (
            " Every timed step ended by waiting on its stream, not on the device: under Score-P only a device "
            "synchronisation flushes the CUPTI activity buffer, and the training loop does not synchronise inside its steps."
        )
    else:
        text += (
            " Every timed step ended in a device synchronisation, which under Score-P also flushes the CUPTI activity "
            "buffer: a flush per step that the training loop, which does not synchronise inside its steps, does not "
            "pay. The Score-P ratios include that flush; torch.profiler does not flush there."
        )
    return text


# issue 24's targets for the launch-only mode: (config, highest ratio)
SCOREP_RATIO_TARGETS = (("8x70", 1.25), ("32x70", 1.12))
CONFIDENCE = 0.95  # of the interval of a median that a measured figure is judged by


def bound_verdict(values: list, bound: float, runs: dict[str, list] | None = None) -> tuple[str, str]:
    """A measured figure (its values, one per round) against an upper bound: "met" where the 95% interval
    of their median lies at or below the bound, "missed" where it lies above, else "not established";
    and the interval, said.

    The one rule for the Score-P cost targets and the comparisons beside them: a median a few hundredths
    on one side of a bound, over rounds that scatter by tenths, is not a result. Not established also
    where there are too few rounds for an interval, where a value is not a finite number (a broken round
    is not left out), and where the rounds came from several runs (``runs``: each run's values) and the
    median of one of them lies on the other side of the bound: the interval treats rounds as independent
    draws, while rounds of one machine may resemble each other more, so a verdict must not rest on
    pooling machines that disagree."""
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
    if bad:
        return "not established", f"{len(bad)} of {len(values)} round values not finite numbers"
    iv = median_interval(values, CONFIDENCE)
    if iv is None:
        return (
            "not established",
            f"{len(values)} round{'s' if len(values) != 1 else ''}, too few for a 95% interval of the median",
        )
    digits = max(len(_near(x, bound).split(".")[1]) for x in (iv.lo, iv.hi))  # both ends alike
    lo, hi = f"{iv.lo:.{digits}f}", f"{iv.hi:.{digits}f}"
    said = f"95% interval of the median {lo} to {hi}" if iv.lo < 0 else f"95% interval of the median {lo}-{hi}"
    verdict = "met" if iv.hi <= bound else "missed" if iv.lo > bound else "not established"
    if verdict != "not established" and runs and len(runs) > 1:
        medians = {name: statistics.median(xs) for name, xs in runs.items() if xs and all(math.isfinite(x) for x in xs)}
        against = {name: m for name, m in medians.items() if (m > bound if verdict == "met" else m <= bound)}
        if against:
            other = ", ".join(f"{name} {_near(m, bound)}" for name, m in against.items())
            said += f", but the median of {len(against)} of {len(runs)} runs lies on the other side of the bound ({other})"
            verdict = "not established"
    return verdict, said


def _near(x: float, bound: float) -> str:
    """``x`` to two decimals, or to as many more (up to four) as it takes not to read as the bound."""
    for digits in (2, 3, 4):
        if x == bound or f"{x:.{digits}f}" != f"{bound:.{digits}f}":
            return f"{x:.{digits}f}"
    return f"{x:.4f}"


def _runs_of(data: dict, ratios: dict) -> dict[str, list] | None:
    """``{run: its round values}`` of one mode's ``{round: value}`` in a merge whose rounds each name
    their run (``rounds[i]["source"]``); None for a single run or rounds without sources."""
    source = {r.get("round"): r.get("source") for r in data.get("rounds") or [] if isinstance(r, dict)}
    runs: dict[str, list] = {}
    for k, x in ratios.items():
        if source.get(k) is None:
            return None
        runs.setdefault(source[k], []).append(x)
    return runs if len(runs) > 1 else None


def round_ratios(by: dict, mode: str, config: str) -> dict:
    """``{round: its median ratio}`` of ``mode`` at ``config`` (``round_ratios``, as
    ``scripts/bench_trace.py`` summarises them)."""
    rows = (by.get((mode, config)) or {}).get("round_ratios") or []
    return {r[0]: r[1] for r in rows if isinstance(r, list) and len(r) == 2}


def rounds_cheaper(by: dict, config: str, mode: str = DEFAULT_MODE, other: str = "torch") -> str:
    """In how many rounds ``mode`` cost less than ``other`` at ``config`` (the rounds both have a ratio in),
    with the two-sided sign test's p: how often a count this far from even comes from no difference."""
    launch, torch = round_ratios(by, mode, config), round_ratios(by, other, config)
    pairs = [(launch[k], torch[k]) for k in launch if k in torch]
    if not pairs:
        return ""
    cheaper, dearer = sum(a < b for a, b in pairs), sum(a > b for a, b in pairs)
    p = sign_test_p(cheaper, dearer)
    return f", the cheaper in {cheaper} of {len(pairs)} rounds, sign test p {'< 0.001' if p < 0.001 else f'= {p:.2g}'}"


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided sign test (ties left out): the chance of a split at least this uneven if either side
    were as likely to win each round."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(max(wins, losses), n + 1)) / 2**n
    return min(1.0, 2 * tail)


def _against_bound(launch: dict, bound: float, data: dict) -> str:
    """How the rounds lie around a ratio target: how many at or below it and, for a merge of runs,
    each run's median of its rounds (``rounds[i]["source"]`` names the run of round ``i``)."""
    numbered = [r for r in launch.get("round_ratios") or [] if isinstance(r, list) and len(r) == 2]
    if not numbered:
        return ""
    text = f"; {sum(x <= bound for _, x in numbered)} of {len(numbered)} rounds at or below it"
    source = {r.get("round"): r.get("source") for r in data.get("rounds") or [] if isinstance(r, dict)}
    runs: dict = {}
    for k, x in numbered:
        runs.setdefault(source.get(k), []).append(x)
    if len(runs) > 1 and None not in runs:
        text += "; per run " + ", ".join(f"{statistics.median(xs):.2f}x ({name})" for name, xs in runs.items())
    return text


def _launch_experiments(data: dict, mode: str = DEFAULT_MODE) -> list[dict]:
    """The counted experiments of a launch-only mode that hold whole numbers of kernels and launches (a
    merge keeps every run's, each naming its ``source``; a run counts one experiment or one per round)."""
    experiments = ((data.get("counts") or {}).get(mode) or {}).get("experiments") or []
    return [e for e in experiments if isinstance(e.get("kernels"), int) and isinstance(e.get("launches"), int)]


def _kernels_per_run(data: dict, mode: str = DEFAULT_MODE) -> str:
    """The counted experiments of a launch-only mode run by run: kernels of launches, and which lost any."""
    runs: dict = {}
    lost = []
    for e in _launch_experiments(data, mode):
        found, launches, count = runs.get(e.get("source"), (0, 0, 0))
        runs[e.get("source")] = (found + min(e["kernels"], e["launches"]), launches + e["launches"], count + 1)
        if e["kernels"] < e["launches"]:
            where = f"round {e['round']}" if isinstance(e.get("round"), int) else "counted experiment"
            lost.append(f"{e['launches'] - e['kernels']:,} in {e.get('source') or 'the run'}'s {where}")
    parts = [
        f"{found:,} of {launches:,} ({name}{f', {count} experiments' if count > 1 else ''})"
        for name, (found, launches, count) in runs.items()
    ]
    text = f"; per run {', '.join(parts)}" if len(parts) > 1 else ""
    return text + (f"; lost: {', '.join(lost)}" if lost else "")


def _kernels_found(m: dict) -> tuple[str, str]:
    """A launch-only row's kernels found (the counts are per process, the same in every configuration's
    row): what was counted, and met / not met / missed."""
    share = m.get("kernels_found_share")
    if not isinstance(share, (int, float)):  # no count of launches: never met by silence
        return "not counted", "not met"
    if isinstance(m.get("kernels_found"), int) and isinstance(m.get("launches_counted"), int):
        what = f"{m['kernels_found']:,} of {m['launches_counted']:,} launches in {m.get('experiments_counted')} counted experiment(s)"
    else:
        what = _pct(share, 2)
    uncountable = m.get("experiments_uncountable") or 0
    if uncountable:  # an experiment that could not be counted may hold the lost kernel
        what += f", {uncountable} experiment(s) that could not be counted"
    return what, "missed" if share < 1 else "not met" if uncountable else "met"


def scorep_targets(modes: list[dict], data: dict | None = None, said: str = DEFAULT_SAID) -> str:
    """The default mode against its targets, each met or missed, from the benchmark's medians; what kernel
    records cost without launch records (CUPTI alone, Score-P without `driver`); Score-P's 8 kB chunk."""
    data = data or {}
    by = {(m.get("mode"), m.get("config")): m for m in modes}
    mine = [m for m in modes if m.get("mode") == DEFAULT_MODE]
    if not mine:
        return f"Targets of the default mode ({said}): not judged, the benchmark did not run it."
    out = []
    for config, bound in SCOREP_RATIO_TARGETS:
        launch, torch = by.get((DEFAULT_MODE, config)), by.get(("torch", config))
        if not launch:
            continue
        r = launch.get("ratio_median", float("nan"))
        verdict, interval = judge(data, by, config, bound, DEFAULT_MODE)
        around = _against_bound(launch, bound, data)
        out.append(f"{config}: {r:.2f}x against <= {bound:.2f}x ({verdict}: {interval}{around})")
        mine_t, t, n = _paired_medians(by, config, DEFAULT_MODE, "torch")
        if torch and n:  # on the rounds both ran: at most torch.profiler's cost where the paired differences say so
            verdict, interval = judge(data, by, config, 0.0, DEFAULT_MODE, minus="torch")
            cheaper = rounds_cheaper(by, config)
            out.append(
                f"{config}: {mine_t:.2f}x against torch.profiler's {t:.2f}x, medians of the {n} rounds both ran "
                f"({verdict}{cheaper}; Score-P's ratio minus torch.profiler's, per round: {interval})"
            )
    size = mine[0].get("trace_bytes_per_step")
    if isinstance(size, (int, float)):
        out.append(f"trace {size / 1e3:,.0f} kB per step against <= 100 kB ({'met' if size <= 100e3 else 'missed'})")
    what, verdict = _kernels_found(mine[0])
    per_run = "" if what == "not counted" else _kernels_per_run(data, DEFAULT_MODE)
    twin = [m for m in modes if m.get("mode") == "scorep-launch"]
    if verdict == "met" and twin and (twin[0].get("kernels_found_share") or 1) < 1:  # the same records, in 8 kB buffers
        twin_what, _ = _kernels_found(twin[0])
        per_run += f"; but in 8 kB buffers, which record the same, {twin_what}: a loss this rare may not show in fewer"
    out.append(f"kernels found: {what} ({verdict}{per_run})")
    text = f"Targets of the default mode ({said}): " + "; ".join(out) + "."
    text += _kernel_records_alone(by, data)
    text += _eight_kb_chunk(by, modes, data)
    if any(m.get("trace_bytes_per_step") is not None for m in modes):
        text += (
            " Trace per step and kernels found are figures of whole processes (all configurations)" + _counted_rounds(data) + "."
        )
    return text


def _kernel_records_alone(by: dict, data: dict | None = None) -> str:
    """What recording kernels costs without any launch record: CUPTI alone (what any tracer that takes
    kernels from CUPTI's activity API pays) and Score-P without `driver`, each over its own rounds, then
    the two in 4 MB buffers on the rounds both ran; and where a ratio target lies against CUPTI alone,
    with each run's median."""
    data = data or {}
    parts = []
    for mode in ("cupti-kernels", "scorep-nodriver-chunk4m", "scorep-nodriver"):
        figures = [f"{by[(mode, c)]['ratio_median']:.2f}x at {c}" for c, _ in SCOREP_RATIO_TARGETS if (mode, c) in by]
        if figures:
            rounds = max(by[(mode, c)].get("rounds") or 0 for c, _ in SCOREP_RATIO_TARGETS if (mode, c) in by)
            parts.append(f"{NAMES[mode]} {', '.join(figures)} ({rounds} rounds)")
    if not parts:
        return ""
    text = " Kernel records without launch records cost, each over its own rounds: " + "; ".join(parts) + "."
    paired = [f for c, _ in SCOREP_RATIO_TARGETS if (f := paired_phrase(by, c, "cupti-kernels", "scorep-nodriver-chunk4m"))]
    if paired:
        text += f" On the rounds both ran, CUPTI alone against Score-P without `driver` (4 MB): {'; '.join(paired)}."
    for config, bound in SCOREP_RATIO_TARGETS:
        alone = by.get(("cupti-kernels", config))
        if not alone:
            continue
        r = alone.get("ratio_median", float("nan"))
        verdict, interval = judge(data, by, config, bound, "cupti-kernels")
        if verdict == "missed":  # CUPTI alone, no tracer's own records, already costs more than the bound
            reading = (
                "below what CUPTI alone costs over these rounds: a tracer that takes its kernels from CUPTI's activity "
                "records cannot be expected to meet it on this GPU"
            )
        elif verdict == "not established" and r > bound - 0.02:
            reading = "at what CUPTI alone costs: a tracer built on CUPTI has next to nothing left for its own records"
        else:
            continue
        around = _against_bound(alone, bound, data).lstrip("; ")
        text += (
            f" At {config} CUPTI alone costs {_near(r, bound)}x ({interval}; {around}): the bound of {bound:.2f}x lies {reading}."
        )
    return text


def _eight_kb_chunk(by: dict, modes: list[dict], data: dict) -> str:
    """Launch-only Score-P in Score-P's own 8 kB chunks (the artifact's default before the 4 MB chunk)
    against the default, on the rounds both ran, and its own kernels found."""
    pairs = [
        f"{b:.2f}x against the default's {a:.2f}x at {c} (medians of the {n} rounds that ran both)"
        f"{rounds_cheaper(by, c, DEFAULT_MODE, 'scorep-launch').replace('the cheaper', 'the default the cheaper')}"
        for c, _ in SCOREP_RATIO_TARGETS
        for a, b, n in [_paired_medians(by, c, DEFAULT_MODE, "scorep-launch")]
        if n
    ]
    if not pairs:
        return ""
    text = (
        f" With Score-P's released 8 kB chunk (which the artifact used until it set 4 MB {CHUNK_CHANGED}) launch-only costs "
        + "; ".join(pairs)
    )
    eight = [m for m in modes if m.get("mode") == "scorep-launch"]
    what, _ = _kernels_found(eight[0])
    if what != "not counted":
        text += f"; its kernels found: {what}{_kernels_per_run(data, 'scorep-launch')}"
    return text + "."


def _untraced_per_run(data: dict, config: str) -> str:
    """For a merge of runs (machines of different speed): the range of the runs' median untraced step."""
    per_run: dict = {}
    for r in data.get("rounds") or []:
        steps = ((r.get("steps_ms") or {}).get(config) or {}).get("untraced") if isinstance(r, dict) else None
        if r.get("source") and isinstance(steps, list) and steps:
            per_run.setdefault(r["source"], []).append(statistics.median(steps))
    if len(per_run) < 2:
        return ""
    medians = [statistics.median(v) for v in per_run.values()]
    return f" (the runs' medians {min(medians):.1f}-{max(medians):.1f} ms)"


def paired_phrase(by: dict, config: str, mode: str, other: str) -> str | None:
    """``mode`` against ``other`` at ``config`` on the rounds both ran, with the rounds ``mode`` was the
    cheaper in; None where no round ran both."""
    a, b, n = _paired_medians(by, config, mode, other)
    return f"{a:.2f}x against {b:.2f}x at {config}{rounds_cheaper(by, config, mode, other)}" if n else None


def _paired_differences(by: dict, config: str, mode: str, other: str) -> dict:
    """``{round: mode's round ratio minus other's}`` over the rounds both ran (below 0: ``mode`` the cheaper)."""
    a, b = round_ratios(by, mode, config), round_ratios(by, other, config)
    return {k: a[k] - b[k] for k in a if k in b}


def judge(data: dict, by: dict, config: str, bound: float, mode: str, minus: str | None = None) -> tuple[str, str]:
    """:func:`bound_verdict` of ``mode``'s round ratios at ``config`` (or of their paired differences from
    ``minus``'s), with each run's rounds where ``data`` is a merge of runs."""
    values = _paired_differences(by, config, mode, minus) if minus else round_ratios(by, mode, config)
    verdict, said = bound_verdict(list(values.values()), bound, _runs_of(data, values))
    short = _cut_short(data, values, (mode, minus) if minus else (mode,))
    return verdict, said + (f"; {short} round{'s' if short > 1 else ''} cut short, not counted" if short else "")


def _cut_short(data: dict, counted: dict, modes: tuple) -> int:
    """How many rounds started a process of each of ``modes`` yet gave no value (a process that failed, a round
    cut short: ``bench_trace.paired_ratios`` pairs no turn of it): said, since a round left out silently
    could be the one that would have decided against a verdict."""
    return sum(
        1
        for r in data.get("rounds") or []
        if isinstance(r, dict) and all(m in (r.get("processes") or {}) for m in modes) and r.get("round") not in counted
    )


def _paired_medians(by: dict, config: str, mode: str, other: str) -> tuple[float, float, int]:
    """The medians of two modes' round ratios over the rounds both ran, and how many those are (0: none):
    modes run in different sets of rounds are compared on their common rounds only."""
    a, b = round_ratios(by, mode, config), round_ratios(by, other, config)
    common = [k for k in a if k in b]
    if not common:
        return float("nan"), float("nan"), 0
    return statistics.median(a[k] for k in common), statistics.median(b[k] for k in common), len(common)


def _counted_rounds(data: dict, mode: str = DEFAULT_MODE) -> str:
    """Which processes a launch-only mode's kernel count covers, run by run: counted experiments of rounds."""
    experiments = _launch_experiments(data, mode)
    if not experiments:
        return ""
    rounds = Counter(r.get("source") for r in data.get("rounds") or [] if isinstance(r, dict))
    counted = Counter(e.get("source") for e in experiments)
    parts = [f"{n} of {rounds.get(src, '?')} rounds" + (f" ({src})" if src else "") for src, n in counted.items()]
    return f"; the processes of {NAMES.get(mode, mode)} counted: " + ", ".join(parts)
