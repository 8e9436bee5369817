"""``dnabert-scaling summarize TRACE [--json FILE]``: where one trace's GPU time goes, per rank.

Figures (per rank, computed on unions of intervals so overlapping work counts once):

* ``compute_s``  = |U compute|  (every non-NCCL kernel)
* ``nccl_s``     = |U nccl|,  ``nccl_kernel_sum_s`` = sum of NCCL kernel durations
* ``overlap_s``  = |U compute ∩ U nccl|, ``overlap_ratio`` = overlap / |U nccl| (HTA's
  definition; null without NCCL)
* ``exposed_comm_s``   = |U nccl - U compute|
* ``exposed_memcpy_s`` = |U memory - U compute - U nccl|
* ``idle_s``     = total - |U all|
* ``total_s``    = last GPU end - first GPU start

compute + exposed comm + exposed memcpy + idle = total holds exactly: the four are a partition
of [first start, last end), computed in integer nanoseconds (also reported under ``ns``) by
``analysis.partition.partition_ns``, the same partition ``analyze`` applies to each measured step.
Plus per-stream busy time and role (``analysis.partition.stream_role``: the category of >= 90% of
the stream's GPU time, else mixed), the kernels with the largest summed time, and the trace's
completeness (``analysis.completeness``: launches against the GPU activities found for them).

Several traces (``summarize T0 T1 ...``) are read as the ranks of one run; traces that carry no rank
of their own take their place in the list as their rank.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dnabert_scaling import intervals as iv
from dnabert_scaling.analysis.partition import partition_ns, stream_role
from dnabert_scaling.errors import ArtifactError, escape_hidden
from dnabert_scaling.layout import ANCHOR
from dnabert_scaling.options import positive_int
from dnabert_scaling.traces.classify import distinct_short
from dnabert_scaling.traces.model import Trace

TOP_KERNELS = 10


def _s(ns: int) -> float:
    return ns / 1e9


def summarize_rank(gpu: pd.DataFrame, top: int = TOP_KERNELS) -> dict:
    """The summary figures of one rank's GPU table (see the module docstring)."""
    if len(gpu) == 0:
        raise ValueError("no GPU activity")
    cat = gpu["category"].to_numpy()
    nccl_rows = gpu[cat == "nccl"]
    first = int(gpu["start_ns"].min())
    last = int(gpu["end_ns"].max())
    part = {k: int(v[0]) for k, v in partition_ns(gpu, np.array([first]), np.array([last])).items()}
    nccl_sum_ns = int((nccl_rows["end_ns"] - nccl_rows["start_ns"]).sum())
    kinds = gpu["kind"].to_numpy()
    is_kernel = kinds == "kernel"
    return {
        "kernel_count": int(is_kernel.sum()),
        "nccl_kernel_count": int((is_kernel & (cat == "nccl")).sum()),
        "memcpy_count": int((kinds == "memcpy").sum()),
        "memset_count": int((kinds == "memset").sum()),
        "compute_s": _s(part["compute"]),
        "nccl_s": _s(part["nccl_union"]),
        "nccl_kernel_sum_s": _s(nccl_sum_ns),
        "overlap_s": _s(part["overlap"]),
        "overlap_ratio": (part["overlap"] / part["nccl_union"]) if part["nccl_union"] else None,
        "exposed_comm_s": _s(part["exposed_comm"]),
        "exposed_memcpy_s": _s(part["exposed_memcpy"]),
        "idle_s": _s(part["idle"]),
        "total_s": _s(part["window"]),
        "ns": {
            "first_start": first,
            "last_end": last,
            "total": part["window"],
            "busy": part["busy"],
            "compute": part["compute"],
            "nccl": part["nccl_union"],
            "nccl_kernel_sum": nccl_sum_ns,
            "overlap": part["overlap"],
            "exposed_comm": part["exposed_comm"],
            "exposed_memcpy": part["exposed_memcpy"],
            "idle": part["idle"],
        },
        "collectives": _collectives(nccl_rows),
        "streams": _streams(gpu),
        "top_kernels": _top_kernels(gpu, top),
    }


def _streams(gpu: pd.DataFrame) -> list[dict]:
    """Per (device, stream): activities, kernels, busy time and the stream's role."""
    cat = gpu["category"].to_numpy()
    is_kernel = gpu["kind"].to_numpy() == "kernel"
    dev_a = gpu["device"].to_numpy()
    st_a = gpu["stream"].to_numpy()
    dur = (gpu["end_ns"] - gpu["start_ns"]).to_numpy(np.int64)
    streams = []
    for dev, st in sorted(set(zip(dev_a.tolist(), st_a.tolist()))):
        sel = (dev_a == dev) & (st_a == st)
        rows = gpu[sel]
        by_cat = {c: int(dur[sel & (cat == c)].sum()) for c in ("compute", "nccl", "memory")}
        busy = iv.total_length(iv.union(rows["start_ns"].to_numpy(np.int64), rows["end_ns"].to_numpy(np.int64)))
        streams.append(
            {
                "device": int(dev),
                "stream": int(st),
                "activities": int(sel.sum()),
                "kernels": int((sel & is_kernel).sum()),
                "busy_s": _s(busy),
                "role": stream_role(by_cat),
            }
        )
    return streams


