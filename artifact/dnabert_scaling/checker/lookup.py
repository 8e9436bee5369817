"""Reading metrics.json: world sizes, metric values by path, sanity rows."""

from __future__ import annotations

from typing import Any

from dnabert_scaling.checker.names import FAIL, PASS, SANITY_ITEMS, SANITY_WORDS, UNKNOWN
from dnabert_scaling.checker.claims import SanityBounds


class Missing:
    """Why a value is not there (a sentence)."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Missing({self.reason!r})"


def world_size_entries(metrics: dict) -> list[int]:
    """Every world size metrics.json has an entry for (the keys of ``world_sizes``), sorted: a world size
    whose runs all failed included. :func:`world_sizes_with_steps` gives those with measured steps."""
    out = []
    for key in metrics.get("world_sizes") or {}:
        try:
            out.append(int(key))
        except ValueError:
            continue
    return sorted(out)


def world_sizes_with_steps(metrics: dict) -> list[int]:
    """The world sizes with measured steps, as ``analyze`` records them (``measured_world_sizes``: a run
    that completed, or traces read); for a metrics.json without the key, every world size it has an entry
    for (:func:`world_size_entries`). A world size whose runs all failed has an entry (its problems) but is
    not among them."""
    sizes = metrics.get("measured_world_sizes")
    if not isinstance(sizes, list):
        return world_size_entries(metrics)
    return sorted(n for n in sizes if isinstance(n, int) and not isinstance(n, bool))


def _entry(metrics: dict, ws: int) -> dict | None:
    e = (metrics.get("world_sizes") or {}).get(str(ws))
    return e if isinstance(e, dict) else None


def lookup(entry: dict, path: str, ws: int) -> Any:
    """The value at ``path`` in one world size's entry, or a Missing saying why not."""
    node: Any = entry
    parts = path.split(".")
    for i, part in enumerate(parts):
        here = ".".join(parts[: i + 1])
        if not isinstance(node, dict) or part not in node:
            return Missing(f"{here} is missing at world size {ws}")
        node = node[part]
        if node is None:
            if here == "traced":
                return Missing(f"no traced run at world size {ws}")
            if here == "traced.gpu":
                why = (entry.get("traced") or {}).get("gpu_not_run_reason")
                return Missing(
                    f"GPU analysis not run at world size {ws}: {why}"
                    if why
                    else f"GPU analysis not run at world size {ws} (no reason recorded)"
                )
            if here.startswith("efficiency"):
                return Missing(
                    f"{here} is null at world size {ws}: it needs untraced throughput runs at world size "
                    f"{ws} and at the 1-GPU baseline"
                )
            return Missing(f"{here} is null at world size {ws}")
    return node


def device_of(entry: dict) -> str | None:
    for part in ("traced", "throughput"):
        d = (entry.get(part) or {}).get("device_type")
        if d:
            return str(d)
    return None


def _trace_complete_value(traced: dict, sanity: dict, bounds: SanityBounds) -> tuple[Any, str | None]:
    """``trace_complete`` re-judged at the claims file's bound from the per-rank figures that
    ``analyze`` recorded, and the reason when it is not PASS."""
    from dnabert_scaling.analysis.completeness import COMPLETE, INCOMPLETE, judge

    comp = traced.get("completeness")
    if not isinstance(comp, dict) or not isinstance(comp.get("per_rank"), dict):
        if traced.get("gpu"):  # GPU figures whose trace was never shown complete: no claim may rest on them
            return False, (
                "trace completeness not measured: the GPU figures come without the launch / activity "
                "counts of analyze's completeness gate (an older metrics.json?); rerun analyze"
            )
        return sanity.get("trace_complete", "missing"), None
    per_rank = {int(r): c for r, c in comp["per_rank"].items()}
    result = judge(per_rank, bounds.trace_complete_min_share)
    value = {COMPLETE: True, INCOMPLETE: False}.get(result["status"], "unknown")
    if value is True:
        return True, None
    losses = "".join(f"; {w}" for w in comp.get("log_warnings") or [])
    return value, f"trace {result['status']}: {result['reason']}{losses}"


def sanity_rows(metrics: dict, bounds: SanityBounds | None = None) -> list[dict]:
    bounds = bounds or SanityBounds()
    rows = []
    for ws in world_size_entries(metrics):
        entry = _entry(metrics, ws) or {}
        traced = entry.get("traced")
        row: dict[str, Any] = {"world_size": ws, "run": (traced or {}).get("run"), "checks": {}, "problems": [], "ok": None}
        if not traced:
            row["note"] = "no traced run at this world size: sanity not checked"
            rows.append(row)
            continue
        sanity = traced.get("sanity")
        if not isinstance(sanity, dict):
            row["note"] = "metrics.json has no sanity for this world size: not checked"
            rows.append(row)
            continue
        ok = True
        complete, complete_why = _trace_complete_value(traced, sanity, bounds)
        for item in SANITY_ITEMS:
            v = complete if item == "trace_complete" else sanity.get(item, "missing")
            if v is True:
                row["checks"][item] = PASS
            elif v is None:
                row["checks"][item] = "N/A"
            elif v == "missing":
                row["checks"][item] = "NOT CHECKED"
            elif v == "unknown":
                row["checks"][item] = UNKNOWN
            else:
                row["checks"][item] = FAIL
                ok = False
        row["problems"] = ([complete_why] if complete_why else []) + [str(p) for p in sanity.get("problems") or []]
        row["trace_complete_bound"] = bounds.trace_complete_min_share
        row["ok"] = ok
        rows.append(row)
    return rows


def _sanity_failure(sanity_by_ws: dict[int, dict], ws: int) -> str | None:
    row = sanity_by_ws.get(ws)
    if not row or row["ok"] is not False:
        return None
    failed = [SANITY_WORDS[k] for k, v in row["checks"].items() if v == FAIL]
    text = f"sanity failed at world size {ws} ({', '.join(failed)})"
    if row["problems"]:
        text += ": " + "; ".join(row["problems"][:3]) + (" ..." if len(row["problems"]) > 3 else "")
    return text


def _runs_for(entry: dict, metric: str) -> list[str]:
    if metric.startswith("traced"):
        run = (entry.get("traced") or {}).get("run")
        return [run] if run else []
    if metric.startswith(("throughput", "efficiency", "dilation")):
        runs = list((entry.get("throughput") or {}).get("runs") or [])
        if metric == "dilation":
            run = (entry.get("traced") or {}).get("run")
            runs += [run] if run else []
        return runs
    if metric.startswith("throughput_noddp"):
        return list((entry.get("throughput_noddp") or {}).get("runs") or [])
    return []
