"""The shape of ``metrics.json``, written once: typed records that ``analyze`` builds and every later
stage reads through.

``analyze`` fills a :class:`MetricsFile` and writes ``MetricsFile.to_json()``; ``check`` and
``report`` read a file with :func:`validate_metrics`, which builds the records with
``MetricsFile.from_json`` and so refuses a file that does not have this shape (edited by hand, cut
short, from another tool) with an :class:`ArtifactError` naming the file and the key path, e.g.
``world_sizes['8'].traced.gpu.idle_s.median must be a number``. Without the check such a file would
be read with defaults: an entry under key ``"8"`` measured on one GPU would give verdicts "at world
size 8", a string where an object belongs would end the report's notebook with a traceback.

The checker's allowed metric paths (``checker.metric_paths.METRIC_TREE``) are derived from
:class:`WorldSizeEntry` by :func:`field_tree`; the test fixtures build these records too. Column
meanings are in docs/design.md ("Metrics").

Self-contained on purpose: it knows the layout, not the analysis that fills it. The conversion is
driven by the field annotations: ``to_json`` writes the fields in their order (a field marked
``omit_none`` is left out when it is None); ``from_json`` checks every value against its
annotation, refuses keys the record does not have, and takes a missing key as its default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar, Union

from dnabert_scaling import metrics_invariants as invariants
from dnabert_scaling.errors import ArtifactError

SCHEMA = "dnabert-scaling/metrics/1"
STAT_FIELDS = ("median", "p10", "p90", "min", "max", "n")

R = TypeVar("R", bound="Record")


def _omit_none() -> Any:
    """A field that ``to_json`` leaves out when it is None (a key older writers never wrote)."""
    return field(default=None, metadata={"omit_none": True})


class Record:
    """Base of the records: JSON conversion from the dataclass fields and their annotations."""

    json_keys: ClassVar[dict[str, str]] = {}  # field name -> JSON key, where they differ

    def _omitted(self, name: str, value: Any) -> bool:
        f = next(f for f in dataclasses.fields(self) if f.name == name)  # type: ignore[arg-type]
        return value is None and bool(f.metadata.get("omit_none"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if not self._omitted(f.name, value):
                out[self.json_keys.get(f.name, f.name)] = _to_json(value)
        return out

    @classmethod
    def from_json(cls: type[R], value: Any, where: str = "", path: Path | None = None) -> R:
        """The record that ``value`` (a parsed JSON object) describes; ArtifactError at the first
        value that does not fit, naming its key path (``where`` is the path of ``value`` itself)."""
        if not isinstance(value, dict):
            raise _error(where, f"must be {_describe(cls)}, not {_kind_of(value)}", path)
        hints = typing.get_type_hints(cls)
        keys = {cls.json_keys.get(f.name, f.name): f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = [k for k in value if k not in keys]
        if unknown:
            raise _error(where, f"has no key {unknown[0]!r} in this schema (it has: {', '.join(keys)})", path)
        kwargs: dict[str, Any] = {}
        for key, f in keys.items():
            here = f"{where}.{key}" if where else key
            if key in value:
                kwargs[f.name] = _from_json(hints[f.name], value[key], here, path)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise _error(where, f"lacks the key {key!r}", path)
        record = cls(**kwargs)
        record.check(where, path)
        invariants.numbers(record, where, path)
        return record

    def check(self, where: str, path: Path | None) -> None:
        """Rules beyond the field types (a subclass adds its own)."""


def _to_json(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


def _error(where: str, problem: str, path: Path | None) -> ArtifactError:
    return ArtifactError(f"{where or 'the top level'} {problem}", path)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _kind_of(value: Any) -> str:
    return f"{type(value).__name__} {_short(value)}"


def _options(hint: Any) -> tuple[Any, ...]:
    """The alternatives of ``X | Y | None`` (one alternative for a plain annotation)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def _describe(hint: Any) -> str:
    if hint is type(None):
        return "null"
    if isinstance(hint, type) and issubclass(hint, Record):
        return "a statistic object ({median, p10, p90, min, max, n})" if hint is Stat else "an object"
    origin = typing.get_origin(hint)
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object"}
    if origin in (list, dict):
        return words[origin]
    if len(_options(hint)) > 1:
        return " or ".join(_describe(h) for h in _options(hint))
    return words.get(hint, "any value")


