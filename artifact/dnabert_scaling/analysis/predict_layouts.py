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

from dataclasses import dataclass, replace
from typing import Any

GB = 1e9
US = 1e-6


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
    ),
    "h100-nvswitch": NodeLayout(
        "h100-nvswitch",
        8,
        _gb(400, 340, 480, "assumed from NVLink 4 (900 GB/s), no measured figure"),
        _gb(360, 340, 384, "8x NDR 400 Gb/s per node at 85-96% (nccl-tests#119 share)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8x H100 SXM, NVLink 4 / NVSwitch; 8 NDR InfiniBand NICs per node",
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
)
DEFAULT_NODE = "a100-nvswitch"
DEFAULT_CONTENTION = Band(1.05, 1.0, 1.15, "assumed default (no multi-GPU trace to measure it from)")
