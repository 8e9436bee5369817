"""``summarize``: JSON structure, the exact partition, the readable table, directory input."""

import json

import pytest

from conftest import DATA
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.traces import read_trace
from dnabert_scaling.traces.summary import summarize
from tracegen import EXPECTED, write_ground_truth

A100 = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
H200 = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"


def sweep_partition(gpu):
    """Independent reference in plain Python: sweep the sorted edges, keep coverage per category,
    and add each elementary segment's length to the bucket its state belongs to (exact ns)."""
    edges = []
    for c, s, e in zip(gpu["category"].astype(str), gpu["start_ns"].tolist(), gpu["end_ns"].tolist()):
        edges.append((s, 1, c))
        edges.append((e, -1, c))
    edges.sort()
    count = {"compute": 0, "nccl": 0, "memory": 0}
    out = {"compute": 0, "exposed_comm": 0, "exposed_memcpy": 0, "overlap": 0, "nccl": 0, "busy": 0}
    prev = None
    for t, d, c in edges:
        if prev is not None and t > prev:
            seg = t - prev
            comp, nccl, mem = count["compute"] > 0, count["nccl"] > 0, count["memory"] > 0
            out["compute"] += seg * comp
            out["nccl"] += seg * nccl
            out["overlap"] += seg * (comp and nccl)
            out["exposed_comm"] += seg * (nccl and not comp)
            out["exposed_memcpy"] += seg * (mem and not comp and not nccl)
            out["busy"] += seg * (comp or nccl or mem)
        count[c] += d
        prev = t
    return out


@pytest.fixture(scope="module")
def a100_summary():
    tr = read_trace(A100)
    return tr, summarize(tr)


def test_partition_is_exact_on_a_real_trace(a100_summary):
    tr, s = a100_summary
    assert s["format"] == "kineto" and s["source"] == str(A100)
    r = s["ranks"][0]
    ns = r["ns"]
    assert ns["compute"] + ns["exposed_comm"] + ns["exposed_memcpy"] + ns["idle"] == ns["total"]
    assert ns["busy"] + ns["idle"] == ns["total"]
    assert r["kernel_count"] == 2700 and r["nccl_kernel_count"] == 21
    assert r["collectives"]["AllReduce"]["count"] == 15 and r["collectives"]["Broadcast"]["count"] == 6
    assert r["nccl_kernel_sum_s"] == pytest.approx(r["nccl_s"])  # one NCCL stream: kernels never overlap
    assert 0 < r["overlap_ratio"] < 1
    assert r["overlap_ratio"] == pytest.approx(ns["overlap"] / ns["nccl"])
    # The vectorised union algebra agrees with a plain-Python sweep, to the nanosecond.
    ref = sweep_partition(tr.gpu)
    assert {k: ns[k] for k in ref} == ref
    roles = {x["stream"]: x["role"] for x in r["streams"]}
    assert roles == {7: "compute", 40: "nccl"}
    top = r["top_kernels"]
    assert top[0]["name"] == "ncclKernel_AllReduce_RING_LL_Sum_float" and top[0]["count"] == 15
    assert [t["sum_s"] for t in top] == sorted((t["sum_s"] for t in top), reverse=True)


def test_no_nccl_means_null_overlap_ratio():
    r = summarize(read_trace(H200))["ranks"][0]
    assert r["overlap_ratio"] is None and r["nccl_s"] == 0 and r["exposed_comm_s"] == 0
    assert r["kernel_count"] == 4430 and r["memset_count"] == 420
    assert r["compute_s"] + r["exposed_memcpy_s"] + r["idle_s"] == pytest.approx(r["total_s"])


