"""``dnabert-scaling check``: the paper's claims (``expected/claims.toml``) against ``metrics.json``.

    dnabert-scaling check results/ [--expected expected/claims.toml] [--strict] [--out DIR]

Each claim names the metric(s) it rests on (paths into one world size's entry of
``metrics.json``), the world sizes it applies to, and explicit bounds with their rationale. A
claim gets one verdict:

- ``PASS``: every check of the claim was measured and is within its bounds;
- ``FAIL``: a measured value is outside its bounds (or is NaN: a NaN is never within bounds);
- ``NOT RUN``: a world size the claim needs was not measured, its GPU analysis did not run
  (``gpu_not_run_reason``, e.g. a CPU smoke run), it ran on the wrong kind of device, or a
  metric is missing / null. A claim can never pass on missing data;
- ``INVALID``: a world size the claim's data come from failed a sanity check (a missing rank,
  incomplete steps, a non-finite loss, a trace without GPU streams).

Across the checks of one claim the verdicts combine as FAIL > INVALID > NOT RUN > PASS: a valid
refutation is reported as such even when another part could not be judged.

When a claim is about a world size that was not measured (8 GPUs, say) but a smaller multi-GPU
one was, the same measurement at the largest such world size is reported as an *indicative*
figure: information, labelled as such, never a verdict.

Writes ``verdicts.json`` and ``verdicts.txt`` into the results folder (or ``--out``), prints the
table, and exits 1 when any claim FAILs or is INVALID (``--strict``: also when one is NOT RUN).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import textwrap
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError

CLAIMS_SCHEMA = "dnabert-scaling/claims/1"
VERDICTS_SCHEMA = "dnabert-scaling/verdicts/1"
PASS, FAIL, NOT_RUN, INVALID = "PASS", "FAIL", "NOT RUN", "INVALID"
VERDICTS = (PASS, FAIL, NOT_RUN, INVALID)
# how the verdicts of a claim's checks combine: the first one present wins
PRECEDENCE = (FAIL, INVALID, NOT_RUN, PASS)
SANITY_ITEMS = ("all_ranks_present", "steps_complete", "finite_loss", "gpu_streams", "trace_complete")
SANITY_WORDS = {
    "all_ranks_present": "all ranks present",
    "steps_complete": "measured steps complete",
    "finite_loss": "finite loss",
    "gpu_streams": "GPU streams in every trace",
    "trace_complete": "GPU activity for every launch",
}

SANITY_SHORT = {"all_ranks_present": "ranks", "steps_complete": "steps", "finite_loss": "loss",
                "gpu_streams": "GPU streams", "trace_complete": "complete"}
UNKNOWN = "UNKNOWN"  # a sanity item that the data cannot show (never a FAIL, shown as such)

# ---------------------------------------------------------------------------------------------
# The metric paths a claim may name: the tree of one world size's entry in metrics.json.
# A leaf is None; a STAT is {"median", "p10", "p90", "min", "max", "n"} and must be named down to
# one of its fields.

_STAT = {k: None for k in ("median", "p10", "p90", "min", "max", "n")}
_GPU_STATS = (
    "step_time_s", "compute_s", "exposed_comm_s", "exposed_memcpy_s", "idle_s",
    "nccl_kernels_per_step", "nccl_kernel_sum_s", "nccl_union_s", "overlap_ratio",
    "exposed_comm_share", "allreduce_kernel_s", "allreduce_kernels_per_step", "allreduce_share",
    "forward_gpu_s", "backward_gpu_s", "optimizer_gpu_s", "allreduce_to_backward", "kernels_per_step",
    "idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s", "launches_per_step", "launch_call_s",
    "host_s_per_launch",
)
_BUSY_WAIT = {k: None for k in ("allreduce_kernel_s", "transfer_s_at_measured_busbw", "ratio", "busbw_GBps",
                                "gradient_bytes", "buckets")}
METRIC_TREE: dict[str, Any] = {
    "world_size": None,
    "traced": {
        "run": None, "tracer": None, "format": None, "trace_mode": None, "device_type": None,
        "ranks": None, "measured_steps": None, "gpu_not_run_reason": None,
        "sanity": {k: None for k in SANITY_ITEMS},
        "gpu": {
            **{k: _STAT for k in _GPU_STATS},
            "allreduce_streams": None, "compute_streams": None, "allreduce_own_stream": None,
            "ranking": None, "kernel_classes": None, "phase_method": None, "timeline_step": None, "per_rank": None,
            "rank_skew": {"allreduce_start_skew_s": _STAT, "clock": None, "late_rank_share": None, "buckets": None,
                          "steps_skipped": None},
            "busy_wait": _BUSY_WAIT,
        },
    },
    "throughput": {
        "source": None, "runs": None, "global_batch": None, "device_type": None,
        "samples_per_s": _STAT, "step_time_s": _STAT,
    },
    "throughput_noddp": {"runs": None, "samples_per_s": _STAT},
    "efficiency": None, "efficiency_vs_noddp": None, "efficiency_baseline": None, "dilation": None,
    "efficiency_spread": {"min": None, "max": None, "runs_n": None, "baseline_runs_n": None}, "dilation_kind": None,
    "busy_wait": _BUSY_WAIT,
}


def _metric_node(path: str) -> tuple[bool, str]:
    """(is a leaf, problem) for a dotted metric path; problem is '' when the path is known."""
    node: Any = METRIC_TREE
    parts = path.split(".")
    for i, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            where = ".".join(parts[:i]) or "a world size's entry"
            options = ", ".join(sorted(node)) if isinstance(node, dict) else "nothing (it is a value)"
            return False, f"unknown metric path {path!r}: {where} has no {part!r} (it has: {options})"
        node = node[part]
    if isinstance(node, dict):
        return False, f"metric path {path!r} names a group, not a value: add one of {', '.join(node)}"
    return True, ""


# ---------------------------------------------------------------------------------------------
# The claims file


@dataclass(frozen=True)
class WorldSizes:
    """Which world sizes a claim or check applies to: a fixed list, or every measured one >= N."""

    explicit: tuple[int, ...] | None = None
    at_least: int | None = None

    def resolve(self, measured: list[int]) -> list[int]:
        if self.explicit is not None:
            return list(self.explicit)
        return [n for n in measured if n >= (self.at_least or 1)]

    def describe(self) -> str:
        if self.explicit is not None:
            return ", ".join(map(str, self.explicit))
        return f"every measured world size >= {self.at_least}"

    def as_json(self) -> Any:
        return list(self.explicit) if self.explicit is not None else f">={self.at_least}"


@dataclass(frozen=True)
class Check:
    name: str
    what: str
    metric: str
    test: str  # range | equals | top | monotone
    rationale: str
    world_sizes: WorldSizes
    lo: float | None = None
    hi: float | None = None
    value: Any = None
    activity: str | None = None
    max_drop_rel: float | None = None
    min_points: int = 2
    report: tuple[str, ...] = ()

    def bounds(self) -> dict[str, Any]:
        out: dict[str, Any] = {"test": self.test}
        if self.test in ("range", "top"):
            out["lo"], out["hi"] = self.lo, self.hi
        if self.test == "equals":
            out["value"] = self.value
        if self.test == "top":
            out["activity"] = self.activity
            out["measure"] = f"{self.activity} summed kernel time / largest other GPU activity"
        if self.test == "monotone":
            out["max_drop_rel"] = self.max_drop_rel
            out["min_points"] = self.min_points
        out["rationale"] = self.rationale
        return out

    def bounds_text(self) -> str:
        if self.test == "equals":
            return f"== {_fmt(self.value)}"
        if self.test == "monotone":
            return f"non-decreasing (drop <= {self.max_drop_rel:.0%})"
        lo = "-inf" if self.lo is None else _fmt(self.lo)
        hi = "+inf" if self.hi is None else _fmt(self.hi)
        if self.lo is not None and self.hi is not None and self.lo == self.hi:
            text = f"== {lo}"
        else:
            text = f"[{lo}, {hi}]"
        return ("ratio " + text) if self.test == "top" else text


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    world_sizes: WorldSizes
    checks: tuple[Check, ...]
    title: str = ""
    device: str | None = None
    indicative: bool = False


_CLAIM_KEYS = {"id", "title", "statement", "world_sizes", "device", "indicative", "check"}
_CHECK_KEYS = {"name", "what", "metric", "test", "rationale", "world_sizes", "lo", "hi", "value", "activity",
               "max_drop_rel", "min_points", "report"}
_TEST_KEYS = {
    "range": {"lo", "hi"},
    "equals": {"value"},
    "top": {"activity", "lo", "hi"},
    "monotone": {"max_drop_rel", "min_points"},
}
_TOP_KEYS = {"schema", "paper", "notes", "claim", "sanity"}
_SANITY_BOUND_KEYS = {"trace_complete": {"min_found_share", "rationale"}}


@dataclass(frozen=True)
class SanityBounds:
    """The bounds of the sanity checks that have one (``[sanity.<item>]`` in the claims file)."""

    trace_complete_min_share: float = 0.999
    rationale: dict[str, str] = field(default_factory=dict)
    source: str = "default (the claims file sets no [sanity.trace_complete])"


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArtifactError("claims file not found", path) from None
    except tomllib.TOMLDecodeError as exc:
        raise ArtifactError(f"not valid TOML: {exc}", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"cannot read the claims file: {exc}", path) from None


def _parse_sanity(raw: Any, path: Path) -> SanityBounds:
    if raw is None:
        return SanityBounds()
    if not isinstance(raw, dict):
        raise ArtifactError("[sanity] must be a table of tables", path)
    unknown = sorted(set(raw) - set(_SANITY_BOUND_KEYS))
    if unknown:
        raise ArtifactError(f"[sanity]: unknown item(s) {', '.join(unknown)} (allowed: {', '.join(_SANITY_BOUND_KEYS)})", path)
    tc = raw.get("trace_complete")
    if not isinstance(tc, dict):
        raise ArtifactError("missing [sanity.trace_complete] table (min_found_share and rationale)", path)
    unknown = sorted(set(tc) - _SANITY_BOUND_KEYS["trace_complete"])
    if unknown:
        raise ArtifactError(f"[sanity.trace_complete]: unknown key(s) {', '.join(unknown)}", path)
    share = tc.get("min_found_share")
    if not _is_number(share) or not 0 < share <= 1:
        raise ArtifactError(f"[sanity.trace_complete]: min_found_share must be a number in (0, 1], not {share!r}", path)
    if not isinstance(tc.get("rationale"), str) or not tc["rationale"].strip():
        raise ArtifactError("[sanity.trace_complete]: missing field 'rationale' (why this bound)", path)
    return SanityBounds(float(share), {"trace_complete": " ".join(tc["rationale"].split())}, str(path))


def load_sanity_bounds(path: str | Path) -> SanityBounds:
    """The sanity bounds of a claims file (``[sanity.trace_complete] min_found_share``)."""
    path = Path(path)
    return _parse_sanity(_read_toml(path).get("sanity"), path)



def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _parse_world_sizes(raw: Any, where: str, path: Path) -> WorldSizes:
    if isinstance(raw, list) and raw and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in raw):
        if len(set(raw)) != len(raw):
            raise ArtifactError(f"{where}: world_sizes lists a world size twice: {raw}", path)
        return WorldSizes(explicit=tuple(sorted(raw)))
    if isinstance(raw, str) and raw.strip().startswith(">="):
        try:
            n = int(raw.strip()[2:])
        except ValueError:
            n = 0
        if n >= 1:
            return WorldSizes(at_least=n)
    raise ArtifactError(f"{where}: world_sizes must be a non-empty list of world sizes (e.g. [4, 8]) "
                        f"or \">=N\" (every measured world size from N), not {raw!r}", path)


def _parse_check(raw: Any, claim_id: str, index: int, claim_ws: WorldSizes, path: Path) -> Check:
    where = f"claim {claim_id}, check {index + 1}"
    if not isinstance(raw, dict):
        raise ArtifactError(f"{where}: a check must be a table ([[claim.check]])", path)
    if "name" in raw:
        where = f"claim {claim_id}, check {raw['name']!r}"
    unknown = sorted(set(raw) - _CHECK_KEYS)
    if unknown:
        raise ArtifactError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_CHECK_KEYS))})", path)
    test = raw.get("test", "range")
    if test not in _TEST_KEYS:
        raise ArtifactError(f"{where}: unknown test {test!r} (one of {', '.join(_TEST_KEYS)})", path)
    for key in ("what", "metric", "rationale"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ArtifactError(f"{where}: missing field {key!r} (a non-empty string)", path)
    misplaced = sorted((set(raw) & set().union(*_TEST_KEYS.values())) - _TEST_KEYS[test])
    if misplaced:
        raise ArtifactError(f"{where}: key(s) {', '.join(misplaced)} do not apply to test {test!r}", path)
    metric = raw["metric"]
    if test == "top":
        if metric != "traced.gpu.ranking":
            raise ArtifactError(f"{where}: test 'top' reads the ranking: metric must be 'traced.gpu.ranking', not {metric!r}", path)
    else:
        ok, problem = _metric_node(metric)
        if not ok:
            raise ArtifactError(f"{where}: {problem}", path)
    report = raw.get("report", [])
    if not isinstance(report, list) or not all(isinstance(r, str) for r in report):
        raise ArtifactError(f"{where}: report must be a list of metric paths", path)
    for r in report:
        ok, problem = _metric_node(r)
        if not ok:
            raise ArtifactError(f"{where}: report: {problem}", path)
    lo, hi = raw.get("lo"), raw.get("hi")
    for key, v in (("lo", lo), ("hi", hi)):
        if v is not None and (not _is_number(v) or not math.isfinite(v)):
            raise ArtifactError(f"{where}: {key} must be a finite number, not {v!r}", path)
    if test in ("range", "top"):
        if lo is None and hi is None:
            raise ArtifactError(f"{where}: give lo, hi or both (a side left out is open)", path)
        if lo is not None and hi is not None and lo > hi:
            raise ArtifactError(f"{where}: lo ({lo}) > hi ({hi}): no value can pass", path)
    if test == "equals" and "value" not in raw:
        raise ArtifactError(f"{where}: test 'equals' needs 'value'", path)
    if test == "top" and (not isinstance(raw.get("activity"), str) or not raw["activity"]):
        raise ArtifactError(f"{where}: test 'top' needs 'activity' (e.g. \"nccl:AllReduce\")", path)
    drop, min_points = raw.get("max_drop_rel"), raw.get("min_points", 2)
    if test == "monotone":
        if drop is None or not _is_number(drop) or not 0 <= drop < 1:
            raise ArtifactError(f"{where}: test 'monotone' needs max_drop_rel, a number in [0, 1)", path)
        if not isinstance(min_points, int) or isinstance(min_points, bool) or min_points < 2:
            raise ArtifactError(f"{where}: min_points must be an integer >= 2", path)
    ws = _parse_world_sizes(raw["world_sizes"], where, path) if "world_sizes" in raw else claim_ws
    return Check(
        name=str(raw.get("name") or f"check{index + 1}"), what=raw["what"].strip(), metric=metric, test=test,
        rationale=" ".join(raw["rationale"].split()), world_sizes=ws, lo=lo, hi=hi, value=raw.get("value"),
        activity=raw.get("activity"), max_drop_rel=drop, min_points=min_points, report=tuple(report),
    )


def load_claims(path: str | Path) -> list[Claim]:
    """Parse and validate a claims file; any problem is an ArtifactError naming the file and entry."""
    path = Path(path)
    data = _read_toml(path)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ArtifactError(f"unknown top-level key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_TOP_KEYS))})", path)
    if data.get("schema") != CLAIMS_SCHEMA:
        raise ArtifactError(f"schema must be {CLAIMS_SCHEMA!r}, not {data.get('schema')!r}", path)
    _parse_sanity(data.get("sanity"), path)
    raw_claims = data.get("claim")
    if not isinstance(raw_claims, list) or not raw_claims:
        raise ArtifactError("no claims: expected [[claim]] tables", path)
    claims: list[Claim] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_claims):
        cid = raw.get("id") if isinstance(raw, dict) else None
        where = f"claim {cid}" if isinstance(cid, str) and cid else f"claim #{i + 1}"
        if not isinstance(raw, dict):
            raise ArtifactError(f"{where}: must be a table", path)
        unknown = sorted(set(raw) - _CLAIM_KEYS)
        if unknown:
            raise ArtifactError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_CLAIM_KEYS))})", path)
        for key in ("id", "statement"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise ArtifactError(f"{where}: missing field {key!r} (a non-empty string)", path)
        if cid in seen:
            raise ArtifactError(f"{where}: duplicate claim id", path)
        seen.add(cid)
        if "world_sizes" not in raw:
            raise ArtifactError(f"{where}: missing field 'world_sizes'", path)
        ws = _parse_world_sizes(raw["world_sizes"], where, path)
        device = raw.get("device")
        if device is not None and device not in ("cuda", "cpu"):
            raise ArtifactError(f"{where}: device must be 'cuda' or 'cpu', not {device!r}", path)
        indicative = raw.get("indicative", False)
        if not isinstance(indicative, bool):
            raise ArtifactError(f"{where}: indicative must be true or false", path)
        raw_checks = raw.get("check")
        if not isinstance(raw_checks, list) or not raw_checks:
            raise ArtifactError(f"{where}: missing field 'check' (one or more [[claim.check]] tables)", path)
        checks = tuple(_parse_check(c, cid, j, ws, path) for j, c in enumerate(raw_checks))
        names = [c.name for c in checks]
        if len(set(names)) != len(names):
            raise ArtifactError(f"{where}: two checks share a name: {names}", path)
        claims.append(Claim(id=cid, statement=" ".join(raw["statement"].split()), world_sizes=ws, checks=checks,
                            title=str(raw.get("title", "")), device=device, indicative=indicative))
    return claims


# ---------------------------------------------------------------------------------------------
# Reading metrics


class Missing:
    """Why a value is not there (a sentence)."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Missing({self.reason!r})"


