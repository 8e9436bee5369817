"""The report's figures: matplotlib (Agg) to PNG bytes, or a reason why a figure is not available.

Every function takes one :class:`~dnabert_scaling.report.content.ResultSet` and returns a
:class:`Figure` (PNG bytes, alt text) or a :class:`NotAvailable` (a sentence). The notebook shows
either through :func:`dnabert_scaling.report.content.show_figure`, so a figure without data is a
clear note, never an empty axis. What the figures share is in ``figure_base``; the one-step timeline
is drawn in ``figure_timeline`` (both read here too, so that a caller finds every figure in this
module).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display is needed or wanted

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from dnabert_scaling.report.figure_base import (  # noqa: E402, F401  (Figure, NotAvailable, gpu_missing_reason: callers read them here)
    COLORS,
    PHASE_COLORS,
    Figure,
    NotAvailable,
    _below,
    _gpu_sizes,
    _ms,
    _png,
    gpu_missing_reason,
    size_label,
)
from dnabert_scaling.report.figure_timeline import step_facts, timeline  # noqa: E402, F401  (one module of figures for the callers)

# ---- Figure: GPU time breakdown per world size --------------------------------------------


def _finite_max(values) -> float:
    """The largest finite value, 0 where there is none (a figure that could not be computed is drawn as
    nothing, without the RuntimeWarning that numpy's nanmax prints into the report)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    return float(arr.max()) if arr.size else 0.0


def breakdown(rs) -> Figure | NotAvailable:
    sizes = _gpu_sizes(rs)
    if not sizes:
        return NotAvailable(f"no GPU time was measured ({gpu_missing_reason(rs)})")
    parts = [
        ("compute_s", "compute", COLORS["compute"]),
        ("exposed_comm_s", "exposed communication", COLORS["exposed_comm"]),
        ("exposed_memcpy_s", "exposed memcpy", COLORS["exposed_memcpy"]),
    ]
    if all(rs.gpu(n).get("idle_host_wait_s") for n in sizes):  # idle split by cause (results since the idle breakdown)
        parts += [
            ("idle_host_wait_s", "idle: host wait", COLORS["idle"]),
            ("idle_kernel_wait_s", "idle: kernel wait", "#e2e2e2"),
            ("idle_other_s", "idle: other", "#f3f3f3"),
        ]
    else:
        parts.append(("idle_s", "idle", COLORS["idle"]))
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    x = np.arange(len(sizes))
    bottom = np.zeros(len(sizes))
    for key, label, color in parts:
        vals = np.array([_ms(rs.gpu(n).get(key)) for n in sizes])
        vals = np.nan_to_num(vals)
        ax.bar(x, vals, 0.55, bottom=bottom, label=label, color=color, edgecolor="white", linewidth=0.5)
        for xi, b, v in zip(x, bottom, vals):
            if v > 0.06 * max(1e-9, _finite_max([_ms(rs.gpu(n).get("step_time_s")) for n in sizes])):
                ax.text(
                    xi,
                    b + v / 2,
                    f"{v:.1f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="black" if label.startswith("idle") else "white",
                )
        bottom += vals
    step = np.array([_ms(rs.gpu(n).get("step_time_s")) for n in sizes])
    ax.scatter(x, step, marker="_", s=900, color="black", zorder=5, label="median step time")
    ax.set_xticks(x, [size_label(rs, n) for n in sizes])
    ax.set_ylabel("ms per step (median over ranks x steps)")
    ax.set_ylim(0, max(_finite_max(bottom), _finite_max(step), 1e-9) * 1.08)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, _below(ax)), fontsize=8, ncol=4, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Where the GPU step goes: compute + exposed comm + exposed memcpy + idle", fontsize=10)
    return _png(
        fig,
        "Stacked bars per world size: compute, exposed communication, exposed memcpy and idle time per step",
        sizes=sizes,
        idle_split=len(parts) > 4,
    )


# ---- Figure: AllReduce vs backward ---------------------------------------------------------


