"""The generated blocks of GPU calls T, U, V, W (2026-12-05), Z, ZH, ZF, ZK and ZM (2026-12-06): where the default Score-P mode's cost beyond the bare
CUPTI client with the same launch callbacks lies. Each call ran the default mode beside modes that differ from it,
or from the bare client, in one part (call T: the default without its stream reference and with Score-P's tracing
off, its callbacks run and CUPTI's records are taken, nothing is written; call U: the bare client with the
resource and synchronisation callback domains Score-P also enables, and the default mode with the synchronisation
domain held back by a preloaded filter; call V: the bare client without launch records, and with CUPTI's activity
records of the launch calls instead of callbacks; call W: Score-P taking its launches from those activity records,
with the candidate 8.4-cupti-launch-records.patch; call Z: that patch's present code, built on a CPU, with torch.profiler
in place of the bare client; call ZH: call Z's build and modes on the H200; call ZF: that build's default, records mode,
beside CUPTI alone and the bare client with the same records, at 32 x 70, on H100s; call ZK: the same with CUPTI alone
keeping its profiling data in pinned host memory as well, on an H100; call ZM: CUPTI alone with one stream of activity
buffers for all threads beside its default, per-thread buffers, on an H100), the bare client and no tracer, in lockstep rounds. Each part of the cost
is the paired per-round difference of two modes, judged against 0 by the rule of :mod:`cost_verdicts` (the 95%
interval of the median of the rounds); the default mode's targets are read on these rounds, the diagnostic modes
left out. The shared table, wording and targets come from :mod:`docbench` and :mod:`docbench_calls`."""

from __future__ import annotations

from dataclasses import dataclass

from dnabert_scaling.tools import cost_verdicts as cv
from dnabert_scaling.tools.docbench import (
    LAUNCH_MODE,
    LAUNCH_SAID,
    NAMES,
    SCOREP_RATIO_TARGETS,
    _kernels_found,
    against_torch,
    bench_file,
    scorep_targets,
)
from dnabert_scaling.tools.docbench_calls import _cache_run_head, _paired_sentences
from dnabert_scaling.tools.docfacts import Facts

CLIENT = "cupti-launch"  # the bare CUPTI client with the launch callbacks the default mode takes
NOREFS = "scorep-launch-norefs-chunk4m"  # the default mode without `references` (docbench.NAMES names it)
NOTRACE = "scorep-launch-notrace-chunk4m"  # the default mode with tracing off: nothing written
DOMAINS = "cupti-launch-domains"  # the bare client with the resource and synchronisation domains as well
NOSYNC = "scorep-launch-nosync-chunk4m"  # the default mode with the synchronisation domain held back
KERNELS = "cupti-kernels"  # the bare client without launch records: CUPTI alone
RECORDS = "cupti-launch-records"  # the bare client with CUPTI's activity records of the launch calls, no callbacks
SCOREP_RECORDS = "scorep-records-chunk4m"  # Score-P taking those records (8.4-cupti-launch-records.patch)


@dataclass(frozen=True)
class Split:
    """One call's split of the cost: its file, its name in the text, and its parts (what the part is, the
    mode without it, the mode with it); the modes other than the default and the bare client are diagnostic."""

    bench: str
    label: str
    parts: tuple[tuple[str, str, str], ...]
    lead: str = "The parts of launch-only Score-P's cost beyond the bare client"  # what the parts sentence calls them

    @property
    def diagnostic(self) -> set[str]:
        return {m for _, low, high in self.parts for m in (low, high)} - {LAUNCH_MODE, CLIENT}