def measured_world_sizes(metrics: dict) -> list[int]:
    out = []
    for key in (metrics.get("world_sizes") or {}):
        try:
            out.append(int(key))
        except ValueError:
            continue
    return sorted(out)


def _entry(metrics: dict, ws: int) -> dict | None:
    e = (metrics.get("world_sizes") or {}).get(str(ws))
    return e if isinstance(e, dict) else None


def lookup(entry: dict, path: str, ws: int) -> Any:
    """The value at ``path`` in one world size's entry, or a Missing saying why not."""
    node: Any = entry
    parts = path.split(".")
    for i, part in enumerate(parts):
        here = ".".join(parts[: i + 1])
        if not isinstance(node, dict) or part not in node:
            return Missing(f"{here} is missing at world size {ws}")
        node = node[part]
        if node is None:
            if here == "traced":
                return Missing(f"no traced run at world size {ws}")
            if here == "traced.gpu":
                why = (entry.get("traced") or {}).get("gpu_not_run_reason")
                return Missing(f"GPU analysis not run at world size {ws}: {why}" if why
                               else f"GPU analysis not run at world size {ws} (no reason recorded)")
            if here.startswith("efficiency"):
                return Missing(f"{here} is null at world size {ws}: it needs untraced throughput runs at world size "
                               f"{ws} and at the 1-GPU baseline")
            return Missing(f"{here} is null at world size {ws}")
    return node


