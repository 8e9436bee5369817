"""The world-size sweep (``dnabert-scaling sweep``).

For each world size: ``--repeats`` untraced throughput runs and one traced run (and, at world size
1, untraced runs without the DDP wrapper, the second scaling baseline), plus an all_reduce
bus-bandwidth measurement at every multi-rank world size. Every run gets its own directory
``<out>/ws<N>-<tracer>-r<repeat>[-<variant>]/`` with the ranks' logs, summaries and traces and a
``manifest.json`` (the spec, status, provenance and the sha256 of every file). A run that
completed is skipped when the sweep is started again; a failed one is reported, its directory
kept under a ``.failed-<time>`` name, and the sweep goes on with the other runs.

Executors: ``local`` starts each run with torchrun on this node; ``slurm`` submits the runs as one
batch job per world size through ``scripts/slurm/`` (``dnabert_scaling.slurm``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import now_iso, sha256_tree
from dnabert_scaling.runspec import RunSpec, run_status

MANIFEST = "manifest.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", default="1,4,8", help="world sizes, comma separated (default 1,4,8)")
    p.add_argument("--executor", choices=("local", "slurm"), default="local")
    p.add_argument("--tracer", choices=("auto", "scorep", "torch", "none"), default="auto",
                   help="tracer of the traced run per world size (none: no traced run)")
    p.add_argument("--out", type=Path, default=Path("runs"))
    p.add_argument("--repeats", type=int, default=3, help="untraced throughput runs per world size")
    p.add_argument("--no-baseline-no-ddp", dest="baseline_no_ddp", action="store_false",
                   help="skip the world-size-1 runs without the DDP wrapper")
    p.add_argument("--no-busbw", dest="busbw", action="store_false", help="skip the bus-bandwidth runs")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="cpu: the CPU smoke sweep (gloo, one process per rank)")
    p.add_argument("--run-timeout", type=float, default=3600.0, help="seconds before a run is killed")
    p.add_argument("--data", default=None, help="GUE task folder for every run (else $DNABERT_SCALING_GUE or synthetic)")
    try:
        from dnabert_scaling.slurm import add_slurm_arguments
    except ImportError:  # the SLURM executor lives in its own module
        pass
    else:
        add_slurm_arguments(p)
    p.add_argument("train_args", nargs=argparse.REMAINDER,
                   help="after '--': options passed to every 'dnabert-scaling train' run (e.g. -- --model tiny --steps 10)")


def world_sizes(text: str) -> list[int]:
    items = [x.strip() for x in text.split(",")]
    try:
        sizes = [int(x) for x in items]
    except ValueError:
        raise ArtifactError(f"--gpus must be a comma-separated list of integers like 1,4,8, not {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ArtifactError(f"--gpus must list positive world sizes, not {text!r}")
    if len(set(sizes)) != len(sizes):
        raise ArtifactError(f"--gpus lists a world size twice: {text!r}")
    return sorted(sizes)


def plan_runs(out: Path, sizes: list[int], tracer: str, repeats: int, baseline_no_ddp: bool,
              train_args: list[str]) -> list[RunSpec]:
    """The runs of a sweep, in the order they are executed."""
    plan: list[RunSpec] = []
    for n in sizes:
        for r in range(repeats):
            plan.append(RunSpec(n, "none", r, out / f"ws{n}-none-r{r}", tuple(train_args)))
        if n == 1 and baseline_no_ddp:
            for r in range(repeats):
                plan.append(RunSpec(1, "none", r, out / f"ws1-none-r{r}-noddp", (*train_args, "--no-ddp"), "noddp"))
        if tracer != "none":
            plan.append(RunSpec(n, tracer, 0, out / f"ws{n}-{tracer}-r0", tuple(train_args)))
    return plan


def _shared_data(out: Path, train_args: list[str], data: str | None) -> list[str]:
    """Every run of a sweep trains on the same task folder (written once if synthetic)."""
    if data:
        return ["--data", str(Path(data).resolve())]
    if "--data" in train_args or "--synthetic" in train_args:
        return []
    from dnabert_scaling.data import DEFAULT_TASK, GUE_TASKS, write_synthetic_task
    from dnabert_scaling.train import ENV_GUE

    task = DEFAULT_TASK
    if "--task" in train_args:
        task = train_args[train_args.index("--task") + 1]
    root = os.environ.get(ENV_GUE)
    if root and any((p / "train.csv").is_file() for p in [Path(root) / task, *Path(root).glob(f"*/{task}")]):
        return []  # each run finds the real task itself
    folder = out / "synthetic-data" / task
    if not (folder / "train.csv").is_file():
        write_synthetic_task(folder, like=task if task in GUE_TASKS else DEFAULT_TASK)
    return ["--data", str(folder.resolve())]


@dataclass
class RunResult:
    spec: RunSpec
    status: str  # ok, failed, skipped
    returncode: int | None
    seconds: float
    message: str = ""


def write_manifest(spec: RunSpec, status: str, returncode: int | None, started: str, seconds: float,
                   command: list[str], executor: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    summary_path = spec.run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    manifest = {
        "schema": "dnabert-scaling/manifest/1",
        "name": spec.name,
        "world_size": spec.world_size,
        "tracer": spec.tracer,
        "repeat": spec.repeat,
        "variant": spec.variant or "ddp",
        "train_args": list(spec.train_args),
        "command": command,
        "executor": executor,
        "status": status,
        "returncode": returncode,
        "started": started,
        "seconds": round(seconds, 3),
        "provenance": summary.get("provenance"),
        "fallbacks": summary.get("fallbacks", []),
        **(extra or {}),
        "files": sha256_tree(spec.run_dir, skip=[MANIFEST]),
    }
    (spec.run_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _set_aside_failed(run_dir: Path) -> Path | None:
    if not run_dir.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = run_dir.with_name(f"{run_dir.name}.failed-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = run_dir.with_name(f"{run_dir.name}.failed-{stamp}-{n}")
    run_dir.rename(target)
    return target


def torchrun_command(nproc: int, module_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", "dnabert_scaling", *module_args]


def _post_run_checks(spec: RunSpec) -> tuple[list[str], str | None]:
    """Score-P runs: every rank's experiment directory is checked (anchor, CUDA streams, log)."""
    if spec.tracer != "scorep":
        return [], None
    from dnabert_scaling.tracing.scorep import check_experiment

    warnings: list[str] = []
    log = spec.run_dir / "logs" / "launcher.log"
    log_text = log.read_text(errors="replace") if log.is_file() else None
    for rank in range(spec.world_size):
        exp = spec.run_dir / "traces" / f"scorep-rank{rank}"
        try:
            warnings += [f"rank {rank}: {w}" for w in check_experiment(exp, log_text)]
        except ArtifactError as exc:
            return warnings, str(exc)
    return warnings, None


