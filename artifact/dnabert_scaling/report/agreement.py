"""The report's cross-tracer agreement table: one configuration traced by two tools, side by side.

Result sets whose runs share the configuration (GPU, model, per-rank batch, sequence length,
precision, attention, world size) but were traced by different tools (Score-P and torch.profiler)
are paired, and their per-step medians are shown next to each other with the ratio: kernels per
step, the GPU-time partition, and the GPU time of each phase. Agreement here says the figures of
the analysis do not depend on the tool that recorded them; a disagreement says which tool missed
what (Score-P 8.4 records no device-to-device copy, so its exposed copy time is lower).
"""

from __future__ import annotations

from typing import Any

ROWS = (  # (label, metric under traced.gpu, unit)
    ("kernels per step", "kernels_per_step", "n"),
    ("step (traced)", "step_time_s", "ms"),
    ("GPU compute", "compute_s", "ms"),
    ("exposed communication", "exposed_comm_s", "ms"),
    ("exposed copies", "exposed_memcpy_s", "ms"),
    ("GPU idle", "idle_s", "ms"),
    ("forward GPU time", "forward_gpu_s", "ms"),
    ("backward GPU time", "backward_gpu_s", "ms"),
    ("optimizer GPU time", "optimizer_gpu_s", "ms"),
    ("NCCL kernels per step", "nccl_kernels_per_step", "n"),
)
CONFIG_KEYS = ("gpu_name", "model", "batch_size_per_rank", "seq_len_tokens", "precision", "attention")


def _config(rs, ws: int) -> tuple:
    prov = rs.metrics.get("provenance") or {}
    return (ws, *(str(prov.get(k)) for k in CONFIG_KEYS))


def _recorded(rs) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str((rs.metrics.get("provenance") or {}).get("time"))).timestamp()
    except ValueError:
        return float("inf")


def pairs(sets: list) -> list[tuple[int, Any, Any]]:
    """(world size, set A, set B) for sets of one configuration traced by different tools; each set
    of the first tool (Score-P first) is paired with the other tool's set recorded closest in time
    (the twin of the same sweep, where there is one)."""
    seen: dict[tuple, dict[str, list]] = {}
    for rs in sets:
        for ws in rs.world_sizes:
            traced = rs.traced(ws)
            if not rs.gpu(ws) or not traced.get("tracer"):
                continue
            seen.setdefault(_config(rs, ws), {}).setdefault(str(traced["tracer"]), []).append(rs)
    out = []
    for key, by_tracer in seen.items():
        tracers = sorted(by_tracer, key=lambda t: (t != "scorep", t))
        if len(tracers) < 2:
            continue
        for a in by_tracer[tracers[0]]:
            b = min(by_tracer[tracers[1]], key=lambda x: abs(_recorded(x) - _recorded(a)))
            out.append((key[0], a, b))
    return out


def _value(rs, ws: int, metric: str) -> float | None:
    stat = (rs.gpu(ws) or {}).get(metric)
    return stat.get("median") if isinstance(stat, dict) else None


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "–"
    return f"{x * 1e3:.3f}" if unit == "ms" else f"{x:,.0f}"


DIFFER = 0.05  # a ratio of the two tools' medians further than this from 1 is named below the table
UNEXPLAINED = (
    "The completeness line explains a difference only in a kind of activity a tool did not record "
    "(Score-P 8.4 records no device-to-device copy and no memset); any other difference is not explained here."
)


def _differing_rows(a, b, ws: int) -> str:
    """The rows whose two medians differ by more than ``DIFFER``, with their ratio, in table order."""
    out = []
    for label, metric, _ in ROWS:
        x, y = _value(a, ws, metric), _value(b, ws, metric)
        if x is not None and y and abs(x / y - 1) > DIFFER:
            out.append(f"{label} ({x / y:.3f})")
    return ", ".join(out)


def _shared_note(numbers: list[int], ws: int) -> str:
    """Where a paired run's ranks shared a GPU: their timings are those of ranks time-slicing it."""
    which = " and ".join(f"set {n}" for n in numbers)
    return (
        f"At world size {ws} the ranks of {which} shared a GPU (a rehearsal): the timings are those of ranks "
        "taking turns on one GPU, and differ between two such runs for that reason too, not only by tool."
    )


def _not_the_same_workload(a, b, ka: float, kb: float) -> str:
    """Two sets of one configuration whose steps launch different numbers of kernels were not the
    same workload (e.g. one recorded before the DDP bucket hook, which changes the gradient copies):
    their phase times differ for that reason too, not only by tracer."""
    when = [str((rs.metrics.get("provenance") or {}).get("time") or "?")[:10] for rs in (a, b)]
    return (
        f"Not the same workload: set {a.number} launches {ka:,.0f} kernels per step (recorded {when[0]}), "
        f"set {b.number} {kb:,.0f} (recorded {when[1]}); the code or options differed between the two recordings, "
        "so this table compares more than the tracers."
    )


def agreement_html(sets: list, esc=None) -> str:
    """The agreement tables (empty string when no configuration was traced by two tools), from the
    plain-cell template (``esc``, once the escaping function, is no longer needed: kept for callers)."""
    from dnabert_scaling.report.html import render

    blocks = []
    for ws, a, b in pairs(sets):
        ta, tb = str(a.traced(ws)["tracer"]), str(b.traced(ws)["tracer"])
        head = [{"text": "per-step median", "num": False}] + [{"text": t, "num": True} for t in (ta, tb, f"{ta} / {tb}")]
        rows = []
        for label, metric, unit in ROWS:
            x, y = _value(a, ws, metric), _value(b, ws, metric)
            ratio = f"{x / y:.3f}" if x is not None and y else "–"
            name = f"{label}{' (ms)' if unit == 'ms' else ''}"
            rows.append(
                [{"text": name, "small": None, "num": False}]
                + [{"text": v, "small": None, "num": True} for v in (_fmt(x, unit), _fmt(y, unit), ratio)]
            )
        comp = []
        for rs, t in ((a, ta), (b, tb)):
            c = rs.traced(ws).get("completeness") or {}
            comp.append(f"{t}: {c.get('status', 'not measured')}" + (f" ({c['reason']})" if c.get("reason") else ""))
        prov = a.metrics.get("provenance") or {}
        title = (
            f"{prov.get('gpu_name', 'GPU')}, world size {ws}, {prov.get('model')} model, batch "
            f"{prov.get('batch_size_per_rank')} per rank: set {a.number} ({ta}) against set {b.number} ({tb})"
        )
        after = [{"small": True, "text": f"Completeness: {'; '.join(comp)}."}]
        differ = _differing_rows(a, b, ws)
        if differ:
            after.append({"small": True, "text": f"Differ by more than {DIFFER:.0%}: {differ}. {UNEXPLAINED}"})
        shared = [rs.number for rs in (a, b) if (rs.traced(ws).get("placement") or {}).get("shared_gpu")]
        if shared:
            after.append({"small": True, "text": _shared_note(shared, ws)})
        ka, kb = _value(a, ws, "kernels_per_step"), _value(b, ws, "kernels_per_step")
        if ka and kb and abs(ka - kb) > 0.01 * max(ka, kb):
            after.append({"small": True, "text": _not_the_same_workload(a, b, ka, kb)})
        blocks.append(str(render("table.html.j2", head=head, rows=rows, before=[title], after=after)))
    return "".join(blocks)