def _fits(hint: Any, value: Any) -> bool:
    """Whether ``value`` has the JSON type of ``hint`` at its top (records and containers are
    then checked inside by ``_from_json``)."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # NaN is a number here: the checker turns it into INVALID
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    origin = typing.get_origin(hint)
    if origin is list:
        return isinstance(value, list)
    if origin is dict or (isinstance(hint, type) and issubclass(hint, Record)):
        return isinstance(value, dict)
    raise TypeError(f"metrics_schema: unsupported annotation {hint!r}")


def _from_json(hint: Any, value: Any, where: str, path: Path | None) -> Any:
    options = _options(hint)
    match = next((h for h in options if _fits(h, value)), None)
    if match is None:
        raise _error(where, f"must be {_describe(hint)}, not {_kind_of(value)}", path)
    if isinstance(match, type) and issubclass(match, Record):
        return match.from_json(value, where, path)
    origin = typing.get_origin(match)
    if origin is list:
        (item,) = typing.get_args(match)
        return [_from_json(item, v, f"{where}[{i}]", path) for i, v in enumerate(value)]
    if origin is dict:
        _, item = typing.get_args(match)
        return {str(k): _from_json(item, v, f"{where}[{k!r}]", path) for k, v in value.items()}
    return value


def field_tree(cls: type[Record]) -> dict[str, Any]:
    """The key tree of a record: a nested record is a dict of its keys, any other value None (a
    leaf). The checker takes its allowed metric paths from it."""
    hints = typing.get_type_hints(cls)
    tree: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        records = [h for h in _options(hints[f.name]) if isinstance(h, type) and issubclass(h, Record)]
        tree[cls.json_keys.get(f.name, f.name)] = field_tree(records[0]) if records else None
    return tree


def _doc_type(hint: Any) -> str:
    """An annotation in words for docs/design.md."""
    if hint is type(None):
        return "null"
    if isinstance(hint, type) and issubclass(hint, Record):
        return "STAT" if hint is Stat else f"`{hint.__name__}`"
    origin = typing.get_origin(hint)
    if origin is list:
        return f"list of {_doc_type(typing.get_args(hint)[0])}"
    if origin is dict:
        return f"object: key -> {_doc_type(typing.get_args(hint)[1])}"
    if len(_options(hint)) > 1:
        return " or ".join(_doc_type(h) for h in _options(hint))
    words = {bool: "bool", int: "integer", float: "number", str: "string", Any: "any"}
    return words[hint]


def markdown() -> str:
    """The records as docs/design.md shows them: one table of keys and types per record (a test
    keeps the document equal to this)."""
    lines: list[str] = []
    for cls in RECORDS:
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        doc = " ".join(doc.split()).replace("``", "`")
        lines += [f"`{cls.__name__}`" + (f": {doc}" if doc else ""), "", "| key | type |", "|---|---|"]
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            key = cls.json_keys.get(f.name, f.name)
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            note = " (required)" if required else (" (left out when null)" if f.metadata.get("omit_none") else "")
            lines.append(f"| `{key}` | {_doc_type(hints[f.name])}{note} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# ---- the records -----------------------------------------------------------------------------


@dataclass(kw_only=True)
class Stat(Record):
    """Median and spread over samples (``analysis.stats.stat``); a throughput taken from a trace
    carries only ``median`` and ``n``."""

    median: float
    p10: float | None = _omit_none()
    p90: float | None = _omit_none()
    min: float | None = _omit_none()
    max: float | None = _omit_none()
    n: int

    def check(self, where: str, path: Path | None) -> None:
        invariants.stat(self, where, path)


@dataclass(kw_only=True)
class KernelClassShare(Record):
    json_keys: ClassVar[dict[str, str]] = {"kernel_class": "class"}

    kernel_class: str
    sum_s_per_step: float
    count_per_step: float
    share: float
    example: str


@dataclass(kw_only=True)
class RankedActivity(Record):
    activity: str
    kind: str
    sum_s_per_step: float
    count_per_step: float
    share: float


@dataclass(kw_only=True)
class PhaseAgreement(Record):
    """Share of activities (and of GPU time) a method attributes to the same phase as correlation, on the
    trace without the activities launched before recording began; ``placed``: the share of that GPU time
    the method placed by itself, not by its time-window fallback."""

    activities: float | None = None
    time: float | None = None
    placed: float | None = None

    def check(self, where: str, path: Path | None) -> None:
        invariants.shares(self, ("activities", "time", "placed"), where, path)


@dataclass(kw_only=True)
class RankFigures(Record):
    """Medians of one rank: the figures whose imbalance matters."""

    rank: int
    step_time_s: float
    exposed_comm_s: float
    idle_s: float


@dataclass(kw_only=True)
class RankSkew(Record):
    allreduce_start_skew_s: Stat | None = None
    clock: str
    late_rank_share: dict[str, float] = field(default_factory=dict)
    buckets: int
    steps_skipped: int = 0


@dataclass(kw_only=True)
class BusyWait(Record):
    """AllReduce kernel time against the gradient buckets' transfer time at the measured busbw."""

    allreduce_kernel_s: float
    transfer_s_at_measured_busbw: float
    ratio: float
    busbw_GBps: float
    gradient_bytes: int | None = None
    buckets: int = 0
    note: str = ""


