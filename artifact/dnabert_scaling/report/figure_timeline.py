"""The report's Vampir-like timeline of one step (a PNG): per rank its host threads (phase ranges,
launch calls) above its GPU streams, and the facts of the step it shows, for its caption."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display is needed or wanted

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from dnabert_scaling.report.figure_base import (  # noqa: E402
    COLORS,
    PHASE_COLORS,
    Figure,
    NotAvailable,
    _gpu_sizes,
    _png,
    gpu_missing_reason,
)


# ---- Figure: Vampir-like timeline of one step -------------------------------------------------


def _host_threads(host, rank: int, limit: int = 4) -> list[str]:
    """The host threads of a rank shown above its GPU streams: the one with the phases first, then
    by number of launches (at most ``limit``)."""
    if host is None or host.empty:
        return []
    mine = host[host["rank"] == rank]
    counts = mine.groupby("thread")["kind"].agg(
        phases=lambda k: int((k == "phase").sum()), launches=lambda k: int((k == "launch").sum())
    )
    counts = counts[(counts["phases"] > 0) | (counts["launches"] > 0)]
    return list(counts.sort_values(["phases", "launches"], ascending=False).index[:limit])


def _timeline_tables(rs, ws: int):
    """The largest world size's timeline rows: GPU activities, step phases, host rows (or None)."""
    tl = rs.table("timeline")
    tl = tl[tl["world_size"] == ws]
    ph = rs.table("timeline_phases")
    if ph is not None and not ph.empty:
        ph = ph[ph["world_size"] == ws]
    host = rs.table("timeline_host")  # results from before the host rows lack it: GPU rows only
    if host is not None and not host.empty:
        host = host[host["world_size"] == ws]
    return tl, ph, host


def _timeline_rows(tl, host) -> list[tuple]:
    """(rank, key, label) per drawn row: key is ("host", thread) or ("gpu", stream); per rank its host
    threads, then its streams (compute, memory, NCCL)."""
    rows = []
    order = {"compute": 0, "memory": 1, "nccl": 2}
    for rank in sorted(int(r) for r in tl["rank"].unique()):
        for thread in _host_threads(host, rank):
            rows.append((rank, ("host", thread), f"rank {rank} · host {thread}"))
        streams = []
        for stream, g in tl[tl["rank"] == rank].groupby("stream", sort=True):
            dur = (g["end_s"] - g["start_s"]).groupby(g["category"]).sum()
            role = str(dur.idxmax()) if len(dur) else "compute"
            streams.append((order.get(role, 3), int(stream), role))
        for _, stream, role in sorted(streams):
            rows.append((rank, ("gpu", stream), f"rank {rank} · {role if role != 'memory' else 'memcpy'} (stream {stream})"))
    return rows


def _row_positions(rows: list[tuple], ranks: list[int]) -> tuple[dict, dict, dict, float]:
    """The y of every row, and per rank the y range of its host rows and of its GPU rows."""
    ypos, gpu_band, host_band = {}, {}, {}
    y = 0.0
    for rank in ranks:
        for kind in ("host", "gpu"):
            mine = [r for r in rows if r[0] == rank and r[1][0] == kind]
            if not mine:
                continue
            top = y
            for r in mine:
                ypos[(rank, r[1])] = y
                y += 1.0
            (host_band if kind == "host" else gpu_band)[rank] = (top - 0.5, y - 0.5)
        y += 0.4
    return ypos, gpu_band, host_band, y


def _draw_phase_shading(ax, tl, ph, ranks, gpu_band, host_band, tmax: float) -> float:
    """GPU rows: each phase shaded where the GPU ran the kernels the host launched in it; step edges."""
    for rank in ranks:
        b0, b1 = gpu_band[rank]
        mine = tl[(tl["rank"] == rank) & (tl["category"] == "compute")]
        for name, color in PHASE_COLORS.items():
            g = mine[mine["phase"] == name]
            if len(g):
                a, b = float(g["start_s"].min()) * 1e3, float(g["end_s"].max()) * 1e3
                ax.add_patch(plt.Rectangle((a, b0), b - a, b1 - b0, color=color, alpha=0.45, lw=0, zorder=0))
        if ph is not None and not ph.empty:
            for _, p in ph[(ph["rank"] == rank) & (ph["name"] == "step")].iterrows():
                lo = host_band.get(rank, gpu_band[rank])[0]
                for edge in (p["start_s"], p["end_s"]):
                    ax.plot([edge * 1e3] * 2, [lo, b1], color="#555555", lw=0.8, ls=":", zorder=1)
            tmax = max(tmax, float(ph[ph["rank"] == rank]["end_s"].max()) * 1e3)
    return tmax


def _draw_host_rows(ax, host, rows, ypos, tmin: float, tmax: float) -> float:
    """Host rows: phase ranges and launch calls (at least a hair wide)."""
    for rank, key, _ in [r for r in rows if r[1][0] == "host"]:
        yy = ypos[(rank, key)]
        g = host[(host["rank"] == rank) & (host["thread"].astype(str) == key[1])]
        for _, p in g[(g["kind"] == "phase") & g["name"].isin(list(PHASE_COLORS))].iterrows():
            ax.add_patch(
                plt.Rectangle(
                    (p["start_s"] * 1e3, yy - 0.45),
                    (p["end_s"] - p["start_s"]) * 1e3,
                    0.9,
                    color=PHASE_COLORS[p["name"]],
                    alpha=0.9,
                    lw=0,
                    zorder=1,
                )
            )
        la = g[g["kind"] == "launch"]
        if len(la):
            width = max(tmax - tmin, 1e-9) * 1.5e-4
            spans = [(a * 1e3, max((b - a) * 1e3, width)) for a, b in zip(la["start_s"], la["end_s"])]
            ax.broken_barh(spans, (yy - 0.3, 0.6), facecolors="#111827", linewidth=0, zorder=2)
        tmax = max(tmax, float(g["end_s"].max()) * 1e3)
    return tmax


