"""The slurm executor's settings: the ``KEY=value`` settings file (read the same way by
``scripts/slurm/sweep.sh``; see ``scripts/slurm/site.conf.example``), its parsing and checks that
need no cluster, and the ``sweep`` command's SLURM options (``add_slurm_arguments``,
``config_from_args``)."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from dnabert_scaling.errors import ArtifactError, read_text_file
from dnabert_scaling.options import nonneg_int, positive_float, positive_int

ENV_CONFIG = "DNABERT_SLURM_CONFIG"
ENV_SCRIPTS = "DNABERT_SLURM_SCRIPTS"

# sbatch --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
# days-hours:minutes:seconds (ASCII digits), or no limit
TIME_RE = re.compile(r"[0-9]+(:[0-9]+){0,2}|[0-9]+-[0-9]+(:[0-9]+){0,2}|(?i:unlimited|infinite)")
# sbatch --mem: a size in MB, or with a K/M/G/T suffix
MEM_RE = re.compile(r"[0-9]+[KMGTkmgt]?")
# the largest number a settings file's count may be (9 digits: sweep.sh's shell arithmetic reads it too)
MAX_SETTING_INT = 999_999_999


def ascii_int(text: str) -> int | None:
    """``text`` as a non-negative integer when it is ASCII digits only, else None (``str.isdigit``
    accepts ``²`` and other digits ``int`` refuses)."""
    return int(text) if re.fullmatch(r"[0-9]+", text) else None


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
        if self.time is not None and not TIME_RE.fullmatch(self.time):
            raise ArtifactError(
                f"{self.where('time')}: {self.time!r} is not a SLURM time limit (minutes, HH:MM:SS, D-HH:MM:SS, ...)"
            )
        if self.mem is not None and not MEM_RE.fullmatch(self.mem):
            raise ArtifactError(f"{self.where('mem')}: {self.mem!r} is not a SLURM memory size (e.g. 64G, 512000M)")
        for name in ("poll_s", "timeout_s"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise ArtifactError(f"{self.where(name)}: must be a positive number of seconds, not {value!r}")
        if self.no_container:
            return
        if self.image is None:
            raise ArtifactError(
                "no image for the slurm executor: give --image dnabert-scaling.sif (IMAGE in the settings "
                "file; build it with containers/build.sh) or --no-container"
            )
        if not Path(self.image).is_file():
            raise ArtifactError(f"image does not exist ({self.where('image')}; build it with containers/build.sh)", self.image)


# --- the settings file -----------------------------------------------------------------------------


def load_config(path: str | os.PathLike) -> tuple[dict[str, object], dict[str, str]]:
    """Read a ``KEY=value`` settings file: (SlurmConfig field values, their origins).

    UTF-8 text; blank lines and lines starting with ``#`` are skipped; a value may be in single or
    double quotes (then only a ``# comment`` may follow the closing quote), otherwise anything from a
    whitespace followed by ``#`` is a comment. Unknown keys, a key given twice, an unclosed quote,
    ``IMAGE`` together with ``NO_CONTAINER=1`` and malformed values are errors naming the file and
    line. ``scripts/slurm/sweep.sh`` reads the file by the same rules.
    """
    path = Path(path)
    text = read_text_file(path, "a SLURM settings file")
    values: dict[str, object] = {}
    origin: dict[str, str] = {}
    first: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Z_][A-Z0-9_]*)=(.*)$", line)
        if not m:
            raise ArtifactError(f"line {lineno}: expected KEY=value, got {line!r}", path)
        key = m.group(1)
        if key not in CONFIG_KEYS:
            raise ArtifactError(f"line {lineno}: unknown setting {key!r} (known: {' '.join(CONFIG_KEYS)})", path)
        if key in first:
            raise ArtifactError(f"line {lineno}: {key} is given twice (first on line {first[key]}): give it once", path)
        value, problem = _unquote(m.group(2))
        if problem:
            raise ArtifactError(f"line {lineno}: {key}: {problem}", path)
        first[key] = lineno
        name, kind = CONFIG_KEYS[key]
        where = f"{key} ({path}:{lineno})"
        if value == "":
            continue  # an empty value leaves the default
        values[name] = _convert(value, kind, where)
        origin[name] = where
    if values.get("no_container") and "image" in values:
        raise ArtifactError(
            f"IMAGE (line {first['IMAGE']}) and NO_CONTAINER (line {first['NO_CONTAINER']}) exclude each other: "
            "give one (an option given on the command line overrides either)",
            path,
        )
    return values, origin


def _unquote(value: str) -> tuple[str, str | None]:
    """A settings file's value without its quotes or trailing ``# comment``, and the problem (None:
    none): an unclosed quote, or text after the closing one."""
    if value[:1] not in ("'", '"'):
        return re.split(r"\s#", value, maxsplit=1)[0].rstrip(), None
    close = value.find(value[0], 1)
    if close < 0:
        return "", f"the quote {value[0]} is not closed: {value!r}"
    rest = value[close + 1 :].strip()
    if rest and not rest.startswith("#"):
        return "", f"text after the closing quote: {value!r} (only a # comment may follow)"
    return value[1:close], None


def _convert(value: str, kind: str, where: str):
    if kind in ("uint", "posint"):
        number = ascii_int(value)
        if number is None or (kind == "posint" and number < 1):
            need = "a positive integer" if kind == "posint" else "a non-negative integer"
            raise ArtifactError(f"{where}: {value!r} is not {need}")
        if number > MAX_SETTING_INT:
            raise ArtifactError(f"{where}: {value!r} is too large (at most {MAX_SETTING_INT})")
        return number
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
        type=nonneg_int,
        default=None,
        metavar="N",
        help="GPUs per node (default 4); nodes = ceil(world size / N); 0 = CPU-only jobs",
    )
    g.add_argument(
        "--max-nodes",
        dest="slurm_max_nodes",
        type=positive_int,
        default=None,
        metavar="N",
        help="refuse a world size that needs more nodes",
    )
    g.add_argument(
        "--cpus-per-task", dest="slurm_cpus_per_task", type=positive_int, default=None, metavar="N", help="sbatch --cpus-per-task"
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
        "--poll-interval",
        dest="slurm_poll_s",
        type=positive_float,
        default=None,
        metavar="S",
        help="seconds between job-state queries",
    )
    g.add_argument(
        "--wait-timeout",
        dest="slurm_timeout_s",
        type=positive_float,
        default=None,
        metavar="S",
        help="stop waiting (and cancel the sweep's jobs) after S seconds",
    )
    g.add_argument(
        "--no-wait", dest="slurm_wait", action="store_const", const=False, default=None, help="submit and return without waiting"
    )


def config_from_args(args: argparse.Namespace) -> SlurmConfig:
    """The settings file (``--slurm-config`` or ``$DNABERT_SLURM_CONFIG``), overridden by the options."""
    if getattr(args, "slurm_image", None) is not None and getattr(args, "slurm_no_container", None):
        raise ArtifactError("--image and --no-container exclude each other: give one")
    path = getattr(args, "slurm_config", None) or os.environ.get(ENV_CONFIG) or None
    cfg = SlurmConfig.from_file(path) if path else SlurmConfig()
    if getattr(args, "slurm_image", None) is not None and cfg.no_container:
        cfg = replace(cfg, no_container=False, origin={**cfg.origin, "no_container": "--image"})  # over the file's NO_CONTAINER=1
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
