"""The closing parts of the report: each set's analysis notes, the busy-wait caveat in numbers, how
to reproduce, the report's build (Appendix D) and the check that the kernel is the builder's
interpreter."""

from __future__ import annotations

from dnabert_scaling.report.front import figure_html
from dnabert_scaling.report.html import render
from dnabert_scaling.report.results import Report, ResultSet, fmt, results_folder_note, shown


def notes_html(rs: ResultSet) -> str:
    notes = list(rs.metrics.get("notes") or [])
    for n in rs.world_sizes:
        notes += [f"world size {n}: {x}" for x in ((rs.gpu(n) or {}).get("notes") or [])]
        pm = (rs.gpu(n) or {}).get("phase_method")
        if pm:
            text = f"world size {n}: phases attributed by {pm}"
            val = (rs.gpu(n) or {}).get("phase_validation") or {}
            agree = [_agreement(k, v) for k, v in val.items() if isinstance(v, dict) and isinstance(v.get("time"), (int, float))]
            if agree:
                text += (
                    " (the Score-P methods, tried on the same trace without the activities launched before recording "
                    "began, agree with it on " + "; ".join(agree) + ")"
                )
            notes.append(text)
    return str(render("notes.html.j2", notes=[str(x) for x in notes]))


def _agreement(method: str, v: dict) -> str:
    """One Score-P method's agreement with the exact attribution, with how much of the GPU time it placed
    itself: a method whose streams fell back to the time window must not be credited with its agreement."""
    text = f"{method} {v['time']:.1%} of GPU time"
    placed = v.get("placed")
    if method == "time-window":
        return text
    if not isinstance(placed, (int, float)):
        return text + " (how much of it the method placed itself is not recorded: an analysis before that figure)"
    if placed >= 0.9995:
        return text + ", all of it placed by the method itself"
    return text + f", of which it placed {placed:.1%} itself and the time window the rest"


def busy_wait_html(report: Report, figures, section: str) -> str:
    """Caveat 1 in numbers: a figure per result set with a bus-bandwidth measurement, one note for the rest."""
    out, without = [], []
    k = 0
    for rs in report.sets:
        items = [(n, rs.busy_wait(n)) for n in rs.world_sizes if rs.busy_wait(n) and rs.busy_wait(n).get("ratio")]
        if not items:
            without.append(rs.label)
            continue
        k += 1
        caption = busy_wait_caption(rs, items)
        out.append(figure_html(figures.busy_wait(rs), f"{section}.{k}", caption))
    if without:
        by_reason: dict[str, list[int]] = {}
        for rs in report.sets:
            if rs.label in without:
                by_reason.setdefault(_no_busy_wait_why(rs), []).append(rs.number)
        reasons = [f"{why} (set{'s' if len(nums) > 1 else ''} {', '.join(map(str, nums))})" for why, nums in by_reason.items()]
        why = "; ".join(reasons) + (
            ". Where AllReduce kernels were traced without it, read their time as an upper bound of the transfer cost."
        )
        out.append(str(render("not_available.html.j2", what="Busy-wait figure not available", why=why)))
    return "".join(out)


def busy_wait_caption(rs: ResultSet, items: list[tuple[int, dict]]) -> str:
    """The busy-wait figure's caption as measured: each ratio, the excess only where a ratio is above 1,
    and where the bus-bandwidth benchmark's ranks shared a GPU (its ``rehearsal`` flag) or the traced ones did."""
    words = "; ".join(
        f"at {rs.ranks(n)} the AllReduce kernels run {b['ratio']:.2f}x as long as moving the gradient bytes at "
        f"the bus bandwidth measured on the same machine ({fmt(b.get('busbw_GBps'))} GB/s)"
        for n, b in items
    )
    over = [(n, b["ratio"]) for n, b in items if b["ratio"] > 1]
    within = [n for n, b in items if b["ratio"] <= 1]
    says = []
    if within:
        says.append(
            f"At world size{'s' if len(within) > 1 else ''} {', '.join(map(str, within))} the kernel time is no longer "
            "than the transfer time: no excess to attribute to waiting"
        )
    if over:
        says.append(
            "at world size"
            + ("s " if len(over) > 1 else " ")
            + ", ".join(f"{n} the excess is {r - 1:.0%} of the transfer time" for n, r in over)
            + ": kernel time not spent moving bytes at that bandwidth (waiting for peers or other causes: the trace does not tell them apart)"
        )
    said = "; ".join(says)
    said = said[0].upper() + said[1:] + "." if said else ""
    bench = [n for n, _ in items if ((rs.metrics.get("busbw") or {}).get(str(n)) or {}).get("rehearsal")]
    shared = ""
    if bench:
        shared = (
            f" The bus-bandwidth benchmark at world size{'s' if len(bench) > 1 else ''} {', '.join(map(str, bench))} "
            "ran as a rehearsal (its ranks shared the GPUs present and talked over loopback sockets), so it measured "
            "no interconnect: the ratios compare two rehearsal timings."
        )
    return f"Busy-wait, {rs.label}: {words}. {said}{shared} (Bus bandwidth from dnabert-scaling busbw.)"


def _no_busy_wait_why(rs: ResultSet) -> str:
    if rs.device == "cpu":
        return "a CPU run: the bus bandwidth may have been measured (gloo), but there are no GPU AllReduce kernels to compare it with"
    if rs.metrics.get("busbw"):
        return "the bus bandwidth was measured, but no AllReduce kernel time to compare it with"
    return "no bus-bandwidth measurement (busbw) came with these runs (it runs at world sizes of 2 and more)"


def reproduce_html(report: Report) -> str:
    paths = " ".join(shown(s.path, report.display_root) for s in report.sets)
    return str(render("reproduce.html.j2", paths=paths, made_by=_made_by(report)))


def _made_by(report: Report) -> str:
    """Which command writes this report's results folders when a fresh clone lacks them."""
    if any(results_folder_note(s.path, s.metrics) for s in report.sets):
        return " (written by make kick-tires / make reproduce)"
    return ""


def build_info_html(report: Report) -> str:
    import platform
    import sys

    p = report.params
    rows = [
        ("Python of the report kernel", f"{shown(sys.executable, report.display_root)} ({platform.python_version()})"),
        ("Report built", p.get("created", "?")),
        ("Artifact version", p.get("version", "?")),
        ("Claims file", shown(p.get("claims"), report.display_root) if p.get("claims") else "–"),
    ]
    for s in report.sets:
        src = (s.verdicts or {}).get("sources") or {}
        rows.append(
            (
                f"Set {s.number}",
                f"{shown(s.path, report.display_root)} — metrics {s.metrics.get('created', '?')}"
                + (f", metrics sha256 {str(src['metrics_sha256'])[:12]}…" if src.get("metrics_sha256") else "")
                + (f", claims sha256 {str(src['claims_sha256'])[:12]}…" if src.get("claims_sha256") else ""),
            )
        )
    rows.insert(2, ("Written by", p.get("written_by") or "dnabert-scaling report"))
    return str(render("setup.html.j2", rows=rows))


def check_kernel(params: dict) -> None:
    """Stop when the kernel is not the interpreter that built the report (different packages)."""
    import sys

    want = params.get("prefix")
    if params.get("strict_kernel") and want and want != sys.prefix:
        raise RuntimeError(
            f"the notebook kernel runs {sys.executable} (prefix {sys.prefix}), "
            f"not the report builder's interpreter (prefix {want})"
        )
