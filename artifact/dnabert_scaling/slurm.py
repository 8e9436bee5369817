"""The ``slurm`` executor of the sweep: one batch job per world size, chained 1 -> 4 -> 8.

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

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Iterable, Sequence

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout, SweepLayout, slurm_job_dir
from dnabert_scaling.runspec import RunSpec

ENV_CONFIG = "DNABERT_SLURM_CONFIG"
ENV_SCRIPTS = "DNABERT_SLURM_SCRIPTS"

# KEY in the settings file -> (SlurmConfig field, kind)
CONFIG_KEYS: dict[str, tuple[str, str]] = {
    "PARTITION": ("partition", "str"),
    "ACCOUNT": ("account", "str"),
    "TIME": ("time", "str"),
    "GPUS_PER_NODE": ("gpus_per_node", "uint"),
    "MAX_NODES": ("max_nodes", "posint"),
    "CPUS_PER_TASK": ("cpus_per_task", "posint"),
    "MEM": ("mem", "str"),
    "GRES_TYPE": ("gres_type", "str"),
    "GPU_BIND": ("gpu_bind", "str"),
    "IMAGE": ("image", "path"),
    "NO_CONTAINER": ("no_container", "bool"),
    "APPTAINER": ("apptainer", "str"),
    "BIND": ("binds", "commalist"),
    "CLI": ("cli", "str"),
    "SBATCH_ARGS": ("sbatch_args", "wordlist"),
    "PASS_ENV": ("pass_env", "wordlist"),
    "JOB_NAME_PREFIX": ("job_name_prefix", "str"),
}
TERMINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
    "SPECIAL_EXIT",
    "REVOKED",
}
ACTIVE_STATES = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "STAGE_OUT"}


@dataclass
class SlurmConfig:
    """Where and how the sweep's jobs run. ``origin`` names where each setting came from."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None
    gpus_per_node: int = 4  # 0: CPU-only jobs (no GPU request, all tasks on one node)
    max_nodes: int | None = None
    cpus_per_task: int | None = None
    mem: str | None = None  # per node, as sbatch --mem
    gres_type: str | None = None  # e.g. "a100": --gres=gpu:a100:G
    gpu_bind: str = "node"  # node: --gres=gpu:G (tasks see the node's GPUs); task: --gpus-per-task=1
    image: Path | None = None
    no_container: bool = False
    apptainer: str = "apptainer"
    binds: tuple[str, ...] = ()
    cli: str | None = None  # the dnabert-scaling executable for no_container (default: this installation's)
    sbatch_args: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    job_name_prefix: str = "dnabert-"
    job_root: Path | None = None  # where the job directories go (default: <runs>/slurm)
    scripts_dir: Path | None = None  # scripts/slurm (default: $DNABERT_SLURM_SCRIPTS or the checkout's)
    command: str | None = None  # testing: shell command run per rank instead of train
    poll_s: float = 10.0
    timeout_s: float | None = None  # give up (and scancel our jobs) after this long; None: wait
    wait: bool = True
    source: Path | None = None  # the settings file, when one was read
    origin: dict[str, str] = field(default_factory=dict)

    # --- loading -------------------------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | os.PathLike, **overrides) -> "SlurmConfig":
        path = Path(path)
        values, origin = load_config(path)
        cfg = cls(source=path)
        cfg = cfg._apply(values, origin)
        return cfg.with_overrides(**overrides)

    def _apply(self, values: dict[str, object], origin: dict[str, str]) -> "SlurmConfig":
        new = replace(self, **values)
        new.origin = {**self.origin, **origin}
        return new

    def with_overrides(self, **overrides) -> "SlurmConfig":
        """A copy with the non-None ``overrides`` applied (their origin: the field name)."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown SlurmConfig fields: {', '.join(unknown)}")
        given = {k: v for k, v in overrides.items() if v is not None}
        return self._apply(given, {k: f"setting {k}" for k in given})

    def where(self, name: str) -> str:
        """Where setting ``name`` came from, for error messages."""
        return self.origin.get(name, f"setting {name}")

    # --- checks that need no cluster ------------------------------------------------------------
    def check(self) -> None:
        if self.gpus_per_node < 0:
            raise ArtifactError(f"{self.where('gpus_per_node')}: must be 0 or more, not {self.gpus_per_node}")
        if self.max_nodes is not None and self.max_nodes < 1:
            raise ArtifactError(f"{self.where('max_nodes')}: must be at least 1, not {self.max_nodes}")
        if self.cpus_per_task is not None and self.cpus_per_task < 1:
            raise ArtifactError(f"{self.where('cpus_per_task')}: must be at least 1, not {self.cpus_per_task}")
        if self.gpu_bind not in ("node", "task"):
            raise ArtifactError(f"{self.where('gpu_bind')}: must be 'node' or 'task', not {self.gpu_bind!r}")
        if self.no_container:
            return
        if self.image is None:
            raise ArtifactError(
                "no image for the slurm executor: give --image dnabert-scaling.sif (IMAGE in the settings "
                "file; build it with containers/build.sh) or --no-container"
            )
        if not Path(self.image).is_file():
            raise ArtifactError(f"image does not exist ({self.where('image')}; build it with containers/build.sh)", self.image)


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


# --- the settings file -----------------------------------------------------------------------------


def load_config(path: str | os.PathLike) -> tuple[dict[str, object], dict[str, str]]:
    """Read a ``KEY=value`` settings file: (SlurmConfig field values, their origins).

    Blank lines and lines starting with ``#`` are skipped; a value may be in single or double
    quotes, otherwise anything from a whitespace followed by ``#`` is a comment. Unknown keys and
    malformed values are errors naming the file and line.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ArtifactError(f"cannot read the SLURM settings file: {exc.strerror}", path) from None
    values: dict[str, object] = {}
    origin: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Z_][A-Z0-9_]*)=(.*)$", line)
        if not m:
            raise ArtifactError(f"line {lineno}: expected KEY=value, got {line!r}", path)
        key, value = m.group(1), m.group(2)
        q = re.match(r"^\"(.*)\"$|^'(.*)'$", value)
        if q:
            value = q.group(1) if q.group(1) is not None else q.group(2)
        else:
            value = re.split(r"\s#", value, maxsplit=1)[0].rstrip()
        if key not in CONFIG_KEYS:
            raise ArtifactError(f"line {lineno}: unknown setting {key!r} (known: {' '.join(CONFIG_KEYS)})", path)
        name, kind = CONFIG_KEYS[key]
        where = f"{key} ({path}:{lineno})"
        if value == "":
            continue  # an empty value leaves the default
        values[name] = _convert(value, kind, where)
        origin[name] = where
    return values, origin