PARTS_BENCH = "h200-bench/gpu-call-2026-12-05-parts/bench-t.json"
CALL_T = Split(
    PARTS_BENCH,
    "call T",
    (
        ("Score-P's callback path, nothing written", CLIENT, NOTRACE),
        ("writing the trace", NOTRACE, LAUNCH_MODE),
        ("the stream reference", NOREFS, LAUNCH_MODE),
        ("in all", CLIENT, LAUNCH_MODE),
    ),
)
DOMAINS_BENCH = "h100-bench/gpu-call-2026-12-05-domains/bench-u.json"  # on the lent H100: never pooled with the H200's targets
CALL_U = Split(
    DOMAINS_BENCH,
    "call U",
    (
        ("the resource and synchronisation domains, to the bare client", CLIENT, DOMAINS),
        ("the synchronisation domain, to Score-P", NOSYNC, LAUNCH_MODE),
        ("Score-P beyond the bare client with the same domains", DOMAINS, LAUNCH_MODE),
        ("in all", CLIENT, LAUNCH_MODE),
    ),
)
RECORDS_BENCH = "h100-bench/gpu-call-2026-12-05-records/bench-v.json"  # on the lent H100, as call U
CALL_V = Split(
    RECORDS_BENCH,
    "call V",
    (
        ("launch records from CUPTI's activity API, to CUPTI alone", KERNELS, RECORDS),
        ("launch callbacks, to CUPTI alone", KERNELS, CLIENT),
        ("activity records against callbacks", CLIENT, RECORDS),
        ("launch-only Score-P beyond the client with launch records", RECORDS, LAUNCH_MODE),
        ("launch-only Score-P beyond the client with launch callbacks", CLIENT, LAUNCH_MODE),
    ),
    lead="What launch records cost, taken either way, and what launch-only Score-P adds to either",
)
LAUNCH_RECORDS_BENCH = "h100-bench/gpu-call-2026-12-05-launch-records/bench-w.json"  # on the lent H100, as call V
CALL_W = Split(
    LAUNCH_RECORDS_BENCH,
    "call W",
    (
        ("Score-P with its launches from activity records, beyond the client with the same records", RECORDS, SCOREP_RECORDS),
        ("launch-only Score-P beyond Score-P with its launches from activity records", SCOREP_RECORDS, LAUNCH_MODE),
        ("launch-only Score-P beyond the client with launch records", RECORDS, LAUNCH_MODE),
    ),
    lead="What Score-P adds to the bare client when it takes its launches from CUPTI's activity records, and what launch-only Score-P adds",
)
CPU_BUILT_BENCH = "h100-bench/gpu-call-2026-12-06-cpu-built/bench-z.json"  # on the lent H100, as call W
CALL_Z = Split(
    CPU_BUILT_BENCH,
    "call Z",
    (("launch-only Score-P beyond Score-P with its launches from activity records", SCOREP_RECORDS, LAUNCH_MODE),),
    lead="What launch-only Score-P adds to Score-P with its launches from CUPTI's activity records (a build made on a CPU)",
)
H200_RECORDS_BENCH = "h200-bench/gpu-call-2026-12-06-records/bench-zh.json"  # call Z's plan on the H200: the targets' card
CALL_ZH = Split(
    H200_RECORDS_BENCH,
    "call ZH",
    (("launch-only Score-P beyond Score-P with its launches from activity records", SCOREP_RECORDS, LAUNCH_MODE),),
    lead="What launch-only Score-P adds to Score-P with its launches from CUPTI's activity records (call Z's build with the records patch, on the H200)",
)
FLOOR_PARTS = (  # what records mode adds to the bare clients, and the launch records to CUPTI alone: calls ZF, ZK, ZM
    ("the launch records, to CUPTI alone", KERNELS, RECORDS),
    ("Score-P in records mode beyond the client with the same records", RECORDS, SCOREP_RECORDS),
    ("Score-P in records mode beyond CUPTI alone", KERNELS, SCOREP_RECORDS),
)
CUPTI_FLOOR_BENCH = "h100-bench/gpu-call-2026-12-06-cupti-floor/bench-zr-h100.json"  # on lent H100s, as call Z
CALL_ZF = Split(
    CUPTI_FLOOR_BENCH,
    "call ZF",
    FLOOR_PARTS,
    lead="What the shipped build's default (records mode) adds to the bare client with the same records, and what those records add to CUPTI alone",
)
PINNED = "cupti-kernels-pinned"  # CUPTI alone with its profiling data in pinned host memory instead of device memory
CUPTI_SETTINGS_BENCH = "h100-bench/gpu-call-2026-12-06-cupti-settings/bench-zk-h100.json"  # on a lent H100, as call ZF


