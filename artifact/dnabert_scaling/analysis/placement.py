"""Where the ranks of a traced run ran: how many GPUs and hosts, whether ranks shared a GPU, the
transports NCCL connected them through, and whether the run was a rehearsal.

Each rank records its placement in ``rank<R>/summary.json`` (``run/train/placement.py``): the
GPU's UUID where the run had one, the host, ``CUDA_VISIBLE_DEVICES`` and the device index. Two
ranks on the same UUID share a GPU (identity ``uuid``). Runs recorded before the UUID was
recorded are judged by the rule that needs no UUID: two ranks with the same host, the same
``CUDA_VISIBLE_DEVICES`` and the same device index share a GPU (identity ``host+visible+index``;
the host and the visible devices then come from each rank's provenance). Where a rank says
nothing of its device, the placement's GPU figures are unknown (identity ``unknown``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from dnabert_scaling import run_records
from dnabert_scaling.analysis.runs import RunInfo
from dnabert_scaling.errors import ArtifactError, loads_json
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.metrics_schema import Placement


def _rank_records(run: RunInfo) -> list[dict[str, Any]]:
    """Every rank's summary: its own ``rank<R>/summary.json`` (which keeps the rank's provenance),
    else the copy rank 0 gathered into the run's summary."""
    gathered = {r.get("rank"): r for r in run.summary.get("ranks") or [] if isinstance(r, dict)}
    out = []
    for rank in range(run.world_size):
        path = RunLayout(run.path).rank_summary(rank)
        try:
            own = loads_json(path.read_text()) if path.is_file() else None
        except ValueError as exc:
            if run.ok:  # a completed run wrote every rank's summary whole
                raise ArtifactError(f"not valid JSON: {exc}", path) from None
            own = None  # a rank that was stopped may have left half a file: its gathered copy stands in
        if own is not None:
            run_records.check_rank_summary(own, path)
        record = own if isinstance(own, dict) else gathered.get(rank)
        out.append(record if isinstance(record, dict) else {})
    return out


def _device_index(record: dict[str, Any]) -> int | None:
    """``cuda:N`` -> N; None for a CPU rank or an unknown device."""
    device = str(record.get("device") or "")
    if not device.startswith("cuda"):
        return None
    _, _, index = device.partition(":")
    return int(index) if index.isdigit() else 0


def _gpu_key(record: dict[str, Any], run_provenance: dict[str, Any]) -> tuple[str, tuple | None]:
    """(identity kind, the key two ranks on one GPU share); the key is None when unknown."""
    placement = record.get("placement") or {}
    if placement.get("gpu_uuid"):
        return "uuid", ("uuid", placement["gpu_uuid"])
    if placement.get("device_type", "cuda") != "cuda":
        return "unknown", None
    index = placement.get("device_index", _device_index(record)) if placement else _device_index(record)
    if index is None:
        return "unknown", None
    provenance = record.get("provenance") or run_provenance
    host = placement.get("host") or provenance.get("host")
    visible = (
        placement["cuda_visible_devices"]
        if "cuda_visible_devices" in placement
        else (provenance.get("env") or {}).get("CUDA_VISIBLE_DEVICES")
    )
    if host is None:
        return "unknown", None
    return "host+visible+index", ("host", host, visible, index)


def _host(record: dict[str, Any], run_provenance: dict[str, Any]) -> str | None:
    placement = record.get("placement") or {}
    return placement.get("host") or (record.get("provenance") or {}).get("host") or run_provenance.get("host")


def placement_of(run: RunInfo | None) -> Placement | None:
    """The placement of a run's ranks; None without a run (bare traces) or a rank summary."""
    if run is None:
        return None
    records = _rank_records(run)
    if not any(records):
        return None
    provenance = run.summary.get("provenance") or {}
    keys = [_gpu_key(r, provenance) for r in records]
    kinds = {kind for kind, _ in keys}
    hosts = {_host(r, provenance) for r in records}
    transports = sorted({t for r in records for t in ((r.get("placement") or {}).get("transports") or [])})
    rehearsal = (
        bool(run.summary.get("rehearsal"))
        or any((r.get("placement") or {}).get("rehearsal") for r in records)
        or any(f.get("kind") == "rehearsal" for f in run.summary.get("fallbacks") or [])
    )
    placement = Placement(
        ranks=len(records), hosts=None if None in hosts else len(hosts), transports=transports, rehearsal=rehearsal
    )
    if "unknown" in kinds or len(kinds) != 1:  # a rank without a device, or ranks judged by different rules
        return placement
    per_gpu = Counter(key for _, key in keys)
    placement.identity = kinds.pop()
    placement.gpus = len(per_gpu)
    placement.ranks_per_gpu = max(per_gpu.values())
    placement.shared_gpu = placement.ranks_per_gpu > 1
    return placement
