"""Values that no measurement can give are refused where metrics.json is read (check, report) and
before analyze writes it: negative or infinite times, counts and ratios, shares above 1, a step part
longer than its step, efficiency at world size 1 other than 1, a placement that does not add up, a
rehearsal whose placement was dropped. A rehearsal of several ranks is judged on structure only,
whatever its shared_gpu says; a check may not judge a claim where the claim does not speak; report
and check write nothing over other results."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from cliprocess import cli_in_process
from dnabert_scaling import checker
from dnabert_scaling.checker import INVALID, PASS
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.metrics_schema import validate_metrics

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "expected" / "reference-results"


def _metrics(name: str) -> dict:
    return json.loads((RESULTS / name / "metrics.json").read_text())


def _stat(value: float) -> dict:
    return {"median": value, "p10": value, "p90": value, "min": value, "max": value, "n": 50}


def _gpu(m: dict, ws: str = "1") -> dict:
    return m["world_sizes"][ws]["traced"]["gpu"]


DAMAGE = [
    ("step time -1", lambda m: _gpu(m).update(step_time_s=_stat(-1.0)), "step_time_s.median is -1.0: a time"),
    ("step time inf", lambda m: _gpu(m).update(step_time_s=_stat(float("inf"))), "is inf: a time, count, share or ratio"),
    ("idle -7", lambda m: _gpu(m).update(idle_s=_stat(-7.0)), "idle_s.median is -7.0"),
    (
        "overlap 5",
        lambda m: _gpu(m).update(overlap_ratio=_stat(5.0)),
        "overlap_ratio.median is 5.0: a share lies between 0 and 1",
    ),
    ("exposed share -0.5", lambda m: _gpu(m).update(exposed_comm_share=_stat(-0.5)), "exposed_comm_share.median is -0.5"),
    ("ranking share 7", lambda m: _gpu(m)["ranking"][0].update(share=7), "ranking[0].share is 7: a share lies between 0 and 1"),
    ("class share -1", lambda m: _gpu(m)["kernel_classes"][0].update(share=-1), "kernel_classes[0].share is -1"),
    ("nccl kernels -3", lambda m: _gpu(m).update(nccl_kernels_per_step=_stat(-3.0)), "nccl_kernels_per_step.median is -3.0"),
    (
        "exposed 1e300",
        lambda m: _gpu(m).update(exposed_comm_s=_stat(1e300)),
        "exposed_comm_s.median is 1e+300, longer than the step's",
    ),
    ("efficiency 50", lambda m: m["world_sizes"]["1"].update(efficiency=50.0), "efficiency is 50.0 at world size 1"),
    (
        "throughput -5",
        lambda m: m["world_sizes"]["1"]["throughput"].update(samples_per_s=_stat(-5.0)),
        "samples_per_s.median is -5.0",
    ),
    ("placement 99 ranks", lambda m: m["world_sizes"]["1"]["traced"]["placement"].update(ranks=99), "placement.ranks is 99"),
    (
        "measured 8",
        lambda m: m.update(measured_world_sizes=[1, 2, 4, 8]),
        "measured_world_sizes lists 2, which world_sizes holds no entry",
    ),
    (
        "completeness dropped",
        lambda m: m["world_sizes"]["1"]["traced"].update(completeness=None),
        "sanity.trace_complete says yes, but the completeness it rests on is absent",
    ),
]


@pytest.mark.parametrize("damage, message", [d[1:] for d in DAMAGE], ids=[d[0] for d in DAMAGE])
def test_a_value_no_measurement_gives_is_refused_naming_its_key(damage, message):
    m = _metrics("h200-b8")
    damage(m)
    with pytest.raises(ArtifactError) as err:
        validate_metrics(m, "results/metrics.json")
    assert message in str(err.value), str(err.value)


def test_not_a_number_stays_allowed_the_checker_makes_it_invalid():
    """NaN (a figure the analysis could not compute) is read, and a check on it is INVALID: no data to
    judge, never a refutation (FAIL) and never a PASS."""
    m = _metrics("h200-b8")
    _gpu(m).update(nccl_kernels_per_step=_stat(float("nan")))
    verdicts = checker.evaluate(validate_metrics(m, "results/metrics.json"), checker.load_claims(checker.default_claims_path()))
    c1 = next(c for c in verdicts["claims"] if c["id"] == "C1")
    assert c1["verdict"] == INVALID and c1["checks"][0]["code"] == "not_a_number", c1["reason"]
    assert "NaN" in c1["reason"]


def test_a_rehearsal_dropped_from_the_fallbacks_is_refused():
    """The other way round from a dropped placement: the report lists the fallbacks, so a rehearsal
    that its placement records cannot be left out of them."""
    m = _metrics("h200-rehearsal")
    m["fallbacks"] = [f for f in m["fallbacks"] if f.get("kind") != "rehearsal"]
    with pytest.raises(ArtifactError, match="fallbacks record no rehearsal for run 'ws1-torch-r0'"):
        validate_metrics(m, "metrics.json")


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("efficiency", 0.95, "efficiency is 0.95, but the file's medians give samples/s(8) / (8 x samples/s(1))"),
        ("efficiency_spread", {"min": 0.9, "max": 0.99}, "efficiency_spread.min is 0.9, but the file's runs give"),
    ],
)
def test_an_efficiency_its_own_throughput_contradicts_is_refused(key, value, message):
    from reportfixtures import gpu_results

    m = gpu_results((1, 4, 8))[0]
    validate_metrics(m, "metrics.json")  # as analyze writes it
    m["world_sizes"]["8"][key] = value
    with pytest.raises(ArtifactError) as err:
        validate_metrics(m, "metrics.json")
    assert message in str(err.value), str(err.value)


def _rehearsal_with(change) -> dict:
    m = _metrics("h200-rehearsal")
    for ws in ("2", "4", "8"):
        change(m["world_sizes"][ws]["traced"]["placement"])
    return m


def test_a_rehearsal_said_not_to_share_its_gpu_is_refused():
    m = _rehearsal_with(lambda p: p.update(shared_gpu=False))
    with pytest.raises(ArtifactError, match="shared_gpu is false, but 2 ranks ran on 1 GPU"):
        validate_metrics(m, "metrics.json")


def test_a_rehearsal_whose_placement_was_dropped_is_refused():
    m = _metrics("h200-rehearsal")
    for ws in ("2", "4", "8"):
        m["world_sizes"][ws]["traced"]["placement"] = None
    with pytest.raises(ArtifactError, match="placement is absent, but the fallbacks record run 'ws2-torch-r0' as a rehearsal"):
        validate_metrics(m, "metrics.json")


def _verdicts(m: dict) -> dict[str, str]:
    claims_path = checker.default_claims_path()
    result = checker.evaluate(validate_metrics(m, "metrics.json"), checker.load_claims(claims_path))
    return {c["id"]: c["verdict"] for c in result["claims"]}


def test_a_rehearsal_is_judged_on_structure_only_even_where_its_gpus_are_its_own():
    """Placement says one GPU per rank (as on a node with enough GPUs run with --rehearse): NCCL
    still ran over loopback sockets, so the magnitude checks are INVALID, never PASS."""
    m = _rehearsal_with(lambda p: p.update(shared_gpu=False, gpus=p["ranks"], ranks_per_gpu=1))
    verdicts = _verdicts(m)
    assert verdicts["C2"] in (INVALID, PASS) and verdicts["C3"] == INVALID and verdicts["C5"] == INVALID, verdicts
    real = {c["id"]: c["verdict"] for c in json.loads((RESULTS / "h200-rehearsal" / "verdicts.json").read_text())["claims"]}
    assert verdicts == real


def test_one_rank_of_a_rehearsal_is_judged_as_measured():
    m = _metrics("h200-rehearsal")
    assert m["world_sizes"]["1"]["traced"]["placement"]["rehearsal"] is True
    assert checker.placement.not_one_gpu_per_rank(m["world_sizes"]["1"]["traced"]["placement"]) is False


CLAIM_AT_8_CHECKED_AT_1 = """
schema = "dnabert-scaling/claims/1"

