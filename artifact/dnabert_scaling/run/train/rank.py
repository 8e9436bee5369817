"""One rank of DNABERT-2 fine-tuning under DDP (``dnabert-scaling train``).

Start one process per GPU (torchrun, srun, or the sweep). Each rank writes
``<out>/rank<R>/steps.jsonl`` (one line per step, as soon as the step's timing is known) and
``<out>/rank<R>/summary.json``; rank 0 writes the run's ``<out>/summary.json`` at the end.

This module is the orchestrator: device, process group, model and DDP, the warm-up and measured
steps, teardown. Its parts, one job each: ``options`` (the options and their checks),
``task`` (the task and the rank's batches), ``step`` (one optimisation step, shared with
the benchmarks), ``log`` (the step timing without added syncs, ``steps.jsonl``, the
summaries), ``rundir`` (claiming the run folder, ``config.json``, a failed rank's files, SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.provenance import BUCKET_HOOK_DEVIATION, Fallback
from dnabert_scaling.run.workload.tokenizer import PAD_ID
from dnabert_scaling.run.train.task import RankBatches, prepare_data, seq_len_note
from dnabert_scaling.run.train.log import (
    StepTimer,
    gather_rank_summaries,
    param_fingerprint,
    rank_summary,
    result_line,
    run_summary,
    write_summary,
)
from dnabert_scaling.run.train.options import ENV_WEIGHTS, add_arguments, check_run_options, omp_threads
from dnabert_scaling.run.train.rundir import Terminated, claim_run_dir, raise_on_sigterm, record_failure, write_config
from dnabert_scaling.run.train.step import TrainStep, build_optimizer, linear_schedule

__all__ = ["add_arguments", "run"]  # the subcommand (cli.py); the parts are imported from their own modules


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
    """The model, what its weights are, and the name of the config it was built from (with weights:
    the checkpoint's own config, a ``--model`` naming another architecture recorded as a fallback)."""
    from dnabert_scaling.run.train.inputs import resolve_model
    from dnabert_scaling.run.workload.model import build_model, load_pretrained

    chosen = resolve_model(args)
    if chosen.fallback is not None:
        fallbacks.append(chosen.fallback)
    if chosen.weights is not None:
        model, report = load_pretrained(chosen.weights, num_labels=num_labels, attention=args.attention)
        return model, {"source": "pretrained", "config": chosen.name, **report.as_dict()}, chosen.name
    fallbacks.append(
        Fallback(
            "weights",
            f"random initialisation from the {args.model!r} config",
            f"no --weights and ${ENV_WEIGHTS} is not set; GPU time depends on shapes, not weights",
        )
    )
    return build_model(chosen.cfg, num_labels=num_labels, attention=args.attention), {"source": "random-init"}, chosen.name


TRAINING_LOOP = "dnabert_scaling.run.train.rank: own loop (forward, backward, AdamW step per batch), not the HF Trainer"


def pin_cpu_threads(deviations: list[str]) -> int:
    """Intra-op threads of a CPU rank: $OMP_NUM_THREADS, else 1, at every world size.

    torchrun sets OMP_NUM_THREADS=1 only when it starts more than one process, so without this a
    1-rank CPU run would use every core and 2 ranks one core each: a scaling figure of threads,
    not of ranks."""
    import torch

    threads = omp_threads()
    torch.set_num_threads(threads)
    # one wording whether torchrun set the variable (more than one rank) or not, so runs agree
    deviations.append(f"CPU run: {threads} intra-op thread(s) per rank at every world size ($OMP_NUM_THREADS, else 1)")
    return threads


# --- the run ------------------------------------------------------------------------------------


def _maybe_reexec_under_scorep(args, info) -> None:
    """``--tracer scorep|auto`` outside Score-P: restart this rank under ``python -m scorep``."""
    if args.tracer not in ("scorep", "auto"):
        return
    from dnabert_scaling.run.tracing import resolve_tracer
    from dnabert_scaling.run.tracing.scorep import scorep_command, under_scorep

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
        steps=args.warmup_steps + args.steps,
    )
    if args.tracer == "auto":  # the preflight that let auto use Score-P, into the provenance
        from dnabert_scaling.run.tracing.preflight import ENV_RESULT, result_path

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
    from dnabert_scaling.run.train.distributed import rank_info

    from dnabert_scaling.outputs import refuse_link, writable_dir
    from dnabert_scaling.run.train.inputs import check_inputs
    from dnabert_scaling.run.tracing.scorep import under_scorep

    info = rank_info()
    fault = check_run_options(args, info)  # the options that need the world: refused before anything is written
    if not under_scorep():
        refuse_link(args.out, "--out")  # before it is resolved: the output rule of every command
    args.out = Path(args.out).resolve()
    if not under_scorep():  # checked (and cleaned) once, before the re-exec under Score-P
        check_inputs(args, args.out, info.world_size)  # before --overwrite deletes anything in --out
        writable_dir(args.out, "--out", into_runs=True)
        claim_run_dir(args.out, info, args.overwrite)  # refuses a sweep, foreign files, an earlier run
        writable_dir(args.out, "--out", create=True, into_runs=True)
    rank_dir = RunLayout(args.out).rank_dir(info.rank)
    rank_dir.mkdir(parents=True, exist_ok=True)
    _maybe_reexec_under_scorep(args, info)
    raise_on_sigterm()
    try:
        return _run(args, info, rank_dir, fault)
    except BaseException as exc:
        record_failure(rank_dir, info, exc)
        if isinstance(exc, ArtifactError):
            raise
        what = str(exc) if isinstance(exc, Terminated) else f"failed: {exc!r}"
        print(f"dnabert-scaling train: rank {info.rank}: {what} (details in {rank_dir / layout.ERROR})", file=sys.stderr)
        sys.stderr.flush()
        # Peers may be blocked in a collective; do not wait for a clean process-group shutdown.
        os._exit(1)


