"""Submission of the ``slurm`` executor of the sweep: one batch job per world size, chained 1 -> 4 -> 8.

``run_slurm(plan, config)`` groups the plan's runs by world size, leaves out runs that are
complete, checks the configuration against the cluster (``validate``), writes one job directory
per world size and submits them through ``scripts/slurm/sweep.sh`` (which chains them with
``--dependency=afterok`` and starts every rank with ``srun``, inside ``apptainer exec --nv
--cleanenv IMAGE`` or, with ``no_container``, through the installed CLI). It then waits for the
jobs and returns one :class:`JobResult` per world size; a failed job raises
:class:`SlurmJobError`, naming the job id and its log file.

Job directory (``<runs>/slurm/ws<N>/``, the contract with ``scripts/slurm/dnabert-job.sbatch``):
``world_size``, ``run-NNN.args`` (the ``train`` arguments, NUL-separated), ``run-NNN.rundir``,
``jobid`` (written at submission), ``slurm-<jobid>.out`` (the batch log) and
``status-<jobid>`` (``exit_code=...``, written by the job at exit) and, when a rank failed after its
run had completed, ``warnings-<jobid>``.

The settings file is ``KEY=value`` lines (``#`` comments, optional quotes), read the same way by
``sweep.sh``; see ``scripts/slurm/site.conf.example``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout, SweepLayout, slurm_job_dir
from dnabert_scaling.run.sweep.spec import RunSpec
from dnabert_scaling.run.slurm.cluster import ACTIVE_STATES, TERMINAL_STATES, _run, job_state, validate
from dnabert_scaling.run.slurm.config import ENV_CONFIG, ENV_SCRIPTS, SlurmConfig


@dataclass
class JobResult:
    """One world size's job: its id, final state and where its logs are."""

    world_size: int
    job_id: str | None
    state: str  # COMPLETED, FAILED, CANCELLED, ..., SUBMITTED (no_wait) or SKIPPED (nothing to run)
    exit_code: int | None
    job_dir: Path | None
    log: Path | None
    runs: list[str] = field(default_factory=list)  # run names the job had to do
    skipped: list[str] = field(default_factory=list)  # run names already complete before submission
    reason: str | None = None
    failed_run: str | None = None
    warnings: list[str] = field(default_factory=list)  # from the job's warnings-<jobid> file

    @property
    def ok(self) -> bool:
        return self.state in ("COMPLETED", "SKIPPED", "SUBMITTED")

    def describe(self) -> str:
        text = f"job {self.job_id} (world size {self.world_size}): {self.state}"
        if self.exit_code not in (None, 0):
            text += f", exit code {self.exit_code}"
        if self.failed_run:
            text += f", failed run {self.failed_run}"
        if self.reason and self.reason not in ("None", "NonZeroExitCode"):
            text += f" ({self.reason})"
        if self.log is not None:
            text += f"; log: {self.log}"
        return text


class SlurmJobError(ArtifactError):
    """A sweep job did not complete; ``results`` has every job's outcome."""

    def __init__(self, message: str, results: list[JobResult]):
        self.results = results
        super().__init__(message)


# --- the sweep ---------------------------------------------------------------------------------------


def scripts_dir(config: SlurmConfig) -> Path:
    candidates = [config.scripts_dir, os.environ.get(ENV_SCRIPTS), Path(__file__).resolve().parents[4] / "scripts" / "slurm"]
    for c in candidates:
        if c and (Path(c) / "sweep.sh").is_file():
            return Path(c).resolve()
    raise ArtifactError(
        f"scripts/slurm (sweep.sh, dnabert-job.sbatch) not found next to this installation; set ${ENV_SCRIPTS} "
        "to the checkout's scripts/slurm folder"
    )


def _default_cli() -> str:
    exe = Path(sys.executable).parent / "dnabert-scaling"
    if exe.is_file():
        return str(exe)
    found = shutil.which("dnabert-scaling")
    if found:
        return found
    raise ArtifactError("--no-container: no dnabert-scaling executable found; give --cli PATH")