def run_local(spec: RunSpec, timeout: float) -> RunResult:
    """One run with torchrun on this node; its output goes to ``logs/launcher.log``."""
    if spec.is_complete():
        return RunResult(spec, "skipped", 0, 0.0, "already complete")
    moved = _set_aside_failed(spec.run_dir)
    (spec.run_dir / "logs").mkdir(parents=True, exist_ok=True)
    cmd = torchrun_command(spec.world_size, ["train", *spec.command_args(), "--no-progress"])
    started, t0 = now_iso(), time.monotonic()
    with open(spec.run_dir / "logs" / "launcher.log", "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        try:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
            rc = proc.returncode
            message = "" if rc == 0 else f"exit status {rc}"
        except subprocess.TimeoutExpired:
            rc, message = None, f"killed after {timeout:.0f} s (--run-timeout)"
    seconds = time.monotonic() - t0
    status = "ok" if rc == 0 and run_status(spec.run_dir) == "ok" else "failed"
    if rc == 0 and status == "failed":
        message = "the launcher exited 0 but summary.json does not say ok"
    warnings, problem = _post_run_checks(spec) if status == "ok" else ([], None)
    if problem:
        status, message = "failed", problem
    extra = {"warnings": warnings, "message": message}
    if moved:
        extra["previous_attempt"] = moved.name
    write_manifest(spec, status, rc, started, seconds, cmd, "local", extra)
    if status != "ok":
        summary = spec.run_dir / "summary.json"
        data = json.loads(summary.read_text()) if summary.is_file() else {}
        data.update({"status": "failed", "message": message})
        summary.write_text(json.dumps(data, indent=2) + "\n")
    return RunResult(spec, status, rc, seconds, message)


def run_busbw_local(out: Path, n: int, train_args: list[str], device: str, timeout: float) -> RunResult | None:
    target = out / f"busbw-ws{n}.json"
    spec = RunSpec(n, "busbw", 0, out / f"busbw-ws{n}")
    if target.is_file():
        return RunResult(spec, "skipped", 0, 0.0, "already measured")
    model = train_args[train_args.index("--model") + 1] if "--model" in train_args else "base"
    args = ["busbw", "--out", str(target), "--model", model, "--device", device]
    if "--bucket-cap-mb" in train_args:
        args += ["--bucket-cap-mb", train_args[train_args.index("--bucket-cap-mb") + 1]]
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(out / f"busbw-ws{n}.log", "w") as log:
        try:
            rc = subprocess.run(torchrun_command(n, args), stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
    status = "ok" if rc == 0 and target.is_file() else "failed"
    return RunResult(spec, status, rc, time.monotonic() - t0, "" if status == "ok" else f"see {out / f'busbw-ws{n}.log'}")


def _check_local_resources(sizes: list[int], device: str) -> str:
    import torch

    if device == "cpu":
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
    if too_big:
        raise ArtifactError(
            f"world size(s) {', '.join(map(str, too_big))} need more GPUs than the {count} visible here; "
            "use --executor slurm for several nodes, or fewer --gpus"
        )
    return "cuda"


def _resolve_sweep_tracer(args: argparse.Namespace, out: Path, train_args: list[str], device: str) -> dict | None:
    """``--tracer auto``: decided once for the whole sweep, by the Score-P preflight on this machine
    (kept as ``<out>/scorep-preflight.json``); ``args.tracer`` becomes ``scorep`` or ``torch``.
    Returns the fallback taken (recorded in sweep.json and in every run's provenance), or None."""
    if args.tracer != "auto" or args.executor != "local" or device == "cpu":
        return None
    from dnabert_scaling.tracing import resolve_tracer
    from dnabert_scaling.tracing.preflight import ENV_RESULT

    os.environ.setdefault(ENV_RESULT, str(out / "scorep-preflight.json"))
    model = train_args[train_args.index("--model") + 1] if "--model" in train_args[:-1] else "base"
    args.tracer, fallback = resolve_tracer("auto", model=model)
    print(f"sweep: --tracer auto -> {args.tracer}" + (f" ({fallback.reason})" if fallback else ""), file=sys.stderr)
    return fallback.as_dict() if fallback else None


def run(args: argparse.Namespace) -> int:
    sizes = world_sizes(args.gpus)
    if args.repeats < 1:
        raise ArtifactError("--repeats must be at least 1")
    train_args = list(args.train_args)
    if train_args and train_args[0] == "--":
        train_args = train_args[1:]
    for forbidden in ("--out", "--tracer"):
        if forbidden in train_args:
            raise ArtifactError(f"{forbidden} is set by the sweep for each run; leave it out of the train options")
    out = args.out.resolve()
    if args.executor == "local":
        device = _check_local_resources(sizes, args.device)
    else:
        device = args.device
    if device == "cpu" and "--device" not in train_args:
        train_args += ["--device", "cpu"]
    out.mkdir(parents=True, exist_ok=True)
    train_args = [*train_args, *_shared_data(out, train_args, args.data)]
    tracer_fallback = _resolve_sweep_tracer(args, out, train_args, device)
    plan = plan_runs(out, sizes, args.tracer, args.repeats, args.baseline_no_ddp, train_args)
    (out / "sweep.json").write_text(json.dumps({
        "schema": "dnabert-scaling/sweep/1", "created": now_iso(), "world_sizes": sizes, "executor": args.executor,
        "tracer": args.tracer, "tracer_fallback": tracer_fallback, "repeats": args.repeats, "train_args": train_args,
        "runs": [s.name for s in plan],
    }, indent=2) + "\n")

    results: list[RunResult] = []
    if args.executor == "slurm":
        results, job_error = _run_with_slurm(args, plan)
        if job_error:
            print(f"sweep: {job_error}", file=sys.stderr)
    else:
        for n in sizes:
            for spec in [s for s in plan if s.world_size == n]:
                print(f"sweep: {spec.run_dir.name} ...", file=sys.stderr, flush=True)
                res = run_local(spec, args.run_timeout)
                results.append(res)
                print(f"sweep: {spec.run_dir.name}: {res.status} {res.message}".rstrip(), file=sys.stderr, flush=True)
            if n > 1 and args.busbw:
                bw = run_busbw_local(out, n, train_args, device, min(args.run_timeout, 900))
                if bw is not None:
                    results.append(bw)
                    print(f"sweep: busbw ws={n}: {bw.status} {bw.message}".rstrip(), file=sys.stderr, flush=True)
    print(format_table(results))
    failed = [r for r in results if r.status == "failed"]
    if failed:
        print(f"sweep: {len(failed)} run(s) failed: {', '.join(r.spec.run_dir.name for r in failed)}", file=sys.stderr)
        return 1
    return 0


def _run_with_slurm(args: argparse.Namespace, plan: list[RunSpec]) -> tuple[list[RunResult], str | None]:
    """Submit through ``dnabert_scaling.slurm``, then write each run's manifest as the local
    executor does (the job id and its log stand in for the launcher command)."""
    from dnabert_scaling.slurm import SlurmJobError, config_from_args, run_slurm

    config = config_from_args(args)
    complete_before = {s.name for s in plan if s.is_complete()}
    started = now_iso()
    error = None
    try:
        jobs = run_slurm(plan, config)
    except SlurmJobError as exc:
        jobs, error = exc.results, str(exc)
    for job in jobs:
        print(f"slurm job {job.job_id}: {job.state}" + (f" ({job.describe()})" if not job.ok else ""), file=sys.stderr)
    by_run = {name: job for job in jobs for name in job.runs}
    results = []
    for spec in plan:
        if spec.name in complete_before:
            results.append(RunResult(spec, "skipped", 0, 0.0, "already complete"))
            continue
        job = by_run.get(spec.name)
        status = "ok" if spec.is_complete() else "failed"
        message = "" if status == "ok" else (job.describe() if job else "not submitted")
        if spec.run_dir.is_dir():
            extra = {"message": message, "warnings": list(job.warnings) if job else [],
                     "slurm_job": {"id": job.job_id, "state": job.state, "log": str(job.log) if job and job.log else None}
                     if job else None}
            write_manifest(spec, status, job.exit_code if job else None, started, 0.0,
                           ["sbatch", f"(job {job.job_id if job else '?'})"], "slurm", extra)
        results.append(RunResult(spec, status, None, 0.0, message))
    return results, error


def format_table(results: list[RunResult]) -> str:
    lines = [f"{'run':<26} {'status':<8} {'samples/s':>10} {'step ms':>9} {'seconds':>8}"]
    for r in results:
        summary = r.spec.run_dir / "summary.json"
        sps = step = ""
        if summary.is_file():
            data = json.loads(summary.read_text())
            if data.get("samples_per_s"):
                sps = f"{data['samples_per_s']:.1f}"
                step = f"{data['median_step_time_s'] * 1e3:.2f}"
        lines.append(f"{r.spec.run_dir.name:<26} {r.status:<8} {sps:>10} {step:>9} {r.seconds:>8.1f}")
    return "\n".join(lines)
