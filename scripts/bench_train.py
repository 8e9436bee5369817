#!/usr/bin/env python3
"""Training throughput of the DNABERT-2 port, sdpa against eager attention, side by side.

Runs the training loop's own step (``dnabert_scaling.run.train.step.TrainStep``: forward, backward,
grad clipping, AdamW, LR schedule) on random tokens of a fixed shape, one GPU (or the CPU), no
DDP. Repeats alternate between the attention implementations so that drifts of the machine hit
both alike; each figure is the median over repeats of the median step time of a repeat.

On CUDA it also measures the bf16 matrix peak (an 8192^3 bf16 matmul) and reports the model FLOP
utilisation, MFU = 6 x parameters x tokens/s / peak.

    make bench-train                      # defaults for the machine at hand
    scripts/bench_train.py --model base --configs 128x128 --repeats 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from types import SimpleNamespace


def parse_configs(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        b, s = item.lower().split("x")
        out.append((int(b), int(s)))
    return out


def measure_peak_bf16(torch, n: int = 8192, reps: int = 10) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return 2 * n**3 / statistics.median(times)


class Bench:
    """A model, its optimizer and a fixed random batch; ``run()`` times ``steps`` train steps."""

    def __init__(self, torch, model_name, attention, batch, seq, device, precision, optimizer_impl):
        from dnabert_scaling.run.workload.model import build_model, count_parameters
        from dnabert_scaling.phases import PhaseMarker
        from dnabert_scaling.run.train.step import TrainStep, build_optimizer, linear_schedule

        self.torch, self.device = torch, device
        torch.manual_seed(0)
        model = build_model(model_name, num_labels=2, attention=attention).to(device)
        self.params = count_parameters(model)
        args = SimpleNamespace(lr=3e-5, weight_decay=0.01, optimizer_impl=optimizer_impl)
        opt = build_optimizer(model, args, device.type)
        sched = linear_schedule(opt, 50, 10**6)
        dtype = {"bf16": torch.bfloat16, "fp32": None}[precision]
        autocast = torch.autocast(device_type=device.type, dtype=dtype, enabled=dtype is not None)
        self.step = TrainStep(model, model, opt, sched, autocast, None, 1.0, PhaseMarker("torch", cuda=device.type == "cuda"))
        gen = torch.Generator().manual_seed(1)
        ids = torch.randint(5, 4096, (batch, seq), generator=gen)
        ids[:, 0], ids[:, -1] = 1, 2
        self.ids = ids.to(device)
        self.mask = self.ids != 3
        self.labels = torch.randint(0, 2, (batch,), generator=gen).to(device)

    def run(self, warmup: int, steps: int) -> float:
        torch = self.torch
        for _ in range(warmup):
            self.step(self.ids, self.mask, self.labels, measured=False)
        if self.device.type == "cuda":
            events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
            events[0].record()
            for i in range(steps):
                self.step(self.ids, self.mask, self.labels)
                events[i + 1].record()
            events[-1].synchronize()
            times = [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(steps)]
        else:
            times = []
            for _ in range(steps):
                t0 = time.perf_counter()
                self.step(self.ids, self.mask, self.labels)
                times.append(time.perf_counter() - t0)
        return statistics.median(times)


def main(argv=None) -> int:
    import torch

    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base" if cuda else "tiny")
    p.add_argument(
        "--configs", default="8x70,32x70,128x128" if cuda else "8x70,32x70", help="per-GPU batch x tokens, comma separated"
    )
    p.add_argument(
        "--attention",
        default="sdpa,eager,unpad",
        help="sdpa (the port), eager (same math spelled out), unpad (the released code's PyTorch path)",
    )
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=20 if cuda else 10)
    p.add_argument("--warmup", type=int, default=5 if cuda else 2)
    p.add_argument("--precision", choices=("bf16", "fp32"), default="bf16" if cuda else "fp32")
    p.add_argument("--optimizer-impl", choices=("default", "foreach", "fused"), default="fused" if cuda else "default")
    p.add_argument("--json", default=None, help="also write the figures as JSON here")
    args = p.parse_args(argv)

    device = torch.device("cuda" if cuda else "cpu")
    configs = parse_configs(args.configs)
    attentions = args.attention.split(",")
    peak = measure_peak_bf16(torch) if cuda else None
    name = torch.cuda.get_device_name(0) if cuda else f"CPU ({torch.get_num_threads()} threads)"
    print(
        f"# bench-train: {args.model} on {name}, {args.precision}, optimizer {args.optimizer_impl}, "
        f"{args.repeats} repeats x {args.steps} steps (after {args.warmup} warm-up)"
    )
    if peak:
        print(f"# measured bf16 matmul peak (8192^3): {peak / 1e12:.0f} TFLOP/s")
    results = []
    for batch, seq in configs:
        benches = {a: Bench(torch, args.model, a, batch, seq, device, args.precision, args.optimizer_impl) for a in attentions}
        per = {a: [] for a in attentions}
        for r in range(args.repeats):
            order = attentions if r % 2 == 0 else attentions[::-1]
            for a in order:
                per[a].append(benches[a].run(args.warmup, args.steps))
        for a in attentions:
            med = statistics.median(per[a])
            params = benches[a].params
            tokens_s = batch * seq / med
            flops = 6 * params * tokens_s
            results.append(
                {
                    "model": args.model,
                    "batch": batch,
                    "seq": seq,
                    "attention": a,
                    "params": params,
                    "step_ms_median": med * 1e3,
                    "step_ms_repeats": [x * 1e3 for x in per[a]],
                    "samples_per_s": batch / med,
                    "tokens_per_s": tokens_s,
                    "model_tflops": flops / 1e12,
                    "mfu": flops / peak if peak else None,
                }
            )
        del benches
        if cuda:
            torch.cuda.empty_cache()
    print(f"{'batch x seq':>12} {'attention':>9} {'step ms':>9} {'range':>15} {'samples/s':>10} {'TFLOP/s':>8} {'MFU':>6}")
    for r in results:
        rng = f"{min(r['step_ms_repeats']):.2f}-{max(r['step_ms_repeats']):.2f}"
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        print(
            f"{r['batch']:>5} x {r['seq']:<4} {r['attention']:>9} {r['step_ms_median']:>9.2f} {rng:>15} "
            f"{r['samples_per_s']:>10.1f} {r['model_tflops']:>8.1f} {mfu:>6}"
        )
    for other in ("eager", "unpad"):
        if "sdpa" not in attentions or other not in attentions:
            continue
        for batch, seq in configs:
            s = next(r for r in results if (r["batch"], r["seq"], r["attention"]) == (batch, seq, "sdpa"))
            e = next(r for r in results if (r["batch"], r["seq"], r["attention"]) == (batch, seq, other))
            print(f"# {batch}x{seq}: sdpa / {other} step throughput = {e['step_ms_median'] / s['step_ms_median']:.2f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": name, "peak_bf16_flops": peak, "args": vars(args), "results": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
