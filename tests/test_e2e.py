"""End to end on CPU: the smoke sweep (real torchrun, gloo, world sizes 1 and 2) through the
analysis, the checker and the report; and the sweep's resume and failure handling."""

import json
import subprocess
import sys

import pytest

from conftest import PYTHON, ROOT

CLI = [PYTHON, "-m", "dnabert_scaling"]
TRAIN = ["--model", "tiny", "--steps", "4", "--warmup-steps", "1", "--batch-size", "4", "--find-unused-parameters", "false"]


def _run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, tiny_task):
    out = tmp_path_factory.mktemp("smoke")
    proc = _run(
        [
            *CLI,
            "sweep",
            "--gpus",
            "1,2",
            "--device",
            "cpu",
            "--tracer",
            "auto",  # as make reproduce runs it: torch.profiler on CPU, the sweep's choice a recorded fallback
            "--repeats",
            "1",
            "--out",
            str(out / "runs"),
            "--data",
            str(tiny_task),
            "--",
            *TRAIN,
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_sweep_layout_and_manifests(smoke):
    runs = smoke / "runs"
    names = json.loads((runs / "sweep.json").read_text())["runs"]
    assert names == ["ws1-none-r0", "ws1-none-r0-noddp", "ws1-torch-r0", "ws2-none-r0", "ws2-torch-r0"]
    for name in names:
        manifest = json.loads((runs / name / "manifest.json").read_text())
        assert manifest["status"] == "ok"
        assert {"summary.json", "rank0/steps.jsonl", "logs/launcher.log"} <= set(manifest["files"])
        assert all(len(h) == 64 for h in manifest["files"].values())
        assert {f["what"] for f in manifest["fallbacks"]} >= {"device", "weights", "data"}
        # --tracer auto chose torch.profiler for the sweep: each traced run records why, no untraced run does
        tracer = [f for f in manifest["fallbacks"] if f["what"] == "tracer"]
        assert bool(tracer) == ("-torch-" in name), (name, tracer)
        assert all(f["used"] == "torch.profiler (Kineto) instead of Score-P" and f["reason"] for f in tracer)
    assert json.loads((runs / "sweep.json").read_text())["tracer_fallback"]["what"] == "tracer"
    assert (runs / "ws2-torch-r0" / "traces" / "rank1.json.gz").is_file()
    assert json.loads((runs / "busbw-ws2.json").read_text())["world_size"] == 2


def test_rerun_skips_complete_runs(smoke, tiny_task):
    before = (smoke / "runs" / "ws1-none-r0" / "manifest.json").read_text()
    proc = _run(
        [
            *CLI,
            "sweep",
            "--gpus",
            "1",
            "--device",
            "cpu",
            "--tracer",
            "torch",
            "--repeats",
            "1",
            "--out",
            str(smoke / "runs"),
            "--data",
            str(tiny_task),
            "--",
            *TRAIN,
        ],
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("skipped") == 3
    assert (smoke / "runs" / "ws1-none-r0" / "manifest.json").read_text() == before


def test_analysis_check_and_report(smoke):
    results = smoke / "results"
    proc = _run([*CLI, "analyze", str(smoke / "runs"), "--out", str(results)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((results / "metrics.json").read_text())
    ws2 = metrics["world_sizes"]["2"]
    assert ws2["traced"]["gpu"] is None
    assert "CPU run" in ws2["traced"]["gpu_not_run_reason"]
    assert ws2["traced"]["sanity"]["all_ranks_present"] and ws2["traced"]["sanity"]["steps_complete"]
    assert ws2["throughput"]["samples_per_s"]["median"] > 0 and ws2["efficiency"] > 0
    # the baseline is named by what ran at world size 1: one CPU process over gloo, not a GPU
    assert ws2["efficiency_baseline"] == "1-process CPU run with the DDP wrapper (world size 1 over gloo)"
    assert metrics["world_sizes"]["1"]["throughput_noddp"]["samples_per_s"]["n"] == 1
    assert {f["what"] for f in metrics["fallbacks"]} >= {"device", "weights", "data", "tracer"}
    proc = _run([*CLI, "check", str(results), "--expected", str(ROOT / "expected" / "claims.toml")])
    assert proc.returncode == 0, proc.stdout[-3000:]  # NOT RUN is not a failure without --strict
    verdicts = {c["id"]: c for c in json.loads((results / "verdicts.json").read_text())["claims"]}
    assert {c["verdict"] for c in verdicts.values()} == {"NOT RUN"}
    assert "cpu" in verdicts["C1"]["reason"].lower()
    strict = _run([*CLI, "check", str(results), "--expected", str(ROOT / "expected" / "claims.toml"), "--strict", "--quiet"])
    assert strict.returncode == 1
    proc = _run([*CLI, "report", str(results), "--out", str(smoke / "report")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (smoke / "report" / "report.html").read_text()
    assert "NOT RUN" in html and "CPU" in html and "<img" in html
    assert "instead of Score-P" in html  # the tracer fallback is shown, not only recorded


def test_failed_run_is_reported_and_kept(tmp_path, tiny_task):
    out = tmp_path / "runs"
    proc = _run(
        [
            *CLI,
            "sweep",
            "--gpus",
            "2",
            "--device",
            "cpu",
            "--tracer",
            "none",
            "--repeats",
            "1",
            "--no-busbw",
            "--out",
            str(out),
            "--data",
            str(tiny_task),
            "--",
            *TRAIN,
            "--inject-fault",
            "1:2",
            "--dist-timeout",
            "30",
        ],
        timeout=300,
    )
    assert proc.returncode == 1
    assert "ws2-none-r0" in proc.stderr and "failed" in proc.stderr
    manifest = json.loads((out / "ws2-none-r0" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["returncode"] != 0
    # a rerun sets the failed attempt aside instead of overwriting it
    _run(
        [
            *CLI,
            "sweep",
            "--gpus",
            "2",
            "--device",
            "cpu",
            "--tracer",
            "none",
            "--repeats",
            "1",
            "--no-busbw",
            "--out",
            str(out),
            "--data",
            str(tiny_task),
            "--",
            *TRAIN,
            "--inject-fault",
            "1:2",
            "--dist-timeout",
            "30",
        ],
        timeout=300,
    )
    assert len(list(out.glob("ws2-none-r0.failed-*"))) == 1


def test_reproduce_refuses_an_output_folder_on_its_inputs_or_a_file(tmp_path):
    """``make reproduce OUT=...``: a file, the shipped evidence or a folder inside it is refused with exit 2
    and the path, before anything is written (no traceback, nothing added to expected/)."""
    before = sorted(p for p in (ROOT / "expected").rglob("*"))
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    for out, said in [
        (afile, "--out: exists and is not a folder"),
        (ROOT / "expected" / "reference", "is also an input of this command"),
        (ROOT / "expected" / "reference-results" / "new", "lies inside the input"),
    ]:
        proc = _run([sys.executable, str(ROOT / "scripts" / "reproduce.py"), "--kick-tires", "--out", str(out)], timeout=120)
        assert proc.returncode == 2 and said in proc.stderr and f"{out.name}: --out:" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert afile.read_text() == "mine" and sorted(p for p in (ROOT / "expected").rglob("*")) == before


def test_reproduce_refuses_a_folder_that_is_not_its_own_earlier_output(tmp_path):
    """``--out artifact`` (any folder holding other files) was filled with the nine set folders,
    report/ and SUMMARY.txt without a word: refused with exit 2, naming what is there, nothing written.
    So is a symbolic link (the output rule of every command). The folder of an earlier run, the
    names this script writes and nothing else, is accepted: ``make kick-tires`` runs again into it."""
    import importlib.util

    mine = tmp_path / "mine"
    (mine / "notes").mkdir(parents=True)
    (mine / "report").mkdir()
    (mine / "report" / "draft.md").write_text("mine")  # a folder named like the script's, holding the user's file
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    artifact_before = sorted(p.name for p in (ROOT / "artifact").iterdir())
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    script = str(ROOT / "scripts" / "reproduce.py")
    for out, said in [
        (ROOT / "artifact", "did not write (dnabert_scaling)"),
        (mine, "did not write (notes, report)"),
        (tmp_path / "link", "is a symbolic link"),
    ]:
        proc = _run([sys.executable, script, "--kick-tires", "--out", str(out)], timeout=120)
        assert proc.returncode == 2 and said in proc.stderr and f"{out.name}: --out:" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in (ROOT / "artifact").iterdir()) == artifact_before
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before

    spec = importlib.util.spec_from_file_location("reproduce_under_test", script)
    reproduce = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reproduce)
    earlier = tmp_path / "earlier"
    for part in ("reference-h200-b8/results/tables", "smoke/runs/ws1-none-r0", "smoke/results", "report"):
        (earlier / part).mkdir(parents=True)
    (earlier / "SUMMARY.txt").write_text("dnabert-scaling kick-tires: 70 s\n")
    (earlier / "report" / "report.html").write_text("<html></html>\n")
    (earlier / "report" / ".report.html.x1.partial").write_text("")  # left by a killed report
    reproduce.prepare_out(earlier)
    (earlier / "smoke" / "notes.txt").write_text("mine")
    with pytest.raises(reproduce.ArtifactError, match=r"did not write \(smoke\)"):
        reproduce.prepare_out(earlier)
    (earlier / "smoke" / "notes.txt").unlink()
    (earlier / "SUMMARY.txt").write_text("my own summary notes\n")  # named like the script's, not written by it
    with pytest.raises(reproduce.ArtifactError, match=r"did not write \(SUMMARY.txt\)"):
        reproduce.prepare_out(earlier)
