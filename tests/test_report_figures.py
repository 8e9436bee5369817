"""The figures and their captions say what ran and what the data show: "N GPUs" only for one GPU per
rank, the overlap of claim C5 only where the shown step has NCCL kernels on streams of their own on
GPUs of their own, busy-wait ratios as measured, and no bound or efficiency panel a figure does not draw."""

from __future__ import annotations

import pandas as pd
import pytest

from dnabert_scaling.report import appendices as A, figures as F, results, set_section as D, timeline
from reportfixtures import cpu_results, gpu_results, write_results


def _placement(ws: int, shared: bool) -> dict:
    return {
        "ranks": ws,
        "hosts": 1,
        "gpus": 1 if shared else ws,
        "ranks_per_gpu": ws if shared else 1,
        "shared_gpu": shared and ws > 1,
        "identity": "uuid",
        "transports": ["NET/Socket"] if shared and ws > 1 else [],
        "rehearsal": shared,
    }


def _set(tmp_path, name: str, metrics_tables, shared: bool | None = None) -> results.ResultSet:
    m, t = metrics_tables
    if shared is not None:
        for ws, e in m["world_sizes"].items():
            e["traced"]["placement"] = _placement(int(ws), shared)
        if shared:
            m["busbw"] = {ws: {"world_size": int(ws), "rehearsal": True} for ws in m["world_sizes"] if int(ws) > 1}
            runs = [e["traced"]["run"] for e in m["world_sizes"].values()]  # a rehearsal is a fallback too
            m["fallbacks"] = [{"kind": "rehearsal", "what": "rehearsal", "used": "--rehearse", "reason": "one GPU", "runs": runs}]
    return results.load_set(0, write_results(tmp_path / name, m, t))


@pytest.fixture
def drawn(monkeypatch):
    """The matplotlib figures the figure functions draw, kept open for their tick labels and titles."""
    kept = []

    def keep(fig, alt, **facts):
        kept.append(fig)
        return F.Figure(b"", alt, facts)

    monkeypatch.setattr(F, "_png", keep)
    return kept


def _texts(fig) -> list[str]:
    out = []
    for ax in fig.axes:
        out += [t.get_text() for t in ax.get_xticklabels()] + [ax.get_title(), ax.get_xlabel()]
        out += [t.get_text() for t in ax.texts]
    return out


def test_rehearsal_and_cpu_figures_never_say_gpus(tmp_path, drawn):
    rehearsal = _set(tmp_path, "rehearsal", gpu_results((1, 2, 4)), shared=True)
    for fn in (F.breakdown, F.allreduce_vs_backward, F.overlap, F.busy_wait, F.throughput):
        assert isinstance(fn(rehearsal), F.Figure), fn.__name__
    words = " ".join(t for fig in drawn for t in _texts(fig))
    assert "GPUs" not in words.replace("shared GPU", "").replace("ranks share a GPU", "")
    assert "4 ranks\non 1 shared GPU" in words and "1 rank\non 1 GPU (rehearsal)" in words
    assert "4 ranks on 1 shared GPU: median 0.8" in words  # the overlap panel's title
    drawn.clear()
    cpu = _set(tmp_path, "cpu", cpu_results((1, 2)))
    F.throughput(cpu)
    assert "ranks (world size, CPU)" in _texts(drawn[0])
    drawn.clear()
    gpu = _set(tmp_path, "gpu", gpu_results((1, 2, 4)), shared=False)
    F.breakdown(gpu)
    assert [t.get_text() for t in drawn[0].axes[0].get_xticklabels()] == ["1 GPU", "2 GPUs", "4 GPUs"]


def test_the_allreduce_ratio_stands_above_its_bars_and_says_no_allreduce(tmp_path, drawn):
    rs = _set(tmp_path, "gpu", gpu_results((1, 2, 4)), shared=False)
    fig = F.allreduce_vs_backward(rs)
    ax = drawn[0].axes[0]
    bar_tops = max(p.get_height() for p in ax.patches)
    labels = {t.get_text(): t for t in ax.texts}
    ratio = [t for k, t in labels.items() if k.startswith("ratio ")]
    assert len(ratio) == 2 and all(t.get_position()[1] > bar_tops * 0.99 for t in ratio)  # not inside a bar
    assert all(t.get_position()[1] < ax.get_ylim()[1] for t in ax.texts)  # inside the axes: not clipped
    assert "no\nAllReduce" in labels and fig.facts["without_allreduce"] == [1]
    assert "no AllReduce kernels at 1 GPU" in D.allreduce_caption(rs, fig)
    one = _set(tmp_path, "one", gpu_results((1,), busy_wait=False), shared=False)
    caption = D.allreduce_caption(one, F.allreduce_vs_backward(one))
    assert "No AllReduce kernels at 1 GPU" in caption and "busy" not in caption and "Above each pair" not in caption


def _caption(rs, key: str) -> str:
    name, _, caption = next(x for x in D.FIGURES if x[1] == key)
    bound = D.BOUNDS.get(key)
    fig = getattr(F, key)(rs, rs.bound(*bound)) if bound else getattr(F, key)(rs)
    assert isinstance(fig, F.Figure), name
    return caption(rs, fig)


def test_timeline_caption_names_the_overlap_of_c5_only_where_the_step_shows_it(tmp_path):
    gpu = _set(tmp_path, "gpu", gpu_results((1, 2)), shared=False)
    text = _caption(gpu, "timeline")
    assert "the overlap of claim C5: in this step compute is under" in text and "stream of their own" in text
    one = _set(tmp_path, "one", gpu_results((1,), busy_wait=False), shared=False)
    text = _caption(one, "timeline")
    assert "claim C5" not in text and "No NCCL kernels in this step (1 GPU): nothing to overlap." in text
    shared = _set(tmp_path, "shared", gpu_results((1, 2)), shared=True)
    text = _caption(shared, "timeline")
    assert "A rehearsal (2 ranks on 1 shared GPU)" in text and "Not the overlap of claim C5" in text
    assert "are the overlap of claim C5" not in text


