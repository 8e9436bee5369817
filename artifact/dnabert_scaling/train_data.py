"""The task one rank trains on: the GUE folder (or the synthetic stand-in) and its batches.

The task folder is ``--data``, else ``$DNABERT_SCALING_GUE/<group>/<task>``, else a synthetic task
of the same shape that rank 0 writes into the run folder (recorded as a fallback).
"""

from __future__ import annotations

import os
from pathlib import Path

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import Fallback
from dnabert_scaling.train_options import ENV_GUE


def find_task_folder(args) -> tuple[Path | None, str]:
    """The GUE task folder and why; None (and why) when a synthetic task stands in."""
    if args.synthetic:
        return None, "--synthetic given"
    if args.data:
        folder = Path(args.data)
        if not folder.is_dir():
            raise ArtifactError("--data: GUE task folder does not exist", folder)
        return folder, "given"
    root = os.environ.get(ENV_GUE)
    if not root:
        return None, f"no --data and ${ENV_GUE} is not set"
    for candidate in (Path(root) / args.task, *sorted(Path(root).glob(f"*/{args.task}"))):
        if (candidate / "train.csv").is_file():
            return candidate, f"found under ${ENV_GUE}"
    return None, f"task {args.task!r} not found under ${ENV_GUE}={root}"


def prepare_data(args, rank: int, fallbacks: list[Fallback]):
    """The tokenized task; a synthetic one (written by rank 0 into the run dir) when GUE is absent."""
    import torch.distributed as dist

    from dnabert_scaling import data

    folder, why = find_task_folder(args)
    if folder is None:
        like = args.task if args.task in data.GUE_TASKS else data.DEFAULT_TASK
        folder = args.out / layout.SYNTHETIC_DATA
        if rank == 0 and not (folder / "train.csv").is_file():
            data.write_synthetic_task(folder, like=like, seed=args.seed)
        if dist.is_initialized():
            dist.barrier()
        fallbacks.append(Fallback("data", f"synthetic planted-motif task shaped like {like}", why))
    task = data.load_task(folder, model_max_length=args.seq_len, task_name=args.task if folder.name == args.task else None)
    if task.synthetic and not any(f.what == "data" for f in fallbacks):
        fallbacks.append(
            Fallback("data", f"synthetic planted-motif task shaped like {task.name}", f"{folder} holds synthetic.json")
        )
    return task
