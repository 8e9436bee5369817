"""The completeness gate: no verdict from a trace that lost GPU activity records.

Real traces: the Score-P 8.4 run that lost most of its kernels (tests/data/traces/
scorep84-h200-dnabert2-incomplete, compacted with identical tables) and the shipped H200 Kineto
sets; written traces: study-shaped Score-P 9 layout archives, complete, with 1% of the kernels
removed (launches kept), and without launch records.
"""

import json
import shutil
import subprocess

import numpy as np
import pytest

from conftest import DATA, PYTHON, ROOT
from tracegen import write_ground_truth

INCOMPLETE_RUN = DATA / "traces" / "scorep84-h200-dnabert2-incomplete" / "ws1-scorep-r0"
INCOMPLETE_EXP = INCOMPLETE_RUN / "traces" / "scorep-rank0"
CLAIMS = ROOT / "expected" / "claims.toml"


def cli(*args, cwd=ROOT):
    return subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def analyze_and_check(tmp_path, *inputs, claims=CLAIMS):
    out = tmp_path / "results"
    a = cli("analyze", *inputs, "--out", out, "--expected", claims)
    assert a.returncode == 0, a.stderr[-3000:]
    c = cli("check", out, "--expected", claims, "--quiet")
    metrics = json.loads((out / "metrics.json").read_text())
    verdicts = json.loads((out / "verdicts.json").read_text())
    return metrics, verdicts, c


def claim(verdicts, cid):
    return next(c for c in verdicts["claims"] if c["id"] == cid)


def sanity(verdicts, ws=1):
    return next(r for r in verdicts["sanity"] if r["world_size"] == ws)


# -- the real Score-P 8.4 trace that lost its kernels ------------------------------------------


def test_real_incomplete_scorep_run_is_invalid_with_its_figures(tmp_path):
    metrics, verdicts, check = analyze_and_check(tmp_path, INCOMPLETE_RUN)
    traced = metrics["world_sizes"]["1"]["traced"]
    assert traced["sanity"]["trace_complete"] is False
    rank0 = traced["completeness"]["per_rank"]["0"]
    # 39,734 kernel launches + 6,298 copy calls over the whole run; inside the 30 measured steps:
    assert (rank0["launches"], rank0["found"], rank0["steps_below_bound"], rank0["steps"]) == (33926, 816, 30, 30)
    assert {k: rank0["calls_by_kind"][k] for k in ("kernel", "memcpy", "memset")} == {
        "kernel": 39734,
        "memcpy": 6298,
        "memset": 1038,
    }
    # Score-P 8.4 records no memset and no device-to-device copy at all: named, left out
    assert rank0["kinds_not_recorded"] == ["memset", "memcpy DtoD"] and rank0["calls_by_kind"]["memcpy DtoD"] == 5881
    assert rank0["method"] == "count"  # Score-P 8.4 writes no stream reference on launches
    # every claim that uses the run is INVALID, never PASS, and the reason carries the figures
    assert check.returncode == 1
    c1 = claim(verdicts, "C1")
    assert c1["verdict"] == "INVALID"
    assert "816 of 33,926 launches" in c1["reason"] and "30 of 30 measured steps below 99.9%" in c1["reason"]
    row = sanity(verdicts)
    assert row["checks"]["trace_complete"] == "FAIL" and row["ok"] is False
    text = (tmp_path / "results" / "verdicts.txt").read_text()
    assert "complete" in text and "816 of 33,926" in text
    table = (tmp_path / "results" / "tables" / "completeness.csv").read_text().splitlines()
    assert table[0].split(",")[:6] == ["world_size", "run", "rank", "step", "launches", "found"] and len(table) == 31


