"""bench_trace.py's child: one process of one tracer mode, serving the parent's commands on its stdin (a
configuration's model, one timed training step, the model's release, the per-call loops, quit) with one
reply line each on its stdout; in a CUPTI client mode it starts the bare client before its CUDA context."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench_trace_modes import (
    CUPTI_CLIENT_ENV,
    CUPTI_CLIENT_MODES,
    CUPTI_CLIENT_OPTIONS,
    CUPTI_COUNT_KEYS,
    DOMAIN_FILTER_KEYS,
    MICRO_FAULT_BYTES,
    MICRO_LAUNCHES,
    MICRO_QUERIES,
    MODES,
    REPLY,
    parse_configs,
)


def parse_cpus(text: str) -> set[int]:
    """``2-7,9`` -> {2, 3, 4, 5, 6, 7, 9}."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


class Served:
    """The child's state: the model of the current configuration and, in torch mode, its tracer."""

    def __init__(self, args):
        import torch

        self.torch, self.args = torch, args
        self.cupti = None
        if args.child in CUPTI_CLIENT_MODES:
            self.cupti = start_cupti_client(CUPTI_CLIENT_MODES[args.child], CUPTI_CLIENT_OPTIONS.get(args.child, 0))
        self.device = torch.device(args.device)
        self.bench = self.tracer = self.micro_prof = None
        self._x = self._cuda = None  # the per-call loops' tensor and libcuda, made on first use
        self.tmp = tempfile.TemporaryDirectory()
        self.sampler_mark = None  # host_sampler.c's mark, where --sample preloaded it
        if os.environ.get("HOST_SAMPLER_OUT"):
            import ctypes

            self.sampler_mark = getattr(ctypes.CDLL(None), "host_sampler_mark", None)

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def config(self, cfg: str) -> dict:
        from bench_train import Bench

        from dnabert_scaling.run.tracing.torch_profiler import TorchProfilerTracer

        batch, seq = parse_configs(cfg)[0]
        precision = "bf16" if self.device.type == "cuda" else "fp32"
        self.bench = Bench(self.torch, self.args.model, "sdpa", batch, seq, self.device, precision, "default")
        self.tracer = None
        if self.args.child == "torch":
            path = Path(self.tmp.name) / f"{cfg}.json.gz"
            self.tracer = TorchProfilerTracer(path, self.args.warmup, self.args.steps, self.device.type, cpu_ops=False)
        self.sync()
        return {}

    def step(self, i: int) -> dict:
        """One training step, timed from its first call to the end of its synchronisation, with the
        thread's minor page faults, CPU time and system (kernel) CPU time over the same span."""
        import resource

        if self.tracer:
            self.tracer.step_begin(i)
        mark = self.sampler_mark if i >= self.args.warmup else None
        if mark:
            mark(1)
        usage0 = resource.getrusage(resource.RUSAGE_THREAD)
        cpu0, proc0 = time.thread_time_ns(), time.process_time_ns()
        t0 = time.perf_counter_ns()
        self.bench.step(self.bench.ids, self.bench.mask, self.bench.labels, measured=i >= self.args.warmup)
        t_sync = time.perf_counter_ns()
        if self.device.type == "cuda" and self.args.step_sync == "stream":
            self.torch.cuda.current_stream().synchronize()
        else:
            self.sync()
        t1 = time.perf_counter_ns()
        ms, sync_ms = (t1 - t0) / 1e6, (t1 - t_sync) / 1e6
        cpu_ms, proc_cpu_ms = (time.thread_time_ns() - cpu0) / 1e6, (time.process_time_ns() - proc0) / 1e6
        usage = resource.getrusage(resource.RUSAGE_THREAD)
        faults, sys_ms = usage.ru_minflt - usage0.ru_minflt, (usage.ru_stime - usage0.ru_stime) * 1e3
        if mark:
            mark(0)
        if self.tracer:
            self.tracer.step_end(i)  # the last measured step exports the trace: not timed
        return {"ms": ms, "minflt": faults, "cpu_ms": cpu_ms, "sys_ms": sys_ms, "proc_cpu_ms": proc_cpu_ms, "sync_ms": sync_ms}

    def release(self) -> dict:
        self.bench = self.tracer = None
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()
        return {}

    def micro(self) -> dict:
        """Host ns per driver query and per small PyTorch kernel launch, one batch of each."""
        import ctypes

        torch = self.torch
        if self._x is None:
            self._x = torch.zeros(1, device=self.device)
            self._cuda = ctypes.CDLL("libcuda.so.1") if self.device.type == "cuda" else None
            if self.args.child == "torch":
                activities = [
                    torch.profiler.ProfilerActivity.CUDA if self.device.type == "cuda" else torch.profiler.ProfilerActivity.CPU
                ]
                self.micro_prof = torch.profiler.profile(activities=activities)
                self.micro_prof.__enter__()
        self.sync()
        out = {"cuCtxGetDevice_ns": None}
        if self._cuda is not None:
            dev = ctypes.c_int()
            t0 = time.perf_counter_ns()
            for _ in range(MICRO_QUERIES):
                self._cuda.cuCtxGetDevice(ctypes.byref(dev))
            out["cuCtxGetDevice_ns"] = (time.perf_counter_ns() - t0) / MICRO_QUERIES
        t0 = time.perf_counter_ns()
        for _ in range(MICRO_LAUNCHES):
            self._x.add_(1)
        out["launch_ns"] = (time.perf_counter_ns() - t0) / MICRO_LAUNCHES
        self.sync()
        out["page_fault_ns"] = page_fault_ns()
        return out

    def quit(self) -> dict:
        if self.micro_prof is not None:
            self.micro_prof.__exit__(None, None, None)
        self.tmp.cleanup()
        out = {"cupti_records": stop_cupti_client(self.cupti)} if self.cupti is not None else {}
        filtered = domain_filter_counts()
        return out if filtered is None else {**out, "domain_filter": filtered}


