"""The generated part of the documents on how a shipped set's GPU activities were attributed to steps and
phases: how well stream order, the Score-P sets' method, reproduces the exact attribution of the sets
traced with correlation ids."""

from __future__ import annotations

from dnabert_scaling.tools.docfacts import Facts, get, percent


def phase_validation(facts: Facts, _: str | None) -> str:
    """Per shipped set traced with correlation ids (torch.profiler): how well stream order, the Score-P sets'
    attribution, reproduces the exact one, per world size, with the share of GPU time it placed itself."""
    lines = []
    for s in facts.sets:
        parts = []
        for ws in s.world_sizes():
            order = get(s.gpu(ws), "phase_validation", "stream-order", default=None)
            window = get(s.gpu(ws), "phase_validation", "time-window", default=None)
            if not isinstance(order, dict) or not isinstance(order.get("time"), (int, float)):
                continue
            said = f"world size {ws}: {percent(order['time'], 1)} of GPU time"
            placed = order.get("placed")
            said += (
                f" (placed {percent(placed, 1)} itself)"
                if isinstance(placed, (int, float))
                else " (what it placed itself: not recorded)"
            )
            if isinstance(window, dict) and isinstance(window.get("time"), (int, float)):
                said += f", the time window {percent(window['time'], 1)}"
            parts.append(said)
        if parts:
            lines.append(f"- `{s.name}`: " + "; ".join(parts))
    return "\n".join(lines) or "- (no shipped set was traced with correlation ids)"
