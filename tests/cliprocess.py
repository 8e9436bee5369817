"""Helpers for the tests that run the ``dnabert_scaling`` command line and check what it refused:
``cli_process`` runs it as a process from the repository root, ``cli_in_process`` in the test's own process
(faster; an exception other than the command's clear errors propagates), ``file_digests`` fingerprints a
folder (so a test can show that a refused command wrote or changed nothing), ``assert_refused`` checks a
refusal (exit status 2, no traceback, the message naming what it should)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import subprocess
from pathlib import Path

from conftest import PYTHON, ROOT

CLI = [PYTHON, "-m", "dnabert_scaling"]


def cli_process(args, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m dnabert_scaling ARGS`` (each argument as a string) run in the repository root, its output
    captured as text; ``env``, when given, is the whole environment of the process."""
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def cli_in_process(*argv) -> tuple[int, str]:
    """The command line run in this process (each argument as a string): its exit status and stderr, its stdout
    discarded; an argparse exit gives its status. Any other exception propagates: the traceback a user would see."""
    from dnabert_scaling.cli import main as cli_main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli_main([str(a) for a in argv])
        except SystemExit as exc:  # argparse
            status = int(exc.code or 0)
    return status, err.getvalue()


def file_digests(folder: Path, links: bool = True) -> dict[str, str]:
    """sha256 of every file under ``folder`` by its name relative to it (a file: its own, by its name); empty where
    it does not exist; without ``links``, a symbolic link to a file is left out (what it points to is not the
    folder's own content)."""
    if not folder.exists():
        return {}
    if folder.is_file():
        return {folder.name: hashlib.sha256(folder.read_bytes()).hexdigest()}
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and (links or not p.is_symlink())
    }


def assert_refused(proc: subprocess.CompletedProcess, *needles, one_line: bool = False, absent=()) -> None:
    """The process was refused: exit status 2, no traceback, every needle in its stderr and no word of ``absent``;
    with ``one_line``, its stderr is one line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and (not one_line or len(proc.stderr.strip().splitlines()) == 1), proc.stderr[-3000:]
    for needle in needles:
        assert str(needle) in proc.stderr, (needle, proc.stderr[-2000:])
    for word in absent:
        assert word not in proc.stderr, (word, proc.stderr[-2000:])
