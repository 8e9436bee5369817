"""What the report says: the HTML of every section (the result sets it reads: ``report.results``).

The notebook (``report.template``) is a thin sequence of calls into this module and into
``report.figures``; the text is generated from ``metrics.json``, ``verdicts.json`` and the
tables, so a sentence never claims more than the files hold.
"""

from __future__ import annotations

import base64
from importlib import resources
from typing import Any

from dnabert_scaling import checker
from dnabert_scaling.analysis import kernel_classes
from dnabert_scaling.traces.classify import shorten_middle
from dnabert_scaling.checker import FAIL, INVALID, NOT_RUN, PASS
from dnabert_scaling.report.results import (  # noqa: F401  (re-exported: the notebook and the tests use them)
    _DISPLAY_ROOT,
    RECIPE,
    STUDY,
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
    shown,
)

# ---------------------------------------------------------------------------------------------
# Showing things in the notebook


def show(markup: str) -> None:
    from IPython.display import HTML, display

    display(HTML(markup))


def figure_html(fig, number: str, caption: str) -> str:
    from dnabert_scaling.report.figures import NotAvailable

    if isinstance(fig, NotAvailable):
        return (
            f'<div class="ds-na"><b>Figure {esc(number)} not available:</b> {esc(fig.reason)}'
            f'<div class="ds-small">({esc(caption)})</div></div>'
        )
    data = base64.b64encode(fig.png).decode("ascii")
    return (
        f'<figure class="ds-fig"><img src="data:image/png;base64,{data}" alt="{esc(fig.alt)}">'
        f"<figcaption><b>Figure {esc(number)}.</b> {caption}</figcaption></figure>"
    )


def show_figure(fig, number: str, caption: str) -> None:
    show(figure_html(fig, number, caption))


# ---------------------------------------------------------------------------------------------
# Sections


def style() -> str:
    """The report's style sheet, shipped as ``resources/report/report.css``."""
    sheet = resources.files("dnabert_scaling").joinpath("resources/report/report.css").read_text()
    return "\n<style>\n" + sheet.split("*/\n", 1)[1] + "</style>\n"


def title_html(report: Report) -> str:
    created = report.params.get("created", "")
    labels = "; ".join(esc(s.label) for s in report.sets)
    return (
        f'<div class="ds"><h1>Where does GPU time go when DNABERT-2 fine-tuning scales over GPUs?</h1>'
        f'<p class="ds-sub">Compute against NCCL communication under PyTorch DDP, from per-rank traces: '
        f"the study's claims re-checked on {len(report.sets)} result set{'s' if len(report.sets) != 1 else ''} "
        f"({labels}).<br><span class='ds-small'>Generated {esc(created)} by <code class='ds'>dnabert-scaling report</code>"
        f"{' ' + esc(report.params.get('version', '')) if report.params.get('version') else ''}.</span></p></div>"
    )


def _claim_list(claims: list[dict]) -> str:
    return ", ".join(f"{c['id']} ({esc((c.get('title') or c['statement']).rstrip('.'))})" for c in claims)


def _not_run_why(rs: ResultSet, claims: list[dict]) -> str:
    """A short plain-words reason for a group of NOT RUN claims."""
    if rs.device == "cpu":
        return "no GPU: this is a CPU smoke run, so no GPU time could be measured"
    missing = sorted(
        {
            ws
            for c in claims
            for ch in c["checks"]
            for ws in ([ch["world_size"]] if isinstance(ch["world_size"], int) else [])
            if ws not in rs.world_sizes
        }
    )
    parts = []
    if missing:
        parts.append(
            f"world size{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
            f"{'were' if len(missing) > 1 else 'was'} not measured (measured: {', '.join(map(str, rs.world_sizes))})"
        )
    if any(
        ch.get("code") == "too_few_points" or (ch.get("code") == "no_world_size" and ch.get("at_least") == 2)
        for c in claims
        for ch in c["checks"]
    ):
        parts.append(
            "fewer than two multi-GPU world sizes, so no trend can be judged"
            if rs.max_ws and rs.max_ws >= 2
            else "no multi-GPU world size was measured"
        )
    reasons = {r for ws in rs.world_sizes if not rs.gpu(ws) for r in [rs.gpu_reason(ws)]}
    parts += sorted(reasons)
    return "; ".join(parts) or "missing data (see the claims table)"


def headline(rs: ResultSet) -> str:
    """One sentence with the key numbers at the largest world size with GPU metrics."""
    sizes = [n for n in rs.world_sizes if rs.gpu(n) and n > 1]
    if not sizes:
        return ""
    n = max(sizes)
    g = rs.gpu(n)
    bits = [
        f"at {n} GPUs the AllReduce kernels take {ms(g.get('allreduce_kernel_s'))} ms per step against "
        f"{ms(g.get('backward_gpu_s'))} ms of backward GPU time (ratio {fmt(median(g.get('allreduce_to_backward')))})"
    ]
    if median(g.get("overlap_ratio")) is not None:
        bits.append(f"{median(g.get('overlap_ratio')):.0%} of the NCCL time runs under compute")
    if median(g.get("exposed_comm_share")) is not None:
        bits.append(f"exposed communication is {median(g.get('exposed_comm_share')):.1%} of the step")
    eff = rs.entry(n).get("efficiency")
    if eff is not None:
        bits.append(f"weak-scaling efficiency {eff:.2f}")
    return "; ".join(bits) + "."


