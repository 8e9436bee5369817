"""Find and read the traces of a run: ``read_trace`` (one file or archive) and ``read_run_traces``.

``read_run_traces`` accepts a run directory (``<run>/traces/...``), a traces directory, or an
explicit list of paths, and reads the ranks in parallel (a process pool: the OTF2 and JSON
readers are CPU-bound Python). The run layout of ``docs/design.md`` names the files
``traces/rank<R>.json.gz`` (torch tracer) and ``traces/scorep-rank<R>/`` (Score-P); other
names are accepted, and the rank then comes from the trace itself.

Rank identity: Kineto's ``distributedInfo.rank``; for Score-P the experiment directory name
``scorep-rank<R>`` (with ``--mpp=none`` the trace itself does not know its rank) or the
"MPI Rank <r>" location groups of an MPI archive. Two traces claiming one rank, or a rank
missing from 0..world_size-1, are errors naming them.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from dnabert_scaling.errors import FOLDER, MISSING, REGULAR_FILE, ArtifactError, path_kind, regular_file
from dnabert_scaling.layout import CONFIG, SUMMARY, TRACERS, TRACES
from dnabert_scaling.traces import classify, identity
from dnabert_scaling.traces.kineto_reader import is_kineto_path, read_kineto
from dnabert_scaling.traces.model import Trace
from dnabert_scaling.traces.otf2_reader import ANCHOR_NAME, archive_creator, read_otf2


def trace_format(path) -> str:
    """``kineto`` or ``otf2`` for a trace path, ArtifactError when it is neither."""
    p = Path(path)
    kind = path_kind(p)
    if kind not in (REGULAR_FILE, FOLDER, MISSING):
        raise ArtifactError(f"is {kind}, not a regular file or folder: not read as a trace", p)
    if is_kineto_path(p):
        return "kineto"
    if p.suffix == ".otf2" or (p.is_dir() and ((p / ANCHOR_NAME).is_file() or any(p.glob("*.otf2")))):
        return "otf2"
    if not p.exists():
        raise ArtifactError("trace not found", p)
    raise ArtifactError(
        "not a trace: expected an OTF2 anchor (.otf2), a Score-P experiment directory, or a Kineto .json/.json.gz file", p
    )


# The tracers a trace can say it was recorded by (layout.TRACERS less "none", which records none) and
# how it says so: torch.profiler writes Kineto JSON, which `dnabert-scaling convert` can turn into an
# OTF2 archive (creator convert.CREATOR); Score-P writes OTF2 archives with creator "Score-P <version>".
TRACED_BY = tuple(t for t in TRACERS if t != "none")
_CREATOR_TRACER = {"Score-P": "scorep", "dnabert-scaling-convert": "torch"}


def recorded_by(path) -> tuple[str | None, str]:
    """The tracer (one of TRACED_BY) that recorded a trace, as the trace itself says, and what says it
    (for messages): ``torch`` for a Kineto file and for an OTF2 archive converted from one, ``scorep``
    for an OTF2 archive Score-P wrote; None for an OTF2 archive another tool wrote, or whose anchor
    cannot be read (reading the trace then says why). ArtifactError when the path is no trace."""
    if trace_format(path) == "kineto":
        return "torch", "a Kineto trace (torch.profiler writes these)"
    creator = archive_creator(path)
    tool = creator.split(" ", 1)[0]
    tracer = _CREATOR_TRACER.get(tool)
    if tool == "dnabert-scaling-convert":
        return tracer, "an OTF2 archive converted from a Kineto (torch.profiler) trace"
    return tracer, f"an OTF2 archive written by {creator!r}" if creator else "an OTF2 archive that names no creator"


def declared_tracer(tracer, paths: list[Path], where: str, source) -> str | None:
    """The tracer of a set of traces: ``tracer`` as declared (None: not declared) checked against
    what the traces say (``recorded_by``), else what they say when they all say one. A declared
    tracer that is not one of TRACED_BY, or that a trace contradicts, is an ArtifactError naming
    ``source`` (the file that declares it) and ``where`` in it."""
    if tracer is not None and (type(tracer) is not str or tracer not in TRACED_BY):
        shown = repr(tracer)[:40] + ("" if isinstance(tracer, str) else ", which is not a string")
        untraced = ' ("none" is a run without traces)' if tracer == "none" else ""
        raise ArtifactError(
            f"{where}: tracer must be one of {', '.join(map(repr, TRACED_BY))}, the tracers that write traces, "
            f"not {shown}{untraced}",
            source,
        )
    said: dict[str, Path] = {}
    for p in paths:
        by, what = recorded_by(p)
        if by is None:
            continue
        if tracer is not None and by != tracer:
            raise ArtifactError(
                f"{where}: tracer {tracer!r}, but {p} is {what}, recorded by tracer {by!r}: "
                "the traces and the tracer named for them disagree",
                source,
            )
        said.setdefault(by, p)
    if tracer is None and len(said) == 1:
        return next(iter(said))
    return tracer


def read_trace(path) -> Trace:
    """Read one trace: an OTF2 anchor file or Score-P experiment directory, or a Kineto JSON.

    An MPI Score-P archive yields all of its ranks; every other input yields one rank.
    """
    fmt = trace_format(path)
    _refuse_special_files(Path(path))
    trace = read_kineto(path) if fmt == "kineto" else read_otf2(path)
    check_activity_times(trace, path)
    check_plausible(trace, path)
    digest = identity.content_sha256(Path(path))
    for r in trace.rank_ids:
        trace.ranks[r]["sha256"] = digest
        trace.ranks[r]["sha256_of"] = str(path)  # the file or folder hashed (source may name its anchor)
        trace.ranks[r]["gpu_timeline_sha256"] = identity.timeline_sha256(trace.gpu[trace.gpu["rank"] == r])
    return trace


def _refuse_special_files(path: Path) -> None:
    """An experiment folder whose files include a FIFO, device or socket (the OTF2 library would
    block on it, or read a device) or a broken link: refused before anything opens it."""
    if not path.is_dir():
        return
    for f in path.rglob("*"):
        if not f.is_file() and not f.is_dir():
            raise ArtifactError(f"not a regular file inside a trace folder: it is {path_kind(f)}", f)


# One stream runs one activity at a time. CUPTI's timestamps of back-to-back work on one stream
# never overlap in the shipped traces (0 of 330,000 activities); a microsecond leaves room for a
# clock's rounding, not for two kernels at once.
STREAM_OVERLAP_TOL_NS = 1_000
# A kernel takes a microsecond or more; a trace in which many take no time at all was not measured.
MAX_ZERO_LENGTH_KERNELS = 100


def check_plausible(trace: Trace, path) -> None:
    """Refuse a trace that no GPU can have produced: one activity twice (same stream, name, start
    and end), activities that overlap on one stream, or many kernels of zero duration."""
    gpu = trace.gpu
    if not len(gpu):
        return
    g = gpu.sort_values(["rank", "device", "stream", "start_ns", "end_ns"], kind="stable")
    keys = g[["rank", "device", "stream"]].to_numpy()
    start, end, names = g["start_ns"].to_numpy(), g["end_ns"].to_numpy(), g["name"].to_numpy()
    same = (keys[1:] == keys[:-1]).all(axis=1)
    dup = same & (start[1:] == start[:-1]) & (end[1:] == end[:-1]) & (names[1:] == names[:-1])
    if dup.any():
        i = int(dup.argmax())
        raise ArtifactError(
            f"{int(dup.sum())} GPU activit{'y is' if dup.sum() == 1 else 'ies are'} recorded twice (same stream, name, "
            f"start and end), first {names[i]!r} on rank {keys[i][0]} stream {keys[i][2]} at {start[i]} ns: "
            "one launch runs once, so the trace is duplicated or damaged",
            path,
        )
    overlap = same & (start[1:] < end[:-1] - STREAM_OVERLAP_TOL_NS)
    if overlap.any():
        i = int(overlap.argmax())
        raise ArtifactError(
            f"{int(overlap.sum())} GPU activit{'y overlaps' if overlap.sum() == 1 else 'ies overlap'} the one before on "
            f"its stream, first {names[i + 1]!r} on rank {keys[i][0]} stream {keys[i][2]} starts at {start[i + 1]} ns, "
            f"{end[i] - start[i + 1]} ns before {names[i]!r} ends: a stream runs one activity at a time",
            path,
        )
    kernels = gpu[gpu["kind"] == "kernel"]
    zero = int((kernels["end_ns"] == kernels["start_ns"]).sum())
    if zero > MAX_ZERO_LENGTH_KERNELS:
        raise ArtifactError(
            f"{zero:,} of {len(kernels):,} kernels last 0 ns (more than {MAX_ZERO_LENGTH_KERNELS}): "
            "no GPU runs a kernel in no time, so these times were not measured",
            path,
        )


def check_activity_times(trace: Trace, path) -> None:
    """Refuse a GPU activity that ends before it starts: its timestamps are damaged (or written
    out of order), and every window, union and overlap computed from it would be wrong."""
    gpu = trace.gpu
    bad = gpu[gpu["end_ns"] < gpu["start_ns"]]
    if len(bad):
        row = bad.iloc[0]
        raise ArtifactError(
            f"{len(bad)} GPU activit{'y' if len(bad) == 1 else 'ies'} end before they start, first {row['name']!r} "
            f"on rank {row['rank']} stream {row['stream']} (start {row['start_ns']} ns, end {row['end_ns']} ns): "
            "the trace's timestamps are out of order",
            path,
        )
    # One stream runs its activities in launch order; CUPTI numbers the launches (correlation). An id that no
    # launch of the rank carries and that is no older than its first launch's numbers no call of the trace
    # (a lost launch record, or a damaged id): completeness reports it, it says nothing of the order.
    with_corr = gpu[gpu["correlation"].notna() & _numbered_by_a_launch(gpu, trace.host)]
    with_corr = with_corr.sort_values(["rank", "stream", "start_ns"], kind="stable")
    if len(with_corr):
        corr = with_corr["correlation"].astype("int64")
        same = with_corr[["rank", "stream"]].eq(with_corr[["rank", "stream"]].shift()).all(axis=1)
        back = same & (corr.diff() < 0)
        if back.any():
            at = int(back.to_numpy().argmax())
            first, row = with_corr.iloc[at - 1], with_corr.iloc[at]
            raise ArtifactError(
                f"GPU activities out of order on rank {row['rank']} stream {row['stream']}: {first['name']!r} (launch "
                f"{first['correlation']}) starts at {first['start_ns']} ns, before {row['name']!r} (launch "
                f"{row['correlation']}, at {row['start_ns']} ns) that was launched earlier; a stream runs its work in "
                f"launch order, so the timestamps or the correlation ids are damaged ({int(back.sum())} such place(s))",
                path,
            )


def _numbered_by_a_launch(gpu: pd.DataFrame, host: pd.DataFrame) -> pd.Series:
    """Per GPU activity: its correlation id is one a launch of its rank and class carries (the pairing rule of
    ``analysis.correlation``), or older than every launch id of its rank (launched before recording began);
    False for an id no launch of its class carries within that range."""
    launches = host[(host["kind"] == "launch") & host["correlation"].notna()]
    ok = pd.Series(True, index=gpu.index)
    for rank, mine_l in launches.groupby("rank", observed=True):
        ids = mine_l["correlation"].astype("int64")
        classes = classify.launch_classes(mine_l["name"]).tolist()
        known = set(zip(ids.tolist(), classes))
        first = int(ids.min())
        mine = gpu[(gpu["rank"] == rank) & gpu["correlation"].notna()]
        corr = mine["correlation"].astype("int64")
        cls = classify.activity_classes(mine["kind"]).tolist()
        ok.loc[mine.index] = [(c, k) in known or c < first for c, k in zip(corr.tolist(), cls)]
    return ok


def discover(path) -> list[Path]:
    """The trace files of a run directory or traces directory (or the path itself)."""
    p = Path(path)
    kind = path_kind(p)
    if kind == MISSING:
        raise ArtifactError("no such file or directory", p)
    if kind not in (REGULAR_FILE, FOLDER):
        raise ArtifactError(f"is {kind}, not a regular file or folder: not read as a trace", p)
    if p.is_file():
        return [p]
    if is_kineto_path(p):  # a folder named like a Kineto file is no traces folder: named as what it is
        regular_file(p, "a trace")
    if (p / ANCHOR_NAME).is_file():
        return [p]
    if not (p / TRACES).is_dir() and (p / CONFIG).is_file() and (p / SUMMARY).is_file():  # a run's records, no traces
        raise ArtifactError(
            f"a run folder without a {TRACES}/ folder: the run was not traced (an untraced run, tracer none) or its "
            "traces were moved; give a traced run",
            p,
        )
    base = p / TRACES if (p / TRACES).is_dir() else p
    kineto = sorted(x for x in base.iterdir() if x.is_file() and is_kineto_path(x))
    otf2 = sorted(x for x in base.iterdir() if x.is_dir() and (x / ANCHOR_NAME).is_file())
    if kineto and otf2:
        raise ArtifactError(
            f"both Kineto files ({len(kineto)}) and Score-P experiments ({len(otf2)}) here: "
            "a run has one tracer; point at one set",
            base,
        )
    found = kineto or otf2
    if not found:
        failed = sorted(x.name for x in base.iterdir() if x.is_dir() and x.name.startswith("scorep-failed"))
        hint = f" (Score-P renamed clashing experiments to {', '.join(failed)})" if failed else ""
        raise ArtifactError(f"no traces found (expected rank<R>.json.gz or scorep-rank<R>/{ANCHOR_NAME}){hint}", base)
    return found


def _read_one(path: str) -> Trace:
    return read_trace(path)


def _pool_context():
    # fork is cheap (the parent has numpy/pandas/otf2 loaded already); elsewhere spawn.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


PARALLEL_MIN_BYTES = 32 << 20  # below this a process pool costs more (fork, pickling) than it saves


def _trace_bytes(p: Path) -> int:
    if p.is_file():
        return p.stat().st_size
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def read_many(paths: list[Path], workers: int | None = None) -> list[Trace]:
    """Read several traces, in parallel when there are several, more than one core, and enough
    data to be worth a process pool (``workers=None``); ``workers=1`` reads in this process."""
    if workers is None:
        workers = min(len(paths), os.cpu_count() or 1)
        if workers > 1 and sum(_trace_bytes(Path(p)) for p in paths) < PARALLEL_MIN_BYTES:
            workers = 1
    if workers <= 1 or len(paths) <= 1:
        return [_read_one(str(p)) for p in paths]
    with ProcessPoolExecutor(max_workers=min(workers, len(paths)), mp_context=_pool_context()) as pool:  # one per trace at most
        return list(pool.map(_read_one, [str(p) for p in paths]))


def _ranks_from_order(traces: list[Trace]) -> list[Trace]:
    """Traces that carry no rank of their own (per-rank Score-P archives of an NCCL-only run in
    directories not called ``scorep-rank<R>``, Kineto files without ``distributedInfo``) take their
    place in the list as their rank, with a warning that says so. Ranks a trace does carry are kept,
    so two traces that claim one rank are still an error."""
    if len(traces) < 2 or not any(_assumed(t) for t in traces):
        return traces
    out = []
    for i, t in enumerate(traces):
        if _assumed(t):
            t = t.renumbered(i)
            m = t.meta
            m["warnings"] = [w for w in m.get("warnings", []) if not w.startswith(("rank unknown", "no distributedInfo.rank"))]
            m["warnings"].append(f"the trace names no rank: rank {i} taken from its place in the list of traces given")
            m["rank_source"] = "order given"
        out.append(t)
    return out


def _assumed(t: Trace) -> bool:
    return len(t.ranks) == 1 and bool(t.meta.get("rank_assumed"))


def read_run_traces(paths_or_dir, world_size: int | None = None, workers: int | None = None) -> Trace:
    """Read every rank of a run; ranks must be unique and, given ``world_size``, complete.

    ``paths_or_dir``: a run directory, its ``traces/`` directory, one trace path, or an iterable
    of trace paths. ``workers``: processes to read with (default: one per core, at most one per
    trace; 1 reads in this process).
    """
    if isinstance(paths_or_dir, (str, os.PathLike)):
        paths = discover(paths_or_dir)
    else:
        paths = [Path(p) for p in paths_or_dir]
        if not paths:
            raise ArtifactError("no trace paths given")
        for p in paths:
            trace_format(p)
    formats = {trace_format(p) for p in paths}
    if len(formats) > 1:
        raise ArtifactError(f"traces of different formats in one run: {', '.join(str(p) for p in paths)}")
    traces = _ranks_from_order(read_many(paths, workers))
    seen: dict[int, str] = {}
    for t in traces:
        for r, m in t.ranks.items():
            if r in seen:
                raise ArtifactError(f"rank {r} appears twice: in {seen[r]} and in {m.get('source')}")
            seen[r] = m.get("source")
    identity.refuse_duplicates(traces)
    trace = Trace.concat(traces)
    sizes = {m.get("world_size") for m in trace.ranks.values() if m.get("world_size") is not None}
    if world_size is None and len(sizes) == 1:
        world_size = sizes.pop()
    elif world_size is not None and sizes and sizes != {world_size}:
        sources = sorted({str(m.get("source")) for m in trace.ranks.values() if m.get("world_size") not in (None, world_size)})
        raise ArtifactError(f"expected world size {world_size}, but the traces record {sorted(sizes)} ({', '.join(sources)})")
    if world_size is not None:
        present = set(trace.ranks)
        extra = sorted(r for r in present if not 0 <= r < world_size)
        where = str(paths_or_dir) if isinstance(paths_or_dir, (str, os.PathLike)) else "the given traces"
        n_missing = world_size - (len(present) - len(extra))
        if n_missing:  # named without building 0..world_size-1, which a huge world size (given or recorded) would not fit
            missing = list(itertools.islice((r for r in range(world_size) if r not in present), 10))  # range is lazy
            more = f" and {n_missing - len(missing):,} more" if n_missing > len(missing) else ""
            raise ArtifactError(
                f"rank(s) {', '.join(map(str, missing))}{more} of world size {world_size:,} missing in {where}"
                f" (found ranks {sorted(trace.ranks)})"
            )
        if extra:
            raise ArtifactError(f"rank(s) {', '.join(map(str, extra))} outside world size {world_size} in {where}")
        for m in trace.ranks.values():
            if m.get("world_size") is None:
                m["world_size"] = world_size
    return trace
