"""Is the trace complete? Host launches against the GPU activities found for them, per measured step.

A tracer can lose GPU activity records without failing (Score-P 8.4 on CUDA 13 skipped 96% of the
CUPTI kernel records of a DNABERT-2 run and said so in one log line). A trace that lost kernels
still reads, and "no kernel of kind X" or "compute is 0.2 ms of a 70 ms step" is then an artefact
of the loss. Every figure the analysis derives rests on the GPU activities being there, so each
traced rank is measured here and the sanity check ``trace_complete`` gates every claim on it.

What is counted, per rank and measured step (the host step windows of ``attribution``):

* **launches**: the host calls that enqueue GPU work, on *every* CPU thread of the rank (Score-P's
  ``Master thread``, ``Orphan thread N``, pthread locations; Kineto's threads): kernel launches
  (``cuLaunchKernel*``, ``cudaLaunchKernel*``) and copy/memset calls. A call kind whose activity
  kind the trace never holds at all (memsets when the tracer does not record them) is left out of
  the count and named, never silently: kernels always count.
* **found**: the launches whose GPU activity is in the trace.

  - ``correlation`` (Kineto; Score-P in records mode): a launch is found when an activity of its class
    carries its correlation id (:mod:`correlation`, the pairing attribution uses too). Exact. Launches
    that carry no id, in a trace where others do, are counted apart (``launches_without_id``): where
    the launches with ids are all found, the rank is ``unknown``, not complete.
  - ``stream-order`` (Score-P with ``CUDA_STREAM_REF`` on every launch of a kind): per stream, the
    launches into it and the activities on it. When the counts agree each activity pairs with a
    launch (streams run in launch order) and every launch is found; when activities are missing,
    the activities are placed in steps by their GPU start (time window) and each step's found count
    is capped at its launches.
  - ``count`` (Score-P without stream references on every launch, as Score-P 8.4 writes them): the
    same, with all streams of a kind as one group.

  Activities that exceed the launches of their group (lost launch records, or a thread the tracer
  did not see) are reported as ``activities_without_launch``.

A rank is ``complete`` when every measured step has a GPU activity for at least ``bound`` of its
launches, ``incomplete`` otherwise, and ``unknown`` when the trace holds no launch records (Score-P
without ``driver`` in ``SCOREP_CUDA_ENABLE``, Kineto without runtime events): its completeness
cannot be shown. The bound is a sanity bound of ``expected/claims.toml`` (``[sanity.trace_complete]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnabert_scaling.analysis import correlation
from dnabert_scaling.analysis.attribution import HostTimeline
from dnabert_scaling.traces.classify import KIND_CLASS, call_copy_direction, launched_kind, memcpy_direction

DEFAULT_BOUND = 0.999
COMPLETE, INCOMPLETE, UNKNOWN = "complete", "incomplete", "unknown"


def _group_found(
    launch_t: np.ndarray, launch_step: np.ndarray, act_start: np.ndarray, timeline: HostTimeline, steps: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """(launches per step, found per step, activities beyond the launches) of one launch group."""
    launches = np.bincount(launch_step[launch_step >= 0], minlength=steps)[:steps]
    if act_start.size >= launch_t.size:
        found = launches.copy()  # every launch has its activity (stream order pairs them one to one)
        return launches, found, int(act_start.size - launch_t.size)
    act_step = timeline.step_before(act_start)
    placed = np.bincount(act_step[act_step >= 0], minlength=steps)[:steps]
    return launches, np.minimum(placed, launches), 0


def rank_completeness(
    gpu: pd.DataFrame, host: pd.DataFrame, timeline: HostTimeline, bound: float = DEFAULT_BOUND
) -> dict[str, Any]:
    """Completeness of one rank (see the module docstring); JSON-ready."""
    steps = timeline.steps
    counted = _counted_launches(gpu, host)
    out: dict[str, Any] = {
        "method": None,
        "launches": 0,
        "found": 0,
        "share": None,
        "steps": steps,
        "steps_below_bound": None,
        "min_step_share": None,
        "bound": bound,
        "activities_without_launch": 0,
        "kinds_not_recorded": counted.not_recorded,
        "streams": [],
        "launches_per_step": [],
        "found_per_step": [],
        "calls_by_kind": counted.calls_by_kind,
    }
    if steps == 0:
        return {**out, "status": UNKNOWN, "reason": "no measured step marked in the trace"}
    if len(counted.launches) == 0:
        reason = (
            "the trace holds no kernel-launch records (Score-P without 'driver' in SCOREP_CUDA_ENABLE, "
            "or a Kineto trace without runtime events): its completeness cannot be shown"
        )
        return {**out, "status": UNKNOWN, "reason": reason}
    launches = counted.launches
    if correlation.uses_correlation(gpu, launches):
        found = _found_by_correlation(gpu, launches, timeline)
    else:
        found = _found_by_stream_order(gpu, launches, counted.kinds, timeline)
    out.update(_per_step_verdict(found, bound))
    return out


def rank_status(steps_below_bound: int, launches_without_id: int) -> str:
    """A rank's status from its figures, the one rule of ``analyze`` and of the checker's re-judging (:func:`judge`):
    incomplete where a measured step lies below the bound; else unknown where launches carry no correlation id
    beside launches that do (nothing shows their activities); else complete."""
    if steps_below_bound:
        return INCOMPLETE
    return UNKNOWN if launches_without_id else COMPLETE


def without_id_reason(launches_without_id: int) -> str:
    return (
        f"{launches_without_id:,} launch(es) carry no correlation id while the others do: every launch with an id has "
        "its activity, but nothing shows the activities of those without"
    )


@dataclass
class _CountedLaunches:
    """The launch records that count, with their launched kind; the call kinds left out and why."""

    launches: pd.DataFrame
    kinds: np.ndarray
    not_recorded: list[str]
    calls_by_kind: dict[str, int]


def _counted_launches(gpu: pd.DataFrame, host: pd.DataFrame) -> _CountedLaunches:
    """The launches that count. A call kind (or a copy direction the call's name states) with calls
    but no activity at all in the trace is something the tracer does not record (Score-P 8.4:
    memsets, device-to-device copies): named, left out. Kernels always count."""
    launches = host[host["kind"] == "launch"]
    names = launches["name"].astype(str).to_numpy()
    kinds = np.array([launched_kind(n) for n in names], dtype=object)
    gkinds = gpu["kind"].astype(str).to_numpy()
    recorded = set(np.unique(gkinds).tolist())
    gnames = gpu["name"].astype(str).to_numpy()
    recorded_dirs = {memcpy_direction(n) for n in np.unique(gnames[gkinds == "memcpy"]).tolist()}
    call_dir = np.array([call_copy_direction(n) if k == "memcpy" else None for n, k in zip(names, kinds)], dtype=object)
    calls_by_kind = {k: int((kinds == k).sum()) for k in ("kernel", "memcpy", "memset")}
    not_recorded = sorted(k for k in ("memcpy", "memset") if calls_by_kind[k] and k not in recorded)
    lost_dirs = sorted({d for d in call_dir.tolist() if d is not None} - recorded_dirs) if "memcpy" in recorded else []
    for d in lost_dirs:
        calls_by_kind[f"memcpy {d}"] = int((call_dir == d).sum())
        not_recorded.append(f"memcpy {d}")
    counted = (kinds == "kernel") | np.isin(kinds, sorted(recorded - {"kernel"}))
    counted &= ~np.isin(call_dir, lost_dirs) if lost_dirs else True
    return _CountedLaunches(launches[counted], kinds[counted], not_recorded, calls_by_kind)


@dataclass
class _Found:
    """Launches and found activities per measured step, by one matching method."""

    method: str
    launches_per_step: np.ndarray
    found_per_step: np.ndarray
    activities_without_launch: int
    streams: list[dict[str, Any]] = field(default_factory=list)
    launches_without_id: int = 0  # correlation: launches left out of the counts, carrying no id


def _found_by_correlation(gpu: pd.DataFrame, launches: pd.DataFrame, timeline: HostTimeline) -> _Found:
    """A launch that carries an id is found when an activity of its class pairs with it (:func:`correlation.pair`:
    exact; a repeated id finds as many launches as activities carry it, in time order). The launches without an id
    are left out of the counts and counted apart; activities with an id that pairs with no launch are reported."""
    steps = timeline.steps
    p = correlation.pair(gpu, launches)
    lstep = timeline.step_of(launches["start_ns"].to_numpy(np.int64))
    sel = (lstep >= 0) & p.has_id
    per_step_l = np.bincount(lstep[sel], minlength=steps)[:steps]
    per_step_f = np.bincount(lstep[sel & p.found], minlength=steps)[:steps]
    extra = int(p.unpaired_with_id.sum())
    return _Found("correlation", per_step_l, per_step_f, extra, launches_without_id=p.launches_without_id)


def _found_by_stream_order(gpu: pd.DataFrame, launches: pd.DataFrame, kinds: np.ndarray, timeline: HostTimeline) -> _Found:
    """Score-P: per stream (``stream-order``) or, without a stream reference on every launch of a
    class, per class (``count``), the launches against the activities."""
    steps = timeline.steps
    lt = launches["start_ns"].to_numpy(np.int64)
    lstep = timeline.step_of(lt)
    gkind = gpu["kind"].astype(str).to_numpy()
    gstart = gpu["start_ns"].to_numpy(np.int64)
    gstream = gpu["stream"].to_numpy(np.int64)
    lstream = launches["stream"].to_numpy(dtype=np.int64, na_value=-1)
    per_step_l = np.zeros(steps, np.int64)
    per_step_f = np.zeros(steps, np.int64)
    extra = 0
    streams: list[dict[str, Any]] = []
    methods = set()
    for cls in ("kernel", "copy"):
        in_cls = np.array([KIND_CLASS[k] == cls for k in kinds], dtype=bool)
        if not in_cls.any():
            continue
        acts = np.array([KIND_CLASS.get(k) == cls for k in gkind], dtype=bool)
        by_stream = bool((lstream[in_cls] >= 0).all())
        groups = sorted(set(lstream[in_cls].tolist()) | set(gstream[acts].tolist())) if by_stream else [None]
        methods.add("stream-order" if by_stream else "count")
        for s in groups:
            lm = in_cls if s is None else in_cls & (lstream == s)
            am = acts if s is None else acts & (gstream == s)
            order = np.argsort(lt[lm], kind="stable")
            gl, gf, gx = _group_found(lt[lm][order], lstep[lm][order], np.sort(gstart[am]), timeline, steps)
            per_step_l += gl
            per_step_f += gf
            extra += gx
            if s is not None:
                streams.append({"stream": int(s), "kind": cls, "launches": int(lm.sum()), "activities": int(am.sum())})
    method = "stream-order" if methods == {"stream-order"} else "count"
    return _Found(method, per_step_l, per_step_f, extra, streams)


def _per_step_verdict(found: _Found, bound: float) -> dict[str, Any]:
    """The rank's figures and status from its per-step counts: complete when every measured step
    found at least ``bound`` of its launches."""
    per_step_l, per_step_f = found.launches_per_step, found.found_per_step
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(per_step_l > 0, per_step_f / np.maximum(per_step_l, 1), np.nan)
    measured = np.isfinite(shares)
    below = int((shares[measured] < bound).sum())
    total_l, total_f = int(per_step_l.sum()), int(per_step_f.sum())
    if not measured.any():
        status, reason = UNKNOWN, "no launch record falls inside a measured step"
    else:
        status = rank_status(below, found.launches_without_id)
        reason = without_id_reason(found.launches_without_id) if status == UNKNOWN else None
    return {
        "method": found.method,
        "launches": total_l,
        "found": total_f,
        "share": (total_f / total_l) if total_l else None,
        "steps_below_bound": below,
        "min_step_share": float(np.nanmin(shares)) if measured.any() else None,
        "activities_without_launch": found.activities_without_launch,
        "launches_without_id": found.launches_without_id,
        "streams": found.streams,
        "launches_per_step": per_step_l.astype(int).tolist(),
        "found_per_step": per_step_f.astype(int).tolist(),
        "status": status,
        "reason": reason,
    }


def judge(per_rank: dict[int, dict[str, Any]], bound: float = DEFAULT_BOUND) -> dict[str, Any]:
    """The trace's verdict from its ranks' figures, re-judged at ``bound`` (the claims file's bound
    may differ from the one the analysis used): ``{"status", "bound", "reason", "ranks": [...]}``."""
    statuses, texts = [], []
    for r, c in sorted(per_rank.items()):
        if c.get("status") == UNKNOWN or not c.get("launches_per_step"):
            statuses.append(UNKNOWN)
            texts.append(f"rank {r}: unknown ({c.get('reason') or 'no launch records'})")
            continue
        lps = np.asarray(c["launches_per_step"], dtype=np.float64)
        fps = np.asarray(c["found_per_step"], dtype=np.float64)
        ok = lps > 0
        below = int((fps[ok] / lps[ok] < bound).sum())
        without_id = c.get("launches_without_id") or 0
        statuses.append(rank_status(below, without_id))
        texts.append(describe_rank(r, c, below, bound))
        if statuses[-1] == UNKNOWN:
            texts[-1] += f" ({without_id_reason(without_id)})"
    if not statuses:
        status = UNKNOWN
    elif INCOMPLETE in statuses:
        status = INCOMPLETE
    elif UNKNOWN in statuses:
        status = UNKNOWN
    else:
        status = COMPLETE
    return {"status": status, "bound": bound, "reason": "; ".join(texts), "ranks": sorted(per_rank)}


def describe_rank(rank: int, c: dict[str, Any], below: int | None = None, bound: float | None = None) -> str:
    """One line of figures: ``rank 0: 1,317 GPU activities for 39,734 launches (3.3%), 30 of 30 ...``."""
    below = c.get("steps_below_bound") if below is None else below
    bound = c.get("bound", DEFAULT_BOUND) if bound is None else bound
    share = c.get("share")
    text = (
        f"rank {rank}: GPU activities for {c.get('found', 0):,} of {c.get('launches', 0):,} launches in the "
        f"measured steps ({'-' if share is None else f'{100 * share:.2f}%'}, {c.get('method')}), "
        f"{below} of {c.get('steps', 0)} measured steps below {100 * bound:g}%"
    )
    if c.get("min_step_share") is not None and below:
        text += f" (lowest step {100 * c['min_step_share']:.1f}%)"
    if c.get("activities_without_launch"):
        text += f"; {c['activities_without_launch']:,} GPU activities without a launch record"
    if c.get("kinds_not_recorded"):
        calls = c.get("calls_by_kind") or {}
        text += (
            "; "
            + ", ".join(f"{calls.get(k, 0):,} {k} calls" for k in c["kinds_not_recorded"])
            + (" left out: the trace holds no activity of that kind (the tracer did not record it)")
        )
    return text


def trace_completeness(trace, bound: float = DEFAULT_BOUND) -> dict[str, Any]:
    """Completeness of every rank of a ``Trace``: ``judge``'s result (status, bound, reason, ranks), the
    totals over the ranks (``launches``, ``activities`` found for them, ``ratio``, ``steps_below_bound``)
    and the ``per_rank`` figures."""
    per_rank = {}
    for r in trace.rank_ids:
        sub = trace.rank(r)
        gpu, host = sub.gpu.reset_index(drop=True), sub.host.reset_index(drop=True)
        per_rank[r] = rank_completeness(gpu, host, HostTimeline.from_host(host), bound)
    out = judge(per_rank, bound)
    launches = sum(c["launches"] for c in per_rank.values())
    found = sum(c["found"] for c in per_rank.values())
    out.update(
        {
            "launches": launches,
            "activities": found,
            "ratio": (found / launches) if launches else None,
            "steps_below_bound": sum(c["steps_below_bound"] or 0 for c in per_rank.values()),
            "per_rank": {str(r): c for r, c in per_rank.items()},
        }
    )
    return out
