"""One rank of DNABERT-2 fine-tuning under DDP (``dnabert-scaling train``).

Start one process per GPU (torchrun, srun, or the sweep). Each rank writes
``<out>/rank<R>/steps.jsonl`` (one line per step, as soon as the step's timing is known) and
``<out>/rank<R>/summary.json``; rank 0 writes the run's ``<out>/summary.json`` at the end.

This module is the orchestrator: device, process group, model and DDP, the warm-up and measured
steps, teardown. Its parts, one job each: ``train_options`` (the options and their checks),
``train_data`` (the task and the rank's batches), ``train_step`` (one optimisation step, shared with
the benchmarks), ``train_log`` (the step timing without added syncs, ``steps.jsonl``, the
summaries), ``train_rundir`` (claiming the run folder, ``config.json``, a failed rank's files). The
names other modules, scripts and tests use are importable from here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.provenance import Fallback
from dnabert_scaling.tokenizer import PAD_ID
from dnabert_scaling.train_data import prepare_data
from dnabert_scaling.train_log import StepTimer, median, param_fingerprint
from dnabert_scaling.train_options import DIST_TIMEOUT_S, ENV_GUE, ENV_WEIGHTS, add_arguments, parse_fault
from dnabert_scaling.train_rundir import claim_run_dir, record_failure, write_config
from dnabert_scaling.train_step import TrainStep, build_optimizer, linear_schedule

__all__ = [
    "DIST_TIMEOUT_S",
    "ENV_GUE",
    "ENV_WEIGHTS",
    "TRAINING_LOOP",
    "StepTimer",
    "TrainStep",
    "add_arguments",
    "build_optimizer",
    "linear_schedule",
    "pin_cpu_threads",
    "run",
]


# --- set-up ------------------------------------------------------------------------------------


def _device(args, fallbacks: list[Fallback]):
    import torch

    if args.device == "cpu":
        fallbacks.append(Fallback("device", "CPU with gloo", "--device cpu given"))
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    if args.device == "cuda":
        raise ArtifactError("--device cuda: no CUDA device is visible to this process")
    fallbacks.append(Fallback("device", "CPU with gloo", "no CUDA device visible (torch.cuda.is_available() is False)"))
    return "cpu"


def _precision(args, device_type: str, deviations: list[str]):
    import torch

    choice = args.precision
    if choice == "auto":
        if device_type == "cuda":
            choice = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        else:
            choice = "fp32"
    if choice == "bf16" and device_type == "cuda":
        deviations.append("bf16 autocast instead of the recipe's fp16 (no loss scaler, so no host sync per step)")
    return choice, {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[choice]


def _build_model(args, num_labels: int, fallbacks: list[Fallback]):
    from dnabert_scaling.model import build_model, load_pretrained

    weights = args.weights or os.environ.get(ENV_WEIGHTS)
    if weights:
        model, report = load_pretrained(weights, num_labels=num_labels, attention=args.attention)
        return model, {"source": "pretrained", **report.as_dict()}
    fallbacks.append(
        Fallback(
            "weights",
            f"random initialisation from the {args.model!r} config",
            f"no --weights and ${ENV_WEIGHTS} is not set; GPU time depends on shapes, not weights",
        )
    )
    return build_model(args.model, num_labels=num_labels, attention=args.attention), {"source": "random-init"}


TRAINING_LOOP = "dnabert_scaling.train: own loop (forward, backward, AdamW step per batch), not the HF Trainer"


def pin_cpu_threads(deviations: list[str]) -> int:
    """Intra-op threads of a CPU rank: $OMP_NUM_THREADS, else 1, at every world size.

    torchrun sets OMP_NUM_THREADS=1 only when it starts more than one process, so without this a
    1-rank CPU run would use every core and 2 ranks one core each: a scaling figure of threads,
    not of ranks."""
    import torch

    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    try:
        threads = max(1, int(raw)) if raw else 1
    except ValueError:
        raise ArtifactError(f"OMP_NUM_THREADS={raw!r} is not a whole number of threads") from None
    torch.set_num_threads(threads)
    # one wording whether torchrun set the variable (more than one rank) or not, so runs agree
    deviations.append(f"CPU run: {threads} intra-op thread(s) per rank at every world size ($OMP_NUM_THREADS, else 1)")
    return threads


# --- the run ------------------------------------------------------------------------------------


def _maybe_reexec_under_scorep(args, info) -> None:
    """``--tracer scorep|auto`` outside Score-P: restart this rank under ``python -m scorep``."""
    if args.tracer not in ("scorep", "auto"):
        return
    from dnabert_scaling.tracing import resolve_tracer
    from dnabert_scaling.tracing.scorep import scorep_command, under_scorep

    if under_scorep():
        return
    tracer, _ = resolve_tracer(args.tracer, model=args.model)
    if tracer != "scorep":
        return
    argv = [a for a in sys.argv[1:]]
    if argv and argv[0] == "train":
        argv = argv[1:]
    argv = _replace_option(argv, "--tracer", "scorep")
    cmd, env = scorep_command(
        sys.executable,
        ["-m", "dnabert_scaling", "train", *argv],
        info.rank,
        args.out,
        python_instrumentation=args.scorep_python,
    )
    if args.tracer == "auto":  # the preflight that let auto use Score-P, into the provenance
        from dnabert_scaling.tracing.preflight import ENV_RESULT, result_path

        env[ENV_RESULT] = str(result_path())
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, {**os.environ, **env})


def _replace_option(argv: list[str], name: str, value: str) -> list[str]:
    """``argv`` with every ``name X`` / ``name=X`` removed and ``name value`` appended."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == name:
            skip = True
            continue
        if a.startswith(name + "="):
            continue
        out.append(a)
    return [*out, name, value]


