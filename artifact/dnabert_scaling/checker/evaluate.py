"""Evaluating claims against metrics: one Part per check and world size, combined into verdicts."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.checker.names import _fmt, _jsonable, FAIL, INVALID, NOT_RUN, PASS, PRECEDENCE, VERDICTS, VERDICTS_SCHEMA
from dnabert_scaling.checker.claims import Check, Claim, SanityBounds, _is_number
from dnabert_scaling.checker.placement import (
    OWN,
    SHARED,
    STRUCTURE,
    gpu_per_rank,
    placement_of,
    placement_unknown_reason,
    said_once,
    shared_gpu_reason,
    transport_text,
)
from dnabert_scaling.checker.lookup import (
    Missing,
    _entry,
    _runs_for,
    _sanity_failure,
    device_of,
    lookup,
    world_sizes_with_steps,
    sanity_rows,
)


@dataclass
class Part:
    """The verdict of one check at one world size (or, for monotone, over several)."""

    verdict: str
    reason: str
    measured: dict[str, Any] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    within: bool | None = None
    code: str = "judged"  # why, as data: one of REASON_CODES
    placement: dict[str, Any] = field(default_factory=dict)  # world size -> traced.placement, multi-GPU only

    def placement_key(self) -> dict[str, Any]:
        """``{"placement": {...}}`` for a verdict record where multi-GPU placements are known, else nothing."""
        return {"placement": self.placement} if self.placement else {}


# Why a check came out as it did: written into verdicts.json as each check's "code", beside the
# sentence ("reason"), so that the report and other readers never search the sentence.
REASON_CODES = {
    "judged": "the value was measured and compared with the bounds",
    "not_measured": "the world size was not measured",
    "wrong_device": "the world size ran on another kind of device than the claim is about",
    "no_device": "the world size records no device, and the claim is about one kind of device",
    "sanity_failed": "a sanity check of the world size failed",
    "shared_gpu": "ranks of the world size shared a GPU (or ran as a rehearsal) and the check rests on magnitudes (one GPU per rank)",
    "placement_unknown": "several ranks ran with no recorded placement (or one whose GPUs could not be told apart) and the check rests on magnitudes (one GPU per rank)",
    "missing_value": "the metric is missing or null at the world size (e.g. no GPU analysis)",
    "not_a_number": "the value is NaN (the analysis could not compute it) or not a number at all",
    "too_few_points": "a trend needs more world sizes with data than were measured",
    "no_world_size": "no measured world size is one the check applies to",
}


def _in_bounds(check: Check, x: float) -> bool:
    return (check.lo is None or x >= check.lo) and (check.hi is None or x <= check.hi)


# Two numbers are equal within this relative tolerance (a count written 0 in the claims file and
# recorded 0.0, a share that went through a decimal and back); true is never 1.
EQUALS_REL_TOL = 1e-9


def values_equal(measured: Any, expected: Any) -> bool:
    """``equals``: same kind (flag, number, string) and, for numbers, equal within EQUALS_REL_TOL."""
    if isinstance(measured, bool) or isinstance(expected, bool):
        return isinstance(measured, bool) and isinstance(expected, bool) and measured is expected
    if _is_number(measured) and _is_number(expected):
        x, y = float(measured), float(expected)
        return math.isfinite(x) and math.isclose(x, y, rel_tol=EQUALS_REL_TOL, abs_tol=1e-12)
    return type(measured) is type(expected) and measured == expected


def _judge_value(check: Check, value: Any, ws: int) -> Part:
    """Compare one measured value with the check's bounds (the value is present)."""
    label = f"{check.what} at world size {ws}"
    if check.test == "equals":
        ok = values_equal(value, check.value)
        return Part(PASS if ok else FAIL, f"{label} = {_fmt(value)}, expected {_fmt(check.value)}", within=ok)
    if check.test == "top":
        return _judge_top(check, value, ws)
    if not _is_number(value):  # the loader refuses a range on such a metric: no data, never a refutation
        return Part(INVALID, f"{label}: {check.metric} is {value!r}, not a number, so it cannot be judged", code="not_a_number")
    x = float(value)
    if math.isnan(x):  # a figure that could not be computed: no data to judge, never a refutation
        return Part(INVALID, f"{label} is NaN: the analysis could not compute it, so it cannot be judged", code="not_a_number")
    ok = _in_bounds(check, x)
    word = "within" if ok else "outside"
    return Part(PASS if ok else FAIL, f"{label} = {_fmt(x)}, {word} {check.bounds_text()}", within=ok)


