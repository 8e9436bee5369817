"""What one run of the sweep is: shared by the sweep, its executors and the analysis."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from dnabert_scaling.layout import RunLayout, run_name


@dataclass(frozen=True)
class RunSpec:
    """One training run: ``world_size`` ranks, one tracer, one repeat, one run directory."""

    world_size: int
    tracer: str
    repeat: int
    run_dir: Path
    train_args: tuple[str, ...] = field(default_factory=tuple)
    variant: str = ""  # e.g. "noddp": world size 1 without the DDP wrapper

    @property
    def name(self) -> str:
        return run_name(self.world_size, self.tracer, self.repeat, self.variant)

    def command_args(self) -> list[str]:
        """Arguments after ``dnabert-scaling train`` for this run."""
        return [*self.train_args, "--tracer", self.tracer, "--out", str(self.run_dir)]

    def is_complete(self) -> bool:
        """Trained to the end (``summary.json``) and, where the sweep recorded it, accepted by the
        sweep (``manifest.json``): the sweep's status is the final word."""
        if run_status(self.run_dir) != "ok":
            return False
        manifest = RunLayout(self.run_dir).manifest
        return not manifest.is_file() or _status_of(manifest) == "ok"


def run_status(run_dir: Path) -> str | None:
    """``"ok"`` / ``"failed"`` from ``summary.json``, or None when the run has not finished."""
    return _status_of(RunLayout(run_dir).summary)


def _status_of(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text()).get("status")
    except (OSError, ValueError):
        return None


def parse_train_options(args: list[str]) -> dict[str, str]:
    """``--name value`` / ``--flag`` pairs of a train command line (a flag's value is "")."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        name = args[i]
        if name.startswith("--") and "=" in name:
            name, value = name.split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            value = args[i + 1]
            i += 1
        else:
            value = ""
        out[name] = value
        i += 1
    return out
