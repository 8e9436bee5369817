"""``dnabert-scaling convert KINETO... --out DIR``: Kineto traces -> OTF2 (Score-P 9 layout).

One archive per input rank, ``DIR/scorep-rank<R>/traces.otf2``: the same layout a Score-P run of
the study writes, so Vampir, CASITA, Pipit or this project's own reader open torch.profiler
traces exactly like Score-P ones. What is written is described in ``otf2_writer``; reading a
converted archive back yields the same GPU activities and host ranges as reading the Kineto
file (checked by the tests on real traces).

With ``--merged`` it also writes ``DIR/all-ranks/traces.otf2``: every rank in one archive (one
process ``Rank <R>`` each), so Vampir opens the whole run from one file. Kineto traces of one node
share the system clock, so their times are written as they are; traces from several nodes are
only as aligned as the nodes' clocks.

Existing outputs are never overwritten unless ``--force`` is given, and then only archives this
command writes (an OTF2 archive and nothing else: a Score-P experiment with its other files is
refused); no output may be or hold an input. All targets are checked before anything is written,
and each archive is built in a new sibling folder and swapped in by one rename when complete
(``outputs.replaced_folder``), so an interrupted or killed conversion leaves no half-written
``scorep-rank<R>`` and every replaced archive either old or new, whole.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dnabert_scaling import __version__
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import ANCHOR, scorep_rank_dir_name
from dnabert_scaling.options import positive_int
from dnabert_scaling.outputs import output_path, refuse_foreign, refuse_overlap, replaced_folder, writable_dir
from dnabert_scaling.traces.kineto_reader import is_kineto_path, read_kineto
from dnabert_scaling.traces.loader import read_many
from dnabert_scaling.traces.model import Trace
from dnabert_scaling.traces.otf2_writer import write_merged, write_tables

CREATOR = f"dnabert-scaling-convert {__version__}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", metavar="KINETO", help="Kineto traces (.json or .json.gz), one per rank")
    parser.add_argument(
        "--out",
        type=output_path,
        required=True,
        metavar="DIR",
        help="output directory; receives scorep-rank<R>/traces.otf2 per rank",
    )
    parser.add_argument("--force", action="store_true", help="replace existing scorep-rank<R> outputs")
    parser.add_argument(
        "--merged", action="store_true", help="also write all-ranks/traces.otf2: every rank in one archive, for Vampir"
    )
    parser.add_argument("--workers", type=positive_int, default=None, help="processes for reading (default: one per core)")


MERGED = "all-ranks"


def is_archive_entry(rel: Path, is_dir: bool) -> bool:
    """Whether a name in an archive folder is one the OTF2 writer writes (``traces.otf2``,
    ``traces.def``, ``traces/<location>.evt|.def``): what ``--force`` may replace."""
    if len(rel.parts) == 1:
        return rel.name == "traces" if is_dir else rel.name in ("traces.otf2", "traces.def")
    return len(rel.parts) == 2 and rel.parts[0] == "traces" and not is_dir and rel.suffix in (".evt", ".def")


def convert(inputs: list, out_dir, *, force: bool = False, workers: int | None = None, merged: bool = False) -> list[dict]:
    """Convert Kineto traces to one Score-P-9-layout archive per rank under ``out_dir``."""
    paths = [Path(p) for p in inputs]
    for p in paths:
        if not is_kineto_path(p):
            raise ArtifactError("convert reads Kineto traces (.json or .json.gz)", p)
        if not p.is_file():
            raise ArtifactError("trace file not found", p)
    traces = read_many(paths, workers) if len(paths) > 1 else [read_kineto(paths[0])]
    seen: dict[int, str] = {}
    for t in traces:
        for r, m in t.ranks.items():
            if r in seen:
                raise ArtifactError(f"rank {r} appears twice: in {seen[r]} and in {m['source']}")
            seen[r] = m["source"]
    out = writable_dir(out_dir, "--out", create=True)
    targets = {r: out / scorep_rank_dir_name(r) for r in seen}
    every = [*targets.values(), *([out / MERGED] if merged else [])]
    refuse_overlap([("--out", p) for p in every], paths)
    clashes = [str(p) for p in every if p.exists() or p.is_symlink()]
    if clashes and not force:
        raise ArtifactError(f"output exists, not overwritten (use --force): {', '.join(clashes)}")
    for p in every:
        refuse_foreign(p, "--out", is_archive_entry)
    results = []
    for t in traces:
        for r in t.rank_ids:
            target = targets[r]
            with replaced_folder(target, "--out", is_archive_entry) as tmp:
                tmp.rmdir()  # the writer makes the archive folder itself
                counts = write_tables(
                    t.gpu[t.gpu["rank"] == r],
                    t.host[t.host["rank"] == r],
                    tmp,
                    creator=CREATOR,
                    description=f"converted from {seen[r]} by {CREATOR}",
                )
            counts["rank"] = r
            counts["source"] = seen[r]
            counts["archive"] = str(target / ANCHOR)
            results.append(counts)
    if merged:
        everything = Trace.concat(traces)
        target = out / MERGED
        with replaced_folder(target, "--out", is_archive_entry) as tmp:
            tmp.rmdir()
            counts = write_merged(
                everything.gpu,
                everything.host,
                tmp,
                creator=CREATOR,
                description=f"ranks {', '.join(map(str, everything.rank_ids))} converted by {CREATOR}",
            )
        results.append(
            {
                "rank": "all",
                "source": f"{len(traces)} trace(s)",
                "archive": str(target / ANCHOR),
                "events": counts["events"],
                "ranks": counts["ranks"],
            }
        )
    return results


def run(args) -> int:
    results = convert(args.traces, args.out, force=args.force, workers=args.workers, merged=args.merged)
    for c in results:
        if c["rank"] == "all":
            print(f"ranks {', '.join(map(str, c['ranks']))} -> {c['archive']} ({c['events']} events; one archive for Vampir)")
            continue
        print(
            f"rank {c['rank']}: {c['source']} -> {c['archive']} "
            f"({c['kernels']} kernels, {c['memcpys']} copies, {c['memsets']} memsets, "
            f"{c['phases']} phase ranges, {c['launches']} launches; {c['events']} events)"
        )
    return 0
