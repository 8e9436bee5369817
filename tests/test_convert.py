"""``convert``: Kineto -> OTF2 (Score-P 9 layout); reading back gives the same tables."""

import gzip
import json

import numpy as np
import otf2
import pandas as pd
import pytest

from conftest import DATA
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces import read_run_traces, read_trace
from dnabert_scaling.traces.convert import convert
from dnabert_scaling.traces.model import validate

A100 = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
H200 = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"


def assert_same(a, b):
    pd.testing.assert_frame_equal(a.gpu, b.gpu)
    pd.testing.assert_frame_equal(a.host, b.host)


@pytest.mark.parametrize("sample", [A100, H200], ids=["a100-nccl", "h200-dnabert2"])
def test_round_trip_on_real_traces(sample, tmp_path):
    results = convert([sample], tmp_path / "out")
    assert len(results) == 1 and results[0]["rank"] == 0
    archive = tmp_path / "out" / "scorep-rank0" / "traces.otf2"
    assert results[0]["archive"] == str(archive)
    back = read_trace(archive)
    validate(back)
    orig = read_trace(sample)
    assert_same(orig, back)
    assert back.meta["layout"] == "scorep9" and back.meta["tool"] == "dnabert-scaling-convert"
    assert back.event_count() == results[0]["events"]
    assert not (tmp_path / "out" / ".scorep-rank0.partial").exists()


def test_round_trip_keeps_phases_and_the_layout(tmp_path):
    """The H200 trace with its train_step annotations renamed to ds:step: phases survive."""
    doc = json.loads(gzip.decompress(H200.read_bytes()))
    n = 0
    for e in doc["traceEvents"]:
        if e.get("cat") == "user_annotation" and e.get("name") == "train_step":
            e["name"] = "ds:step"
            n += 1
    assert n == 5
    src = tmp_path / "rank0.json.gz"
    src.write_bytes(gzip.compress(json.dumps(doc).encode()))
    convert([src], tmp_path / "out")
    orig = read_trace(src)
    back = read_trace(tmp_path / "out" / "scorep-rank0")
    assert_same(orig, back)
    ph = back.host[back.host["kind"] == "phase"]
    assert ph["name"].tolist() == ["step"] * 5 and set(ph["thread"]) == {"Master thread"}
    with otf2.reader.open(str(tmp_path / "out" / "scorep-rank0" / "traces.otf2")) as tr:
        d = tr.definitions
        regions = {r.name: r for r in d.regions}
        assert regions["user:ds:step"].paradigm == otf2.Paradigm.USER
        assert regions["at::native::vectorized_gather_kernel<16, long>"].region_role == otf2.RegionRole.KERNEL
        assert regions["cudaLaunchKernel"].region_role == otf2.RegionRole.WRAPPER
        groups = {g.name: g for g in d.location_groups}
        assert groups["CUDA Context 0"].location_group_type == otf2.LocationGroupType.ACCELERATOR
        assert groups["CUDA Context 0"].creating_location_group is groups["Process"]
        streams = [l for l in d.locations if l.type == otf2.LocationType.ACCELERATOR_STREAM]
        assert [l.name for l in streams] == ["CUDA[0:7]"] and streams[0].group is groups["CUDA Context 0"]
        assert {a.name for a in d.attributes} >= {"CUDA_STREAM_REF", "CUPTI_CORRELATION_ID"}
        assert sum(1 for _ in tr.events) == back.event_count()  # the generic reader reads it all


def _two_rank_docs(tmp_path):
    docs = []
    for r in (0, 1):
        doc = {
            "distributedInfo": {"rank": r, "world_size": 2},
            "traceEvents": [
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                    "pid": 0,
                    "tid": 13,
                    "ts": 100.125 + r,
                    "dur": 50.5,
                    "args": {"device": r, "stream": 13, "correlation": 7, "In msg nelems": 256, "dtype": "Float"},
                },
                {
                    "ph": "X",
                    "cat": "gpu_memcpy",
                    "name": "Memcpy HtoD (Pinned -> Device)",
                    "pid": 0,
                    "tid": 7,
                    "ts": 90.0,
                    "dur": 3.0,
                    "args": {"device": r, "stream": 7, "correlation": 3, "bytes": 1024},
                },
                {
                    "ph": "X",
                    "cat": "gpu_memcpy",
                    "name": "Memcpy DtoH (Device -> Pinned)",
                    "pid": 0,
                    "tid": 7,
                    "ts": 200.0,
                    "dur": 1.0,
                    "args": {"device": r, "stream": 7, "correlation": 9, "bytes": 4},
                },
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 5,
                    "tid": 5,
                    "ts": 95.0,
                    "dur": 1.5,
                    "args": {"correlation": 7},
                },
                {"ph": "X", "cat": "user_annotation", "name": "ds:backward", "pid": 5, "tid": 5, "ts": 94.0, "dur": 60.0},
            ],
        }
        p = tmp_path / f"rank{r}.json"
        p.write_text(json.dumps(doc))
        docs.append(p)
    return docs


