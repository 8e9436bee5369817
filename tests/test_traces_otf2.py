"""OTF2 reading: the real Score-P samples and a hand-built Score-P 9 archive with known truth."""

import numpy as np
import otf2
import pandas as pd
import pytest

from conftest import DATA
from dnabert_scaling.traces import NoGpuActivityError, read_trace
from dnabert_scaling.traces.model import validate
from dnabert_scaling.traces.otf2_reader import pair_enter_leave, ticks_to_ns
from tracegen import EXPECTED, KERNELS, LAUNCHES, LAUNCH_STREAMS, PHASES, write_ground_truth

CASITA = DATA / "traces" / "scorep-cuda-2rank"
PINGPONG = DATA / "traces" / "scorep-mpi-pingpong"


@pytest.fixture(scope="module")
def casita():
    return read_trace(CASITA)


def test_casita_two_mpi_ranks_from_location_groups(casita):
    validate(casita)
    assert casita.rank_ids == [0, 1]
    for r in (0, 1):
        m = casita.ranks[r]
        assert m["format"] == "otf2" and m["tool"] == "Score-P" and m["tool_version"] == "1.4-trunk"
        assert m["world_size"] == 2
        assert m["clock_resolution_hz"] == 10**9
        assert m["streams"] == [7] and m["devices"] == [0]
        assert m["layout"].startswith("scorep<=8")
        # every location of the rank is accounted for, and all of them were read
        assert [(l["name"], l["read"]) for l in m["locations"]] == [
            ("Master thread", True),
            ("OMP thread 1", True),
            ("CUDA[0:7]", True),
        ]
    assert casita.event_count() == 2816


def test_casita_kernels_and_copies_per_gpu(casita):
    g = casita.gpu
    for r in (0, 1):
        gr = g[g["rank"] == r]
        assert int((gr["kind"] == "kernel").sum()) == 20
        assert int((gr["kind"] == "memcpy").sum()) == 43
        # mangled _Z13jacobi_kernelPKfPfiiS1_ / _Z11copy_kernelPfPKfii are demangled, parameters dropped
        assert gr.loc[gr["kind"] == "kernel", "name"].value_counts().to_dict() == {"jacobi_kernel": 10, "copy_kernel": 10}
        cp = gr[gr["kind"] == "memcpy"]
        assert cp["name"].value_counts().to_dict() == {"Memcpy HtoD": 22, "Memcpy DtoH": 21}
        assert (cp["end_ns"] >= cp["start_ns"]).all()
        assert set(gr["category"].astype(str)) == {"compute", "memory"}
    first = g[(g["rank"] == 0) & (g["kind"] == "memcpy")].iloc[0]
    assert (first["start_ns"], first["end_ns"], first["msg_bytes"]) == (9604711589353812, 9604711607924324, 31899648)


def test_casita_launches_carry_their_stream(casita):
    h = casita.host
    for r in (0, 1):
        hr = h[h["rank"] == r]
        assert list(hr["kind"].unique()) == ["launch"]
        kl = hr[hr["name"] == "cuLaunchKernel"]
        assert len(kl) == 20
        assert kl["stream"].tolist() == [7] * 20
        assert set(hr["thread"]) == {"Master thread"}
        # the other launch rows are the copy calls (cuMemcpy*), kept for attribution
        assert all(n.startswith("cuMemcpy") or n.startswith("cuMemset") for n in set(hr["name"]) - {"cuLaunchKernel"})


def test_mpi_pingpong_without_gpu_is_refused():
    with pytest.raises(NoGpuActivityError, match="no GPU streams in this trace") as exc:
        read_trace(PINGPONG / "traces.otf2")
    assert "scorep-mpi-pingpong/traces.otf2" in str(exc.value)


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    d = write_ground_truth(tmp_path_factory.mktemp("gt") / "scorep-rank5")
    return d, read_trace(d)


