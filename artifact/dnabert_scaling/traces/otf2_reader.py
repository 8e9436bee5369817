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
(only the phase user regions and the kernel-launch API calls are kept). A GPU-typed location named
``CUDA launches[<thread id>]`` (Score-P with ``SCOREP_CUDA_DRIVER_CALLBACKS=records``: a host thread's
launch calls from CUPTI's activity records) is read as a host thread, its launches and their
kernels paired by the ``CUPTI_CORRELATION_ID`` attribute both carry. Other location types are
not read, and each location's fate is recorded in ``meta['locations']`` (never silently).
Events are read per location with OTF2's local readers (see ``otf2_lowlevel``), so the events
of unneeded types never reach Python.

Times: ticks are converted to integer nanoseconds with the clock properties
(``ns = ticks * 1e9 / timer_resolution``, exact integer arithmetic, no offset removed), so a
trace written with a 1 GHz timer reads back to exactly the nanoseconds it was written with.

Errors (missing or truncated files, non-monotonic timestamps, unbalanced regions) are raised as
``ArtifactError`` naming the file and the location; an archive without GPU streams raises

Modules: ``otf2_defs`` (the definitions: region classification, rank assignment, attribute refs),
``otf2_tables`` (the GPU and host tables of one location); this one opens the archive, decides
which locations to read, reads their events and assembles the tables and the metadata of each rank.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dnabert_scaling import layout
from dnabert_scaling.errors import FOLDER, MISSING, REGULAR_FILE, ArtifactError, path_kind, regular_file
from dnabert_scaling.traces import otf2_lowlevel as ll
from dnabert_scaling.traces.model import NoGpuActivityError, Trace, empty_gpu, empty_host
from dnabert_scaling.traces.otf2_defs import (
    _STREAM_NAME_RE,
    _assign_ranks,
    _creator,
    _Regions,
    _string_table,
    _world_size,
    attribute_refs,
)
from dnabert_scaling.traces.otf2_tables import _gpu_rows, _host_rows, ticks_to_ns

# Kept importable from the reader, where scripts, tests and the test trace generator find them.
from dnabert_scaling.traces.otf2_defs import ATTR_STREAM_REF, HOST_FLUSH_REGIONS, rank_from_directory  # noqa: F401
from dnabert_scaling.traces.otf2_defs import LAUNCH_LOCATION_PREFIX, is_launch_records_location
from dnabert_scaling.traces.otf2_tables import pair_enter_leave  # noqa: F401

ANCHOR_NAME = layout.ANCHOR


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
    regular_file(p, "an OTF2 anchor file", missing="OTF2 anchor file not found")
    return p


def _check_files(anchor: Path) -> Path:
    defs = anchor.with_suffix(".def")
    _require(defs, f"the global definition file {defs.name} of this archive", anchor)
    evt_dir = anchor.with_suffix("")
    _require(evt_dir, f"the event directory {evt_dir.name}/ of this archive", anchor, folder=True)
    return evt_dir


def _require(path: Path, what: str, anchor: Path, folder: bool = False) -> None:
    """``what`` (a file of the archive, or with ``folder`` a folder) is there and of its kind: one that
    is missing and one of the wrong kind (a folder where a file belongs, a FIFO) are told apart."""
    kind = path_kind(path)
    if kind == (FOLDER if folder else REGULAR_FILE):
        return
    if kind == MISSING:
        raise ArtifactError(f"{what} is missing", anchor)
    raise ArtifactError(f"{what} is not a {'folder' if folder else 'regular file'}: it is {path_kind(path)}", anchor)


def archive_creator(path) -> str:
    """The creator an OTF2 archive's anchor file records (``Score-P 8.4``, ``dnabert-scaling-convert
    0.3``), read from the anchor alone; "" when the archive has none or cannot be opened (reading it
    says why)."""
    import _otf2

    try:
        anchor = resolve_anchor(path)
    except ArtifactError:
        return ""
    if not anchor.is_file():
        return ""
    with ll.captured_errors():
        try:
            handle = _otf2.Reader_Open(str(anchor))
        except Exception:
            return ""
        try:
            tool, version, _ = _creator(handle)
            return "" if tool == "unknown" else f"{tool} {version}".strip()
        finally:
            try:
                _otf2.Reader_Close(handle)
            except Exception:  # pragma: no cover - closing an opened anchor does not fail
                pass


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
    """The steps of reading an opened archive, in order."""
    defs = tr.definitions
    archive = _archive_facts(tr, defs, anchor)
    regions = _Regions(defs, anchor)
    archive.assign_ranks(defs)
    attrs = attribute_refs(defs, anchor)
    locations = _classify_locations(defs, archive, regions, attrs)
    _require_gpu_streams(defs, locations, anchor)
    _require_event_files(defs, locations.plans, anchor, evt_dir)
    sinks = _read_events(tr, defs, locations.plans, attrs, anchor, evt_dir, errors)
    strings = _string_table(defs)
    ranks_meta: dict[int, dict] = {}
    gpu_frames, host_frames = [], []
    for rank, info in sorted(locations.per_rank.items()):
        gdf, hdf, events_read, excluded = _rank_tables(rank, info, sinks, defs, archive, regions, locations, strings, evt_dir)
        ranks_meta[rank] = _rank_meta(rank, info, archive, gdf, events_read, excluded)
        gpu_frames.append(gdf)
        host_frames.append(hdf)
    gpu = pd.concat(gpu_frames, ignore_index=True) if gpu_frames else empty_gpu()
    host = pd.concat(host_frames, ignore_index=True) if host_frames else empty_host()
    return Trace(gpu, host, ranks_meta)


@dataclass
class _Archive:
    """Facts of the whole archive: its files, clock, writer and ranks."""

    anchor: Path
    resolution: int
    global_offset_ticks: int
    tool: str
    tool_version: str
    otf2_version: str
    rank_of_group: dict = field(default_factory=dict)  # process location group ref -> rank
    rank_assumed: bool = False
    world_size: int | None = None
    rank_warnings: list[str] = field(default_factory=list)

    def assign_ranks(self, defs) -> None:
        rank_of_group, rank_warnings = _assign_ranks(defs, self.anchor)
        rank_assumed = None in rank_of_group.values()
        if rank_assumed:
            rank_of_group = {g: 0 for g in rank_of_group}
            rank_warnings.append(
                f"rank unknown (one process, directory {self.anchor.resolve().parent.name!r} is not scorep-rank<R>): assumed rank 0"
            )
        self.rank_of_group, self.rank_warnings, self.rank_assumed = rank_of_group, rank_warnings, rank_assumed
        self.world_size = _world_size(defs, len(rank_of_group))


MIN_TIMER_RESOLUTION_HZ = 10**6  # gettimeofday's microseconds, the coarsest timer Score-P offers


def _archive_facts(tr, defs, anchor: Path) -> _Archive:
    clock = defs.clock_properties
    tool, tool_version, otf2_version = _creator(tr.handle)
    resolution = int(clock.timer_resolution)
    if 0 < resolution < MIN_TIMER_RESOLUTION_HZ:
        raise ArtifactError(
            f"the archive's clock ticks {resolution:,} times a second: too coarse to time GPU kernels, which last "
            f"microseconds (Score-P's coarsest timer ticks {MIN_TIMER_RESOLUTION_HZ:,} times a second); a damaged "
            "or mislabelled clock",
            anchor,
        )
    return _Archive(anchor, resolution, int(clock.global_offset), tool, tool_version, otf2_version)


@dataclass
class _Locations:
    """Which rank owns each location and which locations are read (``plans``)."""

    per_rank: dict[int, dict]
    stream_of_location: dict[int, tuple[int, int]] = field(default_factory=dict)  # location ref -> (device, stream)
    plans: list[ll.LocationPlan] = field(default_factory=list)


def _location_entry(loc, why: str) -> dict:
    return {
        "name": loc.name,
        "type": str(loc.type).split(".")[-1],
        "group": loc.group.name,
        "events": int(loc.number_of_events),
        "read": False,
        "why": why,
    }


def _classify_locations(defs, archive: _Archive, regions: _Regions, attrs: ll.AttributeRefs) -> _Locations:
    """Each location to its rank, as a GPU stream, a CPU thread or a location not read (recorded)."""
    import otf2

    GPU = otf2.LocationType.GPU
    CPU = otf2.LocationType.CPU_THREAD
    PROCESS = otf2.LocationGroupType.PROCESS
    gpu_attr_regions = (
        frozenset(ref for ref, k in regions.gpu_kind.items() if k in ("kernel", "memset"))
        if (attrs.correlation is not None or attrs.collective is not None or attrs.msg_bytes is not None)
        else frozenset()
    )
    launch_attr_regions = frozenset(regions.launch)
    rank_of_group = archive.rank_of_group
    out = _Locations(
        {
            r: {
                "gpu": [],
                "cpu": [],
                "locations": [],
                "warnings": list(archive.rank_warnings),
                "legacy": False,
                "events_total": 0,
            }
            for r in rank_of_group.values()
        }
    )
    per_rank = out.per_rank
    single_rank = next(iter(per_rank)) if len(per_rank) == 1 else None
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
                info["locations"].append(_location_entry(loc, f"group {g.name!r} belongs to no known process"))
                info["warnings"].append(f"location {loc.name!r} skipped: its group {g.name!r} has no creating process")
            continue
        info = per_rank[rank]
        info["events_total"] += int(loc.number_of_events)
        entry = _location_entry(loc, "")
        info["locations"].append(entry)
        launch_records = loc.type == GPU and is_launch_records_location(loc)
        if loc.type == GPU and not launch_records and (loc.name or "").startswith(LAUNCH_LOCATION_PREFIX):
            raise ArtifactError(
                f"GPU location {loc.name!r} ({g.name}) is named like Score-P's launch records but not as they are "
                "named ('CUDA launches[<thread id>]'): read as a stream its host calls would pass for kernels, read as "
                "host calls it may be a stream; the archive is damaged or was written by a tool this reader does not know",
                archive.anchor,
            )
        if loc.type == GPU and not launch_records:
            if g.location_group_type == PROCESS:
                info["legacy"] = True
            out.stream_of_location[loc._ref] = _stream_of(loc, info["warnings"])
            info["gpu"].append(loc)
            if loc.number_of_events == 0:
                entry["why"] = "no events"
                continue
            entry["read"] = True
            out.plans.append(ll.LocationPlan(loc._ref, None, gpu_attr_regions, True))
        elif loc.type == CPU or launch_records:
            info["cpu"].append(loc)
            if loc.number_of_events == 0:
                entry["why"] = "no events"
                continue
            entry["read"] = True
            entry["why"] = "kernel launches from CUPTI activity records" if launch_records else "phases and kernel launches only"
            out.plans.append(ll.LocationPlan(loc._ref, regions.host_wanted, launch_attr_regions, False))
        else:
            entry["why"] = f"location type {entry['type']} carries no GPU activity, phase or launch"
            info["warnings"].append(f"location {loc.name!r} ({entry['type']}) not read: {entry['why']}")
    return out


def _stream_of(loc, warnings: list[str]) -> tuple[int, int]:
    """(device, stream) of a GPU location from its name ``CUDA[<device>:<stream>]``."""
    m = _STREAM_NAME_RE.match(loc.name or "")
    if m:
        return int(m.group(1)), int(m.group(2))
    warnings.append(f"GPU location {loc.name!r} is not named CUDA[<device>:<stream>]: device -1, stream = location id {loc._ref}")
    return -1, int(loc._ref)


def _require_gpu_streams(defs, locations: _Locations, anchor: Path) -> None:
    if not any(info["gpu"] for info in locations.per_rank.values()):
        names = Counter(f"{l.name}" for l in defs.locations)
        listing = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in names.items())
        raise NoGpuActivityError(
            f"no GPU streams in this trace: its {len(defs.locations)} locations are CPU threads or other "
            f"non-GPU locations ({listing}). Nothing to analyse for GPU time: a CPU-only run, or Score-P "
            "recorded no CUDA activity (run with --cuda and SCOREP_CUDA_ENABLE; CUPTI may not have been subscribed)",
            anchor,
        )


