"""The per-step metrics on a hand-made trace whose every figure is worked out by hand.

One rank, a warm-up step and two measured steps, compute on stream 7 and AllReduce on stream 20
(times in ns; see the comments for the arithmetic).
"""

import numpy as np
import pytest

from dnabert_scaling.analysis.attribution import HostTimeline, agreement, attribute, validate
from dnabert_scaling.analysis.metrics import analyze_trace, stat
from dnabert_scaling.analysis import partition
from dnabert_scaling.traces.model import GPU_SCHEMA, HOST_SCHEMA, Trace, make_frame

PHASES = [  # name, start, end
    ("warmup", -100, 0),
    ("step", 0, 100),
    ("forward", 0, 30),
    ("backward", 30, 80),
    ("optimizer", 80, 100),
    ("step", 100, 200),
    ("forward", 100, 130),
    ("backward", 130, 180),
    ("optimizer", 180, 200),
]
# name, stream, kind, category, collective, start, end, correlation, launch time
GPU = [
    ("k0", 7, "kernel", "compute", None, -50, -20, 10, -90),  # warm-up: not measured
    ("memcpy", 7, "memcpy", "memory", None, 5, 8, 11, 2),  # step 0, forward
    ("k1", 7, "kernel", "compute", None, 10, 40, 12, 5),  # step 0, forward
    ("k2", 7, "kernel", "compute", None, 45, 90, 13, 35),  # step 0, backward
    ("ar", 20, "kernel", "nccl", "AllReduce", 60, 110, 14, 50),  # step 0, backward (AllReduce)
    ("k3", 7, "kernel", "compute", None, 112, 120, 15, 85),  # step 0, optimizer
    ("k4", 7, "kernel", "compute", None, 125, 150, 16, 105),  # step 1, forward
    ("k5", 7, "kernel", "compute", None, 150, 190, 17, 135),  # step 1, backward
    ("ar", 20, "kernel", "nccl", "AllReduce", 185, 230, 18, 160),
    ("k6", 7, "kernel", "compute", None, 232, 240, 19, 185),  # step 1, optimizer
]


def make_trace(with_correlation=True, drop_launch=None, gpu_rows=None, phases=None):
    """The trace of GPU (or ``gpu_rows``, same columns) and PHASES (or ``phases``); ``drop_launch``:
    the row whose launch call is left out of the host table."""
    GPU = gpu_rows if gpu_rows is not None else globals()["GPU"]  # noqa: N806
    PHASES = phases if phases is not None else globals()["PHASES"]  # noqa: N806
    gpu = make_frame(
        {
            "rank": [0] * len(GPU),
            "device": [0] * len(GPU),
            "stream": [g[1] for g in GPU],
            "kind": [g[2] for g in GPU],
            "name": [g[0] for g in GPU],
            "start_ns": [g[5] for g in GPU],
            "end_ns": [g[6] for g in GPU],
            "category": [g[3] for g in GPU],
            "collective": [g[4] if g[4] else np.nan for g in GPU],
            "correlation": ([g[7] for g in GPU], [not with_correlation] * len(GPU)),
        },
        GPU_SCHEMA,
    )
    launches = [(g[8], g[1], g[7], "cudaMemcpyAsync" if g[2] == "memcpy" else "cudaLaunchKernel") for g in GPU]
    if drop_launch is not None:
        launches = [x for i, x in enumerate(launches) if i != drop_launch]
    rows = [("phase", n, s, e, None, None) for n, s, e in PHASES] + [
        ("launch", api, t, t + 1, st, c) for t, st, c, api in launches
    ]
    host = make_frame(
        {
            "rank": [0] * len(rows),
            "thread": ["main"] * len(rows),
            "kind": [r[0] for r in rows],
            "name": [r[1] for r in rows],
            "start_ns": [r[2] for r in rows],
            "end_ns": [r[3] for r in rows],
            "stream": ([r[4] or 0 for r in rows], [r[4] is None for r in rows]),
            "correlation": ([r[5] or 0 for r in rows], [r[5] is None or not with_correlation for r in rows]),
        },
        HOST_SCHEMA,
    )
    meta = {
        "source": "hand-made",
        "format": "kineto",
        "tool": "test",
        "tool_version": "0",
        "clock_resolution_hz": 1e9,
        "rank": 0,
        "world_size": 1,
        "streams": [7, 20],
        "warnings": [],
    }
    return Trace(gpu, host, {0: meta})


