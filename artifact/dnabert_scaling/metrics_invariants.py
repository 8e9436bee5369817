"""What the values of ``metrics.json`` must mean, beyond their types: the rules the records of
``metrics_schema`` check when they are read (``check`` and ``report``) and when ``analyze`` has
built them, before it writes. A file that breaks one states more than its data hold, so it is
refused with an ArtifactError naming the file and the key path, as a wrong type is:

- a statistic has at least one sample (none is null) and min <= p10 <= median <= p90 <= max;
- a listed sanity problem fails a sanity item;
- a phase-attribution agreement's shares lie between 0 and 1;
- a rank's completeness counts add up (one launch and one found count per step, found <= launches);
- GPU figures of world size N rest on ranks 0..N-1 with measured steps, and completeness covers them;
- efficiency exists only where the world size and world size 1 have untraced throughput;
- no run, trace content or GPU timeline stands for two world sizes.

Functions of the records (duck-typed: this module imports none of them, ``metrics_schema``
imports it).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError


def _error(where: str, problem: str, path: Path | None) -> ArtifactError:
    return ArtifactError(f"{where or 'the top level'} {problem}", path)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def stat(s: Any, where: str, path: Path | None) -> None:
    if s.n < 1:  # analyze writes null where there are no samples: a statistic of none judges nothing
        raise _error(f"{where}.n", f"is {s.n}: a statistic needs at least one sample (null where there is none)", path)
    order = [(k, getattr(s, k)) for k in ("min", "p10", "median", "p90", "max")]
    known = [(k, v) for k, v in order if v is not None and math.isfinite(v)]
    for (k1, v1), (k2, v2) in zip(known, known[1:]):
        if v1 > v2 + 1e-9 * max(abs(v1), abs(v2)):
            raise _error(where, f"has {k1} {v1!r} above {k2} {v2!r}: not a statistic of any samples", path)


def shares(record: Any, keys: tuple[str, ...], where: str, path: Path | None) -> None:
    """Each of ``keys`` that is set is a share: a finite number from 0 to 1."""
    for k in keys:
        v = getattr(record, k)
        if v is not None and not (math.isfinite(v) and 0 <= v <= 1):
            raise _error(f"{where}.{k}", f"is {v!r}: a share lies between 0 and 1", path)


def failing(sanity: Any) -> list[str]:
    """The sanity items that do not say yes: False, or "unknown" for trace_complete."""
    flags = {k: getattr(sanity, k) for k in ("all_ranks_present", "steps_complete", "finite_loss", "gpu_streams")}
    return [k for k, v in flags.items() if v is False] + (
        ["trace_complete"] if sanity.trace_complete is False or sanity.trace_complete == "unknown" else []
    )


def sanity(s: Any, where: str, path: Path | None) -> None:
    if isinstance(s.trace_complete, str) and s.trace_complete != "unknown":
        raise _error(f"{where}.trace_complete", f'must be true, false, "unknown" or null, not {s.trace_complete!r}', path)
    if s.problems and not failing(s):
        raise _error(
            where,
            f"lists {len(s.problems)} problem(s) ({_short(s.problems[0])}) while every item says yes: a problem must fail an item",
            path,
        )


def rank_completeness(c: Any, where: str, path: Path | None) -> None:
    """The counts add up: one figure per measured step, each step's found within its launches, the
    totals their sums (the checker re-judges the bound from these)."""
    lps, fps = c.launches_per_step, c.found_per_step
    if len(lps) != len(fps) or (lps and len(lps) != c.steps):
        raise _error(where, f"has {len(lps)} launch and {len(fps)} found counts for {c.steps} steps: one of each per step", path)
    bad = next((i for i, (f, n) in enumerate(zip(fps, lps)) if not 0 <= f <= n), None)
    if bad is not None:
        raise _error(f"{where}.found_per_step[{bad}]", f"is {fps[bad]} of {lps[bad]} launches: not a count of them", path)
    if lps and (sum(lps) != c.launches or sum(fps) != c.found):
        raise _error(where, f"says {c.found} of {c.launches} launches found, its steps add up to {sum(fps)} of {sum(lps)}", path)


def world_size_entry(e: Any, where: str, path: Path | None) -> None:
    if e.traced is not None:
        _traced_ranks(e.traced, e.world_size, f"{where}.traced", path)
    if e.throughput_noddp is not None and e.world_size != 1:
        raise _error(f"{where}.throughput_noddp", "is the 1-GPU baseline without DDP: only world size 1 has it", path)
    if e.efficiency is not None and (e.throughput is None or e.throughput.source != "untraced"):
        source = "missing" if e.throughput is None else "from " + repr(e.throughput.source)
        raise _error(
            f"{where}.efficiency",
            f"is {e.efficiency!r}, but the throughput it divides is {source}: efficiency comes from untraced runs only",
            path,
        )


def _traced_ranks(traced: Any, world_size: int, where: str, path: Path | None) -> None:
    """GPU figures rest on ranks 0..N-1 of world size N, each with measured steps."""
    if traced.gpu is None:
        return
    if traced.ranks != list(range(world_size)):
        raise _error(
            f"{where}.ranks",
            f"is {_short(traced.ranks)}: the GPU figures of world size {world_size} need ranks 0..{world_size - 1}",
            path,
        )
    if (not traced.measured_steps or traced.measured_steps < 1) and traced.sanity.steps_complete is not False:
        raise _error(
            f"{where}.measured_steps",
            f"is {traced.measured_steps!r} while sanity.steps_complete says yes: GPU figures without measured steps",
            path,
        )
    per_rank = traced.completeness.per_rank if traced.completeness else {}
    if per_rank and sorted(per_rank, key=int) != [str(r) for r in traced.ranks]:
        raise _error(
            f"{where}.completeness.per_rank",
            f"covers ranks {sorted(per_rank, key=int)}, the traced run ranks {traced.ranks}",
            path,
        )


def metrics_file(m: Any, where: str, path: Path | None) -> None:
    one = m.world_sizes.get("1")
    with_efficiency = [k for k, e in m.world_sizes.items() if e.efficiency is not None]
    if with_efficiency and (one is None or one.throughput is None or one.throughput.source != "untraced"):
        raise _error(
            f"world_sizes[{with_efficiency[0]!r}].efficiency",
            "has a value, but world size 1 has no untraced throughput to be its baseline",
            path,
        )
    _shared_inputs(m.world_sizes, path)
    runs = [(k, e.traced.run) for k, e in m.world_sizes.items() if e.traced is not None and e.traced.gpu is not None]
    names = [r for _, r in runs]
    twice = sorted({r for r in names if names.count(r) > 1})
    if twice:
        keys = [k for k, r in runs if r == twice[0]]
        raise _error("world_sizes", f"takes the GPU figures of world sizes {', '.join(keys)} from one run {twice[0]!r}", path)


def _shared_inputs(world_sizes: dict[str, Any], path: Path | None) -> None:
    """One trace (same sha256) or one GPU timeline may stand for one rank of one world size only."""
    seen: dict[tuple[str, str], str] = {}
    for key, entry in world_sizes.items():
        for i, t in enumerate(entry.traced.inputs if entry.traced else []):
            here = f"world_sizes[{key!r}].traced.inputs[{i}]"
            for what, digest in (("content", t.sha256), ("GPU timeline", t.gpu_timeline_sha256)):
                if digest is None:
                    continue
                if (what, digest) in seen:
                    raise _error(here, f"has the same {what} as {seen[(what, digest)]} (sha256 {digest[:16]}...)", path)
                seen[(what, digest)] = here
