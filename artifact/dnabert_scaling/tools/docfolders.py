"""The generated lists of what the shipped folders of benchmark outputs hold (expected/README.md and
ARTIFACT.md): each folder's files and inner folders, and the GPU calls' folders under each card's folder."""

from __future__ import annotations

from dnabert_scaling.tools.docfacts import Facts


def bench_folders(facts: Facts, _: str | None) -> str:
    """Each folder of benchmark outputs with its files, then its folders (a GPU call's record each)."""
    lines = []
    for folder in facts.bench_folders:
        files = sorted(p.name for p in folder.iterdir() if p.is_file())
        inner = sorted(p.name for p in folder.iterdir() if p.is_dir())
        said = ", ".join(f"`{f}`" for f in files)
        if inner:
            said += ("; " if said else "") + "folders " + ", ".join(f"`{d}/`" for d in inner)
        lines.append(f"- `reference/{folder.name}/`: " + (said or "empty"))
    return "\n".join(lines) or "- (none)"


def gpu_call_folders(facts: Facts, _: str | None) -> str:
    """Every folder of the GPU calls' commands and outputs, under each card's ``reference/<card>-bench/``
    (``h200-bench/``, and ``h100-bench/`` for the calls that got an H100), named with its card's folder and
    said with whether it keeps its ``NOTES.md``."""
    base = facts.root / "expected" / "reference"
    cards = sorted((p for p in base.glob("h*-bench") if p.is_dir()), reverse=True) if base.is_dir() else []  # h200 first
    folders = [p for card in cards for p in sorted(card.glob("gpu-call-*")) if p.is_dir()]
    if not folders:
        return "(no GPU call folder shipped)"
    said = [f"`{p.parent.name}/{p.name}/`" + ("" if (p / "NOTES.md").is_file() else " (no `NOTES.md`)") for p in folders]
    return ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
