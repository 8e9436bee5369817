#!/usr/bin/env python3
"""Tracing cost: traced / untraced step time per tracer mode, step by step in lockstep (needs CUDA).

Score-P cannot be unloaded inside a process, and its recording-off windows still pay every CUPTI
callback, so each mode needs processes of its own. Identical processes differ by up to 2x on the
lent H200, and the step times of one process drift by a third within seconds, so processes run
one after the other compare badly. Here each round starts one process per mode at once, and the
parent then lets them take turns, one training step at a time: a step of each mode in turn (the
order rotated from step to step), every step ended by waiting for its GPU work (``--step-sync``:
its stream by default, or the whole device), the others waiting on their pipe meanwhile (no CPU
and no GPU work). So the steps compared are seconds apart, on one machine state, and the GPU runs
one process's work at a time. The training loop itself does not wait inside its steps (its timing
reads CUDA events without blocking); the wait here is what lets the modes take turns. A device
synchronisation also makes Score-P flush its CUPTI activity buffer, which a stream wait does not.

Per round and configuration, a mode's ratio is the median over the measured steps of its step
time over the untraced process's step time in the same turn (host wall time of the step, from
its first call to the end of its synchronisation). The JSON gives, per mode and configuration,
the median, min and max of these per-round ratios over the rounds, and the median of all the
paired step ratios of all rounds (``pooled_ratio_median``, with its quartiles). The printout ends
with the artifact's default Score-P mode against issue 24's targets (``#`` lines): met or missed only
where the 95% interval of the median of its round ratios lies wholly on one side of a bound (and the
runs of a merge agree), else not established, the rule ARTIFACT.md's targets lines use
(``tools/cost_verdicts.py``); beside each bound, where the run has them, CUPTI alone against it and what
the mode adds to the bare client that takes the launches the same way, paired per round against 0.

Modes (a Score-P mode without a chunk of its own runs in Score-P's 8 kB chunks, whatever the caller set):
  untraced          no tracer
  torch             torch.profiler, CUDA activity only (the artifact's torch default)
  scorep-all        Score-P, SCOREP_CUDA_ENABLE=driver,kernel,memcpy,references, every driver
                    API call recorded (SCOREP_CUDA_DRIVER_CALLBACKS=all, Score-P as released)
  scorep-launch     the same with SCOREP_CUDA_DRIVER_CALLBACKS=launch (the project's patch
                    8.4-cupti-launch-callbacks.patch): only launch, copy and memset calls
  scorep-launch-chunk4m
                    scorep-launch with SCOREP_CUDA_BUFFER_CHUNK=4M: CUPTI fills 4 MB activity
                    buffers instead of Score-P's 8 kB ones; the artifact's default Score-P mode
  scorep-nodriver-chunk4m
                    SCOREP_CUDA_ENABLE=kernel,memcpy in 4 MB chunks: no host records
                    (completeness unknowable); what kernel records cost Score-P
Diagnostic modes (run only where --modes names them):
  scorep-nodriver   scorep-nodriver-chunk4m in Score-P's 8 kB chunks
  scorep-nocuda     Score-P loaded (python -m scorep --cuda) with SCOREP_CUDA_ENABLE=no: no CUPTI
                    subscription, no GPU records; what Score-P's presence alone costs
  cupti-kernels     no Score-P: a bare CUPTI client (scripts/bench_trace_cupti.c, built here against
                    the toolkit's CUPTI) asks for the activity records Score-P without `driver` asks
                    for (concurrent kernels, memory copies) into 4 MB buffers, counts and frees them;
                    what CUPTI's recording of these records costs by itself, without a tracer. At run
                    time it uses the libcupti.so.13 the process loaded first, PyTorch's (its wheel
                    nvidia-cuda-cupti); Score-P loads the toolkit's. On the lent H200 the two files
                    are the same build (one sha256, 2026-12-04: gpu-call-2026-12-04-profile/NOTES.md)
  cupti-kernels-8k  the same client with 8 kB buffers, Score-P's own chunk
  cupti-kernels-pinned
                    cupti-kernels with CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED = 1: CUPTI
                    keeps the kernels' and copies' profiling data in page-locked host memory instead of
                    device memory (its default since CUDA 12.0 Update 1); whether CUPTI's own cost moves
  cupti-kernels-shared
                    cupti-kernels with CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER = 0: one stream of
                    activity buffers for all threads instead of one per thread (CUPTI's default)
  cupti-launch      cupti-kernels, and the client also subscribes to the driver callbacks launch-only
                    Score-P enables (the same name prefixes) and stores a timestamp, the callback id
                    and the correlation id at each call's entry and exit: the least a CUPTI tracer
                    with launch records does; what launch-only Score-P pays beyond it is its own
  cupti-launch-domains
                    cupti-launch, and the client also enables the resource and synchronisation
                    callback domains Score-P enables, and only counts their callbacks
  cupti-launch-records
                    cupti-kernels, and instead of callbacks the client asks CUPTI for an activity
                    record of each of the same driver calls (start, end, thread, correlation id),
                    written by CUPTI beside the kernel records: launch records with no code of the
                    tracer on the launch path. The client counts them and the kernel records whose
                    correlation id one of them carries (the exact launch-to-kernel link)
  scorep-launch-nocache-chunk4m
                    scorep-launch-chunk4m with SCOREP_CUDA_STREAM_REF_CACHE=false: each launch looks
                    its stream's location up anew (needs a Score-P built with
                    8.4-cupti-stream-ref-cache.patch, which the variable turns off)
  scorep-launch-chunk4m-tsc
                    scorep-launch-chunk4m with SCOREP_TIMER=tsc: Score-P stamps its events from the
                    CPU's time-stamp counter instead of clock_gettime (the artifact's timer); whether
                    reading the clock is part of what a launch record costs (scripts/clock_cost.c
                    prints what one clock reading costs on the machine)
  scorep-launch-norefs-chunk4m
                    scorep-launch-chunk4m without `references` (SCOREP_CUDA_ENABLE=driver,kernel,memcpy):
                    the same launch records without their stream reference (the analysis then cannot
                    pair a launch with its kernel); what the reference costs
  scorep-launch-notrace-chunk4m
                    scorep-launch-chunk4m with SCOREP_ENABLE_TRACING=false (profiling is off too):
                    Score-P's CUDA callbacks run and CUPTI's records are taken, but no event is
                    written; what writing the trace costs, and what Score-P's callback path costs
                    beyond the bare client's (cupti-launch). Its kernels cannot be counted (no trace)
  scorep-launch-nosync-chunk4m
                    scorep-launch-chunk4m with scripts/cupti_domain_filter.c preloaded first: it answers
                    Score-P's call enabling CUPTI's synchronisation callback domain without passing it on,
                    and counts what it held back (each process reports it); what that domain costs
                    Score-P (Score-P then drains CUPTI's buffers only at its end)
  scorep-records-chunk4m
                    scorep-launch-chunk4m with SCOREP_CUDA_DRIVER_CALLBACKS=records (needs a Score-P
                    built with 8.4-cupti-launch-records.patch): no callback on the launch path; the
                    same driver calls come as CUPTI activity records, written at the flush on a
                    location per host thread (CUDA launches[<thread>]), launches and kernels linked
                    by the CUPTI correlation id (counted: kernels_linked); what Score-P costs beside
                    the bare client with the same records (cupti-launch-records)

For the Score-P modes: the experiment's bytes per executed step (every step of the process,
warm-up included, model set-up spread over them) and the share of kernel launches whose kernel
is in the trace (``scripts/scorep_count.py`` over every round's experiment, or the first round's
with ``--count first``, counted once all rounds are done; null without launch records).

Per step, beside its time: the minor page faults of the stepping thread (``getrusage`` of the
thread), its CPU time and the system (kernel) part of it, the process's CPU time (every thread:
PyTorch runs the backward pass on a thread of its own while the stepping thread waits), and the
time the step waited in its closing synchronisation (``STEP_FIGURES`` in bench_trace_modes.py; medians per mode as ``<figure>_median``), so that a mode's
cost can be read as faults (fresh memory the tracer's buffers touch), as work on the threads, or
as waiting (for the GPU, or elsewhere: wall time beyond CPU time). ``--sample DIR`` also builds
scripts/host_sampler.c and preloads it in every child: the stacks of the measured steps, sampled
on the CPU of every thread (``--sample-clock wall``: the main thread's wall-clock time, waits
included), land in DIR per process with each loaded object's build id; read them with
scripts/host_profile.py DIR --bench OUT.json (each process's pid is in the JSON).

Per call (in the second round, after the configurations, in turns like the steps; ``--no-micro``
skips it): the host time of one driver query (``cuCtxGetDevice`` through ctypes) and of one small
kernel launch from PyTorch (``x.add_(1)`` on one element), and of one first touch of a fresh page
of memory (``page_fault_ns``: writing one byte per page of a new 16 MB mapping, less the same
writes to it again), the median over ``MICRO_TURNS`` (bench_trace_modes.py) turns, so that the ratios can be read as
callbacks x cost per callback. Trace figures come from the
rounds without these loops and without an error.

    scripts/bench_trace.py [--rounds 6] [--configs 8x70,32x70,128x128] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the modules beside this file, also where a test loads it by path

from bench_trace_child import child
from bench_trace_modes import DEFAULT_MODES, MODES, RECORDS_DEFAULT, default_modes
from bench_trace_parent import parent
from dnabert_scaling.outputs import output_path


def main(argv=None) -> int:
    from dnabert_scaling.run.tracing.scorep import installed_patches, scorep_prefix

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base")
    p.add_argument("--configs", default="8x70,32x70,128x128")
    p.add_argument(
        "--modes",
        default=",".join(default_modes(installed_patches(scorep_prefix()))),
        help=f"of {', '.join(MODES)} (default: {', '.join(DEFAULT_MODES)}, and {RECORDS_DEFAULT} where Score-P has its patch)",
    )
    p.add_argument("--rounds", type=int, default=6, help="rounds to run (6: the fewest a 95%% interval of a median needs)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--budget-s", type=float, default=1e9, help="start no new round after this many seconds")
    p.add_argument("--no-micro", action="store_true", help="skip the per-call figures")
    p.add_argument("--cpus", default=None, help="pin every measured process to these CPUs (e.g. 2-7)")
    p.add_argument(
        "--step-sync",
        choices=("stream", "device"),
        default="stream",
        help="how a timed step waits for its GPU work before the next process's turn: its stream (default) or the "
        "whole device (under Score-P a device synchronisation also flushes the CUPTI activity buffer, once per "
        "step; the training loop does not wait inside its steps at all)",
    )
    p.add_argument(
        "--count",
        choices=("every", "first"),
        default="every",
        help="count the kernels of every round's Score-P experiments (default) or of the first round's only",
    )
    p.add_argument(
        "--sample",
        default=None,
        metavar="DIR",
        help="preload scripts/host_sampler.c in every child: the measured steps' stacks, sampled on the CPU, go to DIR "
        "(read them with scripts/host_profile.py DIR --bench JSON)",
    )
    p.add_argument(
        "--sample-clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="--sample's clock: the process's CPU time (default), or the wall-clock time of each child's main thread, "
        "which also samples where it waits",
    )
    p.add_argument("--merge", nargs="+", metavar="JSON", help="summarise the rounds of these earlier outputs together")
    p.add_argument(
        "--pool-unrecorded",
        action="store_true",
        help="with --merge: pool a run that records no card, Score-P patch list, torch, CUDA or mode settings with runs "
        "that do (runs recorded before that bookkeeping); otherwise refused, since they cannot be told alike",
    )
    p.add_argument("--json", type=output_path, default=None, help="write the document here (never over an input)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)  # cpu: the tests' protocol run
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    if args.merge:  # a merge measures nothing: an option of the measurement would be silently ignored
        given = [
            f"--{k.replace('_', '-')}"
            for k, v in vars(args).items()
            if k not in ("merge", "json", "pool_unrecorded") and v != p.get_default(k)
        ]
        if given:
            print(
                f"bench-trace: --merge: {', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to a measurement, not to a merge; leave them out",
                file=sys.stderr,
            )
            return 2
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
