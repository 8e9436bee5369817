"""Predictions held against the claims' bounds (``checker.predicted``): the band against the
bound, claim-level combination, measured error, and the shipped forecast of h200-buckets-b8."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnabert_scaling.provenance import BUCKET_HOOK_DEVIATION

from dnabert_scaling.checker import FAIL, PASS, load_claims
from dnabert_scaling.checker.predicted import (
    BLIND_SPOTS,
    NOT_PREDICTED,
    UNDECIDED,
    band_verdict,
    predicted_verdicts,
    prediction_figure,
)

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = load_claims(ROOT / "expected" / "claims.toml")
SHIPPED = ROOT / "expected" / "reference-results" / "h200-buckets-b8" / "predictions.json"


@pytest.mark.parametrize(
    ("band", "lo", "hi", "want"),
    [
        ({"mid": 0.085, "low": 0.063, "high": 0.108}, 0.6, None, FAIL),
        ({"mid": 0.7, "low": 0.65, "high": 0.8}, 0.6, None, PASS),
        ({"mid": 0.62, "low": 0.55, "high": 0.7}, 0.6, None, UNDECIDED),
        ({"mid": 0.25, "low": 0.21, "high": 0.3}, None, 0.2, FAIL),
        ({"mid": 1.0, "low": 1.0, "high": 1.0}, 0.8, 1.15, PASS),
        # the favourable end need not be the smaller value: the band is [min, max]
        ({"mid": 0.7, "low": 0.9, "high": 0.5}, 0.6, None, UNDECIDED),
        ({"mid": float("nan"), "low": 0.9, "high": 0.5}, 0.6, None, UNDECIDED),
        ({"mid": None}, 0.6, None, UNDECIDED),
    ],
)
def test_band_against_bound(band, lo, hi, want):
    assert band_verdict(band, lo, hi) == want


def test_which_checks_the_forecast_can_judge():
    checks = {ch.name: ch for c in CLAIMS for ch in c.checks}
    assert prediction_figure(checks["overlap"]) == "overlap_ratio"
    assert prediction_figure(checks["exposed_share"]) == "exposed_comm_share"
    assert prediction_figure(checks["efficiency"]) == "efficiency"
    assert prediction_figure(checks["share_grows"]) is None  # a trend, not a range
    assert prediction_figure(checks["allreduce_top"]) is None
    assert prediction_figure(checks["nccl_kernels"]) is None  # .max, not a median the forecast gives


def test_shipped_forecast_predicts_c5_fails_at_eight_gpus():
    pred = json.loads(SHIPPED.read_text())
    got = {c["id"]: c for c in predicted_verdicts(pred, CLAIMS, (1, 4, 8))}
    c5 = got["C5"]
    assert c5["verdict"] == FAIL and c5["world_sizes"] == [4, 8]
    at8 = next(r for r in c5["checks"] if r["check"] == "overlap" and r["world_size"] == 8)
    assert at8["verdict"] == FAIL and at8["bounds"] == {"lo": 0.6, "hi": None}
    assert at8["band"]["mid"] == pytest.approx(0.085, abs=5e-4)
    assert at8["band"]["low"] == pytest.approx(0.063, abs=5e-4) and at8["band"]["high"] == pytest.approx(0.108, abs=5e-4)
    assert {"busy-wait", "rank-skew"} <= set(at8["blind_spots"])
    assert "measured" not in at8  # nothing measured was given
    assert got["C4"]["verdict"] == PASS and got["C4"]["world_sizes"] == [8]
    # nothing the forecast gives can judge C1..C3: said, never guessed
    for cid in ("C1", "C2", "C3"):
        assert got[cid]["verdict"] == NOT_PREDICTED and got[cid]["why"]


def test_measured_world_sizes_carry_the_error():
    pred = json.loads(SHIPPED.read_text())
    got = {c["id"]: c for c in predicted_verdicts(pred, CLAIMS, (1, 4, 8), measured={4: {"overlap_ratio": 0.9}})}
    at4 = next(r for r in got["C5"]["checks"] if r["check"] == "overlap" and r["world_size"] == 4)
    assert at4["measured"] == 0.9
    assert at4["error"] == pytest.approx(at4["band"]["mid"] - 0.9)


def test_claim_combination():
    def pred(overlap, exposed):
        return {"world_sizes": {"8": {"overlap_ratio": overlap, "exposed_comm_share": exposed}}}

    c5 = [c for c in CLAIMS if c.id == "C5"]
    ok, high = {"mid": 0.8, "low": 0.7, "high": 0.9}, {"mid": 0.3, "low": 0.25, "high": 0.35}
    straddle = {"mid": 0.2, "low": 0.1, "high": 0.3}
    small = {"mid": 0.05, "low": 0.04, "high": 0.06}
    assert predicted_verdicts(pred(ok, small), c5, (8,))[0]["verdict"] == PASS
    assert predicted_verdicts(pred(ok, high), c5, (8,))[0]["verdict"] == FAIL
    assert predicted_verdicts(pred(ok, straddle), c5, (8,))[0]["verdict"] == UNDECIDED
    # one check predicted PASS, the other not predictable: the claim is not predicted PASS
    only = predicted_verdicts({"world_sizes": {"8": {"overlap_ratio": ok}}}, c5, (8,))[0]
    assert only["verdict"] == UNDECIDED and "exposed_share" in only["why"]
    none = predicted_verdicts({"world_sizes": {}}, c5, (8,))[0]
    assert none["verdict"] == NOT_PREDICTED and none["world_sizes"] == []


def test_blind_spots_are_stated():
    ids = {b["id"] for b in BLIND_SPOTS}
    assert ids == {"busy-wait", "rank-skew", "transport", "host-timeline"}
    assert all(b["what"] and b["effect"] and b["figures"] for b in BLIND_SPOTS)


def test_why_a_set_has_no_forecast(tmp_path):
    from dnabert_scaling.report import predictions, results
    from reportfixtures import cpu_results, gpu_results

    cpu = results.ResultSet(0, tmp_path, "cpu", "cpu-smoke", cpu_results((1, 2))[0], None, "test")
    assert predictions.load(cpu) == (None, predictions._why_none(cpu))
    assert "this is a CPU run" in predictions.load(cpu)[1]
    no_one = results.ResultSet(0, tmp_path, "gpu", "gpu", gpu_results((4, 8))[0], None, "test")
    assert "no world-size-1 run" in predictions.load(no_one)[1]
    gpu = results.ResultSet(0, tmp_path, "gpu", "gpu", gpu_results((1, 4))[0], None, "test")
    assert "without the DDP bucket hook" in predictions.load(gpu)[1]  # no ds:bucket ranges: predict would refuse it
    hooked = gpu_results((1, 4))[0]
    hooked["deviations"] = [BUCKET_HOOK_DEVIATION]
    gpu = results.ResultSet(0, tmp_path, "gpu", "gpu", hooked, None, "test")
    assert "run dnabert-scaling predict" in predictions.load(gpu)[1]


def test_a_malformed_forecast_is_refused_with_the_reason(tmp_path):
    from dnabert_scaling.report import predictions, results
    from reportfixtures import gpu_results

    rs = results.ResultSet(0, tmp_path, "gpu", "gpu", gpu_results((1, 4))[0], None, "test")
    good = json.loads(SHIPPED.read_text())
    for broken, word in (
        ({**good, "world_sizes": {"8": "x"}}, "world_sizes['8']"),
        ({**good, "world_sizes": {"<b>": {}}}, "world_sizes['<b>']"),
        ({**good, "comparison": {"4": []}}, "comparison['4']"),
        ({**good, "model": []}, "model is not an object"),
        ({**good, "schema": "other"}, "is not a dnabert-scaling/predictions/1 file"),
    ):
        (tmp_path / "predictions.json").write_text(json.dumps(broken))
        pred, why = predictions.load(rs)
        assert pred is None and word in why
    (tmp_path / "predictions.json").write_text(json.dumps(good))
    assert predictions.load(rs)[0] == good


def test_a_band_of_no_width_is_said_to_have_no_spread_not_shown_as_certain():
    """An efficiency of 1.0 at every end of the forecast's parameters (the all-reduce fits into the idle
    time whatever the bandwidth): PASS against the bound, but said to rest on a band that the varied
    parameters do not move, in the claim's reason and in the report's band column."""
    from dnabert_scaling.report import predictions, results
    from reportfixtures import gpu_results

    c6 = [c for c in CLAIMS if c.id == "C6"]
    flat = {"mid": 1.0, "low": 1.0, "high": 1.0}
    got = predicted_verdicts({"world_sizes": {"4": {"efficiency": flat}, "8": {"efficiency": flat}}}, c6, (4, 8))[0]
    assert got["verdict"] == PASS and all(r["no_spread"] for r in got["checks"])
    assert "the bands of efficiency at 4, efficiency at 8 have no width" in got["why"] and "does not model" in got["why"]
    wide = {"mid": 0.95, "low": 0.9, "high": 1.0}
    got = predicted_verdicts({"world_sizes": {"4": {"efficiency": wide}, "8": {"efficiency": wide}}}, c6, (4, 8))[0]
    assert got["verdict"] == PASS and not any(r["no_spread"] for r in got["checks"]) and "width" not in got["why"]
    rs = results.ResultSet(0, Path("."), "gpu", "gpu", gpu_results((1, 4))[0], None, "test")
    rows = predictions.predicted_rows(rs, {"world_sizes": {"4": {"efficiency": flat}}}, c6, [4, 8])
    assert rows[0]["checks"][0]["band_text"] == "1 (no spread)"
