"""Differences between two results folders' metrics and verdicts (``make kick-tires`` against the
shipped ``expected/reference-results/``; ``tests/test_reference.py``).

Compared: every value under ``world_sizes`` of ``metrics.json`` (floats to a relative 1e-9, so a
different summation order is not a difference; NaN equals NaN) and the verdict of every claim in
``verdicts.json``. Not compared: when and where the results were made (``created``, ``sources``,
provenance paths).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from dnabert_scaling.errors import ArtifactError

REL = 1e-9


def differences(a, b, path: str = "world_sizes", limit: int = 50) -> list[str]:
    """Where ``a`` (fresh) and ``b`` (shipped) differ, as 'path: fresh != shipped' lines."""
    out: list[str] = []
    _walk(a, b, path, out, limit)
    return out


def _walk(a, b, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{path}.{k}: only in the fresh results")
            elif k not in a:
                out.append(f"{path}.{k}: only in the shipped results")
            else:
                _walk(a[k], b[k], f"{path}.{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)} shipped")
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, f"{path}[{i}]", out, limit)
    elif (
        isinstance(a, float)
        and isinstance(b, (int, float))
        and not isinstance(b, bool)
        or isinstance(b, float)
        and isinstance(a, (int, float))
        and not isinstance(a, bool)
    ):
        if math.isnan(a) and math.isnan(b):
            return
        if not math.isclose(a, b, rel_tol=REL, abs_tol=1e-15):
            out.append(f"{path}: {a!r} != {b!r}")
    elif a != b:
        out.append(f"{path}: {a!r} != {b!r}")


def _load(folder: Path, name: str) -> dict:
    path = folder / name
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{path}: missing") from None
    except ValueError as exc:
        raise ArtifactError(f"{path}: not JSON ({exc})") from None


def compare_results(fresh: Path, shipped: Path) -> list[str]:
    """Differences of metrics (world sizes) and claim verdicts between two results folders."""
    diffs = differences(_load(fresh, "metrics.json").get("world_sizes"), _load(shipped, "metrics.json").get("world_sizes"))
    verdicts = [{c["id"]: c["verdict"] for c in _load(f, "verdicts.json").get("claims", [])} for f in (fresh, shipped)]
    diffs += differences(verdicts[0], verdicts[1], "verdicts")
    return diffs