@dataclass
class _Rank:
    """This rank's state: the arguments, then what each set-up step of ``_run`` adds, in order."""

    args: argparse.Namespace
    info: Any  # distributed.RankInfo
    rank_dir: Path
    fault: tuple[int, int] | None  # (rank, step) of --inject-fault
    fallbacks: list[Fallback] = field(default_factory=list)
    deviations: list[str] = field(default_factory=list)
    # _setup_device
    device_type: str = "cpu"
    device: Any = None
    tracer_name: str = "none"
    cpu_threads: int | None = None
    # _setup_process_group
    use_ddp: bool = False
    backend: str | None = None
    # the data and _setup_model
    task: Any = None
    batches: RankBatches | None = None
    model: Any = None  # the bare model (parameters, evaluation, fingerprint)
    model_name: str = ""  # the config the model was built from (summary's "model")
    weights_info: dict[str, Any] | None = None
    train_model: Any = None  # the DDP wrapper, or the model itself without DDP
    ddp_kwargs: dict[str, Any] | None = None
    optimizer: Any = None
    scheduler: Any = None
    precision: str = "fp32"
    amp_dtype: Any = None
    scaler: Any = None
    autocast: Any = None
    # _setup_tracing, then the run
    marker: Any = None
    bucket_hook: Any = None
    tracer: Any = None
    provenance: dict[str, Any] | None = None

    @property
    def total_steps(self) -> int:
        return self.args.warmup_steps + self.args.steps


def _run(args, info, rank_dir: Path, fault) -> int:
    from dnabert_scaling import provenance

    r = _Rank(args, info, rank_dir, fault)
    _setup_device(r)
    _setup_process_group(r)
    r.task = prepare_data(args, info.rank, r.fallbacks)
    r.deviations.extend(filter(None, [seq_len_note(args, r.task, info.rank)]))
    _setup_model(r)
    r.batches = RankBatches(r.task, info, args.batch_size, args.seed, r.device)
    _setup_tracing(r)
    r.provenance = provenance.collect(r.device_type)
    if info.rank == 0:
        write_config(args, info)
    records, wall_measured = _train_loop(r)
    accuracy = _evaluate(r.model, r.task, r.device, info, r.autocast, args) if args.eval else None
    _write_summaries(r, records, wall_measured, accuracy)
    _release_ddp(r)
    _teardown()
    return 0


def _release_ddp(r: _Rank) -> None:
    """Drop the DDP wrapper, its comm hook and the optimizer, and collect them now, while the process
    group and the interpreter are whole: left to the interpreter's exit, DDP's reducer (or a gloo work
    it holds) goes after the process group has ended. Once in three fresh CI runs a two-rank gloo run
    that had finished aborted at exit ("terminate called without an active exception"); whether this
    is that cause was not shown (no local rerun reproduced the abort)."""
    import gc

    r.train_model = r.bucket_hook = r.optimizer = r.scheduler = r.scaler = None
    gc.collect()


def _setup_device(r: _Rank) -> None:
    """The device (a CUDA device by local rank, else the CPU with pinned threads), the tracer, the seed."""
    import torch

    from dnabert_scaling.run.tracing import resolve_tracer, sweep_fallback

    args = r.args
    r.device_type = _device(args, r.fallbacks)
    r.tracer_name, tracer_fallback = resolve_tracer(args.tracer, model=args.model)
    tracer_fallback = tracer_fallback or sweep_fallback(r.tracer_name)  # the sweep chose it for --tracer auto
    if tracer_fallback:
        r.fallbacks.append(tracer_fallback)
    if r.tracer_name == "scorep":  # every driver call recorded: a Score-P without the launch-callbacks patch
        from dnabert_scaling.run.tracing.scorep import driver_callbacks_fallback

        r.fallbacks.extend(filter(None, [driver_callbacks_fallback()]))
    if r.device_type == "cuda":
        local = r.info.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(local)
        r.device = torch.device("cuda", local)
    else:
        r.device = torch.device("cpu")
        r.cpu_threads = pin_cpu_threads(r.deviations)
    torch.manual_seed(args.seed)