def _judge_top(check: Check, ranking: Any, ws: int) -> Part:
    label = f"{check.what} at world size {ws}"
    if not isinstance(ranking, list) or not ranking:
        return Part(NOT_RUN, f"{label}: the ranking of GPU activities is empty")
    rows = [r for r in ranking if isinstance(r, dict) and _is_number(r.get("sum_s_per_step"))]
    if not rows:
        return Part(NOT_RUN, f"{label}: the ranking has no summed times")
    rows.sort(key=lambda r: -float(r["sum_s_per_step"]))
    mine = next((r for r in rows if r.get("activity") == check.activity), None)
    others = [r for r in rows if r.get("activity") != check.activity]
    top = rows[0]
    measured: dict[str, Any] = {
        "top_activity": top.get("activity"),
        "top_sum_s_per_step": float(top["sum_s_per_step"]),
    }
    if mine is None:
        measured["ratio"] = None
        return Part(
            FAIL, f"{label}: {check.activity} is not in the ranking (top: {_short(top.get('activity'))})", measured, within=False
        )
    mine_s = float(mine["sum_s_per_step"])
    measured[f"{check.activity} sum_s_per_step"] = mine_s
    if not others:
        measured["ratio"] = None
        ok = check.hi is None
        return Part(PASS if ok else FAIL, f"{label}: {check.activity} is the only GPU activity", measured, within=ok)
    runner = others[0]
    runner_s = float(runner["sum_s_per_step"])
    measured["runner_up"] = runner.get("activity")
    measured["runner_up_sum_s_per_step"] = runner_s
    ratio = mine_s / runner_s if runner_s > 0 else math.inf
    if math.isnan(ratio):
        return Part(INVALID, f"{label}: the ratio is NaN, so it cannot be judged", measured, code="not_a_number")
    measured["ratio"] = ratio
    ok = _in_bounds(check, ratio)
    where = "the largest GPU activity" if mine is top else f"not the largest (top: {_short(top.get('activity'))})"
    return Part(
        PASS if ok else FAIL,
        f"{label}: {check.activity} is {where}; {_fmt(mine_s * 1e3)} ms/step vs next "
        f"{_short(runner.get('activity'))} {_fmt(runner_s * 1e3)} ms/step, ratio {_fmt(ratio)} "
        f"{'within' if ok else 'outside'} {check.bounds_text()}",
        measured,
        within=ok,
    )


def _short(name: Any, n: int = 60) -> str:
    s = str(name)
    return s if len(s) <= n else s[: n - 3] + "..."


_DEVICE_WORDS = {"cpu": "CPU (no GPU)", "cuda": "CUDA GPUs"}


@dataclass
class Context:
    metrics: dict
    measured: list[int]
    sanity: dict[int, dict]


def _gate(ctx: Context, claim: Claim, check: Check, ws: int) -> tuple[Part | None, dict | None]:
    """NOT RUN / INVALID before looking at the value (or None to go on), and the entry."""
    entry = _entry(ctx.metrics, ws)
    if entry is None:
        return Part(
            NOT_RUN,
            f"world size {ws} was not measured (measured: {', '.join(map(str, ctx.measured)) or 'none'})",
            code="not_measured",
        ), None
    if ws not in ctx.measured:  # an entry for its problems, no measured step
        why = (entry.get("traced") or {}).get("gpu_not_run_reason")
        return Part(
            NOT_RUN,
            f"world size {ws} has no measured steps: no run of it completed" + (f" ({why})" if why else ""),
            runs=_runs_for(entry, check.metric),
            code="not_measured",
        ), entry
    device = device_of(entry)
    if claim.device and device is None:
        return Part(
            NOT_RUN,
            f"world size {ws} records no device (no device_type in its traced run or throughput); the claim "
            f"is about {_DEVICE_WORDS.get(claim.device, claim.device)}, so it cannot be judged on this data",
            runs=_runs_for(entry, check.metric),
            code="no_device",
        ), entry
    if claim.device and device != claim.device:
        words = _DEVICE_WORDS
        why = (entry.get("traced") or {}).get("gpu_not_run_reason")
        return Part(
            NOT_RUN,
            f"world size {ws} ran on {words.get(device, device)}; the claim is about "
            f"{words.get(claim.device, claim.device)}" + (f" (GPU analysis: {why})" if why else ""),
            runs=_runs_for(entry, check.metric),
            code="wrong_device",
        ), entry
    bad = [s for s in {ws, *([1] if check.metric.startswith("efficiency") else [])} if _sanity_failure(ctx.sanity, s)]
    if bad:
        value = lookup(entry, check.metric, ws)
        measured = {} if isinstance(value, Missing) else {check.metric: value}
        return Part(
            INVALID,
            "; ".join(_sanity_failure(ctx.sanity, s) for s in sorted(bad)),
            measured,
            _runs_for(entry, check.metric),
            code="sanity_failed",
        ), entry
    placement = placement_of(entry)
    own = gpu_per_rank(placement, ws)
    if check.rests_on != STRUCTURE and own != OWN and (own == SHARED or device == "cuda"):
        value = lookup(entry, check.metric, ws)
        measured = {} if isinstance(value, Missing) else {check.metric: value}
        runs = _runs_for(entry, check.metric)
        if own == SHARED:
            return Part(INVALID, shared_gpu_reason(ws, placement), measured, runs, code="shared_gpu"), entry
        # unknown is never taken for one GPU per rank: these magnitudes cannot be judged on this data
        return Part(NOT_RUN, placement_unknown_reason(ws, placement), measured, runs, code="placement_unknown"), entry
    return None, entry


