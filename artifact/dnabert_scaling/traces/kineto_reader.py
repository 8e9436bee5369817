"""Read a torch.profiler (Kineto) Chrome-trace JSON (``.json`` or ``.json.gz``) into the tables.

What is taken from the trace:

* GPU activities: ``cat`` in ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` (``ph`` ``X``); device
  from ``args.device`` (else ``pid``), stream from ``args.stream`` (else ``tid``), correlation
  from ``args.correlation`` (the id of the ``cuda_runtime`` / ``cuda_driver`` call that launched
  it), NCCL collective and message size from the ``Collective name``, ``In msg nelems`` and
  ``dtype`` arguments that recent PyTorch attaches to NCCL kernels.
* Host ranges: ``user_annotation`` ranges named ``ds:<phase>`` (what ``record_function`` writes)
  and the kernel-launch runtime/driver calls; a launch gets the stream of the GPU activity with
  its correlation id.
* Metadata: ``distributedInfo`` (rank, world size, NCCL version), CUDA/CUPTI versions,
  ``baseTimeNanoseconds``, device names.

Timestamps are microseconds written as decimal floats with nanosecond digits
(``"ts": 4458676522690.655``). Converting through a binary float would lose the last digit
(16 significant digits exceed a double's precision), so the JSON is parsed with
``parse_float=str`` and each time is converted from its decimal text to an exact integer number
of nanoseconds. Times stay on the trace's own clock (``ts`` as written, in ns); the absolute
Unix time is ``meta['base_time_ns'] + t`` when the trace records ``baseTimeNanoseconds``.
Parsed numbers are ``JsonNumber`` (a ``str``), so a time written as a JSON string (``"ts": "5"``)
is told apart from one written as a number and refused.

Every field the reader uses is checked for its JSON type where it is read (``_Event``): a ``ph``,
``cat`` or ``name`` that is no string, a ``ts``/``dur`` that is no number, an ``args`` that is no
object, a correlation, device, stream or size that is no integer >= 0 is an ArtifactError naming
the file and the event's index, never a traceback and never a default that makes a wrong table.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from dnabert_scaling.errors import ArtifactError, regular_file
from dnabert_scaling.traces import classify
from dnabert_scaling.traces.model import (
    GPU_SCHEMA,
    HOST_SCHEMA,
    NoGpuActivityError,
    Trace,
    empty_host,
    make_frame,
)

GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
_RANK_FILE_RE = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


def is_kineto_path(path) -> bool:
    name = Path(path).name.lower()
    return name.endswith(".json") or name.endswith(".json.gz")


class JsonNumber(str):
    """The text of a JSON number with a fraction or exponent (``parse_float``): a ``str`` that is
    known to have been written as a number, unlike a JSON string that holds digits."""

    __slots__ = ()


# No measured microsecond value has more than this many digits before the point (2**62 ns is 19).
_MAX_US_DIGITS = 25


def us_to_ns(value) -> int:
    """Exact integer nanoseconds from a Kineto microsecond value (decimal text or int)."""
    if isinstance(value, str):
        i = value.find(".")
        if i >= 0 and "e" not in value and "E" not in value and i <= _MAX_US_DIGITS:
            frac = value[i + 1 :]
            try:
                if len(frac) == 3:
                    return int(value[:i] + frac)
                if len(frac) < 3:
                    return int(value[:i] + frac + "0" * (3 - len(frac)))
            except ValueError:
                raise ValueError(f"not a number: {value!r}") from None
        try:
            d = Decimal(value)
        except InvalidOperation:
            raise ValueError(f"not a number: {value!r}") from None
        if not d.is_finite() or d.adjusted() > _MAX_US_DIGITS:
            raise ValueError(f"not a time any clock gives: {_short(value)}")
        return int((d * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):  # pragma: no cover - only when parsed elsewhere
        return int(round(value * 1000))
    raise ValueError(f"not a number: {value!r}")


def _has_ns_digits(value) -> bool:
    return isinstance(value, str) and "." in value


# Bounds on what one trace file may hold: a torch.profiler trace of 50 steps of one 8-GPU rank is
# a few hundred MB of JSON and about a million events; these limits are far above that and far
# below what would exhaust the memory of the machine reading it.
MAX_JSON_BYTES = 8 << 30
MAX_EVENTS = 100_000_000
# No clock gives a time of 2**62 ns (146 years after its epoch): a timestamp or duration beyond
# it is damage (1e300, 2**70), never a measurement.
MAX_TIME_NS = 1 << 62


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number any clock or counter writes")


def _read_bounded(path: Path) -> bytes:
    """The (decompressed) bytes of a regular file, at most MAX_JSON_BYTES."""
    regular_file(path, "a trace", missing="trace file not found")
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise ArtifactError(f"more than {MAX_JSON_BYTES >> 30} GiB of JSON: larger than any trace this reads", path)
    return raw


def load_json(path: Path) -> dict:
    """The trace document; ArtifactError naming the file for unreadable gzip or JSON, a file that is
    not a regular file, JSON beyond the bounds above, and constants (NaN, Infinity) no clock writes."""
    try:
        raw = _read_bounded(path)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise ArtifactError(f"corrupt or truncated gzip data ({exc})", path) from None
    except OSError as exc:  # the file itself, not its content: permission, an I/O error
        raise ArtifactError(f"cannot read the trace: {exc.strerror or exc}", path) from None
    try:
        doc = json.loads(raw, parse_float=JsonNumber, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path) from None
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"not valid JSON text ({exc})", path) from None
    except ValueError as exc:
        raise ArtifactError(f"not a trace: {exc}", path) from None
    except RecursionError:
        raise ArtifactError("JSON nested deeper than a trace ever is (the parser's depth limit)", path) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ArtifactError("not a Kineto/Chrome trace (no 'traceEvents' list)", path)
    if len(doc["traceEvents"]) > MAX_EVENTS:
        raise ArtifactError(f"{len(doc['traceEvents']):,} events, more than the {MAX_EVENTS:,} this reads", path)
    return doc


def read_kineto(path, rank_hint: int | None = None) -> Trace:
    """Read one rank's Kineto trace. ``rank_hint`` is used when the trace names no rank."""
    path = Path(path)
    doc = load_json(path)
    events = doc["traceEvents"]
    warnings: list[str] = []
    rank, rank_assumed = _rank_of(doc, path, rank_hint, warnings)
    found = _scan_events(events, path)
    if found.bad_events:
        warnings.append(f"{found.bad_events} trace event(s) are not JSON objects (ignored)")
    if not found.start:
        raise NoGpuActivityError(
            "no GPU activity in this trace (no kernel, gpu_memcpy or gpu_memset events): a CPU-only "
            "profile, or torch.profiler ran without ProfilerActivity.CUDA",
            path,
        )
    if not found.phases:
        warnings.append("no ds:* phase annotations (phase attribution impossible)")
    meta = _meta(doc, path, found, rank, rank_assumed, warnings)
    return Trace(_gpu_frame(found, rank), _host_frame(found, rank), {rank: meta})


