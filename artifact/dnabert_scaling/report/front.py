"""The report's front matter: showing HTML and figures in the notebook, the style sheet, the title,
the abstract with its headline, and each result set's set-up with the fallbacks from the study's
set-up."""

from __future__ import annotations

import argparse
import functools
from collections import Counter
from importlib import resources
from typing import Any

from dnabert_scaling.checker import FAIL, INVALID, NOT_RUN, PASS
from dnabert_scaling.report.glance import at_a_glance, one_gpu_per_rank_text
from dnabert_scaling.report.html import markup
from dnabert_scaling.report.results import (
    Report,
    ResultSet,
    esc,
    fmt,
    median,
    ms,
    recorded_paths,
    results_folder_note,
    shown,
)

# Showing things in the notebook


@functools.cache
def study_setup() -> dict[str, Any]:
    """The study's set-up as the run commands default to it (the fallbacks compare a result set's
    provenance with it): ``sweep``'s world sizes; ``train``'s model, per-rank batch, measured steps and
    DDP ``find_unused_parameters``; the sequence length of ``train``'s default task (prom_300)."""
    from dnabert_scaling.run.sweep import driver as sweep
    from dnabert_scaling.run.train import rank as train
    from dnabert_scaling.run.workload import data

    run, grid = argparse.ArgumentParser(), argparse.ArgumentParser()
    train.add_arguments(run)
    sweep.add_arguments(grid)
    return {
        "world_sizes": sweep.world_sizes(grid.get_default("gpus")),
        "measured_steps": run.get_default("steps"),
        "model": run.get_default("model"),
        "batch_size_per_rank": run.get_default("batch_size"),
        "seq_len_tokens": data.GUE_TASKS[run.get_default("task")][2],
        "find_unused_parameters": run.get_default("find_unused_parameters") == "true",
    }


def show(markup: str) -> None:
    """Show HTML in the notebook, after :func:`~dnabert_scaling.report.html.assert_inert`: a value
    that reached it unescaped stops the report instead of running in the reader's browser."""
    from IPython.display import HTML, display

    from dnabert_scaling.report.html import assert_inert
    from dnabert_scaling.report.timeline import OWN_SCRIPT

    assert_inert(str(markup), (OWN_SCRIPT,))
    display(HTML(markup))


def figure_html(fig, number: str, caption: str) -> str:
    """A figure with its number and caption (text), or the note that it is not available and why."""
    from dnabert_scaling.report.figures import NotAvailable
    from dnabert_scaling.report.html import render
    from dnabert_scaling.report.set_section import figure_block

    if isinstance(fig, NotAvailable):
        return str(render("not_available.html.j2", what=f"Figure {number} not available", why=f"{fig.reason} ({caption})"))
    return str(figure_block(fig, number, caption))


def collapsed(summary: str, body: str) -> str:
    """``body`` (HTML the section modules made) in a closed ``<details>`` under the text ``summary``."""
    from dnabert_scaling.report.html import Markup, markup

    return markup('<details class="ds-detail"><summary>{}</summary>{}</details>', summary, Markup(body))


def show_figure(fig, number: str, caption: str) -> None:
    show(figure_html(fig, number, caption))


# ---------------------------------------------------------------------------------------------
# Sections


def style() -> str:
    """The report's style sheet, shipped as ``resources/report/report.css``."""
    sheet = resources.files("dnabert_scaling").joinpath("resources/report/report.css").read_text()
    return "\n<style>\n" + sheet.split("*/\n", 1)[1] + "</style>\n"


def title_html(report: Report) -> str:
    from dnabert_scaling.report.html import render

    p = report.params
    return str(
        render(
            "title.html.j2",
            sets=len(report.sets),
            created=p.get("created", ""),
            written_by=p.get("written_by") or "dnabert-scaling report",
            version=p.get("version"),
            glance=at_a_glance(report.sets),
        )
    )


def fallbacks_every_set_took(sets: list[ResultSet]) -> list[tuple[str, str]]:
    """The recorded fallbacks (what, and what ran instead) that every set took, for the box of what all sets
    share (their runs and reasons differ set by set: each set's section gives them); none for one set."""
    if len(sets) < 2:
        return []
    kinds = [
        {
            (str(f["what"]), str(f.get("used") or ""))
            for f in rs.metrics.get("fallbacks") or []
            if isinstance(f, dict) and f.get("what")
        }
        for rs in sets
    ]
    return sorted(set.intersection(*kinds))