def _setup_process_group(r: _Rank) -> None:
    """The process group (NCCL on CUDA, gloo on the CPU), unless ``--no-ddp``."""
    from dnabert_scaling.run.train.distributed import init_process_group

    from dnabert_scaling.run.train.placement import nccl_environment

    r.use_ddp = not r.args.no_ddp  # --no-ddp at a world size above 1 was refused before the run began
    if r.args.rehearse:
        r.fallbacks.append(rehearsal_fallback(r.device_type))
    if r.use_ddp and r.device_type == "cuda":
        os.environ.update(nccl_environment(r.info.rank, RunLayout(r.args.out).nccl_log(r.info.rank), r.args.rehearse))
    if r.use_ddp:
        r.backend = init_process_group(r.info, r.device_type, r.args.dist_timeout)


class RehearsalFallback(Fallback):
    """The rehearsal, as a fallback whose record names its kind (the analysis and the checker key on it)."""

    def as_dict(self) -> dict[str, str]:
        return {"kind": "rehearsal", **super().as_dict()}


def rehearsal_fallback(device_type: str = "cuda") -> Fallback:
    """The rehearsal as this rank ran it: on GPUs, ranks sharing them round-robin with NCCL over loopback
    sockets; on the CPU (``--device cpu --rehearse``, the evidence script's dry run), CPU processes with gloo."""
    if device_type != "cuda":
        return RehearsalFallback(
            "rehearsal",
            "a rehearsal on the CPU (--rehearse): every rank a CPU process, gloo over loopback; no GPU, no NCCL",
            "a dry run of the rehearsal's short schedule without a GPU; its timings are not scaling evidence",
        )
    return RehearsalFallback(
        "rehearsal",
        "ranks placed round-robin on the devices present (--rehearse)",
        "a rehearsal of the NCCL path on fewer GPUs than ranks: ranks share GPUs and talk over loopback sockets; "
        "its timings are not scaling evidence",
    )


def _setup_model(r: _Rank) -> None:
    """The model on its device (wrapped in DDP unless ``--no-ddp``), AdamW, the LR schedule, the precision."""
    import torch

    args = r.args
    r.model, r.weights_info, r.model_name = _build_model(args, r.task.num_labels, r.fallbacks)
    r.model.to(r.device)
    r.train_model = _wrap_ddp(r) if r.use_ddp else r.model
    r.optimizer = build_optimizer(r.model, args, r.device_type)
    r.scheduler = linear_schedule(r.optimizer, args.lr_warmup_steps, r.total_steps)
    r.precision, r.amp_dtype = _precision(args, r.device_type, r.deviations)
    r.scaler = torch.amp.GradScaler("cuda") if r.precision == "fp16" else None
    r.autocast = torch.autocast(device_type=r.device_type, dtype=r.amp_dtype, enabled=r.amp_dtype is not None)


def _wrap_ddp(r: _Rank):
    from torch.nn.parallel import DistributedDataParallel as DDP

    args = r.args
    r.ddp_kwargs = dict(
        bucket_cap_mb=args.bucket_cap_mb,
        find_unused_parameters=args.find_unused_parameters == "true",
        broadcast_buffers=args.broadcast_buffers == "true",
        gradient_as_bucket_view=args.gradient_as_bucket_view,
        static_graph=args.static_graph,
    )
    if r.device_type == "cuda":
        r.ddp_kwargs["device_ids"] = [r.device.index]
    return DDP(r.model, **r.ddp_kwargs)


def _setup_tracing(r: _Rank) -> None:
    """The phase marker, the DDP bucket hook (``--bucket-hook``) and the torch profiler (``--tracer torch``)."""
    from dnabert_scaling.phases import PhaseMarker
    from dnabert_scaling.run.tracing import NullTracer

    args, info = r.args, r.info
    r.marker = PhaseMarker("scorep" if r.tracer_name == "scorep" else "torch", cuda=r.device_type == "cuda")
    if r.use_ddp and (args.bucket_hook == "on" or (args.bucket_hook == "auto" and r.tracer_name in ("torch", "scorep"))):
        from dnabert_scaling.run.train.buckets import BucketHook

        r.bucket_hook = BucketHook(r.marker).register(r.train_model)
        r.deviations.append(BUCKET_HOOK_DEVIATION)
    if r.tracer_name == "torch":
        from dnabert_scaling.run.tracing.torch_profiler import TorchProfilerTracer

        r.tracer = TorchProfilerTracer(
            RunLayout(args.out).kineto_trace(info.rank),
            args.warmup_steps,
            args.steps,
            r.device_type,
            cpu_ops=args.trace_cpu_ops,
            rank=info.rank,
            world_size=info.world_size,
            backend=r.backend,
        )
    else:
        r.tracer = NullTracer()


