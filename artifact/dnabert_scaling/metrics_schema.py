"""Structure check of a ``metrics.json`` before ``check`` or ``report`` reads it.

``analyze`` writes the structure described in docs/design.md ("Metrics"). A file that does not
have it (edited by hand, cut short, from another tool) would otherwise be read with defaults:
an entry under key ``"8"`` measured on one GPU would give verdicts "at world size 8", a string
where an object belongs would end the report's notebook with a traceback. ``validate_metrics``
refuses such a file with an :class:`ArtifactError` naming the file and the key.

Self-contained on purpose: it knows the layout, not the analysis that fills it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError

SCHEMA = "dnabert-scaling/metrics/1"
STAT_FIELDS = ("median", "p10", "p90", "min", "max")
# per world size: key -> the types it may hold (None: JSON null)
ENTRY_FIELDS: dict[str, tuple[type | None, ...]] = {
    "traced": (dict, None),
    "throughput": (dict, None),
    "throughput_noddp": (dict, None),
    "busy_wait": (dict, None),
    "efficiency": (float, None),
    "efficiency_vs_noddp": (float, None),
    "dilation": (float, None),
    "efficiency_baseline": (str, dict, None),
}
TRACED_FIELDS: dict[str, tuple[type | None, ...]] = {
    "gpu": (dict, None),
    "sanity": (dict,),
    "ranks": (list,),
    "run": (str,),
    "measured_steps": (int, None),
    "gpu_not_run_reason": (str, None),
}
# suffixes of the traced.gpu keys that hold a STAT (or null)
STAT_SUFFIXES = ("_s", "_share", "_per_step", "_ratio", "_to_backward")
THROUGHPUT_STATS = ("samples_per_s", "step_time_s")


def _is(value: Any, kinds: tuple[type | None, ...]) -> bool:
    for kind in kinds:
        if kind is None and value is None:
            return True
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind not in (None, float, int) and isinstance(value, kind):
            return True
    return False


def _names(kinds: tuple[type | None, ...]) -> str:
    words = {None: "null", dict: "an object", list: "a list", str: "a string", float: "a number", int: "an integer"}
    return " or ".join(words[k] for k in kinds)


def _check_fields(obj: dict, fields: dict, where: str, path: Path) -> None:
    for key, kinds in fields.items():
        if key in obj and not _is(obj[key], kinds):
            raise ArtifactError(f"{where}.{key} must be {_names(kinds)}, not {type(obj[key]).__name__} {_short(obj[key])}", path)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_stat(value: Any, where: str, path: Path) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise ArtifactError(
            f"{where} must be a statistic object ({{median, p10, p90, min, max, n}}) or null, "
            f"not {type(value).__name__} {_short(value)}",
            path,
        )
    if "median" not in value or "n" not in value:
        raise ArtifactError(f"{where} lacks 'median' or 'n': not a statistic object", path)
    for key in STAT_FIELDS:
        if key in value and value[key] is not None:
            v = value[key]
            if not _is(v, (float,)):  # NaN is a number here: the checker turns it into INVALID
                raise ArtifactError(f"{where}.{key} must be a number, not {_short(v)}", path)
    if not _is(value["n"], (int,)) or value["n"] < 0:
        raise ArtifactError(f"{where}.n must be a count (integer >= 0), not {_short(value['n'])}", path)


def _world_size_key(key: Any, path: Path) -> int:
    if not isinstance(key, str) or not key.isdigit() or str(int(key)) != key or int(key) < 1:
        raise ArtifactError(f'world_sizes key {key!r} is not a world size (a positive integer like "8")', path)
    return int(key)


def validate_metrics(metrics: Any, path: str | Path) -> dict:
    """``metrics`` when it has the structure ``analyze`` writes; else an error naming the key."""
    path = Path(path)
    if not isinstance(metrics, dict):
        raise ArtifactError(f"expected a JSON object at the top, not {type(metrics).__name__}", path)
    if metrics.get("schema") != SCHEMA:
        raise ArtifactError(
            f"'schema' is {_short(metrics.get('schema'))}, not {SCHEMA!r}: not a metrics.json written by this version of analyze",
            path,
        )
    sizes = metrics.get("world_sizes")
    if not isinstance(sizes, dict):
        raise ArtifactError("no 'world_sizes' object: not a metrics.json written by analyze", path)
    for key, entry in sizes.items():
        n = _world_size_key(key, path)
        where = f"world_sizes[{key!r}]"
        if not isinstance(entry, dict):
            raise ArtifactError(f"{where} must be an object, not {type(entry).__name__} {_short(entry)}", path)
        if not _is(entry.get("world_size"), (int,)) or entry["world_size"] != n:
            raise ArtifactError(
                f"{where}.world_size is {_short(entry.get('world_size'))}: an entry's world_size must equal its key {n}", path
            )
        _check_fields(entry, ENTRY_FIELDS, where, path)
        traced = entry.get("traced")
        if traced is not None:
            _check_fields(traced, TRACED_FIELDS, f"{where}.traced", path)
            gpu = traced.get("gpu")
            for name, value in (gpu or {}).items():
                if name.endswith(STAT_SUFFIXES):
                    _check_stat(value, f"{where}.traced.gpu.{name}", path)
        for block in ("throughput", "throughput_noddp"):
            for name in THROUGHPUT_STATS:
                if entry.get(block) and name in entry[block]:
                    _check_stat(entry[block][name], f"{where}.{block}.{name}", path)
    measured = metrics.get("measured_world_sizes")
    if measured is not None and (not isinstance(measured, list) or not all(_is(x, (int,)) for x in measured)):
        raise ArtifactError(f"measured_world_sizes must be a list of integers, not {_short(measured)}", path)
    return metrics