def _top_kernels(gpu: pd.DataFrame, top: int) -> list[dict]:
    """The ``top`` kernel names by summed time (ties by name), with category, count and share."""
    is_kernel = gpu["kind"].to_numpy() == "kernel"
    kdur = (gpu["end_ns"] - gpu["start_ns"]).to_numpy(np.int64)[is_kernel]
    kernel_sum = int(kdur.sum())
    codes, uniq = pd.factorize(gpu["name"][is_kernel], sort=False)
    sums = np.bincount(codes, weights=kdur, minlength=len(uniq)).astype(np.int64) if len(uniq) else np.zeros(0, np.int64)
    counts = np.bincount(codes, minlength=len(uniq)) if len(uniq) else np.zeros(0, np.int64)
    kcat = gpu["category"].to_numpy()[is_kernel]
    first_row = np.full(len(uniq), -1, np.int64)
    first_row[codes[::-1]] = np.arange(codes.size)[::-1]
    names = np.asarray(uniq, dtype=object)
    order = sorted(range(len(uniq)), key=lambda i: (-int(sums[i]), str(names[i])))[:top]
    return [
        {
            "name": str(names[i]),
            "category": str(kcat[first_row[i]]),
            "count": int(counts[i]),
            "sum_s": _s(int(sums[i])),
            "share": (int(sums[i]) / kernel_sum) if kernel_sum else None,
        }
        for i in order
    ]


def _collectives(nccl_rows: pd.DataFrame) -> dict:
    """NCCL kernels by collective (``unknown`` where the trace names none): count and summed time."""
    collectives = {}
    if len(nccl_rows):
        named = nccl_rows["collective"].astype(object).where(nccl_rows["collective"].notna(), "unknown")
        for c, rows in nccl_rows.groupby(named.to_numpy(), sort=True):
            collectives[str(c)] = {"count": int(len(rows)), "sum_s": _s(int((rows["end_ns"] - rows["start_ns"]).sum()))}
    return collectives


def summarize(trace: Trace, top: int = TOP_KERNELS) -> dict:
    """``{"source", "format", "ranks": [{"rank", ...figures}]}`` for every rank of ``trace``."""
    from dnabert_scaling.analysis.completeness import trace_completeness

    complete = trace_completeness(trace)
    ranks = []
    gpu = trace.gpu
    rank_col = gpu["rank"].to_numpy()
    for r in trace.rank_ids:
        m = trace.ranks[r]
        entry = {"rank": r, "source": m.get("source"), "tool": m.get("tool"), "world_size": m.get("world_size")}
        entry.update(summarize_rank(gpu[rank_col == r], top))
        entry["completeness"] = complete["per_rank"][str(r)]
        entry["warnings"] = list(m.get("warnings", []))
        ranks.append(entry)
    sources = sorted({str(m.get("source")) for m in trace.ranks.values()})
    return {"source": sources[0] if len(sources) == 1 else sources, "format": trace.format, "ranks": ranks}


def _fmt_s(x) -> str:
    return "-" if x is None else f"{x:.6f}"


def format_table(summary: dict) -> str:
    """A readable text rendering of ``summarize``'s result."""
    out = []
    src = summary["source"]
    out.append(f"trace: {src if isinstance(src, str) else ', '.join(src)}  (format {summary['format']})")
    cols = [
        ("rank", "rank"),
        ("kernels", "kernel_count"),
        ("nccl", "nccl_kernel_count"),
        ("compute_s", "compute_s"),
        ("nccl_s", "nccl_s"),
        ("nccl_sum_s", "nccl_kernel_sum_s"),
        ("overlap", "overlap_ratio"),
        ("exp_comm_s", "exposed_comm_s"),
        ("exp_mem_s", "exposed_memcpy_s"),
        ("idle_s", "idle_s"),
        ("total_s", "total_s"),
        ("complete", "completeness"),
    ]
    rows = []
    for r in summary["ranks"]:
        row = []
        for _, k in cols:
            v = r[k] if k != "completeness" else _completeness_cell(r)
            if k == "overlap_ratio":
                row.append("-" if v is None else f"{v:.3f}")
            elif isinstance(v, float):
                row.append(_fmt_s(v))
            else:
                row.append(str(v))
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, (h, _) in enumerate(cols)]
    out.append("  ".join(h.rjust(w) for (h, _), w in zip(cols, widths)))
    for row in rows:
        out.append("  ".join(v.rjust(w) for v, w in zip(row, widths)))
    if any(_completeness_cell(r) != "yes" for r in summary["ranks"]):
        out.append("(complete: yes where every measured step holds all its kernels; NO: kernels are missing from "
                   "the rank's figures, so its kernel times read low and its idle high; unknown: the trace cannot tell; "
                   "each rank's completeness line below says why)")  # fmt: skip
    for r in summary["ranks"]:
        out.append("")
        out.append(_completeness_line(r))
        out.append(f"rank {r['rank']} streams:")
        for s in r["streams"]:
            out.append(
                f"  CUDA[{s['device']}:{s['stream']}]  {s['role']:<8} busy {s['busy_s']:.6f} s, "
                f"{s['activities']} activities ({s['kernels']} kernels)"
            )
        if r["collectives"]:
            out.append("  NCCL: " + ", ".join(f"{c} x{v['count']} ({v['sum_s']:.6f} s)" for c, v in r["collectives"].items()))
        out.append(f"rank {r['rank']} top kernels by summed time:")
        shown = distinct_short([k["name"] for k in r["top_kernels"]], 90, "...")  # cut in the middle, rows distinct
        for k, name in zip(r["top_kernels"], shown):
            share = "" if k["share"] is None else f" {100 * k['share']:5.1f}%"
            out.append(f"  {k['sum_s']:.6f} s{share}  x{k['count']:<6} [{k['category']}] {name}")
        for w in r["warnings"]:
            out.append(f"  warning: {w}")
    # kernel, stream and file names come from the trace: a control character in one (an ANSI escape) is shown
    # as its escape, never sent to the terminal
    return "\n".join(escape_hidden(line) for line in out)


