"""The generated block of GPU call T (2026-12-05): where, in a launch record, the default Score-P mode's cost
beyond the bare CUPTI client with the same launch callbacks lies. The lockstep rounds of the default mode beside
the same mode without its stream reference and with Score-P's tracing off (its callbacks run and CUPTI's
records are taken, nothing is written), the bare client and no tracer; each part of the cost as the paired
per-round difference of two modes, judged against 0 by the rule of :mod:`cost_verdicts` (the 95% interval of
the median of the rounds); the default mode's targets on these rounds. The shared table, wording and targets
come from :mod:`docbench` and :mod:`docbench_calls`."""

from __future__ import annotations

from dnabert_scaling.tools import cost_verdicts as cv
from dnabert_scaling.tools.docbench import DEFAULT_MODE, DEFAULT_SAID, NAMES, bench_file, scorep_targets
from dnabert_scaling.tools.docbench_calls import _cache_run_head, _paired_sentences
from dnabert_scaling.tools.docfacts import Facts

PARTS_DIR = "h200-bench/gpu-call-2026-12-05-parts"
PARTS_BENCH = f"{PARTS_DIR}/bench-t.json"
NOREFS = "scorep-launch-norefs-chunk4m"  # the default mode without `references` (docbench.NAMES names it)
NOTRACE = "scorep-launch-notrace-chunk4m"  # the default mode with tracing off: nothing written
CLIENT = "cupti-launch"  # the bare CUPTI client with the launch callbacks the default mode takes
# the parts of the default mode's cost beyond the bare client: (what the part is, the mode without it, the mode with it)
PARTS = (
    ("Score-P's callback path, nothing written", CLIENT, NOTRACE),
    ("writing the trace", NOTRACE, DEFAULT_MODE),
    ("the stream reference", NOREFS, DEFAULT_MODE),
    ("in all", CLIENT, DEFAULT_MODE),
)
VERDICT_WORDS = {  # a part's paired difference against 0: its interval wholly above, at or below, or around 0
    "missed": "a cost",
    "met": "no cost",
    "not established": "not told from 0",
}


def bench_trace_parts(facts: Facts, _: str | None) -> str:
    """Call T: the table; each pair of modes on the rounds both ran; each part of the cost against 0;
    the default mode's targets on these rounds (the diagnostic modes left out of them)."""
    data = bench_file(facts, PARTS_BENCH)
    modes = [m for m in data.get("modes") or [] if m.get("mode") in NAMES]
    if not modes:
        return f"(no `{PARTS_BENCH}` shipped)"
    text, names, by, configs, cached, runs = _cache_run_head(data, modes)
    text += _paired_sentences(by, configs, names, [(low, high) for _, low, high in PARTS])
    text += _parts_sentence(data, configs)
    said = f"{DEFAULT_SAID}, stream reference cache on" if cached == runs else DEFAULT_SAID
    return text + "\n\n" + scorep_targets([m for m in modes if m.get("mode") not in (NOREFS, NOTRACE)], data, said=said)


def _parts_sentence(data: dict, configs: list[str]) -> str:
    """Per configuration, each part as the median of its paired per-round differences (in untraced steps),
    with its 95% interval of the median and what that says against 0; parts whose modes did not both run
    are left out. A part is a cost only where its interval lies wholly above 0."""
    said = []
    for config in configs:
        parts = []
        for what, low, high in PARTS:
            rounds = cv.rounds_of(data, config, high, minus=low, label="call T")
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
            said.append(f"at {config}, " + "; ".join(parts))
    if not said:
        return ""
    return (
        " The parts of the default mode's cost beyond the bare client, each the paired per-round difference of two "
        "modes in untraced steps: " + ". ".join(said) + "."
    )
