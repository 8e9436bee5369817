"""The claims file (``expected/claims.toml``): parsing and validating claims, checks and sanity bounds."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError, hidden_character, read_text_file
from dnabert_scaling.checker.names import CLAIMS_SCHEMA, _fmt
from dnabert_scaling.checker.metric_paths import _metric_node, activity_problem, kinds_text, metric_kinds, string_problem
from dnabert_scaling.checker.placement import MAGNITUDE, RESTS_ON


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

    def within(self, other: WorldSizes) -> bool:
        """Whether every world size this names is one ``other`` names."""
        if other.explicit is not None:
            return self.explicit is not None and set(self.explicit) <= set(other.explicit)
        floor = other.at_least or 1
        return min(self.explicit) >= floor if self.explicit is not None else (self.at_least or 1) >= floor


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
    rests_on: str = "magnitude"  # "structure": still judged where ranks shared a GPU (checker/placement.py)

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
_CHECK_KEYS = {
    "name",
    "what",
    "metric",
    "test",
    "rationale",
    "world_sizes",
    "lo",
    "hi",
    "value",
    "activity",
    "max_drop_rel",
    "min_points",
    "report",
    "rests_on",
}
_TEST_KEYS = {
    "range": {"lo", "hi"},
    "equals": {"value"},
    "top": {"activity", "lo", "hi"},
    "monotone": {"max_drop_rel", "min_points"},
}
# The kinds of value each test judges (``top`` reads the ranking, a list of its own: checked by
# name). A metric that may hold any other kind is refused at load time: a range on a string, a
# trend of a list, could never be judged, and their failure would read as a measured FAIL.
_TEST_OPERANDS = {"range": {"number"}, "monotone": {"number"}, "equals": {"bool", "number", "string"}}
_TOP_KEYS = {"schema", "paper", "notes", "claim", "sanity"}
_SANITY_BOUND_KEYS = {"trace_complete": {"min_found_share", "rationale"}, "one_gpu_per_rank": {"rationale"}}
# A claim id and a check name are labels: a column of verdicts.txt, a key of verdicts.json, an
# anchor in the report, a word in every message. Letters, digits, '_', '.' and '-' only (no
# newline to break the table, no markup, no space to misread).
_LABEL = re.compile(r"[A-Za-z0-9_.-]+")
_LABEL_RULE = "one or more letters, digits, '_', '.' or '-'"


def _is_label(x: Any) -> bool:
    return isinstance(x, str) and _LABEL.fullmatch(x) is not None


@dataclass(frozen=True)
class SanityBounds:
    """The bounds of the sanity checks that have one (``[sanity.<item>]`` in the claims file)."""

    trace_complete_min_share: float = 0.999
    rationale: dict[str, str] = field(default_factory=dict)
    source: str = "default (the claims file sets no [sanity.trace_complete])"


def _read_toml(path: Path) -> dict:
    text = read_text_file(path, "a claims file", missing="claims file not found")
    if text.startswith("\ufeff"):  # tomllib says only "Invalid statement (at line 1, column 1)"
        raise ArtifactError(
            "not valid TOML: the file starts with a UTF-8 byte order mark (BOM), which the TOML reader "
            "(tomllib) refuses; save it as UTF-8 without a BOM",
            path,
        )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ArtifactError(f"not valid TOML: {exc}", path) from None


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
    rationale = {"trace_complete": " ".join(tc["rationale"].split())}
    one_gpu = raw.get("one_gpu_per_rank")
    if one_gpu is not None:
        if not isinstance(one_gpu, dict) or set(one_gpu) != {"rationale"} or not str(one_gpu["rationale"]).strip():
            raise ArtifactError("[sanity.one_gpu_per_rank]: needs exactly one key, 'rationale' (a non-empty string)", path)
        rationale["one_gpu_per_rank"] = " ".join(str(one_gpu["rationale"]).split())
    return SanityBounds(float(share), rationale, str(path))


def load_sanity_bounds(path: str | Path) -> SanityBounds:
    """The sanity bounds of a claims file (``[sanity.trace_complete] min_found_share``)."""
    path = Path(path)
    data = _read_toml(path)
    if data.get("schema") != CLAIMS_SCHEMA:  # an empty or foreign file would give the default bound unsaid
        raise ArtifactError(f"schema must be {CLAIMS_SCHEMA!r}, not {data.get('schema')!r}: not a claims file", path)
    return _parse_sanity(data.get("sanity"), path)


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
    raise ArtifactError(
        f"{where}: world_sizes must be a non-empty list of world sizes (e.g. [4, 8]) "
        f'or ">=N" (every measured world size from N), not {raw!r}',
        path,
    )


def _check_reach(where: str, metric: str, test: str, min_points: int, ws: WorldSizes, claim_ws: WorldSizes, path: Path) -> None:
    """A check judges the claim where the claim speaks, and where it can judge something."""
    at_one = 1 in (ws.explicit or ()) or (ws.explicit is None and (ws.at_least or 1) <= 1)
    if metric.split(".")[0].startswith("efficiency") and at_one:
        raise ArtifactError(
            f"{where}: {metric} at world size 1 divides world size 1 by itself (1 by definition): "
            "a check there judges nothing; give world sizes from 2",
            path,
        )
    if test == "monotone" and ws.explicit is not None and min_points > len(ws.explicit):
        raise ArtifactError(
            f"{where}: min_points {min_points} exceeds the {len(ws.explicit)} world size(s) it may use "
            f"({ws.describe()}): the check could never be judged",
            path,
        )
    if not ws.within(claim_ws):
        raise ArtifactError(
            f"{where}: world_sizes {ws.describe()} reach beyond the claim's ({claim_ws.describe()}): "
            "a check judges the claim only where the claim speaks",
            path,
        )


def _parse_check(raw: Any, claim_id: str, index: int, claim_ws: WorldSizes, path: Path) -> Check:
    where = f"claim {claim_id}, check {index + 1}"
    if not isinstance(raw, dict):
        raise ArtifactError(f"{where}: a check must be a table ([[claim.check]])", path)
    if "name" in raw:
        if not _is_label(raw["name"]):
            raise ArtifactError(f"{where}: name {raw['name']!r} must be {_LABEL_RULE}", path)
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
            raise ArtifactError(
                f"{where}: test 'top' reads the ranking: metric must be 'traced.gpu.ranking', not {metric!r}", path
            )
    else:
        ok, problem = _metric_node(metric)
        if not ok:
            raise ArtifactError(f"{where}: {problem}", path)
        _check_operand(test, metric, where, path)
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
    if test == "equals":
        _check_equals_value(raw, metric, where, path)
    if test == "top" and (not isinstance(raw.get("activity"), str) or not raw["activity"]):
        raise ArtifactError(f"{where}: test 'top' needs 'activity' (e.g. \"nccl:AllReduce\")", path)
    if test == "top" and activity_problem(raw["activity"]):
        raise ArtifactError(f"{where}: {activity_problem(raw['activity'])}", path)
    drop, min_points = raw.get("max_drop_rel"), raw.get("min_points", 2)
    if test == "monotone":
        if drop is None or not _is_number(drop) or not 0 <= drop < 1:
            raise ArtifactError(f"{where}: test 'monotone' needs max_drop_rel, a number in [0, 1)", path)
        if not isinstance(min_points, int) or isinstance(min_points, bool) or min_points < 2:
            raise ArtifactError(f"{where}: min_points must be an integer >= 2", path)
    ws = _parse_world_sizes(raw["world_sizes"], where, path) if "world_sizes" in raw else claim_ws
    _check_reach(where, metric, test, min_points, ws, claim_ws, path)
    rests_on = raw.get("rests_on", MAGNITUDE)
    if rests_on not in RESTS_ON:
        raise ArtifactError(f"{where}: rests_on must be one of {', '.join(RESTS_ON)}, not {rests_on!r}", path)
    return Check(
        name=raw.get("name", f"check{index + 1}"),
        what=raw["what"].strip(),
        metric=metric,
        test=test,
        rationale=" ".join(raw["rationale"].split()),
        world_sizes=ws,
        lo=lo,
        hi=hi,
        value=raw.get("value"),
        activity=raw.get("activity"),
        max_drop_rel=drop,
        min_points=min_points,
        report=tuple(report),
        rests_on=rests_on,
    )


def _check_operand(test: str, metric: str, where: str, path: Path) -> None:
    """The metric holds only kinds of value the test judges (null aside: a missing value is NOT RUN)."""
    accepts = _TEST_OPERANDS[test]
    holds = metric_kinds(metric) - {"null"}
    if holds - accepts:
        raise ArtifactError(f"{where}: test {test!r} needs {kinds_text(accepts)}; {metric} is {kinds_text(holds)}", path)


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if _is_number(value):
        return "number"
    return {str: "string", list: "list", dict: "object"}.get(type(value), type(value).__name__)


def _check_equals_value(raw: dict, metric: str, where: str, path: Path) -> None:
    """An ``equals`` value must be one the metric can hold (a number for a number, true/false for
    a flag: TOML's ``0`` against a recorded ``0.0`` is the same number, ``"true"`` is not a flag; a
    string the metric's writer writes, where it writes one of a few: ``metric_paths.known_strings``)
    and, when a number, finite: ``nan`` equals nothing, so a check with it could never pass."""
    if "value" not in raw:
        raise ArtifactError(f"{where}: test 'equals' needs 'value'", path)
    value = raw["value"]
    kind = _value_kind(value)
    if kind not in ("bool", "number", "string"):
        raise ArtifactError(f"{where}: value must be true/false, a number or a string, not {kind} {value!r}", path)
    if kind == "number" and not math.isfinite(value):
        raise ArtifactError(f"{where}: value must be a finite number, not {value!r}", path)
    if kind == "string" and not value.isprintable():  # a newline in the bounds would break verdicts.txt
        raise ArtifactError(f"{where}: value {value!r} holds a line break or another control character", path)
    kinds = metric_kinds(metric) - {"null"}
    if kinds and kind not in kinds:
        raise ArtifactError(
            f"{where}: value {value!r} is {'a ' + kind if kind != 'bool' else 'true/false'}, but {metric} holds "
            f"{' or '.join(sorted(kinds))}: the check could never pass",
            path,
        )
    problem = string_problem(metric, value) if kind == "string" else ""
    if problem:
        raise ArtifactError(f"{where}: {problem}: the check could never pass", path)


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
        where = f"claim {cid}" if _is_label(cid) else f"claim #{i + 1}"
        if not isinstance(raw, dict):
            raise ArtifactError(f"{where}: must be a table", path)
        unknown = sorted(set(raw) - _CLAIM_KEYS)
        if unknown:
            raise ArtifactError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_CLAIM_KEYS))})", path)
        for key in ("id", "statement"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise ArtifactError(f"{where}: missing field {key!r} (a non-empty string)", path)
        if not _is_label(cid):
            raise ArtifactError(f"{where}: id {cid!r} must be {_LABEL_RULE}", path)
        if cid in seen:
            raise ArtifactError(f"{where}: duplicate claim id", path)
        seen.add(cid)
        if "world_sizes" not in raw:
            raise ArtifactError(f"{where}: missing field 'world_sizes'", path)
        ws = _parse_world_sizes(raw["world_sizes"], where, path)
        device = raw.get("device")
        if device is not None and device not in ("cuda", "cpu"):
            raise ArtifactError(f"{where}: device must be 'cuda' or 'cpu', not {device!r}", path)
        title = raw.get("title", "")
        if not isinstance(title, str):
            raise ArtifactError(f"{where}: title must be a string, not {title!r}", path)
        for name, text in (("title", " ".join(title.split())), ("statement", " ".join(str(raw["statement"]).split()))):
            hidden = hidden_character(text)  # line breaks are collapsed; what is left is shown in tables and terminals
            if hidden:
                raise ArtifactError(f"{where}: {name} holds {hidden}: a {name} is plain visible text", path)
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
        claims.append(
            Claim(
                id=cid,
                statement=" ".join(raw["statement"].split()),
                world_sizes=ws,
                checks=checks,
                title=" ".join(title.split()),  # one line: the table's row of the claim
                device=device,
                indicative=indicative,
            )
        )
    return claims