def test_several_ranks_and_refusal_to_overwrite(tmp_path):
    docs = _two_rank_docs(tmp_path)
    out = tmp_path / "otf2"
    convert(docs, out, workers=1)
    assert sorted(p.name for p in out.iterdir()) == ["scorep-rank0", "scorep-rank1"]
    back = read_run_traces(out, world_size=2, workers=1)
    orig = read_run_traces(docs, workers=1)
    assert_same(orig, back)
    k = back.gpu[back.gpu["kind"] == "kernel"]
    assert k["msg_bytes"].tolist() == [1024, 1024] and k["collective"].tolist() == ["AllReduce", "AllReduce"]
    assert k["start_ns"].tolist() == [100125, 101125]
    assert back.gpu.loc[back.gpu["kind"] == "memcpy", "name"].tolist() == ["Memcpy HtoD", "Memcpy DtoH"] * 2
    # A second conversion into the same directory refuses, names the output, and writes nothing.
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    with pytest.raises(ArtifactError, match=r"output exists, not overwritten \(use --force\).*scorep-rank0"):
        convert(docs, out, workers=1)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    convert(docs, out, force=True, workers=1)
    assert_same(orig, read_run_traces(out, workers=1))


def test_merged_archive_holds_every_rank(tmp_path, capsys):
    docs = _two_rank_docs(tmp_path)
    out = tmp_path / "otf2"
    assert cli_main(["convert", *map(str, docs), "--out", str(out), "--merged", "--workers", "1"]) == 0
    assert "ranks 0, 1 -> " in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["all-ranks", "scorep-rank0", "scorep-rank1"]

    def content(anchor):
        with otf2.reader.open(str(anchor)) as tr:
            procs = sorted(
                g.name for g in tr.definitions.location_groups if g.location_group_type == otf2.LocationGroupType.PROCESS
            )
            events = [(loc.group.name, loc.name, type(e).__name__, e.time) for loc, e in tr.events]
        return procs, events

    procs, merged = content(out / "all-ranks" / "traces.otf2")
    assert procs == ["Rank 0", "Rank 1"]
    per_rank = []
    for r in (0, 1):
        _, ev = content(out / f"scorep-rank{r}" / "traces.otf2")
        per_rank += [
            (g.replace("Process", f"Rank {r}").replace("CUDA Context", f"Rank {r} CUDA Context"), *rest) for g, *rest in ev
        ]
    assert sorted(merged) == sorted(per_rank)  # the same events, each under its rank
    # the merged output is refused like the others when it exists
    with pytest.raises(ArtifactError, match="all-ranks"):
        convert(docs, out, workers=1, merged=True)


def test_cli_convert(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli_main(["convert", str(A100), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "rank 0:" in text and "2700 kernels, 960 copies, 114 memsets" in text
    assert cli_main(["convert", str(A100), "--out", str(out)]) == 2
    assert "use --force" in capsys.readouterr().err
    assert cli_main(["convert", str(DATA / "traces" / "scorep-cuda-2rank" / "traces.otf2"), "--out", str(out)]) == 2
    assert "convert reads Kineto traces" in capsys.readouterr().err


def test_event_order_for_nested_zero_length_and_identical_ranges():
    from dnabert_scaling.traces.otf2_writer import nested_event_order

    #            0: outer    1: zero@5  2: inner  3: same as 2  4: zero@5 again  5: after
    s = np.array([0, 5, 5, 5, 5, 20])
    e = np.array([20, 5, 10, 10, 5, 30])
    t, is_enter, which = nested_event_order(s, e)
    seq = [("E" if en else "L") + str(w) for en, w in zip(is_enter, which)]
    assert t.tolist() == [0, 5, 5, 5, 5, 5, 5, 10, 10, 20, 20, 30]
    assert seq == ["E0", "E1", "L1", "E4", "L4", "E2", "E3", "L3", "L2", "L0", "E5", "L5"]
    with pytest.raises(ValueError, match="overlap without nesting"):
        nested_event_order(np.array([0, 5]), np.array([10, 15]))


def test_overlapping_kernels_on_one_stream_are_refused(tmp_path):
    doc = {
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1.0, "dur": 5.0, "args": {"stream": 7}},
            {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 3.0, "dur": 5.0, "args": {"stream": 7}},
        ]
    }
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=r"kernels overlap on stream CUDA\[0:7\]"):
        convert([p], tmp_path / "out")
    assert not (tmp_path / "out" / "scorep-rank0").exists()
    assert not (tmp_path / "out" / ".scorep-rank0.partial").exists()