def run(args: argparse.Namespace) -> int:
    from dnabert_scaling.distributed import rank_info

    from dnabert_scaling.outputs import writable_dir
    from dnabert_scaling.tracing.scorep import under_scorep

    info = rank_info()
    fault = parse_fault(args.inject_fault)
    args.out = Path(args.out).resolve()
    if not under_scorep():  # checked (and cleaned) once, before the re-exec under Score-P
        writable_dir(args.out, "--out", create=True)
        claim_run_dir(args.out, info, args.overwrite)
    rank_dir = RunLayout(args.out).rank_dir(info.rank)
    rank_dir.mkdir(parents=True, exist_ok=True)
    _maybe_reexec_under_scorep(args, info)
    try:
        return _run(args, info, rank_dir, fault)
    except BaseException as exc:
        record_failure(rank_dir, info, exc)
        if isinstance(exc, ArtifactError):
            raise
        print(f"dnabert-scaling train: rank {info.rank}: failed: {exc!r} (details in {rank_dir / layout.ERROR})", file=sys.stderr)
        sys.stderr.flush()
        # Peers may be blocked in a collective; do not wait for a clean process-group shutdown.
        os._exit(1)


def _run(args, info, rank_dir: Path, fault) -> int:
    import torch
    import torch.distributed as dist

    from dnabert_scaling import provenance
    from dnabert_scaling.distributed import init_process_group
    from dnabert_scaling.model import count_parameters
    from dnabert_scaling.phases import PhaseMarker
    from dnabert_scaling.tracing import NullTracer, resolve_tracer

    fallbacks: list[Fallback] = []
    deviations: list[str] = []
    device_type = _device(args, fallbacks)
    tracer_name, tracer_fallback = resolve_tracer(args.tracer, model=args.model)
    if tracer_fallback:
        fallbacks.append(tracer_fallback)
    cpu_threads = None
    if device_type == "cuda":
        local = info.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
        cpu_threads = pin_cpu_threads(deviations)
    torch.manual_seed(args.seed)
    use_ddp = not args.no_ddp
    if args.no_ddp and info.world_size > 1:
        raise ArtifactError("--no-ddp is only for world size 1")
    backend = None
    ddp_kwargs: dict[str, Any] | None = None
    if use_ddp:
        backend = init_process_group(info, device_type, args.dist_timeout)
    task = prepare_data(args, info.rank, fallbacks)
    model, weights_info = _build_model(args, task.num_labels, fallbacks)
    model.to(device)
    if use_ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        ddp_kwargs = dict(
            bucket_cap_mb=args.bucket_cap_mb,
            find_unused_parameters=args.find_unused_parameters == "true",
            broadcast_buffers=args.broadcast_buffers == "true",
            gradient_as_bucket_view=args.gradient_as_bucket_view,
            static_graph=args.static_graph,
        )
        if device_type == "cuda":
            ddp_kwargs["device_ids"] = [device.index]
        train_model = DDP(model, **ddp_kwargs)
    else:
        train_model = model
    optimizer = build_optimizer(model, args, device_type)
    total_steps = args.warmup_steps + args.steps
    scheduler = linear_schedule(optimizer, args.lr_warmup_steps, total_steps)
    precision, amp_dtype = _precision(args, device_type, deviations)
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None

    # Rank shard of a per-epoch permutation (DistributedSampler semantics, drop_last).
    train = task.splits["train"].with_format("numpy")[:]
    ids_all = torch.from_numpy(train["input_ids"]).long()
    labels_all = torch.from_numpy(train["labels"]).long()
    if device_type == "cuda":
        ids_all, labels_all = ids_all.pin_memory(), labels_all.pin_memory()
    per_rank = len(labels_all) // info.world_size
    if per_rank < args.batch_size:
        raise ArtifactError(
            f"task {task.name}: {len(labels_all)} training rows give each of {info.world_size} ranks "
            f"{per_rank} rows, fewer than one batch of {args.batch_size}",
            task.folder / "train.csv",
        )
    batches_per_epoch = per_rank // args.batch_size
    epoch_rows: dict[int, Any] = {}

    def batch(step: int):
        epoch, index = divmod(step, batches_per_epoch)
        if epoch not in epoch_rows:
            gen = torch.Generator().manual_seed(args.seed + epoch)
            epoch_rows.clear()
            epoch_rows[epoch] = torch.randperm(len(labels_all), generator=gen)[info.rank :: info.world_size][:per_rank]
        rows = epoch_rows[epoch][index * args.batch_size : (index + 1) * args.batch_size]
        ids = ids_all[rows].to(device, non_blocking=True)
        return ids, (ids != PAD_ID), labels_all[rows].to(device, non_blocking=True)

    marker = PhaseMarker("scorep" if tracer_name == "scorep" else "torch", cuda=device_type == "cuda")
    bucket_hook = None
    if use_ddp and (args.bucket_hook == "on" or (args.bucket_hook == "auto" and tracer_name in ("torch", "scorep"))):
        from dnabert_scaling.buckets import BucketHook

        bucket_hook = BucketHook(marker).register(train_model)
        deviations.append(
            "DDP bucket hook on (ds:bucket ranges for predict): a Python comm hook instead of DDP's "
            "built-in all-reduce, same arithmetic, slower host side (make bench-hook)"
        )
    if tracer_name == "torch":
        from dnabert_scaling.tracing.torch_profiler import TorchProfilerTracer

        tracer = TorchProfilerTracer(
            RunLayout(args.out).kineto_trace(info.rank),
            args.warmup_steps,
            args.steps,
            device_type,
            cpu_ops=args.trace_cpu_ops,
            rank=info.rank,
            world_size=info.world_size,
            backend=backend,
        )
    else:
        tracer = NullTracer()

    prov = provenance.collect(device_type)
    if info.rank == 0:
        write_config(args, info)
    timer = StepTimer(device_type, rank_dir / layout.STEPS)
    train_model.train()
    progress = None
    if info.rank == 0 and not args.no_progress:
        from tqdm import tqdm

        progress = tqdm(total=total_steps, desc=f"train ws={info.world_size}", unit="step", file=sys.stderr, mininterval=1.0)
    autocast = torch.autocast(device_type=device_type, dtype=amp_dtype, enabled=amp_dtype is not None)
    train_step = TrainStep(train_model, model, optimizer, scheduler, autocast, scaler, args.max_grad_norm, marker)
    t_measure = None
    with tracer:
        for step in range(total_steps):
            measured = step >= args.warmup_steps
            if measured and t_measure is None:
                t_measure = time.perf_counter()
            tracer.step_begin(step)
            ids, mask, labels = batch(step)
            rec = timer.start(step, measured)
            inject = None
            if fault is not None and fault == (info.rank, step):
                inject = f"injected fault on rank {info.rank} at step {step} (--inject-fault)"
            loss, hp = train_step(ids, mask, labels, measured, inject_fault=inject)
            timer.end(rec, loss, scheduler.get_last_lr()[0], hp)
            tracer.step_end(step)
            if progress is not None:
                progress.update(1)
    records = timer.finish()
    wall_measured = time.perf_counter() - (t_measure or time.perf_counter())
    if progress is not None:
        progress.close()

    accuracy = _evaluate(model, task, device, info, autocast, args) if args.eval else None

    measured_recs = [r for r in records if r["measured"]]
    losses = [r["loss"] for r in records]
    global_batch = args.batch_size * info.world_size
    med = median([r["step_time_s"] for r in measured_recs])
    rank_summary = {
        "status": "ok",
        "rank": info.rank,
        "local_rank": info.local_rank,
        "device": str(device),
        "measured_steps": len(measured_recs),
        "median_step_time_s": med,
        "median_step_busy_s": median([r["step_busy_s"] for r in measured_recs]),
        "wall_measured_s": wall_measured,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "finite_loss": all(math.isfinite(x) for x in losses),
        "dev_accuracy": accuracy,
        "param_sha256": param_fingerprint(model) if args.param_fingerprint else None,
        "trace": str(tracer.path) if tracer.path else None,
        "provenance": prov,
    }
    (rank_dir / layout.SUMMARY).write_text(json.dumps(rank_summary, indent=2) + "\n")

    gathered = [rank_summary]
    if dist.is_initialized() and info.world_size > 1:
        gathered = [None] * info.world_size
        light = {k: v for k, v in rank_summary.items() if k != "provenance"}
        dist.all_gather_object(gathered, light)
    if info.rank == 0:
        slowest = max((g["median_step_time_s"] or 0.0) for g in gathered)
        summary = {
            "status": "ok",
            "world_size": info.world_size,
            "launcher": info.source,
            "backend": backend,
            "ddp": use_ddp,
            "ddp_options": ddp_kwargs,
            "ddp_buckets": bucket_hook.summary(args.bucket_cap_mb) if bucket_hook else None,
            "device_type": device_type,
            "tracer": tracer_name,
            "tracer_requested": args.tracer,
            "trace_mode": getattr(tracer, "mode", None),
            "precision": precision,
            "attention": args.attention,
            "optimizer_impl": args.optimizer_impl,
            "training_loop": TRAINING_LOOP,
            "cpu_threads_per_rank": cpu_threads,
            "model": args.model,
            "parameters": count_parameters(model),
            "weights": weights_info,
            "task": task.describe(),
            "batch_size_per_rank": args.batch_size,
            "global_batch": global_batch,
            "seq_len_tokens": task.seq_len,
            "warmup_steps": args.warmup_steps,
            "measured_steps": args.steps,
            "median_step_time_s": slowest,
            "samples_per_s": global_batch / slowest if slowest else None,
            "tokens_per_s": global_batch * task.seq_len / slowest if slowest else None,
            "finite_loss": all(g["finite_loss"] for g in gathered),
            "dev_accuracy": accuracy,
            "ranks": gathered,
            "fallbacks": [f.as_dict() for f in fallbacks],
            "deviations": deviations,
            "provenance": prov,
        }
        RunLayout(args.out).summary.write_text(json.dumps(summary, indent=2) + "\n")
        print(
            f"ws={info.world_size} {device_type} tracer={tracer_name}: median step {slowest * 1e3:.2f} ms, "
            f"{summary['samples_per_s']:.1f} samples/s, loss {losses[0]:.4f} -> {losses[-1]:.4f}"
            + (f", dev accuracy {accuracy:.3f}" if accuracy is not None else ""),
            file=sys.stderr,
        )
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return 0


def _evaluate(model, task, device, info, autocast, args) -> float | None:
    import torch
    import torch.distributed as dist

    if "dev" not in task.splits:
        return None
    dev = task.splits["dev"].with_format("numpy")[:]
    ids_all, labels_all = torch.from_numpy(dev["input_ids"]).long(), torch.from_numpy(dev["labels"]).long()
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total = torch.zeros((), dtype=torch.long, device=device)
    with torch.no_grad():
        for start in range(info.rank * 16, len(labels_all), 16 * info.world_size):
            ids = ids_all[start : start + 16].to(device)
            labels = labels_all[start : start + 16].to(device)
            with autocast:
                logits = model(ids, ids != PAD_ID).logits
            correct += (logits.argmax(-1) == labels).sum()
            total += labels.numel()
    if dist.is_initialized() and info.world_size > 1:
        both = torch.stack([correct, total])
        dist.all_reduce(both)
        correct, total = both[0], both[1]
    model.train()
    return float(correct.item()) / max(1, int(total.item()))
