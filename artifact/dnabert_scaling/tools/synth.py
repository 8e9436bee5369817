"""Synthetic, study-shaped Score-P traces with a known ground truth (tests and the read benchmark).

A generated rank looks like one rank of the DNABERT-2 DDP study under Score-P 9 with full Python
instrumentation: per step an input copy (HtoD), forward kernels launched from the main thread,
backward kernels launched from the autograd thread with NCCL AllReduce buckets on their own
stream (overlapping the backward compute, the last one exposed), optimizer kernels after the
gradients arrive, a DtoH copy of the loss, and an idle gap before the next step; ``ds:*``
phase regions on the main thread; and "noise": Python function regions on the main thread,
``host_factor`` times as many host events as GPU events, as ``python -m scorep`` without
``--noinstrumenter`` records them.

The tables (``gpu``, ``host``) are generated first and then written with
``otf2_writer.write_tables``, so the generated tables are the ground truth a reader must return.
GPU scheduling is vectorised: on one stream, ``start_k = max(ready_k, end_{k-1} + gap)`` unrolls
to ``c_k + max_{j<=k}(ready_j - c_j)`` with ``c`` the cumulative (duration + gap).

Generating the benchmark trace (8 ranks x 50 steps x 1,000 kernels, ~17 M events) takes about a
minute on two cores; ``write_study_trace`` caches it by parameters under a directory you choose.
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dnabert_scaling import __version__
from dnabert_scaling.layout import ANCHOR, RunLayout
from dnabert_scaling.traces.model import GPU_SCHEMA, HOST_SCHEMA, make_frame
from dnabert_scaling.traces.otf2_writer import write_tables

US = 1_000  # ns
COMPUTE_STREAM = 7
NCCL_STREAM = 20
MAIN = "Master thread"
AUTOGRAD = "Pthread thread 1"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
LAUNCH_API = "cuLaunchKernel"

_COMPUTE_KERNELS = [
    "at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >",
    "at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
    "at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>",
    "at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>",
    "pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false>",
    "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 2, 2, false, false, cutlass::bfloat16_t>, false, false, false, false, false, true, true>",
    "at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >",
    "at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, float*, float*>",
    "at::native::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>",
    "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >",
]
_PY_FUNCTIONS = [
    f"{m}:{f}"
    for m in (
        "torch.nn.modules.module",
        "torch.nn.functional",
        "torch.autograd.grad_mode",
        "dnabert_scaling.run.workload.model",
        "torch._tensor",
        "torch.optim.adamw",
        "torch.utils.data.dataloader",
        "torch.nn.parallel.distributed",
    )
    for f in (
        "_call_impl",
        "_wrapped_call_impl",
        "forward",
        "__enter__",
        "__exit__",
        "_get_item",
        "__getattr__",
        "linear",
        "gelu",
        "layer_norm",
        "dropout",
        "step",
        "_fetch",
        "_sync_params",
        "wrapper",
    )
]


@dataclass
class SyntheticRank:
    """One generated rank: the tables a reader must return, plus the noise regions."""

    rank: int
    gpu: pd.DataFrame
    host: pd.DataFrame
    extra_ranges: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    def write(self, target, overwrite: bool = False) -> dict:
        return write_tables(
            self.gpu,
            self.host,
            target,
            creator=f"dnabert-scaling-synth {__version__}",
            description=f"synthetic rank {self.rank}: {json.dumps(self.params, sort_keys=True)}",
            overwrite=overwrite,
            extra_ranges=self.extra_ranges,
        )


def _schedule(ready: np.ndarray, dur: np.ndarray, gap: int, not_before: int) -> np.ndarray:
    """Starts on one in-order stream: start_k = max(ready_k, end_{k-1} + gap), first >= not_before."""
    ready = np.maximum(np.asarray(ready, np.int64), np.int64(not_before))
    step = np.asarray(dur, np.int64) + gap
    c = np.concatenate([[0], np.cumsum(step)[:-1]]).astype(np.int64)
    return c + np.maximum.accumulate(ready - c)


def study_rank(
    rank: int = 0,
    steps: int = 50,
    warmup: int = 2,
    kernels_per_step: int = 1000,
    buckets: int = 8,
    host_factor: float = 20.0,
    seed: int = 0,
    device: int | None = None,
) -> SyntheticRank:
    """Generate one study-shaped rank (see the module docstring)."""
    rng = np.random.default_rng(seed * 1009 + rank)
    device = rank if device is None else device
    K = int(kernels_per_step)
    n_fwd = max(1, int(round(0.35 * K)))
    n_bwd = max(1, int(round(0.55 * K)))
    n_opt = max(1, K - n_fwd - n_bwd)
    B = max(1, min(buckets, n_bwd))
    launch_len, launch_gap, launch_latency = 4 * US, 2 * US, 3 * US
    gpu_cols = {k: [] for k in ("stream", "kind", "name", "start_ns", "end_ns", "category", "collective", "msg_bytes")}
    host_cols = {k: [] for k in ("thread", "kind", "name", "start_ns", "end_ns", "stream")}
    noise_s, noise_e = [], []
    T = 1_000_000 + int(rng.integers(0, 50 * US))  # ns on this rank's clock
    gpu_free = {COMPUTE_STREAM: 0, NCCL_STREAM: 0}
    names = np.array(_COMPUTE_KERNELS, dtype=object)
    total_steps = warmup + steps

    def add_gpu(stream, kind, name, s, e, category, collective=None, nbytes=None):
        n = len(s)
        gpu_cols["stream"].append(np.full(n, stream, np.int64))
        gpu_cols["kind"].append(np.full(n, kind, dtype=object))
        gpu_cols["name"].append(np.asarray(name, dtype=object) if np.ndim(name) else np.full(n, name, dtype=object))
        gpu_cols["start_ns"].append(np.asarray(s, np.int64))
        gpu_cols["end_ns"].append(np.asarray(e, np.int64))
        gpu_cols["category"].append(np.full(n, category, dtype=object))
        gpu_cols["collective"].append(np.full(n, collective if collective else np.nan, dtype=object))
        gpu_cols["msg_bytes"].append(np.full(n, -1 if nbytes is None else nbytes, np.int64))

    def add_host(thread, kind, name, s, e, stream=None):
        n = len(s)
        host_cols["thread"].append(np.full(n, thread, dtype=object))
        host_cols["kind"].append(np.full(n, kind, dtype=object))
        host_cols["name"].append(np.full(n, name, dtype=object))
        host_cols["start_ns"].append(np.asarray(s, np.int64))
        host_cols["end_ns"].append(np.asarray(e, np.int64))
        host_cols["stream"].append(np.full(n, -1 if stream is None else stream, np.int64))

    def launches(t0, n):
        s = t0 + np.arange(n, dtype=np.int64) * (launch_len + launch_gap)
        return s, s + launch_len

    for step in range(total_steps):
        label = "warmup" if step < warmup else "step"
        step_start = T
        main_ranges = []
        # Input batch: HtoD copy at the start of the step.
        h2d_s = max(step_start + 5 * US, gpu_free[COMPUTE_STREAM] + US)
        h2d_e = h2d_s + 60 * US + int(rng.integers(0, 10 * US))
        add_gpu(COMPUTE_STREAM, "memcpy", "Memcpy HtoD", [h2d_s], [h2d_e], "memory", nbytes=8 << 20)
        gpu_free[COMPUTE_STREAM] = h2d_e
        # Forward: launches from the main thread.
        fwd_start = step_start + 10 * US
        ls, le = launches(fwd_start + 2 * US, n_fwd)
        add_host(MAIN, "launch", LAUNCH_API, ls, le, COMPUTE_STREAM)
        main_ranges.append((ls, le))
        dur = np.clip(rng.lognormal(np.log(9 * US), 0.6, n_fwd), 1 * US, 300 * US).astype(np.int64)
        ks = _schedule(le + launch_latency, dur, US, gpu_free[COMPUTE_STREAM] + US)
        ke = ks + dur
        add_gpu(COMPUTE_STREAM, "kernel", names[rng.integers(0, len(names), n_fwd)], ks, ke, "compute")
        gpu_free[COMPUTE_STREAM] = int(ke[-1])
        fwd_end = int(le[-1]) + 2 * US
        add_host(MAIN, "phase", "forward", [fwd_start], [fwd_end])
        # Backward: autograd thread launches; NCCL buckets after every n_bwd/B kernels.
        bwd_start = fwd_end + US
        ls, le = launches(bwd_start + 3 * US, n_bwd)
        dur = np.clip(rng.lognormal(np.log(10 * US), 0.6, n_bwd), 1 * US, 300 * US).astype(np.int64)
        ks = _schedule(le + launch_latency, dur, US, gpu_free[COMPUTE_STREAM] + US)
        ke = ks + dur
        add_gpu(COMPUTE_STREAM, "kernel", names[rng.integers(0, len(names), n_bwd)], ks, ke, "compute")
        gpu_free[COMPUTE_STREAM] = int(ke[-1])
        cut = np.linspace(n_bwd / B, n_bwd, B).astype(np.int64) - 1  # last kernel of each bucket
        nl_s = ke[cut] - 2 * US  # the comm hook fires once the bucket's grads are ready
        nl_s = np.maximum(nl_s, le[cut] + US)
        nl_e = nl_s + launch_len
        # The autograd thread's launches must not overlap: NCCL launches shift past kernel launches.
        nl_s, nl_e = _non_overlapping_after(ls, le, nl_s, nl_e)
        add_host(AUTOGRAD, "launch", LAUNCH_API, np.concatenate([ls, nl_s]), np.concatenate([le, nl_e]), None)
        host_cols["stream"][-1][:n_bwd] = COMPUTE_STREAM
        host_cols["stream"][-1][n_bwd:] = NCCL_STREAM
        ndur = (rng.uniform(150, 450, B) * US).astype(np.int64)
        ns_ = _schedule(nl_e + launch_latency, ndur, 2 * US, gpu_free[NCCL_STREAM] + US)
        ne_ = ns_ + ndur
        add_gpu(NCCL_STREAM, "kernel", ALLREDUCE, ns_, ne_, "nccl", collective="AllReduce")
        gpu_free[NCCL_STREAM] = int(ne_[-1])
        bwd_end = max(int(nl_e[-1]), int(le[-1]), int(ne_[-1])) + 5 * US  # DDP waits for the last bucket
        add_host(MAIN, "phase", "backward", [bwd_start], [bwd_end])
        # Optimizer: launches from the main thread after the gradients are reduced.
        opt_start = bwd_end + 2 * US
        ls, le = launches(opt_start + 2 * US, n_opt)
        add_host(MAIN, "launch", LAUNCH_API, ls, le, COMPUTE_STREAM)
        main_ranges.append((ls, le))
        dur = np.clip(rng.lognormal(np.log(6 * US), 0.5, n_opt), 1 * US, 200 * US).astype(np.int64)
        ks = _schedule(le + launch_latency, dur, US, gpu_free[COMPUTE_STREAM] + US)
        ke = ks + dur
        add_gpu(COMPUTE_STREAM, "kernel", names[rng.integers(0, len(names), n_opt)], ks, ke, "compute")
        opt_end = int(le[-1]) + 2 * US
        add_host(MAIN, "phase", "optimizer", [opt_start], [opt_end])
        # loss.item(): DtoH copy, the host waits for it.
        d2h_s = int(ke[-1]) + US
        d2h_e = d2h_s + 3 * US
        add_gpu(COMPUTE_STREAM, "memcpy", "Memcpy DtoH", [d2h_s], [d2h_e], "memory", nbytes=4)
        gpu_free[COMPUTE_STREAM] = d2h_e
        step_end = max(d2h_e, opt_end) + 5 * US
        add_host(MAIN, "phase", label, [step_start], [step_end])
        # Python-function noise on the main thread, in the gaps between its ranges.
        bounds = np.unique(
            np.concatenate(
                [[step_start, fwd_start, fwd_end, bwd_start, bwd_end, opt_start, opt_end, step_end]]
                + [np.concatenate(r) for r in main_ranges]
            )
        )
        g0, g1 = bounds[:-1], bounds[1:]
        noise_s.append(g0)
        noise_e.append(g1)
        T = step_end + 150 * US + int(rng.integers(0, 20 * US))  # data loading: the GPU idles

    gpu = _gpu_frame(rank, device, gpu_cols)
    host = _host_frame(rank, host_cols)
    gpu_events = 2 * len(gpu)
    main_events = 2 * int((host["thread"] == MAIN).sum())
    want = max(0, int(host_factor * gpu_events) - main_events) // 2
    extra = _fill_gaps(np.concatenate(noise_s), np.concatenate(noise_e), want)
    params = {
        "rank": rank,
        "steps": steps,
        "warmup": warmup,
        "kernels_per_step": K,
        "buckets": B,
        "host_factor": host_factor,
        "seed": seed,
    }
    return SyntheticRank(rank, gpu, host, {MAIN: extra} if extra[0].size else {}, params)


def _non_overlapping_after(ls, le, ns, ne):
    """Shift each NCCL launch [ns, ne) into the first free slot of the thread after its time."""
    ns = ns.copy()
    ne = ne.copy()
    length = ne - ns
    busy_s = list(ls)
    busy_e = list(le)
    order = np.argsort(busy_s)
    bs = np.asarray(busy_s)[order]
    be = np.asarray(busy_e)[order]
    for i in range(ns.size):
        t = ns[i]
        while True:
            k = np.searchsorted(bs, t, side="right") - 1
            if k >= 0 and be[k] > t:  # inside a busy launch: move to its end
                t = be[k]
                continue
            nxt = k + 1
            if nxt < bs.size and bs[nxt] < t + length[i]:  # would run into the next launch
                t = be[nxt]
                continue
            break
        ns[i], ne[i] = t, t + length[i]
        pos = np.searchsorted(bs, t)
        bs = np.insert(bs, pos, t)
        be = np.insert(be, pos, t + length[i])
    return ns, ne


def _fill_gaps(g0: np.ndarray, g1: np.ndarray, count: int):
    """``count`` short regions spread over the gaps [g0, g1), proportionally to their lengths."""
    length = (g1 - g0).astype(np.int64)
    ok = length >= 4
    g0, length = g0[ok], length[ok]
    if count <= 0 or g0.size == 0:
        e = np.empty(0, np.int64)
        return e, e, np.empty(0, dtype=object)
    cap = length // 4  # each region needs >= 4 ns of room (2 ns long, 2 ns apart)
    share = np.minimum(cap, np.floor(count * length / length.sum()).astype(np.int64))
    share[np.argmax(cap - share)] += max(0, min(count - int(share.sum()), int((cap - share).max())))
    gap_of = np.repeat(np.arange(g0.size), share)
    first = np.concatenate([[0], np.cumsum(share)[:-1]])
    j = np.arange(gap_of.size) - np.repeat(first, share)
    width = length[gap_of] // share[gap_of]
    s = g0[gap_of] + j * width + 1
    e = s + np.maximum(1, width // 2)
    names = np.array(_PY_FUNCTIONS, dtype=object)[np.arange(s.size) % len(_PY_FUNCTIONS)]
    return s, e, names


def _gpu_frame(rank, device, cols) -> pd.DataFrame:
    c = {k: np.concatenate(v) for k, v in cols.items()}
    order = np.lexsort((c["end_ns"], c["start_ns"]))
    c = {k: v[order] for k, v in c.items()}
    msg = c["msg_bytes"]
    n = msg.size
    return make_frame(
        {
            "rank": rank,
            "device": device,
            "stream": c["stream"],
            "kind": list(c["kind"]),
            "name": list(c["name"]),
            "start_ns": c["start_ns"],
            "end_ns": c["end_ns"],
            "category": list(c["category"]),
            "collective": list(c["collective"]),
            "msg_bytes": (np.maximum(msg, 0), msg < 0),
            "correlation": (np.zeros(n, np.int64), np.ones(n, bool)),
        },
        GPU_SCHEMA,
    )


def _host_frame(rank, cols) -> pd.DataFrame:
    c = {k: np.concatenate(v) for k, v in cols.items()}
    order = np.lexsort((-c["end_ns"], c["start_ns"]))
    c = {k: v[order] for k, v in c.items()}
    n = c["start_ns"].size
    return make_frame(
        {
            "rank": rank,
            "thread": list(c["thread"]),
            "kind": list(c["kind"]),
            "name": list(c["name"]),
            "start_ns": c["start_ns"],
            "end_ns": c["end_ns"],
            "stream": (np.maximum(c["stream"], 0), c["stream"] < 0),
            "correlation": (np.zeros(n, np.int64), np.ones(n, bool)),
        },
        HOST_SCHEMA,
    )


def write_study_trace(out_dir, ranks: int = 8, *, overwrite: bool = False, **params) -> list[Path]:
    """Write ``ranks`` study-shaped ranks as ``out_dir/traces/scorep-rank<R>/`` (the run layout).

    Reuses an existing complete trace generated with the same parameters (``synth.json``).
    Returns the experiment directories.
    """
    out = Path(out_dir)
    stamp = {"ranks": ranks, "params": params, "version": __version__}
    marker = out / "synth.json"
    dirs = [RunLayout(out).scorep_dir(r) for r in range(ranks)]
    if (
        not overwrite
        and marker.is_file()
        and json.loads(marker.read_text()).get("stamp") == stamp
        and all((d / ANCHOR).is_file() for d in dirs)
    ):
        return dirs
    if out.exists():
        shutil.rmtree(out)
    counts = []
    for r, d in enumerate(dirs):
        spec = study_rank(r, **params)
        c = spec.write(d)
        counts.append(c)
    marker.write_text(json.dumps({"stamp": stamp, "counts": counts}, indent=1))
    return dirs


# --- DDP buckets whose all-reduce timing follows a stated model (tests of ``predict``) ----------


@dataclass(frozen=True)
class BucketModel:
    """How a written N-rank trace times its all-reduces: alpha + 2(N-1)/N * bytes / busbw, one
    after the other on the NCCL stream; compute kernels that start during one last ``contention``
    times longer; and (to write a trace that does *not* follow the model) ``comm_scale`` times the
    formula's duration."""

    alpha_ns: int = 20 * US
    busbw_Bps: float = 200e9
    contention: float = 1.0
    comm_scale: float = 1.0

    def allreduce_ns(self, world_size: int, nbytes: int) -> int:
        if world_size <= 1:
            return 0
        t = self.alpha_ns * 1e-9 + 2 * (world_size - 1) / world_size * nbytes / self.busbw_Bps
        return int(round(t * self.comm_scale * 1e9))


