"""metrics_schema: the records are the one definition of metrics.json. What analyze wrote reads back
into records and out again unchanged; a file of another shape is refused with the key path; the
checker's metric paths and the test fixtures come from the same records."""

import copy
import json
from pathlib import Path

import pytest

from conftest import ROOT
from dnabert_scaling.checker.metric_paths import METRIC_TREE
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.metrics_schema import (
    GpuMetrics,
    MetricsFile,
    Stat,
    WorldSizeEntry,
    field_tree,
    validate_metrics,
)
from reportfixtures import cpu_results, gpu_results

SHIPPED = sorted((ROOT / "expected" / "reference-results").glob("*/metrics.json"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name)
def test_shipped_metrics_read_back_unchanged(path: Path):
    raw = json.loads(path.read_text())
    metrics = MetricsFile.from_json(raw, "", path)
    assert metrics.to_json() == raw
    entry = metrics.entry(1)
    assert entry is not None and entry.world_size == 1 and isinstance(entry.traced.gpu, GpuMetrics)


def test_fixtures_are_built_from_the_records():
    for metrics, _ in (gpu_results((1, 4, 8)), cpu_results((1, 2))):
        assert MetricsFile.from_json(metrics).to_json() == metrics
    gpu, _ = gpu_results((1, 8))
    assert "throughput_noddp" in gpu["world_sizes"]["1"] and "throughput_noddp" not in gpu["world_sizes"]["8"]


def _shipped() -> dict:
    return json.loads(SHIPPED[0].read_text())


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m["world_sizes"]["1"]["traced"]["gpu"].update(idle_seconds=1.0), "traced.gpu has no key 'idle_seconds'"),
        (
            lambda m: m["world_sizes"]["1"]["traced"]["sanity"].update(finite_loss="yes"),
            "sanity.finite_loss must be true or false",
        ),
        (lambda m: m["world_sizes"]["1"]["traced"]["gpu"]["ranking"][0].pop("share"), "ranking[0] lacks the key 'share'"),
        (
            lambda m: m["world_sizes"]["1"]["traced"]["gpu"]["step_time_s"].update(n=-1),
            "step_time_s.n is -1: a statistic needs at least one sample",
        ),
        (lambda m: m["world_sizes"]["1"]["traced"].update(ranks=[0, "1"]), "traced.ranks[1] must be an integer"),
        (lambda m: m.update(measured_world_sizes="1"), "measured_world_sizes must be a list"),
        (lambda m: m["world_sizes"]["1"]["traced"]["completeness"]["per_rank"]["0"].update(found=None), "['0'].found must be"),
        (
            lambda m: m["world_sizes"]["1"]["traced"]["gpu"].update(phase_validation={"stream-order": {"time": 1.2}}),
            "['stream-order'].time is 1.2: a share lies between 0 and 1",
        ),
        (
            lambda m: m["world_sizes"]["1"]["traced"]["gpu"].update(phase_validation={"stream-order": {"placed": -0.1}}),
            "['stream-order'].placed is -0.1: a share lies between 0 and 1",
        ),
    ],
)
def test_a_value_of_another_shape_is_refused_with_its_key_path(damage, message):
    metrics = _shipped()
    damage(metrics)
    with pytest.raises(ArtifactError) as err:
        validate_metrics(metrics, "results/metrics.json")
    assert message in str(err.value) and "results/metrics.json" in str(err.value)


def test_missing_optional_keys_read_as_their_defaults():
    metrics = _shipped()
    gpu = metrics["world_sizes"]["1"]["traced"]["gpu"]
    del gpu["rank_skew"], gpu["notes"]
    back = validate_metrics(copy.deepcopy(metrics), "m.json")
    assert back["world_sizes"]["1"]["traced"]["gpu"]["rank_skew"] is None
    assert back["world_sizes"]["1"]["traced"]["gpu"]["notes"] == []


def test_a_partial_stat_keeps_its_shape():
    """A throughput taken from a trace has only median and n: it is written that way, not with nulls."""
    assert Stat(median=2.0, n=3).to_json() == {"median": 2.0, "n": 3}
    assert Stat.from_json({"median": 2.0, "n": 3}).p10 is None


def test_checker_paths_are_the_records_fields():
    assert METRIC_TREE == field_tree(WorldSizeEntry)
    gpu = METRIC_TREE["traced"]["gpu"]
    assert set(gpu) == {k for k in GpuMetrics().to_json()} | {"timeline_step"}
    assert gpu["overlap_ratio"] == dict.fromkeys(("median", "p10", "p90", "min", "max", "n"))
    assert gpu["ranking"] is None  # a list is a value, not a group
