"""Predictions held against the claims' bounds: ``predictions.json`` (written by ``predict``) x the
claims of ``expected/claims.toml`` -> a *predicted* verdict per claim, with its band, the bound,
and where a world size was also measured, the measured figure and the error.

A predicted verdict is never a verdict: ``check`` does not read predictions, and nothing here
changes ``verdicts.json``. The report shows it next to the measured verdict, with the forecast's
blind spots (:data:`BLIND_SPOTS`), which could move a measured figure across the bound.

A check is predictable when it is a range test on a figure the forecast gives per world size
(``traced.gpu.<figure>.median`` or ``<figure>``, e.g. ``overlap_ratio``, ``exposed_comm_share``,
``allreduce_to_backward``, ``efficiency``). Its band ``[min, max]`` of the forecast's low, mid and
high ends gives: PASS when the whole band lies within the bounds, FAIL when the whole band lies
outside, UNDECIDED when the band straddles a bound; a band of no width (every end one value) is
marked ``no_spread`` and its check is UNINFORMATIVE, whichever side of the bound it lies: the
parameters the forecast varies do not move the figure (the efficiency of a step whose all-reduce
fits into the idle time the kept one-GPU host timeline leaves is 1 at every end), so only what the
forecast does not model decides where a measurement falls. A claim is predicted FAIL when one of
its checks is, PASS only when every check is predicted and PASS, UNDECIDED when a band straddles a
bound, UNINFORMATIVE when a check rests on a band of no width, NOT PREDICTED when none can be
predicted, else UNDECIDED (with the checks that cannot be predicted named)."""

from __future__ import annotations

from typing import Any, Iterable

from dnabert_scaling.checker.claims import Check, Claim
from dnabert_scaling.checker.names import FAIL, PASS

UNDECIDED = "UNDECIDED"
UNINFORMATIVE = "UNINFORMATIVE"
NOT_PREDICTED = "NOT PREDICTED"
PREDICTED_VERDICTS = (PASS, FAIL, UNDECIDED, UNINFORMATIVE, NOT_PREDICTED)

# What the forecast does not model, each with the figures it could move (stated with every
# predicted verdict; the report gives them once and refers to them).
BLIND_SPOTS: tuple[dict[str, Any], ...] = (
    {
        "id": "busy-wait",
        "what": "NCCL kernels busy-waiting for late peers",
        "effect": "the forecast's all-reduce lasts only its transfer time; a measured NCCL kernel also spins "
        "until the slowest rank arrives, so measured AllReduce kernel time, its ratio to backward and the "
        "overlap ratio (a spinning kernel launched early runs under compute) can be well above the forecast",
        "figures": ("allreduce_kernel_s", "allreduce_share", "allreduce_to_backward", "overlap_ratio"),
    },
    {
        "id": "rank-skew",
        "what": "rank skew",
        "effect": "the forecast replays one rank's steps for every rank; ranks that start a bucket's all-reduce "
        "at different times lengthen the collective for all of them and add exposed communication and "
        "step time",
        "figures": ("step_time_s", "exposed_comm_s", "exposed_comm_share", "efficiency", "overlap_ratio"),
    },
    {
        "id": "transport",
        "what": "sockets, loopback and GPUs shared by ranks",
        "effect": "the bus bandwidths are those of the node layout's NVLink/NVSwitch or PCIe table (or a measured "
        "busbw file); ranks talking over sockets or loopback, or sharing a GPU (a rehearsal), are far slower "
        "and are not forecast",
        "figures": ("step_time_s", "exposed_comm_s", "exposed_comm_share", "efficiency"),
    },
    {
        "id": "host-timeline",
        "what": "the host's own time at more ranks",
        "effect": "every GPU activity is released when the one-GPU run launched it, so the traced run's host "
        "timeline is kept at every world size; on a step that leaves the GPU idle most of the time the "
        "all-reduce fits into that idle time and the forecast's efficiency stays near 1, while a host slowed "
        "by more ranks per node, or the tracer's own cost in the traced run, is not forecast",
        "figures": ("step_time_s", "exposed_comm_s", "exposed_comm_share", "efficiency"),
    },
)


def prediction_figure(check: Check) -> str | None:
    """The forecast's figure a check's metric names (``traced.gpu.overlap_ratio.median`` ->
    ``overlap_ratio``), or None when the check is not a range test on one such figure."""
    if check.test != "range":
        return None
    path = check.metric
    if path.startswith("traced.gpu.") and path.endswith(".median"):
        return path[len("traced.gpu.") : -len(".median")]
    return path if "." not in path else None


def _band_numbers(band: dict[str, Any]) -> list[float]:
    """The ends of a band (``low``, ``mid``, ``high``) that are numbers, NaN included."""
    ends = [band.get(k) for k in ("low", "mid", "high")]
    return [float(v) for v in ends if isinstance(v, (int, float)) and not isinstance(v, bool)]


def band_verdict(band: dict[str, Any], lo: float | None, hi: float | None) -> str:
    """PASS, FAIL or UNDECIDED for a band ``{"mid", "low", "high"}`` against ``lo <= x <= hi``."""
    values = _band_numbers(band)
    if not values or any(v != v for v in values):  # NaN: nothing can be said
        return UNDECIDED
    low, high = min(values), max(values)
    if (lo is not None and high < lo) or (hi is not None and low > hi):
        return FAIL
    if (lo is None or low >= lo) and (hi is None or high <= hi):
        return PASS
    return UNDECIDED