def _rank_of(doc: dict, path: Path, rank_hint: int | None, warnings: list[str]) -> tuple[int, bool]:
    """The rank: ``distributedInfo.rank``, else the hint, else ``rank<R>`` in the file name, else 0
    (then ``rank_assumed``). A file name that disagrees with distributedInfo is a warning."""
    dist = _distributed_info(doc)
    rank = _strict_int(dist, "rank", path)
    size = _strict_int(dist, "world_size", path)
    if rank is not None and size is not None and rank >= size:
        raise ArtifactError(f"distributedInfo says rank {rank} of world size {size}: ranks run 0..{size - 1}", path)
    m = _RANK_FILE_RE.search(path.name)
    file_rank = int(m.group(1)) if m else None
    rank_assumed = rank is None and rank_hint is None and file_rank is None
    if rank is None:
        if rank_hint is not None:
            rank = rank_hint
        elif file_rank is not None:
            rank = file_rank
        else:
            rank = 0
            warnings.append("no distributedInfo.rank and no rank<R> in the file name: assumed rank 0")
    elif file_rank is not None and file_rank != rank:
        warnings.append(f"file name says rank {file_rank} but distributedInfo.rank is {rank}: using {rank}")
    return rank, rank_assumed


def _strict_int(dist: dict, key: str, path: Path) -> int | None:
    """``distributedInfo[key]`` as written: a non-negative JSON integer or absent; "08", 8.0 or
    true is refused (a rank or world size read loosely would put a trace in the wrong place)."""
    value = dist.get(key)
    if value is None:
        return None
    if type(value) is not int or not 0 <= value < 1 << 31:
        raise ArtifactError(f"distributedInfo.{key} is {_short(repr(value))}: not a rank count (a JSON integer >= 0)", path)
    return value


