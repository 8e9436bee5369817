#!/usr/bin/env python3
"""Cost of the bucket hook: DDP step time with and without ``dnabert_scaling.run.train.buckets.BucketHook``.

Three DDP replicas of one model (same initial weights, same batch) train side by side in one
process group: ``marked`` with the comm hook that marks each bucket (``ds:bucket:<i>:<bytes>``),
``plain`` with PyTorch's ``allreduce_hook`` alone (what the marks wrap), ``builtin`` with DDP's
own C++ all-reduce; steps rotate over them so that drifts of the machine hit all alike. Printed:
the median step time of each, the median of the ratios to ``builtin`` within each rotation, and
the host cost of one empty bucket mark. The phase marks are ``record_function`` ranges with no profiler running,
as in the untraced runs. After the last round the two replicas' parameters are compared: the
hook must not change the arithmetic (bitwise equal at world size 1 and powers of two).

Runs on the CPU (gloo) or one GPU (NCCL); under torchrun it uses every rank.

    make bench-hook
    scripts/bench_bucket_hook.py --model base --bucket-cap-mb 25 --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from types import SimpleNamespace


def replica(torch, DDP, args, device, hook: str):
    """hook: "marked" (BucketHook), "plain" (PyTorch's allreduce_hook alone) or "builtin" (none)."""
    from dnabert_scaling.run.train.buckets import BucketHook
    from dnabert_scaling.run.workload.model import build_model
    from dnabert_scaling.phases import PhaseMarker
    from dnabert_scaling.run.train.step import TrainStep, build_optimizer, linear_schedule

    torch.manual_seed(0)
    model = build_model(args.model, num_labels=2).to(device)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb, device_ids=[device.index] if device.type == "cuda" else None)
    marker = PhaseMarker("torch", cuda=device.type == "cuda")
    recorder = None
    if hook == "marked":
        recorder = BucketHook(marker).register(ddp)
    elif hook == "plain":
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

        ddp.register_comm_hook(None, allreduce_hook)
    opt = build_optimizer(model, SimpleNamespace(lr=3e-5, weight_decay=0.01, optimizer_impl="default"), device.type)
    step = TrainStep(
        ddp, model, opt, linear_schedule(opt, 50, 10**6), torch.autocast(device.type, enabled=False), None, 1.0, marker
    )
    return step, model, recorder


def one_step(torch, step, batch, device) -> float:
    """Time one step; the RNG is reseeded by the replica's own step count, so both replicas draw
    the same dropout masks and can be compared bitwise at the end."""
    step.count = getattr(step, "count", 0) + 1
    torch.manual_seed(step.count)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    step(*batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def mark_cost(marker, n: int = 20000) -> float:
    """Median host time of one empty ``ds:bucket`` range (what the hook adds per bucket besides
    the call of PyTorch's own allreduce_hook), over batches of 100."""
    per = []
    for _ in range(n // 100):
        t0 = time.perf_counter()
        for i in range(100):
            with marker.bucket(i, 4096):
                pass
        per.append((time.perf_counter() - t0) / 100)
    return statistics.median(per)


def main(argv=None) -> int:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from dnabert_scaling.run.train.distributed import init_process_group, rank_info

    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base" if cuda else "tiny")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=70)
    p.add_argument(
        "--bucket-cap-mb",
        type=float,
        default=25.0 if cuda else 0.25,
        help="CPU default 0.25: the tiny model then has about as many buckets as base at 25 MB",
    )
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=20 if cuda else 10, help="step pairs per round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    info = rank_info()
    device = torch.device("cuda", info.local_rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    init_process_group(info, device.type, 300.0)
    replicas = {name: replica(torch, DDP, args, device, name) for name in ("marked", "plain", "builtin")}
    recorder = replicas["marked"][2]
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 4096, (args.batch, args.seq), generator=gen)
    ids[:, 0], ids[:, -1] = 1, 2
    ids = ids.to(device)
    batch = (ids, ids != 3, torch.randint(0, 2, (args.batch,), generator=gen).to(device))
    for step, _, _ in replicas.values():
        for _ in range(args.warmup):
            one_step(torch, step, batch, device)
    # Steps rotate over the replicas (marked, plain, builtin, then the next rotation): each triple
    # ran under the same load, so the ratios within a triple are robust on a shared machine.
    names = list(replicas)
    times = {k: [] for k in names}
    ratios = {"marked": [], "plain": []}
    for i in range(args.rounds * args.steps):
        triple = {}
        for name in names[i % 3 :] + names[: i % 3]:
            triple[name] = one_step(torch, replicas[name][0], batch, device)
            times[name].append(triple[name])
        for k in ratios:
            ratios[k].append(triple[k] / triple["builtin"])
    ref = list(replicas["builtin"][1].parameters())
    same = all(all(torch.equal(a, b) for a, b in zip(replicas[k][1].parameters(), ref)) for k in ("marked", "plain"))
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = {k: statistics.median(v) for k, v in ratios.items()}
    spread = {k: statistics.quantiles(v, n=10) for k, v in ratios.items()}
    buckets = recorder.summary(args.bucket_cap_mb)
    mark = mark_cost(recorder.marker)
    where = torch.cuda.get_device_name(device) if cuda else f"CPU ({torch.get_num_threads()} threads, gloo)"
    if info.rank == 0:
        print(
            f"# bench-hook: {args.model} on {where}, world size {info.world_size}, batch {args.batch}x{args.seq}, "
            f"{buckets['buckets']} buckets ({buckets['gradient_bytes'] / 2**20:.1f} MiB), {len(times['builtin'])} rotations of 3 steps"
        )
        print(f"{'':>10} {'median step ms':>15} {'p10 ms':>9} {'p90 ms':>9}   median of ratios to builtin in the same rotation")
        for k in ("builtin", "plain", "marked"):
            d = statistics.quantiles(times[k], n=10)
            r = f"{ratio[k]:.4f} (p10 {spread[k][0]:.4f}, p90 {spread[k][-1]:.4f})" if k in ratio else "1"
            print(f"{k:>10} {med[k] * 1e3:>15.3f} {d[0] * 1e3:>9.3f} {d[-1] * 1e3:>9.3f}   {r}")
        print(
            "  builtin: DDP's C++ all-reduce; plain: PyTorch's allreduce_hook registered; marked: BucketHook "
            "(allreduce_hook inside a ds:bucket range)"
        )
        print(
            f"one ds:bucket mark costs {mark * 1e6:.2f} us of host time: {buckets['buckets']} buckets = "
            f"{100 * mark * buckets['buckets'] / med['builtin']:.3f}% of the median step"
        )
        print(f"parameters of all three bitwise identical after {args.warmup + len(times['builtin'])} steps: {same}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(
                    {
                        "model": args.model,
                        "device": where,
                        "world_size": info.world_size,
                        "buckets": buckets,
                        "step_s": times,
                        "median_s": med,
                        "ratio_to_builtin_median": ratio,
                        "ratio_p10_p90": {k: [v[0], v[-1]] for k, v in spread.items()},
                        "mark_s": mark,
                        "identical_parameters": same,
                    },
                    f,
                    indent=2,
                )
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
