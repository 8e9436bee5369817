"""Hand-made results folders for the checker and report tests.

``gpu_results`` builds a results set shaped like what ``analyze`` writes for a GPU sweep (the
per-step table first, from a small model of a DDP step, then every metric from that table, so
metrics and tables agree); ``cpu_results`` one like a CPU smoke run (GPU analysis NOT RUN).
``set_metric`` / ``drop_ws`` / ``break_sanity`` make the variants the checker tests need.

``Chromium`` drives a headless Chromium over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: NUL-separated JSON on file descriptors 3 and 4), so the render
test needs no websocket client and no extra package.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dnabert_scaling.analysis.stats import stat
from dnabert_scaling.metrics_schema import (
    BusyWait,
    Completeness,
    EfficiencySpread,
    GpuMetrics,
    KernelClassShare,
    MetricsFile,
    Placement,
    RankCompleteness,
    RankedActivity,
    RankFigures,
    RankSkew,
    Sanity,
    Throughput,
    Traced,
    WorldSizeEntry,
)

STEPS = 12
COMPUTE_STREAM, NCCL_STREAM = 7, 20
BUCKETS = 19
# per-step model (seconds): phase GPU time, AllReduce kernel time and overlap by world size
FORWARD, BACKWARD, OPTIMIZER = 0.012, 0.030, 0.006
ALLREDUCE = {1: 0.0, 2: 0.018, 4: 0.028, 8: 0.034}
OVERLAP = {2: 0.90, 4: 0.87, 8: 0.85}
EFFICIENCY = {1: 1.0, 2: 0.96, 4: 0.93, 8: 0.90}
BASE_SAMPLES_PER_S = 580.0
BATCH = 32
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
ELEMENTWISE = "at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float>>"
SOFTMAX = "at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>"


def _steps(ws: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for r in range(ws):
        for k in range(STEPS):
            j = rng.normal(1.0, 0.02)
            fwd, bwd, opt = FORWARD * j, BACKWARD * j, OPTIMIZER
            compute = fwd + bwd + opt
            ar = ALLREDUCE.get(ws, 0.034) * rng.normal(1.0, 0.04) if ws > 1 else 0.0
            union = 0.97 * ar
            ov = min(1.0, OVERLAP.get(ws, 0.85) + rng.normal(0, 0.02)) if ws > 1 else float("nan")
            exposed = union * (1 - ov) if ws > 1 else 0.0
            memcpy, idle = 0.0005, 0.003 * rng.uniform(0.8, 1.2)
            step = compute + exposed + memcpy + idle
            kernel_total = compute * 1.05 + ar
            rows.append(
                {
                    "world_size": ws,
                    "run": f"ws{ws}-torch-r0",
                    "rank": r,
                    "step": k,
                    "window_start_ns": 10**9 * k,
                    "step_time_s": step,
                    "compute_s": compute,
                    "exposed_comm_s": exposed,
                    "exposed_memcpy_s": memcpy,
                    "idle_s": idle,
                    "nccl_kernel_sum_s": ar,
                    "nccl_union_s": union,
                    "nccl_kernels": BUCKETS if ws > 1 else 0,
                    "overlap_s": union * ov if ws > 1 else 0.0,
                    "allreduce_kernel_s": ar,
                    "allreduce_kernels": BUCKETS if ws > 1 else 0,
                    "unknown_collective_nccl_s": 0.0,
                    "kernels": 1127 + (BUCKETS if ws > 1 else 0),
                    "overlap_ratio": ov,
                    "exposed_comm_share": exposed / step,
                    "forward_gpu_s": fwd,
                    "backward_gpu_s": bwd,
                    "optimizer_gpu_s": opt,
                    "allreduce_to_backward": ar / bwd,
                    "allreduce_share": ar / kernel_total,
                    "idle_host_wait_s": 0.8 * idle,
                    "idle_kernel_wait_s": 0.15 * idle,
                    "idle_other_s": 0.05 * idle,
                    "launches": 1320,
                    "launch_call_s": 7e-6,
                    "host_s_per_launch": step / 1320,
                }
            )
    return pd.DataFrame(rows)


def _ranking(ws: int, steps: pd.DataFrame) -> pd.DataFrame:
    compute = float(steps["compute_s"].median())
    ar = float(steps["allreduce_kernel_s"].median())
    items = [
        (GEMM, "kernel", 0.35 * compute, 240),
        (ELEMENTWISE, "kernel", 0.2 * compute, 400),
        (SOFTMAX, "kernel", 0.08 * compute, 24),
        ("Memcpy HtoD (Pageable -> Device)", "memcpy", 0.0005, 3),
    ]
    if ws > 1:
        items.append(("nccl:AllReduce", "nccl", ar, BUCKETS))
    total = sum(x for _, _, x, _ in items)
    df = pd.DataFrame(
        [
            {"world_size": ws, "activity": a, "kind": k, "sum_s_per_step": x, "count_per_step": c, "share": x / total}
            for a, k, x, c in items
        ]
    )
    return df.sort_values("sum_s_per_step", ascending=False).reset_index(drop=True)


def _timeline(ws: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, phases = [], []
    for r in range(ws):
        t = rng.uniform(0, 0.0004)
        spans = {"forward": (t, t + FORWARD), "backward": (t + FORWARD + 0.0003, t + FORWARD + 0.0003 + BACKWARD)}
        spans["optimizer"] = (spans["backward"][1] + 0.004, spans["backward"][1] + 0.004 + OPTIMIZER)
        phases.append({"world_size": ws, "rank": r, "name": "step", "start_s": 0.0, "end_s": spans["optimizer"][1] + 0.002})
        for name, (a, b) in spans.items():
            phases.append({"world_size": ws, "rank": r, "name": name, "start_s": a, "end_s": b})
            n = {"forward": 24, "backward": 40, "optimizer": 8}[name]
            edges = np.linspace(a, b, n + 1)
            for x0, x1 in zip(edges[:-1], edges[1:]):
                rows.append(
                    {
                        "world_size": ws,
                        "rank": r,
                        "stream": COMPUTE_STREAM,
                        "kind": "kernel",
                        "category": "compute",
                        "phase": name,
                        "name": GEMM,
                        "start_s": x0,
                        "end_s": x0 + 0.9 * (x1 - x0),
                    }
                )
        rows.append(
            {
                "world_size": ws,
                "rank": r,
                "stream": COMPUTE_STREAM,
                "kind": "memcpy",
                "category": "memory",
                "phase": "forward",
                "name": "Memcpy HtoD",
                "start_s": 0.0,
                "end_s": t,
            }
        )
        if ws > 1:
            b0, b1 = spans["backward"]
            per = ALLREDUCE.get(ws, 0.034) / BUCKETS
            x = b0 + 0.002
            for _ in range(BUCKETS):
                rows.append(
                    {
                        "world_size": ws,
                        "rank": r,
                        "stream": NCCL_STREAM,
                        "kind": "kernel",
                        "category": "nccl",
                        "phase": "backward",
                        "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                        "start_s": x,
                        "end_s": x + per,
                    }
                )
                x += per + 0.0001
    return pd.DataFrame(rows), pd.DataFrame(phases)


def _classes(ranking: pd.DataFrame) -> list[KernelClassShare]:
    """The ranking's rows by kernel class (the fixture's names are one per class)."""
    from dnabert_scaling.analysis.kernel_classes import name_class

    out = []
    for row in ranking.to_dict("records"):
        cls = {"nccl": "nccl:AllReduce", "memcpy": "copy/memset"}.get(row["kind"]) or name_class(row["activity"])
        out.append(
            KernelClassShare(
                kernel_class=cls,
                sum_s_per_step=row["sum_s_per_step"],
                count_per_step=row["count_per_step"],
                share=row["share"],
                example=row["activity"],
            )
        )
    return out


def _gpu_metrics(ws: int, steps: pd.DataFrame, ranking: pd.DataFrame) -> GpuMetrics:
    from dnabert_scaling.analysis.trace_metrics import STEP_STATS

    return GpuMetrics(
        **{name: stat(steps[col]) for name, col in STEP_STATS.items()},
        allreduce_streams=[NCCL_STREAM] if ws > 1 else [],
        compute_streams=[COMPUTE_STREAM],
        allreduce_own_stream=True if ws > 1 else None,
        kernel_classes=_classes(ranking),
        per_rank=[
            RankFigures(
                rank=int(r),
                step_time_s=float(g["step_time_s"].median()),
                exposed_comm_s=float(g["exposed_comm_s"].median()),
                idle_s=float(g["idle_s"].median()),
            )
            for r, g in steps.groupby("rank")
        ],
        rank_skew=None
        if ws < 2
        else RankSkew(
            allreduce_start_skew_s=stat(np.full(BUCKETS * STEPS, 12e-6)),
            clock="common",
            late_rank_share={str(r): (0.75 if r == 1 else 0.25 / (ws - 1)) for r in range(ws)},
            buckets=BUCKETS * STEPS,
            steps_skipped=0,
        ),
        ranking=[
            RankedActivity(**{k: row[k] for k in ("activity", "kind", "sum_s_per_step", "count_per_step", "share")})
            for row in ranking.to_dict("records")
        ],
        phase_method="correlation",
    )


def _sanity(ok: bool = True, gpu_streams: bool | None = True) -> Sanity:
    return Sanity(
        all_ranks_present=ok,
        steps_complete=ok,
        finite_loss=ok,
        gpu_streams=gpu_streams,
        trace_complete=True if gpu_streams else None,
    )


def _completeness(ranks: int, launches: int = 1200) -> Completeness:
    """What analyze records for a complete trace: every launch of every measured step found."""
    per_rank = {
        str(r): RankCompleteness(
            status="complete",
            method="correlation",
            launches=launches * STEPS,
            found=launches * STEPS,
            share=1.0,
            steps=STEPS,
            steps_below_bound=0,
            min_step_share=1.0,
            bound=0.999,
            launches_per_step=[launches] * STEPS,
            found_per_step=[launches] * STEPS,
        )
        for r in range(ranks)
    }
    return Completeness(
        status="complete",
        bound=0.999,
        ranks=list(range(ranks)),
        reason="; ".join(f"rank {r}: every launch found" for r in range(ranks)),
        per_rank=per_rank,
    )


def _provenance(device: str, gpu: str | None) -> dict[str, Any]:
    p = {
        "time": "2026-01-01T00:00:00+00:00",
        "artifact_version": "0.1.0",
        "git_revision": "abc123",
        "host": "node17",
        "platform": "Linux-5.14-x86_64",
        "python": "3.11.7",
        "cpu": "x86_64",
        "cpu_count": 64,
        "packages": {"torch": "2.11.0", "transformers": "5.17.0", "pandas": "3.1.1", "numpy": "2.4.6", "otf2": "3.2"},
        "cuda_available": device == "cuda",
        "precision": "bf16",
        "attention": "sdpa",
        "model": "base",
        "parameters": 117070082,
        "batch_size_per_rank": BATCH,
        "seq_len_tokens": 70,
        "warmup_steps": 5,
        "measured_steps": STEPS,
        "task": {"name": "prom_300_all", "synthetic": False},
        "weights": {"source": "pretrained"},
        "ddp_options": {"bucket_cap_mb": 25.0},
    }
    if device == "cuda":
        p.update(
            {
                "gpu_name": gpu,
                "gpu_count": 8,
                "torch_cuda": "12.4",
                "nccl": "2.21.5",
                "driver": "550.54",
                "gpus": [{"name": gpu, "driver": "550.54", "memory": "81920 MiB"}] * 8,
            }
        )
    return p


def own_gpus_placement(ws: int) -> Placement:
    """World size ``ws`` on GPUs of its own, eight to a host, told apart by UUID."""
    return Placement(
        ranks=ws, hosts=max(1, -(-ws // 8)), gpus=ws, ranks_per_gpu=1, shared_gpu=False, identity="uuid",
        transports=["P2P"] if ws > 1 else [], rehearsal=False,
    )  # fmt: skip


def gpu_results(
    sizes=(1, 4, 8),
    seed: int = 7,
    gpu: str = "NVIDIA A100-SXM4-80GB",
    busy_wait: bool = True,
    fallbacks: list | None = None,
    tracer: str = "scorep",
    placement: bool = True,
) -> tuple[dict, dict[str, pd.DataFrame]]:
    """metrics.json content and tables of a GPU sweep at ``sizes``: with ``placement``, each world size's
    ranks on GPUs of their own, as analyze records it from run folders (without: bare traces, whose
    placement is unknown)."""
    rng = np.random.default_rng(seed)
    per_ws: dict[str, WorldSizeEntry] = {}
    tables: dict[str, list] = {
        k: [] for k in ("step_partition", "ranking", "streams", "throughput", "timeline", "timeline_phases")
    }
    for ws in sizes:
        steps = _steps(ws, rng)
        ranking = _ranking(ws, steps)
        gpu_m = _gpu_metrics(ws, steps, ranking)
        if busy_wait and ws > 1:
            assert gpu_m.allreduce_kernel_s is not None
            ar = gpu_m.allreduce_kernel_s.median
            gpu_m.busy_wait = BusyWait(
                allreduce_kernel_s=ar,
                transfer_s_at_measured_busbw=ar / 2.5,
                ratio=2.5,
                busbw_GBps=182.0,
                gradient_bytes=468280328,
                buckets=BUCKETS,
                note="AllReduce kernel time per step against the bytes at the measured bus bandwidth",
            )
        reps = [BASE_SAMPLES_PER_S * ws * EFFICIENCY.get(ws, 0.9) * rng.normal(1, 0.01) for _ in range(3)]
        thr = Throughput(
            source="untraced",
            runs=[f"ws{ws}-none-r{i}" for i in range(3)],
            samples_per_s=stat(reps),
            step_time_s=stat([BATCH * ws / x for x in reps]),
            global_batch=BATCH * ws,
            device_type="cuda",
        )
        per_ws[str(ws)] = WorldSizeEntry(
            world_size=ws,
            traced=Traced(
                run=f"ws{ws}-{tracer}-r0",
                tracer=tracer,
                format="otf2" if tracer == "scorep" else "kineto",
                device_type="cuda",
                ranks=list(range(ws)),
                measured_steps=STEPS,
                gpu=gpu_m,
                sanity=_sanity(),
                completeness=_completeness(ws),
                placement=own_gpus_placement(ws) if placement else None,
            ),
            throughput=thr,
            dilation=1.04,
            busy_wait=gpu_m.busy_wait,
            efficiency_baseline="1-GPU run with the DDP wrapper (world size 1 over NCCL/gloo)",
        )
        tables["step_partition"].append(steps)
        tables["ranking"].append(ranking)
        tables["streams"].append(
            pd.DataFrame(
                [
                    {"world_size": ws, "rank": r, "stream": s, "busy_s_per_step": 0.04, "role": role}
                    for r in range(ws)
                    for s, role in ([(COMPUTE_STREAM, "compute")] + ([(NCCL_STREAM, "nccl")] if ws > 1 else []))
                ]
            )
        )
        tables["throughput"].append(
            pd.DataFrame(
                [
                    {
                        "world_size": ws,
                        "run": f"ws{ws}-none-r{i}",
                        "tracer": "none",
                        "variant": "ddp",
                        "repeat": i,
                        "samples_per_s": x,
                        "step_time_s": BATCH * ws / x,
                        "global_batch": BATCH * ws,
                        "status": "ok",
                    }
                    for i, x in enumerate(reps)
                ]
            )
        )
    one = per_ws.get("1")
    base = one.throughput.samples_per_s if one and one.throughput else None
    for key, e in per_ws.items():
        sps = e.throughput.samples_per_s if e.throughput else None
        if base and sps:
            n = int(key)
            e.efficiency = sps.median / (n * base.median)
            assert sps.min and sps.max and base.min and base.max
            e.efficiency_spread = EfficiencySpread(
                min=sps.min / (n * base.max), max=sps.max / (n * base.min), runs_n=3, baseline_runs_n=3
            )
    tl, tp = _timeline(max(sizes), rng)
    tables["timeline"].append(tl)
    tables["timeline_phases"].append(tp)
    metrics = MetricsFile(
        created="2026-01-01T00:00:00+00:00",
        label=f"{gpu}, world sizes {', '.join(map(str, sizes))}, tracer {tracer}",
        sources=["runs/"],
        world_sizes=per_ws,
        measured_world_sizes=list(sizes),
        fallbacks=list(fallbacks or []),
        provenance=_provenance("cuda", gpu),
    )
    return metrics.to_json(), {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in tables.items()}


CPU_REASON = (
    "CPU run (gloo, no GPU): the traces hold no GPU activity, so the GPU-time metrics "
    "(partition, NCCL, overlap, AllReduce vs backward) cannot be measured"
)


def cpu_results(sizes=(1, 2)) -> tuple[dict, dict[str, pd.DataFrame]]:
    """A CPU smoke run: traced runs without GPU activity, untraced throughput on CPU."""
    per_ws: dict[str, WorldSizeEntry] = {}
    thr_rows = []
    for ws in sizes:
        reps = [40.0 * ws * (1.0 if ws == 1 else 0.55) + i for i in range(2)]
        per_ws[str(ws)] = WorldSizeEntry(
            world_size=ws,
            traced=Traced(
                run=f"ws{ws}-torch-r0",
                tracer="torch",
                device_type="cpu",
                measured_steps=8,
                gpu_not_run_reason=CPU_REASON,
                sanity=_sanity(gpu_streams=None),
            ),
            throughput=Throughput(
                source="untraced",
                runs=[f"ws{ws}-none-r{i}" for i in range(2)],
                samples_per_s=stat(reps),
                step_time_s=stat([8 * ws / x for x in reps]),
                global_batch=8 * ws,
                device_type="cpu",
            ),
            dilation=1.3,
            efficiency_baseline="1-GPU run with the DDP wrapper (world size 1 over NCCL/gloo)",
        )
        thr_rows += [
            {
                "world_size": ws,
                "run": f"ws{ws}-none-r{i}",
                "tracer": "none",
                "variant": "ddp",
                "repeat": i,
                "samples_per_s": x,
                "step_time_s": 8 * ws / x,
                "global_batch": 8 * ws,
                "status": "ok",
            }
            for i, x in enumerate(reps)
        ]
    one = per_ws.get("1")
    base = one.throughput.samples_per_s if one and one.throughput else None
    for key, e in per_ws.items():
        sps = e.throughput.samples_per_s if e.throughput else None
        if base and sps:
            e.efficiency = sps.median / (int(key) * base.median)
    fallbacks = [
        {
            "what": "device",
            "used": "CPU with gloo",
            "reason": "no CUDA device visible (torch.cuda.is_available() is False)",
            "runs": [f"ws{n}-torch-r0" for n in sizes],
        },
        {
            "what": "weights",
            "used": "random initialisation from the 'tiny' config",
            "reason": "no --weights given",
            "runs": [f"ws{n}-torch-r0" for n in sizes],
        },
        {
            "what": "data",
            "used": "synthetic planted-motif task shaped like prom_core_all",
            "reason": "no GUE folder given",
            "runs": [f"ws{n}-torch-r0" for n in sizes],
        },
    ]
    metrics = MetricsFile(
        created="2026-01-01T00:00:00+00:00",
        label=f"CPU (gloo), world sizes {', '.join(map(str, sizes))}, tracer torch",
        sources=["smoke/runs"],
        world_sizes=per_ws,
        measured_world_sizes=list(sizes),
        fallbacks=fallbacks,
        provenance=_provenance("cpu", None),
    )
    metrics_json = metrics.to_json()
    empty = {k: pd.DataFrame() for k in ("step_partition", "ranking", "streams", "timeline", "timeline_phases")}
    return metrics_json, {**empty, "throughput": pd.DataFrame(thr_rows)}


def write_results(folder: Path, metrics: dict, tables: dict[str, pd.DataFrame]) -> Path:
    folder = Path(folder)
    (folder / "tables").mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    for name, df in tables.items():
        df.to_csv(folder / "tables" / f"{name}.csv", index=False)
    return folder


# ---- variants ------------------------------------------------------------------------------


def copy_metrics(metrics: dict) -> dict:
    return copy.deepcopy(metrics)


def set_metric(metrics: dict, ws: int, path: str, value: Any) -> dict:
    """Set ``path`` (dotted) in world size ``ws``'s entry; returns metrics for chaining."""
    node = metrics["world_sizes"][str(ws)]
    parts = path.split(".")
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value
    return metrics