def _with_placement(part: Part, entry: dict | None, ws: int) -> Part:
    """A multi-GPU verdict carries the placement, and its reason names NCCL's transport."""
    placement = placement_of(entry)
    if ws >= 2 and placement:
        part.placement[str(ws)] = placement
        if part.code != "shared_gpu":
            part.reason += f" ({transport_text(placement)})"
    return part


def _report_values(entry: dict, check: Check, ws: int) -> dict[str, Any]:
    out = {}
    for path in check.report:
        v = lookup(entry, path, ws)
        out[path] = None if isinstance(v, Missing) else v
    return out


def evaluate_at(ctx: Context, claim: Claim, check: Check, ws: int) -> Part:
    gate, entry = _gate(ctx, claim, check, ws)
    if gate is not None:
        if entry is not None:
            gate.measured.update(_report_values(entry, check, ws))
        return _with_placement(gate, entry, ws)
    return _with_placement(_judge_at(ctx, check, ws, entry), entry, ws)


def _judge_at(ctx: Context, check: Check, ws: int, entry: dict) -> Part:
    value = lookup(entry, check.metric, ws)
    runs = _runs_for(entry, check.metric)
    if check.metric.startswith("efficiency"):
        runs += [r for r in _runs_for(_entry(ctx.metrics, 1) or {}, "throughput") if r not in runs]
    if isinstance(value, Missing):
        return Part(NOT_RUN, value.reason, _report_values(entry, check, ws), runs, code="missing_value")
    part = _judge_value(check, value, ws)
    if check.test != "top":
        part.measured[check.metric] = value
    part.measured.update(_report_values(entry, check, ws))
    part.runs = runs
    return part


