"""The report's prediction section: ``predictions.json`` (``dnabert-scaling predict``) of a results
folder, shown as curves, as predicted-beside-measured with the error, and as a label next to each
claim's verdict. Everything here is labelled a prediction: verdicts come from measurements only.
"""

from __future__ import annotations

import json

from dnabert_scaling.report.results import badge, esc, fmt
from dnabert_scaling.report.figures import NotAvailable, _png, plt

SCHEMA = "dnabert-scaling/predictions/1"
# claim -> (predicted figure, what it shows, scale, unit)
CLAIM_FIGURES = {
    "C2": ("allreduce_share", "AllReduce share of kernel time", 1.0, ""),
    "C3": ("allreduce_kernel_s", "AllReduce kernel time per step", 1e3, " ms"),
    "C4": ("allreduce_to_backward", "AllReduce / backward GPU time", 1.0, ""),
    "C5": ("overlap_ratio", "overlap ratio", 1.0, ""),
    "C6": ("efficiency", "weak-scaling efficiency", 1.0, ""),
}
DEFAULT_SIZES = (2, 4, 8)


def load(rs) -> tuple[dict | None, str]:
    """(predictions, "") or (None, why there are none) for one results folder."""
    path = rs.path / "predictions.json"
    if not path.is_file():
        return None, _why_none(rs)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return None, f"predictions.json cannot be read: {exc}"
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("world_sizes"), dict):
        return None, f"predictions.json is not a {SCHEMA} file"
    return data, ""


def _why_none(rs) -> str:
    """Why a results folder has no forecast, from what it holds: the forecast replays the GPU
    kernels of a traced world-size-1 run with DDP bucket ranges."""
    if rs.device == "cpu":
        return (
            "none can be made: this is a CPU run, and the forecast replays the GPU kernels and all-reduce "
            "buckets of a traced one-GPU run"
        )
    if 1 not in rs.world_sizes:
        return "none can be made: this set has no world-size-1 run to replay"
    if not rs.traced(1):
        return "none can be made: the world-size-1 run of this set was not traced"
    return (
        "no predictions.json in this results folder (run `dnabert-scaling predict "
        f"{rs.path.name}`; it needs a world-size-1 trace with ds:bucket ranges and says why when it cannot)"
    )


def _band(entry: dict, key: str, scale: float = 1.0, unit: str = "") -> str:
    b = entry.get(key) or {}
    if b.get("mid") is None:
        return "–"
    return f"{fmt(b['mid'] * scale)}{unit} <span class='ds-small'>[{fmt(b['low'] * scale)}, {fmt(b['high'] * scale)}]</span>"


def _claim_sizes(claim: dict) -> list[int]:
    ws = claim.get("world_sizes")
    return [int(n) for n in ws] if isinstance(ws, list) and ws else list(DEFAULT_SIZES)


def predicted_rows(rs, pred: dict, claims: list, study_sizes: list[int]) -> list[dict]:
    """Each claim's predicted verdict (``checker.predicted``) beside its measured one, with texts."""
    from dnabert_scaling.analysis.predict_compare import measured_from_metrics
    from dnabert_scaling.checker.predicted import predicted_verdicts
    from dnabert_scaling.metrics_schema import MetricsFile
    from dnabert_scaling.report.results import VERDICT_CLASS

    try:
        measured = measured_from_metrics(MetricsFile.from_json(rs.metrics))
    except (KeyError, TypeError, ValueError):
        measured = {}
    rows = predicted_verdicts(pred, claims, study_sizes, measured)
    for c in rows:
        claim = rs.claim(c["id"]) or {}
        c["measured"] = claim.get("verdict") or "NOT CHECKED"
        c["measured_cls"] = VERDICT_CLASS.get(c["measured"], "notrun")
        c["cls"] = VERDICT_CLASS.get(c["verdict"], "notrun")
        for r in c["checks"]:
            band = r.get("band") or {}
            r["cls"] = VERDICT_CLASS.get(r["verdict"], "notrun")
            r["band_text"] = f"{fmt(band.get('mid'))} [{fmt(band.get('low'))}, {fmt(band.get('high'))}]" if band else "–"
            r["measured_text"] = fmt(r.get("measured")) if "measured" in r else "not measured"
            r["error_text"] = f"{r['error']:+.3g}" if isinstance(r.get("error"), float) else "–"
    return rows


