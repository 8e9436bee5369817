"""Metrics per world size: from traced and untraced runs to ``metrics.json`` and tidy tables.

For the traced run of each world size: the per-rank, per-step figures of ``partition`` (GPU-time
partition, NCCL sum and union, overlap, AllReduce, per-phase GPU time), aggregated as medians and
spreads over all (rank, measured step) samples; the ranking of GPU activities by summed kernel
time; which streams carry compute and AllReduce; and, for Kineto traces, how well the Score-P
attribution method (stream order) and the time-window fallback agree with the exact one.

From the untraced runs: throughput per world size (median over repeats), the weak-scaling
efficiency against both one-GPU baselines (with and without the DDP wrapper), and the tracing
dilation. From the bus-bandwidth runs: the NCCL busy-wait caveat as a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnabert_scaling.analysis import completeness, idle, kernel_classes, partition, skew
from dnabert_scaling.analysis.attribution import PHASE_LABELS, HostTimeline, agreement, attribute
from dnabert_scaling.analysis.runs import BareTraces, Inputs, RunInfo, trace_paths, usable_throughput
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.provenance import now_iso

SCHEMA = "dnabert-scaling/metrics/1"
TRACER_PREFERENCE = ("scorep", "torch")
DILATION_KIND = (
    "separate processes: the traced run's median step time over the untraced runs' median, so it holds "
    "run-to-run variation as well as the tracer's cost (make bench-trace times both in one process)"
)


def stat(values) -> dict[str, Any] | None:
    """Median and spread of the finite values; None when there are none."""
    arr = np.asarray([v for v in np.asarray(values, dtype=np.float64).ravel() if math.isfinite(v)])
    if arr.size == 0:
        return None
    return {
        "median": float(np.median(arr)),
        "p10": float(np.percentile(arr, 10)),
        "p90": float(np.percentile(arr, 90)),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "n": int(arr.size),
    }


@dataclass
class TracedResult:
    metrics: dict[str, Any]
    steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    ranking: pd.DataFrame = field(default_factory=pd.DataFrame)
    streams: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline_phases: pd.DataFrame = field(default_factory=pd.DataFrame)
    completeness: dict[str, Any] = field(default_factory=dict)
    completeness_steps: pd.DataFrame = field(default_factory=pd.DataFrame)
    timeline_host: pd.DataFrame = field(default_factory=pd.DataFrame)
    kernel_classes: pd.DataFrame = field(default_factory=pd.DataFrame)
    steps_complete: bool = True  # every rank's trace marks the expected measured steps


def _rank_steps_jsonl(run: RunInfo, rank: int) -> list[dict]:
    import json

    path = RunLayout(run.path).steps(rank)
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _sanity_from_run(run: RunInfo | None, world_size: int, expected_steps: int | None) -> tuple[dict, list[str]]:
    problems: list[str] = []
    sanity = {"all_ranks_present": True, "steps_complete": True, "finite_loss": True}
    if run is None:
        return sanity, problems
    if not run.ok:
        problems.append(f"run {run.name} did not complete (status {run.status!r})")
        sanity["steps_complete"] = False
    ranks = run.summary.get("ranks") or []
    present = sorted(r.get("rank") for r in ranks if isinstance(r, dict))
    if present != list(range(world_size)):
        sanity["all_ranks_present"] = False
        problems.append(f"run {run.name}: rank summaries for {present}, expected 0..{world_size - 1}")
    if run.summary.get("finite_loss") is False:
        sanity["finite_loss"] = False
        problems.append(f"run {run.name}: a loss was not finite")
    if expected_steps:
        for r in range(world_size):
            measured = [s for s in _rank_steps_jsonl(run, r) if s.get("measured")]
            if len(measured) != expected_steps:
                sanity["steps_complete"] = False
                problems.append(f"run {run.name} rank {r}: {len(measured)} measured steps logged, expected {expected_steps}")
            elif not all(math.isfinite(s.get("loss", float("nan"))) for s in measured):
                sanity["finite_loss"] = False
                problems.append(f"run {run.name} rank {r}: a logged loss is not finite")
    return sanity, problems


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
        sel = (ps >= h0) & (pe <= h1) & np.isin(names, ("step", "forward", "backward", "optimizer"))
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


def analyze_trace(
    trace, world_size: int, expected_steps: int | None, run_name: str, bound: float = completeness.DEFAULT_BOUND
) -> TracedResult:
    """GPU metrics of one traced run (all its ranks), and its completeness judged at ``bound``."""
    steps_tables, rank_tables, stream_tables, class_tables = [], [], [], []
    notes: list[str] = []
    methods: dict[str, int] = {}
    validation = {"stream-order": [], "time-window": []}
    per_rank = {}
    problems: list[str] = []
    allreduce_streams: set[int] = set()
    compute_streams: set[int] = set()
    shared_stream = False  # stream ids are per rank: AllReduce and compute share one on some rank
    complete_by_rank: dict[int, dict] = {}
    steps_complete = True
    for r in trace.rank_ids:
        sub = trace.rank(r)
        gpu, host = sub.gpu.reset_index(drop=True), sub.host.reset_index(drop=True)
        tl = HostTimeline.from_host(host)
        if tl.steps == 0:
            steps_complete = False
            problems.append(f"rank {r}: the trace marks no measured step (no ds:step range): nothing to analyse")
        elif expected_steps and tl.steps != expected_steps:
            steps_complete = False
            problems.append(f"rank {r}: the trace marks {tl.steps} measured steps, expected {expected_steps}")
        complete_by_rank[r] = completeness.rank_completeness(gpu, host, tl, bound)
        att = attribute(gpu, host, tl)
        notes += [f"rank {r}: {n}" for n in att.notes]
        for k, v in att.method_summary().items():
            methods[k] = methods.get(k, 0) + v
        if att.main_method == "correlation":
            dur = gpu["end_ns"].to_numpy(np.int64) - gpu["start_ns"].to_numpy(np.int64)
            for prefer in validation:
                validation[prefer].append(agreement(att, attribute(gpu, host, tl, prefer=prefer), dur))
        windows = partition.step_windows(gpu, att, tl.steps)
        table = partition.rank_step_table(gpu, att, windows)
        table = pd.concat([table, idle.step_columns(gpu, host, tl, att, windows)], axis=1)
        table.insert(0, "rank", r)
        class_tables.append(kernel_classes.rank_class_sums(gpu, att))
        steps_tables.append(table)
        rk = partition.ranking(gpu, att)
        rk["rank"] = r
        rank_tables.append(rk)
        sb = partition.stream_busy(gpu, windows)
        sb.insert(0, "rank", r)
        stream_tables.append(sb)
        cat = gpu["category"].astype(str).to_numpy()
        stream = gpu["stream"].to_numpy()
        ar = set(stream[(cat == "nccl") & (gpu["collective"].astype(object).to_numpy() == "AllReduce")].tolist())
        cs = set(stream[cat == "compute"].tolist())
        allreduce_streams |= ar
        compute_streams |= cs
        shared_stream = shared_stream or bool(ar & cs)
        per_rank[r] = (gpu, host, tl, att, windows)
    steps = pd.concat(steps_tables, ignore_index=True)
    steps.insert(0, "run", run_name)
    steps.insert(0, "world_size", world_size)
    n_samples = max(1, len(steps))
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
    streams = pd.concat(stream_tables, ignore_index=True)
    streams.insert(0, "world_size", world_size)
    classes = kernel_classes.class_table(class_tables, n_samples)
    classes.insert(0, "world_size", world_size)
    other_idle = float(steps["idle_other_s"].sum())
    if other_idle > 0:
        notes.append(
            f"{100 * other_idle / max(float(steps['idle_s'].sum()), 1e-30):.1f}% of idle time is 'other': "
            "the gap ends at an activity whose launch time the trace does not give (time-window "
            "attribution), so host wait and kernel wait cannot be told apart there"
        )

    # "own stream" holds when on every rank AllReduce and compute never share a stream
    own = (not shared_stream) if allreduce_streams else None
    unknown_s = float(steps["unknown_collective_nccl_s"].sum())
    nccl_s = float(steps["nccl_kernel_sum_s"].sum())
    if unknown_s > 0:
        notes.append(
            f"{100 * unknown_s / max(nccl_s, 1e-30):.1f}% of NCCL kernel time has no collective in the "
            "trace (ncclDevKernel_Generic without Kineto's 'Collective name'); it is not counted as AllReduce"
        )

    def s(col):
        return stat(steps[col]) if col in steps else None

    metrics = {
        "step_time_s": s("step_time_s"),
        "compute_s": s("compute_s"),
        "exposed_comm_s": s("exposed_comm_s"),
        "exposed_memcpy_s": s("exposed_memcpy_s"),
        "idle_s": s("idle_s"),
        "nccl_kernels_per_step": s("nccl_kernels"),
        "nccl_kernel_sum_s": s("nccl_kernel_sum_s"),
        "nccl_union_s": s("nccl_union_s"),
        "overlap_ratio": s("overlap_ratio"),
        "exposed_comm_share": s("exposed_comm_share"),
        "allreduce_kernel_s": s("allreduce_kernel_s"),
        "allreduce_kernels_per_step": s("allreduce_kernels"),
        "allreduce_share": s("allreduce_share"),
        "allreduce_streams": sorted(int(x) for x in allreduce_streams),
        "compute_streams": sorted(int(x) for x in compute_streams),
        "allreduce_own_stream": own,
        "forward_gpu_s": s("forward_gpu_s"),
        "backward_gpu_s": s("backward_gpu_s"),
        "optimizer_gpu_s": s("optimizer_gpu_s"),
        "allreduce_to_backward": s("allreduce_to_backward"),
        "kernels_per_step": s("kernels"),
        "idle_host_wait_s": s("idle_host_wait_s"),
        "idle_kernel_wait_s": s("idle_kernel_wait_s"),
        "idle_other_s": s("idle_other_s"),
        "launches_per_step": s("launches"),
        "launch_call_s": s("launch_call_s"),
        "host_s_per_launch": s("host_s_per_launch"),
        "kernel_classes": [
            {"class": c, "sum_s_per_step": float(x), "count_per_step": float(n), "share": float(sh), "example": str(t)}
            for c, x, n, sh, t in classes[["class", "sum_s_per_step", "count_per_step", "share", "top"]].itertuples(index=False)
        ],
        "ranking": [
            {"activity": a, "kind": k, "sum_s_per_step": float(x), "count_per_step": float(c), "share": float(sh)}
            for a, k, x, c, sh in rk[["activity", "kind", "sum_s_per_step", "count_per_step", "share"]]
            .head(25)
            .itertuples(index=False)
        ],
        "phase_method": max(methods, key=methods.get) if methods else None,
        "phase_methods": methods,
        "phase_validation": {
            k: {"activities": _mean([v["activities"] for v in vals]), "time": _mean([v.get("time") for v in vals])}
            for k, vals in validation.items()
            if vals
        }
        or None,
        "notes": notes,
    }
    metrics["per_rank"] = _per_rank(steps)
    metrics["rank_skew"] = skew.rank_skew(per_rank, common_clock=trace.format == "kineto")
    # a representative step of this world size for the timeline: the one closest to the median on rank 0
    timeline, tphases, thost = [], [], []
    r0 = trace.rank_ids[0]
    st = steps[steps["rank"] == r0]
    if len(st):
        med = st["step_time_s"].median()
        k = int(st.iloc[(st["step_time_s"] - med).abs().argsort().iloc[0]]["step"])
        metrics["timeline_step"] = k
        for r, (gpu, host, tl, att, windows) in per_rank.items():
            rows, prow, hrows = _timeline(gpu, host, tl, att, windows, r, k, world_size)
            timeline += rows
            tphases += prow
            thost += hrows
    res = TracedResult(metrics, steps, rk, streams)
    res.kernel_classes = classes.drop(columns=["top"]).rename(columns={"class": "kernel_class"})
    res.timeline = pd.concat(timeline, ignore_index=True) if timeline else pd.DataFrame()
    res.timeline_phases = pd.DataFrame(tphases)
    res.timeline_host = pd.concat(thost, ignore_index=True) if thost else pd.DataFrame()
    res.metrics["trace_problems"] = problems
    res.steps_complete = steps_complete
    res.completeness = completeness.judge(complete_by_rank, bound)
    res.completeness["per_rank"] = {str(r): c for r, c in complete_by_rank.items()}
    res.completeness_steps = _completeness_table(complete_by_rank, world_size, run_name)
    return res


def _completeness_table(per_rank: dict[int, dict], world_size: int, run_name: str) -> pd.DataFrame:
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


def _sanity_trace_complete(result: dict) -> bool | str:
    """The sanity value of ``trace_complete``: True, False, or "unknown"."""
    return {completeness.COMPLETE: True, completeness.INCOMPLETE: False}.get(result["status"], "unknown")


LOSS_WORDS = ("dropped", "skipping", "skipped", "maximum cuda buffer", "lost")


def _loss_warnings(run: RunInfo | None) -> list[str]:
    """The run's post-run warnings that report lost trace records (Score-P's log)."""
    if run is None:
        return []
    warnings = list((run.manifest or {}).get("warnings") or []) + list(run.summary.get("warnings") or [])
    return [w for w in dict.fromkeys(map(str, warnings)) if any(k in w.lower() for k in LOSS_WORDS)]


def _per_rank(steps: pd.DataFrame) -> list[dict[str, Any]]:
    """Medians per rank of the figures whose imbalance matters (step, exposed comm, idle)."""
    out = []
    for r, g in steps.groupby("rank", sort=True):
        out.append({"rank": int(r), **{c: float(g[c].median()) for c in ("step_time_s", "exposed_comm_s", "idle_s")}})
    return out


def _mean(values):
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _choose_traced(runs: list[RunInfo]) -> tuple[RunInfo | None, list[str]]:
    traced = [r for r in runs if r.tracer != "none"]
    if not traced:
        return None, []
    traced.sort(key=lambda r: (TRACER_PREFERENCE.index(r.tracer) if r.tracer in TRACER_PREFERENCE else 9, not r.ok, r.repeat))
    others = [r.name for r in traced[1:]]
    return traced[0], ([f"traced runs not analysed (one per world size): {', '.join(others)}"] if others else [])


def _throughput(runs: list[RunInfo], ws: int) -> dict[str, Any] | None:
    untraced = [r for r in runs if r.tracer == "none" and r.variant != "noddp" and usable_throughput(r)]
    if not untraced:
        return None
    return {
        "source": "untraced",
        "runs": [r.name for r in untraced],
        "samples_per_s": stat([r.summary["samples_per_s"] for r in untraced]),
        "step_time_s": stat([r.summary["median_step_time_s"] for r in untraced]),
        "global_batch": untraced[0].summary.get("global_batch"),
        "device_type": untraced[0].summary.get("device_type"),
    }


def _noddp_throughput(runs: list[RunInfo]) -> dict[str, Any] | None:
    base = [r for r in runs if r.tracer == "none" and r.variant == "noddp" and usable_throughput(r)]
    if not base:
        return None
    return {"runs": [r.name for r in base], "samples_per_s": stat([r.summary["samples_per_s"] for r in base])}


def _busy_wait(gpu: dict | None, bw: dict | None) -> dict | None:
    if not gpu or not bw or not gpu.get("allreduce_kernel_s"):
        return None
    ideal = bw.get("step_allreduce_s")
    measured = gpu["allreduce_kernel_s"]["median"]
    if not ideal:
        return None
    return {
        "allreduce_kernel_s": measured,
        "transfer_s_at_measured_busbw": ideal,
        "ratio": measured / ideal,
        "busbw_GBps": bw.get("busbw_Bps_median", 0) / 1e9,
        "gradient_bytes": bw.get("gradient_bytes"),
        "buckets": len(bw.get("bucket_bytes", [])),
        "note": "AllReduce kernel time per step against the time the gradient buckets take alone at the "
        "bus bandwidth measured on the same machine (busbw); a ratio above 1 is kernel time not spent moving bytes",
    }


def label_for(runs: list[RunInfo], bare: list[BareTraces]) -> str:
    prov = next((r.summary.get("provenance") for r in runs if r.summary.get("provenance")), None) or {}
    device = next((r.summary.get("device_type") for r in runs if r.summary.get("device_type")), None)
    sizes = sorted({r.world_size for r in runs} | {b.world_size for b in bare})
    tracers = sorted({r.tracer for r in runs if r.tracer != "none"} | {b.tracer or "?" for b in bare})
    where = f"{prov.get('gpu_name', 'GPU')}" if device == "cuda" else ("CPU (gloo)" if device == "cpu" else "traces")
    return f"{where}, world sizes {', '.join(map(str, sizes))}, tracer {', '.join(tracers) or 'none'}"


def build(
    inputs: Inputs, read_traces=None, bound: float = completeness.DEFAULT_BOUND
) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """metrics.json content and the tidy tables, from discovered runs and bare traces; ``bound`` is
    the completeness bound (``[sanity.trace_complete]`` of the claims file)."""
    if read_traces is None:
        from dnabert_scaling.traces import read_run_traces as read_traces
    from dnabert_scaling.traces import NoGpuActivityError

    sizes = sorted({r.world_size for r in inputs.runs} | {b.world_size for b in inputs.bare})
    if not sizes:
        raise ArtifactError("nothing to analyse: no runs and no traces")
    per_ws: dict[str, Any] = {}
    tables: dict[str, list[pd.DataFrame]] = {
        k: []
        for k in (
            "step_partition",
            "ranking",
            "streams",
            "throughput",
            "timeline",
            "timeline_phases",
            "timeline_host",
            "kernel_classes",
            "completeness",
        )
    }
    fallbacks: list[dict] = []
    notes: list[str] = []
    for run in inputs.runs:
        for f in run.summary.get("fallbacks", []) or []:
            item = {**f, "runs": [run.name]}
            same = next((x for x in fallbacks if (x["what"], x["used"]) == (f.get("what"), f.get("used"))), None)
            if same:
                same["runs"].append(run.name)
            else:
                fallbacks.append(item)
    for ws in sizes:
        runs = [r for r in inputs.runs if r.world_size == ws]
        bare = [b for b in inputs.bare if b.world_size == ws]
        traced_run, extra = _choose_traced(runs)
        notes += extra
        entry: dict[str, Any] = {"world_size": ws, "traced": None}
        trace_src = None
        expected = None
        if traced_run is not None:
            paths = trace_paths(traced_run)
            expected = traced_run.summary.get("measured_steps")
            trace_src = {
                "run": traced_run.name,
                "tracer": traced_run.tracer,
                "paths": paths,
                "device_type": traced_run.summary.get("device_type"),
            }
        elif bare:
            trace_src = {
                "run": f"bare traces ({bare[0].source})",
                "tracer": bare[0].tracer,
                "paths": bare[0].paths,
                "device_type": "cuda",
            }
        if trace_src is not None:
            sanity, problems = _sanity_from_run(traced_run, ws, expected)
            traced: dict[str, Any] = {
                "run": trace_src["run"],
                "tracer": trace_src["tracer"],
                "format": None,
                "trace_mode": traced_run.summary.get("trace_mode") if traced_run else None,
                "device_type": trace_src["device_type"],
                "ranks": [],
                "measured_steps": expected,
                "gpu": None,
                "gpu_not_run_reason": None,
                "completeness": None,
            }
            sanity["trace_complete"] = None  # not applicable until a GPU trace is read
            if not trace_src["paths"]:
                traced["gpu_not_run_reason"] = f"no traces in {trace_src['run']}"
                sanity["gpu_streams"] = False
                problems.append(traced["gpu_not_run_reason"])
            else:
                try:
                    trace = read_traces(trace_src["paths"], world_size=ws)
                except NoGpuActivityError as exc:
                    if trace_src["device_type"] == "cpu":
                        traced["gpu_not_run_reason"] = (
                            "CPU run (gloo, no GPU): the traces hold no GPU activity, so the GPU-time metrics "
                            "(partition, NCCL, overlap, AllReduce vs backward) cannot be measured"
                        )
                        sanity["gpu_streams"] = None  # not applicable
                    else:
                        traced["gpu_not_run_reason"] = f"the traces hold no GPU activity: {exc}"
                        sanity["gpu_streams"] = False
                        problems.append(str(exc))
                else:
                    sanity["gpu_streams"] = all(trace.ranks[r].get("streams") for r in trace.rank_ids)
                    traced["format"] = trace.format
                    traced["ranks"] = trace.rank_ids
                    res = analyze_trace(trace, ws, expected, trace_src["run"], bound)
                    problems += res.metrics.pop("trace_problems")
                    traced["completeness"] = res.completeness
                    sanity["trace_complete"] = _sanity_trace_complete(res.completeness)
                    res.completeness["log_warnings"] = _loss_warnings(traced_run)
                    if len(res.completeness_steps):
                        tables["completeness"].append(res.completeness_steps)
                    if not res.steps_complete:  # the run's own step log is judged in _sanity_from_run
                        sanity["steps_complete"] = False
                    if expected is None:
                        traced["measured_steps"] = int(res.steps.groupby("rank").size().min()) if len(res.steps) else 0
                    traced["gpu"] = res.metrics
                    for key, df in (
                        ("step_partition", res.steps),
                        ("ranking", res.ranking),
                        ("streams", res.streams),
                        ("kernel_classes", res.kernel_classes),
                    ):
                        tables[key].append(df)
                    if len(res.timeline):
                        tables["timeline"].append(res.timeline)
                        tables["timeline_phases"].append(res.timeline_phases)
                        tables["timeline_host"].append(res.timeline_host)
            sanity["problems"] = problems
            traced["sanity"] = sanity
            entry["traced"] = traced
        entry["throughput"] = _throughput(runs, ws)
        notes += [
            f"run {r.name}: a loss was not finite; its throughput is not used for scaling"
            for r in runs
            if r.tracer == "none" and r.ok and r.summary.get("finite_loss") is False
        ]
        if entry["throughput"] is None and entry["traced"] and entry["traced"]["gpu"]:
            st = entry["traced"]["gpu"]["step_time_s"]
            batch = bare[0].batch_size if bare else None
            entry["throughput"] = {
                "source": "trace",
                "runs": [entry["traced"]["run"]],
                "step_time_s": st,
                "samples_per_s": ({"median": batch * ws / st["median"], "n": st["n"]} if batch and st else None),
                "global_batch": batch * ws if batch else None,
            }
        if ws == 1:
            entry["throughput_noddp"] = _noddp_throughput(runs)
        for r in runs:
            if r.tracer == "none" and r.summary.get("samples_per_s"):
                tables["throughput"].append(
                    pd.DataFrame(
                        [
                            {
                                "world_size": ws,
                                "run": r.name,
                                "tracer": r.tracer,
                                "variant": r.variant,
                                "repeat": r.repeat,
                                "samples_per_s": r.summary["samples_per_s"],
                                "step_time_s": r.summary["median_step_time_s"],
                                "global_batch": r.summary.get("global_batch"),
                                "status": r.status if usable_throughput(r) or not r.ok else "non-finite loss",
                            }
                        ]
                    )
                )
        dil = None
        if traced_run is not None and traced_run.ok and entry["throughput"] and entry["throughput"]["source"] == "untraced":
            t = traced_run.summary.get("median_step_time_s")
            u = entry["throughput"]["step_time_s"]["median"]
            dil = t / u if t and u else None
        entry["dilation"] = dil
        entry["dilation_kind"] = DILATION_KIND if dil is not None else None
        gpu = entry["traced"]["gpu"] if entry["traced"] else None
        entry["busy_wait"] = _busy_wait(gpu, inputs.busbw.get(ws))
        if gpu is not None:
            gpu["busy_wait"] = entry["busy_wait"]
        per_ws[str(ws)] = entry
    _efficiency(per_ws)
    all_runs = inputs.runs
    metrics = {
        "schema": SCHEMA,
        "created": now_iso(),
        "label": label_for(all_runs, inputs.bare),
        "sources": inputs.sources + [b.source for b in inputs.bare],
        "world_sizes": per_ws,
        "measured_world_sizes": sizes,
        "busbw": {str(k): {kk: v for kk, v in b.items() if kk != "provenance"} for k, b in inputs.busbw.items()},
        "fallbacks": fallbacks,
        "deviations": sorted({d for r in all_runs for d in r.summary.get("deviations", []) or []}),
        "notes": notes,
        "provenance": _provenance(all_runs),
    }
    out_tables = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in tables.items()}
    return metrics, out_tables


def _efficiency(per_ws: dict[str, Any]) -> None:
    one = per_ws.get("1")
    base = (
        one["throughput"]["samples_per_s"]["median"]
        if one and one.get("throughput") and one["throughput"].get("samples_per_s")
        else None
    )
    base_step = (
        one["throughput"]["step_time_s"]["median"]
        if one and one.get("throughput") and one["throughput"].get("step_time_s")
        else None
    )
    noddp = (one or {}).get("throughput_noddp")
    base_noddp = noddp["samples_per_s"]["median"] if noddp else None
    for key, entry in per_ws.items():
        n = int(key)
        tp = entry.get("throughput")
        entry["efficiency"] = entry["efficiency_vs_noddp"] = entry["efficiency_spread"] = None
        entry["efficiency_baseline"] = "1-GPU run with the DDP wrapper (world size 1 over NCCL/gloo)"
        if not tp:
            continue
        if tp.get("samples_per_s") and base:
            entry["efficiency"] = tp["samples_per_s"]["median"] / (n * base)
            entry["efficiency_spread"] = _efficiency_spread(tp["samples_per_s"], one["throughput"]["samples_per_s"], n)
        elif tp.get("step_time_s") and base_step:
            # weak scaling with the same per-rank batch: efficiency = step(1) / step(N)
            entry["efficiency"] = base_step / tp["step_time_s"]["median"]
        if tp.get("samples_per_s") and base_noddp:
            entry["efficiency_vs_noddp"] = tp["samples_per_s"]["median"] / (n * base_noddp)


def _efficiency_spread(tp: dict, base: dict, n: int) -> dict | None:
    """The efficiency range the repeats allow: slowest run at N over N x fastest 1-GPU run, and
    fastest over slowest (the 1-GPU entry itself: its own repeats against each other)."""
    if not all(isinstance(x.get(k), (int, float)) and x.get(k) for x in (tp, base) for k in ("min", "max")):
        return None
    return {
        "min": tp["min"] / (n * base["max"]),
        "max": tp["max"] / (n * base["min"]),
        "runs_n": tp.get("n"),
        "baseline_runs_n": base.get("n"),
    }


def _provenance(runs: list[RunInfo]) -> dict[str, Any]:
    for r in runs:
        if r.summary.get("provenance"):
            p = dict(r.summary["provenance"])
            p["from_run"] = r.name
            for k in (
                "precision",
                "attention",
                "model",
                "parameters",
                "batch_size_per_rank",
                "seq_len_tokens",
                "task",
                "weights",
                "ddp_options",
                "trace_mode",
                "warmup_steps",
                "measured_steps",
                "optimizer_impl",
                "training_loop",
                "cpu_threads_per_rank",
            ):
                if k in r.summary:
                    p[k] = r.summary[k]
            return p
    return {}
