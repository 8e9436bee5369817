"""What a ``train`` run reads, checked before the run folder is claimed.

``train_inputs`` lists every file or folder the run reads (``--data`` or the GUE folder found under
``$DNABERT_SCALING_GUE``, ``--model`` when it is a path, ``--weights`` or
``$DNABERT_SCALING_WEIGHTS``), each with the option that names it; ``check_inputs`` refuses an
``--out`` that is, holds or lies inside any of them, reads and validates the task's CSV files and
checks the model config, all before the run folder is claimed and ``--overwrite`` deletes anything. ``resolve_model`` says which config the model is built from:
with weights, the checkpoint's own ``config.json`` decides, and a ``--model`` naming another
architecture is recorded as a fallback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.outputs import refuse_overlap
from dnabert_scaling.provenance import Fallback
from dnabert_scaling.run.train.options import ENV_WEIGHTS


def weights_source(args) -> tuple[Path | None, str]:
    """The weights folder and the option (or variable) that names it; (None, "") without weights."""
    if args.weights:
        return Path(args.weights), "--weights"
    env = os.environ.get(ENV_WEIGHTS)
    if env:
        return Path(env), f"${ENV_WEIGHTS}"
    return None, ""


def train_inputs(args) -> list[tuple[str, Path]]:
    """(option, path) of every file or folder this run reads."""
    from dnabert_scaling.run.train.task import find_task_folder
    from dnabert_scaling.run.workload.model import CONFIG_NAMES

    inputs: list[tuple[str, Path]] = []
    folder, why = find_task_folder(args)
    if folder is not None:
        inputs.append(("--data" if args.data else f"the GUE task folder ({why})", folder))
    if str(args.model) not in CONFIG_NAMES:
        inputs.append(("--model", Path(args.model)))
    weights, option = weights_source(args)
    if weights is not None:
        inputs.append((option, weights))
    return inputs


def refuse_out_over_inputs(out: Path, inputs: list[tuple[str, Path]]) -> None:
    """Refuse an ``--out`` that is, holds or lies inside an input: the run writes (and ``--overwrite``
    deletes) files there."""
    for option, path in inputs:
        try:
            refuse_overlap([("--out", out)], [path])
        except ArtifactError as exc:
            raise ArtifactError(f"{exc} (that input is {option})") from None


@dataclass
class ModelChoice:
    """The config the model is built from, its name for the summary, and the weights if any."""

    cfg: dict[str, Any]
    name: str  # "base", "tiny", or the config file's path
    weights: Path | None
    weights_option: str
    fallback: Fallback | None  # --model named another architecture than the weights' config


def resolve_model(args) -> ModelChoice:
    """Check ``--model`` and the weights' config (ArtifactError naming the file and the key) and say which
    one the run uses: the weights' own config when there are weights, else ``--model``."""
    from dnabert_scaling.run.workload.model import config_name, resolve_config
    from dnabert_scaling.run.workload.model_config import ARCHITECTURE_KEYS

    asked = resolve_config(args.model)
    _check_vocabulary(asked, "--model", args.model)
    weights, option = weights_source(args)
    if weights is None:
        return ModelChoice(asked, str(args.model), None, "", None)
    if not weights.is_dir():
        raise ArtifactError(f"{option}: weights folder does not exist", weights)
    used = resolve_config(weights)
    _check_vocabulary(used, option, weights / "config.json")
    name = config_name(used) or str(weights / "config.json")
    fallback = None
    differ = [k for k in ARCHITECTURE_KEYS if asked.get(k) != used.get(k)]
    if differ:
        shown = ", ".join(f"{k} {asked.get(k)} vs {used.get(k)}" for k in differ)
        fallback = Fallback(
            "model",
            f"the {name} config of {option} {weights}",
            f"--model {args.model} names another architecture ({shown}); a checkpoint's own config.json decides the model",
        )
    return ModelChoice(used, name, weights, option, fallback)


def _check_vocabulary(cfg: dict[str, Any], option: str, where: str | os.PathLike) -> None:
    """The tokenizer's ids must all have an embedding row."""
    from dnabert_scaling.run.workload.tokenizer import load_tokenizer

    tokens = len(load_tokenizer())
    if cfg["vocab_size"] < tokens:
        raise ArtifactError(
            f"{option}: key 'vocab_size': {cfg['vocab_size']} is smaller than the tokenizer's {tokens} tokens", where
        )


def check_inputs(args, out: Path, world_size: int = 1) -> None:
    """Everything about the inputs that can be checked before the run folder is claimed (the task's
    rows against ``world_size`` ranks' batches too)."""
    from dnabert_scaling.run.train.task import check_task

    refuse_out_over_inputs(out, train_inputs(args))
    check_task(args, world_size)
    if args.tracer in ("scorep", "auto"):
        from dnabert_scaling.run.tracing.scorep import scorep_environment

        scorep_environment(0, out, steps=args.warmup_steps + args.steps)  # refuses settings Score-P records nothing with
    resolve_model(args)