def claims_html(rs, pred: dict, claims: list | None = None, study_sizes: list[int] | None = None) -> str:
    """Each claim's verdict (from measurements) beside its prediction held against the claim's bound
    (labelled, never a verdict); without the claims file, the predicted figures alone."""
    if not claims:
        return _figures_html(rs, pred)
    from dnabert_scaling.checker.predicted import BLIND_SPOTS
    from dnabert_scaling.report.html import render

    rows = predicted_rows(rs, pred, claims, study_sizes or list(DEFAULT_SIZES))
    return str(render("predicted_bounds.html.j2", rows=rows, blind_spots=BLIND_SPOTS))


def _figures_html(rs, pred: dict) -> str:
    """Each claim's verdict (from measurements) beside its prediction (labelled, never a verdict)."""
    rows = []
    for cid, (key, what, scale, unit) in CLAIM_FIGURES.items():
        claim = rs.claim(cid) or {"id": cid, "verdict": "NOT RUN", "title": ""}
        parts = []
        for n in _claim_sizes(claim):
            entry = pred["world_sizes"].get(str(n))
            if entry and n > 1:
                parts.append(f"N={n}: {_band(entry, key, scale, unit)}")
        text = "; ".join(parts) or "no prediction at the claim's world sizes"
        rows.append(
            f"<tr><td><b>{esc(cid)}</b> {esc(claim.get('title') or '')}</td><td>{badge(claim['verdict'])}</td>"
            f"<td><span class='ds-ind'>prediction</span> {esc(what)}: {text}</td></tr>"
        )
    return (
        "<table class='ds-table'><tr><th>claim</th><th>verdict (measured)</th>"
        "<th>prediction from the one-GPU trace (not a verdict; band in brackets)</th></tr>" + "".join(rows) + "</table>"
    )


def comparison_html(pred: dict) -> str:
    comp = pred.get("comparison") or {}
    if not comp:
        return (
            "<p class='ds-small'>No multi-GPU measurement to check the prediction against yet: it is a forecast "
            "until a measured sweep (or <code class='ds'>predict --measured</code>) provides one.</p>"
        )
    rows = []
    for n, c in sorted(comp.items(), key=lambda kv: int(kv[0])):
        m, p, e = c.get("measured") or {}, c.get("predicted") or {}, c.get("error") or {}
        st, ov = e.get("step_time_rel"), e.get("overlap_ratio_abs")
        goal = {True: "yes", False: "no", None: "–"}[c.get("within_goal")]
        rows.append(
            f"<tr><td>{esc(n)}</td><td class='num'>{fmt((m.get('step_time_s') or 0) * 1e3)}</td>"
            f"<td class='num'>{fmt((p.get('step_time_s') or 0) * 1e3)}</td>"
            f"<td class='num'>{'–' if st is None else f'{100 * st:+.1f}%'}</td>"
            f"<td class='num'>{fmt(m.get('overlap_ratio'))}</td><td class='num'>{fmt(p.get('overlap_ratio'))}</td>"
            f"<td class='num'>{'–' if ov is None else f'{ov:+.3f}'}</td><td>{goal}</td>"
            f"<td class='ds-small'>{esc(c.get('note') or m.get('source') or '')}</td></tr>"
        )
    g = pred.get("goal") or {}
    return (
        "<table class='ds-table'><tr><th>N</th><th class='num'>measured step ms</th><th class='num'>predicted step ms</th>"
        "<th class='num'>error</th><th class='num'>measured overlap</th><th class='num'>predicted overlap</th>"
        "<th class='num'>error</th><th>within goal</th><th>measured by</th></tr>" + "".join(rows) + "</table>"
        f"<p class='ds-small'>Goal: step time within {100 * g.get('step_time_rel', 0.1):.0f}% and overlap ratio within "
        f"{g.get('overlap_ratio_abs', 0.1)} of the measurement. The error is shown as it is, whatever it is.</p>"
    )


