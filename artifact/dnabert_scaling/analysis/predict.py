"""Predict the multi-GPU scaling from a one-GPU trace (``dnabert-scaling predict``).

Under weak scaling every GPU runs the one-GPU step's compute; what changes with the world size N
is the gradient all-reduce. A world-size-1 DDP trace recorded with the bucket hook
(``dnabert_scaling.run.train.buckets``) says when each gradient bucket was handed to its all-reduce and how
many bytes it holds. The model replays the measured steps of that trace on the GPU:

* every compute/copy activity keeps its measured duration and cannot start before it started in
  the one-GPU trace (the host launched it no earlier) nor before the previous activity on its
  stream ended (in-order streams);
* bucket b is ready on the GPU when the last activity launched before its all-reduce call (the
  end of the hook's range: the NCCL stream waits for all work launched before the call, the
  hook's own division kernel included) ends; its all-reduce starts when the bucket is ready and
  the previous all-reduce on the NCCL stream has finished, and lasts ``alpha + 2 (N - 1) / N * bytes / busbw(N, bytes)`` (ring all-reduce; the
  nccl-tests bus-bandwidth convention);
* an activity launched after the step's last bucket hook (the end of backward and the optimizer)
  waits for the step's last all-reduce: DDP makes the compute stream wait for the reduced
  gradients;
* a compute kernel that starts while an all-reduce runs lasts ``contention`` times longer
  (NCCL's kernels take SMs and memory bandwidth from it).

The predicted timeline is then measured with exactly the analysis' own per-step partition
(``partition.rank_step_table``), so predicted and measured figures share one definition: step
time, exposed communication, overlap ratio, AllReduce kernel time; weak-scaling efficiency is the
one-GPU step time over the predicted one. Each figure has a band: the model rerun at the
favourable and at the unfavourable end of the parameter ranges (bus bandwidth, alpha, contention).

Predictions are information, never verdicts: ``check`` judges claims on measurements only. Bus bandwidth
and alpha: the node layouts and their sources are in ``predict_layouts``.

Modules: ``predict_layouts`` (node layouts, bus bandwidth and alpha tables with their sources),
``predict_replay`` (the trace's profile, the replay and the bands), ``predict_compare`` (measured
figures and the comparison); this one reads the sources and holds the command.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dnabert_scaling.analysis.predict_compare import (  # noqa: F401 - the public names stay importable from here
    GOAL,
    compare,
    contention_from_trace,
    measured_from_metrics,
    measured_from_trace,
    measured_run,
)
from dnabert_scaling.analysis.predict_layouts import (  # noqa: F401
    ALPHA_S,
    BUSBW_BPS,
    CONTENTION,
    DEFAULT_CONTENTION,
    MAX_WORLD_SIZE,
    DEFAULT_NODE,
    GB,
    NODES,
    US,
    Band,
    NodeLayout,
    busbw_range_note,
    check_busbw,
    busbw_used,
    layout_gpu_note,
    table_links_used,
    trace_gpu_name,
    within,
)
from dnabert_scaling.analysis.predict_replay import (  # noqa: F401
    FIGURES,
    PREDICTED_KERNEL,
    CommModel,
    Profile,
    comm_models,
    launch_times,
    predict,
    profile_from_trace,
    simulate,
    step_figures,
)
from dnabert_scaling.errors import ArtifactError, escape_hidden, loads_json, read_text_file
from dnabert_scaling.layout import RunLayout, SweepLayout, parse_run_name
from dnabert_scaling.metrics_schema import MetricsFile
from dnabert_scaling.outputs import foreign_json, output_path
from dnabert_scaling.provenance import below_cwd

DEFAULT_GPUS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SCHEMA = "dnabert-scaling/predictions/1"


# --- sources ----------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:  # a file, UTF-8 without NUL, each key once, nested no deeper than the parser goes
        data = loads_json(read_text_file(path, "a JSON file"))
    except (ValueError, RecursionError) as exc:
        raise ArtifactError(
            f"cannot read JSON: {'nested too deeply' if isinstance(exc, RecursionError) else exc}", path
        ) from None
    if not isinstance(data, dict):
        raise ArtifactError("expected a JSON object", path)
    return data


def _run_from_results(results: Path, metrics: MetricsFile, ws: int) -> Path | None:
    """The traced run of world size ``ws`` that metrics.json was built from (under one of its
    sources, relative to the working folder or to the results folder), or None."""
    entry = metrics.entry(ws)
    name = entry.traced.run if entry and entry.traced else None
    if not name:
        return None
    # a run of one sweep is named by its folder; of several sweeps analysed together, by its path below
    # the folder holding them all (h200-b8/ws1-none-r0): the run's path ends with the name either way
    leaf = Path(name).name
    for src in metrics.sources:
        for base in (Path.cwd(), results.parent, results):
            for d in (base / src / leaf, base / src):
                if ("/" + d.as_posix()).endswith("/" + name) and RunLayout(d).traces.is_dir():
                    return d
    return None


@dataclass
class Source:
    """The one-GPU trace predict starts from and everything read with it, resolved before any trace
    is read or anything written. ``reads``: every file and folder the command will read for it (the
    results folder's metrics.json, each run folder it resolves through metrics.sources with its
    records and traces, the given run folder or trace): ``output_target`` keeps the output out of
    all of them, and the traces are read from here only (``read_source``, ``contention_traces``)."""

    given: Path
    traces: list[Path] | Path  # a run folder's per-rank traces, or the given trace
    measured: dict[int, dict[str, Any]]  # a results folder's measured figures per world size
    contention_traces: dict[int, list[Path]]  # a results folder's multi-GPU runs: their traces
    desc: dict[str, Any]
    reads: list[Path] = field(default_factory=list)


def _run_reads(run) -> list[Path]:
    """What reading a run folder reads: its traces and records (named one by one: a symlinked one lies
    elsewhere; first, so that an output equal to one is named as such), then the folder itself."""
    from dnabert_scaling.analysis.runs import trace_paths

    layout = RunLayout(run.path)
    return [below_cwd(p) for p in (*trace_paths(run), layout.summary, layout.manifest, run.path)]


def resolve_source(path: Path) -> Source:
    """The ``Source`` of a results folder, a run folder or a trace path (nothing but records read)."""
    from dnabert_scaling.analysis.runs import is_run_dir, load_run, trace_paths

    path = Path(path)
    if not path.exists():
        raise ArtifactError("does not exist", path)
    src = Source(path, path, {}, {}, {"given": str(path)})  # traces: set below, once the run is found
    if path.is_dir() and (path / "metrics.json").is_file():
        src.reads.append(path / "metrics.json")
        metrics = MetricsFile.from_json(_read_json(path / "metrics.json"), "", path / "metrics.json")
        src.measured = measured_from_metrics(metrics)
        for n in src.measured:
            run_n = _run_from_results(path, metrics, n)
            if run_n is not None:
                info = load_run(run_n)
                src.reads += _run_reads(info)
                src.contention_traces[n] = trace_paths(info)
        run1 = _run_from_results(path, metrics, 1)
        if run1 is None:
            raise ArtifactError(
                "cannot find the traced world-size-1 run that metrics.json names under its sources "
                f"{metrics.sources}; give that run folder or its traces instead",
                path / "metrics.json",
            )
        path = run1
        src.desc["results"] = src.desc["given"]
    if path.is_dir() and not is_run_dir(path) and (runs := SweepLayout(path).run_dirs()):
        traced = [r.name for r in runs if (n := parse_run_name(r.name)) and n.world_size == 1 and n.tracer != "none"]
        raise ArtifactError(
            "a sweep folder, not one run: give its results folder (`analyze ... --out`), or its traced world-size-1 run"
            + (f" ({path / traced[0]})" if traced else "")
            + " or that run's traces",
            path,
        )
    if not (path.is_dir() and is_run_dir(path) and RunLayout(path).traces.is_dir()):
        src.traces = path  # trace files or a folder of them (a results folder's run without records)
        src.reads.append(path)
        return src
    run = load_run(path)
    if run.world_size != 1:
        raise ArtifactError(f"this run has world size {run.world_size}; predict starts from a world-size-1 run", path)
    src.traces = trace_paths(run)
    if not src.traces:
        raise ArtifactError("the run has no traces (traces/rank*.json.gz or traces/scorep-rank*/)", path)
    gpu_name = (run.summary.get("provenance") or {}).get("gpu_name")
    src.desc |= {
        "run": str(below_cwd(path)),
        "ddp_buckets": run.summary.get("ddp_buckets"),
        "ddp": run.summary.get("ddp"),
        "gpu_name": gpu_name.strip() if isinstance(gpu_name, str) and gpu_name.strip() else None,
    }
    if run.summary.get("ddp") is False:
        raise ArtifactError("this run ran without DDP (--no-ddp): it has no buckets to predict from", path)
    src.reads += _run_reads(run)
    return src


def read_source(src: Source) -> Any:
    """The one-GPU trace of a resolved ``Source``."""
    from dnabert_scaling.traces import read_run_traces

    if isinstance(src.traces, list):
        return read_run_traces(src.traces, world_size=1)
    return read_run_traces(src.traces)


def load_source(path: Path) -> tuple[Any, dict[int, dict[str, Any]], dict[str, Any]]:
    """(one-GPU trace, measured figures found with it, description) for a results folder, a run
    folder or trace paths."""
    src = resolve_source(path)
    return read_source(src), src.measured, src.desc


def _measured_reads(path: Path) -> list[Path]:
    """What ``--measured PATH`` reads (``measured_from_trace``): the path, and a run folder's records and traces."""
    from dnabert_scaling.analysis.runs import is_run_dir, load_run

    path = Path(path)
    return [path, *_run_reads(load_run(path))] if path.is_dir() and is_run_dir(path) else [path]


