"""Which measured step and which phase each GPU activity of one rank belongs to.

A GPU activity belongs to the phase (``forward``, ``backward``, ``optimizer``, else ``other``) and
the measured step during which the host *launched* it: the GPU runs behind the host, so the
time an activity runs says little about the host code that asked for it. Three methods, best
first:

- ``correlation`` (Kineto; Score-P in records mode): each kernel/copy carries the correlation id of
  the runtime or driver call that launched it; the call's host time places it (the launch of the
  activity's class with that id, :mod:`correlation`, as completeness pairs them). Exact. Used where
  launches carry ids; ids on the activities alone pair nothing, and stream order is tried.
- ``stream-order`` (Score-P): no correlation ids are written, but with ``references`` each
  kernel-launch call carries its target stream (``CUDA_STREAM_REF``). A stream executes kernels
  in the order they were launched into it, so the i-th launch into stream s is the i-th kernel on
  s. Used per stream when the launch and kernel counts agree; copies and memsets (only kernel
  launches are paired: most copy calls carry no reference) and streams whose counts disagree fall back to
- ``time-window``: the phase that was running on the host most recently before the activity
  started on the GPU. A lower bound on the lag, so it misplaces work that queues up.

Host step windows tile the measured part of the run: step k owns host time from its own start to
the next step's start (the last step: to its end), so host work between the marked ranges (the
next batch's copy, for instance) belongs to a step too. Launches before the first measured step
(warm-up) or after the last one are not attributed (step -1). A step range of zero length (its
start is its end) cannot hold a step's work, and which of its ends is the step's is not known: it
owns no host time, so the step is not measured, and the timeline names it in ``problems``.

That rule holds for work whose launch the trace did not record, too: torch.profiler starts
recording at the first measured step, and the GPU work the last warm-up step launched is still
running then (hundreds of activities per rank, NCCL kernels among them). An activity without a
launch record was launched before recording began when its correlation id is older than every
launch the trace holds (CUPTI numbers the calls in order), or, carrying no id, when it ran on its
stream before the first activity of a measured step there (a stream runs its work in launch order;
a launch inside the measured steps is recorded). Such activities belong to no measured step (method
``before-recording``), rather than to measured step 0, where the time window would put them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dnabert_scaling.analysis import correlation
from dnabert_scaling.phases import STEP_PHASES as PHASES
from dnabert_scaling.traces.classify import is_launch_api

PHASE_CODES = {name: i for i, name in enumerate(PHASES)}
OTHER = len(PHASES)  # code of "other"
PHASE_LABELS = (*PHASES, "other")


@dataclass
class HostTimeline:
    """The measured steps and their phases on one rank's host, as sorted arrays."""

    step_start: np.ndarray
    step_end: np.ndarray
    phase_start: np.ndarray
    phase_end: np.ndarray
    phase_code: np.ndarray
    problems: list[str] = field(default_factory=list)  # what is wrong with the step ranges

    @property
    def steps(self) -> int:
        return len(self.step_start)

    @property
    def owns_time(self) -> np.ndarray:
        """Per measured step: whether its range has a length (one of zero owns no host time)."""
        return self.step_end > self.step_start

    @classmethod
    def from_host(cls, host: pd.DataFrame) -> "HostTimeline":
        phases = host[host["kind"] == "phase"]
        names = phases["name"].astype(str).to_numpy()
        steps = phases[names == "step"].sort_values("start_ns")
        inner = phases[np.isin(names, PHASES)].sort_values("start_ns")
        tl = cls(
            step_start=steps["start_ns"].to_numpy(np.int64),
            step_end=steps["end_ns"].to_numpy(np.int64),
            phase_start=inner["start_ns"].to_numpy(np.int64),
            phase_end=inner["end_ns"].to_numpy(np.int64),
            phase_code=np.array([PHASE_CODES[n] for n in inner["name"].astype(str)], dtype=np.int8),
        )
        empty = np.flatnonzero(~tl.owns_time)
        if len(empty):
            tl.problems.append(
                f"{len(empty)} of the {tl.steps} ds:step ranges have zero length (steps {listed(empty)}): "
                "such a range cannot hold a step's work and owns no host time, so the step is not measured "
                "(work the step launched before its range counts in the step before)"
            )
        return tl

    def step_of(self, t: np.ndarray, tail: int = 0) -> np.ndarray:
        """Index of the measured step whose host window holds each time (-1 outside); the last
        window is extended by ``tail`` ns."""
        t = np.asarray(t, dtype=np.int64)
        if self.steps == 0:
            return np.full(t.shape, -1, dtype=np.int64)
        k = np.searchsorted(self.step_start, t, side="right") - 1
        limit = np.append(self.step_start[1:], self.step_end[-1] + tail)
        kc = np.clip(k, 0, None)
        inside = (k >= 0) & (t < limit[kc]) & self.owns_time[kc]
        return np.where(inside, k, -1)

    def phase_containing(self, t: np.ndarray) -> np.ndarray:
        """Phase code of the phase range holding each time, ``OTHER`` where none does."""
        t = np.asarray(t, dtype=np.int64)
        if len(self.phase_start) == 0:
            return np.full(t.shape, OTHER, dtype=np.int8)
        i = np.searchsorted(self.phase_start, t, side="right") - 1
        ok = (i >= 0) & (t < self.phase_end[np.clip(i, 0, None)])
        return np.where(ok, self.phase_code[np.clip(i, 0, None)], OTHER).astype(np.int8)

    def phase_before(self, t: np.ndarray) -> np.ndarray:
        """Phase code of the latest phase range that started at or before each time."""
        t = np.asarray(t, dtype=np.int64)
        if len(self.phase_start) == 0:
            return np.full(t.shape, OTHER, dtype=np.int8)
        i = np.searchsorted(self.phase_start, t, side="right") - 1
        return np.where(i >= 0, self.phase_code[np.clip(i, 0, None)], OTHER).astype(np.int8)

    def step_before(self, t: np.ndarray) -> np.ndarray:
        """Measured step whose host window holds each GPU time; the GPU runs behind the host, so
        the last window is extended by one median step length."""
        lengths = (self.step_end - self.step_start)[self.owns_time]
        tail = int(np.median(lengths)) if len(lengths) else 0
        return self.step_of(t, tail=tail)


