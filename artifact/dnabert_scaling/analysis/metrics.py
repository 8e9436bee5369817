"""Metrics per world size: from traced and untraced runs to ``metrics.json`` and tidy tables.

For the traced run of each world size: its GPU metrics (``trace_metrics``), its completeness and
its sanity items. From the untraced runs: throughput per world size (median over repeats), the
weak-scaling efficiency against both one-GPU baselines (with and without the DDP wrapper), and
the tracing dilation. From the bus-bandwidth runs: the NCCL busy-wait caveat as a number.

``build`` fills the records of ``metrics_schema`` (the one definition of the file's shape);
``analysis.cli`` writes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dnabert_scaling import run_records
from dnabert_scaling.analysis import completeness
from dnabert_scaling.analysis.placement import placement_of
from dnabert_scaling.analysis.runs import BareTraces, Inputs, RunInfo, trace_paths, traced_run, usable_throughput
from dnabert_scaling.analysis.stats import stat
from dnabert_scaling.analysis.trace_metrics import TracedResult, analyze_trace
from dnabert_scaling.errors import ArtifactError, loads_json
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.metrics_invariants import BARE_TRACES, fallback_runs
from dnabert_scaling.metrics_schema import (
    SCHEMA,
    BusyWait,
    Completeness,
    EfficiencySpread,
    GpuMetrics,
    MetricsFile,
    NoDdpThroughput,
    Sanity,
    Stat,
    Throughput,
    TraceInput,
    Traced,
    WorldSizeEntry,
)
from dnabert_scaling.provenance import BUCKET_HOOK_DEVIATION, below_cwd, now_iso

__all__ = ["SCHEMA", "TABLES", "TracedResult", "analyze_trace", "build", "label_for", "stat"]

DILATION_KIND = (
    "separate processes: the traced run's median step time over the untraced runs' median, so it holds "
    "run-to-run variation as well as the tracer's cost (make bench-trace pairs traced and untraced steps taken "
    "seconds apart, which isolates the tracer)"
)
CPU_NO_GPU = (
    "CPU run (gloo, no GPU): the traces hold no GPU activity, so the GPU-time metrics "
    "(partition, NCCL, overlap, AllReduce vs backward) cannot be measured"
)
# the tables analyze writes (tables/<name>.csv), in this order
TABLES = (
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
# what a run's summary records of its configuration, copied into metrics.json's provenance
PROVENANCE_KEYS = (
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
)


@dataclass
class _TraceSource:
    """Where a world size's GPU figures come from: its traced run, or traces given without one."""

    run: str
    tracer: str | None
    paths: list[Path]
    device_type: str | None
    run_info: RunInfo | None = None

    @property
    def expected_steps(self) -> int | None:
        return self.run_info.summary.get("measured_steps") if self.run_info else None


def build(
    inputs: Inputs, read_traces=None, bound: float = completeness.DEFAULT_BOUND
) -> tuple[MetricsFile, dict[str, pd.DataFrame]]:
    """metrics.json's records and the tidy tables, from discovered runs and bare traces; ``bound``
    is the completeness bound (``[sanity.trace_complete]`` of the claims file)."""
    if read_traces is None:
        from dnabert_scaling.traces import read_run_traces as read_traces

    sizes = sorted({r.world_size for r in inputs.runs} | {b.world_size for b in inputs.bare})
    if not sizes:
        raise ArtifactError("nothing to analyse: no runs and no traces")
    tables: dict[str, list[pd.DataFrame]] = {k: [] for k in TABLES}
    notes: list[str] = []
    per_ws = {str(ws): _world_size_entry(inputs, ws, read_traces, bound, tables, notes) for ws in sizes}
    _efficiency(per_ws, _baseline_name(inputs.runs))
    metrics = MetricsFile(
        schema=SCHEMA,
        created=now_iso(),
        label=label_for(inputs.runs, inputs.bare),
        sources=inputs.sources + [b.source for b in inputs.bare],
        world_sizes=per_ws,
        measured_world_sizes=_measured_sizes(inputs, per_ws),
        busbw={str(k): {kk: v for kk, v in b.items() if kk != "provenance"} for k, b in inputs.busbw.items()},
        fallbacks=_fallbacks(inputs.runs, inputs.bare, per_ws),
        deviations=_deviations(inputs.runs),
        notes=notes,
        provenance=_provenance(inputs.runs),
    )
    try:  # the invariants check applies when it reads the file, applied before it is written
        MetricsFile.from_json(metrics.to_json())
    except ArtifactError as exc:
        raise ArtifactError(f"analyze refuses to write metrics.json that states more than its inputs hold: {exc}") from None
    return metrics, {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in tables.items()}