def test_attribution_by_correlation():
    tr = make_trace()
    att = attribute(tr.gpu, tr.host)
    names = tr.gpu["name"].tolist()
    got = {(n, int(s), int(p)) for n, s, p in zip(names, att.step, att.phase)}
    # phase codes: 0 forward, 1 backward, 2 optimizer
    assert ("k0", -1, 3) in got  # warm-up kernel: not attributed
    assert {("memcpy", 0, 0), ("k1", 0, 0), ("k2", 0, 1), ("k3", 0, 2), ("k4", 1, 0), ("k5", 1, 1), ("k6", 1, 2)} <= got
    assert sorted((s, p) for n, s, p in got if n == "ar") == [(0, 1), (1, 1)]
    assert att.main_method == "correlation"


def test_work_launched_before_recording_is_in_no_measured_step():
    """A trace whose recording began at the first measured step: the last warm-up step's kernels
    (an NCCL AllReduce among them) still run into step 0, but their launches are not in the trace.
    Their correlation ids are older than every recorded launch: in no measured step (the time
    window alone would put them in step 0)."""
    leftover = [
        ("w1", 7, "kernel", "compute", None, 1, 3, 3, -30),
        ("w_ar", 20, "kernel", "nccl", "AllReduce", 1, 9, 4, -25),
        ("w2", 7, "kernel", "compute", None, 3, 5, 5, -20),
    ]
    rows = leftover + GPU[1:]
    tr = make_trace(gpu_rows=rows)
    recorded = tr.host["correlation"].notna() & ~tr.host["correlation"].isin([3, 4, 5])  # launched before recording
    tr = Trace(tr.gpu, tr.host[recorded | (tr.host["kind"] != "launch")].reset_index(drop=True), tr.meta)
    att = attribute(tr.gpu, tr.host)
    names = tr.gpu["name"].tolist()
    by_name = {n: (int(s), str(m)) for n, s, m in zip(names, att.step, att.method) if n.startswith("w")}
    assert by_name == {"w1": (-1, "before-recording"), "w_ar": (-1, "before-recording"), "w2": (-1, "before-recording")}
    assert any("3 GPU activities launched before recording began" in n for n in att.notes)
    window = attribute(tr.gpu, tr.host, prefer="time-window")  # what the old fallback did
    assert {int(s) for n, s in zip(names, window.step) if n.startswith("w")} == {0}
    # step 0 keeps exactly its own work: one AllReduce per step, as the steps after it
    ar_steps = sorted(int(s) for n, s in zip(names, att.step) if n in ("ar", "w_ar"))
    assert ar_steps == [-1, 0, 1]
    # without a correlation id (CUPTI gives 0 or none to work launched before it was enabled), the
    # stream order tells: each ran on its stream before the first kernel of step 0 there
    gpu = tr.gpu.copy()
    gpu["correlation"] = gpu["correlation"].mask(gpu["name"].str.startswith("w"))
    att3 = attribute(gpu, tr.host)
    assert {n: int(s) for n, s in zip(names, att3.step) if n.startswith("w")} == {"w1": -1, "w_ar": -1, "w2": -1}
    assert {str(m) for n, m in zip(names, att3.method) if n.startswith("w")} == {"before-recording"}
    # an activity whose launch is missing for another reason (a newer id, after step 0's first
    # kernel on its stream) still gets the time window
    tr2 = make_trace(drop_launch=3)
    att2 = attribute(tr2.gpu, tr2.host)
    assert att2.method[3] == "time-window" and int(att2.step[3]) == 0


def test_partition_per_step_by_hand():
    tr = make_trace()
    att = attribute(tr.gpu, tr.host)
    table = partition.rank_step_table(tr.gpu, att, partition.step_windows(tr.gpu, att, 2))
    s0, s1 = table.iloc[0], table.iloc[1]
    ns = 1e-9
    # step 0 window [5, 125): compute 30+45+8, exposed comm [90,110), memcpy [5,8), idle 120-106
    assert s0.step_time_s == pytest.approx(120 * ns)
    assert s0.compute_s == pytest.approx(83 * ns)
    assert s0.exposed_comm_s == pytest.approx(20 * ns)
    assert s0.exposed_memcpy_s == pytest.approx(3 * ns)
    assert s0.idle_s == pytest.approx(14 * ns)
    assert s0.overlap_ratio == pytest.approx(30 / 50)
    assert s0.allreduce_kernel_s == pytest.approx(50 * ns)
    assert s0.backward_gpu_s == pytest.approx(45 * ns)
    assert s0.forward_gpu_s == pytest.approx(30 * ns)
    assert s0.optimizer_gpu_s == pytest.approx(8 * ns)
    assert s0.allreduce_to_backward == pytest.approx(50 / 45)
    assert s0.nccl_kernels == 1
    # step 1 window [125, 240): compute 25+40+8, exposed comm [190,230), idle 115-113
    assert s1.step_time_s == pytest.approx(115 * ns)
    assert s1.compute_s == pytest.approx(73 * ns)
    assert s1.exposed_comm_s == pytest.approx(40 * ns)
    assert s1.idle_s == pytest.approx(2 * ns)
    assert s1.overlap_ratio == pytest.approx(5 / 45)
    total = table.compute_s + table.exposed_comm_s + table.exposed_memcpy_s + table.idle_s
    np.testing.assert_allclose(total, table.step_time_s, rtol=0, atol=1e-15)


