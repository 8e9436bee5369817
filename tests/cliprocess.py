"""Helpers for the tests that run the ``dnabert_scaling`` command line as a process and check what it
refused: ``cli_process`` runs it from the repository root, ``file_digests`` fingerprints a folder (so a
test can show that a refused command wrote or changed nothing), ``assert_refused`` checks a refusal
(exit status 2, no traceback, the message naming what it should)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from conftest import PYTHON, ROOT

CLI = [PYTHON, "-m", "dnabert_scaling"]


def cli_process(args, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m dnabert_scaling ARGS`` (each argument as a string) run in the repository root, its output
    captured as text; ``env``, when given, is the whole environment of the process."""
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def file_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` by its name relative to it; empty where the folder does not exist."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def assert_refused(proc: subprocess.CompletedProcess, *needles, one_line: bool = False) -> None:
    """The process was refused: exit status 2, no traceback, every needle in its stderr; with ``one_line``,
    its stderr is one line."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and (not one_line or len(proc.stderr.strip().splitlines()) == 1), proc.stderr[-3000:]
    for needle in needles:
        assert str(needle) in proc.stderr, (needle, proc.stderr[-2000:])
