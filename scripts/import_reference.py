#!/usr/bin/env python3
"""Bring the output of ``scripts/reference_run.sh`` into ``expected/reference/``.

    scripts/import_reference.py OUT_DIR_OR_TARBALL --name h200

For every sweep (``sweep-<label>``, e.g. ``sweep-b8``) it copies the run folders into
``expected/reference/<name>-<label>/`` with the Kineto traces compacted (GPU activity, launches
and phases only; the tables read from them are identical, see ``tools/compact.py``), the Score-P
experiments compacted likewise (``scripts/compact_scorep.py``), and without
the synthetic data files (their ``synthetic.json`` recipe is kept). Each run's original
``manifest.json`` is kept as written on the GPU machine; ``IMPORT.json`` records the sha256 of
every original file next to the file now shipped. Benchmark outputs go to
``expected/reference/<name>-bench/``. Existing folders are not overwritten unless ``--force``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "artifact"))
sys.path.insert(0, str(ROOT / "scripts"))

from dnabert_scaling.layout import ANCHOR, SCOREP_RANK_PREFIX  # noqa: E402
from dnabert_scaling.provenance import now_iso, sha256_file  # noqa: E402
from dnabert_scaling.tools.compact import compact_kineto  # noqa: E402

# bench_trace.json: the in-process form of scripts/bench_trace.py (archives of 2026-12-02); bench-trace.json:
# its lockstep form, which reference_run.sh writes since, under a name of its own so that neither is read as the other
BENCH_FILES = ("bench_train.json", "bench_trace.json", "bench-trace.json", "nvidia-smi.csv", "nvidia-topo.txt", "ref.log")


def import_sweep(src: Path, dst: Path) -> dict:
    record = {"source": src.name, "imported": now_iso(), "files": {}}
    experiments = sorted(p for p in src.rglob(f"{SCOREP_RANK_PREFIX}*") if p.is_dir() and (p / ANCHOR).is_file())
    for exp in experiments:  # Score-P experiments: compacted as a whole (scripts/compact_scorep.py)
        from compact_scorep import compact

        rel = exp.relative_to(src)
        size_in = sum(f.stat().st_size for f in exp.rglob("*") if f.is_file())
        counts = compact(exp, dst / rel)
        size_out = sum(f.stat().st_size for f in (dst / rel).rglob("*") if f.is_file())
        record["files"][rel.as_posix() + "/"] = {"compacted": True, "bytes_in": size_in, "bytes_out": size_out, **counts}
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src)
        if any(path.is_relative_to(e) for e in experiments):
            continue
        if rel.parts[0] == "synthetic-data" and path.name != "synthetic.json":
            record["files"][rel.as_posix()] = {
                "original_sha256": sha256_file(path),
                "shipped": None,
                "why": "synthetic data: regenerated from synthetic.json",
            }
            continue
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        entry = {"original_sha256": sha256_file(path)}
        if rel.parts[-2:-1] == ("traces",) and path.name.endswith(".json.gz"):
            n_in, n_out = compact_kineto(path, target)
            entry.update(compacted=True, events_in=n_in, events_out=n_out)
        else:
            shutil.copy2(path, target)
        entry["shipped_sha256"] = sha256_file(target)
        record["files"][rel.as_posix()] = entry
    (dst / "IMPORT.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", type=Path, help="reference_run.sh output folder, or a tarball of it (.tar.gz, .tar.xz)")
    p.add_argument("--name", required=True, help="label of the machine, e.g. h200")
    p.add_argument("--dest", type=Path, default=ROOT / "expected" / "reference")
    p.add_argument("--bench-label", default="bench", help="benchmarks go to <name>-<bench-label>/ (default bench)")
    p.add_argument("--force", action="store_true")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        src = args.source
        if src.is_file():
            with tarfile.open(src) as tar:
                tar.extractall(tmp, filter="data")
            dirs = [d for d in Path(tmp).iterdir() if d.is_dir()]
            src = dirs[0] if len(dirs) == 1 else Path(tmp)
        sweeps = sorted(d for d in src.iterdir() if d.is_dir() and d.name.startswith("sweep-"))
        if not sweeps:
            print(f"import_reference: no sweep-* folders in {args.source}", file=sys.stderr)
            return 2
        targets = [args.dest / f"{args.name}-{s.name.removeprefix('sweep-')}" for s in sweeps] + [
            args.dest / f"{args.name}-{args.bench_label}"
        ]
        existing = [t for t in targets if t.exists()]
        if existing and not args.force:
            print(f"import_reference: {existing[0]} exists (use --force to replace)", file=sys.stderr)
            return 2
        for t in existing:
            shutil.rmtree(t)
        for sweep, target in zip(sweeps, targets):
            rec = import_sweep(sweep, target)
            print(f"imported {sweep.name} -> {target} ({len(rec['files'])} files)")
        bench = targets[-1]
        present = [name for name in BENCH_FILES if (src / name).is_file()]
        if present:
            bench.mkdir(parents=True)
            for name in present:
                shutil.copy2(src / name, bench / name)
            print(f"imported benchmarks -> {bench}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
