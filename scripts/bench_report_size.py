#!/usr/bin/env python3
"""Size of the report: the bytes of ``report.html`` and of each zoomable timeline in it.

The zoomable timelines (``report/timeline.py``: one inline SVG per result set, a ``<rect>`` per
bar) are most of the page. This prints, for each report measured, the bytes of the whole page,
of each timeline SVG (``ds-zoom-<set>``, with its bars) and of all of them together; with two or
more reports, side by side, the last over the first.

    make bench-report-size                           # build the report of the shipped sets here, measure it
    make bench-report-size BEFORE=old/report.html    # the same, next to an older report
    scripts/bench_report_size.py A.html B.html        # measure reports already built

``--build`` (the default without files) builds the report of every set in
``expected/reference-results/`` (in kick-tires' order, so the ids match the shipped report's)
with the code of this checkout, into ``--out`` (default: a temporary folder), and measures it
after the files given.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETS = ROOT / "expected" / "reference-results"
SVG = re.compile(r'<svg\b[^>]*\bid="(ds-zoom-\d+)"[^>]*>.*?</svg>', re.S)


def measure(html: str) -> dict[str, tuple[int, int]]:
    """Bytes of the page ("report.html") and of each timeline SVG, with its number of bars."""
    sizes = {"report.html": (len(html.encode()), 0)}
    for m in SVG.finditer(html):
        sizes[m.group(1)] = (len(m.group(0).encode()), m.group(0).count("<rect"))
    timelines = [v for k, v in sizes.items() if k != "report.html"]
    sizes["all timelines"] = (sum(b for b, _ in timelines), sum(n for _, n in timelines))
    return sizes


def read_report(path: Path) -> str:
    """The text of a report given on the command line; exit 2 naming it where it cannot be one."""
    try:
        if not path.is_file():
            raise OSError("not a file" if path.exists() else "no such file")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
        print(f"bench-report-size: {path}: cannot be read as a report ({why})", file=sys.stderr)
        raise SystemExit(2) from None


def shipped_sets() -> list[Path]:
    return sorted(p for p in SETS.iterdir() if (p / "metrics.json").is_file())


def build(out: Path) -> Path:
    """The report of the shipped sets, built by this checkout's ``dnabert-scaling report``."""
    cmd = [sys.executable, "-m", "dnabert_scaling", "report", *map(str, shipped_sets()), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return out / "report.html"


def table(reports: list[tuple[str, dict[str, tuple[int, int]]]], names: dict[str, str]) -> list[str]:
    keys = list(dict.fromkeys(k for _, sizes in reports for k in sizes))
    keys = ["report.html", *[k for k in keys if k.startswith("ds-zoom-")], "all timelines"]
    head = ["", "set", *[f"({i}) bytes" for i in range(1, len(reports) + 1)], "bars"]
    if len(reports) > 1:
        head.append("last / first")
    rows = [head]
    for k in keys:
        got = [sizes.get(k) for _, sizes in reports]
        row = [k, names.get(k, ""), *[f"{g[0]:,}" if g else "-" for g in got]]
        row.append(next((f"{g[1]:,}" for g in reversed(got) if g and g[1]), ""))
        if len(reports) > 1:
            first, last = got[0], got[-1]
            row.append(f"{last[0] / first[0]:.2f}" if first and last and first[0] else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="*", type=Path, help="report.html files to measure, in this order")
    p.add_argument("--build", action="store_true", help="also build the shipped sets' report here and measure it last")
    p.add_argument("--out", type=Path, default=None, help="folder for the built report (default: a temporary one)")
    args = p.parse_args(argv)
    todo = [(str(path), path) for path in args.reports]
    given = [read_report(path) for path in args.reports]  # each read before the build: a bad one stops it at once
    names = {f"ds-zoom-{i}": s.name for i, s in enumerate(shipped_sets())}
    with tempfile.TemporaryDirectory(prefix="bench-report-size-") as tmp:
        if args.build or not args.reports:
            todo.append(("built here", build(args.out or Path(tmp))))
            given.append(read_report(todo[-1][1]))
        reports = [(label, measure(text)) for (label, _), text in zip(todo, given)]
    for i, (label, path) in enumerate(todo, 1):
        print(f"({i}) {path}" + (f" ({label})" if label != str(path) else ""))
    print("\n".join(table(reports, names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