# What each band option accepts: (bounds in the option's unit, the bounds in words), from the
# plausible ranges of ``predict_layouts``.
_BAND_BOUNDS: dict[str, tuple[tuple[float, float], str]] = {
    "--intra-busbw": (
        (BUSBW_BPS[0] / GB, BUSBW_BPS[1] / GB),
        "a bus bandwidth from 1e-06 GB/s (1 kB/s) to 1e+05 GB/s (100 TB/s)",
    ),
    "--inter-busbw": (
        (BUSBW_BPS[0] / GB, BUSBW_BPS[1] / GB),
        "a bus bandwidth from 1e-06 GB/s (1 kB/s) to 1e+05 GB/s (100 TB/s)",
    ),
    "--alpha-us": ((ALPHA_S[0] / US, ALPHA_S[1] / US), "a latency from 0 to 1e+06 us (1 s)"),
    "--contention": (CONTENTION, f"a slow-down factor from {CONTENTION[0]:g} to {CONTENTION[1]:g}"),
}


def _parse_band(text: str, what: str) -> Band:
    """``MID`` or ``MID,LOW,HIGH`` of option ``what``: LOW <= MID <= HIGH, each finite and inside the
    option's plausible range (``_BAND_BOUNDS``)."""
    bounds, words = _BAND_BOUNDS[what]
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise ArtifactError(f"{what}: expected MID or MID,LOW,HIGH numbers, not {text!r}") from None
    if len(vals) == 1:
        vals = vals * 3
    if len(vals) != 3:
        raise ArtifactError(f"{what}: expected MID or MID,LOW,HIGH numbers, not {text!r}")
    out = [v for v in vals if not within(v, bounds)]
    if out:
        raise ArtifactError(f"{what}: {out[0]:g} is out of range: expected {words}, not {text!r}")
    if not vals[1] <= vals[0] <= vals[2]:
        raise ArtifactError(f"{what}: expected MID or MID,LOW,HIGH with LOW <= MID <= HIGH, not {text!r}")
    return Band(vals[0], vals[1], vals[2], "given")


