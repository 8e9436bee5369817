"""The generated parts of the documents, one function each (``python -m dnabert_scaling.tools docs``).

Each takes the :class:`~dnabert_scaling.tools.docfacts.Facts` and an optional argument (a set's
name, a timing's name) and returns markdown: whole lines for a block, a phrase for an inline part.
A figure that the files do not hold is written as "-" or "not measured", never invented.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dnabert_scaling.tools import (
    docverdicts,
    docbench,
    docbench_calls,
    docbench_counts,
    docbench_early_targets,
    docbench_parts,
    docbench_reading,
    docbench_targets,
    docbench_timer,
    docfolders,
    doctraces,
)
from dnabert_scaling.tools.docfacts import Facts, ShippedSet, get
from dnabert_scaling.tools.docfacts import percent as _pct


def _ms(x: Any, digits: int = 1) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x * 1e3:.{digits}f}"


def _us(x: Any) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x * 1e6:.1f}"


def _n(x: Any) -> str:
    return "-" if not isinstance(x, (int, float)) else f"{x:,.0f}"


def _median(d: dict, *keys: str) -> Any:
    return get(d, *keys, "median")


def _needs(facts: Facts, name: str | None, block: str) -> ShippedSet | None:
    if not name:
        raise ValueError(f"generated part {block!r} needs a set: {block}:SET")
    return facts.set(name)


# -- the shipped sets ------------------------------------------------------------------------------


def _hardware(s: ShippedSet) -> str:
    p = get(s.metrics, "provenance", default={}) or {}
    if not p:
        return "-"
    if not p.get("cuda_available") or not p.get("gpu_name"):
        return f"CPU ({p.get('cpu_count', '?')} cores)"
    pk = p.get("packages") or {}
    return f"{p.get('gpu_count', 1)}x {p['gpu_name']}, torch {pk.get('torch', '?')} + CUDA {p.get('torch_cuda', '?')}, NCCL {p.get('nccl', '?')}"


def _tracer(s: ShippedSet) -> str:
    t = s.traced()
    name = t.get("tracer") or "-"
    mode = t.get("trace_mode") or (s.scorep_driver_callbacks() if name == "scorep" else None)
    return f"{name} ({mode})" if mode else name


def _batch(s: ShippedSet) -> str:
    batch = get(s.metrics, "provenance", "batch_size_per_rank") or get(s.traced_summary, "batch_size_per_rank")
    tokens = get(s.traced_summary, "seq_len_tokens")
    if batch is None:
        return "-"
    return f"{batch} x {tokens}" if tokens else str(batch)


def _untraced(s: ShippedSet) -> str:
    ddp, noddp = s.untraced_runs()
    if not ddp and not noddp:
        return "no"
    return f"yes: {ddp}" + (f" + {noddp} without DDP" if noddp else "")


def _recorded(s: ShippedSet) -> str:
    """The date the set's runs were made and the project revision they ran (their provenance)."""
    p = get(s.metrics, "provenance", default={}) or {}
    date = str(p.get("time") or "")[:10] or "-"
    rev = str(p.get("git_revision") or "")
    return f"{date}, `{rev[:7]}{'+dirty' if rev.endswith('+dirty') else ''}`" if rev else date


def _complete(s: ShippedSet) -> str:
    records = s.completeness()
    if not records:
        return "-"
    shares = [r["share"] for r in records if r["share"] is not None]
    statuses = sorted({r["status"] for r in records})
    share = f" {_pct(min(shares), 2)}" if shares else ""
    return "/".join(statuses) + share


def _machine(s: ShippedSet) -> str:
    p = get(s.metrics, "provenance", default={}) or {}
    if not p:
        return "no provenance recorded"
    gpus = p.get("gpus") or []
    pk = p.get("packages") or {}
    if gpus and isinstance(gpus[0], dict):
        gpu = f"{len(gpus)}x {gpus[0].get('name', '?')} ({gpus[0].get('memory', '?')}, driver {gpus[0].get('driver', '?')})"
    else:
        gpu = "no GPU"
    return (
        f"{gpu}, {p.get('cpu_count', '?')} CPU cores, Python {p.get('python', '?')}, torch {pk.get('torch', '?')} + "
        f"CUDA {p.get('torch_cuda', '?')}, NCCL {p.get('nccl', '?')}, transformers {pk.get('transformers', '?')}"
    )


