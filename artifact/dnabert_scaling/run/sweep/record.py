"""A run's record in the sweep, whichever executor ran it: ``RunResult``, ``manifest.json``, a
failed attempt's folder set aside, the run's ``summary.json`` as written, and the sentence that
says why a run failed (which rank first, and where to read more).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnabert_scaling.layout import MANIFEST, SUMMARY, RunLayout
from dnabert_scaling.outputs import write_text_atomic
from dnabert_scaling.provenance import sha256_tree
from dnabert_scaling.run.sweep.spec import RunSpec


@dataclass
class RunResult:
    spec: RunSpec
    status: str  # ok, failed, skipped
    returncode: int | None
    seconds: float
    message: str = ""


def write_manifest(
    spec: RunSpec,
    status: str,
    returncode: int | None,
    started: str,
    seconds: float,
    command: list[str],
    executor: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    summary = read_summary(spec.run_dir)
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
    write_text_atomic(spec.run_dir / MANIFEST, json.dumps(manifest, indent=2) + "\n")
    return manifest


def set_aside(folder: Path, why: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder.with_name(f"{folder.name}.{why}-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = folder.with_name(f"{folder.name}.{why}-{stamp}-{n}")
    folder.rename(target)
    return target


def set_aside_failed(run_dir: Path) -> Path | None:
    return set_aside(run_dir, "failed") if run_dir.exists() else None


def read_summary(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(RunLayout(run_dir).summary.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _last_lines(path: Path, n: int = 3) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


_EXIT_RE = re.compile(r"rank\s*:\s*(\d+)\s*\(local_rank[^\n]*\n\s*exitcode\s*:\s*(-?\d+)")


def _signal_deaths(log: Path) -> dict[int, int]:
    """rank -> signal number, for the ranks torchrun reports as ended by a signal."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    return {int(r): -int(code) for r, code in _EXIT_RE.findall(text) if int(code) < 0}


def failure_message(spec: RunSpec, rc: int | None, why: str) -> str:
    """The first rank that failed, its cause, and where to read more.

    A rank killed by a signal (other than the SIGTERM torchrun sends the survivors) records no
    error of its own and is the cause; otherwise the rank whose ``error.txt`` was written first
    (``failed_at`` in its summary), leaving out the ranks the launcher stopped (``stopped``). torchrun's "Root Cause" is not used: it names the rank whose
    exit it noticed first, often a survivor that failed on the broken connection.
    """
    import signal

    log = RunLayout(spec.run_dir).launcher_log
    head = why or (f"exit status {rc}" if rc is not None else "failed")
    errors = {}
    for err in RunLayout(spec.run_dir).rank_errors():
        try:
            record = json.loads((err.parent / SUMMARY).read_text())
            if record.get("stopped") is True:
                continue  # the launcher ended this rank (SIGTERM): a survivor, not a cause
            at = float(record.get("failed_at"))
        except (OSError, ValueError, TypeError, AttributeError):
            at = err.stat().st_mtime
        errors[err.parent.name] = (at, err)
    killed = {
        r: s
        for r, s in _signal_deaths(log).items()
        if s != signal.SIGTERM and RunLayout(spec.run_dir).rank_dir(r).name not in errors
    }
    if killed:
        rank, sig = min(killed.items())
        also = ""
        if errors:
            _, err = min(errors.values())
            also = f"; {err.parent.name} recorded: {_last_lines(err, 1)} (traceback: {err})"
        return f"{head}; rank{rank} was killed by {signal.Signals(sig).name} and recorded no error{also} (log: {log})"
    if errors:
        _, err = min(errors.values())
        others = len(errors) - 1
        return (
            f"{head}; {err.parent.name} failed first: {_last_lines(err, 1)} (traceback: {err}"
            + (f"; {others} other rank(s) failed after it" if others else "")
            + f"; log: {log})"
        )
    if why:  # the sweep ended the run itself (timeout, interrupt): the log's tail is its own doing
        return f"{head} (log: {log})"
    tail = _last_lines(log, 3) if log.is_file() else ""
    return f"{head}; no rank recorded an error" + (f"; last log lines: {tail}" if tail else "") + f" (log: {log})"
