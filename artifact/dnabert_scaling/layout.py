"""Where every stage puts its files: the one spelling of the run and sweep folder layouts.

A sweep folder holds ``sweep.json``, one run folder per (world size, tracer, repeat) named
``ws<N>-<tracer>-r<k>[-<variant>]`` and the bus-bandwidth results ``busbw-ws<N>.json`` (with their
log ``busbw-ws<N>.log``). A run folder holds ``summary.json`` (rank 0, at the end),
``manifest.json`` (the sweep), ``rank<R>/steps.jsonl`` and ``rank<R>/summary.json`` (each rank),
``traces/rank<R>.json.gz`` (tracer torch) or ``traces/scorep-rank<R>/`` (tracer scorep) and
``logs/``. This module imports nothing of the package: every stage may use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TRACERS = ("none", "torch", "scorep")

SUMMARY = "summary.json"
MANIFEST = "manifest.json"
STEPS = "steps.jsonl"
ERROR = "error.txt"
NCCL_LOG = "nccl.log"  # a CUDA rank's NCCL INFO log (run/train/placement.py)
CONFIG = "config.json"
SYNTHETIC_DATA = "synthetic-data"
TRACES = "traces"
LOGS = "logs"
SWEEP = "sweep.json"
SCOREP_RANK_PREFIX = "scorep-rank"
ANCHOR = "traces.otf2"  # the anchor file of a Score-P experiment directory

RUN_NAME_RE = re.compile(rf"^ws(\d+)-({'|'.join(TRACERS)})-r(\d+)(?:-([a-z0-9]+))?$")
BUSBW_RE = re.compile(r"^busbw-ws(\d+)\.json$")
SCOREP_RANK_RE = re.compile(rf"^{SCOREP_RANK_PREFIX}(\d+)$")


def run_name(world_size: int, tracer: str, repeat: int, variant: str = "") -> str:
    """``ws<N>-<tracer>-r<k>``, with ``-<variant>`` appended when there is one."""
    return f"ws{int(world_size)}-{tracer}-r{int(repeat)}" + (f"-{variant}" if variant else "")


@dataclass(frozen=True)
class RunName:
    world_size: int
    tracer: str
    repeat: int
    variant: str  # "" when the name has none


def parse_run_name(name: str) -> RunName | None:
    """The parts of a run folder's name, or None when ``name`` is not ``ws<N>-<tracer>-r<k>[-v]``."""
    m = RUN_NAME_RE.match(name)
    if not m:
        return None
    return RunName(int(m.group(1)), m.group(2), int(m.group(3)), m.group(4) or "")


def scorep_rank_dir_name(rank: int) -> str:
    return f"{SCOREP_RANK_PREFIX}{int(rank)}"


def scorep_rank_of(name: str) -> int | None:
    """R from an experiment directory's name ``scorep-rank<R>``, else None."""
    m = SCOREP_RANK_RE.match(name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class RunLayout:
    """The files of one run folder."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def traces(self) -> Path:
        return self.root / TRACES

    @property
    def logs(self) -> Path:
        return self.root / LOGS

    @property
    def launcher_log(self) -> Path:
        return self.logs / "launcher.log"

    def rank_errors(self) -> list[Path]:
        """``rank<R>/error.txt`` present (each rank that failed writes its traceback there)."""
        return sorted(self.root.glob(f"rank*/{ERROR}"))

    def rank_dir(self, rank: int) -> Path:
        return self.root / f"rank{int(rank)}"

    def steps(self, rank: int) -> Path:
        return self.rank_dir(rank) / STEPS

    def rank_summary(self, rank: int) -> Path:
        return self.rank_dir(rank) / SUMMARY

    def rank_error(self, rank: int) -> Path:
        return self.rank_dir(rank) / ERROR

    def nccl_log(self, rank: int) -> Path:
        return self.rank_dir(rank) / NCCL_LOG

    def kineto_trace(self, rank: int, gz: bool = True) -> Path:
        return self.traces / f"rank{int(rank)}.json{'.gz' if gz else ''}"

    def scorep_dir(self, rank: int) -> Path:
        return self.traces / scorep_rank_dir_name(rank)

    def rank_traces(self, rank: int) -> list[Path]:
        """Every trace path rank ``rank`` may write (either tracer)."""
        return [self.kineto_trace(rank), self.kineto_trace(rank, gz=False), self.scorep_dir(rank)]

    def trace_paths(self, tracer: str) -> list[Path]:
        """The per-rank trace files (tracer torch) or experiment folders (tracer scorep) present."""
        if not self.traces.is_dir():
            return []
        if tracer == "torch":
            return sorted(self.traces.glob("rank*.json.gz")) + sorted(self.traces.glob("rank*.json"))
        return sorted(p for p in self.traces.glob(f"{SCOREP_RANK_PREFIX}*") if p.is_dir())

    def stray_traces(self, tracer: str) -> list[Path]:
        """Traces in ``traces/`` that another tracer than ``tracer`` writes: Score-P experiments in a
        torch run, Kineto traces in a Score-P run, any trace in an untraced run (``none``)."""
        others = [t for t in TRACERS if t not in ("none", tracer)]
        return sorted({p for other in others for p in self.trace_paths(other)})

    def is_run(self) -> bool:
        """A run folder: ``summary.json`` or ``manifest.json`` present."""
        return self.summary.is_file() or self.manifest.is_file()


def slurm_job_dir(job_root: Path, world_size: int) -> Path:
    """``<job root>/ws<N>``: the SLURM executor's job directory of world size N."""
    return Path(job_root) / f"ws{int(world_size)}"


@dataclass(frozen=True)
class SweepLayout:
    """The files of one sweep folder."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def sweep(self) -> Path:
        return self.root / SWEEP

    def run(self, world_size: int, tracer: str, repeat: int, variant: str = "") -> RunLayout:
        return RunLayout(self.root / run_name(world_size, tracer, repeat, variant))

    def busbw(self, world_size: int) -> Path:
        return self.root / f"busbw-ws{int(world_size)}.json"

    def busbw_log(self, world_size: int) -> Path:
        return self.root / f"busbw-ws{int(world_size)}.log"

    def busbw_dir(self, world_size: int) -> Path:
        """Where the bus-bandwidth benchmark of world size N runs (its launcher's run folder)."""
        return self.root / f"busbw-ws{int(world_size)}"

    def busbw_files(self) -> dict[int, Path]:
        """``busbw-ws<N>.json`` present, by N."""
        out: dict[int, Path] = {}
        for p in sorted(self.root.glob("busbw-ws*.json")):
            m = BUSBW_RE.match(p.name)
            if m and p.is_file():
                out[int(m.group(1))] = p
        return out

    @property
    def slurm(self) -> Path:
        """The default root of the SLURM executor's job directories."""
        return self.root / "slurm"

    def run_dirs(self) -> list[Path]:
        """Run folders present (named ``ws<N>-<tracer>-r<k>[-v]`` and holding a summary or manifest)."""
        if not self.root.is_dir():
            return []
        return [p for p in sorted(self.root.iterdir()) if p.is_dir() and parse_run_name(p.name) and RunLayout(p).is_run()]