@dataclass(kw_only=True)
class GpuMetrics(Record):
    """The GPU figures of one traced run, over all (rank, measured step) samples."""

    step_time_s: Stat | None = None
    compute_s: Stat | None = None
    exposed_comm_s: Stat | None = None
    exposed_memcpy_s: Stat | None = None
    idle_s: Stat | None = None
    nccl_kernels_per_step: Stat | None = None
    nccl_kernel_sum_s: Stat | None = None
    nccl_union_s: Stat | None = None
    overlap_ratio: Stat | None = None
    exposed_comm_share: Stat | None = None
    allreduce_kernel_s: Stat | None = None
    allreduce_kernels_per_step: Stat | None = None
    allreduce_share: Stat | None = None
    allreduce_streams: list[int] = field(default_factory=list)
    compute_streams: list[int] = field(default_factory=list)
    allreduce_own_stream: bool | None = None  # None: no AllReduce
    forward_gpu_s: Stat | None = None
    backward_gpu_s: Stat | None = None
    optimizer_gpu_s: Stat | None = None
    allreduce_to_backward: Stat | None = None
    kernels_per_step: Stat | None = None
    idle_host_wait_s: Stat | None = None
    idle_kernel_wait_s: Stat | None = None
    idle_other_s: Stat | None = None
    launches_per_step: Stat | None = None
    launch_call_s: Stat | None = None
    host_s_per_launch: Stat | None = None
    kernel_classes: list[KernelClassShare] = field(default_factory=list)
    ranking: list[RankedActivity] = field(default_factory=list)
    phase_method: str | None = None
    phase_methods: dict[str, int] = field(default_factory=dict)
    phase_validation: dict[str, PhaseAgreement] | None = None
    notes: list[str] = field(default_factory=list)
    per_rank: list[RankFigures] = field(default_factory=list)
    rank_skew: RankSkew | None = None
    timeline_step: int | None = _omit_none()  # the step the timeline shows (none without steps)
    busy_wait: BusyWait | None = None


