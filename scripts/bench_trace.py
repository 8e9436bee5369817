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
(``tools/cost_verdicts.py``).

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
  cupti-launch      cupti-kernels, and the client also subscribes to the driver callbacks launch-only
                    Score-P enables (the same name prefixes) and stores a timestamp, the callback id
                    and the correlation id at each call's entry and exit: the least a CUPTI tracer
                    with launch records does; what launch-only Score-P pays beyond it is its own
  scorep-launch-nocache-chunk4m
                    scorep-launch-chunk4m with SCOREP_CUDA_STREAM_REF_CACHE=false: each launch looks
                    its stream's location up anew (needs a Score-P built with
                    8.4-cupti-stream-ref-cache.patch, which the variable turns off)

For the Score-P modes: the experiment's bytes per executed step (every step of the process,
warm-up included, model set-up spread over them) and the share of kernel launches whose kernel
is in the trace (``scripts/scorep_count.py`` over every round's experiment, or the first round's
with ``--count first``, counted once all rounds are done; null without launch records).

Per step, beside its time: the minor page faults of the stepping thread (``getrusage`` of the
thread), its CPU time, the process's CPU time (every thread: PyTorch runs the backward pass on a
thread of its own while the stepping thread waits), and the time the step waited in its closing
synchronisation (``STEP_FIGURES``; medians per mode as ``<figure>_median``), so that a mode's
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
writes to it again), the median over ``MICRO_TURNS`` turns, so that the ratios can be read as
callbacks x cost per callback. Trace figures come from the
rounds without these loops and without an error.

    scripts/bench_trace.py [--rounds 6] [--configs 8x70,32x70,128x128] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.outputs import refuse_overlap, writable_file, write_text_atomic

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# the modules beside this file, found also where this file is loaded by its path
from bench_trace_child import child
from bench_trace_lockstep import run_round
from bench_trace_merge import merge
from bench_trace_printout import show
from bench_trace_summary import count_kernels, per_call, summarise
from bench_trace_modes import (
    CUPTI_CLIENT_LIB,
    CUPTI_CLIENT_MODES,
    DEFAULT_MODES,
    MODE_NEEDS_PATCH,
    MODES,
    mode_settings,
    parse_configs,
)

SAMPLER_LIB = "libhost_sampler.so"  # scripts/host_sampler.c, built in the run's work folder for --sample


# ---- the parent ------------------------------------------------------------------------------


def check_setup(args, modes: list[str]) -> str | None:
    """Why the benchmark cannot run here, or None."""
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        return "bench-trace: needs a CUDA GPU (tracing cost is a GPU figure); nothing measured"
    unknown = [m for m in modes if m not in MODES]
    if unknown or "untraced" not in modes:
        return f"bench-trace: --modes must include 'untraced' and name only {', '.join(MODES)}"
    if any(MODES[m] is not None for m in modes):
        from dnabert_scaling.run.tracing.scorep import scorep_available

        ok, reason = scorep_available()
        if not ok:
            return f"bench-trace: the Score-P modes need Score-P: {reason}"
        return missing_patch(modes)
    return None


def missing_patch(modes: list[str], prefix: Path | None = None) -> str | None:
    """Why a mode cannot run on the installed Score-P (it lacks the patch the mode switches), or None."""
    from dnabert_scaling.run.tracing.scorep import installed_patches, scorep_prefix

    needed = {m: MODE_NEEDS_PATCH[m] for m in modes if m in MODE_NEEDS_PATCH}
    if not needed:
        return None
    prefix = prefix or scorep_prefix()
    have = installed_patches(prefix) if prefix else None
    names = set(have or [])
    for mode, patch in needed.items():
        if patch not in names:
            where = f"{prefix}/share/scorep-patches.txt" if prefix else "the installed Score-P (none found)"
            listed = ", ".join(sorted(names)) or "no patch"
            return f"bench-trace: mode {mode} needs a Score-P built with {patch}; {where} lists {listed}"
    return None


CUDA_FALLBACKS = (Path("/usr/local/cuda"),)  # where cupti_dir looks last