def _parse_gpus(text: str) -> list[int]:
    items = [x.strip() for x in text.split(",")]
    if not all(x.isascii() and x.isdigit() for x in items):  # int() would also take "1_6" and other scripts' digits
        raise ArtifactError(f"--gpus must be a comma-separated list of integers, not {text!r}")
    given = [int(x) for x in items]
    if len(set(given)) != len(given):
        raise ArtifactError(f"--gpus names a world size twice: {text!r}")
    vals = sorted(given)
    if not vals or min(vals) < 2 or max(vals) > MAX_WORLD_SIZE:
        raise ArtifactError(f"--gpus: world sizes must be from 2 to {MAX_WORLD_SIZE:,}, got {text!r}")
    return vals


def layout_from_args(args) -> NodeLayout:
    if args.node not in NODES:
        raise ArtifactError(f"--node {args.node!r}: unknown layout; known: {', '.join(NODES)}")
    lay = NODES[args.node]
    changes: dict[str, Any] = {}
    if args.gpus_per_node is not None:
        if not 1 <= args.gpus_per_node <= MAX_WORLD_SIZE:
            raise ArtifactError(f"--gpus-per-node must be from 1 to {MAX_WORLD_SIZE:,}, not {args.gpus_per_node}")
        changes["gpus_per_node"] = args.gpus_per_node
    for opt, attr, scale in (
        ("intra_busbw", "intra_busbw", GB),
        ("inter_busbw", "inter_busbw", GB),
        ("alpha_us", "alpha_intra", US),
        ("alpha_us", "alpha_inter", US),
    ):
        text = getattr(args, opt)
        if text is not None:
            b = _parse_band(text, "--" + opt.replace("_", "-"))
            changes[attr] = Band(b.mid * scale, b.low * scale, b.high * scale, "given")
    if not changes:
        return lay
    return replace(lay, **changes, name=lay.name + " (changed by options)")


