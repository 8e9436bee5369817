"""Where a result came from: software versions, hardware, and every fallback taken.

A fallback (no GPU, no Score-P, no weights, synthetic data, ...) is recorded as a
:class:`Fallback` in the run's provenance, and the report shows each one. Nothing falls back
silently.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

ENV_KEYS = (
    "DNABERT_SCALING_SCOREP_PREFLIGHT",  # the Score-P preflight result that let --tracer auto use Score-P
    "SLURM_JOB_ID",
    "SLURM_JOB_NODELIST",
    "SLURM_NTASKS",
    "CUDA_VISIBLE_DEVICES",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_DEBUG",
    "OMP_NUM_THREADS",
    "APPTAINER_CONTAINER",
    "SINGULARITY_CONTAINER",
    "SCOREP_CUDA_ENABLE",
    "SCOREP_TOTAL_MEMORY",
    "SCOREP_CUDA_BUFFER",
    "SCOREP_CUDA_BUFFER_CHUNK",
    "SCOREP_CUDA_DRIVER_CALLBACKS",
)
PACKAGES = ("torch", "transformers", "tokenizers", "datasets", "safetensors", "otf2", "pandas", "numpy", "scorep")


@dataclass(frozen=True)
class Fallback:
    """One thing that ran differently from the study's set-up, and why."""

    what: str  # e.g. "device", "tracer", "weights", "data"
    used: str  # what ran instead
    reason: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


# the deviation a run with the DDP bucket hook records (run/train/rank.py), and analyze derives for a run whose
# summary predates it from the hook its DDP bucket record names (analysis/metrics.py)
BUCKET_HOOK_DEVIATION = (
    "DDP bucket hook on (ds:bucket ranges for predict): a Python comm hook instead of DDP's "
    "built-in all-reduce, same arithmetic, slower host side (make bench-hook)"
)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def nvidia_smi_query(fields: str) -> list[list[str]] | None:
    """``nvidia-smi --query-gpu=FIELDS`` as one row of stripped cells per GPU; None where
    nvidia-smi is missing or fails."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [[x.strip() for x in line.split(",")] for line in out.splitlines() if line.strip()]


def _nvidia_smi() -> dict[str, Any] | None:
    rows = nvidia_smi_query("name,driver_version,memory.total")
    if rows is None:
        return None
    gpus = [dict(zip(("name", "driver", "memory"), row)) for row in rows]
    return {"gpus": gpus, "driver": gpus[0]["driver"] if gpus else None}


REVISION_ENV = "DNABERT_SCALING_REVISION"
REVISION_FILE = "REVISION"


def stamped_revision(start: Path | None = None) -> str | None:
    """The revision stamped into a copy of the code (a GPU machine's copy, which may sit inside
    another checkout whose ``.git`` says nothing about it).

    ``$DNABERT_SCALING_REVISION``, else the first line of a ``REVISION`` file in the package's
    folder or a parent, searched up to the first folder holding a ``.git`` (that folder included):
    ``git rev-parse HEAD > REVISION`` in the copy's root.
    """
    value = os.environ.get(REVISION_ENV, "").strip()
    if value:
        return value
    here = start or Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        f = folder / REVISION_FILE
        if f.is_file():
            lines = f.read_text(errors="replace").splitlines()
            return (lines[0].strip() or None) if lines else None
        if (folder / ".git").exists():
            break
    return None


def git_revision(start: Path | None = None) -> str | None:
    """The code's revision: the stamped one when the copy carries it (``stamped_revision``), else
    ``git rev-parse HEAD`` (``+dirty`` with uncommitted changes)."""
    here = start or Path(__file__).resolve().parent
    stamped = stamped_revision(here)
    if stamped:
        return stamped
    try:
        rev = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return rev.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def collect(device_type: str | None = None) -> dict[str, Any]:
    """Versions and hardware of this process's machine (cheap; safe to call on every rank)."""
    from dnabert_scaling import __version__

    info: dict[str, Any] = {
        "time": now_iso(),
        "artifact_version": __version__,
        "git_revision": git_revision(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
        "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
    }
    try:
        import torch

        info["torch_cuda"] = torch.version.cuda
        info["cuda_available"] = torch.cuda.is_available()
        if torch.cuda.is_available():
            info["gpu_count"] = torch.cuda.device_count()
            info["gpu_name"] = torch.cuda.get_device_name(0)
            info["cudnn"] = torch.backends.cudnn.version()
            try:
                info["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
            except Exception:  # NCCL missing from a build
                info["nccl"] = None
    except ImportError:
        pass
    if device_type == "cuda" or info.get("cuda_available"):
        smi = _nvidia_smi()
        if smi:
            info["driver"] = smi["driver"]
            info["gpus"] = smi["gpus"]
    return info


def below_cwd(path: str | os.PathLike) -> Path:
    """``path`` relative to the working directory when it lies below it, else unchanged: keeps
    machine-specific prefixes out of results and logs."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return Path(path)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def sha256_tree(root: str | os.PathLike, skip: Iterable[str] = ()) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative paths, sorted), except names in ``skip``."""
    root = Path(root)
    skip = set(skip)
    out: dict[str, str] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel in skip:
            continue
        out[rel] = sha256_file(path)
    return out