def bucket_rank(
    rank: int,
    world_size: int,
    model: BucketModel,
    steps: int = 6,
    warmup: int = 1,
    bucket_bytes: tuple[int, ...] = (1 << 20, 25 << 20, 25 << 20, 24 << 20),
    kernels: tuple[int, int, int] = (40, 60, 20),
    seed: int = 0,
) -> SyntheticRank:
    """One rank of a DDP run with the bucket hook's ``ds:bucket`` ranges, at any world size.

    Host timing is the same at every world size (the host never waits for the GPU); kernel
    durations repeat per step (seeded); every kernel is launched from a host call carrying its
    stream, so the reader pairs launches and kernels exactly. Per step: forward
    kernels (main thread), backward kernels (autograd thread) with a ``ds:bucket:<i>:<bytes>``
    range after the last kernel of each bucket (holding the hook's division kernel and, from two
    ranks on, the NCCL launch; the all-reduce waits for the division), then two kernels launched after the last bucket
    and the optimizer kernels, which wait for the last all-reduce. World size 1 has no NCCL kernel.
    """
    rng = np.random.default_rng(seed)
    n_f, n_b, n_o = kernels
    dur_f = rng.integers(2, 12, n_f) * US  # launch-bound like the study's batch of 8: the GPU
    dur_b = rng.integers(3, 16, n_b) * US  # keeps up with the host within each step
    dur_o = rng.integers(2, 10, n_o) * US
    nb = len(bucket_bytes)
    last_of_bucket = {int(round((b + 1) * n_b / nb)) - 1: b for b in range(nb)}
    gpu_cols = {k: [] for k in ("stream", "kind", "name", "start_ns", "end_ns", "category", "collective", "msg_bytes")}
    host_rows = []  # (thread, kind, name, start, end, stream)
    T = 1_000_000 + 7 * rank  # each rank on its own clock: no two ranks of a run share one GPU timeline
    free = 0  # compute stream
    comm_free = 0
    comm: list[tuple[int, int]] = []
    latency = 3 * US
    names, order = _COMPUTE_KERNELS, itertools.count()

    def gpu(stream, kind, name, s, e, category, collective=None, nbytes=-1):
        for k, v in zip(gpu_cols, (stream, kind, name, s, e, category, collective or np.nan, nbytes)):
            gpu_cols[k].append(v)

    def run_kernel(launch_end, d, wait_for=0):
        nonlocal free
        s = max(launch_end + latency, free, wait_for)
        if any(cs <= s < ce for cs, ce in comm):
            d = int(round(d * model.contention))
        free = s + d
        gpu(COMPUTE_STREAM, "kernel", names[next(order) % len(names)], s, s + d, "compute")
        return s + d

    for step in range(warmup + steps):
        label = "warmup" if step < warmup else "step"
        t = T
        # forward from the main thread (no copies: their calls carry no stream, so the analysis
        # would place them by time, not by launch, once the GPU lags a step behind)
        f0 = t + 10 * US
        t = f0
        for d in dur_f:
            host_rows.append((MAIN, "launch", LAUNCH_API, t, t + 4 * US, COMPUTE_STREAM))
            run_kernel(t + 4 * US, int(d))
            t += 6 * US
        host_rows.append((MAIN, "phase", "forward", f0, t))
        b0 = t + US
        t = b0 + 2 * US
        last_comm_end = 0
        for i, d in enumerate(dur_b):
            host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t, t + 4 * US, COMPUTE_STREAM))
            end = run_kernel(t + 4 * US, int(d))
            t += 6 * US
            if i in last_of_bucket:
                b = last_of_bucket[i]
                # the hook's range: its division kernel (allreduce_hook divides by the world size),
                # then the all_reduce call, which launches the NCCL kernel (none at world size 1)
                host_rows.append((AUTOGRAD, "phase", f"bucket:{b}:{bucket_bytes[b]}", t, t + 8 * US))
                host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t + 1 * US, t + 3 * US, COMPUTE_STREAM))
                end = run_kernel(t + 3 * US, 3 * US)
                ar = model.allreduce_ns(world_size, bucket_bytes[b])
                if ar:
                    host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t + 4 * US, t + 7 * US, NCCL_STREAM))
                t += 9 * US
                if ar:
                    s = max(end, comm_free)
                    comm.append((s, s + ar))
                    comm_free = last_comm_end = s + ar
                    gpu(NCCL_STREAM, "kernel", ALLREDUCE, s, s + ar, "nccl", "AllReduce", bucket_bytes[b])
        for _ in range(2):  # after the last bucket hook: wait for the reduced gradients
            host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t, t + 4 * US, COMPUTE_STREAM))
            run_kernel(t + 4 * US, 5 * US, wait_for=last_comm_end)
            t += 6 * US
        host_rows.append((MAIN, "phase", "backward", b0, t))
        o0 = t + US
        t = o0 + 2 * US
        for d in dur_o:
            host_rows.append((MAIN, "launch", LAUNCH_API, t, t + 4 * US, COMPUTE_STREAM))
            run_kernel(t + 4 * US, int(d), wait_for=last_comm_end)
            t += 6 * US
        host_rows.append((MAIN, "phase", "optimizer", o0, t))
        host_rows.append((MAIN, "phase", label, T, t + US))
        T = t + 300 * US  # data loading: the host is away, the GPU catches up
    host_cols = {k: [] for k in ("thread", "kind", "name", "start_ns", "end_ns", "stream")}
    for row in host_rows:
        row = (*row, -1) if len(row) == 5 else row
        for k, v in zip(host_cols, row):
            host_cols[k].append([v])
    gc = {
        k: [np.asarray(v, dtype=object if k in ("kind", "name", "category", "collective") else np.int64)]
        for k, v in gpu_cols.items()
    }
    params = {
        "rank": rank,
        "world_size": world_size,
        "model": model.__dict__,
        "steps": steps,
        "warmup": warmup,
        "bucket_bytes": list(bucket_bytes),
        "kernels": list(kernels),
        "seed": seed,
    }
    return SyntheticRank(
        rank,
        _gpu_frame(rank, rank, gc),
        _host_frame(rank, {k: [np.asarray(v).ravel() for v in vs] for k, vs in host_cols.items()}),
        {},
        params,
    )


def write_bucket_run(out_dir, world_size: int, model: BucketModel, **params) -> list[Path]:
    """Write ``world_size`` ranks of ``bucket_rank`` as ``out_dir/traces/scorep-rank<R>/``."""
    out = Path(out_dir)
    dirs = [RunLayout(out).scorep_dir(r) for r in range(world_size)]
    for r, d in enumerate(dirs):
        bucket_rank(r, world_size, model, **params).write(d, overwrite=True)
    return dirs
