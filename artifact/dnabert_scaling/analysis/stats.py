"""The one summary statistic of the analysis: median and spread of a set of samples."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dnabert_scaling.metrics_schema import Stat


def stat(values: Iterable[float] | np.ndarray) -> Stat | None:
    """Median, p10, p90, min and max of the finite values, and their count; None when there are none."""
    arr = np.asarray([v for v in np.asarray(values, dtype=np.float64).ravel() if math.isfinite(v)])
    if arr.size == 0:
        return None
    return Stat(
        median=float(np.median(arr)),
        p10=float(np.percentile(arr, 10)),
        p90=float(np.percentile(arr, 90)),
        min=float(arr.min()),
        max=float(arr.max()),
        n=int(arr.size),
    )


def mean_of_known(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None; None when all are."""
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None
