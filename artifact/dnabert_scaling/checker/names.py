"""Verdict and sanity-item names, and how values are written, shared by every part of the checker."""

from __future__ import annotations

import math
from typing import Any


CLAIMS_SCHEMA = "dnabert-scaling/claims/1"
VERDICTS_SCHEMA = "dnabert-scaling/verdicts/1"
PASS, FAIL, NOT_RUN, INVALID = "PASS", "FAIL", "NOT RUN", "INVALID"
VERDICTS = (PASS, FAIL, NOT_RUN, INVALID)
# how the verdicts of a claim's checks combine: the first one present wins
PRECEDENCE = (FAIL, INVALID, NOT_RUN, PASS)
SANITY_ITEMS = ("all_ranks_present", "steps_complete", "finite_loss", "gpu_streams", "trace_complete")
SANITY_WORDS = {
    "all_ranks_present": "all ranks present",
    "steps_complete": "measured steps complete",
    "finite_loss": "finite loss",
    "gpu_streams": "GPU streams in every trace",
    "trace_complete": "GPU activity for every launch",
}

SANITY_SHORT = {
    "all_ranks_present": "ranks",
    "steps_complete": "steps",
    "finite_loss": "loss",
    "gpu_streams": "GPU streams",
    "trace_complete": "complete",
}
UNKNOWN = "UNKNOWN"  # a sanity item that the data cannot show (never a FAIL, shown as such)


def _fmt(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if x == 0:
            return "0"
        if abs(x) >= 1000 or abs(x) < 1e-3:
            return f"{x:.3g}"
        return f"{x:.3g}" if abs(x) < 1 else f"{x:.3f}".rstrip("0").rstrip(".")
    if x is None:
        return "null"
    return str(x)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x