def _measured_sizes(inputs: Inputs, per_ws: dict[str, WorldSizeEntry]) -> list[int]:
    """The world sizes with measured steps: a run that completed, or traces read. A world size whose
    runs all failed has an entry (its problems) but was not measured."""
    done = {r.world_size for r in inputs.runs if r.ok}
    return sorted(int(k) for k, e in per_ws.items() if int(k) in done or (e.traced is not None and e.traced.ranks))


def _world_size_entry(
    inputs: Inputs, ws: int, read_traces, bound: float, tables: dict[str, list[pd.DataFrame]], notes: list[str]
) -> WorldSizeEntry:
    """Everything measured at world size ``ws``; its table rows go to ``tables``, its notes to ``notes``."""
    runs = [r for r in inputs.runs if r.world_size == ws]
    bare = [b for b in inputs.bare if b.world_size == ws]
    traced = traced_run(runs, ws)
    entry = WorldSizeEntry(world_size=ws)
    source = _trace_source(traced, bare)
    if source is not None:
        entry.traced = _traced(source, ws, read_traces, bound, tables)
    entry.throughput = _throughput(runs, ws)
    notes += [
        f"run {r.name}: a loss was not finite; its throughput is not used for scaling"
        for r in runs
        if r.tracer == "none" and r.ok and r.summary.get("finite_loss") is False
    ]
    if entry.throughput is None and entry.traced and entry.traced.gpu:
        entry.throughput = _trace_throughput(entry.traced, bare[0].batch_size if bare else None, ws)
    if ws == 1:
        entry.throughput_noddp = _noddp_throughput(runs)
    tables["throughput"] += _throughput_rows(runs, ws)
    entry.dilation = _dilation(traced, entry.throughput)
    entry.dilation_kind = DILATION_KIND if entry.dilation is not None else None
    gpu = entry.traced.gpu if entry.traced else None
    entry.busy_wait = _busy_wait(gpu, inputs.busbw.get(ws))
    if gpu is not None:
        gpu.busy_wait = entry.busy_wait
    return entry


def _bare_run_name(bare: BareTraces) -> str:
    """How bare traces are named where a run's folder name would stand (``traced.run``, the fallbacks)."""
    return f"{BARE_TRACES}{bare.source})"


def _trace_source(traced_run: RunInfo | None, bare: list[BareTraces]) -> _TraceSource | None:
    if traced_run is not None:
        return _TraceSource(traced_run.name, traced_run.tracer, trace_paths(traced_run), traced_run.device_type, traced_run)
    if bare:
        return _TraceSource(_bare_run_name(bare[0]), bare[0].tracer, bare[0].paths, "cuda")
    return None