def device_of(entry: dict) -> str | None:
    for part in ("traced", "throughput"):
        d = (entry.get(part) or {}).get("device_type")
        if d:
            return str(d)
    return None


def _trace_complete_value(traced: dict, sanity: dict, bounds: SanityBounds) -> tuple[Any, str | None]:
    """``trace_complete`` re-judged at the claims file's bound from the per-rank figures that
    ``analyze`` recorded, and the reason when it is not PASS."""
    from dnabert_scaling.analysis.completeness import COMPLETE, INCOMPLETE, judge

    comp = traced.get("completeness")
    if not isinstance(comp, dict) or not isinstance(comp.get("per_rank"), dict):
        return sanity.get("trace_complete", "missing"), None
    per_rank = {int(r): c for r, c in comp["per_rank"].items()}
    result = judge(per_rank, bounds.trace_complete_min_share)
    value = {COMPLETE: True, INCOMPLETE: False}.get(result["status"], "unknown")
    if value is True:
        return True, None
    losses = "".join(f"; {w}" for w in comp.get("log_warnings") or [])
    return value, f"trace {result['status']}: {result['reason']}{losses}"


def sanity_rows(metrics: dict, bounds: SanityBounds | None = None) -> list[dict]:
    bounds = bounds or SanityBounds()
    rows = []
    for ws in measured_world_sizes(metrics):
        entry = _entry(metrics, ws) or {}
        traced = entry.get("traced")
        row: dict[str, Any] = {"world_size": ws, "run": (traced or {}).get("run"), "checks": {}, "problems": [], "ok": None}
        if not traced:
            row["note"] = "no traced run at this world size: sanity not checked"
            rows.append(row)
            continue
        sanity = traced.get("sanity")
        if not isinstance(sanity, dict):
            row["note"] = "metrics.json has no sanity for this world size: not checked"
            rows.append(row)
            continue
        ok = True
        complete, complete_why = _trace_complete_value(traced, sanity, bounds)
        for item in SANITY_ITEMS:
            v = complete if item == "trace_complete" else sanity.get(item, "missing")
            if v is True:
                row["checks"][item] = PASS
            elif v is None:
                row["checks"][item] = "N/A"
            elif v == "missing":
                row["checks"][item] = "NOT CHECKED"
            elif v == "unknown":
                row["checks"][item] = UNKNOWN
            else:
                row["checks"][item] = FAIL
                ok = False
        row["problems"] = ([complete_why] if complete_why else []) + [str(p) for p in sanity.get("problems") or []]
        row["trace_complete_bound"] = bounds.trace_complete_min_share
        row["ok"] = ok
        rows.append(row)
    return rows


