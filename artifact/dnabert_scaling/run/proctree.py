"""Ending a run with every process it started (``sweep --run-timeout``, an interrupted sweep).

torchrun starts each rank in a session of its own, so signalling torchrun's process group misses
the ranks: they would train on and write their results after the sweep has given up on the run.
Each run is therefore started with a marker variable in its environment (``DNABERT_SCALING_RUN``,
inherited by torchrun, the ranks and anything they start, even after torchrun is gone and they are
re-parented) and ended by signalling every process that carries the marker, plus the launcher's
process tree, first with SIGTERM and then, after a grace period, with SIGKILL (Linux ``/proc``).
"""

from __future__ import annotations

import os
import signal
import time
import uuid

MARKER = "DNABERT_SCALING_RUN"


def new_marker() -> dict[str, str]:
    """Environment entries that tag a run's processes."""
    return {MARKER: uuid.uuid4().hex}


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], int(fields[1])


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _carries(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry in f.read().split(b"\0")
    except OSError:
        return False


def run_processes(root: int, marker: dict[str, str]) -> set[int]:
    """Live processes of a run: ``root``'s descendants and every process carrying ``marker``."""
    entry = "".join(f"{k}={v}" for k, v in marker.items()).encode()
    me = os.getpid()
    children: dict[int, list[int]] = {}
    found: set[int] = set()
    for pid in _all_pids():
        st = _stat(pid)
        if st is None or st[0] == "Z" or pid == me:
            continue
        children.setdefault(st[1], []).append(pid)
        if _carries(pid, entry):
            found.add(pid)
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid != me and (_stat(pid) or ("Z",))[0] != "Z":
            found.add(pid)
        todo += children.get(pid, [])
    return found


def _signal_all(pids: set[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def end_run(proc, marker: dict[str, str], grace_s: float = 10.0) -> list[int]:
    """SIGTERM every process of the run, SIGKILL what is left after ``grace_s``; reap ``proc``.

    Returns the pids it found alive (besides ``proc``). When it returns, none of them is left.
    """
    pids = run_processes(proc.pid, marker)
    found = sorted(pids - {proc.pid})
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        proc.poll()
        pids = run_processes(proc.pid, marker)
        if not pids:
            break
        time.sleep(0.1)
    while pids:
        _signal_all(pids, signal.SIGKILL)
        proc.poll()
        time.sleep(0.05)
        pids = run_processes(proc.pid, marker)
    proc.wait()
    return found