[[claim]]
id = "Z3"
title = "At 8 GPUs AllReduce leads"
statement = "At 8 GPUs the AllReduce kernel is the largest single GPU activity."
world_sizes = [8]
device = "cuda"

  [[claim.check]]
  name = "top"
  what = "largest activity"
  metric = "traced.gpu.ranking"
  test = "top"
  activity = "nccl:AllReduce"
  lo = 1.0
  world_sizes = [1]
  rationale = "a ranking"
"""


@pytest.mark.parametrize("claim_ws, check_ws", [("[8]", "[1]"), ("[4, 8]", '">=2"'), ('">=2"', "[1, 2]"), ('">=4"', '">=2"')])
def test_a_check_may_not_judge_a_claim_where_the_claim_does_not_speak(tmp_path, claim_ws, check_ws):
    path = tmp_path / "claims.toml"
    text = CLAIM_AT_8_CHECKED_AT_1.replace("world_sizes = [8]", f"world_sizes = {claim_ws}")
    path.write_text(text.replace("world_sizes = [1]", f"world_sizes = {check_ws}"))
    with pytest.raises(ArtifactError, match="reach beyond the claim's"):
        checker.load_claims(path)


def test_a_report_refused_for_its_output_writes_no_verdicts_and_no_folder(tmp_path):
    results = tmp_path / "X"
    shutil.copytree(RESULTS / "h200-b8", results)
    (results / "verdicts.json").unlink()
    (results / "verdicts.txt").unlink()
    before = sorted(p.name for p in results.rglob("*"))
    for out in (results / "tables", results / "tables" / "new"):
        status, err = cli_in_process("report", results, "--out", out)
        assert status == 2 and "lies inside the input" in err, err
    assert sorted(p.name for p in results.rglob("*")) == before


def test_check_writes_no_verdicts_beside_another_sets_metrics(tmp_path):
    other = tmp_path / "other"
    shutil.copytree(RESULTS / "h200-b32", other)
    verdicts = (other / "verdicts.json").read_bytes()
    status, err = cli_in_process("check", RESULTS / "h200-b8", "--out", other)
    assert status == 2 and "holds another results set's metrics.json" in err, err
    assert (other / "verdicts.json").read_bytes() == verdicts


def test_a_key_twice_in_one_object_is_refused(tmp_path):
    results = tmp_path / "r"
    shutil.copytree(RESULTS / "h200-b8", results)
    text = (results / "metrics.json").read_text()
    text = text.replace('"schema": "dnabert-scaling/metrics/1",', '"schema": "dnabert-scaling/metrics/1", "label": "x",', 1)
    (results / "metrics.json").write_text(text)
    status, err = cli_in_process("check", results, "--out", tmp_path / "v")
    assert status == 2 and "the key 'label' appears twice" in err, err


def test_the_damage_list_starts_from_valid_files():
    for name in ("h200-b8", "h200-rehearsal"):
        validate_metrics(copy.deepcopy(_metrics(name)), "metrics.json")


EFFICIENCY_AT = CLAIM_AT_8_CHECKED_AT_1.replace(
    'metric = "traced.gpu.ranking"\n  test = "top"\n  activity = "nccl:AllReduce"\n', 'metric = "efficiency"\n'
)


@pytest.mark.parametrize("claim_ws, check_ws", [('">=1"', '">=1"'), ("[1, 4]", "[1, 4]")])
def test_an_efficiency_check_at_one_gpu_is_refused(tmp_path, claim_ws, check_ws):
    """Efficiency at world size 1 is 1 by definition: a scaling claim judged there would PASS on one GPU."""
    path = tmp_path / "claims.toml"
    text = EFFICIENCY_AT.replace("world_sizes = [8]", f"world_sizes = {claim_ws}").replace(
        "world_sizes = [1]", f"world_sizes = {check_ws}"
    )
    path.write_text(text.replace("lo = 1.0", "lo = 0.8\n  hi = 1.15"))
    with pytest.raises(ArtifactError, match="1 by definition"):
        checker.load_claims(path)


def test_a_monotone_check_with_more_points_than_world_sizes_is_refused(tmp_path):
    path = tmp_path / "claims.toml"
    text = CLAIM_AT_8_CHECKED_AT_1.replace(
        'metric = "traced.gpu.ranking"\n  test = "top"\n  activity = "nccl:AllReduce"\n',
        'metric = "traced.gpu.allreduce_share.median"\n  test = "monotone"\n  max_drop_rel = 0.1\n  min_points = 5\n',
    )
    path.write_text(
        text.replace("world_sizes = [8]", "world_sizes = [4, 8]")
        .replace("world_sizes = [1]", "world_sizes = [4, 8]")
        .replace("  lo = 1.0\n", "")
    )
    with pytest.raises(ArtifactError, match="min_points 5 exceeds the 2 world size"):
        checker.load_claims(path)


def test_a_results_folder_given_twice_is_refused(tmp_path):
    status, err = cli_in_process("report", RESULTS / "h200-b8", RESULTS / "h200-b8" / "metrics.json", "--out", tmp_path / "r")
    assert status == 2 and "given twice" in err and not (tmp_path / "r").exists(), err


def test_one_multi_rank_archive_stands_for_its_ranks_but_a_copy_does_not(tmp_path):
    """Score-P with MPI writes every rank into one archive: read for ranks 0 and 1 of one world size it
    is one input file twice with two GPU timelines, not a duplicated trace; the same bytes under
    another name still are."""
    archive = ROOT / "tests" / "data" / "traces" / "scorep-cuda-2rank"
    status, err = cli_in_process("analyze", "--world-size", "2", archive, "--out", tmp_path / "r")
    assert status == 0, err
    m = _metrics_at(tmp_path / "r")
    inputs = m["world_sizes"]["2"]["traced"]["inputs"]
    assert inputs[0]["sha256"] == inputs[1]["sha256"] and inputs[0]["gpu_timeline_sha256"] != inputs[1]["gpu_timeline_sha256"]
    inputs[1]["path"] = inputs[1]["path"] + "-copy"  # the same bytes under another name: one trace twice
    with pytest.raises(ArtifactError, match=r"inputs\[1\] has the same content as"):
        validate_metrics(m, "metrics.json")


def _metrics_at(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text())


def test_ranks_that_mark_different_step_counts_fail_a_sanity_item(tmp_path):
    """Two ranks of one DDP run step together: traces of 4 and 12 measured steps given as ranks 0 and 1
    are not one run's, so steps_complete fails and the claims of that world size are INVALID."""
    from dnabert_scaling.tools import synth

    synth.study_rank(0, steps=4, warmup=1, kernels_per_step=40, buckets=3, host_factor=0).write(tmp_path / "a" / "scorep-rank0")
    synth.study_rank(1, steps=12, warmup=1, kernels_per_step=200, buckets=3, host_factor=0).write(tmp_path / "b" / "scorep-rank1")
    ranks = [tmp_path / "a" / "scorep-rank0", tmp_path / "b" / "scorep-rank1"]
    status, err = cli_in_process("analyze", "--world-size", "2", *ranks, "--batch-size", "8", "--out", tmp_path / "r")
    assert status == 0, err
    sanity = _metrics_at(tmp_path / "r")["world_sizes"]["2"]["traced"]["sanity"]
    assert sanity["steps_complete"] is False
    assert "different numbers of measured steps (rank 0: 4, rank 1: 12)" in sanity["problems"][0]


