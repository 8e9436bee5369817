"""Where a rank ran and how NCCL connected it: recorded per rank, so that the analysis can tell
ranks on their own GPUs from ranks that share one (a rehearsal), and say which transport the
collectives crossed.

- ``nccl_environment``: the NCCL variables a rank sets for itself before the process group starts:
  its own ``NCCL_DEBUG_FILE`` (``rank<R>/nccl.log``, INFO lines of the INIT subsystem, where NCCL
  names the transport of every channel it connects), and, in a rehearsal, a host id of its own
  (``NCCL_HOSTID``: NCCL refuses two ranks on one GPU only when both report the same host) with
  NCCL's socket transport over loopback.
- ``gpu_identity``: the GPU's UUID and PCI bus id, the host, ``CUDA_VISIBLE_DEVICES``, the index.
- ``nccl_transports``: the transports named in a rank's ``nccl.log`` (``P2P``, ``SHM``,
  ``NET/Socket``, ``NET/IB``, ...).
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from pathlib import Path
from typing import Any

# The channel lines ("Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0", "... via P2P/CUMEM/read",
# "... via SHM/direct/direct") are INFO messages of NCCL's INIT subsystem (src/transport/*.cc).
NCCL_SUBSYSTEMS = "INIT,NET"
_VIA = re.compile(r"\bvia (\w+)(?:/(\w+))?")


def rehearsal_host_id(rank: int) -> str:
    """The host id a rehearsal rank gives NCCL: one per rank, so that ranks sharing a GPU pass
    NCCL's duplicate-GPU check, which compares (host hash, bus id) pairs."""
    return f"{socket.gethostname()}-rehearsal-rank{rank}"


def nccl_environment(rank: int, log: Path | None, rehearse: bool, env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables this rank sets before ``init_process_group``: NCCL's INFO log into ``log``
    (unless None or the user chose NCCL's logging), and a rehearsal's own, which it needs as they are."""
    env = os.environ if env is None else env
    out: dict[str, str] = {}
    if log is not None and "NCCL_DEBUG" not in env and "NCCL_DEBUG_FILE" not in env:
        out.update(
            NCCL_DEBUG="INFO",
            NCCL_DEBUG_SUBSYS=env.get("NCCL_DEBUG_SUBSYS", NCCL_SUBSYSTEMS),
            NCCL_DEBUG_FILE=str(log),
        )
    if rehearse:
        out.update(NCCL_HOSTID=rehearsal_host_id(rank), NCCL_SOCKET_IFNAME="lo", NCCL_IB_DISABLE="1")
    return out


def _nvidia_smi_bus_ids() -> dict[str, str]:
    """UUID (without ``GPU-``) -> PCI bus id, from ``nvidia-smi``; empty where it is missing."""
    from dnabert_scaling.provenance import nvidia_smi_query

    out = {}
    for parts in nvidia_smi_query("uuid,pci.bus_id") or []:
        if len(parts) == 2:
            key = uuid_text(parts[0])
            if key:
                out[key] = parts[1]
    return out


def _bare_uuid(text: str) -> str:
    text = text.strip()
    return text[4:] if text.startswith("GPU-") else text


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def uuid_text(value: Any) -> str | None:
    """A GPU UUID as ``xxxxxxxx-xxxx-...`` (torch's ``_CUuuid`` by its 16 bytes, or text with or
    without nvidia-smi's ``GPU-``); None for anything else (never an object's repr, which differs
    per process and would make two ranks on one GPU look like two GPUs)."""
    raw = getattr(value, "bytes", None)
    if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
        return str(uuid.UUID(bytes=bytes(raw)))
    text = _bare_uuid(str(value)).lower() if value is not None else ""
    return text if _UUID.fullmatch(text) else None


def gpu_identity(device: Any, env: dict[str, str] | None = None) -> dict[str, Any]:
    """This rank's placement: host, ``CUDA_VISIBLE_DEVICES``, device index, and on CUDA the GPU's
    UUID and PCI bus id (torch's device properties, else ``nvidia-smi``), ``NCCL_HOSTID``."""
    env = os.environ if env is None else env
    record: dict[str, Any] = {
        "host": socket.gethostname(),
        "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES"),
        "device_type": device.type,
        "device_index": device.index,
        "gpu_uuid": None,
        "pci_bus_id": None,
        "gpu_name": None,
        "nccl_hostid": env.get("NCCL_HOSTID"),
    }
    if device.type != "cuda":
        return record
    import torch

    props = torch.cuda.get_device_properties(device.index)
    record["gpu_uuid"] = uuid_text(getattr(props, "uuid", None))
    record["gpu_name"] = props.name
    bus = getattr(props, "pci_bus_id", None)
    if isinstance(bus, int):  # torch gives the bus number alone; the domain and device complete it
        domain, dev = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
        record["pci_bus_id"] = f"{domain:08X}:{bus:02X}:{dev:02X}.0"
    elif bus:
        record["pci_bus_id"] = str(bus)
    elif record["gpu_uuid"]:
        record["pci_bus_id"] = _nvidia_smi_bus_ids().get(record["gpu_uuid"])
    return record


def nccl_transports(log: Path) -> list[str]:
    """The transports named in a rank's NCCL log, sorted (``NET/<plugin>`` for the network
    transport, whose plugin says socket or InfiniBand); empty when there is no log."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    found = set()
    for match in _VIA.finditer(text):
        kind, sub = match.group(1), match.group(2)
        found.add(f"NET/{sub}" if kind == "NET" and sub else kind)
    return sorted(found)
