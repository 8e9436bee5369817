"""``sweep --rehearse``: world sizes beyond the GPUs here run as a rehearsal (ranks sharing the GPUs, NCCL over
loopback sockets; ``sweep.local`` places them): the train options that make a run one (short, marked
``--rehearse``), no untraced throughput runs and no baseline without DDP, and the fallback record every run of
it carries. Its timings are never scaling evidence."""

from __future__ import annotations

import argparse

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.sweep.spec import TrainOptions

# A rehearsal shows that the NCCL path works and what a step records: the measured steps the
# analysis needs (its completeness and medians), not the study's 50.
REHEARSAL_WARMUP = 3
REHEARSAL_STEPS = 8


def rehearsal_options(args: argparse.Namespace, train_args: list[str], device: str = "cuda") -> tuple[list[str], dict]:
    """``sweep --rehearse``: the train options of a rehearsal (``--rehearse``, short unless the steps
    are given) and no untraced runs (``args.repeats`` becomes 0; a ``--repeats`` given is refused); returns them with the sweep's
    fallback record (``rehearsal_record``) for ``device``."""
    if args.executor != "local":
        raise ArtifactError("--rehearse runs on this machine's GPUs: it needs --executor local")
    if args.repeats is not None:  # given: a rehearsal would run none of them, and say nothing
        raise ArtifactError(
            f"--repeats {args.repeats} --rehearse: a rehearsal runs no untraced throughput runs (ranks sharing GPUs give "
            "no scaling evidence), so these repeats would not run; leave out --repeats, or --rehearse for a sweep that runs them"
        )
    given = TrainOptions.parse(train_args).given
    extra = ["--rehearse"]  # never among the train options: driver._train_options refuses it there
    if "steps" not in given:
        extra += ["--steps", str(REHEARSAL_STEPS)]
    if "warmup_steps" not in given:
        extra += ["--warmup-steps", str(REHEARSAL_WARMUP)]
    args.repeats = 0
    args.baseline_no_ddp = False
    return [*train_args, *extra], rehearsal_record(device)


def rehearsal_record(device: str) -> dict:
    """The sweep's fallback record of a rehearsal, worded for the ``device`` its ranks run on: on the CPU
    (``scripts/reference_run.sh --device cpu``, a dry run) no GPU is shared and no NCCL connects them."""
    used = "world sizes larger than the GPUs here, ranks placed round-robin on them, NCCL over loopback sockets"
    reason = "sweep --rehearse: shows the multi-GPU path work on fewer GPUs; its timings are not scaling evidence"
    if device == "cpu":
        used = "the rehearsal's short runs on the CPU (--device cpu): every rank a CPU process, gloo over loopback"
        reason = "sweep --rehearse --device cpu: a dry run of the rehearsal without a GPU; its timings are not scaling evidence"
    return {"kind": "rehearsal", "what": "rehearsal", "used": used, "reason": reason}
