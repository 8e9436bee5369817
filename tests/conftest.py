"""Shared test helpers: paths, the interpreter the tests run subprocesses with, and the fixture that
ends every process a test started."""

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PYTHON = sys.executable

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Every test runs with this variable set to a value of its own; the processes it starts inherit it
# (torchrun, the ranks, a notebook kernel: even those that left the test's process group or were
# re-parented), so the processes still carrying it when the test ends are the ones it left behind.
TEST_MARKER = "DNABERT_SCALING_TEST"


def marked_processes(value: str) -> set[int]:
    """Live processes (other than this one) whose environment holds ``TEST_MARKER=value`` (Linux /proc)."""
    entry = f"{TEST_MARKER}={value}".encode()
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{name}/environ", "rb") as f:
                if entry in f.read().split(b"\0"):
                    found.add(int(name))
        except (OSError, IndexError):
            continue
    return found


def end_marked_processes(value: str, grace_s: float = 5.0) -> list[int]:
    """SIGTERM every process carrying the marker ``value``, SIGKILL what is left after ``grace_s``.
    Returns the pids found; when it returns, none of them is alive."""
    found = sorted(marked_processes(value))
    sig, deadline = signal.SIGTERM, time.monotonic() + grace_s
    pids = set(found)
    while pids and time.monotonic() < deadline + 30:  # past that: stuck in the kernel, beyond any signal
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.1)
        pids = marked_processes(value)
        if time.monotonic() > deadline:
            sig = signal.SIGKILL
    return found


@pytest.fixture(autouse=True)
def _end_what_the_test_started(request, monkeypatch):
    """After each test, passed, failed or timed out: no process it started is left running (one
    fault test that timed out once left two 100,000-step training ranks running for minutes)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(TEST_MARKER, value)
    yield
    left = end_marked_processes(value)
    if left:
        print(f"\nconftest: {request.node.nodeid} left {len(left)} process(es) running; ended: {left}", file=sys.stderr)


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