def fallback_items(rs: ResultSet) -> list[str]:
    """Every fallback and every difference from the study's set-up, as plain sentences."""
    m = rs.metrics
    out: list[str] = []
    if rs.device == "cpu":
        out.append(
            "<b>No GPU: CPU smoke run</b> (gloo instead of NCCL). It proves the pipeline end to end; "
            "it cannot measure GPU time, so every GPU claim is NOT RUN."
        )
    for f in m.get("fallbacks") or []:
        if isinstance(f, dict) and rs.device == "cpu" and f.get("what") == "device":
            continue  # said in the first item
        if isinstance(f, dict):
            what, used, why = f.get("what", "?"), f.get("used", "?"), f.get("reason", "")
            word = {
                "weights": "Random weights" if "random" in str(used).lower() else "Weights",
                "data": "Synthetic data" if "synthetic" in str(used).lower() else "Data",
                "device": "Device",
                "tracer": "Tracer",
            }.get(what, str(what).capitalize())
            runs = f.get("runs") or []
            out.append(
                f"<b>{esc(word)}</b>: {esc(recorded_paths(used))}"
                + (f" — {esc(recorded_paths(why))}" if why else "")
                + (
                    f" <span class='ds-small'>(runs: {esc(', '.join(runs[:6]))}{' …' if len(runs) > 6 else ''})</span>"
                    if runs
                    else ""
                )
            )
        else:
            out.append(esc(f))
    tracers = {rs.traced(n).get("tracer") for n in rs.world_sizes} - {None}
    if "torch" in tracers:
        sizes = [n for n in rs.world_sizes if rs.traced(n).get("tracer") == "torch"]
        out.append(
            f"<b>torch.profiler (Kineto) traces instead of Score-P</b> at world size{'s' if len(sizes) > 1 else ''} "
            f"{', '.join(map(str, sizes))}: same phases and GPU activities, a different tracer than the study's."
        )
    gpu_name = (m.get("provenance") or {}).get("gpu_name")
    if rs.device == "cuda" and gpu_name and "A100" not in gpu_name:
        out.append(
            f"<b>Hardware</b>: {esc(gpu_name)} instead of the study's A100 GPUs: absolute times differ; "
            "the claims are about relative and qualitative signals."
        )
    if rs.world_sizes and rs.world_sizes != STUDY["world_sizes"]:
        out.append(
            f"<b>World sizes</b> measured: {', '.join(map(str, rs.world_sizes))} "
            f"(the study: {', '.join(map(str, STUDY['world_sizes']))}); claims at a world size not measured are NOT RUN."
        )
    prov = m.get("provenance") or {}
    if prov.get("model") and prov["model"] != RECIPE["model"]:
        params = prov.get("parameters")
        out.append(
            f"<b>Model</b>: the {esc(prov['model'])!s} configuration"
            + (f" ({params / 1e6:.1f} M parameters)" if params else "")
            + " instead of DNABERT-2-117M's released one."
        )
    if prov.get("batch_size_per_rank") and prov["batch_size_per_rank"] != RECIPE["batch_size_per_rank"]:
        out.append(
            f"<b>Per-GPU batch</b> {prov['batch_size_per_rank']} instead of the recipe's "
            f"{RECIPE['batch_size_per_rank']} (weak scaling: the same per rank at every world size)."
        )
    if prov.get("seq_len_tokens") and prov["seq_len_tokens"] != RECIPE["seq_len_tokens"]:
        out.append(f"<b>Sequence length</b> {prov['seq_len_tokens']} tokens instead of prom_300's {RECIPE['seq_len_tokens']}.")
    if prov.get("precision") == "fp32":
        out.append("<b>Precision</b>: fp32, no autocast (the recipe trains with fp16 autocast on GPUs).")
    ddp = prov.get("ddp_options") or {}
    if (
        ddp
        and ddp.get("find_unused_parameters") is not None
        and ddp["find_unused_parameters"] != RECIPE["find_unused_parameters"]
    ):
        out.append(
            "<b>DDP</b>: find_unused_parameters=False (under the HF Trainer the recipe runs with True, one more "
            "autograd-graph traversal per step)."
        )
    out += _implementation_items(rs, prov)
    steps = {rs.traced(n).get("measured_steps") for n in rs.world_sizes} - {None}
    if steps and steps != {STUDY["measured_steps"]}:
        out.append(
            f"<b>Measured steps</b> per traced run: {', '.join(map(str, sorted(steps)))} (the study: {STUDY['measured_steps']})."
        )
    for n in rs.world_sizes:
        t = rs.entry(n).get("traced")
        if t is None:
            out.append(f"<b>World size {n}</b>: no traced run (throughput only).")
        elif t.get("gpu_not_run_reason") and rs.device != "cpu":
            out.append(f"<b>World size {n}</b>: GPU analysis not run: {esc(t['gpu_not_run_reason'])}")
    for d in m.get("deviations") or []:
        out.append(f"<b>Deviation</b>: {esc(d)}")
    return out


