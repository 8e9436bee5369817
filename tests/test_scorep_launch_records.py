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


def _write(
    d: Path,
    *,
    lose_kernel: int | None = None,
    launch_ids: dict | None = None,
    activity_ids: dict | None = None,
    extra_copy: int | None = None,
    name: str = THREAD,
    correlation_type: str | None = None,
) -> Path:
    """One rank's records-mode experiment of CALLS. ``launch_ids``/``activity_ids``: call index -> the id its
    launch/activity carries instead of its own (None: none); ``extra_copy``: an id carried by one more copy,
    which no call made; ``correlation_type``: the otf2.Type the attribute is defined with instead of UINT64."""
    import otf2

    launch_ids, activity_ids = launch_ids or {}, activity_ids or {}
    with ScoreP9Writer(d, creator="Score-P 8.4", timer_resolution=2_000_000_000) as w:
        main, s7 = w.thread("Master thread"), w.stream(0, 7)
        launches_loc = w.defs.location(name, type=otf2.LocationType.ACCELERATOR_STREAM, group=w._contexts[0])
        win = w.cuda_window("Master thread")
        host_rank = w.window_rank(main)
        if correlation_type is not None:
            w._attrs[ATTR_CORRELATION] = w.defs.attribute(
                ATTR_CORRELATION, description="", type=getattr(otf2.Type, correlation_type)
            )
        kref = {n: w.region(n, "kernel")._ref for n in ("gemm", "elementwise")}
        step = w.region("user:ds:step", "user")._ref
        launch = w.region("cuLaunchKernel", "launch")._ref
        copy = w.region("cuMemcpyHtoDAsync_v2", "launch")._ref
        gpu, gcorr, host, hcorr = [], [], [], []
        for i, (ls, le, corr, kernel, ks, ke) in enumerate(CALLS):
            host += [(ls, OP_ENTER, copy if kernel is None else launch), (le, OP_LEAVE, copy if kernel is None else launch)]
            lid = launch_ids.get(i, corr)
            hcorr += [NO_VALUE if lid is None else lid, NO_VALUE]
            if i == lose_kernel:
                continue
            if kernel is None:
                gpu += [(ks, OP_GET, win._ref, host_rank, 64, 1), (ke, OP_DONE, win._ref, 0, 0, 1)]
            else:
                gpu += [(ks, OP_ENTER, kref[kernel], 0, 0, 0), (ke, OP_LEAVE, kref[kernel], 0, 0, 0)]
            aid = activity_ids.get(i, corr)
            gcorr += [NO_VALUE if aid is None else aid, NO_VALUE]
        if extra_copy is not None:  # after the last kernel
            gpu += [(610, OP_GET, win._ref, host_rank, 64, 2), (620, OP_DONE, win._ref, 0, 0, 2)]
            gcorr += [extra_copy, NO_VALUE]
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


# -- bad and forged ids (a tester's cases): never "complete" where an id shows a loss; refused where damaged --


def _rank(tr) -> dict:
    return trace_completeness(tr)["per_rank"]["0"]


def test_a_copy_carrying_a_lost_kernels_id_does_not_find_its_launch(tmp_path):
    """Ids pair within a class only: a copy with a kernel launch's id finds no kernel launch."""
    from dnabert_scaling.analysis.attribution import attribute

    tr = read_trace(_write(tmp_path / "scorep-rank0", lose_kernel=0, extra_copy=11))
    c = _rank(tr)
    assert (c["status"], c["launches"], c["found"], c["activities_without_launch"]) == ("incomplete", 5, 4, 1)
    att = attribute(tr.gpu, tr.host)
    assert any("the other class only" in n for n in att.notes)
    assert scorep_count.count(tmp_path / "scorep-rank0")["kernels_linked"] == 3


def test_launches_without_an_id_are_counted_apart_and_never_make_a_rank_complete(tmp_path):
    # the kernel of call 0 is lost; call 1's launch carries no id: the ids still show the loss
    lost = _rank(read_trace(_write(tmp_path / "a" / "scorep-rank0", lose_kernel=0, launch_ids={1: None})))
    assert (lost["status"], lost["launches"], lost["found"], lost["launches_without_id"]) == ("incomplete", 4, 3, 1)
    # nothing lost, but call 1's launch carries no id: nothing shows its kernel is there
    open_ = _rank(read_trace(_write(tmp_path / "b" / "scorep-rank0", launch_ids={1: None})))
    assert (open_["status"], open_["launches"], open_["found"], open_["launches_without_id"]) == ("unknown", 4, 4, 1)
    assert "carry no correlation id" in open_["reason"]