def machines(facts: Facts, _: str | None) -> str:
    """The machines and software the shipped sets were recorded with (their provenance), each with its sets and dates."""
    seen: dict[str, list[ShippedSet]] = {}
    for s in facts.sets:
        if s.has_results:
            seen.setdefault(_machine(s), []).append(s)
    parts = []
    for machine, sets in seen.items():
        dates = sorted({str(get(s.metrics, "provenance", "time", default=""))[:10] for s in sets} - {""})
        which = "every shipped set" if len(seen) == 1 else ", ".join(f"`{s.name}`" for s in sets)
        parts.append(f"{machine} ({which}; recorded {', '.join(dates) or 'on an unrecorded date'})")
    return "; ".join(parts) or "no shipped set"


def sets_table(facts: Facts, _: str | None) -> str:
    claims = facts.claim_ids
    head = [
        "set",
        "recorded",
        "hardware",
        "tracer",
        "world sizes",
        "measured steps",
        "per-GPU batch x tokens",
        "untraced runs",
        *claims,
    ]
    rows = ["| " + " | ".join(head + ["trace complete (lowest share)"]) + " |", "|" + "---|" * (len(head) + 1)]
    for s in facts.sets:
        if not s.has_results:
            cells = [f"`{s.name}`", "no shipped results: `make refresh-reference` derives them"] + ["-"] * (len(head) - 1)
            rows.append("| " + " | ".join(cells) + " |")
            continue
        verdicts = s.claim_verdicts()
        sizes = ", ".join(s.world_sizes()) or "-"
        cells = [f"`{s.name}`", _recorded(s), _hardware(s), _tracer(s), sizes, _n(s.traced().get("measured_steps")), _batch(s)]
        cells.append(_untraced(s))
        cells += [verdicts.get(c, "-") for c in claims] + [_complete(s)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def verdicts_by_set(facts: Facts, _: str | None) -> str:
    lines = []
    for s in facts.sets:
        if not s.has_results:
            lines.append(f"- `{s.name}`: no shipped results")
            continue
        by_verdict: dict[str, list[str]] = {}
        for cid, v in s.claim_verdicts().items():
            by_verdict.setdefault(v, []).append(cid)
        measured = ", ".join(s.world_sizes()) or "none"
        parts = "; ".join(f"{v} {', '.join(ids)}" for v, ids in by_verdict.items())
        lines.append(f"- `{s.name}` (world sizes measured: {measured}): {parts}")
    return "\n".join(lines)


def completeness_shares(facts: Facts, _: str | None) -> str:
    parts = []
    for s in facts.sets:
        for r in s.completeness():
            if r["share"] is None:
                continue
            ws = f" at world size {r['world_size']}" if len(s.world_sizes()) > 1 else ""
            parts.append(f"`{s.name}`{ws} {r['status']}, {_n(r['found'])} of {_n(r['launches'])} ({_pct(r['share'], 2)})")
    return "; ".join(parts) or "no shipped set has completeness figures"


def incomplete_scorep(facts: Facts, _: str | None) -> str:
    r = facts.incomplete_scorep
    if not r:
        return "(the trace is not in this checkout)"
    return (
        f"{_n(r.get('found'))} GPU activities for {_n(r.get('launches'))} launches in its {_n(r.get('steps'))} measured steps, "
        f"{_pct(r.get('share'), 1)}"
    )


# -- why the GPU idles; kernel classes; dilation ---------------------------------------------------


def idle_table(facts: Facts, _: str | None) -> str:
    head = "| set | tracer | steps | step (ms) | idle | host wait | kernel wait | other | launches / step | µs per launch call | host µs per launch |"
    rows, left_out = [head, "|" + "---|" * 11], []
    for s in facts.sets:
        g = s.gpu()
        step, idle = _median(g, "step_time_s"), _median(g, "idle_s")
        host, kernel, other = (_median(g, k) for k in ("idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s"))
        if not isinstance(step, (int, float)) or not isinstance(idle, (int, float)):
            continue
        if not (host or kernel):
            left_out.append(f"`{s.name}`")
            continue
        idle_share = f"{_ms(idle)} ({_pct(idle / step)})" if step else _ms(idle)
        host_share = f"{_ms(host)} ({_pct(host / idle)} of idle)" if idle and isinstance(host, (int, float)) else _ms(host)
        cells = [f"`{s.name}`", _tracer(s), _n(s.traced().get("measured_steps")), _ms(step), idle_share, host_share]
        cells += [_ms(kernel), _ms(other), _n(_median(g, "launches_per_step")), _us(_median(g, "launch_call_s"))]
        cells += [_us(_median(g, "host_s_per_launch"))]
        rows.append("| " + " | ".join(cells) + " |")
    text = "\n".join(rows)
    if left_out:
        text += (
            f"\n\nLeft out, their idle time all counted as other (the trace does not tie every kernel to its launch, "
            f"see each set's `traced.gpu.notes`): {', '.join(left_out)}."
        )
    return text


def kernel_classes(facts: Facts, _: str | None) -> str:
    lines = []
    for s in facts.sets:
        classes = [c for c in s.gpu().get("kernel_classes") or [] if isinstance(c, dict)]
        if not classes:
            continue
        classes.sort(key=lambda c: -(c.get("share") or 0))
        top = ", ".join(f"{c.get('class')} {_pct(c.get('share'))}" for c in classes[:3])
        rest = {c.get("class"): c.get("share") for c in classes[3:] if c.get("class") in ("attention", "nccl")}
        extra = "".join(f", {k} {_pct(v)}" for k, v in rest.items())
        lines.append(f"- `{s.name}` (batch {_batch(s)}): {top}{extra}")
    return "\n".join(lines) or "- (no shipped set has kernel classes)"


def sweep_dilation(facts: Facts, _: str | None) -> str:
    parts = []
    for s in facts.sets:
        for ws, entry in s.world_sizes().items():
            d = entry.get("dilation")
            if isinstance(d, (int, float)):
                where = f" at world size {ws}" if len(s.world_sizes()) > 1 else ""
                parts.append(f"`{s.name}` ({_batch(s)}){where} {d:.2f}")
    return ", ".join(parts) or "none (no shipped set has untraced runs)"


def untraced_steps(facts: Facts, name: str | None) -> str:
    s = _needs(facts, name, "untraced-steps")
    sizes = s.world_sizes() if s else {}
    t = get(sizes, next(iter(sizes)), "throughput", "step_time_s", default={}) if sizes else {}
    if not t:
        return f"(no untraced runs in `{name}`)"
    return f"{_ms(t.get('min'))}-{_ms(t.get('max'))} ms over {_n(t.get('n'))} runs"


def gpu_compute(facts: Facts, name: str | None) -> str:
    s = _needs(facts, name, "gpu-compute")
    g = s.gpu() if s else {}
    if not g:
        return f"(no traced run in `{name}`)"
    step = get(g, "step_time_s", default={})
    return (
        f"{_ms(_median(g, 'compute_s'), 2)} ms of a {_ms(step.get('median'))} ms step "
        f"(median; p10-p90 {_ms(step.get('p10'))}-{_ms(step.get('p90'))} ms; `{name}`)"
    )


# -- Score-P beside torch.profiler ----------------------------------------------------------------


def _scorep_pairs(facts: Facts) -> list[tuple[ShippedSet, ShippedSet]]:
    pairs = []
    for s in facts.sets:
        twin = facts.set(f"{s.name}-torch")
        if s.traced().get("tracer") == "scorep" and twin is not None and twin.has_results:
            pairs.append((s, twin))
    return pairs


def scorep_agreement(facts: Facts, _: str | None) -> str:
    head = (
        "| sets (Score-P / torch.profiler) | recorded | DDP bucket hook | batch | kernels per step | GPU compute (ms) "
        "| forward (ms) | backward (ms) | optimizer (ms) | exposed copy (ms) |"
    )
    rows = [head, "|" + "---|" * 10]
    for sp, tp in _scorep_pairs(facts):
        a, b = sp.gpu(), tp.gpu()

        def both(key: str, digits: int = 3, a: dict = a, b: dict = b) -> str:
            return f"{_ms(_median(a, key), digits)} / {_ms(_median(b, key), digits)}"

        kernels = f"{_n(_median(a, 'kernels_per_step'))} / {_n(_median(b, 'kernels_per_step'))}"
        recorded = " / ".join(str(get(x.metrics, "provenance", "time", default="?"))[:10] for x in (sp, tp))
        hook = " / ".join("on" if x.buckets() is not None else "off" for x in (sp, tp))
        cells = [f"`{sp.name}` / `{tp.name}`", recorded, hook, _batch(sp), kernels, both("compute_s"), both("forward_gpu_s")]
        cells += [both("backward_gpu_s"), both("optimizer_gpu_s"), both("exposed_memcpy_s")]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) if len(rows) > 2 else "(no Score-P set with a torch.profiler twin is shipped)"