def _implementation_items(rs: ResultSet, prov: dict) -> list[str]:
    """Set-up differences of the implementation: attention, training loop, optimizer, and the DDP
    wrapper's own cost at one GPU."""
    out = []
    if prov.get("attention") == "sdpa":
        out.append(
            "<b>Attention</b>: PyTorch scaled_dot_product_attention (sdpa), not the released DNABERT-2 code's "
            "attention path; sdpa is the faster of the two (<code class='ds'>make bench-train</code> measures "
            "both, ARTIFACT.md quotes the figures)."
        )
    if rs.device in ("cuda", "cpu"):
        loop = prov.get("training_loop") or "dnabert_scaling.train: own loop, not the HF Trainer"
        out.append(f"<b>Training loop</b>: {esc(loop)}; the recipe runs the HF Trainer.")
        impl = prov.get("optimizer_impl")
        out.append(
            "<b>Optimizer</b>: torch.optim.AdamW, implementation "
            + (f"<code class='ds'>{esc(impl)}</code>" if impl else "not recorded by these runs (the default)")
            + " (<code class='ds'>default</code> lets torch choose, foreach on CUDA); the HF Trainer's "
            "optimizer setting is not reproduced."
        )
    one = rs.entry(1) if 1 in rs.world_sizes else {}
    ddp = median((one.get("throughput") or {}).get("samples_per_s"))
    plain = median((one.get("throughput_noddp") or {}).get("samples_per_s"))
    if ddp and plain:
        out.append(
            f"<b>DDP wrapper at one GPU</b>: {1 - ddp / plain:.0%} of throughput ({fmt(ddp)} samples/s with "
            f"the wrapper, {fmt(plain)} without; medians of the untraced repeats). Efficiencies below use the "
            "run with the wrapper as their 1-GPU baseline."
        )
    return out  # CPU threads per rank: a deviation recorded by train, listed with the others


def abstract_html(report: Report) -> str:
    paras = []
    for rs in report.sets:
        claims = (rs.verdicts or {}).get("claims") or []
        if not claims:
            paras.append(f"<p><b>{esc(rs.label)}</b>: the claims were not checked ({esc(rs.verdicts_source)}).</p>")
            continue
        by: dict[str, list] = {v: [c for c in claims if c["verdict"] == v] for v in (PASS, FAIL, NOT_RUN, INVALID)}
        s = [f"<b>{esc(rs.label)}</b>: of {len(claims)} claims, "]
        counts = ", ".join(f"{len(by[v])} {VERDICT_WORD[v]}" for v in (PASS, FAIL, NOT_RUN, INVALID) if by[v])
        s.append(counts + ". ")
        if by[PASS]:
            s.append(f"Confirmed: {_claim_list(by[PASS])}. ")
        if by[FAIL]:
            s.append(f"<b>Refuted</b>: {_claim_list(by[FAIL])}. ")
        if by[INVALID]:
            s.append(f"<b>Invalid</b> (a sanity check failed, so the data cannot be trusted): {_claim_list(by[INVALID])}. ")
        if by[NOT_RUN]:
            s.append(f"Not run: {', '.join(c['id'] for c in by[NOT_RUN])} — {esc(_not_run_why(rs, by[NOT_RUN]))}. ")
        ind = [i for c in by[NOT_RUN] for i in (c.get("indicative") or [])]
        if ind:
            s.append(
                f"<span class='ds-ind'>Indicative figures at world size {', '.join(sorted({str(i['world_size']) for i in ind}))} "
                "are shown with the claims, as information only.</span> "
            )
        h = headline(rs)
        if h:
            s.append(h[0].upper() + h[1:] + " ")
        fb = [f for f in fallback_items(rs)]
        if fb:
            s.append(
                f"<br><span class='ds-small'>⚠ This result set differs from the study's set-up in {len(fb)} "
                "way(s), listed prominently in its Setup section.</span>"
            )
        paras.append("<p>" + "".join(s) + "</p>")
    return (
        '<div class="ds-abstract"><h2>Abstract</h2><p>The study traced every rank of DNABERT-2 fine-tuning under '
        "PyTorch DDP on 1, 4 and 8 GPUs and found that (1) a single GPU runs no NCCL kernels, while from two GPUs the "
        "AllReduce kernel appears on its own stream and grows into the dominant GPU activity; (2) at 8 GPUs it is the "
        "largest single GPU activity, on par with the whole backward pass; (3) yet it is largely hidden behind backward "
        "compute, so throughput scales near-linearly. This report re-derives those findings from traces and checks "
        "each against explicit bounds (<code class='ds'>expected/claims.toml</code>).</p>" + "".join(paras) + "</div>"
    )


