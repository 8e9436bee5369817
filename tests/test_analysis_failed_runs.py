"""Runs that failed, and folders that are not what they say: what ``analyze`` writes or refuses.

A sweep whose every run failed (as ``sweep --inject-fault 0:0`` leaves it) is laid out here by hand,
with the records the sweep and ``train`` write for a failed run: its device and fallbacks come from
those records (config.json, sweep.json) or are said to be unknown, never taken for a GPU or for "no
fallback"; no world size counts as measured; no loss is judged where no step ran. A folder that is a
run and a sweep at once, and a run folder holding another tracer's traces, are refused (exit 2).
"""

import json
from pathlib import Path

from cliprocess import assert_refused, cli_process
from conftest import ROOT

from dnabert_scaling import checker
from dnabert_scaling.analysis.metrics import build
from dnabert_scaling.analysis.runs import discover
from dnabert_scaling.report import front, glance, results

DATA_FALLBACK = {
    "kind": "data",
    "what": "data",
    "used": "synthetic planted-motif task shaped like prom_300_all",
    "reason": "no --data and $DNABERT_SCALING_GUE is not set",
}


def _json(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def failed_run(sweep: Path, name: str, world_size: int, tracer: str, device: str = "cpu") -> Path:
    """A run folder as a run that failed at its first step leaves it: the failed summary, the sweep's
    manifest (its fallbacks empty: none recorded), config.json with train's options, rank error files."""
    run = sweep / name
    message = "exit status 1; rank0 failed first: RuntimeError: injected fault"
    _json(run / "summary.json", {"status": "failed", "reported_by_rank": 0, "error": "RuntimeError()", "message": message})
    _json(
        run / "manifest.json",
        {
            "schema": "dnabert-scaling/manifest/1",
            "name": name,
            "world_size": world_size,
            "tracer": tracer,
            "repeat": 0,
            "variant": "ddp",
            "status": "failed",
            "provenance": None,
            "fallbacks": [],
            "warnings": [],
            "message": message,
        },
    )
    _json(run / "config.json", {"args": {"device": device, "tracer": tracer, "steps": 2}, "rank_info": {"rank": 0}})
    for rank in range(world_size):
        _json(run / f"rank{rank}" / "summary.json", {"status": "failed", "rank": rank, "error": "RuntimeError()"})
        (run / f"rank{rank}" / "steps.jsonl").write_text("")
        (run / f"rank{rank}" / "error.txt").write_text("Traceback ...\nRuntimeError: injected fault\n")
    return run


def failed_sweep(root: Path, device: str = "cpu") -> Path:
    sweep = root / "failsweep"
    _json(sweep / "sweep.json", {"schema": "dnabert-scaling/sweep/1", "world_sizes": [1, 2], "fallbacks": [DATA_FALLBACK]})
    for ws in (1, 2):
        failed_run(sweep, f"ws{ws}-none-r0", ws, "none", device)
        failed_run(sweep, f"ws{ws}-torch-r0", ws, "torch", device)
    return sweep


def test_a_sweep_whose_runs_all_failed_says_so_and_takes_no_default(tmp_path):
    metrics, _ = build(discover([failed_sweep(tmp_path)]))
    m = metrics.to_json()
    assert m["measured_world_sizes"] == [], "nothing was measured"
    assert m["label"].endswith("no run completed") and m["label"].startswith("CPU (gloo)")
    for ws in ("1", "2"):
        traced = m["world_sizes"][ws]["traced"]
        assert traced["device_type"] == "cpu", "config.json's --device cpu"
        assert traced["sanity"]["finite_loss"] is None, "no step ran: no loss to call finite"
        assert traced["gpu_not_run_reason"] == (
            f"run ws{ws}-torch-r0 did not complete (status 'failed'): no traces in ws{ws}-torch-r0"
        )
    rs = results.ResultSet(0, tmp_path, "x", "cpu-smoke", m, None, "t")
    items = " ".join(map(str, front.fallback_items(rs)))
    assert "Fallbacks not recorded" in items and "(the default)" not in items, "no run recorded its set-up"
    kinds = {f["kind"]: f for f in m["fallbacks"]}
    assert kinds["data"]["used"] == DATA_FALLBACK["used"], "what the sweep imposed on every run"
    unknown = kinds["not_recorded"]
    assert unknown["what"] == "fallbacks not recorded" and unknown["used"] == "unknown"
    assert sorted(unknown["runs"]) == ["ws1-none-r0", "ws1-torch-r0", "ws2-none-r0", "ws2-torch-r0"]
    assert "status failed" in unknown["reason"]


def test_a_failed_run_with_device_auto_has_an_unknown_device_never_a_gpu(tmp_path):
    """``--device auto`` in a run that failed before recording what it found: the device is unknown,
    and the first screen says so instead of GPU; the checker says the world size was not measured."""
    metrics, _ = build(discover([failed_sweep(tmp_path, device="auto")]))
    m = metrics.to_json()
    assert all(e["traced"]["device_type"] is None for e in m["world_sizes"].values())
    assert not m["label"].startswith(("CPU", "GPU", "NVIDIA"))
    rs = results.ResultSet(0, tmp_path, results.default_label(m, tmp_path), "x", m, None, "t")
    assert rs.label == "Runs on a device not recorded: world sizes 1, 2 (measured: none), tracer torch"
    text = glance.at_a_glance([rs])
    assert text.startswith("All evidence here: device not recorded."), text
    assert "No fallback taken" not in text and "fallbacks not recorded (unknown)" in text, text
    assert "every multi-rank run here did not complete" in text, text
    verdicts = checker.evaluate(m, checker.load_claims(ROOT / "expected" / "claims.toml"))
    c1 = next(c for c in verdicts["claims"] if c["id"] == "C1")["checks"][0]
    assert c1["verdict"] == "NOT RUN" and c1["code"] == "not_measured", c1
    assert c1["reason"].startswith("world size 1 has no measured steps: no run of it completed (run ws1-torch-r0 did not")
    assert verdicts["summary"]["measured_world_sizes"] == []


def test_a_completed_run_keeps_its_own_fallbacks_and_a_failed_one_beside_it_is_named(tmp_path):
    """Only the runs that recorded none get the sweep's fallbacks and the "not recorded" entry."""
    sweep = failed_sweep(tmp_path)
    run = sweep / "ws1-none-r0"
    own = {"what": "device", "used": "CPU with gloo", "reason": "--device cpu given"}
    summary = {"status": "ok", "world_size": 1, "tracer": "none", "device_type": "cpu", "ranks": [], "fallbacks": [own]}
    _json(run / "summary.json", summary)
    manifest = json.loads((run / "manifest.json").read_text())
    _json(run / "manifest.json", {**manifest, "status": "ok", "fallbacks": [own]})
    m = build(discover([sweep]))[0].to_json()
    by_what = {f["what"]: f["runs"] for f in m["fallbacks"]}
    assert by_what["device"] == ["ws1-none-r0"]
    assert "ws1-none-r0" not in by_what["data"] and "ws1-none-r0" not in by_what["fallbacks not recorded"]
    assert m["measured_world_sizes"] == [1], "a run of world size 1 completed"


def _analyze(*args):
    return cli_process(["analyze", *args])


def test_a_folder_that_is_a_run_and_a_sweep_is_refused(tmp_path):
    sweep = failed_sweep(tmp_path)
    (sweep / "summary.json").write_text((sweep / "ws1-torch-r0" / "summary.json").read_text())
    out = tmp_path / "results"
    proc = _analyze(sweep, "--out", out)
    assert_refused(
        proc,
        str(sweep),
        "is both a run folder (summary.json at its top) and a sweep folder (sweep.json, ws1-none-r0",
        one_line=True,
    )
    assert not out.exists()
    (sweep / "sweep.json").unlink()  # run folders alone make it a sweep too
    assert_refused(
        _analyze(sweep, "--out", out), "is both a run folder", "a sweep folder (ws1-none-r0, ws1-torch-r0", one_line=True
    )


def test_traces_of_another_tracer_in_a_run_folder_are_refused_naming_them(tmp_path):
    """A Score-P experiment in a torch run (beside its Kineto trace, alone, or as another rank's), a Kineto
    trace in a Score-P run, any trace in an untraced run: named, never read or left out in silence."""
    sweep = failed_sweep(tmp_path)
    traces = sweep / "ws2-torch-r0" / "traces"
    (traces / "scorep-rank1").mkdir(parents=True)
    (traces / "rank0.json.gz").write_bytes(b"")
    out = tmp_path / "results"
    assert_refused(
        _analyze(sweep, "--out", out),
        f"{sweep / 'ws2-torch-r0'}: holds traces/scorep-rank1, a trace of another tracer than the run's (torch",
        one_line=True,
    )
    (traces / "rank0.json.gz").unlink()
    assert_refused(_analyze(sweep, "--out", out), "holds traces/scorep-rank1", one_line=True)
    (traces / "scorep-rank1").rmdir()
    (sweep / "ws1-none-r0" / "traces").mkdir()
    (sweep / "ws1-none-r0" / "traces" / "rank0.json").write_text("{}")
    assert_refused(
        _analyze(sweep, "--out", out), "ws1-none-r0: holds traces/rank0.json", "(none, as its records say)", one_line=True
    )
    assert not out.exists()


def test_the_shipped_runs_hold_only_their_own_tracers_traces():
    from dnabert_scaling.analysis.runs import load_run
    from dnabert_scaling.layout import SweepLayout

    runs = [load_run(p) for sweep in (ROOT / "expected" / "reference").iterdir() for p in SweepLayout(sweep).run_dirs()]
    assert len(runs) > 20 and all(r.device_type == "cuda" and r.fallbacks_recorded for r in runs)


def test_a_failed_run_without_its_manifest_keeps_the_variant_its_name_gives(tmp_path):
    from dnabert_scaling.analysis.runs import load_run

    run = failed_run(tmp_path, "ws1-none-r0-noddp", 1, "none")
    (run / "manifest.json").unlink()
    assert load_run(run).variant == "noddp"
    assert load_run(failed_run(tmp_path, "ws1-none-r1", 1, "none")).variant == "ddp"
