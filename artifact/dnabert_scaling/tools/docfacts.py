"""The facts the documents quote, read from the shipped files (for ``python -m dnabert_scaling.tools docs``).

Sources, all inside the repository: ``expected/reference/<set>/`` (the shipped runs: sweep.json,
run folders, run summaries), ``expected/reference-results/<set>/`` (metrics.json, verdicts.json),
``expected/claims.toml``, the benchmark outputs in ``expected/reference/h200-bench/``,
``docs/timings/*.json`` (``scripts/bench_timing.py``), and two figures that only a command gives:
``predict`` on each set whose traced run holds ``ds:bucket`` ranges and ``analyze`` on the real
incomplete Score-P trace of ``tests/data/traces/``, both run into a temporary folder.

Every key is read with a default: a set recorded later, with more or fewer keys, is listed with
what it has, and a missing figure is written as "-" rather than guessed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError

INCOMPLETE_SCOREP_RUN = Path("tests/data/traces/scorep84-h200-dnabert2-incomplete/ws1-scorep-r0")
TIMINGS = Path("docs/timings")


def percent(x: Any, digits: int = 0) -> str:
    """A share as a percentage with ``digits`` decimals; "-" for anything that is not a number."""
    return "-" if not isinstance(x, (int, float)) else f"{x * 100:.{digits}f}%"


def get(d: Any, *keys: str | int, default: Any = None) -> Any:
    """``d[k1][k2]...``, or ``default`` where a level is missing or not a mapping."""
    for k in keys:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, dict) and str(k) in d:
            d = d[str(k)]
        else:
            return default
    return d


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise ArtifactError(f"cannot read: {e.strerror}", path) from None
    except json.JSONDecodeError as e:
        raise ArtifactError(f"not valid JSON: {e}", path) from None


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dnabert_scaling", *args], cwd=root, capture_output=True, text=True, timeout=600)


@dataclass
class ShippedSet:
    """One shipped set: its runs in expected/reference/<name>/, its results in expected/reference-results/<name>/."""

    root: Path
    name: str

    @property
    def reference(self) -> Path:
        return self.root / "expected" / "reference" / self.name

    @property
    def results(self) -> Path:
        return self.root / "expected" / "reference-results" / self.name

    @cached_property
    def metrics(self) -> dict:
        path = self.results / "metrics.json"
        return read_json(path) if path.is_file() else {}

    @cached_property
    def verdicts(self) -> dict:
        path = self.results / "verdicts.json"
        return read_json(path) if path.is_file() else {}

    @property
    def has_results(self) -> bool:
        return bool(self.metrics)

    def run_dirs(self) -> list[Path]:
        if not self.reference.is_dir():
            return []
        return sorted(p for p in self.reference.iterdir() if p.is_dir() and re.match(r"ws\d+-", p.name))

    def untraced_runs(self) -> tuple[int, int]:
        """(untraced runs with DDP, untraced runs without the DDP wrapper)."""
        names = [p.name for p in self.run_dirs() if "-none-" in p.name]
        noddp = sum(n.endswith("-noddp") for n in names)
        return len(names) - noddp, noddp

    def world_sizes(self) -> dict[str, dict]:
        ws = get(self.metrics, "world_sizes", default={})
        return dict(sorted(ws.items(), key=lambda kv: int(kv[0]))) if isinstance(ws, dict) else {}

    def traced(self, ws: str | None = None) -> dict:
        """The traced entry of world size ``ws`` (default: the smallest measured one)."""
        sizes = self.world_sizes()
        if not sizes:
            return {}
        return get(sizes, ws if ws is not None else next(iter(sizes)), "traced", default={}) or {}

    def gpu(self, ws: str | None = None) -> dict:
        return get(self.traced(ws), "gpu", default={}) or {}

    @cached_property
    def traced_summary(self) -> dict:
        """summary.json of the first traced run of the set (for what only the run records: bucket layout, tokens)."""
        for run in self.run_dirs():
            if "-none-" not in run.name and (run / "summary.json").is_file():
                return read_json(run / "summary.json")
        return {}

    def scorep_driver_callbacks(self) -> str | None:
        """The ``SCOREP_CUDA_DRIVER_CALLBACKS`` the first traced run's Score-P experiment ran with (its scorep.cfg):
        ``launch`` or ``records`` (the project's patches) or ``all``; None where no Score-P experiment says."""
        for run in self.run_dirs():
            cfg = run / "traces" / "scorep-rank0" / "scorep.cfg"
            if "-none-" not in run.name and cfg.is_file():
                m = re.search(r"^SCOREP_CUDA_DRIVER_CALLBACKS='?([a-z]+)'?\s*$", cfg.read_text(errors="replace"), re.MULTILINE)
                return m.group(1) if m else None
        return None

    def buckets(self) -> dict | None:
        """The traced run's DDP bucket layout when it ran with the ds:bucket hook, else None."""
        b = get(self.traced_summary, "ddp_buckets")
        return b if isinstance(b, dict) and "ds:bucket" in str(b.get("comm_hook", "")) else None

    def claim_verdicts(self) -> dict[str, str]:
        return {c.get("id", "?"): c.get("verdict", "-") for c in get(self.verdicts, "claims", default=[]) or []}

    def completeness(self) -> list[dict]:
        """Every world size's completeness record (status, share, launches, found)."""
        out = []
        for ws, entry in self.world_sizes().items():
            c = get(entry, "traced", "completeness", default={}) or {}
            ranks = get(c, "per_rank", default={}) or {}
            launches = sum(get(r, "launches", default=0) or 0 for r in ranks.values())
            found = sum(get(r, "found", default=0) or 0 for r in ranks.values())
            not_recorded = sorted({k for r in ranks.values() for k in (get(r, "kinds_not_recorded", default=[]) or [])})
            out.append(
                {
                    "world_size": ws,
                    "status": c.get("status", "unknown"),
                    "launches": launches,
                    "found": found,
                    "share": found / launches if launches else None,
                    "kinds_not_recorded": not_recorded,
                }
            )
        return out


@dataclass
class Facts:
    """Everything the generated blocks quote, read lazily from the repository at ``root``."""

    root: Path

    @cached_property
    def sets(self) -> list[ShippedSet]:
        """Every set with runs in expected/reference/ or results in expected/reference-results/, by name."""
        names: set[str] = set()
        ref = self.root / "expected" / "reference"
        if ref.is_dir():
            names |= {p.name for p in ref.iterdir() if p.is_dir() and any(q.name.startswith("ws") for q in p.iterdir())}
        res = self.root / "expected" / "reference-results"
        if res.is_dir():
            names |= {p.name for p in res.iterdir() if (p / "metrics.json").is_file()}
        return [ShippedSet(self.root, n) for n in sorted(names)]

    def set(self, name: str) -> ShippedSet | None:
        return next((s for s in self.sets if s.name == name), None)

    @cached_property
    def bench_folders(self) -> list[Path]:
        """The folders of expected/reference/ that hold benchmark outputs rather than runs."""
        ref = self.root / "expected" / "reference"
        if not ref.is_dir():
            return []
        run_sets = {s.name for s in self.sets}
        return sorted(p for p in ref.iterdir() if p.is_dir() and p.name not in run_sets)

    @cached_property
    def claim_ids(self) -> list[str]:
        path = self.root / "expected" / "claims.toml"
        try:
            data = tomllib.loads(path.read_text())
        except OSError as e:
            raise ArtifactError(f"cannot read the claims: {e.strerror}", path) from None
        except tomllib.TOMLDecodeError as e:
            raise ArtifactError(f"not valid TOML: {e}", path) from None
        claims = data.get("claims", data.get("claim", []))
        if isinstance(claims, dict):
            ids = list(claims)
        else:
            ids = [c.get("id") for c in claims if isinstance(c, dict) and c.get("id")]
        return ids or sorted({cid for s in self.sets for cid in s.claim_verdicts()})

    def timing(self, name: str) -> dict | None:
        path = self.root / TIMINGS / f"{name}.json"
        return read_json(path) if path.is_file() else None

    def bench(self, relative: str) -> Any:
        path = self.root / "expected" / "reference" / relative
        return read_json(path) if path.is_file() else None

    @cached_property
    def predictions(self) -> dict[str, dict]:
        """``predict`` (default options) on every set whose traced run holds ds:bucket ranges, into a temporary folder
        (``{"refused": message}`` where it ends with an error)."""
        out = {}
        for s in self.sets:
            if s.buckets() is None or not s.has_results:
                continue
            with tempfile.TemporaryDirectory(prefix="docs-predict-") as tmp:
                target = Path(tmp) / "predictions.json"
                proc = _cli(self.root, "predict", str(s.results.relative_to(self.root)), "--out", str(target))
                if proc.returncode != 0:  # the document says so rather than the tool failing on a new set
                    lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
                    out[s.name] = {"refused": lines[-1]}
                    continue
                out[s.name] = read_json(target)
        return out

    @cached_property
    def incomplete_scorep(self) -> dict | None:
        """The completeness record of rank 0 of the real Score-P 8.4 trace that lost its kernels (``analyze``)."""
        run = self.root / INCOMPLETE_SCOREP_RUN
        if not run.is_dir():
            return None
        with tempfile.TemporaryDirectory(prefix="docs-analyze-") as tmp:
            proc = _cli(self.root, "analyze", str(INCOMPLETE_SCOREP_RUN), "--out", str(Path(tmp) / "results"))
            if proc.returncode != 0:
                raise ArtifactError(f"analyze failed: {proc.stderr.strip()[-600:]}", run)
            metrics = read_json(Path(tmp) / "results" / "metrics.json")
        return get(metrics, "world_sizes", "1", "traced", "completeness", "per_rank", "0")