def refuse_unused(args, gpus: list[int], busbw: dict[int, dict[str, Any]], layout: NodeLayout) -> None:
    """Refuse what the forecast would read and then not use, before any trace is read: a --busbw file of a world
    size not asked for, bandwidth or latency options where every world size asked has its measured --busbw file
    (the model uses the measurement, with no latency term), and --inter-busbw where every world size asked fits in
    one node."""
    for n, data in busbw.items():
        if n not in gpus:
            raise ArtifactError(
                f"--busbw: a file of world size {n}, which --gpus ({', '.join(map(str, gpus))}) does not ask for: it would "
                f"not be used; add {n} to --gpus, or leave the file out",
                data["_path"],
            )
    given = [f"--{o.replace('_', '-')}" for o in ("intra_busbw", "inter_busbw", "alpha_us") if getattr(args, o) is not None]
    if given and all(n in busbw for n in gpus):
        raise ArtifactError(
            f"{', '.join(given)}: every world size asked ({', '.join(map(str, gpus))}) has a measured --busbw file, which "
            "the model uses instead (with no latency term); leave them out"
        )
    if args.inter_busbw is not None and all(n <= layout.gpus_per_node for n in gpus if n not in busbw):
        raise ArtifactError(
            f"--inter-busbw: every world size asked without a --busbw file fits in one node of {layout.gpus_per_node} "
            "GPUs, so no inter-node bandwidth is used; leave it out, or ask for a larger world size or fewer --gpus-per-node"
        )