def _sanity_failure(sanity_by_ws: dict[int, dict], ws: int) -> str | None:
    row = sanity_by_ws.get(ws)
    if not row or row["ok"] is not False:
        return None
    failed = [SANITY_WORDS[k] for k, v in row["checks"].items() if v == FAIL]
    text = f"sanity failed at world size {ws} ({', '.join(failed)})"
    if row["problems"]:
        text += ": " + "; ".join(row["problems"][:3]) + (" ..." if len(row["problems"]) > 3 else "")
    return text


def _runs_for(entry: dict, metric: str) -> list[str]:
    if metric.startswith("traced"):
        run = (entry.get("traced") or {}).get("run")
        return [run] if run else []
    if metric.startswith(("throughput", "efficiency", "dilation")):
        runs = list((entry.get("throughput") or {}).get("runs") or [])
        if metric == "dilation":
            run = (entry.get("traced") or {}).get("run")
            runs += [run] if run else []
        return runs
    if metric.startswith("throughput_noddp"):
        return list((entry.get("throughput_noddp") or {}).get("runs") or [])
    return []


# ---------------------------------------------------------------------------------------------
# Evaluating


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if x == 0:
            return "0"
        if abs(x) >= 1000 or abs(x) < 1e-3:
            return f"{x:.3g}"
        return f"{x:.3g}" if abs(x) < 1 else f"{x:.3f}".rstrip("0").rstrip(".")
    if x is None:
        return "null"
    return str(x)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