def test_scorep9_layout_ground_truth_tables(truth):
    d, tr = truth
    validate(tr)
    assert tr.rank_ids == [5]  # from the directory name: mpp=none traces do not know their rank
    m = tr.meta
    assert m["world_size"] is None and m["layout"] == "scorep9" and m["clock_resolution_hz"] == 2 * 10**9
    assert m["excluded_gpu_regions"] == {"COMPUTE IDLE": 1}
    assert any("metric location" in w and "not read" in w for w in m["warnings"])
    g = tr.gpu
    kern = g[g["kind"] == "kernel"]
    want = sorted((s, n.replace("void ", "").split("(")[0], a, b) for s, n, a, b in KERNELS)
    got = sorted(zip(kern["stream"], kern["name"], kern["start_ns"], kern["end_ns"]))
    assert got == want
    assert kern.loc[kern["category"] == "nccl", "collective"].tolist() == ["AllReduce", "Broadcast"]
    cp = g[g["kind"] == "memcpy"]
    assert list(zip(cp["name"], cp["start_ns"], cp["end_ns"], cp["msg_bytes"])) == [
        ("Memcpy HtoD", 0, 100, 4096),
        ("Memcpy DtoH", 1150, 1250, 8),
    ]
    ms = g[g["kind"] == "memset"]
    assert list(zip(ms["name"], ms["start_ns"], ms["end_ns"])) == [("Memset", 1500, 1510)]
    h = tr.host
    ph = h[h["kind"] == "phase"]
    assert sorted(zip(ph["name"], ph["start_ns"], ph["end_ns"])) == sorted(PHASES)
    la = h[h["kind"] == "launch"].sort_values("start_ns")
    assert list(zip(la["start_ns"], la["end_ns"])) == LAUNCHES
    assert la["stream"].tolist() == LAUNCH_STREAMS
    assert la["thread"].tolist() == ["Master thread"] * 3 + ["Pthread thread 1"] * 2 + ["Master thread"]


