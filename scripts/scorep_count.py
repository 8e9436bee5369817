#!/usr/bin/env python3
"""Kernel completeness of one Score-P experiment, counted straight from the OTF2 events.

Independent of the artifact's trace reader (so it can check it): only the ``otf2`` module.

* launches: ``Enter`` of a region whose name starts with ``cuLaunchKernel`` (cuLaunchKernel,
  cuLaunchKernelEx, their _ptsz variants) on every CPU location, the ``Orphan thread N``
  locations (threads Score-P did not see start, e.g. PyTorch's autograd thread) included;
* kernels: ``Enter`` events on the GPU (accelerator stream) locations; copies: RMA get/put there.
  A GPU-typed location named ``CUDA launches[<thread id>]`` (Score-P with
  ``SCOREP_CUDA_DRIVER_CALLBACKS=records``) holds a host thread's launch calls: counted as host;
* linked (where launches carry ``CUPTI_CORRELATION_ID``, as in that mode): the kernels whose
  correlation id one launch carries.

Per measured step: the step windows are the ``--step-region`` regions (default ``user:ds:step``)
on the thread that records them; a launch or kernel belongs to the window its time falls in (a
window runs from its step's Enter to the next step's Enter, the last one to its Leave plus
``--tail-ms``). Prints a JSON document (``--json`` also writes it).

    scorep_count.py EXPERIMENT_DIR_OR_traces.otf2 [--json OUT] [--step-region NAME]
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from collections import Counter
from pathlib import Path


LAUNCH_LOCATION = re.compile(r"^CUDA launches\[[0-9]+\]$")  # records mode: a host thread's launches, typed GPU
LAUNCH_LOCATION_PREFIX = "CUDA launches"  # a GPU location named so, not by the pattern: refused
CORRELATION_ATTRIBUTE = "CUPTI_CORRELATION_ID"
ID_LIMIT = 1 << 63  # the artifact's tables hold int64: a larger id is refused there too
UNDEFINED_UINT64 = (1 << 64) - 1  # OTF2_UNDEFINED_UINT64


class CountError(Exception):
    """An experiment that cannot be counted: the message names the file and the problem."""


def is_launch_location(name: str | None) -> bool:
    """Whether a GPU-typed location is records mode's ``CUDA launches[<thread id>]`` (host calls)."""
    return bool(LAUNCH_LOCATION.match(name or ""))


def _correlation(ev) -> int | None:
    """The event's ``CUPTI_CORRELATION_ID`` attribute, None where it has none; a value that is not a whole
    number below 2^63 is refused (a string, a float or a negative number is no CUPTI id)."""
    for attr, value in (ev.attributes or {}).items():
        if attr.name == CORRELATION_ATTRIBUTE:
            if value == UNDEFINED_UINT64:  # OTF2's "undefined": no id, as the artifact's reader reads it
                return None
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < ID_LIMIT:
                raise CountError(f"an event carries {CORRELATION_ATTRIBUTE} = {value!r}: not a CUPTI correlation id")
            return value
    return None


def _linked(kernels: Counter, launches: Counter) -> int | None:
    """The kernels paired with a launch by correlation id, an id pairing as many kernels as launches carry it
    (a repeated or forged id links no more); None where some launch carries no id (nothing to pair by)."""
    if not launches or None in launches:
        return None
    return sum(min(n, launches[c]) for c, n in kernels.items() if c is not None)


def anchor_of(path: Path) -> Path:
    path = Path(path)
    if path.is_dir():
        path = path / "traces.otf2"
    if not path.is_file():
        raise CountError("no traces.otf2 (not a finished Score-P experiment)")
    return path


def count(path, step_region: str = "user:ds:step", tail_ms: float = 1000.0) -> dict:
    import otf2

    damaged: tuple[type[BaseException], ...] = (otf2.error.Error,)
    try:  # the C library's error codes are raised as an exception class of their own
        from _otf2 import ErrorCodes

        damaged += (ErrorCodes.Error,)
    except ImportError:
        pass

    try:
        anchor = anchor_of(Path(path))
    except CountError as exc:
        raise CountError(f"{path}: {exc}") from None
    try:
        return _count(otf2, anchor, step_region, tail_ms)
    except CountError as exc:
        raise CountError(f"{anchor}: {exc}") from None
    except damaged as exc:  # a damaged archive
        raise CountError(f"{anchor}: not a readable OTF2 archive ({exc})") from None


