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
# The columns as the generators fill them (before _gpu_frame / _host_frame).
_GPU_COLUMNS = ("stream", "kind", "name", "start_ns", "end_ns", "category", "collective", "msg_bytes")
_HOST_COLUMNS = ("thread", "kind", "name", "start_ns", "end_ns", "stream")

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
    gen = _StudyRankGenerator(rng, int(kernels_per_step), buckets)
    for step in range(warmup + steps):
        gen.step("warmup" if step < warmup else "step")
    gpu = _gpu_frame(rank, device, gen.tables.gpu)
    host = _host_frame(rank, gen.tables.host)
    gpu_events = 2 * len(gpu)
    main_events = 2 * int((host["thread"] == MAIN).sum())
    want = max(0, int(host_factor * gpu_events) - main_events) // 2
    extra = _fill_gaps(np.concatenate(gen.noise_s), np.concatenate(gen.noise_e), want)
    params = dict(
        rank=rank, steps=steps, warmup=warmup, kernels_per_step=gen.K, buckets=gen.B, host_factor=host_factor, seed=seed
    )
    return SyntheticRank(rank, gpu, host, {MAIN: extra} if extra[0].size else {}, params)


class _Columns:
    """The columns of a generated rank's GPU and host tables, filled block by block."""

    def __init__(self):
        self.gpu: dict[str, list] = {k: [] for k in _GPU_COLUMNS}
        self.host: dict[str, list] = {k: [] for k in _HOST_COLUMNS}

    def add_gpu(self, stream, kind, name, s, e, category, collective=None, nbytes=None):
        n = len(s)
        g = self.gpu
        g["stream"].append(np.full(n, stream, np.int64))
        g["kind"].append(np.full(n, kind, dtype=object))
        g["name"].append(np.asarray(name, dtype=object) if np.ndim(name) else np.full(n, name, dtype=object))
        g["start_ns"].append(np.asarray(s, np.int64))
        g["end_ns"].append(np.asarray(e, np.int64))
        g["category"].append(np.full(n, category, dtype=object))
        g["collective"].append(np.full(n, collective if collective else np.nan, dtype=object))
        g["msg_bytes"].append(np.full(n, -1 if nbytes is None else nbytes, np.int64))

    def add_host(self, thread, kind, name, s, e, stream=None):
        n = len(s)
        h = self.host
        h["thread"].append(np.full(n, thread, dtype=object))
        h["kind"].append(np.full(n, kind, dtype=object))
        h["name"].append(np.full(n, name, dtype=object))
        h["start_ns"].append(np.asarray(s, np.int64))
        h["end_ns"].append(np.asarray(e, np.int64))
        h["stream"].append(np.full(n, -1 if stream is None else stream, np.int64))


