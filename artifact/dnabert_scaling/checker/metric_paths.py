"""The metric paths a claim may name: the tree of one world size's entry in ``metrics.json``.

Derived from ``metrics_schema.WorldSizeEntry``, so a path is allowed exactly when analyze can
write it. A leaf is None; a STAT is {"median", "p10", "p90", "min", "max", "n"} and must be named
down to one of its fields. Also the activities a ``top`` test may name (``RANKED_ACTIVITIES``),
derived from how ``traces.classify`` names the ranking's NCCL kernels, and the strings a metric of
a few named values can hold (``known_strings``), taken from the modules that write them.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from typing import Any

from dnabert_scaling.metrics_schema import Record, WorldSizeEntry, _options, field_tree
from dnabert_scaling.traces.classify import _COLLECTIVE_SEARCH, nccl_activity, normalize_collective

# one world size's entry, as metrics_schema defines it: a record is a dict of its keys, a value None
METRIC_TREE: dict[str, Any] = field_tree(WorldSizeEntry)


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


def metric_kinds(path: str) -> set[str]:
    """The JSON kinds ("bool", "number", "string", "list", "object", "null") a known leaf metric
    path may hold, from its annotation in ``metrics_schema`` (empty for a path that is not a leaf)."""
    hint: Any = WorldSizeEntry
    for part in path.split("."):
        record = next((h for h in _options(hint) if isinstance(h, type) and issubclass(h, Record)), None)
        if record is None:
            return set()
        fields = {record.json_keys.get(f.name, f.name): f.name for f in dataclasses.fields(record)}
        if part not in fields:
            return set()
        hint = typing.get_type_hints(record)[fields[part]]
    return {_KIND.get(typing.get_origin(h) or h, "object") for h in _options(hint)}


_KIND: dict[Any, str] = {bool: "bool", int: "number", float: "number", str: "string", list: "list", dict: "object"}
_KIND[type(None)] = "null"

_KIND_WORDS = {"bool": "true/false", "number": "a number", "string": "a string", "list": "a list", "object": "an object"}


def kinds_text(kinds: set[str]) -> str:
    """Kinds in words: ``{"bool", "string"}`` -> "true/false or a string" (null left out: a null
    value is a missing one, NOT RUN whatever the test)."""
    words = [_KIND_WORDS[k] for k in _KIND_WORDS if k in kinds]
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else (words or ["null"])[0]


# The ranking's names of NCCL kernels (``traces.classify.nccl_activity``): ``nccl:<Collective>`` for
# every collective the trace readers name, the integer AllReduce of find_unused_parameters apart,
# and ``nccl:unknown`` for a kernel whose collective neither its name nor the trace states. Other
# kernels rank under their own demangled names, which depend on the GPU and on the CUDA, cuBLAS
# and PyTorch builds: no list can tell a misspelt one from one that did not run, so a ``top``
# test names one of these, and a typo is refused when the claims file is loaded, never judged.
RANKED_ACTIVITIES: tuple[str, ...] = tuple(
    dict.fromkeys(
        [nccl_activity("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "AllReduce")]
        + [nccl_activity("ncclDevKernel_AllReduce_Sum_u32_RING_LL", "AllReduce")]
        + [nccl_activity("", normalize_collective(word)) for word in _COLLECTIVE_SEARCH]
        + [nccl_activity("", None)]
    )
)


def activity_problem(activity: str) -> str:
    """Why ``activity`` is not a name a ``top`` test may use ('' when it is one)."""
    if activity in RANKED_ACTIVITIES:
        return ""
    folded = {a.lower().removeprefix("nccl:"): a for a in RANKED_ACTIVITIES}
    near = [folded[k] for k in (activity.lower().removeprefix("nccl:"),) if k in folded]
    near = near or difflib.get_close_matches(activity, RANKED_ACTIVITIES, n=1, cutoff=0.85)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return (
        f"unknown activity {activity!r}{hint}: test 'top' names an NCCL collective as the ranking does, one of "
        f"{', '.join(RANKED_ACTIVITIES)} (other kernels rank under names that depend on the GPU and the "
        "libraries, and kernel classes are not ranked: a claim cannot name them)"
    )


# The string-valued leaves whose strings are free text (a run's name, a note, a reason, a sentence whose
# wording differs between versions of analyze): an ``equals`` on one is judged as written. Every other
# string-valued leaf holds one of a few named values (``_string_values``); a test keeps the two covering
# every string-valued leaf of the schema, so a new one is sorted into one or the other.
FREE_TEXT = frozenset(
    {
        "traced.run",
        "traced.gpu.busy_wait.note",
        "busy_wait.note",
        "traced.gpu_not_run_reason",
        "traced.completeness.reason",
        "dilation_kind",
        "efficiency_baseline",
    }
)


@functools.cache
def _string_values() -> dict[str, tuple[str, ...]]:
    """The strings analyze writes at each string-valued leaf that holds one of a few named values, from
    the constants of the modules that write them (imported here, when a claim first asks)."""
    from dnabert_scaling.analysis.completeness import COMPLETE, INCOMPLETE, UNKNOWN
    from dnabert_scaling.analysis.skew import COMMON, PER_RANK
    from dnabert_scaling.traces.loader import TRACED_BY

    devices = ("cuda", "cpu")  # train's devices (run.train.rank._device)
    return {
        "traced.tracer": TRACED_BY,
        "traced.format": ("kineto", "otf2"),  # traces.loader.trace_format
        # torch.profiler's mode (run.tracing.torch_profiler): the device, "+cpu-ops" when operators are recorded
        "traced.trace_mode": tuple(d + ops for d in devices for ops in ("", "+cpu-ops")),
        "traced.device_type": devices,
        "traced.placement.identity": ("uuid", "host+visible+index", "unknown"),  # analysis.placement._gpu_key
        # analysis.attribution.attribute: the method that placed most activities
        "traced.gpu.phase_method": ("correlation", "before-recording", "stream-order", "time-window"),
        "traced.gpu.rank_skew.clock": (COMMON, PER_RANK),
        "traced.completeness.status": (COMPLETE, INCOMPLETE, UNKNOWN),
        "traced.sanity.trace_complete": (UNKNOWN,),
        "throughput.source": ("untraced", "trace"),  # analysis.metrics: untraced runs, else the trace
        "throughput.device_type": devices,
    }


def known_strings(path: str) -> tuple[str, ...] | None:
    """The strings the metric at ``path`` can hold where it holds one of a few named values; None for a
    metric of free text (``FREE_TEXT``) or one that holds no string."""
    return _string_values().get(path)


def string_problem(path: str, value: str) -> str:
    """Why ``value`` is not a string the metric at ``path`` can hold ('' when it can be)."""
    known = known_strings(path)
    if known is None or value in known:
        return ""
    near = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return f"value {value!r} is not a string {path} can hold{hint}; its strings: {', '.join(map(repr, known))}"
