"""One model of GPU activity for every trace format: the ``Trace`` container and its tables.

The readers (OTF2 from Score-P, Kineto JSON from torch.profiler) both produce exactly these
tables, so the analysis never needs to know which tool recorded a run. The schema is the
contract of ``docs/design.md`` ("Trace tables"):

``Trace.gpu`` -- one row per GPU activity, sorted by (rank, start_ns):
    rank int32, device int32, stream int64, kind {kernel, memcpy, memset}, name str,
    start_ns int64, end_ns int64, category {nccl, compute, memory}, collective str/NA,
    msg_bytes Int64/NA, correlation Int64/NA

``Trace.host`` -- host ranges the analysis needs (phases and kernel launches), sorted by
(rank, start_ns):
    rank int32, thread str, kind {phase, launch}, name str, start_ns int64, end_ns int64,
    stream Int64/NA, correlation Int64/NA

``Trace.ranks`` -- {rank: meta dict} with ``source``, ``format``, ``tool``, ``tool_version``,
``clock_resolution_hz``, ``rank``, ``world_size``, ``streams``, ``warnings`` (and a few
format-specific extras, documented by each reader).

Times are integer nanoseconds on each rank's own trace clock. Strings are arrow-backed (one
buffer per column instead of a Python object per row), which matters at 10^6 rows per rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np
import pandas as pd

from dnabert_scaling.errors import ArtifactError

GPU_KINDS = ("kernel", "memcpy", "memset")
CATEGORIES = ("nccl", "compute", "memory")
HOST_KINDS = ("phase", "launch")
# Host range names: dnabert_scaling.phases.PHASE_NAMES; a ``bucket`` range (DDP comm hook) is
# named ``bucket:<index>:<bytes>`` in the tables.


class NoGpuActivityError(ArtifactError):
    """The trace is valid but holds no GPU activity (no CUDA stream, no kernel, no copy).

    The analysis catches this class to report a CPU-only run instead of analysing nothing.
    """


def _string_dtype():
    """Arrow-backed strings whose missing value is NaN (pandas' default ``str`` in 3.x)."""
    try:
        return pd.StringDtype("pyarrow", na_value=np.nan)
    except TypeError:  # pandas < 2.3: no na_value argument
        return pd.StringDtype("pyarrow")


STR = _string_dtype()
GPU_KIND_DTYPE = pd.CategoricalDtype(list(GPU_KINDS))
CATEGORY_DTYPE = pd.CategoricalDtype(list(CATEGORIES))
HOST_KIND_DTYPE = pd.CategoricalDtype(list(HOST_KINDS))

GPU_SCHEMA: dict[str, object] = {
    "rank": np.dtype("int32"),
    "device": np.dtype("int32"),
    "stream": np.dtype("int64"),
    "kind": GPU_KIND_DTYPE,
    "name": STR,
    "start_ns": np.dtype("int64"),
    "end_ns": np.dtype("int64"),
    "category": CATEGORY_DTYPE,
    "collective": STR,
    "msg_bytes": pd.Int64Dtype(),
    "correlation": pd.Int64Dtype(),
}

HOST_SCHEMA: dict[str, object] = {
    "rank": np.dtype("int32"),
    "thread": STR,
    "kind": HOST_KIND_DTYPE,
    "name": STR,
    "start_ns": np.dtype("int64"),
    "end_ns": np.dtype("int64"),
    "stream": pd.Int64Dtype(),
    "correlation": pd.Int64Dtype(),
}


def _nullable_int(values, mask=None) -> pd.array:
    """An Int64 extension array from int values plus an optional "missing" mask."""
    arr = np.asarray(values, dtype=np.int64) if len(values) else np.empty(0, np.int64)
    if mask is None:
        mask = np.zeros(arr.size, dtype=bool)
    return pd.arrays.IntegerArray(arr, np.asarray(mask, dtype=bool))


def _is_sequence(v) -> bool:
    return isinstance(v, (list, np.ndarray, pd.Series, pd.api.extensions.ExtensionArray, range))


def make_frame(columns: dict[str, object], schema: dict[str, object]) -> pd.DataFrame:
    """Build a DataFrame with exactly the schema's columns, in order, with the schema's dtypes.

    ``columns`` maps column name -> array-like (or a scalar, broadcast to every row). Nullable
    integer columns may be given as a tuple ``(values, missing_mask)``; categorical columns may
    be given as ``pd.Categorical`` of the schema's dtype (e.g. built with ``from_codes``), which
    is used as is. Missing string columns are all-NA; other missing columns are an error.
    """
    n = 0
    for v in columns.values():
        if isinstance(v, tuple):
            v = v[0]
        if _is_sequence(v):
            n = len(v)
            break
    data = {}
    for name, dtype in schema.items():
        v = columns.get(name)
        if isinstance(dtype, pd.Int64Dtype):
            if v is None:
                data[name] = _nullable_int(np.zeros(n, np.int64), np.ones(n, bool))
            elif isinstance(v, tuple):
                data[name] = _nullable_int(v[0], v[1])
            elif _is_sequence(v):
                data[name] = pd.array(v, dtype=dtype)
            else:
                data[name] = _nullable_int(np.full(n, v))
            continue
        if v is None:
            if dtype is STR:
                data[name] = pd.array(np.full(n, np.nan, dtype=object), dtype=STR)
                continue
            if n:
                raise ValueError(f"column {name!r} is required")
            v = []
        if isinstance(dtype, pd.CategoricalDtype):
            if isinstance(v, pd.Categorical) and v.dtype == dtype:
                data[name] = v
                continue
            if not _is_sequence(v):
                if v not in dtype.categories:
                    raise ValueError(f"column {name!r}: value {v!r} outside {list(dtype.categories)}")
                data[name] = pd.Categorical.from_codes(np.full(n, dtype.categories.get_loc(v), np.int8), dtype=dtype)
                continue
            data[name] = pd.Categorical(v, dtype=dtype)
            if pd.isna(data[name]).any():
                bad = sorted(set(pd.Series(v)[pd.isna(data[name])].astype(str)))
                raise ValueError(f"column {name!r}: values outside {list(dtype.categories)}: {bad}")
        elif dtype is STR:
            if not _is_sequence(v):
                v = np.full(n, v, dtype=object)
            data[name] = v if (isinstance(v, pd.api.extensions.ExtensionArray) and v.dtype == STR) else pd.array(v, dtype=STR)
        else:
            data[name] = np.full(n, v, dtype=dtype) if not _is_sequence(v) else np.asarray(v, dtype=dtype)
    return pd.DataFrame(data)


def empty_gpu() -> pd.DataFrame:
    return make_frame({}, GPU_SCHEMA)


def empty_host() -> pd.DataFrame:
    return make_frame({}, HOST_SCHEMA)


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    if len(df) == 0:
        return df.reset_index(drop=True)
    order = np.lexsort((df["end_ns"].to_numpy(), df["start_ns"].to_numpy(), df["rank"].to_numpy()))
    if np.all(order[1:] > order[:-1]):
        return df.reset_index(drop=True)
    return df.iloc[order].reset_index(drop=True)


@dataclass
class Trace:
    """GPU activities, host ranges and per-rank metadata of one or several ranks."""

    gpu: pd.DataFrame = field(default_factory=empty_gpu)
    host: pd.DataFrame = field(default_factory=empty_host)
    ranks: dict[int, dict] = field(default_factory=dict)

    def __post_init__(self):
        self.gpu = _sorted(self.gpu)
        self.host = _sorted(self.host)

    # -- convenience -------------------------------------------------------------------------
    @property
    def rank_ids(self) -> list[int]:
        return sorted(self.ranks)

    @property
    def meta(self) -> dict:
        """The metadata of a single-rank trace (use ``ranks[r]`` for several ranks)."""
        if len(self.ranks) != 1:
            raise ValueError(f"trace has {len(self.ranks)} ranks; use Trace.ranks[rank]")
        return next(iter(self.ranks.values()))

    @property
    def format(self) -> str:
        formats = sorted({m.get("format", "?") for m in self.ranks.values()})
        return "+".join(formats)

    def rank(self, r: int) -> "Trace":
        """The part of this trace that belongs to rank r."""
        if r not in self.ranks:
            raise KeyError(f"no rank {r} in trace (ranks {self.rank_ids})")
        g = self.gpu[self.gpu["rank"].to_numpy() == r]
        h = self.host[self.host["rank"].to_numpy() == r]
        return Trace(g, h, {r: self.ranks[r]})

    def renumbered(self, rank: int) -> "Trace":
        """This single-rank trace as rank ``rank`` (tables and metadata)."""
        meta = dict(self.meta)
        meta["rank"] = rank
        gpu, host = self.gpu.copy(), self.host.copy()
        gpu["rank"] = np.int32(rank)
        host["rank"] = np.int32(rank)
        return Trace(gpu, host, {rank: meta})

    def event_count(self) -> int:
        """Events the readers consumed to build this trace (sum over ranks of meta['events_read'])."""
        return int(sum(m.get("events_read", 0) for m in self.ranks.values()))

    @staticmethod
    def concat(traces: Iterable["Trace"]) -> "Trace":
        """Concatenate traces of distinct ranks (duplicates are an error naming the rank)."""
        traces = list(traces)
        ranks: dict[int, dict] = {}
        for t in traces:
            for r, m in t.ranks.items():
                if r in ranks:
                    raise ArtifactError(f"rank {r} appears twice: in {ranks[r].get('source')} and in {m.get('source')}")
                ranks[r] = m
        gpu = [t.gpu for t in traces if len(t.gpu)]
        host = [t.host for t in traces if len(t.host)]
        g = pd.concat(gpu, ignore_index=True) if gpu else empty_gpu()
        h = pd.concat(host, ignore_index=True) if host else empty_host()
        return Trace(g, h, dict(sorted(ranks.items())))


def validate(trace: Trace) -> None:
    """Check the schema and invariants; raises AssertionError naming the first violation.

    Used by the tests and cheap enough to run after every read.
    """
    for df, schema, label in ((trace.gpu, GPU_SCHEMA, "gpu"), (trace.host, HOST_SCHEMA, "host")):
        assert list(df.columns) == list(schema), f"{label} columns {list(df.columns)} != {list(schema)}"
        for col, dtype in schema.items():
            assert df[col].dtype == dtype, f"{label}.{col} dtype {df[col].dtype} != {dtype}"
        if len(df):
            s = df["start_ns"].to_numpy()
            e = df["end_ns"].to_numpy()
            assert np.all(e >= s), f"{label}: an activity ends before it starts"
            key = df["rank"].to_numpy().astype(np.int64)
            assert np.all((np.diff(key) > 0) | ((np.diff(key) == 0) & (np.diff(s) >= 0))), (
                f"{label} is not sorted by (rank, start_ns)"
            )
            assert set(np.unique(key)) <= set(trace.ranks), f"{label} has rows of unknown ranks"
    for r, m in trace.ranks.items():
        for k in ("source", "format", "tool", "tool_version", "clock_resolution_hz", "rank", "world_size", "streams", "warnings"):
            assert k in m, f"rank {r} meta lacks {k!r}"
        assert m["rank"] == r, f"rank {r} meta says rank {m['rank']}"
