"""``dnabert-scaling analyze``: metrics per world size from run folders or bare traces.

    dnabert-scaling analyze runs/ --out results/
    dnabert-scaling analyze --world-size 8 exp/scorep-rank0 ... exp/scorep-rank7 --out results/
    dnabert-scaling analyze --trace-manifest traces.toml --out results/

Writes ``results/metrics.json`` and ``results/tables/*.csv``. The whole results folder is built
anew beside the old one and swapped in by one rename when the analysis succeeded (``outputs.
replaced_folder``), so a failed, interrupted or killed analysis leaves the earlier results whole.
The other files ``check``, ``predict`` and ``report`` write there are carried over (and reported
stale); a folder holding anything else is refused, never deleted. No input may lie in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.metrics_schema import GpuMetrics, MetricsFile, Stat
from dnabert_scaling.options import positive_int
from dnabert_scaling.outputs import output_path, refuse_foreign, refuse_overlap, replaced_folder, writable_dir

METRICS = "metrics.json"
TABLES = "tables"
# written into a results folder by the other commands: kept when analyze replaces the folder
CARRIED = ("verdicts.json", "verdicts.txt", "predictions.json", "report.html", "report.ipynb")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", type=Path, help="sweep folders or run folders")
    p.add_argument("--out", type=output_path, required=True, help="results folder (replaced whole; holds nothing but results)")
    p.add_argument(
        "--world-size",
        nargs="+",
        action="append",
        default=[],
        metavar=("N", "TRACE"),
        help="bare per-rank traces of one world size (repeatable): --world-size 8 r0 r1 ... r7",
    )
    p.add_argument(
        "--trace-manifest",
        type=Path,
        action="append",
        default=[],
        help="TOML file with [[traced]] entries (world_size, tracer, traces, batch_size)",
    )
    p.add_argument("--batch-size", type=positive_int, default=None, help="per-rank batch of bare traces (for samples/s)")
    p.add_argument(
        "--expected",
        type=Path,
        default=None,
        help="claims file whose [sanity] bounds the analysis applies (default: expected/claims.toml)",
    )


def run(args: argparse.Namespace) -> int:
    from dnabert_scaling.analysis.metrics import build
    from dnabert_scaling.analysis.runs import (
        BareTraces,
        Inputs,
        check_one_configuration,
        discover,
        load_trace_manifest,
        parse_world_size,
    )

    writable_dir(args.out, "--out")
    inputs = discover(args.paths) if args.paths else Inputs()
    for group in args.world_size:
        n = parse_world_size(group[0])
        if len(group) < 2:
            raise ArtifactError(f"--world-size {n}: give the per-rank trace paths after the world size")
        inputs.bare.append(BareTraces(n, [Path(p) for p in group[1:]], batch_size=args.batch_size))
    for manifest in args.trace_manifest:
        inputs.bare += load_trace_manifest(manifest)
    if not inputs.runs and not inputs.bare:
        raise ArtifactError("nothing to analyse: give sweep/run folders, --world-size N TRACE..., or --trace-manifest")
    check_one_configuration(inputs)
    from dnabert_scaling.checker import default_claims_path, load_sanity_bounds

    claims = args.expected or default_claims_path()
    bounds = load_sanity_bounds(claims)  # read first: a claims path that is no claims file is named as such
    refuse_overlap([("--out", args.out)], [*input_paths(inputs, args.trace_manifest), claims])
    refuse_foreign(args.out, "--out", is_results_entry)
    metrics, tables = build(inputs, bound=bounds.trace_complete_min_share)
    write_results(args.out, metrics, tables)
    print(format_summary(metrics))
    print(f"analyze: wrote {args.out / 'metrics.json'} and {args.out / 'tables'}/", file=sys.stderr)
    stale = [name for name in ("verdicts.json", "verdicts.txt") if (args.out / name).exists()]
    if stale:  # kept as `check` wrote them; every reader knows them for another metrics.json
        print(
            f"analyze: {' and '.join(stale)} in {args.out} are for the previous metrics, stale until "
            f"`dnabert-scaling check {args.out}` runs (the report command runs it)",
            file=sys.stderr,
        )
    return 0


def input_paths(inputs, manifests: list[Path]) -> list[Path]:
    """Every file or folder an analysis reads: run folders, bare traces, trace manifests."""
    return [*(r.path for r in inputs.runs), *(p for b in inputs.bare for p in b.paths), *manifests]


def is_results_entry(rel: Path, is_dir: bool) -> bool:
    """Whether a name in a results folder is one the artifact writes there (``replaced_folder``)."""
    if rel.parts[0] == TABLES:
        return (is_dir and len(rel.parts) == 1) or (not is_dir and len(rel.parts) == 2 and rel.suffix == ".csv")
    if is_dir or len(rel.parts) != 1:
        return False
    name = rel.name  # or the temporary file of one of them, left by a killed writer
    return name in (METRICS, *CARRIED) or any(name.startswith(f".{n}.") and name.endswith(".partial") for n in CARRIED)


def write_results(out: Path, metrics: MetricsFile, tables: dict) -> None:
    """``out/metrics.json`` and ``out/tables/*.csv``, swapped in whole; what the other commands
    wrote in ``out`` is carried over as it was."""
    out = Path(out)
    with replaced_folder(out, "--out", is_results_entry) as fresh:
        (fresh / TABLES).mkdir()
        text = json.dumps(metrics.to_json(), indent=2, default=_json_default) + "\n"
        (fresh / METRICS).write_text(text, encoding="utf-8")
        for name, df in tables.items():
            df.to_csv(fresh / TABLES / f"{name}.csv", index=False)
        for name in CARRIED:
            if (out / name).is_file():
                shutil.copy2(out / name, fresh / name)


def _json_default(obj):
    import numpy as np

    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj)}")


def _fmt(stat: Stat | None, scale: float = 1e3, unit: str = "ms") -> str:
    if not stat or stat.median is None or not math.isfinite(stat.median):
        return "-"
    return f"{stat.median * scale:.2f} {unit}"


def _number(x: float | None, spec: str) -> str:
    """``x`` in ``spec``, or "-" where there is no finite figure (never a bare nan in the table)."""
    return format(x, spec) if x is not None and math.isfinite(x) else "-"


def _median(stat: Stat | None) -> float | None:
    return stat.median if stat else None


def format_summary(metrics: MetricsFile) -> str:
    lines = [
        f"# {metrics.label}",
        f"{'ws':>3} {'samples/s':>10} {'eff':>6} {'step':>10} {'compute':>10} {'exp.comm':>10} {'idle':>10} "
        f"{'AllReduce':>10} {'backward':>10} {'AR/bwd':>7} {'overlap':>8}",
    ]
    for key, e in metrics.world_sizes.items():
        gpu = (e.traced.gpu if e.traced else None) or GpuMetrics()
        eff = e.efficiency
        lines.append(
            f"{key:>3} {_number(_median(e.throughput.samples_per_s if e.throughput else None), '.1f'):>10} "
            f"{_number(eff, '.2f'):>6} "
            f"{_fmt(gpu.step_time_s):>10} {_fmt(gpu.compute_s):>10} {_fmt(gpu.exposed_comm_s):>10} "
            f"{_fmt(gpu.idle_s):>10} {_fmt(gpu.allreduce_kernel_s):>10} {_fmt(gpu.backward_gpu_s):>10} "
            f"{_number(_median(gpu.allreduce_to_backward), '.2f'):>7} {_number(_median(gpu.overlap_ratio), '.2f'):>8}"
        )
        if e.traced and e.traced.gpu_not_run_reason:
            lines.append(f"    GPU metrics not run: {e.traced.gpu_not_run_reason}")
        if e.traced and e.traced.completeness:
            lines.append(f"    trace {e.traced.completeness.status}: {e.traced.completeness.reason}")
    for f in metrics.fallbacks:
        lines.append(f"fallback: {f['what']}: {f['used']} ({f['reason']})")
    return "\n".join(lines)
