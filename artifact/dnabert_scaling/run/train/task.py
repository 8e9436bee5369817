"""The task one rank trains on: the GUE folder (or the synthetic stand-in) and its batches.

The task folder is ``--data``, else ``$DNABERT_SCALING_GUE/<group>/<task>``, else a synthetic task
of the same shape that rank 0 writes into the run folder (recorded as a fallback).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dnabert_scaling import layout
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.provenance import Fallback
from dnabert_scaling.run.workload.tokenizer import PAD_ID
from dnabert_scaling.run.train.options import ENV_GUE


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


def _task_name(args, folder: Path) -> str | None:
    """The GUE task a folder holds: ``--task`` where the folder is named after it, else None (the
    folder's own name, or its synthetic metadata, names it)."""
    return args.task if folder.name == args.task else None


def check_task(args, world_size: int = 1) -> None:
    """Read and validate the task folder this run would train on, or check that a synthetic stand-in of
    ``--task``'s shape exists (a GUE task name, else refused naming the known ones), and that each of
    ``world_size`` ranks gets at least one batch: refused before the run folder is claimed."""
    from dnabert_scaling.run.workload import data

    folder, why = find_task_folder(args)
    if folder is None:
        if args.task not in data.GUE_TASKS:
            raise ArtifactError(
                f"--task {args.task!r}: not a GUE task, and no folder of it is given ({why}): give its folder with --data, "
                f"or one of the GUE tasks, whose shape a synthetic stand-in copies: {', '.join(sorted(data.GUE_TASKS))}"
            )
        rows, where = data.SYNTHETIC_ROWS[0], f"the synthetic stand-in's {data.SYNTHETIC_ROWS[0]} training rows"
    else:
        _, _, raw, _ = data.read_task(folder, task_name=_task_name(args, folder))
        rows = len(raw["train"].labels)
        where = f"the {rows} training rows of {folder / 'train.csv'}"
    _check_batch(rows, world_size, args.batch_size, where)


def _check_batch(rows: int, world_size: int, batch_size: int, where: str) -> None:
    """Each rank's shard of the training rows (``RankBatches``) must hold one batch."""
    if rows // world_size < batch_size:
        raise ArtifactError(
            f"--batch-size {batch_size}: {where} give each of {world_size} rank(s) {rows // world_size} rows, fewer "
            "than one batch"
        )


def seq_len_note(args, task, rank: int = 0) -> str | None:
    """A deviation when ``--seq-len`` is above the training split's longest sequence: it only cuts
    sequences (the recipe's ``model_max_length``), so it changed nothing. Rank 0 also says so on stderr."""
    if args.seq_len is None or args.seq_len <= task.seq_len:
        return None
    note = (
        f"--seq-len {args.seq_len} is above the longest training sequence ({task.seq_len} tokens): it only cuts "
        f"longer sequences, so every step ran at {task.seq_len} tokens"
    )
    if rank == 0:
        import sys

        print(f"dnabert-scaling train: note: {note}", file=sys.stderr)
    return note


def prepare_data(args, rank: int, fallbacks: list[Fallback]):
    """The tokenized task; a synthetic one (written by rank 0 into the run dir) when GUE is absent."""
    import torch.distributed as dist

    from dnabert_scaling.run.workload import data

    folder, why = find_task_folder(args)
    if folder is None:
        like = args.task  # a GUE task name (check_task)
        folder = args.out / layout.SYNTHETIC_DATA
        if rank == 0 and not (folder / "train.csv").is_file():
            data.write_synthetic_task(folder, like=like, seed=args.seed)
        if dist.is_initialized():
            dist.barrier()
        fallbacks.append(Fallback("data", f"synthetic planted-motif task shaped like {like}", why))
    task = data.load_task(folder, model_max_length=args.seq_len, task_name=_task_name(args, folder))
    if task.synthetic and not any(f.what == "data" for f in fallbacks):
        fallbacks.append(
            Fallback("data", f"synthetic planted-motif task shaped like {task.name}", f"{folder} holds synthetic.json")
        )
    return task


class RankBatches:
    """This rank's batches: its shard of a per-epoch permutation (DistributedSampler semantics,
    drop_last). ``batches(step)`` -> (ids, attention mask, labels) on ``device``, copied without
    blocking (from pinned memory on CUDA)."""

    def __init__(self, task, info, batch_size: int, seed: int, device):
        import torch

        self.torch = torch
        self.rank, self.world_size = info.rank, info.world_size
        self.batch_size, self.seed, self.device = batch_size, seed, device
        train = task.splits["train"].with_format("numpy")[:]
        self.ids_all = torch.from_numpy(train["input_ids"]).long()
        self.labels_all = torch.from_numpy(train["labels"]).long()
        if device.type == "cuda":
            self.ids_all, self.labels_all = self.ids_all.pin_memory(), self.labels_all.pin_memory()
        self.per_rank = len(self.labels_all) // info.world_size
        if self.per_rank < batch_size:
            raise ArtifactError(
                f"task {task.name}: {len(self.labels_all)} training rows give each of {info.world_size} ranks "
                f"{self.per_rank} rows, fewer than one batch of {batch_size}",
                task.folder / "train.csv",
            )
        self.batches_per_epoch = self.per_rank // batch_size
        self.epoch_rows: dict[int, Any] = {}

    def __call__(self, step: int):
        epoch, index = divmod(step, self.batches_per_epoch)
        if epoch not in self.epoch_rows:
            gen = self.torch.Generator().manual_seed(self.seed + epoch)
            self.epoch_rows.clear()
            perm = self.torch.randperm(len(self.labels_all), generator=gen)
            self.epoch_rows[epoch] = perm[self.rank :: self.world_size][: self.per_rank]
        rows = self.epoch_rows[epoch][index * self.batch_size : (index + 1) * self.batch_size]
        ids = self.ids_all[rows].to(self.device, non_blocking=True)
        return ids, (ids != PAD_ID), self.labels_all[rows].to(self.device, non_blocking=True)