def test_a_rank_whose_gpu_work_spans_two_devices_fails_the_streams_item(tmp_path):
    """Stream ids are per device: NCCL on device 9's stream 7 and compute on device 0's stream 7 would
    read as one stream (AllReduce 'not on its own stream'). A DDP rank owns one device: flagged."""
    from dnabert_scaling.tools import synth
    from dnabert_scaling.traces.otf2_writer import write_tables

    s = synth.study_rank(0, steps=3, warmup=1, kernels_per_step=20, buckets=2, host_factor=0)
    gpu = s.gpu.copy()
    gpu.loc[gpu["category"] == "nccl", "device"] = 9
    write_tables(gpu, s.host, tmp_path / "t" / "scorep-rank0", creator="Score-P 9.0")
    status, err = cli_in_process(
        "analyze", "--world-size", "1", tmp_path / "t" / "scorep-rank0", "--batch-size", "8", "--out", tmp_path / "r"
    )
    assert status == 0, err
    sanity = _metrics_at(tmp_path / "r")["world_sizes"]["1"]["traced"]["sanity"]
    assert sanity["gpu_streams"] is False and any("devices 0, 9" in p for p in sanity["problems"]), sanity


def test_free_form_provenance_is_not_held_to_the_measurement_rules():
    """provenance records the run (a clock offset may be negative); only measured figures must be >= 0."""
    m = _metrics("h200-b8")
    m["provenance"]["utc_offset_s"] = -3600
    validate_metrics(m, "metrics.json")
    _gpu(m).update(idle_s=_stat(-1.0))
    with pytest.raises(ArtifactError, match="idle_s.median is -1.0"):
        validate_metrics(m, "metrics.json")


