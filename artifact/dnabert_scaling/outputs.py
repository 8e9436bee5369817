"""The output policy of every writing subcommand, in one place.

Checked before any work:

- ``output_path`` (the argparse type of every output option) refuses an empty path: ``--out ''``
  would otherwise mean the current folder.
- ``refuse_overlap(outputs, inputs)``: an output may not be, contain or lie inside an input,
  compared as resolved paths (``.``, ``..`` and symlinks followed), so no command can destroy
  what it reads; an OTF2 anchor file stands for its whole archive (its ``.def`` file and event
  folder beside it).
- ``writable_dir`` / ``writable_file`` (which every writing command calls on its output) refuse an
  output path that is a symbolic link (``refuse_link``) or that is or lies inside a protected place
  (``refuse_protected``): the source tree's ``expected/`` (``refuse_shipped``: the shipped evidence,
  tracked files that only a release changes, by ``make refresh-reference``, ``make refresh-report`` and
  ``scripts/import_reference.py``, none of which writes through a command) and, for every command but
  the three that write runs (``sweep``, ``train``, ``busbw``: ``into_runs``), a sweep's folder or a run
  folder (``refuse_runs``), and turn the ways an output path fails (an
  existing file where a folder belongs, or the reverse; no write permission; a read-only file system) into an
  :class:`ArtifactError` naming the option and the path, before any time is spent.

Written by swapping, never in place:

- ``write_text_atomic`` / ``write_texts_atomic``: each file goes to a temporary file in its own
  folder and is renamed over the old one, so a reader sees the old file or the new, never half.
- ``replaced_folder``: a results folder is built whole in a new sibling folder and exchanged with
  the old one by one rename (Linux ``renameat2(RENAME_EXCHANGE)``), so a command killed at any
  moment leaves the old folder whole. A folder it replaces must be recognisably the artifact's
  own (it holds only names the artifact writes); anything else is refused, never deleted.

Temporary files and folders are removed on every exit path that runs Python code again
(an exception, a full disk, SIGINT, SIGTERM: ``cli.main`` turns both signals into exceptions).
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


def refuse_link(path: Path | str, option: str, what: str = "folder") -> None:
    """Refuse (exit 2) an output path that is itself a symbolic link, for every writing command alike
    (``writable_dir``, ``writable_file``, ``refuse_foreign``): a file written by a rename, or a folder
    replaced whole, would replace the link and leave what it points to as it was; a folder written
    into would receive files in a place the command line does not name."""
    if Path(path).is_symlink():
        raise ArtifactError(f"{option}: is a symbolic link; give the {what} it points to", path)


def shipped_evidence() -> Path | None:
    """The source tree's ``expected/`` (beside ``artifact/``, holding ``claims.toml``), where this package
    runs from a checkout; None for an installed copy."""
    folder = Path(__file__).resolve().parents[2] / "expected"
    return folder if _is_evidence(folder) else None


def _is_evidence(folder: Path) -> bool:
    """A folder laid out as the shipped evidence: named ``expected``, holding ``claims.toml`` and the
    recorded traces or results (``reference/``, ``reference-results/``)."""
    return (
        folder.name == "expected"
        and (folder / "claims.toml").is_file()
        and ((folder / "reference").is_dir() or (folder / "reference-results").is_dir())
    )


def evidence_around(path: Path | str) -> Path | None:
    """The shipped evidence an output path is or lies inside: the source tree's ``expected/``, or any
    folder on the path's resolved way up laid out as one (``_is_evidence``), so that a copy of the package
    installed elsewhere (the image, a wheel) protects a checkout's evidence as well; None otherwise."""
    target = _resolved(path)
    shipped = shipped_evidence()
    if shipped is not None and (target == _resolved(shipped) or _resolved(shipped) in target.parents):
        return shipped
    return next((p for p in (target, *target.parents) if _is_evidence(p)), None)


def refuse_shipped(path: Path | str, option: str) -> None:
    """Refuse (exit 2) an output that is or lies inside the shipped evidence (``evidence_around``),
    compared as resolved paths, for every writing command alike: a command run there would replace,
    delete or mix into the recorded traces and results that the documents and ``make kick-tires``
    rest on."""
    shipped = evidence_around(path)
    if shipped is not None:
        raise ArtifactError(
            f"{option}: would write inside the shipped evidence {shipped} (tracked files that only a release "
            "changes: make refresh-reference, make refresh-report, scripts/import_reference.py); write elsewhere",
            path,
        )


