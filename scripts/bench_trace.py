#!/usr/bin/env python3
"""Tracing dilation: traced / untraced median step time, per tracer mode (needs CUDA).

One process, one model per shape. Windows of ``--steps`` training steps alternate between
untraced, the default tracer mode (CUDA activity + user-scope ranges) and the mode with host
operators (``--trace-cpu-ops``), each window preceded by its own warm-up steps, for
``--repeats`` rounds. Alternating inside one process removes the process-to-process variation
(seen at up to 2x between two identical runs on the lent H200) from the ratio. The dilation
of a mode is the median over rounds of (traced window median step / untraced window median step
of the same round).

Score-P (``--scorep-modes``, needs Score-P with CUDA): one process per Score-P mode, started
under ``python -m scorep`` with that mode's SCOREP_CUDA_ENABLE (and filter). Score-P cannot be
switched off inside a process, so its windows alternate between recording off
(``scorep.user.disable_recording()``: Score-P loaded, CUPTI subscribed, nothing written) and on;
``dilation_median`` is on / off, and ``dilation_vs_untraced`` compares with the untraced windows
of the torch process of the same call (another process: read it with the caveat above). Per mode
the trace's size and its launches/kernels (``scripts/scorep_count.py``) are reported too.
  scorep:driver              driver,kernel,memcpy,references (the artifact's default)
  scorep:nodriver            kernel,memcpy (no launch records: completeness cannot be measured)
  scorep:driver-launch-only  as scorep:driver, with resources/scorep/cuda-launch-only.filter
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_train import Bench, parse_configs  # noqa: E402

MODES = {"none": None, "torch:cuda": False, "torch:cuda+cpu-ops": True}
SCOREP_MODES = {
    "scorep:driver": ("driver,kernel,memcpy,references", None),
    "scorep:nodriver": ("kernel,memcpy", None),
    "scorep:driver-launch-only": ("driver,kernel,memcpy,references", "cuda-launch-only.filter"),
}


def window(bench, torch, cpu_ops, warmup, steps, trace_dir, recording=None) -> float:
    """Median step (s) of one window. ``cpu_ops`` None: no torch tracer; ``recording``: under
    Score-P, record (True) or not (False) during the window."""
    from dnabert_scaling.run.tracing.torch_profiler import TorchProfilerTracer

    if recording is not None:
        import scorep.user

        (scorep.user.enable_recording if recording else scorep.user.disable_recording)()
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
    p.add_argument(
        "--optimizer-impl",
        default="default",
        choices=("default", "foreach", "fused"),
        help="default: as the training command (torch AdamW, foreach)",
    )
    p.add_argument("--json", default=None)
    p.add_argument(
        "--scorep-modes",
        default="",
        help=f"comma-separated Score-P modes to measure too ({', '.join(SCOREP_MODES)}); needs Score-P",
    )
    p.add_argument("--no-torch", action="store_true", help="only the Score-P modes")
    p.add_argument("--scorep-child", default=None, help=argparse.SUPPRESS)  # inside python -m scorep
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench-trace: needs a CUDA GPU (tracing dilation is a GPU figure); nothing measured", file=sys.stderr)
        return 2
    if args.scorep_child:
        return scorep_child(args, torch)
    scorep_rows = [row for mode in filter(None, args.scorep_modes.split(",")) for row in scorep_mode(mode, args)]
    if args.no_torch:
        return report(scorep_rows, args, torch)
    device = torch.device("cuda")
    print(
        f"# bench-trace: {args.model} on {torch.cuda.get_device_name(0)}, bf16, "
        f"{args.repeats} rounds x {args.steps} steps per window"
    )
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
                rows.append(
                    {
                        "batch": batch,
                        "seq": seq,
                        "mode": mode,
                        "step_ms_median": statistics.median(times[mode]) * 1e3,
                        "step_ms_rounds": [t * 1e3 for t in times[mode]],
                        "dilation_median": statistics.median(ratios),
                        "dilation_rounds": ratios,
                    }
                )
            del bench
            torch.cuda.empty_cache()
    untraced = {(r["batch"], r["seq"]): r["step_ms_median"] for r in rows if r["mode"] == "none"}
    for r in scorep_rows:
        base = untraced.get((r["batch"], r["seq"]))
        r["dilation_vs_untraced"] = r["step_ms_median"] / base if base and r["mode"] != "scorep:off" else None
    return report(rows + scorep_rows, args, torch)


def report(rows, args, torch) -> int:
    print(f"{'batch x seq':>12} {'mode':>26} {'step ms':>9} {'dilation':>9} {'per round':>24}")
    for r in rows:
        per = " ".join(f"{x:.2f}" for x in r["dilation_rounds"])
        extra = ""
        if r.get("dilation_vs_untraced"):
            extra = f"  vs untraced process {r['dilation_vs_untraced']:.3f}"
        if r.get("trace_bytes") is not None:
            extra += f"  trace {r['trace_bytes'] / 1e6:.1f} MB, {r.get('launches')} launches, {r.get('kernels')} kernels"
        print(
            f"{r['batch']:>5} x {r['seq']:<4} {r['mode']:>26} {r['step_ms_median']:>9.2f} "
            f"{r['dilation_median']:>9.3f} {per:>24}{extra}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}, indent=2))
    return 0


def scorep_mode(mode: str, args) -> list[dict]:
    """Run this script under ``python -m scorep`` for one Score-P mode; its rows plus trace figures."""
    from dnabert_scaling.run.tracing.scorep import RESOURCES, scorep_available, scorep_environment

    if mode not in SCOREP_MODES:
        raise SystemExit(f"bench-trace: --scorep-modes: unknown mode {mode!r} (known: {', '.join(SCOREP_MODES)})")
    ok, reason = scorep_available()
    if not ok:
        raise SystemExit(f"bench-trace: --scorep-modes needs Score-P: {reason}")
    cuda_enable, filt = SCOREP_MODES[mode]
    tmp = Path(tempfile.mkdtemp(prefix="bench-trace-scorep-"))
    env = {**os.environ, **scorep_environment(0, tmp, cuda_enable=cuda_enable)}
    Path(env["SCOREP_EXPERIMENT_DIRECTORY"]).parent.mkdir(parents=True)  # Score-P creates only the last level
    if filt:
        env["SCOREP_FILTERING_FILE"] = str(RESOURCES / filt)
    child_json = tmp / "rows.json"
    argv = [
        sys.executable,
        "-m",
        "scorep",
        "--cuda",
        "--mpp=none",
        "--thread=pthread",
        "--nocompiler",
        "--noinstrumenter",
        str(Path(__file__).resolve()),
        "--scorep-child",
        mode,
        "--json",
        str(child_json),
        "--model",
        args.model,
        "--configs",
        args.configs,
        "--repeats",
        str(args.repeats),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--optimizer-impl",
        args.optimizer_impl,
    ]
    print(
        f"# bench-trace: {mode} under Score-P (SCOREP_CUDA_ENABLE={cuda_enable}{', filter ' + filt if filt else ''})", flush=True
    )
    proc = subprocess.run(argv, env=env)
    if proc.returncode != 0 or not child_json.is_file():
        raise SystemExit(f"bench-trace: the Score-P process for {mode} failed (exit status {proc.returncode})")
    rows = json.loads(child_json.read_text())["rows"]
    exp = Path(env["SCOREP_EXPERIMENT_DIRECTORY"])
    size = sum(f.stat().st_size for f in exp.rglob("*") if f.is_file())
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scorep_count import count

    c = count(exp, step_region="ds:step")
    for r in rows:
        r.update(
            trace_bytes=size,
            launches=c["launches"],
            kernels=c["kernels"],
            cuda_enable=cuda_enable,
            filter=filt,
            top_host_regions=c.get("top_host_regions"),
        )
    return rows


def scorep_child(args, torch) -> int:
    """Inside ``python -m scorep``: windows with Score-P recording off and on, alternating."""
    from dnabert_scaling.run.tracing.scorep import under_scorep

    if not under_scorep():
        raise SystemExit("bench-trace: --scorep-child runs only under python -m scorep")
    device = torch.device("cuda")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch, seq in parse_configs(args.configs):
            bench = Bench(torch, args.model, "sdpa", batch, seq, device, "bf16", args.optimizer_impl)
            bench.run(5, 5)
            times = {"scorep:off": [], args.scorep_child: []}
            for _ in range(args.repeats):
                times["scorep:off"].append(window(bench, torch, None, args.warmup, args.steps, tmp, recording=False))
                times[args.scorep_child].append(window(bench, torch, None, args.warmup, args.steps, tmp, recording=True))
            base = times["scorep:off"]
            for mode, t in times.items():
                ratios = [a / b for a, b in zip(t, base)]
                rows.append(
                    {
                        "batch": batch,
                        "seq": seq,
                        "mode": mode,
                        "step_ms_median": statistics.median(t) * 1e3,
                        "step_ms_rounds": [x * 1e3 for x in t],
                        "dilation_median": statistics.median(ratios),
                        "dilation_rounds": ratios,
                    }
                )
            del bench
            torch.cuda.empty_cache()
    import scorep.user

    scorep.user.enable_recording()
    Path(args.json).write_text(json.dumps({"rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
