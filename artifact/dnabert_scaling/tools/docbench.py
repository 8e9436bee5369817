"""The generated parts of the documents that quote the Score-P tracing-cost benchmark
(``expected/reference/h200-bench/bench-trace-scorep.json``): the table per mode and configuration,
and the launch-only mode against its targets (issue 24), each met, missed or not established by the
rule of :mod:`cost_verdicts`."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import cost_verdicts as cv
from dnabert_scaling.tools.docfacts import Facts
from dnabert_scaling.tools.docfacts import percent as _pct


# The artifact's default Score-P mode, as the benchmark names it, depends on the build (run/tracing/scorep.py:
# driver_callbacks_for): launch-only driver callbacks where Score-P carries the launch-callbacks patch alone
# (every build before 2026-12-06), launches from CUPTI's activity records where it also carries the records
# patch; CUPTI's buffers in 4 MB chunks either way (DEFAULT_CUDA_BUFFER_CHUNK). The targets are the default's.
LAUNCH_MODE = "scorep-launch-chunk4m"
LAUNCH_SAID = "launch-only Score-P in 4 MB buffers"
RECORDS_MODE = "scorep-records-chunk4m"
CHUNK_CHANGED = "after call M (2026-12-04)"  # when the artifact set 4 MB chunks (Score-P's released chunk is 8 kB)
NAMES = {
    "torch": "torch.profiler (CUDA)",
    "scorep-all": "Score-P, every driver call, 8 kB buffers",
    "scorep-launch": "Score-P, launch-only, 8 kB buffers",
    "scorep-nodriver": "Score-P without `driver`, 8 kB buffers",
    "scorep-launch-chunk4m": "Score-P, launch-only, 4 MB buffers (default without the records patch)",
    "scorep-nodriver-chunk4m": "Score-P without `driver`, 4 MB buffers",
    "scorep-nocuda": "Score-P loaded, no CUDA recording",
    "cupti-kernels": "CUPTI alone (bare client), 4 MB buffers",
    "cupti-kernels-8k": "CUPTI alone (bare client), 8 kB buffers",
    "cupti-kernels-pinned": "CUPTI alone (bare client), 4 MB buffers, profiling data in pinned host memory",
    "cupti-kernels-shared": "CUPTI alone (bare client), 4 MB buffers, one buffer stream for all threads",
    "cupti-launch": "CUPTI alone with launch callbacks (bare client), 4 MB buffers",
    "scorep-launch-nocache-chunk4m": "Score-P, launch-only, 4 MB buffers, stream reference cache off",
    "scorep-launch-chunk4m-tsc": "Score-P, launch-only, 4 MB buffers, TSC timer",
    "scorep-launch-norefs-chunk4m": "Score-P, launch-only, 4 MB buffers, no stream references",
    "scorep-launch-notrace-chunk4m": "Score-P, launch-only, 4 MB buffers, tracing off (nothing written)",
    "cupti-launch-domains": "CUPTI alone with launch callbacks and the resource and synchronisation domains (bare client), 4 MB buffers",
    "scorep-launch-nosync-chunk4m": "Score-P, launch-only, 4 MB buffers, synchronisation domain held back",
    "cupti-launch-records": "CUPTI alone with launch activity records instead of callbacks (bare client), 4 MB buffers",
    "scorep-records-chunk4m": "Score-P, launch activity records instead of callbacks, 4 MB buffers (default with the records patch)",
}
TABLE_HEAD = (
    "| mode | config | ratio: median of rounds (range) | step pairs: median (quartiles) | rounds / pairs | trace per step | kernels found |",
    "|---|---|---|---|---|---|---|",
)
# the runs that measured the stream reference cache (calls N, O, P, merged), on a build that carries it
CACHE_BENCH = "h200-bench/gpu-call-2026-12-04-cache/bench-nop.json"
CACHE_PATCH = "8.4-cupti-stream-ref-cache.patch"
CACHE_OFF = "scorep-launch-nocache-chunk4m"  # the default mode with the cache turned off


def bench_file(facts: Facts, relative: str) -> dict:
    """A shipped output or merge of ``scripts/bench_trace.py`` (under ``expected/reference/``), its
    top-level shape checked once here so that the blocks can read it: {} where it is not shipped, an
    ArtifactError naming the file where it is not such an output."""
    data = facts.bench(relative)
    if data is None:
        return {}
    path = facts.root / "expected" / "reference" / relative
    if not isinstance(data, dict):
        raise ArtifactError("not a bench-trace output (not a JSON object)", path)
    for key in ("modes", "rounds", "merged_from", "per_call"):
        value = data.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(x, dict) for x in value)):
            raise ArtifactError(f"not a bench-trace output: '{key}' is not a list of objects", path)
    return data


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


def run_patches(data: dict) -> list[list | None]:
    """Per run of a benchmark file (a merge's runs; a single run: itself) the Score-P patches its build
    lists, or None where it lists none."""
    runs = data.get("merged_from") or [{"machine": data.get("machine")}]
    out = []
    for r in runs:
        machine = r.get("machine") if isinstance(r, dict) else None
        patches = machine.get("scorep_patches") if isinstance(machine, dict) else None
        out.append(patches if isinstance(patches, list) else None)
    return out


def default_mode_of(patches) -> str:
    """The benchmark's name for the mode the artifact takes by default with a Score-P built with ``patches`` (its
    patch file names), by the artifact's own rule (``run.tracing.scorep.driver_callbacks_for``): :data:`RECORDS_MODE`
    where that rule picks records, else :data:`LAUNCH_MODE`."""
    from dnabert_scaling.run.tracing.scorep import driver_callbacks_for

    return RECORDS_MODE if driver_callbacks_for(list(patches or ()))[0] == "records" else LAUNCH_MODE


def build_counts(data: dict) -> tuple[int, int, int]:
    """Of a merge's runs (a single run: itself): how many, how many list their Score-P build's patches,
    and how many of those list the stream reference cache patch."""
    patches = run_patches(data)
    listed = [p for p in patches if p is not None]
    return len(patches), len(listed), sum(CACHE_PATCH in p for p in listed)


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


def _size(size: Any) -> str:
    if not isinstance(size, (int, float)):
        return "-"
    return f"{size / 1e3:,.0f} kB" if size >= 1e3 else f"{size:,.0f} B"


def bench_trace_scorep(facts: Facts, _: str | None) -> str:
    """``bench-trace-scorep.json``: per mode and configuration, the step time over the untraced
    step of the same turn (median and range of the per-round medians, and the median and quartiles
    of all step pairs), trace bytes per step, kernels found; the per-call figures; the targets."""
    data = bench_file(facts, "h200-bench/bench-trace-scorep.json")
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


def round_ratios(by: dict, mode: str, config: str) -> dict:
    """``{round: its median ratio}`` of ``mode`` at ``config`` (``round_ratios``, as
    ``scripts/bench_trace.py`` summarises them)."""
    rows = (by.get((mode, config)) or {}).get("round_ratios") or []
    return {r[0]: r[1] for r in rows if isinstance(r, list) and len(r) == 2}


def rounds_cheaper(by: dict, config: str, mode: str = LAUNCH_MODE, other: str = "torch") -> str:
    """In how many rounds ``mode`` cost less than ``other`` at ``config`` (the rounds both have a ratio in),
    with the two-sided sign test's p: how often a count this far from even comes from no difference."""
    split = sign_split(by, config, mode, other)
    if split is None:
        return ""
    cheaper, rounds, p = split
    return f", the cheaper in {cheaper} of {rounds} rounds, sign test p {'< 0.001' if p < 0.001 else f'= {p:.2g}'}"