def _traced(src: _TraceSource, ws: int, read_traces, bound: float, tables: dict[str, list[pd.DataFrame]]) -> Traced:
    """The traced run's entry: its sanity, and its GPU metrics where the traces hold GPU activity."""
    from dnabert_scaling.traces import NoGpuActivityError

    sanity = _sanity_from_run(src.run_info, ws, src.expected_steps)
    traced = Traced(
        run=src.run,
        tracer=src.tracer,
        trace_mode=src.run_info.summary.get("trace_mode") if src.run_info else None,
        device_type=src.device_type,
        measured_steps=src.expected_steps,
        placement=placement_of(src.run_info),
        sanity=sanity,
    )
    if not src.paths:
        info = src.run_info
        failed = f"run {src.run} did not complete (status {info.status!r}): " if info is not None and not info.ok else ""
        traced.gpu_not_run_reason = f"{failed}no traces in {src.run}"
        sanity.gpu_streams = False
        sanity.problems.append(traced.gpu_not_run_reason)
        return traced
    try:
        trace = read_traces(src.paths, world_size=ws)
    except NoGpuActivityError as exc:
        if src.device_type == "cpu":
            traced.gpu_not_run_reason = CPU_NO_GPU
            sanity.gpu_streams = None  # not applicable
        else:
            traced.gpu_not_run_reason = f"the traces hold no GPU activity: {exc}"
            sanity.gpu_streams = False
            sanity.problems.append(str(exc))
        return traced
    sanity.gpu_streams = all(trace.ranks[r].get("streams") for r in trace.rank_ids)
    spread = _ranks_on_several_devices(trace)
    if spread:  # a DDP rank owns one device; stream ids are per device, so its streams cannot be told apart
        sanity.gpu_streams = False
        sanity.problems += spread
    traced.format = trace.format
    traced.ranks = trace.rank_ids
    traced.inputs = _trace_inputs(trace)
    res = analyze_trace(trace, ws, src.expected_steps, src.run, bound)
    sanity.problems += res.problems
    assert res.completeness is not None
    res.completeness.log_warnings = _loss_warnings(src.run_info)
    traced.completeness = res.completeness
    sanity.trace_complete = _sanity_trace_complete(res.completeness)
    if not res.steps_complete:  # the run's own step log is judged in _sanity_from_run
        sanity.steps_complete = False
    if src.expected_steps is None:
        traced.measured_steps = int(res.steps.groupby("rank").size().min()) if len(res.steps) else 0
    traced.gpu = res.metrics
    _add_tables(tables, res)
    return traced


def _trace_inputs(trace) -> list[TraceInput]:
    """What each rank was read from: path and sha256 (``traces.identity``)."""
    return [
        TraceInput(
            rank=r,
            path=str(below_cwd(trace.ranks[r].get("sha256_of") or trace.ranks[r]["source"])),
            sha256=trace.ranks[r]["sha256"],
            gpu_timeline_sha256=trace.ranks[r].get("gpu_timeline_sha256"),
        )
        for r in trace.rank_ids
        if trace.ranks[r].get("sha256")
    ]


def _add_tables(tables: dict[str, list[pd.DataFrame]], res: TracedResult) -> None:
    if len(res.completeness_steps):
        tables["completeness"].append(res.completeness_steps)
    tables["step_partition"].append(res.steps)
    tables["ranking"].append(res.ranking)
    tables["streams"].append(res.streams)
    tables["kernel_classes"].append(res.kernel_classes)
    if len(res.timeline):
        tables["timeline"].append(res.timeline)
        tables["timeline_phases"].append(res.timeline_phases)
        tables["timeline_host"].append(res.timeline_host)


def _ranks_on_several_devices(trace) -> list[str]:
    """A problem for each rank whose GPU activities ran on more than one device."""
    if "device" not in trace.gpu.columns or not len(trace.gpu):
        return []
    devices = trace.gpu.groupby("rank")["device"].unique()
    return [
        f"rank {r}: GPU activities on devices {', '.join(map(str, sorted(d)))}: a DDP rank owns one device, "
        "and its streams (numbered per device) cannot be told apart"
        for r, d in devices.items()
        if len(d) > 1
    ]


def _rank_steps_jsonl(run: RunInfo, rank: int) -> list[dict]:
    path = RunLayout(run.path).steps(rank)
    if not path.is_file():
        return []
    out = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            step = loads_json(line)
        except ValueError:
            continue  # a line cut short by a stopped rank: the step counts below say it is missing
        run_records.check_step_line(step, path, number)
        out.append(step)
    return out


