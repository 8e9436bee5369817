"""Per-step GPU-time figures of one rank.

Each measured step owns a window of the rank's GPU timeline: from the start of the first GPU
activity the step launched (its first kernel, where that activity is a copy that ran before the step
before had finished its kernels) to the start of the next step's window (the last step: to the end
of its last activity). The windows tile the measured run, so the time in which the GPU waits
for the host counts as the step's idle time. Inside each window the GPU time is partitioned
exactly (TraceLens' partition, per step instead of per trace)::

    step = compute + exposed communication + exposed memcpy + idle
    compute           = |U compute|
    exposed comm      = |U nccl - U compute|
    exposed memcpy    = |U memory - U compute - U nccl|
    idle              = step - |U all|

and next to it the overlap ratio ``|U compute ∩ U nccl| / |U nccl|`` (HTA's definition), NCCL
time as a sum of kernel durations and as a union, the AllReduce kernel time, and the GPU busy
time of each phase's compute kernels (attributed by launch, see ``attribution``). All lengths are
computed in integer nanoseconds with ``dnabert_scaling.intervals`` and reported in seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dnabert_scaling import intervals as iv
from dnabert_scaling.analysis.attribution import PHASES, Attribution
from dnabert_scaling.traces.classify import is_integer_collective, nccl_activity

NS = 1e-9


def step_windows(gpu: pd.DataFrame, att: Attribution, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(window start, window end, valid) per measured step, in ns. A window starts at the step's
    first activity, unless that activity (a copy on a stream of its own: the next batch's input)
    started before the step before it had finished its kernels; it then starts at the step's first
    kernel, so that the step before keeps its own kernels (ranks time-slicing one GPU do this)."""
    start = gpu["start_ns"].to_numpy(np.int64)
    end = gpu["end_ns"].to_numpy(np.int64)
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    sel = att.step >= 0
    kernel = sel & (gpu["category"].astype(str).to_numpy() != "memory")
    first_any, first_kernel = np.full(steps, big, dtype=np.int64), np.full(steps, big, dtype=np.int64)
    last_end, last_kernel_end = np.full(steps, small, dtype=np.int64), np.full(steps, small, dtype=np.int64)
    np.minimum.at(first_any, att.step[sel], start[sel])
    np.minimum.at(first_kernel, att.step[kernel], start[kernel])
    np.maximum.at(last_end, att.step[sel], end[sel])
    np.maximum.at(last_kernel_end, att.step[kernel], end[kernel])
    ws = first_any.copy()
    valid = ws != big
    idx = np.flatnonzero(valid)
    for prev, k in zip(idx, idx[1:]):  # a loop over steps (50), not activities
        if ws[k] < last_kernel_end[prev] and first_kernel[k] != big:
            ws[k] = first_kernel[k]
    we = np.empty(steps, dtype=np.int64)
    for j, k in enumerate(idx):
        we[k] = ws[idx[j + 1]] if j + 1 < len(idx) else last_end[k]
    we[~valid] = ws[~valid] = 0
    return ws, we, valid


def _union(gpu: pd.DataFrame, mask: np.ndarray) -> iv.Intervals:
    return iv.union(gpu["start_ns"].to_numpy(np.int64)[mask], gpu["end_ns"].to_numpy(np.int64)[mask])


Windows = tuple[np.ndarray, np.ndarray, np.ndarray]  # (start, end, valid) per measured step


def partition_ns(gpu: pd.DataFrame, ws: np.ndarray, we: np.ndarray) -> dict[str, np.ndarray]:
    """The exact partition of each window [ws, we) of GPU time, in integer ns per window:
    ``window`` = ``compute`` + ``exposed_comm`` + ``exposed_memcpy`` + ``idle``, plus ``busy``
    (|U all|), ``nccl_union`` and ``overlap`` (|U compute ∩ U nccl|). The one definition of the
    partition: ``analyze`` applies it per measured step, ``summarize`` to a whole trace."""
    cat = gpu["category"].astype(str).to_numpy()
    comp = _union(gpu, cat == "compute")
    nccl = _union(gpu, cat == "nccl")
    mem = _union(gpu, cat == "memory")

    def inside(a: iv.Intervals) -> np.ndarray:
        return iv.length_in_windows(a, ws, we)

    out = {
        "window": np.asarray(we, np.int64) - np.asarray(ws, np.int64),
        "compute": inside(comp),
        "exposed_comm": inside(iv.subtract(nccl, comp)),
        "exposed_memcpy": inside(iv.subtract(iv.subtract(mem, comp), nccl)),
        "busy": inside(_union(gpu, np.ones(len(gpu), dtype=bool))),
        "nccl_union": inside(nccl),
        "overlap": inside(iv.intersect(comp, nccl)),
    }
    out["idle"] = out["window"] - out["busy"]
    assert np.all(out["compute"] + out["exposed_comm"] + out["exposed_memcpy"] + out["idle"] == out["window"]), (
        "partition does not add up"
    )
    return out