def allreduce_vs_backward(rs) -> Figure | NotAvailable:
    sizes = _gpu_sizes(rs)
    if not sizes:
        return NotAvailable(f"no GPU time was measured ({gpu_missing_reason(rs)})")
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    x = np.arange(len(sizes))
    w = 0.36
    tops = np.zeros(len(sizes))  # the top of each group's bars and error bars: the ratio stands above it
    for off, key, label, color in (
        (-w / 2, "allreduce_kernel_s", "AllReduce kernel time (sum)", COLORS["allreduce"]),
        (w / 2, "backward_gpu_s", "backward GPU time (union)", COLORS["backward"]),
    ):
        med, lo, hi = [], [], []
        for n in sizes:
            st = rs.gpu(n).get(key) or {}
            m = st.get("median")
            med.append(np.nan if m is None else m * 1e3)
            lo.append(np.nan if st.get("p10") is None else st["p10"] * 1e3)
            hi.append(np.nan if st.get("p90") is None else st["p90"] * 1e3)
        med, lo, hi = map(np.array, (med, lo, hi))
        yerr = np.vstack([np.clip(med - lo, 0, None), np.clip(hi - med, 0, None)])
        tops = np.fmax(tops, np.nan_to_num(med + yerr[1]))
        ax.bar(
            x + off,
            np.nan_to_num(med),
            w,
            label=label,
            color=color,
            yerr=np.nan_to_num(yerr),
            capsize=3,
            error_kw={"elinewidth": 1},
        )
    # the ratio above its pair of bars (inside them it was clipped by the narrower bar), "no AllReduce"
    # where none ran; the axis grows to hold the labels and the legend
    top = max(_finite_max(tops), 1e-9)
    ratios, without = {}, []
    for xi, n, t in zip(x, sizes, tops):
        r = rs.gpu(n).get("allreduce_to_backward") or {}
        if not (rs.gpu(n).get("allreduce_kernel_s") or {}).get("median"):
            without.append(n)
            ax.text(xi - w / 2, top * 0.02, "no\nAllReduce", ha="center", va="bottom", fontsize=7, color="#6b7280")
        elif r.get("median") is not None:
            ratios[n] = float(r["median"])
            ax.text(xi, t + top * 0.02, f"ratio {ratios[n]:.3g}", ha="center", va="bottom", fontsize=8, fontweight="bold")
    ax.set_ylim(0, top * 1.3)
    ax.set_xticks(x, [size_label(rs, n) for n in sizes])
    ax.set_ylabel("ms per step (median, p10-p90)")
    ax.legend(fontsize=8, frameon=False, loc="upper left", ncol=2)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("AllReduce kernel time against the backward pass's GPU time", fontsize=10)
    return _png(
        fig,
        "Grouped bars per world size: AllReduce kernel time and backward GPU time with p10-p90 error bars",
        sizes=sizes,
        ratios=ratios,
        without_allreduce=without,
    )


# ---- Figure: overlap per step across ranks ---------------------------------------------------


def overlap(rs, bound: float | None = None) -> Figure | NotAvailable:
    if not _gpu_sizes(rs):
        return NotAvailable(f"no GPU activity was traced ({gpu_missing_reason(rs)})")
    sp = rs.table("step_partition")
    if sp is None or sp.empty or "overlap_ratio" not in sp:
        return NotAvailable(f"no per-step partition table ({rs.table_reason('step_partition') or 'no overlap_ratio column'})")
    sp = sp[sp["world_size"] > 1].dropna(subset=["overlap_ratio"])
    if sp.empty:
        return NotAvailable(
            "no world size above 1 with NCCL activity: the overlap ratio is only defined where NCCL "
            f"kernels ran (measured world sizes: {', '.join(map(str, rs.world_sizes))})"
        )
    sizes = sorted(int(n) for n in sp["world_size"].unique())
    fig, axes = plt.subplots(1, len(sizes), figsize=(min(11, 3.9 * len(sizes) + 0.8), 3.0), sharey=True, squeeze=False)
    cmap = plt.get_cmap("viridis")
    drawn = False
    for ax, n in zip(axes[0], sizes):
        g = sp[sp["world_size"] == n]
        ranks = sorted(g["rank"].unique())
        for i, r in enumerate(ranks):
            gr = g[g["rank"] == r].sort_values("step")
            ax.plot(
                gr["step"],
                gr["overlap_ratio"],
                marker=".",
                ms=3,
                lw=0.8,
                alpha=0.85,
                color=cmap(i / max(1, len(ranks) - 1)),
                label=f"rank {r}",
            )
        if bound is not None and not rs.shared_gpu(n):  # ranks sharing a GPU are no evidence for the claim
            drawn = True
            ax.axhline(bound, color="#b3261e", ls="--", lw=1)
            ax.text(ax.get_xlim()[0], bound, f" claim bound {bound:g}", color="#b3261e", fontsize=7, va="bottom")
        med = float(g["overlap_ratio"].median())
        ax.set_title(
            f"{rs.ranks(n)}: median {med:.2f}" if med >= 0.01 or med == 0 else f"{rs.ranks(n)}: median {med:.2g}", fontsize=9
        )
        ax.set_xlabel("measured step")
        ax.set_ylim(0, 1.05)
        ax.spines[["top", "right"]].set_visible(False)
        if len(ranks) <= 8:
            ax.legend(fontsize=6, ncol=2, frameon=False, loc="lower right")
    axes[0][0].set_ylabel("|U compute ∩ U nccl| / |U nccl|")
    return _png(
        fig,
        "Overlap ratio per measured step, one line per rank, for each world size above 1 with NCCL kernels",
        sizes=sizes,
        bound=bound if drawn else None,
        bound_withheld=bound is not None and any(rs.shared_gpu(n) for n in sizes),
    )