def _distributed_info(doc: dict) -> dict:
    return doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}


class _Found:
    """What one pass over the events collects: the GPU table's columns (with NA masks), the phase
    ranges, the launch calls, annotation counts and format hints."""

    def __init__(self) -> None:
        self.device: list = []
        self.stream: list = []
        self.kind: list = []
        self.name: list = []
        self.start: list = []
        self.end: list = []
        self.collective: list = []
        self.msg: list = []
        self.msg_na: list = []
        self.corr: list = []
        self.corr_na: list = []
        self.phases: list = []
        self.launches: list = []
        self.annotations: Counter = Counter()
        self.ns_digits = False
        self.bad_events = 0


def _scan_events(events: list, path: Path) -> _Found:
    """One pass over ``traceEvents``: GPU activities, ``ds:*`` phase ranges and launch calls."""
    f = _Found()
    for i, e in enumerate(events):
        if type(e) is not dict:
            f.bad_events += 1
            continue
        ph = e.get("ph")
        if ph != "X":
            if ph is not None and type(ph) is not str:
                raise _Event.refuse(i, e, path, f"'ph' is {_described(ph)}, not a string")
            continue
        cat = e.get("cat")
        if type(cat) is not str:
            if cat is None:
                continue
            raise _Event.refuse(i, e, path, f"'cat' is {_described(cat)}, not a string")
        kind = GPU_CATS.get(cat)
        if kind is None and cat != "user_annotation" and cat not in LAUNCH_CATS:
            continue
        ev = _Event(i, e, path, cat)
        start, end = ev.span()
        f.ns_digits = f.ns_digits or _has_ns_digits(e["ts"])
        if kind is not None:
            _add_gpu_activity(f, ev, kind, start, end)
        elif cat == "user_annotation":
            f.annotations[ev.name] += 1
            p = classify.phase_name(ev.name)
            if p is not None:
                f.phases.append((_thread_name(ev), p, start, end))
            elif classify.unreadable_bucket_mark(ev.name):
                raise ev.bad(classify.UNREADABLE_BUCKET)
        elif classify.is_launch_api(ev.name) or classify.is_copy_api(ev.name):
            f.launches.append((_thread_name(ev), ev.name, start, end, ev.count("correlation")))
    return f


_MISSING = object()
_INT_LIMIT = 1 << 63  # the tables hold int64


def _described(value) -> str:
    """A JSON value's type and (shortened) text, for an error message."""
    if value is _MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, JsonNumber)):
        return f"the number {_short(value)}"
    if isinstance(value, str):
        return f"the string {_short(repr(value))}"
    kind = {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)
    return f"{kind} ({_short(json.dumps(value, default=str))})"


def _unstorable(text: str) -> str | None:
    """What makes a trace's text one no table or archive keeps as it is: a NUL character (OTF2 and the C demangler
    read C strings, so the name would end there, silently) or a lone surrogate (JSON's \\ud800 escape; no UTF-8
    encoding exists for it). None where it is neither: checked per event, so the common ASCII name costs two scans."""
    if "\x00" in text:
        return f"holds a NUL character at character {text.index(chr(0)) + 1}, which C strings would cut there"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"holds a lone surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start + 1}, which is no character"
    return None


