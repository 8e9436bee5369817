"""What a trace is, as data: the sha256 of its content and of its GPU timeline.

Every trace an analysis reads is recorded by the sha256 of its bytes (an OTF2 archive or folder:
of its files' relative names and bytes, in name order), so that a result names exactly what it
was computed from. Two inputs with the same content, or two ranks with the same GPU timeline
(the same activities on the same streams at the same nanoseconds), are one measurement given twice
(a file copied, a rank-less file listed twice, one rank relabelled as another): refused, naming
both. Two processes never start a kernel at the same nanosecond of their clocks for a whole run;
a copy whose every time was shifted by one offset is not caught here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from dnabert_scaling.errors import ArtifactError

_CHUNK = 1 << 20


def _update_with_file(h, path: Path) -> None:
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)


def _archive_files(path: Path) -> tuple[Path, list[Path]]:
    """The files that make up a trace, and the folder their names are taken relative to: a file;
    an OTF2 anchor with its definitions and event folder (``traces.otf2``, ``traces.def``,
    ``traces/``: the anchor alone can be the same for every rank of a run); a folder's files."""
    if path.is_dir():
        return path, sorted(p for p in path.rglob("*") if p.is_file())
    if path.suffix == ".otf2":
        parts = [path, path.with_suffix(".def")]
        evt = path.with_suffix("")
        events = sorted(p for p in evt.rglob("*") if p.is_file()) if evt.is_dir() else []
        return path.parent, [p for p in parts if p.is_file()] + events
    return path.parent, [path]


def content_sha256(path: Path) -> str:
    """sha256 of a trace: of a single file's bytes; of an OTF2 archive's or a folder's files (each
    one's name relative to the archive, size and bytes, in name order)."""
    h = hashlib.sha256()
    base, files = _archive_files(path)
    if files == [path]:
        _update_with_file(h, path)
        return h.hexdigest()
    for f in files:
        name = f.relative_to(base).as_posix().encode()
        h.update(len(name).to_bytes(8, "little") + name + f.stat().st_size.to_bytes(8, "little"))
        _update_with_file(h, f)
    return h.hexdigest()


def timeline_sha256(gpu: pd.DataFrame) -> str | None:
    """sha256 of one rank's GPU activities (stream, kind, name, start and end), in time order; None
    without activities."""
    if not len(gpu):
        return None
    g = gpu.sort_values(["start_ns", "end_ns", "stream"], kind="stable")
    frame = pd.DataFrame(
        {
            "stream": g["stream"].astype("int64").to_numpy(),
            "kind": g["kind"].astype(str).to_numpy(),
            "name": g["name"].astype(str).to_numpy(),
            "start": g["start_ns"].astype("int64").to_numpy(),
            "end": g["end_ns"].astype("int64").to_numpy(),
        }
    )
    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()).hexdigest()


def refuse_duplicates(traces) -> None:
    """ArtifactError when two of ``traces`` (read from different paths) have the same content, or two
    ranks the same GPU timeline."""
    seen_file: dict[str, str] = {}
    seen_timeline: dict[str, str] = {}
    for t in traces:
        for r, m in t.ranks.items():
            where = f"rank {r} of {m.get('source')}"
            given = str(m.get("sha256_of") or m.get("source"))
            digest, timeline = m.get("sha256"), m.get("gpu_timeline_sha256")
            if digest and digest in seen_file and seen_file[digest] != given:
                raise ArtifactError(
                    f"{seen_file[digest]} and {given} have the same content (sha256 {digest[:16]}...): "
                    "one trace given twice is not two ranks"
                )
            if digest:
                seen_file.setdefault(digest, given)
            if timeline and timeline in seen_timeline:
                raise ArtifactError(
                    f"{seen_timeline[timeline]} and {where} have the same GPU timeline (every activity at the same "
                    "time on the same stream): one rank's trace relabelled, not two measurements"
                )
            if timeline:
                seen_timeline[timeline] = where
