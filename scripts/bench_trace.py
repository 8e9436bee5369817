#!/usr/bin/env python3
"""Tracing dilation: traced / untraced median step time, per torch-tracer mode (needs CUDA).

One process, one model per shape. Windows of ``--steps`` training steps alternate between
untraced, the default tracer mode (CUDA activity + user-scope ranges) and the mode with host
operators (``--trace-cpu-ops``), each window preceded by its own warm-up steps, for
``--repeats`` rounds. Alternating inside one process removes the process-to-process variation
(seen at up to 2x between two identical runs on the lent H200) from the ratio. The dilation
of a mode is the median over rounds of (traced window median step / untraced window median step
of the same round).

Score-P's dilation cannot be measured here (no Score-P on the development machines).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_train import Bench, parse_configs  # noqa: E402

MODES = {"none": None, "torch:cuda": False, "torch:cuda+cpu-ops": True}


def window(bench, torch, cpu_ops, warmup, steps, trace_dir) -> float:
    from dnabert_scaling.tracing.torch_profiler import TorchProfilerTracer

    tracer = None
    if cpu_ops is not None:
        tracer = TorchProfilerTracer(Path(trace_dir) / "t.json.gz", warmup, steps, "cuda", cpu_ops=cpu_ops)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    for i in range(warmup + steps):
        if tracer:
            tracer.step_begin(i)
        if i == warmup:
            events[0].record()
        bench.step(bench.ids, bench.mask, bench.labels, measured=i >= warmup)
        if i >= warmup:
            events[i - warmup + 1].record()
        if tracer:
            tracer.step_end(i)
    events[-1].synchronize()
    return statistics.median(events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(steps))


def main(argv=None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base")
    p.add_argument("--configs", default="8x70,32x70,128x128")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--optimizer-impl", default="default", choices=("default", "foreach", "fused"),
                   help="default: as the training command (torch AdamW, foreach)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench-trace: needs a CUDA GPU (tracing dilation is a GPU figure); nothing measured", file=sys.stderr)
        return 2
    device = torch.device("cuda")
    print(f"# bench-trace: {args.model} on {torch.cuda.get_device_name(0)}, bf16, "
          f"{args.repeats} rounds x {args.steps} steps per window")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch, seq in parse_configs(args.configs):
            bench = Bench(torch, args.model, "sdpa", batch, seq, device, "bf16", args.optimizer_impl)
            bench.run(5, 5)  # warm the allocator and kernels once
            times = {m: [] for m in MODES}
            for _ in range(args.repeats):
                for mode, cpu_ops in MODES.items():
                    times[mode].append(window(bench, torch, cpu_ops, args.warmup, args.steps, tmp))
            base = times["none"]
            for mode in MODES:
                ratios = [t / b for t, b in zip(times[mode], base)]
                rows.append({"batch": batch, "seq": seq, "mode": mode,
                             "step_ms_median": statistics.median(times[mode]) * 1e3,
                             "step_ms_rounds": [t * 1e3 for t in times[mode]],
                             "dilation_median": statistics.median(ratios), "dilation_rounds": ratios})
            del bench
            torch.cuda.empty_cache()
    print(f"{'batch x seq':>12} {'mode':>20} {'step ms':>9} {'dilation':>9} {'per round':>24}")
    for r in rows:
        per = " ".join(f"{x:.2f}" for x in r["dilation_rounds"])
        print(f"{r['batch']:>5} x {r['seq']:<4} {r['mode']:>20} {r['step_ms_median']:>9.2f} {r['dilation_median']:>9.3f} {per:>24}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
