#!/usr/bin/env python3
"""Tracing cost: traced / untraced step time per tracer mode, in many short processes (needs CUDA).

Score-P cannot be unloaded inside a process, and its recording-off windows still pay every CUPTI
callback, so the modes cannot alternate inside one process. Identical processes differ by up to
2x on the lent H200, so single runs say little. The figure is therefore taken over rounds: each
round starts one short process per mode (the order rotated from round to round), each process
builds the model for every configuration and times ``--warmup`` + ``--steps`` training steps of
it (the median of the measured steps, CUDA events). A mode's cost at a configuration is, per
round, its median step over the untraced process's median step of the same round; the JSON gives
the median, min and max of these ratios over the rounds.

Modes:
  untraced          no tracer
  torch             torch.profiler, CUDA activity only (the artifact's torch default)
  scorep-all        Score-P, SCOREP_CUDA_ENABLE=driver,kernel,memcpy,references, every driver
                    API call recorded (SCOREP_CUDA_DRIVER_CALLBACKS=all, Score-P as released)
  scorep-launch     the same with SCOREP_CUDA_DRIVER_CALLBACKS=launch (the project's patch
                    8.4-cupti-launch-callbacks.patch): only launch, copy and memset calls
  scorep-nodriver   SCOREP_CUDA_ENABLE=kernel,memcpy: no host records (completeness unknowable)

For the Score-P modes: the experiment's bytes per executed step (every step of the process,
warm-up included, model set-up spread over them) and the share of kernel launches whose kernel
is in the trace (``scripts/scorep_count.py``; null without launch records).

Per call (the processes of the second round, after their configurations; ``--no-micro`` skips
it): the host time of one driver query (``cuCtxGetDevice`` through ctypes) and of one small kernel
launch from PyTorch (``x.add_(1)`` on one element), so that the ratios can be read as callbacks x
cost per callback. Trace figures are taken from the processes without these loops.

    scripts/bench_trace.py [--rounds 5] [--configs 8x70,32x70,128x128] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SCOREP_ENABLE = "driver,kernel,memcpy,references"
MODES = {  # mode: (SCOREP_CUDA_ENABLE, SCOREP_CUDA_DRIVER_CALLBACKS); None: not under Score-P
    "untraced": None,
    "torch": None,
    "scorep-all": (SCOREP_ENABLE, "all"),
    "scorep-launch": (SCOREP_ENABLE, "launch"),
    "scorep-nodriver": ("kernel,memcpy", "all"),
}
MICRO_QUERIES, MICRO_LAUNCHES = 5000, 1000


def parse_configs(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        b, _, s = item.strip().lower().partition("x")
        out.append((int(b), int(s)))
    return out


# ---- inside one measured process ---------------------------------------------------------------


def child_configs(args) -> dict:
    """Time warm-up + measured steps per configuration; torch mode traces each configuration."""
    import torch
    from bench_train import Bench

    from dnabert_scaling.run.tracing.torch_profiler import TorchProfilerTracer

    device = torch.device("cuda")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for batch, seq in parse_configs(args.configs):
            bench = Bench(torch, args.model, "sdpa", batch, seq, device, "bf16", "default")
            tracer = None
            if args.child == "torch":
                tracer = TorchProfilerTracer(Path(tmp) / f"{batch}x{seq}.json.gz", args.warmup, args.steps, "cuda", cpu_ops=False)
            events = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps + 1)]
            for i in range(args.warmup + args.steps):
                if tracer:
                    tracer.step_begin(i)
                if i == args.warmup:
                    events[0].record()
                bench.step(bench.ids, bench.mask, bench.labels, measured=i >= args.warmup)
                if i >= args.warmup:
                    events[i - args.warmup + 1].record()
                if tracer:
                    tracer.step_end(i)
            events[-1].synchronize()
            steps = [events[i].elapsed_time(events[i + 1]) for i in range(args.steps)]
            out[f"{batch}x{seq}"] = {"step_ms_median": statistics.median(steps), "step_ms": steps}
            del bench, tracer
            torch.cuda.empty_cache()
    return out


def child_micro(args) -> dict:
    """Host ns per driver query and per small PyTorch kernel launch, best of 3 batches."""
    import ctypes

    import torch

    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    prof = None
    if args.child == "torch":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        prof.__enter__()
    cuda = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    query, launch = [], []
    for _ in range(3):  # small counts: under Score-P these calls are recorded too
        t0 = time.perf_counter_ns()
        for _ in range(MICRO_QUERIES):
            cuda.cuCtxGetDevice(ctypes.byref(dev))
        query.append((time.perf_counter_ns() - t0) / MICRO_QUERIES)
        t0 = time.perf_counter_ns()
        for _ in range(MICRO_LAUNCHES):
            x.add_(1)
        launch.append((time.perf_counter_ns() - t0) / MICRO_LAUNCHES)
        torch.cuda.synchronize()
    if prof is not None:
        prof.__exit__(None, None, None)
    return {"cuCtxGetDevice_ns": min(query), "launch_ns": min(launch), "cuCtxGetDevice_ns_all": query, "launch_ns_all": launch}


def child(args) -> int:
    if MODES.get(args.child) is not None:
        from dnabert_scaling.run.tracing.scorep import under_scorep

        if not under_scorep():
            raise SystemExit(f"bench-trace: mode {args.child} must run under python -m scorep")
    result = child_configs(args)
    if args.micro:  # after the configurations: the per-call figures of this mode
        result["micro"] = child_micro(args)
    Path(args.json).write_text(json.dumps(result))
    return 0


# ---- the parent: rounds of processes -----------------------------------------------------------


def child_argv(mode: str, args, out_json: Path, micro: bool) -> list[str]:
    argv = [sys.executable]
    if MODES[mode] is not None:
        argv += ["-m", "scorep", "--cuda", "--mpp=none", "--thread=pthread", "--nocompiler", "--noinstrumenter"]
    argv += [str(Path(__file__).resolve()), "--child", mode, "--json", str(out_json), "--model", args.model]
    argv += ["--configs", args.configs, "--warmup", str(args.warmup), "--steps", str(args.steps)]
    return argv + (["--micro"] if micro else [])


def run_process(mode: str, args, work: Path, tag: str, micro: bool = False) -> dict:
    """One measured process; its timings plus, under Score-P, its trace figures."""
    from dnabert_scaling.run.tracing.scorep import scorep_environment

    out_json = work / f"{tag}.json"
    env = dict(os.environ)
    exp = None
    if MODES[mode] is not None:
        cuda_enable, callbacks = MODES[mode]
        env.update(scorep_environment(0, work / tag, cuda_enable=cuda_enable, base_env={}))
        env["SCOREP_CUDA_DRIVER_CALLBACKS"] = callbacks
        exp = Path(env["SCOREP_EXPERIMENT_DIRECTORY"])
        exp.parent.mkdir(parents=True)
    t0 = time.monotonic()
    proc = subprocess.run(child_argv(mode, args, out_json, micro), env=env, capture_output=True, text=True)
    row = {"mode": mode, "tag": tag, "micro": micro, "wall_s": round(time.monotonic() - t0, 2), "exit_status": proc.returncode}
    if proc.returncode != 0 or not out_json.is_file():
        row["error"] = (proc.stderr or proc.stdout)[-2000:]
        return row
    row["result"] = json.loads(out_json.read_text())
    if exp is not None:
        row.update(trace_figures(exp, args))
    return row


def trace_figures(exp: Path, args) -> dict:
    from scorep_count import count

    size = sum(f.stat().st_size for f in exp.rglob("*") if f.is_file())
    executed = len(parse_configs(args.configs)) * (args.warmup + args.steps)
    c = count(exp)
    return {
        "trace_bytes": size,
        "trace_bytes_per_step": size / executed,
        "launches": c["launches"],
        "kernels": c["kernels"],
        "kernels_found_share": (min(c["kernels"], c["launches"]) / c["launches"]) if c["launches"] else None,
        "host_enters": c["host_enters"],
        "top_host_regions": c["top_host_regions"],
    }


def summarise(runs: list[dict], configs: list[str]) -> list[dict]:
    """Per mode and configuration: the ratio to the untraced process of the same round."""
    by_round: dict[int, dict[str, dict]] = {}
    for r in runs:
        if "round" in r and "result" in r:
            by_round.setdefault(r["round"], {})[r["mode"]] = r
    rows = []
    for mode in MODES:
        for cfg in configs:
            ratios, steps, figures = [], [], []
            for procs in by_round.values():
                if mode in procs and "untraced" in procs:
                    t = procs[mode]["result"][cfg]["step_ms_median"]
                    ratios.append(t / procs["untraced"]["result"][cfg]["step_ms_median"])
                    steps.append(t)
                    figures.append(procs[mode])
            if not ratios:
                continue
            row = {
                "mode": mode,
                "config": cfg,
                "ratio_median": statistics.median(ratios),
                "ratio_min": min(ratios),
                "ratio_max": max(ratios),
                "rounds": len(ratios),
                "step_ms_median": statistics.median(steps),
                "trace_bytes_per_step": None,
                "kernels_found_share": None,
            }
            figures = [f for f in figures if not f["micro"]] or figures  # the per-call loops add records
            if figures and "trace_bytes_per_step" in figures[0]:
                row["trace_bytes_per_step"] = statistics.median(f["trace_bytes_per_step"] for f in figures)
                shares = [f["kernels_found_share"] for f in figures if f["kernels_found_share"] is not None]
                row["kernels_found_share"] = min(shares) if shares else None
            rows.append(row)
    return rows


def parent(args) -> int:
    import torch

    from dnabert_scaling.run.tracing.scorep import scorep_available

    if not torch.cuda.is_available():
        print("bench-trace: needs a CUDA GPU (tracing cost is a GPU figure); nothing measured", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or "untraced" not in modes:
        print(f"bench-trace: --modes must include 'untraced' and name only {', '.join(MODES)}", file=sys.stderr)
        return 2
    if any(MODES[m] is not None for m in modes):
        ok, reason = scorep_available()
        if not ok:
            print(f"bench-trace: the Score-P modes need Score-P: {reason}", file=sys.stderr)
            return 2
    configs = [f"{b}x{s}" for b, s in parse_configs(args.configs)]
    work = Path(tempfile.mkdtemp(prefix="bench-trace-"))
    runs: list[dict] = []
    started = time.monotonic()
    for rnd in range(args.rounds):
        if rnd and time.monotonic() - started > args.budget_s:
            print(f"# bench-trace: time budget spent after {rnd} rounds", flush=True)
            break
        for k in range(len(modes)):
            mode = modes[(k + rnd) % len(modes)]
            micro = rnd == 1 and not args.no_micro  # the per-call figures in the second round
            row = run_process(mode, args, work, f"r{rnd}-{mode}", micro=micro)
            row["round"] = rnd
            runs.append(row)
            print(f"# round {rnd} {mode}: {row['wall_s']} s {row.get('result') or row.get('error')}", flush=True)
    doc = {
        "device": torch.cuda.get_device_name(0),
        "model": args.model,
        "warmup": args.warmup,
        "steps": args.steps,
        "configs": configs,
        "modes": summarise(runs, configs),
        "per_call": [{"mode": r["mode"], **r["result"]["micro"]} for r in runs if "micro" in r.get("result", {})],
        "runs": runs,
        "wall_s": round(time.monotonic() - started, 1),
    }
    for r in doc["modes"]:
        print(json.dumps(r))
    for r in doc["per_call"]:
        print(json.dumps({k: v for k, v in r.items() if not k.endswith("_all")}))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base")
    p.add_argument("--configs", default="8x70,32x70,128x128")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--budget-s", type=float, default=1e9, help="start no new round after this many seconds")
    p.add_argument("--no-micro", action="store_true", help="skip the per-call figures")
    p.add_argument("--micro", action="store_true", help=argparse.SUPPRESS)  # in a child: the per-call figures
    p.add_argument("--json", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
