"""The run folder's records as the analysis reads them: ``summary.json``, ``rank<R>/summary.json``,
``manifest.json`` and the lines of ``rank<R>/steps.jsonl``.

``train`` and ``sweep`` write these files; ``analyze`` reads them (``analysis.runs.load_run``,
``analysis.placement``, ``analysis.metrics``). This module is the contract between the two: the type
and range of every key a later stage uses, and what the summary's figures must mean together (its
throughput is its global batch over its median step, which is its slowest rank's median). A file that
breaks it is refused with an ArtifactError naming the file and the key (exit 2): a string where a list
belongs (which Python would walk character by character), a negative throughput, a step time of 0, an
accuracy of 7 or a ``finite_loss`` of ``"no"`` would otherwise reach the metrics as figures, or stop
the analysis with a traceback.

A key that is absent passes (runs recorded before a key existed lack it); a key that is present must
be what its rule says. Keys no stage reads are not checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError

Rule = Callable[[Any], "str | None"]  # the problem with a value, or None


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def integer(lo: int) -> Rule:
    def rule(value: Any) -> str | None:
        if type(value) is not int:
            return f"must be a JSON integer, not {_show(value)}"
        return f"must be {lo} or more, not {value}" if value < lo else None

    return rule


def number(*, above: float | None = None, lo: float | None = None, hi: float | None = None) -> Rule:
    """A finite JSON number: greater than ``above``, within ``lo`` .. ``hi``, where given."""

    def rule(value: Any) -> str | None:
        if not _is_number(value) or not math.isfinite(value):
            return f"must be a finite number, not {_show(value)}"
        if above is not None and not value > above:
            return f"must be above {above:g}, not {value!r}"
        if lo is not None and hi is not None and not lo <= value <= hi:
            return f"must lie between {lo:g} and {hi:g}, not {value!r}"
        if lo is not None and value < lo:
            return f"must be {lo:g} or more, not {value!r}"
        return None

    return rule


def loss_value(value: Any) -> str | None:
    """A logged loss: a number, NaN or infinite included (a loss that went NaN is a finding)."""
    return None if _is_number(value) else f"must be a number, not {_show(value)}"


def text(value: Any) -> str | None:
    return None if isinstance(value, str) else f"must be a string, not {_show(value)}"


def flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, not {_show(value)}"


def obj(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be a JSON object, not {_show(value)}"


def one_of(*allowed: str) -> Rule:
    def rule(value: Any) -> str | None:
        return None if value in allowed else f"must be one of {', '.join(allowed)}, not {_show(value)}"

    return rule


def list_of(item: Rule, what: str) -> Rule:
    def rule(value: Any) -> str | None:
        if not isinstance(value, list):
            return f"must be a list of {what}, not {_show(value)}"
        bad = next(((i, p) for i, v in enumerate(value) if (p := item(v))), None)
        return None if bad is None else f"[{bad[0]}] {bad[1]}"

    return rule


def optional(rule: Rule) -> Rule:
    def nullable(value: Any) -> str | None:
        return None if value is None else rule(value)

    return nullable


SECONDS = number(lo=0.0)
STEP_SECONDS = number(above=0.0)

RANK_SUMMARY: dict[str, Rule] = {
    "status": text,
    "rank": integer(0),
    "local_rank": integer(0),
    "device": text,
    "placement": optional(obj),
    "measured_steps": integer(0),
    "median_step_time_s": optional(STEP_SECONDS),
    "median_step_busy_s": optional(SECONDS),
    "wall_measured_s": optional(SECONDS),
    "loss_first": optional(loss_value),
    "loss_last": optional(loss_value),
    "finite_loss": flag,
    "dev_accuracy": optional(number(lo=0.0, hi=1.0)),
    "trace": optional(text),
    "provenance": optional(obj),
}

FALLBACK: dict[str, Rule] = {"what": text, "used": text}

RUN_SUMMARY: dict[str, Rule] = {
    "status": text,
    "world_size": integer(1),
    "launcher": optional(text),
    "backend": optional(text),
    "ddp": flag,
    "ddp_options": optional(obj),
    "device_type": optional(text),
    "rehearsal": flag,
    "tracer": text,
    "tracer_requested": optional(text),
    "trace_mode": optional(text),
    "precision": optional(text),
    "attention": optional(text),
    "model": optional(text),
    "parameters": optional(integer(0)),
    "weights": optional(obj),
    "task": optional(obj),
    "batch_size_per_rank": optional(integer(1)),
    "global_batch": optional(integer(1)),
    "seq_len_tokens": optional(integer(1)),
    "warmup_steps": optional(integer(0)),
    "measured_steps": optional(integer(0)),
    "median_step_time_s": optional(STEP_SECONDS),
    "samples_per_s": optional(number(above=0.0)),
    "tokens_per_s": optional(number(above=0.0)),
    "finite_loss": flag,
    "dev_accuracy": optional(number(lo=0.0, hi=1.0)),
    "ranks": list_of(obj, "rank summaries (objects)"),
    "fallbacks": list_of(obj, "fallbacks (objects with what and used)"),
    "deviations": list_of(text, "strings"),
    "warnings": list_of(text, "strings"),
    "provenance": optional(obj),
    "ddp_buckets": optional(obj),
}

MANIFEST: dict[str, Rule] = {
    "world_size": integer(1),
    "tracer": text,
    "repeat": integer(0),
    "variant": one_of("ddp", "noddp"),
    "status": text,
    "warnings": list_of(text, "strings"),
    "fallbacks": list_of(obj, "fallbacks (objects with what and used)"),
    "provenance": optional(obj),
}

# config.json (train, rank 0, at the start): what the analysis reads of it, the device asked for
CONFIG: dict[str, Rule] = {"args": obj, "rank_info": optional(obj)}
CONFIG_ARGS: dict[str, Rule] = {"device": optional(one_of("auto", "cuda", "cpu"))}

# sweep.json: the fallbacks the sweep imposed on every run (data, rehearsal), read for the runs that
# ended without recording their own
SWEEP: dict[str, Rule] = {"fallbacks": optional(list_of(obj, "fallbacks (objects with what and used)"))}

STEP_LINE: dict[str, Rule] = {
    "step": integer(0),
    "measured": flag,
    "step_time_s": optional(SECONDS),
    "step_busy_s": optional(SECONDS),
    "loss": loss_value,
}


def _check(record: Any, rules: dict[str, Rule], where: str, path: Path | None, required: tuple[str, ...] = ()) -> None:
    if not isinstance(record, dict):
        raise ArtifactError(f"{where or 'the file'} must be a JSON object, not {_show(record)}", path)
    missing = [k for k in required if k not in record]
    if missing:
        raise ArtifactError(f"{where.rstrip('. ') or 'the file'} lacks {', '.join(map(repr, missing))}", path)
    for key, rule in rules.items():
        if key in record and (problem := rule(record[key])):
            raise ArtifactError(f"{where}{key}{'' if problem.startswith('[') else ' '}{problem}", path)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _check_figures(summary: dict[str, Any], path: Path | None) -> None:
    """The throughput is the global batch over the median step; the median step is the slowest
    rank's: a summary whose figures disagree was edited by hand or written by another program."""
    step, batch, seq = summary.get("median_step_time_s"), summary.get("global_batch"), summary.get("seq_len_tokens")
    if summary.get("samples_per_s") is not None and (step is None or batch is None):
        raise ArtifactError("has samples_per_s without the median_step_time_s and global_batch it is computed from", path)
    for key, expected in (("samples_per_s", batch), ("tokens_per_s", batch * seq if batch and seq else None)):
        value = summary.get(key)
        if value is not None and step and expected and not _close(value, expected / step):
            raise ArtifactError(
                f"{key} is {value!r}, but global_batch{' x seq_len_tokens' if key == 'tokens_per_s' else ''} over "
                f"median_step_time_s gives {expected / step!r}: a throughput the run's own step time does not give",
                path,
            )
    ranks = [r.get("median_step_time_s") for r in summary.get("ranks") or []]
    if step is not None and ranks and None not in ranks and not _close(step, max(ranks)):
        raise ArtifactError(
            f"median_step_time_s is {step!r}, but the slowest rank's median (ranks[].median_step_time_s) is {max(ranks)!r}",
            path,
        )


