"""all_reduce bus bandwidth at the DDP bucket sizes (``dnabert-scaling busbw``).

Run one process per GPU (torchrun / srun), like the training. For each message size it times
``iters`` all_reduce calls (after warm-up) and reports the median time, the algorithm bandwidth
``bytes / time`` and the bus bandwidth ``algbw * 2 (n - 1) / n`` (the nccl-tests convention: the
bytes each rank's link must carry in a ring all_reduce). The analysis uses it to state the NCCL
busy-wait caveat as a number: the AllReduce kernel time a step shows against the time its
gradient bytes need at this bandwidth.

By default the sizes are those of the DDP buckets of the model the sweep trains: DDP's own
bucketing of the parameters (first bucket 1 MiB, then ``--bucket-cap-mb``), computed with the
same helper DDP uses.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.options import nonneg_int, positive_float, positive_float_list, positive_int
from dnabert_scaling.outputs import output_path, write_text_atomic


# --sizes-mb: at least one float32 element, at most 4 GiB (the study's buckets are 1 and 25 MiB; one
# buffer of this size is allocated on every rank)
ELEMENT_BYTES = 4
MAX_MESSAGE_MB = 4096.0


def message_sizes_mb(text: str) -> list[float]:
    """argparse type of ``--sizes-mb``: comma-separated MiB, each from one element to MAX_MESSAGE_MB."""
    sizes = positive_float_list(text)
    low = ELEMENT_BYTES / 2**20
    for x in sizes:
        if not low <= x <= MAX_MESSAGE_MB:
            raise argparse.ArgumentTypeError(
                f"each message size must lie between {low:.10g} MiB (one float32 element, {ELEMENT_BYTES} bytes) and "
                f"{MAX_MESSAGE_MB:g} MiB (4 GiB), not {x:g}"
            )
    return sizes


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=output_path, help="JSON file to write (rank 0)")
    p.add_argument("--model", default="base", help="model whose DDP buckets give the message sizes")
    p.add_argument("--bucket-cap-mb", type=positive_float, default=25.0, help="DDP bucket size whose buckets are measured (MiB)")
    p.add_argument(
        "--sizes-mb",
        type=message_sizes_mb,
        default=None,
        help=f"explicit message sizes in MiB (comma separated) instead, each from one float32 element "
        f"({ELEMENT_BYTES} bytes) to {MAX_MESSAGE_MB:g} MiB",
    )
    p.add_argument("--iters", type=positive_int, default=20, help="timed all_reduce calls per message size")
    p.add_argument("--warmup", type=nonneg_int, default=5, help="untimed calls per message size first")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto", help="cpu: gloo (a smoke test)")
    p.add_argument("--dist-timeout", type=positive_float, default=300.0, help="seconds before a hung collective fails")
    p.add_argument(
        "--rehearse",
        action="store_true",
        help="ranks share the GPUs present (one NCCL host id per rank, sockets over loopback): tests the path, "
        "measures no interconnect",
    )


def sizes_source(model_name: str, bucket_cap_mb: float) -> str:
    return f"DDP buckets of {model_name} (bucket_cap_mb={float(bucket_cap_mb)})"


def ddp_bucket_bytes(model_name: str, bucket_cap_mb: float) -> list[int]:
    """Byte sizes of the gradient buckets DDP builds for ``model_name`` (fp32 gradients)."""
    import torch.distributed as dist

    from dnabert_scaling.run.workload.model import build_model

    model = build_model(model_name, num_labels=2)
    params = [p for p in model.parameters() if p.requires_grad]
    # DDP buckets parameters in reverse order of registration (backward order), first bucket 1 MiB.
    params = list(reversed(params))
    limits = [1024 * 1024, int(bucket_cap_mb * 1024 * 1024)]
    buckets, _ = dist._compute_bucket_assignment_by_size(params, limits, [False] * len(params))
    return [sum(params[i].numel() * params[i].element_size() for i in bucket) for bucket in buckets]


def run(args: argparse.Namespace) -> int:
    import torch.distributed as dist

    from dnabert_scaling.outputs import writable_file

    writable_file(args.out, "--out", into_runs=True)
    info, device, backend = _setup(args)
    if args.sizes_mb:
        sizes = [int(x * 2**20) // ELEMENT_BYTES * ELEMENT_BYTES for x in args.sizes_mb]  # whole elements
        source = "given"
    else:
        sizes = ddp_bucket_bytes(args.model, args.bucket_cap_mb)
        source = sizes_source(args.model, args.bucket_cap_mb)
    rows = _measure(args, sorted(set(sizes)), device, info.world_size)
    if info.rank == 0:
        _write(args, rows, sizes, source, backend, device.type, info.world_size)
    dist.barrier()
    dist.destroy_process_group()
    return 0


def _setup(args: argparse.Namespace):
    """This rank, its device (a GPU by local rank, round-robin; else the CPU) and the process group."""
    import torch

    from dnabert_scaling.run.train.distributed import init_process_group, rank_info

    info = rank_info()
    if info.world_size < 2:
        raise ArtifactError("busbw needs at least 2 ranks (start it under torchrun or srun)")
    cuda = torch.cuda.is_available() and args.device != "cpu"
    if args.device == "cuda" and not cuda:
        raise ArtifactError("--device cuda: no CUDA device is visible")
    if cuda:
        from dnabert_scaling.run.train.placement import nccl_environment

        torch.cuda.set_device(info.local_rank % torch.cuda.device_count())
        os.environ.update(nccl_environment(info.rank, None, args.rehearse))
    backend = init_process_group(info, "cuda" if cuda else "cpu", args.dist_timeout)
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    return info, device, backend


def _measure(args: argparse.Namespace, unique: list[int], device, n: int) -> list[dict]:
    """Per message size: the median all_reduce time of the slowest rank, algbw and busbw."""
    import torch
    import torch.distributed as dist

    cuda = device.type == "cuda"
    rows = []
    for size in unique:
        buf = torch.ones(max(1, size // 4), dtype=torch.float32, device=device)
        for _ in range(args.warmup):
            dist.all_reduce(buf)
        times = []
        for _ in range(args.iters):
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                dist.all_reduce(buf)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                times.append(time.perf_counter() - t0)
        # the slowest rank defines the collective's time
        t = torch.tensor([statistics.median(times)], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        med = float(t.item())
        algbw = buf.numel() * 4 / med
        rows.append({"bytes": buf.numel() * 4, "median_s": med, "algbw_Bps": algbw, "busbw_Bps": algbw * 2 * (n - 1) / n})
    return rows


def _write(args: argparse.Namespace, rows: list[dict], sizes: list[int], source: str, backend, device_type: str, n: int) -> None:
    """Rank 0: the JSON result and one line per size on stderr."""
    from dnabert_scaling import provenance

    by_size = {r["bytes"]: r for r in rows}
    out = {
        "world_size": n,
        "backend": backend,
        "device_type": device_type,
        "rehearsal": bool(args.rehearse),
        "sizes_source": source,
        "bucket_bytes": sizes,
        "gradient_bytes": sum(sizes),
        "sizes": rows,
        # time one step's buckets need when each runs alone at the measured speed
        "step_allreduce_s": sum(by_size[max(1, s // 4) * 4]["median_s"] for s in sizes),
        "busbw_Bps_median": statistics.median(r["busbw_Bps"] for r in rows),
        "provenance": provenance.collect(device_type),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out, json.dumps(out, indent=2) + "\n")
    for r in rows:
        print(
            f"busbw ws={n} {r['bytes'] / 2**20:8.2f} MiB: {r['median_s'] * 1e6:9.1f} us, "
            f"algbw {r['algbw_Bps'] / 1e9:7.2f} GB/s, busbw {r['busbw_Bps'] / 1e9:7.2f} GB/s",
            file=sys.stderr,
        )
