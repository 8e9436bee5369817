"""GPU metrics of one traced run (all its ranks): the figures of ``metrics.json``'s ``traced.gpu``
and the tables that back them.

Per rank: its measured steps (``partition``: GPU-time partition, NCCL sum and union, overlap,
AllReduce, per-phase GPU time, idle causes), its completeness, the ranking of its GPU activities,
its streams and kernel classes, and, for Kineto traces, how well the Score-P attribution method
(stream order) and the time-window fallback agree with the exact one. Over all ranks: medians and
spreads over all (rank, measured step) samples (:class:`GpuMetrics`), the rank skew, and the
timeline of one representative step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnabert_scaling.analysis import completeness, idle, kernel_classes, partition, skew
from dnabert_scaling.analysis.attribution import PHASE_LABELS, HostTimeline, attribute, listed, validate
from dnabert_scaling.analysis.stats import mean_of_known, stat
from dnabert_scaling.phases import STEP_PHASES
from dnabert_scaling.metrics_schema import Completeness, GpuMetrics, KernelClassShare, PhaseAgreement, RankedActivity, RankFigures

RANKING_ROWS = 25  # activities kept in metrics.json (the table keeps all)
# metrics.json's STAT name -> the step_partition column it summarises
STEP_STATS = {
    "step_time_s": "step_time_s",
    "compute_s": "compute_s",
    "exposed_comm_s": "exposed_comm_s",
    "exposed_memcpy_s": "exposed_memcpy_s",
    "idle_s": "idle_s",
    "nccl_kernels_per_step": "nccl_kernels",
    "nccl_kernel_sum_s": "nccl_kernel_sum_s",
    "nccl_union_s": "nccl_union_s",
    "overlap_ratio": "overlap_ratio",
    "exposed_comm_share": "exposed_comm_share",
    "allreduce_kernel_s": "allreduce_kernel_s",
    "allreduce_kernels_per_step": "allreduce_kernels",
    "allreduce_share": "allreduce_share",
    "forward_gpu_s": "forward_gpu_s",
    "backward_gpu_s": "backward_gpu_s",
    "optimizer_gpu_s": "optimizer_gpu_s",
    "allreduce_to_backward": "allreduce_to_backward",
    "kernels_per_step": "kernels",
    "idle_host_wait_s": "idle_host_wait_s",
    "idle_kernel_wait_s": "idle_kernel_wait_s",
    "idle_other_s": "idle_other_s",
    "launches_per_step": "launches",
    "launch_call_s": "launch_call_s",
    "host_s_per_launch": "host_s_per_launch",
}


@dataclass
class TracedResult:
    metrics: GpuMetrics
    steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    streams: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline_phases: pd.DataFrame = field(default_factory=pd.DataFrame)
    completeness: Completeness | None = None
    completeness_steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline_host: pd.DataFrame = field(default_factory=pd.DataFrame)
    kernel_classes: pd.DataFrame = field(default_factory=pd.DataFrame)
    problems: list[str] = field(default_factory=list)  # sanity problems the trace shows
    steps_complete: bool = True  # every rank's trace marks the expected measured steps


@dataclass
class _Ranks:
    """What the pass over the ranks collects, rank by rank."""

    steps: list[pd.DataFrame] = field(default_factory=list)
    ranking: list[pd.DataFrame] = field(default_factory=list)
    streams: list[pd.DataFrame] = field(default_factory=list)
    classes: list[pd.DataFrame] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    methods: dict[str, int] = field(default_factory=dict)
    validation: dict[str, list] = field(default_factory=lambda: {"stream-order": [], "time-window": []})
    allreduce_streams: set[int] = field(default_factory=set)
    compute_streams: set[int] = field(default_factory=set)
    shared_stream: bool = False  # stream ids are per rank: AllReduce and compute share one on some rank
    completeness: dict[int, dict] = field(default_factory=dict)
    steps_complete: bool = True
    step_counts: dict[int, int] = field(default_factory=dict)  # rank -> measured steps its trace marks
    state: dict[int, tuple] = field(default_factory=dict)  # rank -> (gpu, host, timeline, attribution, windows)


def analyze_trace(
    trace, world_size: int, expected_steps: int | None, run_name: str, bound: float = completeness.DEFAULT_BOUND
) -> TracedResult:
    """GPU metrics of one traced run (all its ranks), and its completeness judged at ``bound``."""
    acc = _Ranks()
    for r in trace.rank_ids:
        _add_rank(acc, trace, r, expected_steps, bound)
    if len(set(acc.step_counts.values())) > 1:  # ranks of one DDP run step together: these are not one run's
        acc.steps_complete = False
        counts = ", ".join(f"rank {r}: {n}" for r, n in sorted(acc.step_counts.items()))
        acc.problems.append(f"the ranks' traces mark different numbers of measured steps ({counts}): not the ranks of one run")
    steps = pd.concat(acc.steps, ignore_index=True)
    steps.insert(0, "run", run_name)
    steps.insert(0, "world_size", world_size)
    n_samples = max(1, len(steps))
    ranking = _ranking(acc.ranking, n_samples, world_size)
    streams = pd.concat(acc.streams, ignore_index=True)
    streams.insert(0, "world_size", world_size)
    classes = kernel_classes.class_table(acc.classes, n_samples)
    classes.insert(0, "world_size", world_size)
    acc.notes += _table_notes(steps)
    gpu = _gpu_metrics(acc, steps, ranking, classes)
    gpu.rank_skew = skew.rank_skew(acc.state, common_clock=trace.format == "kineto")
    res = TracedResult(gpu, steps, ranking, streams, problems=acc.problems, steps_complete=acc.steps_complete)
    res.kernel_classes = classes.drop(columns=["top"]).rename(columns={"class": "kernel_class"})
    _add_timeline(res, acc, trace.rank_ids[0], world_size)
    res.completeness = Completeness.from_json(
        {
            **completeness.judge(acc.completeness, bound),
            "per_rank": {str(r): c for r, c in acc.completeness.items()},
        }
    )
    res.completeness_steps = _completeness_table(acc.completeness, world_size, run_name)
    return res


def _add_rank(acc: _Ranks, trace, r: int, expected_steps: int | None, bound: float) -> None:
    """One rank's step table, ranking, streams, kernel classes, completeness and attribution."""
    sub = trace.rank(r)
    gpu, host = sub.gpu.reset_index(drop=True), sub.host.reset_index(drop=True)
    tl = HostTimeline.from_host(host)
    acc.step_counts[r] = tl.steps
    if tl.steps == 0:
        acc.steps_complete = False
        acc.problems.append(f"rank {r}: the trace marks no measured step (no ds:step range): nothing to analyse")
    elif expected_steps and tl.steps != expected_steps:
        acc.steps_complete = False
        acc.problems.append(f"rank {r}: the trace marks {tl.steps} measured steps, expected {expected_steps}")
    if tl.problems:
        acc.steps_complete = False
        acc.problems += [f"rank {r}: {p}" for p in tl.problems]
    acc.completeness[r] = completeness.rank_completeness(gpu, host, tl, bound)
    att = attribute(gpu, host, tl)
    acc.notes += [f"rank {r}: {n}" for n in att.notes]
    acc.notes += [f"rank {r}: the trace reader warned: {w}" for w in trace.ranks[r].get("warnings") or []]
    for k, v in att.method_summary().items():
        acc.methods[k] = acc.methods.get(k, 0) + v
    if att.main_method == "correlation":
        dur = gpu["end_ns"].to_numpy(np.int64) - gpu["start_ns"].to_numpy(np.int64)
        for prefer in acc.validation:
            acc.validation[prefer].append(validate(att, gpu, host, tl, prefer, dur))
    windows = partition.step_windows(gpu, att, tl.steps)
    lost = np.flatnonzero(~windows[2])  # the step table keeps only steps with GPU work: say which it leaves out
    if len(lost):
        acc.steps_complete = False
        acc.problems.append(
            f"rank {r}: {len(lost)} of the {tl.steps} measured steps the trace marks hold no GPU activity "
            f"(steps {listed(lost)}): left out of the per-step figures"
        )
    table = partition.rank_step_table(gpu, att, windows)
    table = pd.concat([table, idle.step_columns(gpu, host, tl, att, windows)], axis=1)
    table.insert(0, "rank", r)
    acc.steps.append(table)
    acc.classes.append(kernel_classes.rank_class_sums(gpu, att))
    rk = partition.ranking(gpu, att)
    rk["rank"] = r
    acc.ranking.append(rk)
    in_steps = att.step >= 0  # roles and the AllReduce's stream from the measured steps' activities
    sb = partition.stream_busy(gpu, windows, in_steps)
    sb.insert(0, "rank", r)
    acc.streams.append(sb)
    cat = gpu["category"].astype(str).to_numpy()
    stream = gpu["stream"].to_numpy()
    ar = set(stream[in_steps & (cat == "nccl") & (gpu["collective"].astype(object).to_numpy() == "AllReduce")].tolist())
    cs = set(stream[in_steps & (cat == "compute")].tolist())
    acc.allreduce_streams |= ar
    acc.compute_streams |= cs
    acc.shared_stream = acc.shared_stream or bool(ar & cs)
    acc.state[r] = (gpu, host, tl, att, windows)


