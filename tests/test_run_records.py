"""The run folder's records (summary.json, rank<R>/summary.json, manifest.json, steps.jsonl) as the
analysis reads them: a value of the wrong type or out of range is refused naming the file and the
key, never walked character by character, averaged into a throughput or turned into a traceback."""

from __future__ import annotations

import contextlib
import glob
import io
import json
import shutil
from pathlib import Path

import pytest

from dnabert_scaling import run_records
from dnabert_scaling.analysis.runs import load_run
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "expected" / "reference"
RUN = REFERENCE / "h200-b8" / "ws1-torch-r0"


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.fixture
def run(tmp_path) -> Path:
    copy = tmp_path / RUN.name
    shutil.copytree(RUN, copy)
    return copy


SUMMARY_EDITS = [
    ("deviations", "bf16", "deviations must be a list of strings, not 'bf16'"),
    ("warnings", ["ok", 3], "warnings[1] must be a string, not 3"),
    ("fallbacks", "synthetic", "fallbacks must be a list of fallbacks"),
    ("samples_per_s", "fast", "samples_per_s must be a finite number, not 'fast'"),
    ("samples_per_s", -5.0, "samples_per_s must be above 0, not -5.0"),
    ("samples_per_s", float("nan"), "samples_per_s must be a finite number, not nan"),
    ("median_step_time_s", 0, "median_step_time_s must be above 0, not 0"),
    ("finite_loss", "no", "finite_loss must be true or false, not 'no'"),
    ("ddp", 1, "ddp must be true or false, not 1"),
    ("ranks", "x", "ranks must be a list of rank summaries"),
    ("global_batch", True, "global_batch must be a JSON integer, not True"),
    ("measured_steps", 50.0, "measured_steps must be a JSON integer, not 50.0"),
    ("provenance", [1], "provenance must be a JSON object, not [1]"),
    ("dev_accuracy", 7, "dev_accuracy must lie between 0 and 1, not 7"),
    ("world_size", "08", "world_size must be a JSON integer, not '08'"),
]


@pytest.mark.parametrize("key, value, message", SUMMARY_EDITS, ids=[f"{k}={v!r}" for k, v, _ in SUMMARY_EDITS])
def test_a_summary_value_of_the_wrong_kind_is_refused_by_key(run, key, value, message):
    _edit(run / "summary.json", lambda d: d.__setitem__(key, value))
    with pytest.raises(ArtifactError) as err:
        load_run(run)
    assert str(err.value).startswith(f"{run / 'summary.json'}: ") and message in str(err.value)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["ranks"][0].__setitem__("rank", "0"), "ranks[0].rank must be a JSON integer, not '0'"),
        (lambda d: d["ranks"][0].__setitem__("median_step_time_s", -1.0), "ranks[0].median_step_time_s must be above 0"),
        (lambda d: d["fallbacks"][0].__setitem__("what", 3), "fallbacks[0].what must be a string, not 3"),
        (lambda d: d["fallbacks"].__setitem__(0, {}), "fallbacks[0] lacks 'what', 'used'"),
        (lambda d: d["fallbacks"].__setitem__(0, None), "fallbacks[0] must be a JSON object, not None"),
        (lambda d: d.pop("median_step_time_s"), "has samples_per_s without the median_step_time_s"),
    ],
)
def test_a_rank_or_fallback_inside_the_summary_is_checked(run, change, message):
    _edit(run / "summary.json", change)
    with pytest.raises(ArtifactError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_run(run)


def test_a_throughput_its_own_step_time_does_not_give_is_refused(run):
    """An inflated samples_per_s would pass a scaling claim: the summary's figures must agree."""
    _edit(run / "summary.json", lambda d: d.__setitem__("samples_per_s", d["samples_per_s"] * 3))
    with pytest.raises(ArtifactError, match="a throughput the run's own step time does not give"):
        load_run(run)


def test_a_median_step_faster_than_the_slowest_rank_is_refused(run):
    _edit(run / "summary.json", lambda d: d.__setitem__("median_step_time_s", d["median_step_time_s"] / 2))
    with pytest.raises(ArtifactError, match="samples_per_s is .* median_step_time_s gives|the slowest rank's median"):
        load_run(run)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("variant", "ddpx", "variant must be one of ddp, noddp, not 'ddpx'"),
        ("warnings", "lost", "warnings must be a list of strings, not 'lost'"),
        ("repeat", -1, "repeat must be 0 or more, not -1"),
        ("tracer", "scorep", "manifest.json says tracer 'scorep', summary.json 'torch': relabelled?"),
    ],
)
def test_a_manifest_value_of_the_wrong_kind_or_disagreeing_is_refused(run, key, value, message):
    _edit(run / "manifest.json", lambda d: d.__setitem__(key, value))
    with pytest.raises(ArtifactError) as err:
        load_run(run)
    assert message in str(err.value)


