"""What one run of the sweep is: shared by the sweep, its executors and the analysis.

``RunSpec`` is one run; ``TrainOptions`` the train options of a sweep, parsed once by ``train``'s
own parser (``run.train.options``), so that the sweep reads ``--data=X``, ``--task X`` or an
abbreviated option exactly as every run will, and a malformed option list is refused before the
sweep writes anything; ``read_record`` reads back a JSON record the sweep or a run wrote.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from dnabert_scaling.errors import ArtifactError, loads_json
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
    record = read_record(path)
    status = record.get("status") if record is not None else None
    return status if isinstance(status, str) else None


def read_record(
    path: Path, check: Callable[[Any, Path], None] | None = None, hint: str = "repair or remove it, or use --fresh"
) -> dict[str, Any] | None:
    """The JSON object in ``path``, None when there is no such file. A file that is not valid JSON,
    names a key twice, holds something other than an object or fails ``check`` is an ArtifactError
    naming it (``hint``: what the user can do), never a traceback or a silent default."""
    if not path.is_file():
        return None
    try:
        record = loads_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"cannot be read back as JSON ({exc}); {hint}", path) from None
    if not isinstance(record, dict):
        raise ArtifactError(f"must hold a JSON object, not a JSON {type(record).__name__}; {hint}", path)
    if check is not None:
        try:
            check(record, path)
        except ArtifactError as exc:
            raise ArtifactError(f"{exc}; {hint}") from None
    return record


# --- the train options of a sweep ------------------------------------------------------------------


class _Malformed(Exception):
    """argparse's complaint about a train option list (instead of its exit)."""


class _TrainParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Malformed(message)


@functools.lru_cache(maxsize=1)
def _train_parser() -> tuple[argparse.ArgumentParser, dict[str, Any], dict[str, str]]:
    """``train``'s parser (no ``--help``; ``--out`` not required: the sweep gives it per run) whose
    namespace holds only the options given; with every option's default and its flag."""
    from dnabert_scaling.run.train import options

    parser = _TrainParser(prog="dnabert-scaling train", add_help=False)
    options.add_arguments(parser)
    defaults: dict[str, Any] = {}
    flags: dict[str, str] = {}
    for action in parser._actions:
        defaults[action.dest] = action.default
        flags[action.dest] = max(action.option_strings, key=len)
        action.default = argparse.SUPPRESS
        action.required = False
    return parser, defaults, flags


def _shown(value: Any) -> str:
    if value is None or value is False:
        return "absent"
    return "set" if value is True else str(value)


@dataclass(frozen=True)
class TrainOptions:
    """A train option list as ``train`` reads it: ``given`` maps the dest of every option on it to
    its value (the last one given, with argparse's types applied)."""

    args: tuple[str, ...]
    given: Mapping[str, Any]

    @classmethod
    def parse(cls, args: Sequence[str], where: str = "the train options after '--'") -> TrainOptions:
        parser, _, _ = _train_parser()
        try:
            namespace = parser.parse_args(list(args))
        except _Malformed as exc:
            raise ArtifactError(f"{where}: {exc} (they are options of 'dnabert-scaling train'; see its --help)") from None
        return cls(tuple(args), dict(vars(namespace)))

    def value(self, dest: str) -> Any:
        """The option's value for the run: as given, else train's default."""
        return self.given[dest] if dest in self.given else _train_parser()[1][dest]

    def values(self) -> dict[str, Any]:
        return {**_train_parser()[1], **self.given}

    @staticmethod
    def flag(dest: str) -> str:
        return _train_parser()[2][dest]

    def differences(self, requested: TrainOptions) -> list[str]:
        """``--name recorded -> requested`` for every option whose value for the run differs."""
        old, new = self.values(), requested.values()
        return sorted(f"{self.flag(d)} {_shown(old[d])} -> {_shown(new[d])}" for d in old if old[d] != new[d])
