"""Node layouts for ``dnabert-scaling predict``: bus bandwidth and all-reduce latency bands, with their sources.

Bus bandwidth: measured by ``dnabert-scaling busbw`` (``--busbw FILE``, per world size) where it
ran, else the node layout's table below. Sources of the table figures:

* [nccl-tests#149] github.com/NVIDIA/nccl-tests/issues/149: 8x A100-SXM4-80GB over NVLink/NVSwitch,
  all_reduce_perf busbw about 200 GB/s at large sizes.
* [nccl-tests#178] github.com/NVIDIA/nccl-tests/issues/178: A100 pairs over NVLink, busbw 208 GB/s.
* [nccl-tests#119] github.com/NVIDIA/nccl-tests/issues/119: 3 nodes x 8 A100, 4 HDR InfiniBand
  NICs per node (100 GB/s per node in theory): busbw 84.8 GB/s average, 96 GB/s peak, i.e. 85-96%
  of the node's NIC bandwidth. The inter-node rows scale that share to the NICs of each layout.
* [nccl-tests PERFORMANCE.md] busbw = algbw * 2 (n - 1) / n for all_reduce (the ring's traffic).
* H100/H200 NVSwitch (NVLink 4, 900 GB/s per GPU both directions together, NVIDIA's data sheet):
  no measured busbw in these sources; the band 340-480 GB/s is an assumption (about 40-53% of the
  link figure, the share the A100 rows show: 200 of 600 GB/s) and is labelled so in the output.
* PCIe Gen4 x16 (32 GB/s per direction): a ring through PCIe switches and the CPU; band 8-20 GB/s,
  an assumption.
* alpha (per all-reduce latency): an assumed band, 8-30 us inside a node and 15-60 us across
  nodes (nccl-tests' small-message times are of that order on these systems).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError

GB = 1e9
US = 1e-6

# What a figure given to the model may be: finite and inside a physically plausible range. Outside it
# the input is a typo or a unit mix-up, and the replay's nanosecond clock would overflow.
BUSBW_BPS = (1e3, 1e14)  # bus bandwidth, bytes/s: 1 kB/s to 100 TB/s
ALPHA_S = (0.0, 1.0)  # all-reduce latency, s: at most 1 s
CONTENTION = (0.5, 100.0)  # slow-down factor of a compute kernel during an all-reduce
BUCKET_BYTES = (1, 1 << 40)  # one all-reduce's message, bytes: at most 1 TiB
MAX_WORLD_SIZE = 1_000_000


@dataclass(frozen=True)
class Band:
    """A parameter's value and its range (low <= mid <= high)."""

    mid: float
    low: float
    high: float
    source: str = "assumed"

    def as_dict(self, scale: float = 1.0) -> dict[str, Any]:
        return {"mid": self.mid * scale, "low": self.low * scale, "high": self.high * scale, "source": self.source}


@dataclass(frozen=True)
class NodeLayout:
    name: str
    gpus_per_node: int
    intra_busbw: Band  # bytes/s
    inter_busbw: Band  # bytes/s, ring across nodes
    alpha_intra: Band  # s
    alpha_inter: Band  # s
    description: str = ""
    gpu: str | None = None  # the GPU model the layout's links are of ("A100"), None: any GPU (PCIe)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "gpus_per_node": self.gpus_per_node,
            "intra_busbw_GBps": self.intra_busbw.as_dict(1 / GB),
            "inter_busbw_GBps": self.inter_busbw.as_dict(1 / GB),
            "alpha_intra_us": self.alpha_intra.as_dict(1 / US),
            "alpha_inter_us": self.alpha_inter.as_dict(1 / US),
        }


def _gb(mid, low, high, source):
    return Band(mid * GB, low * GB, high * GB, source)


def _us(mid, low, high, source="assumed"):
    return Band(mid * US, low * US, high * US, source)