def _c1_at(s: ShippedSet, world_size: str) -> str:
    """C1's verdict beside the world size its checks judged (one GPU), nothing beside the others."""
    claim = next((c for c in get(s.verdicts, "claims", default=[]) or [] if c.get("id") == "C1"), None)
    judged = {str(c.get("world_size")) for c in (claim or {}).get("checks") or []}
    return f"; C1 {claim.get('verdict', '-')}" if claim and str(world_size) in judged else ""


def scorep_completeness(facts: Facts, _: str | None) -> str:
    lines = []
    for s in facts.sets:
        if s.traced().get("tracer") != "scorep":
            continue
        for r in s.completeness():
            kinds = ", ".join(r["kinds_not_recorded"])
            left = f"; left out of the count as kinds the trace holds none of: {kinds}" if kinds else ""
            at = f" world size {r['world_size']}" if len(s.world_sizes()) > 1 else ""
            lines.append(
                f"- `{s.name}`{at}: {r['status']}, GPU activities for {_n(r['found'])} of {_n(r['launches'])} launches and "
                f"copy calls in the measured steps ({_pct(r['share'], 2)}){left}{_c1_at(s, r['world_size'])}"
            )
    return "\n".join(lines) or "- (no Score-P set is shipped)"


# -- buckets and predictions ----------------------------------------------------------------------