class _StudyRankGenerator:
    """Generates the steps of one study-shaped rank, one after the other, on the rank's clock.

    The random draws happen in a fixed order (a seed gives the same trace), so the phases of a
    step are generated in the order they run.
    """

    LAUNCH_LEN, LAUNCH_GAP, LAUNCH_LATENCY = 4 * US, 2 * US, 3 * US

    def __init__(self, rng: np.random.Generator, kernels_per_step: int, buckets: int):
        self.rng = rng
        K = self.K = kernels_per_step
        self.n_fwd = max(1, int(round(0.35 * K)))
        self.n_bwd = max(1, int(round(0.55 * K)))
        self.n_opt = max(1, K - self.n_fwd - self.n_bwd)
        self.B = max(1, min(buckets, self.n_bwd))
        self.tables = _Columns()
        self.noise_s: list[np.ndarray] = []
        self.noise_e: list[np.ndarray] = []
        self.T = 1_000_000 + int(rng.integers(0, 50 * US))  # ns on this rank's clock
        self.gpu_free = {COMPUTE_STREAM: 0, NCCL_STREAM: 0}
        self.names = np.array(_COMPUTE_KERNELS, dtype=object)

    def step(self, label: str) -> None:
        """One step: input copy, forward, backward with its buckets, optimizer, loss copy, noise."""
        step_start = self.T
        main_ranges: list[tuple[np.ndarray, np.ndarray]] = []
        self._input_copy(step_start)
        fwd_start, fwd_end = self._forward(step_start, main_ranges)
        bwd_start, bwd_end = self._backward(fwd_end)
        opt_start, opt_end, last_kernel_end = self._optimizer(bwd_end, main_ranges)
        d2h_e = self._loss_copy(last_kernel_end)
        step_end = max(d2h_e, opt_end) + 5 * US
        self.tables.add_host(MAIN, "phase", label, [step_start], [step_end])
        # Python-function noise on the main thread, in the gaps between its ranges.
        bounds = np.unique(
            np.concatenate(
                [[step_start, fwd_start, fwd_end, bwd_start, bwd_end, opt_start, opt_end, step_end]]
                + [np.concatenate(r) for r in main_ranges]
            )
        )
        self.noise_s.append(bounds[:-1])
        self.noise_e.append(bounds[1:])
        self.T = step_end + 150 * US + int(self.rng.integers(0, 20 * US))  # data loading: the GPU idles

    def _launches(self, t0, n):
        s = t0 + np.arange(n, dtype=np.int64) * (self.LAUNCH_LEN + self.LAUNCH_GAP)
        return s, s + self.LAUNCH_LEN

    def _compute_kernels(self, launch_end: np.ndarray, median_ns: int, sigma: float, longest_ns: int) -> np.ndarray:
        """Kernels launched at ``launch_end`` (log-normal durations) on the compute stream; their ends."""
        n = launch_end.size
        dur = np.clip(self.rng.lognormal(np.log(median_ns), sigma, n), 1 * US, longest_ns).astype(np.int64)
        ks = _schedule(launch_end + self.LAUNCH_LATENCY, dur, US, self.gpu_free[COMPUTE_STREAM] + US)
        ke = ks + dur
        names = self.names[self.rng.integers(0, len(self.names), n)]
        self.tables.add_gpu(COMPUTE_STREAM, "kernel", names, ks, ke, "compute")
        self.gpu_free[COMPUTE_STREAM] = int(ke[-1])
        return ke

    def _input_copy(self, step_start: int) -> None:
        """The input batch: an HtoD copy at the start of the step."""
        h2d_s = max(step_start + 5 * US, self.gpu_free[COMPUTE_STREAM] + US)
        h2d_e = h2d_s + 60 * US + int(self.rng.integers(0, 10 * US))
        self.tables.add_gpu(COMPUTE_STREAM, "memcpy", "Memcpy HtoD", [h2d_s], [h2d_e], "memory", nbytes=8 << 20)
        self.gpu_free[COMPUTE_STREAM] = h2d_e

    def _forward(self, step_start: int, main_ranges: list) -> tuple[int, int]:
        """Forward: launches from the main thread."""
        fwd_start = step_start + 10 * US
        ls, le = self._launches(fwd_start + 2 * US, self.n_fwd)
        self.tables.add_host(MAIN, "launch", LAUNCH_API, ls, le, COMPUTE_STREAM)
        main_ranges.append((ls, le))
        self._compute_kernels(le, 9 * US, 0.6, 300 * US)
        fwd_end = int(le[-1]) + 2 * US
        self.tables.add_host(MAIN, "phase", "forward", [fwd_start], [fwd_end])
        return fwd_start, fwd_end

    def _backward(self, fwd_end: int) -> tuple[int, int]:
        """Backward: autograd-thread launches; an NCCL bucket after every n_bwd/B kernels."""
        n_bwd, B = self.n_bwd, self.B
        bwd_start = fwd_end + US
        ls, le = self._launches(bwd_start + 3 * US, n_bwd)
        ke = self._compute_kernels(le, 10 * US, 0.6, 300 * US)
        cut = np.linspace(n_bwd / B, n_bwd, B).astype(np.int64) - 1  # last kernel of each bucket
        nl_s = ke[cut] - 2 * US  # the comm hook fires once the bucket's grads are ready
        nl_s = np.maximum(nl_s, le[cut] + US)
        nl_e = nl_s + self.LAUNCH_LEN
        # The autograd thread's launches must not overlap: NCCL launches shift past kernel launches.
        nl_s, nl_e = _non_overlapping_after(ls, le, nl_s, nl_e)
        self.tables.add_host(AUTOGRAD, "launch", LAUNCH_API, np.concatenate([ls, nl_s]), np.concatenate([le, nl_e]), None)
        self.tables.host["stream"][-1][:n_bwd] = COMPUTE_STREAM
        self.tables.host["stream"][-1][n_bwd:] = NCCL_STREAM
        ndur = (self.rng.uniform(150, 450, B) * US).astype(np.int64)
        ns_ = _schedule(nl_e + self.LAUNCH_LATENCY, ndur, 2 * US, self.gpu_free[NCCL_STREAM] + US)
        ne_ = ns_ + ndur
        self.tables.add_gpu(NCCL_STREAM, "kernel", ALLREDUCE, ns_, ne_, "nccl", collective="AllReduce")
        self.gpu_free[NCCL_STREAM] = int(ne_[-1])
        bwd_end = max(int(nl_e[-1]), int(le[-1]), int(ne_[-1])) + 5 * US  # DDP waits for the last bucket
        self.tables.add_host(MAIN, "phase", "backward", [bwd_start], [bwd_end])
        return bwd_start, bwd_end

    def _optimizer(self, bwd_end: int, main_ranges: list) -> tuple[int, int, int]:
        """Optimizer: launches from the main thread after the gradients are reduced."""
        opt_start = bwd_end + 2 * US
        ls, le = self._launches(opt_start + 2 * US, self.n_opt)
        self.tables.add_host(MAIN, "launch", LAUNCH_API, ls, le, COMPUTE_STREAM)
        main_ranges.append((ls, le))
        ke = self._compute_kernels(le, 6 * US, 0.5, 200 * US)
        opt_end = int(le[-1]) + 2 * US
        self.tables.add_host(MAIN, "phase", "optimizer", [opt_start], [opt_end])
        return opt_start, opt_end, int(ke[-1])

    def _loss_copy(self, last_kernel_end: int) -> int:
        """loss.item(): a DtoH copy after the last kernel; the host waits for it."""
        d2h_s = last_kernel_end + US
        d2h_e = d2h_s + 3 * US
        self.tables.add_gpu(COMPUTE_STREAM, "memcpy", "Memcpy DtoH", [d2h_s], [d2h_e], "memory", nbytes=4)
        self.gpu_free[COMPUTE_STREAM] = d2h_e
        return d2h_e


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
    gen = _BucketRankGenerator(world_size, model, bucket_bytes, rank)
    for step in range(warmup + steps):
        gen.step("warmup" if step < warmup else "step", dur_f, dur_b, dur_o)
    params = dict(rank=rank, world_size=world_size, model=model.__dict__, steps=steps, warmup=warmup)
    params.update(bucket_bytes=list(bucket_bytes), kernels=list(kernels), seed=seed)
    gpu, host = gen.frames(rank)
    return SyntheticRank(rank, gpu, host, {}, params)


