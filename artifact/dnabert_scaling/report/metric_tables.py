"""The metric tables of a result set's section: the step partition per world size, the ranking of
GPU activities, idle time by cause, time by kernel class and the skew between ranks."""

from __future__ import annotations

from dnabert_scaling.analysis import kernel_classes
from dnabert_scaling.report.results import ResultSet, fmt, median, ms, short as _short


PARTITION_COLUMNS = (
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
)


def _gpu_cell(g: dict | None, key: str, unit: str) -> dict:
    st = (g or {}).get(key)
    if not g:
        return _cell("–")
    if unit == "ms":
        return _cell(ms(st))
    if unit == "%":
        return _cell("–" if median(st) is None else f"{median(st):.1%}")
    if unit == "n":
        return _cell("–" if median(st) is None else f"{median(st):.0f}")
    if key == "allreduce_to_backward" and median(g.get("allreduce_kernel_s")) == 0:  # measured none, not unknown
        return _cell("no AllReduce")
    return _cell(fmt(median(st)))


def _partition_row(rs: ResultSet, n: int) -> list[dict]:
    """One world size: its GPU medians, samples/s, efficiency with the repeats' range, dilation."""
    g, e = rs.gpu(n), rs.entry(n)
    spread = e.get("efficiency_spread") or {}
    rng = f"{spread['min']:.2f}–{spread['max']:.2f}" if spread.get("min") is not None and spread.get("max") is not None else None
    return [
        _cell(n, num=False),
        *[_gpu_cell(g, key, unit) for _, key, unit in PARTITION_COLUMNS],
        _cell(fmt(median((e.get("throughput") or {}).get("samples_per_s")))),
        _cell(fmt(e.get("efficiency")), rng),
        _cell(fmt(e.get("dilation"))),
    ]


def _partition_notes(rs: ResultSet) -> list[str]:
    """World sizes without GPU metrics (grouped by reason), the efficiency baselines, the CPU caveat."""
    notes = []
    missing: dict[str, list[int]] = {}
    for n in rs.world_sizes:
        if not rs.gpu(n):
            missing.setdefault(rs.gpu_missing_why(n), []).append(n)
    for why, sizes in missing.items():
        notes.append(f"GPU metrics at world size{'s' if len(sizes) > 1 else ''} {', '.join(map(str, sizes))} not run: {why}")
    base = next((rs.entry(n).get("efficiency_baseline") for n in rs.world_sizes if rs.entry(n).get("efficiency_baseline")), None)
    if not any(rs.entry(n).get("efficiency") is not None for n in rs.world_sizes):
        base = None  # a baseline of no efficiency figure is not said
    if base and rs.one_gpu_per_rank:
        notes.append(f"Efficiency baseline: {base}.")
    elif base:  # analyze's sentence says 1-GPU whatever ran: named here by what ran
        notes.append(f"Efficiency baseline: the world-size-1 run with the DDP wrapper ({rs.ranks(1)}).")
    noddp = {
        n: rs.entry(n).get("efficiency_vs_noddp")
        for n in rs.world_sizes
        if n > 1 and rs.entry(n).get("efficiency_vs_noddp") is not None
    }
    if noddp:  # at one GPU the same ratio is the wrapper's own cost: said in the set-up differences
        notes.append(
            f"Efficiency against the {rs.ranks(1)} run without the DDP wrapper: "
            + ", ".join(f"{rs.ranks(n)} {v:.2f}" for n, v in noddp.items())
            + "."
        )
    unrecorded = _kinds_not_recorded(rs)
    if unrecorded:
        notes.append(
            f"The tracer recorded no {' and no '.join(unrecorded)} activity (the completeness line, Appendix B): "
            "the exposed memcpy column counts only the copies it recorded, so it is no measurement of the others."
        )
    if rs.device == "cpu":
        notes.append(
            "CPU smoke run: samples/s of a tiny model on gloo ranks sharing this machine's cores. It shows "
            "that throughput and efficiency are computed end to end; it is not a scaling measurement."
        )
    return notes


def _kinds_not_recorded(rs: ResultSet) -> list[str]:
    """The kinds of GPU call a traced run's tracer left without activity records (``completeness``, per
    rank: ``kinds_not_recorded``, e.g. Score-P 8.4's device-to-device copies and memsets), over every
    world size and rank, in the order first met."""
    kinds: dict[str, None] = {}
    for n in rs.world_sizes:
        per_rank = (rs.traced(n).get("completeness") or {}).get("per_rank") or {}
        for r in per_rank.values() if isinstance(per_rank, dict) else []:
            for k in (r.get("kinds_not_recorded") or []) if isinstance(r, dict) else []:
                kinds[str(k)] = None
    return list(kinds)