def rank_step_table(gpu: pd.DataFrame, att: Attribution, windows: Windows) -> pd.DataFrame:
    """One row per measured step of this rank with every per-step figure (seconds)."""
    ws, we, valid = windows
    steps = len(ws)
    cat = gpu["category"].astype(str).to_numpy()
    kind = gpu["kind"].astype(str).to_numpy()
    coll = gpu["collective"].astype(object).to_numpy()
    dur = gpu["end_ns"].to_numpy(np.int64) - gpu["start_ns"].to_numpy(np.int64)
    part = partition_ns(gpu, ws, we)
    window = part["window"]
    compute_ns, exposed_comm_ns, exposed_mem_ns = part["compute"], part["exposed_comm"], part["exposed_memcpy"]
    busy_ns, nccl_union_ns, overlap_ns = part["busy"], part["nccl_union"], part["overlap"]

    def inside(a: iv.Intervals) -> np.ndarray:
        return iv.length_in_windows(a, ws, we)

    sel = att.step >= 0
    k = att.step[sel]

    def per_step_sum(mask: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        m = mask[sel]
        w = (values if values is not None else np.ones(len(gpu)))[sel][m]
        return np.bincount(k[m], weights=w, minlength=steps)[:steps]

    is_nccl_kernel = (cat == "nccl") & (kind == "kernel")
    is_allreduce = gradient_allreduce(gpu)
    table = {
        "step": np.arange(steps),
        "valid": valid,
        "window_start_ns": ws,
        "step_time_s": window * NS,
        "compute_s": compute_ns * NS,
        "exposed_comm_s": exposed_comm_ns * NS,
        "exposed_memcpy_s": exposed_mem_ns * NS,
        "idle_s": (window - busy_ns) * NS,
        "nccl_kernel_sum_s": per_step_sum(is_nccl_kernel, dur) * NS,
        "nccl_union_s": nccl_union_ns * NS,
        "nccl_kernels": per_step_sum(is_nccl_kernel).astype(np.int64),
        "overlap_s": overlap_ns * NS,
        "allreduce_kernel_s": per_step_sum(is_allreduce, dur) * NS,
        "allreduce_kernels": per_step_sum(is_allreduce).astype(np.int64),
        "unknown_collective_nccl_s": per_step_sum(is_nccl_kernel & pd.isna(coll), dur) * NS,
        "kernels": per_step_sum(kind == "kernel").astype(np.int64),
    }
    with np.errstate(invalid="ignore", divide="ignore"):
        table["overlap_ratio"] = np.where(nccl_union_ns > 0, overlap_ns / np.maximum(nccl_union_ns, 1), np.nan)
        table["exposed_comm_share"] = np.where(window > 0, exposed_comm_ns / np.maximum(window, 1), np.nan)
    for code, phase in enumerate(PHASES):
        mask = (cat == "compute") & (att.phase == code) & (att.step >= 0)
        table[f"{phase}_gpu_s"] = inside(_union(gpu, mask)) * NS
    with np.errstate(invalid="ignore", divide="ignore"):
        b = table["backward_gpu_s"]
        table["allreduce_to_backward"] = np.where(b > 0, table["allreduce_kernel_s"] / np.where(b > 0, b, 1), np.nan)
        total_kernel = per_step_sum(kind == "kernel", dur) * NS + per_step_sum(kind != "kernel", dur) * NS
        table["allreduce_share"] = np.where(
            total_kernel > 0, table["allreduce_kernel_s"] / np.where(total_kernel > 0, total_kernel, 1), np.nan
        )
    out = pd.DataFrame(table)
    return out[out["valid"]].drop(columns=["valid"]).reset_index(drop=True)


def stream_busy(gpu: pd.DataFrame, windows: Windows, measured: np.ndarray | None = None) -> pd.DataFrame:
    """Busy time per stream per step (median over steps), and the stream's role: from the
    activities of the measured steps (``measured``, a mask over ``gpu``'s rows; all rows without it),
    so that set-up work before the first step (DDP's constructor collectives) does not decide it."""
    ws, we, valid = windows
    ws, we = ws[valid], we[valid]
    rows = []
    stream = gpu["stream"].to_numpy(np.int64)
    cat = gpu["category"].astype(str).to_numpy()
    dur = gpu["end_ns"].to_numpy(np.int64) - gpu["start_ns"].to_numpy(np.int64)
    in_steps = np.ones(len(gpu), dtype=bool) if measured is None else np.asarray(measured, dtype=bool)
    for s in np.unique(stream):
        m = stream == s
        busy = iv.length_in_windows(_union(gpu, m), ws, we) * NS
        by_cat = {c: int(dur[m & in_steps & (cat == c)].sum()) for c in ("compute", "nccl", "memory")}
        total = sum(by_cat.values()) or 1
        role = stream_role(by_cat)
        rows.append(
            {
                "stream": int(s),
                "busy_s_per_step": float(np.median(busy)) if len(busy) else 0.0,
                "role": role,
                "compute_share": by_cat["compute"] / total,
                "nccl_share": by_cat["nccl"] / total,
            }
        )
    return pd.DataFrame(rows)


ROLE_SHARE = 0.9  # a stream's role is the kernel category of at least this share of its kernel time


def stream_role(time_by_category: dict[str, int]) -> str:
    """A stream's role from its GPU time per category: copies and memsets ride along on any stream,
    so the role is the kernel category (``compute`` or ``nccl``) holding at least ``ROLE_SHARE`` of
    the stream's kernel time, ``mixed`` when neither does, and ``memory`` for a stream that runs no
    kernel time at all. The one rule, for ``analyze`` and ``summarize``."""
    kernels = {c: t for c, t in time_by_category.items() if c != "memory"}
    total = sum(kernels.values())
    if total <= 0:
        return "memory"
    top = max(kernels, key=kernels.get)
    return top if kernels[top] / total >= ROLE_SHARE else "mixed"


def activity_key(gpu: pd.DataFrame) -> np.ndarray:
    """The name of the 'GPU activity' each row belongs to for the ranking: NCCL kernels by
    collective (``nccl:AllReduce``; ``nccl:unknown`` when neither name nor trace says), other
    kernels, copies and memsets by their name (as Vampir's function summary groups regions)."""
    names = gpu["name"].astype(str).to_numpy()
    coll = gpu["collective"].astype(object).to_numpy()
    cat = gpu["category"].astype(str).to_numpy()
    key = names.astype(object).copy()
    nccl = cat == "nccl"
    key[nccl] = [nccl_activity(n, c) for n, c in zip(names[nccl], coll[nccl])]
    return key


def gradient_allreduce(gpu: pd.DataFrame) -> np.ndarray:
    """Mask of the gradient-sync AllReduce kernels: NCCL AllReduce kernels, without the integer
    all-reduce of ``find_unused_parameters`` (``traces.classify.nccl_activity``). C2-C4 rest on it."""
    cat = gpu["category"].astype(str).to_numpy()
    kind = gpu["kind"].astype(str).to_numpy()
    coll = gpu["collective"].astype(object).to_numpy()
    names = gpu["name"].astype(str).to_numpy()
    mask = (cat == "nccl") & (kind == "kernel") & (coll == "AllReduce")
    mask[mask] = [not is_integer_collective(n) for n in names[mask]]
    return mask


def ranking(gpu: pd.DataFrame, att: Attribution) -> pd.DataFrame:
    """Summed GPU time per activity over the measured steps of this rank."""
    sel = att.step >= 0
    if not sel.any():
        return pd.DataFrame(columns=["activity", "kind", "sum_ns", "count"])
    dur = (gpu["end_ns"].to_numpy(np.int64) - gpu["start_ns"].to_numpy(np.int64))[sel]
    frame = pd.DataFrame(
        {
            "activity": activity_key(gpu)[sel],
            "kind": np.where(
                gpu["category"].astype(str).to_numpy()[sel] == "nccl", "nccl", gpu["kind"].astype(str).to_numpy()[sel]
            ),
            "sum_ns": dur,
        }
    )
    out = frame.groupby(["activity", "kind"], sort=False, observed=True).agg(sum_ns=("sum_ns", "sum"), count=("sum_ns", "size"))
    return out.reset_index()