def _ranking(rank_tables: list[pd.DataFrame], n_samples: int, world_size: int) -> pd.DataFrame:
    """GPU activities by summed kernel time over all ranks, per measured step."""
    ranks_all = pd.concat(rank_tables, ignore_index=True)
    rk = (
        ranks_all.groupby(["activity", "kind"], observed=True).agg(sum_ns=("sum_ns", "sum"), count=("count", "sum")).reset_index()
    )
    total = rk["sum_ns"].sum() or 1
    rk["sum_s_per_step"] = rk["sum_ns"] * 1e-9 / n_samples
    rk["count_per_step"] = rk["count"] / n_samples
    rk["share"] = rk["sum_ns"] / total
    rk = rk.sort_values("sum_ns", ascending=False).reset_index(drop=True)
    rk.insert(0, "world_size", world_size)
    return rk


def _table_notes(steps: pd.DataFrame) -> list[str]:
    """What the reader of the figures should know: idle time of unknown cause, NCCL time that
    is not counted as AllReduce."""
    notes = []
    if len(steps) and steps["idle_host_wait_s"].isna().all():
        notes.append(
            "the idle time's split into host wait, kernel wait and other is unknown: the trace does not "
            "link any launch to its GPU activity (no correlation ids, no stream reference on the launches)"
        )
    other_idle = float(steps["idle_other_s"].sum())
    if other_idle > 0:
        notes.append(
            f"{100 * other_idle / max(float(steps['idle_s'].sum()), 1e-30):.1f}% of the idle time of all "
            "measured steps of all ranks together is 'other' (the tables' per-step median can be 0 where "
            "most steps have none): the gap ends at an activity whose launch time the trace does not give "
            "(time-window attribution), so host wait and kernel wait cannot be told apart there"
        )
    unknown_s = float(steps["unknown_collective_nccl_s"].sum())
    nccl_s = float(steps["nccl_kernel_sum_s"].sum())
    if unknown_s > 0:
        notes.append(
            f"{100 * unknown_s / max(nccl_s, 1e-30):.1f}% of NCCL kernel time has no collective in the "
            "trace (ncclDevKernel_Generic without Kineto's 'Collective name'); it is not counted as AllReduce"
        )
    return notes


