"""One rank of DNABERT-2 fine-tuning under DDP (``dnabert-scaling train``).

Start one process per GPU (torchrun, srun, or the sweep). Each rank writes
``<out>/rank<R>/steps.jsonl`` (one line per step, as soon as the step's timing is known) and
``<out>/rank<R>/summary.json``; rank 0 writes the run's ``<out>/summary.json`` at the end.

Timing adds no synchronisation inside the step: on CUDA each step records two CUDA events on the
compute stream, read back later with a non-blocking ``query()`` (and a final synchronize after the
last step). The step time is the GPU-timeline distance between consecutive step starts, so it
includes the gaps in which the GPU waits for the host. Losses stay on the device until the end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.options import nonneg_float, nonneg_int, positive_float, positive_int
from dnabert_scaling.provenance import Fallback
from dnabert_scaling.tokenizer import PAD_ID

ENV_WEIGHTS = "DNABERT_SCALING_WEIGHTS"
ENV_GUE = "DNABERT_SCALING_GUE"
# 50 measured steps take minutes; a collective that waits this long has a dead or hung peer.
DIST_TIMEOUT_S = 300.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model and data")
    g.add_argument("--model", default="base", help="'base' (released 117M config), 'tiny', or a config.json")
    g.add_argument(
        "--weights",
        default=None,
        help=f"folder with the released checkpoint (config.json + pytorch_model.bin); default ${ENV_WEIGHTS}; "
        "without it the model is randomly initialised (recorded as a fallback)",
    )
    g.add_argument(
        "--attention",
        choices=("sdpa", "eager", "unpad"),
        default="sdpa",
        help="sdpa (default), eager (same math spelled out), unpad (the released code's PyTorch path)",
    )
    g.add_argument("--task", default="prom_300_all", help="GUE task name (default prom_300_all, the study's)")
    g.add_argument(
        "--data",
        default=None,
        help=f"GUE task folder (train.csv, dev.csv); default ${ENV_GUE}/<group>/<task> if it exists, "
        "else a synthetic task of the same shape (recorded as a fallback)",
    )
    g.add_argument("--synthetic", action="store_true", help="use a synthetic task even when GUE is present")
    g.add_argument("--seq-len", type=positive_int, default=None, help="override the task's model_max_length (tokens)")

    g = p.add_argument_group("schedule (official recipe defaults)")
    g.add_argument("--batch-size", type=positive_int, default=8, help="per-GPU batch (weak scaling; recipe: 8)")
    g.add_argument("--warmup-steps", type=nonneg_int, default=5, help="untimed, untraced steps before the measured ones")
    g.add_argument("--steps", type=positive_int, default=50, help="measured steps")
    g.add_argument("--lr", type=positive_float, default=3e-5, help="peak AdamW learning rate (recipe: 3e-5)")
    g.add_argument("--weight-decay", type=nonneg_float, default=0.01, help="AdamW weight decay, not on biases and LayerNorm")
    g.add_argument("--lr-warmup-steps", type=nonneg_int, default=50, help="linear LR warm-up (recipe: 50)")
    g.add_argument("--max-grad-norm", type=positive_float, default=1.0, help="gradient-norm clip before each step")
    g.add_argument("--seed", type=int, default=42, help="seed of weights, data order and dropout")
    g.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp16", "fp32"),
        default="auto",
        help="autocast dtype; auto = bf16 on CUDA (fp16 adds a loss-scaler host sync each step), fp32 on CPU",
    )
    g.add_argument(
        "--optimizer-impl",
        choices=("default", "foreach", "fused"),
        default="default",
        help="torch AdamW implementation (default: torch chooses, foreach on CUDA)",
    )

    g = p.add_argument_group("DDP")
    g.add_argument("--no-ddp", action="store_true", help="world size 1 without the DDP wrapper (scaling baseline)")
    g.add_argument("--bucket-cap-mb", type=positive_float, default=25.0, help="DDP gradient bucket size (MiB)")
    g.add_argument(
        "--find-unused-parameters",
        choices=("true", "false"),
        default="true",
        help="recipe runs end up with True under the HF Trainer (default true)",
    )
    g.add_argument(
        "--broadcast-buffers",
        choices=("true", "false"),
        default="true",
        help="broadcast the model's buffers (token_type_ids) each forward, as DDP does unless told otherwise "
        "and as the recipe runs it",
    )
    g.add_argument("--gradient-as-bucket-view", action="store_true", help="DDP: gradients as views into the buckets")
    g.add_argument("--static-graph", action="store_true", help="DDP: the autograd graph is the same every step")
    g.add_argument(
        "--bucket-hook",
        choices=("auto", "on", "off"),
        default="auto",
        help="comm hook that marks each bucket's all-reduce as a ds:bucket range (same arithmetic as DDP's own; "
        "what `predict` needs); auto: on in traced runs, off in untraced ones, whose throughput it would lower "
        "(a Python comm hook cost 14%% of a batch-8 step on an H200, make bench-hook)",
    )
    g.add_argument(
        "--dist-timeout",
        type=positive_float,
        default=DIST_TIMEOUT_S,
        help="seconds a collective may wait for a hung or dead peer before the run fails; a hung rank ends "
        "the run after about this long (plus torchrun's few seconds of shutdown)",
    )
    g.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="auto: CUDA when visible, else CPU (a fallback)"
    )

    g = p.add_argument_group("tracing and output")
    g.add_argument(
        "--tracer",
        choices=("auto", "scorep", "torch", "none"),
        default="none",
        help="tracer of this run; auto: Score-P when it works, else torch.profiler",
    )
    g.add_argument("--trace-cpu-ops", action="store_true", help="torch tracer: also record host operators")
    g.add_argument("--scorep-python", action="store_true", help="Score-P: also instrument Python functions (filtered)")
    g.add_argument("--out", required=True, type=Path, help="run directory; must not hold another run's files (see --overwrite)")
    g.add_argument(
        "--overwrite",
        action="store_true",
        help="delete the files of an earlier run in --out first (never mixes two runs in one folder)",
    )
    g.add_argument("--eval", action="store_true", help="evaluate dev accuracy after training")
    g.add_argument("--no-progress", action="store_true", help="no per-step progress lines on stderr")
    g.add_argument(
        "--param-fingerprint",
        action="store_true",
        help="write a sha256 of all parameters into each rank's summary (DDP consistency check)",
    )
    g.add_argument(
        "--inject-fault",
        default=None,
        metavar="RANK:STEP",
        help="testing: raise an error on RANK at STEP (checks that a failing rank ends the run)",
    )


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


def _find_task_folder(args) -> tuple[Path | None, str]:
    if args.synthetic:
        return None, "--synthetic given"
    if args.data:
        folder = Path(args.data)
        if not folder.is_dir():
            raise ArtifactError("--data: GUE task folder does not exist", folder)
        return folder, "given"
    root = os.environ.get(ENV_GUE)
    if not root:
        return None, f"no --data and ${ENV_GUE} is not set"
    for candidate in (Path(root) / args.task, *sorted(Path(root).glob(f"*/{args.task}"))):
        if (candidate / "train.csv").is_file():
            return candidate, f"found under ${ENV_GUE}"
    return None, f"task {args.task!r} not found under ${ENV_GUE}={root}"


def _prepare_data(args, rank: int, fallbacks: list[Fallback]):
    """The tokenized task; a synthetic one (written by rank 0 into the run dir) when GUE is absent."""
    import torch.distributed as dist

    from dnabert_scaling import data

    folder, why = _find_task_folder(args)
    if folder is None:
        like = args.task if args.task in data.GUE_TASKS else data.DEFAULT_TASK
        folder = args.out / layout.SYNTHETIC_DATA
        if rank == 0 and not (folder / "train.csv").is_file():
            data.write_synthetic_task(folder, like=like, seed=args.seed)
        if dist.is_initialized():
            dist.barrier()
        fallbacks.append(Fallback("data", f"synthetic planted-motif task shaped like {like}", why))
    task = data.load_task(folder, model_max_length=args.seq_len, task_name=args.task if folder.name == args.task else None)
    if task.synthetic and not any(f.what == "data" for f in fallbacks):
        fallbacks.append(
            Fallback("data", f"synthetic planted-motif task shaped like {task.name}", f"{folder} holds synthetic.json")
        )
    return task


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


def build_optimizer(model, args, device_type: str):
    import torch

    decay, no_decay = [], []
    for name, param in model.named_parameters():
        # As the HF Trainer: no weight decay on biases and LayerNorm weights.
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layernorm" in name else decay).append(param)
    groups = [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kwargs: dict[str, Any] = {}
    if args.optimizer_impl == "fused":
        kwargs["fused"] = True
    elif args.optimizer_impl == "foreach":
        kwargs["foreach"] = True
    return torch.optim.AdamW(groups, lr=args.lr, **kwargs)


def linear_schedule(optimizer, warmup: int, total: int):
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return float(step + 1) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class TrainStep:
    """One optimisation step with its phase marks: forward, backward, optimizer.

    Shared by the training loop and the benchmarks, so both run the same host code. Returns the
    loss (a device tensor: nothing here waits for the GPU) and the host time of each phase.
    """

    def __init__(self, train_model, model, optimizer, scheduler, autocast, scaler, max_grad_norm, marker):
        self.train_model, self.model = train_model, model
        self.optimizer, self.scheduler = optimizer, scheduler
        self.autocast, self.scaler = autocast, scaler
        self.max_grad_norm = max_grad_norm
        self.marker = marker
        self.params = [p for p in model.parameters() if p.requires_grad]

    def __call__(self, ids, mask, labels, measured: bool = True, inject_fault: str | None = None):
        import torch

        marker, scaler, optimizer = self.marker, self.scaler, self.optimizer
        with marker.phase("step" if measured else "warmup"):
            t0 = time.perf_counter()
            with marker.phase("forward"):
                with self.autocast:
                    loss = self.train_model(ids, mask, labels).loss
            t1 = time.perf_counter()
            if inject_fault:
                raise RuntimeError(inject_fault)
            with marker.phase("backward"):
                (scaler.scale(loss) if scaler else loss).backward()
            t2 = time.perf_counter()
            with marker.phase("optimizer"):
                if scaler:
                    scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
                if scaler:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
                self.scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            t3 = time.perf_counter()
        return loss, {"forward": t1 - t0, "backward": t2 - t1, "optimizer": t3 - t2}


# --- timing --------------------------------------------------------------------------------------


class StepTimer:
    """Per-step times without a sync inside the step; completed steps are flushed to JSON lines."""

    def __init__(self, device_type: str, log_path: Path):
        import torch

        self.cuda = device_type == "cuda"
        self.torch = torch
        self.log = log_path.open("w", buffering=1)
        self.pending: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []

    def start(self, step: int, measured: bool) -> dict[str, Any]:
        rec: dict[str, Any] = {"step": step, "measured": measured, "host_start": time.perf_counter()}
        if self.cuda:
            rec["ev_start"] = self.torch.cuda.Event(enable_timing=True)
            rec["ev_start"].record()
        return rec

    def end(self, rec: dict[str, Any], loss, lr: float, host_phases: dict[str, float]) -> None:
        rec["host_end"] = time.perf_counter()
        if self.cuda:
            # A 4-byte asynchronous copy into pinned memory: readable without a stall once the
            # step's end event has completed (``.item()`` here would synchronise the stream).
            rec["loss_host"] = self.torch.empty((), dtype=self.torch.float32, pin_memory=True)
            rec["loss_host"].copy_(loss.detach().float(), non_blocking=True)
        else:
            rec["loss_host"] = loss.detach().float()
        rec["lr"] = lr
        rec["host_phase_s"] = host_phases
        if self.cuda:
            rec["ev_end"] = self.torch.cuda.Event(enable_timing=True)
            rec["ev_end"].record()
        self.pending.append(rec)
        self._flush(final=False)

    def _flush(self, final: bool) -> None:
        # A step is complete once the next step's start (or, for the last step, its own end) ran.
        while self.pending:
            rec = self.pending[0]
            nxt = self.pending[1] if len(self.pending) > 1 else None
            if self.cuda:
                marker = nxt["ev_start"] if nxt is not None else (rec["ev_end"] if final else None)
                if marker is None or not marker.query():
                    return
                step_ms = rec["ev_start"].elapsed_time(marker)
                busy_ms = rec["ev_start"].elapsed_time(rec["ev_end"])
                step_s, busy_s = step_ms / 1e3, busy_ms / 1e3
            else:
                if nxt is None and not final:
                    return
                step_s = (nxt["host_start"] if nxt is not None else rec["host_end"]) - rec["host_start"]
                busy_s = rec["host_end"] - rec["host_start"]
            self.pending.pop(0)
            out = {
                "step": rec["step"],
                "measured": rec["measured"],
                "step_time_s": step_s,
                "step_busy_s": busy_s,
                "host_step_s": rec["host_end"] - rec["host_start"],
                "host_phase_s": rec["host_phase_s"],
                "loss": float(rec["loss_host"]),
                "lr": rec["lr"],
                "timing": "cuda-events" if self.cuda else "host-clock",
            }
            self.records.append(out)
            self.log.write(json.dumps(out) + "\n")

    def finish(self) -> list[dict[str, Any]]:
        if self.cuda:
            self.torch.cuda.synchronize()
        self._flush(final=True)
        self.log.close()
        return self.records


def _median(values: list[float]) -> float | None:
    vals = sorted(v for v in values if v is not None and math.isfinite(v))
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])


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


def _parse_fault(spec: str | None) -> tuple[int, int] | None:
    if not spec:
        return None
    try:
        r, s = spec.split(":")
        return int(r), int(s)
    except ValueError:
        raise ArtifactError(f"--inject-fault must be RANK:STEP, not {spec!r}") from None


def run(args: argparse.Namespace) -> int:
    from dnabert_scaling.distributed import rank_info

    from dnabert_scaling.outputs import writable_dir
    from dnabert_scaling.tracing.scorep import under_scorep

    info = rank_info()
    fault = _parse_fault(args.inject_fault)
    args.out = Path(args.out).resolve()
    if not under_scorep():  # checked (and cleaned) once, before the re-exec under Score-P
        writable_dir(args.out, "--out", create=True)
        _claim_run_dir(args.out, info, args.overwrite)
    rank_dir = RunLayout(args.out).rank_dir(info.rank)
    rank_dir.mkdir(parents=True, exist_ok=True)
    _maybe_reexec_under_scorep(args, info)
    try:
        return _run(args, info, rank_dir, fault)
    except BaseException as exc:
        _record_failure(rank_dir, info, exc)
        if isinstance(exc, ArtifactError):
            raise
        print(f"dnabert-scaling train: rank {info.rank}: failed: {exc!r} (details in {rank_dir / layout.ERROR})", file=sys.stderr)
        sys.stderr.flush()
        # Peers may be blocked in a collective; do not wait for a clean process-group shutdown.
        os._exit(1)


# Files a finished or started run leaves in its folder. A launcher's own ``logs/`` and the empty
# folders another rank of this run creates at start are not among them (ranks start concurrently).
_RUN_FILES = (layout.SUMMARY, layout.MANIFEST, layout.CONFIG, layout.SYNTHETIC_DATA)


def _earlier_run_files(out: Path) -> list[Path]:
    found = [out / name for name in _RUN_FILES if (out / name).exists()]
    for rank_dir in sorted(d for d in out.glob("rank*") if d.is_dir()):
        found += [p for p in rank_dir.iterdir() if p.name in (layout.STEPS, layout.SUMMARY, layout.ERROR)]
    traces = RunLayout(out).traces
    if traces.is_dir():
        # a Score-P experiment folder is created when its rank starts; its anchor is written at the end
        found += [p for p in traces.iterdir() if not p.name.startswith(layout.SCOREP_RANK_PREFIX) or (p / layout.ANCHOR).exists()]
    return found


def _claim_run_dir(out: Path, info, overwrite: bool) -> None:
    """Refuse an output folder that holds another run; with ``--overwrite`` delete that run first.

    Each rank deletes only what is its own (its ``rank<R>/`` and traces); rank 0 also the run's
    files and the folders of ranks beyond this world size, so concurrent ranks never race.
    """
    import shutil

    earlier = _earlier_run_files(out)
    if not earlier:
        return
    if not overwrite:
        shown = ", ".join(str(p.relative_to(out)) for p in earlier[:6]) + (" ..." if len(earlier) > 6 else "")
        raise ArtifactError(
            f"--out holds the files of an earlier run ({shown}); give an empty or new folder, or --overwrite "
            "to delete that run first",
            out,
        )
    r = info.rank
    mine = [RunLayout(out).rank_dir(r), *RunLayout(out).rank_traces(r)]
    if r == 0:
        mine += [out / name for name in _RUN_FILES]
        for other in [*out.glob("rank*"), *RunLayout(out).traces.glob("*rank*")]:
            digits = "".join(ch for ch in other.name.split("rank", 1)[1] if ch.isdigit())
            if digits and int(digits) >= info.world_size:
                mine.append(other)
    for path in mine:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def _record_failure(rank_dir: Path, info, exc: BaseException) -> None:
    try:
        (rank_dir / layout.ERROR).write_text("".join(traceback.format_exception(exc)))
        (rank_dir / layout.SUMMARY).write_text(
            json.dumps({"status": "failed", "rank": info.rank, "error": repr(exc), "failed_at": time.time()}, indent=2) + "\n"
        )
        if info.rank == 0:
            RunLayout(rank_dir.parent).summary.write_text(
                json.dumps({"status": "failed", "reported_by_rank": 0, "error": repr(exc)}, indent=2) + "\n"
            )
    except OSError:
        pass


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
    task = _prepare_data(args, info.rank, fallbacks)
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
        RunLayout(args.out).config.write_text(
            json.dumps({"args": _jsonable(vars(args)), "rank_info": info.as_dict()}, indent=2) + "\n"
        )
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
    med = _median([r["step_time_s"] for r in measured_recs])
    rank_summary = {
        "status": "ok",
        "rank": info.rank,
        "local_rank": info.local_rank,
        "device": str(device),
        "measured_steps": len(measured_recs),
        "median_step_time_s": med,
        "median_step_busy_s": _median([r["step_busy_s"] for r in measured_recs]),
        "wall_measured_s": wall_measured,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "finite_loss": all(math.isfinite(x) for x in losses),
        "dev_accuracy": accuracy,
        "param_sha256": _param_fingerprint(model) if args.param_fingerprint else None,
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


def _param_fingerprint(model) -> str:
    import hashlib

    h = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        h.update(name.encode())
        h.update(param.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj
