"""Where a subcommand writes: checked before any work, written atomically.

``writable_dir(path, option)`` and ``writable_file(path, option)`` turn the three ways an output
path fails (it is an existing file where a folder belongs, or the reverse; no write permission;
a read-only file system) into an :class:`ArtifactError` naming the option and the path, before a
run or an analysis has spent any time. ``write_text_atomic`` writes through a temporary file in
the same folder and ``os.replace``, so a reader never sees half a file and a writer that is
killed leaves the old content.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from dnabert_scaling.errors import ArtifactError


def _why(exc: OSError) -> str:
    if exc.errno == errno.EROFS:
        return "is on a read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "is not writable (permission denied)"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return "has a file where a folder is needed on its path"
    return f"cannot be written: {exc.strerror or exc}"


def _probe(folder: Path) -> OSError | None:
    """Create and remove a file in ``folder`` (``os.access`` is not enough: it ignores ACLs and
    is true for root on a read-only mount of some file systems). The error, or None."""
    try:
        fd, name = tempfile.mkstemp(prefix=".write-test-", dir=folder)
    except OSError as exc:
        return exc
    os.close(fd)
    os.unlink(name)
    return None


def writable_dir(path: Path | str, option: str = "--out", create: bool = False) -> Path:
    """``path`` as a folder this process can write into. A missing folder is created when
    ``create``; otherwise only checked to be creatable (its nearest existing parent is writable),
    so that a command refused later for bad input leaves no empty folder behind."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ArtifactError(f"{option}: exists and is not a folder", path)
    if path.exists():
        problem = _probe(path)
        if problem:
            raise ArtifactError(f"{option}: folder {_why(problem)}", path)
        return path
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ArtifactError(f"{option}: cannot be created: {parent} on its path is a file, not a folder", path)
    problem = _probe(parent)
    if problem is None and create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problem = exc
    if problem:
        raise ArtifactError(f"{option}: cannot be created: {parent} {_why(problem)}", path)
    return path


def writable_file(path: Path | str, option: str = "--out") -> Path:
    """``path`` as a file this process can create or replace (its folder is created)."""
    path = Path(path)
    if path.is_dir():
        raise ArtifactError(f"{option}: is a folder, not a file", path)
    writable_dir(path.parent, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise ArtifactError(f"{option}: file is not writable (permission denied)", path)
    return path


def write_text_atomic(path: Path | str, text: str) -> None:
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