def predict_sets(facts: Facts, _: str | None) -> str:
    with_ranges = [f"`{s.name}`" for s in facts.sets if s.buckets() is not None]
    without = [f"`{s.name}`" for s in facts.sets if s.buckets() is None]
    text = f"{', '.join(with_ranges) or 'no shipped set'} (recorded with the bucket hook)"
    if without:
        text += f"; it refuses the others, recorded before the hook existed ({', '.join(without)}), naming the missing `ds:bucket` ranges"
    return text


def bucket_count(facts: Facts, name: str | None) -> str:
    s = _needs(facts, name, "buckets")
    b = s.buckets() if s else None
    if not b:
        return f"(no bucket layout in `{name}`)"
    return f"{b.get('buckets')} buckets ({b.get('gradient_bytes', 0) / 2**20:.0f} MiB of gradients, cap {b.get('bucket_cap_mb')} MB; `{name}`)"


def bucket_prediction(facts: Facts, _: str | None) -> str:
    lines = []
    for name, p in facts.predictions.items():
        s = facts.set(name)
        if "refused" in p:
            lines.append(f"- `{name}`: `predict` refused it: {p['refused']}")
            continue
        src = p.get("source", {})
        sizes = [ws for ws in ("2", "4", "8") if ws in p.get("world_sizes", {})]
        ws = p.get("world_sizes", {})
        ar = " / ".join(_ms(get(ws, n, "allreduce_kernel_s", "mid")) for n in sizes)
        exposed = " / ".join(_ms(get(ws, n, "exposed_comm_s", "mid")) for n in sizes)
        overlap = " / ".join(f"{get(ws, n, 'overlap_ratio', 'mid', default=float('nan')):.2f}" for n in sizes)
        eff = " / ".join(f"{get(ws, n, 'efficiency', 'mid', default=float('nan')):.2f}" for n in sizes)
        node = get(p, "model", "node", "name", default="?")
        cont = get(p, "model", "contention", "mid", default="?")
        lines.append(
            f"- `{name}` ({_tracer(s) if s else '?'}, batch {_batch(s) if s else '?'}, {_n(src.get('measured_steps'))} measured steps): "
            f"{_n(src.get('buckets_per_step'))} buckets, {(src.get('gradient_bytes') or 0) / 2**20:.0f} MiB per step; "
            f"node layout `{node}`, contention {cont}; at {' / '.join(sizes)} GPUs: AllReduce {ar} ms per step, "
            f"exposed communication {exposed} ms, overlap ratio {overlap}, efficiency {eff}, "
            f"against a measured one-GPU step of {_ms(get(p, 'baseline', 'step_time_s'))} ms"
        )
    return "\n".join(lines) or "- (no shipped set holds `ds:bucket` ranges)"