def _analyze(*argv) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = cli_main(["analyze", *map(str, argv)])
    return status, err.getvalue()


def test_a_bad_rank_summary_stops_analyze_naming_it_and_writes_nothing(run, tmp_path):
    _edit(run / "rank0" / "summary.json", lambda d: d.__setitem__("finite_loss", 1))
    status, err = _analyze(run, "--out", tmp_path / "out")
    assert status == 2 and "rank0/summary.json: finite_loss must be true or false, not 1" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_completed_run_with_a_rank_summary_cut_short_is_refused(run, tmp_path):
    path = run / "rank0" / "summary.json"
    path.write_text(path.read_text()[:100])
    status, err = _analyze(run, "--out", tmp_path / "out")
    assert status == 2 and "rank0/summary.json: not valid JSON" in err, err


def test_a_step_line_with_a_loss_that_is_not_a_number_is_refused_by_line(run, tmp_path):
    path = run / "rank0" / "steps.jsonl"
    lines = path.read_text().splitlines()
    step = json.loads(lines[10])
    lines[10] = json.dumps(dict(step, loss="x"))
    path.write_text("\n".join(lines) + "\n")
    status, err = _analyze(run, "--out", tmp_path / "out")
    assert status == 2 and "rank0/steps.jsonl: line 11: loss must be a number, not 'x'" in err, err


def test_a_step_whose_loss_went_nan_is_a_finding_not_an_error(run, tmp_path):
    """NaN is a loss the run logged (a finding the sanity items report), not a malformed record."""
    path = run / "rank0" / "steps.jsonl"
    lines = path.read_text().splitlines()
    lines[10] = json.dumps(dict(json.loads(lines[10]), loss=float("nan")))
    path.write_text("\n".join(lines) + "\n")
    status, err = _analyze(run, "--out", tmp_path / "out")
    assert status == 0, err
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["world_sizes"]["1"]["traced"]["sanity"]["finite_loss"] is False


def test_every_shipped_record_meets_the_contract():
    """What train and sweep wrote on the GPU passes: the rules describe the writers, not a wish."""
    checked = 0
    for path in map(Path, glob.glob(str(REFERENCE / "*" / "*" / "summary.json"))):
        run_records.check_run_summary(json.loads(path.read_text()), path)
        checked += 1
    for path in map(Path, glob.glob(str(REFERENCE / "*" / "*" / "rank*" / "summary.json"))):
        run_records.check_rank_summary(json.loads(path.read_text()), path)
        checked += 1
    for path in map(Path, glob.glob(str(REFERENCE / "*" / "*" / "manifest.json"))):
        run_records.check_manifest(json.loads(path.read_text()), path)
        checked += 1
    for path in map(Path, glob.glob(str(REFERENCE / "*" / "*" / "rank*" / "steps.jsonl"))):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            run_records.check_step_line(json.loads(line), path, number)
        checked += 1
    assert checked >= 150


def _gathered(*medians):
    return [
        {"status": "ok", "rank": r, "local_rank": r, "device": "cpu", "measured_steps": 3, "median_step_time_s": m}
        | {"finite_loss": True, "loss_first": 0.7, "loss_last": 0.6}
        for r, m in enumerate(medians)
    ]


@pytest.mark.parametrize("medians, step", [((0.02, 0.03), 0.03), ((0.02, None), None)])
def test_what_train_writes_meets_the_contract(medians, step):
    """The writer's summary passes the reader's rules; a rank without a timed step gives no
    throughput (null), not a step of 0 s."""
    from dnabert_scaling.run.train.log import result_line, run_summary

    config = {"world_size": 2, "device_type": "cpu", "tracer": "none", "global_batch": 16, "seq_len_tokens": 70}
    summary = run_summary(config, _gathered(*medians), accuracy=None, fallbacks=[], deviations=[], provenance={})
    run_records.check_run_summary(summary, Path("summary.json"))
    assert summary["median_step_time_s"] == step and (summary["samples_per_s"] is None) == (step is None)
    assert ("no timed step" in result_line(summary, summary["ranks"][0])) == (step is None)