def test_scorep_loss_lines_become_run_warnings_and_reach_the_sanity_reason(tmp_path):
    from dnabert_scaling.run.sweep.spec import RunSpec
    from dnabert_scaling.run.sweep.local import post_run_checks

    run = tmp_path / "ws1-scorep-r0"
    shutil.copytree(INCOMPLETE_RUN, run)
    for p in run.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    warnings, problem = post_run_checks(RunSpec(1, "scorep", 0, run, []))
    assert problem is None
    lost = [w for w in warnings if "lost CUDA activity records" in w]
    assert lost and any("Skipping" in w for w in lost) and any("last written timestamp" in w for w in lost)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["warnings"] = warnings  # what the sweep now records after this run
    (run / "manifest.json").write_text(json.dumps(manifest))
    _, verdicts, _ = analyze_and_check(tmp_path, run)
    assert "Skipping" in claim(verdicts, "C1")["reason"]
    assert any("lost CUDA activity records" in p for p in sanity(verdicts)["problems"])


def test_summarize_prints_the_completeness_line_and_diagnoses_cupti_flushes():
    proc = cli("summarize", INCOMPLETE_EXP)
    assert proc.returncode == 0, proc.stderr
    assert "completeness INCOMPLETE: rank 0: GPU activities for 816 of 33,926 launches" in proc.stdout
    # the two regions are CUPTI activity-buffer flushes (paradigm CUDA), not trace-buffer flushes
    assert "2 CUDA BUFFER FLUSH region(s)" in proc.stdout
    assert "SCOREP_TOTAL_MEMORY is not the cause" in proc.stdout
    assert "raise SCOREP_TOTAL_MEMORY" not in proc.stdout
    js = json.loads(cli("summarize", INCOMPLETE_EXP, "--json", "-").stdout)
    assert js["ranks"][0]["completeness"]["status"] == "incomplete"


def test_orphan_thread_launches_count_as_the_ranks_launches():
    from dnabert_scaling.traces import read_trace

    t = read_trace(INCOMPLETE_EXP)
    launches = t.host[t.host["kind"] == "launch"]
    by_thread = launches.groupby(launches["thread"].astype(str)).size().to_dict()
    assert set(by_thread) == {"Master thread", "Orphan thread 4"}
    assert by_thread["Orphan thread 4"] > by_thread["Master thread"]  # PyTorch's autograd thread: ~60%
    assert "cuMemSetAccess" not in set(launches["name"].astype(str))  # access rights, not a memset


# -- complete traces pass ---------------------------------------------------------------------


@pytest.mark.parametrize("name,launches,found", [("h200-b8", 65996, 65946), ("h200-b32", 69596, 69546)])
def test_shipped_h200_kineto_sets_are_complete(name, launches, found):
    from dnabert_scaling.analysis.completeness import trace_completeness
    from dnabert_scaling.traces import read_trace

    t = read_trace(ROOT / "expected" / "reference" / name / "ws1-torch-r0" / "traces" / "rank0.json.gz")
    c = trace_completeness(t)
    r = c["per_rank"]["0"]
    assert c["status"] == "complete" and r["method"] == "correlation"
    assert (r["launches"], r["found"], r["steps_below_bound"], r["steps"]) == (launches, found, 0, 50)
    # one cudaMemsetAsync per step enqueues no GPU memset: 1 of ~1,320 launches, inside the bound
    assert r["min_step_share"] > 0.999 and r["activities_without_launch"] == 0


def _study(tmp_path, name, drop_every=None, without_launches=False, steps=6, kernels=300):
    from dnabert_scaling.tools.synth import study_rank

    spec = study_rank(0, steps=steps, warmup=1, kernels_per_step=kernels, host_factor=0.0)
    if drop_every:
        kern = np.flatnonzero((spec.gpu["kind"] == "kernel").to_numpy())
        spec.gpu = spec.gpu.drop(index=spec.gpu.index[kern[::drop_every]]).reset_index(drop=True)
    if without_launches:
        spec.host = spec.host[spec.host["kind"] != "launch"].reset_index(drop=True)
    exp = tmp_path / name / "scorep-rank0"
    spec.write(exp)
    return exp