def _gpu_metrics(acc: _Ranks, steps: pd.DataFrame, ranking: pd.DataFrame, classes: pd.DataFrame) -> GpuMetrics:
    stats = {name: (stat(steps[col]) if col in steps else None) for name, col in STEP_STATS.items()}
    class_rows = classes[["class", "sum_s_per_step", "count_per_step", "share", "top"]].itertuples(index=False)
    ranked = ranking[["activity", "kind", "sum_s_per_step", "count_per_step", "share"]].head(RANKING_ROWS)
    validation = {
        k: PhaseAgreement(
            activities=mean_of_known([v["activities"] for v in vals]),
            time=mean_of_known([v.get("time") for v in vals]),
            placed=mean_of_known([v.get("placed") for v in vals]),
        )
        for k, vals in acc.validation.items()
        if vals
    }
    return GpuMetrics(
        **stats,
        allreduce_streams=sorted(int(x) for x in acc.allreduce_streams),
        compute_streams=sorted(int(x) for x in acc.compute_streams),
        # "own stream" holds when on every rank AllReduce and compute never share a stream
        allreduce_own_stream=(not acc.shared_stream) if acc.allreduce_streams else None,
        kernel_classes=[
            KernelClassShare(kernel_class=c, sum_s_per_step=float(x), count_per_step=float(n), share=float(sh), example=str(t))
            for c, x, n, sh, t in class_rows
        ],
        ranking=[
            RankedActivity(activity=a, kind=k, sum_s_per_step=float(x), count_per_step=float(c), share=float(sh))
            for a, k, x, c, sh in ranked.itertuples(index=False)
        ],
        phase_method=max(acc.methods, key=acc.methods.__getitem__) if acc.methods else None,
        phase_methods=acc.methods,
        phase_validation=validation or None,
        notes=acc.notes,
        per_rank=_per_rank(steps),
    )


def _per_rank(steps: pd.DataFrame) -> list[RankFigures]:
    """Medians per rank of the figures whose imbalance matters (step, exposed comm, idle)."""
    return [
        RankFigures(
            rank=int(r),
            step_time_s=float(g["step_time_s"].median()),
            exposed_comm_s=float(g["exposed_comm_s"].median()),
            idle_s=float(g["idle_s"].median()),
        )
        for r, g in steps.groupby("rank", sort=True)
    ]