def _sanity_from_run(run: RunInfo | None, world_size: int, expected_steps: int | None) -> Sanity:
    """The sanity items a run folder shows by itself: its status, rank summaries and step logs."""
    sanity = Sanity()
    if run is None:
        return sanity
    problems = sanity.problems
    if not run.ok:
        problems.append(f"run {run.name} did not complete (status {run.status!r})")
        sanity.steps_complete = False
    ranks = run.summary.get("ranks") or []
    present = sorted(r.get("rank") for r in ranks if isinstance(r, dict))
    if present != list(range(world_size)):
        sanity.all_ranks_present = False
        problems.append(f"run {run.name}: rank summaries for {present}, expected 0..{world_size - 1}")
    if run.summary.get("finite_loss") is False:
        sanity.finite_loss = False
        problems.append(f"run {run.name}: a loss was not finite")
    elif "finite_loss" not in run.summary and not any(
        s.get("measured") for r in range(world_size) for s in _rank_steps_jsonl(run, r)
    ):
        sanity.finite_loss = None  # no loss to judge: no measured step was logged and the run says nothing
    if expected_steps:
        for r in range(world_size):
            measured = [s for s in _rank_steps_jsonl(run, r) if s.get("measured")]
            if len(measured) != expected_steps:
                sanity.steps_complete = False
                problems.append(f"run {run.name} rank {r}: {len(measured)} measured steps logged, expected {expected_steps}")
            elif not all(math.isfinite(s.get("loss", float("nan"))) for s in measured):
                sanity.finite_loss = False
                problems.append(f"run {run.name} rank {r}: a logged loss is not finite")
    return sanity


def _sanity_trace_complete(result: Completeness) -> bool | str:
    """The sanity value of ``trace_complete``: True, False, or "unknown"."""
    return {completeness.COMPLETE: True, completeness.INCOMPLETE: False}.get(result.status, "unknown")


LOSS_WORDS = ("dropped", "skipping", "skipped", "maximum cuda buffer", "lost")


def _loss_warnings(run: RunInfo | None) -> list[str]:
    """The run's post-run warnings that report lost trace records (Score-P's log)."""
    if run is None:
        return []
    warnings = list((run.manifest or {}).get("warnings") or []) + list(run.summary.get("warnings") or [])
    return [w for w in dict.fromkeys(map(str, warnings)) if any(k in w.lower() for k in LOSS_WORDS)]


def _throughput(runs: list[RunInfo], ws: int) -> Throughput | None:
    untraced = [r for r in runs if r.tracer == "none" and r.variant != "noddp" and usable_throughput(r)]
    if not untraced:
        return None
    return Throughput(
        source="untraced",
        runs=[r.name for r in untraced],
        samples_per_s=stat([r.summary["samples_per_s"] for r in untraced]),
        step_time_s=stat([r.summary["median_step_time_s"] for r in untraced]),
        global_batch=untraced[0].summary.get("global_batch"),
        device_type=untraced[0].summary.get("device_type"),
    )


def _trace_throughput(traced: Traced, batch: int | None, ws: int) -> Throughput:
    """Throughput from the trace's step times, when no untraced run measured it (bare traces)."""
    st = traced.gpu.step_time_s if traced.gpu else None
    return Throughput(
        source="trace",
        runs=[traced.run],
        step_time_s=st,
        samples_per_s=Stat(median=batch * ws / st.median, n=st.n) if batch and st else None,
        global_batch=batch * ws if batch else None,
    )


def _noddp_throughput(runs: list[RunInfo]) -> NoDdpThroughput | None:
    base = [r for r in runs if r.tracer == "none" and r.variant == "noddp" and usable_throughput(r)]
    if not base:
        return None
    return NoDdpThroughput(runs=[r.name for r in base], samples_per_s=stat([r.summary["samples_per_s"] for r in base]))


def _throughput_rows(runs: list[RunInfo], ws: int) -> list[pd.DataFrame]:
    """One row of ``tables/throughput.csv`` per untraced run that recorded its speed."""
    rows = [
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
        for r in runs
        if r.tracer == "none" and r.summary.get("samples_per_s")
    ]
    return [pd.DataFrame([row]) for row in rows]


