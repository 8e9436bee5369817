"""One result set's section of the report, as one block: its heading, its key numbers and the
fallbacks that are its own, then the detail (set-up, claims, where the GPU time goes, figures,
throughput, prediction, notes) in a collapsible ``<details>``.

Figures are numbered in the order shown, only those shown get a number (so no number is used
twice), and figures missing for one reason are one note naming them, not a box each."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from dnabert_scaling.report import figures as F
from dnabert_scaling.report.html import Markup, render

# (name in the note, figure function, caption); the caption is trusted text of this module.
FIGURES: tuple[tuple[str, str, str], ...] = (
    (
        "GPU time per step",
        "breakdown",
        "GPU time per step by world size, partitioned into compute, exposed communication (NCCL time with no "
        "compute under it), exposed memcpy and idle (split into host wait, kernel wait and other, Method). Medians "
        "over all (rank, step) samples, so the stacked parts need not add up exactly to the median step time (black bar).",
    ),
    (
        "AllReduce against backward",
        "allreduce_vs_backward",
        "Summed AllReduce kernel time against the backward pass's GPU time per step (medians; error bars p10 to p90 "
        "over ranks and steps). The ratio (claim C4) is the median of the per-step ratio. AllReduce time includes "
        "busy-waiting (Caveat 1).",
    ),
    (
        "one-step timeline",
        "timeline",
        "One measured step (the one nearest the median step time on rank 0) of the largest world size, as a "
        "Vampir-like timeline: per rank its host threads (phase ranges, launch calls in black) above its GPU streams "
        "(compute, NCCL), each phase shaded where the GPU ran the kernels the host launched in it. AllReduce buckets "
        "running while the backward compute continues on the other stream are the overlap of claim C5.",
    ),
    (
        "overlap per step",
        "overlap",
        "Overlap ratio |U compute ∩ U nccl| / |U nccl| per measured step, one line per rank, for each multi-GPU "
        "world size; dashed: the bound of claim C5.",
    ),
    (
        "per-step distributions",
        "distributions",
        "Per-step distributions over all (rank, measured step) samples: boxes p25 to p75, whiskers p10 to p90, "
        "dots beyond; red: median.",
    ),
    (
        "throughput",
        "throughput",
        "Left: samples per second of the untraced runs (grey: each repeat; blue: median) against ideal linear "
        "scaling from the 1-GPU median. Right: weak-scaling efficiency, with the ideal (1.0) and the bound of claim "
        "C6; error bars: the range the repeats allow (slowest at N over N x fastest 1-GPU repeat, and the reverse).",
    ),
)
BOUNDS = {"overlap": ("C5", "overlap"), "throughput": ("C6", "efficiency")}
PREDICTION_CAPTION = (
    "Predicted step time (left) and weak-scaling efficiency (right, one-GPU traced step time over the predicted "
    "one) against the number of GPUs; shaded: the band from the parameter ranges; squares: measured traced runs "
    "where they exist. A prediction, never a verdict."
)


_HEAD = re.compile(r"^<b>(.*?)</b>")  # a fallback item's name: its bold head


@dataclass
class Numbering:
    """Figure numbers ``<section>.<k>`` in the order figures are shown; missing ones grouped by reason."""

    section: int
    core: str | None = None  # the set's reason for having no GPU metrics: figures missing for it are one note
    shown: int = 0
    missing: dict[str, list[str]] = field(default_factory=dict)

    def figure(self, fig: Any, name: str, caption: str) -> Markup:
        if isinstance(fig, F.NotAvailable):
            reason = self.core if self.core and self.core in fig.reason else fig.reason
            self.missing.setdefault(reason, []).append(name)
            return Markup("")
        self.shown += 1
        return figure_block(fig, f"{self.section}.{self.shown}", caption)


def figure_block(fig: Any, number: str, caption: str) -> Markup:
    import base64

    return render(
        "figure.html.j2",
        src="data:image/png;base64," + base64.b64encode(fig.png).decode("ascii"),
        alt=fig.alt,
        number=number,
        caption=caption,
    )


def _figures(rs: Any, numbering: Numbering, keys: tuple[str, ...]) -> Markup:
    out = Markup("")
    for name, key, caption in FIGURES:
        if key not in keys:
            continue
        fn: Callable = getattr(F, key)
        bound = BOUNDS.get(key)
        fig = fn(rs, rs.bound(*bound)) if bound else fn(rs)
        out += numbering.figure(fig, name, caption)
    return out


def _parts(rs: Any, numbering: Numbering, study_sizes: list[int], claims: list | None) -> dict[str, Markup]:
    """The detail's parts, each HTML the section modules made (they escape what they interpolate)."""
    from dnabert_scaling.report import appendices as A, front as H, metric_tables as T, predictions as P
    from dnabert_scaling.report import timeline as Z, verdict_sections as V

    parts = {
        "setup": Markup(H.setup_html(rs)),
        "claims": Markup(V.claims_html(rs)),
        "metrics": Markup(T.metrics_table_html(rs)) + _figures(rs, numbering, ("breakdown", "allreduce_vs_backward")),
        "tables": Markup(T.idle_html(rs)) + Markup(T.ranking_html(rs)) + Markup(T.kernel_classes_html(rs)),
        "timeline": _figures(rs, numbering, ("timeline",)) + Markup(Z.zoom_timeline_html(rs)),
        "steps": _figures(rs, numbering, ("overlap", "distributions")) + Markup(T.rank_skew_html(rs)),
        "throughput": _figures(rs, numbering, ("throughput",)),
        "prediction": Markup(P.section_html(rs, claims, study_sizes)),
        "notes": Markup(A.notes_html(rs)),
    }
    if P.load(rs)[0] is not None:
        parts["prediction"] += numbering.figure(P.curves(rs), "prediction curves", PREDICTION_CAPTION)
    return parts


def set_section_html(
    rs: Any, section: int, shared_fallbacks: list[str], study_sizes: list[int], claims: list | None = None
) -> Markup:
    """The whole section of result set ``rs``, numbered ``section``; ``shared_fallbacks`` are the
    fallbacks every set has, said once before the sets and referred to here."""
    from dnabert_scaling.report import front as H

    no_gpu = not any(rs.gpu(n) for n in rs.world_sizes)
    numbering = Numbering(section, F.gpu_missing_reason(rs) if no_gpu and rs.world_sizes else None)
    parts = _parts(rs, numbering, study_sizes, claims)
    own = [Markup(f) for f in H.fallback_items(rs) if f not in shared_fallbacks]
    heads = [Markup(m.group(1)) if (m := _HEAD.match(f)) else Markup(f) for f in own]
    return render(
        "set_section.html.j2",
        n=section,
        label=rs.label,
        headline=H.headline(rs),
        own_fallbacks=own,
        own_heads=heads,
        shared=bool(shared_fallbacks),
        parts=parts,
        missing=[{"names": names, "reason": reason} for reason, names in numbering.missing.items()],
    )


def shared_fallbacks(report: Any) -> list[str]:
    """The fallbacks every set of the report has (said once, before the sets); none for one set."""
    from dnabert_scaling.report import front as H

    if len(report.sets) < 2:
        return []
    lists = [H.fallback_items(rs) for rs in report.sets]
    return [f for f in lists[0] if all(f in other for other in lists[1:])]


def shared_fallbacks_html(report: Any) -> Markup:
    return render("shared_fallbacks.html.j2", items=[Markup(f) for f in shared_fallbacks(report)], sets=len(report.sets))