def sign_split(by: dict, config: str, mode: str, other: str) -> tuple[int, int, float] | None:
    """Over the rounds both ran at ``config``: in how many ``mode`` cost less than ``other``, how many rounds
    those are, and the two-sided sign test's p (ties left out); None where no round ran both."""
    differences = paired_differences(by, config, mode, other)
    if not differences:
        return None
    cheaper, dearer = sum(d < 0 for d in differences.values()), sum(d > 0 for d in differences.values())
    return cheaper, len(differences), sign_test_p(cheaper, dearer)


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
    if not numbered or not all(cv.is_number(x) for _, x in numbered):
        return ""
    text = f"; {sum(x <= bound for _, x in numbered)} of {len(numbered)} rounds at or below it"
    source = {r.get("round"): r.get("source") for r in data.get("rounds") or [] if isinstance(r, dict)}
    runs: dict = {}
    for k, x in numbered:
        runs.setdefault(source.get(k), []).append(x)
    if len(runs) > 1 and None not in runs:
        text += "; per run " + ", ".join(
            f"{cv.near(statistics.median(xs), bound)}x ({name})" if all(cv.is_number(x) for x in xs) else f"- ({name})"
            for name, xs in runs.items()
        )
    return text


def _launch_experiments(data: dict, mode: str = LAUNCH_MODE) -> list[dict]:
    """The counted experiments of a launch-only mode that hold whole numbers of kernels and launches (a
    merge keeps every run's, each naming its ``source``; a run counts one experiment or one per round)."""
    experiments = ((data.get("counts") or {}).get(mode) or {}).get("experiments") or []
    return [e for e in experiments if isinstance(e.get("kernels"), int) and isinstance(e.get("launches"), int)]