# -- the GPU benchmarks (expected/reference/h200-bench/) ------------------------------------------


def _range_ms(values: Any) -> str:
    nums = [v for v in values or [] if isinstance(v, (int, float))]
    return f"{min(nums):.1f}-{max(nums):.1f}" if nums else "-"


def bench_train(facts: Facts, _: str | None) -> str:
    """The sdpa / eager / released-unpadded step times of ``bench_train.json``, one row per shape."""
    data = facts.bench("h200-bench/bench_train.json") or {}
    by_shape: dict[tuple, dict[str, dict]] = {}
    for r in data.get("results") or []:
        by_shape.setdefault((r.get("batch"), r.get("seq")), {})[r.get("attention")] = r
    head = "| per-GPU batch x tokens | sdpa step (ms) | eager | unpad (released path) | sdpa repeats | eager repeats | sdpa / eager | sdpa / unpad | sdpa samples/s | MFU (sdpa) |"
    rows = [head, "|" + "---|" * 10]
    for (batch, seq), r in by_shape.items():
        sdpa, eager, unpad = (get(r, k, "step_ms_median") for k in ("sdpa", "eager", "unpad"))

        def ratio(other: Any, sdpa: Any = sdpa) -> str:
            return f"{other / sdpa:.2f}x" if isinstance(other, (int, float)) and sdpa else "-"

        cells = [f"{batch} x {seq}"] + [f"{x:.1f}" if isinstance(x, (int, float)) else "-" for x in (sdpa, eager, unpad)]
        cells += [
            _range_ms(get(r, "sdpa", "step_ms_repeats")),
            _range_ms(get(r, "eager", "step_ms_repeats")),
            ratio(eager),
            ratio(unpad),
        ]
        cells += [_n(get(r, "sdpa", "samples_per_s")), _pct(get(r, "sdpa", "mfu"), 1)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) if len(rows) > 2 else "(no `h200-bench/bench_train.json` shipped)"


def bench_trace(facts: Facts, _: str | None) -> str:
    """Traced / untraced step time per torch.profiler mode of ``bench_trace.json`` (median and range of the rounds)."""
    data = facts.bench("h200-bench/bench_trace.json") or {}
    modes = {"torch:cuda": "torch: CUDA + user ranges (default)", "torch:cuda+cpu-ops": "torch: + host operators"}
    by_shape: dict[tuple, dict[str, dict]] = {}
    for r in data.get("rows") or []:
        by_shape.setdefault((r.get("batch"), r.get("seq")), {})[r.get("mode")] = r
    rows = ["| per-GPU batch x tokens | " + " | ".join(modes.values()) + " |", "|" + "---|" * (len(modes) + 1)]
    for (batch, seq), r in by_shape.items():
        cells = [f"{batch} x {seq}"]
        for mode in modes:
            med, rounds = get(r, mode, "dilation_median"), get(r, mode, "dilation_rounds") or []
            spread = f" (rounds {min(rounds):.2f}-{max(rounds):.2f})" if rounds else ""
            cells.append(f"{med:.3f}{spread}" if isinstance(med, (int, float)) else "-")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) if len(rows) > 2 else "(no `h200-bench/bench_trace.json` shipped)"


_HOOK_HEADER = re.compile(
    r"^# bench-hook: (?P<what>.+?), (?P<buckets>\d+) buckets \((?P<mib>[\d.]+) MiB\), (?P<rot>\d+) rotations"
)
_HOOK_ROW = re.compile(
    r"^\s*(?P<kind>builtin|plain|marked)\s+(?P<median>[\d.]+)\s+[\d.]+\s+[\d.]+\s+(?P<ratio>[\d.]+)(?: \(p10 (?P<p10>[\d.]+), p90 (?P<p90>[\d.]+)\))?"
)
_HOOK_MARK = re.compile(r"^one ds:bucket mark costs (?P<us>[\d.]+) us .*= (?P<pct>[\d.]+)% of the median step")
_HOOK_EQUAL = re.compile(r"^parameters of all three bitwise identical after (?P<steps>\d+) steps: (?P<ok>\w+)")