@dataclass(kw_only=True)
class Sanity(Record):
    """The sanity items of a world size (null: not applicable; "unknown": the data cannot show it)."""

    all_ranks_present: bool = True
    steps_complete: bool = True
    finite_loss: bool | None = True
    trace_complete: bool | str | None = None
    gpu_streams: bool | None = None
    problems: list[str] = field(default_factory=list)

    def failing(self) -> list[str]:
        """The items that do not say yes: False, or "unknown" for trace_complete."""
        return invariants.failing(self)

    def check(self, where: str, path: Path | None) -> None:
        invariants.sanity(self, where, path)


@dataclass(kw_only=True)
class CopyStream(Record):
    stream: int
    kind: str
    launches: int
    activities: int


@dataclass(kw_only=True)
class RankCompleteness(Record):
    """``analysis.completeness.rank_completeness`` of one rank."""

    method: str | None = None
    launches: int = 0
    found: int = 0
    share: float | None = None
    steps: int = 0
    steps_below_bound: int | None = None
    min_step_share: float | None = None
    bound: float
    activities_without_launch: int = 0
    launches_without_id: int = 0
    kinds_not_recorded: list[str] = field(default_factory=list)
    streams: list[CopyStream] = field(default_factory=list)
    launches_per_step: list[int] = field(default_factory=list)
    found_per_step: list[int] = field(default_factory=list)
    calls_by_kind: dict[str, int] = field(default_factory=dict)
    status: str
    reason: str | None = None

    def check(self, where: str, path: Path | None) -> None:
        invariants.rank_completeness(self, where, path)


@dataclass(kw_only=True)
class Completeness(Record):
    """Whether the trace holds a GPU activity for every launch (``completeness.judge``)."""

    status: str
    bound: float
    reason: str = ""
    ranks: list[int] = field(default_factory=list)
    per_rank: dict[str, RankCompleteness] = field(default_factory=dict)
    log_warnings: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class TraceInput(Record):
    """One trace file (or Score-P experiment folder) a traced run's figures were read from."""

    rank: int
    path: str
    sha256: str
    gpu_timeline_sha256: str | None = None  # of its GPU activities and their times (traces.identity)


@dataclass(kw_only=True)
class Placement(Record):
    """Where the traced run's ranks ran (``analysis/placement.py``): GPUs and hosts, ranks per GPU,
    how a GPU was told apart (``uuid``, ``host+visible+index`` for runs recorded without a UUID, or
    ``unknown``), the NCCL transports the ranks' logs name, and whether the run was a rehearsal."""

    ranks: int
    hosts: int | None = None
    gpus: int | None = None
    ranks_per_gpu: int | None = None
    shared_gpu: bool | None = None
    identity: str = "unknown"
    transports: list[str] = field(default_factory=list)
    rehearsal: bool = False


@dataclass(kw_only=True)
class Traced(Record):
    """The traced run a world size's GPU figures come from."""

    run: str
    tracer: str | None = None
    format: str | None = None
    trace_mode: str | None = None
    device_type: str | None = None
    ranks: list[int] = field(default_factory=list)
    measured_steps: int | None = None
    placement: Placement | None = None
    gpu: GpuMetrics | None = None
    gpu_not_run_reason: str | None = None
    completeness: Completeness | None = None
    sanity: Sanity = field(default_factory=Sanity)
    inputs: list[TraceInput] = field(default_factory=list)


@dataclass(kw_only=True)
class Throughput(Record):
    """Samples per second: from the untraced runs (``source`` "untraced") or, with none, the trace."""

    source: str
    runs: list[str] = field(default_factory=list)
    samples_per_s: Stat | None = None
    step_time_s: Stat | None = None
    global_batch: int | None = None
    device_type: str | None = _omit_none()


@dataclass(kw_only=True)
class NoDdpThroughput(Record):
    runs: list[str] = field(default_factory=list)
    samples_per_s: Stat | None = None