def _no_spread(band: dict[str, Any]) -> bool:
    """A band whose ends are one value: the parameters the forecast varies (bus bandwidth, latency,
    contention) do not move the figure, so the band says nothing of how sure the forecast is; only
    what it does not model (its blind spots) could move it."""
    values = _band_numbers(band)
    return len(values) == 3 and all(v == v for v in values) and min(values) == max(values)


def _claim_world_sizes(claim: Check | Claim, study: Iterable[int]) -> list[int]:
    ws = claim.world_sizes
    if ws.explicit is not None:
        return list(ws.explicit)
    return [n for n in sorted(study) if n >= (ws.at_least or 1)]


def _measured_value(measured: dict[int, dict[str, Any]], n: int, figure: str) -> float | None:
    value = (measured.get(n) or {}).get(figure)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _check_rows(check: Check, predicted: dict, measured: dict, study: Iterable[int]) -> list[dict[str, Any]]:
    figure = prediction_figure(check)
    rows = []
    for n in _claim_world_sizes(check, study):
        row: dict[str, Any] = {
            "check": check.name,
            "metric": check.metric,
            "figure": figure,
            "world_size": n,
            "bounds": {"lo": check.lo, "hi": check.hi},
            "bounds_text": check.bounds_text(),
        }
        band = (predicted.get(str(n)) or {}).get(figure) if figure else None
        if figure is None or not isinstance(band, dict) or "mid" not in band:
            why = (
                f"the forecast gives no per-world-size figure for {check.metric} ({check.test} test)"
                if figure is None
                else f"the forecast gives no {figure}"
            )
            rows.append(row | {"verdict": NOT_PREDICTED, "why": why, "band": None})
            continue
        row |= {"band": {k: band.get(k) for k in ("mid", "low", "high")}, "verdict": band_verdict(band, check.lo, check.hi)}
        value = _measured_value(measured, n, figure)
        if value is not None:
            row["measured"] = value
            row["error"] = band["mid"] - value if isinstance(band.get("mid"), (int, float)) else None
        row["blind_spots"] = [b["id"] for b in BLIND_SPOTS if figure in b["figures"]]
        row["no_spread"] = _no_spread(band)
        if row["no_spread"]:  # the band against the bound, kept; the verdict says the band cannot decide
            row["band_verdict"], row["verdict"] = row["verdict"], UNINFORMATIVE
        rows.append(row)
    return rows


def _combine(rows: list[dict[str, Any]]) -> tuple[str, str]:
    verdicts = [r["verdict"] for r in rows]
    if not verdicts or all(v == NOT_PREDICTED for v in verdicts):
        return NOT_PREDICTED, "; ".join(dict.fromkeys(r["why"] for r in rows if r.get("why"))) or "no world size to predict"
    if FAIL in verdicts:
        return FAIL, "a predicted band lies wholly outside the claim's bound"
    if all(v == PASS for v in verdicts):
        return PASS, "every predicted band lies within the claim's bounds"
    if UNDECIDED in verdicts:
        return UNDECIDED, "a predicted band straddles the claim's bound"
    flat = [f"{r['check']} at {r['world_size']}" for r in rows if r["verdict"] == UNINFORMATIVE]
    if flat:
        return UNINFORMATIVE, (
            (f"the band of {flat[0]} has" if len(flat) == 1 else f"the bands of {', '.join(flat)} have")
            + " no width: the forecast's bus bandwidth, latency and contention do not move the figure (it keeps the "
            "one-GPU run's host timeline), so the forecast cannot say where a measurement would fall; only what "
            "it does not model could decide it"
        )
    missing = sorted({r["check"] for r in rows if r["verdict"] == NOT_PREDICTED})
    return UNDECIDED, f"the forecast cannot judge check(s) {', '.join(missing)}"


def predicted_verdicts(
    predictions: dict[str, Any],
    claims: list[Claim],
    study_world_sizes: Iterable[int],
    measured: dict[int, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Every claim's predicted verdict from ``predictions`` (a predictions.json): one dict per claim,
    ``{"id", "title", "verdict", "why", "world_sizes", "checks": [per check and world size: figure,
    band, bounds, verdict, and where ``measured`` (world size -> figure -> value) has it, the
    measured value and the error mid - measured], "blind_spots"}``. Claims whose world sizes are
    ">= N" are predicted at ``study_world_sizes`` from N."""
    predicted = predictions.get("world_sizes") or {}
    measured = measured or {}
    study = list(study_world_sizes)
    out = []
    for claim in claims:
        rows = [r for check in claim.checks for r in _check_rows(check, predicted, measured, study)]
        verdict, why = _combine(rows)
        out.append(
            {
                "id": claim.id,
                "title": claim.title,
                "verdict": verdict,
                "why": why,
                "world_sizes": sorted({r["world_size"] for r in rows if r["verdict"] != NOT_PREDICTED}),
                "checks": rows,
                "blind_spots": sorted({b for r in rows for b in r.get("blind_spots", [])}),
            }
        )
    return out