def listed(steps: np.ndarray, most: int = 10) -> str:
    """Step indices for a message: the first ``most`` of them, and how many more."""
    shown = ", ".join(str(int(k)) for k in steps[:most])
    return shown + (f" and {len(steps) - most} more" if len(steps) > most else "")


@dataclass
class Attribution:
    """Per GPU activity (rows of the rank's gpu table, same order): step index and phase code."""

    step: np.ndarray
    phase: np.ndarray
    method: np.ndarray  # per activity: "correlation" | "before-recording" | "stream-order" | "time-window"
    notes: list[str] = field(default_factory=list)
    # per activity: host time (ns) of the call that launched it, -1 where no method knows it
    # (time-window placement has no launch); used by ``idle`` to tell host wait from kernel wait
    launch_ns: np.ndarray | None = None

    def method_summary(self) -> dict[str, int]:
        values, counts = np.unique(self.method.astype(str), return_counts=True)
        return {str(v): int(c) for v, c in zip(values, counts)}

    @property
    def main_method(self) -> str:
        summary = self.method_summary()
        return max(summary, key=summary.get) if summary else "none"


def _by_launch_time(timeline: HostTimeline, launch_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return timeline.step_of(launch_t), timeline.phase_containing(launch_t)


def by_time_window(gpu: pd.DataFrame, timeline: HostTimeline) -> tuple[np.ndarray, np.ndarray]:
    start = gpu["start_ns"].to_numpy(np.int64)
    return timeline.step_before(start), timeline.phase_before(start)


def launched_before_recording(gpu: pd.DataFrame, host: pd.DataFrame, found: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Mask of the GPU activities without a launch record (``~found``) that were launched before
    recording began: a correlation id older than every launch record of the trace, or a start on
    their stream before the first activity placed in a measured step there (stream order)."""
    unmatched = ~found
    before = np.zeros(len(gpu), dtype=bool)
    launches = host[(host["kind"] == "launch") & host["correlation"].notna()]
    if len(launches):
        first = int(launches["correlation"].to_numpy(np.int64).min())
        corr = gpu["correlation"]
        before |= corr.notna().to_numpy() & (corr.to_numpy(dtype=np.int64, na_value=first) < first)
    start = gpu["start_ns"].to_numpy(np.int64)
    stream = gpu["stream"].to_numpy(np.int64)
    measured = found & (step >= 0)
    # by stream order only where the activity carries no id: an id no older than the first launch's was
    # numbered while recording ran, so its launch is lost, not earlier than recording
    no_id = gpu["correlation"].isna().to_numpy()
    for s in np.unique(stream[unmatched & ~before & no_id]):
        placed = measured & (stream == s)
        if placed.any():
            before |= unmatched & no_id & (stream == s) & (start < start[placed].min())
    return unmatched & before


def by_correlation(gpu: pd.DataFrame, host: pd.DataFrame, timeline: HostTimeline, notes: list[str] | None = None):
    """Steps/phases from the launching call's host time (:func:`correlation.pair`: the launch of the activity's
    class that carries its id); mask of activities it could place. What the pairing found odd in the ids
    (repeated ids, ids of the other class, launches without one) is added to ``notes``."""
    launches = host[host["kind"] == "launch"]
    step = np.full(len(gpu), -1, dtype=np.int64)
    phase = np.full(len(gpu), OTHER, dtype=np.int8)
    launch = np.full(len(gpu), -1, dtype=np.int64)
    p = correlation.pair(gpu, launches)  # without ids on both sides it pairs nothing
    if notes is not None:
        notes.extend(correlation.pairing_notes(p))
    found = p.launch_of >= 0
    t = launches["start_ns"].to_numpy(np.int64)[p.launch_of[found]]
    s, ph = _by_launch_time(timeline, t)
    step[found], phase[found], launch[found] = s, ph, t
    return step, phase, found, launch


def by_stream_order(gpu: pd.DataFrame, host: pd.DataFrame, timeline: HostTimeline, notes: list[str]):
    """Pair the i-th kernel launch into each stream with the i-th kernel on that stream."""
    step = np.full(len(gpu), -1, dtype=np.int64)
    phase = np.full(len(gpu), OTHER, dtype=np.int8)
    found = np.zeros(len(gpu), dtype=bool)
    launch = np.full(len(gpu), -1, dtype=np.int64)
    launches = host[(host["kind"] == "launch") & host["stream"].notna()]
    if len(launches):
        launches = launches[[is_launch_api(n) for n in launches["name"].astype(str)]]
    if len(launches) == 0:
        return step, phase, found, launch
    kernel_rows = np.flatnonzero((gpu["kind"] == "kernel").to_numpy())
    gstream = gpu["stream"].to_numpy(np.int64)
    lstream = launches["stream"].to_numpy(dtype=np.int64, na_value=-1)
    ltime = launches["start_ns"].to_numpy(np.int64)
    for s in np.unique(gstream[kernel_rows]):
        rows = kernel_rows[gstream[kernel_rows] == s]
        rows = rows[np.argsort(gpu["start_ns"].to_numpy(np.int64)[rows], kind="stable")]
        lt = np.sort(ltime[lstream == s], kind="stable")
        if len(lt) != len(rows):
            notes.append(
                f"stream {s}: {len(lt)} kernel launches but {len(rows)} kernels; time-window attribution used for this stream"
            )
            continue
        st, ph = _by_launch_time(timeline, lt)
        step[rows], phase[rows], found[rows], launch[rows] = st, ph, True, lt
    return step, phase, found, launch


def correlated(gpu: pd.DataFrame, host: pd.DataFrame) -> bool:
    """Whether the rank's launches and activities are paired by correlation id (the rule completeness uses):
    some launch and some activity carry one. Ids on the activities alone pair nothing: stream order is tried."""
    return correlation.uses_correlation(gpu, host[host["kind"] == "launch"])


def attribute(
    gpu: pd.DataFrame, host: pd.DataFrame, timeline: HostTimeline | None = None, prefer: str | None = None
) -> Attribution:
    """Attribute one rank's GPU activities to measured steps and phases (best method available).

    ``prefer="stream-order"`` skips the correlation ids (used to validate the Score-P method on
    Kineto traces, where the exact answer is known).
    """
    timeline = timeline or HostTimeline.from_host(host)
    notes: list[str] = []
    method = np.full(len(gpu), "time-window", dtype=object)
    step, phase = by_time_window(gpu, timeline)
    if prefer is None and correlated(gpu, host):
        cs, cp, found, launch = by_correlation(gpu, host, timeline, notes)
        step, phase = np.where(found, cs, step), np.where(found, cp, phase)
        method[found] = "correlation"
        before = launched_before_recording(gpu, host, found, cs)
        step, phase = np.where(before, -1, step), np.where(before, OTHER, phase)
        method[before] = "before-recording"
        if before.any():
            notes.append(
                f"{int(before.sum())} GPU activities launched before recording began (the last warm-up step): in no measured step"
            )
        missing = int((~found & ~before).sum())
        if missing:
            notes.append(f"{missing} GPU activities without a matching launch record: time-window attribution")
        return Attribution(step, phase.astype(np.int8), method, notes, launch)
    launch = np.full(len(gpu), -1, dtype=np.int64)
    if prefer in (None, "stream-order"):
        ss, sp, found, launch = by_stream_order(gpu, host, timeline, notes)
        step, phase = np.where(found, ss, step), np.where(found, sp, phase)
        method[found] = "stream-order"
    return Attribution(step, phase.astype(np.int8), method, notes, launch)


def agreement(truth: Attribution, other: Attribution, weights: np.ndarray | None = None) -> dict[str, float | None]:
    """Share of activities (and of their GPU time, with ``weights``) that ``other`` places in the
    same (step, phase) as ``truth``; only activities ``truth`` placed in a measured step count."""
    sel = truth.step >= 0
    if not sel.any():
        return {"activities": None, "time": None, "n": 0}
    same = (truth.step == other.step) & (truth.phase == other.phase)
    out: dict[str, float | None] = {"activities": float(same[sel].mean()), "n": int(sel.sum())}
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)[sel]
        out["time"] = float((w * same[sel]).sum() / w.sum()) if w.sum() > 0 else None
    return out


def validate(
    truth: Attribution, gpu: pd.DataFrame, host: pd.DataFrame, timeline: HostTimeline, prefer: str, weights: np.ndarray
) -> dict:
    """How well the Score-P method ``prefer`` ("stream-order" or "time-window") reproduces the exact
    attribution ``truth`` (by correlation) of a Kineto trace: :func:`agreement` over the activities
    ``truth`` placed in a measured step, and ``placed``, the share of their GPU time (``weights``) the
    method placed by itself rather than by its time-window fallback.

    The activities ``truth`` shows were launched before recording began are left out first: a Score-P
    trace records every launch from the start of the process, so on its streams launches and kernels
    pair up; kept in, the launches a Kineto trace lacks would make every stream's counts disagree and
    "stream order" would be the time window under another name."""
    keep = truth.method != "before-recording"
    other = attribute(gpu[keep].reset_index(drop=True), host, timeline, prefer=prefer)
    kept = Attribution(truth.step[keep], truth.phase[keep], truth.method[keep])
    w = np.asarray(weights, dtype=np.float64)[keep]
    out = agreement(kept, other, w)
    sel = kept.step >= 0
    total = w[sel].sum()
    out["placed"] = float((w[sel] * (other.method[sel] == prefer)).sum() / total) if total > 0 else None
    return out
