"""The reading of the default Score-P mode's targets in ARTIFACT.md G (each file's build's default,
:func:`docbench_targets.mode_of_file`) (the generated parts
``scorep-target-reading:<part>``): the figures the prose around the targets summary rests on, from the
same files and by the same rule (:mod:`cost_verdicts`), so that the prose cannot fall behind the
summary when a benchmark file is added. Parts: ``8x70`` and ``32x70`` (the shipped build's pooled
rounds and runs against the bound, and each file's own verdict), ``cupti`` (CUPTI alone against the
32 x 70 bound), ``relative`` (what the default mode adds to the bare client with the same launch
callbacks, against a bound of 0.05 of an untraced step), ``floor`` (the shipped build's default beside CUPTI alone and
the bare client with the same records at 32 x 70, on the lent H100s of call ZF, never pooled with the H200's rounds)
and ``kernels`` (every kernel found)."""

from __future__ import annotations

import statistics

from dnabert_scaling.analysis.stats import median_interval
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import cost_verdicts as cv
from dnabert_scaling.tools.docbench import CACHE_BENCH, CACHE_OFF, SCOREP_RATIO_TARGETS, _kernels_found, bench_file
from dnabert_scaling.tools.docbench_parts import CUPTI_FLOOR_BENCH
from dnabert_scaling.tools.docbench_targets import (
    beyond_client,
    beyond_client_said,
    cupti_alone,
    mode_of_file,
    ran_build,
    run_devices,
    shipped_build,
    target_files,
)
from dnabert_scaling.tools.docfacts import Facts

RELATIVE_BOUND = 0.05  # a bound on what Score-P adds to the bare client, in untraced steps (the prose's example)


def _files(facts: Facts) -> tuple[list[tuple[str, dict]], list[tuple[str, dict]]]:
    """(every target file that ran the default mode, those of them whose runs all ran the shipped build)."""
    found = target_files(facts)
    return [(said, data) for said, data, _ in found], [(said, data) for said, data, mine in found if mine]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _runs(sets: list[cv.Rounds]) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {}
    for s in sets:
        for _, name, x in s.values:
            runs.setdefault(name, []).append(x)
    return runs


def _config_reading(every: list, ours: list, config: str, bound: float) -> str:
    sets = [cv.rounds_of(data, config, mode_of_file(data), label=said) for said, data in ours]
    sets = [s for s in sets if s.ran]
    if not sets:
        return f"not judged for the shipped build: no file of that build ran the default mode at {config}"
    verdict, said = cv.judge(sets, bound)
    xs = [x for s in sets for x in s.numbers]
    if any(s.problems for s in sets) or not xs:
        return f"{verdict} for the shipped build ({said})"
    text = f"{verdict} for the shipped build: over its {len(xs)} rounds ({_and([n for n, _ in ours])}) the median is "
    text += f"{cv.near(statistics.median(xs), bound)}x"
    iv = median_interval(xs, cv.CONFIDENCE)
    rounds_side = cv.rounds_side(sets, bound)
    runs = {name: statistics.median(v) for name, v in _runs(sets).items()}
    below = [n for n, m in runs.items() if m <= bound]
    above = {n: m for n, m in runs.items() if m > bound}
    if iv is not None:
        text += f", its interval {cv.ends(iv.lo, iv.hi, bound)}"
    text += f"; {sum(x <= bound for x in xs)} of those {len(xs)} rounds lie at or below the bound, and {len(below)} of the {len(runs)} runs' medians"
    if above and below:  # the runs on the smaller side named
        few, where = (above, "above it") if len(above) <= len(below) else ({n: runs[n] for n in below}, "at or below it")
        text += f" ({where}: " + ", ".join(f"{n} {cv.near(m, bound)}x" for n, m in few.items()) + ")"
    if verdict == "not established" and rounds_side in ("met", "missed"):
        where = "above" if rounds_side == "missed" else "at or below"
        text += f". The rounds alone lie {where} the bound (their interval lies wholly {where} {bound:.2f}x), but the runs do not agree ({said})"
    elif verdict == "not established":
        text += ": the bound lies among the rounds and among the runs, so it would settle only with many more of both, or with a cheaper Score-P"
    own = []
    shipped = {n for n, _ in ours}
    for name, data in every:
        r = cv.rounds_of(data, config, mode_of_file(data), label=name)
        if r.ran:
            own.append(f"{name} {cv.judge([r], bound)[0]}" + ("" if name in shipped else " (another build)"))
    return text + ". Each file on its own: " + "; ".join(own)


def _cupti_reading(every: list) -> str:
    config, bound = SCOREP_RATIO_TARGETS[-1]
    alone = cupti_alone(every, config, bound)
    if alone is None:
        return f"CUPTI alone was not run at {config}"
    where, said, n, m = alone
    shown = "" if m is None else f" ({cv.near(m, bound)}x)"
    return (
        f"CUPTI alone, in 4 MB buffers with no Score-P loaded, is {where} over every file's {n} rounds at {config}{shown}: {said}"
    )