def check_run_summary(summary: Any, path: Path | None) -> None:
    """``summary.json`` of a run (rank 0's): its keys, its rank summaries, its fallbacks, its figures."""
    _check(summary, RUN_SUMMARY, "", path)
    for i, rank in enumerate(summary.get("ranks") or []):
        _check(rank, RANK_SUMMARY, f"ranks[{i}].", path)
    for i, fallback in enumerate(summary.get("fallbacks") or []):
        _check(fallback, FALLBACK, f"fallbacks[{i}].", path, required=tuple(FALLBACK))
    _check_figures(summary, path)


def check_rank_summary(summary: Any, path: Path | None) -> None:
    """``rank<R>/summary.json``."""
    _check(summary, RANK_SUMMARY, "", path)


def check_manifest(manifest: Any, path: Path | None) -> None:
    """``manifest.json`` (the sweep's record of a run)."""
    _check(manifest, MANIFEST, "", path)
    for i, fallback in enumerate(manifest.get("fallbacks") or []):
        _check(fallback, FALLBACK, f"fallbacks[{i}].", path, required=tuple(FALLBACK))


def check_config(config: Any, path: Path | None) -> None:
    """``config.json`` of a run: ``args`` an object, its ``device`` one that ``train`` takes."""
    _check(config, CONFIG, "", path, required=("args",))
    _check(config["args"], CONFIG_ARGS, "args.", path)


def check_sweep(sweep: Any, path: Path | None) -> None:
    """``sweep.json``: its fallbacks."""
    _check(sweep, SWEEP, "", path)
    for i, fallback in enumerate(sweep.get("fallbacks") or []):
        _check(fallback, FALLBACK, f"fallbacks[{i}].", path, required=tuple(FALLBACK))


def check_step_line(step: Any, path: Path | None, line: int) -> None:
    """One line of ``rank<R>/steps.jsonl`` (1-based ``line``)."""
    _check(step, STEP_LINE, f"line {line}: ", path)