def test_written_scorep9_study_trace_is_complete(tmp_path):
    metrics, verdicts, check = analyze_and_check(tmp_path, "--world-size", 1, _study(tmp_path, "full"))
    comp = metrics["world_sizes"]["1"]["traced"]["completeness"]
    assert comp["status"] == "complete" and comp["per_rank"]["0"]["found"] == comp["per_rank"]["0"]["launches"]
    assert sanity(verdicts)["checks"]["trace_complete"] == "PASS"
    assert claim(verdicts, "C1")["verdict"] != "INVALID"


def test_written_trace_that_lost_one_percent_of_its_kernels_is_invalid(tmp_path):
    exp = _study(tmp_path, "lossy", drop_every=100)
    metrics, verdicts, check = analyze_and_check(tmp_path, "--world-size", 1, exp)
    r = metrics["world_sizes"]["1"]["traced"]["completeness"]["per_rank"]["0"]
    assert r["found"] < r["launches"] and r["steps_below_bound"] >= 1
    assert sanity(verdicts)["checks"]["trace_complete"] == "FAIL"
    assert claim(verdicts, "C1")["verdict"] == "INVALID" and check.returncode == 1


def test_the_claims_files_bound_rejudges_the_recorded_figures(tmp_path):
    """The checker judges at [sanity.trace_complete] min_found_share of the claims file it reads."""
    exp = _study(tmp_path, "lossy", drop_every=100)
    loose = tmp_path / "claims.toml"
    loose.write_text(CLAIMS.read_text().replace("min_found_share = 0.999", "min_found_share = 0.95"))
    out = tmp_path / "results"
    assert cli("analyze", "--world-size", 1, exp, "--out", out).returncode == 0
    assert json.loads((out / "metrics.json").read_text())["world_sizes"]["1"]["traced"]["sanity"]["trace_complete"] is False
    cli("check", out, "--expected", loose, "--quiet")
    v = json.loads((out / "verdicts.json").read_text())
    assert sanity(v)["checks"]["trace_complete"] == "PASS" and sanity(v)["trace_complete_bound"] == 0.95


def test_trace_without_launch_records_is_unknown_not_pass(tmp_path):
    exp = _study(tmp_path, "nolaunch", without_launches=True)
    metrics, verdicts, _ = analyze_and_check(tmp_path, "--world-size", 1, exp)
    traced = metrics["world_sizes"]["1"]["traced"]
    assert traced["sanity"]["trace_complete"] == "unknown"
    assert "no kernel-launch records" in traced["completeness"]["reason"]
    row = sanity(verdicts)
    assert row["checks"]["trace_complete"] == "UNKNOWN" and row["ok"] is True
    assert "UNKNOWN" in (tmp_path / "results" / "verdicts.txt").read_text()


def test_bad_sanity_bound_in_the_claims_file_is_refused(tmp_path):
    bad = tmp_path / "claims.toml"
    bad.write_text(CLAIMS.read_text().replace("min_found_share = 0.999", "min_found_share = 1.5"))
    proc = cli("check", tmp_path, "--expected", bad)
    assert proc.returncode == 2 and "min_found_share must be a number in (0, 1]" in proc.stderr
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr


# -- bare per-rank archives: the rank from the order given --------------------------------------


def test_bare_archives_without_rank_take_it_from_the_order_given(tmp_path):
    a, b = tmp_path / "scorep-20261202_1548_a", tmp_path / "scorep-20261202_1549_b"
    shutil.copytree(INCOMPLETE_EXP, a)
    write_ground_truth(b)  # another rank-less archive (one archive twice is one rank, refused below)
    proc = cli("summarize", a, b)
    assert proc.returncode == 0, proc.stderr
    assert "rank 1 taken from its place in the list of traces given" in proc.stdout
    shutil.rmtree(b)
    shutil.copytree(INCOMPLETE_EXP, b)
    proc = cli("summarize", a, b)
    assert proc.returncode == 2 and "have the same content" in proc.stderr and "Traceback" not in proc.stderr


