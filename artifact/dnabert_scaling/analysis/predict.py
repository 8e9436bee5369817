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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dnabert_scaling.analysis.predict_compare import (  # noqa: F401 - the public names stay importable from here
    GOAL,
    compare,
    contention_from_trace,
    measured_from_metrics,
    measured_from_trace,
)
from dnabert_scaling.analysis.predict_layouts import (  # noqa: F401
    DEFAULT_CONTENTION,
    DEFAULT_NODE,
    GB,
    NODES,
    US,
    Band,
    NodeLayout,
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
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import RunLayout
from dnabert_scaling.metrics_schema import MetricsFile
from dnabert_scaling.outputs import output_path
from dnabert_scaling.provenance import below_cwd

DEFAULT_GPUS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SCHEMA = "dnabert-scaling/predictions/1"


# --- sources ----------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"cannot read JSON: {exc}", path) from None
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
    for src in metrics.sources:
        for base in (Path.cwd(), results.parent, results):
            for d in (base / src / name, base / src):
                if d.name == name and RunLayout(d).traces.is_dir():
                    return d
    return None


def load_source(path: Path) -> tuple[Any, dict[int, dict[str, Any]], dict[str, Any]]:
    """(one-GPU trace, measured figures found with it, description) for a results folder, a run
    folder or trace paths."""
    from dnabert_scaling.analysis.runs import is_run_dir, load_run, trace_paths
    from dnabert_scaling.traces import read_run_traces

    path = Path(path)
    if not path.exists():
        raise ArtifactError("does not exist", path)
    measured: dict[int, dict[str, Any]] = {}
    desc: dict[str, Any] = {"given": str(path)}
    if path.is_dir() and (path / "metrics.json").is_file():
        metrics = MetricsFile.from_json(_read_json(path / "metrics.json"), "", path / "metrics.json")
        measured = measured_from_metrics(metrics)
        for n, m in measured.items():
            m["run"] = _run_from_results(path, metrics, n)
        run1 = _run_from_results(path, metrics, 1)
        if run1 is None:
            raise ArtifactError(
                "cannot find the traced world-size-1 run that metrics.json names under its sources "
                f"{metrics.sources}; give that run folder or its traces instead",
                path / "metrics.json",
            )
        path = run1
        desc["results"] = desc["given"]
    if path.is_dir() and is_run_dir(path) and RunLayout(path).traces.is_dir():
        run = load_run(path)
        if run.world_size != 1:
            raise ArtifactError(f"this run has world size {run.world_size}; predict starts from a world-size-1 run", path)
        paths = trace_paths(run)
        if not paths:
            raise ArtifactError("the run has no traces (traces/rank*.json.gz or traces/scorep-rank*/)", path)
        desc["run"] = str(below_cwd(path))
        desc["ddp_buckets"] = run.summary.get("ddp_buckets")
        desc["ddp"] = run.summary.get("ddp")
        if run.summary.get("ddp") is False:
            raise ArtifactError("this run ran without DDP (--no-ddp): it has no buckets to predict from", path)
        trace = read_run_traces(paths, world_size=1)
    else:
        trace = read_run_traces(path)
    return trace, measured, desc


def _parse_band(text: str, what: str) -> Band:
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise ArtifactError(f"{what}: expected MID or MID,LOW,HIGH numbers, not {text!r}") from None
    if len(vals) == 1:
        vals = vals * 3
    if len(vals) != 3 or not (vals[1] <= vals[0] <= vals[2]) or vals[1] <= 0:
        raise ArtifactError(f"{what}: expected positive MID or MID,LOW,HIGH with LOW <= MID <= HIGH, not {text!r}")
    return Band(vals[0], vals[1], vals[2], "given")


def _parse_gpus(text: str) -> list[int]:
    try:
        vals = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ArtifactError(f"--gpus must be a comma-separated list of integers, not {text!r}") from None
    if not vals or min(vals) < 2:
        raise ArtifactError(f"--gpus: world sizes must be at least 2, got {text!r}")
    return vals


def layout_from_args(args) -> NodeLayout:
    if args.node not in NODES:
        raise ArtifactError(f"--node {args.node!r}: unknown layout; known: {', '.join(NODES)}")
    lay = NODES[args.node]
    changes: dict[str, Any] = {}
    if args.gpus_per_node is not None:
        if args.gpus_per_node < 1:
            raise ArtifactError("--gpus-per-node must be at least 1")
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
    p.add_argument("--intra-busbw", default=None, metavar="GBPS[,LOW,HIGH]", help="override intra-node busbw (GB/s)")
    p.add_argument("--inter-busbw", default=None, metavar="GBPS[,LOW,HIGH]", help="override inter-node busbw (GB/s)")
    p.add_argument("--alpha-us", default=None, metavar="US[,LOW,HIGH]", help="override the all-reduce latency (us)")
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
        f"band {DEFAULT_CONTENTION.low}-{DEFAULT_CONTENTION.high}, or measured from --measured traces)",
    )
    p.add_argument(
        "--measured",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="a multi-rank trace or run folder to compare with (repeatable)",
    )
    p.add_argument(
        "--out",
        type=output_path,
        default=None,
        help="predictions.json to write (default: inside the results folder, else ./predictions.json; "
        "never by default inside the source tree's expected/)",
    )