def _parse_bench_hook(text: str) -> dict[str, Any]:
    """The figures of a ``scripts/bench_bucket_hook.py`` printout (the shipped ``bench-hook*.txt``)."""
    out: dict[str, Any] = {"rows": {}}
    for line in text.splitlines():
        if m := _HOOK_HEADER.match(line):
            out.update(what=m["what"], buckets=int(m["buckets"]), mib=float(m["mib"]), rotations=int(m["rot"]))
        elif m := _HOOK_ROW.match(line):
            out["rows"][m["kind"]] = m.groupdict()
        elif m := _HOOK_MARK.match(line):
            out.update(mark_us=float(m["us"]), mark_pct=float(m["pct"]))
        elif m := _HOOK_EQUAL.match(line):
            out.update(equal_after=int(m["steps"]), equal=m["ok"] == "True")
    return out


def bench_hook(facts: Facts, _: str | None) -> str:
    """One row per shipped ``bench-hook*.txt``: step time with DDP's built-in all-reduce, the plain hook, the bucket hook."""
    head = "| output | run | buckets | rotations | built-in (ms) | plain hook (ms, ratio, p10-p90) | bucket hook (ms, ratio, p10-p90) | one mark (µs; all of a step's marks, share of the step) | parameters bitwise equal |"
    rows = [head, "|" + "---|" * 9]
    for folder in facts.bench_folders:
        for path in sorted(folder.glob("bench-hook*.txt")):
            h = _parse_bench_hook(path.read_text())
            r = h["rows"]

            def cell(kind: str, r: dict = r) -> str:
                x = r.get(kind) or {}
                spread = f", {x['p10']}-{x['p90']}" if x.get("p10") else ""
                return f"{x.get('median', '-')} ({x.get('ratio', '-')}{spread})" if x else "-"

            equal = f"{'yes' if h.get('equal') else 'no'}, after {h.get('equal_after', '?')} steps" if "equal" in h else "-"
            mark = f"{h.get('mark_us', '-')} ({h.get('mark_pct', '-')}%)"
            cells = [f"`{folder.name}/{path.name}`", h.get("what", "-"), str(h.get("buckets", "-")), str(h.get("rotations", "-"))]
            cells += [get(r, "builtin", "median", default="-"), cell("plain"), cell("marked"), mark, equal]
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) if len(rows) > 2 else "(no `bench-hook*.txt` shipped)"


_READ_ROW = re.compile(
    r"^(?P<method>\S.*?\S)\s{2,}(?P<events>[\d,]+)\s+(?P<median>[\d.]+)\s+(?P<rate>[\d,]+)\s+(?P<speedup>[\d.]+x)"
    r"(?:\s+(?P<runs>[\d.]+(?:,\s*[\d.]+)*))?\s*$"
)


def bench_read(facts: Facts, _: str | None) -> str:
    """The methods of the shipped ``bench-read.txt`` (``scripts/bench_read.py``): events, seconds (the median where a
    method ran more than once), how many runs, rate, speed-up."""
    rows = ["| method | events | seconds (median of the runs) | runs | events/s | speed-up |", "|---|---|---|---|---|---|"]
    machine = ""
    for folder in facts.bench_folders:
        for path in sorted(folder.glob("bench-read*.txt")):
            for line in path.read_text().splitlines():
                if line.startswith("machine: "):
                    machine = line.removeprefix("machine: ")
                elif m := _READ_ROW.match(line):
                    runs = len(m["runs"].split(",")) if m["runs"] else "?"
                    rows.append(f"| {m['method']} | {m['events']} | {m['median']} | {runs} | {m['rate']} | {m['speedup']} |")
    if len(rows) == 2:
        return "(no `bench-read*.txt` shipped)"
    return "\n".join(rows) + (f"\n\nMachine, as the printout gives it: {machine}." if machine else "")


# -- timings --------------------------------------------------------------------------------------