def set_efficiency(metrics: dict, ws: int, value: float) -> dict:
    """World size ``ws`` at efficiency ``value`` as a measurement would give it: its untraced samples/s
    scaled to that figure, and efficiency and its spread what the file's samples/s then give (a bare
    edit of efficiency contradicts the file's own throughput and is refused)."""
    entry, one = metrics["world_sizes"][str(ws)], metrics["world_sizes"]["1"]
    sps, base = entry["throughput"]["samples_per_s"], one["throughput"]["samples_per_s"]
    scale = value * ws * base["median"] / sps["median"]
    for key in ("median", "p10", "p90", "min", "max"):
        sps[key] *= scale
    entry["efficiency"] = sps["median"] / (ws * base["median"])
    if entry.get("efficiency_spread"):
        entry["efficiency_spread"].update(min=sps["min"] / (ws * base["max"]), max=sps["max"] / (ws * base["min"]))
    return metrics


def drop_ws(metrics: dict, *sizes: int) -> dict:
    for ws in sizes:
        metrics["world_sizes"].pop(str(ws), None)
    metrics["measured_world_sizes"] = sorted(int(k) for k in metrics["world_sizes"])
    return metrics


def break_sanity(metrics: dict, ws: int, item: str = "all_ranks_present", problem: str = "rank summaries for [0, 1, 2]") -> dict:
    sanity = metrics["world_sizes"][str(ws)]["traced"]["sanity"]
    sanity[item] = False
    sanity["problems"] = [problem]
    return metrics