def _dilation(traced_run: RunInfo | None, throughput: Throughput | None) -> float | None:
    """The traced run's median step time over the untraced runs' (None without both)."""
    if traced_run is None or not traced_run.ok or throughput is None or throughput.source != "untraced":
        return None
    t = traced_run.summary.get("median_step_time_s")
    u = throughput.step_time_s.median if throughput.step_time_s else None
    return t / u if t and u else None


def _busy_wait(gpu: GpuMetrics | None, bw: dict | None) -> BusyWait | None:
    if not gpu or not bw or not gpu.allreduce_kernel_s:
        return None
    ideal = bw.get("step_allreduce_s")
    measured = gpu.allreduce_kernel_s.median
    if not ideal:
        return None
    return BusyWait(
        allreduce_kernel_s=measured,
        transfer_s_at_measured_busbw=ideal,
        ratio=measured / ideal,
        busbw_GBps=bw.get("busbw_Bps_median", 0) / 1e9,
        gradient_bytes=bw.get("gradient_bytes"),
        buckets=len(bw.get("bucket_bytes", [])),
        note="AllReduce kernel time per step against the time the gradient buckets take alone at the "
        "bus bandwidth measured on the same machine (busbw); a ratio above 1 is kernel time not spent moving bytes",
    )


def _median(s: Stat | None) -> float | None:
    return s.median if s else None


def _baseline_name(runs: list[RunInfo]) -> str:
    """What the efficiency baseline is, named by what ran at world size 1: a run on one GPU (over NCCL) or
    one CPU process (over gloo); "the world-size-1 run" where the runs record no device."""
    devices = {r.device_type for r in runs if r.world_size == 1} - {None}
    if devices == {"cuda"}:
        return "1-GPU run with the DDP wrapper (world size 1 over NCCL)"
    if devices == {"cpu"}:
        return "1-process CPU run with the DDP wrapper (world size 1 over gloo)"
    return "world-size-1 run with the DDP wrapper"


def _efficiency(per_ws: dict[str, WorldSizeEntry], baseline: str) -> None:
    """Weak-scaling efficiency of every world size against the world-size-1 baselines (in place), from
    untraced runs only: a traced step is dilated by the tracer, by a different amount at each
    world size, so traced throughput (``source`` "trace") gives no efficiency. ``baseline`` names
    the world-size-1 run (:func:`_baseline_name`)."""
    one = per_ws.get("1")
    one_tp = _untraced(one.throughput if one else None)
    noddp = one.throughput_noddp if one else None
    base_noddp = _median(noddp.samples_per_s) if noddp else None
    for key, entry in per_ws.items():
        n = int(key)
        tp = _untraced(entry.throughput)
        entry.efficiency = entry.efficiency_vs_noddp = entry.efficiency_spread = None
        entry.efficiency_baseline = baseline
        if tp is None or tp.samples_per_s is None:
            continue
        if one_tp is not None and one_tp.samples_per_s is not None:
            entry.efficiency = tp.samples_per_s.median / (n * one_tp.samples_per_s.median)
            entry.efficiency_spread = _efficiency_spread(tp.samples_per_s, one_tp.samples_per_s, n)
        if base_noddp:
            entry.efficiency_vs_noddp = tp.samples_per_s.median / (n * base_noddp)


def _untraced(tp: Throughput | None) -> Throughput | None:
    return tp if tp is not None and tp.source == "untraced" else None


def _efficiency_spread(tp: Stat, base: Stat, n: int) -> EfficiencySpread | None:
    """The efficiency range the repeats allow: slowest run at N over N x fastest 1-GPU run, and
    fastest over slowest (the 1-GPU entry itself: its own repeats against each other)."""
    if not (tp.min and tp.max and base.min and base.max):
        return None
    return EfficiencySpread(min=tp.min / (n * base.max), max=tp.max / (n * base.min), runs_n=tp.n, baseline_runs_n=base.n)