def test_scorep9_layout_is_readable_by_the_plain_otf2_reader(truth):
    d, tr = truth
    with otf2.reader.open(str(d / "traces.otf2")) as r:
        defs = r.definitions
        groups = {g.name: g for g in defs.location_groups}
        ctx = groups["CUDA Context 0"]
        assert ctx.location_group_type == otf2.LocationGroupType.ACCELERATOR
        assert ctx.creating_location_group.name == "Process"
        streams = sorted(l.name for l in defs.locations if l.type == otf2.LocationType.ACCELERATOR_STREAM)
        assert streams == ["CUDA[0:13]", "CUDA[0:7]", "CUDA[0:9]"]
        roles = {reg.name: reg.region_role for reg in defs.regions}
        assert roles["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] == otf2.RegionRole.KERNEL
        assert roles["user:ds:step"] == otf2.RegionRole.FUNCTION
        assert [w.name for w in defs.rma_wins] == ["CUDA_WINDOW"]
        n = sum(1 for _ in r.events)
    assert n == tr.meta["events_total"] == tr.event_count()


def test_ticks_to_ns_exact():
    assert ticks_to_ns(np.array([0, 1, 3, 2 * 10**9 + 1], np.uint64), 2 * 10**9).tolist() == [0, 0, 1, 10**9]
    # a TSC-like resolution with a large tick count (would overflow a naive t * 1e9)
    t = np.array([7397466976977800], np.uint64)
    assert ticks_to_ns(t, 2095197216).tolist() == [(7397466976977800 * 10**9) // 2095197216]


def test_pair_enter_leave_nested_and_errors():
    # regions 1 ( 2 ( ) 3 ( ) ) with the Leave of 1 last
    codes = np.array([1, 2, ~2, 3, ~3, ~1])
    ent, lea, open_ = pair_enter_leave(codes)
    assert sorted(zip(ent.tolist(), lea.tolist())) == [(0, 5), (1, 2), (3, 4)] and open_ == 0
    ent, lea, open_ = pair_enter_leave(np.array([1, 2, ~2]))  # region 1 never left
    assert list(zip(ent.tolist(), lea.tolist())) == [(1, 2)] and open_ == 1
    with pytest.raises(ValueError, match="Leave without"):
        pair_enter_leave(np.array([~1, 1]))
    with pytest.raises(ValueError, match="Leave of region"):
        pair_enter_leave(np.array([1, 2, ~1, ~2]))


def test_summary_figures_match_hand_computation(truth):
    from dnabert_scaling.traces.summary import summarize

    s = summarize(truth[1])
    assert s["format"] == "otf2" and len(s["ranks"]) == 1
    r = s["ranks"][0]
    assert r["rank"] == 5
    for k in ("kernel_count", "nccl_kernel_count", "memcpy_count", "memset_count", "overlap_ratio"):
        assert r[k] == EXPECTED[k], k
    assert r["ns"] == EXPECTED["ns"]
    assert r["compute_s"] == pytest.approx(800e-9) and r["idle_s"] == pytest.approx(350e-9)
    assert r["exposed_comm_s"] == pytest.approx(200e-9) and r["exposed_memcpy_s"] == pytest.approx(160e-9)
    assert r["total_s"] == pytest.approx(1510e-9) and r["nccl_kernel_sum_s"] == pytest.approx(400e-9)
    roles = {x["stream"]: x["role"] for x in r["streams"]}
    assert roles == {7: "compute", 9: "compute", 13: "nccl"}
    assert r["collectives"] == {
        "AllReduce": {"count": 1, "sum_s": pytest.approx(300e-9)},
        "Broadcast": {"count": 1, "sum_s": pytest.approx(100e-9)},
    }
    top = r["top_kernels"][0]
    assert (top["name"], top["count"]) == ("at::native::vectorized_elementwise_kernel<4, float>", 2)
    assert top["sum_s"] == pytest.approx(400e-9) and top["share"] == pytest.approx(400 / 1300)


def test_synthetic_study_rank_round_trip(tmp_path):
    """A generated study-shaped rank (phases, noise, NCCL buckets) reads back to its tables."""
    from dnabert_scaling.traces.model import Trace
    from dnabert_scaling.tools.synth import MAIN, study_rank

    spec = study_rank(2, steps=2, warmup=1, kernels_per_step=40, buckets=2, host_factor=20)
    counts = spec.write(tmp_path / "scorep-rank2")
    tr = read_trace(tmp_path / "scorep-rank2")
    expect = Trace(spec.gpu, spec.host, {})
    pd.testing.assert_frame_equal(tr.gpu, expect.gpu)
    pd.testing.assert_frame_equal(tr.host, expect.host)
    locs = {l["name"]: l["events"] for l in tr.meta["locations"]}
    gpu_events = locs["CUDA[2:7]"] + locs["CUDA[2:20]"]
    assert counts["events"] == sum(locs.values()) == tr.event_count()
    assert locs[MAIN] >= 19 * gpu_events  # full Python instrumentation: ~20x host events
    phases = tr.host[tr.host["kind"] == "phase"]["name"].value_counts().to_dict()
    assert phases == {"warmup": 1, "step": 2, "forward": 3, "backward": 3, "optimizer": 3}


def test_a_kernel_written_with_zero_duration_is_read_and_paired_with_its_launch(tmp_path):
    """What Score-P 8.4 with 8.4-cupti-overlap-kept.patch writes for a kernel that ended inside the
    previous kernel of its stream: Enter and Leave at that kernel's end. It is a kernel of the trace,
    found for its launch; only its time is zero."""
    from dnabert_scaling.analysis.completeness import trace_completeness
    from dnabert_scaling.traces.otf2_writer import NO_VALUE, OP_ENTER, OP_LEAVE, ScoreP9Writer
    from dnabert_scaling.traces.otf2_reader import ATTR_STREAM_REF
    from tracegen import t

    d = tmp_path / "scorep-rank0"
    with ScoreP9Writer(d, creator="Score-P 8.4", timer_resolution=2_000_000_000) as w:
        main, s7 = w.thread("Master thread"), w.stream(0, 7)
        k = [w.region(n, "kernel")._ref for n in ("gemm_primary", "pdl_secondary", "elementwise")]
        ev = [(100, OP_ENTER, k[0]), (300, OP_LEAVE, k[0]), (300, OP_ENTER, k[1]), (300, OP_LEAVE, k[1])]
        ev += [(400, OP_ENTER, k[2]), (500, OP_LEAVE, k[2])]
        ts, op, ref = zip(*ev)
        z = [0] * len(ev)
        w.write_events(s7, t(ts), op, ref, z, z, z)
        step, launch = w.region("user:ds:step", "user")._ref, w.region("cuLaunchKernelEx", "launch")._ref
        host = [(0, OP_ENTER, step, NO_VALUE)]
        for start in (50, 60, 350):
            host += [(start, OP_ENTER, launch, s7._ref), (start + 5, OP_LEAVE, launch, NO_VALUE)]
        host += [(600, OP_LEAVE, step, NO_VALUE)]
        ts, op, ref, sref = zip(*host)
        w.write_events(main, t(ts), op, ref, attrs={ATTR_STREAM_REF: np.array(sref, dtype=np.int64)})
    tr = read_trace(d)
    kern = tr.gpu[tr.gpu["kind"] == "kernel"].sort_values("start_ns")
    assert list(zip(kern["name"], kern["start_ns"], kern["end_ns"])) == [
        ("gemm_primary", 100, 300),
        ("pdl_secondary", 300, 300),
        ("elementwise", 400, 500),
    ]
    c = trace_completeness(tr)
    assert (c["launches"], c["activities"], c["status"]) == (3, 3, "complete")
