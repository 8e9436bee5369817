"""What every figure of the report shares: the colours, the figure and not-available types, the PNG
writer, and the naming of a world size (what ran: ``ResultSet.ranks``)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

DPI = 110
COLORS = {
    "compute": "#3b6fb6",
    "exposed_comm": "#d1495b",
    "exposed_memcpy": "#2e9e6a",
    "idle": "#c7c7c7",
    "nccl": "#d1495b",
    "memory": "#2e9e6a",
    "allreduce": "#d1495b",
    "backward": "#3b6fb6",
}
PHASE_COLORS = {"forward": "#fde68a", "backward": "#bfdbfe", "optimizer": "#ddd6fe"}


@dataclass
class Figure:
    png: bytes
    alt: str
    facts: dict[str, Any] = field(default_factory=dict)  # what was drawn, for a caption that says only that


@dataclass
class NotAvailable:
    reason: str


def _png(fig, alt: str, **facts: Any) -> Figure:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return Figure(buf.getvalue(), alt, facts)


def _below(ax) -> float:
    """Where a legend under the axes starts (axes fraction): below tick labels of one or two lines."""
    return -0.22 if any("\n" in t.get_text() for t in ax.get_xticklabels()) else -0.1


def size_label(rs, n: int) -> str:
    """World size ``n`` as a tick label or panel title: what ran (``rs.ranks``), on two lines where
    it names a shared GPU ("8 ranks\non 1 shared GPU")."""
    return rs.ranks(n).replace(" on ", "\non ", 1)


def _gpu_sizes(rs) -> list[int]:
    return [n for n in rs.world_sizes if rs.gpu(n)]


def _ms(stat) -> float:
    return float(stat["median"]) * 1e3 if stat and stat.get("median") is not None else float("nan")


def gpu_missing_reason(rs) -> str:
    """Why world sizes lack GPU metrics, grouped: "world sizes 1, 2: CPU run (gloo, no GPU): ..."."""
    groups: dict[str, list[int]] = {}
    for n in rs.world_sizes:
        if not rs.gpu(n):
            groups.setdefault(rs.gpu_missing_why(n), []).append(n)
    if not groups:
        return "no world size has GPU metrics"
    return "; ".join(f"world size{'s' if len(v) > 1 else ''} {', '.join(map(str, v))}: {k}" for k, v in groups.items())
