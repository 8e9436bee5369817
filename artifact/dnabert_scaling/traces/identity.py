"""What a trace is, as data: the sha256 of its content and of its GPU timeline.

Every trace an analysis reads is recorded by the sha256 of its bytes (an OTF2 experiment folder:
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


def content_sha256(path: Path) -> str:
    """sha256 of a trace file, or of an experiment folder's files (relative name and bytes)."""
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            name = f.relative_to(path).as_posix().encode()
            h.update(len(name).to_bytes(8, "little") + name + f.stat().st_size.to_bytes(8, "little"))
            _update_with_file(h, f)
    else:
        _update_with_file(h, path)
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
            digest, timeline = m.get("sha256"), m.get("gpu_timeline_sha256")
            if digest and digest in seen_file and seen_file[digest] != str(m.get("source")):
                raise ArtifactError(
                    f"{seen_file[digest]} and {m.get('source')} have the same content (sha256 {digest[:16]}...): "
                    "one trace given twice is not two ranks"
                )
            if digest:
                seen_file.setdefault(digest, str(m.get("source")))
            if timeline and timeline in seen_timeline:
                raise ArtifactError(
                    f"{seen_timeline[timeline]} and {where} have the same GPU timeline (every activity at the same "
                    "time on the same stream): one rank's trace relabelled, not two measurements"
                )
            if timeline:
                seen_timeline[timeline] = where
