"""Read a Score-P OTF2 archive into the trace tables (``dnabert_scaling.traces.model``).

Two Score-P layouts are understood:

* Score-P 9: every CUDA stream is a location of type ACCELERATOR_STREAM (``GPU`` in the Python
  bindings) named ``CUDA[<device>:<stream>]``, in a "CUDA Context" location group of type
  ACCELERATOR whose *creating location group* is the process; kernel regions have role KERNEL.
* Older Score-P (the CASITA sample): the GPU location sits directly in the process group and
  kernel regions may carry mangled names (demangled here).

Ranks: with ``--mpp=none`` (NCCL-only DDP) every archive holds one process called "Process" and
the only record of the rank is the experiment directory's name, ``scorep-rank<R>``; an MPI
archive holds several processes named "MPI Rank <r>" and each is a rank.

What is read: the GPU stream locations (Enter/Leave = kernels, RMA = copies) and the CPU threads
(only the phase user regions and the kernel-launch API calls are kept). Other location types are
not read, and each location's fate is recorded in ``meta['locations']`` (never silently).
Events are read per location with OTF2's local readers (see ``otf2_lowlevel``), so the events
of unneeded types never reach Python.

Times: ticks are converted to integer nanoseconds with the clock properties
(``ns = ticks * 1e9 / timer_resolution``, exact integer arithmetic, no offset removed), so a
trace written with a 1 GHz timer reads back to exactly the nanoseconds it was written with.

Errors (missing or truncated files, non-monotonic timestamps, unbalanced regions) are raised as
``ArtifactError`` naming the file and the location; an archive without GPU streams raises
``NoGpuActivityError``.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.phases import PHASE_NAMES
from dnabert_scaling.traces import classify
from dnabert_scaling.traces import otf2_lowlevel as ll
from dnabert_scaling.traces.model import (
    CATEGORIES,
    CATEGORY_DTYPE,
    GPU_KIND_DTYPE,
    GPU_SCHEMA,
    HOST_KIND_DTYPE,
    HOST_SCHEMA,
    STR,
    NoGpuActivityError,
    Trace,
    empty_gpu,
    empty_host,
    make_frame,
)

ANCHOR_NAME = layout.ANCHOR
_STREAM_NAME_RE = re.compile(r"^CUDA\[(\d+):(\d+)\]")
_MPI_RANK_RE = re.compile(r"^MPI Rank (\d+)$")
IDLE_REGIONS = {"COMPUTE IDLE", "GPU IDLE"}
# Two different flushes share a word. ``TRACE BUFFER FLUSH`` (paradigm MEASUREMENT_SYSTEM): Score-P's
# trace buffer ran full and was written to disk mid-run (raise SCOREP_TOTAL_MEMORY). ``BUFFER FLUSH``
# (paradigm CUDA, source file ``CUDA_FLUSH``): Score-P's CUDA adapter converting the CUPTI activity
# buffers into trace records, which it does at synchronisation points and at the end of the run.
TRACE_FLUSH_REGION = "TRACE BUFFER FLUSH"
CUPTI_FLUSH_REGION = "BUFFER FLUSH"
HOST_FLUSH_REGIONS = {TRACE_FLUSH_REGION, CUPTI_FLUSH_REGION}

# Attribute names. CUDA_STREAM_REF is Score-P's; the other three are written by
# ``dnabert-scaling convert`` so that Kineto facts survive the round trip through OTF2.
ATTR_STREAM_REF = "CUDA_STREAM_REF"
ATTR_CORRELATION = "CUPTI_CORRELATION_ID"
ATTR_COLLECTIVE = "NCCL_COLLECTIVE"
ATTR_MSG_BYTES = "MSG_BYTES"


# -- paths --------------------------------------------------------------------------------------


def resolve_anchor(path) -> Path:
    """The anchor file of an OTF2 archive given the anchor itself or its experiment directory."""
    p = Path(path)
    if p.is_dir():
        cand = p / ANCHOR_NAME
        if cand.is_file():
            return cand
        anchors = sorted(p.glob("*.otf2"))
        if len(anchors) == 1:
            return anchors[0]
        if not anchors:
            raise ArtifactError(f"no OTF2 anchor file ({ANCHOR_NAME}) in this directory", p)
        raise ArtifactError(f"several OTF2 anchor files here ({', '.join(a.name for a in anchors)}): name one", p)
    if not p.exists():
        raise ArtifactError("OTF2 anchor file not found", p)
    return p


def rank_from_directory(anchor: Path) -> int | None:
    """R from an experiment directory called ``scorep-rank<R>`` (the run layout), else None."""
    return layout.scorep_rank_of(anchor.resolve().parent.name)


def _check_files(anchor: Path) -> Path:
    defs = anchor.with_suffix(".def")
    if not defs.is_file():
        raise ArtifactError(f"the global definition file {defs.name} of this archive is missing", anchor)
    evt_dir = anchor.with_suffix("")
    if not evt_dir.is_dir():
        raise ArtifactError(f"the event directory {evt_dir.name}/ of this archive is missing", anchor)
    return evt_dir


# -- numeric helpers ------------------------------------------------------------------------------


def ticks_to_ns(ticks: np.ndarray, resolution: int) -> np.ndarray:
    """Exact floor(ticks * 1e9 / resolution) as int64, without overflowing 64 bits."""
    t = np.asarray(ticks, dtype=np.uint64)
    if t.size and int(t.max()) >= 2**63:
        raise ValueError("timestamp beyond int64")
    res = int(resolution)
    if res == 10**9:
        return t.astype(np.int64)
    if res <= 0:
        raise ValueError(f"invalid timer resolution {res}")
    if res <= 18 * 10**9:
        q = t // np.uint64(res)
        r = t % np.uint64(res)
        ns = q * np.uint64(10**9) + (r * np.uint64(10**9)) // np.uint64(res)
        return ns.astype(np.int64)
    return np.array([(int(x) * 10**9) // res for x in t], dtype=np.int64)  # pragma: no cover


def pair_enter_leave(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Match nested Enter/Leave records of one location, vectorised.

    ``codes`` holds the region ref for an Enter and ``~ref`` (negative) for a Leave, in record
    order. The nesting depth after each record is a cumulative sum; an Enter that brings the
    depth to d is closed by the next Leave that starts at depth d, so after a stable sort by
    that level the records of each level alternate Enter, Leave. Returns the positions of the
    Enters, of their Leaves, and the number of regions left open at the end (dropped).
    Raises ValueError on a Leave without Enter or a Leave of another region.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = codes.size
    if n == 0:
        e = np.empty(0, np.int64)
        return e, e, 0
    is_enter = codes >= 0
    depth = np.cumsum(np.where(is_enter, 1, -1))
    if depth.min() < 0:
        i = int(np.argmax(depth < 0))
        raise ValueError(f"record {i}: Leave without a matching Enter")
    level = np.where(is_enter, depth, depth + 1)
    order = np.argsort(level, kind="stable")
    unclosed = int(depth[-1])
    if unclosed:
        # The last record of each level 1..unclosed is an Enter that is never left: drop it.
        lv = level[order]
        last_of_level = np.flatnonzero(np.r_[lv[1:] != lv[:-1], True])
        drop = last_of_level[lv[last_of_level] <= unclosed]
        if not np.all(is_enter[order[drop]]):
            raise ValueError("unbalanced Enter/Leave records")
        keep = np.ones(order.size, dtype=bool)
        keep[drop] = False
        order = order[keep]
    ent = order[0::2]
    lea = order[1::2]
    if ent.size != lea.size or not np.all(is_enter[ent]) or np.any(is_enter[lea]):
        raise ValueError("unbalanced Enter/Leave records")
    bad = codes[ent] != ~codes[lea]
    if np.any(bad):
        k = int(np.argmax(bad))
        raise ValueError(f"record {int(lea[k])}: Leave of region {int(~codes[lea[k]])} inside region {int(codes[ent[k]])}")
    return ent, lea, unclosed


# -- definitions --------------------------------------------------------------------------------


class _Regions:
    """Per-region-ref classification, computed once per archive."""

    def __init__(self, defs):
        import otf2

        role_artificial = otf2.RegionRole.ARTIFICIAL
        role_flush = otf2.RegionRole.FLUSH
        role_data = otf2.RegionRole.DATA_TRANSFER
        self.name: dict[int, str] = {}
        self.phase: dict[int, str] = {}
        self.launch: set[int] = set()
        self.host_flush: set[int] = set()
        self.cupti_flush: set[int] = set()
        self.gpu_kind: dict[int, str] = {}  # kernel | memset | memcpy | excluded
        self.gpu_name: dict[int, str] = {}
        for r in defs.regions:
            ref, name = r._ref, r.name or ""
            self.name[ref] = name
            p = classify.phase_name(name)
            if p is not None:
                self.phase[ref] = p
            if classify.is_launch_api(name) or classify.is_copy_api(name):
                self.launch.add(ref)
            upper = name.upper()
            if upper in HOST_FLUSH_REGIONS:
                self.host_flush.add(ref)
                if _is_cupti_flush(r, upper):
                    self.cupti_flush.add(ref)
            if upper in IDLE_REGIONS or r.region_role in (role_artificial, role_flush) or "FLUSH" in upper:
                self.gpu_kind[ref] = "excluded"
            elif name.startswith("Memset") or (r.region_role == role_data and "memset" in name.lower()):
                self.gpu_kind[ref] = "memset"
                self.gpu_name[ref] = classify.MEMSET_NAME
            elif name.startswith("Memcpy"):
                self.gpu_kind[ref] = "memcpy"
                self.gpu_name[ref] = name
            else:
                self.gpu_kind[ref] = "kernel"
                self.gpu_name[ref] = classify.kernel_display_name(name)
        self.host_wanted = frozenset(set(self.phase) | self.launch | self.host_flush)
        self._build_lookup_arrays()

    # Lookup arrays indexed by region ref, so that per-event classification is one ``take``.
    KIND_CODES = {"kernel": 0, "memcpy": 1, "memset": 2, "excluded": 3}  # GPU_KINDS order + excluded

    def _build_lookup_arrays(self) -> None:
        n = (max(self.name) + 1) if self.name else 1
        self.kind_code = np.full(n, self.KIND_CODES["kernel"], dtype=np.int8)
        self.cat_code = np.full(n, CATEGORIES.index("compute"), dtype=np.int8)
        self.coll_of = np.full(n, np.nan, dtype=object)
        names = sorted(set(self.gpu_name.values()) | set(self.name.values()) | set(PHASE_NAMES) | set(self.phase.values()))
        self.names = np.array(names, dtype=object)
        index = {nm: i for i, nm in enumerate(names)}
        self.gpu_name_idx = np.zeros(n, dtype=np.int64)
        self.host_name_idx = np.zeros(n, dtype=np.int64)
        self.phase_mask = np.zeros(n, dtype=bool)
        self.launch_mask = np.zeros(n, dtype=bool)
        self.flush_mask = np.zeros(n, dtype=bool)
        self.cupti_flush_mask = np.zeros(n, dtype=bool)
        for ref, name in self.name.items():
            kind = self.gpu_kind.get(ref, "kernel")
            self.kind_code[ref] = self.KIND_CODES[kind]
            disp = self.gpu_name.get(ref, name)
            self.gpu_name_idx[ref] = index[disp]
            if kind in ("memcpy", "memset"):
                self.cat_code[ref] = CATEGORIES.index("memory")
            elif kind == "kernel" and classify.is_nccl(disp):
                self.cat_code[ref] = CATEGORIES.index("nccl")
                self.coll_of[ref] = classify.collective_from_name(disp) or np.nan
            self.host_name_idx[ref] = index[self.phase.get(ref, name)]
        for ref in self.phase:
            self.phase_mask[ref] = True
        for ref in self.launch:
            self.launch_mask[ref] = True
        for ref in self.host_flush:
            self.flush_mask[ref] = True
        for ref in self.cupti_flush:
            self.cupti_flush_mask[ref] = True


def _is_cupti_flush(region, upper_name: str) -> bool:
    """A CUDA-adapter flush of CUPTI activity buffers (not a trace-buffer flush)."""
    import otf2

    if upper_name == TRACE_FLUSH_REGION:
        return False
    return region.paradigm == otf2.Paradigm.CUDA or (region.source_file or "") == "CUDA_FLUSH"


def _creator(tr_handle) -> tuple[str, str, str]:
    import _otf2

    try:
        creator = _otf2.Reader_GetCreator(tr_handle) or ""
    except Exception:
        creator = ""
    try:
        version = ".".join(str(x) for x in _otf2.Reader_GetVersion(tr_handle))
    except Exception:
        version = ""
    tool, _, tool_version = creator.strip().rpartition(" ")
    if not tool:
        tool, tool_version = creator.strip() or "unknown", ""
    return tool, tool_version, version


def _world_size(defs, n_processes: int) -> int | None:
    for c in defs.comms:
        if c.name == "MPI_COMM_WORLD":
            try:
                return len(c.group.members)
            except Exception:  # pragma: no cover - malformed group
                break
    return n_processes if n_processes > 1 else None


def _assign_ranks(defs, anchor: Path) -> tuple[dict, list[str]]:
    """{process location group ref: rank} and warnings."""
    import otf2

    warnings: list[str] = []
    procs = [g for g in defs.location_groups if g.location_group_type == otf2.LocationGroupType.PROCESS]
    if not procs:
        raise ArtifactError("the archive defines no process location group", anchor)
    if len(procs) == 1:
        g = procs[0]
        r = rank_from_directory(anchor)
        if r is None:
            m = _MPI_RANK_RE.match(g.name or "")
            if m:
                r = int(m.group(1))
            else:
                r = None  # the caller numbers it (0, or its place in the list of traces given)
        return {g._ref: r}, warnings
    ranks = {}
    for i, g in enumerate(procs):
        m = _MPI_RANK_RE.match(g.name or "")
        ranks[g._ref] = int(m.group(1)) if m else None
    values = [v for v in ranks.values() if v is not None]
    if None in ranks.values() or len(set(values)) != len(values):
        warnings.append("process groups are not all named 'MPI Rank <r>': ranks numbered by definition order")
        ranks = {g._ref: i for i, g in enumerate(procs)}
    return ranks, warnings


# -- main ---------------------------------------------------------------------------------------


def read_otf2(path) -> Trace:
    """Read every rank of one OTF2 archive (anchor file or experiment directory)."""
    import otf2

    anchor = resolve_anchor(path)
    evt_dir = _check_files(anchor)
    with ll.captured_errors() as errors:
        try:
            reader_cm = otf2.reader.open(str(anchor))
            tr = reader_cm.__enter__()
        except Exception as exc:
            detail = errors.messages[0] if errors.messages else str(exc)
            raise ArtifactError(f"not a readable OTF2 archive ({detail})", anchor) from None
        try:
            return _read_open_archive(tr, anchor, evt_dir, errors)
        finally:
            reader_cm.__exit__(None, None, None)


def _read_open_archive(tr, anchor: Path, evt_dir: Path, errors) -> Trace:
    import otf2

    defs = tr.definitions
    clock = defs.clock_properties
    resolution = int(clock.timer_resolution)
    tool, tool_version, otf2_version = _creator(tr.handle)
    regions = _Regions(defs)
    rank_of_group, rank_warnings = _assign_ranks(defs, anchor)
    rank_assumed = None in rank_of_group.values()
    if rank_assumed:
        rank_of_group = {g: 0 for g in rank_of_group}
        rank_warnings.append(
            f"rank unknown (one process, directory {anchor.resolve().parent.name!r} is not scorep-rank<R>): assumed rank 0"
        )
    world_size = _world_size(defs, len(rank_of_group))
    attr_ids = {a.name: a._ref for a in defs.attributes}
    attrs = ll.AttributeRefs(
        stream_ref=attr_ids.get(ATTR_STREAM_REF),
        correlation=attr_ids.get(ATTR_CORRELATION),
        collective=attr_ids.get(ATTR_COLLECTIVE),
        msg_bytes=attr_ids.get(ATTR_MSG_BYTES),
    )
    gpu_attr_regions = (
        frozenset(ref for ref, k in regions.gpu_kind.items() if k in ("kernel", "memset"))
        if (attrs.correlation is not None or attrs.collective is not None or attrs.msg_bytes is not None)
        else frozenset()
    )
    launch_attr_regions = frozenset(regions.launch)

    GPU = otf2.LocationType.GPU
    CPU = otf2.LocationType.CPU_THREAD
    PROCESS = otf2.LocationGroupType.PROCESS

    # Which rank owns each location, and whether to read it.
    per_rank: dict[int, dict] = {
        r: {"gpu": [], "cpu": [], "locations": [], "warnings": list(rank_warnings), "legacy": False, "events_total": 0}
        for r in rank_of_group.values()
    }
    stream_of_location: dict[int, tuple[int, int]] = {}
    single_rank = next(iter(per_rank)) if len(per_rank) == 1 else None
    plans: list[ll.LocationPlan] = []
    for loc in defs.locations:
        g = loc.group
        owner = g if g.location_group_type == PROCESS else g.creating_location_group
        if owner is None and single_rank is not None:
            rank = single_rank
        elif owner is not None and owner._ref in rank_of_group:
            rank = rank_of_group[owner._ref]
        else:
            # Cannot tell which process this location belongs to: record it on every rank.
            for info in per_rank.values():
                info["locations"].append(
                    {
                        "name": loc.name,
                        "type": str(loc.type).split(".")[-1],
                        "group": g.name,
                        "events": int(loc.number_of_events),
                        "read": False,
                        "why": f"group {g.name!r} belongs to no known process",
                    }
                )
                info["warnings"].append(f"location {loc.name!r} skipped: its group {g.name!r} has no creating process")
            continue
        info = per_rank[rank]
        info["events_total"] += int(loc.number_of_events)
        entry = {
            "name": loc.name,
            "type": str(loc.type).split(".")[-1],
            "group": g.name,
            "events": int(loc.number_of_events),
            "read": False,
            "why": "",
        }
        info["locations"].append(entry)
        if loc.type == GPU:
            if g.location_group_type == PROCESS:
                info["legacy"] = True
            m = _STREAM_NAME_RE.match(loc.name or "")
            if m:
                stream_of_location[loc._ref] = (int(m.group(1)), int(m.group(2)))
            else:
                stream_of_location[loc._ref] = (-1, int(loc._ref))
                info["warnings"].append(
                    f"GPU location {loc.name!r} is not named CUDA[<device>:<stream>]: device -1, stream = location id {loc._ref}"
                )
            info["gpu"].append(loc)
            if loc.number_of_events == 0:
                entry["why"] = "no events"
                continue
            entry["read"] = True
            plans.append(ll.LocationPlan(loc._ref, None, gpu_attr_regions, True))
        elif loc.type == CPU:
            info["cpu"].append(loc)
            if loc.number_of_events == 0:
                entry["why"] = "no events"
                continue
            entry["read"] = True
            entry["why"] = "phases and kernel launches only"
            plans.append(ll.LocationPlan(loc._ref, regions.host_wanted, launch_attr_regions, False))
        else:
            entry["why"] = f"location type {entry['type']} carries no GPU activity, phase or launch"
            info["warnings"].append(f"location {loc.name!r} ({entry['type']}) not read: {entry['why']}")

    if not any(info["gpu"] for info in per_rank.values()):
        names = Counter(f"{l.name}" for l in defs.locations)
        listing = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in names.items())
        raise NoGpuActivityError(
            f"no GPU streams in this trace: its {len(defs.locations)} locations are CPU threads or other "
            f"non-GPU locations ({listing}). Nothing to analyse for GPU time: a CPU-only run, or Score-P "
            "recorded no CUDA activity (run with --cuda and SCOREP_CUDA_ENABLE; CUPTI may not have been subscribed)",
            anchor,
        )

    for p in plans:
        f = evt_dir / f"{p.ref}.evt"
        if not f.is_file():
            loc = defs.locations[p.ref]
            raise ArtifactError(
                f"event file {evt_dir.name}/{f.name} of location {loc.name!r} ({loc.group.name}) is missing", anchor
            )
    try:
        sinks = ll.read_locations(tr.handle, plans, attrs)
    except ll.OTF2ReadError as exc:
        m = re.search(r"location (\d+)", str(exc))
        where = ""
        detail = "; ".join(dict.fromkeys(errors.messages[-3:])) or str(exc)
        if m:
            ref = int(m.group(1))
            # a damaged local definition file fails as "definition record": name that file, not the events
            kind, suffix = ("local definition file", "def") if "definition record" in detail else ("event file", "evt")
            try:
                loc = defs.locations[ref]
                where = f" ({kind} {evt_dir.name}/{ref}.{suffix}, location {loc.name!r} of {loc.group.name})"
            except Exception:
                where = f" ({kind} {evt_dir.name}/{ref}.{suffix})"
        raise ArtifactError(f"cannot read events{where}: truncated or corrupt? {detail}", anchor) from None

    strings = _string_table(defs)
    ranks_meta: dict[int, dict] = {}
    gpu_frames, host_frames = [], []
    for rank, info in sorted(per_rank.items()):
        warnings = info["warnings"]
        if not info["gpu"]:
            raise NoGpuActivityError(f"rank {rank} has no GPU stream locations", anchor)
        events_read = 0
        g_parts, h_parts = [], []
        excluded = Counter()
        for loc in info["gpu"] + info["cpu"]:
            sink = sinks.get(loc._ref)
            if sink is None:
                continue
            events_read += sink.records_read
            _check_location(sink, loc, anchor, evt_dir)
            if sink.flushes:
                warnings.append(
                    f"location {loc.name!r}: {sink.flushes} trace buffer flush(es) "
                    f"({ticks_to_ns(np.array([sink.flush_ticks]), resolution)[0] / 1e6:.3f} ms) perturb the timing: raise SCOREP_TOTAL_MEMORY"
                )
            if sink.measurement_switches:
                warnings.append(f"location {loc.name!r}: measurement switched off/on {sink.measurement_switches} time(s)")
            try:
                if loc.type == GPU:
                    g_parts.append(
                        _gpu_rows(
                            sink, loc, rank, stream_of_location[loc._ref], regions, strings, defs, resolution, excluded, warnings
                        )
                    )
                else:
                    h_parts.append(_host_rows(sink, loc, rank, regions, stream_of_location, resolution, warnings))
            except ValueError as exc:
                raise ArtifactError(f"location {loc.name!r} ({loc.group.name}): {exc}", anchor) from None
        g_parts = [p for p in g_parts if p is not None and len(p)]
        h_parts = [p for p in h_parts if p is not None and len(p)]
        gdf = pd.concat(g_parts, ignore_index=True) if g_parts else empty_gpu()
        hdf = pd.concat(h_parts, ignore_index=True) if h_parts else empty_host()
        if len(gdf) == 0:
            raise NoGpuActivityError(
                f"rank {rank}: the CUDA stream locations hold no kernels or copies ({', '.join(l.name for l in info['gpu'])})",
                anchor,
            )
        if not len(hdf[hdf["kind"] == "phase"]):
            warnings.append("no ds:* phase regions on the host threads (phase attribution impossible)")
        streams = sorted(int(s) for s in np.unique(gdf["stream"].to_numpy()))
        ranks_meta[rank] = {
            "source": str(anchor),
            "format": "otf2",
            "tool": tool,
            "tool_version": tool_version,
            "otf2_version": otf2_version,
            "clock_resolution_hz": resolution,
            "clock_global_offset_ticks": int(clock.global_offset),
            "rank": rank,
            "rank_assumed": rank_assumed,
            "world_size": world_size,
            "streams": streams,
            "devices": sorted(int(d) for d in np.unique(gdf["device"].to_numpy())),
            "layout": "scorep<=8 (GPU locations in the process group)" if info["legacy"] else "scorep9",
            "events_read": int(events_read),
            "events_total": int(info["events_total"]),
            "excluded_gpu_regions": dict(excluded),
            "locations": info["locations"],
            "warnings": warnings,
        }
        gpu_frames.append(gdf)
        host_frames.append(hdf)
    gpu = pd.concat(gpu_frames, ignore_index=True) if gpu_frames else empty_gpu()
    host = pd.concat(host_frames, ignore_index=True) if host_frames else empty_host()
    return Trace(gpu, host, ranks_meta)


def _string_table(defs) -> dict[int, str]:
    try:
        return {s._ref: s.value for s in defs.strings}
    except Exception:  # pragma: no cover
        return {}


def _check_location(sink: ll.LocationEvents, loc, anchor: Path, evt_dir: Path) -> None:
    where = f"event file {evt_dir.name}/{loc._ref}.evt (location {loc.name!r} of {loc.group.name})"
    if sink.records_read != int(loc.number_of_events):
        raise ArtifactError(
            f"{where}: {sink.records_read} of {loc.number_of_events} events could be read: the file is truncated", anchor
        )
    if sink.backwards is not None:
        pos, tick, prev = sink.backwards
        raise ArtifactError(f"{where}: timestamps are not monotonic (event {pos} at tick {tick} follows tick {prev})", anchor)


def _attr_rows(sink: ll.LocationEvents, row_of_kept: np.ndarray):
    """(rows, stream refs, correlations, collective string refs, bytes) of the kept rows that
    carried attributes (values -1 where absent), or None."""
    if not sink.attr_index:
        return None
    rows = row_of_kept[np.asarray(sink.attr_index, dtype=np.int64)]
    ok = rows >= 0
    cols = [np.asarray(c, dtype=np.int64)[ok] for c in (sink.attr_stream, sink.attr_corr, sink.attr_coll, sink.attr_bytes)]
    return rows[ok], cols


def _nullable_from(values: np.ndarray, n: int, rows: np.ndarray):
    out = np.zeros(n, np.int64)
    na = np.ones(n, bool)
    have = values >= 0
    out[rows[have]] = values[have]
    na[rows[have]] = False
    return out, na


def _gpu_rows(sink, loc, rank, dev_stream, regions: _Regions, strings, defs, resolution, excluded, warnings):
    device, stream = dev_stream
    parts = []
    codes = np.asarray(sink.kept_codes, dtype=np.int64)
    if codes.size:
        times = ticks_to_ns(np.asarray(sink.kept_times, dtype=np.uint64), resolution)
        ent, lea, unclosed = pair_enter_leave(codes)
        if unclosed:
            warnings.append(f"location {loc.name!r}: {unclosed} region(s) never left (ignored)")
        reg = codes[ent]
        kind = regions.kind_code[reg]
        skip = kind == regions.KIND_CODES["excluded"]
        if skip.any():
            refs, counts = np.unique(reg[skip], return_counts=True)
            for r, c in zip(refs, counts):
                excluded[regions.name.get(int(r), "?")] += int(c)
        keep = ~skip
        if keep.any():
            ent_k, lea_k, reg_k = ent[keep], lea[keep], reg[keep]
            n = reg_k.size
            cat_codes = regions.cat_code[reg_k]
            coll = regions.coll_of[reg_k].copy()
            corr = (np.zeros(n, np.int64), np.ones(n, bool))
            msg = (np.zeros(n, np.int64), np.ones(n, bool))
            row_of_kept = np.full(codes.size, -1, dtype=np.int64)
            row_of_kept[ent_k] = np.arange(n)
            got = _attr_rows(sink, row_of_kept)
            if got is not None:
                rows, (_stream, c, cl, nb) = got
                corr = _nullable_from(c, n, rows)
                msg = _nullable_from(nb, n, rows)
                nccl = CATEGORIES.index("nccl")
                for i, sref in zip(rows[cl >= 0].tolist(), cl[cl >= 0].tolist()):
                    if cat_codes[i] == nccl and not isinstance(coll[i], str):
                        coll[i] = classify.normalize_collective(strings.get(int(sref))) or np.nan
            names = pd.array(regions.names[regions.gpu_name_idx[reg_k]], dtype=STR)
            parts.append(
                make_frame(
                    {
                        "rank": rank,
                        "device": device,
                        "stream": stream,
                        "kind": pd.Categorical.from_codes(kind[keep], dtype=GPU_KIND_DTYPE),
                        "name": names,
                        "start_ns": times[ent_k],
                        "end_ns": times[lea_k],
                        "category": pd.Categorical.from_codes(cat_codes, dtype=CATEGORY_DTYPE),
                        "collective": coll,
                        "msg_bytes": msg,
                        "correlation": corr,
                    },
                    GPU_SCHEMA,
                )
            )
    if sink.rma_ops or sink.rma_done:
        parts.append(_memcpy_rows(sink, loc, rank, device, stream, defs, resolution, warnings))
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True)


def _memcpy_rows(sink, loc, rank, device, stream, defs, resolution, warnings):
    """Copies: an RmaGet/RmaPut opens the copy, the matching RmaOpCompleteBlocking closes it.

    Pairing is first-in first-out per (window, matching id): Score-P reuses one matching id for
    every copy of a stream, and copies on one stream complete in order.
    """
    import otf2

    ops = pd.DataFrame(sink.rma_ops, columns=["t", "put", "win", "remote", "bytes", "match", "corr"])
    done = pd.DataFrame(sink.rma_done, columns=["t", "win", "match"])
    ops["nth"] = ops.groupby(["win", "match"]).cumcount()
    done["nth"] = done.groupby(["win", "match"]).cumcount()
    m = ops.merge(done, on=["win", "match", "nth"], how="left", suffixes=("", "_done"), sort=False)
    missing = m["t_done"].isna()
    if missing.any():
        warnings.append(f"location {loc.name!r}: {int(missing.sum())} copy operation(s) never completed (ignored)")
        m = m[~missing]
    extra = len(done) - len(m)
    if extra > 0:
        warnings.append(f"location {loc.name!r}: {extra} copy completion(s) without an operation (ignored)")
    if len(m) == 0:
        return None
    t0 = m["t"].to_numpy(np.uint64)
    t1 = m["t_done"].to_numpy().astype(np.uint64)
    if np.any(t1 < t0):
        raise ValueError("a copy completes before it starts")
    # Direction from the remote end: a CPU location is the host, this stream is the same device.
    wins = {w._ref: w for w in defs.rma_wins}
    names = []
    for put, win, remote in zip(m["put"].to_numpy(), m["win"].to_numpy(), m["remote"].to_numpy()):
        direction = None
        w = wins.get(int(win))
        other = None
        if w is not None:
            try:
                other = w.comm.group.members[int(remote)]
            except Exception:
                other = None
        if other is not None:
            if other.type == otf2.LocationType.CPU_THREAD:
                direction = "DtoH" if put else "HtoD"
            elif other.type == otf2.LocationType.GPU:
                direction = "DtoD" if other._ref == loc._ref or _same_device(other, loc) else "PtoP"
        names.append(classify.memcpy_name(direction))
    corr_v = m["corr"].to_numpy(np.int64)
    corr_na = corr_v < 0
    corr_v = np.where(corr_na, 0, corr_v)
    return make_frame(
        {
            "rank": rank,
            "device": device,
            "stream": stream,
            "kind": "memcpy",
            "name": names,
            "start_ns": ticks_to_ns(t0, resolution),
            "end_ns": ticks_to_ns(t1, resolution),
            "category": "memory",
            "collective": None,
            "msg_bytes": (m["bytes"].to_numpy(np.int64), np.zeros(len(m), bool)),
            "correlation": (corr_v, corr_na),
        },
        GPU_SCHEMA,
    )


def _same_device(a, b) -> bool:
    ma, mb = _STREAM_NAME_RE.match(a.name or ""), _STREAM_NAME_RE.match(b.name or "")
    return bool(ma and mb and ma.group(1) == mb.group(1))


def _flush_warnings(regions: _Regions, reg: np.ndarray, dur_ns: np.ndarray, where: str, warnings: list[str]) -> None:
    """Say what each kind of flush region on a host thread means (see ``HOST_FLUSH_REGIONS``)."""
    cupti = regions.cupti_flush_mask[reg]
    trace = regions.flush_mask[reg] & ~cupti
    if trace.any():
        warnings.append(
            f"location {where!r}: {int(trace.sum())} TRACE BUFFER FLUSH region(s) "
            f"({dur_ns[trace].sum() / 1e6:.3f} ms): Score-P's trace buffer ran full and was written "
            "out mid-run, timing perturbed; raise SCOREP_TOTAL_MEMORY"
        )
    if cupti.any():
        warnings.append(
            f"location {where!r}: {int(cupti.sum())} CUDA BUFFER FLUSH region(s) "
            f"({dur_ns[cupti].sum() / 1e6:.3f} ms, longest {dur_ns[cupti].max() / 1e6:.3f} ms): Score-P "
            "converting CUPTI activity buffers into trace records (host time inside the measurement; "
            "not a trace-buffer overflow, SCOREP_TOTAL_MEMORY is not the cause)"
        )


def _host_rows(sink, loc, rank, regions: _Regions, stream_of_location, resolution, warnings):
    codes = np.asarray(sink.kept_codes, dtype=np.int64)
    if codes.size == 0:
        return None
    times = ticks_to_ns(np.asarray(sink.kept_times, dtype=np.uint64), resolution)
    ent, lea, unclosed = pair_enter_leave(codes)
    if unclosed:
        warnings.append(f"location {loc.name!r}: {unclosed} host region(s) never left (ignored)")
    reg = codes[ent]
    _flush_warnings(regions, reg, times[lea] - times[ent], loc.name, warnings)
    is_phase = regions.phase_mask[reg]
    sel = is_phase | regions.launch_mask[reg]
    if not sel.any():
        return None
    ent_s, lea_s, reg_s = ent[sel], lea[sel], reg[sel]
    n = ent_s.size
    stream = (np.zeros(n, np.int64), np.ones(n, bool))
    corr = (np.zeros(n, np.int64), np.ones(n, bool))
    row_of_kept = np.full(codes.size, -1, dtype=np.int64)
    row_of_kept[ent_s] = np.arange(n)
    got = _attr_rows(sink, row_of_kept)
    if got is not None:
        rows, (srefs, c, _cl, _nb) = got
        refs = np.array(sorted(stream_of_location), dtype=np.int64)  # stream location refs
        sid = np.full(srefs.size, -1, dtype=np.int64)
        if refs.size:
            ids = np.array([stream_of_location[r][1] for r in refs.tolist()], dtype=np.int64)
            pos = np.searchsorted(refs, srefs).clip(0, refs.size - 1)
            found = (srefs >= 0) & (refs[pos] == srefs)
            sid[found] = ids[pos[found]]
        stream = _nullable_from(sid, n, rows)
        corr = _nullable_from(c, n, rows)
    kind = pd.Categorical.from_codes(
        np.where(is_phase[sel], HOST_KIND_DTYPE.categories.get_loc("phase"), HOST_KIND_DTYPE.categories.get_loc("launch")).astype(
            np.int8
        ),
        dtype=HOST_KIND_DTYPE,
    )
    return make_frame(
        {
            "rank": rank,
            "thread": loc.name,
            "kind": kind,
            "name": pd.array(regions.names[regions.host_name_idx[reg_s]], dtype=STR),
            "start_ns": times[ent_s],
            "end_ns": times[lea_s],
            "stream": stream,
            "correlation": corr,
        },
        HOST_SCHEMA,
    )