class _Event:
    """One event the reader uses, each field checked for the JSON type it needs where it is read: a
    wrong one is an ArtifactError naming the file, the event's index, its category and name."""

    __slots__ = ("i", "e", "path", "cat", "name", "args")

    def __init__(self, i: int, e: dict, path: Path, cat: str) -> None:
        self.i, self.e, self.path, self.cat = i, e, path, cat
        name = e.get("name", _MISSING)
        if type(name) is not str:
            raise _Event.refuse(i, e, path, f"'name' is {_described(name)}, not a string")
        if (problem := _unstorable(name)) is not None:
            raise _Event.refuse(i, e, path, f"'name' {problem}")
        self.name = name
        args = e.get("args", {})
        if type(args) is not dict:
            raise self.bad(f"'args' is {_described(args)}, not an object")
        self.args = args

    @staticmethod
    def refuse(i: int, e: dict, path: Path, problem: str) -> ArtifactError:
        label = ", ".join(f"{k} {_short(repr(e[k]), 60)}" for k in ("cat", "name") if type(e.get(k)) is str)
        return ArtifactError(f"trace event {i} of traceEvents{f' ({label})' if label else ''}: {problem}", path)

    def bad(self, problem: str) -> ArtifactError:
        return _Event.refuse(self.i, self.e, self.path, problem)

    def time_ns(self, key: str) -> int:
        """``ts`` or ``dur``: a JSON number of microseconds, as exact nanoseconds."""
        value = self.e.get(key, _MISSING)
        if type(value) is not JsonNumber and type(value) is not int:
            raise self.bad(f"'{key}' is {_described(value)}, not a number of microseconds")
        try:
            return us_to_ns(value)
        except ValueError as exc:
            raise self.bad(f"'{key}' is {exc}") from None

    def span(self) -> tuple[int, int]:
        start = self.time_ns("ts")
        end = start + self.time_ns("dur")
        if end < start:
            raise self.bad(f"ts {_short(self.e['ts'])} us has a negative duration ({_short(self.e['dur'])} us)")
        if start < 0 or end >= MAX_TIME_NS:
            raise self.bad(
                f"ts {_short(self.e['ts'])} us, dur {_short(self.e['dur'])} us: outside 0..2**62 ns, a time no clock gives"
            )
        return start, end

    def count(self, key: str) -> int | None:
        """``args[key]`` (a correlation id, device, stream or size): an integer >= 0, or None when absent."""
        value = self.args.get(key)
        if value is None:
            return None
        if type(value) is not int or not 0 <= value < _INT_LIMIT:
            raise self.bad(f"args.{key} is {_described(value)}, not an integer >= 0")
        return value

    def text(self, key: str) -> str | None:
        """``args[key]`` (a collective or dtype label): a string, or None when absent."""
        value = self.args.get(key)
        if value is not None and type(value) is not str:
            raise self.bad(f"args.{key} is {_described(value)}, not a string")
        if value is not None and (problem := _unstorable(value)) is not None:
            raise self.bad(f"args.{key} {problem}")
        return value

    def ident(self, key: str) -> int | str | None:
        """``pid`` or ``tid``: an integer or a string (Chrome traces write both), or None when absent."""
        value = self.e.get(key)
        if type(value) is str and (problem := _unstorable(value)) is not None:  # it becomes a thread's name
            raise self.bad(f"'{key}' {problem}")
        if value is None or type(value) is str:
            return value
        if type(value) is not int or not -_INT_LIMIT <= value < _INT_LIMIT:
            raise self.bad(f"'{key}' is {_described(value)}, not an integer or string")
        return value


def _id_number(value: int | str | None) -> int:
    """A device or stream number from ``pid``/``tid`` (``7`` or ``"7"``), -1 when it names none."""
    if type(value) is int:
        return value
    if type(value) is str and value.isdigit() and len(value) < 19:
        return int(value)
    return -1


def _add_gpu_activity(f: _Found, ev: _Event, kind: str, start: int, end: int) -> None:
    """One GPU activity into the columns: display name, collective and message size by kind."""
    corr = ev.count("correlation")
    device, stream, pid, tid = ev.count("device"), ev.count("stream"), ev.ident("pid"), ev.ident("tid")
    f.device.append(device if device is not None else _id_number(pid))
    f.stream.append(stream if stream is not None else _id_number(tid))
    f.kind.append(kind)
    f.start.append(start)
    f.end.append(end)
    f.corr.append(corr if corr is not None else 0)
    f.corr_na.append(corr is None)
    msg = None
    coll = np.nan
    if kind == "kernel":
        disp = classify.kernel_display_name(ev.name)
        if classify.is_nccl(disp):
            label, nel, dtype = ev.text("Collective name"), ev.count("In msg nelems"), ev.text("dtype")
            coll = classify.collective_from_name(disp) or classify.normalize_collective(label) or np.nan
            size = classify.dtype_bytes(dtype)
            if nel is not None and size is not None:
                msg = nel * size
    elif kind == "memcpy":
        disp = classify.memcpy_name(classify.memcpy_direction(ev.name))
        msg = ev.count("bytes")
    else:
        disp = classify.MEMSET_NAME
        msg = ev.count("bytes")
    if msg is not None and msg >= _INT_LIMIT:
        raise ev.bad(f"a message of {msg} bytes, more than any GPU holds")
    f.name.append(disp)
    f.collective.append(coll)
    f.msg.append(msg if msg is not None else 0)
    f.msg_na.append(msg is None)