def setup_html(rs: ResultSet) -> str:
    m = rs.metrics
    p = m.get("provenance") or {}
    pk = p.get("packages") or {}
    rows = []

    def row(k, v):
        if v not in (None, "", [], {}):
            rows.append(f"<tr><td>{esc(k)}</td><td>{v}</td></tr>")

    if rs.device == "cpu":
        row(
            "Hardware",
            f"CPU only ({esc(p.get('cpu', '?'))}, {esc(p.get('cpu_count', '?'))} cores), host {esc(p.get('host', '?'))}",
        )
    else:
        gpus = p.get("gpus") or []
        mem = f", {esc(gpus[0].get('memory'))}" if gpus and gpus[0].get("memory") else ""
        row(
            "Hardware",
            f"{esc(p.get('gpu_count', len(gpus) or '?'))}x {esc(p.get('gpu_name', 'GPU'))}{mem}; "
            f"{esc(p.get('cpu_count', '?'))} CPU cores; host {esc(p.get('host', '?'))}",
        )
        row("Driver / CUDA / NCCL", f"{esc(p.get('driver', '?'))} / {esc(p.get('torch_cuda', '?'))} / {esc(p.get('nccl', '?'))}")
    row(
        "Software",
        ", ".join(f"{esc(k)} {esc(v)}" for k, v in pk.items() if v) + (f"; Python {esc(p['python'])}" if p.get("python") else ""),
    )
    row("Platform", esc(p.get("platform")) if p.get("platform") else None)
    model = p.get("model")
    if model:
        params = p.get("parameters")
        row(
            "Model",
            f"DNABERT-2 <code class='ds'>{esc(model)}</code>"
            + (f", {params / 1e6:.1f} M parameters" if params else "")
            + (f", {esc(p.get('precision'))}" if p.get("precision") else "")
            + (f", attention {esc(p.get('attention'))}" if p.get("attention") else ""),
        )
    w = p.get("weights") or {}
    row("Weights", esc(w.get("source")) if w else None)
    task = p.get("task") or {}
    if task:
        row(
            "Task",
            f"{esc(task.get('name', '?'))}"
            + (" (synthetic)" if task.get("synthetic") else "")
            + (f", {esc(p.get('seq_len_tokens'))} tokens" if p.get("seq_len_tokens") else "")
            + (f", batch {esc(p.get('batch_size_per_rank'))} per rank" if p.get("batch_size_per_rank") else ""),
        )
    if p.get("ddp_options"):
        row("DDP", ", ".join(f"{esc(k)}={esc(v)}" for k, v in p["ddp_options"].items() if k != "device_ids"))
    tr = []
    for n in rs.world_sizes:
        t = rs.entry(n).get("traced")
        if t:
            tr.append(
                f"{n}: {esc(t.get('tracer'))} ({esc(t.get('format') or 'no GPU trace')}, run {esc(t.get('run'))}, "
                f"{esc(t.get('measured_steps'))} steps)"
            )
    row("Traced runs (world size: tracer)", "<br>".join(tr))
    row(
        "Steps",
        f"{esc(p.get('warmup_steps'))} warm-up + {esc(p.get('measured_steps'))} measured" if p.get("measured_steps") else None,
    )
    row(
        "Provenance",
        f"artifact {esc(p.get('artifact_version', '?'))}, git {esc(p.get('git_revision') or 'unknown')}, "
        f"runs recorded {esc(p.get('time', '?'))}",
    )
    row(
        "Results folder",
        f"<code class='ds'>{esc(shown(rs.path))}</code>{results_folder_note(rs.path)} "
        f"(metrics created {esc(m.get('created', '?'))})",
    )
    row("Verdicts", esc(rs.verdicts_source))
    fb = fallback_items(rs)
    warn = ""
    if fb:
        warn = (
            '<div class="ds-warn"><h4>⚠ Fallbacks and differences from the study\'s set-up</h4><ul>'
            + "".join(f"<li>{x}</li>" for x in fb)
            + "</ul></div>"
        )
    else:
        warn = '<div class="ds-info">No fallbacks: this result set ran the study\'s set-up.</div>'
    return warn + '<table class="ds-table ds-kv">' + "".join(rows) + "</table>"


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


def _short(x: Any, n: int = 48) -> str:
    """At most n characters, cut in the middle so both the family and the specialisation show."""
    return shorten_middle(str(x), n)


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


def metrics_table_html(rs: ResultSet) -> str:
    cols = [
        ("step", "step_time_s", "ms"),
        ("compute", "compute_s", "ms"),
        ("exposed comm", "exposed_comm_s", "ms"),
        ("exposed memcpy", "exposed_memcpy_s", "ms"),
        ("idle", "idle_s", "ms"),
        ("NCCL kernels", "nccl_kernels_per_step", "n"),
        ("AllReduce", "allreduce_kernel_s", "ms"),
        ("backward", "backward_gpu_s", "ms"),
        ("AR / bwd", "allreduce_to_backward", "x"),
        ("overlap", "overlap_ratio", "x"),
        ("exposed share", "exposed_comm_share", "%"),
    ]
    head = (
        "<tr><th>world size</th>"
        + "".join(f"<th class='num'>{esc(a)}{' (ms)' if u == 'ms' else ''}</th>" for a, _, u in cols)
        + "<th class='num'>samples/s</th><th class='num'>efficiency (range)</th>"
        "<th class='num'>traced / untraced step</th></tr>"
    )
    body = []
    for n in rs.world_sizes:
        g = rs.gpu(n)
        e = rs.entry(n)
        cells = []
        for _, key, unit in cols:
            st = (g or {}).get(key)
            if not g:
                cells.append("<td class='num'>–</td>")
            elif unit == "ms":
                cells.append(f"<td class='num'>{ms(st)}</td>")
            elif unit == "%":
                cells.append(f"<td class='num'>{'–' if median(st) is None else f'{median(st):.1%}'}</td>")
            elif unit == "n":
                cells.append(f"<td class='num'>{'–' if median(st) is None else f'{median(st):.0f}'}</td>")
            else:
                cells.append(f"<td class='num'>{fmt(median(st))}</td>")
        sps = median((e.get("throughput") or {}).get("samples_per_s"))
        spread = e.get("efficiency_spread") or {}
        rng = (
            f" <span class='ds-small'>({spread['min']:.2f}–{spread['max']:.2f})</span>"
            if spread.get("min") is not None and spread.get("max") is not None
            else ""
        )
        cells.append(
            f"<td class='num'>{fmt(sps)}</td><td class='num'>{fmt(e.get('efficiency'))}{rng}</td>"
            f"<td class='num'>{fmt(e.get('dilation'))}</td>"
        )
        body.append(f"<tr><td>{n}</td>{''.join(cells)}</tr>")
    notes = []
    missing: dict[str, list[int]] = {}
    for n in rs.world_sizes:
        if not rs.gpu(n):
            missing.setdefault(rs.gpu_missing_why(n), []).append(n)
    for why, sizes in missing.items():
        notes.append(f"GPU metrics at world size{'s' if len(sizes) > 1 else ''} {', '.join(map(str, sizes))} not run: {why}")
    base = next((rs.entry(n).get("efficiency_baseline") for n in rs.world_sizes if rs.entry(n).get("efficiency_baseline")), None)
    if base:
        notes.append(f"Efficiency baseline: {base}.")
    noddp = {
        n: rs.entry(n).get("efficiency_vs_noddp")
        for n in rs.world_sizes
        if n > 1 and rs.entry(n).get("efficiency_vs_noddp") is not None
    }
    if noddp:  # at one GPU the same ratio is the wrapper's own cost: said in the set-up differences
        notes.append(
            "Efficiency against the 1-GPU run without the DDP wrapper: "
            + ", ".join(f"{n} GPUs {v:.2f}" for n, v in noddp.items())
            + "."
        )
    if rs.device == "cpu":
        notes.append(
            "CPU smoke run: samples/s of a tiny model on gloo ranks sharing this machine's cores. It shows "
            "that throughput and efficiency are computed end to end; it is not a scaling measurement."
        )
    return (
        f"<table class='ds-table'>{head}{''.join(body)}</table>"
        + "".join(f"<p class='ds-small'>{esc(x)}</p>" for x in notes)
        + "<p class='ds-small'>Medians over all (rank, measured step) samples; times per step. Efficiency range: the "
        "slowest repeat at N over N × the fastest 1-GPU repeat, to the fastest over the slowest. Traced / untraced "
        "step: the traced run's median step time over the untraced runs' median. They are separate processes, so the "
        "ratio holds run-to-run variation as well as the tracer's cost; <code class='ds'>make bench-trace</code> "
        "times traced and untraced steps in one process, which isolates the tracer.</p>"
    )


