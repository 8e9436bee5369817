#!/usr/bin/env python3
"""Rebuild the shipped report (``expected/reference-results/report.html``) from the shipped results as
they are, after a change to the report's code: ``make refresh-report``.

``make refresh-reference`` re-derives the results from the traces and copies them over the shipped ones,
which rewrites each file's creation time and the digests that cover it even where no figure changed. A
change to the report alone needs none of that: this copies the shipped results, untouched, into a
temporary folder laid out as ``make kick-tires`` lays them out (``kick-tires/reference-<set>/results``,
in its order, so that the page shows the same paths and numbers its sets alike), builds the report there
with this checkout's code, and replaces the shipped page with it. The page says it was written by
``make refresh-report``. Nothing else under ``expected/`` is written.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dnabert_scaling.outputs import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "expected" / "reference-results"
CLAIMS = ROOT / "expected" / "claims.toml"
WRITTEN_BY = "make refresh-report (scripts/refresh_report.py: the shipped results, not re-derived)"


def shipped_sets(shipped: Path) -> list[Path]:
    """The shipped result sets in the order ``make kick-tires`` reports them (sorted by name)."""
    return sorted(p for p in shipped.iterdir() if p.is_dir() and (p / "metrics.json").is_file()) if shipped.is_dir() else []


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=SHIPPED, help="the folder of result sets whose report.html to rebuild")
    shipped = p.parse_args(argv).results
    sets = shipped_sets(shipped)
    if not sets:
        print(f"refresh-report: {shipped}: no result sets to build the report from", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="refresh-report-") as tmp:
        work = Path(tmp)
        folders = []
        for s in sets:
            folder = Path("kick-tires") / f"reference-{s.name}" / "results"
            shutil.copytree(s, work / folder)
            folders.append(str(folder))
        (work / "expected").mkdir()
        shutil.copyfile(CLAIMS, work / "expected" / "claims.toml")  # named on the page as expected/claims.toml
        cmd = [_interpreter(work), "-m", "dnabert_scaling", "report", *folders, "--expected", "expected/claims.toml"]
        proc = subprocess.run([*cmd, "--out", "report", "--written-by", WRITTEN_BY], cwd=work)
        if proc.returncode != 0:
            print(
                f"refresh-report: the report was not built (exit {proc.returncode}); the shipped page is unchanged",
                file=sys.stderr,
            )
            return proc.returncode
        changed = [s.name for s in sets if not _same_tree(s, work / "kick-tires" / f"reference-{s.name}" / "results")]
        if changed:  # the report command must not write into its inputs; if it did, ship nothing
            print(
                f"refresh-report: the report command changed its inputs ({', '.join(changed)}); nothing shipped", file=sys.stderr
            )
            return 1
        write_text_atomic(shipped / "report.html", (work / "report" / "report.html").read_text(encoding="utf-8"))
    print(f"refresh-report: wrote {shipped / 'report.html'} from {len(sets)} shipped result sets")
    return 0


def _interpreter(work: Path) -> str:
    """This interpreter as the page should name it ("Python of the report kernel", shown relative to the
    folder the report is built in): where it lies in the checkout (``.venv/bin/python``), run through a
    link to its top folder in the workspace, so that the page names the checkout's path, not this
    machine's; elsewhere, as it is."""
    try:
        inside = Path(sys.executable).relative_to(ROOT)
    except ValueError:
        return sys.executable
    (work / inside.parts[0]).symlink_to(ROOT / inside.parts[0], target_is_directory=True)
    return str(work / inside)


def _same_tree(a: Path, b: Path) -> bool:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    return files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and all(
        (a / f).read_bytes() == (b / f).read_bytes() for f in files
    )


if __name__ == "__main__":
    sys.exit(main())
