"""The world-size sweep (``dnabert-scaling sweep``).

For each world size: ``--repeats`` untraced throughput runs and one traced run (and, at world size
1, untraced runs without the DDP wrapper, the second scaling baseline), plus an all_reduce
bus-bandwidth measurement at every multi-rank world size. Every run gets its own directory
``<out>/ws<N>-<tracer>-r<repeat>[-<variant>]/`` with the ranks' logs, summaries and traces and a
``manifest.json`` (the spec, status, provenance and the sha256 of every file). A run that
completed is skipped when the sweep is started again; a failed one is reported, its directory
kept under a ``.failed-<time>`` name, and the sweep goes on with the other runs.

Executors: ``local`` starts each run with torchrun on this node; ``slurm`` submits the runs as one
batch job per world size through ``scripts/slurm/`` (``dnabert_scaling.run.slurm``).

This module plans the sweep, refuses to mix runs trained with other options, and drives the
executors; ``local`` is the local executor, ``record`` a run's record (manifest, failure).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import MANIFEST, SYNTHETIC_DATA, RunLayout, SweepLayout
from dnabert_scaling.options import positive_float, positive_int
from dnabert_scaling.outputs import output_path, refuse_overlap, writable_dir, write_text_atomic
from dnabert_scaling.provenance import now_iso
from dnabert_scaling.run.sweep.spec import RunSpec, parse_train_options, run_status
from dnabert_scaling.run.sweep.local import busbw_sizes_source, check_local_resources, run_busbw_local, run_local
from dnabert_scaling.run.sweep.record import RunResult, failure_message, set_aside, set_aside_failed, write_manifest


# A rehearsal shows that the NCCL path works and what a step records: the measured steps the
# analysis needs (its completeness and medians), not the study's 50.
REHEARSAL_WARMUP = 3
REHEARSAL_STEPS = 8


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", default="1,4,8", help="world sizes, comma separated (default 1,4,8)")
    p.add_argument(
        "--executor",
        choices=("local", "slurm"),
        default="local",
        help="local: torchrun on this machine; slurm: one batch job per world size",
    )
    p.add_argument(
        "--tracer",
        choices=("auto", "scorep", "torch", "none"),
        default="auto",
        help="tracer of the traced run per world size (none: no traced run)",
    )
    p.add_argument(
        "--out", type=output_path, default=Path("runs"), help="sweep folder (one run folder per run; reruns skip complete runs)"
    )
    p.add_argument("--repeats", type=positive_int, default=3, help="untraced throughput runs per world size")
    p.add_argument(
        "--skip-plain-baseline",
        dest="baseline_no_ddp",
        action="store_false",
        help="skip the world-size-1 runs without the DDP wrapper (the second scaling baseline)",
    )
    p.add_argument("--no-baseline-no-ddp", dest="baseline_no_ddp", action="store_false", help=argparse.SUPPRESS)
    p.add_argument("--no-busbw", dest="busbw", action="store_false", help="skip the bus-bandwidth runs")
    p.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="cpu: the CPU smoke sweep (gloo, one process per rank)"
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="rename an existing --out folder to <out>.previous-<time> and start a new sweep "
        "(needed when the train options differ from the completed runs there)",
    )
    p.add_argument(
        "--run-timeout",
        type=positive_float,
        default=3600.0,
        help="seconds before a run is killed with all its ranks (recorded as failed)",
    )
    p.add_argument(
        "--rehearse",
        action="store_true",
        help="rehearsal: world sizes larger than the GPUs here, ranks placed round-robin on them, NCCL over "
        f"loopback sockets; short ({REHEARSAL_WARMUP} warm-up + {REHEARSAL_STEPS} measured steps unless the train "
        "options say otherwise), no untraced throughput runs; recorded as a fallback, never scaling evidence",
    )
    p.add_argument("--data", default=None, help="GUE task folder for every run (else $DNABERT_SCALING_GUE or synthetic)")
    try:
        from dnabert_scaling.run.slurm import add_slurm_arguments
    except ImportError:  # the SLURM executor lives in its own module
        pass
    else:
        add_slurm_arguments(p)
    p.add_argument(
        "train_args",
        nargs=argparse.REMAINDER,
        help="after '--': options passed to every 'dnabert-scaling train' run (e.g. -- --model tiny --steps 10)",
    )


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


def plan_runs(
    out: Path, sizes: list[int], tracer: str, repeats: int, baseline_no_ddp: bool, train_args: list[str]
) -> list[RunSpec]:
    """The runs of a sweep, in the order they are executed."""
    plan: list[RunSpec] = []
    sweep = SweepLayout(out)
    for n in sizes:
        for r in range(repeats):
            plan.append(RunSpec(n, "none", r, sweep.run(n, "none", r).root, tuple(train_args)))
        if n == 1 and baseline_no_ddp:
            for r in range(repeats):
                plan.append(RunSpec(1, "none", r, sweep.run(1, "none", r, "noddp").root, (*train_args, "--no-ddp"), "noddp"))
        if tracer != "none":
            plan.append(RunSpec(n, tracer, 0, sweep.run(n, tracer, 0).root, tuple(train_args)))
    return plan


def _shared_data(out: Path, train_args: list[str], data: str | None) -> list[str]:
    """Every run of a sweep trains on the same task folder (written once if synthetic)."""
    if data:
        return ["--data", str(Path(data).resolve())]
    if "--data" in train_args or "--synthetic" in train_args:
        return []
    from dnabert_scaling.run.workload.data import DEFAULT_TASK, GUE_TASKS, write_synthetic_task
    from dnabert_scaling.run.train.options import ENV_GUE

    task = DEFAULT_TASK
    if "--task" in train_args:
        task = train_args[train_args.index("--task") + 1]
    root = os.environ.get(ENV_GUE)
    if root and any((p / "train.csv").is_file() for p in [Path(root) / task, *Path(root).glob(f"*/{task}")]):
        return []  # each run finds the real task itself
    folder = out / SYNTHETIC_DATA / task
    if not (folder / "train.csv").is_file():
        write_synthetic_task(folder, like=task if task in GUE_TASKS else DEFAULT_TASK)
    return ["--data", str(folder.resolve())]


def _differences(recorded: list[str], requested: list[str]) -> list[str]:
    old, new = parse_train_options(recorded), parse_train_options(requested)
    shown = []
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            was = "absent" if name not in old else (old[name] or "set")
            now = "absent" if name not in new else (new[name] or "set")
            shown.append(f"{name} {was} -> {now}")
    return shown


def refuse_changed_options(out: Path, plan: list[RunSpec]) -> None:
    """A completed run is reused only when it was trained with the options requested now; so is
    every other completed run in the folder (``analyze`` reads them all)."""
    requested = {s.name: s for s in plan}
    base = next((list(s.train_args) for s in plan if not s.variant), [])
    changed: dict[str, list[str]] = {}
    for run_dir in SweepLayout(out).run_dirs():
        manifest = run_dir / MANIFEST
        if not manifest.is_file() or run_status(run_dir) != "ok":
            continue
        try:
            recorded = json.loads(manifest.read_text()).get("train_args")
        except ValueError:
            raise ArtifactError("not valid JSON; move the run folder away or use --fresh", manifest) from None
        spec = requested.get(run_dir.name)
        want = list(spec.train_args) if spec else [*base, *(["--no-ddp"] if run_dir.name.endswith("-noddp") else [])]
        if not isinstance(recorded, list):
            continue
        diff = _differences(recorded, want)
        if diff:
            changed[run_dir.name] = diff
    for path in SweepLayout(out).busbw_files().values():  # reused as well: measured at the requested buckets?
        try:
            source = json.loads(path.read_text()).get("sizes_source")
        except ValueError:
            raise ArtifactError("not valid JSON; remove it or use --fresh", path) from None
        if source != busbw_sizes_source(base):
            changed[path.name] = [f"message sizes {source!r} -> {busbw_sizes_source(base)!r}"]
    if changed:
        first = next(iter(changed.values()))
        raise ArtifactError(
            f"{len(changed)} completed run(s) in this sweep folder were trained with other options than the ones "
            f"requested now ({', '.join(first)}; runs: {', '.join(changed)}); mixing them would compare different "
            "configurations. Rerun with the recorded options, use another --out, or --fresh to keep this folder "
            "aside and start a new sweep",
            out,
        )


def _resolve_sweep_tracer(args: argparse.Namespace, out: Path, train_args: list[str], device: str) -> dict | None:
    """``--tracer auto``: decided once for the whole sweep, by the Score-P preflight on this machine
    (kept as ``<out>/scorep-preflight.json``); ``args.tracer`` becomes ``scorep`` or ``torch``.
    Returns the fallback taken (recorded in sweep.json and in every run's provenance), or None."""
    if args.tracer != "auto" or args.executor != "local" or device == "cpu":
        return None
    from dnabert_scaling.run.tracing import resolve_tracer
    from dnabert_scaling.run.tracing.preflight import ENV_RESULT

    os.environ.setdefault(ENV_RESULT, str(out / "scorep-preflight.json"))
    model = train_args[train_args.index("--model") + 1] if "--model" in train_args[:-1] else "base"
    args.tracer, fallback = resolve_tracer("auto", model=model)
    print(f"sweep: --tracer auto -> {args.tracer}" + (f" ({fallback.reason})" if fallback else ""), file=sys.stderr)
    return fallback.as_dict() if fallback else None


def rehearsal_options(args: argparse.Namespace, train_args: list[str]) -> tuple[list[str], dict]:
    """``sweep --rehearse``: the train options of a rehearsal (``--rehearse``, short unless the steps
    are given) and no untraced runs (``args.repeats`` becomes 0); returns them with the sweep's
    fallback record."""
    if args.executor != "local":
        raise ArtifactError("--rehearse runs on this machine's GPUs: it needs --executor local")
    given = parse_train_options(train_args)
    extra = ["--rehearse"] if "--rehearse" not in given else []
    if "--steps" not in given:
        extra += ["--steps", str(REHEARSAL_STEPS)]
    if "--warmup-steps" not in given:
        extra += ["--warmup-steps", str(REHEARSAL_WARMUP)]
    args.repeats = 0
    args.baseline_no_ddp = False
    record = {
        "kind": "rehearsal",
        "what": "rehearsal",
        "used": "world sizes larger than the GPUs here, ranks placed round-robin on them, NCCL over loopback sockets",
        "reason": "sweep --rehearse: shows the multi-GPU path work on fewer GPUs; its timings are not scaling evidence",
    }
    return [*train_args, *extra], record


def _interrupt_on_sigterm() -> None:
    """A SIGTERM to the sweep ends the current run the same way as Ctrl-C (all its ranks)."""
    import signal
    import threading

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def run(args: argparse.Namespace) -> int:
    _interrupt_on_sigterm()
    sizes = world_sizes(args.gpus)
    train_args = list(args.train_args)
    if train_args and train_args[0] == "--":
        train_args = train_args[1:]
    for forbidden in ("--out", "--tracer"):
        if forbidden in train_args:
            raise ArtifactError(f"{forbidden} is set by the sweep for each run; leave it out of the train options")
    out = args.out.resolve()
    rehearsal = None
    if args.rehearse:
        train_args, rehearsal = rehearsal_options(args, train_args)
    if args.executor == "local":
        device = check_local_resources(sizes, args.device, rehearse=args.rehearse)
    else:
        device = args.device
    if device == "cpu" and "--device" not in train_args:
        train_args += ["--device", "cpu"]
    refuse_overlap([("--out", out)], [args.data] if args.data else [])
    if args.fresh and out.is_dir() and any(out.iterdir()):
        kept = set_aside(out, "previous")
        print(f"sweep: --fresh: the earlier sweep folder is kept as {kept}", file=sys.stderr)
    writable_dir(out, "--out", create=True)
    train_args = [*train_args, *_shared_data(out, train_args, args.data)]
    tracer_fallback = _resolve_sweep_tracer(args, out, train_args, device)
    plan = plan_runs(out, sizes, args.tracer, args.repeats, args.baseline_no_ddp, train_args)
    refuse_changed_options(out, plan)
    write_text_atomic(
        SweepLayout(out).sweep,
        json.dumps(
            {
                "schema": "dnabert-scaling/sweep/1",
                "created": now_iso(),
                "world_sizes": sizes,
                "executor": args.executor,
                "tracer": args.tracer,
                "tracer_fallback": tracer_fallback,
                "rehearsal": args.rehearse,
                "fallbacks": [rehearsal] if rehearsal else [],
                "repeats": args.repeats,
                "train_args": train_args,
                "runs": [s.name for s in plan],
            },
            indent=2,
        )
        + "\n",
    )

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
                bw = run_busbw_local(out, n, train_args, device, min(args.run_timeout, 900), rehearse=args.rehearse)
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
    """Submit through ``dnabert_scaling.run.slurm``, then write each run's manifest as the local
    executor does (the job id and its log stand in for the launcher command)."""
    from dnabert_scaling.run.slurm import SlurmJobError, config_from_args, run_slurm

    config = config_from_args(args)
    complete_before = {s.name for s in plan if s.is_complete()}
    previous = {s.name: set_aside_failed(s.run_dir) for s in plan if s.name not in complete_before}
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
        if status != "ok" and spec.run_dir.is_dir():
            message = failure_message(spec, job.exit_code if job else None, message)
        if spec.run_dir.is_dir():
            extra = {
                "message": message,
                "previous_attempt": previous[spec.name].name if previous.get(spec.name) else None,
                "warnings": list(job.warnings) if job else [],
                "slurm_job": {"id": job.job_id, "state": job.state, "log": str(job.log) if job and job.log else None}
                if job
                else None,
            }
            write_manifest(
                spec,
                status,
                job.exit_code if job else None,
                started,
                0.0,
                ["sbatch", f"(job {job.job_id if job else '?'})"],
                "slurm",
                extra,
            )
        results.append(RunResult(spec, status, None, 0.0, message))
    return results, error


def format_table(results: list[RunResult]) -> str:
    lines = [f"{'run':<26} {'status':<8} {'samples/s':>10} {'step ms':>9} {'seconds':>8}"]
    for r in results:
        summary = RunLayout(r.spec.run_dir).summary
        sps = step = ""
        if summary.is_file():
            data = json.loads(summary.read_text())
            if data.get("samples_per_s"):
                sps = f"{data['samples_per_s']:.1f}"
                step = f"{data['median_step_time_s'] * 1e3:.2f}"
        lines.append(f"{r.spec.run_dir.name:<26} {r.status:<8} {sps:>10} {step:>9} {r.seconds:>8.1f}")
    return "\n".join(lines)