def refuse_runs(path: Path | str, option: str) -> None:
    """Refuse (exit 2) an output that is or lies inside a sweep's folder or a run folder
    (``run.folders.runs_around``), compared as resolved paths: only ``sweep``, ``train`` and ``busbw`` write
    there (they pass ``into_runs``); anything else written there is a name the sweep and train refuse as
    foreign when they come back to the folder, or a file that stands among the runs as if they had written it."""
    from dnabert_scaling.run.folders import runs_around

    found = runs_around(_resolved(path))
    if found is not None:
        folder, kind = found
        what = (
            "a sweep's folder (its sweep.json or SLURM job folders)"
            if kind == "sweep"
            else "a run folder (a run's config.json, summary.json)"
        )
        raise ArtifactError(
            f"{option}: is or lies inside {what} {folder}, where only sweep, train and busbw write; write elsewhere", path
        )


def refuse_protected(path: Path | str, option: str, into_runs: bool = False) -> None:
    """The places no output of a command may go: the shipped evidence (``refuse_shipped``) and, unless
    ``into_runs`` (``sweep``, ``train``, ``busbw``: the commands that write runs), a sweep's or a run's
    folder (``refuse_runs``). ``writable_dir``, ``writable_file`` and ``refuse_foreign`` call it."""
    refuse_shipped(path, option)
    if not into_runs:
        refuse_runs(path, option)


def writable_dir(path: Path | str, option: str = "--out", create: bool = False, into_runs: bool = False) -> Path:
    """``path`` as a folder this process can write into, not a symbolic link (``refuse_link``) and not
    inside the shipped evidence or (unless ``into_runs``) a sweep's or a run's folder (``refuse_protected``).
    A missing folder is created when ``create``; otherwise only checked to be creatable (its nearest
    existing parent is writable), so that a command refused later for bad input leaves no empty folder behind."""
    path = Path(path)
    refuse_link(path, option)
    refuse_protected(path, option, into_runs)
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


def writable_file(path: Path | str, option: str = "--out", into_runs: bool = False) -> Path:
    """``path`` as a file this process can create or replace, not a symbolic link (``refuse_link``) nor in a
    protected place (``refuse_protected``): its folder exists or can be created (it is made when the file
    is written, :func:`staged_files`)."""
    path = Path(path)
    refuse_link(path, option, "file")
    refuse_protected(path, option, into_runs)
    if path.is_dir():
        raise ArtifactError(f"{option}: is a folder, not a file", path)
    writable_dir(path.parent, option, into_runs=into_runs)
    if path.exists() and not os.access(path, os.W_OK):
        raise ArtifactError(f"{option}: file is not writable (permission denied)", path)
    return path


def output_path(text: str) -> Path:
    """argparse type of an output option: a path, never the empty string (which would be ``.``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: name the file or folder to write")
    return Path(text)


def _resolved(path: Path | str) -> Path:
    """``path`` with ``.``, ``..`` and symlinks followed as far as they lead: a symlink loop is left as it
    is (its reader names it; ``Path.resolve`` would raise RuntimeError here, a traceback)."""
    return Path(os.path.realpath(os.path.abspath(path)))


def refuse_overlap(outputs: Iterable[tuple[str, Path | str]], inputs: Iterable[Path | str]) -> None:
    """Refuse (exit 2) an output that is, contains or lies inside an input. ``outputs``: pairs of
    (option that names it, path); ``inputs``: every file or folder the command reads."""
    sources = [(Path(i), _resolved(part)) for i in inputs for part in _archive_of(Path(i))]
    for option, out in outputs:
        target = _resolved(out)
        for given, source in sources:
            if target == source:
                raise ArtifactError(f"{option}: is also an input of this command ({given}); write the output elsewhere", out)
            if source in target.parents:
                raise ArtifactError(f"{option}: lies inside the input {given}; write the output elsewhere", out)
            if target in source.parents:
                raise ArtifactError(f"{option}: holds the input {given}, which writing it would replace; write elsewhere", out)


def _archive_of(path: Path) -> list[Path]:
    """An input and, for an OTF2 anchor file (``traces.otf2``), the archive it stands for: the
    definitions file and the event folder beside it (``traces.def``, ``traces/``), which reading
    the anchor reads too."""
    if path.suffix != ".otf2":
        return [path]
    return [path, path.with_suffix(".def"), path.with_suffix("")]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path | str, text: str) -> None:
    write_texts_atomic({Path(path): text})


def write_texts_atomic(files: dict[Path, str]) -> None:
    """Write every file to a temporary file beside it, then rename each over its target: a failure
    or an interrupt before the renames leaves every old file as it was and no temporary file."""
    with staged_files(list(files)) as staged:
        for path, text in files.items():
            staged[Path(path)].write_text(text, encoding="utf-8")


@contextmanager
def staged_files(paths: list[Path]) -> Iterator[dict[Path, Path]]:
    """Temporary files beside ``paths`` (path -> its temporary file, created empty) for the block to
    fill; renamed over their targets when the block ends without an exception, else all removed. A
    target's missing folder is made here, when there is something to write, so that an output option
    checked by :func:`writable_file` (creatable, not created) can name a folder that does not exist yet."""
    staged: dict[Path, Path] = {}
    try:
        for path in map(Path, paths):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
            os.close(fd)
            staged[path] = Path(name)
            os.chmod(name, 0o666 & ~_umask())  # mkstemp's 0600 would make the file private
        yield staged
        for path, tmp in staged.items():
            os.replace(tmp, path)
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)  # gone where it was renamed into place


# -- folders -----------------------------------------------------------------------------------

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


Owned = Callable[[Path, bool], bool]  # (path relative to the folder, is a folder) -> the artifact's own?


def foreign_entries(folder: Path, owned: Owned) -> list[str]:
    """Names under ``folder`` (relative) that ``owned`` does not recognise as the artifact's."""
    foreign, todo = [], [folder]
    while todo:
        for p in sorted(todo.pop().iterdir()):
            rel = p.relative_to(folder)
            if p.is_symlink() or not owned(rel, p.is_dir()):
                foreign.append(str(rel))  # named once: what is inside it is not listed
            elif p.is_dir():
                todo.append(p)
    return sorted(foreign)