def _require_event_files(defs, plans: list[ll.LocationPlan], anchor: Path, evt_dir: Path) -> None:
    for p in plans:
        loc = defs.locations[p.ref]
        _require(
            evt_dir / f"{p.ref}.evt", f"event file {evt_dir.name}/{p.ref}.evt of location {loc.name!r} ({loc.group.name})", anchor
        )


def _read_events(tr, defs, plans: list[ll.LocationPlan], attrs: ll.AttributeRefs, anchor: Path, evt_dir: Path, errors) -> dict:
    """{location ref: its kept events}; a read error names the file and the location."""
    try:
        return ll.read_locations(tr.handle, plans, attrs)
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


def _rank_tables(rank: int, info: dict, sinks: dict, defs, archive: _Archive, regions, locations: _Locations, strings, evt_dir):
    """(GPU table, host table, events read, excluded GPU region counts) of one rank."""
    anchor, resolution, warnings = archive.anchor, archive.resolution, info["warnings"]
    if not info["gpu"]:
        raise NoGpuActivityError(f"rank {rank} has no GPU stream locations", anchor)
    events_read = 0
    g_parts, h_parts = [], []
    excluded = Counter()
    streams = {loc._ref for loc in info["gpu"]}
    for loc in info["gpu"] + info["cpu"]:
        sink = sinks.get(loc._ref)
        if sink is None:
            continue
        events_read += sink.records_read
        _check_location(sink, loc, anchor, evt_dir)
        _measurement_warnings(sink, loc, resolution, warnings)
        try:
            if loc._ref in streams:
                g_parts.append(
                    _gpu_rows(
                        sink,
                        loc,
                        rank,
                        locations.stream_of_location[loc._ref],
                        regions,
                        strings,
                        defs,
                        resolution,
                        excluded,
                        warnings,
                    )
                )
            else:
                h_parts.append(_host_rows(sink, loc, rank, regions, locations.stream_of_location, resolution, warnings))
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
    return gdf, hdf, events_read, excluded


