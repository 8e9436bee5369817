#!/usr/bin/env python3
"""Per measured step, the same configuration traced by Score-P and by torch.profiler, side by side.

    scripts/tracer_agreement.py SCOREP_SET TORCH_SET --out PREFIX

Each set is a sweep folder (``expected/reference/h200-scorep-b8`` and ``...-b8-torch``: world size
1, the same train options, recorded in one GPU call). Both are analysed with ``dnabert-scaling
analyze``; from each traced run's ``step_partition.csv`` the per-step kernel count, GPU compute
(busy) time, idle time, exposed copy time, step time and the forward/backward/optimizer GPU times
are put side by side, with the Score-P/torch ratio of the medians. Writes ``PREFIX.csv`` (one row
per step and tracer) and ``PREFIX.json`` (medians, ratios, the completeness figures of both).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

FIELDS = (
    "kernels",
    "compute_s",
    "idle_s",
    "exposed_memcpy_s",
    "step_time_s",
    "forward_gpu_s",
    "backward_gpu_s",
    "optimizer_gpu_s",
)


def analysed(folder: Path, tmp: Path):
    import pandas as pd

    out = tmp / folder.name
    proc = subprocess.run(
        [sys.executable, "-m", "dnabert_scaling", "analyze", str(folder), "--out", str(out)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"tracer_agreement: analyze {folder} failed:\n{proc.stderr[-2000:]}")
    parts = pd.read_csv(out / "tables" / "step_partition.csv")
    completeness = pd.read_csv(out / "tables" / "completeness.csv")
    return parts, completeness


def main(argv=None) -> int:
    import pandas as pd

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scorep_set", type=Path)
    p.add_argument("torch_set", type=Path)
    p.add_argument("--out", type=Path, required=True, help="output prefix (PREFIX.csv, PREFIX.json)")
    args = p.parse_args(argv)
    rows, summary = [], {"scorep_set": str(args.scorep_set), "torch_set": str(args.torch_set), "medians": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for tracer, folder in (("scorep", args.scorep_set), ("torch", args.torch_set)):
            parts, comp = analysed(folder, Path(tmp))
            parts = parts.assign(tracer=tracer)
            rows.append(parts[["tracer", "run", "step", *FIELDS]])
            summary["medians"][tracer] = {f: float(parts[f].median()) for f in FIELDS}
            summary[f"{tracer}_completeness"] = {
                "launches": int(comp["launches"].sum()),
                "found": int(comp["found"].sum()),
                "method": str(comp["method"].iloc[0]) if len(comp) else None,
            }
    table = pd.concat(rows, ignore_index=True)
    m = summary["medians"]
    summary["ratio_scorep_to_torch"] = {f: (m["scorep"][f] / m["torch"][f]) if m["torch"][f] else None for f in FIELDS}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out.with_suffix(".csv"), index=False)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{'per-step median':>18} {'Score-P':>12} {'torch':>12} {'ratio':>7}")
    for f in FIELDS:
        r = summary["ratio_scorep_to_torch"][f]
        print(f"{f:>18} {m['scorep'][f]:>12.6g} {m['torch'][f]:>12.6g} {'-' if r is None else f'{r:.3f}':>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