def _fallbacks(runs: list[RunInfo], bare: list[BareTraces], per_ws: dict[str, WorldSizeEntry]) -> list[dict[str, Any]]:
    """Every fallback the runs took (data, weights, device, ...), once, with the runs that took it;
    traces given without their run folders are one too (what the run records would say is unknown),
    and so is every traced run whose placement is a rehearsal, whether or not its summary listed one."""
    fallbacks: list[dict[str, Any]] = []
    if bare:
        fallbacks.append(
            {
                "kind": "bare_traces",
                "what": "run records",
                "used": "traces without their run folders",
                "reason": "the traces were given bare: the ranks' placement, the run's provenance (machine, model, "
                "data, weights) and untraced throughput runs were not recorded with them",
                "runs": sorted({_bare_run_name(b) for b in bare}),
            }
        )
    for run in runs:  # a run that recorded none of its own: what its sweep imposed on every run
        for f in run.summary.get("fallbacks", []) if run.fallbacks_recorded else run.sweep_fallbacks:
            same = next((x for x in fallbacks if (x["what"], x["used"]) == (f.get("what"), f.get("used"))), None)
            if same:
                same["runs"].append(run.name)
            else:
                fallbacks.append({**f, "runs": [run.name]})
    unrecorded = [r for r in runs if not r.fallbacks_recorded]
    if unrecorded:
        statuses = sorted({str(r.status) for r in unrecorded})
        fallbacks.append(
            {
                "kind": "not_recorded",
                "what": "fallbacks not recorded",
                "used": "unknown",
                "reason": f"the run(s) ended without recording which fallbacks they took (status {', '.join(statuses)}): "
                "device, data, weights or tracer may have fallen back, unknown beyond what the sweep imposed",
                "runs": [r.name for r in unrecorded],
            }
        )
    listed = fallback_runs(fallbacks, "rehearsal")
    placed = [e.traced.run for e in per_ws.values() if e.traced and e.traced.placement and e.traced.placement.rehearsal]
    unlisted = [r for r in placed if r not in listed]
    if unlisted:
        fallbacks.append(
            {
                "kind": "rehearsal",
                "what": "rehearsal",
                "used": "ranks placed on fewer GPUs than a study would give them",
                "reason": "the run records a rehearsal in its placement (its ranks share GPUs or talk over loopback "
                "sockets); its timings are not scaling evidence",
                "runs": unlisted,
            }
        )
    return fallbacks


def label_for(runs: list[RunInfo], bare: list[BareTraces]) -> str:
    prov = next((r.summary.get("provenance") for r in runs if r.summary.get("provenance")), None) or {}
    device = next((r.device_type for r in runs if r.device_type), None)
    sizes = sorted({r.world_size for r in runs} | {b.world_size for b in bare})
    tracers = sorted({r.tracer for r in runs if r.tracer != "none"} | {b.tracer or "not recorded" for b in bare})
    where = f"{prov.get('gpu_name', 'GPU')}" if device == "cuda" else ("CPU (gloo)" if device == "cpu" else "traces")
    failed = ", no run completed" if runs and not bare and not any(r.ok for r in runs) else ""
    return f"{where}, world sizes {', '.join(map(str, sizes))}, tracer {', '.join(tracers) or 'none'}{failed}"


def _provenance(runs: list[RunInfo]) -> dict[str, Any]:
    """The first run's provenance, with the configuration its summary records."""
    for r in runs:
        if r.summary.get("provenance"):
            p = dict(r.summary["provenance"])
            p["from_run"] = r.name
            p.update({k: r.summary[k] for k in PROVENANCE_KEYS if k in r.summary})
            return p
    return {}


def _deviations(runs: list[RunInfo]) -> list[str]:
    """Every run's recorded deviations from the study's set-up, and the DDP bucket hook where a run's DDP bucket
    record names it but its summary, written before runs recorded that deviation, does not say so."""
    out = {d for r in runs for d in r.summary.get("deviations", []) or []}
    buckets = [b for r in runs if isinstance(b := r.summary.get("ddp_buckets"), dict)]
    hooked = any(str(b.get("comm_hook") or "").startswith("ds:bucket") for b in buckets)
    if hooked and not any(d.startswith(BUCKET_HOOK_DEVIATION) for d in out):
        out.add(BUCKET_HOOK_DEVIATION + "; said by the run's DDP bucket record (its summary predates this note)")
    return sorted(out)
