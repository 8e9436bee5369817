"""Running a rank under a tracer: Score-P (``scorep.py``) or torch.profiler (``torch_profiler.py``).

``resolve_tracer`` turns the user's ``--tracer`` (``scorep|torch|none|auto``) into the tracer that
runs, with the fallback recorded when ``auto`` cannot use Score-P (not installed, or its preflight
on this machine, ``preflight.py``, showed incomplete traces). Only one CUPTI user may exist
in a process, so the torch profiler is never started under Score-P.
"""

from __future__ import annotations

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import Fallback

TRACER_CHOICES = ("auto", "scorep", "torch", "none")


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
