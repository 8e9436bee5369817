"""Write one rank's GPU activity as an OTF2 archive in the Score-P 9 layout.

Used by ``dnabert-scaling convert`` (Kineto -> OTF2, so Vampir and every OTF2 tool can open
torch.profiler traces) and by ``synth`` (synthetic study-shaped traces for tests and the
reading benchmark). The layout mirrors what Score-P 9 writes for a ``--mpp=none`` CUDA run:

* system tree ``machine`` -> ``node`` -> one ``CUDA Device`` node per device;
* a process location group ``Process`` holding the CPU threads (``Master thread``, ...);
* per device a ``CUDA Context <device>`` location group of type ACCELERATOR whose creating
  group is the process, holding one ACCELERATOR_STREAM location ``CUDA[<device>:<stream>]`` per
  stream;
* kernels are Enter/Leave of regions with role KERNEL, paradigm CUDA; launch calls are regions
  with role WRAPPER whose Enter carries ``CUDA_STREAM_REF`` (the target stream location);
  phases are user regions named as Score-P's Python bindings name them (``user:ds:step``);
* copies are RMA operations on the window ``CUDA_WINDOW`` (RmaGet for host-to-device and
  device-to-device, RmaPut for device-to-host, closed by RmaOpCompleteBlocking); memsets, which
  Score-P does not record, are written as Enter/Leave of a ``Memset`` region (role
  DATA_TRANSFER) so that nothing is lost.

Kineto-only facts are kept as extra attributes, which other OTF2 tools ignore:
``CUPTI_CORRELATION_ID`` (kernel, copy, launch), ``NCCL_COLLECTIVE`` (NCCL kernels) and
``MSG_BYTES`` (NCCL message size, memset size). Reading the archive back therefore yields the same tables.

Definitions go through the ``otf2`` package's writer; events are written through the C event
writer directly (ctypes), about five times faster than the package's per-event objects, which
matters for the benchmark's multi-million-event traces.
"""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.phases import PREFIX as PHASE_PREFIX
from dnabert_scaling.traces import classify
from dnabert_scaling.traces import otf2_lowlevel as ll
from dnabert_scaling.traces.otf2_defs import (
    ATTR_COLLECTIVE,
    ATTR_CORRELATION,
    ATTR_MSG_BYTES,
    ATTR_STREAM_REF,
)
from dnabert_scaling.traces.otf2_tables import pair_enter_leave

c_u64, c_u32, c_vp, c_int = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int

_enter = ll._decl("OTF2_EvtWriter_Enter", c_int, c_vp, c_vp, c_u64, c_u32)
_leave = ll._decl("OTF2_EvtWriter_Leave", c_int, c_vp, c_vp, c_u64, c_u32)
_rma_get = ll._decl("OTF2_EvtWriter_RmaGet", c_int, c_vp, c_vp, c_u64, c_u32, c_u32, c_u64, c_u64)
_rma_put = ll._decl("OTF2_EvtWriter_RmaPut", c_int, c_vp, c_vp, c_u64, c_u32, c_u32, c_u64, c_u64)
_rma_done = ll._decl("OTF2_EvtWriter_RmaOpCompleteBlocking", c_int, c_vp, c_vp, c_u64, c_u32, c_u64)
_al_new = ll._decl("OTF2_AttributeList_New", c_vp)
_al_delete = ll._decl("OTF2_AttributeList_Delete", c_int, c_vp)
_al_add_u64 = ll._decl("OTF2_AttributeList_AddUint64", c_int, c_vp, c_u32, c_u64)
_al_add_loc = ll._decl("OTF2_AttributeList_AddLocationRef", c_int, c_vp, c_u32, c_u64)
_al_add_str = ll._decl("OTF2_AttributeList_AddStringRef", c_int, c_vp, c_u32, c_u32)
_al_clear = ll._decl("OTF2_AttributeList_RemoveAllAttributes", c_int, c_vp)

