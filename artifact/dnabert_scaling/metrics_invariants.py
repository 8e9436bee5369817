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
- no run, trace content or GPU timeline stands for two world sizes;
- every measured number (free-form fields such as provenance aside) is a time, a count, a share or a
  ratio: none is negative or infinite (NaN, a figure
  that could not be computed, stays: the checker makes a check on it INVALID), a key named as a
  share lies within 0..1, and a step's parts (compute, exposed communication and copies, idle) are
  no longer than the step at each of their statistics;
- efficiency at world size 1 is 1 (it divides world size 1 by itself), and everywhere what the file's
  own samples/s give (medians for the figure, slowest and fastest runs for its spread);
- a placement adds up: ranks are the world size's, a GPU not shared holds one rank, and a shared
  one more than one;
- a rehearsal is in both the fallbacks and the placement of its run, or in neither;
- traces given without their run folders are in the fallbacks (``bare_traces``) and hold no placement.

Functions of the records (duck-typed: this module imports none of them, ``metrics_schema``
imports it).
"""

from __future__ import annotations

import dataclasses
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
        _placement(e.traced.placement, e.world_size, f"{where}.traced.placement", path)
        _parts_within_step(e.traced.gpu, f"{where}.traced.gpu", path)
    if e.world_size == 1 and e.efficiency is not None and not math.isclose(e.efficiency, 1.0, rel_tol=1e-9):
        raise _error(f"{where}.efficiency", f"is {e.efficiency!r} at world size 1, which it divides by itself: it is 1", path)
    if e.throughput_noddp is not None and e.world_size != 1:
        raise _error(f"{where}.throughput_noddp", "is the 1-GPU baseline without DDP: only world size 1 has it", path)
    if e.efficiency is not None and (e.throughput is None or e.throughput.source != "untraced"):
        source = "missing" if e.throughput is None else "from " + repr(e.throughput.source)
        raise _error(
            f"{where}.efficiency",
            f"is {e.efficiency!r}, but the throughput it divides is {source}: efficiency comes from untraced runs only",
            path,
        )


def _efficiency_from_throughput(world_sizes: dict[str, Any], one: Any, path: Path | None) -> None:
    """Efficiency is what the file's own throughputs give: samples/s(N) / (N x samples/s(1)) of the
    medians (against world size 1 with DDP, and without it for ``efficiency_vs_noddp``), and its
    spread the slowest and fastest runs' (``analysis.metrics._efficiency``). A figure that its own
    file contradicts states more than its data."""
    base = one.throughput.samples_per_s if one.throughput is not None else None
    noddp = one.throughput_noddp.samples_per_s if one.throughput_noddp is not None else None
    for key, e in world_sizes.items():
        n = e.world_size
        tp = e.throughput.samples_per_s if e.throughput is not None else None
        pairs = [("efficiency", e.efficiency, base, "samples/s(1)")]
        pairs.append(("efficiency_vs_noddp", e.efficiency_vs_noddp, noddp, "samples/s(1) without DDP"))
        for name, value, against, what in pairs:
            if value is None:
                continue
            if tp is None or against is None or not against.median:
                raise _error(f"world_sizes[{key!r}].{name}", f"is {value!r}, but there are no samples/s to give it", path)
            want = tp.median / (n * against.median)
            if not math.isclose(value, want, rel_tol=1e-9):
                raise _error(
                    f"world_sizes[{key!r}].{name}",
                    f"is {value!r}, but the file's medians give samples/s({n}) / ({n} x {what}) = {want!r}",
                    path,
                )
        spread = e.efficiency_spread
        if spread is None:
            continue
        if tp is None or base is None or not (tp.min and tp.max and base.min and base.max):
            raise _error(f"world_sizes[{key!r}].efficiency_spread", "has a range, but there are no samples/s to give it", path)
        for end, want in (("min", tp.min / (n * base.max)), ("max", tp.max / (n * base.min))):
            if not math.isclose(getattr(spread, end), want, rel_tol=1e-9):
                raise _error(
                    f"world_sizes[{key!r}].efficiency_spread.{end}",
                    f"is {getattr(spread, end)!r}, but the file's runs give {want!r}",
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
    if traced.sanity.trace_complete is True and (traced.completeness is None or traced.completeness.status != "complete"):
        status = "absent" if traced.completeness is None else repr(traced.completeness.status)
        raise _error(f"{where}.sanity.trace_complete", f"says yes, but the completeness it rests on is {status}", path)
    per_rank = traced.completeness.per_rank if traced.completeness else {}
    if per_rank and sorted(per_rank, key=int) != [str(r) for r in traced.ranks]:
        raise _error(
            f"{where}.completeness.per_rank",
            f"covers ranks {sorted(per_rank, key=int)}, the traced run ranks {traced.ranks}",
            path,
        )


def metrics_file(m: Any, where: str, path: Path | None) -> None:
    absent = [n for n in m.measured_world_sizes if str(n) not in m.world_sizes]
    if absent:
        raise _error("measured_world_sizes", f"lists {absent[0]}, which world_sizes holds no entry for", path)
    _rehearsals_said(m, path)
    _bare_traces_said(m, path)
    one = m.world_sizes.get("1")
    with_efficiency = [k for k, e in m.world_sizes.items() if e.efficiency is not None]
    if with_efficiency and (one is None or one.throughput is None or one.throughput.source != "untraced"):
        raise _error(
            f"world_sizes[{with_efficiency[0]!r}].efficiency",
            "has a value, but world size 1 has no untraced throughput to be its baseline",
            path,
        )
    if one is not None:
        _efficiency_from_throughput(m.world_sizes, one, path)
    _shared_inputs(m.world_sizes, path)
    runs = [(k, e.traced.run) for k, e in m.world_sizes.items() if e.traced is not None and e.traced.gpu is not None]
    names = [r for _, r in runs]
    twice = sorted({r for r in names if names.count(r) > 1})
    if twice:
        keys = [k for k, r in runs if r == twice[0]]
        raise _error("world_sizes", f"takes the GPU figures of world sizes {', '.join(keys)} from one run {twice[0]!r}", path)


def _shared_inputs(world_sizes: dict[str, Any], path: Path | None) -> None:
    """One GPU timeline may stand for one rank of one world size only, and one trace file (same
    sha256) too, except one multi-rank archive (the same path) read for several ranks of one world
    size, whose ranks' GPU timelines still differ."""
    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    for key, entry in world_sizes.items():
        for i, t in enumerate(entry.traced.inputs if entry.traced else []):
            here = f"world_sizes[{key!r}].traced.inputs[{i}]"
            for what, digest in (("content", t.sha256), ("GPU timeline", t.gpu_timeline_sha256)):
                if digest is None:
                    continue
                first = seen.get((what, digest))
                if first is not None and not (what == "content" and first[1:] == (key, t.path)):
                    raise _error(here, f"has the same {what} as {first[0]} (sha256 {digest[:16]}...)", path)
                seen.setdefault((what, digest), (here, key, t.path))


