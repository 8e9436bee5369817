"""The figures of README.md, ARTIFACT.md and expected/README.md, written from the shipped files (``make docs``).

A document marks each generated part with a pair of HTML comments::

    <!-- generated:NAME:begin -->...<!-- generated:NAME:end -->
    <!-- generated:NAME:ARG:begin -->...<!-- generated:NAME:ARG:end -->   (ARG: a set, a timing)

Where the begin marker ends its line, the part is a block of whole lines; else it is a phrase
inside a sentence. This tool rewrites what lies between the markers from the sources that
:mod:`dnabert_scaling.tools.docfacts` reads, and nothing else. ``--check`` writes nothing: it
prints a unified diff of every stale document and exits 1 (0 when all are current); a marker
that names no known part, or a begin without its end, is an error (exit 2) naming the file
and line.

    python -m dnabert_scaling.tools docs [--check] [--root DIR] [DOCUMENT ...]
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import docblocks
from dnabert_scaling.tools.docfacts import Facts

DOCUMENTS = ("README.md", "ARTIFACT.md", "expected/README.md")
MARKER = re.compile(r"<!-- generated:(?P<key>[a-z0-9-]+(?::[a-z0-9._-]+)?):begin -->")
ANY_MARKER = re.compile(r"<!-- generated:\S*?:(?:begin|end) -->")  # what a marker looks like, well spelt or not

# name -> function(facts, argument or None) -> text
BLOCKS: dict[str, Callable[[Facts, str | None], str]] = docblocks.BLOCKS


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def render(text: str, facts: Facts, where: Path) -> str:
    """``text`` with every generated part rewritten; an unknown name or an unclosed part is an ArtifactError."""
    out, pos, consumed = [], 0, set()
    for m in MARKER.finditer(text):
        if m.start() < pos:  # a begin marker inside a part already replaced (nested): refused
            raise ArtifactError(f"line {_line_of(text, m.start())}: generated part inside another one", where)
        key = m.group("key")
        name, _, arg = key.partition(":")
        end_marker = f"<!-- generated:{key}:end -->"
        end = text.find(end_marker, m.end())
        if end < 0:
            raise ArtifactError(f"line {_line_of(text, m.start())}: {m.group(0)} has no {end_marker}", where)
        if name not in BLOCKS:
            known = ", ".join(sorted(BLOCKS))
            raise ArtifactError(f"line {_line_of(text, m.start())}: no generated part named {name!r} (known: {known})", where)
        try:
            body = BLOCKS[name](facts, arg or None)
        except ValueError as e:
            raise ArtifactError(f"line {_line_of(text, m.start())}: {e}", where) from None
        block = text[m.end() : m.end() + 1] == "\n"
        if block:
            body = "\n" + body.strip("\n") + "\n"
        elif "\n" in body.strip():
            raise ArtifactError(
                f"line {_line_of(text, m.start())}: {name} is a block: put its begin marker on a line of its own", where
            )
        out += [text[pos : m.end()], body.strip() if not block else body, end_marker]
        pos = end + len(end_marker)
        consumed |= {m.start(), end}
    _refuse_stray_markers(text, consumed, where)
    out.append(text[pos:])
    return "".join(out)


def _refuse_stray_markers(text: str, consumed: set[int], where: Path) -> None:
    """A ``<!-- generated:`` that is neither a begin nor the end of a part (an end without begin, a misspelt name)
    would be left as it is, quoting whatever it quoted: refused. Prose may name the markers (`<!-- generated:... -->`)."""
    for m in ANY_MARKER.finditer(text):
        if m.start() not in consumed:
            raise ArtifactError(
                f"line {_line_of(text, m.start())}: {m.group(0)!r} is not part of a <!-- generated:NAME[:ARG]:begin --> ... "
                "<!-- generated:NAME[:ARG]:end --> pair (names: lower case, digits, '-')",
                where,
            )


def stale(root: Path, documents: list[str], facts: Facts | None = None) -> dict[str, tuple[str, str]]:
    """Document -> (current text, generated text) for every document whose generated parts are not current."""
    facts = facts or Facts(root)
    found = {}
    for doc in documents:
        path = root / doc
        if not path.is_file():
            raise ArtifactError("no such document", path)
        text = path.read_text()
        new = render(text, facts, path)
        if new != text:
            found[doc] = (text, new)
    return found


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "documents", nargs="*", default=list(DOCUMENTS), help=f"documents, relative to --root (default: {' '.join(DOCUMENTS)})"
    )
    p.add_argument("--check", action="store_true", help="write nothing; print the diff of every stale document and exit 1")
    p.add_argument("--root", type=Path, default=None, help="the repository (default: the one this package lies in)")


def _default_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "expected").is_dir() and (parent / "pyproject.toml").is_file():
            return parent
    raise ArtifactError("cannot find the repository root above this package: give --root", here)


def run(args: argparse.Namespace) -> int:
    root = (args.root or _default_root()).resolve()
    changed = stale(root, args.documents)
    if args.check:
        for doc, (old, new) in changed.items():
            diff = difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), f"{doc} (as it is)", f"{doc} (from the shipped files)"
            )
            print("".join(diff), end="")
        if changed:
            print(f"stale: {', '.join(changed)} (make docs rewrites them)")
            return 1
        print(f"current: {', '.join(args.documents)}")
        return 0
    for doc, (_, new) in changed.items():
        (root / doc).write_text(new)
        print(f"rewrote {doc}")
    if not changed:
        print(f"current: {', '.join(args.documents)}")
    return 0
