"""The one-GPU-per-rank sanity check: a world size whose ranks shared a GPU (a rehearsal, or a
misplaced launch) says nothing about the magnitudes of multi-GPU training (time shares, overlap,
efficiency), only about its structure (which kernels run, on which stream). Which checks rest on
structure is data (``rests_on`` in the claims file). The placement and NCCL's transport are
recorded beside every multi-GPU verdict: C4 and C5 mean little over loopback TCP."""

from __future__ import annotations

from typing import Any

from dnabert_scaling.metrics_invariants import crowded

STRUCTURE = "structure"
MAGNITUDE = "magnitude"
RESTS_ON = (STRUCTURE, MAGNITUDE)


def placement_of(entry: dict | None) -> dict[str, Any] | None:
    """``traced.placement`` of a world size's entry; None when unknown."""
    placement = ((entry or {}).get("traced") or {}).get("placement")
    return placement if isinstance(placement, dict) else None


def transport_text(placement: dict[str, Any]) -> str:
    transports = placement.get("transports") or []
    return f"NCCL transport {', '.join(transports)}" if transports else "NCCL transport not recorded"


def describe(placement: dict[str, Any]) -> str:
    """One phrase: ranks, GPUs, how a GPU was told apart, hosts, rehearsal, transport."""
    gpus = placement.get("gpus")
    text = f"{placement.get('ranks')} rank(s) on {'an unknown number of' if gpus is None else gpus} GPU(s)"
    if placement.get("shared_gpu"):
        text += f", up to {placement.get('ranks_per_gpu')} ranks per GPU"
    if placement.get("identity") not in (None, "unknown"):
        text += f" (GPUs told apart by {placement['identity']})"
    if placement.get("hosts") is not None:
        text += f", {placement['hosts']} host(s)"
    if placement.get("rehearsal"):
        text += ", a rehearsal"
    return f"{text}; {transport_text(placement)}"


def not_one_gpu_per_rank(placement: dict[str, Any] | None) -> bool:
    """Whether the placement rules out one GPU per rank: ranks shared a GPU (by ``shared_gpu``, or by
    more ranks than GPUs), or the run of several ranks was a rehearsal (NCCL over loopback sockets,
    ranks placed round-robin), whatever ``shared_gpu`` says."""
    if not placement:
        return False
    ranks = placement.get("ranks")
    rehearsed = bool(placement.get("rehearsal")) and not (isinstance(ranks, int) and ranks < 2)  # one rank has no peer
    return bool(placement.get("shared_gpu") or rehearsed or crowded(ranks, placement.get("gpus"), placement.get("ranks_per_gpu")))


OWN, SHARED, UNKNOWN = "own", "shared", "unknown"


def gpu_per_rank(placement: dict[str, Any] | None, ws: int) -> str:
    """Whether the ranks of world size ``ws`` each had a GPU of their own, as the placement shows it:
    ``SHARED`` where it rules that out (:func:`not_one_gpu_per_rank`); ``OWN`` for one rank, or where
    the placement counted the GPUs; ``UNKNOWN`` where several ranks ran and no placement was recorded
    (bare traces, without their run records) or its GPUs could not be told apart. Unknown is never
    taken for one GPU per rank."""
    if placement and not_one_gpu_per_rank(placement):
        return SHARED
    if ws < 2:
        return OWN
    if not placement or not isinstance(placement.get("gpus"), int) or placement.get("identity") == "unknown":
        return UNKNOWN
    return OWN


# what a shared GPU or a rehearsal means for a check, said once after the last world size it applies to
# (:func:`said_once`): a claim judged at several world sizes would otherwise repeat it for each
SHARED_GPU_CONSEQUENCE = (
    ": the ranks time-slice one GPU, so times, shares and throughput are not those of one GPU per rank; "
    "only structural checks are judged"
)
REHEARSAL_CONSEQUENCE = (
    ": its ranks talk over loopback sockets on fewer GPUs than a study would give them, so times, shares "
    "and throughput are not scaling evidence; only structural checks are judged"
)


def shared_gpu_reason(ws: int, placement: dict[str, Any]) -> str:
    if not placement.get("shared_gpu") and placement.get("rehearsal"):
        return f"world size {ws}: a rehearsal ({describe(placement)}){REHEARSAL_CONSEQUENCE}"
    return f"world size {ws}: ranks shared a GPU ({describe(placement)}){SHARED_GPU_CONSEQUENCE}"


PLACEMENT_UNKNOWN_CONSEQUENCE = (
    ": whether each rank had a GPU of its own is unknown, so times, shares and throughput are not judged "
    "as scaling evidence; only structural checks are judged"
)


def placement_unknown_reason(ws: int, placement: dict[str, Any] | None) -> str:
    what = (
        "no placement was recorded (traces given without their run records)"
        if not placement
        else f"the placement could not tell its GPUs apart ({describe(placement)})"
    )
    return f"world size {ws}: {what}{PLACEMENT_UNKNOWN_CONSEQUENCE}"


def said_once(reasons: list[str], sep: str = "; ") -> str:
    """``reasons`` joined by ``sep``, each consequence of a shared GPU or a rehearsal kept only where it
    is said last (the world sizes before it name their placement and lean on it)."""
    out = list(reasons)
    for tail in (SHARED_GPU_CONSEQUENCE, REHEARSAL_CONSEQUENCE, PLACEMENT_UNKNOWN_CONSEQUENCE):
        holding = [i for i, r in enumerate(out) if r.endswith(tail)]
        for i in holding[:-1]:
            out[i] = out[i][: -len(tail)]
    return sep.join(out)