def _gpu_frame(f: _Found, rank: int):
    cats = ["memory" if k != "kernel" else classify.kernel_category(nm) for k, nm in zip(f.kind, f.name)]
    return make_frame(
        {
            "rank": rank,
            "device": f.device,
            "stream": f.stream,
            "kind": f.kind,
            "name": f.name,
            "start_ns": f.start,
            "end_ns": f.end,
            "category": cats,
            "collective": f.collective,
            "msg_bytes": (f.msg, f.msg_na),
            "correlation": (f.corr, f.corr_na),
        },
        GPU_SCHEMA,
    )


def _host_frame(f: _Found, rank: int):
    """Phase ranges and launch calls; a launch gets the stream of the activity it launched."""
    stream_of_corr = {c: s for c, s, na in zip(f.corr, f.stream, f.corr_na) if not na}
    rows = [(t, "phase", n, s, en, None, None) for t, n, s, en in f.phases]
    for t, n, s, en, c in f.launches:
        rows.append((t, "launch", n, s, en, stream_of_corr.get(c) if c is not None else None, c))
    if not rows:
        return empty_host()
    threads, kinds, names, starts, ends, streams, corrs = zip(*rows)
    return make_frame(
        {
            "rank": rank,
            "thread": list(threads),
            "kind": list(kinds),
            "name": list(names),
            "start_ns": list(starts),
            "end_ns": list(ends),
            "stream": ([s if s is not None else 0 for s in streams], [s is None for s in streams]),
            "correlation": ([c if c is not None else 0 for c in corrs], [c is None for c in corrs]),
        },
        HOST_SCHEMA,
    )


def _meta(doc: dict, path: Path, f: _Found, rank: int, rank_assumed: bool, warnings: list[str]) -> dict:
    dist = _distributed_info(doc)
    events = doc["traceEvents"]
    return {
        "source": str(path),
        "format": "kineto",
        "tool": "torch.profiler (Kineto)",
        "tool_version": f"trace schema {doc.get('schemaVersion', '?')}",
        "clock_resolution_hz": 10**9 if f.ns_digits else 10**6,
        "rank": rank,
        "rank_assumed": rank_assumed,
        "world_size": _strict_int(dist, "world_size", path),
        "streams": sorted({int(s) for s in f.stream}),
        "devices": sorted({int(d) for d in f.device}),
        "base_time_ns": _base_time(doc, path),
        "distributed": {k: dist.get(k) for k in ("backend", "rank", "world_size", "nccl_version") if k in dist},
        "cuda_runtime_version": doc.get("cuda_runtime_version"),
        "cuda_driver_version": doc.get("cuda_driver_version"),
        "cupti_version": doc.get("cupti_version"),
        "device_names": [d.get("name") for d in _list(doc.get("deviceProperties")) if isinstance(d, dict)],
        "annotations": dict(f.annotations.most_common(50)),
        "events_read": len(events),
        "events_total": len(events),
        "warnings": warnings,
    }


def _base_time(doc: dict, path: Path) -> int | None:
    """``baseTimeNanoseconds``: a JSON integer >= 0, or None when the trace records none."""
    value = doc.get("baseTimeNanoseconds")
    if value is None:
        return None
    if type(value) is not int or not 0 <= value < _INT_LIMIT:
        raise ArtifactError(f"baseTimeNanoseconds is {_described(value)}, not an integer number of nanoseconds", path)
    return value


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _short(value, n: int = 30) -> str:
    text = str(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _thread_name(ev: _Event) -> str:
    """``Master thread`` for the process's main thread (tid == pid), else ``Thread <tid>``."""
    tid, pid = ev.ident("tid"), ev.ident("pid")
    if tid is not None and tid == pid:
        return "Master thread"
    return f"Thread {tid}"
