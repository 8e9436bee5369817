"""No statement beyond the data (issue 21): the claims file is type-checked, equality of numbers
has a tolerance, a claim about a device needs the device recorded, and metrics.json's meaning is
checked where check reads it (not only its types)."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import ROOT
from dnabert_scaling import checker
from dnabert_scaling.checker import FAIL, NOT_RUN, PASS
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.metrics_schema import validate_metrics
from dnabert_scaling.errors import ArtifactError
from cliprocess import cli_in_process
from reportfixtures import gpu_results, set_metric

EQUALS = """
schema = "dnabert-scaling/claims/1"

[[claim]]
id = "Z1"
statement = "No NCCL kernel on one GPU."
world_sizes = [1]
device = "cuda"

  [[claim.check]]
  name = "zero"
  what = "NCCL kernels per step"
  metric = "traced.gpu.nccl_kernels_per_step.max"
  test = "equals"
  value = VALUE
  rationale = "a count"
"""


@pytest.fixture(scope="module")
def full():
    return gpu_results((1, 4, 8))[0]


def _claims(tmp_path, value: str):
    path = tmp_path / "claims.toml"
    path.write_text(EQUALS.replace("VALUE", value))
    return checker.load_claims(path)


def _verdict(metrics, claims, cid="Z1"):
    return next(c for c in checker.evaluate(metrics, claims)["claims"] if c["id"] == cid)


@pytest.mark.parametrize("written", ["0", "0.0", "-0.0", "1e-300"])
def test_equals_compares_numbers_not_their_spelling(tmp_path, full, written):
    m = set_metric(copy.deepcopy(full), 1, "traced.gpu.nccl_kernels_per_step.max", 0.0)
    assert _verdict(m, _claims(tmp_path, written))["verdict"] == PASS


def test_equals_still_fails_a_different_number(tmp_path, full):
    m = set_metric(copy.deepcopy(full), 1, "traced.gpu.nccl_kernels_per_step.max", 1.0)
    assert _verdict(m, _claims(tmp_path, "0"))["verdict"] == FAIL


@pytest.mark.parametrize(
    "written,message",
    [
        ('"0"', "value '0' is a string, but traced.gpu.nccl_kernels_per_step.max holds number"),
        ("true", "value True is true/false, but traced.gpu.nccl_kernels_per_step.max holds number"),
        ("nan", "value must be a finite number, not nan"),
        ("inf", "value must be a finite number, not inf"),
        ("[0]", "value must be true/false, a number or a string, not list"),
    ],
)
def test_equals_value_of_the_wrong_kind_is_refused(tmp_path, written, message):
    with pytest.raises(ArtifactError) as err:
        _claims(tmp_path, written)
    assert message in str(err.value) and "claims.toml" in str(err.value)


def test_a_flag_is_not_a_number(full, tmp_path):
    text = EQUALS.replace("traced.gpu.nccl_kernels_per_step.max", "traced.gpu.allreduce_own_stream").replace("VALUE", "1")
    (tmp_path / "claims.toml").write_text(text)
    with pytest.raises(ArtifactError, match="holds bool"):
        checker.load_claims(tmp_path / "claims.toml")
    assert not checker.values_equal(True, 1) and not checker.values_equal(1, True)
    assert checker.values_equal(0, 0.0) and not checker.values_equal(float("nan"), float("nan"))


def test_claim_about_a_device_with_no_device_recorded_is_not_run(tmp_path, full):
    m = copy.deepcopy(full)
    set_metric(m, 1, "traced.device_type", None)
    m["world_sizes"]["1"]["throughput"].pop("device_type", None)
    v = _verdict(m, _claims(tmp_path, "0"))
    assert v["verdict"] == NOT_RUN and v["checks"][0]["code"] == "no_device"
    assert "records no device" in v["reason"]


# ---- metrics.json: what the values mean ------------------------------------------------------

SHIPPED = ROOT / "expected" / "reference-results" / "h200-b8" / "metrics.json"


def _shipped() -> dict:
    return json.loads(SHIPPED.read_text())


def _refused(m: dict, message: str) -> None:
    with pytest.raises(ArtifactError) as err:
        validate_metrics(m, "metrics.json")
    assert message in str(err.value)


def test_the_shipped_metrics_hold_their_invariants():
    for path in sorted(SHIPPED.parent.parent.glob("*/metrics.json")):
        validate_metrics(json.loads(path.read_text()), path)


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda e: e["traced"]["gpu"]["step_time_s"].update(n=0), "step_time_s.n is 0: a statistic needs at least one sample"),
        (lambda e: e["traced"]["gpu"]["step_time_s"].update(min=1.0), "has min 1.0 above p10"),
        (lambda e: e["traced"].update(ranks=[]), "traced.ranks is []: the GPU figures of world size 1 need ranks 0..0"),
        (lambda e: e["traced"].update(ranks=[0, 0]), "need ranks 0..0"),
        (lambda e: e["traced"].update(measured_steps=0), "measured_steps is 0 while sanity.steps_complete says yes"),
        (lambda e: e["traced"]["sanity"].update(problems=["rank 0 lost its steps"]), "while every item says yes"),
        (lambda e: e["traced"]["sanity"].update(trace_complete="yes"), 'must be true, false, "unknown" or null'),
        (lambda e: e["throughput"].update(source="trace"), "efficiency comes from untraced runs only"),
        (
            lambda e: e["traced"]["completeness"]["per_rank"].update({"1": e["traced"]["completeness"]["per_rank"]["0"]}),
            "covers ranks",
        ),
    ],
)
def test_metrics_that_state_more_than_their_data_are_refused(damage, message):
    m = _shipped()
    damage(m["world_sizes"]["1"])
    _refused(m, message)


def test_one_run_at_two_world_sizes_is_refused():
    """A one-GPU entry relabelled as world size 8 (key, world_size and its one rank): refused for
    its ranks; with its ranks relabelled too, for the trace it shares with world size 1."""
    m = _shipped()
    e8 = copy.deepcopy(m["world_sizes"]["1"])
    e8["world_size"] = 8
    e8.pop("throughput_noddp")
    m["world_sizes"]["8"] = e8
    _refused(m, "traced.ranks is [0]: the GPU figures of world size 8 need ranks 0..7")
    e8["traced"]["ranks"] = list(range(8))
    per_rank = e8["traced"]["completeness"]["per_rank"]
    per_rank.update({str(r): per_rank["0"] for r in range(1, 8)})
    _refused(m, "traced.placement.ranks is 1: world size 8 has 8 ranks")
    e8["traced"]["placement"].update(ranks=8, gpus=8)
    _refused(m, "world_sizes['8'].efficiency is 1.0, but the file's medians give samples/s(8) / (8 x samples/s(1)) = 0.125")
    e8.update(efficiency=None, efficiency_vs_noddp=None, efficiency_spread=None)
    _refused(m, "has the same content as world_sizes['1'].traced.inputs[0]")


def test_check_says_which_file_and_exits_2(tmp_path, capsys):
    m = _shipped()
    m["world_sizes"]["1"]["traced"]["ranks"] = []
    (tmp_path / "metrics.json").write_text(json.dumps(m))
    assert cli_main(["check", str(tmp_path), "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err
    assert "metrics.json" in err and "need ranks 0..0" in err and "Traceback" not in err


# ---- input identity and mixed inputs ---------------------------------------------------------

H200_B8 = ROOT / "expected" / "reference" / "h200-b8"
TRACE = H200_B8 / "ws1-torch-r0" / "traces" / "rank0.json.gz"


def test_a_sweep_given_twice_is_refused(tmp_path):
    status, err = cli_in_process("analyze", H200_B8, H200_B8, "--out", tmp_path / "r")
    assert status == 2 and "given twice" in err
    status, err = cli_in_process("analyze", H200_B8, H200_B8 / "ws1-none-r0", "--out", tmp_path / "r")
    assert status == 2 and "run ws1-none-r0 is given twice" in err


def test_a_copied_run_is_refused(tmp_path):
    import shutil

    sweep = tmp_path / "sweep"
    shutil.copytree(H200_B8, sweep, ignore=shutil.ignore_patterns("synthetic-data", "*.json.gz"))
    shutil.copytree(sweep / "ws1-none-r0", sweep / "ws1-none-r7")
    status, err = cli_in_process("analyze", sweep, "--out", tmp_path / "r")
    assert status == 2 and "have the same summary.json" in err, err


def test_one_trace_twice_is_not_two_ranks(tmp_path):
    """A rank-less copy given twice would become ranks 0 and 1 by the order given."""
    import gzip
    import shutil

    doc = json.load(gzip.open(TRACE))
    doc.pop("distributedInfo")
    (tmp_path / "a.json").write_text(json.dumps(doc))
    shutil.copy(tmp_path / "a.json", tmp_path / "b.json")
    status, err = cli_in_process(
        "analyze", "--world-size", "2", tmp_path / "a.json", tmp_path / "b.json", "--out", tmp_path / "r"
    )
    assert status == 2 and "have the same content (sha256" in err, err
    doc["traceName"] = "edited, so the bytes differ"
    (tmp_path / "b.json").write_text(json.dumps(doc))
    status, err = cli_in_process(
        "analyze", "--world-size", "2", tmp_path / "a.json", tmp_path / "b.json", "--out", tmp_path / "r"
    )
    assert status == 2 and "have the same GPU timeline" in err, err


def test_the_inputs_are_recorded_by_sha256(tmp_path):
    import hashlib

    assert cli_in_process("analyze", "--world-size", "1", TRACE, "--out", tmp_path / "r")[0] == 0
    (inp,) = json.loads((tmp_path / "r" / "metrics.json").read_text())["world_sizes"]["1"]["traced"]["inputs"]
    assert inp["sha256"] == hashlib.sha256(TRACE.read_bytes()).hexdigest() and inp["rank"] == 0
    assert inp["path"].endswith("rank0.json.gz") and len(inp["gpu_timeline_sha256"]) == 64


@pytest.mark.parametrize("written", ["08", "0", "-1", "x"])
def test_a_world_size_is_written_as_one(tmp_path, written):
    status, err = cli_in_process("analyze", "--world-size", written, TRACE, "--out", tmp_path / "r")
    assert status == 2 and f"not {written!r}" in err, err


def test_a_world_size_08_in_a_summary_is_refused(tmp_path):
    import shutil

    run = tmp_path / "ws1-none-r0"
    shutil.copytree(H200_B8 / "ws1-none-r0", run)
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps(dict(summary, world_size="08")))
    if (run / "manifest.json").is_file():
        (run / "manifest.json").unlink()
    status, err = cli_in_process("analyze", run, "--out", tmp_path / "r")
    assert status == 2 and "world_size must be a JSON integer, not '08'" in err, err


def test_equal_correlation_ids_do_not_make_a_trace_complete():
    """Every launch and activity with one correlation id: one activity finds one launch, not all."""
    import pandas as pd

    from dnabert_scaling.analysis.completeness import _found_by_correlation

    class Timeline:
        steps = 1

        @staticmethod
        def step_of(t):
            return t * 0

    launches = pd.DataFrame({"start_ns": [1, 2, 3, 4], "correlation": [5, 5, 5, 5], "name": ["cuLaunchKernel"] * 4})
    gpu = pd.DataFrame({"correlation": pd.array([5], dtype="Int64"), "kind": ["kernel"], "start_ns": [10]})
    found = _found_by_correlation(gpu, launches, Timeline())
    assert found.launches_per_step.tolist() == [4] and found.found_per_step.tolist() == [1]


def test_a_fifo_inside_an_experiment_folder_is_not_opened(tmp_path):
    import os
    import shutil

    exp = tmp_path / "scorep-rank0"
    shutil.copytree(ROOT / "expected" / "reference" / "h200-scorep-b8" / "ws1-scorep-r0" / "traces" / "scorep-rank0", exp)
    os.mkfifo(exp / "traces" / "0.evt.fifo")
    status, err = cli_in_process("summarize", exp)
    assert status == 2 and "FIFO" in err and "0.evt.fifo" in err, err
    (exp / "traces" / "0.evt.fifo").unlink()
    (exp / "traces.otf2").unlink()
    os.mkfifo(exp / "traces.otf2")
    for given in (exp, exp / "traces.otf2"):
        status, err = cli_in_process("summarize", given)
        assert status == 2 and "Traceback" not in err, err