@dataclass
class Part:
    """The verdict of one check at one world size (or, for monotone, over several)."""

    verdict: str
    reason: str
    measured: dict[str, Any] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)
    within: bool | None = None
    code: str = "judged"  # why, as data: one of REASON_CODES


# Why a check came out as it did: written into verdicts.json as each check's "code", beside the
# sentence ("reason"), so that the report and other readers never search the sentence.
REASON_CODES = {
    "judged": "the value was measured and compared with the bounds",
    "not_measured": "the world size was not measured",
    "wrong_device": "the world size ran on another kind of device than the claim is about",
    "sanity_failed": "a sanity check of the world size failed",
    "missing_value": "the metric is missing or null at the world size (e.g. no GPU analysis)",
    "too_few_points": "a trend needs more world sizes with data than were measured",
    "no_world_size": "no measured world size is one the check applies to",
}


def _in_bounds(check: Check, x: float) -> bool:
    return (check.lo is None or x >= check.lo) and (check.hi is None or x <= check.hi)


def _judge_value(check: Check, value: Any, ws: int) -> Part:
    """Compare one measured value with the check's bounds (the value is present)."""
    label = f"{check.what} at world size {ws}"
    if check.test == "equals":
        ok = value == check.value and type(value) is type(check.value)
        return Part(PASS if ok else FAIL, f"{label} = {_fmt(value)}, expected {_fmt(check.value)}", within=ok)
    if check.test == "top":
        return _judge_top(check, value, ws)
    if not _is_number(value):
        return Part(FAIL, f"{label}: {check.metric} is {value!r}, not a number", within=False)
    x = float(value)
    if math.isnan(x):
        return Part(FAIL, f"{label} is NaN (not a number): it cannot be within {check.bounds_text()}", within=False)
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
        return Part(FAIL, f"{label}: {check.activity} is not in the ranking (top: {_short(top.get('activity'))})",
                    measured, within=False)
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
        return Part(FAIL, f"{label}: the ratio is NaN", measured, within=False)
    measured["ratio"] = ratio
    ok = _in_bounds(check, ratio)
    where = "the largest GPU activity" if mine is top else f"not the largest (top: {_short(top.get('activity'))})"
    return Part(PASS if ok else FAIL,
                f"{label}: {check.activity} is {where}; {_fmt(mine_s * 1e3)} ms/step vs next "
                f"{_short(runner.get('activity'))} {_fmt(runner_s * 1e3)} ms/step, ratio {_fmt(ratio)} "
                f"{'within' if ok else 'outside'} {check.bounds_text()}", measured, within=ok)