# ---- Figure: throughput and efficiency ---------------------------------------------------------


def _efficiency_panel(b, rs, eff: list, why: str, bound: float | None, not_evidence: str) -> tuple[bool, bool]:
    """The throughput figure's right panel: the weak-scaling efficiency per world size with its spread
    and, only where every rank had a GPU of its own, the claim's bound; else why there is none. Returns
    whether error bars and the bound were drawn."""
    errbars = bound_drawn = False
    if eff:
        spread = [rs.entry(n).get("efficiency_spread") or {} for n, _ in eff]
        lo = [max(0.0, e - s["min"]) if s.get("min") is not None else 0.0 for (_, e), s in zip(eff, spread)]
        hi = [max(0.0, s["max"] - e) if s.get("max") is not None else 0.0 for (_, e), s in zip(eff, spread)]
        b.bar(
            [str(n) for n, _ in eff],
            [e for _, e in eff],
            color=COLORS["compute"],
            width=0.5,
            yerr=[lo, hi] if (errbars := any(lo) or any(hi)) else None,
            capsize=4,
            error_kw={"elinewidth": 1},
        )
        for i, (_, e) in enumerate(eff):
            b.text(i + 0.3, e + 0.02, f"{e:.2f}", ha="left", fontsize=8)
        b.axhline(1.0, color="black", ls="--", lw=1, label="ideal")
        if bound is not None and rs.one_gpu_per_rank:
            bound_drawn = True
            b.axhline(bound, color="#b3261e", ls="--", lw=1, label=f"claim bound {bound:g}")
        b.set_ylim(0, max(1.35, max(e for _, e in eff) + 0.15))
        b.legend(fontsize=8, frameon=False, loc="upper right", ncol=2)
        b.set_title(
            "Weak-scaling efficiency" + (f" ({not_evidence}: not evidence for the GPU claim)" if not_evidence else ""),
            fontsize=8 if not_evidence else 10,
        )
        b.set_xlabel("world size")
    else:
        b.axis("off")
        b.text(
            0.5,
            0.5,
            f"efficiency not available:\n{why}",
            ha="center",
            va="center",
            fontsize=9,
            color="#6b7280",
            transform=b.transAxes,
        )
    return errbars, bound_drawn


def throughput(rs, bound: float | None = None) -> Figure | NotAvailable:
    sizes = [n for n in rs.world_sizes if (rs.entry(n).get("throughput") or {}).get("samples_per_s")]
    if not sizes:
        return NotAvailable(
            "no throughput was measured: the set has no untraced runs (throughput comes from untraced runs, or from "
            "bare traces given with their batch size)"
        )
    tp = rs.table("throughput")
    base = (rs.entry(1).get("throughput") or {}).get("samples_per_s") if 1 in rs.world_sizes else None
    fig, (a, b) = plt.subplots(1, 2, figsize=(9.5, 3.3))
    med = np.array([rs.entry(n)["throughput"]["samples_per_s"]["median"] for n in sizes])
    if tp is not None and not tp.empty and "samples_per_s" in tp:
        t = tp[tp["variant"] != "noddp"] if "variant" in tp else tp
        a.scatter(t["world_size"], t["samples_per_s"], s=14, color="#9ca3af", label="each untraced run", zorder=3)
    a.plot(sizes, med, marker="o", color=COLORS["compute"], label="median", zorder=4)
    ideal = bool(base) and len(set([1, *sizes])) > 1  # a line needs two world sizes
    if ideal:
        xs = np.array(sorted(set([1, *sizes])))
        a.plot(xs, xs * base["median"], ls="--", color="black", lw=1, label="ideal (N x world size 1)")
    a.set_xscale("log", base=2)
    a.set_xticks(sizes, [str(n) for n in sizes])
    shared = [n for n in sizes if n > 1 and rs.shared_gpu(n)]
    a.set_xlabel(
        f"{rs.unit} (world size" + (", CPU" if rs.device == "cpu" else "") + ("; ranks share a GPU" if shared else "") + ")"
    )
    a.set_ylabel("samples / s")
    a.legend(fontsize=8, frameon=False)
    a.spines[["top", "right"]].set_visible(False)
    a.set_title("Throughput", fontsize=10)
    eff = [(n, rs.entry(n).get("efficiency")) for n in sizes]
    eff = [(n, e) for n, e in eff if e is not None]
    if len(eff) == 1 and eff[0][0] == 1:
        eff = []
        why = "only world size 1, the baseline, was measured"
    else:
        why = "no throughput at world size 1, the baseline"
    not_evidence = "CPU ranks" if rs.device == "cpu" else ("ranks share a GPU" if shared else "")
    errbars, bound_drawn = _efficiency_panel(b, rs, eff, why, bound, not_evidence)
    b.spines[["top", "right"]].set_visible(False)
    return _png(
        fig,
        "Throughput against ideal linear scaling, and weak-scaling efficiency per world size"
        if eff
        else "Throughput per world size; weak-scaling efficiency not available",
        sizes=sizes,
        repeats=tp is not None and not tp.empty and "samples_per_s" in tp,
        ideal=ideal,
        efficiency=[n for n, _ in eff],
        efficiency_missing=None if eff else why,
        errbars=errbars,
        bound=bound if bound_drawn else None,
        not_evidence=not_evidence,
    )