def cupti_dir(env: dict | None = None, fallbacks: tuple[Path, ...] = CUDA_FALLBACKS) -> Path | None:
    """The folder holding CUPTI's include/cupti.h and lib/ or lib64/libcupti.so: $CUPTI_ROOT, else the
    toolkit at $CUDA_HOME or of the nvcc on PATH (CUDA 12: extras/CUPTI; CUDA 13: targets/<arch>-linux,
    where Score-P's build takes it from too), else ``fallbacks``."""
    env = os.environ if env is None else env
    roots: list[Path] = [Path(env["CUPTI_ROOT"])] if env.get("CUPTI_ROOT") else []
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    toolkits = [Path(env["CUDA_HOME"])] if env.get("CUDA_HOME") else []
    toolkits += [Path(nvcc).resolve().parent.parent] if nvcc else []  # a wrapper script's folder finds nothing: next
    for cuda in [*toolkits, *fallbacks]:
        roots += [cuda / "extras" / "CUPTI", *sorted(cuda.glob("targets/*-linux")), cuda]
    for d in roots:
        if (d / "include" / "cupti.h").is_file() and any((d / lib / "libcupti.so").exists() for lib in ("lib64", "lib")):
            return d
    return None


def build_cupti_client(
    work: Path,
    env: dict | None = None,
    fallbacks: tuple[Path, ...] = CUDA_FALLBACKS,
    modes: tuple[str, ...] = ("cupti-kernels",),
) -> tuple[dict | None, str | None]:
    """Build bench_trace_cupti.c into ``work`` against the toolkit's CUPTI for ``modes`` (the client's
    modes asked for, named in the message): (what was built, None), or (None, why it cannot be)."""
    env = os.environ if env is None else env
    said = f"mode{'s' if len(modes) > 1 else ''} {', '.join(modes)}"
    cupti = cupti_dir(env, fallbacks)
    if cupti is None:
        return (
            None,
            f"bench-trace: {said} need{'' if len(modes) > 1 else 's'} CUPTI (include/cupti.h, libcupti.so): none under $CUPTI_ROOT, "
            f"$CUDA_HOME, nvcc's toolkit or {', '.join(str(f) for f in fallbacks)}",
        )
    lib = next(cupti / d for d in ("lib64", "lib") if (cupti / d / "libcupti.so").exists())
    cc = env.get("CC") or shutil.which("cc", path=env.get("PATH")) or "cc"
    out = work / CUPTI_CLIENT_LIB
    argv = [cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", str(out), str(HERE / "bench_trace_cupti.c")]
    argv += [f"-I{cupti / 'include'}", f"-L{lib}", "-lcupti", f"-Wl,-rpath,{lib}"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        return None, f"bench-trace: {said}: cannot run the C compiler {cc} ({exc.strerror or exc})"
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.split())[-300:]
        return None, f"bench-trace: {said}: bench_trace_cupti.c does not build against {cupti}: {tail}"
    return {"cupti": str(cupti), "libcupti": str(lib / "libcupti.so"), "buffer_bytes": CUPTI_CLIENT_MODES}, None


def build_sampler(work: Path, out: Path) -> tuple[str | None, str | None]:
    """Build host_sampler.c into ``work`` and make the folder its samples go to: (the library, None),
    or (None, why not)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"bench-trace: --sample {out}: cannot make the folder ({exc.strerror or exc})"
    if any(out.glob("samples-*.bin")):
        return None, f"bench-trace: --sample {out}: already holds samples; give an empty or new folder"
    cc = os.environ.get("CC") or shutil.which("cc") or "cc"
    lib = work / SAMPLER_LIB
    argv = [cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", str(lib), str(HERE / "host_sampler.c"), "-ldl", "-lpthread", "-lrt"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        return None, f"bench-trace: --sample: cannot run the C compiler {cc} ({exc.strerror or exc})"
    if proc.returncode != 0:
        return None, f"bench-trace: --sample: host_sampler.c does not build: {' '.join(proc.stderr.split())[-300:]}"
    return str(lib), None


def machine() -> dict:
    import platform

    import torch

    from dnabert_scaling.run.tracing.scorep import installed_patches, scorep_prefix

    doc = {"host_cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__}
    # the Score-P build the Score-P modes ran with: the patches its share/scorep-patches.txt lists (None: unknown)
    doc["scorep_patches"] = installed_patches(scorep_prefix())
    if torch.cuda.is_available():
        doc.update(device=torch.cuda.get_device_name(0), cuda=torch.version.cuda)
    return doc


def revision() -> str | None:
    """The code's revision: $DNABERT_SCALING_REVISION (a copy without git), else git's HEAD."""
    rev = os.environ.get("DNABERT_SCALING_REVISION", "").strip()
    if rev:
        return rev
    proc = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or None


def parent(args) -> int:
    if args.json:  # never over an input, never half-written
        try:
            refuse_overlap([("--json", args.json)], args.merge or [])
            writable_file(args.json, "--json")
            if args.sample and Path(args.sample).resolve() == Path(args.json).resolve():  # the folder would take its place
                raise ArtifactError("--json: is also the --sample folder; write them to two places", args.json)
        except ArtifactError as exc:
            print(f"bench-trace: {exc}", file=sys.stderr)
            return 2
    if args.merge:
        return merge(args)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    why = check_setup(args, modes)
    if why:
        print(why, file=sys.stderr)
        return 2
    args.config_names = [f"{b}x{s}" for b, s in parse_configs(args.configs)]
    work = Path(tempfile.mkdtemp(prefix="bench-trace-"))
    try:
        args.cupti_client = args.sampler = None
        if args.sample:
            args.sampler, why = build_sampler(work, Path(args.sample))
            if why:
                print(why, file=sys.stderr)
                return 2
        if any(m in CUPTI_CLIENT_MODES for m in modes):
            args.cupti_client, why = build_cupti_client(work, modes=tuple(m for m in modes if m in CUPTI_CLIENT_MODES))
            if why:
                print(why, file=sys.stderr)
                return 2
        return measure(args, modes, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the experiments are counted by then


def measure(args, modes: list[str], work: Path) -> int:
    """The rounds, the kernel counts, the document: printed, and written to ``--json``."""
    rounds: list[dict] = []
    started = time.monotonic()
    for rnd in range(args.rounds):
        if rnd and time.monotonic() - started > args.budget_s:
            print(f"# bench-trace: time budget spent after {rnd} rounds", flush=True)
            break
        t0 = time.monotonic()
        row = run_round(rnd, modes, args, work, micro=rnd == 1 and not args.no_micro)
        row["executed_steps"] = len(args.config_names) * (args.warmup + args.steps)
        row["wall_s"] = round(time.monotonic() - t0, 1)
        rounds.append(row)
        print(f"# round {rnd}: {row['wall_s']} s{' ' + row['error'] if 'error' in row else ''}", flush=True)
    counts = count_kernels(rounds, modes, args.count)
    host = machine()
    doc = {
        "method": "lockstep: one process per mode and round, taking turns step by step (see the script's docstring)",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": host,
        "device": host.get("device", args.device),
        "model": args.model,
        "cpus": args.cpus,
        "step_sync": args.step_sync,
        "counted": args.count,
        "revision": revision(),
        "warmup": args.warmup,
        "steps": args.steps,
        "configs": args.config_names,
        "mode_settings": mode_settings(modes),
        "cupti_client": getattr(args, "cupti_client", None),
        "modes": summarise(rounds, args.config_names, counts),
        "per_call": per_call(rounds),
        "counts": counts,
        "rounds": rounds,
        "wall_s": round(time.monotonic() - started, 1),
    }
    show(doc)
    if args.json:
        write_text_atomic(args.json, json.dumps(doc, indent=1) + "\n")
    return 0 if doc["modes"] else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="base")
    p.add_argument("--configs", default="8x70,32x70,128x128")
    p.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"of {', '.join(MODES)}")
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
    p.add_argument("--json", default=None)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help=argparse.SUPPRESS)  # cpu: the tests' protocol run
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
