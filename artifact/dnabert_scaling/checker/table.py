"""The readable verdicts table (``verdicts.txt``, and what `check` prints)."""

from __future__ import annotations

import textwrap

from dnabert_scaling.checker.names import _fmt, SANITY_ITEMS, SANITY_SHORT, VERDICTS


def _measured_text(check: dict) -> str:
    m = check.get("measured") or {}
    if check["bounds"]["test"] == "top":
        if "ratio" in m:
            return f"ratio {_fmt(m['ratio'])}"
        return "-"
    if check["bounds"]["test"] == "monotone":
        pts = [f"{k}:{_fmt(v)}" for k, v in m.items() if k.isdigit()]
        return " ".join(pts) or "-"
    v = m.get(check["metric"], "-")
    return _fmt(v) if v != "-" else "-"


def format_table(verdicts: dict, width: int = 100) -> str:
    lines: list[str] = []
    src = verdicts.get("sources") or {}
    if src:
        lines.append(f"claims:  {src.get('claims')}")
        lines.append(f"metrics: {src.get('metrics')}")
    if verdicts["summary"].get("label"):
        lines.append(f"results: {verdicts['summary']['label']}")
    for f in verdicts["summary"].get("fallbacks") or []:
        lines.append(f"FALLBACK {f}")
    lines.append("")
    head = f"{'claim':<6}{'verdict':<9}{'check':<22}{'ws':<8}{'measured':<22}{'bounds':<30}"
    lines += [head, "-" * len(head)]
    wrap = textwrap.TextWrapper(width=width, initial_indent="      ", subsequent_indent="      ")
    for c in verdicts["claims"]:
        lines.append(f"{c['id']:<6}{c['verdict']:<9}{(c.get('title') or '')[:70]}")
        for ch in c["checks"]:
            ws = ch["world_size"]
            ws_text = "-" if not ws else (",".join(map(str, ws)) if isinstance(ws, list) else str(ws))
            b = ch["bounds"]
            bounds = _bounds_text(b)
            lines.append(
                f"{'':<6}{ch['verdict']:<9}{ch['name'][:21]:<22}{ws_text[:7]:<8}{_measured_text(ch)[:21]:<22}{bounds[:30]:<30}"
            )
        reasons = list(dict.fromkeys(ch["reason"] for ch in c["checks"]))
        lines += wrap.wrap("why: " + "; ".join(reasons))
        for ind in c.get("indicative") or []:
            instead = ", ".join(map(str, ind["instead_of"]))
            lines += wrap.wrap(
                f"INDICATIVE (not a verdict) at world size {ind['world_size']} instead of {instead}: " + ind["why"]
            )
        lines.append("")
    lines.append("Sanity (traced run of each world size)")
    lines.append(f"{'ws':<5}{'run':<22}" + "".join(f"{SANITY_SHORT[k]:<14}" for k in SANITY_ITEMS))
    for row in verdicts["sanity"]:
        if not row["checks"]:
            lines.append(f"{row['world_size']:<5}{str(row['run'] or '-'):<22}{row.get('note', '')}")
            continue
        lines.append(
            f"{row['world_size']:<5}{str(row['run'] or '-')[:21]:<22}"
            + "".join(f"{row['checks'].get(k, '-'):<14}" for k in SANITY_ITEMS)
        )
        for p in row["problems"]:
            lines += wrap.wrap(f"problem: {p}")
    counts = verdicts["summary"]["counts"]
    lines.append("")
    lines.append("Summary: " + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS) + f" of {len(verdicts['claims'])} claims")
    return "\n".join(lines) + "\n"


def _bounds_text(b: dict) -> str:
    t = b["test"]
    if t == "equals":
        return f"== {_fmt(b['value'])}"
    if t == "monotone":
        return f"non-decreasing, drop<={b['max_drop_rel']:.0%}"
    lo = "-inf" if b.get("lo") is None else _fmt(b["lo"])
    hi = "+inf" if b.get("hi") is None else _fmt(b["hi"])
    text = f"== {lo}" if b.get("lo") is not None and b.get("lo") == b.get("hi") else f"[{lo}, {hi}]"
    return ("ratio " + text) if t == "top" else text
