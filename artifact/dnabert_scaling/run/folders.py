"""What a run folder and a sweep folder hold: the names ``train`` and ``sweep`` write there.

``train`` writes a run only into a new or empty folder or over an earlier run, and ``sweep`` writes
(or, with ``--fresh``, sets aside) only a folder of its own: each refuses a folder holding anything
else, naming it, before it writes or deletes anything (``foreign_run_entries``,
``foreign_sweep_entries``). A name is the artifact's own by where it lies in ``layout``'s spelling of
the two folders; the records that mark a folder as a run or a sweep (``config.json``,
``summary.json``, ``manifest.json``, ``sweep.json``) count only when their content is such a record,
so a model's ``config.json`` or some other ``summary.json`` is never taken for a run's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dnabert_scaling import layout
from dnabert_scaling.outputs import foreign_entries

RANK_DIR_RE = re.compile(r"^rank\d+$")
RANK_FILES = (layout.STEPS, layout.SUMMARY, layout.ERROR, layout.NCCL_LOG)
KINETO_RE = re.compile(r"^rank\d+\.json(\.gz)?$")
PROFILER_TMP_RE = re.compile(r"^tmp\w+\.json$")  # torch_profiler's temporary export (left by a SIGKILL)
SYNTHETIC_FILES = ("train.csv", "dev.csv", "test.csv", "synthetic.json")
TASK_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
FAILED_RUN_RE = re.compile(r"^(?P<run>.+)\.failed-\d{8}-\d{6}(-\d+)?$")  # record.set_aside
BUSBW_LOG_RE = re.compile(r"^busbw-ws\d+\.log$")
BUSBW_TMP_RE = re.compile(r"^\.busbw-ws\d+\.json\..*\.partial$")  # busbw's atomic write
PREFLIGHT = "scorep-preflight.json"
SWEEP_SCHEMA = "dnabert-scaling/sweep/1"
MANIFEST_SCHEMA = "dnabert-scaling/manifest/1"


def _temporary(name: str, of: tuple[str, ...] | None = None) -> bool:
    """A write probe (``outputs.writable_dir``) or the staged file of an atomic write of one of ``of``."""
    if name.startswith(".write-test-"):
        return True
    return of is not None and name.endswith(".partial") and any(name.startswith(f".{n}.") for n in of)


def _record(path: Path) -> dict | None:
    """The JSON object in ``path``; {} when the file vanished meanwhile (another rank deleting it with
    ``--overwrite``: nothing is left to protect); None when it is not a JSON object."""
    try:
        data = json.loads(path.read_bytes()[: 64 << 20])
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_run_record(path: Path) -> bool:
    """``config.json`` / ``summary.json`` / ``manifest.json`` of a run folder, by content: the config
    (``args`` and ``rank_info``), a summary with a status, a manifest of the sweep's schema."""
    data = _record(path)
    if data is None:
        return False
    if data == {}:
        return not path.exists()
    if path.name == layout.CONFIG:
        return isinstance(data.get("args"), dict) and isinstance(data.get("rank_info"), dict)
    if path.name == layout.SUMMARY:
        return data.get("status") in ("ok", "failed")
    if path.name == layout.MANIFEST:
        return data.get("schema") == MANIFEST_SCHEMA
    return False


RUN_RECORDS = (layout.CONFIG, layout.SUMMARY, layout.MANIFEST)


def run_entry(root: Path, rel: Path, is_dir: bool, records: bool = True) -> bool:
    """Whether ``rel`` (relative to the run folder ``root``) is a name a run writes there; its records by
    content too unless ``records`` is False (a run folder of a sweep, known by its name, whose records
    the sweep reads back and names when they are damaged)."""
    parts = rel.parts
    top, name = parts[0], parts[-1]
    if len(parts) == 1:
        if is_dir:
            return bool(RANK_DIR_RE.match(name)) or name in (layout.TRACES, layout.LOGS, layout.SYNTHETIC_DATA)
        if name in RUN_RECORDS:
            return not records or is_run_record(root / name)
        return _temporary(name, RUN_RECORDS)
    if top == layout.LOGS:  # a launcher's logs (torchrun's, SLURM's rank<R>.out / .err)
        return True
    if RANK_DIR_RE.match(top):
        return len(parts) == 2 and not is_dir and (name in RANK_FILES or _temporary(name, RANK_FILES))
    if top == layout.SYNTHETIC_DATA:
        return len(parts) == 2 and not is_dir and (name in SYNTHETIC_FILES or _temporary(name, SYNTHETIC_FILES))
    if top == layout.TRACES:
        if len(parts) > 2:  # inside a Score-P experiment folder: Score-P's own names
            return bool(layout.SCOREP_RANK_RE.match(parts[1]))
        if is_dir:
            return bool(layout.SCOREP_RANK_RE.match(name))
        return bool(KINETO_RE.match(name) or PROFILER_TMP_RE.match(name))
    return False