class _BucketRankGenerator:
    """Generates the steps of one ``bucket_rank``, kernel by kernel, on the rank's clock."""

    LATENCY = 3 * US  # from a launch call's end to its kernel's earliest start

    def __init__(self, world_size: int, model: BucketModel, bucket_bytes: tuple[int, ...], rank: int = 0):
        self.world_size = world_size
        self.model = model
        self.bucket_bytes = bucket_bytes
        self.gpu_cols: dict[str, list] = {k: [] for k in _GPU_COLUMNS}
        self.host_rows: list[tuple] = []  # (thread, kind, name, start, end[, stream])
        self.T = 1_000_000 + 7 * rank  # each rank on its own clock: no two ranks of a run share one GPU timeline
        self.free = 0  # compute stream
        self.comm_free = 0
        self.comm: list[tuple[int, int]] = []
        self.order = itertools.count()

    def step(self, label: str, dur_f, dur_b, dur_o) -> None:
        """Forward, backward with its bucket hooks, optimizer; then the host is away a while."""
        f0 = self.T + 10 * US
        # forward from the main thread (no copies: their calls carry no stream, so the analysis
        # would place them by time, not by launch, once the GPU lags a step behind)
        t = self._launch_kernels(MAIN, f0, dur_f)
        self.host_rows.append((MAIN, "phase", "forward", f0, t))
        b0 = t + US
        t, last_comm_end = self._backward(b0 + 2 * US, dur_b)
        # after the last bucket hook: two kernels that wait for the reduced gradients
        t = self._launch_kernels(AUTOGRAD, t, [5 * US, 5 * US], wait_for=last_comm_end)
        self.host_rows.append((MAIN, "phase", "backward", b0, t))
        o0 = t + US
        t = self._launch_kernels(MAIN, o0 + 2 * US, dur_o, wait_for=last_comm_end)
        self.host_rows.append((MAIN, "phase", "optimizer", o0, t))
        self.host_rows.append((MAIN, "phase", label, self.T, t + US))
        self.T = t + 300 * US  # data loading: the host is away, the GPU catches up

    def _gpu(self, stream, kind, name, s, e, category, collective=None, nbytes=-1):
        for k, v in zip(self.gpu_cols, (stream, kind, name, s, e, category, collective or np.nan, nbytes)):
            self.gpu_cols[k].append(v)

    def _run_kernel(self, launch_end: int, d: int, wait_for: int = 0) -> int:
        """A compute kernel launched at ``launch_end`` (longer under an all-reduce); its end."""
        s = max(launch_end + self.LATENCY, self.free, wait_for)
        if any(cs <= s < ce for cs, ce in self.comm):
            d = int(round(d * self.model.contention))
        self.free = s + d
        self._gpu(COMPUTE_STREAM, "kernel", _COMPUTE_KERNELS[next(self.order) % len(_COMPUTE_KERNELS)], s, s + d, "compute")
        return s + d

    def _launch_kernels(self, thread: str, t: int, durations, wait_for: int = 0) -> int:
        """One launch call (4 us, 6 us apart) per kernel from ``thread`` from ``t`` on; the time after."""
        for d in durations:
            self.host_rows.append((thread, "launch", LAUNCH_API, t, t + 4 * US, COMPUTE_STREAM))
            self._run_kernel(t + 4 * US, int(d), wait_for=wait_for)
            t += 6 * US
        return t

    def _backward(self, t: int, dur_b) -> tuple[int, int]:
        """Backward kernels from the autograd thread, a bucket hook after each bucket's last one;
        the time after, and the end of the step's last all-reduce (0: none)."""
        nb, n_b = len(self.bucket_bytes), len(dur_b)
        last_of_bucket = {int(round((b + 1) * n_b / nb)) - 1: b for b in range(nb)}
        last_comm_end = 0
        for i, d in enumerate(dur_b):
            self.host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t, t + 4 * US, COMPUTE_STREAM))
            end = self._run_kernel(t + 4 * US, int(d))
            t += 6 * US
            if i in last_of_bucket:
                t, last_comm_end = self._bucket_hook(t, last_of_bucket[i], end, last_comm_end)
        return t, last_comm_end

    def _bucket_hook(self, t: int, b: int, end: int, last_comm_end: int) -> tuple[int, int]:
        """The hook's range: its division kernel (allreduce_hook divides by the world size), then
        the all_reduce call, which launches the NCCL kernel (none at world size 1)."""
        nbytes = self.bucket_bytes[b]
        self.host_rows.append((AUTOGRAD, "phase", f"bucket:{b}:{nbytes}", t, t + 8 * US))
        self.host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t + 1 * US, t + 3 * US, COMPUTE_STREAM))
        end = self._run_kernel(t + 3 * US, 3 * US)
        ar = self.model.allreduce_ns(self.world_size, nbytes)
        if ar:
            self.host_rows.append((AUTOGRAD, "launch", LAUNCH_API, t + 4 * US, t + 7 * US, NCCL_STREAM))
            s = max(end, self.comm_free)
            self.comm.append((s, s + ar))
            self.comm_free = last_comm_end = s + ar
            self._gpu(NCCL_STREAM, "kernel", ALLREDUCE, s, s + ar, "nccl", "AllReduce", nbytes)
        return t + 9 * US, last_comm_end

    def frames(self, rank: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The GPU and host tables of what was generated."""
        host_cols: dict[str, list] = {k: [] for k in _HOST_COLUMNS}
        for row in self.host_rows:
            row = (*row, -1) if len(row) == 5 else row
            for k, v in zip(host_cols, row):
                host_cols[k].append([v])
        gc = {
            k: [np.asarray(v, dtype=object if k in ("kind", "name", "category", "collective") else np.int64)]
            for k, v in self.gpu_cols.items()
        }
        return (
            _gpu_frame(rank, rank, gc),
            _host_frame(rank, {k: [np.asarray(v).ravel() for v in vs] for k, vs in host_cols.items()}),
        )


def write_bucket_run(out_dir, world_size: int, model: BucketModel, **params) -> list[Path]:
    """Write ``world_size`` ranks of ``bucket_rank`` as ``out_dir/traces/scorep-rank<R>/``."""
    out = Path(out_dir)
    dirs = [RunLayout(out).scorep_dir(r) for r in range(world_size)]
    for r, d in enumerate(dirs):
        bucket_rank(r, world_size, model, **params).write(d, overwrite=True)
    return dirs