def cupti_setting_call(bench: str, label: str, setting: tuple[str, str, str], lead: str) -> Split:
    """A call that ran CUPTI alone with one of CUPTI's own settings beside its default, and the floor parts."""
    return Split(bench, label, (setting, *FLOOR_PARTS), lead=lead)


CALL_ZK = cupti_setting_call(
    CUPTI_SETTINGS_BENCH,
    "call ZK",
    ("CUPTI's profiling data in pinned host memory, to CUPTI alone (device memory)", KERNELS, PINNED),
    lead="Whether one of CUPTI's own settings moves CUPTI's cost, and what the shipped build's default adds to the bare clients",
)
SHARED = "cupti-kernels-shared"  # CUPTI alone with one stream of activity buffers for all threads, not one per thread
CUPTI_SHARED_BENCH = "h100-bench/gpu-call-2026-12-06-cupti-shared/bench-zm-h100.json"  # on a lent H100, as call ZK
CALL_ZM = cupti_setting_call(
    CUPTI_SHARED_BENCH,
    "call ZM",
    ("one stream of activity buffers for all threads, to CUPTI alone (buffers per thread)", KERNELS, SHARED),
    lead="Whether CUPTI's other buffer setting moves CUPTI's cost, and what the shipped build's default adds to the bare clients",
)
VERDICT_WORDS = {  # a part's paired difference against 0: its interval wholly above, at or below, or around 0
    "missed": "a cost",
    "met": "no cost",
    "not established": "not told from 0",
}


def bench_trace_parts(facts: Facts, _: str | None) -> str:
    """Call T's block."""
    return split_block(facts, CALL_T)


def bench_trace_domains(facts: Facts, _: str | None) -> str:
    """Call U's block, with what the bare client and the filter counted."""
    return split_block(facts, CALL_U)


def bench_trace_records(facts: Facts, _: str | None) -> str:
    """Call V's block, with the launch records the client counted and the kernels they link to."""
    return split_block(facts, CALL_V)


def bench_trace_launch_records(facts: Facts, _: str | None) -> str:
    """Call W's block, and Score-P with its launches from activity records against the default mode's bounds."""
    return _records_split_block(facts, CALL_W)


def bench_trace_cpu_built(facts: Facts, _: str | None) -> str:
    """Call Z's block (the Score-P built on a CPU by cpu-build.sh, run on the H100), and Score-P with its launches
    from activity records against the default mode's bounds."""
    return _records_split_block(facts, CALL_Z)


def bench_trace_records_h200(facts: Facts, _: str | None) -> str:
    """Call ZH's block (call Z's CPU-built Score-P with the candidate patch, run on the H200), and Score-P with its
    launches from activity records against the default mode's bounds."""
    return _records_split_block(facts, CALL_ZH)


def bench_trace_cupti_floor(facts: Facts, _: str | None) -> str:
    """Call ZF's block (the shipped build's default beside the bare clients at 32 x 70, on H100s), and records mode
    against the default mode's bounds."""
    return _records_split_block(facts, CALL_ZF)


def bench_trace_cupti_settings(facts: Facts, _: str | None) -> str:
    """Call ZK's block (CUPTI alone with its profiling data in pinned host memory beside its default, the bare client
    with the launch records and the shipped build's default, at 32 x 70, on an H100), and records mode against the
    default mode's bounds."""
    return _records_split_block(facts, CALL_ZK)


def bench_trace_cupti_shared(facts: Facts, _: str | None) -> str:
    """Call ZM's block (CUPTI alone with one stream of activity buffers for all threads beside its default, the bare
    client with the launch records and the shipped build's default, at 32 x 70, on an H100), and records mode against
    the default mode's bounds."""
    return _records_split_block(facts, CALL_ZM)


def _records_split_block(facts: Facts, split: Split) -> str:
    """A call's split, then records mode held to the default mode's bounds on the same rounds."""
    return split_block(facts, split) + _records_mode_targets(bench_file(facts, split.bench), split.label)


