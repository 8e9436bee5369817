"""The claims checker: every verdict of every claim on hand-made metric sets, the monotone-growth
rule with noise, the indicative figure, strict mode, and every malformed claims file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dnabert_scaling import checker
from dnabert_scaling.checker import FAIL, INVALID, NOT_RUN, PASS
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from reportfixtures import CPU_REASON, break_sanity, copy_metrics, cpu_results, drop_ws, gpu_results, set_efficiency, set_metric

ROOT = Path(__file__).resolve().parents[1]
CLAIMS_FILE = ROOT / "expected" / "claims.toml"


@pytest.fixture(scope="module")
def claims():
    return checker.load_claims(CLAIMS_FILE)


@pytest.fixture(scope="module")
def full():
    """A study-shaped sweep (1, 4, 8 GPUs) on which every claim holds."""
    return gpu_results((1, 4, 8))[0]


def verdict_of(metrics, claims, cid):
    out = checker.evaluate(metrics, claims)
    return next(c for c in out["claims"] if c["id"] == cid)


def top_compute(m, ws, factor):
    """Make the largest compute kernel `factor` times the AllReduce at world size `ws`."""
    ranking = m["world_sizes"][str(ws)]["traced"]["gpu"]["ranking"]
    ar = next(r for r in ranking if r["activity"] == "nccl:AllReduce")
    gemm = next(r for r in ranking if r["kind"] == "kernel")
    gemm["sum_s_per_step"] = ar["sum_s_per_step"] * factor
    return m


def gpu_null(m, ws, reason=CPU_REASON):
    set_metric(m, ws, "traced.gpu", None)
    set_metric(m, ws, "traced.gpu_not_run_reason", reason)
    return m


# (claim, verdict) -> how to turn the full sweep into a case with that verdict, and a phrase the
# reason must contain. Every claim has every verdict.
CASES = {
    ("C1", PASS): (lambda m: m, "within == 0"),
    ("C1", FAIL): (lambda m: set_metric(m, 1, "traced.gpu.nccl_kernels_per_step.max", 2.0), "outside == 0"),
    ("C1", NOT_RUN): (
        lambda m: gpu_null(m, 1, "the traces hold no GPU activity: rank 0"),
        "GPU analysis not run at world size 1: the traces hold no GPU activity",
    ),
    ("C1", INVALID): (
        lambda m: break_sanity(m, 1, "finite_loss", "a loss was not finite"),
        "sanity failed at world size 1 (finite loss)",
    ),
    ("C2", PASS): (lambda m: m, "never decreases"),
    ("C2", FAIL): (lambda m: set_metric(m, 8, "traced.gpu.allreduce_own_stream", False), "expected true"),
    ("C2", NOT_RUN): (lambda m: drop_ws(m, 8), "needs 2 world sizes"),
    ("C2", INVALID): (
        lambda m: break_sanity(m, 4, "steps_complete", "rank 3: 40 measured steps logged, expected 50"),
        "rank 3: 40 measured steps",
    ),
    ("C3", PASS): (lambda m: m, "is the largest GPU activity"),
    ("C3", FAIL): (lambda m: top_compute(m, 8, 1.3), "not the largest"),
    ("C3", NOT_RUN): (lambda m: drop_ws(m, 8), "world size 8 was not measured"),
    ("C3", INVALID): (lambda m: break_sanity(m, 8, "gpu_streams", "rank 5: no GPU streams"), "GPU streams in every trace"),
    ("C4", PASS): (lambda m: m, "within [0.5, 2]"),
    ("C4", FAIL): (lambda m: set_metric(m, 8, "traced.gpu.allreduce_to_backward.median", 3.4), "outside [0.5, 2]"),
    ("C4", NOT_RUN): (lambda m: set_metric(m, 8, "traced.gpu.allreduce_to_backward", None), "allreduce_to_backward is null"),
    ("C4", INVALID): (lambda m: break_sanity(m, 8), "all ranks present"),
    ("C5", PASS): (lambda m: m, "within [0.6, +inf]"),
    ("C5", FAIL): (lambda m: set_metric(m, 8, "traced.gpu.exposed_comm_share.median", 0.35), "outside [-inf, 0.2]"),
    ("C5", NOT_RUN): (lambda m: gpu_null(gpu_null(m, 4), 8), "CPU run (gloo, no GPU)"),
    ("C5", INVALID): (lambda m: break_sanity(m, 4), "sanity failed at world size 4"),
    ("C6", PASS): (lambda m: m, "within [0.8, 1.15]"),
    ("C6", FAIL): (lambda m: set_metric(m, 8, "efficiency", 0.62), "outside [0.8, 1.15]"),
    ("C6", NOT_RUN): (lambda m: set_metric(set_metric(m, 4, "efficiency", None), 8, "efficiency", None), "1-GPU baseline"),
    # the baseline's world size failed its sanity: every efficiency is INVALID
    ("C6", INVALID): (lambda m: break_sanity(m, 1, "all_ranks_present"), "sanity failed at world size 1"),
}


@pytest.mark.parametrize("cid,verdict", sorted(CASES), ids=[f"{c}-{v.replace(' ', '_')}" for c, v in sorted(CASES)])
def test_every_verdict_of_every_claim(full, claims, cid, verdict):
    make, phrase = CASES[(cid, verdict)]
    m = make(copy_metrics(full))
    got = verdict_of(m, claims, cid)
    assert got["verdict"] == verdict, got["reason"]
    assert phrase in got["reason"], got["reason"]
    assert got["statement"] and got["bounds"]
    if verdict in (PASS, FAIL):
        assert got["runs"], "a judged claim names the runs it used"
        assert got["measured"], "a judged claim carries its measured values"


def test_full_sweep_passes_everything_and_exits_zero(full, claims):
    out = checker.evaluate(full, claims)
    assert [c["verdict"] for c in out["claims"]] == [PASS] * 6
    assert out["summary"]["counts"][PASS] == 6
    assert checker.exit_status(out) == 0 and checker.exit_status(out, strict=True) == 0
    assert all(row["ok"] for row in out["sanity"])
    c4 = next(c for c in out["claims"] if c["id"] == "C4")
    assert c4["measured"]["8"]["traced.gpu.allreduce_to_backward.median"] == pytest.approx(
        full["world_sizes"]["8"]["traced"]["gpu"]["allreduce_to_backward"]["median"]
    )
    assert c4["bounds"]["allreduce_to_backward"]["lo"] == 0.5 and c4["bounds"]["allreduce_to_backward"]["hi"] == 2.0
    assert c4["runs"] == ["ws8-scorep-r0"]
    c6 = next(c for c in out["claims"] if c["id"] == "C6")
    assert "ws1-none-r0" in c6["runs"], "efficiency uses the 1-GPU baseline runs too"
    assert "DDP wrapper" in c6["measured"]["8"]["efficiency_baseline"]


def test_shipped_claims_file(claims):
    assert [c.id for c in claims] == ["C1", "C2", "C3", "C4", "C5", "C6"]
    for c in claims:
        assert c.statement and c.checks
        for ch in c.checks:
            assert len(ch.rationale) > 60, f"{c.id}/{ch.name}: the rationale should say why"
    by = {c.id: c for c in claims}
    assert by["C3"].indicative and by["C4"].indicative and by["C6"].indicative
    assert by["C2"].world_sizes.at_least == 2 and by["C5"].world_sizes.at_least == 2


# ---- no PASS without data --------------------------------------------------------------------


def test_cpu_smoke_run_passes_nothing_and_says_why(claims):
    m, _ = cpu_results((1, 2))
    out = checker.evaluate(m, claims)
    verdicts = {c["id"]: c for c in out["claims"]}
    assert all(v["verdict"] == NOT_RUN for v in verdicts.values()), {k: v["verdict"] for k, v in verdicts.items()}
    assert "ran on CPU (no GPU)" in verdicts["C1"]["reason"]
    assert "ran on CPU (no GPU)" in verdicts["C5"]["reason"]
    assert "GPU analysis: CPU run (gloo, no GPU): the traces hold no GPU activity" in verdicts["C1"]["reason"]
    # a CPU run's sanity has gpu_streams "not applicable": it does not invalidate anything
    assert out["sanity"][0]["checks"]["gpu_streams"] == "N/A" and out["sanity"][0]["ok"] is True
    assert checker.exit_status(out) == 0 and checker.exit_status(out, strict=True) == 1


def test_cpu_efficiency_at_a_claim_world_size_is_not_judged(claims):
    m, _ = cpu_results((1, 4))
    set_metric(m, 4, "efficiency", 0.3)  # bad CPU scaling says nothing about GPUs
    got = verdict_of(m, claims, "C6")
    assert got["verdict"] == NOT_RUN and "CPU" in got["reason"]


def test_missing_metrics_are_never_pass(full, claims):
    m = copy_metrics(full)
    for ws in (1, 4, 8):
        gpu_null(m, ws, "no traces in ws-run")
        set_metric(m, ws, "efficiency", None)
    out = checker.evaluate(m, claims)
    assert {c["verdict"] for c in out["claims"]} == {NOT_RUN}
    assert all("no traces in ws-run" in c["reason"] or "baseline" in c["reason"] for c in out["claims"])


def test_missing_key_is_not_run(full, claims):
    m = copy_metrics(full)
    del m["world_sizes"]["1"]["traced"]["gpu"]["nccl_kernels_per_step"]
    got = verdict_of(m, claims, "C1")
    assert got["verdict"] == NOT_RUN and "nccl_kernels_per_step is missing at world size 1" in got["reason"]


def test_nan_is_never_pass(full, claims, tmp_path):
    m = copy_metrics(full)
    set_metric(m, 8, "traced.gpu.allreduce_to_backward.median", float("nan"))
    (tmp_path / "metrics.json").write_text(json.dumps(m))  # Python's json writes NaN
    out = checker.check_results(tmp_path, CLAIMS_FILE)
    c4 = next(c for c in out["claims"] if c["id"] == "C4")
    assert c4["verdict"] == INVALID and "NaN" in c4["reason"]  # no data to judge: never PASS, nor a refutation
    checker.write_verdicts(out, tmp_path)
    json.loads((tmp_path / "verdicts.json").read_text())  # strict JSON: the NaN was written as null


def test_nan_in_a_trend_is_invalid(full, claims):
    m = copy_metrics(full)
    set_metric(m, 4, "traced.gpu.allreduce_share.median", float("nan"))
    got = verdict_of(m, claims, "C2")
    assert got["verdict"] == INVALID and "not a number" in got["reason"]


# ---- the monotone-growth rule ----------------------------------------------------------------


def shares(full, values: dict[int, float], sizes=(1, 2, 4, 8)):
    m, _ = gpu_results(sizes)
    for ws, v in values.items():
        set_metric(m, ws, "traced.gpu.allreduce_share.median", v)
    return m


def grows(claims, m):
    got = verdict_of(m, claims, "C2")
    return got, next(c for c in got["checks"] if c["name"] == "share_grows")


@pytest.mark.parametrize(
    "series,verdict",
    [
        ({2: 0.20, 4: 0.30, 8: 0.40}, PASS),  # strictly growing
        ({2: 0.30, 4: 0.30, 8: 0.30}, PASS),  # flat is non-decreasing
        ({2: 0.30, 4: 0.28, 8: 0.35}, PASS),  # a 6.7% dip: noise
        ({2: 0.30, 4: 0.271, 8: 0.35}, PASS),  # 9.7%: still inside 10%
        ({2: 0.30, 4: 0.26, 8: 0.35}, FAIL),  # 13.3%: beyond the tolerance
        ({2: 0.30, 4: 0.40, 8: 0.33}, FAIL),  # a drop from the peak, not from the neighbour only
        ({2: 0.40, 4: 0.37, 8: 0.345}, FAIL),  # each step < 10%, but 13.8% below the running maximum
    ],
)
def test_monotone_growth_with_noise(full, claims, series, verdict):
    got, part = grows(claims, shares(full, series))
    assert part["verdict"] == verdict, part["reason"]
    assert part["world_size"] == [2, 4, 8]
    assert set(part["measured"]) >= {"2", "4", "8"}


def test_growth_needs_two_multi_gpu_world_sizes(full, claims):
    m, _ = gpu_results((1, 2))
    got, part = grows(claims, m)
    assert part["verdict"] == NOT_RUN and "needs 2 world sizes" in part["reason"] and "has 1 (2)" in part["reason"]
    others = [c for c in got["checks"] if c["name"] != "share_grows"]
    assert {c["verdict"] for c in others} == {PASS}, "the 'appears, own stream' parts are judged"
    assert got["verdict"] == NOT_RUN
    assert "[PASS]" in got["reason"] and "[NOT RUN]" in got["reason"]


def test_growth_skips_a_world_size_without_data_but_says_so(full, claims):
    m = shares(full, {2: 0.2, 4: 0.3, 8: 0.4})
    gpu_null(m, 4, "no traces in ws4-torch-r0")
    got, part = grows(claims, m)
    assert part["verdict"] == PASS and "no traces in ws4-torch-r0" in part["reason"]
    assert got["verdict"] == NOT_RUN  # the other parts at ws 4 are NOT RUN


def test_fail_outranks_not_run(full, claims):
    m = copy_metrics(full)
    set_metric(m, 4, "efficiency", 0.5)
    drop_ws(m, 8)
    got = verdict_of(m, claims, "C6")
    assert got["verdict"] == FAIL and got["reason"].startswith("[FAIL]")


# ---- the indicative figure -------------------------------------------------------------------


def test_indicative_figure_at_the_largest_measured_world_size(claims):
    m, _ = gpu_results((1, 2, 4))
    out = checker.evaluate(m, claims)
    by = {c["id"]: c for c in out["claims"]}
    for cid in ("C3", "C4"):
        c = by[cid]
        assert c["verdict"] == NOT_RUN, "an indicative figure is never a PASS"
        (ind,) = c["indicative"]
        assert ind["world_size"] == 4 and ind["instead_of"] == [8]
        assert ind["within_bounds"] is True
        assert ind["reason"].startswith("indicative only (world size 4, not the claim's 8)")
        assert ind["reason"].endswith(": " + ind["why"]) and ind["why"]  # the sentence is made from the fields
    c4 = by["C4"]["indicative"][0]["measured"]
    assert c4["traced.gpu.allreduce_to_backward.median"] == pytest.approx(
        m["world_sizes"]["4"]["traced"]["gpu"]["allreduce_to_backward"]["median"]
    )
    # C6 judges 4 itself; 8 is missing but 4 is already a verdict, so no indicative figure
    assert by["C6"]["indicative"] is None and by["C6"]["verdict"] == NOT_RUN
    assert {c["verdict"] for c in by["C6"]["checks"]} == {PASS, NOT_RUN}
    assert {c["code"] for c in by["C6"]["checks"]} == {"judged", "not_measured"}
    text = checker.format_table(out)
    assert "INDICATIVE (not a verdict)" in text
    assert f"instead of 8: {by['C3']['indicative'][0]['why']}" in " ".join(text.split())


def test_indicative_figure_shows_an_out_of_bounds_value_too(claims):
    m, _ = gpu_results((1, 2))
    set_metric(m, 2, "traced.gpu.allreduce_to_backward.median", 0.2)
    c4 = verdict_of(m, claims, "C4")
    assert c4["verdict"] == NOT_RUN and c4["indicative"][0]["within_bounds"] is False
    c6 = verdict_of(m, claims, "C6")
    (ind,) = c6["indicative"]  # one figure for both missing world sizes
    assert ind["world_size"] == 2 and ind["instead_of"] == [4, 8]
    assert ind["reason"] == f"indicative only (world size 2, not the claim's 4, 8): {ind['why']}"


def test_reason_codes_name_why_a_check_did_not_pass(claims):
    m, _ = gpu_results((1, 2))
    codes = {(c["id"], ch["name"]): ch["code"] for c in checker.evaluate(m, claims)["claims"] for ch in c["checks"]}
    assert set(codes.values()) <= set(checker.REASON_CODES)
    assert "not_measured" in codes.values() and "judged" in codes.values()
    broken = break_sanity(copy_metrics(m), 2, "all_ranks_present")
    invalid = [ch for c in checker.evaluate(broken, claims)["claims"] for ch in c["checks"] if ch["verdict"] == INVALID]
    assert invalid and all(ch["code"] == "sanity_failed" for ch in invalid)
    assert codes[("C2", "share_grows")] == "too_few_points"  # a trend over one multi-GPU world size
    one = {c["id"]: c for c in checker.evaluate(gpu_results((1,))[0], claims)["claims"]}
    c5 = one["C5"]["checks"]
    assert {(ch["verdict"], ch["code"], ch["at_least"]) for ch in c5} == {(NOT_RUN, "no_world_size", 2)}


def test_no_indicative_figure_where_nothing_was_measured(claims):
    m, _ = cpu_results((1, 2))
    out = checker.evaluate(m, claims)
    assert all(c["indicative"] is None for c in out["claims"])


def test_no_indicative_figure_without_a_multi_gpu_run(claims):
    m, _ = gpu_results((1,))
    c3 = verdict_of(m, claims, "C3")
    assert c3["verdict"] == NOT_RUN and c3["indicative"] is None
    assert "world size 8 was not measured (measured: 1)" in c3["reason"]


# ---- the command: files, table, exit status, strict -------------------------------------------


def test_cli_writes_verdicts_and_exit_status(tmp_path, full, capsys):
    ok = tmp_path / "ok"
    ok.mkdir()
    (ok / "metrics.json").write_text(json.dumps(full))
    assert cli_main(["check", str(ok), "--expected", str(CLAIMS_FILE)]) == 0
    printed = capsys.readouterr().out
    assert "Summary: 6 PASS, 0 FAIL, 0 NOT RUN, 0 INVALID of 6 claims" in printed
    data = json.loads((ok / "verdicts.json").read_text())
    assert set(data) >= {"claims", "sanity", "summary"}
    for c in data["claims"]:
        assert set(c) >= {"id", "verdict", "statement", "measured", "bounds", "runs", "reason"}
    assert (ok / "verdicts.txt").read_text() == printed

    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metrics.json").write_text(json.dumps(set_efficiency(copy_metrics(full), 8, 0.5)))
    assert cli_main(["check", str(bad), "--expected", str(CLAIMS_FILE), "--quiet"]) == 1
    assert json.loads((bad / "verdicts.json").read_text())["summary"]["exit_status"] == 1

    invalid = tmp_path / "invalid"
    invalid.mkdir()
    (invalid / "metrics.json").write_text(json.dumps(break_sanity(copy_metrics(full), 8)))
    assert cli_main(["check", str(invalid), "--expected", str(CLAIMS_FILE), "--quiet"]) == 1


def test_strict_mode(tmp_path, capsys):
    m, _ = gpu_results((1, 4))
    (tmp_path / "metrics.json").write_text(json.dumps(m))
    args = ["check", str(tmp_path), "--expected", str(CLAIMS_FILE), "--quiet"]
    assert cli_main(args) == 0
    assert cli_main([*args, "--strict"]) == 1
    out = json.loads((tmp_path / "verdicts.json").read_text())
    assert out["summary"]["strict"] is True and out["summary"]["counts"][NOT_RUN] >= 1


def test_cli_out_folder_and_missing_metrics(tmp_path, full, capsys):
    (tmp_path / "metrics.json").write_text(json.dumps(full))
    out = tmp_path / "elsewhere"
    assert cli_main(["check", str(tmp_path / "metrics.json"), "--expected", str(CLAIMS_FILE), "--out", str(out), "--quiet"]) == 0
    assert (out / "verdicts.json").is_file() and not (tmp_path / "verdicts.json").exists()
    assert cli_main(["check", str(tmp_path / "nothing"), "--expected", str(CLAIMS_FILE)]) == 2
    assert f"{tmp_path / 'nothing'}: does not exist" in capsys.readouterr().err  # a typo'd folder: not "no metrics.json"
    (tmp_path / "empty").mkdir()
    assert cli_main(["check", str(tmp_path / "empty"), "--expected", str(CLAIMS_FILE)]) == 2
    assert "no metrics.json" in capsys.readouterr().err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "metrics.json").write_text("{not json")
    assert cli_main(["check", str(tmp_path / "broken"), "--expected", str(CLAIMS_FILE)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_sanity_table_lists_problems(full, claims):
    m = break_sanity(copy_metrics(full), 4, "all_ranks_present", "run ws4-scorep-r0: rank summaries for [0, 1, 2], expected 0..3")
    out = checker.evaluate(m, claims)
    row = next(r for r in out["sanity"] if r["world_size"] == 4)
    assert row["ok"] is False and row["checks"]["all_ranks_present"] == FAIL
    text = checker.format_table(out)
    assert "problem: run ws4-scorep-r0: rank summaries for [0, 1, 2]" in text


# ---- malformed claims files ------------------------------------------------------------------

GOOD = """
schema = "dnabert-scaling/claims/1"