def test_stream_order_reproduces_correlation():
    truth = attribute(make_trace().gpu, make_trace().host)
    tr = make_trace(with_correlation=False)
    att = attribute(tr.gpu, tr.host)
    assert att.method_summary() == {"stream-order": 9, "time-window": 1}  # the memcpy call has no stream ref use
    kernels = (tr.gpu["kind"] == "kernel").to_numpy()
    assert np.array_equal(att.step[kernels], truth.step[kernels])
    assert np.array_equal(att.phase[kernels], truth.phase[kernels])


def test_stream_order_falls_back_when_counts_disagree():
    tr = make_trace(with_correlation=False, drop_launch=4)  # lose the first AllReduce launch
    att = attribute(tr.gpu, tr.host)
    assert any("stream 20" in n and "time-window" in n for n in att.notes)
    ar = (tr.gpu["name"] == "ar").to_numpy()
    assert set(att.method[ar]) == {"time-window"}
    # the time-window method places the first AllReduce (GPU start 60) in the phase running then
    assert int(att.step[ar][0]) == 0 and int(att.phase[ar][0]) == 1


def test_time_window_agreement_is_measured():
    tr = make_trace()
    truth = attribute(tr.gpu, tr.host)
    window = attribute(tr.gpu, tr.host, prefer="time-window")
    dur = (tr.gpu["end_ns"] - tr.gpu["start_ns"]).to_numpy()
    agree = agreement(truth, window, dur)
    # time-window misplaces k3 (GPU start 112 falls in step 1's forward) and the second AllReduce
    # (GPU start 185 falls in step 1's optimizer); k6 (GPU 232, after the host's last step ended
    # at 200) lands in the extended last window, in the optimizer: 7 of 9 measured activities agree
    assert agree["n"] == 9
    assert agree["activities"] == pytest.approx(7 / 9)


def test_the_score_p_methods_are_validated_on_the_work_a_score_p_trace_would_pair():
    """A Kineto trace whose recording began at the first measured step holds kernels without launch records on
    every stream. Validated on it as it is, stream order finds the counts disagree and falls back to the time
    window: its "agreement" would be the time window's. ``validate`` leaves out what was launched before
    recording (a Score-P trace records every launch) and says how much the method placed itself."""
    leftover = [("w1", 7, "kernel", "compute", None, 1, 3, 3, -30), ("w_ar", 20, "kernel", "nccl", "AllReduce", 1, 9, 4, -25)]
    tr = make_trace(gpu_rows=leftover + GPU[1:])
    recorded = ~tr.host["correlation"].isin([3, 4]) | (tr.host["kind"] != "launch")
    tr = Trace(tr.gpu, tr.host[recorded].reset_index(drop=True), tr.ranks)
    truth = attribute(tr.gpu, tr.host)
    dur = (tr.gpu["end_ns"] - tr.gpu["start_ns"]).to_numpy()
    as_it_is = attribute(tr.gpu, tr.host, prefer="stream-order")
    assert "stream-order" not in set(as_it_is.method)  # every stream's counts disagree: all by time window
    tl = HostTimeline.from_host(tr.host)
    order = validate(truth, tr.gpu, tr.host, tl, "stream-order", dur)
    # the memcpy (no stream reference on its call: time window, 3 ns of the 254 measured) is all stream order leaves to it
    assert order["activities"] == 1.0 and order["placed"] == pytest.approx(251 / 254)
    window = validate(truth, tr.gpu, tr.host, tl, "time-window", dur)
    assert window["placed"] == 1.0 and window["activities"] == pytest.approx(7 / 9)
    m = analyze_trace(tr, 1, 2, "hand").metrics
    assert m.phase_validation["stream-order"].placed == pytest.approx(251 / 254)


