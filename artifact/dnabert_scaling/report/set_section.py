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
from dnabert_scaling.report.html import Markup, markup, render
from dnabert_scaling.report.summary import short_name


def _dur(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def _ms_text(ms: float) -> str:
    return f"{ms:.0f} ms" if abs(ms) >= 100 else f"{ms:.1f} ms"


def _share(x: float) -> str:
    return f"{x:.2%}" if 0 < x < 0.01 else f"{x:.0%}"


def _sizes(rs: Any, sizes: list[int]) -> str:
    return ", ".join(rs.ranks(n) for n in sizes)


def _shared_sizes(rs: Any, sizes: list[int]) -> str:
    """ "World sizes 2, 4" for those of ``sizes`` whose ranks shared a GPU, else ""."""
    shared = [n for n in sizes if n > 1 and rs.shared_gpu(n)]
    return f"World size{'s' if len(shared) > 1 else ''} {', '.join(map(str, shared))}" if shared else ""


def _shared_note(rs: Any, sizes: list[int]) -> str:
    """ " World sizes 2, 4: ranks share a GPU (a rehearsal), not scaling evidence." where they do, else ""."""
    said = _shared_sizes(rs, sizes)
    return f" {said}: ranks share a GPU (a rehearsal), not scaling evidence." if said else ""


def shared_banner(rs: Any) -> Markup:
    """Above the tables and figures of a set whose larger world sizes ran with ranks sharing a GPU: what their
    figures at those world sizes are (every sentence, table row and figure there, not only the captions that
    say so); empty for a set with a GPU per rank."""
    said = _shared_sizes(rs, list(rs.world_sizes))
    if not said:
        return Markup("")
    return markup(
        '<div class="ds-warn"><b>⚠ {}: ranks share a GPU (a rehearsal).</b> Every figure, table row and sentence below '
        "at {} is of ranks time-slicing one GPU: the NCCL path ran, but the magnitudes (times, shares, rankings, skew) "
        "are not those of one GPU per rank, are not scaling evidence, and this report draws no finding from them.</div>",
        said,
        "those world sizes" if said.startswith("World sizes") else "that world size",
    )


def breakdown_caption(rs: Any, fig: Any) -> str:
    idle = " (split into host wait, kernel wait and other, Method)" if fig.facts.get("idle_split") else ""
    return (
        "GPU time per step by world size, partitioned into compute, exposed communication (NCCL time with no "
        f"compute under it), exposed memcpy and idle{idle}. Medians over all (rank, step) samples, so the stacked "
        "parts need not add up exactly to the median step time (black bar)." + _shared_note(rs, fig.facts.get("sizes", []))
    )


def allreduce_caption(rs: Any, fig: Any) -> str:
    f = fig.facts
    ratios, without = f.get("ratios") or {}, f.get("without_allreduce") or []
    head = "Summed AllReduce kernel time against the backward pass's GPU time per step (medians; error bars p10 to p90 over ranks and steps)."
    if not ratios:
        return (
            f"{head} No AllReduce kernels at {_sizes(rs, without)}: no gradients to synchronise, so no ratio "
            "(claim C4) here." + _shared_note(rs, f.get("sizes", []))
        )
    parts = [f"{head} Above each pair: the ratio (claim C4), the median of the per-step ratio"]
    if without:
        parts.append(f"; no AllReduce kernels at {_sizes(rs, without)}")
    parts.append(". AllReduce kernel time may include time the kernels wait for their peers (Caveat 1).")
    return "".join(parts) + _shared_note(rs, f.get("sizes", []))


def timeline_caption(rs: Any, fig: Any) -> str:
    """The one-step timeline's caption from the step it shows: the overlap of claim C5 named only where
    the step has NCCL kernels on streams of their own on GPUs of their own."""
    f = fig.facts
    ws = f["ws"]
    host = (
        "per rank its host threads (phase ranges, launch calls in black) above its GPU streams, "
        if f.get("host_rows")
        else "per rank its GPU streams, "
    )
    out = [
        f"One measured step (the one nearest the median step time on rank 0) of the largest world size "
        f"({rs.ranks(ws)}), as a Vampir-like timeline: {host}each phase shaded where the GPU ran the kernels the "
        "host launched in it."
    ]
    nccl, overlap = f.get("nccl_s") or 0.0, f.get("overlap")
    if overlap is None:
        out.append(f"No NCCL kernels in this step ({rs.ranks(ws)}): nothing to overlap.")
    elif not f.get("nccl_own_stream"):
        out.append(
            f"NCCL kernels run on a stream that also runs compute kernels ({_dur(nccl)} per rank, median): "
            "within a rank nothing runs under them."
        )
    elif rs.shared_gpu(ws):
        out.append(
            f"A rehearsal ({rs.ranks(ws)}): in this step NCCL kernels occupy their own stream for {_dur(nccl)} per rank (median) while compute runs "
            f"{_dur(f.get('compute_s') or 0.0)}, and compute is under {_share(overlap)} of the NCCL time. Not the "
            "overlap of claim C5, which is about ranks on GPUs of their own."
        )
    else:
        out.append(
            f"NCCL kernels run on a stream of their own ({_dur(nccl)} per rank, median); AllReduce buckets running "
            "while the backward compute continues on the other stream are the overlap of claim C5: in this step "
            f"compute is under {_share(overlap)} of the NCCL time."
        )
    lead = f.get("host_lead_s") or 0.0
    if lead > 0:
        out.append(
            f"The time axis starts at {_ms_text(f.get('axis_start_ms', -lead * 1e3))}: rank {f.get('host_lead_rank')}'s "
            f"host began the step {_dur(lead)} before that rank's GPU window of the step began (time 0)."
        )
    return " ".join(out)


def overlap_caption(rs: Any, fig: Any) -> str:
    f = fig.facts
    bound = f"; dashed: the bound of claim C5 ({f['bound']:g})" if f.get("bound") is not None else ""
    if f.get("bound_withheld"):
        bound += "; no claim bound where ranks share a GPU"
    return (
        "Overlap ratio |U compute ∩ U nccl| / |U nccl| per measured step, one line per rank, for each world size "
        f"above 1 with NCCL kernels{bound}." + _shared_note(rs, f.get("sizes", []))
    )


def distributions_caption(rs: Any, fig: Any) -> str:
    return (
        "Per-step distributions over all (rank, measured step) samples: boxes p25 to p75, whiskers p10 to p90, "
        "dots beyond; red: median." + _shared_note(rs, list(rs.world_sizes))
    )


def throughput_caption(rs: Any, fig: Any) -> str:
    f = fig.facts
    left = "Left: samples per second of the untraced runs (" + ("grey: each repeat; " if f.get("repeats") else "")
    left += "blue: median)"
    if f.get("ideal"):
        left += " against ideal linear scaling from the world-size-1 median"
    if not f.get("efficiency"):
        right = f"Right: no weak-scaling efficiency ({f.get('efficiency_missing')})."
    else:
        right = "Right: weak-scaling efficiency at world sizes " + ", ".join(map(str, f["efficiency"]))
        right += ", with the ideal (1.0)"
        if f.get("bound") is not None:
            right += f" and the bound of claim C6 ({f['bound']:g})"
        if f.get("errbars"):
            right += (
                "; error bars: the range the repeats allow (slowest at N over N x fastest world-size-1 repeat, and the reverse)"
            )
        right += "."
        if f.get("not_evidence"):
            right += f" {f['not_evidence'][0].upper()}{f['not_evidence'][1:]}: not evidence for the GPU claim, no bound drawn."
    return f"{left}. {right}" + _shared_note(rs, f.get("sizes", []))


# (name in the note, figure function, caption from the set and the figure's facts: what it drew)
FIGURES: tuple[tuple[str, str, Callable[[Any, Any], str]], ...] = (
    ("GPU time per step", "breakdown", breakdown_caption),
    ("AllReduce against backward", "allreduce_vs_backward", allreduce_caption),
    ("one-step timeline", "timeline", timeline_caption),
    ("overlap per step", "overlap", overlap_caption),
    ("per-step distributions", "distributions", distributions_caption),
    ("throughput", "throughput", throughput_caption),
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
        out += numbering.figure(fig, name, "" if isinstance(fig, F.NotAvailable) else caption(rs, fig))
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
        "shared": shared_banner(rs),
    }
    if P.load(rs)[0] is not None:
        parts["prediction"] += numbering.figure(P.curves(rs), "prediction curves", PREDICTION_CAPTION)
    return parts


def _heads(items: list[Markup]) -> list[Markup]:
    """Each fallback's bold head once, in order, with a count where several share it ("Deviation (2)")."""
    heads = [Markup(m.group(1)) if (m := _HEAD.match(f)) else Markup(f) for f in items]
    counts = {h: heads.count(h) for h in heads}
    return [h if counts[h] == 1 else h + Markup(f" ({counts[h]})") for h in dict.fromkeys(heads)]


def set_section_html(
    rs: Any,
    section: int,
    shared_fallbacks: list[str],
    study_sizes: list[int],
    claims: list | None = None,
    common: list[tuple[str, str]] | None = None,
) -> Markup:
    """The whole section of result set ``rs``, numbered ``section``; ``shared_fallbacks`` are the
    fallbacks every set has word for word, said once before the sets and referred to here; ``common``
    (:func:`common_fallbacks`) the fallbacks every set took, named there too: the section details
    them (their runs and reasons are its own) but its banner does not name them again."""
    from dnabert_scaling.report import front as H

    no_gpu = not any(rs.gpu(n) for n in rs.world_sizes)
    numbering = Numbering(section, F.gpu_missing_reason(rs) if no_gpu and rs.world_sizes else None)
    parts = _parts(rs, numbering, study_sizes, claims)
    own = [Markup(f) for f in H.fallback_items(rs) if f not in shared_fallbacks]
    heads = _heads([f for f in own if not any(_says(f, used) for _, used in common or [])])
    return render(
        "set_section.html.j2",
        n=section,
        label=rs.label,
        name=short_name(rs),
        rehearsal=any((rs.traced(n).get("placement") or {}).get("rehearsal") for n in rs.world_sizes if n > 1),
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


def common_fallbacks(report: Any) -> list[tuple[str, str]]:
    """The recorded fallbacks (what, what ran instead) every set took, where not already said word for word by
    :func:`shared_fallbacks`: named once before the sets, detailed in each set's section."""
    from dnabert_scaling.report import front as H

    exact = shared_fallbacks(report)
    return [(what, used) for what, used in H.fallbacks_every_set_took(report.sets) if not any(_says(f, used) for f in exact)]


def _says(item: str, used: str) -> bool:
    """Whether a fallback item (markup) says ``used`` (what a fallback ran instead): it is that fallback's detail."""
    return str(markup("{}", used)) in str(item)


def shared_fallbacks_html(report: Any) -> Markup:
    """The box before the sets: what every set shares word for word, and the fallbacks every set took."""
    common = [markup("<b>{}</b>: {}", what.capitalize(), used) for what, used in common_fallbacks(report)]
    items = [Markup(f) for f in shared_fallbacks(report)] + common
    return render("shared_fallbacks.html.j2", items=items, sets=len(report.sets), took=bool(common))