def _shipped_results() -> Path:
    """The source tree's ``expected/``: shipped, tracked results that only a release changes."""
    return Path(__file__).resolve().parents[3] / "expected"


def output_target(args: argparse.Namespace) -> Path:
    """Where predictions.json goes, checked before any work: ``--out``, else beside a results
    folder given as the source, else ``./predictions.json``; a default inside the source tree's
    ``expected/`` is refused (it would modify a tracked file), and no input is ever the target."""
    from dnabert_scaling.outputs import refuse_overlap, writable_file

    given = Path(args.source)
    results = given.is_dir() and (given / "metrics.json").is_file()
    target = args.out
    if target is None:
        target = given / "predictions.json" if results else Path("predictions.json")
        shipped = _shipped_results()
        if target.resolve() == shipped or shipped in target.resolve().parents:
            raise ArtifactError(
                f"would write {target} inside the shipped results folder {shipped} (tracked files); give --out FILE elsewhere",
                args.source,
            )
    option = "--out" if args.out else "predictions.json (or give --out)"
    writable_file(target, option)
    inputs = [given / "metrics.json" if results else given, *args.busbw, *args.measured]
    refuse_overlap([(option, target)], inputs)
    return target


def _contention(given: str | None, measured: dict[int, dict[str, Any]], fallbacks: list[dict[str, str]]) -> Band:
    """``--contention``, else the band of the measured multi-GPU traces, else the default (a fallback)."""
    if given is not None:
        return _parse_band(given, "--contention")
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
    target = output_target(args)
    busbw: dict[int, dict] = {}
    for f in args.busbw:
        data = _read_json(f)
        if not isinstance(data.get("world_size"), int) or not isinstance(data.get("sizes"), list) or not data["sizes"]:
            raise ArtifactError("not a busbw result (needs world_size and sizes)", f)
        if any(not isinstance(r, dict) or not r.get("bytes") or not r.get("busbw_Bps") for r in data["sizes"]):
            raise ArtifactError("busbw sizes need positive bytes and busbw_Bps", f)
        busbw[data["world_size"]] = {**data, "_path": str(f)}
    trace, measured, desc = load_source(args.source)
    profile = profile_from_trace(trace)
    fallbacks: list[dict[str, str]] = []
    for m in measured.values():  # a results folder's multi-GPU runs: their contention
        run_dir = m.pop("run", None)
        if run_dir is not None:
            from dnabert_scaling.analysis.runs import load_run, trace_paths
            from dnabert_scaling.traces import read_run_traces

            m["contention"] = contention_from_trace(read_run_traces(trace_paths(load_run(run_dir))), profile)
    for m in args.measured:
        n, figures = measured_from_trace(m, profile)
        measured[n] = figures
    contention = _contention(args.contention, measured, fallbacks)
    missing_bw = [n for n in gpus if n not in busbw]
    if missing_bw:
        fallbacks.append(
            {
                "what": "busbw",
                "used": f"table of node layout {layout.name}",
                "why": f"no measured busbw for world sizes {missing_bw}",
            }
        )
    result = predict(profile, gpus, layout, contention, busbw)
    out = {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": "predictions, never verdicts: claims are judged on measurements only",
        "source": {**desc, **profile.info},
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
    return "\n".join(lines)
