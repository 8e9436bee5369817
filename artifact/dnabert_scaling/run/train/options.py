"""The options of ``dnabert-scaling train`` and their checks.

``add_arguments`` defines every option (with the argparse types that refuse bad numbers before
any work starts); ``parse_fault`` / ``check_fault`` check ``--inject-fault``; ``check_run_options``
the options that depend on the rank's world and on the environment (``--no-ddp``, ``--device cuda``,
``$OMP_NUM_THREADS``), before the run folder is claimed, so that such an error writes nothing. The
environment variables that stand in for ``--weights`` and ``--data`` are named here.
"""

from __future__ import annotations

import argparse
import math

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.options import positive_int, ranged
from dnabert_scaling.outputs import output_path

ENV_WEIGHTS = "DNABERT_SCALING_WEIGHTS"
ENV_GUE = "DNABERT_SCALING_GUE"
# 50 measured steps take minutes; a collective that waits this long has a dead or hung peer.
DIST_TIMEOUT_S = 300.0

# Ranges of the numeric options whose extreme values a library cannot take (an overflow in torch, a
# zero-millisecond timeout) or that make a run meaningless (a learning rate that sends every weight
# to infinity). Checked by argparse, so the error names the option and the range (exit 2).
SEED_MAX = 2**32 - 1  # numpy's and CUDA's seed range; torch.manual_seed(seed + epoch) stays in range
LR_MAX = 3.4e38  # float32's largest finite value, in which the optimizer holds it; a huge finite lr is a run whose
# loss goes NaN, which the analysis reports (finite_loss), not an input error
WEIGHT_DECAY_MAX = 1.0
BUCKET_CAP_MB_MAX = 1e6  # about 1 TB: DDP turns the cap into a 64-bit byte count
DIST_TIMEOUT_RANGE_S = (1.0, 7 * 86400.0)  # a second to a week
COUNT_MAX = 10**9  # steps and batch rows: far beyond any run, within 64-bit arithmetic


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model and data")
    g.add_argument("--model", default="base", help="'base' (released 117M config), 'tiny', or a config.json")
    g.add_argument(
        "--weights",
        default=None,
        help=f"folder with the released checkpoint (config.json + pytorch_model.bin); default ${ENV_WEIGHTS}; "
        "without it the model is randomly initialised (recorded as a fallback)",
    )
    g.add_argument(
        "--attention",
        choices=("sdpa", "eager", "unpad"),
        default="sdpa",
        help="sdpa (default), eager (same math spelled out), unpad (the released code's PyTorch path)",
    )
    g.add_argument("--task", default="prom_300_all", help="GUE task name (default prom_300_all, the study's)")
    g.add_argument(
        "--data",
        default=None,
        help=f"GUE task folder (train.csv, dev.csv); default ${ENV_GUE}/<group>/<task> if it exists, "
        "else a synthetic task of the same shape (recorded as a fallback)",
    )
    g.add_argument("--synthetic", action="store_true", help="use a synthetic task even when GUE is present")
    g.add_argument(
        "--seq-len",
        type=positive_int,
        default=None,
        help="override the task's model_max_length (tokens): sequences are cut at it and a split padded to its "
        "longest, so a value above the data's longest sequence changes nothing (recorded as a deviation)",
    )

    g = p.add_argument_group("schedule (official recipe defaults)")
    g.add_argument("--batch-size", type=ranged(int, 1, COUNT_MAX), default=8, help="per-GPU batch (weak scaling; recipe: 8)")
    g.add_argument(
        "--warmup-steps", type=ranged(int, 0, COUNT_MAX), default=5, help="untimed, untraced steps before the measured ones"
    )
    g.add_argument("--steps", type=ranged(int, 1, COUNT_MAX), default=50, help="measured steps")
    g.add_argument(
        "--lr", type=ranged(float, 0.0, LR_MAX, low_open=True), default=3e-5, help="peak AdamW learning rate (recipe: 3e-5)"
    )
    g.add_argument(
        "--weight-decay",
        type=ranged(float, 0.0, WEIGHT_DECAY_MAX),
        default=0.01,
        help="AdamW weight decay, not on biases and LayerNorm",
    )
    g.add_argument("--lr-warmup-steps", type=ranged(int, 0, COUNT_MAX), default=50, help="linear LR warm-up (recipe: 50)")
    g.add_argument(
        "--max-grad-norm",
        type=ranged(float, 0.0, math.inf, low_open=True),
        default=1.0,
        help="gradient-norm clip before each step",
    )
    g.add_argument("--seed", type=ranged(int, 0, SEED_MAX), default=42, help="seed of weights, data order and dropout")
    g.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp16", "fp32"),
        default="auto",
        help="autocast dtype; auto = bf16 on CUDA (fp16 adds a loss-scaler host sync each step), fp32 on CPU",
    )
    g.add_argument(
        "--optimizer-impl",
        choices=("default", "foreach", "fused"),
        default="default",
        help="torch AdamW implementation (default: torch chooses, foreach on CUDA)",
    )

    g = p.add_argument_group("DDP")
    g.add_argument("--no-ddp", action="store_true", help="world size 1 without the DDP wrapper (scaling baseline)")
    g.add_argument(
        "--bucket-cap-mb",
        type=ranged(float, 0.0, BUCKET_CAP_MB_MAX, low_open=True),
        default=25.0,
        help="DDP gradient bucket size (MiB)",
    )
    g.add_argument(
        "--find-unused-parameters",
        choices=("true", "false"),
        default="true",
        help="recipe runs end up with True under the HF Trainer (default true)",
    )
    g.add_argument(
        "--broadcast-buffers",
        choices=("true", "false"),
        default="true",
        help="broadcast the model's buffers (token_type_ids) each forward, as DDP does unless told otherwise "
        "and as the recipe runs it",
    )
    g.add_argument("--gradient-as-bucket-view", action="store_true", help="DDP: gradients as views into the buckets")
    g.add_argument("--static-graph", action="store_true", help="DDP: the autograd graph is the same every step")
    g.add_argument(
        "--bucket-hook",
        choices=("auto", "on", "off"),
        default="auto",
        help="comm hook that marks each bucket's all-reduce as a ds:bucket range (same arithmetic as DDP's own; "
        "what `predict` needs); auto: on in traced runs, off in untraced ones, whose throughput it would lower "
        "(a Python comm hook cost 14%% of a batch-8 step on an H200, make bench-hook)",
    )
    g.add_argument(
        "--dist-timeout",
        type=ranged(float, *DIST_TIMEOUT_RANGE_S),
        default=DIST_TIMEOUT_S,
        help="seconds a collective may wait for a hung or dead peer before the run fails; a hung rank ends "
        "the run after about this long (plus torchrun's few seconds of shutdown)",
    )
    g.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="auto: CUDA when visible, else CPU (a fallback)"
    )
    g.add_argument(
        "--rehearse",
        action="store_true",
        help="rehearsal of a larger world size on fewer GPUs: ranks share GPUs round-robin, each rank gives NCCL "
        "a host id of its own (NCCL_HOSTID) and NCCL connects them over loopback sockets; recorded as a "
        "fallback and in the placement, never scaling evidence",
    )

    g = p.add_argument_group("tracing and output")
    g.add_argument(
        "--tracer",
        choices=("auto", "scorep", "torch", "none"),
        default="none",
        help="tracer of this run; auto: Score-P when it works, else torch.profiler",
    )
    g.add_argument("--trace-cpu-ops", action="store_true", help="torch tracer: also record host operators")
    g.add_argument("--scorep-python", action="store_true", help="Score-P: also instrument Python functions (filtered)")
    g.add_argument(
        "--out",
        required=True,
        type=output_path,
        help="run directory: new or empty, or an earlier run's with --overwrite; never a sweep's folder or one "
        "holding files a run does not write",
    )
    g.add_argument(
        "--overwrite",
        action="store_true",
        help="delete the files of an earlier run in --out first (never mixes two runs in one folder); only a run's, "
        "one whose config.json or summary.json is a run's record",
    )
    g.add_argument("--eval", action="store_true", help="evaluate dev accuracy after training")
    g.add_argument("--no-progress", action="store_true", help="no per-step progress lines on stderr")
    g.add_argument(
        "--param-fingerprint",
        action="store_true",
        help="write a sha256 of all parameters into each rank's summary (DDP consistency check)",
    )
    g.add_argument(
        "--inject-fault",
        default=None,
        metavar="RANK:STEP",
        help="testing: raise an error on RANK at STEP, counted from 0 with the warm-up steps (checks that a "
        "failing rank ends the run); refused when this run has no such rank or step",
    )