def test_step_facts_measure_the_shown_step():
    """Compute under the NCCL kernels, NCCL on the compute stream, and a host that began before the GPU."""

    def row(rank, stream, cat, a, b):
        return {"world_size": 2, "rank": rank, "stream": stream, "category": cat, "start_s": a, "end_s": b}

    tl = pd.DataFrame(
        [
            row(0, 7, "compute", 0.0, 1.0),
            row(0, 16, "nccl", 0.5, 4.5),
            row(1, 7, "compute", 0.0, 0.1),
            row(1, 16, "nccl", 0.1, 4.1),
        ]
    )
    host = pd.DataFrame([{"rank": 0, "start_s": -4.29, "end_s": 0.0}, {"rank": 1, "start_s": -0.5, "end_s": 0.0}])
    f = F.step_facts(tl, host)
    assert f["overlap"] == pytest.approx(0.5 / 8.0) and f["nccl_own_stream"]
    assert f["nccl_s"] == pytest.approx(4.0) and f["host_lead_rank"] == 0 and f["host_lead_s"] == pytest.approx(4.29)
    same = F.step_facts(tl.assign(stream=7), None)
    assert not same["nccl_own_stream"] and same["host_lead_rank"] is None


def test_timeline_caption_explains_an_axis_that_starts_before_zero(tmp_path):
    m, t = gpu_results((1, 2))
    t["timeline_host"] = pd.DataFrame(
        [
            {
                "world_size": 2,
                "rank": r,
                "thread": "Master thread",
                "kind": "phase",
                "name": "forward",
                "start_s": a,
                "end_s": 0.01,
            }
            for r, a in ((0, -0.2), (1, -4.2909))
        ]
    )
    rs = results.load_set(0, write_results(tmp_path / "lead", m, t))
    text = _caption(rs, "timeline")
    assert "The time axis starts at -4291 ms: rank 1's host began the step 4.29 s before" in text


def test_throughput_caption_says_only_what_is_drawn(tmp_path):
    one = _set(tmp_path, "one", gpu_results((1,), busy_wait=False), shared=False)
    text = _caption(one, "throughput")
    assert "Right: no weak-scaling efficiency (only world size 1, the baseline, was measured)." in text
    assert "claim C6" not in text and "error bars" not in text
    assert "ideal linear scaling" not in text  # one world size: no line to draw
    cpu = _set(tmp_path, "cpu", cpu_results((1, 2)))
    text = _caption(cpu, "throughput")
    assert "claim C6" not in text and "CPU ranks: not evidence for the GPU claim" in text
    gpu = _set(tmp_path, "gpu", gpu_results((1, 2, 4)), shared=False)
    from dnabert_scaling import checker
    from test_report import CLAIMS_FILE

    checker.write_verdicts(checker.check_results(gpu.path, CLAIMS_FILE), gpu.path)
    gpu = results.load_set(0, gpu.path)
    assert "and the bound of claim C6 (" in _caption(gpu, "throughput")
    assert "dashed: the bound of claim C5 (" in _caption(gpu, "overlap")


def test_busy_wait_caption_says_the_ratios_as_measured_and_the_shared_benchmark(tmp_path):
    rs = _set(tmp_path, "rehearsal", gpu_results((1, 2, 4)), shared=True)
    rs.metrics["world_sizes"]["2"]["busy_wait"]["ratio"] = 0.99
    rs.metrics["world_sizes"]["2"]["traced"]["gpu"]["busy_wait"]["ratio"] = 0.99
    items = [(n, rs.busy_wait(n)) for n in rs.world_sizes if rs.busy_wait(n)]
    text = A.busy_wait_caption(rs, items)
    assert " 2 GPUs" not in text and " 4 GPUs" not in text
    assert "at 2 ranks on 1 shared GPU the AllReduce kernels run 0.99x" in text
    assert "At world size 2 the kernel time is no longer than the transfer time" in text
    assert "at world size 4 the excess is 150% of the transfer time" in text
    assert "The bus-bandwidth benchmark at world sizes 2, 4 ran as a rehearsal" in text
    gpu = _set(tmp_path, "gpu", gpu_results((1, 2)), shared=False)
    text = A.busy_wait_caption(gpu, [(2, gpu.busy_wait(2))])
    assert "at 2 GPUs" in text and "rehearsal" not in text


def test_repeated_fallback_heads_are_said_once_with_a_count():
    items = [D.Markup("<b>Deviation</b>: a"), D.Markup("<b>Synthetic data</b>: b"), D.Markup("<b>Deviation</b>: c")]
    assert D._heads(items) == ["Deviation (2)", "Synthetic data"]


def test_zoom_timeline_advice_follows_the_tracer(tmp_path):
    scorep = _set(tmp_path, "scorep", gpu_results((1, 2), tracer="scorep"), shared=False)
    html = timeline.zoom_timeline_html(scorep)
    assert "opens in Vampir" in html and "Perfetto" not in html and "Kineto" not in html
    assert 'id="ds-zoom-0-range">0.000 to ' in html  # the shown range is said without the script
    torch = _set(tmp_path, "torch", gpu_results((1, 2), tracer="torch"), shared=False)
    assert "Kineto traces open in Perfetto" in timeline.zoom_timeline_html(torch)
