"""Kineto reading: the real A100 (NCCL) and H200 (DNABERT-2) samples, and exact ns parsing."""

import gzip
import json

import pytest

from conftest import DATA
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces import read_trace
from dnabert_scaling.traces.kineto_reader import us_to_ns
from dnabert_scaling.traces.model import validate

A100 = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
H200 = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"


@pytest.fixture(scope="module")
def a100():
    return read_trace(A100)


@pytest.fixture(scope="module")
def h200():
    return read_trace(H200)


def test_us_to_ns_is_exact():
    assert us_to_ns("4458677009853.422") == 4458677009853422
    assert us_to_ns("1234567.891") == 1234567891
    assert us_to_ns("0.5") == 500 and us_to_ns("2.13") == 2130 and us_to_ns("7.") == 7000
    assert us_to_ns("1.0005") == 1000 and us_to_ns("1.0015") == 1002  # half-even beyond ns
    assert us_to_ns("1e3") == 1_000_000 and us_to_ns(17) == 17_000 and us_to_ns("-1.250") == -1250
    with pytest.raises(ValueError):
        us_to_ns("abc")
    with pytest.raises(ValueError):
        us_to_ns(True)


def test_a100_nccl_collectives(a100):
    validate(a100)
    assert a100.rank_ids == [0]
    m = a100.meta
    assert (m["rank"], m["world_size"], m["format"]) == (0, 2, "kineto")
    assert m["distributed"]["nccl_version"] == "2.17.1" and m["clock_resolution_hz"] == 10**9
    assert m["streams"] == [7, 40]
    g = a100.gpu
    nccl = g[g["category"] == "nccl"]
    assert nccl["collective"].value_counts().to_dict() == {"AllReduce": 15, "Broadcast": 6}
    assert set(nccl["stream"]) == {40}
    assert set(g.loc[g["category"] == "compute", "stream"]) == {7}
    assert int((g["kind"] == "kernel").sum()) == 2700
    assert g["kind"].value_counts().to_dict() == {"kernel": 2700, "memcpy": 960, "memset": 114}
    assert set(g.loc[g["kind"] == "memcpy", "name"]) == {"Memcpy DtoD"}
    # the AllReduce launched by correlation 60047: ts 4458677009853.422 us, dur 2636.669 us, 6637568 floats
    first = nccl[nccl["correlation"] == 60047].iloc[0]
    assert first["name"] == "ncclKernel_AllReduce_RING_LL_Sum_float"
    assert (first["start_ns"], first["end_ns"]) == (4458677009853422, 4458677009853422 + 2636669)
    assert first["msg_bytes"] == 6637568 * 4 and first["correlation"] == 60047


def test_a100_launches_get_the_stream_of_their_kernel(a100):
    h = a100.host
    la = h[h["kind"] == "launch"]
    assert la["name"].value_counts().to_dict() == {
        "cudaLaunchKernel": 2550,
        "cudaLaunchKernelExC": 150,
        "cudaMemcpyAsync": 960,
        "cudaMemsetAsync": 117,
    }
    assert la["correlation"].notna().all()
    kl = la[la["name"].str.contains("LaunchKernel")]
    assert kl["stream"].notna().all()
    assert int((kl["stream"] == 40).sum()) == 21
    joined = kl.merge(a100.gpu[["correlation", "stream"]], on="correlation", suffixes=("", "_gpu"))
    assert len(joined) == 2700 and (joined["stream"] == joined["stream_gpu"]).all()
    # copy/memset calls are launch rows too (copies get exact attribution); they carry the
    # stream of their copy when the trace recorded it
    copies = la[~la["name"].str.contains("LaunchKernel")]
    with_copy = copies.merge(a100.gpu[["correlation", "stream"]], on="correlation", suffixes=("", "_gpu"))
    assert len(with_copy) > 0 and (with_copy["stream"] == with_copy["stream_gpu"]).all()
    assert "## forward ##" in a100.meta["annotations"]


