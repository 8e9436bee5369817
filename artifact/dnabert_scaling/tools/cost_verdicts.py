"""The rule by which the documents (``tools/docbench.py``) and ``scripts/bench_trace.py``'s printout
judge a measured cost against a bound, and the reading of the per-round values it judges.

A figure is a mode's ratio per round (its step time over the untraced step of the same turn, the
median over a round's steps), or the paired per-round difference of two modes. Against an upper
bound it is "met" where the 95% interval of the median of its rounds lies at or below the bound,
"missed" where it lies wholly above, and else "not established" (against a lower bound, such as a
speed-up to reach, the same mirrored). The interval
(:func:`analysis.stats.median_interval`) treats rounds as independent draws; rounds of one run of the
benchmark (one process set, often one machine) can resemble each other more, so where the rounds come
from several runs the runs are held against the verdict too: from six runs on, the interval of the
runs' medians must lie on the same side; with two to five runs (too few for that interval), a run
whose own rounds' interval lies wholly on the other side makes the figure not established (where the
rounds alone leave it not established, the runs' interval is still said, from six runs on). Two
edges follow, and are meant: from nine runs on, one run's disagreement can be outweighed by the
others (the runs' interval then leaves out the extreme ones), and a run of fewer than six rounds
never overrules on its own (its rounds are too few for an interval). A figure
whose rounds cannot be read as whole (a value that is not a finite number, a malformed or repeated
round, rounds of a merge not attributed to runs, the same run pooled twice) is not established, and
says why; rounds that started the mode yet gave no value are said beside the verdict.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass

from dnabert_scaling.analysis.stats import is_finite_number as is_number
from dnabert_scaling.analysis.stats import median_interval

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Rounds:
    """One figure's rounds in one benchmark file: ``(run identity, run name, value)`` per counted round,
    the reasons the file's rounds cannot be judged, and how many rounds started the mode(s) yet gave no
    value."""

    values: tuple[tuple[tuple, str, float], ...]
    problems: tuple[str, ...] = ()
    short: int = 0

    @property
    def numbers(self) -> list[float]:
        return [x for _, _, x in self.values]

    @property
    def ran(self) -> bool:
        """Whether the file ran the figure at all: it has rounds, a reason they cannot be judged, or rounds
        that started the mode(s) yet gave no value (a file whose every round was cut short is said, not
        passed over)."""
        return bool(self.values or self.problems or self.short)


def median_of(sets: list[Rounds]) -> float | None:
    """The median of the rounds of ``sets`` pooled, for display; None where there are none or one is not a
    finite number (the verdict says why)."""
    xs = [x for s in sets for x in s.numbers]
    return statistics.median(xs) if xs and all(is_number(x) for x in xs) else None


def _row(data: dict, mode: str, config: str) -> dict | None:
    for m in data.get("modes") or []:
        if isinstance(m, dict) and m.get("mode") == mode and m.get("config") == config:
            return m
    return None


def _per_round(row: dict, problems: list[str], what: str) -> dict | None:
    """``{round: value}`` of a row's ``round_ratios`` (a value that is not a finite number kept as NaN, so
    that the verdict says so); None, with the problem said, where the list is missing or malformed."""
    pairs = row.get("round_ratios")
    if not isinstance(pairs, list):
        problems.append(f"{what} keeps no per-round ratios")
        return None
    out: dict = {}
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int) and not isinstance(pair[0], bool)):
            problems.append(f"{what} has a malformed round entry ({pair!r:.40})")
            return None
        if pair[0] in out:
            problems.append(f"{what} lists round {pair[0]} twice")
            return None
        if is_number(pair[1]) and pair[1] <= 0:  # a step-time ratio is above 0: this one is not a measurement
            problems.append(f"{what} has a ratio of {pair[1]!r:.20} in round {pair[0]}, not above 0")
            return None
        out[pair[0]] = float(pair[1]) if is_number(pair[1]) else math.nan
    return out


def _run_identity(entry: dict) -> tuple:
    """What tells one run of the benchmark from another, the same whether the run is a file of its own or
    an entry of a merge's ``merged_from``: its file name does not (two calls' folders hold a
    ``bench-a.json`` each), its date, code revision, wall time and number of rounds do."""
    return tuple(str(entry.get(k)) for k in ("date", "revision", "wall_s", "rounds"))


def rounds_of(data: dict, config: str, mode: str, minus: str | None = None, label: str = "the run") -> Rounds:
    """``mode``'s per-round ratios at ``config`` in one benchmark output or merge (or their paired
    differences from ``minus``'s), each attributed to its run: a merge's rounds name their run
    (``rounds[i]["source"]``, one of ``merged_from``); a single run is ``label``."""
    problems: list[str] = []
    rows = [(m, _row(data, m, config)) for m in ((mode, minus) if minus else (mode,))]
    rounds = [r for r in data.get("rounds") or [] if isinstance(r, dict)]
    ran = [r for r in rounds if all(m in (r.get("processes") or {}) for m, _ in rows)]
    for m, row in rows:
        if row is None:
            if ran and config in (data.get("configs") or [config]):  # started at this size, yet no ratio of it
                problems.append(f"{label} ran {m} but keeps no ratios of it at {config}")
            return Rounds((), tuple(problems))
    per_mode = [_per_round(row, problems, f"{label}'s {m} at {config}") for m, row in rows]
    if problems:
        return Rounds((), tuple(problems))
    values = per_mode[0] if not minus else {k: x - per_mode[1][k] for k, x in per_mode[0].items() if k in per_mode[1]}
    merged = [e for e in data.get("merged_from") or [] if isinstance(e, dict)]
    if len(data.get("merged_from") or []) != len(merged):
        problems.append(f"{label}'s list of merged runs is malformed")
    by_file = {str(e.get("file")): e for e in merged}
    if len(by_file) != len(merged):  # rounds name their run by file name: two of one name cannot be told apart
        problems.append(f"{label} merges two runs of one file name")
    source = {r.get("round"): r.get("source") for r in rounds}
    out = []
    for k, x in sorted(values.items()):
        if len(merged) > 1:
            entry = by_file.get(str(source.get(k)))
            if entry is not None and not any(entry.get(f) is not None for f in ("date", "revision", "wall_s")):
                problems.append(f"the run {entry.get('file')} of {label} keeps no date, revision or wall time to tell it by")
                break
            if entry is None:
                problems.append(f"round {k} of {label} is not attributed to one of its runs")
                break
            out.append((_run_identity(entry), str(entry.get("file")), x))
        else:
            whole = (
                merged[0] if merged else {**{k2: data.get(k2) for k2 in ("date", "revision", "wall_s")}, "rounds": len(rounds)}
            )
            out.append((_run_identity(whole), str(merged[0].get("file")) if merged else label, x))
    short = sum(1 for r in ran if r.get("round") not in values)
    return Rounds(tuple(out), tuple(problems), short)


def judge(sets: list[Rounds], bound: float) -> tuple[str, str]:
    """The verdict on the rounds of one or more files pooled, and what it rests on, said (see the module)."""
    problems = [p for s in sets for p in s.problems]
    if problems:
        return "not established", "; ".join(dict.fromkeys(problems))
    seen: dict[tuple, tuple[int, str]] = {}
    for i, s in enumerate(sets):
        for ident, name in {(ident, name) for ident, name, _ in s.values}:
            first = seen.setdefault(ident, (i, name))
            if first[0] != i:
                return "not established", f"one run is in two of the pooled files ({first[1]} and {name})"
    runs: dict[tuple, tuple[str, int, list[float]]] = {}  # identity -> (name, pooled file, values)
    for i, s in enumerate(sets):
        for ident, name, x in s.values:
            runs.setdefault(ident, (name, i, []))[2].append(x)
    names = Counter(name for name, _, _ in runs.values())  # a name two runs share is shown with its file's number
    shown = {(name if names[name] == 1 else f"{name} (pooled file {i})"): xs for name, i, xs in runs.values()}
    verdict, said = bound_verdict([x for s in sets for x in s.numbers], bound, shown)
    short = sum(s.short for s in sets)
    return verdict, said + (
        f"; {short} round{'s' if short > 1 else ''} cut short or with a failed process, not counted" if short else ""
    )


def bound_verdict(
    values: list, bound: float, runs: dict[str, list] | None = None, at_least: bool = False, unit: str = "round"
) -> tuple[str, str]:
    """``values`` (one per round, or per ``unit``) against an upper bound (a lower one with ``at_least``):
    met, missed or not established, and the interval said; ``runs``: each run's values, held against the
    verdict as the module says."""
    bad = [v for v in values if not is_number(v)]
    if bad:
        return "not established", f"{len(bad)} of {len(values)} {unit} values not finite numbers"
    iv = median_interval(values, CONFIDENCE)
    if iv is None:
        return (
            "not established",
            f"{len(values)} {unit}{'s' if len(values) != 1 else ''}, too few for a 95% interval of the median",
        )
    said = f"95% interval of the median {ends(iv.lo, iv.hi, bound)}"
    verdict = side(iv.lo, iv.hi, bound, at_least)
    if not runs or len(runs) < 2:
        return verdict, said
    medians = {name: statistics.median(xs) for name, xs in runs.items() if xs}
    across = median_interval(list(medians.values()), CONFIDENCE)
    if verdict == "not established":  # the runs cannot make it more; their interval said where there is one
        return verdict, said + (f"; over the {len(medians)} runs' medians {ends(across.lo, across.hi, bound)}" if across else "")
    if across is not None:  # six runs or more: the runs' medians must say the same
        if side(across.lo, across.hi, bound, at_least) != verdict:
            said += f", but over the {len(medians)} runs' medians the interval is {ends(across.lo, across.hi, bound)}"
            return "not established", said
        return verdict, said + f"; over the {len(medians)} runs' medians {ends(across.lo, across.hi, bound)}"
    against = []
    for name, xs in runs.items():
        own = median_interval(xs, CONFIDENCE)
        if own is not None and side(own.lo, own.hi, bound, at_least) not in (verdict, "not established"):
            against.append(f"{name} {ends(own.lo, own.hi, bound)}")
    if against:
        return "not established", said + f", but the interval of a run's own rounds lies on the other side ({'; '.join(against)})"
    return verdict, said


def rounds_side(sets: list[Rounds], bound: float) -> str | None:
    """Where the interval of the pooled rounds alone lies against ``bound`` (met, missed, not established),
    the runs not held against it; None where the rounds cannot be read whole or are too few for one."""
    xs = [x for s in sets for x in s.numbers]
    if any(s.problems for s in sets) or not all(is_number(x) for x in xs):
        return None
    iv = median_interval(xs, CONFIDENCE)
    return None if iv is None else side(iv.lo, iv.hi, bound)


def side(lo: float, hi: float, bound: float, at_least: bool = False) -> str:
    """Where an interval lies against an upper bound, or against a lower one (``at_least``)."""
    if at_least:
        return "met" if lo >= bound else "missed" if hi < bound else "not established"
    return "met" if hi <= bound else "missed" if lo > bound else "not established"


def ends(lo: float, hi: float, bound: float) -> str:
    """An interval's ends, each to as many digits (two to four) as it takes not to read as the bound, both
    alike; "a to b" where an end is negative, else "a-b"."""
    digits = max(len(near(x, bound).split(".")[1]) for x in (lo, hi))
    return f"{lo:.{digits}f} to {hi:.{digits}f}" if lo < 0 else f"{lo:.{digits}f}-{hi:.{digits}f}"


def near(x: float, bound: float) -> str:
    """``x`` to two decimals, or to as many more (up to four) as it takes not to read as the bound."""
    for digits in (2, 3, 4):
        if x == bound or float(f"{x:.{digits}f}") != float(f"{bound:.{digits}f}"):  # -0.00 reads as 0.00
            return f"{x:.{digits}f}"
    return f"{x:.4f}"
