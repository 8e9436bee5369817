#!/usr/bin/env python3
"""Fetch and verify the data baked into the image: the DNABERT-2 checkpoint and the GUE tasks.

Run by the image's %post (network available at build time); usable on its own to prepare the same
folders on a machine without the image:

  fetch_assets.py weights --repo zhihan1996/DNABERT-2-117M --revision SHA --sha256 HEX --dest DIR
  fetch_assets.py gue --repo OWNER/NAME --revision SHA --dest DIR [--expect-rows TASK=TRAIN,DEV,TEST]
  fetch_assets.py gue --zip-url URL --zip-sha256 HEX --dest DIR      # e.g. the official GUE.zip
  (either command also takes --from-dir DIR: copy an already-downloaded folder instead)

Every check failure exits non-zero with a message naming the file: a wrong checksum, a missing
file, a task folder without train/dev/test.csv, a CSV whose header is not ``sequence,label``
(or a pair), a row count that differs from --expect-rows. Each destination gets ``SHA256SUMS``
(every file) and ``SOURCE.txt`` (where it came from).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from datetime import datetime, timezone
from pathlib import Path

WEIGHTS_FILE = "pytorch_model.bin"
WEIGHT_PATTERNS = ["*.json", "*.py", "*.bin", "*.md", "*.txt", "LICENSE*"]
REQUIRED_WEIGHT_FILES = ["config.json", WEIGHTS_FILE, "tokenizer.json"]
SPLITS = ("train.csv", "dev.csv", "test.csv")


class FetchError(Exception):
    pass


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _check_hex(value: str, what: str) -> str:
    value = value.strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise FetchError(f"{what}: {value!r} is not a sha256 (64 hex digits)")
    return value


def write_manifest(dest: Path, source_lines: list[str]) -> None:
    files = sorted(p for p in dest.rglob("*") if p.is_file() and p.name not in ("SHA256SUMS", "SOURCE.txt"))
    with open(dest / "SHA256SUMS", "w") as fh:
        for p in files:
            fh.write(f"{sha256_of(p)}  {p.relative_to(dest).as_posix()}\n")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    (dest / "SOURCE.txt").write_text("\n".join([*source_lines, f"fetched: {stamp}", ""]))


def _snapshot(repo: str, revision: str, repo_type: str, patterns: list[str], into: Path) -> None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - the image installs it from the lock
        raise FetchError(f"huggingface_hub is not installed ({exc}); install the project's lock first") from None
    if len(revision) != 40 or any(c not in "0123456789abcdef" for c in revision.lower()):
        raise FetchError(f"--revision {revision!r}: pin a full 40-hex commit, not a branch or tag")
    snapshot_download(repo_id=repo, revision=revision, repo_type=repo_type, allow_patterns=patterns, local_dir=str(into))
    # The hub client keeps bookkeeping under .cache/ in local_dir: not part of the data.
    shutil.rmtree(into / ".cache", ignore_errors=True)


def _copy_tree(src: Path, dest: Path) -> None:
    if not src.is_dir():
        raise FetchError(f"--from-dir {src}: not a directory")
    for p in src.rglob("*"):
        if p.is_file():
            target = dest / p.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)


def _prepare_dest(dest: Path, force: bool) -> Path:
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise FetchError(f"{dest}: exists and is not empty (use --force to replace it)")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


# --- weights ------------------------------------------------------------------------------------


def fetch_weights(args: argparse.Namespace) -> Path:
    expected = _check_hex(args.sha256, "--sha256")
    dest = _prepare_dest(Path(args.dest), args.force)
    if args.from_dir:
        _copy_tree(Path(args.from_dir), dest)
        source = [f"copied from: {Path(args.from_dir).resolve()}"]
    else:
        _snapshot(args.repo, args.revision, "model", WEIGHT_PATTERNS, dest)
        source = [f"huggingface model: {args.repo}", f"revision: {args.revision}"]
    for name in REQUIRED_WEIGHT_FILES:
        if not (dest / name).is_file():
            raise FetchError(f"{dest / name}: missing from the checkpoint")
    weights = dest / WEIGHTS_FILE
    got = sha256_of(weights)
    if got != expected:
        raise FetchError(f"{weights}: sha256 {got}, expected {expected} (wrong revision or a corrupted download)")
    if args.size is not None and weights.stat().st_size != args.size:
        raise FetchError(f"{weights}: {weights.stat().st_size} bytes, expected {args.size}")
    write_manifest(dest, [*source, f"{WEIGHTS_FILE} sha256: {got}"])
    print(f"fetch_assets: checkpoint in {dest} ({WEIGHTS_FILE} sha256 {got} verified)")
    return dest


# --- GUE --------------------------------------------------------------------------------------------


def _count_rows(path: Path) -> int:
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None:
            raise FetchError(f"{path}: empty file")
        header = [h.strip().lower() for h in header]
        if header not in (["sequence", "label"], ["sequence1", "sequence2", "label"], ["sequence", "sequence", "label"]):
            if not (len(header) in (2, 3) and header[-1] == "label"):
                raise FetchError(f"{path}: header {','.join(header)!r}, expected 'sequence,label'")
        rows = 0
        for lineno, row in enumerate(reader, 2):
            if not row:
                continue
            if len(row) != len(header):
                raise FetchError(f"{path}:{lineno}: {len(row)} columns, the header has {len(header)}")
            rows += 1
    return rows


def verify_gue(root: Path, expect_rows: dict[str, tuple[int, int, int]]) -> dict[str, tuple[int, ...]]:
    """Task folders under root (any folder holding train.csv) -> rows per split; checks every file."""
    tasks: dict[str, tuple[int, ...]] = {}
    for train in sorted(root.rglob("train.csv")):
        folder = train.parent
        counts = []
        for split in SPLITS:
            path = folder / split
            if not path.is_file():
                raise FetchError(f"{path}: missing (task folder {folder} has train.csv)")
            counts.append(_count_rows(path))
        name = folder.name
        if name in tasks:
            raise FetchError(f"{folder}: a second task folder named {name!r}")
        tasks[name] = tuple(counts)
    if not tasks:
        raise FetchError(f"{root}: no task folders (folders with train.csv, dev.csv, test.csv)")
    for name, want in expect_rows.items():
        if name not in tasks:
            raise FetchError(f"{root}: task {name!r} is missing (tasks: {', '.join(sorted(tasks))})")
        if tasks[name] != tuple(want):
            raise FetchError(
                f"{root}: task {name} has {'/'.join(map(str, tasks[name]))} train/dev/test rows, "
                f"expected {'/'.join(map(str, want))}"
            )
    return tasks


def _parse_rows(items: list[str]) -> dict[str, tuple[int, int, int]]:
    out = {}
    for item in items:
        name, _, nums = item.partition("=")
        parts = nums.split(",")
        if not name or len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise FetchError(f"--expect-rows {item!r}: expected TASK=TRAIN,DEV,TEST")
        out[name] = (int(parts[0]), int(parts[1]), int(parts[2]))
    return out


def fetch_gue(args: argparse.Namespace) -> Path:
    expect = _parse_rows(args.expect_rows or [])
    dest = _prepare_dest(Path(args.dest), args.force)
    if args.from_dir:
        _copy_tree(Path(args.from_dir), dest)
        source = [f"copied from: {Path(args.from_dir).resolve()}"]
    elif args.zip_url:
        if not args.zip_sha256:
            raise FetchError("--zip-url needs --zip-sha256 (an unverified download is not accepted)")
        expected = _check_hex(args.zip_sha256, "--zip-sha256")
        with tempfile.TemporaryDirectory() as tmp:
            archive = Path(tmp) / "gue.zip"
            try:
                with urllib.request.urlopen(args.zip_url, timeout=600) as resp, open(archive, "wb") as fh:
                    shutil.copyfileobj(resp, fh)
            except OSError as exc:
                raise FetchError(f"--zip-url {args.zip_url}: download failed: {exc}") from None
            got = sha256_of(archive)
            if got != expected:
                raise FetchError(f"{args.zip_url}: sha256 {got}, expected {expected}")
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise FetchError(f"{args.zip_url}: unsafe path {member!r} in the archive")
                    if member.startswith("__MACOSX/"):
                        continue
                    zf.extract(member, dest)
        source = [f"zip: {args.zip_url}", f"zip sha256: {expected}"]
    else:
        if not (args.repo and args.revision):
            raise FetchError("give --repo and --revision (a Hugging Face dataset), --zip-url, or --from-dir")
        _snapshot(args.repo, args.revision, "dataset", ["*.csv", "**/*.csv", "README.md", "*.py"], dest)
        source = [f"huggingface dataset: {args.repo}", f"revision: {args.revision}"]
    tasks = verify_gue(dest, expect)
    write_manifest(dest, [*source, f"tasks: {len(tasks)}"])
    print(f"fetch_assets: {len(tasks)} GUE task(s) in {dest}; "
          + ", ".join(f"{t} {'/'.join(map(str, tasks[t]))}" for t in expect) if expect else
          f"fetch_assets: {len(tasks)} GUE task(s) in {dest}")
    return dest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fetch_assets.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    w = sub.add_parser("weights", help="the DNABERT-2 checkpoint (config, weights, tokenizer)")
    w.add_argument("--repo", default="zhihan1996/DNABERT-2-117M")
    w.add_argument("--revision", default=None)
    w.add_argument("--sha256", required=True, help=f"sha256 of {WEIGHTS_FILE}")
    w.add_argument("--size", type=int, default=None, help=f"size of {WEIGHTS_FILE} in bytes")
    g = sub.add_parser("gue", help="the GUE benchmark's task folders")
    g.add_argument("--repo", default=None)
    g.add_argument("--revision", default=None)
    g.add_argument("--zip-url", default=None)
    g.add_argument("--zip-sha256", default=None)
    g.add_argument("--expect-rows", action="append", metavar="TASK=TRAIN,DEV,TEST")
    for sp in (w, g):
        sp.add_argument("--dest", required=True)
        sp.add_argument("--from-dir", default=None, help="copy this folder instead of downloading")
        sp.add_argument("--force", action="store_true", help="replace a non-empty --dest")
    args = p.parse_args(argv)
    try:
        if args.what == "weights":
            if not args.from_dir and not args.revision:
                raise FetchError("--revision is required (a full 40-hex commit of the model repository)")
            fetch_weights(args)
        else:
            fetch_gue(args)
    except FetchError as exc:
        print(f"fetch_assets: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