def domain_filter_counts() -> dict | None:
    """What the preloaded scripts/cupti_domain_filter.c held back and passed on (None: not loaded)."""
    import ctypes

    counts_of = getattr(ctypes.CDLL(None), "cupti_domain_filter_counts", None)
    if counts_of is None:
        return None
    counts = (ctypes.c_ulonglong * len(DOMAIN_FILTER_KEYS))()
    counts_of(counts)
    return dict(zip(DOMAIN_FILTER_KEYS, (int(n) for n in counts)))


def page_fault_ns() -> float:
    """Host ns of one first touch of a fresh page: one byte written per page of a new anonymous
    mapping, less the same writes again (the pages then present), per page."""
    import mmap

    page = mmap.PAGESIZE
    pages = MICRO_FAULT_BYTES // page
    with mmap.mmap(-1, MICRO_FAULT_BYTES) as m:
        spans = []
        for _ in range(2):
            t0 = time.perf_counter_ns()
            for k in range(0, MICRO_FAULT_BYTES, page):
                m[k] = 1
            spans.append(time.perf_counter_ns() - t0)
    return max(0.0, (spans[0] - spans[1]) / pages)


def start_cupti_client(buffer_bytes: int, options: int = 0):
    """Load the bare CUPTI client ($BENCH_TRACE_CUPTI_CLIENT) and start its activity records (and, by
    ``options``, its launch callbacks and the resource and synchronisation domains: CUPTI_CLIENT_OPTIONS),
    before this process makes its CUDA context."""
    import ctypes

    lib = ctypes.CDLL(os.environ[CUPTI_CLIENT_ENV])
    lib.bench_cupti_start.argtypes = [ctypes.c_ulonglong, ctypes.c_int]
    lib.bench_cupti_error.restype = ctypes.c_char_p
    status = lib.bench_cupti_start(buffer_bytes, int(options))
    if status != 0:
        raise SystemExit(f"bench-trace: the CUPTI client cannot start: {lib.bench_cupti_error(status).decode()} ({status})")
    return lib


def stop_cupti_client(lib) -> dict:
    """Flush the client's records and return its counts (records by kind, buffers, dropped)."""
    import ctypes

    counts = (ctypes.c_ulonglong * len(CUPTI_COUNT_KEYS))()
    status = lib.bench_cupti_stop(counts)
    out = dict(zip(CUPTI_COUNT_KEYS, (int(n) for n in counts)))
    if status != 0:
        out["error"] = f"flush: {lib.bench_cupti_error(status).decode()} ({status})"
    return out


def reply(doc: dict) -> None:
    sys.stdout.write(REPLY + json.dumps(doc) + "\n")
    sys.stdout.flush()


def child(args) -> int:
    if MODES.get(args.child) is not None:
        from dnabert_scaling.run.tracing.scorep import under_scorep

        if not under_scorep():
            raise SystemExit(f"bench-trace: mode {args.child} must run under python -m scorep")
    if args.cpus:  # every thread made from here on inherits it
        os.sched_setaffinity(0, parse_cpus(args.cpus))
    served = Served(args)
    reply({"op": "ready", "pid": os.getpid(), "cpus": sorted(os.sched_getaffinity(0))})
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "config":
            out = served.config(cmd["config"])
        elif op == "step":
            out = served.step(cmd["i"])
        elif op == "release":
            out = served.release()
        elif op == "micro":
            out = served.micro()
        elif op == "quit":
            reply({"op": "quit", **served.quit()})
            return 0
        else:
            raise SystemExit(f"bench-trace child: unknown command {op!r}")
        reply({"op": op, **out})
    return 1  # the parent went away