PARTITION_NOTE = (
    "Medians over all (rank, measured step) samples; times per step. Efficiency range: the slowest repeat at N over "
    "N × the fastest world-size-1 repeat, to the fastest over the slowest. Traced / untraced step: the traced run's median "
    "step time over the untraced runs' median. They are separate processes, so the ratio holds run-to-run variation "
    "as well as the tracer's cost; make bench-trace pairs traced and untraced steps taken seconds apart (one process "
    "per mode, taking turns step by step), which isolates the tracer."
)


def metrics_table_html(rs: ResultSet) -> str:
    from dnabert_scaling.report.html import render

    names = [f"{a}{' (ms)' if u == 'ms' else ''}" for a, _, u in PARTITION_COLUMNS]
    head = _head("world size", *names, "samples/s", "efficiency (range)", "traced / untraced step", text_columns=(0,))
    after = [{"small": True, "text": x} for x in [*_partition_notes(rs), PARTITION_NOTE]]
    rows = [_partition_row(rs, n) for n in rs.world_sizes]
    return str(render("table.html.j2", head=head, rows=rows, before=[], after=after))


def _ms_text(x) -> str:
    return f"{x * 1e3:.2f}" if isinstance(x, (int, float)) else "–"


def _share_text(x) -> str:
    return f"{x:.1%}" if isinstance(x, (int, float)) else "–"


def ranking_html(rs: ResultSet, top: int = 8) -> str:
    from dnabert_scaling.report.html import render

    sizes = [n for n in rs.world_sizes if rs.gpu(n) and rs.gpu(n).get("ranking")]
    if not sizes:
        return ""
    n = max(sizes)
    rows = [
        {
            "activity": str(r.get("activity")),
            "short": _short(r.get("activity"), 90),
            "nccl": r.get("kind") == "nccl",
            "kind": r.get("kind"),
            "ms": _ms_text(r.get("sum_s_per_step")),
            "count": fmt(r.get("count_per_step")),
            "share": _share_text(r.get("share", 0)),
        }
        for r in rs.gpu(n)["ranking"][:top]
    ]
    return str(render("ranking.html.j2", n=n, rows=rows))


IDLE_PARTS = ("idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s")
IDLE_NOTE = (
    "Host wait: idle with no launched activity outstanding, the GPU waits for the host to launch. Kernel wait: idle "
    "while an activity was launched (its launch call had begun) but had not started on the GPU: launch latency or a "
    "wait between streams. Other: gaps ending at an activity whose launch time the trace does not give. Launches: "
    "kernel-launch and copy/memset calls in the step's host window, every thread; host µs per launch = the step's "
    "host time / launches."
)


def _idle_row(n: int, g: dict) -> tuple[list[dict], str]:
    """One world size's idle causes as cells, and the sentence that reads them."""
    step, idle_ = median(g.get("step_time_s")), median(g.get("idle_s"))
    parts = [median(g.get(k)) for k in IDLE_PARTS]
    total = sum(x for x in parts if x is not None) or None
    call, per = median(g.get("launch_call_s")), median(g.get("host_s_per_launch"))
    # compute kernels: every kernel but NCCL's (whose time is not compute time)
    kernels, compute = median(g.get("kernels_per_step")), median(g.get("compute_s"))
    compute_kernels = kernels - (median(g.get("nccl_kernels_per_step")) or 0) if kernels else None
    mean_kernel = compute / compute_kernels if compute_kernels and compute_kernels > 0 and compute is not None else None
    cells = [
        _cell(n, num=False),
        _cell(ms(g.get("step_time_s"))),
        _cell(ms(g.get("idle_s")), f"{idle_ / step:.0%}" if step and idle_ is not None else None),
        *[
            _cell(ms(g.get(k)) if g.get(k) is not None else "unknown", f"{x / total:.0%}" if x is not None and total else None)
            for k, x in zip(IDLE_PARTS, parts)
        ],
        _cell(fmt(median(g.get("launches_per_step")))),
        _cell(_us(call)),
        _cell(_us(per)),
        _cell(_us(mean_kernel)),
    ]
    if any(x is None for x in parts):
        return cells, (
            f"World size {n}: the causes of the idle time are unknown for this trace (it does not give what the split "
            "needs); the idle time itself is measured."
        )
    if not (total and step and idle_ is not None):
        return cells, ""
    verdict = (
        "the step is launch-bound: the GPU mostly waits for the host to launch the next activity"
        if parts[0] / total >= 0.5
        else "host wait is not the main part of the idle time"
    )
    text = (
        f"World size {n}: the GPU is idle {idle_ / step:.0%} of the median step and {parts[0] / total:.0%} of that "
        f"idle time is host wait; {verdict}."
    )
    if per and mean_kernel:
        text += (
            f" The host spends {per * 1e6:.1f} µs of step time per launch; a compute kernel runs "
            f"{mean_kernel * 1e6:.1f} µs on average (compute time / kernels other than NCCL's)."
        )
    return cells, text