def _records_mode_targets(data: dict, label: str) -> str:
    """Score-P with its launches from CUPTI's activity records (the default where Score-P carries the records patch)
    against the targets, by the same rule on the same rounds, with its trace size and the kernels its launches link
    to by correlation id."""
    rows = {m.get("config"): m for m in data.get("modes") or [] if m.get("mode") == SCOREP_RECORDS}
    by = {(m.get("mode"), m.get("config")): m for m in data.get("modes") or []}
    if not rows:
        return ""
    out = []
    for config, bound in SCOREP_RATIO_TARGETS:
        row = rows.get(config)
        if row is None:
            continue
        verdict, interval = cv.judge([cv.rounds_of(data, config, SCOREP_RECORDS, label=label)], bound)
        r = row.get("ratio_median")
        shown = f"{r:.2f}x" if cv.is_number(r) else "-"
        out.append(f"{config}: {shown} against <= {bound:.2f}x ({verdict}: {interval})")
        out.extend(against_torch(by, data, config, SCOREP_RECORDS))
    first = next(iter(rows.values()))
    size = first.get("trace_bytes_per_step")
    if cv.is_number(size):
        out.append(f"trace {size / 1e3:,.0f} kB per step against <= 100 kB ({'met' if size <= 100e3 else 'missed'})")
    what, verdict = _kernels_found(first)  # the default mode's reading: an uncountable experiment is never "met"
    said = f"kernels found: {what} ({verdict})"
    if isinstance(first.get("kernels_linked"), int):
        said += (
            f"; kernels linked to a launch by correlation id: {first['kernels_linked']:,}, in the "
            f"{first.get('experiments_linked')} counted experiment(s) whose launches carry the id"
        )
    out.append(said)
    return (
        "\n\nTargets of the default mode with the records patch (Score-P with its launches from CUPTI's activity records, "
        "4 MB buffers; the artifact's default since 2026-12-06 where Score-P carries that patch), by the same rule on these "
        "rounds: " + "; ".join(out) + "."
    )


