"""Score-P 8.4 with 8.4-cupti-launch-records.patch (SCOREP_CUDA_DRIVER_CALLBACKS=records).

That mode writes the launch, copy and memset calls of each host thread from CUPTI's activity records
on a location of type GPU named ``CUDA launches[<thread id>]``, each launch and its kernel or copy
carrying ``CUPTI_CORRELATION_ID``. The reader must read that location as a host thread (never as a
stream whose "kernels" are cuLaunchKernel), and the analysis must pair launches and kernels by the id,
so a lost kernel shows as a launch not found. ``scripts/scorep_count.py`` counts it the same way,
independently of the reader.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from dnabert_scaling.analysis.completeness import trace_completeness
from dnabert_scaling.traces.loader import read_trace
from dnabert_scaling.traces.otf2_defs import ATTR_CORRELATION
from dnabert_scaling.traces.otf2_writer import NO_VALUE, OP_DONE, OP_ENTER, OP_GET, OP_LEAVE, ScoreP9Writer

pytest.importorskip("otf2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import scorep_count  # noqa: E402

THREAD = "CUDA launches[4242]"
# (launch start, launch end, correlation id, kernel name or None for the copy, kernel start, kernel end)
CALLS = [
    (60, 70, 11, "gemm", 100, 200),
    (80, 90, 12, "elementwise", 210, 260),
    (300, 310, 13, None, 320, 330),  # a host-to-device copy
    (400, 410, 14, "gemm", 420, 520),
    (530, 540, 15, "elementwise", 560, 600),
]


def _t(ns):
    return np.asarray(ns, dtype=np.int64) * 2


def _write(d: Path, *, lose_kernel: int | None = None) -> Path:
    import otf2

    with ScoreP9Writer(d, creator="Score-P 8.4", timer_resolution=2_000_000_000) as w:
        main, s7 = w.thread("Master thread"), w.stream(0, 7)
        launches_loc = w.defs.location(THREAD, type=otf2.LocationType.ACCELERATOR_STREAM, group=w._contexts[0])
        win = w.cuda_window("Master thread")
        host_rank = w.window_rank(main)
        kref = {n: w.region(n, "kernel")._ref for n in ("gemm", "elementwise")}
        step = w.region("user:ds:step", "user")._ref
        launch = w.region("cuLaunchKernel", "launch")._ref
        copy = w.region("cuMemcpyHtoDAsync_v2", "launch")._ref
        gpu, gcorr, host, hcorr = [], [], [], []
        for i, (ls, le, corr, kernel, ks, ke) in enumerate(CALLS):
            host += [(ls, OP_ENTER, copy if kernel is None else launch), (le, OP_LEAVE, copy if kernel is None else launch)]
            hcorr += [corr, NO_VALUE]
            if i == lose_kernel:
                continue
            if kernel is None:
                gpu += [(ks, OP_GET, win._ref, host_rank, 64, 1), (ke, OP_DONE, win._ref, 0, 0, 1)]
            else:
                gpu += [(ks, OP_ENTER, kref[kernel], 0, 0, 0), (ke, OP_LEAVE, kref[kernel], 0, 0, 0)]
            gcorr += [corr, NO_VALUE]
        ts, op, a, b, c, dd = zip(*gpu)
        w.write_events(s7, _t(ts), op, a, b, c, dd, attrs={ATTR_CORRELATION: np.array(gcorr, dtype=np.int64)})
        ts, op, a = zip(*host)
        w.write_events(launches_loc, _t(ts), op, a, attrs={ATTR_CORRELATION: np.array(hcorr, dtype=np.int64)})
        w.write_events(main, _t([0, 700]), [OP_ENTER, OP_LEAVE], [step, step])
    return d


def test_the_launch_location_is_read_as_a_host_thread_and_pairs_by_correlation(tmp_path):
    tr = read_trace(_write(tmp_path / "scorep-rank0"))
    assert set(tr.gpu[tr.gpu["kind"] == "kernel"]["name"].astype(str)) == {"gemm", "elementwise"}
    assert (tr.gpu["kind"] == "kernel").sum() == 4 and (tr.gpu["kind"] == "memcpy").sum() == 1
    assert set(tr.gpu["stream"].tolist()) == {7}  # the launch location is no stream
    launches = tr.host[tr.host["kind"] == "launch"]
    assert launches["thread"].astype(str).tolist() == [THREAD] * 5
    assert launches["correlation"].tolist() == [11, 12, 13, 14, 15]
    assert sorted(tr.gpu["correlation"].tolist()) == [11, 12, 13, 14, 15]
    entry = next(l for l in tr.meta["locations"] if l["name"] == THREAD)
    assert entry["read"] and "CUPTI activity records" in entry["why"]
    c = trace_completeness(tr)
    method = c["per_rank"]["0"]["method"]
    assert (method, c["launches"], c["activities"], c["status"]) == ("correlation", 5, 5, "complete")


def test_a_lost_kernel_is_a_launch_not_found(tmp_path):
    tr = read_trace(_write(tmp_path / "scorep-rank0", lose_kernel=3))
    c = trace_completeness(tr)
    method = c["per_rank"]["0"]["method"]
    assert (method, c["launches"], c["activities"], c["status"]) == ("correlation", 5, 4, "incomplete")


def test_scorep_count_counts_the_launch_location_as_host_and_links_by_correlation(tmp_path):
    d = _write(tmp_path / "scorep-rank0", lose_kernel=0)
    got = scorep_count.count(d)
    assert got["launches_by_location"] == {THREAD: 4}  # cuLaunchKernel only; the copy call is no kernel launch
    assert got["kernels_by_location"] == {"CUDA[0:7]": 3}
    assert (got["launches"], got["kernels"], got["kernels_linked"], got["copies"]) == (4, 3, 3, 1)


def test_scorep_count_links_nothing_without_correlation_ids(tmp_path):
    from tracegen import write_ground_truth

    got = scorep_count.count(write_ground_truth(tmp_path / "gt"))
    assert got["kernels_linked"] is None and got["launches"] == 6


def test_a_repeated_correlation_id_links_no_more_kernels_than_launches_carry_it():
    from collections import Counter

    # two kernels claim launch 5's id, which one launch carries: one of them is linked, not both
    assert scorep_count._linked(Counter({5: 2, 6: 1}), Counter({5: 1, 6: 1})) == 2
    assert scorep_count._linked(Counter({5: 3}), Counter({5: 3})) == 3
    assert scorep_count._linked(Counter({5: 1, None: 4}), Counter({5: 1})) == 1  # kernels without an id never link
    assert scorep_count._linked(Counter({5: 1}), Counter({5: 1, None: 1})) is None  # a launch without an id: nothing to pair by
    assert scorep_count._linked(Counter({5: 1}), Counter()) is None
    assert scorep_count.is_launch_location("CUDA launches[4242]") and not scorep_count.is_launch_location("CUDA launches[x]")
