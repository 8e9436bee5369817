"""Rank imbalance of a multi-rank run: how far apart the ranks start each AllReduce bucket.

An AllReduce completes only when every rank has joined it, and NCCL's kernels spin until the
last one arrives (Caveat 1 of the report), so the rank that starts a bucket last makes the others
busy-wait. For each measured step and each AllReduce bucket (the i-th AllReduce kernel of the
step on every rank: DDP launches the buckets in the same order on all ranks), the **start skew**
is the latest rank's start minus the earliest rank's start, and the latest rank is counted.

Clocks: Kineto traces of one node stamp host and GPU events with the same system clock, so their
starts are compared as they are (``clock`` = ``common``). For other traces (OTF2: one timer per
rank), each start is taken relative to the start of the rank's step window (``clock`` =
``per-rank step start``): then the skew says how differently the ranks' steps unfold, not when in
wall time they joined, and the report says so. Steps where the ranks' bucket counts differ are
left out (counted in ``steps_skipped``).
"""

from __future__ import annotations


import numpy as np

from dnabert_scaling.metrics_schema import RankSkew
from dnabert_scaling.analysis.partition import gradient_allreduce

COMMON = "common"
PER_RANK = "per-rank step start"


def allreduce_starts(gpu, att, windows) -> dict[int, np.ndarray]:
    """Per measured step (window index): the sorted start times (ns) of its AllReduce kernels."""
    ws, _, valid = windows
    start = gpu["start_ns"].to_numpy(np.int64)
    mask = gradient_allreduce(gpu) & (att.step >= 0)
    out = {}
    for k in np.flatnonzero(valid):
        out[int(k)] = np.sort(start[mask & (att.step == k)])
    return out


def rank_skew(per_rank: dict[int, tuple], common_clock: bool) -> RankSkew | None:
    """Skew figures over (step, bucket) samples; None for one rank or no AllReduce.

    ``per_rank``: rank -> (gpu, host, timeline, attribution, windows), as ``metrics`` collects them."""
    from dnabert_scaling.analysis.stats import stat

    ranks = sorted(per_rank)
    if len(ranks) < 2:
        return None
    starts = {}
    for r in ranks:
        gpu, _, _, att, windows = per_rank[r]
        s = allreduce_starts(gpu, att, windows)
        if not common_clock:
            s = {k: v - windows[0][k] for k, v in s.items()}
        starts[r] = s
    steps = sorted(set.intersection(*(set(s) for s in starts.values())))
    skews, late = [], {r: 0 for r in ranks}
    skipped = 0
    for k in steps:
        counts = {len(starts[r][k]) for r in ranks}
        if len(counts) != 1 or counts == {0}:
            skipped += counts != {0}
            continue
        mat = np.vstack([starts[r][k] for r in ranks])  # ranks x buckets
        skews += list((mat.max(axis=0) - mat.min(axis=0)) * 1e-9)
        for i in np.argmax(mat, axis=0):
            late[ranks[int(i)]] += 1
    if not skews:
        return None
    total = sum(late.values()) or 1
    return RankSkew(
        allreduce_start_skew_s=stat(skews),
        clock=COMMON if common_clock else PER_RANK,
        late_rank_share={str(r): late[r] / total for r in ranks},
        buckets=len(skews),
        steps_skipped=int(skipped),
    )