def evaluate_monotone(ctx: Context, claim: Claim, check: Check) -> Part:
    sizes = check.world_sizes.resolve(ctx.measured)
    series: dict[int, float] = {}
    notes: list[str] = []
    runs: list[str] = []
    invalid: list[str] = []
    invalid_codes: set[str] = set()
    placements: dict[str, Any] = {}
    for ws in sizes:
        gate, entry = _gate(ctx, claim, check, ws)
        placements.update(_with_placement(Part(PASS, ""), entry, ws).placement)
        if gate is not None:
            if gate.verdict == INVALID:
                invalid.append(gate.reason)
                invalid_codes.add(gate.code)
            else:
                notes.append(gate.reason)
            runs += gate.runs
            continue
        value = lookup(entry, check.metric, ws)
        runs += _runs_for(entry, check.metric)
        if isinstance(value, Missing):
            notes.append(value.reason)
            continue
        if not _is_number(value) or math.isnan(float(value)):  # no data to judge a trend on, never a refutation
            return Part(
                INVALID,
                f"{check.what} at world size {ws} is {_fmt(value)}: not a number, so the trend cannot be judged",
                {str(ws): value},
                runs,
                code="not_a_number",
            )
        series[ws] = float(value)
    measured = {str(k): v for k, v in series.items()}
    if invalid:
        code = "sanity_failed" if "sanity_failed" in invalid_codes else "shared_gpu"
        return Part(INVALID, said_once(invalid), measured, runs, code=code, placement=placements)
    if len(series) < check.min_points:
        have = ", ".join(map(str, series)) or "none"
        why = (
            f"needs {check.min_points} world sizes ({check.world_sizes.describe()}) with data to judge a trend, "
            f"has {len(series)} ({have})"
        )
        if notes:
            why += "; " + "; ".join(notes)
        return Part(NOT_RUN, why, measured, runs, code="too_few_points", placement=placements)
    worst, worst_at, peak = 0.0, None, -math.inf
    for ws, v in series.items():
        if peak > 0 and v < peak:
            drop = (peak - v) / peak
            if drop > worst:
                worst, worst_at = drop, ws
        peak = max(peak, v)
    measured["largest_drop_rel"] = worst
    trend = " -> ".join(f"{_fmt(v)} (ws {k})" for k, v in series.items())
    ok = worst <= check.max_drop_rel
    text = f"{check.what}: {trend}; "
    if worst_at is None:
        text += "never decreases"
    else:
        text += f"largest drop below the running maximum {worst:.1%} at world size {worst_at}"
    text += f", {'within' if ok else 'beyond'} the noise tolerance {check.max_drop_rel:.0%}"
    if notes:
        text += " (" + "; ".join(notes) + ")"
    if placements:
        text += " (" + "; ".join(f"world size {k}: {transport_text(v)}" for k, v in placements.items()) + ")"
    return Part(PASS if ok else FAIL, text, measured, runs, within=ok, placement=placements)


def _indicative(ctx: Context, claim: Claim, check: Check, wanted: int) -> dict | None:
    """The same measurement at the largest measured multi-GPU world size below ``wanted``, when
    that world size has no verdict of its own and the measurement exists there."""
    candidates = [n for n in ctx.measured if 2 <= n < wanted]
    if not candidates:
        return None
    ws = max(candidates)
    if ws in check.world_sizes.resolve(ctx.measured):
        return None  # that world size has a verdict of its own already
    part = evaluate_at(ctx, claim, check, ws)
    if part.verdict not in (PASS, FAIL):
        return None  # nothing measured there either (CPU run, no GPU analysis, sanity failed)
    return {
        "check": check.name,
        "world_size": ws,
        "instead_of": [wanted],
        "measured": _jsonable(part.measured),
        "within_bounds": part.within,
        "why": part.reason,
        "reason": _indicative_reason(ws, [wanted], part.reason),
    }


def _indicative_reason(ws: int, instead_of: list[int], why: str) -> str:
    """The sentence of an indicative figure (written from its fields: its readers take ``why``)."""
    return f"indicative only (world size {ws}, not the claim's {', '.join(map(str, instead_of))}): {why}"


def _check_row(check: Check, world_size: Any, part: Part) -> dict[str, Any]:
    """One check's part as verdicts.json writes it."""
    return {
        "name": check.name,
        "what": check.what,
        "metric": check.metric,
        "world_size": world_size,
        "verdict": part.verdict,
        "code": part.code,
        "reason": part.reason,
        "measured": _jsonable(part.measured),
        "bounds": _jsonable(check.bounds()),
        "runs": sorted(set(part.runs)),
        **part.placement_key(),
    }


def _no_world_size_row(ctx: Context, check: Check) -> dict[str, Any]:
    """NOT RUN of a check none of whose world sizes was measured."""
    wanted = check.world_sizes.describe().replace("every measured world size ", "")
    return {
        "name": check.name,
        "what": check.what,
        "metric": check.metric,
        "world_size": None,
        "verdict": NOT_RUN,
        "code": "no_world_size",
        "at_least": check.world_sizes.at_least,
        "bounds": _jsonable(check.bounds()),
        "measured": {},
        "runs": [],
        "reason": f"no measured world size is {wanted} (measured: {', '.join(map(str, ctx.measured)) or 'none'})",
    }


def _add_indicative(ctx: Context, claim: Claim, check: Check, ws: int, indicative: list[dict]) -> None:
    """The indicative figure standing in for world size ``ws`` (one figure may stand in for
    several missing world sizes: C6's 4 and 8)."""
    ind = _indicative(ctx, claim, check, ws)
    if ind is None:
        return
    same = next((i for i in indicative if (i["check"], i["world_size"]) == (ind["check"], ind["world_size"])), None)
    if same:
        same["instead_of"].append(ws)
        same["reason"] = _indicative_reason(same["world_size"], same["instead_of"], same["why"])
    else:
        indicative.append(ind)


