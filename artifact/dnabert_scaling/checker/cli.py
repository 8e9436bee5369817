"""Files and the command line of ``dnabert-scaling check``."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import (
    FOLDER,
    MISSING,
    REGULAR_FILE,
    ArtifactError,
    loads_json,
    path_kind,
    read_text_file,
    regular_file,
)
from dnabert_scaling.checker.claims import load_claims, load_sanity_bounds
from dnabert_scaling.checker.evaluate import evaluate, exit_status
from dnabert_scaling.checker.names import FAIL, INVALID, _jsonable
from dnabert_scaling.checker.table import format_table
from dnabert_scaling.outputs import output_path


def default_claims_path() -> Path:
    """``expected/claims.toml`` here, else the one of the source tree this package runs from."""
    here = Path("expected") / "claims.toml"
    if here.is_file():
        return here
    tree = Path(__file__).resolve().parents[3] / "expected" / "claims.toml"  # checker/cli.py -> the source tree
    return tree if tree.is_file() else here


def metrics_path(results: str | Path) -> Path:
    """The metrics.json a ``check`` or ``report`` argument names: a results folder's (not yet looked
    for), or the file itself (``.json``); an ArtifactError saying what the argument is instead
    (missing, another file such as a table, a link loop)."""
    results = Path(results)
    kind = path_kind(results)
    if kind == MISSING:
        raise ArtifactError("does not exist (a results folder that `dnabert-scaling analyze ... --out` wrote)", results)
    if kind == FOLDER:
        return results / "metrics.json"
    if kind != REGULAR_FILE or results.suffix != ".json":
        raise ArtifactError(f"is {kind}, not a results folder or its metrics.json", results)
    return results


def load_metrics(results: str | Path) -> tuple[dict, Path]:
    path = metrics_path(results)
    regular_file(path, "metrics.json", missing="no metrics.json (run `dnabert-scaling analyze ... --out RESULTS` first)")
    try:
        metrics = loads_json(read_text_file(path, "metrics.json"))
    except ValueError as exc:
        raise ArtifactError(f"not valid JSON: {exc}", path) from None
    from dnabert_scaling.metrics_schema import validate_metrics

    return validate_metrics(metrics, path), path


def check_results(results: str | Path, claims_path: str | Path | None = None) -> dict[str, Any]:
    """Verdicts of one results folder, with the files they came from."""
    claims_path = Path(claims_path) if claims_path else default_claims_path()
    claims = load_claims(claims_path)
    bounds = load_sanity_bounds(claims_path)
    metrics, metrics_path = load_metrics(results)
    verdicts = evaluate(metrics, claims, bounds)
    verdicts["sources"] = {
        "metrics": str(metrics_path),
        "metrics_created": metrics.get("created"),
        "metrics_sha256": _sha256(metrics_path),
        "claims": str(claims_path),
        "claims_sha256": _sha256(claims_path),
    }
    return verdicts


VERDICT_FILES = ("verdicts.json", "verdicts.txt")


def write_verdicts(verdicts: dict, out: Path, strict: bool = False) -> None:
    """``out/verdicts.json`` and ``out/verdicts.txt``, each swapped in whole, neither replaced if
    either cannot be written; an input of the check (the metrics or the claims file) is never one."""
    from dnabert_scaling.outputs import refuse_overlap, write_texts_atomic

    sources = verdicts.get("sources") or {}
    refuse_overlap(
        [("--out", out / name) for name in VERDICT_FILES], [sources[k] for k in ("metrics", "claims") if sources.get(k)]
    )
    out.mkdir(parents=True, exist_ok=True)
    verdicts["summary"]["strict"] = strict
    verdicts["summary"]["exit_status"] = exit_status(verdicts, strict)
    write_texts_atomic(
        {
            out / "verdicts.json": json.dumps(_jsonable(verdicts), indent=2, allow_nan=False) + "\n",
            out / "verdicts.txt": format_table(verdicts),
        }
    )


def check_folder(results: str | Path, claims_path: str | Path | None, out: Path, strict: bool = False) -> dict[str, Any]:
    """What ``check`` does to a results folder: its verdicts, written to ``out`` as verdicts.json and
    verdicts.txt (the caller has made sure ``out`` is writable)."""
    verdicts = check_results(results, claims_path)
    write_verdicts(verdicts, out, strict)
    return verdicts


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_verdicts(results: str | Path, metrics: dict, claims_path: str | Path | None = None) -> tuple[dict | None, str]:
    """The verdicts.json of a results folder if ``check`` wrote it for these ``metrics``: it must
    record the sha256 of the metrics.json it judged (``sources.metrics_sha256``) and that must be
    the folder's metrics.json's; with ``claims_path``, its ``sources.claims_sha256`` must also be
    that file's. Else None and why it is not current: a verdict is only shown tied to its data."""
    path = Path(results) / "verdicts.json"
    if not path.is_file():
        return None, "no verdicts.json"
    try:
        verdicts = loads_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None, f"{path.name} is not valid JSON"
    if not isinstance(verdicts, dict) or not isinstance(verdicts.get("claims"), list):
        return None, f"{path.name} holds no list of claims"
    sources = verdicts.get("sources") if isinstance(verdicts.get("sources"), dict) else {}
    made_for = sources.get("metrics_created")
    if made_for and metrics.get("created") and made_for != metrics.get("created"):
        return None, f"{path.name} was written for other metrics (created {made_for}; metrics.json: {metrics['created']})"
    metrics_file = Path(results) / "metrics.json"
    digest = sources.get("metrics_sha256")
    if not digest:
        return None, f"{path.name} does not record the sha256 of the metrics.json it judged"
    if not metrics_file.is_file() or digest != _sha256(metrics_file):
        return None, f"{path.name} was written for other metrics (metrics.json changed since `check` ran)"
    if claims_path is not None and Path(claims_path).is_file():
        claims_digest = sources.get("claims_sha256")
        if not claims_digest:
            return None, f"{path.name} does not record the sha256 of the claims file it was judged against"
        if claims_digest != _sha256(Path(claims_path)):
            return None, f"{path.name} was judged against another claims file than {claims_path}"
    return verdicts, ""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, help="results folder written by `analyze` (or its metrics.json)")
    p.add_argument(
        "--expected", type=Path, default=None, help="claims file (default: expected/claims.toml here, else the source tree's)"
    )
    p.add_argument("--strict", action="store_true", help="exit 1 also when a claim is NOT RUN")
    p.add_argument(
        "--out", type=output_path, default=None, help="where verdicts.json / verdicts.txt go (default: the results folder)"
    )
    p.add_argument("--quiet", action="store_true", help="do not print the table")