def preflight(config: SlurmConfig, world_sizes: Iterable[int]) -> None:
    """Every check of the slurm executor that writes nothing, for the sweep to make before it writes
    anything: the settings (``check``) and, for the world sizes still to run, the cluster
    (``validate``: the client commands, the controller, the partition's shape), scripts/slurm and,
    without a container, the CLI the nodes run."""
    config.check()
    sizes = sorted(set(world_sizes))
    if not sizes:
        return
    validate(config, sizes)
    scripts_dir(config)
    if config.no_container and not config.cli:
        _default_cli()


def group_plan(plan: Sequence[RunSpec]) -> dict[int, list[RunSpec]]:
    """The runs by world size (ascending), each in plan order; duplicate run directories are an error."""
    seen: dict[Path, str] = {}
    groups: dict[int, list[RunSpec]] = {}
    for spec in plan:
        rd = Path(spec.run_dir).resolve()
        if rd in seen:
            raise ArtifactError(f"runs {seen[rd]} and {spec.name} share the run directory {rd}")
        seen[rd] = spec.name
        groups.setdefault(int(spec.world_size), []).append(spec)
    for n in groups:
        if n < 1:
            raise ArtifactError(f"world size {n} in the plan: must be at least 1")
    return dict(sorted(groups.items()))


def _job_root(plan: Sequence[RunSpec], config: SlurmConfig) -> Path:
    if config.job_root is not None:
        return Path(config.job_root).resolve()
    parents = {Path(s.run_dir).resolve().parent for s in plan}
    return SweepLayout(os.path.commonpath([str(p) for p in parents])).slurm


def _write_job_dir(job_dir: Path, world_size: int, runs: list[RunSpec]) -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    for old in list(job_dir.glob("run-*.args")) + list(job_dir.glob("run-*.rundir")):
        old.unlink()
    (job_dir / "world_size").write_text(f"{world_size}\n")
    for k, spec in enumerate(runs):
        args = spec.command_args()
        run_dir = Path(spec.run_dir).resolve()
        args[args.index("--out") + 1] = str(run_dir)
        for a in args:
            if "\0" in a:
                raise ArtifactError(f"run {spec.name}: a train argument contains a NUL byte")
        (job_dir / f"run-{k:03d}.args").write_bytes(b"".join(a.encode() + b"\0" for a in args))
        (job_dir / f"run-{k:03d}.rundir").write_text(f"{run_dir}\n")
        run_dir.parent.mkdir(parents=True, exist_ok=True)


Say = Callable[[str], None]


def run_slurm(
    plan: Sequence[RunSpec],
    config: SlurmConfig,
    log: Callable[[str], None] | None = None,
) -> list[JobResult]:
    """Submit the plan as one chained job per world size and wait for them (see the module doc)."""
    say = log or (lambda msg: print(f"dnabert-scaling sweep: {msg}", file=sys.stderr, flush=True))
    groups = group_plan(plan)
    if not groups:
        raise ArtifactError("the sweep plan is empty")
    payload = bool(config.command)
    root = _job_root(plan, config)
    results, todo = _pending_jobs(groups, root, payload, say)
    if not todo:
        say("every run of the plan is complete: nothing to submit")
        return results

    validate(config, todo)
    if not payload:
        _set_aside_incomplete(todo, say)
    _refuse_active_jobs(todo, root)
    for n, runs in todo.items():
        _write_job_dir(slurm_job_dir(root, n), n, runs)

    _submit(_sweep_command(config, [slurm_job_dir(root, n) for n in todo]), say)
    jobs = _submitted_jobs(todo, root, results)
    if not config.wait:
        return results

    _wait_for(jobs, config, say)
    _raise_unless_complete(jobs, todo, payload, results)
    return results


