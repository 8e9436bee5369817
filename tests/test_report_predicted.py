"""Predictions held against the claims' bounds (``checker.predicted``): the band against the
bound, claim-level combination, measured error, and the shipped forecast of h200-buckets-b8."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dnabert_scaling.provenance import BUCKET_HOOK_DEVIATION

from dnabert_scaling.checker import FAIL, PASS, load_claims
from dnabert_scaling.checker.predicted import (
    BLIND_SPOTS,
    NOT_PREDICTED,
    UNDECIDED,
    UNINFORMATIVE,
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


def _shipped_set(tmp_path, name="h200-buckets-b8"):
    """A copy of a shipped results folder (metrics, verdicts, predictions, tables)."""
    import shutil

    shutil.copytree(ROOT / "expected" / "reference-results" / name, tmp_path / name)
    return tmp_path / name


def _edited(good: dict, where: str, value) -> dict:
    """``good`` with the value at ``where`` (dotted keys) replaced, or removed where ``value`` is DROP."""
    doc = json.loads(json.dumps(good))
    *parents, last = where.split(".")
    node = doc
    for key in parents:
        node = node[key]
    if value is DROP:
        del node[last]
    else:
        node[last] = value
    return doc


DROP = object()
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("where", "value", "words"),
    [
        ("world_sizes.8", "x", "world_sizes['8'] must be an object, not 'x'"),
        ("world_sizes.<b>", {}, "world_sizes['<b>'] is not a world size"),
        ("comparison.4", [], "comparison['4'] must be an object"),
        ("model", [], "model must be an object"),
        ("schema", "other", "not a dnabert-scaling/predictions/1 file"),
        ("world_sizes.8.allreduce_to_backward", {"mid": NAN, "low": -INF, "high": INF}, "allreduce_to_backward.low is -inf"),
        ("world_sizes.8.allreduce_to_backward.mid", NAN, "world_sizes['8'].allreduce_to_backward.mid is nan"),
        ("world_sizes.8.efficiency", {"mid": 1, "low": -5, "high": 1e300}, "world_sizes['8'].efficiency.low is -5: negative"),
        ("world_sizes.8.efficiency", {"mid": 0.9, "low": 0.95, "high": 1.0}, "not low <= mid <= high"),
        ("world_sizes.8.efficiency.high", "1", "world_sizes['8'].efficiency.high must be a number, not '1'"),
        ("world_sizes.8.overlap_ratio", DROP, "world_sizes['8'].overlap_ratio is missing"),
        ("world_sizes.8.overlap_ratio.low", DROP, "world_sizes['8'].overlap_ratio.low is missing"),
        ("world_sizes.8.overlap_ratio.high", 1.5, "overlap_ratio.high is 1.5: a share above 1"),
        ("world_sizes.8.bucket_allreduce_s", [0.1, -1], "bucket_allreduce_s[1] is -1"),
        ("baseline.step_time_s", INF, "baseline.step_time_s is inf"),
        ("world_sizes", {}, "world_sizes is empty"),
        ("source", DROP, "source is missing"),
        ("source.sha256", "abc", "source.sha256 must be a sha256"),
        ("goal.step_time_rel", -0.1, "goal.step_time_rel is -0.1"),
        ("fallbacks", None, "fallbacks must be a list"),
        # finite but contradicting the replay that wrote it
        ("world_sizes.8.efficiency", {"mid": 1, "low": 0.9, "high": 1.1}, "efficiency.low is 0.9, but the one-GPU step over"),
        ("world_sizes.8.efficiency", {"mid": 5, "low": 4, "high": 6}, "world_sizes['8'].efficiency.mid is 5"),
        ("world_sizes.8.exposed_comm_s", {"mid": 5, "low": 4, "high": 6}, "exposed_comm_s.mid is 5, longer than the step's"),
        ("world_sizes.8.step_time_s", {"mid": 0, "low": 0, "high": 0}, "step_time_s.mid is 0: a step takes time"),
        ("world_sizes.8.world_size", 16, "world_sizes['8'].world_size is 16, under the key of world size 8"),
    ],
)
def test_a_bad_forecast_is_refused_naming_the_file_and_key(tmp_path, capsys, where, value, words):
    """Numbers predict cannot have written (NaN, inf, negative, a share above 1, a band out of order)
    and missing parts are refused like a bad metrics.json: by the loader and by the report command
    (exit 2, the file and the key named, before the notebook runs, nothing written)."""
    from dnabert_scaling.cli import main
    from dnabert_scaling.errors import ArtifactError
    from dnabert_scaling.report import predictions, results

    folder = _shipped_set(tmp_path)
    good = json.loads((folder / "predictions.json").read_text())
    (folder / "predictions.json").write_text(json.dumps(_edited(good, where, value)))
    rs = results.load_set(0, folder)
    with pytest.raises(ArtifactError, match=re.escape(words)):
        predictions.load(rs)
    assert main(["report", str(folder), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'predictions.json'}: " in err and words in err and "Traceback" not in err, err
    assert not (tmp_path / "report").exists()


def test_the_shipped_forecasts_are_valid_and_tied_to_their_sets(tmp_path):
    from dnabert_scaling.report import predictions, results

    shipped = sorted((ROOT / "expected" / "reference-results").glob("*/predictions.json"))
    every = {p.parent.name for p in (ROOT / "expected" / "reference-results").glob("*/metrics.json")}
    # every set but the two recorded before the bucket hook existed, which predict refuses
    assert {p.parent.name for p in shipped} == every - {"h200-b8", "h200-b32"}
    for path in shipped:
        pred, why = predictions.load(results.load_set(0, path.parent))
        assert pred is not None and why == "", (path, why)


def test_another_sets_forecast_is_not_shown_as_this_sets(tmp_path):
    """The batch-32 Score-P set's predictions.json copied into the batch-8 set: not shown (no first-screen
    badge, none in section x.6), with the reason; likewise one that does not say what it replayed."""
    from dnabert_scaling.report import predictions, results
    from dnabert_scaling.report.summary import summary

    folder = _shipped_set(tmp_path)
    rs = results.load_set(0, folder)
    own = predictions.load(rs)[0]
    assert own is not None
    report = results.Report([rs], {"claims": str(ROOT / "expected" / "claims.toml")})
    study = [1, 2, 4, 8]
    assert any(c["predicted"] for c in summary(report, report.params["claims"], study)["rows"][0]["cells"])
    other = ROOT / "expected" / "reference-results" / "h200-scorep-b32" / "predictions.json"
    (folder / "predictions.json").write_text(other.read_text())
    pred, why = predictions.load(rs)
    assert pred is None and "made from another trace" in why and "re-run dnabert-scaling predict" in why, why
    assert "h200-scorep-b32" in why and "h200-buckets-b8" in why
    assert not any(c["predicted"] for c in summary(report, report.params["claims"], study)["rows"][0]["cells"])
    section = predictions.section_html(rs)
    assert "made from another trace" in section and "0.739" not in section
    (folder / "predictions.json").write_text(json.dumps(_edited(own, "source.sha256", DROP)))
    pred, why = predictions.load(rs)
    assert pred is None and "does not record the sha256 of the trace it replayed" in why
    # another set's forecast given this set's sha256: the format it replayed (Score-P's OTF2) still tells
    forged = json.loads(other.read_text())
    forged["source"]["sha256"] = own["source"]["sha256"]
    (folder / "predictions.json").write_text(json.dumps(forged))
    pred, why = predictions.load(rs)
    assert pred is None and "made from another trace" in why and "otf2" in why and "kineto" in why, why


def test_a_set_without_its_world_size_1_trace_ties_no_forecast(tmp_path):
    from dnabert_scaling.report import predictions, results
    from reportfixtures import gpu_results

    rs = results.ResultSet(0, tmp_path, "gpu", "gpu", gpu_results((1, 4))[0], None, "test")
    (tmp_path / "predictions.json").write_text(SHIPPED.read_text())
    pred, why = predictions.load(rs)
    assert pred is None and "records no traced world-size-1 trace" in why


def test_a_band_of_no_width_is_said_to_have_no_spread_not_shown_as_certain():
    """An efficiency of 1.0 at every end of the forecast's parameters (the all-reduce fits into the idle
    time whatever the bandwidth): within the bound, but UNINFORMATIVE, not PASS: the band rests on
    nothing the varied parameters move, said in the claim's reason and in the report's band column."""
    from dnabert_scaling.report import predictions, results
    from reportfixtures import gpu_results

    c6 = [c for c in CLAIMS if c.id == "C6"]
    flat = {"mid": 1.0, "low": 1.0, "high": 1.0}
    got = predicted_verdicts({"world_sizes": {"4": {"efficiency": flat}, "8": {"efficiency": flat}}}, c6, (4, 8))[0]
    assert got["verdict"] == UNINFORMATIVE and all(r["no_spread"] for r in got["checks"])
    assert all(r["verdict"] == UNINFORMATIVE and r["band_verdict"] == PASS for r in got["checks"])
    assert "the bands of efficiency at 4, efficiency at 8 have no width" in got["why"] and "does not model" in got["why"]
    wide = {"mid": 0.95, "low": 0.9, "high": 1.0}
    got = predicted_verdicts({"world_sizes": {"4": {"efficiency": wide}, "8": {"efficiency": wide}}}, c6, (4, 8))[0]
    assert got["verdict"] == PASS and not any(r["no_spread"] for r in got["checks"]) and "width" not in got["why"]
    rs = results.ResultSet(0, Path("."), "gpu", "gpu", gpu_results((1, 4))[0], None, "test")
    rows = predictions.predicted_rows(rs, {"world_sizes": {"4": {"efficiency": flat}}}, c6, [4, 8])
    assert rows[0]["checks"][0]["band_text"] == "1 (no spread)"


def test_the_first_screen_shows_a_forecast_of_no_spread_as_uninformative(tmp_path):
    """The shipped batch-8 set's C6 forecast is efficiency 1 at 8 GPUs at every end of the band (the
    model keeps the one-GPU host timeline): a neutral UNINFORMATIVE badge with "(no spread)", never a
    PASS-coloured "1 [1, 1]"; C5's forecast, whose band has a width, keeps its verdict."""
    from dnabert_scaling.report import results
    from dnabert_scaling.report.summary import summary

    rs = results.load_set(0, _shipped_set(tmp_path))
    report = results.Report([rs], {})
    s = summary(report, str(ROOT / "expected" / "claims.toml"), [1, 2, 4, 8])
    cells = dict(zip((c["id"] for c in s["claims"]), s["rows"][0]["cells"]))
    c6 = cells["C6"]["predicted"]
    assert (c6["verdict"], c6["cls"], c6["band"]) == (UNINFORMATIVE, "notrun", "1 (no spread)"), c6
    assert cells["C5"]["predicted"]["verdict"] == FAIL and "[" in cells["C5"]["predicted"]["band"]


