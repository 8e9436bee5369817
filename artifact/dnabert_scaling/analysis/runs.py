"""Finding the inputs of an analysis: sweep folders, run folders, or bare traces.

- a sweep folder (``sweep.json``, run folders ``ws<N>-<tracer>-r<k>[-variant]``, ``busbw-ws<N>.json``);
- a run folder (``summary.json``, and ``manifest.json`` when the sweep ran it);
- bare per-rank traces recorded elsewhere: ``--world-size N PATH...`` on the command line, or a
  small TOML manifest with ``[[traced]]`` entries (``world_size``, ``tracer``, ``traces``, and
  optionally ``batch_size`` per rank).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnabert_scaling import run_records
from dnabert_scaling.errors import ArtifactError, read_json_object, read_text_file
from dnabert_scaling.layout import RunLayout, SweepLayout, parse_run_name
from dnabert_scaling.provenance import below_cwd


@dataclass
class RunInfo:
    path: Path
    world_size: int
    tracer: str
    repeat: int
    variant: str  # "ddp" or "noddp"
    status: str | None
    summary: dict[str, Any]
    manifest: dict[str, Any] | None = None
    # config.json's ``args`` (train's options, written when the run starts: a failed run has them too)
    config: dict[str, Any] | None = None
    # sweep.json's fallbacks, for a run of a sweep folder: what the sweep imposed on every run (data, rehearsal)
    sweep_fallbacks: list[dict[str, Any]] = field(default_factory=list)
    # set by ``discover`` where the runs lie in several folders: the run's path below the folder
    # that holds them all (``h200-b8/ws1-none-r0``), so that no two runs share a name
    qualified: str | None = None

    @property
    def name(self) -> str:
        """The run's name in metrics.json, tables and messages: its folder name, or where the runs come
        from several folders, its path below the one folder that holds them all (``_name_runs``)."""
        return self.qualified or self.path.name

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def device_type(self) -> str | None:
        """The device the run ran on, from its records even when it failed: ``summary.json``'s
        ``device_type``, else the one its ranks' placements agree on, else ``config.json``'s ``--device``
        where that names one (``cpu``, ``cuda``: train never falls back from either); None where the
        records cannot say (``--device auto`` of a run that ended before recording what it found)."""
        if self.summary.get("device_type"):
            return str(self.summary["device_type"])
        placed = {
            r["placement"].get("device_type")
            for r in self.summary.get("ranks") or []
            if isinstance(r, dict) and isinstance(r.get("placement"), dict)
        } - {None}
        if len(placed) == 1:
            return str(placed.pop())
        asked = (self.config or {}).get("device")
        return asked if asked in ("cpu", "cuda") else None

    @property
    def fallbacks_recorded(self) -> bool:
        """Whether the run recorded its fallbacks (``train`` does when it ends: a run that failed or
        stopped, or left no summary, did not, and which it took is unknown)."""
        return isinstance(self.summary.get("fallbacks"), list)


@dataclass
class BareTraces:
    """Traces of one world size recorded outside a sweep."""

    world_size: int
    paths: list[Path]
    tracer: str | None = None
    batch_size: int | None = None
    source: str = "command line"


@dataclass
class Inputs:
    runs: list[RunInfo] = field(default_factory=list)
    bare: list[BareTraces] = field(default_factory=list)
    busbw: dict[int, dict[str, Any]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


def parse_world_size(text: str) -> int:
    """A world size as written on the command line: digits without a leading zero ("08" is
    refused: a typo is not read as 8), at least 1."""
    if not text.isdigit() or text != str(int(text)) or int(text) < 1:
        raise ArtifactError(f"--world-size takes N (a positive integer without a leading zero) and then the traces, not {text!r}")
    return int(text)


def load_run(path: Path) -> RunInfo:
    path = Path(path)
    layout = RunLayout(path)
    summary_path, manifest_path = layout.summary, layout.manifest
    if not summary_path.is_file() and not manifest_path.is_file():
        raise ArtifactError("not a run folder: no summary.json or manifest.json", path)
    summary = read_json_object(summary_path) if summary_path.is_file() else {}
    manifest = read_json_object(manifest_path) if manifest_path.is_file() else None
    run_records.check_run_summary(summary, summary_path)
    if manifest is not None:
        run_records.check_manifest(manifest, manifest_path)
    config = None
    if layout.config.is_file():
        record = read_json_object(layout.config)
        run_records.check_config(record, layout.config)
        config = record["args"]
    m = parse_run_name(path.name)
    source = manifest or summary
    ws = source.get("world_size") or (m.world_size if m else None)
    tracer = source.get("tracer") or (m.tracer if m else None)
    for key in ("world_size", "tracer"):
        if manifest and key in manifest and key in summary and manifest[key] != summary[key]:
            raise ArtifactError(f"manifest.json says {key} {manifest[key]!r}, summary.json {summary[key]!r}: relabelled?", path)
    if m and ws is not None and m.world_size != ws:
        raise ArtifactError(f"the folder name says world size {m.world_size}, its record {ws}: relabelled?", path)
    if ws is None or tracer is None:
        raise ArtifactError(
            "cannot tell the run's world size and tracer (no manifest, and the folder name is not ws<N>-<tracer>-r<k>)", path
        )
    # the sweep's record, else the run's own, else its folder's name (a failed run's summary says neither)
    named = "noddp" if m and m.variant == "noddp" else "ddp"
    variant = (manifest or {}).get("variant") or ({True: "ddp", False: "noddp"}.get(summary.get("ddp")) or named)
    status = (manifest or {}).get("status") or summary.get("status")
    _refuse_stray_traces(layout, str(tracer))
    repeat = int((manifest or {}).get("repeat", m.repeat if m else 0))
    return RunInfo(path, int(ws), str(tracer), repeat, variant, status, summary, manifest, config)


def _refuse_stray_traces(layout: RunLayout, tracer: str) -> None:
    """A run folder holds the traces of the tracer it records and no other: a Kineto trace in a Score-P
    run (or a Score-P experiment in a torch run, or any trace in an untraced run) was put there by
    another run or by hand, and reading one kind while leaving the other unsaid would be a silent choice."""
    stray = layout.stray_traces(tracer)
    if stray:
        shown = ", ".join(str(p.relative_to(layout.root)) for p in stray[:3]) + (
            f" and {len(stray) - 3} more" if len(stray) > 3 else ""
        )
        raise ArtifactError(
            f"holds {shown}, a trace of another tracer than the run's ({tracer}, as its records say): a trace of another "
            "run? Move it out (or analyse it on its own with --world-size N TRACE...)",
            layout.root,
        )


def usable_throughput(run: RunInfo) -> bool:
    """A completed run whose throughput may enter the scaling figures: a run whose loss went
    NaN or infinite did not train, whatever its speed."""
    return run.ok and bool(run.summary.get("samples_per_s")) and run.summary.get("finite_loss") is not False


def is_run_dir(path: Path) -> bool:
    return RunLayout(path).is_run()


def discover(paths: list[Path]) -> Inputs:
    """Run folders and bus-bandwidth files under each path (a sweep folder or a run folder)."""
    inputs = Inputs()
    given: dict[Path, Path] = {}
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise ArtifactError("does not exist", p)
        if p.resolve() in given:
            raise ArtifactError(f"given twice (also as {given[p.resolve()]}): every run would count twice", p)
        given[p.resolve()] = p
        inputs.sources.append(str(below_cwd(p)))
        sweep = SweepLayout(p)
        if is_run_dir(p):
            _refuse_run_and_sweep(p, sweep)
            inputs.runs.append(load_run(p))
            continue
        if not p.is_dir():
            raise ArtifactError("not a sweep or run folder (for bare traces use --world-size N PATH...)", p)
        children = sweep.run_dirs()
        imposed = _sweep_fallbacks(sweep)
        for child in children:
            inputs.runs.append(load_run(child))
            inputs.runs[-1].sweep_fallbacks = imposed
        for n, bw in sweep.busbw_files().items():
            inputs.busbw[n] = read_json_object(bw)
        if not children:
            raise ArtifactError("holds no run folders (ws<N>-<tracer>-r<k>/ with summary.json)", p)
    _refuse_repeated_runs(inputs.runs)
    _name_runs(inputs.runs)
    return inputs


def _refuse_run_and_sweep(path: Path, sweep: SweepLayout) -> None:
    """A folder that is a run (its records at the top) and a sweep (sweep.json, run folders) at once: which
    one was meant is not for the analysis to guess, and reading either would ignore the other unsaid."""
    swept = [p.name for p in sweep.run_dirs()] + ([sweep.sweep.name] if sweep.sweep.exists() else [])
    if swept:
        run_files = [f.name for f in (RunLayout(path).summary, RunLayout(path).manifest) if f.is_file()]
        raise ArtifactError(
            f"is both a run folder ({', '.join(run_files)} at its top) and a sweep folder ({', '.join(sorted(swept)[:4])}"
            f"{' ...' if len(swept) > 4 else ''}): give the sweep's run folders or the run on their own, not a "
            "folder holding both",
            path,
        )


def _sweep_fallbacks(sweep: SweepLayout) -> list[dict[str, Any]]:
    """The fallbacks ``sweep.json`` records for every run of the sweep ([] without one)."""
    if not sweep.sweep.is_file():
        return []
    record = read_json_object(sweep.sweep)
    run_records.check_sweep(record, sweep.sweep)
    return list(record.get("fallbacks") or [])


def _name_runs(runs: list[RunInfo]) -> None:
    """Names that tell every run apart: a sweep's runs keep their folder names (``ws1-none-r0``); runs
    from several folders (two sweeps) are named by their path below the folder that holds them all
    (``h200-b8/ws1-none-r0``, ``h200-b32/ws1-none-r0``), since two sweeps name their runs alike."""
    paths = [os.path.abspath(r.path) for r in runs]
    if len({os.path.dirname(p) for p in paths}) <= 1:
        return
    top = os.path.commonpath(paths)
    for run, path in zip(runs, paths):
        run.qualified = os.path.relpath(path, top)


def _refuse_repeated_runs(runs: list[RunInfo]) -> None:
    """One run folder (a sweep and one of its runs both given) or two folders with the same summary
    (a copied run) would count one measurement twice."""
    where: dict[Path, Path] = {}
    by_summary: dict[str, Path] = {}
    for run in runs:
        real = run.path.resolve()
        if real in where:
            raise ArtifactError(f"run {run.name} is given twice ({where[real]} and {run.path}): it would count twice")
        where[real] = run.path
        if not run.ok or not run.summary:
            continue
        key = json.dumps(run.summary, sort_keys=True, default=str)
        if key in by_summary:
            raise ArtifactError(
                f"runs {by_summary[key]} and {run.path} have the same summary.json: one run copied, not two measurements"
            )
        by_summary[key] = run.path


def load_trace_manifest(path: Path) -> list[BareTraces]:
    """``[[traced]]`` entries of a TOML file; trace paths are relative to the file. Each value must
    have its type (``world_size`` and ``batch_size`` integers >= 1, not true; ``traces`` a list of
    paths; ``tracer`` one that writes traces and agrees with them: ``traces.loader.declared_tracer``,
    which also fills in an undeclared tracer from the traces)."""
    from dnabert_scaling.traces.loader import declared_tracer

    path = Path(path)
    text = read_text_file(path, "a trace manifest (TOML)", missing="trace manifest not found")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ArtifactError(f"cannot read trace manifest: {exc}", path) from None
    entries = data.get("traced")
    if not isinstance(entries, list) or not entries:
        raise ArtifactError("a trace manifest needs [[traced]] entries with world_size and traces", path)

    def positive(entry: dict, key: str, n: int) -> int | None:
        value = entry.get(key)
        if value is not None and (type(value) is not int or not 1 <= value < 1 << 31):
            shown = str(value).lower() if isinstance(value, bool) else repr(value)[:40]
            raise ArtifactError(f"[[traced]] entry {n}: {key} must be a positive integer, not {shown}", path)
        return value

    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ArtifactError(
                f"traced item {i + 1} is {repr(entry)[:40]}, not a table: write each set of traces as a [[traced]] table", path
            )
        unknown = set(entry) - {"world_size", "tracer", "traces", "batch_size"}
        if unknown:
            raise ArtifactError(f"[[traced]] entry {i + 1}: unknown keys {sorted(unknown)}", path)
        world_size = positive(entry, "world_size", i + 1)
        if world_size is None:
            raise ArtifactError(f"[[traced]] entry {i + 1}: world_size must be a positive integer", path)
        traces = entry.get("traces")
        if not isinstance(traces, list) or not traces or not all(isinstance(t, str) and t.strip() for t in traces):
            raise ArtifactError(f"[[traced]] entry {i + 1}: traces must be a list of paths", path)
        batch = positive(entry, "batch_size", i + 1)
        paths = [path.parent / t for t in traces]
        tracer = declared_tracer(entry.get("tracer"), paths, f"[[traced]] entry {i + 1}", path)
        out.append(BareTraces(world_size, paths, tracer, batch, str(path)))
    return out


# What makes two runs one configuration: per-rank work (model, batch, sequence length) and its
# arithmetic. Runs that differ in one of them cannot be compared or scaled against each other.
CONFIG_KEYS = ("model", "batch_size_per_rank", "seq_len_tokens", "precision", "attention", "device_type")


def check_one_configuration(inputs: Inputs) -> None:
    """Refuse inputs that mix configurations: completed runs that differ in a CONFIG_KEYS value
    (across all world sizes: efficiency divides one by another), two traced runs of one world size
    (``traced_run``), bare traces given twice for one world size, or bare traces whose batch differs
    from the runs'."""
    seen: dict[str, dict] = {}
    for run in inputs.runs:
        if not run.ok:
            continue
        for key in CONFIG_KEYS:
            if run.summary.get(key) is not None:
                seen.setdefault(key, {}).setdefault(_hashable(run.summary[key]), []).append(run.name)
    for key, values in seen.items():
        if len(values) > 1:
            shown = "; ".join(
                f"{v!r} in {', '.join(names[:3])}{f' and {len(names) - 3} more' if len(names) > 3 else ''}"
                for v, names in values.items()
            )
            raise ArtifactError(
                f"the runs mix configurations: {key} is {shown}. Analyse one configuration at a "
                "time (one sweep folder per configuration)"
            )
    for ws in sorted({r.world_size for r in inputs.runs}):
        traced_run(inputs.runs, ws)
    devices = sorted(seen.get("device_type", {}), key=str)
    if inputs.bare and devices and devices != ["cuda"]:
        raise ArtifactError(
            f"bare traces are GPU traces, the runs ran on {', '.join(map(str, devices))}: one device at a time "
            f"({inputs.bare[0].source})"
        )
    batches = seen.get("batch_size_per_rank", {})
    by_size: dict[int, str] = {}
    for bare in inputs.bare:
        if bare.world_size in by_size:
            raise ArtifactError(
                f"two sets of traces for world size {bare.world_size} ({by_size[bare.world_size]} and "
                f"{bare.source}); give one per world size"
            )
        by_size[bare.world_size] = bare.source
        traced = [r.name for r in inputs.runs if r.world_size == bare.world_size and r.tracer != "none"]
        if traced:
            raise ArtifactError(
                f"world size {bare.world_size} has traces twice: the traced run {traced[0]} and "
                f"{bare.source}; give one per world size"
            )
        if bare.batch_size is not None and batches and bare.batch_size not in batches:
            raise ArtifactError(
                f"traces of world size {bare.world_size} ({bare.source}) have batch_size "
                f"{bare.batch_size}, the runs {', '.join(map(str, batches))}: one configuration at a time"
            )


def traced_run(runs: list[RunInfo], ws: int) -> RunInfo | None:
    """The traced run of world size ``ws``, or None. A sweep records one per world size; two (from
    several sweeps or run folders given together) are refused naming both, since the analysis reads
    one traced run per world size and which one it read must never be a silent choice."""
    traced = [r for r in runs if r.world_size == ws and r.tracer != "none"]
    if len(traced) > 1:
        raise ArtifactError(
            f"world size {ws} has {len(traced)} traced runs ({', '.join(r.name for r in traced)}); the analysis "
            "reads one traced run per world size: analyse each sweep on its own, or give the run folders to use, "
            "one traced run per world size"
        )
    return traced[0] if traced else None


def _hashable(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value


def trace_paths(run: RunInfo) -> list[Path]:
    """The per-rank trace files / experiment folders of a traced run."""
    return RunLayout(run.path).trace_paths(run.tracer)