[[claim]]
id = "X1"
statement = "Something measurable."
world_sizes = [8]

  [[claim.check]]
  name = "ratio"
  what = "a ratio"
  metric = "traced.gpu.allreduce_to_backward.median"
  lo = 0.5
  hi = 2.0
  rationale = "because"
"""


def _write(tmp_path, text):
    p = tmp_path / "claims.toml"
    p.write_text(text)
    return p


def test_good_minimal_claims_file_loads(tmp_path):
    (c,) = checker.load_claims(_write(tmp_path, GOOD))
    assert c.id == "X1" and c.checks[0].lo == 0.5


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda s: s.replace("lo = 0.5", "lo = 0.5\nlo = 0.7"), "not valid TOML"),
        (lambda s: s + "\n[extra]\nx = 1\n", "unknown top-level key(s) extra"),
        (lambda s: s.replace('schema = "dnabert-scaling/claims/1"', 'schema = "claims/0"'), "schema must be"),
        (lambda s: s.replace('statement = "Something measurable."', 'statment = "typo"'), "claim X1: unknown key(s) statment"),
        (lambda s: s.replace('statement = "Something measurable."\n', ""), "claim X1: missing field 'statement'"),
        (lambda s: s.replace('id = "X1"\n', ""), "claim #1: missing field 'id'"),
        (lambda s: s.replace("world_sizes = [8]\n", ""), "claim X1: missing field 'world_sizes'"),
        (lambda s: s.replace("world_sizes = [8]", 'world_sizes = "eight"'), "world_sizes must be"),
        (lambda s: s.replace("world_sizes = [8]", "world_sizes = [4, 4]"), "lists a world size twice"),
        (lambda s: s.replace('  rationale = "because"\n', ""), "claim X1, check 'ratio': missing field 'rationale'"),
        (lambda s: s.replace('  what = "a ratio"\n', ""), "claim X1, check 'ratio': missing field 'what'"),
        (
            lambda s: s.replace('  rationale = "because"', '  rationale = "because"\n  tolerance = 0.1'),
            "claim X1, check 'ratio': unknown key(s) tolerance",
        ),
        (lambda s: s.replace("lo = 0.5", "lo = 2.5"), "claim X1, check 'ratio': lo (2.5) > hi (2.0)"),
        (lambda s: s.replace("lo = 0.5\n  hi = 2.0\n", ""), "give lo, hi or both"),
        (lambda s: s.replace("lo = 0.5", 'lo = "half"'), "lo must be a finite number"),
        (lambda s: s.replace("lo = 0.5", "lo = nan"), "lo must be a finite number"),
        (
            lambda s: s.replace("allreduce_to_backward.median", "allreduce_to_backwards.median"),
            "unknown metric path 'traced.gpu.allreduce_to_backwards.median'",
        ),
        (
            lambda s: s.replace("traced.gpu.allreduce_to_backward.median", "traced.gpu.allreduce_to_backward"),
            "names a group, not a value",
        ),
        (
            lambda s: s.replace("traced.gpu.allreduce_to_backward.median", "traced.gpu.allreduce_to_backward.mean"),
            "has no 'mean'",
        ),
        (
            lambda s: s.replace("  lo = 0.5\n", '  test = "top"\n  lo = 0.5\n  activity = "nccl:AllReduce"\n'),
            "test 'top' reads the ranking",
        ),
        (lambda s: s.replace("  lo = 0.5\n  hi = 2.0\n", '  test = "monotone"\n'), "needs max_drop_rel"),
        (
            lambda s: s.replace("  lo = 0.5\n  hi = 2.0\n", '  test = "monotone"\n  max_drop_rel = 0.1\n  min_points = 1\n'),
            "min_points must be an integer >= 2",
        ),
        (lambda s: s.replace("  lo = 0.5\n", '  test = "equals"\n  value = true\n'), "key(s) hi do not apply to test 'equals'"),
        (lambda s: s.replace("  lo = 0.5\n", '  test = "between"\n  lo = 0.5\n'), "unknown test 'between'"),
        (
            lambda s: s.replace('  rationale = "because"', '  rationale = "because"\n  report = ["traced.gpu.nope"]'),
            "report: unknown metric path",
        ),
        (lambda s: s + s[s.index("[[claim]]") :], "claim X1: duplicate claim id"),
        (lambda s: s[: s.index("  [[claim.check]]")], "claim X1: missing field 'check'"),
        (lambda s: s.replace("world_sizes = [8]", 'world_sizes = [8]\ndevice = "tpu"'), "device must be"),
        (lambda s: s[: s.index("[[claim]]")], "no claims"),
    ],
)
def test_malformed_claims_are_clear_errors(tmp_path, edit, message):
    path = _write(tmp_path, edit(GOOD))
    with pytest.raises(ArtifactError) as err:
        checker.load_claims(path)
    assert message in str(err.value)
    assert str(path) in str(err.value), "the error names the file"


def test_malformed_claims_via_cli_exit_2(tmp_path, full, capsys):
    (tmp_path / "metrics.json").write_text(json.dumps(full))
    path = _write(tmp_path, GOOD.replace("lo = 0.5", "lo = 3.0"))
    assert cli_main(["check", str(tmp_path), "--expected", str(path)]) == 2
    err = capsys.readouterr().err
    assert "claims.toml" in err and "claim X1, check 'ratio'" in err and "Traceback" not in err
    assert cli_main(["check", str(tmp_path), "--expected", str(tmp_path / "absent.toml")]) == 2
    assert "claims file not found" in capsys.readouterr().err


def test_format_numbers():
    assert checker._fmt(0.0) == "0" and checker._fmt(1.0) == "1" and checker._fmt(0.856) == "0.856"
    assert checker._fmt(float("nan")) == "NaN" and checker._fmt(True) == "true"
    assert not math.isnan(1.0)


def test_default_claims_path_outside_the_tree_is_the_source_trees(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no expected/ here: the package's own source tree is used
    path = checker.default_claims_path()
    assert path.is_absolute() and path.is_file() and path == Path(__file__).resolve().parents[1] / "expected" / "claims.toml"


def test_check_says_why_its_exit_status_is_1(tmp_path, capsys):
    """A reader of make reproduce's output sees why a set's check exits 1 (INVALID or FAIL verdicts, or NOT RUN
    under --strict), not a bare status."""
    rehearsal = ROOT / "expected" / "reference-results" / "h200-rehearsal"
    assert cli_main(["check", str(rehearsal), "--expected", str(CLAIMS_FILE), "--out", str(tmp_path / "a"), "--quiet"]) == 1
    invalid = sum(c["verdict"] == INVALID for c in json.loads((tmp_path / "a" / "verdicts.json").read_text())["claims"])
    assert f"(exit status 1: {invalid} INVALID)" in capsys.readouterr().err and invalid
    single = ROOT / "expected" / "reference-results" / "h200-b8"
    assert cli_main(["check", str(single), "--expected", str(CLAIMS_FILE), "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert "(exit status 0)" in capsys.readouterr().err
    assert (
        cli_main(["check", str(single), "--expected", str(CLAIMS_FILE), "--out", str(tmp_path / "c"), "--strict", "--quiet"]) == 1
    )
    assert "(exit status 1: NOT RUN under --strict)" in capsys.readouterr().err
