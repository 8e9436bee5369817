"""The definitions of a Score-P OTF2 archive as the reader needs them (``traces.otf2_reader``).

Region refs classified once per archive (phase, kernel launch, flush, the kind and display name of a
GPU region) into lookup arrays indexed by region ref, the names of the region and attribute
records that carry meaning, the ranks of the process location groups, the world size, the tool
that wrote the archive, and the string table.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.phases import PHASE_NAMES
from dnabert_scaling.traces import classify
from dnabert_scaling.traces import otf2_lowlevel as ll
from dnabert_scaling.traces.model import CATEGORIES

_STREAM_NAME_RE = re.compile(r"^CUDA\[(\d+):(\d+)\]")
_MPI_RANK_RE = re.compile(r"^MPI Rank (\d+)$")
# Score-P 8.4 with ``8.4-cupti-launch-records.patch`` (SCOREP_CUDA_DRIVER_CALLBACKS=records) writes each
# host thread's launch, copy and memset calls, taken from CUPTI's activity records, on a location of
# type GPU named ``CUDA launches[<thread id>]``: host calls, read as a CPU thread's, never as a stream.
LAUNCH_LOCATION_PREFIX = "CUDA launches"  # a GPU location named so and not by the pattern is refused
_LAUNCH_LOCATION_RE = re.compile(r"^CUDA launches\[[0-9]+\]$")
_MERGED_RANK_RE = re.compile(r"^(?:MPI )?Rank (\d+)$")  # Score-P with MPI, or a merged archive (convert --merged)
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


def is_launch_records_location(loc) -> bool:
    """A GPU-typed location that holds host launch calls (``CUDA launches[<thread id>]``)."""
    return bool(_LAUNCH_LOCATION_RE.match(loc.name or ""))


def rank_from_directory(anchor: Path) -> int | None:
    """R from an experiment directory called ``scorep-rank<R>`` (the run layout), else None."""
    return layout.scorep_rank_of(anchor.resolve().parent.name)


# the type each kept attribute is defined with (otf2.Type member names); another type is a damaged archive
ATTR_TYPES = {ATTR_STREAM_REF: "LOCATION", ATTR_CORRELATION: "UINT64", ATTR_COLLECTIVE: "STRING", ATTR_MSG_BYTES: "UINT64"}


def attribute_refs(defs, anchor: Path | None = None) -> ll.AttributeRefs:
    """The refs of the attributes the reader keeps (None where the archive defines none). A kept attribute
    defined with another type than its own is refused: its values would read as absent, and a trace with
    correlation ids would pass for one without."""
    import otf2

    for a in defs.attributes:
        want = ATTR_TYPES.get(a.name)
        if want is not None and a.type != getattr(otf2.Type, want):
            raise ArtifactError(
                f"attribute {a.name!r} is defined with type {getattr(a.type, 'name', a.type)}, not {want}: "
                "the archive is damaged or was written by a tool this reader does not know",
                anchor,
            )
    attr_ids = {a.name: a._ref for a in defs.attributes}
    return ll.AttributeRefs(
        stream_ref=attr_ids.get(ATTR_STREAM_REF),
        correlation=attr_ids.get(ATTR_CORRELATION),
        collective=attr_ids.get(ATTR_COLLECTIVE),
        msg_bytes=attr_ids.get(ATTR_MSG_BYTES),
    )


class _Regions:
    """Per-region-ref classification, computed once per archive."""

    def __init__(self, defs, anchor: Path | None = None):
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
            elif classify.unreadable_bucket_mark(name):
                raise ArtifactError(f"region {name[:80]!r} is {classify.UNREADABLE_BUCKET}", anchor)
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
        m = _MPI_RANK_RE.match(g.name or "")
        if r is None:
            r = int(m.group(1)) if m else None  # None: the caller numbers it (0, or its place in the traces given)
        elif m and int(m.group(1)) != r:
            warnings.append(f"the directory says rank {r}, the process group {g.name!r}: using the directory's rank {r}")
        return {g._ref: r}, warnings
    ranks = {}
    for i, g in enumerate(procs):
        m = _MERGED_RANK_RE.match(g.name or "")
        ranks[g._ref] = int(m.group(1)) if m else None
    values = [v for v in ranks.values() if v is not None]
    if None in ranks.values() or len(set(values)) != len(values):
        warnings.append("process groups are not all named 'MPI Rank <r>' or 'Rank <r>': ranks numbered by definition order")
        ranks = {g._ref: i for i, g in enumerate(procs)}
    return ranks, warnings


def _string_table(defs) -> dict[int, str]:
    try:
        return {s._ref: s.value for s in defs.strings}
    except Exception:  # pragma: no cover
        return {}