def _kernels_per_run(data: dict, mode: str = LAUNCH_MODE) -> str:
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


def scorep_targets(modes: list[dict], data: dict | None = None, said: str = LAUNCH_SAID) -> str:
    """The default mode against its targets, each met, missed or not established (:mod:`cost_verdicts`); what kernel
    records cost without launch records (CUPTI alone, Score-P without `driver`); Score-P's 8 kB chunk."""
    data = data or {}
    by = {(m.get("mode"), m.get("config")): m for m in modes}
    mine = [m for m in modes if m.get("mode") == LAUNCH_MODE]
    if not mine:
        return f"Targets of the default mode without the records patch ({said}): not judged, the benchmark did not run it."
    out = []
    for config, bound in SCOREP_RATIO_TARGETS:
        launch, torch = by.get((LAUNCH_MODE, config)), by.get(("torch", config))
        if not launch:
            continue
        r = launch.get("ratio_median")
        verdict, interval = cv.judge([cv.rounds_of(data, config, LAUNCH_MODE)], bound)
        around = _against_bound(launch, bound, data)
        shown = f"{r:.2f}x" if cv.is_number(r) else "-"
        out.append(f"{config}: {shown} against <= {bound:.2f}x ({verdict}: {interval}{around})")
        if torch:
            out.extend(against_torch(by, data, config, LAUNCH_MODE))
    size = mine[0].get("trace_bytes_per_step")
    if isinstance(size, (int, float)):
        out.append(f"trace {size / 1e3:,.0f} kB per step against <= 100 kB ({'met' if size <= 100e3 else 'missed'})")
    what, verdict = _kernels_found(mine[0])
    per_run = "" if what == "not counted" else _kernels_per_run(data, LAUNCH_MODE)
    twin = [m for m in modes if m.get("mode") == "scorep-launch"]
    if verdict == "met" and twin and (twin[0].get("kernels_found_share") or 1) < 1:  # the same records, in 8 kB buffers
        twin_what, _ = _kernels_found(twin[0])
        per_run += f"; but in 8 kB buffers, which record the same, {twin_what}: a loss this rare may not show in fewer"
    out.append(f"kernels found: {what} ({verdict}{per_run})")
    text = f"Targets of the default mode without the records patch ({said}): " + "; ".join(out) + "."
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
        r = alone.get("ratio_median")
        if not cv.is_number(r):
            continue
        rounds = cv.rounds_of(data, config, "cupti-kernels")
        verdict, interval = cv.judge([rounds], bound)
        if verdict == "missed":  # CUPTI alone, no tracer's own records, already costs more than the bound
            reading = (
                "below what CUPTI alone costs over these rounds: a tracer that takes its kernels from CUPTI's activity "
                "records cannot be expected to meet it on this GPU"
            )
        elif cv.rounds_side([rounds], bound) == "not established":  # the rounds' interval holds the bound
            reading = "at what CUPTI alone costs: a tracer built on CUPTI has next to nothing left for its own records"
        else:
            continue
        around = _against_bound(alone, bound, data).lstrip("; ")
        text += f" At {config} CUPTI alone costs {cv.near(r, bound)}x ({interval}; {around}): the bound of {bound:.2f}x lies {reading}."
    return text