def _completeness_cell(r: dict) -> str:
    """The table's word for a rank's completeness: yes, NO (INCOMPLETE: capitals, for its figures miss kernels), unknown."""
    from dnabert_scaling.analysis.completeness import COMPLETE, INCOMPLETE

    status = (r.get("completeness") or {}).get("status")
    return {COMPLETE: "yes", INCOMPLETE: "NO"}.get(str(status), "unknown")


def _completeness_line(r: dict) -> str:
    from dnabert_scaling.analysis.completeness import describe_rank

    c = r.get("completeness") or {}
    if c.get("status") == "unknown":
        return f"rank {r['rank']} completeness UNKNOWN: {c.get('reason')}"
    return f"completeness {str(c.get('status')).upper()}: {describe_rank(r['rank'], c)}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace",
        metavar="TRACE",
        nargs="+",
        help="OTF2 anchor, Score-P experiment directory, Kineto .json(.gz), or a run/traces directory; "
        "several: the ranks of one run",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the summary as JSON ('-' for stdout only)")
    parser.add_argument("--force", action="store_true", help="replace an existing --json file that is not a summary")
    parser.add_argument("--top", type=positive_int, default=TOP_KERNELS, help="number of top kernels to list")
    parser.add_argument("--world-size", type=positive_int, default=None, help="expected ranks 0..N-1 (directory input)")


def _not_summary(data) -> str | None:
    """Why a JSON document is not a summary this command wrote (its keys: ``source``, ``format``, ``ranks``), or None."""
    if isinstance(data, dict) and {"source", "format", "ranks"} <= set(data) and isinstance(data["ranks"], list):
        return None
    return "a JSON file without a summary's source, format and ranks"


def _json_safe(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_safe(v) for v in obj]
    return obj


def run(args) -> int:
    from dnabert_scaling.traces.loader import read_run_traces, read_trace

    paths = [Path(t) for t in args.trace]
    if args.json is not None and args.json != "-":
        from dnabert_scaling.outputs import foreign_json, output_path, refuse_overlap, writable_file

        try:
            output_path(args.json)
        except argparse.ArgumentTypeError as exc:
            raise ArtifactError(f"--json: {exc}") from None
        refuse_overlap([("--json", args.json)], paths)
        writable_file(args.json, "--json")
        foreign = None if args.force else foreign_json(Path(args.json), _not_summary)
        if foreign:
            raise ArtifactError(
                f"--json: exists and is not a summary written by summarize ({foreign}); not overwritten: give another "
                "path, or --force to replace it",
                args.json,
            )
    p = paths[0]
    if len(paths) > 1:
        trace = read_run_traces(paths, world_size=args.world_size)
    elif p.is_dir() and not (p / ANCHOR).is_file():
        trace = read_run_traces(p, world_size=args.world_size)
    else:
        # one file or experiment directory (which may hold several MPI ranks): --world-size still checks it
        trace = read_run_traces([p], world_size=args.world_size) if args.world_size else read_trace(p)
    summary = _json_safe(summarize(trace, args.top))
    try:
        if args.json == "-":
            json.dump(summary, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        print(format_table(summary))
        sys.stdout.flush()
    except BrokenPipeError:  # `summarize ... | head`: the reader stopped listening; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if args.json:
        from dnabert_scaling.outputs import write_text_atomic

        out = Path(args.json)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(out, json.dumps(summary, indent=2) + "\n")
        except OSError as exc:
            raise ArtifactError(f"cannot write the JSON summary ({exc.strerror})", out) from None
    return 0