def test_two_traces_that_carry_the_same_rank_are_still_an_error(tmp_path):
    a, b = tmp_path / "x" / "scorep-rank0", tmp_path / "y" / "scorep-rank0"
    shutil.copytree(INCOMPLETE_EXP, a)
    shutil.copytree(INCOMPLETE_EXP, b)
    proc = cli("summarize", a, b)
    assert proc.returncode == 2 and "rank 0 appears twice" in proc.stderr and "Traceback" not in proc.stderr


# -- one partition, one stream-role rule --------------------------------------------------------


def test_summarize_and_analyze_share_the_partition_and_stream_roles(tmp_path):
    from dnabert_scaling.analysis.partition import stream_role

    exp = _study(tmp_path, "full")
    js = json.loads(cli("summarize", exp, "--json", "-").stdout)["ranks"][0]
    out = tmp_path / "results"
    assert cli("analyze", "--world-size", 1, exp, "--out", out).returncode == 0
    import pandas as pd

    streams = pd.read_csv(out / "tables" / "streams.csv")
    assert {int(s): r for s, r in zip(streams["stream"], streams["role"])} == {s["stream"]: s["role"] for s in js["streams"]}
    assert js["ns"]["compute"] + js["ns"]["exposed_comm"] + js["ns"]["exposed_memcpy"] + js["ns"]["idle"] == js["ns"]["total"]
    # the rule: copies ride along; >= 90% of kernel time decides; no kernel time is a copy stream
    assert stream_role({"compute": 80, "nccl": 0, "memory": 900}) == "compute"
    assert stream_role({"compute": 85, "nccl": 15, "memory": 0}) == "mixed"
    assert stream_role({"compute": 0, "nccl": 0, "memory": 10}) == "memory"


def test_gpu_figures_without_completeness_figures_are_invalid_not_pass(tmp_path):
    """A metrics.json whose GPU figures carry no completeness counts (an older analyze, or edited by
    hand) cannot make a claim PASS: the checker's promise is no verdict on an unproven trace."""
    metrics, verdicts, _ = analyze_and_check(tmp_path, "--world-size", 1, _study(tmp_path, "full"))
    assert claim(verdicts, "C1")["verdict"] != "INVALID"
    del metrics["world_sizes"]["1"]["traced"]["completeness"]
    (tmp_path / "results" / "metrics.json").write_text(json.dumps(metrics))
    proc = cli("check", tmp_path / "results", "--expected", CLAIMS, "--quiet")
    # a sanity item that still says complete contradicts the missing record: refused outright
    assert proc.returncode == 2 and "trace_complete says yes, but the completeness it rests on is absent" in proc.stderr
    metrics["world_sizes"]["1"]["traced"]["sanity"]["trace_complete"] = None  # as an analyze that never measured it
    (tmp_path / "results" / "metrics.json").write_text(json.dumps(metrics))
    proc = cli("check", tmp_path / "results", "--expected", CLAIMS, "--quiet")
    v = json.loads((tmp_path / "results" / "verdicts.json").read_text())
    assert proc.returncode == 1 and claim(v, "C1")["verdict"] == "INVALID"
    assert "trace completeness not measured" in claim(v, "C1")["reason"]


def test_the_checker_rejudges_launches_without_an_id_as_analyze_does():
    """A rank whose launches partly carry no correlation id is never re-judged complete, whatever status the
    file states (the checker re-judges from the figures, by the rule analyze uses)."""
    from dnabert_scaling.analysis.completeness import judge, rank_status

    rank = {"status": "complete", "launches_per_step": [4, 4], "found_per_step": [4, 4], "launches_without_id": 1, "steps": 2}
    out = judge({0: rank})
    assert out["status"] == "unknown" and "carry no correlation id" in out["reason"]
    assert judge({0: {**rank, "launches_without_id": 0}})["status"] == "complete"
    assert judge({0: {**rank, "found_per_step": [3, 4]}})["status"] == "incomplete"  # the ids show a loss
    assert (rank_status(0, 0), rank_status(0, 2), rank_status(1, 2)) == ("complete", "unknown", "incomplete")