def _eight_kb_chunk(by: dict, modes: list[dict], data: dict) -> str:
    """Launch-only Score-P in Score-P's own 8 kB chunks (the artifact's default before the 4 MB chunk)
    against the default, on the rounds both ran, and its own kernels found."""
    pairs = [
        f"{b:.2f}x against the default's {a:.2f}x at {c} (medians of the {n} rounds that ran both)"
        f"{rounds_cheaper(by, c, LAUNCH_MODE, 'scorep-launch').replace('the cheaper', 'the default the cheaper')}"
        for c, _ in SCOREP_RATIO_TARGETS
        for a, b, n in [_paired_medians(by, c, LAUNCH_MODE, "scorep-launch")]
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


def paired_differences(by: dict, config: str, mode: str, other: str) -> dict:
    """``{round: mode's round ratio minus other's}`` over the rounds both ran (below 0: ``mode`` the cheaper)."""
    a, b = round_ratios(by, mode, config), round_ratios(by, other, config)
    return {k: a[k] - b[k] for k in a if k in b}


def against_torch(by: dict, data: dict, config: str, mode: str) -> list[str]:
    """``mode`` against torch.profiler at ``config`` on the rounds both ran: at most torch.profiler's cost where
    the paired per-round differences say so (:mod:`cost_verdicts`, a bound of 0); [] where no round ran both."""
    mine, theirs, n = _paired_medians(by, config, mode, "torch")
    if not n:
        return []
    verdict, interval = cv.judge([cv.rounds_of(data, config, mode, minus="torch")], 0.0)
    return [
        f"{config}: {mine:.2f}x against torch.profiler's {theirs:.2f}x, medians of the {n} rounds both ran "
        f"({verdict}{rounds_cheaper(by, config, mode)}; Score-P's ratio minus torch.profiler's, per round: {interval})"
    ]


def _paired_medians(by: dict, config: str, mode: str, other: str) -> tuple[float, float, int]:
    """The medians of two modes' round ratios over the rounds both ran, and how many those are (0: none):
    modes run in different sets of rounds are compared on their common rounds only."""
    a, b = round_ratios(by, mode, config), round_ratios(by, other, config)
    common = [k for k in a if k in b]
    if not common:
        return float("nan"), float("nan"), 0
    return statistics.median(a[k] for k in common), statistics.median(b[k] for k in common), len(common)


def _counted_rounds(data: dict, mode: str = LAUNCH_MODE) -> str:
    """Which processes a launch-only mode's kernel count covers, run by run: counted experiments of rounds."""
    experiments = _launch_experiments(data, mode)
    if not experiments:
        return ""
    rounds = Counter(r.get("source") for r in data.get("rounds") or [] if isinstance(r, dict))
    counted = Counter(e.get("source") for e in experiments)
    parts = [f"{n} of {rounds.get(src, '?')} rounds" + (f" ({src})" if src else "") for src, n in counted.items()]
    return f"; the processes of {NAMES.get(mode, mode)} counted: " + ", ".join(parts)