def sweep_entry(root: Path, rel: Path, is_dir: bool) -> bool:
    """Whether ``rel`` (relative to the sweep folder ``root``) is a name a sweep writes there: its
    record, its run folders (and failed attempts set aside) with what a run writes, the bus-bandwidth
    results and logs, the shared synthetic task, the Score-P preflight, the SLURM job folders."""
    parts = rel.parts
    top, name = parts[0], parts[-1]
    run = run_folder_name(top)
    if run and len(parts) == 1:
        return is_dir  # a file named like a run folder is no run's
    if run:
        return run_entry(root / top, Path(*parts[1:]), is_dir, records=False)
    if len(parts) == 1 and not is_dir:
        if name == layout.SWEEP:
            return is_sweep_record(root / name)
        if layout.BUSBW_RE.match(name) or BUSBW_LOG_RE.match(name) or name in (PREFLIGHT, PREFLIGHT + ".lock"):
            return True
        return _temporary(name, (layout.SWEEP, PREFLIGHT)) or bool(BUSBW_TMP_RE.match(name))
    if top == "slurm":  # the default job root: job scripts, argument files, SLURM's logs
        return is_dir or len(parts) > 1
    if top == layout.SYNTHETIC_DATA:  # synthetic-data/<task>/ with the task's files
        if len(parts) == 1:
            return is_dir
        if len(parts) == 2:
            return is_dir and bool(TASK_NAME_RE.match(name))
        return len(parts) == 3 and not is_dir and (name in SYNTHETIC_FILES or _temporary(name, SYNTHETIC_FILES))
    return False


def run_folder_name(name: str) -> bool:
    """``ws<N>-<tracer>-r<k>[-<variant>]``, or such a run's failed attempt set aside (``.failed-<time>``)."""
    m = FAILED_RUN_RE.match(name)
    return layout.parse_run_name(m.group("run") if m else name) is not None


def is_sweep_record(path: Path) -> bool:
    data = _record(path)
    return data is not None and (data.get("schema") == SWEEP_SCHEMA or (data == {} and not path.exists()))


def _scan(folder: Path, owned) -> list[str]:
    """``outputs.foreign_entries``, again when a folder vanished during the scan (another rank of the
    run deleting its earlier files with ``--overwrite``)."""
    for _ in range(10):
        try:
            return foreign_entries(folder, owned)
        except FileNotFoundError:
            continue
    return foreign_entries(folder, owned)


def foreign_run_entries(folder: Path) -> list[str]:
    """Names in ``folder`` that a run does not write (none when it does not exist)."""
    if not folder.is_dir():
        return []
    return _scan(folder, lambda rel, is_dir: run_entry(folder, rel, is_dir))


def foreign_sweep_entries(folder: Path) -> list[str]:
    """Names in ``folder`` that a sweep does not write (none when it does not exist)."""
    if not folder.is_dir():
        return []
    return _scan(folder, lambda rel, is_dir: sweep_entry(folder, rel, is_dir))


def sweep_marks(folder: Path) -> list[str]:
    """The names in ``folder`` that only a sweep writes: ``sweep.json``, run folders (or failed attempts
    set aside), bus-bandwidth results. A run folder holding any of them is a sweep's, not a run's."""
    if not folder.is_dir():
        return []
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name == layout.SWEEP or (p.is_dir() and run_folder_name(p.name)) or layout.BUSBW_RE.match(p.name)
    )


def is_sweep_folder(folder: Path) -> bool:
    """A folder a sweep wrote: its ``sweep.json`` is a sweep's record (``dnabert-scaling sweep``), or its
    ``slurm/`` holds a job folder ``ws<N>/`` with a ``world_size`` file (``scripts/slurm/sweep.sh``, which
    writes no ``sweep.json``). Run folders alone do not make one: a folder holding some runs is also
    where their results are written beside them."""
    record = folder / layout.SWEEP
    if record.is_file() and is_sweep_record(record):
        return True
    try:
        return any(re.fullmatch(r"ws\d+", p.name) and (p / "world_size").is_file() for p in (folder / "slurm").iterdir())
    except OSError:
        return False


def is_run_folder(folder: Path) -> bool:
    """A folder ``train`` wrote: one of its records (``config.json``, ``summary.json``, ``manifest.json``)
    is a run's by content (``is_run_record``)."""
    return any((folder / name).is_file() and is_run_record(folder / name) for name in RUN_RECORDS)


def runs_around(path: Path) -> tuple[Path, str] | None:
    """The sweep folder or run folder that ``path`` (resolved) is or lies inside, nearest first, with
    "sweep" or "run"; None when it is in neither. What does not exist yet is judged by the folders
    above it."""
    for folder in (path, *path.parents):
        if not folder.is_dir():
            continue
        if is_run_folder(folder):
            return folder, "run"
        if is_sweep_folder(folder):
            return folder, "sweep"
    return None


def check_sweep_out(out: Path, fresh: bool) -> None:
    """Refuse a sweep ``--out`` that holds anything a sweep does not write (``foreign_sweep_entries``):
    the sweep would write its runs among someone else's files, or ``--fresh`` set aside a folder that
    is not a sweep's (the shipped ``expected/``, a source folder)."""
    from dnabert_scaling.errors import ArtifactError
    from dnabert_scaling.outputs import shown_names

    foreign = foreign_sweep_entries(out)
    if foreign:
        what = "--fresh sets aside only a sweep's folder" if fresh else "a sweep writes only into a folder of its own"
        raise ArtifactError(
            f"--out: holds files a sweep does not write ({shown_names(foreign)}): {what}; give a new or empty folder, "
            "or an earlier sweep's",
            out,
        )