def timing(facts: Facts, name: str | None) -> str:
    if not name:
        raise ValueError("generated part 'timing' needs a name: timing:NAME")
    t = facts.timing(name)
    if not t or not t.get("measured"):
        return f"not measured yet (`docs/timings/{name}.json`)"
    m = t.get("machine") or {}
    loads = [x[0] for x in (t.get("load_average_before"), t.get("load_average_after")) if isinstance(x, list) and x]
    load = f"load average {min(loads):.1f}-{max(loads):.1f}; " if loads else ""
    repeats = t.get("repeats")
    spread = "one run" if repeats == 1 else f"median of {repeats}, range {t.get('min_s'):.0f}-{t.get('max_s'):.0f} s"
    revision = str(t.get("git_revision") or "")[:7] or "?"
    return (
        f"{t.get('median_s'):.0f} s ({spread}; "
        f"{m.get('cores', '?')} cores, {m.get('memory_gib', '?')} GiB, {m.get('cpu_model', '?')}; {load}{t.get('date', '?')}, "
        f"revision {revision}; `docs/timings/{name}.json`)"
    )


def timing_note(facts: Facts, name: str | None) -> str:
    t = facts.timing(name or "")
    return (t or {}).get("note") or "no note"


def make_help(facts: Facts, _: str | None) -> str:
    """What ``make help`` prints: every Makefile target with a ``## help`` comment, in order."""
    path = facts.root / "Makefile"
    if not path.is_file():
        return "(no Makefile)"
    rows = []
    for line in path.read_text().splitlines():
        m = re.match(r"^([a-zA-Z_-]+):.*## (.*)$", line)
        if m:
            rows.append(f"make {m.group(1):<18} {m.group(2)}")
    return "```\n" + "\n".join(rows) + "\n```"


BLOCKS: dict[str, Callable[[Facts, str | None], str]] = {
    "sets-table": sets_table,
    "machines": machines,
    "bench-folders": docfolders.bench_folders,
    "verdicts-by-set": verdicts_by_set,
    "judged-claims": docverdicts.judged_claims,
    "forecast-verdicts": docverdicts.forecast_verdicts,
    "completeness-shares": completeness_shares,
    "incomplete-scorep": incomplete_scorep,
    "idle-table": idle_table,
    "kernel-classes": kernel_classes,
    "sweep-dilation": sweep_dilation,
    "untraced-steps": untraced_steps,
    "gpu-compute": gpu_compute,
    "scorep-agreement": scorep_agreement,
    "scorep-completeness": scorep_completeness,
    "predict-sets": predict_sets,
    "phase-validation": doctraces.phase_validation,
    "buckets": bucket_count,
    "bucket-prediction": bucket_prediction,
    "timing": timing,
    "timing-note": timing_note,
    "make-help": make_help,
    "bench-train": bench_train,
    "bench-trace": bench_trace,
    "bench-train-targets": docbench_early_targets.port_targets,
    "torch-dilation-target": docbench_early_targets.torch_target,
    "torch-lockstep": docbench_early_targets.torch_lockstep,
    "gpu-call-folders": docfolders.gpu_call_folders,
    "scorep-host-events": docbench_counts.host_events,
    "untraced-spread": docbench_counts.untraced_spread,
    "bench-trace-scorep": docbench.bench_trace_scorep,
    "bench-trace-scorep-presence": docbench_calls.bench_trace_scorep_presence,
    "bench-trace-cupti-buffers": docbench_calls.bench_trace_cupti_buffers,
    "bench-trace-stream-cache": docbench_calls.bench_trace_stream_cache,
    "bench-trace-host-profile": docbench_calls.bench_trace_host_profile,
    "bench-trace-timer": docbench_timer.bench_trace_timer,
    "bench-trace-parts": docbench_parts.bench_trace_parts,
    "bench-trace-domains": docbench_parts.bench_trace_domains,
    "bench-trace-records": docbench_parts.bench_trace_records,
    "bench-trace-launch-records": docbench_parts.bench_trace_launch_records,
    "bench-trace-cpu-built": docbench_parts.bench_trace_cpu_built,
    "bench-trace-records-h200": docbench_parts.bench_trace_records_h200,
    "bench-trace-cupti-floor": docbench_parts.bench_trace_cupti_floor,
    "bench-trace-cupti-settings": docbench_parts.bench_trace_cupti_settings,
    "bench-trace-cupti-shared": docbench_parts.bench_trace_cupti_shared,
    "scorep-targets-summary": docbench_targets.scorep_targets_summary,
    "scorep-target-reading": docbench_reading.scorep_target_reading,
    "bench-hook": bench_hook,
    "bench-read": bench_read,
}