@dataclass(kw_only=True)
class EfficiencySpread(Record):
    """The efficiency range the repeats allow."""

    min: float
    max: float
    runs_n: int | None = None
    baseline_runs_n: int | None = None


@dataclass(kw_only=True)
class WorldSizeEntry(Record):
    """Everything measured at one world size; claims name paths inside it."""

    world_size: int
    traced: Traced | None = None
    throughput: Throughput | None = None
    throughput_noddp: NoDdpThroughput | None = None  # world size 1 only
    dilation: float | None = None
    dilation_kind: str | None = None
    busy_wait: BusyWait | None = None
    efficiency: float | None = None
    efficiency_vs_noddp: float | None = None
    efficiency_spread: EfficiencySpread | None = None
    efficiency_baseline: str | None = None

    def _omitted(self, name: str, value: Any) -> bool:
        return name == "throughput_noddp" and self.world_size != 1 and value is None

    def check(self, where: str, path: Path | None) -> None:
        invariants.world_size_entry(self, where, path)


@dataclass(kw_only=True)
class MetricsFile(Record):
    """The whole ``metrics.json``."""

    schema: str = SCHEMA
    created: str | None = None
    label: str = ""
    sources: list[str] = field(default_factory=list)
    world_sizes: dict[str, WorldSizeEntry]
    measured_world_sizes: list[int] = field(default_factory=list)
    busbw: dict[str, dict[str, Any]] = field(default_factory=dict)
    fallbacks: list[dict[str, Any]] = field(default_factory=list)
    deviations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Any, where: str = "", path: Path | None = None) -> MetricsFile:
        if not isinstance(value, dict):
            raise ArtifactError(f"expected a JSON object at the top, not {type(value).__name__}", path)
        if value.get("schema") != SCHEMA:
            raise ArtifactError(
                f"'schema' is {_short(value.get('schema'))}, not {SCHEMA!r}: "
                "not a metrics.json written by this version of analyze",
                path,
            )
        sizes = value.get("world_sizes")
        if not isinstance(sizes, dict):
            raise ArtifactError("no 'world_sizes' object: not a metrics.json written by analyze", path)
        for key, entry in sizes.items():
            n = _world_size_key(key, path)
            ws = entry.get("world_size") if isinstance(entry, dict) else None
            if isinstance(entry, dict) and (not _fits(int, ws) or ws != n):
                raise ArtifactError(
                    f"world_sizes[{key!r}].world_size is {_short(ws)}: an entry's world_size must equal its key {n}", path
                )
        return super().from_json(value, where, path)

    def entry(self, world_size: int) -> WorldSizeEntry | None:
        return self.world_sizes.get(str(world_size))

    def check(self, where: str, path: Path | None) -> None:
        invariants.metrics_file(self, where, path)


# the records in the order docs/design.md lists them: the file first, then what it holds
RECORDS: tuple[type[Record], ...] = (
    MetricsFile,
    WorldSizeEntry,
    Traced,
    TraceInput,
    Placement,
    Sanity,
    Completeness,
    RankCompleteness,
    CopyStream,
    GpuMetrics,
    Stat,
    KernelClassShare,
    RankedActivity,
    PhaseAgreement,
    RankFigures,
    RankSkew,
    BusyWait,
    Throughput,
    NoDdpThroughput,
    EfficiencySpread,
)


def _world_size_key(key: Any, path: Path | None) -> int:
    if not isinstance(key, str) or not key.isdigit() or str(int(key)) != key or int(key) < 1:
        raise ArtifactError(f'world_sizes key {key!r} is not a world size (a positive integer like "8")', path)
    return int(key)


def validate_metrics(metrics: Any, path: str | Path) -> dict[str, Any]:
    """``metrics`` as :class:`MetricsFile` writes it (a key it lacks filled with its default) when
    it has that shape; else an ArtifactError naming ``path`` and the first key that does not fit."""
    return MetricsFile.from_json(metrics, "", Path(path)).to_json()