def test_analyze_trace_metrics_and_ranking():
    res = analyze_trace(make_trace(), 1, 2, "hand")
    m = res.metrics
    assert m.allreduce_own_stream is True
    assert m.allreduce_streams == [20] and m.compute_streams == [7]
    assert m.ranking[0].activity == "nccl:AllReduce"
    assert m.ranking[0].sum_s_per_step == pytest.approx((50 + 45) / 2 * 1e-9)
    assert m.step_time_s.median == pytest.approx(117.5e-9)
    assert m.phase_method == "correlation"
    assert m.phase_validation["stream-order"].activities == 1.0
    assert m.phase_validation["time-window"].activities == pytest.approx(7 / 9)
    assert res.problems == []
    assert len(res.timeline) > 0 and set(res.timeline_phases["name"]) == {"step", "forward", "backward", "optimizer"}


def test_a_zero_length_step_range_is_no_measured_step_and_is_reported():
    """A ``ds:step`` range whose start is its end cannot hold the step's work. The last one's host
    window was empty, so its work fell in no step and the step table silently lost it; one before the
    last took the work up to the next step's start. Either way the step is left out, and said to be."""
    last = [("step", 100, 100) if p == ("step", 100, 200) else p for p in PHASES]
    res = analyze_trace(make_trace(phases=last), 1, 2, "hand")
    assert res.steps["step"].tolist() == [0] and res.metrics.step_time_s.n == 1
    assert res.steps_complete is False
    assert res.problems == [
        "rank 0: 1 of the 2 ds:step ranges have zero length (steps 1): such a range cannot hold a step's work "
        "and owns no host time, so the step is not measured (work the step launched before its range counts "
        "in the step before)",
        "rank 0: 1 of the 2 measured steps the trace marks hold no GPU activity (steps 1): left out of the per-step figures",
    ]
    first = [("step", 0, 0) if p == ("step", 0, 100) else p for p in PHASES]
    res = analyze_trace(make_trace(phases=first), 1, 2, "hand")
    assert res.steps["step"].tolist() == [1] and res.steps_complete is False
    assert res.steps["step_time_s"].iloc[0] == pytest.approx(115e-9)  # step 1 keeps its own window, no more
    assert [p.split(" (steps ")[0] for p in res.problems] == [
        "rank 0: 1 of the 2 ds:step ranges have zero length",
        "rank 0: 1 of the 2 measured steps the trace marks hold no GPU activity",
    ]
    # a step of proper length without GPU work is left out of the table too, and said to be
    res = analyze_trace(make_trace(gpu_rows=GPU[:6]), 1, 2, "hand")
    assert res.steps["step"].tolist() == [0] and res.steps_complete is False
    assert res.problems == [
        "rank 0: 1 of the 2 measured steps the trace marks hold no GPU activity (steps 1): left out of the per-step figures"
    ]


def test_stat():
    s = stat([1.0, 2.0, 3.0, float("nan")])
    assert s.median == 2.0 and s.n == 3 and s.min == 1.0 and s.to_json()["p90"] == pytest.approx(2.8)
    assert stat([]) is None and stat([float("nan")]) is None


def test_a_bucket_hook_a_summary_did_not_record_is_a_deviation_all_the_same():
    """Runs recorded before the bucket hook's deviation was written name the hook only in their DDP bucket
    record: analyze lists the deviation for them, once, and never for a run without the hook."""
    from types import SimpleNamespace

    from dnabert_scaling.analysis.metrics import _deviations
    from dnabert_scaling.provenance import BUCKET_HOOK_DEVIATION

    old = SimpleNamespace(summary={"deviations": ["bf16"], "ddp_buckets": {"comm_hook": "ds:bucket + torch allreduce_hook"}})
    new = SimpleNamespace(summary={"deviations": ["bf16", BUCKET_HOOK_DEVIATION], "ddp_buckets": {"comm_hook": "ds:bucket"}})
    plain = SimpleNamespace(summary={"deviations": ["bf16"], "ddp_buckets": {"comm_hook": None}})
    damaged = SimpleNamespace(summary={"deviations": ["bf16"], "ddp_buckets": "?"})
    derived = _deviations([old])
    assert derived[1] == "bf16" and derived[0].startswith(BUCKET_HOOK_DEVIATION) and "predates" in derived[0]
    assert _deviations([old, new]) == [BUCKET_HOOK_DEVIATION, "bf16"]
    assert _deviations([plain, damaged]) == ["bf16"]
