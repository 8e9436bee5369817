"""The world-size sweep (``dnabert-scaling sweep``).

For each world size: ``--repeats`` untraced throughput runs and one traced run (and, at world size
1, untraced runs without the DDP wrapper, the second scaling baseline), plus an all_reduce
bus-bandwidth measurement at every multi-rank world size. Every run gets its own directory
``<out>/ws<N>-<tracer>-r<repeat>[-<variant>]/`` with the ranks' logs, summaries and traces and a
``manifest.json`` (the spec, status, provenance and the sha256 of every file). A run that
completed is skipped when the sweep is started again, when the options its manifest records (read,
like the requested ones, by train's own parser) are the requested ones; a completed run whose options
cannot be read (no manifest, no or malformed ``train_args``) is refused, never reused or replaced. A
failed one is reported, its directory kept under a ``.failed-<time>`` name, and the sweep goes on
with the other runs.

Every input is checked before anything is written (``check_inputs``): the train options, the GPUs
or the SLURM settings and cluster, the data, ``--out`` and every record already in it (each must be a
JSON object that keeps its contract, ``run_records``). A refused sweep leaves no file behind.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import MANIFEST, SYNTHETIC_DATA, RunLayout, SweepLayout, parse_run_name
from dnabert_scaling.options import positive_float, ranged
from dnabert_scaling.outputs import output_path, refuse_link, refuse_overlap, writable_dir, write_text_atomic
from dnabert_scaling.provenance import Fallback, now_iso
from dnabert_scaling.run.folders import check_sweep_out
from dnabert_scaling.run.train.options import check_fault
from dnabert_scaling.run.sweep.rehearsal import REHEARSAL_STEPS, REHEARSAL_WARMUP, rehearsal_options, rehearsal_record
from dnabert_scaling.run.sweep.spec import RunSpec, TrainOptions, read_record
from dnabert_scaling.run.sweep.local import (
    CPU_RANKS_MIN,
    CPU_RANKS_PER_CORE,
    REHEARSAL_MAX_RANKS_PER_GPU,
    busbw_sizes_source,
    check_local_resources,
    run_busbw_local,
    run_local,
)
from dnabert_scaling.run.sweep.record import (
    RunResult,
    failure_message,
    read_summary,
    set_aside,
    set_aside_failed,
    write_manifest,
)


REPEATS = 3  # untraced throughput runs per world size, unless --repeats says otherwise
REPEATS_MAX = 1000  # at most (scripts/slurm/sweep.sh and scripts/reference_run.sh hold the same)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--gpus",
        default="1,4,8",
        help="world sizes, comma separated (default 1,4,8); with --device cpu at most "
        f"{CPU_RANKS_PER_CORE} ranks per CPU core here (at least {CPU_RANKS_MIN}), with --rehearse at most "
        f"{REHEARSAL_MAX_RANKS_PER_GPU} ranks per GPU",
    )
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
    p.add_argument(
        "--repeats",
        type=ranged(int, 1, REPEATS_MAX),
        default=None,
        help=f"untraced throughput runs per world size (default {REPEATS}; none with --rehearse)",
    )
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
        "(needed when the train options differ from the completed runs there); only a sweep's own folder",
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


def refuse_empty_plan(args: argparse.Namespace, sizes: list[int]) -> None:
    """Refuse (exit 2) options under which the sweep would train nothing, before anything is written: a
    sweep that plans no run would write its record (and the shared synthetic data, perhaps a bus-bandwidth
    run) and exit 0, as if it had measured something. ``args`` as ``_train_options`` left them (a
    rehearsal's repeats are 0)."""
    if plan_runs(Path("."), sizes, args.tracer, args.repeats, args.baseline_no_ddp, []):
        return
    if args.rehearse and args.tracer == "none":
        raise ArtifactError(
            "--rehearse --tracer none: nothing to run: a rehearsal runs only the traced run of each world size (no "
            "untraced throughput runs, no world-size-1 baseline without DDP) and --tracer none asks for none; give "
            "--tracer auto, torch or scorep, or leave out --rehearse for untraced throughput runs"
        )
    raise ArtifactError("nothing to run: these options plan no training run")  # no other combination does so today


def _train_options(args: argparse.Namespace) -> tuple[list[str], dict | None]:
    """The train options after ``--``, checked by train's own parser (a malformed list is refused
    here, before anything is written), and the rehearsal's fallback record (None without one)."""
    train_args = list(args.train_args)
    if train_args and train_args[0] == "--":
        train_args = train_args[1:]
    given = TrainOptions.parse(train_args).given
    for dest in ("out", "tracer"):
        if dest in given:
            flag = TrainOptions.flag(dest)
            raise ArtifactError(f"{flag} is set by the sweep for each run; leave it out of the train options")
    if "rehearse" in given:  # the sweep's own: in the train options it would rehearse runs the sweep records as measured
        raise ArtifactError(
            "--rehearse in the train options (after '--'): a rehearsal is the sweep's, which then runs only the traced "
            "runs and records it in sweep.json; give --rehearse before '--'"
        )
    if args.rehearse:
        return rehearsal_options(args, train_args)
    if args.repeats is None:
        args.repeats = REPEATS
    return train_args, None


def _device_option(opts: TrainOptions, device: str) -> list[str]:
    """``--device`` for every run: the sweep's, unless the train options give the same one."""
    if "device" not in opts.given:
        return ["--device", device] if device == "cpu" else []
    if device != "auto" and opts.given["device"] != device:
        raise ArtifactError(
            f"the train options say --device {opts.given['device']} but the sweep runs on {device}: give --device to "
            "the sweep (before '--') only"
        )
    return []


def shared_data(out: Path, opts: TrainOptions, data: str | None) -> tuple[list[str], Path | None]:
    """Every run of a sweep trains on the same task folder: the train options that say so, and the
    synthetic task folder the sweep must write first (None: none), from the parsed train options."""
    given = "data" in opts.given
    if data and given:
        raise ArtifactError("--data is given twice, to the sweep and in the train options: give it once")
    if data or given:
        folder = Path(data or opts.given["data"])
        if not folder.is_dir():
            raise ArtifactError(f"{'--data' if data else 'the train options: --data'}: GUE task folder does not exist", folder)
        return (["--data", str(folder.resolve())] if data else []), None
    from dnabert_scaling.run.train.options import ENV_GUE
    from dnabert_scaling.run.workload.data import GUE_TASKS

    task = opts.value("task")
    root = os.environ.get(ENV_GUE)
    found = root and any((p / "train.csv").is_file() for p in [Path(root) / task, *Path(root).glob(f"*/{task}")])
    if found and not opts.value("synthetic"):
        return [], None  # each run finds the real task itself
    if task not in GUE_TASKS:  # as train refuses it: no synthetic stand-in of an unknown task's shape
        raise ArtifactError(
            f"the train options: --task {task!r}: not a GUE task, and no folder of it is given (--data) or found under "
            f"${ENV_GUE}: give its folder, or one of the GUE tasks: {', '.join(sorted(GUE_TASKS))}"
        )
    if opts.value("synthetic"):
        return [], None
    folder = out / SYNTHETIC_DATA / task
    return ["--data", str(folder.resolve())], folder


def _write_synthetic(folder: Path, opts: TrainOptions) -> dict:
    """The synthetic task every run trains on (written once), and the sweep's record of that fallback."""
    from dnabert_scaling.run.train.options import ENV_GUE
    from dnabert_scaling.run.workload.data import write_synthetic_task

    task = opts.value("task")
    like = task  # a GUE task name (shared_data)
    if not (folder / "train.csv").is_file():
        write_synthetic_task(folder, like=like)
    root = os.environ.get(ENV_GUE)
    record = {
        "kind": "data",
        "what": "data",
        "used": f"synthetic planted-motif task shaped like {like} ({folder})",
        "reason": f"no --data and task {task!r} not found under ${ENV_GUE}={root}"
        if root
        else f"no --data and ${ENV_GUE} is not set",
    }
    print(f"sweep: every run trains on {record['used']}: {record['reason']}", file=sys.stderr)
    return record


def _recorded_options(run_dir: Path) -> TrainOptions | None:
    """The options a completed run was trained with (None: not complete, it is run again). Every
    record read here must be a JSON object that keeps its contract; a completed run whose options
    cannot be read is refused: reusing it could mix configurations, and it is the user's to move."""
    from dnabert_scaling.run_records import check_manifest, check_run_summary

    hint = "move the run folder away or use --fresh"
    layout = RunLayout(run_dir)
    summary = read_record(layout.summary, hint=hint)
    manifest = read_record(layout.manifest, hint=hint)
    if summary is None or summary.get("status") != "ok":
        return None
    read_record(layout.summary, check_run_summary, hint)
    if manifest is None:
        raise ArtifactError(
            f"a completed run without {MANIFEST}: the options it was trained with are unknown, so the sweep cannot "
            f"tell whether it matches the requested ones; {hint}",
            run_dir,
        )
    read_record(layout.manifest, check_manifest, hint)
    if manifest.get("status") != "ok":
        return None
    if "train_args" not in manifest:
        raise ArtifactError(
            f"lacks train_args (the options the run was trained with): the sweep cannot tell whether this completed "
            f"run matches the requested options; {hint}",
            layout.manifest,
        )
    recorded = manifest["train_args"]
    if not isinstance(recorded, list) or not all(isinstance(a, str) for a in recorded):
        raise ArtifactError(
            f"train_args must be the list of options the run was trained with, not {recorded!r:.40}: the sweep cannot "
            f"tell whether this completed run matches the requested options; {hint}",
            layout.manifest,
        )
    try:
        return TrainOptions.parse(recorded, where="train_args")
    except ArtifactError as exc:
        raise ArtifactError(f"{exc}: the sweep cannot compare this completed run's options; {hint}", layout.manifest) from None


def refuse_changed_options(out: Path, train_args: list[str]) -> None:
    """A completed run is reused only when it was trained with the options requested now; so is
    every other completed run in the folder (``analyze`` reads them all). Reads back every record of
    the folder first: one that is not what the sweep wrote is refused, naming the file."""
    requested = TrainOptions.parse(train_args)
    without_ddp = TrainOptions.parse([*train_args, "--no-ddp"])
    changed: dict[str, list[str]] = {}
    for run_dir in SweepLayout(out).run_dirs():
        recorded = _recorded_options(run_dir)
        name = parse_run_name(run_dir.name)
        want = without_ddp if name and name.variant == "noddp" else requested
        diff = recorded.differences(want) if recorded is not None else []
        if diff:
            changed[run_dir.name] = diff
    for path in SweepLayout(out).busbw_files().values():  # reused as well: measured at the requested buckets?
        source = (read_record(path, hint="remove it or use --fresh") or {}).get("sizes_source")
        if source != busbw_sizes_source(train_args):
            changed[path.name] = [f"message sizes {source!r} -> {busbw_sizes_source(train_args)!r}"]
    if changed:
        first = next(iter(changed.values()))
        raise ArtifactError(
            f"{len(changed)} completed run(s) in this sweep folder were trained with other options than the ones "
            f"requested now ({', '.join(first)}; runs: {', '.join(changed)}); mixing them would compare different "
            "configurations. Rerun with the recorded options, use another --out, or --fresh to keep this folder "
            "aside and start a new sweep",
            out,
        )


def _resolve_sweep_tracer(args: argparse.Namespace, out: Path, opts: TrainOptions, device: str) -> dict | None:
    """``--tracer auto``: decided once for the whole sweep, by the Score-P preflight on this machine
    (kept as ``<out>/scorep-preflight.json``); on CPU torch.profiler, Score-P's CUDA recording having
    nothing to record there. ``args.tracer`` becomes ``scorep`` or ``torch``. Returns the fallback taken
    (recorded in sweep.json, and passed to every run, which records it in its provenance), or None."""
    from dnabert_scaling.run.tracing import ENV_SWEEP_FALLBACK, resolve_tracer, sweep_fallback_env
    from dnabert_scaling.run.tracing.preflight import ENV_RESULT

    os.environ.pop(ENV_SWEEP_FALLBACK, None)  # an earlier sweep's decision in this process is not this one's
    if args.tracer != "auto" or args.executor != "local":
        return None

    if device == "cpu":
        from dnabert_scaling.run.tracing.scorep import scorep_available

        ok, why = scorep_available()
        reason = f"the runs are on CPU, where Score-P's CUDA recording has nothing to record ({why})" if ok else why
        args.tracer, fallback = "torch", Fallback("tracer", "torch.profiler (Kineto) instead of Score-P", reason)
    else:
        os.environ.setdefault(ENV_RESULT, str(out / "scorep-preflight.json"))
        args.tracer, fallback = resolve_tracer("auto", model=opts.value("model"))
    print(f"sweep: --tracer auto -> {args.tracer}" + (f" ({fallback.reason})" if fallback else ""), file=sys.stderr)
    if fallback is None:
        return None
    os.environ[ENV_SWEEP_FALLBACK] = sweep_fallback_env(args.tracer, fallback)
    return fallback.as_dict()


def _interrupt_on_sigterm() -> None:
    """A SIGTERM to the sweep ends the current run the same way as Ctrl-C (all its ranks)."""
    import signal
    import threading

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


@dataclass
class Checked:
    """A sweep whose every input was checked, before anything is written."""

    out: Path
    sizes: list[int]
    device: str
    train_args: list[str]
    synthetic: Path | None  # the synthetic task folder to write first, if any
    fallbacks: list[dict]
    slurm: Any = None  # the SlurmConfig of --executor slurm


def check_inputs(args: argparse.Namespace) -> Checked:
    """Every check the sweep can make before it writes anything: world sizes, train options, the
    GPUs here (local) or the SLURM settings and cluster (slurm), the data, the --out folder and the
    records already in it. A refusal leaves no file or folder behind."""
    sizes = world_sizes(args.gpus)
    train_args, rehearsal = _train_options(args)
    refuse_empty_plan(args, sizes)
    config = None
    if args.executor == "local":
        device = check_local_resources(sizes, args.device, rehearse=args.rehearse)
    else:
        from dnabert_scaling.run.slurm import config_from_args

        device, config = args.device, config_from_args(args)
        config.check()  # the settings alone; the cluster once the folder's runs are known
    if rehearsal is not None:
        rehearsal = rehearsal_record(device)  # worded for the device the ranks run on
    refuse_link(args.out, "--out")  # before it is resolved: the output rule of every command
    out = args.out.resolve()
    opts = TrainOptions.parse(train_args)
    steps = opts.value("warmup_steps") + opts.value("steps")
    for n in sizes:  # as each run's train refuses it, before any run starts
        check_fault(opts.value("inject_fault"), n, steps, where=f"the train options at world size {n}: ")
    train_args += _device_option(opts, device)
    data_args, synthetic = shared_data(out, opts, args.data)
    train_args += data_args
    inputs = [d for d in (args.data, opts.given.get("data")) if d]
    refuse_overlap([("--out", out)], inputs)
    writable_dir(out, "--out", into_runs=True)
    check_sweep_out(out, args.fresh)  # a folder of the sweep's own, before --fresh sets it aside
    fresh = args.fresh and out.is_dir() and any(out.iterdir())
    if not fresh:
        refuse_changed_options(out, train_args)
    if config is not None:
        from dnabert_scaling.run.slurm import preflight

        plan = plan_runs(out, sizes, args.tracer, args.repeats, args.baseline_no_ddp, train_args)
        preflight(config, {s.world_size for s in plan if fresh or not s.is_complete()})
    return Checked(out, sizes, device, train_args, synthetic, [rehearsal] if rehearsal else [], config)


def run(args: argparse.Namespace) -> int:
    _interrupt_on_sigterm()
    checked = check_inputs(args)
    out, sizes, device, train_args = checked.out, checked.sizes, checked.device, checked.train_args
    if args.fresh and out.is_dir() and any(out.iterdir()):
        kept = set_aside(out, "previous")
        print(f"sweep: --fresh: the earlier sweep folder is kept as {kept}", file=sys.stderr)
    writable_dir(out, "--out", create=True, into_runs=True)
    opts = TrainOptions.parse(train_args)
    if checked.synthetic is not None:
        checked.fallbacks.append(_write_synthetic(checked.synthetic, opts))
    tracer_fallback = _resolve_sweep_tracer(args, out, opts, device)
    plan = plan_runs(out, sizes, args.tracer, args.repeats, args.baseline_no_ddp, train_args)
    _write_sweep_record(args, out, sizes, train_args, plan, tracer_fallback, checked.fallbacks)

    results: list[RunResult] = []
    if args.executor == "slurm":
        results, job_error = _run_with_slurm(checked.slurm, plan)
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


def _write_sweep_record(
    args: argparse.Namespace,
    out: Path,
    sizes: list[int],
    train_args: list[str],
    plan: list[RunSpec],
    tracer_fallback: dict | None,
    fallbacks: list[dict],
) -> None:
    record = {
        "schema": "dnabert-scaling/sweep/1",
        "created": now_iso(),
        "world_sizes": sizes,
        "executor": args.executor,
        "tracer": args.tracer,
        "tracer_fallback": tracer_fallback,
        "rehearsal": args.rehearse,
        "fallbacks": fallbacks,
        "repeats": args.repeats,
        "train_args": train_args,
        "runs": [s.name for s in plan],
    }
    write_text_atomic(SweepLayout(out).sweep, json.dumps(record, indent=2) + "\n")


def _run_with_slurm(config, plan: list[RunSpec]) -> tuple[list[RunResult], str | None]:
    """Submit through ``dnabert_scaling.run.slurm`` with the checked ``config``, then write each run's
    manifest as the local executor does (the job id and its log stand in for the launcher command)."""
    from dnabert_scaling.run.slurm import SlurmJobError, run_slurm

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
        data = read_summary(r.spec.run_dir)
        sps = step = ""
        if isinstance(data.get("samples_per_s"), (int, float)) and isinstance(data.get("median_step_time_s"), (int, float)):
            sps = f"{data['samples_per_s']:.1f}"
            step = f"{data['median_step_time_s'] * 1e3:.2f}"
        lines.append(f"{r.spec.run_dir.name:<26} {r.status:<8} {sps:>10} {step:>9} {r.seconds:>8.1f}")
    return "\n".join(lines)