def _timeline_legend(ax, with_host: bool) -> None:
    handles = [
        Patch(color=COLORS["compute"], label="compute kernel"),
        Patch(color=COLORS["nccl"], label="NCCL kernel"),
        Patch(color=COLORS["memory"], label="memcpy / memset"),
    ]
    if with_host:
        handles.append(Patch(color="#111827", label="launch call (host)"))
    handles += [Patch(color=c, alpha=0.7, label=f"{n}") for n, c in PHASE_COLORS.items()]
    ax.legend(handles=handles, fontsize=7, ncol=7, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.0))


def _ns(seconds) -> np.ndarray:
    return np.round(np.asarray(seconds, dtype=float) * 1e9).astype(np.int64)


def step_facts(tl, host) -> dict[str, Any]:
    """What the shown step holds, from the rows the timeline draws: per rank the NCCL and compute
    time (unions), the NCCL time with compute under it, whether NCCL kernels have streams of their
    own (no compute kernel on them), and how long before its step window began a rank's host began."""
    from dnabert_scaling.intervals import intersect, total_length, union

    nccl, compute, under, lead = [], [], [], {}
    own = True
    for rank, g in tl.groupby("rank"):
        n, c = g[g["category"] == "nccl"], g[g["category"] == "compute"]
        un, uc = union(_ns(n["start_s"]), _ns(n["end_s"])), union(_ns(c["start_s"]), _ns(c["end_s"]))
        nccl.append(total_length(un) / 1e9)
        compute.append(total_length(uc) / 1e9)
        under.append(total_length(intersect(un, uc)) / 1e9)
        if len(n) and set(n["stream"]) & set(c["stream"]):
            own = False
        if host is not None and not host.empty:
            h = host[host["rank"] == rank]
            if len(h) and float(h["start_s"].min()) < float(g["start_s"].min()):
                lead[int(rank)] = float(g["start_s"].min()) - float(h["start_s"].min())
    total_nccl = sum(nccl)
    first = max(lead, key=lambda r: lead[r]) if lead else None
    return {
        "ranks": int(tl["rank"].nunique()),
        "nccl_s": float(np.median(nccl)) if nccl else 0.0,  # median over ranks
        "compute_s": float(np.median(compute)) if compute else 0.0,
        "overlap": sum(under) / total_nccl if total_nccl > 0 else None,  # over all ranks' NCCL time
        "nccl_own_stream": own and total_nccl > 0,
        "host_lead_s": lead[first] if first is not None else 0.0,
        "host_lead_rank": first,
    }


def timeline(rs) -> Figure | NotAvailable:
    if not _gpu_sizes(rs):
        return NotAvailable(f"no GPU activity was traced ({gpu_missing_reason(rs)})")
    tl = rs.table("timeline")
    if tl is None or tl.empty:
        return NotAvailable(f"no timeline table ({rs.table_reason('timeline')})")
    ws = int(tl["world_size"].max())
    tl, ph, host = _timeline_tables(rs, ws)
    has_host = host is not None and not host.empty
    rows = _timeline_rows(tl, host)
    ranks = sorted({r[0] for r in rows})
    fig, ax = plt.subplots(figsize=(10, min(11.0, 1.4 + 0.32 * len(rows))))
    ypos, gpu_band, host_band, y = _row_positions(rows, ranks)
    tmax = float(tl["end_s"].max()) * 1e3
    tmin = min(0.0, float(host["start_s"].min()) * 1e3) if has_host else 0.0
    tmax = _draw_phase_shading(ax, tl, ph, ranks, gpu_band, host_band, tmax)
    if has_host:
        tmax = _draw_host_rows(ax, host, rows, ypos, tmin, tmax)
    for (rank, stream), g in tl.groupby(["rank", "stream"], sort=False):
        yy = ypos[(int(rank), ("gpu", int(stream)))]
        for cat, gg in g.groupby("category"):
            spans = list(zip(gg["start_s"] * 1e3, (gg["end_s"] - gg["start_s"]) * 1e3))
            ax.broken_barh(spans, (yy - 0.38, 0.76), facecolors=COLORS.get(str(cat), "#888888"), linewidth=0, zorder=2)
    ax.set_yticks([ypos[(r, k)] for r, k, _ in rows], [lab for _, _, lab in rows], fontsize=7 if len(rows) > 10 else 8)
    ax.set_ylim(y - 0.4, -0.9)
    ax.set_xlim(tmin, tmax * 1.01)
    ax.set_xlabel(f"ms since the step's window began (world size {ws}, one measured step, each rank on its own clock)")
    _timeline_legend(ax, bool(host_band))
    ax.spines[["top", "right"]].set_visible(False)
    return _png(
        fig,
        f"Timeline of one measured step at world size {ws}: per rank its host threads (phases, launch calls) "
        "above its GPU streams, each phase shaded where the GPU ran its kernels",
        ws=ws,
        host_rows=bool(host_band),
        axis_start_ms=tmin,
        **step_facts(tl, host),
    )