def _measurement_warnings(sink: ll.LocationEvents, loc, resolution: int, warnings: list[str]) -> None:
    """Score-P's trace-buffer flushes and measurement on/off switches recorded on one location."""
    if sink.flushes:
        warnings.append(
            f"location {loc.name!r}: {sink.flushes} trace buffer flush(es) "
            f"({ticks_to_ns(np.array([sink.flush_ticks]), resolution)[0] / 1e6:.3f} ms) perturb the timing: raise SCOREP_TOTAL_MEMORY"
        )
    if sink.measurement_switches:
        warnings.append(f"location {loc.name!r}: measurement switched off/on {sink.measurement_switches} time(s)")


def _rank_meta(rank: int, info: dict, archive: _Archive, gdf: pd.DataFrame, events_read: int, excluded: Counter) -> dict:
    streams = sorted(int(s) for s in np.unique(gdf["stream"].to_numpy()))
    return {
        "source": str(archive.anchor),
        "format": "otf2",
        "tool": archive.tool,
        "tool_version": archive.tool_version,
        "otf2_version": archive.otf2_version,
        "clock_resolution_hz": archive.resolution,
        "clock_global_offset_ticks": archive.global_offset_ticks,
        "rank": rank,
        "rank_assumed": archive.rank_assumed,
        "world_size": archive.world_size,
        "streams": streams,
        "devices": sorted(int(d) for d in np.unique(gdf["device"].to_numpy())),
        "layout": "scorep<=8 (GPU locations in the process group)" if info["legacy"] else "scorep9",
        "events_read": int(events_read),
        "events_total": int(info["events_total"]),
        "excluded_gpu_regions": dict(excluded),
        "locations": info["locations"],
        "warnings": info["warnings"],
    }


def _check_location(sink: ll.LocationEvents, loc, anchor: Path, evt_dir: Path) -> None:
    where = f"event file {evt_dir.name}/{loc._ref}.evt (location {loc.name!r} of {loc.group.name})"
    if sink.records_read != int(loc.number_of_events):
        raise ArtifactError(
            f"{where}: {sink.records_read} of {loc.number_of_events} events could be read: the file is truncated", anchor
        )
    if sink.bad_attribute is not None:
        raise ArtifactError(
            f"{where}: an event carries attribute {sink.bad_attribute!r} with a value of another type than the "
            "attribute's definition: the attribute is damaged",
            anchor,
        )
    if sink.backwards is not None:
        pos, tick, prev = sink.backwards
        raise ArtifactError(f"{where}: timestamps are not monotonic (event {pos} at tick {tick} follows tick {prev})", anchor)
