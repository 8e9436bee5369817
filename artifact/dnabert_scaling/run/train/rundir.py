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


def claim_run_dir(out: Path, info, overwrite: bool) -> None:
    """Refuse an output folder that holds another run; with ``--overwrite`` delete that run first.

    Each rank deletes only what is its own (its ``rank<R>/`` and traces); rank 0 also the run's
    files and the folders of ranks beyond this world size, so concurrent ranks never race.
    """
    import shutil

    earlier = earlier_run_files(out)
    if not earlier:
        return
    if not overwrite:
        shown = ", ".join(str(p.relative_to(out)) for p in earlier[:6]) + (" ..." if len(earlier) > 6 else "")
        raise ArtifactError(
            f"--out holds the files of an earlier run ({shown}); give an empty or new folder, or --overwrite "
            "to delete that run first",
            out,
        )
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