def _convert(value: str, kind: str, where: str):
    if kind in ("uint", "posint"):
        if not value.isdigit() or (kind == "posint" and int(value) < 1):
            need = "a positive integer" if kind == "posint" else "a non-negative integer"
            raise ArtifactError(f"{where}: {value!r} is not {need}")
        return int(value)
    if kind == "bool":
        low = value.lower()
        if low not in ("0", "1", "true", "false", "yes", "no"):
            raise ArtifactError(f"{where}: {value!r} is not 0 or 1")
        return low in ("1", "true", "yes")
    if kind == "path":
        return Path(value).expanduser()
    if kind == "commalist":
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if kind == "wordlist":
        return tuple(value.split())
    return value


# --- the command line (added to `dnabert-scaling sweep` by the sweep module) -------------------------


def add_slurm_arguments(parser: argparse.ArgumentParser) -> None:
    """The slurm executor's options (all default to None, so a settings file can set them)."""
    g = parser.add_argument_group(
        "SLURM executor (--executor slurm)",
        f"settings come from --slurm-config FILE (default ${ENV_CONFIG}; KEY=value lines, see "
        "scripts/slurm/site.conf.example), then these options",
    )
    g.add_argument(
        "--slurm-config",
        dest="slurm_config",
        type=Path,
        default=None,
        metavar="FILE",
        help="settings file (KEY=value lines; the options below override it)",
    )
    g.add_argument("--partition", dest="slurm_partition", default=None, help="sbatch --partition")
    g.add_argument("--account", dest="slurm_account", default=None, help="sbatch --account")
    g.add_argument("--time-limit", dest="slurm_time", default=None, metavar="HH:MM:SS", help="sbatch --time per job")
    g.add_argument(
        "--gpus-per-node",
        dest="slurm_gpus_per_node",
        type=int,
        default=None,
        metavar="N",
        help="GPUs per node (default 4); nodes = ceil(world size / N); 0 = CPU-only jobs",
    )
    g.add_argument(
        "--max-nodes",
        dest="slurm_max_nodes",
        type=int,
        default=None,
        metavar="N",
        help="refuse a world size that needs more nodes",
    )
    g.add_argument(
        "--cpus-per-task", dest="slurm_cpus_per_task", type=int, default=None, metavar="N", help="sbatch --cpus-per-task"
    )
    g.add_argument("--mem", dest="slurm_mem", default=None, help="sbatch --mem (per node)")
    g.add_argument("--gres-type", dest="slurm_gres_type", default=None, metavar="TYPE", help="GPU type: --gres=gpu:TYPE:G")
    g.add_argument(
        "--gpu-bind",
        dest="slurm_gpu_bind",
        choices=("node", "task"),
        default=None,
        help="node (default): --gres=gpu:G, each task sees the node's GPUs; task: --gpus-per-task=1",
    )
    g.add_argument(
        "--image",
        dest="slurm_image",
        type=Path,
        default=None,
        metavar="SIF",
        help="Apptainer image the ranks run in (apptainer exec --nv --cleanenv)",
    )
    g.add_argument(
        "--no-container",
        dest="slurm_no_container",
        action="store_const",
        const=True,
        default=None,
        help="run the installed CLI on the nodes instead of the image",
    )
    g.add_argument("--apptainer", dest="slurm_apptainer", default=None, metavar="BIN", help="apptainer or singularity")
    g.add_argument(
        "--bind",
        dest="slurm_binds",
        action="append",
        default=None,
        metavar="SPEC",
        help="extra apptainer bind (repeatable); the run directories are bound anyway",
    )
    g.add_argument(
        "--cli",
        dest="slurm_cli",
        default=None,
        metavar="PATH",
        help="dnabert-scaling executable on the nodes with --no-container (default: this installation's)",
    )
    g.add_argument(
        "--pass-env",
        dest="slurm_pass_env",
        action="append",
        default=None,
        metavar="NAME",
        help="environment variable to pass into the image (repeatable; NCCL_* and SCOREP_* pass anyway)",
    )
    g.add_argument(
        "--sbatch-arg",
        dest="slurm_sbatch_args",
        action="append",
        default=None,
        metavar="ARG",
        help="extra sbatch option, e.g. --sbatch-arg=--qos=high (repeatable)",
    )
    g.add_argument(
        "--job-name-prefix",
        dest="slurm_job_name_prefix",
        default=None,
        metavar="P",
        help="job names are P + ws<N> (default dnabert-)",
    )
    g.add_argument(
        "--poll-interval", dest="slurm_poll_s", type=float, default=None, metavar="S", help="seconds between job-state queries"
    )
    g.add_argument(
        "--wait-timeout",
        dest="slurm_timeout_s",
        type=float,
        default=None,
        metavar="S",
        help="stop waiting (and cancel the sweep's jobs) after S seconds",
    )
    g.add_argument(
        "--no-wait", dest="slurm_wait", action="store_const", const=False, default=None, help="submit and return without waiting"
    )


def config_from_args(args: argparse.Namespace) -> SlurmConfig:
    """The settings file (``--slurm-config`` or ``$DNABERT_SLURM_CONFIG``), overridden by the options."""
    path = getattr(args, "slurm_config", None) or os.environ.get(ENV_CONFIG) or None
    cfg = SlurmConfig.from_file(path) if path else SlurmConfig()
    overrides: dict[str, object] = {}
    flag = {}
    for f in fields(SlurmConfig):
        value = getattr(args, f"slurm_{f.name}", None)
        if value is None:
            continue
        if f.name in ("binds", "sbatch_args", "pass_env"):
            value = tuple(getattr(cfg, f.name)) + tuple(value)
        overrides[f.name] = value
        flag[f.name] = "--" + f.name.replace("_", "-")
    cfg = cfg.with_overrides(**overrides)
    renames = {
        "time": "--time-limit",
        "binds": "--bind",
        "sbatch_args": "--sbatch-arg",
        "poll_s": "--poll-interval",
        "timeout_s": "--wait-timeout",
        "wait": "--no-wait",
        "cli": "--cli",
    }
    for name in overrides:
        cfg.origin[name] = renames.get(name, flag[name])
    return cfg


# --- talking to SLURM ---------------------------------------------------------------------------------


def _run(cmd: Sequence[str], timeout: float = 60.0, check: bool = False) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise ArtifactError(f"{cmd[0]!r} not found: the slurm executor needs the SLURM client commands on PATH") from None
    except subprocess.TimeoutExpired:
        raise ArtifactError(f"{' '.join(cmd)} did not answer within {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        raise ArtifactError(f"{' '.join(cmd)} failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
    return proc


def _fields(line: str) -> dict[str, str]:
    """``Key=value`` pairs of one ``scontrol -o`` line (values run to the next `` Key=``)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(\S*)", line):
        out.setdefault(m.group(1), m.group(2))
    return out


@dataclass
class PartitionInfo:
    name: str
    total_nodes: int | None
    max_nodes: int | None  # per job; None = unlimited
    node_gpus: int  # the most GPUs (of gres_type, if given) on one of its nodes
    node_cpus: int  # the most CPUs on one of its nodes
    state: str


def gres_gpus(gres: str, gres_type: str | None = None) -> int:
    """GPUs in a node's ``Gres=`` field: ``gpu:8``, ``gpu:a100:4(S:0-1)``, ``gpu:a100:2,gpu:v100:2``."""
    total = 0
    for item in gres.split(","):
        item = item.split("(")[0].strip()
        parts = item.split(":")
        if not parts or parts[0] != "gpu" or len(parts) < 2:
            continue
        count = parts[-1]
        kind = parts[1] if len(parts) == 3 else None
        if gres_type and kind != gres_type:
            continue
        if count.isdigit():
            total += int(count)
    return total


def partition_info(partition: str | None, gres_type: str | None = None) -> PartitionInfo:
    """The named (or the default) partition, from ``scontrol show partition`` and its nodes."""
    if partition:
        proc = _run(["scontrol", "-o", "show", "partition", partition])
        line = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else ""
        if not line.startswith("PartitionName="):
            known = _run(["sinfo", "-h", "-o", "%R"]).stdout.split()
            raise ArtifactError(
                f"partition {partition!r} does not exist on this cluster (partitions: {', '.join(sorted(set(known))) or 'none'})"
            )
    else:
        proc = _run(["scontrol", "-o", "show", "partition"], check=True)
        lines = [ln for ln in proc.stdout.splitlines() if " Default=YES " in f" {ln} "]
        if not lines:
            raise ArtifactError("no partition given and the cluster has no default partition: set PARTITION / --partition")
        line = lines[0]
    info = _fields(line)
    nodes = info.get("Nodes", "")
    node_gpus = node_cpus = 0
    if nodes and nodes != "(null)":
        cmd = ["scontrol", "-o", "show", "node"] + ([] if nodes == "ALL" else [nodes])
        for node_line in _run(cmd).stdout.splitlines():
            nf = _fields(node_line)
            node_gpus = max(node_gpus, gres_gpus(nf.get("Gres", ""), gres_type))
            cpus = nf.get("CPUTot", "0")
            node_cpus = max(node_cpus, int(cpus) if cpus.isdigit() else 0)

    def num(key: str) -> int | None:
        v = info.get(key, "")
        return int(v) if v.isdigit() else None

    return PartitionInfo(
        name=info.get("PartitionName", partition or "?"),
        total_nodes=num("TotalNodes"),
        max_nodes=num("MaxNodes"),
        node_gpus=node_gpus,
        node_cpus=node_cpus,
        state=info.get("State", "?"),
    )


def nodes_for(world_size: int, config: SlurmConfig) -> int:
    return math.ceil(world_size / config.gpus_per_node) if config.gpus_per_node > 0 else 1


def validate(config: SlurmConfig, world_sizes: Iterable[int]) -> PartitionInfo:
    """Check the settings against the cluster before anything is submitted (ArtifactError if not)."""
    config.check()
    for tool in ("sbatch", "scontrol", "sinfo"):
        if shutil.which(tool) is None:
            raise ArtifactError(f"{tool!r} not found: the slurm executor needs the SLURM client commands on PATH")
    if "is UP" not in _run(["scontrol", "ping"]).stdout:
        raise ArtifactError("the SLURM controller does not answer (scontrol ping)")
    try:
        part = partition_info(config.partition, config.gres_type)
    except ArtifactError as exc:
        if config.partition:
            raise ArtifactError(f"{config.where('partition')}: {exc}") from None
        raise
    gpn = config.gpus_per_node
    gtype = f" of type {config.gres_type}" if config.gres_type else ""
    for n in sorted(set(world_sizes)):
        nodes = nodes_for(n, config)
        what = f"world size {n}" + (f" ({nodes} node(s) x {gpn} GPU(s))" if gpn else " (CPU-only)")
        if config.max_nodes is not None and nodes > config.max_nodes:
            raise ArtifactError(
                f"{what} needs {nodes} nodes, more than {config.where('max_nodes')}={config.max_nodes} allows "
                f"(at most {config.max_nodes * gpn} ranks with {gpn} GPUs per node)"
            )
        if part.total_nodes is not None and nodes > part.total_nodes:
            raise ArtifactError(f"{what} needs {nodes} nodes but partition {part.name!r} has {part.total_nodes}")
        if part.max_nodes is not None and nodes > part.max_nodes:
            raise ArtifactError(
                f"{what} needs {nodes} nodes but partition {part.name!r} allows MaxNodes={part.max_nodes} per job"
            )
        per_node = min(n, gpn)
        if gpn and per_node > part.node_gpus:
            raise ArtifactError(
                f"{what}: {config.where('gpus_per_node')}={gpn} asks for {per_node} GPU(s) per node but the nodes of "
                f"partition {part.name!r} have at most {part.node_gpus} GPU(s){gtype} (their GRES)"
            )
        if not gpn and part.node_cpus:
            need = n * (config.cpus_per_task or 1)
            if need > part.node_cpus:
                raise ArtifactError(
                    f"{what}: {n} task(s) x {config.cpus_per_task or 1} CPU(s) do not fit on one node of partition "
                    f"{part.name!r} ({part.node_cpus} CPUs); CPU-only jobs use one node"
                )
    return part


# --- the sweep ---------------------------------------------------------------------------------------


def scripts_dir(config: SlurmConfig) -> Path:
    candidates = [config.scripts_dir, os.environ.get(ENV_SCRIPTS), Path(__file__).resolve().parents[2] / "scripts" / "slurm"]
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


def job_state(job_id: str, job_dir: Path | None = None) -> tuple[str, int | None, str | None]:
    """(state, exit code, reason) of a job: scontrol, else the job's status file, else sacct."""
    proc = _run(["scontrol", "-o", "show", "job", job_id])
    if proc.returncode == 0 and "JobState=" in proc.stdout:
        f = _fields(proc.stdout.strip().splitlines()[0])
        code = f.get("ExitCode", "")
        exit_code = int(code.split(":")[0]) if code.split(":")[0].isdigit() else None
        return f.get("JobState", "UNKNOWN"), exit_code, f.get("Reason")
    if job_dir is not None:
        status = job_dir / f"status-{job_id}"
        if status.is_file():
            kv = dict(line.split("=", 1) for line in status.read_text().splitlines() if "=" in line)
            rc = int(kv.get("exit_code", "1")) if kv.get("exit_code", "").isdigit() else None
            return ("COMPLETED" if rc == 0 else "FAILED"), rc, "from the job's status file"
    if shutil.which("sacct"):
        acct = _run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode"])
        if acct.returncode == 0 and acct.stdout.strip():
            state, _, code = acct.stdout.strip().splitlines()[0].partition("|")
            rc = code.split(":")[0]
            return state.split()[0], (int(rc) if rc.isdigit() else None), "from sacct"
    return "UNKNOWN", None, "the job is no longer known to scontrol and left no status file"


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
    results: list[JobResult] = []
    todo: dict[int, list[RunSpec]] = {}
    root = _job_root(plan, config)
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
    if not todo:
        say("every run of the plan is complete: nothing to submit")
        return results

    validate(config, todo)
    if not payload:
        # An incomplete run's folder (a failed or lost attempt) is kept under another name before the
        # run is submitted again: train refuses a folder holding another run's files, and two attempts
        # never mix in one folder. The sweep sets them aside itself first; other callers get the same.
        from dnabert_scaling.sweep import _set_aside_failed

        for runs in todo.values():
            for s in runs:
                moved = _set_aside_failed(s.run_dir)
                if moved:
                    say(f"{s.name}: the incomplete earlier attempt is kept as {moved.name}")
    for n in todo:
        old = slurm_job_dir(root, n) / "jobid"
        if old.is_file():
            old_id = old.read_text().strip()
            state, _, _ = job_state(old_id) if old_id else ("", None, None)
            if state in ACTIVE_STATES:
                raise ArtifactError(f"job {old_id} for world size {n} is still {state}: wait for it or scancel it", old)
    for n, runs in todo.items():
        _write_job_dir(slurm_job_dir(root, n), n, runs)

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
    for n in todo:
        cmd += ["--job-dir", str(slurm_job_dir(root, n))]
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

    by_size = {r.world_size: r for r in results}
    jobs: list[JobResult] = []
    for n in todo:
        job_dir = slurm_job_dir(root, n)
        job_id = (job_dir / "jobid").read_text().strip()
        r = by_size[n]
        r.job_id, r.state, r.job_dir, r.log = job_id, "SUBMITTED", job_dir, job_dir / f"slurm-{job_id}.out"
        jobs.append(r)
    if not config.wait:
        return results

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
    return results


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