def _pending_jobs(
    groups: dict[int, list[RunSpec]], root: Path, payload: bool, say: Say
) -> tuple[list[JobResult], dict[int, list[RunSpec]]]:
    """One result per world size (SKIPPED when all its runs are complete) and the runs still to do."""
    results: list[JobResult] = []
    todo: dict[int, list[RunSpec]] = {}
    for n, runs in groups.items():
        pending = [s for s in runs if payload or not s.is_complete()]
        done = [s.name for s in runs if s not in pending]
        if pending:
            todo[n] = pending
        results.append(
            JobResult(
                n,
                None,
                "SKIPPED" if not pending else "NEW",
                None,
                slurm_job_dir(root, n) if pending else None,
                None,
                [s.name for s in pending],
                done,
            )
        )
        if done:
            say(f"world size {n}: {len(done)} complete run(s) skipped: {', '.join(done)}")
    return results, todo


def _set_aside_incomplete(todo: dict[int, list[RunSpec]], say: Say) -> None:
    """Keep an incomplete run's folder (a failed or lost attempt) under another name before the run
    is submitted again: train refuses a folder holding another run's files, and two attempts never
    mix in one folder. The sweep sets them aside itself first; other callers get the same."""
    from dnabert_scaling.run.sweep.record import set_aside_failed

    for runs in todo.values():
        for s in runs:
            moved = set_aside_failed(s.run_dir)
            if moved:
                say(f"{s.name}: the incomplete earlier attempt is kept as {moved.name}")


def _refuse_active_jobs(todo: dict[int, list[RunSpec]], root: Path) -> None:
    """An earlier job of a world size that is still pending or running must not be overwritten."""
    for n in todo:
        old = slurm_job_dir(root, n) / "jobid"
        if old.is_file():
            old_id = old.read_text().strip()
            state, _, _ = job_state(old_id) if old_id else ("", None, None)
            if state in ACTIVE_STATES:
                raise ArtifactError(f"job {old_id} for world size {n} is still {state}: wait for it or scancel it", old)


def _sweep_command(config: SlurmConfig, job_dirs: list[Path]) -> list[str]:
    """The ``scripts/slurm/sweep.sh`` command line carrying every setting, one ``--job-dir`` per job."""
    sdir = scripts_dir(config)
    cmd = [
        "bash",
        str(sdir / "sweep.sh"),
        "--gpus-per-node",
        str(config.gpus_per_node),
        "--gpu-bind",
        config.gpu_bind,
        "--job-name-prefix",
        config.job_name_prefix,
    ]
    for flag, value in (
        ("--partition", config.partition),
        ("--account", config.account),
        ("--time", config.time),
        ("--mem", config.mem),
        ("--gres-type", config.gres_type),
        ("--max-nodes", config.max_nodes),
        ("--cpus-per-task", config.cpus_per_task),
        ("--command", config.command),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    if config.no_container:
        cmd += ["--no-container", "--cli", config.cli or _default_cli()]
    else:
        cmd += ["--image", str(Path(config.image).resolve()), "--apptainer", config.apptainer]
    if config.pass_env:
        cmd += ["--pass-env", " ".join(config.pass_env)]
    for b in config.binds:
        cmd += ["--bind", b]
    for a in config.sbatch_args:
        cmd += [f"--sbatch-arg={a}"]
    for job_dir in job_dirs:
        cmd += ["--job-dir", str(job_dir)]
    return cmd


def _submit(cmd: list[str], say: Say) -> None:
    """Run sweep.sh (it submits the chained jobs and writes each job directory's ``jobid``)."""
    env = {k: v for k, v in os.environ.items() if k != ENV_CONFIG}  # every setting is on the command line
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        raise ArtifactError("scripts/slurm/sweep.sh did not finish submitting within 600 s") from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).replace("sweep.sh: error: ", "")
        raise ArtifactError(f"submission failed: {msg}")
    for line in proc.stdout.splitlines():
        say(line)


def _submitted_jobs(todo: dict[int, list[RunSpec]], root: Path, results: list[JobResult]) -> list[JobResult]:
    """The results of the submitted world sizes, now SUBMITTED with their job id and log file."""
    by_size = {r.world_size: r for r in results}
    jobs: list[JobResult] = []
    for n in todo:
        job_dir = slurm_job_dir(root, n)
        job_id = (job_dir / "jobid").read_text().strip()
        r = by_size[n]
        r.job_id, r.state, r.job_dir, r.log = job_id, "SUBMITTED", job_dir, job_dir / f"slurm-{job_id}.out"
        jobs.append(r)
    return jobs