def test_h200_dnabert2_steps(h200):
    validate(h200)
    g = h200.gpu
    assert int((g["kind"] == "kernel").sum()) == 4430
    assert set(g.loc[g["kind"] == "kernel", "stream"]) == {7} and h200.meta["streams"] == [7]
    assert h200.meta["annotations"]["train_step"] == 5
    assert h200.meta["world_size"] is None and h200.rank_ids == [0]  # rank from the file name
    assert h200.meta["cuda_runtime_version"] == 13000
    assert int((g["category"] == "nccl").sum()) == 0
    # names follow the one naming rule: no 'void ', no parameter list, templates kept
    assert g["name"].iloc[0] == "at::native::vectorized_gather_kernel<16, long>"
    la = h200.host[h200.host["kind"] == "launch"]
    kl = la[la["name"].str.contains("LaunchKernel")]
    assert len(kl) == 4430 and set(kl["name"]) == {"cudaLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel"}
    assert set(la["name"]) - set(kl["name"]) <= {"cudaMemcpyAsync", "cudaMemsetAsync"}


def test_phases_from_ds_annotations(tmp_path):
    """``record_function('ds:forward')`` ranges become phases; other annotations do not."""
    doc = {
        "distributedInfo": {"rank": 3, "world_size": 4},
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "ds:step", "pid": 9, "tid": 9, "ts": 10.0, "dur": 100.0005},
            {"ph": "X", "cat": "user_annotation", "name": "ds:forward", "pid": 9, "tid": 9, "ts": 10.25, "dur": 40},
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 9, "ts": 10, "dur": 100},
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 9,
                "tid": 11,
                "ts": 11.5,
                "dur": 2,
                "args": {"correlation": 5},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)",
                "pid": 0,
                "tid": 21,
                "ts": 20.001,
                "dur": 30.5,
                "args": {
                    "device": 0,
                    "stream": 21,
                    "correlation": 5,
                    "Collective name": "_allgather_base",
                    "In msg nelems": 10,
                    "dtype": "BFloat16",
                },
            },
        ],
    }
    p = tmp_path / "anything.json"
    p.write_text(json.dumps(doc))
    tr = read_trace(p)
    validate(tr)
    assert tr.rank_ids == [3] and tr.meta["world_size"] == 4
    ph = tr.host[tr.host["kind"] == "phase"]
    assert list(zip(ph["name"], ph["start_ns"], ph["end_ns"], ph["thread"])) == [
        ("step", 10000, 110000, "Master thread"),
        ("forward", 10250, 50250, "Master thread"),
    ]
    la = tr.host[tr.host["kind"] == "launch"].iloc[0]
    assert (la["stream"], la["correlation"], la["thread"]) == (21, 5, "Thread 11")
    k = tr.gpu.iloc[0]
    assert (k["name"], k["category"], k["collective"], k["msg_bytes"]) == ("ncclDevKernel_Generic_1", "nccl", "AllGather", 20)
    assert (k["start_ns"], k["end_ns"]) == (20001, 50501)


def test_gzip_and_plain_json_read_the_same(tmp_path, h200):
    raw = gzip.decompress(H200.read_bytes())
    p = tmp_path / "rank0.json"
    p.write_bytes(raw)
    plain = read_trace(p)
    assert plain.gpu.equals(h200.gpu) and plain.host.equals(h200.host)


@pytest.mark.parametrize(
    "name, said",
    [
        ("gemm\u0000tail", "'name' holds a NUL character at character 5, which C strings would cut there"),
        ("_Z3fooi\u0000bar", "'name' holds a NUL character at character 8"),  # the demangler would stop at it
        ("gemm\ud800", "'name' holds a lone surrogate (U+D800) at character 5, which is no character"),
    ],
)
def test_a_name_no_table_or_archive_can_keep_is_refused_naming_the_event(tmp_path, name, said):
    """JSON can spell a NUL (\\u0000) and a lone surrogate (\\ud800): the first would be cut by C strings (OTF2, the
    demangler) and the second cannot be encoded at all (a traceback from the table library). Both are refused where
    the event is read, naming the file and the event, in a kernel's name and in an argument's text alike."""
    kernel = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({"traceEvents": [kernel]}))
    with pytest.raises(ArtifactError, match="trace event 0 of traceEvents") as caught:
        read_trace(p)
    assert said in str(caught.value) and caught.value.path == str(p)
    nccl = {**kernel, "name": "ncclDevKernel_Generic_1(x)", "args": {"stream": 7, "Collective name": name}}
    p.write_text(json.dumps({"traceEvents": [nccl]}))
    with pytest.raises(ArtifactError, match="args.Collective name holds"):
        read_trace(p)