def ranking_html(rs: ResultSet, top: int = 8) -> str:
    sizes = [n for n in rs.world_sizes if rs.gpu(n) and rs.gpu(n).get("ranking")]
    if not sizes:
        return ""
    n = max(sizes)
    rows = rs.gpu(n)["ranking"][:top]
    body = "".join(
        f"<tr><td>{i + 1}</td><td class='ds-act' title='{esc(r['activity'])}'>{'<b>' if r.get('kind') == 'nccl' else ''}"
        f"{esc(_short(r['activity'], 90))}{'</b>' if r.get('kind') == 'nccl' else ''}</td><td>{esc(r.get('kind'))}</td>"
        f"<td class='num'>{r['sum_s_per_step'] * 1e3:.2f}</td><td class='num'>{fmt(r.get('count_per_step'))}</td>"
        f"<td class='num'>{r.get('share', 0):.1%}</td></tr>"
        for i, r in enumerate(rows)
    )
    return (
        f"<p><b>Largest GPU activities at world size {n}</b> (summed kernel time per step and rank; NCCL kernels grouped "
        "by collective, other kernels by name):</p><table class='ds-table'><tr><th>#</th><th>activity</th><th>kind</th>"
        f"<th class='num'>ms / step</th><th class='num'>count / step</th><th class='num'>share</th></tr>{body}</table>"
    )


def idle_html(rs: ResultSet) -> str:
    """Why the GPU is idle: host wait / kernel wait / other per world size, with the launch rate."""
    sizes = [n for n in rs.world_sizes if rs.gpu(n) and rs.gpu(n).get("idle_host_wait_s")]
    if not sizes:
        return ""
    body, lines = [], []
    for n in sizes:
        g = rs.gpu(n)
        step, idle_ = median(g.get("step_time_s")), median(g.get("idle_s"))
        parts = [median(g.get(k)) for k in ("idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s")]
        total = sum(x for x in parts if x is not None) or None

        def share(x, total=total):
            return f" <span class='ds-small'>({x / total:.0%})</span>" if x is not None and total else ""

        call, per = median(g.get("launch_call_s")), median(g.get("host_s_per_launch"))
        kernels = median(g.get("kernels_per_step"))
        mean_kernel = median(g.get("compute_s")) / kernels if kernels and median(g.get("compute_s")) is not None else None
        body.append(
            f"<tr><td>{n}</td><td class='num'>{ms(g.get('step_time_s'))}</td><td class='num'>{ms(g.get('idle_s'))}"
            f"{f' <span class=ds-small>({idle_ / step:.0%})</span>' if step and idle_ is not None else ''}</td>"
            + "".join(
                f"<td class='num'>{ms(g.get(k))}{share(x)}</td>"
                for k, x in zip(("idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s"), parts)
            )
            + f"<td class='num'>{fmt(median(g.get('launches_per_step')))}</td>"
            f"<td class='num'>{'–' if call is None else f'{call * 1e6:.1f}'}</td>"
            f"<td class='num'>{'–' if per is None else f'{per * 1e6:.1f}'}</td>"
            f"<td class='num'>{'–' if mean_kernel is None else f'{mean_kernel * 1e6:.1f}'}</td></tr>"
        )
        if total and parts[0] is not None and step:
            verdict = (
                "the step is launch-bound: the GPU mostly waits for the host to launch the next activity"
                if parts[0] / total >= 0.5
                else "host wait is not the main part of the idle time"
            )
            lines.append(
                f"World size {n}: the GPU is idle {idle_ / step:.0%} of the median step and "
                f"{parts[0] / total:.0%} of that idle time is host wait; {verdict}."
                + (
                    f" The host spends {per * 1e6:.1f} µs of step time per launch; a compute kernel runs "
                    f"{mean_kernel * 1e6:.1f} µs on average (compute time / kernels)."
                    if per and mean_kernel
                    else ""
                )
            )
    head = (
        "<tr><th>world size</th><th class='num'>step (ms)</th><th class='num'>idle (ms)</th>"
        "<th class='num'>host wait (ms)</th><th class='num'>kernel wait (ms)</th><th class='num'>other (ms)</th>"
        "<th class='num'>launches / step</th><th class='num'>µs per launch call</th>"
        "<th class='num'>host µs per launch</th><th class='num'>µs per compute kernel</th></tr>"
    )
    return (
        "<p><b>Why the GPU is idle</b> (per step; medians over (rank, step) samples, shares of the summed parts):</p>"
        f"<table class='ds-table'>{head}{''.join(body)}</table>"
        + "".join(f"<p>{esc(x)}</p>" for x in lines)
        + "<p class='ds-small'>Host wait: idle with no launched activity outstanding, the GPU waits for the host to "
        "launch. Kernel wait: idle while an activity was launched (its launch call had begun) but had not started "
        "on the GPU: launch latency or a wait between streams. Other: gaps ending at an activity whose launch time "
        "the trace does not give. Launches: kernel-launch and copy/memset calls in the step's host window, every "
        "thread; host µs per launch = the step's host time / launches.</p>"
    )