def headline(rs: ResultSet) -> str:
    """One sentence with the key numbers at the largest world size with GPU metrics; where the ranks
    of that world size shared a GPU, no numbers: what ran there and the checker's INVALID."""
    sizes = [n for n in rs.world_sizes if rs.gpu(n) and n > 1]
    if not sizes:
        return ""
    n = max(sizes)
    if rs.shared_gpu(n):
        return _shared_headline(rs, n)
    g = rs.gpu(n)
    bits = [
        f"at {rs.ranks(n)} the AllReduce kernels take {ms(g.get('allreduce_kernel_s'))} ms per step against "
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


def _shared_headline(rs: ResultSet, n: int) -> str:
    """The headline of a set whose largest world size ran on a shared GPU: what ran, and that its
    timings are no finding (the claims the checker marks INVALID for it, from verdicts.json)."""
    invalid = [
        str(c.get("id"))
        for c in (rs.verdicts or {}).get("claims") or []
        if c.get("verdict") == INVALID and any(ch.get("code") == "shared_gpu" for ch in c.get("checks") or [])
    ]
    text = (
        f"at its largest world size this set ran {rs.ranks(n)}: the timings there are those of ranks time-slicing "
        "one GPU, not scaling evidence, and this report draws no finding from their magnitudes"
    )
    if invalid:
        text += f" (the checker marks {', '.join(invalid)} INVALID: shared GPU)"
    return text + "."


def fallback_items(rs: ResultSet) -> list[str]:
    """Every fallback and every difference from the study's set-up, as plain sentences (markup
    composed by :func:`~dnabert_scaling.report.html.markup`: every value from the files escaped)."""
    prov = rs.metrics.get("provenance") or {}
    return [
        *_device_items(rs),
        *_recorded_fallbacks(rs),
        *_tracer_items(rs),
        *_setup_items(rs, prov, study_setup()),
        *_implementation_items(rs, prov),
        *_run_items(rs, study_setup()),
    ]


_FALLBACK_WORDS = {"device": "Device", "tracer": "Tracer"}


def _device_items(rs: ResultSet) -> list[str]:
    if rs.device != "cpu":
        return []
    return [
        markup(
            "<b>No GPU: CPU smoke run</b> (gloo instead of NCCL). It shows that the runs, their CPU traces, the "
            "throughput arithmetic, the checker and this report complete on this machine; the GPU analysis did not "
            "run (no GPU activity in the traces), so it measures no GPU time. Its claim verdicts: {}.",
            verdict_counts([rs]),
        )
    ]


def _recorded_fallbacks(rs: ResultSet) -> list[str]:
    """The fallbacks ``metrics.json`` records (weights, data, device, tracer, rehearsal, ...)."""
    out: list[str] = []
    for f in rs.metrics.get("fallbacks") or []:
        if not isinstance(f, dict):
            out.append(markup("{}", f))
            continue
        if rs.device == "cpu" and f.get("what") == "device":
            continue  # said in the first item
        what, used, why = f.get("what") or f.get("kind") or "?", f.get("used", "?"), f.get("reason", "")
        word = {
            "weights": "Random weights" if "random" in str(used).lower() else "Weights",
            "data": "Synthetic data" if "synthetic" in str(used).lower() else "Data",
        }.get(str(what), _FALLBACK_WORDS.get(str(what), str(what).capitalize()))
        if f.get("kind") == "rehearsal":
            word = "Rehearsal (ranks share GPUs: never scaling evidence)"
        item = markup("<b>{}</b>: {}", word, recorded_paths(used))
        if why:
            item += markup(" — {}", recorded_paths(why))
        runs = [str(r) for r in f.get("runs") or []]
        if runs:
            item += markup(" <span class='ds-small'>(runs: {}{})</span>", ", ".join(runs[:6]), " …" if len(runs) > 6 else "")
        out.append(item)
    return out


def _tracer_items(rs: ResultSet) -> list[str]:
    sizes = [n for n in rs.world_sizes if rs.traced(n).get("tracer") == "torch"]
    if not sizes:
        return []
    return [
        markup(
            "<b>torch.profiler (Kineto) traces instead of Score-P</b> at world size{} {}: same phases and GPU "
            "activities, a different tracer than the study's.",
            "s" if len(sizes) > 1 else "",
            ", ".join(map(str, sizes)),
        )
    ]


def _setup_items(rs: ResultSet, prov: dict, study: dict) -> list[str]:
    """Hardware, world sizes, model, batch, sequence length, precision, DDP against the study's."""
    out = []
    gpu_name = prov.get("gpu_name")
    if rs.device == "cuda" and gpu_name and "A100" not in str(gpu_name):
        out.append(
            markup(
                "<b>Hardware</b>: {} instead of the study's A100 GPUs: absolute times differ; "
                "the claims are about relative and qualitative signals.",
                gpu_name,
            )
        )
    if rs.world_sizes and rs.world_sizes != study["world_sizes"]:
        out.append(
            markup(
                "<b>World sizes</b> measured: {} (the study: {}); claims at a world size not measured are NOT RUN.",
                ", ".join(map(str, rs.world_sizes)),
                ", ".join(map(str, study["world_sizes"])),
            )
        )
    if prov.get("model") and prov["model"] != study["model"]:
        params = prov.get("parameters")
        size = f" ({params / 1e6:.1f} M parameters)" if isinstance(params, (int, float)) else ""
        out.append(markup("<b>Model</b>: the {} configuration{} instead of DNABERT-2-117M's released one.", prov["model"], size))
    batch = prov.get("batch_size_per_rank")
    if batch and batch != study["batch_size_per_rank"]:
        out.append(
            markup(
                "<b>Per-GPU batch</b> {} instead of the recipe's {} (weak scaling: the same per rank at every world size).",
                batch,
                study["batch_size_per_rank"],
            )
        )
    if prov.get("seq_len_tokens") and prov["seq_len_tokens"] != study["seq_len_tokens"]:
        out.append(
            markup("<b>Sequence length</b> {} tokens instead of prom_300's {}.", prov["seq_len_tokens"], study["seq_len_tokens"])
        )
    if prov.get("precision") == "fp32":
        out.append(markup("<b>Precision</b>: fp32, no autocast (the recipe trains with fp16 autocast on GPUs)."))
    ddp = prov.get("ddp_options") or {}
    if ddp and ddp.get("find_unused_parameters") is not None and ddp["find_unused_parameters"] != study["find_unused_parameters"]:
        out.append(
            markup(
                "<b>DDP</b>: find_unused_parameters=False (under the HF Trainer the recipe runs with True, one more "
                "autograd-graph traversal per step)."
            )
        )
    return out


def _run_items(rs: ResultSet, study: dict) -> list[str]:
    """Measured steps, world sizes without a trace or GPU analysis, recorded deviations."""
    out = []
    steps = {rs.traced(n).get("measured_steps") for n in rs.world_sizes} - {None}
    if steps and steps != {study["measured_steps"]}:
        out.append(
            markup(
                "<b>Measured steps</b> per traced run: {} (the study: {}).",
                ", ".join(map(str, sorted(steps, key=str))),
                study["measured_steps"],
            )
        )
    for n in rs.world_sizes:
        t = rs.entry(n).get("traced")
        if t is None:
            out.append(markup("<b>World size {}</b>: no traced run (throughput only).", n))
        elif t.get("gpu_not_run_reason") and rs.device != "cpu":
            out.append(markup("<b>World size {}</b>: GPU analysis not run: {}", n, t["gpu_not_run_reason"]))
    for d in rs.metrics.get("deviations") or []:
        out.append(markup("<b>Deviation</b>: {}", d))
    return out


def _implementation_items(rs: ResultSet, prov: dict) -> list[str]:
    """Set-up differences of the implementation: attention, training loop, optimizer, and the DDP
    wrapper's own cost at one GPU."""
    out = []
    if prov.get("attention") == "sdpa":
        out.append(
            markup(
                "<b>Attention</b>: PyTorch scaled_dot_product_attention (sdpa), not the released DNABERT-2 code's "
                "attention path; sdpa is the faster of the two (<code class='ds'>make bench-train</code> measures "
                "both, ARTIFACT.md quotes the figures)."
            )
        )
    if rs.device in ("cuda", "cpu") and prov:  # no run recorded its set-up (all failed): nothing to call a default
        loop = prov.get("training_loop") or "not recorded by these runs (this code's loop is its own, not the HF Trainer)"
        out.append(markup("<b>Training loop</b>: {}; the recipe runs the HF Trainer.", loop))
        impl = prov.get("optimizer_impl")
        used = markup("<code class='ds'>{}</code>", impl) if impl else "not recorded by these runs (the default)"
        out.append(
            markup(
                "<b>Optimizer</b>: torch.optim.AdamW, implementation {} (<code class='ds'>default</code> lets torch "
                "choose, foreach on CUDA); the HF Trainer's optimizer setting is not reproduced.",
                used,
            )
        )
    one = rs.entry(1) if 1 in rs.world_sizes else {}
    ddp = median((one.get("throughput") or {}).get("samples_per_s"))
    plain = median((one.get("throughput_noddp") or {}).get("samples_per_s"))
    if ddp and plain:
        out.append(
            markup(
                "<b>DDP wrapper at {}</b>: {} ({} samples/s with the wrapper, {} without; {}). "
                "Efficiencies below use the run with the wrapper as their {} baseline.",
                rs.ranks(1),
                f"costs {1 - ddp / plain:.0%} of the throughput without it"
                if ddp <= plain
                else f"no cost measured (the runs with it were {ddp / plain - 1:.0%} faster)",
                fmt(ddp),
                fmt(plain),
                _runs_text(one.get("throughput") or {}, one.get("throughput_noddp") or {}),
                rs.ranks(1),
            )
        )
    return out  # CPU threads per rank: a deviation recorded by train, listed with the others


def _runs_text(with_ddp: dict, without: dict) -> str:
    """How many untraced runs each throughput rests on: "one run each", "medians of 3 untraced runs
    each", "medians of 3 untraced runs with the wrapper and 2 without"."""

    def runs(t: dict) -> int:
        n = (t.get("samples_per_s") or {}).get("n")
        return n if isinstance(n, int) else len(t.get("runs") or [])

    a, b = runs(with_ddp), runs(without)
    if a == b == 1:
        return "one untraced run each, no repeat"
    if a == b:
        return f"medians of {a} untraced runs each"
    return f"medians of {a} untraced run{'s' if a != 1 else ''} with the wrapper and {b} without"


def verdict_counts(sets: list[ResultSet]) -> str:
    """The claim verdicts of ``sets`` counted from their verdicts.json: "9 PASS, 0 FAIL, 45 NOT RUN
    and 6 INVALID", with the sets not checked said."""
    counts = Counter(str(c.get("verdict")) for rs in sets for c in (rs.verdicts or {}).get("claims") or [])
    order = [PASS, FAIL, NOT_RUN, INVALID, *sorted(set(counts) - {PASS, FAIL, NOT_RUN, INVALID})]
    parts = [f"{counts[v]} {v}" for v in order]
    text = ", ".join(parts[:-1]) + f" and {parts[-1]}"
    unchecked = sum(rs.verdicts is None for rs in sets)
    return text + (f" ({unchecked} set{'s' if unchecked != 1 else ''} not checked)" if unchecked else "")


def abstract_html(report: Report) -> str:
    """The study's findings, once; what this report found is the table above it (``summary``) and,
    per set, the key numbers at the head of its section. What the sets' verdicts say is counted
    from them, so the abstract claims no more than the verdicts."""
    n = len(report.sets)
    return (
        '<div class="ds-abstract"><h2>Abstract</h2><p>The study traced every rank of DNABERT-2 fine-tuning under '
        "PyTorch DDP on 1, 4 and 8 GPUs and found that (1) a single GPU runs no NCCL kernels, while from two GPUs the "
        "AllReduce kernel appears on its own stream and grows into the dominant GPU activity; (2) at 8 GPUs it is the "
        "largest single GPU activity, on par with the whole backward pass; (3) yet it is largely hidden behind backward "
        "compute, so throughput scales near-linearly. This report checks each finding against explicit bounds "
        "(<code class='ds'>expected/claims.toml</code>) on the traces it was given: the table above gives every "
        f"verdict of the {n} result set{'s' if n != 1 else ''}, the sections below the detail. Their claim verdicts "
        f"(one per claim and set): {esc(verdict_counts(report.sets))}.{one_gpu_per_rank_text(report.sets)}</p></div>"
    )


def setup_html(rs: ResultSet) -> str:
    """The set-up table (``resources/report/setup.html.j2``): rows of plain values, escaped there."""
    from dnabert_scaling.report.html import Markup, render

    p = rs.metrics.get("provenance") or {}
    folder = markup("<code class='ds'>{}</code>", shown(rs.path, rs.display_root)) + Markup(
        results_folder_note(rs.path, rs.metrics)
    )
    rows = [
        *_hardware_rows(rs, p),
        ("Software", ", ".join(f"{k} {v}" for k, v in (p.get("packages") or {}).items() if v) + _python(p)),
        ("Platform", p.get("platform")),
        ("Model", _model_text(p)),
        ("Weights", (p.get("weights") or {}).get("source")),
        ("Task", _task_text(p)),
        ("DDP", ", ".join(f"{k}={v}" for k, v in (p.get("ddp_options") or {}).items() if k != "device_ids")),
        ("Traced runs (world size: tracer)", _traced_runs(rs)),
        ("Placement (world size: ranks, GPUs, hosts, transports)", _placements(rs)),
        ("Steps", f"{p.get('warmup_steps')} warm-up + {p.get('measured_steps')} measured" if p.get("measured_steps") else None),
        (
            "Provenance",
            f"artifact {p.get('artifact_version', '?')}, git {p.get('git_revision') or 'unknown'}, "
            f"runs recorded {p.get('time', '?')}",
        ),
        ("Results folder", folder + markup(" (metrics created {})", rs.metrics.get("created", "?"))),
        ("Verdicts", rs.verdicts_source),
    ]
    return str(render("setup.html.j2", rows=[(k, v) for k, v in rows if v not in (None, "", [], {})]))


def _hardware_rows(rs: ResultSet, p: dict) -> list[tuple[str, Any]]:
    if rs.device == "cpu":
        return [("Hardware", f"CPU only ({p.get('cpu', '?')}, {p.get('cpu_count', '?')} cores), host {p.get('host', '?')}")]
    gpus = p.get("gpus") or []
    mem = f", {gpus[0].get('memory')}" if gpus and isinstance(gpus[0], dict) and gpus[0].get("memory") else ""
    return [
        (
            "Hardware",
            f"{p.get('gpu_count', len(gpus) or '?')}x {p.get('gpu_name', 'GPU')}{mem}; "
            f"{p.get('cpu_count', '?')} CPU cores; host {p.get('host', '?')}",
        ),
        ("Driver / CUDA / NCCL", f"{p.get('driver', '?')} / {p.get('torch_cuda', '?')} / {p.get('nccl', '?')}"),
    ]


def _python(p: dict) -> str:
    return f"; Python {p['python']}" if p.get("python") else ""


def _model_text(p: dict) -> Any:
    if not p.get("model"):
        return None
    params = p.get("parameters")
    return (
        markup("DNABERT-2 <code class='ds'>{}</code>", p["model"])
        + (f", {params / 1e6:.1f} M parameters" if isinstance(params, (int, float)) else "")
        + (f", {p.get('precision')}" if p.get("precision") else "")
        + (f", attention {p.get('attention')}" if p.get("attention") else "")
    )


# What the GUE benchmark's tasks are (DNABERT-2's paper, Table of GUE), by name prefix: the report names a task
# by its folder name, which says little to a reader outside genomics.
GUE_KINDS = (
    ("prom_core_", "GUE core promoter detection"),
    ("prom_", "GUE promoter detection"),
    ("tf_", "GUE transcription factor binding, human"),
    ("mouse_", "GUE transcription factor binding, mouse"),
    ("H3", "GUE epigenetic mark prediction, yeast"),
    ("H4", "GUE epigenetic mark prediction, yeast"),
    ("covid", "GUE COVID variant classification"),
    ("reconstructed", "GUE splice site prediction"),
)


def _task_kind(name: str) -> str:
    return next((f" ({kind})" for prefix, kind in GUE_KINDS if name.startswith(prefix)), "")


def _task_text(p: dict) -> str | None:
    task = p.get("task") or {}
    if not task:
        return None
    return (
        f"{task.get('name', '?')}{_task_kind(str(task.get('name', '')))}"
        + (" (synthetic)" if task.get("synthetic") else "")
        + (f", {p.get('seq_len_tokens')} tokens" if p.get("seq_len_tokens") else "")
        + (f", batch {p.get('batch_size_per_rank')} per rank" if p.get("batch_size_per_rank") else "")
    )


def _placements(rs: ResultSet) -> list[str]:
    from dnabert_scaling.report.summary import placements

    return placements(rs)


def _traced_runs(rs: ResultSet) -> list[str]:
    out = []
    for n in rs.world_sizes:
        t = rs.entry(n).get("traced")
        if t:
            out.append(
                f"{n}: {t.get('tracer')} ({t.get('format') or 'no GPU trace'}, run {t.get('run')}, {t.get('measured_steps')} steps)"
            )
    return out
