"""The claims a result set was checked against: the table of claims and verdicts (Section N.1),
the bounds with their rationale (Appendix A) and the sanity checks per world size (Appendix B)."""

from __future__ import annotations


from dnabert_scaling import checker
from dnabert_scaling.checker import FAIL, INVALID, NOT_RUN, PASS
from dnabert_scaling.report.results import VERDICT_CLASS, ResultSet, esc, fmt, short as _short


def _measured_cell(check: dict) -> str:
    m = check.get("measured") or {}
    b = check.get("bounds") or {}
    t = b.get("test")
    if t == "top":
        if m.get("ratio") is not None:
            return f"ratio {fmt(m['ratio'])}<br><span class='ds-small'>top: {esc(_short(m.get('top_activity')))}</span>"
        return esc(_short(m.get("top_activity"))) if m.get("top_activity") else "–"
    if t == "monotone":
        pts = [f"{k} GPUs: {fmt(v)}" for k, v in m.items() if str(k).isdigit()]
        return "<br>".join(pts) or "–"
    v = m.get(check["metric"])
    return fmt(v) if check["metric"] in m else "–"


def _bounds_cell(b: dict) -> str:
    return esc(checker._bounds_text(b))


def claims_html(rs: ResultSet) -> str:
    """The claims table (``resources/report/claims.html.j2``) from verdicts.json, values escaped there."""
    from dnabert_scaling.report.html import Markup, render

    claims = (rs.verdicts or {}).get("claims")
    if not claims:
        return str(render("not_available.html.j2", what="Claims not checked", why=rs.verdicts_source))
    rows = []
    for c in claims:
        checks = [
            {
                "what": ch.get("what"),
                "verdict": ch.get("verdict"),
                "cls": VERDICT_CLASS.get(ch.get("verdict"), "notrun"),
                "world_sizes": _ws_text(ch.get("world_size")),
                "measured": Markup(_measured_cell(ch)),  # built with esc / fmt
                "bounds": checker._bounds_text(ch.get("bounds") or {}),
                "reason": ch.get("reason"),
            }
            for ch in c.get("checks") or []
        ]
        rows.append(
            {
                "id": c.get("id"),
                "title": c.get("title") or "",
                "statement": c.get("statement"),
                "verdict": c.get("verdict"),
                "cls": VERDICT_CLASS.get(c.get("verdict"), "notrun"),
                "checks": checks,
                "indicative": [_indicative(ind) for ind in c.get("indicative") or []],
            }
        )
    counts = (rs.verdicts or {}).get("summary", {}).get("counts", {})
    badges = [({"cls": VERDICT_CLASS[v], "word": v}, counts.get(v, 0)) for v in (PASS, FAIL, NOT_RUN, INVALID)]
    return str(render("claims.html.j2", claims=rows, counts=badges))


def _ws_text(ws) -> str:
    return "–" if not ws else (", ".join(map(str, ws)) if isinstance(ws, list) else str(ws))


def _indicative(ind: dict) -> dict:
    within = {True: "within the bounds", False: "outside the bounds", None: "not measurable"}.get(
        ind.get("within_bounds"), "not measurable"
    )
    instead = ind.get("instead_of")
    return {
        "world_size": ind.get("world_size"),
        "instead_of": ", ".join(map(str, instead if isinstance(instead, list) else [instead])),
        "within": within,
        "why": ind.get("why"),
    }


def rationale_html(rs: ResultSet) -> str:
    from dnabert_scaling.report.html import render

    rows = [
        {
            "id": c.get("id"),
            "what": b.get("what", name),
            "metric": b.get("metric", ""),
            "bounds": checker._bounds_text(b),
            "rationale": b.get("rationale", ""),
        }
        for c in (rs.verdicts or {}).get("claims") or []
        for name, b in (c.get("bounds") or {}).items()
        if isinstance(b, dict)
    ]
    return str(render("rationale.html.j2", rows=rows)) if rows else ""


def sanity_html(rs: ResultSet) -> str:
    from dnabert_scaling.report.html import render

    rows = (rs.verdicts or {}).get("sanity")
    if rows is None:
        rows = checker.sanity_rows(rs.metrics)
    return str(render("sanity.html.j2", words=list(checker.SANITY_WORDS.values()), rows=[_sanity_row(rs, r) for r in rows]))


def _sanity_row(rs: ResultSet, r: dict) -> dict:
    row = {"world_size": r.get("world_size"), "run": r.get("run") or "–", "note": r.get("note", ""), "cells": None}
    checks = r.get("checks")
    if not checks:
        return row
    values = [checks.get(k, "–") for k in checker.SANITY_ITEMS]
    row["cells"] = [{"text": v, "badge": VERDICT_CLASS.get(v) if v in (PASS, FAIL) else None} for v in values]
    ws = r.get("world_size")
    comp = ((rs.entry(ws) if isinstance(ws, int) else {}).get("traced") or {}).get("completeness") or {}
    figures = [f"completeness: {comp['reason']}"] if comp.get("reason") and checks.get("trace_complete") == PASS else []
    row["problems"] = "; ".join(figures + [str(p) for p in r.get("problems") or []]) or "–"
    return row
