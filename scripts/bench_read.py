#!/usr/bin/env python3
"""Trace reading speed: ``read_run_traces`` + ``summarize`` against a plain ``otf2`` event loop.

The trace is generated (``dnabert_scaling.tools.synth``) in the shape of the study: 8 ranks,
each a Score-P 9 experiment (``traces/scorep-rank<R>``) with 50 measured steps (+2 warm-up) of
~1,000 kernels, NCCL AllReduce buckets on their own stream, copies, ``ds:*`` phases, and full
Python instrumentation on the main thread (20x as many host events as GPU events): about 2.3 M
events per rank, 18 M in all, ~220 MB. Generating it takes about a minute on two cores; it is
cached under ``--cache`` (default ``/tmp/dnabert-scaling-bench-read``) and reused when the
parameters match.

Both contenders read every event of the same trace:

* baseline: ``for loc, ev in tr.events: n += 1`` with the ``otf2`` package, rank after rank;
* ours: ``read_run_traces(dir, world_size=8)`` (per-location readers with C-level callbacks,
  ranks in a process pool) followed by ``summarize`` (vectorised interval algebra); once with
  one worker per core and once in a single process, to separate the two sources of speed.

Events/s = events in the trace / wall seconds; the table shows medians over the repeats.
Run with ``make bench-read``; ``--quick`` makes a small trace for a smoke test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import otf2
from importlib.metadata import version as _version

from dnabert_scaling.layout import ANCHOR
from dnabert_scaling.traces import read_run_traces
from dnabert_scaling.traces.summary import summarize
from dnabert_scaling.tools.synth import write_study_trace


def count_events(anchors: list[Path]) -> int:
    total = 0
    for a in anchors:
        with otf2.reader.open(str(a)) as tr:
            total += sum(int(l.number_of_events) for l in tr.definitions.locations)
    return total


def baseline(anchors: list[Path]) -> int:
    n = 0
    for a in anchors:
        with otf2.reader.open(str(a)) as tr:
            for _loc, _ev in tr.events:
                n += 1
    return n


def ours(trace_dir: Path, ranks: int, workers: int | None) -> tuple[int, dict]:
    tr = read_run_traces(trace_dir, world_size=ranks, workers=workers)
    s = summarize(tr)
    return tr.event_count(), s


def timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, result


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--kernels-per-step", type=int, default=1000)
    ap.add_argument("--host-factor", type=float, default=20.0, help="host events per GPU event on the main thread")
    ap.add_argument("--repeats", type=int, default=3, help="repeats of our reader (median reported)")
    ap.add_argument(
        "--baseline-repeats", type=int, default=1, help="repeats of the plain otf2 loop (slow: ~2 min per repeat at full size)"
    )
    ap.add_argument("--workers", type=int, default=None, help="reader processes (default: one per core)")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/dnabert-scaling-bench-read"))
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    ap.add_argument("--quick", action="store_true", help="small trace (2 ranks x 5 steps x 200 kernels)")
    args = ap.parse_args(argv)
    if args.quick:
        args.ranks, args.steps, args.kernels_per_step = 2, 5, 200
    params = {
        "steps": args.steps,
        "warmup": 2,
        "kernels_per_step": args.kernels_per_step,
        "host_factor": args.host_factor,
        "buckets": 8,
        "seed": 0,
    }
    out = args.cache / f"r{args.ranks}-s{args.steps}-k{args.kernels_per_step}-h{args.host_factor:g}"
    t0 = time.perf_counter()
    dirs = write_study_trace(out, ranks=args.ranks, **params)
    gen_s = time.perf_counter() - t0
    anchors = [d / ANCHOR for d in dirs]
    total = count_events(anchors)
    size = sum(f.stat().st_size for d in dirs for f in d.rglob("*") if f.is_file())
    cores = os.cpu_count() or 1
    print(f"machine: {cpu_model()}, {cores} cores, Python {platform.python_version()}, otf2 {_version('otf2')}")
    print(
        f"trace: {out} ({args.ranks} ranks, {total:,} events, {size / 1e6:.0f} MB; "
        f"{'generated' if gen_s > 1 else 'cached'} in {gen_s:.1f} s)"
    )
    sys.stdout.flush()

    ours_med, ours_times, (ours_events, summary) = timed(lambda: ours(out / "traces", args.ranks, args.workers), args.repeats)
    if ours_events != total:
        print(f"error: our reader consumed {ours_events} events, the trace has {total}", file=sys.stderr)
        return 1
    serial_med, serial_times, (serial_events, _) = timed(lambda: ours(out / "traces", args.ranks, 1), args.repeats)
    if serial_events != total:
        print(f"error: our reader consumed {serial_events} events, the trace has {total}", file=sys.stderr)
        return 1
    base_med, base_times, base_events = timed(lambda: baseline(anchors), args.baseline_repeats)
    if base_events != total:
        print(f"error: the baseline loop saw {base_events} events, the trace has {total}", file=sys.stderr)
        return 1
    workers = args.workers or min(cores, args.ranks)
    rows = [
        ("plain otf2 loop (1 process)", total, base_med, base_times),
        ("read_run_traces + summarize (1 process)", total, serial_med, serial_times),
        (f"read_run_traces + summarize ({workers} workers)", total, ours_med, ours_times),
    ]
    print()
    print(f"{'method':<46} {'events':>12} {'median s':>9} {'events/s':>12} {'speed-up':>9}  runs")
    for name, n, med, times in rows:
        print(
            f"{name:<46} {n:>12,} {med:>9.2f} {n / med:>12,.0f} {base_med / med:>8.1f}x  " + ", ".join(f"{t:.2f}" for t in times)
        )
    r0 = summary["ranks"][0]
    print(
        f"\nrank 0: {r0['kernel_count']} kernels, compute {r0['compute_s']:.3f} s, exposed comm "
        f"{r0['exposed_comm_s']:.3f} s, overlap ratio {r0['overlap_ratio']:.3f}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "machine": {"cpu": cpu_model(), "cores": cores, "python": platform.python_version()},
                    "trace": {"path": str(out), "ranks": args.ranks, "events": total, "bytes": size, **params},
                    "baseline": {"median_s": base_med, "runs_s": base_times, "events_per_s": total / base_med},
                    "ours": {"median_s": ours_med, "runs_s": ours_times, "events_per_s": total / ours_med, "workers": workers},
                    "ours_one_process": {"median_s": serial_med, "runs_s": serial_times, "events_per_s": total / serial_med},
                    "speedup": base_med / ours_med,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
