"""The sweep's local executor: each run with torchrun on this node, under a marker so that every
process it started ends with it; the Score-P check after a traced run; the bus-bandwidth runs; and
whether this node has the GPUs the sweep asks for.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout, SweepLayout
from dnabert_scaling.outputs import write_text_atomic
from dnabert_scaling.run.proctree import end_run, new_marker
from dnabert_scaling.provenance import now_iso
from dnabert_scaling.run.sweep.spec import RunSpec, TrainOptions, run_status
from dnabert_scaling.run.sweep.record import RunResult, failure_message, read_summary, set_aside_failed, write_manifest


def torchrun_command(nproc: int, module_args: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "dnabert_scaling",
        *module_args,
    ]


def post_run_checks(spec: RunSpec) -> tuple[list[str], str | None]:
    """Score-P runs: every rank's experiment directory is checked (anchor, CUDA streams, log)."""
    if spec.tracer != "scorep":
        return [], None
    from dnabert_scaling.run.tracing.scorep import check_experiment

    warnings: list[str] = []
    log = RunLayout(spec.run_dir).launcher_log
    log_text = log.read_text(errors="replace") if log.is_file() else None
    for rank in range(spec.world_size):
        exp = RunLayout(spec.run_dir).scorep_dir(rank)
        try:
            warnings += [f"rank {rank}: {w}" for w in check_experiment(exp, log_text)]
        except ArtifactError as exc:
            return warnings, str(exc)
    return warnings, None


def launch(cmd: list[str], log, timeout: float) -> tuple[int | None, str]:
    """Run ``cmd`` with its own session and a marker in its environment; on timeout or interrupt
    end every process it started before returning (or re-raising the interrupt)."""
    marker = new_marker()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **marker})
    try:
        rc = proc.wait(timeout=timeout)
        left = end_run(proc, marker)  # a rank the launcher left behind must not outlive the run's status
        return rc, (f"the launcher left {len(left)} process(es) of the run behind; killed" if left else "")
    except subprocess.TimeoutExpired:
        end_run(proc, marker)
        return None, f"killed with all its ranks after {timeout:g} s (--run-timeout)"
    except BaseException:
        end_run(proc, marker)
        raise


