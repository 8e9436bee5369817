"""Compacted Kineto traces read back into exactly the same tables."""

import json

import pandas as pd
import pytest

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.traces import read_trace
from dnabert_scaling.traces.compact import compact_kineto, dumps, RawNumber

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
    assert dumps(data) == '{"ts":5355706676751.051,"dur":1.25e-3,"n":3}'


def test_bad_input(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ArtifactError, match="bad.json.gz"):
        compact_kineto(bad, tmp_path / "out.json.gz")
    not_kineto = tmp_path / "x.json"
    not_kineto.write_text('{"a": 1}')
    with pytest.raises(ArtifactError, match="no traceEvents"):
        compact_kineto(not_kineto, tmp_path / "out.json.gz")