def _bare_metrics() -> dict:
    """metrics.json of the shipped rehearsal's 8 ranks given as bare traces, as analyze writes it."""
    from dnabert_scaling.analysis import metrics as M
    from dnabert_scaling.analysis.runs import BareTraces, Inputs

    ranks = sorted((ROOT / "expected" / "reference" / "h200-rehearsal" / "ws2-torch-r0" / "traces").glob("*.json.gz"))
    m, _ = M.build(Inputs(bare=[BareTraces(2, ranks)]))
    return json.loads(json.dumps(m.to_json()))


def test_bare_traces_keep_their_fallback_and_hold_no_placement():
    """A placement written into bare traces' metrics (which record none) would make their magnitude
    checks judged as one GPU per rank; a dropped bare-traces fallback would make the report say none
    was taken. Both are refused; the file as analyze writes it loads."""
    m = _bare_metrics()
    validate_metrics(m, "metrics.json")
    assert [f["kind"] for f in m["fallbacks"]] == ["bare_traces"]
    own = {"ranks": 2, "hosts": 1, "gpus": 2, "ranks_per_gpu": 1, "shared_gpu": False, "identity": "uuid",
           "transports": ["P2P"], "rehearsal": False}  # fmt: skip
    placed = json.loads(json.dumps(m))
    placed["world_sizes"]["2"]["traced"]["placement"] = own
    with pytest.raises(ArtifactError, match="are traces given without their run folders, which record no placement"):
        validate_metrics(placed, "metrics.json")
    dropped = json.loads(json.dumps(m))
    dropped["fallbacks"] = []
    with pytest.raises(ArtifactError, match="record no bare_traces fallback for 'bare traces"):
        validate_metrics(dropped, "metrics.json")