def _short(name: Any, n: int = 60) -> str:
    s = str(name)
    return s if len(s) <= n else s[: n - 3] + "..."


@dataclass
class Context:
    metrics: dict
    measured: list[int]
    sanity: dict[int, dict]


def _gate(ctx: Context, claim: Claim, check: Check, ws: int) -> tuple[Part | None, dict | None]:
    """NOT RUN / INVALID before looking at the value (or None to go on), and the entry."""
    entry = _entry(ctx.metrics, ws)
    if entry is None:
        return Part(NOT_RUN, f"world size {ws} was not measured (measured: {', '.join(map(str, ctx.measured)) or 'none'})",
                    code="not_measured"), None
    device = device_of(entry)
    if claim.device and device and device != claim.device:
        words = {"cpu": "CPU (no GPU)", "cuda": "CUDA GPUs"}
        why = (entry.get("traced") or {}).get("gpu_not_run_reason")
        return Part(NOT_RUN, f"world size {ws} ran on {words.get(device, device)}; the claim is about "
                             f"{words.get(claim.device, claim.device)}" + (f" (GPU analysis: {why})" if why else ""),
                    runs=_runs_for(entry, check.metric), code="wrong_device"), entry
    bad = [s for s in {ws, *([1] if check.metric.startswith("efficiency") else [])} if _sanity_failure(ctx.sanity, s)]
    if bad:
        value = lookup(entry, check.metric, ws)
        measured = {} if isinstance(value, Missing) else {check.metric: value}
        return Part(INVALID, "; ".join(_sanity_failure(ctx.sanity, s) for s in sorted(bad)), measured,
                    _runs_for(entry, check.metric), code="sanity_failed"), entry
    return None, entry


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
        return gate
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
    for ws in sizes:
        gate, entry = _gate(ctx, claim, check, ws)
        if gate is not None:
            if gate.verdict == INVALID:
                invalid.append(gate.reason)
            else:
                notes.append(gate.reason)
            runs += gate.runs
            continue
        value = lookup(entry, check.metric, ws)
        runs += _runs_for(entry, check.metric)
        if isinstance(value, Missing):
            notes.append(value.reason)
            continue
        if not _is_number(value) or math.isnan(float(value)):
            return Part(FAIL, f"{check.what} at world size {ws} is {_fmt(value)}: not a number, so the trend "
                              "cannot be judged", {str(ws): value}, runs, within=False)
        series[ws] = float(value)
    measured = {str(k): v for k, v in series.items()}
    if invalid:
        return Part(INVALID, "; ".join(invalid), measured, runs, code="sanity_failed")
    if len(series) < check.min_points:
        have = ", ".join(map(str, series)) or "none"
        why = (f"needs {check.min_points} world sizes ({check.world_sizes.describe()}) with data to judge a trend, "
               f"has {len(series)} ({have})")
        if notes:
            why += "; " + "; ".join(notes)
        return Part(NOT_RUN, why, measured, runs, code="too_few_points")
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
    return Part(PASS if ok else FAIL, text, measured, runs, within=ok)


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
        "check": check.name, "world_size": ws, "instead_of": [wanted], "measured": _jsonable(part.measured),
        "within_bounds": part.within, "why": part.reason, "reason": _indicative_reason(ws, [wanted], part.reason),
    }


def _indicative_reason(ws: int, instead_of: list[int], why: str) -> str:
    """The sentence of an indicative figure (written from its fields: its readers take ``why``)."""
    return f"indicative only (world size {ws}, not the claim's {', '.join(map(str, instead_of))}): {why}"