# Event opcodes of the per-location event arrays handed to ``write_events``.
OP_ENTER, OP_LEAVE, OP_GET, OP_PUT, OP_DONE = 0, 1, 2, 3, 4
NO_VALUE = -1


def user_region_name(phase: str) -> str:
    """How Score-P's Python bindings name ``scorep.user.region('ds:<phase>')``."""
    return f"user:{PHASE_PREFIX}{phase}"


class ScoreP9Writer:
    """An OTF2 archive of one rank in the Score-P 9 layout (see the module docstring).

    Create locations and regions first, call :meth:`cuda_window` once every stream exists (its
    communicator lists them), then write each location's events with :meth:`write_events`
    (time-ordered arrays), and :meth:`close`.
    """

    def __init__(
        self,
        archive_dir,
        *,
        creator: str,
        description: str = "",
        timer_resolution: int = 10**9,
        machine: str = "node",
        overwrite: bool = False,
        chunk_size_events: int = 1024 * 1024,
        process_name: str = "Process",
        processes: int = 1,
    ):
        import otf2

        self._otf2 = otf2
        self.dir = Path(archive_dir)
        if self.dir.exists():
            if not overwrite:
                raise ArtifactError("output exists (use --force to replace it)", self.dir)
            shutil.rmtree(self.dir)
        self.dir.parent.mkdir(parents=True, exist_ok=True)
        self.w = otf2.writer.Writer(
            str(self.dir), archive_name="traces", timer_resolution=timer_resolution, chunk_size_events=chunk_size_events
        )
        self.w.creator = creator
        if description:
            self.w.description = description
        self.w.machine_name = machine
        d = self.w.definitions
        self.defs = d
        self.root = d.system_tree_node("machine", class_name="machine")
        self.node = d.system_tree_node(machine, class_name="node", parent=self.root)
        self._regions: dict[tuple, object] = {}
        self._attrs: dict[str, object] = {}
        # OTF2 wants one COMM_LOCATIONS group per paradigm, defined before the COMM_GROUPs that
        # index into it: with several processes ``define_comm_locations`` lists every process's
        # window members once all locations exist
        self._multi = processes > 1
        self.begin_process(process_name)
        self._t_min = None
        self._t_max = None
        self._closed = False

    def begin_process(self, name: str) -> None:
        """Start a process location group (one rank) with its own threads, streams, CUDA contexts
        and CUDA window; regions and attributes are shared. A multi-rank archive calls this once
        per rank and writes each rank's events before the next begins."""
        self.process = self.defs.location_group(
            name, location_group_type=self._otf2.LocationGroupType.PROCESS, system_tree_parent=self.node
        )
        self._process_name = name
        self._contexts: dict[int, object] = {}
        self._streams: dict[tuple[int, int], object] = {}
        self._threads: dict[str, object] = {}
        self.window = None

    _PROCESS_STATE = ("process", "_process_name", "_contexts", "_streams", "_threads", "window")

    def process_state(self) -> dict:
        """The current process's definitions, to come back to with :meth:`use_process`."""
        return {k: getattr(self, k) for k in self._PROCESS_STATE}

    def use_process(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def define_comm_locations(self, states: list[dict]) -> None:
        """The one CUDA COMM_LOCATIONS group of a multi-process archive: each process's window
        members (master thread, then its streams), after every location is defined."""
        members = []
        for st in states:
            members += [st["_threads"]["Master thread"]] + [st["_streams"][k] for k in sorted(st["_streams"])]
        self.defs.group(
            "CUDA", group_type=self._otf2.GroupType.COMM_LOCATIONS, paradigm=self._otf2.Paradigm.CUDA, members=members
        )

    # -- definitions ----------------------------------------------------------------------------
    def thread(self, name: str):
        if name not in self._threads:
            self._threads[name] = self.defs.location(name, type=self._otf2.LocationType.CPU_THREAD, group=self.process)
        return self._threads[name]

    def stream(self, device: int, stream: int):
        key = (int(device), int(stream))
        if key not in self._streams:
            if self.window is not None:
                raise RuntimeError("streams must be created before cuda_window()")
            otf2 = self._otf2
            if key[0] not in self._contexts:
                stn = self.defs.system_tree_node(f"CUDA Device {key[0]}", class_name="CUDA Device", parent=self.node)
                prefix = "" if self._process_name == "Process" else f"{self._process_name} "
                self._contexts[key[0]] = self.defs.location_group(
                    f"{prefix}CUDA Context {key[0]}",
                    location_group_type=otf2.LocationGroupType.ACCELERATOR,
                    system_tree_parent=stn,
                    creating_location_group=self.process,
                )
            self._streams[key] = self.defs.location(
                f"CUDA[{key[0]}:{key[1]}]", type=otf2.LocationType.ACCELERATOR_STREAM, group=self._contexts[key[0]]
            )
        return self._streams[key]

    def region(self, name: str, kind: str, canonical: str | None = None):
        """A region by kind: ``kernel``, ``memset``, ``launch`` (CUDA API), ``user`` or ``function``."""
        key = (name, kind, canonical)
        if key not in self._regions:
            otf2 = self._otf2
            role, paradigm = {
                "kernel": (otf2.RegionRole.KERNEL, otf2.Paradigm.CUDA),
                "memset": (otf2.RegionRole.DATA_TRANSFER, otf2.Paradigm.CUDA),
                "launch": (otf2.RegionRole.WRAPPER, otf2.Paradigm.CUDA),
                "user": (otf2.RegionRole.FUNCTION, otf2.Paradigm.USER),
                "function": (otf2.RegionRole.FUNCTION, otf2.Paradigm.USER),
            }[kind]
            self._regions[key] = self.defs.region(name, canonical_name=canonical or name, region_role=role, paradigm=paradigm)
        return self._regions[key]

    def attribute(self, name: str):
        if name not in self._attrs:
            otf2 = self._otf2
            spec = {
                ATTR_STREAM_REF: (otf2.Type.LOCATION, "Referenced CUDA stream"),
                ATTR_CORRELATION: (otf2.Type.UINT64, "CUPTI correlation id (from the Kineto trace)"),
                ATTR_COLLECTIVE: (otf2.Type.STRING, "NCCL collective (from the Kineto kernel arguments)"),
                ATTR_MSG_BYTES: (otf2.Type.UINT64, "bytes: NCCL message size or memset size (from the Kineto trace)"),
            }[name]
            self._attrs[name] = self.defs.attribute(name, description=spec[1], type=spec[0])
        return self._attrs[name]

    def string_ref(self, value: str) -> int:
        return self.defs._string(value)._ref

    def cuda_window(self, host_thread: str = "Master thread"):
        """Define the CUDA RMA window (host thread + every stream); returns it."""
        if self.window is None:
            otf2 = self._otf2
            host = self.thread(host_thread)
            members = [host] + [self._streams[k] for k in sorted(self._streams)]
            if not self._multi:
                self.defs.group("CUDA", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.CUDA, members=members)
            group = self.defs.group(
                "CUDA_GROUP", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.CUDA, members=members
            )
            comm = self.defs.comm("CUDA_COMM", group=group)
            self.window = self.defs.rma_win("CUDA_WINDOW", comm=comm)
            self._window_members = {m._ref: i for i, m in enumerate(members)}
        return self.window

    def window_rank(self, location) -> int:
        return self._window_members[location._ref]

    # -- events ---------------------------------------------------------------------------------
    def write_events(self, location, t, op, a, b=None, c=None, d=None, attrs=None) -> int:
        """Write one location's events, in the order given (times must not decrease).

        Arrays of equal length: ``t`` (ticks), ``op`` (OP_*), ``a`` (region ref for Enter/Leave,
        window ref for RMA), ``b`` (RMA remote), ``c`` (RMA bytes), ``d`` (RMA matching id).
        ``attrs``: optional {attribute name: int array} with NO_VALUE where absent (string
        attributes take string refs).
        """
        t = np.asarray(t, dtype=np.int64)
        n = t.size
        if n == 0:
            return 0
        if np.any(t[1:] < t[:-1]):
            raise ValueError(f"timestamps of location {location.name!r} decrease")
        if t[0] < 0:
            raise ValueError(f"negative timestamp on location {location.name!r}")
        ew = self.w.event_writer_from_location(location)
        h = ctypes.cast(ew.handle, c_vp).value
        op = np.asarray(op, dtype=np.int64)
        a = np.asarray(a, dtype=np.int64)
        zeros = np.zeros(n, np.int64)
        b = zeros if b is None else np.asarray(b, dtype=np.int64)
        c = zeros if c is None else np.asarray(c, dtype=np.int64)
        d = zeros if d is None else np.asarray(d, dtype=np.int64)
        attr_cols = []
        if attrs:
            for name, values in attrs.items():
                values = np.asarray(values, dtype=np.int64)
                if np.all(values == NO_VALUE):
                    continue
                ref = self.attribute(name)._ref
                adder = {ATTR_STREAM_REF: _al_add_loc, ATTR_COLLECTIVE: _al_add_str}.get(name, _al_add_u64)
                attr_cols.append((ref, adder, values.tolist()))
        al = _al_new() if attr_cols else None
        tl, opl, al_, bl, cl, dl = t.tolist(), op.tolist(), a.tolist(), b.tolist(), c.tolist(), d.tolist()
        try:
            for i in range(n):
                lst = None
                if attr_cols:
                    for ref, adder, vals in attr_cols:
                        v = vals[i]
                        if v != NO_VALUE:
                            adder(al, ref, v)
                            lst = al
                o = opl[i]
                if o == OP_ENTER:
                    code = _enter(h, lst, tl[i], al_[i])
                elif o == OP_LEAVE:
                    code = _leave(h, lst, tl[i], al_[i])
                elif o == OP_GET:
                    code = _rma_get(h, lst, tl[i], al_[i], bl[i], cl[i], dl[i])
                elif o == OP_PUT:
                    code = _rma_put(h, lst, tl[i], al_[i], bl[i], cl[i], dl[i])
                else:
                    code = _rma_done(h, lst, tl[i], al_[i], dl[i])
                if code != ll.SUCCESS:
                    raise ArtifactError(
                        f"writing event {i} of location {location.name!r} failed ({ll.error_text(code)})", self.dir
                    )
                if lst is not None:
                    _al_clear(al)
        finally:
            if al is not None:
                _al_delete(al)
        written = getattr(location, "_number_of_events_written", 0) or 0
        location._number_of_events_written = written + n
        lo, hi = int(t[0]), int(t[-1])
        self._t_min = lo if self._t_min is None else min(self._t_min, lo)
        self._t_max = hi if self._t_max is None else max(self._t_max, hi)
        return n

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._t_min is not None:
            # The otf2 writer derives the clock properties (global offset, trace length) from
            # the timestamps it saw; events written through the C writer are reported here.
            self.w._update_timestamps(self._t_min)
            self.w._update_timestamps(self._t_max)
        self.w.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            try:
                self.close()
            finally:
                shutil.rmtree(self.dir, ignore_errors=True)
            return False
        self.close()
        return False


def nested_event_order(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Enter/Leave events of laminar (nested or disjoint) intervals in a valid record order.

    Returns (times, is_enter, interval index). At equal times, leaves come before enters (a
    region that ends closes before the next opens), outer regions open first and close last,
    and zero-length regions sit between the two as adjacent Enter/Leave pairs. Raises
    ValueError when two intervals overlap without nesting (not representable on one location).
    """
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    n = s.size
    idx = np.arange(n, dtype=np.int64)
    zero = e == s
    # Columns of the sort key: time, class (0 leave, 1 zero-length, 2 enter), then tie-breakers.
    t = np.concatenate([s, e])
    is_enter = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    which = np.concatenate([idx, idx])
    cls = np.where(np.concatenate([zero, zero]), 1, np.where(is_enter, 2, 0))
    # enter: longer (outer) first -> -end; leave: later start (inner) first -> -start;
    # zero-length: interval order, enter before leave.
    k1 = np.where(is_enter, -np.concatenate([e, e]), -np.concatenate([s, s]))
    k1 = np.where(cls == 1, 0, k1)
    k2 = np.where(cls == 1, 2 * which + (~is_enter), np.where(is_enter, which, -which))
    order = np.lexsort((k2, k1, cls, t))
    t, is_enter, which = t[order], is_enter[order], which[order]
    # Verify laminarity: the records must pair up as properly nested Enter/Leave.
    codes = np.where(is_enter, which, ~which)
    try:
        pair_enter_leave(codes)
    except ValueError:
        raise ValueError("ranges overlap without nesting") from None
    return t, is_enter, which


def frame_events(s: np.ndarray, e: np.ndarray, region_refs: np.ndarray, attrs: dict[str, np.ndarray] | None = None):
    """Enter/Leave event arrays (t, op, a, attrs) for ranges [s, e) on one location."""
    t, is_enter, which = nested_event_order(s, e)
    op = np.where(is_enter, OP_ENTER, OP_LEAVE)
    a = np.asarray(region_refs, dtype=np.int64)[which]
    ev_attrs = None
    if attrs:
        ev_attrs = {k: np.where(is_enter, np.asarray(v, np.int64)[which], NO_VALUE) for k, v in attrs.items()}
    return t, op, a, ev_attrs


# -- tables -> archive ----------------------------------------------------------------------------


def _nullable(series: pd.Series) -> np.ndarray:
    return series.fillna(NO_VALUE).to_numpy(np.int64) if len(series) else np.empty(0, np.int64)


def write_tables(
    gpu: pd.DataFrame,
    host: pd.DataFrame,
    target,
    *,
    creator: str,
    description: str = "",
    overwrite: bool = False,
    extra_ranges: dict | None = None,
) -> dict:
    """Write one rank's tables (``Trace.gpu`` / ``Trace.host`` rows of that rank) as an archive.

    ``extra_ranges``: {thread name: (starts, ends, region names)} of further host regions
    (Python function regions, as full Python instrumentation records them), nested among the
    phases and launches of that thread. Returns counts of what was written.
    """
    if len(gpu) == 0:
        raise ArtifactError("no GPU activity to write", target)
    counts = {
        "kernels": int((gpu["kind"] == "kernel").sum()),
        "memcpys": int((gpu["kind"] == "memcpy").sum()),
        "memsets": int((gpu["kind"] == "memset").sum()),
        "phases": int((host["kind"] == "phase").sum()),
        "launches": int((host["kind"] == "launch").sum()),
        "events": 0,
    }
    with ScoreP9Writer(target, creator=creator, description=description, overwrite=overwrite) as w:
        counts["events"] += _write_process(w, gpu, host, extra_ranges or {})
    return counts


def write_merged(
    gpu: pd.DataFrame, host: pd.DataFrame, target, *, creator: str, description: str = "", overwrite: bool = False
) -> dict:
    """Every rank of ``Trace.gpu`` / ``Trace.host`` in one archive, one process ``Rank <R>`` each, so
    Vampir opens a whole run from one anchor file. Times are written as they are: the ranks must
    share one clock (Kineto traces of one node do). For viewing; the analysis reads per-rank archives."""
    ranks = sorted(int(r) for r in pd.unique(gpu["rank"]))
    if not ranks:
        raise ArtifactError("no GPU activity to write", target)
    counts = {"ranks": ranks, "events": 0}
    parts = [(gpu[gpu["rank"] == r], host[host["rank"] == r]) for r in ranks]
    with ScoreP9Writer(
        target,
        creator=creator,
        description=description,
        overwrite=overwrite,
        process_name=f"Rank {ranks[0]}",
        processes=len(ranks),
    ) as w:
        states = []
        for i, (r, (g, h)) in enumerate(zip(ranks, parts)):
            if i:
                w.begin_process(f"Rank {r}")
            states.append((w.process_state(), _define_locations(w, g, h, {})))
        w.define_comm_locations([st for st, _ in states])
        for (st, device_of_stream), (g, h) in zip(states, parts):
            w.use_process(st)
            counts["events"] += _write_process_events(w, g, h, {}, device_of_stream)
    return counts


def _define_locations(w: ScoreP9Writer, gpu: pd.DataFrame, host: pd.DataFrame, extra_ranges: dict) -> dict[int, int]:
    """The threads and streams of one rank (the writer's current process); returns stream -> device."""
    w.thread("Master thread")
    for th in list(pd.unique(host["thread"])) + list(extra_ranges):
        w.thread(str(th))
    pairs = gpu[["device", "stream"]].drop_duplicates().sort_values(["device", "stream"])
    device_of_stream: dict[int, int] = {}
    for dev, st in pairs.itertuples(index=False):
        w.stream(int(dev), int(st))
        device_of_stream.setdefault(int(st), int(dev))
    return device_of_stream


def _write_process(w: ScoreP9Writer, gpu: pd.DataFrame, host: pd.DataFrame, extra_ranges: dict) -> int:
    """The locations and events of one rank (the writer's current process); returns events written."""
    return _write_process_events(w, gpu, host, extra_ranges, _define_locations(w, gpu, host, extra_ranges))


def _write_process_events(
    w: ScoreP9Writer, gpu: pd.DataFrame, host: pd.DataFrame, extra_ranges: dict, device_of_stream: dict[int, int]
) -> int:
    events = 0
    win = w.cuda_window("Master thread")
    for (dev, st), rows in gpu.groupby(["device", "stream"], sort=True, observed=True):
        loc = w.stream(int(dev), int(st))
        events += _write_stream(w, loc, rows, win)
    threads = sorted(set(str(x) for x in pd.unique(host["thread"])) | set(extra_ranges))
    for th in threads:
        rows = host[host["thread"] == th]
        events += _write_host(w, w.thread(th), rows, device_of_stream, extra_ranges.get(th))
    return events


def _write_stream(w: ScoreP9Writer, loc, rows: pd.DataFrame, win) -> int:
    el = rows[rows["kind"] != "memcpy"]
    cp = rows[rows["kind"] == "memcpy"]
    parts_t, parts_op, parts_a, parts_b, parts_c, parts_d = [], [], [], [], [], []
    parts_attr: list[dict] = []
    if len(el):
        refs = np.array(
            [w.region(n, "memset" if k == "memset" else "kernel")._ref for n, k in zip(el["name"], el["kind"])], dtype=np.int64
        )
        coll = np.array([w.string_ref(c) if isinstance(c, str) and c else NO_VALUE for c in el["collective"]], dtype=np.int64)
        attrs = {
            ATTR_CORRELATION: _nullable(el["correlation"]),
            ATTR_COLLECTIVE: coll,
            ATTR_MSG_BYTES: _nullable(el["msg_bytes"]),
        }
        try:
            t, op, a, ev_attrs = frame_events(el["start_ns"].to_numpy(np.int64), el["end_ns"].to_numpy(np.int64), refs, attrs)
        except ValueError:
            raise ArtifactError(f"kernels overlap on stream {loc.name}: not representable as one OTF2 location", w.dir) from None
        n = t.size
        parts_t.append(t), parts_op.append(op), parts_a.append(a)
        parts_b.append(np.zeros(n, np.int64)), parts_c.append(np.zeros(n, np.int64)), parts_d.append(np.zeros(n, np.int64))
        parts_attr.append(ev_attrs)
    if len(cp):
        host_rank = w.window_rank(w.thread("Master thread"))
        self_rank = w.window_rank(loc)
        m = len(cp)
        directions = [classify.memcpy_direction(n) for n in cp["name"]]
        is_put = np.array([d == "DtoH" for d in directions])
        remote = np.array([host_rank if d in ("HtoD", "DtoH") else self_rank for d in directions], dtype=np.int64)
        nbytes = cp["msg_bytes"].fillna(0).to_numpy(np.int64)
        match = np.arange(m, dtype=np.int64)  # one matching id per copy: pairing is exact
        s = cp["start_ns"].to_numpy(np.int64)
        e = cp["end_ns"].to_numpy(np.int64)
        t = np.concatenate([s, e])
        op = np.concatenate([np.where(is_put, OP_PUT, OP_GET), np.full(m, OP_DONE)])
        corr = _nullable(cp["correlation"])
        parts_t.append(t), parts_op.append(op), parts_a.append(np.full(2 * m, win._ref, np.int64))
        parts_b.append(np.concatenate([remote, np.zeros(m, np.int64)]))
        parts_c.append(np.concatenate([nbytes, np.zeros(m, np.int64)]))
        parts_d.append(np.concatenate([match, match]))
        parts_attr.append(
            {
                ATTR_CORRELATION: np.concatenate([corr, np.full(m, NO_VALUE)]),
                ATTR_COLLECTIVE: np.full(2 * m, NO_VALUE),
                ATTR_MSG_BYTES: np.full(2 * m, NO_VALUE),
            }
        )
    t = np.concatenate(parts_t)
    order = np.argsort(t, kind="stable")
    attrs = {
        k: np.concatenate(
            [p[k] if p is not None and k in p else np.full(len(pt), NO_VALUE) for p, pt in zip(parts_attr, parts_t)]
        )[order]
        for k in (ATTR_CORRELATION, ATTR_COLLECTIVE, ATTR_MSG_BYTES)
    }
    return w.write_events(
        loc,
        t[order],
        np.concatenate(parts_op)[order],
        np.concatenate(parts_a)[order],
        np.concatenate(parts_b)[order],
        np.concatenate(parts_c)[order],
        np.concatenate(parts_d)[order],
        attrs,
    )


def _write_host(w: ScoreP9Writer, loc, rows: pd.DataFrame, device_of_stream: dict[int, int], extra=None) -> int:
    refs = np.array(
        [
            w.region(user_region_name(n), "user")._ref if k == "phase" else w.region(n, "launch")._ref
            for n, k in zip(rows["name"], rows["kind"])
        ],
        dtype=np.int64,
    )
    stream_refs = []
    for s in rows["stream"]:
        if pd.isna(s) or int(s) not in device_of_stream:
            stream_refs.append(NO_VALUE)
        else:
            stream_refs.append(w.stream(device_of_stream[int(s)], int(s))._ref)
    starts = rows["start_ns"].to_numpy(np.int64)
    ends = rows["end_ns"].to_numpy(np.int64)
    stream_refs = np.array(stream_refs, dtype=np.int64)
    corr = _nullable(rows["correlation"])
    if extra is not None:
        x_s, x_e, x_names = extra
        x_s = np.asarray(x_s, np.int64)
        x_e = np.asarray(x_e, np.int64)
        names, inverse = np.unique(np.asarray(x_names, dtype=object).astype(str), return_inverse=True)
        name_refs = np.array([w.region(str(n), "function")._ref for n in names], dtype=np.int64)
        refs = np.concatenate([refs, name_refs[inverse]])
        starts = np.concatenate([starts, x_s])
        ends = np.concatenate([ends, x_e])
        stream_refs = np.concatenate([stream_refs, np.full(x_s.size, NO_VALUE)])
        corr = np.concatenate([corr, np.full(x_s.size, NO_VALUE)])
    attrs = {ATTR_STREAM_REF: stream_refs, ATTR_CORRELATION: corr}
    try:
        t, op, a, ev_attrs = frame_events(starts, ends, refs, attrs)
    except ValueError:
        raise ArtifactError(f"host ranges on thread {loc.name!r} overlap without nesting", w.dir) from None
    return w.write_events(loc, t, op, a, attrs=ev_attrs)
