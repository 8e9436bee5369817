"""The claims a result set was checked against: the table of claims and verdicts (Section N.1),
the bounds with their rationale (Appendix A) and the sanity checks per world size (Appendix B)."""

from __future__ import annotations


from dnabert_scaling import checker
from dnabert_scaling.checker import FAIL, INVALID, NOT_RUN, PASS
from dnabert_scaling.report.results import VERDICT_CLASS, ResultSet, badge, esc, fmt, short as _short


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
    claims = (rs.verdicts or {}).get("claims") or []
    rows = []
    for c in claims:
        for name, b in (c.get("bounds") or {}).items():
            rows.append(
                f"<tr><td>{esc(c['id'])}</td><td>{esc(b.get('what', name))}<div class='ds-small'><code class='ds'>"
                f"{esc(b.get('metric', ''))}</code></div></td><td>{_bounds_cell(b)}</td>"
                f"<td class='ds-small'>{esc(b.get('rationale', ''))}</td></tr>"
            )
    if not rows:
        return ""
    return (
        "<table class='ds-table'><tr><th>claim</th><th>check (metric)</th><th>bounds</th><th>rationale</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def sanity_html(rs: ResultSet) -> str:
    rows = (rs.verdicts or {}).get("sanity")
    if rows is None:
        rows = checker.sanity_rows(rs.metrics)
    head = (
        "<tr><th>world size</th><th>traced run</th>"
        + "".join(f"<th>{esc(w)}</th>" for w in checker.SANITY_WORDS.values())
        + "<th>problems</th></tr>"
    )
    body = []
    for r in rows:
        if not r.get("checks"):
            body.append(
                f"<tr><td>{esc(r['world_size'])}</td><td>{esc(r.get('run') or '–')}</td>"
                f"<td colspan='{len(checker.SANITY_ITEMS) + 1}'>{esc(r.get('note', ''))}</td></tr>"
            )
            continue
        cells = "".join(
            f"<td>{badge(v) if v in (PASS, FAIL) else esc(v)}</td>"
            for v in (r["checks"].get(k, "–") for k in checker.SANITY_ITEMS)
        )
        comp = ((rs.entry(r["world_size"]) or {}).get("traced") or {}).get("completeness") or {}
        figures = [f"completeness: {comp['reason']}"] if comp.get("reason") and r["checks"].get("trace_complete") == PASS else []
        body.append(
            f"<tr><td>{esc(r['world_size'])}</td><td>{esc(r.get('run') or '–')}</td>{cells}"
            f"<td class='ds-small'>{esc('; '.join(figures + (r.get('problems') or []))) or '–'}</td></tr>"
        )
    return f"<table class='ds-table'>{head}{''.join(body)}</table>"