def _train_loop(r: _Rank) -> tuple[list[dict[str, Any]], float]:
    """The warm-up and measured steps; returns the step records and the measured steps' wall time.

    Nothing here waits for the GPU: ``StepTimer`` records events and reads them back without
    blocking (its ``finish`` synchronises once, after the last step)."""

    args, info = r.args, r.info
    total_steps = r.total_steps
    timer = StepTimer(r.device_type, r.rank_dir / layout.STEPS)
    r.train_model.train()
    progress = None
    if info.rank == 0 and not args.no_progress:
        from tqdm import tqdm

        progress = tqdm(total=total_steps, desc=f"train ws={info.world_size}", unit="step", file=sys.stderr, mininterval=1.0)
    train_step = TrainStep(r.train_model, r.model, r.optimizer, r.scheduler, r.autocast, r.scaler, args.max_grad_norm, r.marker)
    tracer, batch, scheduler, fault = r.tracer, r.batches, r.scheduler, r.fault
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
    return records, wall_measured


def _write_summaries(r: _Rank, records: list[dict[str, Any]], wall_measured: float, accuracy: float | None) -> None:
    """Each rank's ``rank<R>/summary.json``; rank 0 gathers them into the run's ``summary.json``."""
    args, info = r.args, r.info
    mine = rank_summary(
        records,
        info=info,
        device=r.device,
        wall_measured_s=wall_measured,
        accuracy=accuracy,
        param_sha256=param_fingerprint(r.model) if args.param_fingerprint else None,
        trace=str(r.tracer.path) if r.tracer.path else None,
        provenance=r.provenance,
        placement=_placement(r),
    )
    write_summary(r.rank_dir / layout.SUMMARY, mine)
    gathered = gather_rank_summaries(mine, info)
    if info.rank == 0:
        fallbacks = [f.as_dict() for f in r.fallbacks]
        summary = run_summary(
            _run_config(r), gathered, accuracy=accuracy, fallbacks=fallbacks, deviations=r.deviations, provenance=r.provenance
        )
        write_summary(RunLayout(args.out).summary, summary)
        print(result_line(summary, mine), file=sys.stderr)


def _placement(r: _Rank) -> dict[str, Any]:
    """Where this rank ran (GPU identity, host, visible devices) and the NCCL transports its log names."""
    from dnabert_scaling.run.train.placement import gpu_identity, nccl_transports

    log = RunLayout(r.args.out).nccl_log(r.info.rank)
    try:
        identity = gpu_identity(r.device)
    except Exception as exc:  # the run is done; an unreadable identity makes the placement unknown, not the run failed
        identity = {"error": f"the GPU identity could not be read: {exc!r}"}
    return {
        **identity,
        "rehearsal": bool(r.args.rehearse),
        "nccl_log": log.name if log.is_file() else None,
        "transports": nccl_transports(log) if r.backend == "nccl" else [],
    }


def _run_config(r: _Rank) -> dict[str, Any]:
    """The set-up part of the run's ``summary.json``: launcher, DDP, device, tracer, model, task, schedule."""
    from dnabert_scaling.run.workload.model import count_parameters

    args, info = r.args, r.info
    return {
        "world_size": info.world_size,
        "launcher": info.source,
        "backend": r.backend,
        "ddp": r.use_ddp,
        "ddp_options": r.ddp_kwargs,
        "ddp_buckets": r.bucket_hook.summary(args.bucket_cap_mb) if r.bucket_hook else None,
        "device_type": r.device_type,
        "rehearsal": bool(args.rehearse),
        "tracer": r.tracer_name,
        "tracer_requested": args.tracer,
        "trace_mode": getattr(r.tracer, "mode", None),
        "precision": r.precision,
        "attention": args.attention,
        "optimizer_impl": args.optimizer_impl,
        "training_loop": TRAINING_LOOP,
        "cpu_threads_per_rank": r.cpu_threads,
        "model": r.model_name,
        "parameters": count_parameters(r.model),
        "weights": r.weights_info,
        "task": r.task.describe(),
        "batch_size_per_rank": args.batch_size,
        "global_batch": args.batch_size * info.world_size,
        "seq_len_tokens": r.task.seq_len,
        "warmup_steps": args.warmup_steps,
        "measured_steps": args.steps,
    }


def _teardown() -> None:
    """Wait for every rank, then end the process group (a rank that failed never gets here)."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


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
