"""Measured figures for ``dnabert-scaling predict`` to compare its predictions with, and the comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dnabert_scaling.analysis.predict_replay import FIGURES, Profile, _replayed_rows
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.metrics_schema import GpuMetrics, MetricsFile

GOAL = {"step_time_rel": 0.10, "overlap_ratio_abs": 0.10}


# --- measured figures to compare with ---------------------------------------------------------


def _medians(gpu: GpuMetrics) -> dict[str, float | None]:
    return {k: (s.median if (s := getattr(gpu, k)) else None) for k in FIGURES}


SHARED_GPU = (
    "its ranks shared a GPU (a rehearsal): the timings describe ranks time-slicing one GPU over loopback "
    "sockets, not a multi-GPU run a prediction could be compared with"
)
UNKNOWN_PLACEMENT = (
    "its placement is not recorded (traces without the run's records of where each rank ran): whether each "
    "rank had a GPU of its own is unknown, and ranks time-slicing one GPU (a rehearsal, never compared) "
    "look the same in a trace"
)


def _not_comparable(placement, ranks: int) -> str | None:
    """Why a measured world size of ``ranks`` cannot be held against the forecast (its ranks shared a
    GPU, or nobody recorded where they ran), or None for one GPU per rank: the checker's rule
    (``checker.placement.gpu_per_rank``), so a forecast is compared where a verdict would be judged."""
    from dnabert_scaling.checker.placement import OWN, SHARED, gpu_per_rank

    state = gpu_per_rank(placement.to_json() if placement is not None else None, ranks)
    if state == OWN:
        return None
    return SHARED_GPU if state == SHARED else UNKNOWN_PLACEMENT


def measured_from_metrics(metrics: MetricsFile, left_out: list[str] | None = None) -> dict[int, dict[str, Any]]:
    """Measured per world size (> 1) from a metrics.json: the medians the prediction is judged by.
    A world size whose ranks shared a GPU (``SHARED_GPU``) or whose placement is not recorded
    (``UNKNOWN_PLACEMENT``) is left out, said in ``left_out`` where the caller gives a list (the
    report shows it once), else on stderr (the command)."""
    import sys

    out: dict[int, dict[str, Any]] = {}
    for key, entry in metrics.world_sizes.items():
        gpu = entry.traced.gpu if entry.traced else None
        if not gpu or int(key) < 2:
            continue
        placement = entry.traced.placement if entry.traced else None
        reason = _not_comparable(placement, int(key))
        if reason:
            why = f"world size {key} is not compared: {reason}"
            if left_out is None:
                print(f"predict: {why}", file=sys.stderr)
            else:
                left_out.append(why)
            continue
        out[int(key)] = _medians(gpu) | {"source": "metrics.json", "placement": _placement_label(placement)}
    return out


def _placement_label(placement) -> str:
    transports = ", ".join(placement.transports) or "NCCL transport not recorded"
    return f"{placement.ranks} rank(s) on {placement.gpus} GPU(s), {transports}"


def measured_run(path: Path):
    """(run, placement) of ``--measured PATH``, refused (before any trace is read) unless the run's
    records say each rank had a GPU of its own: a rehearsal's ranks shared one, and trace files
    without their run folder do not say where they ran, so neither is compared with the forecast
    nor lends it a contention factor."""
    from dnabert_scaling.analysis.placement import placement_of
    from dnabert_scaling.analysis.runs import is_run_dir, load_run

    path = Path(path)
    if not path.exists():
        raise ArtifactError("--measured: does not exist", path)
    run = load_run(path) if is_run_dir(path) else None
    placement = placement_of(run)
    reason = _not_comparable(placement, run.world_size if run is not None else 2)  # --measured is multi-rank
    if reason == UNKNOWN_PLACEMENT:
        raise ArtifactError(f"--measured: refused: {reason}; give the run folder whose records say where its ranks ran", path)
    if reason:
        raise ArtifactError(f"--measured: refused: {reason}", path)
    return run, placement


def measured_from_trace(path: Path, profile: Profile) -> tuple[int, dict[str, Any]]:
    """Measured figures of a multi-rank run folder whose ranks each had a GPU (``measured_run``),
    analysed now, and the contention factor it shows against the one-GPU trace."""
    from dnabert_scaling.analysis.metrics import analyze_trace
    from dnabert_scaling.analysis.runs import trace_paths
    from dnabert_scaling.traces import read_run_traces

    path = Path(path)
    run, placement = measured_run(path)
    trace = read_run_traces(trace_paths(run))
    n = len(trace.rank_ids)
    if n < 2:
        raise ArtifactError("--measured needs a multi-rank trace; this one has one rank", path)
    return n, _medians(analyze_trace(trace, n, None, str(path)).metrics) | {
        "source": str(path),
        "placement": _placement_label(placement),
        "contention": contention_from_trace(trace, profile),
    }


def contention_from_trace(trace, profile: Profile) -> float | None:
    """How much longer compute kernels run while an all-reduce runs: the kernels of rank 0 that
    start inside an NCCL kernel, their summed duration over the same kernels' (same step, same
    place in the step) in the one-GPU trace. None when the two traces do not hold the same
    kernel sequence."""
    from dnabert_scaling import intervals as iv
    from dnabert_scaling.analysis.attribution import attribute

    sub = trace.rank(trace.rank_ids[0])
    gpu, host = sub.gpu.reset_index(drop=True), sub.host.reset_index(drop=True)
    att = attribute(gpu, host)
    rows = _replayed_rows(gpu, att)
    if len(rows) != len(profile.start) or not np.array_equal(att.step[rows], profile.step):
        return None
    cat = gpu["category"].astype(str).to_numpy()
    s, e = gpu["start_ns"].to_numpy(np.int64), gpu["end_ns"].to_numpy(np.int64)
    ns, ne = iv.union(s[cat == "nccl"], e[cat == "nccl"])
    if not len(ns):
        return None
    j = np.searchsorted(ns, s[rows], side="right") - 1
    during = (j >= 0) & (s[rows] < ne[np.clip(j, 0, None)]) & profile.kernel
    base = profile.dur[during].sum()
    return float((e - s)[rows][during].sum() / base) if base > 0 else None


def compare(pred: dict[str, Any], measured: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Predicted beside measured for every measured world size, with the error (never hidden)."""
    out = {}
    for n, m in sorted(measured.items()):
        p = pred["world_sizes"].get(str(n))
        row: dict[str, Any] = {"world_size": n, "measured": m, "predicted": None, "error": None}
        if p is None:
            row["note"] = f"world size {n} was measured but not predicted (add it to --gpus)"
            out[str(n)] = row
            continue
        row["predicted"] = {k: p[k]["mid"] for k in FIGURES}
        err: dict[str, Any] = {}
        mt, pt = m.get("step_time_s"), p["step_time_s"]["mid"]
        if mt and pt is not None:
            err["step_time_rel"] = (pt - mt) / mt
        mo, po = m.get("overlap_ratio"), p["overlap_ratio"]["mid"]
        if mo is not None and po is not None:
            err["overlap_ratio_abs"] = po - mo
        row["error"] = err
        row["within_goal"] = all(abs(err[k]) <= GOAL[k] for k in GOAL) if set(GOAL) <= set(err) else None
        out[str(n)] = row
    return out
