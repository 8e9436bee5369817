"""The Score-P patch series of ``containers/scorep-patches/``: which patches a version gets.

``series-<X.Y>`` lists the patches of Score-P X.Y in the order ``containers/build-scorep.sh``
applies them, one per line: ``FILE STATUS [note]``, ``#`` comments. STATUS ``verified``: built by
build-scorep.sh and traced this project's workload completely on a GPU (always applied);
``candidate``: not yet (applied only on request). Rules, checked by ``make lint-container``:
every listed patch exists, every ``<X.Y>-*.patch`` is listed, and Score-P 8.x has at least one
verified patch (8.4 on CUDA 13 loses most kernels without the stream-order one); 9.x is built as
released (its CUDA adapter was rewritten; the patches are 8.4's); other majors are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

STATUSES = ("verified", "candidate")


@dataclass(frozen=True)
class SeriesEntry:
    file: str
    status: str
    line: int


def minor_of(version: str) -> str | None:
    m = re.fullmatch(r"(\d+)\.(\d+)(\.\d+)?", version.strip())
    return f"{m.group(1)}.{m.group(2)}" if m else None


def read_series(path: Path) -> tuple[list[SeriesEntry], list[str]]:
    """The entries of one series file and the problems of its lines (``FILE:LINE: message``)."""
    entries: list[SeriesEntry] = []
    problems: list[str] = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        words = text.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) < 2 or words[1] not in STATUSES:
            problems.append(f"{path}:{n}: expected 'FILE STATUS [note]' with STATUS {' or '.join(STATUSES)}")
            continue
        entries.append(SeriesEntry(words[0], words[1], n))
    return entries, problems


def version_problems(folder: Path, version: str) -> list[str]:
    """What is wrong with building Score-P ``version`` from the patches in ``folder``."""
    minor = minor_of(version)
    if minor is None:
        return ["not a Score-P release number (X.Y or X.Y.Z)"]
    major = int(minor.split(".")[0])
    if major not in (8, 9):
        return ["the project builds Score-P 8.4 (verified, with its patches) or 9.x (opt-in, as released)"]
    series = folder / f"series-{minor}"
    patches = sorted(p.name for p in folder.glob(f"{minor}-*.patch"))
    if not series.is_file():
        if major == 8:
            return [f"no {series} (Score-P 8.x on CUDA 13 loses kernels without the stream-order patch)"]
        return [f"{folder / p}: no {series.name} lists it" for p in patches]
    entries, problems = read_series(series)
    listed = {e.file for e in entries}
    for e in entries:
        if not (folder / e.file).is_file():
            problems.append(f"{series}:{e.line}: {e.file} does not exist in {folder}")
        elif not e.file.startswith(f"{minor}-"):
            problems.append(f"{series}:{e.line}: {e.file} is not a {minor} patch (name it {minor}-*.patch)")
    problems += [f"{folder / p}: not listed in {series.name} (say whether it was verified)" for p in patches if p not in listed]
    if major == 8 and not any(e.status == "verified" for e in entries):
        problems.append(f"{series}: no verified patch (Score-P 8.x needs the stream-order patch)")
    return problems