def test_an_activity_with_an_id_is_never_taken_for_work_launched_before_recording(tmp_path):
    """The stream rule for work launched before recording is for activities without an id: an id numbered
    while recording ran belongs to a lost launch record."""
    from dnabert_scaling.analysis.attribution import attribute

    tr = read_trace(_write(tmp_path / "scorep-rank0", lose_kernel=0, launch_ids={1: None}))
    att = attribute(tr.gpu, tr.host)
    assert "before-recording" not in set(att.method.tolist())
    assert not any("before recording" in n for n in att.notes)


def test_a_repeated_launch_id_pairs_one_to_one_in_completeness_and_attribution_alike(tmp_path):
    """Calls 0 and 1 are both kernel launches; call 1's launch and kernel carry call 0's id: each kernel is
    placed at its own launch's time (in time order), and a note says the ids repeat."""
    from dnabert_scaling.analysis.attribution import attribute

    tr = read_trace(_write(tmp_path / "scorep-rank0", launch_ids={1: 11}, activity_ids={1: 11}))
    assert _rank(tr)["status"] == "complete"
    att = attribute(tr.gpu, tr.host)
    kernels = tr.gpu.reset_index(drop=True)
    launched_at = {int(s): int(t) for s, t, k in zip(kernels["start_ns"], att.launch_ns, kernels["kind"]) if k == "kernel"}
    assert launched_at == {100: 60, 210: 80, 420: 400, 560: 530}  # kernel start -> its own launch's start (ns)
    assert any("more than one launch" in n for n in att.notes)


@pytest.mark.parametrize("typ", ["STRING", "INT64", "DOUBLE"])
def test_a_correlation_attribute_of_another_type_is_refused_by_reader_and_counter(tmp_path, typ):
    from dnabert_scaling.errors import ArtifactError

    d = _write(tmp_path / "scorep-rank0", correlation_type=typ)
    with pytest.raises(ArtifactError, match=f"CUPTI_CORRELATION_ID' is defined with type .*{typ}, not UINT64"):
        read_trace(d)
    with pytest.raises(scorep_count.CountError, match=f"defined with type .*{typ}, not UINT64"):
        scorep_count.count(d)


def test_an_id_value_of_another_type_than_its_definition_is_refused(tmp_path, monkeypatch):
    from dnabert_scaling.errors import ArtifactError
    from dnabert_scaling.traces import otf2_writer

    monkeypatch.setattr(otf2_writer, "_al_add_u64", otf2_writer._al_add_str)  # every id written as a string ref
    d = _write(tmp_path / "scorep-rank0")
    monkeypatch.undo()
    with pytest.raises(ArtifactError, match="attribute 'CUPTI_CORRELATION_ID' with a value of another type"):
        read_trace(d)
    assert scorep_count.main([str(d)]) == 2  # the otf2 module's reader stops on it: a message, no traceback


@pytest.mark.parametrize("name", ["CUDA launches[abc]", "CUDA launches[1] extra", "CUDA launches[\u0664\u0662]"])
def test_a_gpu_location_named_almost_like_launch_records_is_refused(tmp_path, name):
    from dnabert_scaling.errors import ArtifactError

    d = _write(tmp_path / "scorep-rank0", name=name)
    with pytest.raises(ArtifactError, match="named like Score-P's launch records but not as they are named"):
        read_trace(d)
    with pytest.raises(scorep_count.CountError, match="named like a launch-records location"):
        scorep_count.count(d)


def test_an_activity_id_no_launch_carries_is_a_loss_not_damaged_timestamps(tmp_path):
    """An id above every launch's on a kernel (its launch record lost or its id damaged) is no evidence
    of time order: completeness reports the kernel without a launch."""
    c = _rank(read_trace(_write(tmp_path / "scorep-rank0", activity_ids={1: 999})))
    assert (c["status"], c["found"], c["activities_without_launch"]) == ("incomplete", 4, 1)


def test_scorep_count_says_what_it_cannot_count_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "traces.otf2").write_text("garbage")
    assert scorep_count.main([str(bad)]) == 2
    assert scorep_count.main([str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert f"{bad / 'traces.otf2'}: not a readable OTF2 archive" in err and "no traces.otf2" in err
    assert "Traceback" not in err