def kernel_classes_html(rs: ResultSet) -> str:
    """GPU time by kernel class at the largest world size with classes, next to the by-name ranking."""
    sizes = [n for n in rs.world_sizes if rs.gpu(n) and rs.gpu(n).get("kernel_classes")]
    if not sizes:
        return ""
    n = max(sizes)
    rows = rs.gpu(n)["kernel_classes"]
    body = "".join(
        f"<tr><td>{'<b>' if r['class'].startswith('nccl:') else ''}{esc(r['class'])}"
        f"{'</b>' if r['class'].startswith('nccl:') else ''}</td><td class='num'>{r['sum_s_per_step'] * 1e3:.2f}</td>"
        f"<td class='num'>{fmt(r.get('count_per_step'))}</td><td class='num'>{r.get('share', 0):.1%}</td>"
        f"<td class='ds-act' title='{esc(r.get('example', ''))}'>{esc(_short(r.get('example', ''), 70))}</td></tr>"
        for r in rows
    )
    return (
        f"<p><b>GPU time by kernel class at world size {n}</b> (the same kernel time as the ranking above, grouped "
        "by what the kernels do, so AllReduce is compared with GEMM or attention as a whole rather than with one "
        "compute kernel; C3's verdict keeps the study's by-name ranking):</p>"
        "<table class='ds-table'><tr><th>class</th><th class='num'>ms / step</th><th class='num'>count / step</th>"
        f"<th class='num'>share</th><th>most frequent kernel</th></tr>{body}</table>"
        f"<p class='ds-small'>Class rule: {esc(kernel_classes.RULE_SUMMARY)} "
        "(<code class='ds'>dnabert_scaling.analysis.kernel_classes</code>).</p>"
    )


def rank_skew_html(rs: ResultSet) -> str:
    """Per-rank imbalance of the multi-rank world sizes: AllReduce start skew and per-rank medians."""
    rows = []
    for n in rs.world_sizes:
        g = rs.gpu(n) or {}
        sk = g.get("rank_skew")
        per = g.get("per_rank") or []
        if n < 2 or not (sk or len(per) > 1):
            continue
        st = (sk or {}).get("allreduce_start_skew_s") or {}
        late = (sk or {}).get("late_rank_share") or {}
        worst = max(late, key=late.get) if late else None
        steps = [p["step_time_s"] for p in per]
        clock = (sk or {}).get("clock")
        rows.append(
            f"<tr><td>{n}</td>"
            + "".join(
                f"<td class='num'>{'–' if st.get(k) is None else f'{st[k] * 1e6:.1f}'}</td>" for k in ("median", "p90", "max")
            )
            + f"<td>{esc(clock or '–')}</td>"
            f"<td>{f'rank {esc(worst)} ({late[worst]:.0%} of buckets)' if worst is not None else '–'}</td>"
            f"<td class='num'>{f'{min(steps) * 1e3:.2f}–{max(steps) * 1e3:.2f}' if steps else '–'}</td></tr>"
        )
    if not rows:
        return ""
    return (
        "<p><b>Ranks</b> (multi-rank world sizes): how far apart the ranks start each AllReduce bucket (the last rank "
        "to arrive keeps the others' NCCL kernels spinning), and the spread of the ranks' median step times.</p>"
        "<table class='ds-table'><tr><th>world size</th><th class='num'>start skew median (µs)</th>"
        "<th class='num'>p90</th><th class='num'>max</th><th>clock</th><th>most often last</th>"
        f"<th class='num'>per-rank median step (ms)</th></tr>{''.join(rows)}</table>"
        "<p class='ds-small'>Clock <i>common</i>: the ranks' traces share one clock (Kineto on one node), the skew is "
        "in wall time. <i>per-rank step start</i>: each start is measured from its rank's own step start (OTF2: one "
        "timer per rank), so the skew is how differently the ranks' steps unfold, not when they joined.</p>"
    )


