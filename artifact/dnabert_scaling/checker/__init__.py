"""``dnabert-scaling check``: the paper's claims (``expected/claims.toml``) against ``metrics.json``.

    dnabert-scaling check results/ [--expected expected/claims.toml] [--strict] [--out DIR]

Each claim names the metric(s) it rests on (paths into one world size's entry of
``metrics.json``), the world sizes it applies to, and explicit bounds with their rationale. A
claim gets one verdict:

- ``PASS``: every check of the claim was measured and is within its bounds;
- ``FAIL``: a measured value is outside its bounds;
- ``NOT RUN``: a world size the claim needs was not measured, its GPU analysis did not run
  (``gpu_not_run_reason``, e.g. a CPU smoke run), it ran on the wrong kind of device, a
  metric is missing / null, or several GPU ranks ran with no placement that shows one GPU each
  (a magnitude check; ``placement_unknown``). A claim can never pass on missing data;
- ``INVALID``: a world size the claim's data come from failed a sanity check (a missing rank,
  incomplete steps, a non-finite loss, a trace without GPU streams), its ranks shared a GPU or
  rehearsed (a magnitude check; ``shared_gpu``), or the value is NaN, a figure the analysis could
  not compute (``not_a_number``: no data, never a refutation).

Across the checks of one claim the verdicts combine as FAIL > INVALID > NOT RUN > PASS: a valid
refutation is reported as such even when another part could not be judged.

When a claim is about a world size that was not measured (8 GPUs, say) but a smaller multi-GPU
one was, the same measurement at the largest such world size is reported as an *indicative*
figure: information, labelled as such, never a verdict.

Writes ``verdicts.json`` and ``verdicts.txt`` into the results folder (or ``--out``), prints the
table, and exits 1 when any claim FAILs or is INVALID (``--strict``: also when one is NOT RUN).

The package, one job per module: ``names``, ``metric_paths``, ``claims``, ``lookup``, ``evaluate``, ``table``, ``cli``.
"""

from __future__ import annotations

from dnabert_scaling.checker.names import (
    CLAIMS_SCHEMA,
    FAIL,
    INVALID,
    NOT_RUN,
    PASS,
    PRECEDENCE,
    SANITY_ITEMS,
    SANITY_SHORT,
    SANITY_WORDS,
    UNKNOWN,
    VERDICTS,
    VERDICTS_SCHEMA,
    _fmt,
)
from dnabert_scaling.checker.metric_paths import METRIC_TREE
from dnabert_scaling.checker.claims import Check, Claim, SanityBounds, WorldSizes, load_claims, load_sanity_bounds
from dnabert_scaling.checker.lookup import (
    Missing,
    device_of,
    lookup,
    sanity_rows,
    world_size_entries,
    world_sizes_with_steps,
)
from dnabert_scaling.checker.evaluate import (
    Context,
    Part,
    REASON_CODES,
    evaluate,
    evaluate_at,
    evaluate_claim,
    evaluate_monotone,
    exit_status,
    values_equal,
)
from dnabert_scaling.checker.table import _bounds_text, format_table
from dnabert_scaling.checker.cli import (
    add_arguments,
    check_folder,
    check_results,
    default_claims_path,
    load_metrics,
    read_verdicts,
    run,
    write_verdicts,
)

__all__ = [
    "CLAIMS_SCHEMA",
    "FAIL",
    "INVALID",
    "NOT_RUN",
    "PASS",
    "PRECEDENCE",
    "SANITY_ITEMS",
    "SANITY_SHORT",
    "SANITY_WORDS",
    "UNKNOWN",
    "VERDICTS",
    "VERDICTS_SCHEMA",
    "METRIC_TREE",
    "Check",
    "Claim",
    "SanityBounds",
    "WorldSizes",
    "load_claims",
    "load_sanity_bounds",
    "Missing",
    "device_of",
    "lookup",
    "world_size_entries",
    "world_sizes_with_steps",
    "sanity_rows",
    "Context",
    "Part",
    "REASON_CODES",
    "_fmt",
    "evaluate",
    "values_equal",
    "evaluate_at",
    "evaluate_claim",
    "evaluate_monotone",
    "exit_status",
    "_bounds_text",
    "format_table",
    "add_arguments",
    "check_folder",
    "check_results",
    "default_claims_path",
    "load_metrics",
    "run",
    "read_verdicts",
    "write_verdicts",
]
