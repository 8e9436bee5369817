#!/usr/bin/env python3
"""Compact a Score-P experiment for shipping: keep what the analysis reads, timestamps untouched.

    python scripts/compact_scorep.py SRC_EXPERIMENT_DIR DST_EXPERIMENT_DIR

A Score-P CUDA trace of a training run is mostly driver calls that launch nothing
(``cuCtxGetDevice``, ``cuStreamGetCaptureInfo``, ...) and, with Python instrumentation, Python
function regions. The compacted archive keeps, with the original definitions (every region,
location, attribute, the clock) and the original timestamps and attributes:

- every event of the GPU stream locations (kernels, copies, flush regions);
- on the CPU locations: the Enter/Leave of the ``ds:*`` phase regions, the kernel launches and
  copy/memset calls (with their ``CUDA_STREAM_REF``), and the flush regions; thread and program
  begin/end records.

Reading the compacted archive gives the same GPU and host tables as the original (tested), so
figures derived from it (the completeness gate, the partition) are those of the real run. The
copies of ``scorep.cfg`` and ``MANIFEST.md`` come along. Needs the ``otf2`` Python module.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def _wanted_regions(defs) -> set[int]:
    from dnabert_scaling.traces import classify
    from dnabert_scaling.traces.otf2_reader import HOST_FLUSH_REGIONS

    keep = set()
    for r in defs.regions:
        name = r.name or ""
        if classify.phase_name(name) or classify.launched_kind(name) or name.upper() in HOST_FLUSH_REGIONS:
            keep.add(r._ref)
    return keep


def compact(src: Path, dst: Path) -> dict[str, int]:
    import otf2

    anchor = src / "traces.otf2" if src.is_dir() else src
    if dst.exists():
        raise SystemExit(f"compact_scorep: {dst} exists; remove it first")
    kept = dropped = 0
    import _otf2

    with otf2.reader.open(str(anchor)) as tr:
        defs = tr.definitions
        wanted = _wanted_regions(defs)
        creator = _otf2.Reader_GetCreator(tr.handle) or ""
        with otf2.writer.open(str(dst), archive_name="traces", definitions=defs) as w:
            w.creator = creator  # the tool and version that recorded the trace, as the reader reports them
            w.description = f"compacted by dnabert-scaling scripts/compact_scorep.py from {anchor.parent.name}"
            writers = {}
            for loc, ev in tr.events:
                if loc.type != otf2.LocationType.GPU:
                    region = getattr(ev, "region", None)
                    if region is not None and region._ref not in wanted:
                        dropped += 1
                        continue
                    if region is None and not isinstance(
                        ev, (otf2.events.ThreadBegin, otf2.events.ThreadEnd, otf2.events.ProgramBegin, otf2.events.ProgramEnd)
                    ):
                        dropped += 1
                        continue
                if loc not in writers:
                    writers[loc] = w.event_writer_from_location(loc)
                writers[loc](ev)
                kept += 1
    for extra in ("scorep.cfg", "MANIFEST.md"):
        if (anchor.parent / extra).is_file():
            shutil.copy2(anchor.parent / extra, dst / extra)
    return {"kept": kept, "dropped": dropped}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    counts = compact(Path(argv[0]), Path(argv[1]))
    print(f"compact_scorep: kept {counts['kept']:,} events, dropped {counts['dropped']:,} -> {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