def idle_html(rs: ResultSet) -> str:
    """Why the GPU is idle: host wait / kernel wait / other per world size, with the launch rate. A null
    split (results from before it, traces that cannot give it) is "unknown", never 0."""
    from dnabert_scaling.report.html import markup, render

    sizes = [n for n in rs.world_sizes if rs.gpu(n)]
    if not sizes:
        return ""
    if all(rs.gpu(n).get(k) is None for n in sizes for k in IDLE_PARTS):
        return str(
            markup(
                "<p class='ds-small'>{}</p>",
                "Why the GPU is idle: unknown for these traces (the split into host wait, kernel wait and other was not "
                "recorded); the idle time itself is in the table above.",
            )
        )
    rows, lines = zip(*(_idle_row(n, rs.gpu(n)) for n in sizes))
    head = _head(
        "world size",
        "step (ms)",
        "idle (ms)",
        "host wait (ms)",
        "kernel wait (ms)",
        "other (ms)",
        "launches / step",
        "µs per launch call",
        "host µs per launch",
        "µs per compute kernel",
        text_columns=(0,),
    )
    before = ["Why the GPU is idle (per step; medians over (rank, step) samples, shares of the summed parts):"]
    after = [{"small": False, "text": x} for x in lines if x] + [{"small": True, "text": IDLE_NOTE}]
    return str(render("table.html.j2", head=head, rows=list(rows), before=before, after=after))


def kernel_classes_html(rs: ResultSet) -> str:
    """GPU time by kernel class at the largest world size with classes, next to the by-name ranking."""
    from dnabert_scaling.report.html import render

    sizes = [n for n in rs.world_sizes if rs.gpu(n) and rs.gpu(n).get("kernel_classes")]
    if not sizes:
        return ""
    n = max(sizes)
    rows = [
        {
            "cls": str(r.get("class")),
            "nccl": str(r.get("class")).startswith("nccl:"),
            "ms": _ms_text(r.get("sum_s_per_step")),
            "count": fmt(r.get("count_per_step")),
            "share": _share_text(r.get("share", 0)),
            "example": str(r.get("example", "")),
            "short": _short(r.get("example", ""), 70),
        }
        for r in rs.gpu(n)["kernel_classes"]
    ]
    return str(render("kernel_classes.html.j2", n=n, rows=rows, rule=kernel_classes.RULE_SUMMARY))


def _cell(text, small: str | None = None, num: bool = True) -> dict:
    return {"text": text, "small": small, "num": num}


def _head(*names: str, text_columns: tuple[int, ...] = ()) -> list[dict]:
    return [{"text": h, "num": i not in text_columns} for i, h in enumerate(names)]


def _us(x) -> str:
    return "–" if not isinstance(x, (int, float)) else f"{x * 1e6:.1f}"


def _skew_row(n: int, g: dict) -> list[dict] | None:
    sk, per = g.get("rank_skew"), g.get("per_rank") or []
    if n < 2 or not (sk or len(per) > 1):
        return None
    st = (sk or {}).get("allreduce_start_skew_s") or {}
    late = (sk or {}).get("late_rank_share") or {}
    worst = max(late, key=late.get) if late else None
    steps = [p["step_time_s"] for p in per if isinstance(p.get("step_time_s"), (int, float))]
    return [
        _cell(n, num=False),
        *[_cell(_us(st.get(k))) for k in ("median", "p90", "max")],
        _cell((sk or {}).get("clock") or "–", num=False),
        _cell(f"rank {worst} ({late[worst]:.0%} of buckets)" if worst is not None else "–", num=False),
        _cell(f"{min(steps) * 1e3:.2f}–{max(steps) * 1e3:.2f}" if steps else "–"),
    ]


def rank_skew_html(rs: ResultSet) -> str:
    """Per-rank imbalance of the multi-rank world sizes: AllReduce start skew and per-rank medians."""
    from dnabert_scaling.report.html import render

    rows = [r for n in rs.world_sizes if (r := _skew_row(n, rs.gpu(n) or {})) is not None]
    if not rows:
        return ""
    head = _head(
        "world size",
        "start skew median (µs)",
        "p90",
        "max",
        "clock",
        "most often last",
        "per-rank median step (ms)",
        text_columns=(0, 4, 5),
    )
    before = [
        "Ranks (multi-rank world sizes): how far apart the ranks start each AllReduce bucket (the last rank to arrive "
        "keeps the others' NCCL kernels spinning), and the spread of the ranks' median step times."
    ]
    after = [
        {
            "small": True,
            "text": "Clock common: the ranks' traces share one clock (Kineto on one node), the skew is in wall time. "
            "per-rank step start: each start is measured from its rank's own step start (OTF2: one timer per rank), so "
            "the skew is how differently the ranks' steps unfold, not when they joined.",
        }
    ]
    return str(render("table.html.j2", head=head, rows=rows, before=before, after=after))