ZOOM_COLORS = {
    "compute": "#3b6fb6",
    "nccl": "#d1495b",
    "memory": "#2e9e6a",
    "launch": "#111827",
    "forward": "#fde68a",
    "backward": "#bfdbfe",
    "optimizer": "#ddd6fe",
}
ZOOM_JS = """<script>(function(){var svg=document.getElementById('%(id)s'),out=document.getElementById('%(id)s-range');
var T0=%(t0)s,T1=%(t1)s,H=%(h)s,a=T0,b=T1,drag=null;
function show(){svg.setAttribute('viewBox',a+' 0 '+(b-a)+' '+H);out.textContent=(a/1000).toFixed(3)+' to '+(b/1000).toFixed(3)+' ms';}
function fit(){var w=b-a;if(w>T1-T0){a=T0;b=T1;}if(a<T0){b+=T0-a;a=T0;}if(b>T1){a-=b-T1;b=T1;}}
svg.addEventListener('wheel',function(e){e.preventDefault();var r=svg.getBoundingClientRect(),x=a+(e.clientX-r.left)/r.width*(b-a),
k=e.deltaY<0?0.8:1.25;a=x-(x-a)*k;b=x+(b-x)*k;if(b-a<0.05){b=a+0.05;}fit();show();},{passive:false});
svg.addEventListener('mousedown',function(e){drag={x:e.clientX,a:a,b:b};});
window.addEventListener('mouseup',function(){drag=null;});
svg.addEventListener('mousemove',function(e){if(!drag)return;var r=svg.getBoundingClientRect(),d=(e.clientX-drag.x)/r.width*(drag.b-drag.a);
a=drag.a-d;b=drag.b-d;fit();show();});
svg.addEventListener('dblclick',function(){a=T0;b=T1;show();});show();})();</script>"""


def zoom_timeline_html(rs: ResultSet) -> str:
    """The timeline figure's step as inline SVG that zooms (wheel), pans (drag) and resets (double
    click); every bar names itself on hover. Self-contained: no file or network at view time."""
    tl = rs.table("timeline")
    if tl is None or tl.empty:
        return ""
    ws = int(tl["world_size"].max())
    tl = tl[tl["world_size"] == ws]
    host = rs.table("timeline_host")
    host = host[host["world_size"] == ws] if host is not None and not host.empty else None
    rows: list[tuple[str, Any]] = []  # (label, frame of bars with start_s, end_s, color, title)
    for rank in sorted(int(r) for r in tl["rank"].unique()):
        if host is not None:
            mine = host[host["rank"] == rank]
            for thread, g in mine.groupby("thread", sort=False):
                color = [
                    ZOOM_COLORS.get(n, "#d1d5db") if k == "phase" else ZOOM_COLORS["launch"] for k, n in zip(g["kind"], g["name"])
                ]
                bars = g.assign(color=color, title=g["name"].astype(str))
                bars = bars[(bars["kind"] == "launch") | bars["name"].isin(["forward", "backward", "optimizer"])]
                rows.append((f"rank {rank} · host {thread}", bars))
        for stream, g in tl[tl["rank"] == rank].groupby("stream", sort=True):
            bars = g.assign(
                color=[ZOOM_COLORS.get(c, "#888888") for c in g["category"]],
                title=[f"{n} [{p}]" for n, p in zip(g["name"].astype(str), g["phase"].astype(str))],
            )
            rows.append((f"rank {rank} · stream {stream}", bars))
    row_h = 18
    t0 = min(float(min(b["start_s"].min() for _, b in rows if len(b))), 0.0) * 1e6
    t1 = float(max(b["end_s"].max() for _, b in rows if len(b))) * 1e6
    shapes, labels = [], []
    for i, (label, bars) in enumerate(rows):
        y = i * row_h
        labels.append(f"<div style='height:{row_h}px;line-height:{row_h}px'>{esc(label)}</div>")
        for a, b, c, t in zip(bars["start_s"] * 1e6, bars["end_s"] * 1e6, bars["color"], bars["title"]):
            shapes.append(
                f"<rect x='{a:.3f}' y='{y + 2}' width='{max(b - a, 0.3):.3f}' height='{row_h - 4}' fill='{c}'>"
                f"<title>{esc(t)} ({(b - a):.1f} µs)</title></rect>"
            )
    height = len(rows) * row_h
    uid = f"ds-zoom-{rs.index}"
    svg = (
        f"<svg id='{uid}' viewBox='{t0} 0 {t1 - t0} {height}' preserveAspectRatio='none' "
        f"style='width:100%;height:{height}px;cursor:grab;background:#fafafa' xmlns='http://www.w3.org/2000/svg'>"
        + "".join(shapes)
        + "</svg>"
    )
    return (
        f"<p><b>Zoomable timeline</b> of the same step (world size {ws}): wheel to zoom, drag to pan, double click "
        f"to reset; hover a bar for its name. Showing <span id='{uid}-range'></span>. For a deeper look at every "
        "step: the Kineto traces open in Perfetto as they are, and <code class='ds'>dnabert-scaling convert TRACE... "
        "--out DIR --merged</code> writes <code class='ds'>DIR/all-ranks/traces.otf2</code>, all ranks in one "
        "archive for Vampir.</p>"
        f"<div style='display:flex;gap:6px;font-size:11px'><div style='flex:0 0 190px;white-space:nowrap;"
        f"overflow:hidden'>{''.join(labels)}</div><div style='flex:1 1 auto;min-width:0'>{svg}</div></div>"
        + ZOOM_JS
        % {"id": uid, "t0": f"{t0:.3f}", "t1": f"{t1:.3f}", "h": height}
    )


