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
    claims = (rs.verdicts or {}).get("claims")
    if not claims:
        return f'<div class="ds-na"><b>Claims not checked:</b> {esc(rs.verdicts_source)}</div>'
    head = (
        "<tr><th>claim</th><th>verdict</th><th>check</th><th>world size</th><th class='num'>measured</th>"
        "<th>bounds</th><th>reason</th></tr>"
    )
    body = []
    for c in claims:
        checks = c["checks"]
        cls = VERDICT_CLASS.get(c["verdict"], "notrun")
        first = True
        for ch in checks:
            ws = ch["world_size"]
            ws_text = "–" if not ws else (", ".join(map(str, ws)) if isinstance(ws, list) else str(ws))
            cells = ""
            if first:
                cells = (
                    f"<td rowspan='{len(checks)}' class='ds-claim-{cls}'><b>{esc(c['id'])}</b> {esc(c.get('title') or '')}"
                    f"<div class='ds-small'>“{esc(c['statement'])}”</div></td>"
                    f"<td rowspan='{len(checks)}'>{badge(c['verdict'])}</td>"
                )
            cells += (
                f"<td>{esc(ch['what'])} {badge(ch['verdict']) if len(checks) > 1 else ''}</td><td>{esc(ws_text)}</td>"
                f"<td class='num'>{_measured_cell(ch)}</td><td>{_bounds_cell(ch['bounds'])}</td>"
                f"<td class='ds-small'>{esc(ch['reason'])}</td>"
            )
            body.append(f"<tr>{cells}</tr>")
            first = False
        for ind in c.get("indicative") or []:
            within = {True: "within the bounds", False: "outside the bounds", None: "not measurable"}[ind.get("within_bounds")]
            instead = ", ".join(map(str, ind["instead_of"] if isinstance(ind["instead_of"], list) else [ind["instead_of"]]))
            body.append(
                f"<tr><td class='ds-claim-{cls}'></td><td></td><td colspan='5' class='ds-ind'>ⓘ Indicative only, not a "
                f"verdict: the same measurement at world size {ind['world_size']} (the claim is about {instead}) "
                f"is {within}: {esc(ind['why'])}</td></tr>"
            )
    counts = (rs.verdicts or {}).get("summary", {}).get("counts", {})
    summary = " ".join(f"{badge(v)} {counts.get(v, 0)}" for v in (PASS, FAIL, NOT_RUN, INVALID))
    return (
        f"<p>{summary}</p><table class='ds-table ds-claims'>{head}{''.join(body)}</table>"
        "<p class='ds-small'>PASS: measured and within the bounds. FAIL: measured and outside (a NaN is never "
        "within). NOT RUN: no data for that world size, or no GPU analysis (the reason says which); never a pass. "
        "INVALID: the world size's sanity checks failed. The bounds and the reasoning behind each are in "
        "<code class='ds'>expected/claims.toml</code> and in the rationale column of Appendix A.</p>"
    )


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
                f"<tr><td>{r['world_size']}</td><td>{esc(r.get('run') or '–')}</td>"
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
            f"<tr><td>{r['world_size']}</td><td>{esc(r.get('run') or '–')}</td>{cells}"
            f"<td class='ds-small'>{esc('; '.join(figures + (r.get('problems') or []))) or '–'}</td></tr>"
        )
    return f"<table class='ds-table'>{head}{''.join(body)}</table>"
