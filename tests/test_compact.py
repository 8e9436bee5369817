"""Compacted Kineto traces read back into exactly the same tables."""

import json

import pandas as pd
import pytest

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces import read_trace
from dnabert_scaling.tools.compact import compact_kineto, dumps, RawNumber

from conftest import DATA


@pytest.mark.parametrize("name", ["kineto-a100-nccl-2rank", "kineto-h200-1gpu-dnabert2"])
def test_compaction_keeps_the_tables(tmp_path, name):
    src = DATA / "traces" / name / "rank0.json.gz"
    dst = tmp_path / "c.json.gz"
    n_in, n_out = compact_kineto(src, dst)
    assert 0 < n_out < n_in
    a, b = read_trace(src), read_trace(dst)
    pd.testing.assert_frame_equal(a.gpu, b.gpu)
    pd.testing.assert_frame_equal(a.host, b.host)
    assert dst.stat().st_size < src.stat().st_size


def test_numbers_keep_their_digits():
    text = '{"ts": 5355706676751.051, "dur": 1.25e-3, "n": 3}'
    data = json.loads(text, parse_float=RawNumber)
    assert dumps(data) == '{"ts": 5355706676751.051, "dur": 1.25e-3, "n": 3}'  # torch's separators


def test_step_ranges_are_profiler_steps_too(tmp_path):
    import gzip

    src = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
    data = json.loads(gzip.open(src, "rt").read())
    events = [e for e in data["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    ranges = [("ds:warmup", 0), ("ds:step", 100), ("ds:step", 50)]  # out of time order on purpose
    for name, ts in ranges:
        events.append({"ph": "X", "cat": "user_annotation", "name": name, "ts": ts, "dur": 40, "pid": 1, "tid": 1})
    data["traceEvents"] = events
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(data))
    compact_kineto(plain, tmp_path / "c.json.gz")
    text = gzip.open(tmp_path / "c.json.gz", "rt").read()
    out = json.loads(text)
    steps = sorted((e["ts"], e["name"]) for e in out["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    assert steps == [(0, "ProfilerStep#0"), (50, "ProfilerStep#1"), (100, "ProfilerStep#2")]
    assert '"rank": 0' in text  # HTA finds the rank with this spelling
    # a trace that has ProfilerStep events keeps its own
    compact_kineto(tmp_path / "c.json.gz", tmp_path / "again.json.gz")
    again = json.loads(gzip.open(tmp_path / "again.json.gz", "rt").read())
    assert sum(e["name"].startswith("ProfilerStep#") for e in again["traceEvents"]) == 3


def test_bad_input(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ArtifactError, match="bad.json.gz"):
        compact_kineto(bad, tmp_path / "out.json.gz")
    not_kineto = tmp_path / "x.json"
    not_kineto.write_text('{"a": 1}')
    with pytest.raises(ArtifactError, match="no traceEvents"):
        compact_kineto(not_kineto, tmp_path / "out.json.gz")