SHARE_KEYS = ("overlap_ratio",)  # and every key ending in "share"; PhaseAgreement checks its own
STAT_KEYS = ("median", "p10", "p90", "min", "max")


def _is_share(name: str) -> bool:
    return name.endswith("share") or name in SHARE_KEYS


def _values(value: Any) -> list[tuple[str, Any]]:
    """(suffix, number) pairs of a field's value: itself, a statistic's quantiles, a list's or a
    mapping's numbers (records other than statistics are checked on their own)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [("", value)]
    if hasattr(value, "median") and hasattr(value, "n"):  # a statistic
        return [(f".{k}", getattr(value, k)) for k in STAT_KEYS if getattr(value, k) is not None]
    if isinstance(value, list):
        return [(f"[{i}]", v) for i, v in enumerate(value) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if isinstance(value, dict):
        return [(f"[{k!r}]", v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return []


def numbers(record: Any, where: str, path: Path | None) -> None:
    """No number of a record is negative or infinite; a share's lie within 0..1 (NaN passes). Free-form
    fields (typed ``Any``: provenance, bus-bandwidth records, fallbacks) are records of the run, not
    measurements, and are left alone."""
    for f in dataclasses.fields(record):
        if "Any" in str(f.type):
            continue
        share = _is_share(f.name)
        for suffix, v in _values(getattr(record, f.name)):
            here = f"{where}.{f.name}{suffix}" if where else f"{f.name}{suffix}"
            if math.isnan(v):
                continue
            if math.isinf(v) or v < 0:
                raise _error(here, f"is {v!r}: a time, count, share or ratio is finite and not negative", path)
            if share and v > 1:
                raise _error(here, f"is {v!r}: a share lies between 0 and 1", path)


STEP_PARTS = ("compute_s", "exposed_comm_s", "exposed_memcpy_s", "idle_s", "nccl_union_s")


def _parts_within_step(gpu: Any, where: str, path: Path | None) -> None:
    """Each part of a step is at most the step in every (rank, step) sample, so at most it at every
    quantile of the same samples too."""
    step = getattr(gpu, "step_time_s", None)
    if step is None:
        return
    for name in STEP_PARTS:
        part = getattr(gpu, name)
        for k in STAT_KEYS if part is not None else ():
            a, b = getattr(part, k), getattr(step, k)
            if a is not None and b is not None and a > b + 1e-9 * max(abs(b), 1e-9):
                raise _error(f"{where}.{name}.{k}", f"is {a!r}, longer than the step's {k} {b!r}: a part of a step", path)


def crowded(ranks: Any, gpus: Any, ranks_per_gpu: Any) -> bool:
    """Whether a placement puts more than one rank on a GPU, by its count per GPU or by fewer GPUs
    than ranks (unknown counts say nothing)."""
    by_count = isinstance(ranks_per_gpu, int) and ranks_per_gpu > 1
    return by_count or (isinstance(gpus, int) and isinstance(ranks, int) and gpus < ranks)


def _placement(p: Any, world_size: int, where: str, path: Path | None) -> None:
    if p is None:
        return
    if p.ranks != world_size:
        raise _error(f"{where}.ranks", f"is {p.ranks}: world size {world_size} has {world_size} ranks", path)
    per_gpu = p.ranks_per_gpu
    if p.shared_gpu is False and crowded(p.ranks, p.gpus, per_gpu):
        raise _error(
            f"{where}.shared_gpu",
            f"is false, but {p.ranks} ranks ran on {p.gpus} GPU(s), up to {per_gpu} per GPU: they shared one",
            path,
        )
    if p.shared_gpu is True and per_gpu == 1:
        raise _error(f"{where}.shared_gpu", "is true, but ranks_per_gpu is 1", path)


BARE_TRACES = "bare traces ("  # how analyze names traces given without their run folders (``traced.run``)


def fallback_runs(fallbacks: list, kind: str) -> set[str]:
    """The runs that fallbacks of ``kind`` (``rehearsal``, ``bare_traces``) name."""
    return {r for f in fallbacks if isinstance(f, dict) and f.get("kind") == kind for r in f.get("runs") or []}


def _bare_traces_said(m: Any, path: Path | None) -> None:
    """Traces given without their run folders are listed as the ``bare_traces`` fallback, and the other
    way round; and they hold no placement, which only run records give (``analysis.placement``). A
    placement written into them, or the fallback dropped, would make the report say more than the traces."""
    listed = fallback_runs(m.fallbacks, "bare_traces")
    for key, e in m.world_sizes.items():
        traced = e.traced
        if traced is None:
            continue
        named_bare = str(traced.run).startswith(BARE_TRACES)
        if named_bare and traced.run not in listed:
            raise _error(
                "fallbacks",
                f"record no bare_traces fallback for {traced.run!r} (world size {key}), which names traces given "
                "without their run folders",
                path,
            )
        if (named_bare or traced.run in listed) and traced.placement is not None:
            raise _error(
                f"world_sizes[{key!r}].traced.placement",
                f"is recorded, but {traced.run!r} are traces given without their run folders, which record no placement",
                path,
            )


def _rehearsals_said(m: Any, path: Path | None) -> None:
    """A run the fallbacks record as a rehearsal is one in its world size's placement too, and the
    other way round: the checker judges a rehearsal of several ranks on its structure only, so its
    placement cannot be dropped or made to say otherwise, and the report lists every fallback, so the
    rehearsal cannot be dropped from the fallbacks either."""
    runs = fallback_runs(m.fallbacks, "rehearsal")
    for key, e in m.world_sizes.items():
        traced = e.traced
        if traced is None:
            continue
        if traced.run not in runs:
            if traced.placement is not None and traced.placement.rehearsal:  # and the other way round
                raise _error(
                    "fallbacks",
                    f"record no rehearsal for run {traced.run!r}, but world_sizes[{key!r}].traced.placement says it was one "
                    "(a rehearsal is a fallback: it cannot be left out of the list the report shows)",
                    path,
                )
            continue
        if traced.placement is None or not traced.placement.rehearsal:
            said = "absent" if traced.placement is None else "not a rehearsal"
            raise _error(
                f"world_sizes[{key!r}].traced.placement",
                f"is {said}, but the fallbacks record run {traced.run!r} as a rehearsal",
                path,
            )
