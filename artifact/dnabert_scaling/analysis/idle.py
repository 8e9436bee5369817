"""Why the GPU is idle: the idle time of each measured step split by its cause, and the launch rate.

The idle time of a step (``partition``: the part of the step's GPU window in which no activity
runs on any stream) is split into three parts that add up to it:

- **kernel wait**: idle while at least one activity has already been launched by the host but has
  not started on the GPU (the interval from its launch call to its start covers the instant).
  The host did its part; the GPU is waiting on launch latency or on a dependency between streams.
- **host wait**: idle while no launched activity is outstanding and the activity that ends the
  idle gap has a known launch time: the GPU waits for the host to ask for more work (a
  launch-bound step).
- **other**: the rest of the idle time: gaps that end at an activity whose launch time the trace
  does not give (time-window attribution: copies and memsets under Score-P, streams whose launch
  and kernel counts disagree), so host wait and kernel wait cannot be told apart there.

When no activity of the rank has a known launch time (a trace without launch records, or Score-P
whose launches carry no stream reference, e.g. Score-P 8.4's cuLaunchKernelEx), the split is
**unknown**: all three parts are NaN (null in metrics.json), never a host wait of 0 that would
read like a measurement.

Launch times come from the attribution (``Attribution.launch_ns``): the correlated runtime call
(Kineto), or the i-th launch into a stream paired with its i-th kernel (Score-P stream order).
Host and GPU times of one rank share that rank's trace clock in both formats.

The launch rate that explains a host wait: per measured step, the number of launch calls on the
host (kernel launches and copy/memset calls, every thread, counted in the step's host window as
``attribution`` tiles them), the mean duration of one call, and the step's host time divided by
the calls (``host_s_per_launch``: the host time the step spends per launched activity).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dnabert_scaling import intervals as iv
from dnabert_scaling.analysis.attribution import Attribution, HostTimeline

NS = 1e-9


def idle_gaps(gpu: pd.DataFrame, ws: np.ndarray, we: np.ndarray) -> iv.Intervals:
    """The idle intervals inside the step windows (windows minus the union of all activity)."""
    windows = iv.union(ws, we)
    busy = iv.union(gpu["start_ns"].to_numpy(np.int64), gpu["end_ns"].to_numpy(np.int64))
    return iv.subtract(windows, busy)


def idle_breakdown(gpu: pd.DataFrame, att: Attribution, windows) -> dict[str, np.ndarray]:
    """Per step window (valid or not, in window order): host wait, kernel wait, other, in ns;
    NaN for all three when no activity has a known launch time (the split is unknown)."""
    ws, we, valid = windows
    ws, we = np.asarray(ws, np.int64), np.asarray(we, np.int64)
    steps = len(ws)
    zero = np.zeros(steps, dtype=np.int64)
    if steps == 0 or not valid.any():
        return {"host": zero, "kernel": zero.copy(), "other": zero.copy()}
    launch = att.launch_ns if att.launch_ns is not None else np.full(len(gpu), -1, np.int64)
    known = launch >= 0
    if len(gpu) and not known.any():  # nothing links a launch to its activity: the split is unknown
        unknown = np.full(steps, np.nan)
        return {"host": unknown, "kernel": unknown.copy(), "other": unknown.copy()}
    wsv, wev = ws[valid], we[valid]
    gs, ge = idle_gaps(gpu, wsv, wev)
    start = gpu["start_ns"].to_numpy(np.int64)
    pending = known & (launch < start)
    outstanding = iv.union(launch[pending], start[pending])
    waiting = iv.length_in_windows(outstanding, gs, ge)  # kernel-wait part of each gap
    rest = (ge - gs) - waiting
    # the activity that ends each gap: the first one starting at the gap's end
    order = np.argsort(start, kind="stable")
    s_sorted = start[order]
    pos = np.searchsorted(s_sorted, ge, side="left")
    ends_at_known = np.zeros(len(gs), dtype=bool)
    has_next = pos < len(s_sorted)
    nxt = order[np.clip(pos, 0, len(order) - 1)]
    ends_at_known[has_next] = known[nxt[has_next]] & (s_sorted[pos[has_next]] == ge[has_next])
    # a gap that ends at a window end without a next activity there (the last step) is host wait
    # when every activity of the rank has a known launch, else undecided
    ends_at_nothing = ~has_next | (s_sorted[np.clip(pos, 0, len(s_sorted) - 1)] != ge)
    ends_at_known |= ends_at_nothing & bool(known.all())
    host = np.where(ends_at_known, rest, 0)
    other = np.where(ends_at_known, 0, rest)
    # gaps lie inside exactly one valid window: sum them per window
    k = np.searchsorted(wsv, gs, side="right") - 1
    out = {}
    for name, values in (("host", host), ("kernel", waiting), ("other", other)):
        per_valid = np.bincount(k, weights=values, minlength=len(wsv))[: len(wsv)].astype(np.int64)
        full = zero.copy()
        full[np.flatnonzero(valid)] = per_valid
        out[name] = full
    return out


def launch_rate(host: pd.DataFrame, tl: HostTimeline) -> dict[str, np.ndarray]:
    """Per measured step (host windows of ``attribution``): launch calls, their mean duration (ns),
    and the step's host time (ns)."""
    steps = tl.steps
    if steps == 0:
        z = np.zeros(0)
        return {"launches": z.astype(np.int64), "call_ns": z, "host_ns": z}
    launches = host[host["kind"] == "launch"]
    t = launches["start_ns"].to_numpy(np.int64)
    dur = launches["end_ns"].to_numpy(np.int64) - t
    k = tl.step_of(t)
    sel = k >= 0
    count = np.bincount(k[sel], minlength=steps)[:steps]
    total = np.bincount(k[sel], weights=dur[sel], minlength=steps)[:steps]
    with np.errstate(invalid="ignore", divide="ignore"):
        call = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    host_ns = np.append(tl.step_start[1:], tl.step_end[-1]) - tl.step_start
    return {"launches": count.astype(np.int64), "call_ns": call, "host_ns": host_ns.astype(np.float64)}


def step_columns(gpu: pd.DataFrame, host: pd.DataFrame, tl: HostTimeline, att: Attribution, windows) -> pd.DataFrame:
    """The columns of this module for the valid steps, in the order of ``partition.rank_step_table``."""
    ws, we, valid = windows
    idle = idle_breakdown(gpu, att, windows)
    rate = launch_rate(host, tl)
    steps = len(ws)

    def fit(a, fill):  # host and GPU step counts agree unless the trace is broken; pad otherwise
        a = np.asarray(a, dtype=np.float64)
        return np.concatenate([a[:steps], np.full(max(0, steps - len(a)), fill)])

    launches = fit(rate["launches"], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_launch = np.where(launches > 0, fit(rate["host_ns"], np.nan) / np.where(launches > 0, launches, 1), np.nan)
    table = pd.DataFrame(
        {
            "idle_host_wait_s": idle["host"] * NS,
            "idle_kernel_wait_s": idle["kernel"] * NS,
            "idle_other_s": idle["other"] * NS,
            "launches": launches,
            "launch_call_s": fit(rate["call_ns"], np.nan) * NS,
            "host_s_per_launch": per_launch * NS,
        }
    )
    return table[valid].reset_index(drop=True)