def shown_names(names: list[str], most: int = 5) -> str:
    """``names`` for a message: the first ``most``, and how many more."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def refuse_foreign(target: Path | str, option: str, owned: Owned) -> None:
    """Refuse (exit 2) to replace a folder that is not recognisably the artifact's own: a symlink,
    a file, the current folder or one above it, or a folder holding a name ``owned`` does not know.
    Called before the work, and by ``replaced_folder`` before it starts and just before the swap."""
    target = Path(target)
    refuse_link(target, option)
    refuse_protected(target, option)
    here = Path.cwd().resolve()
    if _resolved(target) == here or _resolved(target) in here.parents:
        raise ArtifactError(
            f"{option}: is or holds the current folder, which the command would replace under you; give a folder below it",
            target,
        )
    if target.exists() and not target.is_dir():
        raise ArtifactError(f"{option}: exists and is not a folder", target)
    if target.exists():
        foreign = foreign_entries(target, owned)
        if foreign:
            raise ArtifactError(
                f"{option}: holds files this command did not write ({shown_names(foreign)}); the command replaces the whole "
                "folder, so give a new or empty folder, or move them away",
                target,
            )


@contextmanager
def replaced_folder(target: Path | str, option: str, owned: Owned) -> Iterator[Path]:
    """Build a folder's new content in a fresh sibling folder (yielded) and swap it in for
    ``target`` when the block ends without an exception. ``owned(relative_path, is_folder)`` says
    whether a name in an existing ``target`` is one the artifact writes; an existing target holding
    anything else, or that is a symlink, is refused before the block and again before the swap
    (nothing the artifact did not write is deleted). The block may copy what it keeps from the old
    folder into the new one."""
    refuse_foreign(target, option, owned)
    target = _resolved(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        fresh.chmod(0o777 & ~_umask())  # mkdtemp's 0700 would make the results private
        yield fresh
        refuse_foreign(target, option, owned)  # again: something may have been put there meanwhile
        if not target.exists():
            fresh.rename(target)
        elif _exchange(fresh, target):
            pass  # ``fresh`` now names the old folder, removed below
        else:  # two renames: a kill between them leaves the old folder whole under its .old- name
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            target.rename(old / "x")
            fresh.rename(target)
            fresh = old
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


def foreign_json(path: Path, ours: Callable[[Any], str | None], limit: int = 64 << 20) -> str | None:
    """Why the existing file at ``path`` is not one the command wrote, or None where it is, or where nothing is
    there: not a regular file, larger than ``limit``, unreadable, not JSON, or ``ours(data)`` says why not (None:
    it is). A command that replaces its own earlier output refuses anything else without ``--force``."""
    from dnabert_scaling.errors import loads_json

    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        return "not a regular file"
    if path.stat().st_size > limit:
        return f"a file of more than {limit >> 20} MiB"
    try:
        data = loads_json(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    except (ValueError, UnicodeDecodeError):
        return "not a JSON file"
    return ours(data)