def read_busbw(paths: list[Path]) -> dict[int, dict[str, Any]]:
    """``--busbw`` files by world size, each checked (``predict_layouts.check_busbw``); two for one
    world size are refused (one would silently replace the other)."""
    out: dict[int, dict[str, Any]] = {}
    for f in paths:
        data = _read_json(f)
        ws = check_busbw(data, f)
        if ws in out:
            raise ArtifactError(f"--busbw: a second file for world size {ws} (also {out[ws]['_path']}); give one", f)
        out[ws] = {**data, "_path": str(f)}
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "source",
        type=Path,
        metavar="RESULTS_OR_TRACE",
        help="a results folder (metrics.json; its world-size-1 run is found under its sources), "
        "a world-size-1 run folder, or one world-size-1 trace (Kineto .json[.gz] or OTF2)",
    )
    p.add_argument("--gpus", default=",".join(str(g) for g in DEFAULT_GPUS), help="world sizes to predict")
    p.add_argument("--node", default=DEFAULT_NODE, help=f"node layout: {', '.join(NODES)}")
    p.add_argument("--gpus-per-node", type=int, default=None, help="override the layout's GPUs per node")
    p.add_argument(
        "--intra-busbw",
        default=None,
        metavar="GBPS[,LOW,HIGH]",
        help="override intra-node busbw (GB/s; 1e-06 to 1e+05, i.e. 1 kB/s to 100 TB/s)",
    )
    p.add_argument(
        "--inter-busbw", default=None, metavar="GBPS[,LOW,HIGH]", help="override inter-node busbw (GB/s; 1e-06 to 1e+05)"
    )
    p.add_argument(
        "--alpha-us",
        default=None,
        metavar="US[,LOW,HIGH]",
        help="override the all-reduce latency (us; 0 to 1e+06, i.e. at most 1 s)",
    )
    p.add_argument(
        "--busbw",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a 'dnabert-scaling busbw' JSON; used for its world size instead of the table (repeatable)",
    )
    p.add_argument(
        "--contention",
        default=None,
        metavar="X[,LOW,HIGH]",
        help=f"slow-down of compute kernels that start during an all-reduce (default {DEFAULT_CONTENTION.mid}, "
        f"band {DEFAULT_CONTENTION.low}-{DEFAULT_CONTENTION.high}, or measured from --measured traces; "
        f"{CONTENTION[0]:g} to {CONTENTION[1]:g})",
    )
    p.add_argument(
        "--measured",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="a multi-rank run folder to compare with, whose records say each rank had a GPU of its own "
        "(a rehearsal, or traces without their run's records, are refused; repeatable)",
    )
    p.add_argument(
        "--out",
        type=output_path,
        default=None,
        help="predictions.json to write (default: inside the results folder, else ./predictions.json; "
        "never inside the source tree's expected/); an existing file is replaced only when it is "
        "a predictions file written by predict",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out file that is not a predictions file")


def output_target(args: argparse.Namespace, reads: list[Path]) -> Path:
    """Where predictions.json goes, checked before any trace is read: ``--out``, else beside a results
    folder given as the source, else ``./predictions.json``; a target inside the source tree's
    ``expected/``, given or by default, is refused (it would modify the shipped evidence), and the target may not be, hold or lie
    inside anything in ``reads``: every file and folder the command reads (``Source.reads``, the
    ``--busbw`` files, what ``--measured`` reads)."""
    from dnabert_scaling.outputs import refuse_overlap, writable_file

    given = Path(args.source)
    results = given.is_dir() and (given / "metrics.json").is_file()
    target = args.out
    if target is None:
        target = given / "predictions.json" if results else Path("predictions.json")
    option = "--out" if args.out else "predictions.json (or give --out)"
    refuse_overlap([(option, target)], reads)  # first: an input named as the output is the plainest diagnosis
    writable_file(target, option)  # refuses a target inside the shipped evidence or a run, given or by default
    if not getattr(args, "force", False):
        foreign = _not_predictions(target)
        if foreign:
            raise ArtifactError(
                f"{option}: exists and is not a predictions file written by predict ({foreign}); "
                "not overwritten: give another path, or --force to replace it",
                target,
            )
    return target


def _not_predictions(path: Path) -> str | None:
    """Why the existing file at ``path`` is not one that predict wrote (judged by its content: a JSON
    object whose schema is ``SCHEMA``), or None where it is, or where nothing is there."""

    def ours(data) -> str | None:
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema != SCHEMA:
            return f"a JSON file with schema {schema!r}" if schema else "a JSON file without predict's schema field"
        return None

    return foreign_json(path, ours)


def _contention(given: Band | None, measured: dict[int, dict[str, Any]], fallbacks: list[dict[str, str]]) -> Band:
    """``--contention`` (parsed), else the band of the measured multi-GPU traces, else the default (a fallback)."""
    if given is not None:
        return given
    seen = [m["contention"] for m in measured.values() if m.get("contention")]
    if seen:
        # band: the spread of the traces, widened by 2% (one trace says little about its own noise)
        return Band(
            float(np.median(seen)),
            min(seen) * 0.98,
            max(seen) * 1.02,
            f"measured: median of {len(seen)} multi-GPU traces against the one-GPU trace",
        )
    fallbacks.append(
        {
            "what": "contention",
            "used": f"default {DEFAULT_CONTENTION.mid} (band {DEFAULT_CONTENTION.low}-{DEFAULT_CONTENTION.high})",
            "why": "no multi-GPU trace to measure it from",
        }
    )
    return DEFAULT_CONTENTION


def run(args: argparse.Namespace) -> int:
    gpus = _parse_gpus(args.gpus)
    layout = layout_from_args(args)
    given_contention = None if args.contention is None else _parse_band(args.contention, "--contention")
    busbw = read_busbw(args.busbw)
    refuse_unused(args, gpus, busbw, layout)
    source = resolve_source(args.source)
    for m in args.measured:  # refused before any trace is read: a rehearsal, or no record of where its ranks ran
        measured_run(m)
    reads = [*source.reads, *args.busbw, *(p for m in args.measured for p in _measured_reads(m))]
    target = output_target(args, reads)
    from dnabert_scaling.traces import read_run_traces

    trace = read_source(source)
    refuse_incomplete(trace)
    profile = profile_from_trace(trace, source.desc.get("ddp_buckets"))
    replayed = trace.ranks[trace.rank_ids[0]] if len(trace.rank_ids) else {}
    measured, desc = source.measured, source.desc
    fallbacks: list[dict[str, str]] = []
    for n, paths in source.contention_traces.items():  # a results folder's multi-GPU runs: their contention
        measured[n]["contention"] = contention_from_trace(read_run_traces(paths), profile)
    for m in args.measured:
        n, figures = measured_from_trace(m, profile)
        measured[n] = figures
    contention = _contention(given_contention, measured, fallbacks)
    missing_bw = [n for n in gpus if n not in busbw]
    if missing_bw:
        fallbacks.append(
            {
                "what": "busbw",
                "used": busbw_used(args, layout, missing_bw),
                "why": f"no --busbw measurement given to predict for world sizes {missing_bw}",
            }
        )
    result = predict(profile, gpus, layout, contention, busbw)
    source_info = {**desc, **profile.info, "sha256": replayed.get("sha256")}
    # the trace's GPU (the run's record, else the trace's own device names) against the layout's: said where the
    # layout's table gives the links of some world size, with what the replay approximated
    source_info["gpu_name"] = desc.get("gpu_name") or trace_gpu_name(replayed)
    if (mixed := layout_gpu_note(layout, source_info["gpu_name"])) is not None and table_links_used(args, layout, gpus, busbw):
        source_info["notes"] = [*(source_info.get("notes") or []), mixed]
    if (outside := busbw_range_note(busbw, source_info["bucket_bytes"])) is not None:
        source_info["notes"] = [*(source_info.get("notes") or []), outside]
    out = {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "predictions, never verdicts: claims are judged on measurements only",
        # what the forecast replayed, by content: the report shows it only for the set whose
        # metrics.json names this trace (its world-size-1 inputs' sha256)
        "source": source_info,
        "model": {
            "all_reduce": "alpha + 2(N-1)/N * bytes / busbw(N, bytes), buckets in order on one NCCL stream",
            "node": layout.as_dict(),
            "contention": contention.as_dict(),
            "band": "low/high: the model at the favourable/unfavourable end of busbw, alpha and contention",
        },
        "baseline": result["baseline"],
        "world_sizes": result["world_sizes"],
        "comparison": compare(result, measured),
        "goal": GOAL,
        "fallbacks": fallbacks,
    }
    from dnabert_scaling.analysis.cli import _json_default
    from dnabert_scaling.outputs import write_text_atomic

    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps(out, indent=2, default=_json_default) + "\n")
    print(format_summary(out))
    print(f"wrote {target}")
    return 0


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def _num(x, digits: int, sign: bool = False) -> str:
    return "-" if x is None else f"{x:{'+' if sign else ''}.{digits}f}"