_ALPHA_INTRA = _us(15, 8, 30)
_ALPHA_INTER = _us(30, 15, 60)
NODES: dict[str, NodeLayout] = {
    "a100-nvswitch": NodeLayout(
        "a100-nvswitch",
        8,
        _gb(200, 180, 230, "nccl-tests#149, #178"),
        _gb(180, 170, 192, "8x HDR 200 Gb/s per node at 85-96% (nccl-tests#119)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8x A100 SXM, NVLink 3 / NVSwitch; 8 HDR InfiniBand NICs per node (DGX A100 layout): the study's node",
        "A100",
    ),
    "h100-nvswitch": NodeLayout(
        "h100-nvswitch",
        8,
        _gb(400, 340, 480, "assumed from NVLink 4 (900 GB/s), no measured figure"),
        _gb(360, 340, 384, "8x NDR 400 Gb/s per node at 85-96% (nccl-tests#119 share)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8x H100 SXM, NVLink 4 / NVSwitch; 8 NDR InfiniBand NICs per node",
        "H100",
    ),
    "pcie-gen4": NodeLayout(
        "pcie-gen4",
        8,
        _gb(12, 8, 20, "assumed (PCIe Gen4 x16: 32 GB/s per direction)"),
        _gb(85, 80, 96, "4x HDR 200 Gb/s per node (nccl-tests#119)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8 GPUs on PCIe Gen4 without NVLink; 4 HDR InfiniBand NICs per node",
    ),
}
NODES["h200-nvswitch"] = replace(
    NODES["h100-nvswitch"],
    name="h200-nvswitch",
    description="8x H200 SXM (same NVLink 4 / NVSwitch as H100); 8 NDR InfiniBand NICs per node",
    gpu="H200",
)
DEFAULT_NODE = "a100-nvswitch"
DEFAULT_CONTENTION = Band(1.05, 1.0, 1.15, "assumed default (no multi-GPU trace to measure it from)")


def _names_gpu(gpu_name: str, gpu: str) -> bool:
    """Whether a device name (``NVIDIA H200``, ``NVIDIA A100-SXM4-80GB``) is of the layout's GPU ``gpu`` in its
    NVSwitch form: the model as a word of its own (``A1000`` and ``GH200`` are other GPUs), and no PCIe or NVL
    variant, whose links are not NVSwitch's."""
    import re

    words = re.split(r"[^0-9a-z]+", gpu_name.lower())
    return gpu.lower() in words and not {"pcie", "nvl"} & set(words)


def layout_gpu_note(layout: NodeLayout, gpu_name: object) -> str | None:
    """What a forecast mixes where the trace's GPU is not the GPU of the layout's links: the replay keeps the trace's
    kernel times and takes the layout's bandwidths, so a forecast for A100 links from an H200 trace is neither node.
    None where they agree, or where the layout is of no one GPU (PCIe). A name that is not a string or is blank is not
    a record of the GPU."""
    if layout.gpu is None:
        return None
    if not isinstance(gpu_name, str) or not gpu_name.strip():
        return (
            f"the GPU the trace ran on is not recorded with it: the forecast replays its kernel times with the links of "
            f"node layout {layout.name} ({layout.gpu})"
        )
    name = gpu_name.strip()
    if _names_gpu(name, layout.gpu):
        return None
    return (
        f"the trace ran on {name} and node layout {layout.name} is of {layout.gpu} SXM GPUs: the forecast pairs the "
        f"{name}'s kernel times with {layout.gpu} link bandwidths, which is neither node (--node picks the layout of "
        "the GPU it ran on, where one is listed)"
    )


def busbw_used(args: argparse.Namespace, layout: NodeLayout, sizes: list[int]) -> str:
    """What bus bandwidth the model used for ``sizes`` (those without a --busbw file): within a node
    the intra-node value, across nodes the smaller of intra- and inter-node; each either given by its
    option or the node layout's table."""
    table = f"table of node layout {args.node}"
    if args.intra_busbw is None and args.inter_busbw is None:
        return table

    def said(opt: str, text: str | None, which: str) -> str:
        return f"{which} {text} GB/s given by {opt}" if text is not None else f"{which} from the {table}"

    one = [n for n in sizes if n <= layout.gpus_per_node]
    more = [n for n in sizes if n > layout.gpus_per_node]
    parts = []
    if one:
        parts.append(f"world sizes {one} (one node): {said('--intra-busbw', args.intra_busbw, 'intra-node')}")
    if more:
        parts.append(
            f"world sizes {more} (across nodes, the smaller of): {said('--intra-busbw', args.intra_busbw, 'intra-node')}, "
            f"{said('--inter-busbw', args.inter_busbw, 'inter-node')}"
        )
    return "; ".join(parts)


def trace_gpu_name(meta: dict[str, Any]) -> str | None:
    """The GPU a trace names for itself (Kineto's ``deviceProperties``, as the reader keeps them), where it names one
    model only; None otherwise (Score-P's OTF2 names none)."""
    names = {n.strip() for n in meta.get("device_names") or [] if isinstance(n, str) and n.strip()}
    return names.pop() if len(names) == 1 else None


def table_links_used(args: argparse.Namespace, layout: NodeLayout, gpus: list[int], busbw: dict[int, Any]) -> bool:
    """Whether the node layout's table gives the bus bandwidth of some world size asked: one without a --busbw file,
    inside a node without --intra-busbw, or across nodes without both --intra-busbw and --inter-busbw."""
    for n in gpus:
        if n in busbw:
            continue
        if args.intra_busbw is None or (n > layout.gpus_per_node and args.inter_busbw is None):
            return True
    return False


def within(x: Any, bounds: tuple[float, float]) -> bool:
    """``x`` is a number (not a bool) inside ``bounds``: never NaN or infinite, the bounds being finite."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and bounds[0] <= x <= bounds[1]


def check_busbw(data: Any, path: Path) -> int:
    """The world size of a ``dnabert-scaling busbw`` result, its fields checked: ``world_size`` an
    integer of at least 2, ``sizes`` a non-empty list of {bytes, busbw_Bps} with whole ``bytes`` in
    ``BUCKET_BYTES`` and finite ``busbw_Bps`` in ``BUSBW_BPS``, each size once; ``rehearsal`` false (a rehearsal's
    ranks share one GPU), and not the CPU's (gloo).
    Refuses (naming the file and the key) anything else."""
    if not isinstance(data, dict) or "world_size" not in data or "sizes" not in data:
        raise ArtifactError("--busbw: not a busbw result (needs world_size and sizes)", path)
    ws = data["world_size"]
    if not isinstance(ws, int) or isinstance(ws, bool) or not 2 <= ws <= MAX_WORLD_SIZE:
        raise ArtifactError(f"--busbw: world_size must be an integer from 2 to {MAX_WORLD_SIZE:,}, not {ws!r:.80}", path)
    sizes = data["sizes"]
    if not isinstance(sizes, list) or not sizes:
        raise ArtifactError(f"--busbw: sizes must be a non-empty list of {{bytes, busbw_Bps}}, not {sizes!r:.80}", path)
    for i, row in enumerate(sizes):
        if not isinstance(row, dict):
            raise ArtifactError(f"--busbw: sizes[{i}] must be an object with bytes and busbw_Bps, not {row!r:.80}", path)
        nbytes, bw = row.get("bytes"), row.get("busbw_Bps")
        lo, hi = BUCKET_BYTES
        if not within(nbytes, BUCKET_BYTES) or nbytes != int(nbytes):
            raise ArtifactError(
                f"--busbw: sizes[{i}].bytes must be a whole number of bytes from {lo} to {hi:,} (1 TiB), not {nbytes!r:.80}",
                path,
            )
        lo_bw, hi_bw = BUSBW_BPS
        if not within(bw, BUSBW_BPS):
            raise ArtifactError(
                f"--busbw: sizes[{i}].busbw_Bps must be a bus bandwidth in bytes/s from {lo_bw:g} (1 kB/s) "
                f"to {hi_bw:g} (100 TB/s), not {bw!r:.80}",
                path,
            )
    if data.get("rehearsal") is not False:  # a measurement says it was none; a string "true" or a 1 is no answer
        said = (
            "says it was one"
            if data.get("rehearsal") is True
            else "has no rehearsal field to say it was none"
            if "rehearsal" not in data
            else f"does not say it was none (rehearsal: {data['rehearsal']!r:.40})"
        )
        raise ArtifactError(
            f"--busbw: a rehearsal's bandwidth (ranks sharing one GPU, NCCL over sockets) is not a node's GPU links, and "
            f"this file {said}; a forecast of GPUs needs a measurement on them",
            path,
        )
    # (its provenance counts rank 0's node's GPUs only, fewer than the ranks of a run over several nodes: no test)
    if str(data.get("device_type", "")).lower() == "cpu" or str(data.get("backend", "")).lower() == "gloo":
        raise ArtifactError(
            "--busbw: the bandwidth is the CPU's (gloo), not a node's GPU links; a forecast of GPUs needs a measurement on them",
            path,
        )
    given = [row["bytes"] for row in sizes]
    twice = sorted({b for b in given if given.count(b) > 1})
    if twice:  # two bandwidths for one size: the interpolation would take one of them at random
        raise ArtifactError(f"--busbw: sizes holds {twice[0]:,} bytes more than once; give one bandwidth per size", path)
    return ws


def busbw_range_note(busbw: dict[int, dict[str, Any]], bucket_bytes: list[int]) -> str | None:
    """Where the trace's buckets lie outside the sizes a ``--busbw`` file measured (the model then takes the
    nearest measured size's bandwidth for them): said, naming the world sizes; None where every bucket lies within."""
    outside = []
    for ws, data in sorted(busbw.items()):
        measured = [int(row["bytes"]) for row in data["sizes"]]
        if bucket_bytes and (min(bucket_bytes) < min(measured) or max(bucket_bytes) > max(measured)):
            outside.append(f"{ws} ({min(measured):,}-{max(measured):,} bytes)")
    if not outside:
        return None
    return (
        f"buckets of {min(bucket_bytes):,}-{max(bucket_bytes):,} bytes lie outside the sizes --busbw measured at world "
        f"size {', '.join(outside)}: those take the bandwidth of the nearest measured size"
    )
