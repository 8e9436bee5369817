"""The generated part of the documents on how a shipped set's GPU activities were attributed to steps and
phases: how well stream order, the Score-P sets' method, reproduces the exact attribution of the sets
traced with correlation ids."""

from __future__ import annotations

from dnabert_scaling.tools.docfacts import Facts, get, percent


def phase_validation(facts: Facts, _: str | None) -> str:
    """Per shipped set traced with correlation ids (torch.profiler; Score-P in records mode): how well stream order,
    the launch-mode Score-P sets' attribution, reproduces the exact one, per world size, with the share of GPU time it
    placed itself; a set where it placed nothing is said so (its figures are then the time window's)."""
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
        placed = [get(s.gpu(ws), "phase_validation", "stream-order", "placed", default=None) for ws in s.world_sizes()]
        numbers = [p for p in placed if isinstance(p, (int, float))]
        if parts and numbers and all(p == 0 for p in numbers):
            # stream order paired nothing (launches without a stream reference: Score-P's records mode), so every
            # figure is its time-window fallback's; the set's own attribution is by correlation id
            lines.append(
                f"- `{s.name}`: stream order paired nothing itself (its launches carry no stream reference; the set is "
                f"attributed by {get(s.gpu(), 'phase_method', default='its own method')}), so its figures are the time "
                "window's: " + "; ".join(parts)
            )
        elif parts:
            lines.append(f"- `{s.name}`: " + "; ".join(parts))
    return "\n".join(lines) or "- (no shipped set was traced with correlation ids)"