def parse_fault(spec: str | None) -> tuple[int, int] | None:
    """(rank, step) of ``--inject-fault RANK:STEP``; None without the option."""
    if not spec:
        return None
    try:
        r, s = spec.split(":")
        return int(r), int(s)
    except ValueError:
        raise ArtifactError(f"--inject-fault must be RANK:STEP, not {spec!r}") from None


def check_fault(spec: str | None, world_size: int, total_steps: int, where: str = "") -> tuple[int, int] | None:
    """``parse_fault``, refusing a fault that cannot fire in a run of ``world_size`` ranks and
    ``total_steps`` steps (warm-up included): such a run would end "ok" with the fault never raised."""
    fault = parse_fault(spec)
    if fault is None:
        return None
    rank, step = fault
    if not 0 <= rank < world_size:
        raise ArtifactError(
            f"{where}--inject-fault {spec}: rank {rank} is not a rank of a run of world size {world_size} "
            f"(ranks 0..{world_size - 1}), so the fault would never fire"
        )
    if not 0 <= step < total_steps:
        raise ArtifactError(
            f"{where}--inject-fault {spec}: step {step} is not a step of this run (steps 0..{total_steps - 1}, the "
            "warm-up steps included), so the fault would never fire"
        )
    return fault


def omp_threads() -> int:
    """Intra-op threads of a CPU rank: ``$OMP_NUM_THREADS``, else 1 (``rank.pin_cpu_threads``)."""
    import os

    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not raw:
        return 1
    try:
        threads = int(raw)
    except ValueError:
        raise ArtifactError(f"OMP_NUM_THREADS={raw!r} is not a whole number of threads") from None
    if threads < 1:  # not taken as 1 silently: the variable says something no run can do
        raise ArtifactError(f"OMP_NUM_THREADS={raw!r} is not a positive number of threads (at least 1)")
    return threads


def check_run_options(args, info) -> tuple[int, int] | None:
    """The checks that need this rank's world (``info``, a ``distributed.RankInfo``) or the environment,
    made before the run folder is claimed: a refusal writes nothing. Returns the fault to inject."""
    if args.no_ddp and info.world_size > 1:
        raise ArtifactError(f"--no-ddp is only for world size 1, not {info.world_size} (from the {info.source} variables)")
    fault = check_fault(args.inject_fault, info.world_size, args.warmup_steps + args.steps)
    from dnabert_scaling.run.train.distributed import check_rendezvous_host

    check_rendezvous_host(info)
    cuda = False
    if args.device != "cpu":
        import torch

        cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        raise ArtifactError("--device cuda: no CUDA device is visible to this process")
    if not cuda:
        omp_threads()
    return fault
