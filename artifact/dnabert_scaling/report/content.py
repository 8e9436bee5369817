"""What the report says, by job: every section's HTML re-exported from the module that renders it.

The notebook (``report.template``) calls those modules directly; this module keeps the names
importable from one place for the tests and for code written against it:

- ``report.results``: the result sets (metrics, verdicts, tables) and the text helpers;
- ``report.front``: notebook display, style sheet, title, abstract, headline, fallbacks, set-up;
- ``report.verdict_sections``: claims and verdicts, bounds with rationale, sanity checks;
- ``report.metric_tables``: step partition, ranking, idle causes, kernel classes, rank skew;
- ``report.timeline``: the zoomable one-step timeline and its script;
- ``report.appendices``: analysis notes, busy-wait caveat, how to reproduce, build info, kernel check.
"""

from __future__ import annotations

from dnabert_scaling.report.appendices import build_info_html, busy_wait_html, check_kernel, notes_html, reproduce_html
from dnabert_scaling.report.front import (
    abstract_html,
    fallback_items,
    figure_html,
    headline,
    setup_html,
    show,
    show_figure,
    style,
    title_html,
)
from dnabert_scaling.report.metric_tables import idle_html, kernel_classes_html, metrics_table_html, rank_skew_html, ranking_html
from dnabert_scaling.report.results import (
    VERDICT_CLASS,
    VERDICT_WORD,
    Report,
    ResultSet,
    badge,
    default_label,
    distinct_labels,
    esc,
    fmt,
    load_set,
    median,
    ms,
    recorded_paths,
    results_folder_note,
    short,
    shown,
)
from dnabert_scaling.report.timeline import zoom_timeline_html
from dnabert_scaling.report.verdict_sections import claims_html, rationale_html, sanity_html

__all__ = [
    "VERDICT_CLASS",
    "VERDICT_WORD",
    "Report",
    "ResultSet",
    "abstract_html",
    "badge",
    "build_info_html",
    "busy_wait_html",
    "check_kernel",
    "claims_html",
    "default_label",
    "distinct_labels",
    "esc",
    "fallback_items",
    "figure_html",
    "fmt",
    "headline",
    "idle_html",
    "kernel_classes_html",
    "load_set",
    "median",
    "metrics_table_html",
    "ms",
    "notes_html",
    "rank_skew_html",
    "ranking_html",
    "rationale_html",
    "recorded_paths",
    "reproduce_html",
    "results_folder_note",
    "sanity_html",
    "setup_html",
    "short",
    "show",
    "show_figure",
    "shown",
    "style",
    "title_html",
    "zoom_timeline_html",
]