def format_summary(out: dict[str, Any]) -> str:
    lines = [
        f"prediction from {out['source'].get('source')} ({out['source'].get('buckets_per_step'):.0f} buckets, "
        f"{out['source'].get('gradient_bytes', 0) / 2**20:.1f} MiB per step); node {out['model']['node']['name']}",
        f"  N=1 (measured): step {_ms(out['baseline']['step_time_s'])} ms",
        "     N   step ms [band]            exposed comm ms   overlap   AllReduce ms   efficiency",
    ]
    for key, e in out["world_sizes"].items():
        st, ov, eff = e["step_time_s"], e["overlap_ratio"]["mid"], e["efficiency"]["mid"]
        lines.append(
            f"  {int(key):>4}   {_ms(st['mid']):>7} [{_ms(st['low'])}, {_ms(st['high'])}]"
            f"   {_ms(e['exposed_comm_s']['mid']):>12}   {_num(ov, 2):>7}   "
            f"{_ms(e['allreduce_kernel_s']['mid']):>12}   {_num(eff, 3):>10}"
        )
    for key, c in out["comparison"].items():
        err = c.get("error") or {}
        if "step_time_rel" in err:
            ov = err.get("overlap_ratio_abs")
            lines.append(
                f"  measured N={key}: step {_ms(c['measured'].get('step_time_s'))} ms, predicted "
                f"{_ms(c['predicted']['step_time_s'])} ms (error {100 * err['step_time_rel']:+.1f}%), overlap error "
                f"{_num(ov, 3, sign=True)}; within goal: {c.get('within_goal')}"
            )
    for f in out["fallbacks"]:
        lines.append(f"  fallback: {f['what']}: {f['used']} ({f['why']})")
    for note in out["source"].get("notes") or []:  # what the replay approximated: said here, not only in the file
        lines.append(f"  note: {note}")
    return "\n".join(escape_hidden(line) for line in lines)  # names from records and traces: never control characters


def refuse_incomplete(trace) -> None:
    """Refuse a trace that lost activities (completeness INCOMPLETE: steps whose launches found fewer activities
    than the bound): the replay would leave the lost kernels out and forecast steps shorter than the run's, and
    present the trace's own step as measured."""
    from dnabert_scaling.analysis.completeness import INCOMPLETE, trace_completeness

    found = trace_completeness(trace)
    if found["status"] == INCOMPLETE:
        ratio = found.get("ratio")
        share = "" if ratio is None else f"{100 * ratio:.2f}% of its launches have their GPU activity; "
        raise ArtifactError(
            f"the trace is incomplete ({share}{found.get('reason')}): a replay would leave the lost activities out; "
            "predict needs a complete world-size-1 trace",
            trace.ranks[trace.rank_ids[0]].get("source") if len(trace.rank_ids) else None,
        )
