"""Running a rank under a tracer: Score-P (``scorep.py``) or torch.profiler (``torch_profiler.py``).

``resolve_tracer`` turns the user's ``--tracer`` (``scorep|torch|none|auto``) into the tracer that
runs, with the fallback recorded when ``auto`` cannot use Score-P (not installed, or its preflight
on this machine, ``preflight.py``, showed incomplete traces, or the runs are on CPU). A sweep decides
once and passes its fallback to its runs (``sweep_fallback``). Only one CUPTI user may exist
in a process, so the torch profiler is never started under Score-P.
"""

from __future__ import annotations

import json
import os

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import Fallback

TRACER_CHOICES = ("auto", "scorep", "torch", "none")
# A sweep decides --tracer auto once and runs every run with the tracer it chose; the fallback it took
# reaches the runs here (JSON: the Fallback's fields and the tracer chosen), so each run records it in its
# own provenance, where analyze reads fallbacks (sweep.json alone would leave the report silent)
ENV_SWEEP_FALLBACK = "DNABERT_SCALING_SWEEP_TRACER_FALLBACK"


def sweep_fallback_env(tracer: str, fallback: Fallback) -> str:
    """The value of :data:`ENV_SWEEP_FALLBACK` for a sweep that chose ``tracer`` and took ``fallback``."""
    return json.dumps({**fallback.as_dict(), "tracer": tracer})


def sweep_fallback(tracer: str) -> Fallback | None:
    """The fallback a sweep took for ``--tracer auto``, where this run runs the tracer it chose; None without
    one (a malformed value is ignored: the run then records what it knows itself)."""
    raw = os.environ.get(ENV_SWEEP_FALLBACK)
    try:
        given = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(given, dict) or given.get("tracer") != tracer:
        return None
    fields = [given.get(k) for k in ("what", "used", "reason")]
    if not all(isinstance(f, str) and f for f in fields):
        return None
    return Fallback(*fields)


def resolve_tracer(requested: str, model: str = "base") -> tuple[str, Fallback | None]:
    """The tracer to run, and the fallback taken.

    ``scorep`` runs Score-P whenever it is installed (the completeness gate judges its traces).
    ``auto`` runs Score-P only when it is installed *and* its preflight on this machine
    (``tracing.preflight``: a few steps of ``model`` under Score-P, completeness measured) showed
    complete traces; otherwise torch.profiler, with the fallback and the preflight's figures.
    """
    if requested not in TRACER_CHOICES:
        raise ArtifactError(f"--tracer must be one of {', '.join(TRACER_CHOICES)}, not {requested!r}")
    if requested in ("torch", "none"):
        return requested, None
    from dnabert_scaling.run.tracing.scorep import scorep_available, under_scorep

    if under_scorep():
        return "scorep", None
    ok, reason = scorep_available()
    if ok and requested == "scorep":
        return "scorep", None
    if not ok:
        if requested == "scorep":
            raise ArtifactError(f"--tracer scorep: Score-P cannot be used here: {reason}")
        return "torch", Fallback("tracer", "torch.profiler (Kineto) instead of Score-P", reason)
    from dnabert_scaling.run.tracing.preflight import describe, preflight

    result = preflight(model)
    if result.get("status") == "complete":
        return "scorep", None
    return "torch", Fallback("tracer", "torch.profiler (Kineto) instead of Score-P", describe(result))


class NullTracer:
    """No tracing in this process (untraced runs, and Score-P runs: Score-P traces from outside)."""

    name = "none"
    path = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def step_begin(self, step: int) -> None:
        pass

    def step_end(self, step: int) -> None:
        pass
