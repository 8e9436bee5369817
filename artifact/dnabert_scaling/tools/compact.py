"""Compact Kineto traces for shipping: GPU activity, launches and phases only.

A torch.profiler trace carries much that the analysis never reads: flow events, occupancy and
launch-geometry arguments, runtime calls that launch nothing (``cudaGetErrorString``,
``cudaStreamIsCapturing``, ...). ``compact_kineto`` keeps exactly what the readers use, with the
timestamps untouched (same text, so ns precision is kept):

- GPU events (``kernel``, ``gpu_memcpy``, ``gpu_memset``) with their ``device``, ``stream``,
  ``correlation`` and NCCL arguments (collective, message sizes, group);
- runtime/driver calls that launch kernels or copies (name and correlation);
- user annotations (the ``ds:*`` phases and the DDP/optimizer ranges);
- the trace-level metadata (``distributedInfo``, ``baseTimeNanoseconds``, versions, devices).

For HTA and other torch.profiler tools, each step range (``ds:warmup``, ``ds:step``, in time
order) is also written as ``ProfilerStep#N`` (N from 0), the annotation ``profiler.step()``
writes, unless the trace has those already; and the JSON is written with torch's separators
(``"rank": 0``), which HTA's rank detection expects.

Reading a compacted trace gives the same GPU and host tables as the original (tested).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.phases import STEP_RANGES

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
HOST_CATS = {"cuda_runtime", "cuda_driver"}
KEEP_ARGS = {
    "device",
    "stream",
    "correlation",
    "context",
    "External id",
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "dtype",
    "Process Group Name",
    "Process Group Description",
    "Process Group Ranks",
    "Rank",
    "Seq",
    "bytes",
    "memory bandwidth (GB/s)",
}
_LAUNCH_OR_COPY = re.compile(r"^(cu|cuda)(Launch|Memcpy|Memset)", re.IGNORECASE)


def _keep(event: dict) -> dict | None:
    cat = event.get("cat")
    if cat in GPU_CATS:
        pass
    elif cat in HOST_CATS:
        if not _LAUNCH_OR_COPY.match(str(event.get("name", ""))):
            return None
    elif cat == "user_annotation":
        pass
    elif event.get("ph") == "M":  # process/thread names
        pass
    else:
        return None
    out = {k: v for k, v in event.items() if k != "args"}
    args = event.get("args")
    if isinstance(args, dict):
        kept = {k: v for k, v in args.items() if k in KEEP_ARGS}
        if kept or event.get("ph") == "M":
            out["args"] = kept if event.get("ph") != "M" else args
    return out


def compact_kineto(src: str | Path, dst: str | Path) -> tuple[int, int]:
    """Write a compacted copy of ``src`` (.json or .json.gz) to ``dst`` (.json.gz).

    Returns (events in, events out)."""
    src, dst = Path(src), Path(dst)
    try:
        opener = gzip.open if src.suffix == ".gz" else open
        with opener(src, "rt") as fh:
            data = json.load(fh, parse_float=RawNumber)
    except (OSError, ValueError, EOFError) as exc:
        raise ArtifactError(f"cannot read Kineto trace: {exc}", src) from None
    events = data.get("traceEvents")
    if not isinstance(events, list):
        raise ArtifactError("no traceEvents list: not a Kineto trace", src)
    kept = [e for e in (_keep(ev) for ev in events if isinstance(ev, dict)) if e is not None]
    kept += profiler_steps(kept)
    out = {k: v for k, v in data.items() if k != "traceEvents"}
    out["traceEvents"] = kept
    out["compactedBy"] = "dnabert_scaling.tools.compact"
    dst.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(dst, "wt", compresslevel=9) as fh:
        fh.write(dumps(out))
    return len(events), len(kept)


def profiler_steps(events: list[dict]) -> list[dict]:
    """``ProfilerStep#N`` copies of the step ranges, none when the trace has ProfilerStep events."""
    if any(str(e.get("name", "")).startswith("ProfilerStep#") for e in events):
        return []
    steps = [
        e
        for e in events
        if e.get("cat") == "user_annotation"
        and e.get("ph") == "X"
        and str(e.get("name", "")).removeprefix("user:") in STEP_RANGES
    ]
    steps.sort(key=lambda e: float(e.get("ts", 0)))
    return [{**e, "name": f"ProfilerStep#{i}"} for i, e in enumerate(steps)]


class RawNumber(str):
    """A JSON number kept as its text, so timestamps are written back digit for digit."""


def dumps(obj) -> str:
    """JSON text of ``obj``; ``RawNumber`` values are written as they were read."""
    if isinstance(obj, RawNumber):
        return str.__str__(obj)
    if isinstance(obj, dict):
        return "{" + ", ".join(json.dumps(str(k)) + ": " + dumps(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ", ".join(dumps(v) for v in obj) + "]"
    return json.dumps(obj)