def split_block(facts: Facts, split: Split) -> str:
    """A call's split: the table; each pair of modes on the rounds both ran; each part of the cost against
    0; what the diagnostic set-ups counted; the default mode's targets on these rounds (the diagnostic modes
    left out of them)."""
    data = bench_file(facts, split.bench)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{split.bench}` shipped)"
    unread = _unread_modes(modes)  # left out of the table as well: its name would say what it did not do
    modes = [m for m in modes if m.get("mode") not in unread]
    text, names, by, configs, cached, runs = _cache_run_head(data, modes)
    pairs = [(low, high) for _, low, high in split.parts if not {low, high} & set(unread)]
    text += _paired_sentences(by, configs, names, pairs)
    text += _parts_sentence(data, configs, split, unread)
    text += _set_up_sentence(modes)
    if not any(m.get("mode") == LAUNCH_MODE for m in modes):  # a call of records mode alone: its targets follow it
        return text
    said = f"{LAUNCH_SAID}, stream reference cache on" if cached == runs else LAUNCH_SAID
    kept = [m for m in modes if m.get("mode") not in split.diagnostic]
    return text + "\n\n" + scorep_targets(kept, data, said=said)


def _first_rows(modes: list[dict]) -> dict[str, dict]:
    """Each mode's first row (a mode's process counts are the same in the rows of each configuration)."""
    out: dict[str, dict] = {}
    for m in modes:
        out.setdefault(m.get("mode"), m)
    return out


def _set_up_sentence(modes: list[dict]) -> str:
    """What the diagnostic set-ups counted, from the processes' own counts: the bare client's resource and
    synchronisation callbacks (with those domains) and the filter's held-back enabling calls."""
    said = []
    for mode, m in _first_rows(modes).items():
        domain_calls = m.get("cupti_domain_callbacks")
        if mode == DOMAINS and isinstance(domain_calls, list) and domain_calls:
            got = [n for n in domain_calls if isinstance(n, int) and n > 0]
            said.append(
                f"the bare client with the domains received resource and synchronisation callbacks in {len(got)} of "
                f"{len(domain_calls)} processes ({_span(got)} each)"
                if got
                else f"the bare client with the domains received no resource or synchronisation callback in any of its "
                f"{len(domain_calls)} processes"
            )
        held = m.get("domain_filter_held_back")
        if mode == NOSYNC and isinstance(held, list) and held:
            ok = sum(1 for n in held if isinstance(n, int) and n > 0)
            said.append(f"the filter held back the synchronisation domain in {ok} of {len(held)} processes")
        if mode == RECORDS and _records_read(m) is None:
            said.append(_records_said(m))
    return " Counted by the processes themselves: " + "; ".join(said) + "." if said else ""


def _span(counts: list[int]) -> str:
    """``7`` where every count is 7, else ``5-9``."""
    return f"{min(counts):,}" if min(counts) == max(counts) else f"{min(counts):,}-{max(counts):,}"


def _unread_modes(modes: list[dict]) -> dict[str, str]:
    """The diagnostic modes whose set-up is not shown to have been what it says, with why: the filtered
    Score-P mode where some process's filter held nothing back (or its counts are missing); the client with
    launch records where some process counted none (or the counts are missing)."""
    rows = _first_rows(modes)
    out = {}
    row = rows.get(NOSYNC)
    if row is not None:
        held = row.get("domain_filter_held_back")
        if not isinstance(held, list) or not held:
            out[NOSYNC] = "the filter's counts were not recorded"
        elif off := sum(1 for n in held if not (isinstance(n, int) and n > 0)):
            out[NOSYNC] = f"the filter held nothing back in {off} of {len(held)} processes"
    if (row := rows.get(RECORDS)) is not None and (why := _records_read(row)) is not None:
        out[RECORDS] = why
    return out


def _records_read(row: dict) -> str | None:
    """Why the client's launch records cannot be read as such (None where they can): a process that counted
    none, or counts that are missing or do not pair with the kernel records."""
    got, linked, kernels = (row.get(k) for k in ("cupti_launch_records", "cupti_linked_kernels", "cupti_kernel_records"))
    if not (isinstance(got, list) and got and isinstance(linked, list) and isinstance(kernels, list)):
        return "the client's launch records were not counted"
    if not (len(got) == len(linked) == len(kernels)):
        return "the client's counts of launch records and kernels are not one per process"
    if off := sum(1 for n in got if not (isinstance(n, int) and not isinstance(n, bool) and n > 0)):
        return f"the client counted no launch record in {off} of {len(got)} processes"
    if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in [*linked, *kernels]):
        return "the client's counts of linked kernels are not whole numbers"
    return None


def _records_said(row: dict) -> str:
    """What the client with launch records counted: its records and the kernel records they link to."""
    got, linked, kernels = row["cupti_launch_records"], row["cupti_linked_kernels"], row["cupti_kernel_records"]
    whole = sum(1 for n, k in zip(linked, kernels, strict=True) if n == k)
    return (
        f"the client with launch records counted {_span(got)} launch records per process, and in {whole} of "
        f"{len(got)} processes every kernel record was linked to one by its correlation id "
        f"({sum(linked):,} of {sum(kernels):,} kernel records in all)"
    )


def _parts_sentence(data: dict, configs: list[str], split: Split, unread: dict[str, str]) -> str:
    """Per configuration, each part as the median of its paired per-round differences (in untraced steps),
    with its 95% interval of the median and what that says against 0; parts whose modes did not both run
    are left out. A part is a cost only where its interval lies wholly above 0."""
    said = []
    for config in configs:
        parts = []
        for what, low, high in split.parts:
            why = next((unread[m] for m in (low, high) if m in unread), None)
            if why:
                parts.append(f"{what}: not read ({why})")
                continue
            rounds = cv.rounds_of(data, config, high, minus=low, label=split.label)
            if not rounds.ran:
                continue
            verdict, interval = cv.judge([rounds], 0.0)
            median = cv.median_of([rounds])
            if median is None:
                parts.append(f"{what}: not read ({interval})")
                continue
            parts.append(
                f"{what} {median:+.3f} over {len(rounds.values)} rounds, {VERDICT_WORDS.get(verdict, verdict)} ({interval})"
            )
        if parts:
            said.append(f"At {config}, " + "; ".join(parts))
    if not said:
        return ""
    return f" {split.lead}, each the paired per-round difference of two modes in untraced steps: " + ". ".join(said) + "."