def run(args: argparse.Namespace) -> int:
    from dnabert_scaling.outputs import refuse_overlap, writable_dir

    # what the inputs are first (a folder given for the claims file, a table for the results), so
    # that the output is not judged against an input that is no input; their content is read below
    claims = args.expected or default_claims_path()
    regular_file(claims, "a claims file", missing="claims file not found")
    metrics = metrics_path(args.results)
    out = args.out or metrics.parent
    option = "--out" if args.out else "results folder (verdicts.json goes there; or give --out)"
    writable_dir(out, option)
    refuse_overlap([(option, out / name) for name in VERDICT_FILES], [metrics, claims])
    other = Path(out) / "metrics.json"
    if other.is_file() and metrics.is_file() and other.resolve() != metrics.resolve() and _sha256(other) != _sha256(metrics):
        raise ArtifactError(
            f"holds another results set's metrics.json: its verdicts.json belongs to that set, and verdicts "
            f"for {metrics} would stand beside other data; give an --out folder of its own",
            out,
        )
    verdicts = check_folder(args.results, args.expected, out, args.strict)
    if not args.quiet:
        sys.stdout.write(format_table(verdicts))
    rc = verdicts["summary"]["exit_status"]
    why = ""
    if rc:
        counts = verdicts["summary"]["counts"]
        judged = [f"{counts[v]} {v}" for v in (FAIL, INVALID) if counts.get(v)]
        why = f": {', '.join(judged)}" if judged else ": NOT RUN under --strict"
    print(f"check: wrote {out / 'verdicts.json'} and {out / 'verdicts.txt'} (exit status {rc}{why})", file=sys.stderr)
    return rc