def _relative_reading(facts: Facts, ours: list) -> str:
    parts = []
    for config, _ in SCOREP_RATIO_TARGETS:
        beyond = beyond_client(ours, config, RELATIVE_BOUND)
        if beyond is None:
            continue
        verdict, said, n, m = beyond
        shown = "" if m is None else f"{m:+.3f} of an untraced step, "
        parts.append(f"at {config} {shown}over {n} paired rounds: {verdict} ({said})")
    if not parts:
        said = "no H200 file of the shipped build ran the bare client that takes the launches as the default mode does beside it"
        return said + (" (call ZF did, on H100s: next)" if bench_file(facts, CUPTI_FLOOR_BENCH) else "")
    return f"against a bound of at most {RELATIVE_BOUND:.2f} of an untraced step above that client, " + "; ".join(parts)


def _floor_reading(facts: Facts) -> str:
    """Call ZF: at 32 x 70 the shipped build's default against the bound, CUPTI alone against the bound, and what the
    default adds to the bare client with the same records (against 0), each by the same rule on the same rounds."""
    config, bound = SCOREP_RATIO_TARGETS[-1]
    data = bench_file(facts, CUPTI_FLOOR_BENCH)
    label = "call ZF"
    rounds = cv.rounds_of(data, config, mode_of_file(data), label=label) if data else None
    if rounds is None or not rounds.ran:
        return f"call ZF's rounds of the default mode at {config} are not shipped"
    devices = sorted({str(d) for d in run_devices(data)})
    verdict, interval = cv.judge([rounds], bound)
    against = {"met": "met the bound", "missed": "missed the bound"}.get(verdict, "is not established against the bound")
    whose = "the shipped build's" if ran_build(data, shipped_build(facts)) else "another build's"
    m = cv.median_of([rounds])
    text = (
        f"on the lent cards of call ZF ({', '.join(devices)}; {len(rounds.values)} rounds in {len(_runs([rounds]))} runs at "
        f"{config}, never pooled with the H200's), {whose} default {against}"
        f" ({'' if m is None else cv.near(m, bound) + 'x, '}{interval})"
    )
    alone = cupti_alone([(label, data)], config, bound)
    if alone:
        where, said, n, am = alone
        text += f"; CUPTI alone on the same rounds is {where} ({'' if am is None else cv.near(am, bound) + 'x, '}{said})"
    beyond = beyond_client([(label, data)], config, 0.0)
    if beyond:
        text += f"; the default beyond the bare client with the same records, paired in {beyond[2]} rounds: {beyond_client_said(beyond)}"
    return text


def _first_row(data: dict, mode: str) -> dict | None:
    """A mode's first row: its kernel counts are the process's, the same in every configuration's row."""
    return next((m for m in data.get("modes") or [] if isinstance(m, dict) and m.get("mode") == mode), None)


def _kernels_reading(facts: Facts, every: list) -> str:
    """Kernels found by the default mode (each file's build's), file by file as each file's targets line reads its row
    (:func:`docbench._kernels_found`: an experiment that could not be counted keeps it from "met"),
    and over all: met only where every file's is."""
    rows = [(said, row) for said, data in every if (row := _first_row(data, mode_of_file(data)))]
    if not any(isinstance(row.get("launches_counted"), int) for _, row in rows):
        return "not judged: no counted experiment of the default mode is shipped"
    judged = [(said, *_kernels_found(row)) for said, row in rows]
    verdicts = {v for _, _, v in judged}
    verdict = "missed" if "missed" in verdicts else "met" if verdicts == {"met"} else "not met"
    found, launches, experiments = (
        sum(row.get(k) or 0 for _, row in rows) for k in ("kernels_found", "launches_counted", "experiments_counted")
    )

    def shown(said: str, what: str, v: str) -> str:
        return f"{said} {what}" + ("" if v == "met" else f": {v}")

    text = (
        f"{verdict} by the default mode: {found:,} of {launches:,} launches found in {experiments} counted experiments "
        f"over the {len(judged)} files that ran it ({'; '.join(shown(*j) for j in judged)})"
    )
    off = _first_row(bench_file(facts, CACHE_BENCH), CACHE_OFF)
    if off:
        text += ", and with the stream reference cache off " + shown("", *_kernels_found(off)).strip()
    return text


def scorep_target_reading(facts: Facts, part: str | None) -> str:
    if part == "floor":  # call ZF's own file: not one of the H200's target files
        return _floor_reading(facts)
    every, ours = _files(facts)
    if not every:
        return "not judged: no benchmark file with the default mode is shipped"
    bounds = dict(SCOREP_RATIO_TARGETS)
    if part in bounds:
        return _config_reading(every, ours, part, bounds[part])
    if part == "cupti":
        return _cupti_reading(every)
    if part == "relative":
        return _relative_reading(facts, ours)
    if part == "kernels":
        return _kernels_reading(facts, every)
    raise ArtifactError(f"scorep-target-reading: no part '{part}' (8x70, 32x70, cupti, relative, floor, kernels)")