def notes_html(rs: ResultSet) -> str:
    notes = list(rs.metrics.get("notes") or [])
    for n in rs.world_sizes:
        notes += [f"world size {n}: {x}" for x in ((rs.gpu(n) or {}).get("notes") or [])]
        pm = (rs.gpu(n) or {}).get("phase_method")
        if pm:
            text = f"world size {n}: phases attributed by {pm}"
            val = (rs.gpu(n) or {}).get("phase_validation") or {}
            agree = [
                f"{k} {v['time']:.1%} of GPU time" for k, v in val.items() if isinstance(v, dict) and v.get("time") is not None
            ]
            if agree:
                text += " (the Score-P methods agree with it on " + ", ".join(agree) + ")"
            notes.append(text)
    if not notes:
        return ""
    return (
        "<p class='ds-small'><b>Analysis notes:</b></p><ul class='ds-small'>"
        + "".join(f"<li>{esc(x)}</li>" for x in notes)
        + "</ul>"
    )


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
        words = "; ".join(
            f"at {n} GPUs the AllReduce kernels run {b['ratio']:.1f}x as long as moving the gradient "
            f"bytes at the bus bandwidth measured on the same machine ({fmt(b.get('busbw_GBps'))} GB/s)"
            for n, b in items
        )
        caption = (
            f"Busy-wait, {esc(rs.label)}: {words}. The excess over the pure transfer time is time the LL kernels "
            "spend waiting for peers, not moving data (bus bandwidth from <code class='ds'>dnabert-scaling busbw</code>)."
        )
        out.append(figure_html(figures.busy_wait(rs), f"{section}.{k}", caption))
    if without:
        reasons = []
        for rs in report.sets:
            if rs.label not in without:
                continue
            if rs.device == "cpu":
                why = "a CPU run: the bus bandwidth may have been measured (gloo), but there are no GPU AllReduce kernels to compare it with"
            elif rs.metrics.get("busbw"):
                why = "the bus bandwidth was measured, but no AllReduce kernel time to compare it with"
            else:
                why = "no bus-bandwidth measurement (busbw) came with these runs (it runs at world sizes of 2 and more)"
            reasons.append(f"{esc(rs.label)}: {why}")
        out.append(
            "<div class='ds-na'><b>Busy-wait figure not available</b> for "
            + "; ".join(reasons)
            + ". Where AllReduce kernels were traced without it, read their time as an upper bound of the transfer cost.</div>"
        )
    return "".join(out)


def reproduce_html(report: Report) -> str:
    paths = " ".join(shown(s.path) for s in report.sets)
    return f"""<p>Everything in this report is rebuilt from files, by commands that can be rerun one at a time:</p>
<pre class="ds">make kick-tires     # analysis, checker and report on the reference traces shipped in expected/ (no GPU, under a minute)
make reproduce      # the GPU sweep where GPUs exist (1, 2, 4, 8 that fit), else the CPU smoke run; then analysis, check, report
make sweep-slurm    # submit the 1 -> 4 -> 8 GPU sweep to SLURM (scripts/slurm/)

# the same steps inside the container image (its runscript is the dnabert-scaling command)
apptainer run --nv --cleanenv -B "$PWD" dnabert-scaling.sif sweep --gpus 1,4,8 --out runs
apptainer run --cleanenv -B "$PWD" dnabert-scaling.sif analyze runs --out results
apptainer run --cleanenv -B "$PWD" dnabert-scaling.sif check results
apptainer run --cleanenv -B "$PWD" dnabert-scaling.sif report results --out report

# stage by stage
dnabert-scaling analyze RUNS/ --out results/                               # traces -> metrics.json + tables/
dnabert-scaling check results/ --expected expected/claims.toml [--strict]  # -> verdicts.json, verdicts.txt
dnabert-scaling report {esc(paths)} --out report/   # the folders of this report{esc(_made_by(report))}</pre>
<p class="ds-small">The executed notebook <code class="ds">report.ipynb</code> next to this page holds the code of
every table and figure; <code class="ds">dnabert-scaling report --show-code</code> keeps it in the page.</p>"""


def _made_by(report: Report) -> str:
    """Which command writes this report's results folders when a fresh clone lacks them."""
    if any(results_folder_note(s.path) for s in report.sets):
        return " (written by make kick-tires / make reproduce)"
    return ""


def build_info_html(report: Report) -> str:
    import platform
    import sys

    p = report.params
    rows = [
        ("Python of the report kernel", f"{shown(sys.executable)} ({platform.python_version()})"),
        ("Report built", p.get("created", "?")),
        ("Artifact version", p.get("version", "?")),
        ("Claims file", shown(p.get("claims")) if p.get("claims") else "–"),
    ]
    for s in report.sets:
        src = (s.verdicts or {}).get("sources") or {}
        rows.append(
            (
                f"Set {s.number}",
                f"{shown(s.path)} — metrics {s.metrics.get('created', '?')}"
                + (f", claims sha256 {src['claims_sha256'][:12]}…" if src.get("claims_sha256") else ""),
            )
        )
    return (
        "<table class='ds-table ds-kv'>" + "".join(f"<tr><td>{esc(a)}</td><td>{esc(b)}</td></tr>" for a, b in rows) + "</table>"
    )


def check_kernel(params: dict) -> None:
    """Stop when the kernel is not the interpreter that built the report (different packages)."""
    import sys

    want = params.get("prefix")
    if params.get("strict_kernel") and want and want != sys.prefix:
        raise RuntimeError(
            f"the notebook kernel runs {sys.executable} (prefix {sys.prefix}), "
            f"not the report builder's interpreter (prefix {want})"
        )