@dataclass
class _ClaimParts:
    """What the checks of one claim gave, gathered for its verdict."""

    checks: list[dict] = field(default_factory=list)
    measured: dict[str, dict] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    indicative: list[dict] = field(default_factory=list)


def _evaluate_check(ctx: Context, claim: Claim, check: Check, out: _ClaimParts) -> None:
    """The parts of one check (one per world size; one over all of them for a trend) into ``out``."""
    sizes = check.world_sizes.resolve(ctx.measured)
    if check.test == "monotone":
        part = evaluate_monotone(ctx, claim, check)
        out.checks.append(_check_row(check, sizes, part))
        out.measured.setdefault("trend", {})[check.metric] = _jsonable(part.measured)
        out.runs += part.runs
        return
    if not sizes:
        out.checks.append(_no_world_size_row(ctx, check))
        return
    for ws in sizes:
        part = evaluate_at(ctx, claim, check, ws)
        out.checks.append(_check_row(check, ws, part))
        if part.measured:
            out.measured.setdefault(str(ws), {}).update(_jsonable(part.measured))
        out.runs += part.runs
        if claim.indicative and part.verdict == NOT_RUN and _entry(ctx.metrics, ws) is None:
            _add_indicative(ctx, claim, check, ws, out.indicative)


def evaluate_claim(ctx: Context, claim: Claim) -> dict[str, Any]:
    """One claim's verdict: the most severe of its checks' parts (``PRECEDENCE``), with every part."""
    parts = _ClaimParts()
    for check in claim.checks:
        _evaluate_check(ctx, claim, check, parts)
    verdicts = {c["verdict"] for c in parts.checks}
    verdict = next(v for v in PRECEDENCE if v in verdicts)
    # the reason: the parts that decided the verdict first, then the rest
    deciding = [c for c in parts.checks if c["verdict"] == verdict]
    rest = [c for c in parts.checks if c["verdict"] != verdict]
    return {
        "id": claim.id,
        "title": claim.title,
        "verdict": verdict,
        "statement": claim.statement,
        "world_sizes": claim.world_sizes.as_json(),
        "measured": parts.measured,
        "bounds": {c.name: _jsonable(c.bounds()) | {"metric": c.metric, "what": c.what} for c in claim.checks},
        "runs": sorted(set(parts.runs)),
        # each check's reason once: checks of one claim judged at one world size often share it word for word
        "reason": said_once(list(dict.fromkeys(f"[{c['verdict']}] {c['reason']}" for c in deciding + rest))),
        "checks": parts.checks,
        "indicative": parts.indicative or None,
    }


def evaluate(metrics: dict, claims: list[Claim], bounds: SanityBounds | None = None) -> dict[str, Any]:
    """Verdicts for every claim (the content of verdicts.json, without file provenance)."""
    if not isinstance(metrics, dict) or not isinstance(metrics.get("world_sizes"), dict):
        raise ArtifactError("metrics has no 'world_sizes' object: not a metrics.json written by analyze")
    sanity = sanity_rows(metrics, bounds)
    ctx = Context(metrics, world_sizes_with_steps(metrics), {r["world_size"]: r for r in sanity})
    results = [evaluate_claim(ctx, c) for c in claims]
    counts = {v: sum(1 for r in results if r["verdict"] == v) for v in VERDICTS}
    return {
        "schema": VERDICTS_SCHEMA,
        "claims": results,
        "sanity": sanity,
        "summary": {
            "counts": counts,
            "measured_world_sizes": ctx.measured,
            "label": metrics.get("label"),
            "fallbacks": [_fallback_text(f) for f in metrics.get("fallbacks") or []],
        },
    }


def _fallback_text(f: Any) -> str:
    if isinstance(f, dict):
        text = f"{f.get('what', '?')}: {f.get('used', '?')}"
        return text + (f" ({f['reason']})" if f.get("reason") else "")
    return str(f)


def exit_status(verdicts: dict, strict: bool = False) -> int:
    counts = verdicts["summary"]["counts"]
    if counts.get(FAIL) or counts.get(INVALID):
        return 1
    if strict and counts.get(NOT_RUN):
        return 1
    return 0