def evaluate_claim(ctx: Context, claim: Claim) -> dict[str, Any]:
    checks_out: list[dict] = []
    measured: dict[str, dict] = {}
    runs: list[str] = []
    indicative: list[dict] = []
    for check in claim.checks:
        if check.test == "monotone":
            sizes = check.world_sizes.resolve(ctx.measured)
            part = evaluate_monotone(ctx, claim, check)
            checks_out.append({"name": check.name, "what": check.what, "metric": check.metric,
                               "world_size": sizes, "verdict": part.verdict, "code": part.code, "reason": part.reason,
                               "measured": _jsonable(part.measured), "bounds": _jsonable(check.bounds()),
                               "runs": sorted(set(part.runs))})
            measured.setdefault("trend", {})[check.metric] = _jsonable(part.measured)
            runs += part.runs
            continue
        sizes = check.world_sizes.resolve(ctx.measured)
        if not sizes:
            checks_out.append({"name": check.name, "what": check.what, "metric": check.metric, "world_size": None,
                               "verdict": NOT_RUN, "code": "no_world_size", "at_least": check.world_sizes.at_least,
                               "bounds": _jsonable(check.bounds()), "measured": {}, "runs": [],
                               "reason": f"no measured world size is {check.world_sizes.describe().replace('every measured world size ', '')} "
                                         f"(measured: {', '.join(map(str, ctx.measured)) or 'none'})"})
            continue
        for ws in sizes:
            part = evaluate_at(ctx, claim, check, ws)
            checks_out.append({"name": check.name, "what": check.what, "metric": check.metric, "world_size": ws,
                               "verdict": part.verdict, "code": part.code, "reason": part.reason,
                               "measured": _jsonable(part.measured),
                               "bounds": _jsonable(check.bounds()), "runs": sorted(set(part.runs))})
            if part.measured:
                measured.setdefault(str(ws), {}).update(_jsonable(part.measured))
            runs += part.runs
            if claim.indicative and part.verdict == NOT_RUN and _entry(ctx.metrics, ws) is None:
                ind = _indicative(ctx, claim, check, ws)
                same = next((i for i in indicative if ind and (i["check"], i["world_size"]) == (ind["check"], ind["world_size"])), None)
                if same:  # one figure stands in for several missing world sizes (C6: 4 and 8)
                    same["instead_of"].append(ws)
                    same["reason"] = _indicative_reason(same["world_size"], same["instead_of"], same["why"])
                elif ind:
                    indicative.append(ind)
    verdicts = {c["verdict"] for c in checks_out}
    verdict = next(v for v in PRECEDENCE if v in verdicts)
    # the reason: the parts that decided the verdict first, then the rest
    deciding = [c for c in checks_out if c["verdict"] == verdict]
    rest = [c for c in checks_out if c["verdict"] != verdict]
    reason = "; ".join(f"[{c['verdict']}] {c['reason']}" for c in deciding + rest)
    out = {
        "id": claim.id,
        "title": claim.title,
        "verdict": verdict,
        "statement": claim.statement,
        "world_sizes": claim.world_sizes.as_json(),
        "measured": measured,
        "bounds": {c.name: _jsonable(c.bounds()) | {"metric": c.metric, "what": c.what} for c in claim.checks},
        "runs": sorted(set(runs)),
        "reason": reason,
        "checks": checks_out,
        "indicative": indicative or None,
    }
    return out