def _add_timeline(res: TracedResult, acc: _Ranks, rank0: int, world_size: int) -> None:
    """The timeline tables of a representative step of this world size: the step closest to the
    median step time on the first rank (``res.metrics.timeline_step``), on every rank."""
    st = res.steps[res.steps["rank"] == rank0]
    if not len(st):
        return
    med = st["step_time_s"].median()
    k = int(st.iloc[(st["step_time_s"] - med).abs().argsort().iloc[0]]["step"])
    res.metrics.timeline_step = k
    timeline, tphases, thost = [], [], []
    for r, (gpu, host, tl, att, windows) in acc.state.items():
        rows, prow, hrows = _timeline(gpu, host, tl, att, windows, r, k, world_size)
        timeline += rows
        tphases += prow
        thost += hrows
    res.timeline = pd.concat(timeline, ignore_index=True) if timeline else pd.DataFrame()
    res.timeline_phases = pd.DataFrame(tphases)
    res.timeline_host = pd.concat(thost, ignore_index=True) if thost else pd.DataFrame()


def _timeline(gpu: pd.DataFrame, host: pd.DataFrame, tl: HostTimeline, att, windows, rank: int, step: int, ws: int):
    start, end, valid = windows
    if step >= len(start) or not valid[step]:
        return [], [], []
    w0, w1 = start[step], end[step]
    s = gpu["start_ns"].to_numpy(np.int64)
    e = gpu["end_ns"].to_numpy(np.int64)
    m = (e > w0) & (s < w1)
    rows = pd.DataFrame(
        {
            "world_size": ws,
            "rank": rank,
            "stream": gpu["stream"].to_numpy()[m],
            "kind": gpu["kind"].astype(str).to_numpy()[m],
            "category": gpu["category"].astype(str).to_numpy()[m],
            "phase": np.array(PHASE_LABELS, dtype=object)[att.phase[m]],
            "name": gpu["name"].astype(str).to_numpy()[m],
            "start_s": (s[m] - w0) * 1e-9,
            "end_s": (e[m] - w0) * 1e-9,
        }
    )
    phases = host[(host["kind"] == "phase")]
    names = phases["name"].astype(str).to_numpy()
    prow = []
    if step < tl.steps:
        h0, h1 = tl.step_start[step], tl.step_end[step]
        ps, pe = phases["start_ns"].to_numpy(np.int64), phases["end_ns"].to_numpy(np.int64)
        sel = (ps >= h0) & (pe <= h1) & np.isin(names, ("step", *STEP_PHASES))
        for n, a, b in zip(names[sel], ps[sel], pe[sel]):
            prow.append({"world_size": ws, "rank": rank, "name": n, "start_s": (a - w0) * 1e-9, "end_s": (b - w0) * 1e-9})
    return [rows], prow, [_timeline_host(host, tl, step, w0, w1, rank, ws)]


def _timeline_host(host: pd.DataFrame, tl: HostTimeline, step: int, w0: int, w1: int, rank: int, ws: int) -> pd.DataFrame:
    """The host rows of the timeline: every thread's phase ranges and launch calls inside the step's
    GPU window or its host range (clipped to them), on the same time axis as the GPU rows."""
    lo, hi = w0, w1
    if step < tl.steps:
        lo, hi = min(lo, int(tl.step_start[step])), max(hi, int(tl.step_end[step]))
    s = host["start_ns"].to_numpy(np.int64)
    e = host["end_ns"].to_numpy(np.int64)
    kind = host["kind"].astype(str).to_numpy()
    m = (e > lo) & (s < hi) & np.isin(kind, ("phase", "launch"))
    s, e = np.clip(s, lo, hi), np.clip(e, lo, hi)
    return pd.DataFrame(
        {
            "world_size": ws,
            "rank": rank,
            "thread": host["thread"].astype(str).to_numpy()[m],
            "kind": kind[m],
            "name": host["name"].astype(str).to_numpy()[m],
            "start_s": (s[m] - w0) * 1e-9,
            "end_s": (e[m] - w0) * 1e-9,
        }
    )


def _completeness_table(per_rank: dict[int, dict[str, Any]], world_size: int, run_name: str) -> pd.DataFrame:
    rows = []
    for r, c in per_rank.items():
        for k, (n, f) in enumerate(zip(c["launches_per_step"], c["found_per_step"])):
            rows.append(
                {
                    "world_size": world_size,
                    "run": run_name,
                    "rank": r,
                    "step": k,
                    "launches": n,
                    "found": f,
                    "share": (f / n) if n else None,
                    "method": c["method"],
                }
            )
    return pd.DataFrame(rows)