def _count(otf2, anchor: Path, step_region: str, tail_ms: float) -> dict:
    launches_by_loc: Counter = Counter()
    kernels_by_loc: Counter = Counter()
    copies_by_loc: Counter = Counter()
    launch_t: list[int] = []
    kernel_t: list[int] = []
    steps: list[list[int]] = []  # [enter, leave]
    kernel_corr: Counter = Counter()  # correlation id (None: none) -> kernels carrying it
    launch_corr: Counter = Counter()  # the same for the kernel launches
    names: Counter = Counter()
    host_regions: Counter = Counter()
    with otf2.reader.open(str(anchor)) as tr:
        resolution = tr.timer_resolution
        for a in tr.definitions.attributes:
            if a.name == CORRELATION_ATTRIBUTE and a.type != otf2.Type.UINT64:
                raise CountError(f"attribute {CORRELATION_ATTRIBUTE} is defined with type {a.type}, not UINT64")
        gpu = set()
        for l in tr.definitions.locations:
            if l.type != otf2.LocationType.GPU or is_launch_location(l.name):
                continue
            if (l.name or "").startswith(LAUNCH_LOCATION_PREFIX):
                raise CountError(f"GPU location {l.name!r} is named like a launch-records location, not as one")
            gpu.add(l)
        for loc, ev in tr.events:
            on_gpu = loc in gpu
            if isinstance(ev, otf2.events.Enter):
                name = ev.region.name
                if not on_gpu:
                    host_regions[name] += 1
                if on_gpu:
                    kernels_by_loc[loc.name] += 1
                    kernel_t.append(ev.time)
                    kernel_corr[_correlation(ev)] += 1
                elif name.startswith("cuLaunchKernel"):
                    launches_by_loc[loc.name] += 1
                    launch_t.append(ev.time)
                    names[name] += 1
                    launch_corr[_correlation(ev)] += 1
                elif name in (step_region, "user:" + step_region):
                    steps.append([ev.time, None])
            elif (
                isinstance(ev, otf2.events.Leave)
                and not on_gpu
                and ev.region.name in (step_region, "user:" + step_region)
                and steps
            ):
                steps[-1][1] = ev.time
            elif on_gpu and type(ev).__name__ in ("RmaGet", "RmaPut"):
                copies_by_loc[loc.name] += 1
    ticks_per_ms = resolution / 1e3
    windows = []
    for i, (enter, leave) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else (leave or enter) + int(tail_ms * ticks_per_ms)
        windows.append((enter, end))
    launch_t.sort()
    kernel_t.sort()

    def in_window(ts, a, b):
        return bisect.bisect_left(ts, b) - bisect.bisect_left(ts, a)

    per_step = []
    for i, (a, b) in enumerate(windows):
        nl, nk = in_window(launch_t, a, b), in_window(kernel_t, a, b)
        per_step.append(
            {"step": i, "launches": nl, "kernels": nk, "ratio": (nk / nl) if nl else None, "ms": (b - a) / ticks_per_ms}
        )
    nl, nk = sum(launches_by_loc.values()), sum(kernels_by_loc.values())
    return {
        "trace": str(anchor),
        "launches": nl,
        "kernels": nk,
        "copies": sum(copies_by_loc.values()),
        "ratio": (nk / nl) if nl else None,
        "launches_by_location": dict(launches_by_loc),
        "kernels_by_location": dict(kernels_by_loc),
        "copies_by_location": dict(copies_by_loc),
        "launch_regions": dict(names),
        "kernels_linked": _linked(kernel_corr, launch_corr),
        "host_enters": sum(host_regions.values()),
        "top_host_regions": dict(host_regions.most_common(8)),
        "host_regions": dict(host_regions),
        "step_windows": len(windows),
        "steps_complete": sum(1 for s in per_step if s["launches"] and s["kernels"] >= s["launches"]),
        "min_step_ratio": min((s["ratio"] for s in per_step if s["ratio"] is not None), default=None),
        "per_step": per_step,
    }


def count_summary(path) -> dict:
    """The launches, kernels and host figures of one experiment, for a caller that counts many (in
    worker processes): an experiment that cannot be counted gives ``error`` instead of raising."""
    try:
        c = count(Path(path))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one bad experiment must not cost the others (CountError too)
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {k: c[k] for k in ("launches", "kernels", "kernels_linked", "host_enters", "top_host_regions")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--json", default=None)
    p.add_argument("--step-region", default="user:ds:step")
    p.add_argument("--tail-ms", type=float, default=1000.0)
    args = p.parse_args(argv)
    try:
        out = count(args.trace, args.step_region, args.tail_ms)
    except CountError as exc:
        print(f"scorep_count: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(out, indent=1)
    if args.json:
        Path(args.json).write_text(text)
    short = {k: v for k, v in out.items() if k != "per_step"}
    print(json.dumps(short, indent=1))
    print("per step (launches/kernels):", " ".join(f"{s['launches']}/{s['kernels']}" for s in out["per_step"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