def test_cli_json_and_table(tmp_path, capsys):
    d = write_ground_truth(tmp_path / "traces" / "scorep-rank0")
    out = tmp_path / "summary.json"
    assert cli_main(["summarize", str(d), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].startswith("trace: ") and "(format otf2)" in lines[0]
    assert lines[1].split() == [
        "rank",
        "kernels",
        "nccl",
        "compute_s",
        "nccl_s",
        "nccl_sum_s",
        "overlap",
        "exp_comm_s",
        "exp_mem_s",
        "idle_s",
        "total_s",
        "complete",
    ]
    assert lines[2].split() == [
        "0",
        "6",
        "2",
        "0.000001",
        "0.000000",
        "0.000000",
        "0.500",
        "0.000000",
        "0.000000",
        "0.000000",
        "0.000002",
        "yes",
    ]
    assert lines[3] == ""  # every rank complete: no key to the words under the table
    assert "CUDA[0:13]  nccl" in table and "top kernels" in table
    doc = json.loads(out.read_text())
    assert set(doc) == {"source", "format", "ranks"} and doc["format"] == "otf2"
    r = doc["ranks"][0]
    assert r["rank"] == 0 and r["ns"] == EXPECTED["ns"] and r["overlap_ratio"] == 0.5
    for key in (
        "kernel_count",
        "nccl_kernel_count",
        "compute_s",
        "nccl_s",
        "nccl_kernel_sum_s",
        "overlap_s",
        "overlap_ratio",
        "exposed_comm_s",
        "exposed_memcpy_s",
        "idle_s",
        "total_s",
        "streams",
        "top_kernels",
    ):
        assert key in r, key
    # a run directory works too (all ranks), and --json - prints JSON only
    assert cli_main(["summarize", str(tmp_path), "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["ranks"][0]["ns"]["idle"] == 350


def test_the_table_shows_control_characters_of_trace_names_as_escapes(tmp_path, capsys):
    """A kernel name read from a trace may hold an ANSI escape or a bidi override: the table prints its escape
    (``\\x1b``, ``\\u202e``), so that the terminal does not act on it and the reader sees it is there; the JSON
    keeps the name as the trace has it."""
    evil = "gemm\x1b[2J\x1b[31mFAKE\u202eelif\x07"
    doc = {
        "traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 11, "ts": 1, "dur": 2,
             "args": {"correlation": 5}},
            {"ph": "X", "cat": "kernel", "name": evil, "pid": 0, "tid": 7, "ts": 4, "dur": 10,
             "args": {"device": 0, "stream": 7, "correlation": 5}},
        ]
    }  # fmt: skip
    trace = tmp_path / "rank0.json"
    trace.write_text(json.dumps(doc))
    assert cli_main(["summarize", str(trace), "--json", str(tmp_path / "s.json")]) == 0
    table = capsys.readouterr().out
    assert not any(c in table for c in "\x1b\x07\u202e")
    assert "gemm\\x1b[2J\\x1b[31mFAKE\\u202eelif\\x07" in table
    assert json.loads((tmp_path / "s.json").read_text())["ranks"][0]["top_kernels"][0]["name"] == evil


def test_the_table_marks_a_rank_whose_completeness_is_not_known_and_says_what_the_words_mean(capsys):
    """The H200 Kineto sample marks no measured step, so its completeness is unknown: the row says so beside the
    figures, and a key under the table says what yes, NO and unknown mean (an INCOMPLETE rank's times read low)."""
    assert cli_main(["summarize", str(H200)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-1] == "complete" and lines[2].split()[-1] == "unknown"
    assert lines[3].startswith("(complete: yes where every measured step holds all its kernels; NO: kernels are missing")


def test_an_error_naming_a_hostile_file_shows_its_control_characters_as_escapes(tmp_path, capsys):
    """Every command's error names the file: a file name (or a name quoted from the trace) holding an ANSI escape or a
    bidi override reaches the terminal as escapes (cli.shown), with the error's own line breaks kept."""
    bad = tmp_path / "bad\x1b[31m\u202e.json"
    bad.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k\x07", "pid": 0, "tid": 7,
                                                "ts": "x", "dur": 1, "args": {"stream": 7}}]}))  # fmt: skip
    assert cli_main(["summarize", str(bad)]) == 2
    err = capsys.readouterr().err
    assert not any(c in err for c in "\x1b\u202e\x07"), err
    assert "bad\\x1b[31m\\u202e.json" in err and "name 'k\\x07'" in err and "Traceback" not in err


def test_the_error_printer_keeps_a_messages_own_line_breaks():
    from dnabert_scaling.cli import shown

    assert shown("first\nsecond \x1b[2J") == "first\nsecond \\x1b[2J"


def test_an_incomplete_rank_reads_no_beside_its_figures(tmp_path, capsys):
    """One measured step whose ten launches found five kernels: the row says NO, and the key under the table says its
    kernel times read low, above the completeness line that gives the counts."""
    events = [{"ph": "X", "cat": "user_annotation", "name": "ds:step", "pid": 9, "tid": 9, "ts": 0, "dur": 1000}]
    for i in range(10):
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,
                       "ts": 10 + 10 * i, "dur": 2, "args": {"correlation": i + 1}})  # fmt: skip
        if i < 5:
            events.append({"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 200 + 10 * i,
                           "dur": 5, "args": {"stream": 7, "device": 0, "correlation": i + 1}})  # fmt: skip
    trace = tmp_path / "rank0.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    assert cli_main(["summarize", str(trace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[-1] == "NO" and "its kernel times read low" in lines[3]
    assert lines[5].startswith("completeness INCOMPLETE: rank 0: GPU activities for 5 of 10 launches")
