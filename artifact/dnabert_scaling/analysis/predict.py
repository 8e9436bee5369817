"""Predict the multi-GPU scaling from a one-GPU trace (``dnabert-scaling predict``).

Under weak scaling every GPU runs the one-GPU step's compute; what changes with the world size N
is the gradient all-reduce. A world-size-1 DDP trace recorded with the bucket hook
(``dnabert_scaling.buckets``) says when each gradient bucket was handed to its all-reduce and how
many bytes it holds. The model replays the measured steps of that trace on the GPU:

* every compute/copy activity keeps its measured duration and cannot start before it started in
  the one-GPU trace (the host launched it no earlier) nor before the previous activity on its
  stream ended (in-order streams);
* bucket b is ready on the GPU when the last activity launched before its all-reduce call (the
  end of the hook's range: the NCCL stream waits for all work launched before the call, the
  hook's own division kernel included) ends; its all-reduce starts when the bucket is ready and
  the previous all-reduce on the NCCL stream has finished, and lasts ``alpha + 2 (N - 1) / N * bytes / busbw(N, bytes)`` (ring all-reduce; the
  nccl-tests bus-bandwidth convention);
* an activity launched after the step's last bucket hook (the end of backward and the optimizer)
  waits for the step's last all-reduce: DDP makes the compute stream wait for the reduced
  gradients;
* a compute kernel that starts while an all-reduce runs lasts ``contention`` times longer
  (NCCL's kernels take SMs and memory bandwidth from it).

The predicted timeline is then measured with exactly the analysis' own per-step partition
(``partition.rank_step_table``), so predicted and measured figures share one definition: step
time, exposed communication, overlap ratio, AllReduce kernel time; weak-scaling efficiency is the
one-GPU step time over the predicted one. Each figure has a band: the model rerun at the
favourable and at the unfavourable end of the parameter ranges (bus bandwidth, alpha, contention).

Predictions are information, never verdicts: ``check`` judges claims on measurements only.

Bus bandwidth: measured by ``dnabert-scaling busbw`` (``--busbw FILE``, per world size) where it
ran, else the node layout's table below. Sources of the table figures:

* [nccl-tests#149] github.com/NVIDIA/nccl-tests/issues/149: 8x A100-SXM4-80GB over NVLink/NVSwitch,
  all_reduce_perf busbw about 200 GB/s at large sizes.
* [nccl-tests#178] github.com/NVIDIA/nccl-tests/issues/178: A100 pairs over NVLink, busbw 208 GB/s.
* [nccl-tests#119] github.com/NVIDIA/nccl-tests/issues/119: 3 nodes x 8 A100, 4 HDR InfiniBand
  NICs per node (100 GB/s per node in theory): busbw 84.8 GB/s average, 96 GB/s peak, i.e. 85-96%
  of the node's NIC bandwidth. The inter-node rows scale that share to the NICs of each layout.
* [nccl-tests PERFORMANCE.md] busbw = algbw * 2 (n - 1) / n for all_reduce (the ring's traffic).
* H100/H200 NVSwitch (NVLink 4, 900 GB/s per GPU both directions together, NVIDIA's data sheet):
  no measured busbw in these sources; the band 340-480 GB/s is an assumption (about 40-53% of the
  link figure, the share the A100 rows show: 200 of 600 GB/s) and is labelled so in the output.
* PCIe Gen4 x16 (32 GB/s per direction): a ring through PCIe switches and the CPU; band 8-20 GB/s,
  an assumption.
* alpha (per all-reduce latency): an assumed band, 8-30 us inside a node and 15-60 us across
  nodes (nccl-tests' small-message times are of that order on these systems).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import below_cwd

GB = 1e9
US = 1e-6
DEFAULT_GPUS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
GOAL = {"step_time_rel": 0.10, "overlap_ratio_abs": 0.10}
SCHEMA = "dnabert-scaling/predictions/1"
PREDICTED_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL (predicted)"


@dataclass(frozen=True)
class Band:
    """A parameter's value and its range (low <= mid <= high)."""

    mid: float
    low: float
    high: float
    source: str = "assumed"

    @classmethod
    def fixed(cls, value: float, source: str) -> "Band":
        return cls(value, value, value, source)

    def as_dict(self, scale: float = 1.0) -> dict[str, Any]:
        return {"mid": self.mid * scale, "low": self.low * scale, "high": self.high * scale, "source": self.source}


