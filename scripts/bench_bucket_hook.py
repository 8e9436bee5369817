#!/usr/bin/env python3
"""Cost of the bucket hook: DDP step time with and without ``dnabert_scaling.buckets.BucketHook``.

Two DDP replicas of one model (same initial weights, same batch) train side by side in one
process group, one with the comm hook that marks each bucket (``ds:bucket:<i>:<bytes>``), one with
DDP's built-in all-reduce; blocks of steps alternate between them so that drifts of the machine
hit both alike. Each figure is the median over rounds of a round's median step time; the ratio is
with-hook over without. The phase marks are ``record_function`` ranges with no profiler running,
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


def replica(torch, DDP, args, device, hook: bool):
    from dnabert_scaling.buckets import BucketHook
    from dnabert_scaling.model import build_model
    from dnabert_scaling.phases import PhaseMarker
    from dnabert_scaling.train import TrainStep, build_optimizer, linear_schedule

    torch.manual_seed(0)
    model = build_model(args.model, num_labels=2).to(device)
    ddp = DDP(model, bucket_cap_mb=args.bucket_cap_mb, device_ids=[device.index] if device.type == "cuda" else None)
    marker = PhaseMarker("torch", cuda=device.type == "cuda")
    recorder = BucketHook(marker).register(ddp) if hook else None
    opt = build_optimizer(model, SimpleNamespace(lr=3e-5, weight_decay=0.01, optimizer_impl="default"), device.type)
    step = TrainStep(ddp, model, opt, linear_schedule(opt, 50, 10**6), torch.autocast(device.type, enabled=False),
                     None, 1.0, marker)
    return step, model, recorder


def timed(torch, step, batch, device, steps: int) -> float:
    """Median time of ``steps`` steps; each step reseeds the RNG by the replica's own step count,
    so both replicas draw the same dropout masks and can be compared bitwise at the end."""
    times = []
    for _ in range(steps):
        step.count = getattr(step, "count", 0) + 1
        torch.manual_seed(step.count)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(*batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from dnabert_scaling.distributed import init_process_group, rank_info

    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base" if cuda else "tiny")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=70)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0 if cuda else 0.25,
                   help="CPU default 0.25: the tiny model then has about as many buckets as base at 25 MB")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=20 if cuda else 10, help="steps per replica per round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    info = rank_info()
    device = torch.device("cuda", info.local_rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    init_process_group(info, device.type, 300.0)
    with_hook, model_a, recorder = replica(torch, DDP, args, device, hook=True)
    without, model_b, _ = replica(torch, DDP, args, device, hook=False)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 4096, (args.batch, args.seq), generator=gen)
    ids[:, 0], ids[:, -1] = 1, 2
    ids = ids.to(device)
    batch = (ids, ids != 3, torch.randint(0, 2, (args.batch,), generator=gen).to(device))
    for s in (with_hook, without):
        timed(torch, s, batch, device, args.warmup)
    rounds = {"hook": [], "builtin": []}
    for r in range(args.rounds):
        order = (("hook", with_hook), ("builtin", without)) if r % 2 == 0 else (("builtin", without), ("hook", with_hook))
        for name, s in order:
            rounds[name].append(timed(torch, s, batch, device, args.steps))
    same = all(torch.equal(a, b) for a, b in zip(model_a.parameters(), model_b.parameters()))
    med = {k: statistics.median(v) for k, v in rounds.items()}
    buckets = recorder.summary(args.bucket_cap_mb)
    where = torch.cuda.get_device_name(device) if cuda else f"CPU ({torch.get_num_threads()} threads, gloo)"
    if info.rank == 0:
        print(f"# bench-hook: {args.model} on {where}, world size {info.world_size}, batch {args.batch}x{args.seq}, "
              f"{buckets['buckets']} buckets ({buckets['gradient_bytes'] / 2**20:.1f} MiB), "
              f"{args.rounds} rounds x {args.steps} steps")
        print(f"{'':>10} {'median step ms':>15} {'rounds (ms)':>40}")
        for k in ("builtin", "hook"):
            print(f"{k:>10} {med[k] * 1e3:>15.3f}   " + " ".join(f"{x * 1e3:.2f}" for x in rounds[k]))
        print(f"hook / builtin = {med['hook'] / med['builtin']:.4f}   "
              f"(per bucket: {(med['hook'] - med['builtin']) / max(1, buckets['buckets']) * 1e6:+.1f} us)")
        print(f"parameters bitwise identical after {args.warmup + args.rounds * args.steps} steps: {same}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"model": args.model, "device": where, "world_size": info.world_size, "buckets": buckets,
                           "rounds_s": rounds, "median_s": med, "ratio": med["hook"] / med["builtin"],
                           "identical_parameters": same}, f, indent=2)
    dist.destroy_process_group()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