def section_html(rs, claims: list | None = None, study_sizes: list[int] | None = None) -> str:
    pred, why = load(rs)
    if pred is None:
        return f'<div class="ds-na"><b>No prediction:</b> {esc(why)}</div>'
    src, model = pred.get("source") or {}, pred.get("model") or {}
    node, cont = model.get("node") or {}, model.get("contention") or {}
    intro = (
        f"<p><span class='ds-ind'>Prediction, not a verdict.</span> From the world-size-1 trace "
        f"<code class='ds'>{esc(src.get('source'))}</code> ({fmt(src.get('buckets_per_step'))} buckets, "
        f"{fmt((src.get('gradient_bytes') or 0) / 2**20)} MiB per step; bucket readiness by "
        f"{esc(src.get('readiness_method'))}), node layout <b>{esc(node.get('name'))}</b> ({esc(node.get('description'))}), "
        f"contention {fmt(cont.get('mid'))} [{fmt(cont.get('low'))}, {fmt(cont.get('high'))}] ({esc(cont.get('source'))}). "
        f"All-reduce model: {esc(model.get('all_reduce'))}.</p>"
    )
    fallbacks = "".join(f"<li>{esc(f['what'])}: {esc(f['used'])} ({esc(f['why'])})</li>" for f in pred.get("fallbacks") or [])
    table = [
        "<tr><th>N</th><th>nodes</th><th>busbw</th><th>step ms</th><th>exposed comm ms</th><th>overlap</th>"
        "<th>AllReduce ms</th><th>efficiency</th></tr>"
    ]
    for n, e in sorted(pred["world_sizes"].items(), key=lambda kv: int(kv[0])):
        bw = e.get("busbw_GBps") or {}
        table.append(
            f"<tr><td>{esc(n)}</td><td>{fmt(e.get('nodes'))}</td><td>{esc(e.get('busbw'))} "
            f"{fmt(bw.get('mid'))}{' GB/s' if bw else ''}</td><td>{_band(e, 'step_time_s', 1e3)}</td>"
            f"<td>{_band(e, 'exposed_comm_s', 1e3)}</td><td>{_band(e, 'overlap_ratio')}</td>"
            f"<td>{_band(e, 'allreduce_kernel_s', 1e3)}</td><td>{_band(e, 'efficiency')}</td></tr>"
        )
    return (
        intro
        + claims_html(rs, pred, claims, study_sizes)
        + "<p><b>Predicted against measured</b></p>"
        + comparison_html(pred)
        + "<p><b>Predicted per world size</b> (band: the model at the favourable and the unfavourable end of "
        "busbw, alpha and contention)</p><table class='ds-table'>"
        + "".join(table)
        + "</table>"
        + (f"<p class='ds-small'>Fallbacks of the prediction:</p><ul class='ds-small'>{fallbacks}</ul>" if fallbacks else "")
    )


def curves(rs):
    """Predicted step time and efficiency against N (bands shaded), measured points on top."""
    pred, why = load(rs)
    if pred is None:
        return NotAvailable(why)
    sizes = sorted(int(n) for n in pred["world_sizes"])
    entries = [pred["world_sizes"][str(n)] for n in sizes]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key, scale, label in (
        (axes[0], "step_time_s", 1e3, "step time (ms)"),
        (axes[1], "efficiency", 1.0, "weak-scaling efficiency"),
    ):
        mid = [(e[key]["mid"] or float("nan")) * scale for e in entries]
        lo = [(e[key]["low"] or float("nan")) * scale for e in entries]
        hi = [(e[key]["high"] or float("nan")) * scale for e in entries]
        ax.fill_between(sizes, lo, hi, color="#3b6fb6", alpha=0.2, label="prediction band")
        ax.plot(sizes, mid, "-o", color="#3b6fb6", ms=3, label="prediction")
        measured = [
            (int(n), c["measured"].get(key if key != "efficiency" else "step_time_s"))
            for n, c in (pred.get("comparison") or {}).items()
            if c.get("measured")
        ]
        if key == "efficiency":
            t1 = (pred.get("baseline") or {}).get("step_time_s")
            measured = [(n, t1 / v) for n, v in measured if v and t1]
        measured = [(n, v * scale) for n, v in measured if v is not None]
        if measured:
            ax.plot(*zip(*sorted(measured)), "s", color="#d1495b", label="measured")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs (N)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[1].axhline(1.0, color="grey", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    return _png(fig, "predicted step time and efficiency against the number of GPUs, with measured points")