def _wait_for(jobs: list[JobResult], config: SlurmConfig, say: Say) -> None:
    """Poll the jobs until each has ended; after ``config.timeout_s`` cancel the ones left."""
    start = time.monotonic()
    waiting = {r.job_id: r for r in jobs}
    last_states: dict[str, str] = {}
    while waiting:
        for job_id, r in list(waiting.items()):
            state, code, reason = job_state(job_id, r.job_dir)
            state = state.split("+")[0]  # CANCELLED+ (by a user) -> CANCELLED
            if last_states.get(job_id) != state:
                say(f"job {job_id} (world size {r.world_size}): {state}")
                last_states[job_id] = state
            if state in TERMINAL_STATES or state == "UNKNOWN":
                _record_end(r, state, code, reason, say)
                del waiting[job_id]
        if not waiting:
            break
        if config.timeout_s is not None and time.monotonic() - start > config.timeout_s:
            ids = sorted(waiting)
            _run(["scancel", *ids])
            for job_id in ids:
                waiting[job_id].state = "CANCELLED"
                waiting[job_id].reason = f"still unfinished after {config.timeout_s:.0f} s; cancelled by the sweep"
            break
        time.sleep(max(0.2, config.poll_s))


def _record_end(r: JobResult, state: str, code: int | None, reason: str | None, say: Say) -> None:
    """A job that has ended: its state, and the failed run and warnings its job directory names."""
    job_id = r.job_id
    r.state, r.exit_code, r.reason = state, code, reason
    status = r.job_dir / f"status-{job_id}"
    if status.is_file():
        kv = dict(line.split("=", 1) for line in status.read_text().splitlines() if "=" in line)
        r.failed_run = kv.get("failed_run") or None
    warn = r.job_dir / f"warnings-{job_id}"
    if warn.is_file():
        r.warnings = [ln for ln in warn.read_text().splitlines() if ln.strip()]
        for w in r.warnings:
            say(f"job {job_id} (world size {r.world_size}): warning: {w}")


def _raise_unless_complete(
    jobs: list[JobResult], todo: dict[int, list[RunSpec]], payload: bool, results: list[JobResult]
) -> None:
    """SlurmJobError naming every job that did not complete (or left a run incomplete), with rank logs."""
    failed = [r for r in jobs if r.state != "COMPLETED"]
    if not payload:
        for r in jobs:
            if r.state == "COMPLETED":
                missing = [s.name for s in todo[r.world_size] if not s.is_complete()]
                if missing:
                    r.state, r.reason = "INCOMPLETE", f"job completed but runs are not complete: {', '.join(missing)}"
                    failed.append(r)
    if failed:
        lines = [r.describe() for r in failed]
        for r in failed:
            if r.failed_run:
                logs = RunLayout(_run_dir_of(todo[r.world_size], r.failed_run)).logs
                lines.append(f"rank logs of {r.failed_run}: {logs}")
                lines += _log_tails(logs)
        raise SlurmJobError("SLURM sweep failed:\n  " + "\n  ".join(lines), results)


def _log_tails(logs: Path, lines: int = 8) -> list[str]:
    """The last lines of each rank's stderr log, indented, for the error message."""
    out: list[str] = []
    for err in sorted(logs.glob("rank*.err"), key=lambda p: (len(p.name), p.name)):
        try:
            tail = [ln for ln in err.read_text(errors="replace").splitlines() if ln.strip()][-lines:]
        except OSError:
            continue
        if tail:
            out.append(f"  {err.name}:")
            out += [f"    {ln}" for ln in tail]
    return out


def _run_dir_of(runs: list[RunSpec], name: str) -> Path:
    for s in runs:
        if s.name == name or Path(s.run_dir).name == name:
            return Path(s.run_dir)
    return Path(name)