def run_local(spec: RunSpec, timeout: float) -> RunResult:
    """One run with torchrun on this node; its output goes to ``logs/launcher.log``.

    The sweep alone decides the run's status: it is written once, after every process of the run
    has ended, into ``manifest.json`` (and ``summary.json``), each replaced atomically.
    """
    if spec.is_complete():
        return RunResult(spec, "skipped", 0, 0.0, "already complete")
    moved = set_aside_failed(spec.run_dir)
    RunLayout(spec.run_dir).logs.mkdir(parents=True, exist_ok=True)
    cmd = torchrun_command(spec.world_size, ["train", *spec.command_args(), "--no-progress"])
    started, t0 = now_iso(), time.monotonic()
    interrupted = None
    with open(RunLayout(spec.run_dir).launcher_log, "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        try:
            rc, message = launch(cmd, log, timeout)
        except KeyboardInterrupt as exc:
            rc, message, interrupted = None, "interrupted: the sweep was stopped (SIGINT/SIGTERM)", exc
    seconds = time.monotonic() - t0
    status = "ok" if rc == 0 and run_status(spec.run_dir) == "ok" else "failed"
    if rc == 0 and status == "failed":
        message = "the launcher exited 0 but summary.json does not say ok"
    warnings, problem = post_run_checks(spec) if status == "ok" else ([], None)
    if problem:
        status, message = "failed", problem
    if status == "ok" and read_summary(spec.run_dir).get("finite_loss") is False:
        warnings.append("a loss was not finite: this run's throughput is not used for scaling")
    if status != "ok" and not problem:
        message = failure_message(spec, rc, message)
    extra = {"warnings": warnings, "message": message}
    if moved:
        extra["previous_attempt"] = moved.name
    if status != "ok":
        summary = read_summary(spec.run_dir)
        summary.update({"status": "failed", "message": message})
        write_text_atomic(RunLayout(spec.run_dir).summary, json.dumps(summary, indent=2) + "\n")
    write_manifest(spec, status, rc, started, seconds, cmd, "local", extra)
    if interrupted is not None:
        raise interrupted
    return RunResult(spec, status, rc, seconds, message)


def busbw_model(train_args: list[str]) -> tuple[str, float]:
    """(model, bucket cap in MiB) whose DDP buckets the bus-bandwidth runs measure."""
    opts = TrainOptions.parse(train_args)
    return str(opts.value("model")), float(opts.value("bucket_cap_mb"))


def busbw_sizes_source(train_args: list[str]) -> str:
    """The ``sizes_source`` that ``busbw`` records for the buckets of these train options."""
    from dnabert_scaling.run.busbw import sizes_source

    return sizes_source(*busbw_model(train_args))


def run_busbw_local(
    out: Path, n: int, train_args: list[str], device: str, timeout: float, rehearse: bool = False
) -> RunResult | None:
    sweep = SweepLayout(out)
    target = sweep.busbw(n)
    spec = RunSpec(n, "busbw", 0, sweep.busbw_dir(n))
    if target.is_file():
        return RunResult(spec, "skipped", 0, 0.0, "already measured")
    model, cap = busbw_model(train_args)
    args = ["busbw", "--out", str(target), "--model", model, "--device", device, "--bucket-cap-mb", str(cap)]
    if rehearse:
        args.append("--rehearse")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(sweep.busbw_log(n), "w") as log:
        rc, _ = launch(torchrun_command(n, args), log, timeout)
    status = "ok" if rc == 0 and target.is_file() else "failed"
    return RunResult(spec, status, rc, time.monotonic() - t0, "" if status == "ok" else f"see {sweep.busbw_log(n)}")


# Processes one local sweep may start per world size: a world size is that many processes at once.
CPU_RANKS_PER_CORE = 4  # the CPU smoke sweep: at most this many ranks per core this process may use ...
CPU_RANKS_MIN = 8  # ... and never fewer than 1, 2, 4 and 8 (the rehearsal's sizes) allow
# --rehearse: each rank a CUDA context and a model on a shared GPU. World size 8 on one H200 took about
# 4.2 s a step traced (8 + 3 steps, about 1.5 minutes), so 1 GPU rehearses 2, 4 and 8 (scripts/reproduce.py).
REHEARSAL_MAX_RANKS_PER_GPU = 8


def cpu_cores() -> int:
    """The CPU cores this process may run on (its affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_rank_limit() -> int:
    return max(CPU_RANKS_MIN, CPU_RANKS_PER_CORE * cpu_cores())


def check_local_resources(sizes: list[int], device: str, rehearse: bool = False) -> str:
    """``cpu`` or ``cuda``; refuses world sizes larger than the GPUs here unless ``rehearse`` (ranks
    then share the GPUs round-robin, at most ``REHEARSAL_MAX_RANKS_PER_GPU`` each), and CPU world
    sizes above ``cpu_rank_limit``: each rank is a process, started at once."""
    import torch

    if device == "cpu":
        limit = cpu_rank_limit()
        if max(sizes) > limit:
            raise ArtifactError(
                f"--gpus: world size {max(sizes)} on the CPU would start {max(sizes)} processes at once, more than the "
                f"limit of {limit} here ({CPU_RANKS_PER_CORE} per CPU core, {cpu_cores()} core(s), at least "
                f"{CPU_RANKS_MIN}); give smaller world sizes"
            )
        return "cpu"
    if not torch.cuda.is_available():
        raise ArtifactError(
            "no CUDA device is visible here: the study's sweep needs GPUs; run it with --executor slurm "
            "on a GPU cluster, or pass --device cpu for the CPU smoke sweep (gloo; no GPU metrics)"
        )
    count = torch.cuda.device_count()
    if device == "cuda" and count == 0:
        raise ArtifactError("--device cuda: no CUDA device is visible")
    too_big = [n for n in sizes if n > count]
    if too_big and rehearse:
        if max(sizes) > REHEARSAL_MAX_RANKS_PER_GPU * count:
            raise ArtifactError(
                f"--gpus: world size {max(sizes)} would rehearse more than {REHEARSAL_MAX_RANKS_PER_GPU} ranks on each of "
                f"the {count} GPU(s) here (--rehearse allows at most {REHEARSAL_MAX_RANKS_PER_GPU * count}); give "
                "smaller world sizes"
            )
        print(
            f"sweep: --rehearse: world size(s) {', '.join(map(str, too_big))} on {count} GPU(s), ranks placed "
            "round-robin (a rehearsal of the NCCL path, not scaling evidence)",
            file=sys.stderr,
        )
    elif too_big:
        raise ArtifactError(
            f"world size(s) {', '.join(map(str, too_big))} need more GPUs than the {count} visible here; "
            "use --executor slurm for several nodes, or fewer --gpus"
        )
    return "cuda"
