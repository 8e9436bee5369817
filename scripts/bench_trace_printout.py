"""bench_trace.py's printout of a run or a merge: one JSON line per mode and configuration, one per mode's
per-call figures, then the default Score-P mode's targets as ``#`` lines, judged by the rule the
documents use (``tools/cost_verdicts.py``)."""

from __future__ import annotations

import json
import sys

from dnabert_scaling.errors import escape_hidden


def say(text: str) -> None:
    """A message on stderr, each hidden character of it (a control or bidi character of a file's name or content)
    written as an escape, never acted on by the terminal."""
    print(escape_hidden(text), file=sys.stderr)


def show(doc: dict) -> None:
    """One line per mode and configuration, one per mode's per-call figures; then, where the run has the
    artifact's default Score-P mode, its targets (issue 24) as ``#`` lines."""
    for r in doc["modes"]:
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "round_ratios"}))
    for r in doc.get("per_call") or []:
        print(json.dumps({k: v for k, v in r.items() if not k.endswith("_all")}))
    for line in target_lines(doc):
        print(escape_hidden(line))  # they name runs by their files' names


def target_lines(doc: dict) -> list[str]:
    """The default mode's ratio targets, and "at most torch.profiler's cost", each met, missed or not
    established by the rule the documents use (``tools/cost_verdicts.py``); beside each, where the run has them,
    CUPTI alone against the same bound and what the mode adds to the bare client that takes the launches the
    same way (against 0)."""
    from dnabert_scaling.tools import cost_verdicts as cv
    from dnabert_scaling.tools.docbench import RECORDS_MODE, SCOREP_RATIO_TARGETS
    from dnabert_scaling.tools.docbench_targets import CLIENT_OF, beyond_client, beyond_client_said, cupti_alone, mode_of_file

    mode = mode_of_file(doc)  # the default of the build its runs list: records mode where it has the records patch
    lines = []
    for config, bound in SCOREP_RATIO_TARGETS:
        rounds = cv.rounds_of(doc, config, mode)
        if not rounds.ran:
            continue
        verdict, said = cv.judge([rounds], bound)
        m = cv.median_of([rounds])
        median = "-" if m is None else f"{m:.3f}x"
        lines.append(f"#   {config}: {median} over {len(rounds.values)} rounds against <= {bound:.2f}x: {verdict} ({said})")
        paired = cv.rounds_of(doc, config, mode, minus="torch")
        if paired.ran:
            verdict, said = cv.judge([paired], 0.0)
            lines.append(
                f"#   {config}: at most torch.profiler's cost, paired in {len(paired.values)} rounds: {verdict} "
                f"(Score-P's ratio minus torch's: {said})"
            )
        # what the bound leaves a tracer: CUPTI alone against it, and what Score-P adds to the bare client that takes
        # the launches as the mode does (the bound the documents argue for), where the run has them beside it
        alone = cupti_alone([("the run", doc)], config, bound)
        if alone:
            where, said, n, am = alone
            lines.append(
                f"#   {config}: CUPTI alone (no Score-P) {'-' if am is None else f'{am:.3f}x'} over {n} rounds: {where} ({said})"
            )
        beyond = beyond_client([("the run", doc)], config, 0.0)
        if beyond:
            how = "records" if mode == RECORDS_MODE else "callbacks"
            lines.append(
                f"#   {config}: Score-P beyond the bare client with the same launch {how} ({CLIENT_OF[mode]}), paired in "
                f"{beyond[2]} rounds: {beyond_client_said(beyond)}"
            )
    if lines:
        lines[:0] = [
            f"# targets of the default Score-P mode of this build ({mode}), its step over the untraced step of the same turn:",
            "# met = the 95% interval of the median of the rounds lies at or below the bound (and the runs of a merge",
            "# agree), missed = it lies above, else not established (tools/cost_verdicts.py)",
        ]
    return lines