def evaluate(metrics: dict, claims: list[Claim], bounds: SanityBounds | None = None) -> dict[str, Any]:
    """Verdicts for every claim (the content of verdicts.json, without file provenance)."""
    if not isinstance(metrics, dict) or not isinstance(metrics.get("world_sizes"), dict):
        raise ArtifactError("metrics has no 'world_sizes' object: not a metrics.json written by analyze")
    sanity = sanity_rows(metrics, bounds)
    ctx = Context(metrics, measured_world_sizes(metrics), {r["world_size"]: r for r in sanity})
    results = [evaluate_claim(ctx, c) for c in claims]
    counts = {v: sum(1 for r in results if r["verdict"] == v) for v in VERDICTS}
    return {
        "schema": VERDICTS_SCHEMA,
        "claims": results,
        "sanity": sanity,
        "summary": {"counts": counts, "measured_world_sizes": ctx.measured, "label": metrics.get("label"),
                    "fallbacks": [_fallback_text(f) for f in metrics.get("fallbacks") or []]},
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


# ---------------------------------------------------------------------------------------------
# Readable table


def _measured_text(check: dict) -> str:
    m = check.get("measured") or {}
    if check["bounds"]["test"] == "top":
        if "ratio" in m:
            return f"ratio {_fmt(m['ratio'])}"
        return "-"
    if check["bounds"]["test"] == "monotone":
        pts = [f"{k}:{_fmt(v)}" for k, v in m.items() if k.isdigit()]
        return " ".join(pts) or "-"
    v = m.get(check["metric"], "-")
    return _fmt(v) if v != "-" else "-"


def format_table(verdicts: dict, width: int = 100) -> str:
    lines: list[str] = []
    src = verdicts.get("sources") or {}
    if src:
        lines.append(f"claims:  {src.get('claims')}")
        lines.append(f"metrics: {src.get('metrics')}")
    if verdicts["summary"].get("label"):
        lines.append(f"results: {verdicts['summary']['label']}")
    for f in verdicts["summary"].get("fallbacks") or []:
        lines.append(f"FALLBACK {f}")
    lines.append("")
    head = f"{'claim':<6}{'verdict':<9}{'check':<22}{'ws':<8}{'measured':<22}{'bounds':<30}"
    lines += [head, "-" * len(head)]
    wrap = textwrap.TextWrapper(width=width, initial_indent="      ", subsequent_indent="      ")
    for c in verdicts["claims"]:
        lines.append(f"{c['id']:<6}{c['verdict']:<9}{(c.get('title') or '')[:70]}")
        for ch in c["checks"]:
            ws = ch["world_size"]
            ws_text = "-" if not ws else (",".join(map(str, ws)) if isinstance(ws, list) else str(ws))
            b = ch["bounds"]
            bounds = _bounds_text(b)
            lines.append(f"{'':<6}{ch['verdict']:<9}{ch['name'][:21]:<22}{ws_text[:7]:<8}{_measured_text(ch)[:21]:<22}{bounds[:30]:<30}")
        reasons = list(dict.fromkeys(ch["reason"] for ch in c["checks"]))
        lines += wrap.wrap("why: " + "; ".join(reasons))
        for ind in c.get("indicative") or []:
            instead = ", ".join(map(str, ind["instead_of"]))
            lines += wrap.wrap(f"INDICATIVE (not a verdict) at world size {ind['world_size']} instead of {instead}: "
                               + ind["why"])
        lines.append("")
    lines.append("Sanity (traced run of each world size)")
    lines.append(f"{'ws':<5}{'run':<22}" + "".join(f"{SANITY_SHORT[k]:<14}" for k in SANITY_ITEMS))
    for row in verdicts["sanity"]:
        if not row["checks"]:
            lines.append(f"{row['world_size']:<5}{str(row['run'] or '-'):<22}{row.get('note', '')}")
            continue
        lines.append(f"{row['world_size']:<5}{str(row['run'] or '-')[:21]:<22}"
                     + "".join(f"{row['checks'].get(k, '-'):<14}" for k in SANITY_ITEMS))
        for p in row["problems"]:
            lines += wrap.wrap(f"problem: {p}")
    counts = verdicts["summary"]["counts"]
    lines.append("")
    lines.append("Summary: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
                 + f" of {len(verdicts['claims'])} claims")
    return "\n".join(lines) + "\n"


def _bounds_text(b: dict) -> str:
    t = b["test"]
    if t == "equals":
        return f"== {_fmt(b['value'])}"
    if t == "monotone":
        return f"non-decreasing, drop<={b['max_drop_rel']:.0%}"
    lo = "-inf" if b.get("lo") is None else _fmt(b["lo"])
    hi = "+inf" if b.get("hi") is None else _fmt(b["hi"])
    text = f"== {lo}" if b.get("lo") is not None and b.get("lo") == b.get("hi") else f"[{lo}, {hi}]"
    return ("ratio " + text) if t == "top" else text


# ---------------------------------------------------------------------------------------------
# Files and the command line


def default_claims_path() -> Path:
    """``expected/claims.toml`` here, else the one of the source tree this package runs from."""
    here = Path("expected") / "claims.toml"
    if here.is_file():
        return here
    tree = Path(__file__).resolve().parents[2] / "expected" / "claims.toml"
    return tree if tree.is_file() else here


def load_metrics(results: str | Path) -> tuple[dict, Path]:
    results = Path(results)
    path = results if results.suffix == ".json" else results / "metrics.json"
    if not path.is_file():
        raise ArtifactError("no metrics.json (run `dnabert-scaling analyze ... --out RESULTS` first)", path)
    try:
        metrics = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ArtifactError(f"not valid JSON: {exc}", path) from None
    from dnabert_scaling.metrics_schema import validate_metrics

    return validate_metrics(metrics, path), path


def check_results(results: str | Path, claims_path: str | Path | None = None) -> dict[str, Any]:
    """Verdicts of one results folder, with the files they came from."""
    claims_path = Path(claims_path) if claims_path else default_claims_path()
    claims = load_claims(claims_path)
    bounds = load_sanity_bounds(claims_path)
    metrics, metrics_path = load_metrics(results)
    verdicts = evaluate(metrics, claims, bounds)
    verdicts["sources"] = {
        "metrics": str(metrics_path),
        "metrics_created": metrics.get("created"),
        "claims": str(claims_path),
        "claims_sha256": hashlib.sha256(claims_path.read_bytes()).hexdigest(),
    }
    return verdicts


def write_verdicts(verdicts: dict, out: Path, strict: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    verdicts["summary"]["strict"] = strict
    verdicts["summary"]["exit_status"] = exit_status(verdicts, strict)
    (out / "verdicts.json").write_text(json.dumps(_jsonable(verdicts), indent=2, allow_nan=False) + "\n")
    (out / "verdicts.txt").write_text(format_table(verdicts))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, help="results folder written by `analyze` (or its metrics.json)")
    p.add_argument("--expected", type=Path, default=None,
                   help="claims file (default: expected/claims.toml here, else the source tree's)")
    p.add_argument("--strict", action="store_true", help="exit 1 also when a claim is NOT RUN")
    p.add_argument("--out", type=Path, default=None,
                   help="where verdicts.json / verdicts.txt go (default: the results folder)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")


def run(args: argparse.Namespace) -> int:
    from dnabert_scaling.outputs import writable_dir

    out = args.out or (args.results.parent if args.results.suffix == ".json" else args.results)
    writable_dir(out, "--out" if args.out else "results folder (verdicts.json goes there; or give --out)")
    verdicts = check_results(args.results, args.expected)
    write_verdicts(verdicts, out, args.strict)
    if not args.quiet:
        sys.stdout.write(format_table(verdicts))
    rc = verdicts["summary"]["exit_status"]
    print(f"check: wrote {out / 'verdicts.json'} and {out / 'verdicts.txt'} (exit status {rc})", file=sys.stderr)
    return rc