def test_the_forecasts_notes_show_control_and_bidi_characters_as_escapes(tmp_path):
    """A note quotes the run record's gpu_name: its ANSI escape, bidi override and line separator are shown in the
    report as escapes (HTML escaping alone keeps them in the page, where a bidi override reorders the text)."""
    from dnabert_scaling.report import predictions, results

    folder = _shipped_set(tmp_path)
    doc = json.loads((folder / "predictions.json").read_text())
    doc["source"]["notes"] = ["the trace ran on NVIDIA \x1b[31mX\u202eY\u2028Z <b>"]
    (folder / "predictions.json").write_text(json.dumps(doc))
    section = predictions.section_html(results.load_set(0, folder))
    assert not any(c in section for c in "\x1b\u202e\u2028")
    assert "NVIDIA \\x1b[31mX\\u202eY\\u2028Z &lt;b&gt;" in section


def test_the_first_screens_forecast_says_on_what_node_and_whose_kernel_times_it_was_modelled(tmp_path):
    """A forecast badge's hover text names the node layout the forecast took and the GPU whose kernel times it
    replayed (the shipped H200 set on the study's A100 layout), and the key under the table says where the mix is
    explained."""
    from dnabert_scaling.report import results
    from dnabert_scaling.report.html import render
    from dnabert_scaling.report.summary import summary

    report = results.Report([results.load_set(0, _shipped_set(tmp_path))], {"claims": str(ROOT / "expected" / "claims.toml")})
    s = summary(report, report.params["claims"], [1, 2, 4, 8])
    cells = [c["predicted"] for c in s["rows"][0]["cells"] if c["predicted"]]
    assert cells and {c["modelled"] for c in cells} == {"node layout a100-nvswitch, kernel times of the NVIDIA H200"}
    html = str(render("summary.html.j2", s=s))
    assert "modelled on node layout a100-nvswitch, kernel times of the NVIDIA H200" in html
    assert "says where it pairs one GPU's kernel times with another GPU's links" in html
