"""The run folder of ``train``: claimed before any work, ``config.json`` at the start, a failed
rank's ``error.txt`` and failed summaries (SIGTERM included).

A folder holding another run's files is refused (or, with ``--overwrite``, that run is deleted
first), so two runs never mix in one folder.
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout


# Files a finished or started run leaves in its folder. A launcher's own ``logs/`` and the empty
# folders another rank of this run creates at start are not among them (ranks start concurrently).
RUN_FILES = (layout.SUMMARY, layout.MANIFEST, layout.CONFIG, layout.SYNTHETIC_DATA)


def earlier_run_files(out: Path) -> list[Path]:
    found = [out / name for name in RUN_FILES if (out / name).exists()]
    for rank_dir in sorted(d for d in out.glob("rank*") if d.is_dir()):
        found += [p for p in rank_dir.iterdir() if p.name in (layout.STEPS, layout.SUMMARY, layout.ERROR)]
    traces = RunLayout(out).traces
    if traces.is_dir():
        # a Score-P experiment folder is created when its rank starts; its anchor is written at the end
        found += [p for p in traces.iterdir() if not p.name.startswith(layout.SCOREP_RANK_PREFIX) or (p / layout.ANCHOR).exists()]
    return found


def check_run_dir(out: Path, rank: int, overwrite: bool) -> list[Path]:
    """Refuse an ``--out`` that is neither new or empty nor an earlier run's folder (a sweep, a folder
    holding files a run does not write: ``folders``), and an earlier run without ``--overwrite``.
    Returns the earlier run's files (``--overwrite`` deletes them). Only reads: every rank calls it
    before any rank deletes or writes anything of its own (ranks start concurrently, so a file another
    rank deletes meanwhile is taken as gone)."""
    from dnabert_scaling.outputs import shown_names
    from dnabert_scaling.run.folders import foreign_run_entries, is_run_record, sweep_marks

    marks = sweep_marks(out)
    if marks:
        raise ArtifactError(
            f"--out: holds a sweep ({shown_names(marks)}); train writes one run into a folder of its own: give a new or "
            "empty folder (never the sweep's, which only `sweep` writes into)",
            out,
        )
    foreign = foreign_run_entries(out)
    if foreign:
        raise ArtifactError(
            f"--out: holds files that are not a run's ({shown_names(foreign)}); train writes into a new or empty folder, "
            "or over an earlier run with --overwrite: give another folder, or move them away",
            out,
        )
    earlier = earlier_run_files(out)
    if not earlier:
        return []
    shown = shown_names([str(p.relative_to(out)) for p in earlier])
    records = [out / name for name in (layout.CONFIG, layout.SUMMARY)]
    if (rank == 0 or not overwrite) and not any(p.is_file() and is_run_record(p) for p in records):
        raise ArtifactError(
            f"--out: holds files a run writes ({shown}) but no run record (a run's config.json or summary.json), so "
            "they are not known to be an earlier run; --overwrite deletes only an earlier run: move them away or "
            "give another folder",
            out,
        )
    if not overwrite:
        raise ArtifactError(
            f"--out holds the files of an earlier run ({shown}); give an empty or new folder, or --overwrite "
            "to delete that run first",
            out,
        )
    return earlier


def claim_run_dir(out: Path, info, overwrite: bool) -> None:
    """Refuse an output folder that is not this run's to write (``check_run_dir``); with
    ``--overwrite`` delete the earlier run in it first.

    Each rank deletes only what is its own (its ``rank<R>/`` and traces); rank 0 also the run's
    files and the folders of ranks beyond this world size, so concurrent ranks never race.
    """
    import shutil

    if not check_run_dir(out, info.rank, overwrite):
        return
    r = info.rank
    mine = [RunLayout(out).rank_dir(r), *RunLayout(out).rank_traces(r)]
    if r == 0:
        mine += [out / name for name in RUN_FILES]
        for other in [*out.glob("rank*"), *RunLayout(out).traces.glob("*rank*")]:
            digits = "".join(ch for ch in other.name.split("rank", 1)[1] if ch.isdigit())
            if digits and int(digits) >= info.world_size:
                mine.append(other)
    for path in mine:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


class Terminated(BaseException):
    """SIGTERM reached this rank: its launcher is ending the run (torchrun does when another rank
    failed, the sweep on a timeout or an interrupt). Such a rank is a survivor, not a cause.
    A ``BaseException``, as ``KeyboardInterrupt``: an ``except Exception`` on the way (weights
    loading, provenance) must not swallow it and let the rank train on."""


def raise_on_sigterm() -> None:
    """Turn SIGTERM into ``Terminated``, so that a rank being ended still records it (rank 0: the
    run's ``summary.json``) instead of vanishing with the default action."""
    import signal

    def stop(signum, _frame):
        raise Terminated(f"stopped by {signal.Signals(signum).name}: the run was ended from outside (its launcher, or a kill)")

    signal.signal(signal.SIGTERM, stop)


def record_failure(rank_dir: Path, info, exc: BaseException) -> None:
    """This rank's ``error.txt`` (the traceback) and failed ``summary.json``; rank 0 also the run's.
    ``stopped`` tells a rank the launcher ended (``Terminated``) from one that failed by itself.
    A write that fails is left out: the error being recorded is the one to report."""
    import signal

    try:  # the rank is ending: a second SIGTERM (torchrun repeats it) must not cut the record short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass
    stopped = isinstance(exc, Terminated)
    try:
        (rank_dir / layout.ERROR).write_text("".join(traceback.format_exception(exc)))
        record = {"status": "failed", "rank": info.rank, "error": repr(exc), "stopped": stopped, "failed_at": time.time()}
        (rank_dir / layout.SUMMARY).write_text(json.dumps(record, indent=2) + "\n")
        if info.rank == 0:
            RunLayout(rank_dir.parent).summary.write_text(
                json.dumps({"status": "failed", "reported_by_rank": 0, "error": repr(exc)}, indent=2) + "\n"
            )
    except OSError:
        pass


def write_config(args, info) -> None:
    """``config.json``: every option of this run and the rank information (rank 0, at the start)."""
    RunLayout(args.out).config.write_text(
        json.dumps({"args": _jsonable(vars(args)), "rank_info": info.as_dict()}, indent=2) + "\n"
    )


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj
