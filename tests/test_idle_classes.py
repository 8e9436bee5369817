"""Idle breakdown, launch rate and kernel classes on hand-made traces worked out by hand."""

import numpy as np
import pytest

from dnabert_scaling.analysis import idle, kernel_classes, partition
from dnabert_scaling.analysis.attribution import HostTimeline, attribute
from dnabert_scaling.analysis.metrics import analyze_trace
from test_analysis import make_trace

NS = 1e-9
# two measured steps; host phases [0, 100) and [100, 200)
PHASES = [("step", 0, 100), ("forward", 0, 100), ("step", 100, 200), ("forward", 100, 200)]
# name, stream, kind, category, collective, start, end, correlation, launch time
GPU = [
    ("k1", 7, "kernel", "compute", None, 10, 20, 1, 5),
    ("k2", 7, "kernel", "compute", None, 30, 40, 2, 25),  # gap [20,30): host wait 5, then launched: kernel wait 5
    ("k3", 7, "kernel", "compute", None, 50, 60, 3, 45),  # gap [40,50): the same
    ("memcpy", 7, "memcpy", "memory", None, 70, 75, 4, 0),  # its launch is dropped: gap [60,70) is 'other'
    ("k4", 7, "kernel", "compute", None, 110, 120, 5, 102),  # gap [75,110): host wait 27, kernel wait 8
]


def _trace():
    return make_trace(gpu_rows=GPU, phases=PHASES, drop_launch=3)


def test_idle_breakdown_by_hand():
    tr = _trace()
    gpu, host = tr.gpu, tr.host
    att = attribute(gpu, host)
    windows = partition.step_windows(gpu, att, 2)
    # step 0 owns [10, 110), step 1 [110, 120)
    assert list(windows[0]) == [10, 110] and list(windows[1]) == [110, 120]
    parts = idle.idle_breakdown(gpu, att, windows)
    assert list(parts["host"]) == [5 + 5 + 27, 0]
    assert list(parts["kernel"]) == [5 + 5 + 8, 0]
    assert list(parts["other"]) == [10, 0]
    table = partition.rank_step_table(gpu, att, windows)
    # the three parts add up to the partition's idle time
    np.testing.assert_allclose(parts["host"] + parts["kernel"] + parts["other"], table["idle_s"] / NS, atol=1e-6)


def test_idle_without_launch_times_is_unknown_not_zero():
    # no activity linked to its launch (time-window attribution only): the split cannot be
    # measured, so it is NaN (null in metrics.json), not a host wait of 0
    tr = make_trace(gpu_rows=GPU, phases=PHASES, with_correlation=False)
    att = attribute(tr.gpu, tr.host, prefer="time-window")
    windows = partition.step_windows(tr.gpu, att, 2)
    parts = idle.idle_breakdown(tr.gpu, att, windows)
    for part in ("host", "kernel", "other"):
        assert np.isnan(parts[part]).all()
    cols = idle.step_columns(tr.gpu, tr.host, HostTimeline.from_host(tr.host), att, windows)
    assert cols[["idle_host_wait_s", "idle_kernel_wait_s", "idle_other_s"]].isna().all().all()
    assert (cols["launches"] > 0).all()  # the launch rate does not need the link
    # one linked activity is enough for a split (the unlinked gaps are 'other')
    att.launch_ns[1] = 25  # k2, launched at 25, ends the gap [20, 30)
    parts = idle.idle_breakdown(tr.gpu, att, windows)
    assert (parts["host"][0], parts["kernel"][0], parts["other"][0]) == (5, 5, 55)


def test_stream_order_launch_times_give_the_same_breakdown():
    # without correlation ids the kernels are paired with their launches by stream order; the
    # memcpy (no stream reference) has no launch time, as in the correlated trace with it dropped
    tr = make_trace(gpu_rows=GPU, phases=PHASES, with_correlation=False)
    att = attribute(tr.gpu, tr.host)
    assert att.method_summary() == {"stream-order": 4, "time-window": 1}
    parts = idle.idle_breakdown(tr.gpu, att, partition.step_windows(tr.gpu, att, 2))
    assert list(parts["host"]) == [37, 0] and list(parts["kernel"]) == [18, 0] and list(parts["other"]) == [10, 0]


def test_launch_rate_by_hand():
    tr = _trace()
    rate = idle.launch_rate(tr.host, HostTimeline.from_host(tr.host))
    # launch calls at 5, 25, 45 in step 0 (host window [0, 100)), 102 in step 1; each lasts 1 ns
    assert list(rate["launches"]) == [3, 1]
    assert list(rate["call_ns"]) == [1.0, 1.0]
    assert list(rate["host_ns"]) == [100.0, 100.0]


def test_metrics_carry_idle_stats_and_notes():
    res = analyze_trace(_trace(), 1, 2, "hand")
    g = res.metrics
    assert g.idle_host_wait_s.max == pytest.approx(37 * NS)
    assert g.idle_kernel_wait_s.max == pytest.approx(18 * NS)
    assert g.idle_other_s.max == pytest.approx(10 * NS)
    assert g.launches_per_step.median == 2
    assert g.host_s_per_launch.max == pytest.approx(100 / 1 * NS)
    assert g.host_s_per_launch.min == pytest.approx(100 / 3 * NS)
    assert any("'other'" in n and "15.4%" in n for n in g.notes)  # 10 of 65 ns


@pytest.mark.parametrize(
    "name, cls",
    [
        ("nvjet_sm90_tst_192x96_64x5_1x2_h_bz_NTT", "GEMM"),
        ("cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x1_tn_align2>", "GEMM"),
        ("ampere_sgemm_128x64_tn", "GEMM"),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0", "attention"),
        (
            "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t> >",
            "attention",
        ),
        ("cudnn::fusion::compute_dot_do_o_specialized<true, 64>", "attention"),
        ("at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>", "normalisation"),
        (
            "at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, float, 32u, 32u, 256u, false>",
            "normalisation",
        ),
        ("(anonymous namespace)::softmax_warp_forward<float, float, float, 1, true, false>", "reduction/softmax"),
        ("at::native::reduce_kernel<128, 4, at::native::ReduceOp<float> >", "reduction/softmax"),
        ("at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::TensorListMetadata<4> >", "optimizer"),
        (
            "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >",
            "elementwise",
        ),
        ("at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>", "elementwise"),
        (
            "at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::OpaqueType<2u>, unsigned int, 4, 64, 64>",
            "elementwise",
        ),
        ("at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>", "other"),
    ],
)
def test_name_class(name, cls):
    assert kernel_classes.name_class(name) == cls


def test_classify_uses_kind_collective_and_optimizer_phase():
    from test_analysis import make_trace as full_trace

    tr = full_trace()
    att = attribute(tr.gpu, tr.host)
    got = dict(zip(tr.gpu["name"] + "@" + tr.gpu["start_ns"].astype(str), kernel_classes.classify(tr.gpu, att)))
    assert got["memcpy@5"] == "copy/memset"
    assert got["ar@60"] == got["ar@185"] == "nccl:AllReduce"
    assert got["k3@112"] == got["k6@232"] == "optimizer"  # launched in ds:optimizer
    assert got["k1@10"] == "other"  # a name no rule knows, launched in forward


def test_class_table_sums_to_kernel_time():
    from test_analysis import make_trace as full_trace

    res = analyze_trace(full_trace(), 1, 2, "hand")
    classes = {c["class"]: c for c in res.metrics.to_json()["kernel_classes"]}
    assert sum(c["share"] for c in classes.values()) == pytest.approx(1.0)
    # measured steps: AllReduce 50 + 45 ns over 2 samples; optimizer kernels k3 + k6 = 16 ns
    assert classes["nccl:AllReduce"]["sum_s_per_step"] == pytest.approx(95 / 2 * NS)
    assert classes["optimizer"]["sum_s_per_step"] == pytest.approx(16 / 2 * NS)
    assert classes["copy/memset"]["count_per_step"] == pytest.approx(0.5)
    assert list(res.kernel_classes.columns) == [
        "world_size",
        "kernel_class",
        "sum_ns",
        "count",
        "sum_s_per_step",
        "count_per_step",
        "share",
    ]


def _two_ranks(shift_ar_ns: int, fmt: str = "kineto"):
    """Rank 1 = rank 0 of the hand-made trace with its AllReduce kernels started ``shift_ar_ns`` later."""
    from test_analysis import make_trace as full_trace
    from dnabert_scaling.traces.model import Trace

    parts = []
    for r in (0, 1):
        t = full_trace()
        t.gpu["rank"] = np.int32(r)
        t.host["rank"] = np.int32(r)
        if r == 1:
            ar = (t.gpu["name"] == "ar").to_numpy()
            t.gpu.loc[ar, "start_ns"] += shift_ar_ns
            t.gpu.loc[ar, "end_ns"] += shift_ar_ns
        meta = {**t.ranks[0], "rank": r, "world_size": 2, "format": fmt}
        parts.append(Trace(t.gpu, t.host, {r: meta}))
    return Trace.concat(parts)


def test_allreduce_start_skew_and_late_rank():
    res = analyze_trace(_two_ranks(7), 2, 2, "hand")
    sk = res.metrics.to_json()["rank_skew"]
    # one AllReduce per measured step on each rank; rank 1 starts both 7 ns later
    assert sk["clock"] == "common" and sk["buckets"] == 2 and sk["steps_skipped"] == 0
    assert sk["allreduce_start_skew_s"]["median"] == pytest.approx(7 * NS)
    assert sk["late_rank_share"] == {"0": 0.0, "1": 1.0}
    per_rank = {p.rank: p for p in res.metrics.per_rank}
    assert set(per_rank) == {0, 1} and per_rank[1].exposed_comm_s > per_rank[0].exposed_comm_s


def test_skew_without_a_common_clock_is_per_rank_and_says_so():
    res = analyze_trace(_two_ranks(7, fmt="otf2"), 2, 2, "hand")
    sk = res.metrics.to_json()["rank_skew"]
    # both ranks' step windows start at the same offset, so the relative skew is the same 7 ns here
    assert sk["clock"] == "per-rank step start"
    assert sk["allreduce_start_skew_s"]["median"] == pytest.approx(7 * NS)


def test_one_rank_has_no_skew():
    from test_analysis import make_trace as full_trace

    assert analyze_trace(full_trace(), 1, 2, "hand").metrics.rank_skew is None


def test_the_three_nccl_kernels_of_a_ddp_step_are_named_apart():
    """Per step DDP runs one f32 AllReduce per gradient bucket, one u32 AllReduce (the used-parameter
    map of find_unused_parameters) and one Broadcast (broadcast_buffers): the ranking and the kernel
    classes name them apart, and the AllReduce metrics (C2-C4) count the gradient sync alone."""
    from test_analysis import GPU

    grad = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    rows = [(grad, *g[1:]) if g[0] == "ar" else g for g in GPU]
    rows += [  # step 0: the map (4 ns) and the broadcast (3 ns), on the NCCL stream before the buckets
        ("ncclDevKernel_AllReduce_Sum_u32_RING_LL", 20, "kernel", "nccl", "AllReduce", 40, 44, 30, 31),
        ("ncclDevKernel_Broadcast_RING_LL", 20, "kernel", "nccl", "Broadcast", 12, 15, 31, 3),
    ]
    tr = make_trace(gpu_rows=rows)
    att = attribute(tr.gpu, tr.host)
    ranking = partition.ranking(tr.gpu, att).set_index("activity")
    assert ranking.loc["nccl:AllReduce", "count"] == 2 and ranking.loc["nccl:AllReduce", "sum_ns"] == 50 + 45
    assert ranking.loc["nccl:AllReduce(int)", "count"] == 1 and ranking.loc["nccl:Broadcast", "count"] == 1
    classes = set(kernel_classes.classify(tr.gpu, att))
    assert {"nccl:AllReduce", "nccl:AllReduce(int)", "nccl:Broadcast"} <= classes
    steps = partition.rank_step_table(tr.gpu, att, partition.step_windows(tr.gpu, att, 2))
    assert steps["allreduce_kernels"].tolist() == [1, 1]  # the gradient sync only
    assert steps["allreduce_kernel_s"].tolist() == pytest.approx([50e-9, 45e-9])
    assert steps["nccl_kernels"].tolist() == [3, 1]  # every NCCL kernel still counts as communication
    from dnabert_scaling.traces.classify import NCCL_ROLES, is_integer_collective

    assert "gradient sync" in NCCL_ROLES["AllReduce"] and "find_unused_parameters" in NCCL_ROLES["AllReduce(int)"]
    assert is_integer_collective("ncclKernel_AllReduce_RING_LL_Sum_uint32_t")
    assert not is_integer_collective("ncclKernel_AllReduce_RING_LL_Sum_float") and not is_integer_collective(grad)


def test_a_copy_that_runs_before_the_step_before_has_finished_does_not_start_the_window():
    """Ranks time-slicing one GPU: step 1's input copy (its own stream) runs at 15, while step 0's
    kernels run until 60. The window of step 1 starts at its first kernel (70), not at the copy, so
    step 0 keeps its kernels; a copy that starts after the step before is done still starts its step."""
    phases = [("step", 0, 10), ("forward", 0, 10), ("step", 10, 20), ("forward", 10, 20), ("step", 20, 30)]
    phases += [("forward", 20, 30)]
    rows = [
        ("k0", 7, "kernel", "compute", None, 5, 60, 1, 1),
        ("copy1", 13, "memcpy", "memory", None, 15, 18, 2, 12),
        ("k1", 7, "kernel", "compute", None, 70, 80, 3, 14),
        ("copy2", 13, "memcpy", "memory", None, 85, 88, 4, 22),
        ("k2", 7, "kernel", "compute", None, 90, 95, 5, 24),
    ]
    tr = make_trace(gpu_rows=rows, phases=phases)
    ws, we, valid = partition.step_windows(tr.gpu, attribute(tr.gpu, tr.host), 3)
    assert valid.all()
    assert list(ws) == [5, 70, 85] and list(we) == [70, 85, 95]