# ---- Figure: per-step distributions ----------------------------------------------------------


def distributions(rs) -> Figure | NotAvailable:
    """Step time, exposed communication and overlap over all (rank, step) samples, per world size."""
    sizes = _gpu_sizes(rs)
    steps = rs.table("step_partition")
    if not sizes or steps is None or steps.empty:
        why = gpu_missing_reason(rs) if not sizes else rs.table_reason("step_partition")
        return NotAvailable(f"no per-step GPU figures ({why})")
    panels = [
        ("step_time_s", "step time (ms)", 1e3),
        ("exposed_comm_s", "exposed communication (ms)", 1e3),
        ("overlap_ratio", "overlap ratio", 1.0),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.2))
    for ax, (col, label, scale) in zip(axes, panels):
        data, ticks = [], []
        for n in sizes:
            v = steps.loc[steps["world_size"] == n, col].to_numpy(dtype=float) * scale if col in steps else np.array([])
            v = v[np.isfinite(v)]
            if v.size:
                data.append(v)
                ticks.append(str(n))
        if data:
            ax.boxplot(
                data,
                whis=(10, 90),
                showfliers=True,
                widths=0.5,
                flierprops={"markersize": 2, "markerfacecolor": "#6b7280", "markeredgecolor": "none"},
                medianprops={"color": COLORS["exposed_comm"]},
            )
            ax.set_xticks(range(1, len(ticks) + 1), ticks)
        else:
            ax.text(
                0.5,
                0.5,
                "no samples\n(no NCCL kernels)" if col == "overlap_ratio" else "no samples",
                ha="center",
                va="center",
                fontsize=8,
                color="#6b7280",
                transform=ax.transAxes,
            )
            ax.set_xticks([])
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("world size", fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    return _png(
        fig, "Box plots per world size over all (rank, measured step) samples: step time, exposed communication, overlap ratio"
    )


# ---- Figure: busy-wait ---------------------------------------------------------------------------


def busy_wait(rs) -> Figure | NotAvailable:
    items = [(n, rs.busy_wait(n)) for n in rs.world_sizes]
    items = [(n, b) for n, b in items if b and b.get("transfer_s_at_measured_busbw")]
    if not items:
        return NotAvailable(
            "no bus-bandwidth measurement (busbw) for these runs, so the busy-wait share of the "
            "AllReduce kernel time cannot be estimated"
        )
    fig, ax = plt.subplots(figsize=(6.5, 2.9))
    x = np.arange(len(items))
    ax.bar(
        x - 0.18,
        [b["allreduce_kernel_s"] * 1e3 for _, b in items],
        0.36,
        color=COLORS["allreduce"],
        label="AllReduce kernel time per step (trace)",
    )
    ax.bar(
        x + 0.18,
        [b["transfer_s_at_measured_busbw"] * 1e3 for _, b in items],
        0.36,
        color="#6b7280",
        label="gradient bytes at measured bus bandwidth",
    )
    for xi, (_, b) in zip(x, items):
        ax.text(xi - 0.18, b["allreduce_kernel_s"] * 1e3 * 1.02, f"x{b['ratio']:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [size_label(rs, n) for n, _ in items])
    ax.set_ylabel("ms per step")
    ax.set_ylim(0, max(b["allreduce_kernel_s"] for _, b in items) * 1e3 * 1.15)
    ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, _below(ax)), ncol=2)
    ax.spines[["top", "right"]].set_visible(False)
    return _png(fig, "AllReduce kernel time against the pure transfer time at the measured bus bandwidth")
