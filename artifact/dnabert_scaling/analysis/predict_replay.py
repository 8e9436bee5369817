"""The replay of a one-GPU trace's measured steps at world size N (``dnabert-scaling predict``).

What the one-GPU trace holds (``Profile``), the all-reduce model (``CommModel``), the replay
(``simulate``), its figures measured with the analysis' own step partition, and the bands over the
node layout's parameter ranges (``predict``). The model is described in ``analysis.predict``.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dnabert_scaling.analysis.predict_layouts import BUCKET_BYTES, GB, US, Band, NodeLayout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import below_cwd

PREDICTED_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL (predicted)"


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


def profile_from_trace(trace, run_buckets: dict | None = None) -> Profile:
    """The model's inputs from a world-size-1 trace (``Trace`` with one rank); ``run_buckets``: the run's own
    record of its DDP buckets (its summary's ``ddp_buckets``), which the trace's bucket marks must match."""
    from dnabert_scaling.analysis.attribution import HostTimeline, attribute

    meta, gpu, host = _the_one_rank(trace)
    tl = HostTimeline.from_host(host)
    if tl.steps == 0:
        raise ArtifactError("the trace marks no measured step (no ds:step range)", meta.get("source"))
    att = attribute(gpu, host, tl)
    is_bucket = _bucket_hook_rows(host, meta)
    cat = gpu["category"].astype(str).to_numpy()
    notes: list[str] = list(tl.problems)
    launch, method = _launch_times_for_replay(gpu, host, (att.step >= 0) & (cat != "nccl"), notes)
    rows = _replayed_rows(gpu, att)
    start = gpu["start_ns"].to_numpy(np.int64)[rows]
    step = att.step[rows].astype(np.int64)
    buckets = _MeasuredBuckets.from_hook_ranges(host[is_bucket], tl, meta.get("source"), run_buckets)
    ready, after = _bucket_readiness(step, launch[rows], buckets, tl.steps)
    ok = ready >= 0
    return Profile(
        start,
        gpu["end_ns"].to_numpy(np.int64)[rows] - start,
        gpu["stream"].to_numpy(np.int64)[rows],
        step,
        att.phase[rows].astype(np.int8),
        (cat[rows] == "compute") & (gpu["kind"].astype(str).to_numpy()[rows] == "kernel"),
        after,
        buckets.step[ok],
        buckets.index[ok],
        buckets.nbytes[ok],
        ready[ok],
        tl.steps,
        _profile_info(meta, tl.steps, len(rows), buckets, ok, method, notes),
    )


def _the_one_rank(trace) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The rank's metadata and its GPU and host tables; refuses more than one rank, or a rank of a larger world."""
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
    return meta, sub.gpu.reset_index(drop=True), sub.host.reset_index(drop=True)


def _bucket_hook_rows(host: pd.DataFrame, meta: dict) -> np.ndarray:
    """Which host rows are the bucket hook's ``ds:bucket`` ranges; refuses a trace without any."""
    from dnabert_scaling.traces.classify import bucket_args

    names = host["name"].astype(str).to_numpy()
    is_bucket = (host["kind"] == "phase").to_numpy() & np.array([bucket_args(n) is not None for n in names], bool)
    if not is_bucket.any():
        raise ArtifactError(
            "the trace has no ds:bucket ranges, so bucket readiness is unknown: record the "
            "world-size-1 run with DDP and the bucket hook (train --bucket-hook on, the default)",
            meta.get("source"),
        )
    return is_bucket


def _launch_times_for_replay(gpu: pd.DataFrame, host: pd.DataFrame, keep: np.ndarray, notes: list[str]) -> tuple[np.ndarray, str]:
    """Host launch time of every GPU activity, and the method. Where a replayed activity (``keep``)
    has no paired launch call, every unpaired activity gets its GPU start instead; notes that, and
    the NCCL activities left out."""
    launch, method = launch_times(gpu, host)
    cat = gpu["category"].astype(str).to_numpy()
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
    return launch, method


@dataclass
class _MeasuredBuckets:
    """The bucket hook's ranges inside measured steps, ordered by step, then start (one entry each)."""

    end: np.ndarray  # host time the hook's range ends (its all-reduce call)
    step: np.ndarray
    index: np.ndarray  # DDP bucket index
    nbytes: np.ndarray

    @classmethod
    def from_hook_ranges(cls, bh: pd.DataFrame, tl, source=None, run_buckets: dict | None = None) -> _MeasuredBuckets:
        """The hook's ranges inside measured steps; refused (naming ``source``) where a measured step holds none, where
        steps hand unlike buckets, or where they are not ``run_buckets`` (the run's summary's record), where given."""
        from dnabert_scaling.traces.classify import bucket_args

        b_start, b_end = bh["start_ns"].to_numpy(np.int64), bh["end_ns"].to_numpy(np.int64)
        b_step = tl.step_of(b_start)
        names = list(bh["name"].astype(str))
        args = [bucket_args(n) for n in names]
        for name, (index, nbytes) in zip(names, args, strict=True):  # as --busbw's sizes: before numpy holds them
            if not (index < 1 << 31 and BUCKET_BYTES[0] <= nbytes <= BUCKET_BYTES[1]):
                raise ArtifactError(
                    f"the trace's bucket range {name[:80]!r}: its index must be below 2**31 and its size a whole number "
                    f"of bytes from {BUCKET_BYTES[0]} to {BUCKET_BYTES[1]:,} (1 TiB)"
                )
        b_index = np.array([a[0] for a in args], np.int64)
        b_bytes = np.array([a[1] for a in args], np.int64)
        inside = b_step >= 0
        b_start, b_end, b_step, b_index, b_bytes = (x[inside] for x in (b_start, b_end, b_step, b_index, b_bytes))
        order = np.lexsort((b_start, b_step))
        out = cls(b_end[order], b_step[order], b_index[order], b_bytes[order])
        out.refuse_unlike_steps(source)
        out.refuse_steps_without(tl.steps, source)
        out.refuse_unlike_run(run_buckets, source)
        return out

    def step_buckets(self, k) -> tuple[tuple[int, int], ...]:
        """Measured step ``k``'s buckets as (index, bytes) pairs, by index."""
        mine = self.step == k
        return tuple(sorted(zip(self.index[mine].tolist(), self.nbytes[mine].tolist())))

    def refuse_unlike_steps(self, source) -> None:
        """DDP hands the same buckets to all-reduce in every step once it has built them: a measured step holding
        one bucket twice, or other buckets (or sizes) than another, is no step of one run; refused, naming both."""
        first: tuple | None = None
        for k in np.unique(self.step):
            pairs = self.step_buckets(k)
            indices = [i for i, _ in pairs]
            if len(set(indices)) != len(indices):
                twice = next(i for i in indices if indices.count(i) > 1)
                raise ArtifactError(f"measured step {k} of the trace hands bucket {twice} to all-reduce twice", source)
            if first is None:
                first = (k, pairs)
                if indices != list(range(len(indices))):  # a mark the reader could not read is missing from every step
                    gone = min(set(range(max(indices) + 1)) - set(indices))
                    raise ArtifactError(
                        f"measured step {k} of the trace hands DDP buckets {indices[:6]}{'...' if len(indices) > 6 else ''} "
                        f"to all-reduce, without bucket {gone}: DDP numbers its buckets from 0, so a bucket mark "
                        "(ds:bucket:<index>:<bytes>) is missing or does not read, and its all-reduce would be left out",
                        source,
                    )
            elif pairs != first[1]:
                raise ArtifactError(
                    f"measured step {k} of the trace hands other buckets to all-reduce than step {first[0]} "
                    f"({_shown_buckets(pairs)} against {_shown_buckets(first[1])}); DDP all-reduces the same buckets "
                    "every step",
                    source,
                )

    def refuse_steps_without(self, steps: int, source) -> None:
        """Every measured step hands its buckets to all-reduce (DDP does, each step): a measured step without a bucket
        mark is refused, since the forecast would give it no all-reduce at all."""
        empty = sorted(set(range(steps)) - set(self.step.tolist()))
        if empty:
            raise ArtifactError(
                f"{len(empty)} of the trace's {steps} measured steps hold no bucket mark (ds:bucket:<index>:<bytes>; steps "
                f"{empty[:5]}{'...' if len(empty) > 5 else ''}): DDP all-reduces its buckets every step, so marks are "
                "missing, and the forecast would give those steps no all-reduce",
                source,
            )

    def refuse_unlike_run(self, run_buckets: dict | None, source) -> None:
        """The buckets of the trace's first measured step against those its run's summary records (``bucket_bytes`` by
        index), where it records them: another list is refused (a damaged trace, or the trace of another run)."""
        recorded = (run_buckets or {}).get("bucket_bytes") if isinstance(run_buckets, dict) else None
        if not (isinstance(recorded, list) and recorded and all(type(b) is int for b in recorded)) or not len(self.step):
            return
        pairs = self.step_buckets(self.step.min())
        if pairs != tuple(enumerate(recorded)):
            raise ArtifactError(
                f"the trace's bucket marks ({_shown_buckets(pairs)}) are not the buckets its run's summary.json records "
                f"({_shown_buckets(tuple(enumerate(recorded)))}): a damaged trace, or the trace of another run",
                source,
            )


def _shown_buckets(pairs: tuple) -> str:
    shown = ", ".join(f"{i}: {b:,} B" for i, b in pairs[:4])
    return f"{len(pairs)} buckets: {shown}" + (", ..." if len(pairs) > 4 else "")


def _bucket_readiness(step: np.ndarray, lt: np.ndarray, buckets: _MeasuredBuckets, steps: int):
    """Per bucket, the replayed activity whose end makes it ready (-1: none); per activity, whether
    it was launched after its step's last bucket hook. ``step`` and ``lt`` are the replayed
    activities' step and launch time (every measured step holds buckets: ``from_hook_ranges``)."""
    ready = np.full(len(buckets.end), -1, np.int64)
    after = np.zeros(len(step), bool)
    for k in range(steps):
        acts = np.flatnonzero(step == k)
        bs = np.flatnonzero(buckets.step == k)
        if len(bs) == 0 or len(acts) == 0:
            continue
        for b in bs:
            # NCCL's stream waits for everything launched before the all-reduce call, which
            # ends the hook's range (the hook's own division kernel included)
            before = acts[lt[acts] < buckets.end[b]]
            ready[b] = before[np.argmax(lt[before])] if len(before) else acts[0]
        after[acts] = lt[acts] >= buckets.end[bs].max()
    return ready, after


def _profile_info(
    meta: dict, steps: int, activities: int, buckets: _MeasuredBuckets, ok: np.ndarray, method: str, notes: list[str]
) -> dict:
    """``Profile.info``: where the trace came from and what the profile holds."""
    info = {
        "source": str(below_cwd(meta.get("source"))) if meta.get("source") else None,
        "format": meta.get("format"),
        "tool": meta.get("tool"),
        "measured_steps": int(steps),
        "activities_per_step": float(activities / max(1, steps)),
        "buckets_per_step": float(ok.sum() / max(1, steps)),
        "bucket_bytes": [int(x) for x in buckets.nbytes[ok & (buckets.step == buckets.step[ok].min())]] if ok.any() else [],
        "readiness_method": method,
        "notes": notes,
    }
    info["gradient_bytes"] = int(sum(info["bucket_bytes"]))
    return info


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
        runs = _band_runs(p, models, contention, n)
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


def _band_runs(p: Profile, models: dict[str, CommModel], contention: Band, n: int) -> dict[str, dict[str, float | None]]:
    """The replay's medians at the mid, favourable and unfavourable ends. A timeline past the
    nanosecond clock's range (int64: 292 years) is refused, not a traceback: the options and
    ``--busbw`` files are bounded, so only a trace's absurd figures (bucket bytes, durations) get here."""
    try:
        return {c: _medians(step_figures(p, models[c], getattr(contention, c))) for c in ("mid", "low", "high")}
    except OverflowError:
        raise ArtifactError(
            f"the predicted timeline at world size {n} overflows the nanosecond clock: the trace's bucket sizes "
            "or durations, with the bus bandwidth, alpha and contention used, are far outside any real system",
            p.info.get("source"),
        ) from None


def _replayed_rows(gpu: pd.DataFrame, att) -> np.ndarray:
    """Rows of the activities the model replays (measured steps, not NCCL), in replay order."""
    cat = gpu["category"].astype(str).to_numpy()
    rows = np.flatnonzero((att.step >= 0) & (cat != "nccl"))
    return rows[np.lexsort((gpu["start_ns"].to_numpy(np.int64)[rows], att.step[rows]))]
