"""The scaling predictor on written multi-rank OTF2 traces: ones whose all-reduce timing follows
the model exactly (predicted within a tight tolerance) and one that does not (the error shown),
plus the refusals of bad input."""

import json
from pathlib import Path

import pytest

from dnabert_scaling.analysis import predict as pr
from dnabert_scaling.cli import main
from dnabert_scaling.traces import read_run_traces
from dnabert_scaling.tools.synth import BucketModel, bucket_rank, study_rank, write_bucket_run

MODEL = dict(alpha_ns=20_000, busbw_Bps=200e9, contention=1.1)
OPTS = ["--intra-busbw", "200", "--alpha-us", "20", "--contention", "1.1"]


def own_gpus(n: int) -> list[dict]:
    """Rank records (a run summary's ``ranks``) saying each of ``n`` ranks ran on a GPU of its own."""
    return [
        {
            "rank": r,
            "status": "ok",
            "device": f"cuda:{r}",
            "placement": {
                "host": "n1",
                "device_type": "cuda",
                "device_index": r,
                "gpu_uuid": f"GPU-{r:08x}-1111-2222-3333-444455556666",
                "transports": ["P2P"] if n > 1 else [],
                "rehearsal": False,
            },
        }
        for r in range(n)
    ]


def _write_summary(run, n):
    summary = {"status": "ok", "world_size": n, "tracer": "scorep", "ddp": True, "measured_steps": 6, "device_type": "cuda"}
    (run / "summary.json").write_text(json.dumps(summary | {"fallbacks": [], "ranks": own_gpus(n)}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Written runs: the world-size-1 trace, and run folders of 2, 4 and 8 ranks (one GPU each, as
    their records say) that follow the model, and one of 4 ranks that does not."""
    root = tmp_path_factory.mktemp("bucket-runs")
    out = {1: write_bucket_run(root / "ws1", 1, BucketModel(**MODEL))[0]}
    for n in (2, 4, 8):
        write_bucket_run(root / f"ws{n}", n, BucketModel(**MODEL))
        _write_summary(root / f"ws{n}", n)
        out[n] = root / f"ws{n}"
    write_bucket_run(root / "ws4-slow", 4, BucketModel(**MODEL, comm_scale=1.6))
    _write_summary(root / "ws4-slow", 4)
    out["slow"] = root / "ws4-slow"
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
        json.dumps(
            {
                "world_size": 4,
                "rehearsal": False,
                "sizes": [{"bytes": 1 << 20, "busbw_Bps": 100e9}, {"bytes": 26 << 20, "busbw_Bps": 100e9}],
            }
        )
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
    # a sweep folder: named as such, with the run to give instead (not a complaint about one of its files)
    sweep = Path(__file__).resolve().parents[1] / "expected" / "reference" / "h200-buckets-b8"
    assert main(["predict", str(sweep), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "a sweep folder, not one run" in err and str(sweep / "ws1-torch-r0") in err and "IMPORT.json" not in err
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

    from dnabert_scaling.metrics_schema import Placement
    from reportfixtures import set_metric

    claims = ROOT / "expected" / "claims.toml"
    metrics, tables = gpu_results((1, 4, 8), tracer="scorep")  # the replayed trace is OTF2, as the set's
    # the set was analysed from the trace the forecast replays (its sha256), its ranks on GPUs of their own
    sha = read_run_traces([runs[1]]).ranks[0]["sha256"]
    set_metric(metrics, 1, "traced.inputs", [{"rank": 0, "path": str(runs[1]), "sha256": sha}])
    for n in (4, 8):
        own = Placement(ranks=n, hosts=1, gpus=n, ranks_per_gpu=1, shared_gpu=False, identity="uuid", transports=["P2P"])
        set_metric(metrics, n, "traced.placement", own.to_json())
    results = write_results(tmp_path / "results", metrics, tables)
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
        _write_summary(run, n)
    assert main(["analyze", "sweep", "--out", "results"]) == 0
    assert main(["predict", "results", "--gpus", "2,4,8", "--intra-busbw", "200", "--alpha-us", "20"]) == 0
    out = json.loads((tmp_path / "results" / "predictions.json").read_text())
    # what it replayed, by content: the world-size-1 trace metrics.json was analysed from
    metrics = json.loads((tmp_path / "results" / "metrics.json").read_text())
    assert out["source"]["sha256"] == metrics["world_sizes"]["1"]["traced"]["inputs"][0]["sha256"]
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
    doc["traceEvents"].append(ann("ds:bucket:1:x", 50, 2, tid=12))  # named as a mark, yet unreadable: refused
    p.write_text(json.dumps(doc))
    from dnabert_scaling.errors import ArtifactError

    with pytest.raises(ArtifactError, match=r"trace event 4 of traceEvents .*'ds:bucket:1:x'.*does not read"):
        read_trace(p)


def test_otf2_reader_refuses_a_bucket_region_that_does_not_read(tmp_path):
    """As the Kineto reader: a region named as a bucket mark that does not read is refused, naming the archive,
    never left out (its bucket's all-reduce would be lost to the analysis and the forecast)."""
    from dnabert_scaling.errors import ArtifactError
    from dnabert_scaling.traces import read_trace

    rank = bucket_rank(0, 1, BucketModel(**MODEL))
    first = rank.host.index[rank.host["name"] == "bucket:0:1048576"][0]
    rank.host.loc[first, "name"] = "bucket:0:-1048576"
    rank.write(tmp_path / "scorep-rank0", overwrite=True)
    with pytest.raises(ArtifactError, match=r"region 'user:ds:bucket:0:-1048576' is a bucket mark that does not read"):
        read_trace(tmp_path / "scorep-rank0" / "traces.otf2")


# --- no input is ever the output (D1) ----------------------------------------------------------


def _tree(root):
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def kineto_results(tmp_path_factory):
    """The shipped bucket-hook sweep (one Kineto world-size-1 run) copied, and analyzed: the
    world-size-1 run is found through metrics.json's sources."""
    import shutil

    from conftest import ROOT

    root = tmp_path_factory.mktemp("kineto-sweep")
    shutil.copytree(ROOT / "expected" / "reference" / "h200-buckets-b8", root / "sweep")
    assert main(["analyze", str(root / "sweep"), "--out", str(root / "results")]) == 0
    return root


@pytest.fixture(scope="module")
def scorep_results(tmp_path_factory):
    """Written world-size-1 and 4 Score-P runs, analyzed: predict reads the 4-rank run's traces too."""
    root = tmp_path_factory.mktemp("scorep-sweep")
    for n in (1, 4):
        run = root / "sweep" / f"ws{n}-scorep-r0"
        write_bucket_run(run, n, BucketModel(**MODEL))
        _write_summary(run, n)
    assert main(["analyze", str(root / "sweep"), "--out", str(root / "results")]) == 0
    return root


@pytest.mark.parametrize(
    "out, word",
    [
        ("sweep/ws1-torch-r0/traces/rank0.json.gz", "is also an input"),  # the resolved trace
        ("sweep/ws1-torch-r0/summary.json", "is also an input"),  # the run folder's record
        ("sweep/ws1-torch-r0/predictions.json", "lies inside the input"),  # a new file inside the run folder
        ("sweep/ws1-torch-r0/traces/../config.json", "lies inside the input"),
        ("results/metrics.json", "is also an input"),
    ],
)
def test_no_input_found_through_metrics_sources_is_overwritten(kineto_results, capsys, out, word):
    before = _tree(kineto_results / "sweep") | _tree(kineto_results / "results")
    assert main(["predict", str(kineto_results / "results"), "--out", str(kineto_results / out)]) == 2
    err = capsys.readouterr().err
    assert f"{kineto_results / out}: --out: {word}" in err and "Traceback" not in err, err
    assert _tree(kineto_results / "sweep") | _tree(kineto_results / "results") == before


@pytest.mark.parametrize(
    "out",
    [
        "sweep/ws1-scorep-r0/traces/scorep-rank0/traces.otf2",  # inside the world-size-1 run's OTF2 trace
        "sweep/ws4-scorep-r0/summary.json",  # the 4-rank run predict reads for the contention
        "sweep/ws4-scorep-r0/traces/scorep-rank3/traces.otf2",
        "sweep/ws4-scorep-r0/new.json",
    ],
)
def test_no_run_of_a_results_folder_is_overwritten(scorep_results, capsys, out):
    before = _tree(scorep_results / "sweep")
    assert main(["predict", str(scorep_results / "results"), "--out", str(scorep_results / out)]) == 2
    err = capsys.readouterr().err
    assert "--out:" in err and "input" in err and str(scorep_results / out) in err, err
    assert _tree(scorep_results / "sweep") == before


def test_no_measured_run_or_busbw_file_is_overwritten(tmp_path, runs, capsys):
    ws4 = tmp_path / "ws4-scorep-r0"
    write_bucket_run(ws4, 4, BucketModel(**MODEL))
    _write_summary(ws4, 4)
    bw = tmp_path / "busbw-ws4.json"
    bw.write_text(json.dumps({"world_size": 4, "rehearsal": False, "sizes": [{"bytes": 1 << 20, "busbw_Bps": 100e9}]}))
    for out in (ws4 / "summary.json", ws4 / "traces" / "scorep-rank0" / "traces.otf2", bw):
        before = _tree(ws4) | {bw: bw.read_bytes()}
        assert main(["predict", str(runs[1]), "--measured", str(ws4), "--busbw", str(bw), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "--out:" in err and "input" in err and str(out) in err, err
        assert _tree(ws4) | {bw: bw.read_bytes()} == before


# --- absurd figures are refused, never a traceback (D8) ----------------------------------------


@pytest.mark.parametrize(
    "opts, words",
    [
        (["--alpha-us", "inf"], ["--alpha-us", "out of range", "1 s"]),
        (["--alpha-us", "20,10,2e6"], ["--alpha-us", "out of range", "1 s"]),
        (["--alpha-us", "nan"], ["--alpha-us", "out of range"]),
        (["--contention", "inf"], ["--contention", "out of range", "0.5 to 100"]),
        (["--contention", "1,0,2"], ["--contention", "out of range", "0.5 to 100"]),
        (["--intra-busbw", "1e-300"], ["--intra-busbw", "out of range", "1 kB/s"]),
        (["--inter-busbw", "1e9"], ["--inter-busbw", "out of range", "100 TB/s"]),
        (["--intra-busbw", "-5"], ["--intra-busbw", "out of range"]),
        (["--intra-busbw", "200,300,400"], ["--intra-busbw", "LOW <= MID <= HIGH"]),
        (["--gpus", "2,100000000"], ["--gpus", "1,000,000"]),
        (["--gpus-per-node", "0"], ["--gpus-per-node"]),
    ],
)
def test_absurd_options_are_refused(tmp_path, runs, capsys, opts, words):
    out = tmp_path / "p.json"
    assert main(["predict", str(runs[1]), "--gpus", "2,8", "--out", str(out), *opts]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words) and "Traceback" not in err, err
    assert not out.exists()


def test_the_bounds_themselves_are_accepted(tmp_path, runs):
    """The slowest, most latent, most contended system the options allow still replays."""
    extreme = ["--intra-busbw", "1e-6", "--inter-busbw", "1e-6", "--alpha-us", "1e6", "--contention", "100"]
    rc, out = _predict(tmp_path, runs[1], *extreme, "--gpus-per-node", "1")
    assert rc == 0 and out["world_sizes"]["1024"]["step_time_s"]["mid"] > 1e3


GOOD_ROW = {"bytes": 1 << 20, "busbw_Bps": 100e9}


@pytest.mark.parametrize(
    "doc, words",
    [
        ({"world_size": 4, "sizes": [GOOD_ROW | {"busbw_Bps": "fast"}]}, ["sizes[0].busbw_Bps", "'fast'", "1 kB/s"]),
        ({"world_size": 4, "sizes": [GOOD_ROW | {"bytes": "abc"}]}, ["sizes[0].bytes", "'abc'", "1 TiB"]),
        ({"world_size": 4, "sizes": [{"bytes": 1, "busbw_Bps": 1e-300}]}, ["sizes[0].busbw_Bps", "1e-300", "1 kB/s"]),
        ({"world_size": 4, "sizes": [GOOD_ROW, GOOD_ROW | {"busbw_Bps": -1e9}]}, ["sizes[1].busbw_Bps", "-1000000000.0"]),
        ({"world_size": 4, "sizes": [GOOD_ROW | {"bytes": -5}]}, ["sizes[0].bytes", "-5"]),
        ({"world_size": 4, "sizes": [GOOD_ROW | {"bytes": 1.5}]}, ["sizes[0].bytes", "whole number"]),
        ({"world_size": 4, "sizes": [GOOD_ROW | {"busbw_Bps": 1e15}]}, ["sizes[0].busbw_Bps", "100 TB/s"]),
        ({"world_size": 4, "sizes": [GOOD_ROW | {"busbw_Bps": True}]}, ["sizes[0].busbw_Bps", "True"]),
        ({"world_size": 4, "sizes": [{"bytes": 1 << 20}]}, ["sizes[0].busbw_Bps", "None"]),
        ({"world_size": 4, "sizes": [7]}, ["sizes[0] must be an object"]),
        ({"world_size": 4, "sizes": []}, ["sizes must be a non-empty list"]),
        ({"world_size": -2, "sizes": [GOOD_ROW]}, ["world_size", "-2", "from 2"]),
        ({"world_size": 1, "sizes": [GOOD_ROW]}, ["world_size", "from 2"]),
        ({"world_size": "4", "sizes": [GOOD_ROW]}, ["world_size", "'4'"]),
        ({"sizes": [GOOD_ROW]}, ["not a busbw result"]),
    ],
)
def test_bad_busbw_files_are_refused(tmp_path, runs, capsys, doc, words):
    bw = tmp_path / "busbw.json"
    bw.write_text(json.dumps(doc))
    out = tmp_path / "p.json"
    assert main(["predict", str(runs[1]), "--busbw", str(bw), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{bw}: --busbw:" in err and all(w in err for w in words) and "Traceback" not in err, err
    assert not out.exists()


def test_non_finite_json_in_a_busbw_file_is_refused(tmp_path, runs, capsys):
    bw = tmp_path / "busbw.json"
    bw.write_text('{"world_size": 4, "sizes": [{"bytes": 1e400, "busbw_Bps": Infinity}]}')
    assert main(["predict", str(runs[1]), "--busbw", str(bw), "--out", str(tmp_path / "p.json")]) == 2
    assert "sizes[0].bytes" in capsys.readouterr().err


def test_two_busbw_files_for_one_world_size_are_refused(tmp_path, runs, capsys):
    files = []
    for name in ("a.json", "b.json"):
        files += ["--busbw", str(tmp_path / name)]
        (tmp_path / name).write_text(json.dumps({"world_size": 4, "rehearsal": False, "sizes": [GOOD_ROW]}))
    assert main(["predict", str(runs[1]), *files, "--out", str(tmp_path / "p.json")]) == 2
    assert "second file for world size 4" in capsys.readouterr().err


def test_a_shipped_busbw_file_reads_but_a_rehearsal_s_or_the_cpu_s_bandwidth_is_refused():
    """The shipped busbw files are a rehearsal's (ranks sharing one GPU, NCCL over sockets): their format reads,
    but their bandwidth is no node's GPU links, so a forecast of GPUs refuses them, as it does gloo on the CPU."""
    from conftest import ROOT

    from dnabert_scaling.analysis.predict_layouts import check_busbw
    from dnabert_scaling.errors import ArtifactError

    shipped = sorted((ROOT / "expected" / "reference" / "h200-rehearsal").glob("busbw-ws*.json"))
    assert shipped
    for path in shipped:
        data = json.loads(path.read_text())
        with pytest.raises(ArtifactError, match="a rehearsal's bandwidth .ranks sharing one GPU.*says it was one"):
            check_busbw(data, path)
        measured = {**data, "rehearsal": False}
        assert check_busbw(measured, path) >= 2
        for other, said in [
            ({"backend": "GLOO"}, "the CPU's .gloo."),
            ({"device_type": "CPU"}, "the CPU's .gloo."),
            ({"rehearsal": "false"}, r"does not say it was none \(rehearsal: 'false'\)"),
            ({"rehearsal": 0}, "does not say it was none"),
        ]:
            with pytest.raises(ArtifactError, match=said):
                check_busbw({**measured, **other}, path)
        with pytest.raises(ArtifactError, match="has no rehearsal field"):
            check_busbw({k: v for k, v in measured.items() if k != "rehearsal"}, path)


def test_a_busbw_file_with_one_size_twice_is_refused_and_sizes_outside_it_are_noted(tmp_path, runs, capsys):
    bw = tmp_path / "busbw.json"
    bw.write_text(json.dumps({"world_size": 2, "rehearsal": False, "sizes": [GOOD_ROW, GOOD_ROW | {"busbw_Bps": 1e4}]}))
    assert main(["predict", str(runs[1]), "--gpus", "2", "--busbw", str(bw), "--out", str(tmp_path / "p.json")]) == 2
    assert "sizes holds 1,048,576 bytes more than once" in capsys.readouterr().err
    bw.write_text(json.dumps({"world_size": 2, "rehearsal": False, "sizes": [{"bytes": 1, "busbw_Bps": 1e11}]}))
    assert main(["predict", str(runs[1]), "--gpus", "2", "--busbw", str(bw), "--out", str(tmp_path / "p.json")]) == 0
    notes = json.loads((tmp_path / "p.json").read_text())["source"]["notes"]
    said = [n for n in notes if "lie outside the sizes --busbw measured at world size 2 (1-1 bytes)" in n]
    assert said and "nearest measured size" in said[0] and said[0] in capsys.readouterr().out


def test_json_nested_too_deeply_and_a_world_size_twice_are_refused(tmp_path, runs, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 3000 + "]" * 3000)
    assert main(["predict", str(runs[1]), "--gpus", "2", "--busbw", str(deep), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "deep.json: cannot read JSON: nested too deeply" in err and "Traceback" not in err
    for gpus in ("2,2", "2,,4", "1_6", "\u0668"):
        assert main(["predict", str(runs[1]), "--gpus", gpus, "--out", str(tmp_path / "p.json")]) == 2
    assert "--gpus names a world size twice: '2,2'" in capsys.readouterr().err


def _edited_bucket_trace(tmp_path, edit):
    """The shipped one-GPU trace with bucket marks, its ``ds:bucket`` events edited by ``edit(events)``."""
    import gzip

    from conftest import ROOT

    src = ROOT / "expected" / "reference" / "h200-buckets-b8" / "ws1-torch-r0" / "traces" / "rank0.json.gz"
    doc = json.loads(gzip.decompress(src.read_bytes()))
    edit([e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ds:bucket:")])
    out = tmp_path / "rank0.json"
    out.write_text(json.dumps(doc))
    return out


def _renamed(index: int, name: str):
    """An edit giving every mark of bucket ``index`` the name ``name``."""

    def edit(events):
        for e in events:
            if e["name"].startswith(f"ds:bucket:{index}:"):
                e["name"] = name

    return edit


def _marks_in_step_zero_only(events):
    for e in events[13:]:
        e["name"] = "ds:renamed"


def _size_of_last(events):
    index, _ = events[-1]["name"].rsplit(":", 2)[1:]
    events[-1]["name"] = f"ds:bucket:{index}:99"


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda ev: ev[-1].update(name="ds:renamed"), "hands other buckets to all-reduce than step"),
        (_renamed(0, "ds:bucket:0:-11814920"), "a bucket mark that does not read as ds:bucket:<index>:<bytes>"),
        (_renamed(12, "ds:bucket:12:-40925184"), "a bucket mark that does not read as ds:bucket:<index>:<bytes>"),
        (_renamed(0, "ds:renamed"), "without bucket 0: DDP numbers its buckets from 0"),
        (_marks_in_step_zero_only, "measured steps hold no bucket mark"),
        (_size_of_last, "hands other buckets to all-reduce than step 0"),
        (lambda ev: ev[-1].update(name=ev[-2]["name"]), "to all-reduce twice"),
    ],
)
def test_a_bucket_mark_that_does_not_read_or_a_step_of_other_buckets_is_refused(tmp_path, capsys, edit, said):
    """Dropped before, such a bucket's all-reduce was simply left out of the forecast, with no note."""
    trace = _edited_bucket_trace(tmp_path, edit)
    out = tmp_path / "p.json"
    assert main(["predict", str(trace), "--gpus", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert said in err and "rank0.json" in err and "Traceback" not in err, err
    assert not out.exists()


def test_a_timeline_past_the_clock_is_refused(runs):
    """The backstop: figures a trace carries (here a bucket of 2**62 bytes) that overflow the
    replay's nanosecond clock give an ArtifactError, not an OverflowError."""
    from dataclasses import replace

    from dnabert_scaling.errors import ArtifactError

    profile = pr.profile_from_trace(read_run_traces([runs[1]]))
    profile.bucket_bytes = profile.bucket_bytes.copy()
    profile.bucket_bytes[0] = 1 << 62
    slowest = pr.Band(1e3, 1e3, 1e3)  # 1 kB/s, the lowest bus bandwidth the options allow
    layout = replace(pr.NODES["a100-nvswitch"], intra_busbw=slowest)
    with pytest.raises(ArtifactError, match="overflows the nanosecond clock"):
        pr.predict(profile, [2], layout, pr.DEFAULT_CONTENTION)


def test_a_run_without_records_found_through_the_sources_is_read_and_kept(tmp_path, scorep_results, capsys):
    """A world-size-1 run that metrics.json names but that has lost its summary.json: its traces
    are still read as the source, and still never the output."""
    import shutil

    shutil.copytree(scorep_results, tmp_path / "copy")
    metrics = json.loads((tmp_path / "copy" / "results" / "metrics.json").read_text())
    metrics["sources"] = [str(tmp_path / "copy" / "sweep")]
    (tmp_path / "copy" / "results" / "metrics.json").write_text(json.dumps(metrics))
    run1 = tmp_path / "copy" / "sweep" / "ws1-scorep-r0"
    (run1 / "summary.json").unlink()
    inside = run1 / "traces" / "scorep-rank0" / "traces.otf2"
    before = _tree(run1)
    assert main(["predict", str(tmp_path / "copy" / "results"), "--gpus", "2,4", "--out", str(inside)]) == 2
    assert f"{inside}: --out: lies inside the input" in capsys.readouterr().err
    assert _tree(run1) == before
    rc, out = _predict(tmp_path, tmp_path / "copy" / "results", "--gpus", "2,4")
    assert rc == 0 and "ws1-scorep-r0/traces/scorep-rank0" in out["source"]["source"]


# --- an existing file that predict did not write is never overwritten -------------------------


def test_an_existing_file_that_is_not_a_predictions_file_is_not_overwritten(tmp_path, runs, capsys):
    """``--out`` naming someone's notes, another JSON file or a trace that predict does not read: refused
    (exit 2, the file and why named), the file untouched; ``--force`` replaces it; an earlier predictions
    file is replaced without it."""
    import shutil

    from conftest import ROOT

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    trace = tmp_path / "rank0.json.gz"
    shutil.copy(ROOT / "expected" / "reference" / "h200-rehearsal" / "ws2-torch-r0" / "traces" / "rank0.json.gz", trace)
    metrics = tmp_path / "metrics.json"
    shutil.copy(ROOT / "expected" / "reference-results" / "h200-buckets-b8" / "metrics.json", metrics)
    for target, why in (
        (notes, "not a JSON file"),
        (trace, "not a JSON file"),
        (metrics, "a JSON file with schema 'dnabert-scaling/metrics/1'"),
    ):
        before = target.read_bytes()
        assert main(["predict", str(runs[1]), "--gpus", "2", "--out", str(target)]) == 2
        err = capsys.readouterr().err
        assert f"{target}: --out: exists and is not a predictions file written by predict ({why})" in err, err
        assert "--force" in err and "Traceback" not in err
        assert target.read_bytes() == before
    assert main(["predict", str(runs[1]), "--gpus", "2", "--out", str(notes), "--force"]) == 0
    assert json.loads(notes.read_text())["schema"] == pr.SCHEMA
    assert main(["predict", str(runs[1]), "--gpus", "2,4", "--out", str(notes)]) == 0  # predict's own file
    assert "4" in json.loads(notes.read_text())["world_sizes"]


# --- measured runs whose placement is unknown are not compared ---------------------------------


def test_measured_traces_without_a_recorded_placement_are_refused(tmp_path, runs, capsys):
    """Trace files without their run's records do not say whether each rank had a GPU: the shipped
    rehearsal's 8 ranks time-slicing one H200, given as bare traces, are refused as its run folder is
    (before any trace is read), never compared as one GPU per rank."""
    from conftest import ROOT

    rehearsal = ROOT / "expected" / "reference" / "h200-rehearsal" / "ws8-torch-r0"
    one = ROOT / "expected" / "reference" / "h200-buckets-b8" / "ws1-torch-r0" / "traces" / "rank0.json.gz"
    out = tmp_path / "p.json"
    for measured, word in (
        (rehearsal / "traces", "its placement is not recorded"),
        (rehearsal, "its ranks shared a GPU (a rehearsal)"),
        (runs[4] / "traces", "its placement is not recorded"),
    ):
        assert main(["predict", str(one), "--measured", str(measured), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"{measured}: --measured: refused: {word}" in err and "Traceback" not in err, err
        assert "one GPU per rank assumed" not in err
        assert not out.exists()


def test_a_results_folder_without_recorded_placement_is_not_compared(tmp_path, monkeypatch, capsys):
    """A sweep analysed without the ranks' records of where they ran (metrics placement null): its
    4-rank world size is neither compared with the forecast nor used for the contention, and predict says why."""
    monkeypatch.chdir(tmp_path)
    for n in (1, 4):
        run = tmp_path / "sweep" / f"ws{n}-scorep-r0"
        write_bucket_run(run, n, BucketModel(**MODEL))
        summary = {"status": "ok", "world_size": n, "tracer": "scorep", "ddp": True, "measured_steps": 6}
        (run / "summary.json").write_text(json.dumps(summary | {"device_type": "cuda", "fallbacks": []}))
    assert main(["analyze", "sweep", "--out", "results"]) == 0
    metrics = json.loads((tmp_path / "results" / "metrics.json").read_text())
    assert metrics["world_sizes"]["4"]["traced"]["placement"] is None
    capsys.readouterr()
    assert main(["predict", "results", "--gpus", "2,4,8"]) == 0
    err = capsys.readouterr().err
    assert "world size 4 is not compared: its placement is not recorded" in err, err
    out = json.loads((tmp_path / "results" / "predictions.json").read_text())
    assert out["comparison"] == {}
    assert {f["what"] for f in out["fallbacks"]} == {"busbw", "contention"}


def test_the_busbw_fallback_says_what_was_used(tmp_path, runs, capsys):
    """With --intra-busbw, the busbw fallback names the given figure where it was used and the table only
    where the table was (across nodes, its inter-node figure), not the layout's table for everything."""
    rc, out = _predict(tmp_path, runs[1], "--intra-busbw", "150")
    assert rc == 0
    used = next(f["used"] for f in out["fallbacks"] if f["what"] == "busbw")
    assert used == (
        "world sizes [2, 4, 8] (one node): intra-node 150 GB/s given by --intra-busbw; world sizes [16, 1024] "
        "(across nodes, the smaller of): intra-node 150 GB/s given by --intra-busbw, inter-node from the table "
        "of node layout a100-nvswitch"
    )
    line = next(x for x in capsys.readouterr().out.splitlines() if "fallback: busbw" in x)
    assert "changed by options" not in line and "150 GB/s" in line


def test_predict_finds_its_run_in_results_of_several_sweeps(tmp_path):
    """Sweeps analysed together name their runs by their path below the folder holding them all
    (``a/ws1-torch-r0``): predict on those results replays the world-size-1 run of the right sweep."""
    import shutil

    ref = Path(__file__).resolve().parents[1] / "expected" / "reference" / "h200-rehearsal"
    for sweep, run in (("a", "ws1-torch-r0"), ("b", "ws2-torch-r0")):
        (tmp_path / sweep).mkdir()
        shutil.copytree(ref / run, tmp_path / sweep / run)
        shutil.copy(ref / "sweep.json", tmp_path / sweep)
    results = tmp_path / "results"
    assert main(["analyze", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(results)]) == 0
    metrics = json.loads((results / "metrics.json").read_text())
    assert metrics["world_sizes"]["1"]["traced"]["run"] == "a/ws1-torch-r0"
    assert main(["predict", str(results), "--out", str(tmp_path / "p.json")]) == 0
    replayed = json.loads((tmp_path / "p.json").read_text())["source"]
    assert replayed["run"].endswith("a/ws1-torch-r0"), replayed


@pytest.mark.parametrize("bad", ["ds:bucket:0:100000000000000000000", "ds:bucket:0:0", "ds:bucket:4294967296:1024"])
def test_a_bucket_range_out_of_range_is_refused_naming_it(tmp_path, capsys, bad):
    """A tester's trace: a bucket range of 10**20 bytes ended in an OverflowError traceback. Its sizes are held to the
    range of --busbw's (1 B to 1 TiB), its index below 2**31, before numpy holds them."""
    import gzip

    from conftest import ROOT

    source = ROOT / "expected/reference/h200-buckets-b8/ws1-torch-r0/traces/rank0.json.gz"
    doc = json.loads(gzip.decompress(source.read_bytes()))
    first = next(e for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ds:bucket:"))
    first["name"] = bad
    damaged = tmp_path / "rank0.json.gz"
    damaged.write_bytes(gzip.compress(json.dumps(doc).encode()))
    out = tmp_path / "p.json"
    assert main(["predict", str(damaged), "--gpus", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"the trace's bucket range '{bad[3:]}': its index must be below 2**31" in err and "Traceback" not in err
    assert not out.exists()


def test_an_incomplete_trace_is_refused_not_replayed(tmp_path, capsys):
    """A tester's trace: every second kernel dropped. predict replayed it and printed its step as measured, saying
    nothing; a trace that lost activities is refused, with its completeness."""
    import gzip

    from conftest import ROOT

    source = ROOT / "expected/reference/h200-buckets-b8/ws1-torch-r0/traces/rank0.json.gz"
    doc = json.loads(gzip.decompress(source.read_bytes()))
    kernels = [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "kernel"]
    dropped = set(kernels[::2])
    doc["traceEvents"] = [e for i, e in enumerate(doc["traceEvents"]) if i not in dropped]
    damaged = tmp_path / "rank0.json.gz"
    damaged.write_bytes(gzip.compress(json.dumps(doc).encode()))
    out = tmp_path / "p.json"
    assert main(["predict", str(damaged), "--gpus", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the trace is incomplete (" in err and "predict needs a complete world-size-1 trace" in err, err
    assert not out.exists()


def test_the_printout_says_the_replays_notes():
    """What the replay approximated (its source's notes) is printed beside the forecast, not only written to the file."""
    from conftest import ROOT

    from dnabert_scaling.analysis.predict import format_summary

    out = json.loads((ROOT / "expected/reference-results/h200-buckets-b8/predictions.json").read_text())
    out["source"]["notes"] = ["12 activities without a paired launch call: their GPU start stands in"]
    assert format_summary(out).splitlines()[-1] == "  note: 12 activities without a paired launch call: their GPU start stands in"


def test_options_the_forecast_would_not_use_are_refused(tmp_path, runs, capsys):
    """A tester's cases, each read and then dropped unsaid: a --busbw file of a world size not asked for; bandwidth and
    latency options where every size asked has its measured file; --inter-busbw where every size fits in one node."""
    bw = {"world_size": 8, "rehearsal": False, "sizes": [{"bytes": 1 << 20, "busbw_Bps": 100e9}]}
    bw8 = tmp_path / "bw8.json"
    bw8.write_text(json.dumps(bw))
    bw2 = tmp_path / "bw2.json"
    bw2.write_text(json.dumps({**bw, "world_size": 2}))
    out = tmp_path / "p.json"
    for argv, said in (
        (["--gpus", "2,4", "--busbw", bw8], "--busbw: a file of world size 8, which --gpus (2, 4) does not ask for"),
        (
            ["--gpus", "2", "--busbw", bw2, "--intra-busbw", "5", "--alpha-us", "100"],
            "--intra-busbw, --alpha-us: every world size",
        ),
        (
            ["--gpus", "2,4", "--inter-busbw", "5"],
            "--inter-busbw: every world size asked without a --busbw file fits in one node",
        ),
    ):
        assert main(["predict", str(runs[1]), *map(str, argv), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
        assert not out.exists()


@pytest.mark.parametrize(
    "node, said",
    [
        (None, "the trace ran on NVIDIA H200 and node layout a100-nvswitch is of A100 SXM GPUs"),  # the default: the study's
        ("h100-nvswitch", "the trace ran on NVIDIA H200 and node layout h100-nvswitch is of H100 SXM GPUs"),
        ("h200-nvswitch", None),  # the GPU it ran on: nothing mixed
        ("pcie-gen4", None),  # a layout of no one GPU
    ],
)
def test_a_forecast_says_when_it_pairs_one_gpus_kernel_times_with_another_gpus_links(
    kineto_results, capsys, tmp_path, node, said
):
    """The shipped H200 run's record names its GPU: a layout of other GPUs' links gives a forecast of neither node,
    said beside the replay's notes in predictions.json and on the terminal; the H200 layout and PCIe do not."""
    extra = [] if node is None else ["--node", node]
    rc, out = _predict(tmp_path, kineto_results / "results", *extra)
    assert rc == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    mixed = [n for n in out["source"]["notes"] if "link bandwidths" in n]
    assert out["source"]["gpu_name"] == "NVIDIA H200"
    if said is None:
        assert mixed == [] and "link bandwidths" not in printed
    else:
        assert len(mixed) == 1 and mixed[0].startswith(said) and f"  note: {said}" in printed


def test_a_bare_traces_forecast_says_its_gpu_is_not_recorded(runs, tmp_path, capsys):
    """A trace given alone carries no record of its GPU: the forecast says that it replays the kernel times with the
    layout's links; with a measured --busbw for every world size asked, the layout's links are not used and nothing
    is said."""
    rc, out = _predict(tmp_path, runs[1])
    assert rc == 0 and out["source"].get("gpu_name") is None
    assert any(n.startswith("the GPU the trace ran on is not recorded with it") for n in out["source"]["notes"])
    bw = tmp_path / "busbw-ws4.json"
    bw.write_text(json.dumps({"world_size": 4, "rehearsal": False, "sizes": [{"bytes": 1 << 20, "busbw_Bps": 100e9}]}))
    target = tmp_path / "measured.json"
    assert main(["predict", str(runs[1]), "--gpus", "4", "--busbw", str(bw), "--out", str(target)]) == 0
    assert not [n for n in json.loads(target.read_text())["source"].get("notes") or [] if "not recorded" in n]
    capsys.readouterr()


def test_a_kineto_traces_own_device_name_is_its_gpu_and_given_links_are_not_the_tables(tmp_path, capsys):
    """A Kineto trace given alone names its GPU in deviceProperties (the shipped H200 trace): the note names it, not
    'not recorded'; with --intra-busbw for world sizes inside one node no link of the layout's table is used, so
    nothing is said."""
    from conftest import ROOT

    trace = ROOT / "expected" / "reference" / "h200-buckets-b8" / "ws1-torch-r0" / "traces" / "rank0.json.gz"
    target = tmp_path / "p.json"
    assert main(["predict", str(trace), "--gpus", "2,8", "--out", str(target)]) == 0
    source = json.loads(target.read_text())["source"]
    assert source["gpu_name"] == "NVIDIA H200"
    assert [n for n in source["notes"] if "link bandwidths" in n][0].startswith("the trace ran on NVIDIA H200 and")
    assert main(["predict", str(trace), "--gpus", "2,8", "--intra-busbw", "100", "--out", str(target), "--force"]) == 0
    assert not [n for n in json.loads(target.read_text())["source"]["notes"] if "link bandwidths" in n]
    assert main(["predict", str(trace), "--gpus", "16", "--intra-busbw", "100", "--out", str(target), "--force"]) == 0
    assert [n for n in json.loads(target.read_text())["source"]["notes"] if "link bandwidths" in n]  # inter-node: table
    capsys.readouterr()


@pytest.mark.parametrize(
    "gpu_name, node, mixed",
    [
        ("NVIDIA A100-SXM4-80GB", "a100-nvswitch", False),
        ("NVIDIA H100 80GB HBM3", "h100-nvswitch", False),
        ("NVIDIA H200", "h200-nvswitch", False),
        ("NVIDIA RTX A1000", "a100-nvswitch", True),  # another GPU whose name starts alike
        ("NVIDIA GH200 480GB", "h200-nvswitch", True),  # the Grace Hopper superchip: not an H200 SXM node
        ("NVIDIA A100-PCIE-40GB", "a100-nvswitch", True),  # PCIe and NVL forms have other links
        ("NVIDIA H100 NVL", "h100-nvswitch", True),
        ("NVIDIA H100 PCIe", "pcie-gen4", False),  # the PCIe layout is of no one GPU
    ],
)
def test_the_layouts_gpu_is_matched_by_its_model_word_and_form(gpu_name, node, mixed):
    from dnabert_scaling.analysis.predict_layouts import NODES, layout_gpu_note

    note = layout_gpu_note(NODES[node], gpu_name)
    assert (note is not None) == mixed, note
    if mixed:
        assert note.startswith(f"the trace ran on {gpu_name} and node layout {node}")


@pytest.mark.parametrize("gpu_name", [None, "", "   ", 5, ["NVIDIA H200"]])
def test_a_gpu_name_that_is_blank_or_not_text_is_not_a_record_of_the_gpu(gpu_name):
    from dnabert_scaling.analysis.predict_layouts import NODES, layout_gpu_note

    assert layout_gpu_note(NODES["a100-nvswitch"], gpu_name).startswith("the GPU the trace ran on is not recorded")


def test_a_hostile_gpu_name_is_printed_as_escapes(kineto_results, tmp_path, capsys):
    """The run record's gpu_name is the recorder's text: its ANSI escape and bidi override reach the note, which the
    terminal gets as escapes (the file keeps the text)."""
    import shutil

    shutil.copytree(kineto_results / "sweep" / "ws1-torch-r0", tmp_path / "ws1-torch-r0")
    summary = tmp_path / "ws1-torch-r0" / "summary.json"
    doc = json.loads(summary.read_text())
    doc["provenance"]["gpu_name"] = "NVIDIA \x1b[31mX\u202e"
    summary.write_text(json.dumps(doc))
    target = tmp_path / "p.json"
    assert main(["predict", str(tmp_path / "ws1-torch-r0"), "--gpus", "2", "--out", str(target)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\u202e" not in printed and "NVIDIA \\x1b[31mX\\u202e" in printed
    assert json.loads(target.read_text())["source"]["gpu_name"] == "NVIDIA \x1b[31mX\u202e"