# ---- headless Chromium over the DevTools pipe -----------------------------------------------


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    """A headless Chromium, driven with DevTools protocol messages on a pipe."""

    def __init__(self, binary: str, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # the protocol pipe must be fds 3 (read) and 4 (write) in Chromium
            import fcntl

            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 100)  # out of the way first: no clobbering
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 100)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--user-data-dir={self.profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        self.log = open(Path(self.profile) / "chromium.log", "wb")
        # close_fds=False: Python would close fds 3 and 4 after preexec_fn; its own fds are
        # non-inheritable (close-on-exec) anyway, so nothing else leaks into Chromium
        self.proc = subprocess.Popen(
            args, preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next_id = 0
        self._events: list[dict] = []
        self.session: str | None = None

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        return self._next_id

    def _read_message(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    log = (Path(self.profile) / "chromium.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"Chromium closed the DevTools pipe; its log ends: {log}")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        mid = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self._events.append(msg)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, msg in enumerate(self._events):
                if msg.get("method") == method:
                    return self._events.pop(i)
            msg = self._read_message(deadline)
            if "method" in msg:
                self._events.append(msg)

    def open(self, url: str, width: int = 1200, height: int = 900) -> str:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            self.session,
        )
        self.call("Page.enable", {}, self.session)
        self._events.clear()
        nav = self.call("Page.navigate", {"url": url}, self.session)
        if nav.get("errorText"):
            raise RuntimeError(f"cannot open {url}: {nav['errorText']}")
        self.wait_event("Page.loadEventFired")
        return self.session

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, self.session)
        if "exceptionDetails" in res:
            raise RuntimeError(f"page script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("({w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight})")
            params.update(
                {
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": size["w"], "height": min(size["h"], 16000), "scale": 1},
                }
            )
        data = self.call("Page.captureScreenshot", params, self.session)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# the page is ready when loaded and every <img> has finished (loaded or failed)
IMAGES_JS = """
new Promise(resolve => {
  const done = () => Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.onload = img.onerror = r; }))).then(() => resolve({
    ready: document.readyState,
    title: document.title,
    h1: (document.querySelector('h1') || {}).textContent || null,
    images: Array.from(document.images).map(img => ({w: img.naturalWidth, h: img.naturalHeight,
        src: img.src.slice(0, 30), alt: img.alt})),
    external: Array.from(document.querySelectorAll('script[src], link[href], img[src]'))
        .map(e => e.src || e.href).filter(u => u && !u.startsWith('data:') && !u.startsWith('about:')),
    text: document.body.innerText.length,
    sections: Array.from(document.querySelectorAll('h2')).map(h => h.textContent.replace('¶', '').trim()),
  }));
  if (document.readyState === 'complete') done(); else window.addEventListener('load', done);
})
"""
