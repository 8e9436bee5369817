"""The scaling predictor on written multi-rank OTF2 traces: ones whose all-reduce timing follows
the model exactly (predicted within a tight tolerance) and one that does not (the error shown),
plus the refusals of bad input."""

import json

import pytest

from dnabert_scaling.analysis import predict as pr
from dnabert_scaling.cli import main
from dnabert_scaling.traces import read_run_traces
from dnabert_scaling.tools.synth import BucketModel, bucket_rank, study_rank, write_bucket_run

MODEL = dict(alpha_ns=20_000, busbw_Bps=200e9, contention=1.1)
OPTS = ["--intra-busbw", "200", "--alpha-us", "20", "--contention", "1.1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("bucket-runs")
    out = {1: write_bucket_run(root / "ws1", 1, BucketModel(**MODEL))[0]}
    for n in (2, 4, 8):
        out[n] = write_bucket_run(root / f"ws{n}", n, BucketModel(**MODEL))[0].parent
    (out[8].parent / "summary.json").write_text(json.dumps({"status": "ok", "world_size": 8, "tracer": "scorep"}))
    out["slow"] = write_bucket_run(root / "ws4-slow", 4, BucketModel(**MODEL, comm_scale=1.6))[0].parent
    return out


def _predict(tmp_path, source, *extra):
    target = tmp_path / "predictions.json"
    rc = main(["predict", str(source), "--gpus", "2,4,8,16,1024", "--out", str(target), *extra])
    return rc, (json.loads(target.read_text()) if target.exists() else None)


def test_bucket_ranges_survive_the_reader(runs):
    trace = read_run_traces([runs[1]])
    names = trace.host.loc[trace.host["kind"] == "phase", "name"].astype(str)
    buckets = sorted({n for n in names if n.startswith("bucket:")})
    assert buckets == ["bucket:0:1048576", "bucket:1:26214400", "bucket:2:26214400", "bucket:3:25165824"]
    profile = pr.profile_from_trace(trace)
    assert profile.info["bucket_bytes"] == [1 << 20, 25 << 20, 25 << 20, 24 << 20]
    assert profile.info["readiness_method"] == "stream-order"
    assert profile.info["buckets_per_step"] == 4


def test_prediction_matches_traces_that_follow_the_model(tmp_path, runs, capsys):
    measured = [a for n in (2, 4, 8) for a in ("--measured", str(runs[n]))]
    measured[-1] = str(runs[8].parent)  # a run folder (summary.json, traces/) works as well
    rc, out = _predict(tmp_path, runs[1], *OPTS, *measured)
    assert rc == 0
    printed = capsys.readouterr().out
    assert "measured N=8" in printed
    assert out["schema"] == pr.SCHEMA and "never verdicts" in out["note"]
    for n in (2, 4, 8):
        row = out["comparison"][str(n)]
        assert abs(row["error"]["step_time_rel"]) < 1e-3, row
        assert abs(row["error"]["overlap_ratio_abs"]) < 1e-3, row
        assert row["within_goal"] is True
        assert row["measured"]["contention"] == pytest.approx(1.1, abs=0.02)
    steps = [out["world_sizes"][str(n)]["step_time_s"]["mid"] for n in (2, 4, 8, 16, 1024)]
    assert steps == sorted(steps) and steps[0] > out["baseline"]["step_time_s"]
    far = out["world_sizes"]["1024"]
    assert far["nodes"] == 128 and far["busbw"] == "table"
    for key in ("step_time_s", "exposed_comm_s", "allreduce_kernel_s", "efficiency"):
        band = far[key]
        assert band["low"] <= band["mid"] <= band["high"], (key, band)
    assert far["efficiency"]["mid"] < out["world_sizes"]["2"]["efficiency"]["mid"] < 1


def test_a_trace_that_does_not_follow_the_model_shows_its_error(tmp_path, runs, capsys):
    rc, out = _predict(tmp_path, runs[1], *OPTS, "--measured", str(runs["slow"]))
    assert rc == 0
    row = out["comparison"]["4"]
    assert row["error"]["step_time_rel"] < -0.10  # all-reduces 1.6x slower than the formula
    assert row["error"]["overlap_ratio_abs"] > 0.05
    assert row["within_goal"] is False
    assert "within goal: False" in capsys.readouterr().out


def test_measured_busbw_replaces_the_table(tmp_path, runs):
    bw = tmp_path / "busbw-ws4.json"
    # 100 GB/s at every size: twice the formula's time at the 200 GB/s of the written traces
    bw.write_text(
        json.dumps({"world_size": 4, "sizes": [{"bytes": 1 << 20, "busbw_Bps": 100e9}, {"bytes": 26 << 20, "busbw_Bps": 100e9}]})
    )
    rc, out = _predict(tmp_path, runs[1], *OPTS, "--busbw", str(bw), "--measured", str(runs[4]))
    assert rc == 0
    assert out["world_sizes"]["4"]["busbw"] == "measured"
    assert out["comparison"]["4"]["error"]["step_time_rel"] > 0.05
    assert not any(f["what"] == "busbw" and "4" in f["why"] and "[2, 8" not in f["why"] for f in out["fallbacks"])


def test_defaults_are_recorded_as_fallbacks(tmp_path, runs):
    rc, out = _predict(tmp_path, runs[1])
    assert rc == 0
    what = {f["what"] for f in out["fallbacks"]}
    assert what == {"busbw", "contention"}
    assert out["model"]["node"]["name"] == "a100-nvswitch"
    assert out["model"]["contention"]["source"].startswith("assumed")


def test_bad_input_is_refused(tmp_path, runs, capsys):
    assert main(["predict", str(runs[4]), "--out", str(tmp_path / "p.json")]) == 2
    assert "world-size-1" in capsys.readouterr().err
    old = study_rank(0, steps=3, warmup=1, kernels_per_step=50, buckets=2, host_factor=0)
    old.write(tmp_path / "old" / "scorep-rank0")
    assert main(["predict", str(tmp_path / "old" / "scorep-rank0")]) == 2
    assert "no ds:bucket ranges" in capsys.readouterr().err
    for opts, word in (
        (["--gpus", "1,2"], "--gpus"),
        (["--gpus", "two"], "--gpus"),
        (["--node", "nope"], "--node"),
        (["--contention", "1.2,1.3,1.4"], "--contention"),
        (["--alpha-us", "x"], "--alpha-us"),
    ):
        assert main(["predict", str(runs[1]), *opts]) == 2
        assert word in capsys.readouterr().err
    bad = tmp_path / "busbw.json"
    bad.write_text("{}")
    assert main(["predict", str(runs[1]), "--busbw", str(bad)]) == 2
    assert "not a busbw result" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_written_ranks_follow_the_formula():
    """The generator itself: N-rank all-reduce kernels last exactly alpha + 2(N-1)/N * bytes / busbw."""
    m = BucketModel(**MODEL)
    r = bucket_rank(0, 8, m, steps=2, warmup=0)
    nccl = r.gpu[r.gpu["category"] == "nccl"]
    dur = (nccl["end_ns"] - nccl["start_ns"]).to_numpy()
    want = [round((20e-6 + 2 * 7 / 8 * b / 200e9) * 1e9) for b in nccl["msg_bytes"].astype(int)]
    assert list(dur) == want
    assert not len(bucket_rank(0, 1, m, steps=2, warmup=0).gpu.query("category == 'nccl'"))


def test_report_shows_predictions_beside_verdicts(tmp_path, runs):
    """A results folder with predictions.json: the report labels every prediction as one, keeps
    the verdicts from the measurements, and shows predicted beside measured with the error."""
    from dnabert_scaling import checker
    from dnabert_scaling.report import build
    from reportfixtures import gpu_results, write_results

    from conftest import ROOT

    claims = ROOT / "expected" / "claims.toml"
    results = write_results(tmp_path / "results", *gpu_results((1, 4, 8), tracer="torch"))
    verdicts = checker.check_results(results, claims)
    checker.write_verdicts(verdicts, results)
    rc, _ = _predict(tmp_path, runs[1], *OPTS, "--measured", str(runs["slow"]), "--measured", str(runs[8]))
    assert rc == 0
    (results / "predictions.json").write_text((tmp_path / "predictions.json").read_text())
    res = build.build_report([results], tmp_path / "report", claims=claims)
    html = res["html"].read_text(encoding="utf-8")
    part = html.split("Prediction from the one-GPU trace</b> (not a verdict)")[1]
    assert "Prediction, not a verdict." in part
    for c in verdicts["claims"]:
        if c["id"] in ("C2", "C3", "C4", "C5", "C6"):
            assert f"<b>{c['id']}</b>" in part
    # each claim's forecast held against its bound, with the predicted verdict and, where measured, the error
    assert "predicted verdict" in part and "error (pred. − meas.)" in part
    overlap8 = part.split("overlap at 8")[1].split("</tr>")[0]
    assert "[0.6, +inf]" in overlap8 and "not measured" not in overlap8
    assert "within goal" in part and "+0.0%" in part  # N=8 follows the model
    slow = json.loads((results / "predictions.json").read_text())["comparison"]["4"]["error"]["step_time_rel"]
    assert f"{100 * slow:+.1f}%" in part  # N=4 does not: its error is shown
    curves = part.split("A prediction, never a verdict.")[0].rsplit("<figure", 1)[1]
    assert "data:image/png;base64" in curves
    assert json.loads((results / "verdicts.json").read_text()) == json.loads(json.dumps(verdicts, default=str))


def test_results_folder_pipeline(tmp_path, monkeypatch):
    """analyze a sweep of written runs, then predict from the results folder: the world-size-1 run
    is found through metrics.json, measured figures come from it, contention from the 4-rank run."""
    monkeypatch.chdir(tmp_path)
    m = BucketModel(**MODEL)
    for n in (1, 4):
        run = tmp_path / "sweep" / f"ws{n}-scorep-r0"
        write_bucket_run(run, n, m)
        (run / "summary.json").write_text(
            json.dumps(
                {
                    "status": "ok",
                    "world_size": n,
                    "tracer": "scorep",
                    "ddp": True,
                    "measured_steps": 6,
                    "device_type": "cuda",
                    "fallbacks": [],
                }
            )
        )
    assert main(["analyze", "sweep", "--out", "results"]) == 0
    assert main(["predict", "results", "--gpus", "2,4,8", "--intra-busbw", "200", "--alpha-us", "20"]) == 0
    out = json.loads((tmp_path / "results" / "predictions.json").read_text())
    assert out["source"]["run"].endswith("ws1-scorep-r0")
    assert out["model"]["contention"]["mid"] == pytest.approx(1.1, abs=0.01)
    assert out["model"]["contention"]["source"].startswith("measured")
    row = out["comparison"]["4"]
    assert row["measured"]["source"] == "metrics.json" and row["within_goal"] is True
    assert abs(row["error"]["step_time_rel"]) < 1e-3
    (tmp_path / "results" / "metrics.json").write_text(
        json.dumps({"world_sizes": {"1": {"traced": {"run": "gone"}}}, "sources": ["sweep"]})
    )
    assert main(["predict", "results"]) == 2


def test_kineto_reader_keeps_bucket_ranges(tmp_path):
    from dnabert_scaling.traces import read_trace
    from dnabert_scaling.traces.classify import bucket_args, phase_name

    assert phase_name("user:ds:bucket:2:100") == "bucket:2:100" and bucket_args("bucket:2:100") == (2, 100)
    assert phase_name("ds:bucket") is None and phase_name("ds:bucket:x:1") is None and bucket_args("step") is None

    def ann(name, ts, dur, tid=9):
        return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 9, "tid": tid, "ts": ts, "dur": dur}

    doc = {
        "distributedInfo": {"rank": 0, "world_size": 1},
        "traceEvents": [
            ann("ds:step", 10, 100),
            ann("ds:bucket:0:4096", 30, 2, tid=12),
            ann("ds:bucket", 40, 2, tid=12),
            ann("ds:bucket:1:x", 50, 2, tid=12),
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": 0,
                "tid": 7,
                "ts": 20,
                "dur": 5,
                "args": {"device": 0, "stream": 7, "correlation": 1},
            },
        ],
    }
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps(doc))
    host = read_trace(p).host
    ph = host[host["kind"] == "phase"]
    assert list(zip(ph["name"], ph["start_ns"], ph["thread"])) == [
        ("step", 10000, "Master thread"),
        ("bucket:0:4096", 30000, "Thread 12"),
    ]