def test_a_merged_archive_reads_back_with_its_ranks(tmp_path):
    """convert --merged names each process 'Rank <R>': read back, ranks 3 and 5 stay 3 and 5 (they were
    renumbered 0 and 1 by definition order)."""
    docs = []
    for path, r in zip(_two_rank_docs(tmp_path), (3, 5)):
        doc = json.loads(path.read_text())
        doc["distributedInfo"] = {"rank": r, "world_size": 8}
        for e in doc["traceEvents"]:
            if "device" in e.get("args", {}):
                e["args"]["device"] = r
        docs.append(tmp_path / f"rank{r}.json")
        docs[-1].write_text(json.dumps(doc))
    out = tmp_path / "otf2"
    assert cli_main(["convert", *map(str, docs), "--out", str(out), "--merged", "--workers", "1"]) == 0
    back = read_trace(out / "all-ranks" / "traces.otf2")
    assert sorted(back.ranks) == [3, 5]
    assert not any("definition order" in w for m in back.ranks.values() for w in m["warnings"])


def test_more_workers_than_traces_start_one_process_per_trace(monkeypatch):
    """--workers larger than the traces given (a tester's 10**20; with fork, the pool would start every one of them)
    asks the pool for one process per trace at most; then, with the real pool, the two real traces read as alone."""
    from dnabert_scaling.traces import loader

    paths = [A100, H200]
    asked = []
    real_pool = loader.ProcessPoolExecutor

    def pool(max_workers, mp_context):  # the real pool, the number it was asked for noted
        asked.append(max_workers)
        assert max_workers <= len(paths), max_workers  # before the pool: a fork pool would start them all
        return real_pool(max_workers=max_workers, mp_context=mp_context)

    monkeypatch.setattr(loader, "ProcessPoolExecutor", pool)
    read = loader.read_many(paths, workers=10**20)
    assert asked == [2]
    alone = [loader.read_many([p], workers=1)[0] for p in paths]
    assert [len(t.gpu) for t in read] == [len(t.gpu) for t in alone] and all(len(t.gpu) for t in read)


def test_a_name_holding_nul_is_refused_with_the_file_not_cut_short(tmp_path, capsys):
    """OTF2 keeps C strings: a kernel name with \\u0000 in the Kineto JSON would come back cut at the NUL. convert
    refuses it, naming the file, the field and where the NUL is, and writes nothing."""
    kernel = {"ph": "X", "cat": "kernel", "name": "gemm\u0000_hidden_tail", "pid": 0, "tid": 7, "ts": 1.0, "dur": 5.0,
              "args": {"stream": 7, "device": 0}}  # fmt: skip
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": [kernel]}))
    assert cli_main(["convert", str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "'name' holds a NUL character at character 5" in err, err
    assert "Traceback" not in err and not (tmp_path / "out" / "scorep-rank0").exists()


def test_a_thread_name_holding_nul_is_refused_by_convert(tmp_path, capsys):
    """A string thread id (Chrome traces write them) becomes the launch's thread name in the tables: the reader refuses
    one holding NUL as it refuses names and argument texts, so convert never hands OTF2 a name it would cut."""
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": "main\u0000thread",
              "ts": 1.0, "dur": 1.0, "args": {"correlation": 5}}  # fmt: skip
    kernel = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 3.0, "dur": 5.0,
              "args": {"stream": 7, "device": 0, "correlation": 5}}  # fmt: skip
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": [launch, kernel]}))
    assert cli_main(["convert", str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and "holds a NUL character" in err and "Traceback" not in err, err
    assert not (tmp_path / "out" / "scorep-rank0").exists()
