"""Shared test helpers: paths and the interpreter the tests run subprocesses with."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PYTHON = sys.executable

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def tiny_task(tmp_path_factory):
    """A small synthetic GUE-format task (shaped like prom_core_all: 70 bp, 20 tokens)."""
    from dnabert_scaling.run.workload.data import write_synthetic_task

    return write_synthetic_task(tmp_path_factory.mktemp("task") / "prom_core_all", like="prom_core_all", rows=(1200, 300, 100))


def can_mount_read_only() -> bool:
    """Whether a command can be run in a private mount namespace (``unshare -m``) with a read-only
    mount: root or user namespaces. The tests of read-only outputs need it."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o ro tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0