@dataclass(frozen=True)
class NodeLayout:
    name: str
    gpus_per_node: int
    intra_busbw: Band  # bytes/s
    inter_busbw: Band  # bytes/s, ring across nodes
    alpha_intra: Band  # s
    alpha_inter: Band  # s
    description: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "gpus_per_node": self.gpus_per_node,
            "intra_busbw_GBps": self.intra_busbw.as_dict(1 / GB),
            "inter_busbw_GBps": self.inter_busbw.as_dict(1 / GB),
            "alpha_intra_us": self.alpha_intra.as_dict(1 / US),
            "alpha_inter_us": self.alpha_inter.as_dict(1 / US),
        }


def _gb(mid, low, high, source):
    return Band(mid * GB, low * GB, high * GB, source)


def _us(mid, low, high, source="assumed"):
    return Band(mid * US, low * US, high * US, source)


_ALPHA_INTRA = _us(15, 8, 30)
_ALPHA_INTER = _us(30, 15, 60)
NODES: dict[str, NodeLayout] = {
    "a100-nvswitch": NodeLayout(
        "a100-nvswitch",
        8,
        _gb(200, 180, 230, "nccl-tests#149, #178"),
        _gb(180, 170, 192, "8x HDR 200 Gb/s per node at 85-96% (nccl-tests#119)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8x A100 SXM, NVLink 3 / NVSwitch; 8 HDR InfiniBand NICs per node (DGX A100 layout): the study's node",
    ),
    "h100-nvswitch": NodeLayout(
        "h100-nvswitch",
        8,
        _gb(400, 340, 480, "assumed from NVLink 4 (900 GB/s), no measured figure"),
        _gb(360, 340, 384, "8x NDR 400 Gb/s per node at 85-96% (nccl-tests#119 share)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8x H100 SXM, NVLink 4 / NVSwitch; 8 NDR InfiniBand NICs per node",
    ),
    "pcie-gen4": NodeLayout(
        "pcie-gen4",
        8,
        _gb(12, 8, 20, "assumed (PCIe Gen4 x16: 32 GB/s per direction)"),
        _gb(85, 80, 96, "4x HDR 200 Gb/s per node (nccl-tests#119)"),
        _ALPHA_INTRA,
        _ALPHA_INTER,
        "8 GPUs on PCIe Gen4 without NVLink; 4 HDR InfiniBand NICs per node",
    ),
}
NODES["h200-nvswitch"] = replace(
    NODES["h100-nvswitch"],
    name="h200-nvswitch",
    description="8x H200 SXM (same NVLink 4 / NVSwitch as H100); 8 NDR InfiniBand NICs per node",
)
DEFAULT_NODE = "a100-nvswitch"
DEFAULT_CONTENTION = Band(1.05, 1.0, 1.15, "assumed default (no multi-GPU trace to measure it from)")


# --- what the one-GPU trace holds --------------------------------------------------------------


@dataclass
class Profile:
    """The measured steps of one world-size-1 rank, as the model needs them (ns, trace clock)."""

    start: np.ndarray  # per activity: one-GPU start (also its release time)
    dur: np.ndarray  # per activity: duration
    stream: np.ndarray
    step: np.ndarray  # measured step index
    phase: np.ndarray  # attribution phase code
    kernel: np.ndarray  # bool: a compute kernel (contention applies)
    after_buckets: np.ndarray  # bool: launched after the step's last bucket hook (waits for the all-reduce)
    bucket_step: np.ndarray  # per bucket: step
    bucket_index: np.ndarray  # per bucket: DDP bucket index
    bucket_bytes: np.ndarray  # per bucket: bytes
    bucket_ready: np.ndarray  # per bucket: activity (row of the arrays above) whose end makes it ready
    steps: int
    info: dict[str, Any] = field(default_factory=dict)


def launch_times(gpu: pd.DataFrame, host: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Host time of the call that launched each GPU activity (-1 where unknown), and the method."""
    from dnabert_scaling.traces.classify import is_launch_api

    out = np.full(len(gpu), -1, dtype=np.int64)
    launches = host[host["kind"] == "launch"]
    corr = gpu["correlation"]
    if corr.notna().any():
        lc = launches[launches["correlation"].notna()]
        table = dict(zip(lc["correlation"].to_numpy(np.int64), lc["start_ns"].to_numpy(np.int64)))
        gc = corr.to_numpy(dtype=np.int64, na_value=-1)
        out = np.array([table.get(int(c), -1) for c in gc], dtype=np.int64)
        return out, "correlation"
    lk = launches[launches["stream"].notna()]
    lk = lk[[is_launch_api(n) for n in lk["name"].astype(str)]]
    kernels = (gpu["kind"] == "kernel").to_numpy()
    gstream, gstart = gpu["stream"].to_numpy(np.int64), gpu["start_ns"].to_numpy(np.int64)
    lstream, lstart = lk["stream"].to_numpy(dtype=np.int64, na_value=-1), lk["start_ns"].to_numpy(np.int64)
    for s in np.unique(gstream[kernels]):
        rows = np.flatnonzero(kernels & (gstream == s))
        rows = rows[np.argsort(gstart[rows], kind="stable")]
        lt = np.sort(lstart[lstream == s])
        if len(lt) == len(rows):
            out[rows] = lt
    return out, "stream-order"


def profile_from_trace(trace) -> Profile:
    """The model's inputs from a world-size-1 trace (``Trace`` with one rank)."""
    from dnabert_scaling.analysis.attribution import HostTimeline, attribute
    from dnabert_scaling.traces.classify import bucket_args

    if len(trace.rank_ids) != 1:
        raise ArtifactError(
            f"predict needs a world-size-1 trace (one rank); this one has ranks {list(trace.rank_ids)}",
            trace.ranks[trace.rank_ids[0]].get("source"),
        )
    r = trace.rank_ids[0]
    meta = trace.ranks[r]
    world = meta.get("world_size")
    if world not in (None, 1):
        raise ArtifactError(f"predict needs a world-size-1 trace; this rank belongs to world size {world}", meta.get("source"))
    sub = trace.rank(r)
    gpu, host = sub.gpu.reset_index(drop=True), sub.host.reset_index(drop=True)
    tl = HostTimeline.from_host(host)
    if tl.steps == 0:
        raise ArtifactError("the trace marks no measured step (no ds:step range)", meta.get("source"))
    att = attribute(gpu, host, tl)
    names = host["name"].astype(str).to_numpy()
    is_bucket = (host["kind"] == "phase").to_numpy() & np.array([bucket_args(n) is not None for n in names], bool)
    if not is_bucket.any():
        raise ArtifactError(
            "the trace has no ds:bucket ranges, so bucket readiness is unknown: record the "
            "world-size-1 run with DDP and the bucket hook (train --bucket-hook on, the default)",
            meta.get("source"),
        )
    launch, method = launch_times(gpu, host)
    cat = gpu["category"].astype(str).to_numpy()
    keep = (att.step >= 0) & (cat != "nccl")
    notes: list[str] = []
    if (cat == "nccl").any():
        notes.append(f"{int((cat == 'nccl').sum())} NCCL activities in the one-GPU trace are left out (the model places its own)")
    unknown = keep & (launch < 0)
    if unknown.any():
        notes.append(
            f"{int(unknown.sum())} activities without a paired launch call: their GPU start stands in "
            "for the launch time (bucket readiness and the end-of-backward wait are approximate there)"
        )
        launch = np.where(launch < 0, gpu["start_ns"].to_numpy(np.int64), launch)
        method = f"{method} + GPU start where unpaired"
    rows = _replayed_rows(gpu, att)
    start = gpu["start_ns"].to_numpy(np.int64)[rows]
    dur = gpu["end_ns"].to_numpy(np.int64)[rows] - start
    step = att.step[rows].astype(np.int64)
    lt = launch[rows]
    bh = host[is_bucket]
    b_start, b_end = bh["start_ns"].to_numpy(np.int64), bh["end_ns"].to_numpy(np.int64)
    b_step = tl.step_of(b_start)
    args = [bucket_args(n) for n in bh["name"].astype(str)]
    b_index = np.array([a[0] for a in args], np.int64)
    b_bytes = np.array([a[1] for a in args], np.int64)
    inside = b_step >= 0
    b_start, b_end, b_step, b_index, b_bytes = (x[inside] for x in (b_start, b_end, b_step, b_index, b_bytes))
    order = np.lexsort((b_start, b_step))
    b_start, b_end, b_step, b_index, b_bytes = (x[order] for x in (b_start, b_end, b_step, b_index, b_bytes))
    ready = np.full(len(b_start), -1, np.int64)
    after = np.zeros(len(rows), bool)
    missing_steps = []
    for k in range(tl.steps):
        acts = np.flatnonzero(step == k)
        bs = np.flatnonzero(b_step == k)
        if len(bs) == 0:
            missing_steps.append(k)
            continue
        if len(acts) == 0:
            continue
        for b in bs:
            # NCCL's stream waits for everything launched before the all-reduce call, which
            # ends the hook's range (the hook's own division kernel included)
            before = acts[lt[acts] < b_end[b]]
            ready[b] = before[np.argmax(lt[before])] if len(before) else acts[0]
        after[acts] = lt[acts] >= b_end[bs].max()
    if missing_steps:
        notes.append(
            f"{len(missing_steps)} measured steps without ds:bucket ranges (steps {missing_steps[:5]}...): they get no all-reduce"
        )
    ok = ready >= 0
    info = {
        "source": str(below_cwd(meta.get("source"))) if meta.get("source") else None,
        "format": meta.get("format"),
        "tool": meta.get("tool"),
        "measured_steps": int(tl.steps),
        "activities_per_step": float(len(rows) / max(1, tl.steps)),
        "buckets_per_step": float(ok.sum() / max(1, tl.steps)),
        "bucket_bytes": [int(x) for x in b_bytes[ok & (b_step == b_step[ok].min())]] if ok.any() else [],
        "readiness_method": method,
        "notes": notes,
    }
    info["gradient_bytes"] = int(sum(info["bucket_bytes"]))
    return Profile(
        start,
        dur,
        gpu["stream"].to_numpy(np.int64)[rows],
        step,
        att.phase[rows].astype(np.int8),
        (cat[rows] == "compute") & (gpu["kind"].astype(str).to_numpy()[rows] == "kernel"),
        after,
        b_step[ok],
        b_index[ok],
        b_bytes[ok],
        ready[ok],
        tl.steps,
        info,
    )


# --- the model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommModel:
    """All-reduce time of one bucket at one world size: alpha + 2(N-1)/N * bytes / busbw(bytes)."""

    world_size: int
    alpha_s: float
    busbw_Bps: float | None = None  # one figure for every size
    table: tuple[tuple[int, float], ...] = ()  # measured (bytes, busbw) rows, interpolated in log bytes

    def busbw(self, nbytes: int) -> float:
        if not self.table:
            return float(self.busbw_Bps)
        xs = np.log([max(1, b) for b, _ in self.table])
        ys = np.array([bw for _, bw in self.table])
        return float(np.interp(math.log(max(1, nbytes)), xs, ys))

    def seconds(self, nbytes: int) -> float:
        n = self.world_size
        if n <= 1:
            return 0.0
        return self.alpha_s + 2 * (n - 1) / n * nbytes / self.busbw(nbytes)


def simulate(p: Profile, comm: CommModel, contention: float) -> tuple[pd.DataFrame, Any]:
    """The predicted GPU table of the measured steps and its attribution (see the module docstring)."""
    from dnabert_scaling.analysis.attribution import Attribution
    from dnabert_scaling.traces.model import GPU_SCHEMA, make_frame

    n = len(p.start)
    s_out = np.empty(n, np.int64)
    e_out = np.empty(n, np.int64)
    stream_free: dict[int, int] = {}
    comm_free = np.iinfo(np.int64).min
    comm_s: list[int] = []
    comm_e: list[int] = []
    b_rows: list[int] = []
    ready_of: dict[int, list[int]] = {}
    for b, row in enumerate(p.bucket_ready):
        ready_of.setdefault(int(row), []).append(b)
    step_comm_end: dict[int, int] = {}
    for i in range(n):
        st = int(p.stream[i])
        s = max(int(p.start[i]), stream_free.get(st, np.iinfo(np.int64).min))
        if p.after_buckets[i]:
            s = max(s, step_comm_end.get(int(p.step[i]), s))
        d = int(p.dur[i])
        if p.kernel[i] and comm_s and contention != 1.0:
            j = bisect.bisect_right(comm_s, s) - 1
            if j >= 0 and s < comm_e[j]:
                d = int(round(d * contention))
        s_out[i], e_out[i] = s, s + d
        stream_free[st] = s + d
        for b in ready_of.get(i, ()):
            cs = max(s + d, comm_free)
            ce = cs + int(round(comm.seconds(int(p.bucket_bytes[b])) * 1e9))
            if ce > cs:
                comm_s.append(cs)
                comm_e.append(ce)
                b_rows.append(b)
            comm_free = max(comm_free, ce)
            k = int(p.bucket_step[b])
            step_comm_end[k] = max(step_comm_end.get(k, ce), ce)
    nb = len(comm_s)
    nccl_stream = int(p.stream.max()) + 1 if n else 1
    kinds = ["kernel" if k else "memcpy" for k in p.kernel] + ["kernel"] * nb
    cats = ["compute" if k else "memory" for k in p.kernel] + ["nccl"] * nb
    names = ["activity"] * n + [PREDICTED_KERNEL] * nb
    coll = [np.nan] * n + ["AllReduce"] * nb
    msg = np.concatenate([np.zeros(n, np.int64), p.bucket_bytes[b_rows].astype(np.int64) if nb else np.zeros(0, np.int64)])
    gpu = make_frame(
        {
            "rank": 0,
            "device": 0,
            "stream": np.concatenate([p.stream, np.full(nb, nccl_stream, np.int64)]),
            "kind": kinds,
            "name": names,
            "start_ns": np.concatenate([s_out, np.array(comm_s, np.int64)]),
            "end_ns": np.concatenate([e_out, np.array(comm_e, np.int64)]),
            "category": cats,
            "collective": coll,
            "msg_bytes": (msg, np.r_[np.ones(n, bool), np.zeros(nb, bool)]),
            "correlation": (np.zeros(n + nb, np.int64), np.ones(n + nb, bool)),
        },
        GPU_SCHEMA,
    )
    # Copies and memsets are "memcpy" here: the partition uses their category, not their kind.
    step = np.concatenate([p.step, p.bucket_step[b_rows].astype(np.int64) if nb else np.zeros(0, np.int64)])
    phase = np.concatenate([p.phase, np.full(nb, 1, np.int8)])  # all-reduce: launched during backward
    return gpu, Attribution(step, phase.astype(np.int8), np.full(n + nb, "predicted", dtype=object))


def step_figures(p: Profile, comm: CommModel, contention: float) -> pd.DataFrame:
    """Per measured step: the analysis' partition of the predicted timeline."""
    from dnabert_scaling.analysis import partition

    gpu, att = simulate(p, comm, contention)
    windows = partition.step_windows(gpu, att, p.steps)
    return partition.rank_step_table(gpu, att, windows)


FIGURES = (
    "step_time_s",
    "exposed_comm_s",
    "exposed_comm_share",
    "overlap_ratio",
    "allreduce_kernel_s",
    "allreduce_share",
    "allreduce_to_backward",
)


def _median(values) -> float | None:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    return float(np.median(arr)) if arr.size else None


def _medians(table: pd.DataFrame) -> dict[str, float | None]:
    return {k: _median(table[k]) for k in FIGURES}


def comm_models(n: int, layout: NodeLayout, measured_busbw: dict[int, dict]) -> tuple[dict[str, CommModel], dict[str, Any]]:
    """The all-reduce model at world size n: mid / favourable / unfavourable, and what it used."""
    if n in measured_busbw:
        bw = measured_busbw[n]
        rows = tuple(sorted((int(r["bytes"]), float(r["busbw_Bps"])) for r in bw["sizes"]))
        m = CommModel(n, 0.0, table=rows)
        return {"mid": m, "low": m, "high": m}, {
            "busbw": "measured",
            "busbw_source": bw.get("_path"),
            "alpha_us": 0.0,
            "busbw_GBps_by_bytes": [[b, v / GB] for b, v in rows],
        }
    nodes = math.ceil(n / layout.gpus_per_node)
    bw = (
        layout.intra_busbw
        if nodes == 1
        else Band(
            min(layout.intra_busbw.mid, layout.inter_busbw.mid),
            min(layout.intra_busbw.low, layout.inter_busbw.low),
            min(layout.intra_busbw.high, layout.inter_busbw.high),
            layout.inter_busbw.source,
        )
    )
    alpha = layout.alpha_intra if nodes == 1 else layout.alpha_inter
    models = {
        "mid": CommModel(n, alpha.mid, bw.mid),
        "low": CommModel(n, alpha.low, bw.high),
        "high": CommModel(n, alpha.high, bw.low),
    }
    return models, {"busbw": "table", "nodes": nodes, "busbw_GBps": bw.as_dict(1 / GB), "alpha_us": alpha.as_dict(1 / US)}


def predict(
    p: Profile, gpus: list[int], layout: NodeLayout, contention: Band, measured_busbw: dict[int, dict] | None = None
) -> dict[str, Any]:
    """Predictions per world size with bands; ``low``/``high`` are the favourable/unfavourable runs."""
    base = step_figures(p, CommModel(1, 0.0, 1.0), 1.0)
    t1 = _median(base["step_time_s"])
    out: dict[str, Any] = {}
    for n in gpus:
        models, used = comm_models(n, layout, measured_busbw or {})
        runs = {
            "mid": _medians(step_figures(p, models["mid"], contention.mid)),
            "low": _medians(step_figures(p, models["low"], contention.low)),
            "high": _medians(step_figures(p, models["high"], contention.high)),
        }
        entry: dict[str, Any] = {"world_size": n, **used}
        for k in FIGURES:
            vals = [runs[c][k] for c in ("mid", "low", "high")]
            known = [v for v in vals if v is not None]
            entry[k] = {"mid": vals[0], "low": min(known) if known else None, "high": max(known) if known else None}
        st = entry["step_time_s"]
        entry["efficiency"] = {
            key: (t1 / st[src] if t1 and st[src] else None) for key, src in (("mid", "mid"), ("low", "high"), ("high", "low"))
        }
        entry["bucket_allreduce_s"] = [models["mid"].seconds(int(b)) for b in p.info["bucket_bytes"]]
        out[str(n)] = entry
    return {"baseline": {"world_size": 1, "step_time_s": t1, "figures": _medians(base)}, "world_sizes": out}


# --- measured figures to compare with ---------------------------------------------------------


def measured_from_metrics(metrics: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Measured per world size (> 1) from a metrics.json: the medians the prediction is judged by."""
    out: dict[int, dict[str, Any]] = {}
    for key, entry in (metrics.get("world_sizes") or {}).items():
        gpu = ((entry or {}).get("traced") or {}).get("gpu")
        if not gpu or int(key) < 2:
            continue
        out[int(key)] = {k: (gpu.get(k) or {}).get("median") for k in FIGURES} | {"source": "metrics.json"}
    return out


def _replayed_rows(gpu: pd.DataFrame, att) -> np.ndarray:
    """Rows of the activities the model replays (measured steps, not NCCL), in replay order."""
    cat = gpu["category"].astype(str).to_numpy()
    rows = np.flatnonzero((att.step >= 0) & (cat != "nccl"))
    return rows[np.lexsort((gpu["start_ns"].to_numpy(np.int64)[rows], att.step[rows]))]


def measured_from_trace(path: Path, profile: Profile) -> tuple[int, dict[str, Any]]:
    """Measured figures of a multi-rank trace (a run folder's traces or trace files), analysed now,
    and the contention factor it shows against the one-GPU trace."""
    from dnabert_scaling.analysis.metrics import analyze_trace
    from dnabert_scaling.analysis.runs import is_run_dir, load_run, trace_paths
    from dnabert_scaling.traces import read_run_traces

    path = Path(path)
    if not path.exists():
        raise ArtifactError("--measured: does not exist", path)
    trace = read_run_traces(trace_paths(load_run(path)) if is_run_dir(path) else path)
    n = len(trace.rank_ids)
    if n < 2:
        raise ArtifactError("--measured needs a multi-rank trace; this one has one rank", path)
    res = analyze_trace(trace, n, None, str(path))
    gpu = res.metrics
    return n, {k: (gpu.get(k) or {}).get("median") for k in FIGURES} | {
        "source": str(path),
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


# --- sources ----------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"cannot read JSON: {exc}", path) from None
    if not isinstance(data, dict):
        raise ArtifactError("expected a JSON object", path)
    return data


def _run_from_results(results: Path, metrics: dict[str, Any], ws: int) -> Path | None:
    """The traced run of world size ``ws`` that metrics.json was built from (under one of its
    sources, relative to the working folder or to the results folder), or None."""
    traced = ((metrics.get("world_sizes") or {}).get(str(ws)) or {}).get("traced") or {}
    name = traced.get("run")
    if not name:
        return None
    for src in metrics.get("sources") or []:
        for base in (Path.cwd(), results.parent, results):
            for d in (base / src / name, base / src):
                if d.name == name and (d / "traces").is_dir():
                    return d
    return None


def load_source(path: Path) -> tuple[Any, dict[int, dict[str, Any]], dict[str, Any]]:
    """(one-GPU trace, measured figures found with it, description) for a results folder, a run
    folder or trace paths."""
    from dnabert_scaling.analysis.runs import is_run_dir, load_run, trace_paths
    from dnabert_scaling.traces import read_run_traces

    path = Path(path)
    if not path.exists():
        raise ArtifactError("does not exist", path)
    measured: dict[int, dict[str, Any]] = {}
    desc: dict[str, Any] = {"given": str(path)}
    if path.is_dir() and (path / "metrics.json").is_file():
        metrics = _read_json(path / "metrics.json")
        measured = measured_from_metrics(metrics)
        for n, m in measured.items():
            m["run"] = _run_from_results(path, metrics, n)
        run1 = _run_from_results(path, metrics, 1)
        if run1 is None:
            raise ArtifactError(
                "cannot find the traced world-size-1 run that metrics.json names under its sources "
                f"{metrics.get('sources')}; give that run folder or its traces instead",
                path / "metrics.json",
            )
        path = run1
        desc["results"] = desc["given"]
    if path.is_dir() and is_run_dir(path) and (path / "traces").is_dir():
        run = load_run(path)
        if run.world_size != 1:
            raise ArtifactError(f"this run has world size {run.world_size}; predict starts from a world-size-1 run", path)
        paths = trace_paths(run)
        if not paths:
            raise ArtifactError("the run has no traces (traces/rank*.json.gz or traces/scorep-rank*/)", path)
        desc["run"] = str(below_cwd(path))
        desc["ddp_buckets"] = run.summary.get("ddp_buckets")
        desc["ddp"] = run.summary.get("ddp")
        if run.summary.get("ddp") is False:
            raise ArtifactError("this run ran without DDP (--no-ddp): it has no buckets to predict from", path)
        trace = read_run_traces(paths, world_size=1)
    else:
        trace = read_run_traces(path)
    return trace, measured, desc


def _parse_band(text: str, what: str) -> Band:
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise ArtifactError(f"{what}: expected MID or MID,LOW,HIGH numbers, not {text!r}") from None
    if len(vals) == 1:
        vals = vals * 3
    if len(vals) != 3 or not (vals[1] <= vals[0] <= vals[2]) or vals[1] <= 0:
        raise ArtifactError(f"{what}: expected positive MID or MID,LOW,HIGH with LOW <= MID <= HIGH, not {text!r}")
    return Band(vals[0], vals[1], vals[2], "given")


def _parse_gpus(text: str) -> list[int]:
    try:
        vals = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ArtifactError(f"--gpus must be a comma-separated list of integers, not {text!r}") from None
    if not vals or min(vals) < 2:
        raise ArtifactError(f"--gpus: world sizes must be at least 2, got {text!r}")
    return vals


def layout_from_args(args) -> NodeLayout:
    if args.node not in NODES:
        raise ArtifactError(f"--node {args.node!r}: unknown layout; known: {', '.join(NODES)}")
    lay = NODES[args.node]
    changes: dict[str, Any] = {}
    if args.gpus_per_node is not None:
        if args.gpus_per_node < 1:
            raise ArtifactError("--gpus-per-node must be at least 1")
        changes["gpus_per_node"] = args.gpus_per_node
    for opt, attr, scale in (
        ("intra_busbw", "intra_busbw", GB),
        ("inter_busbw", "inter_busbw", GB),
        ("alpha_us", "alpha_intra", US),
        ("alpha_us", "alpha_inter", US),
    ):
        text = getattr(args, opt)
        if text is not None:
            b = _parse_band(text, "--" + opt.replace("_", "-"))
            changes[attr] = Band(b.mid * scale, b.low * scale, b.high * scale, "given")
    if not changes:
        return lay
    return replace(lay, **changes, name=lay.name + " (changed by options)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "source",
        type=Path,
        metavar="RESULTS_OR_TRACE",
        help="a results folder (metrics.json; its world-size-1 run is found under its sources), "
        "a world-size-1 run folder, or one world-size-1 trace (Kineto .json[.gz] or OTF2)",
    )
    p.add_argument("--gpus", default=",".join(str(g) for g in DEFAULT_GPUS), help="world sizes to predict")
    p.add_argument("--node", default=DEFAULT_NODE, help=f"node layout: {', '.join(NODES)}")
    p.add_argument("--gpus-per-node", type=int, default=None, help="override the layout's GPUs per node")
    p.add_argument("--intra-busbw", default=None, metavar="GBPS[,LOW,HIGH]", help="override intra-node busbw (GB/s)")
    p.add_argument("--inter-busbw", default=None, metavar="GBPS[,LOW,HIGH]", help="override inter-node busbw (GB/s)")
    p.add_argument("--alpha-us", default=None, metavar="US[,LOW,HIGH]", help="override the all-reduce latency (us)")
    p.add_argument(
        "--busbw",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a 'dnabert-scaling busbw' JSON; used for its world size instead of the table (repeatable)",
    )
    p.add_argument(
        "--contention",
        default=None,
        metavar="X[,LOW,HIGH]",
        help=f"slow-down of compute kernels that start during an all-reduce (default {DEFAULT_CONTENTION.mid}, "
        f"band {DEFAULT_CONTENTION.low}-{DEFAULT_CONTENTION.high}, or measured from --measured traces)",
    )
    p.add_argument(
        "--measured",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="a multi-rank trace or run folder to compare with (repeatable)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="predictions.json to write (default: inside the results folder, else ./predictions.json)",
    )


def run(args: argparse.Namespace) -> int:
    gpus = _parse_gpus(args.gpus)
    layout = layout_from_args(args)
    busbw: dict[int, dict] = {}
    for f in args.busbw:
        data = _read_json(f)
        if not isinstance(data.get("world_size"), int) or not isinstance(data.get("sizes"), list) or not data["sizes"]:
            raise ArtifactError("not a busbw result (needs world_size and sizes)", f)
        if any(not isinstance(r, dict) or not r.get("bytes") or not r.get("busbw_Bps") for r in data["sizes"]):
            raise ArtifactError("busbw sizes need positive bytes and busbw_Bps", f)
        busbw[data["world_size"]] = {**data, "_path": str(f)}
    trace, measured, desc = load_source(args.source)
    profile = profile_from_trace(trace)
    fallbacks: list[dict[str, str]] = []
    for m in measured.values():  # a results folder's multi-GPU runs: their contention
        run_dir = m.pop("run", None)
        if run_dir is not None:
            from dnabert_scaling.analysis.runs import load_run, trace_paths
            from dnabert_scaling.traces import read_run_traces

            m["contention"] = contention_from_trace(read_run_traces(trace_paths(load_run(run_dir))), profile)
    for m in args.measured:
        n, figures = measured_from_trace(m, profile)
        measured[n] = figures
    if args.contention is not None:
        contention = _parse_band(args.contention, "--contention")
    else:
        seen = [m["contention"] for m in measured.values() if m.get("contention")]
        if seen:
            # band: the spread of the traces, widened by 2% (one trace says little about its own noise)
            contention = Band(
                float(np.median(seen)),
                min(seen) * 0.98,
                max(seen) * 1.02,
                f"measured: median of {len(seen)} multi-GPU traces against the one-GPU trace",
            )
        else:
            contention = DEFAULT_CONTENTION
            fallbacks.append(
                {
                    "what": "contention",
                    "used": f"default {contention.mid} (band {contention.low}-{contention.high})",
                    "why": "no multi-GPU trace to measure it from",
                }
            )
    missing_bw = [n for n in gpus if n not in busbw]
    if missing_bw:
        fallbacks.append(
            {
                "what": "busbw",
                "used": f"table of node layout {layout.name}",
                "why": f"no measured busbw for world sizes {missing_bw}",
            }
        )
    result = predict(profile, gpus, layout, contention, busbw)
    out = {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "predictions, never verdicts: claims are judged on measurements only",
        "source": {**desc, **profile.info},
        "model": {
            "all_reduce": "alpha + 2(N-1)/N * bytes / busbw(N, bytes), buckets in order on one NCCL stream",
            "node": layout.as_dict(),
            "contention": contention.as_dict(),
            "band": "low/high: the model at the favourable/unfavourable end of busbw, alpha and contention",
        },
        "baseline": result["baseline"],
        "world_sizes": result["world_sizes"],
        "comparison": compare(result, measured),
        "goal": GOAL,
        "fallbacks": fallbacks,
    }
    target = args.out
    if target is None:
        given = Path(args.source)
        target = (
            given / "predictions.json" if (given.is_dir() and (given / "metrics.json").is_file()) else Path("predictions.json")
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    from dnabert_scaling.analysis.cli import _json_default

    target.write_text(json.dumps(out, indent=2, default=_json_default) + "\n")
    print(format_summary(out))
    print(f"wrote {target}")
    return 0


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def _num(x, digits: int, sign: bool = False) -> str:
    return "-" if x is None else f"{x:{'+' if sign else ''}.{digits}f}"


def format_summary(out: dict[str, Any]) -> str:
    lines = [
        f"prediction from {out['source'].get('source')} ({out['source'].get('buckets_per_step'):.0f} buckets, "
        f"{out['source'].get('gradient_bytes', 0) / 2**20:.1f} MiB per step); node {out['model']['node']['name']}",
        f"  N=1 (measured): step {_ms(out['baseline']['step_time_s'])} ms",
        "     N   step ms [band]            exposed comm ms   overlap   AllReduce ms   efficiency",
    ]
    for key, e in out["world_sizes"].items():
        st, ov, eff = e["step_time_s"], e["overlap_ratio"]["mid"], e["efficiency"]["mid"]
        lines.append(
            f"  {int(key):>4}   {_ms(st['mid']):>7} [{_ms(st['low'])}, {_ms(st['high'])}]"
            f"   {_ms(e['exposed_comm_s']['mid']):>12}   {_num(ov, 2):>7}   "
            f"{_ms(e['allreduce_kernel_s']['mid']):>12}   {_num(eff, 3):>10}"
        )
    for key, c in out["comparison"].items():
        err = c.get("error") or {}
        if "step_time_rel" in err:
            ov = err.get("overlap_ratio_abs")
            lines.append(
                f"  measured N={key}: step {_ms(c['measured'].get('step_time_s'))} ms, predicted "
                f"{_ms(c['predicted']['step_time_s'])} ms (error {100 * err['step_time_rel']:+.1f}%), overlap error "
                f"{_num(ov, 3, sign=True)}; within goal: {c.get('within_goal')}"
            )
    for f in out["fallbacks"]:
        lines.append(f"  fallback: {f['what']}: {f['used']} ({f['why']})")
    return "\n".join(lines)
