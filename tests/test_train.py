"""Real training processes: one rank, a 2-process gloo DDP job under torchrun, a failing rank,
and learning on planted-motif data."""

import json
import math
import subprocess
import time

from conftest import PYTHON

TRAIN = [PYTHON, "-m", "dnabert_scaling", "train"]
TORCHRUN = [PYTHON, "-m", "torch.distributed.run", "--standalone"]
TINY = ["--model", "tiny", "--no-progress", "--find-unused-parameters", "false"]


def _run(cmd, timeout=180):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _steps(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _two_ranks(out, tiny_task, *extra):
    proc = _run(
        TORCHRUN
        + [
            "--nproc-per-node",
            "2",
            "-m",
            "dnabert_scaling",
            "train",
            *TINY,
            "--data",
            str(tiny_task),
            "--task",
            "prom_core_all",
            "--steps",
            "6",
            "--warmup-steps",
            "2",
            "--batch-size",
            "8",
            "--param-fingerprint",
            *extra,
            "--out",
            str(out),
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_two_rank_gloo_ddp_keeps_parameters_identical(tmp_path, tiny_task):
    out = tmp_path / "run"
    _two_ranks(out, tiny_task, "--bucket-hook", "on")
    ranks = [json.loads((out / f"rank{r}/summary.json").read_text()) for r in (0, 1)]
    assert ranks[0]["param_sha256"] == ranks[1]["param_sha256"]
    assert all(r["status"] == "ok" and r["measured_steps"] == 6 for r in ranks)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok"
    assert summary["world_size"] == 2 and summary["backend"] == "gloo" and summary["launcher"] == "torchrun"
    assert summary["global_batch"] == 16
    assert summary["samples_per_s"] > 0 and summary["finite_loss"]
    assert {f["what"] for f in summary["fallbacks"]} >= {"device", "weights"}
    buckets = summary["ddp_buckets"]
    assert buckets["gradient_bytes"] == 4 * summary["parameters"] and buckets["buckets"] == len(buckets["bucket_bytes"])
    assert buckets["hook_calls"] == 8 * buckets["buckets"] and buckets["first_bucket_cap_bytes"] == 1 << 20
    # DDP's built-in reduction instead of the bucket hook: the same parameters, bit for bit
    off = tmp_path / "hook-off"
    _two_ranks(off, tiny_task, "--bucket-hook", "off")
    assert json.loads((off / "rank0/summary.json").read_text())["param_sha256"] == ranks[0]["param_sha256"]
    # the default (auto) leaves an untraced run with DDP's built-in all-reduce: its throughput is the study's
    auto = tmp_path / "hook-auto"
    _two_ranks(auto, tiny_task)
    assert json.loads((auto / "summary.json").read_text())["ddp_buckets"] is None
    for r in (0, 1):
        steps = _steps(out / f"rank{r}/steps.jsonl")
        assert [s["step"] for s in steps] == list(range(8))
        assert [s["measured"] for s in steps] == [False] * 2 + [True] * 6
        assert all(s["step_time_s"] > 0 and math.isfinite(s["loss"]) for s in steps)
        assert set(steps[0]["host_phase_s"]) == {"forward", "backward", "optimizer"}


def test_single_process_run_writes_provenance(tmp_path, tiny_task):
    out = tmp_path / "run"
    proc = _run(TRAIN + [*TINY, "--data", str(tiny_task), "--steps", "3", "--warmup-steps", "1", "--out", str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    prov = summary["provenance"]
    assert prov["packages"]["torch"] and prov["python"]
    assert summary["task"]["synthetic"] is True
    assert summary["weights"]["source"] == "random-init"
    assert summary["launcher"] == "single" and summary["world_size"] == 1


def test_bucket_hook_marks_buckets_and_keeps_the_arithmetic(tmp_path, tiny_task):
    """World size 1 (DDP over gloo): with and without the hook the parameters end bitwise equal,
    and the torch trace holds one ds:bucket range per bucket and measured step."""
    import gzip

    from dnabert_scaling.traces.classify import bucket_args, phase_name

    sha = {}
    for hook in ("on", "off"):
        out = tmp_path / hook
        proc = _run(
            TRAIN
            + [
                *TINY,
                "--data",
                str(tiny_task),
                "--steps",
                "3",
                "--warmup-steps",
                "1",
                "--tracer",
                "torch",
                "--bucket-cap-mb",
                "0.5",
                "--bucket-hook",
                hook,
                "--param-fingerprint",
                "--out",
                str(out),
            ]
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        sha[hook] = json.loads((out / "rank0/summary.json").read_text())["param_sha256"]
    assert sha["on"] == sha["off"]
    summary = json.loads((tmp_path / "on/summary.json").read_text())
    assert json.loads((tmp_path / "off/summary.json").read_text())["ddp_buckets"] is None
    sizes = summary["ddp_buckets"]["bucket_bytes"]
    assert len(sizes) > 1 and sum(sizes) == 4 * summary["parameters"]
    assert len(summary["ddp_buckets"]["bucket_tensors"]) == len(sizes) and min(summary["ddp_buckets"]["bucket_tensors"]) >= 1
    events = json.loads(gzip.open(tmp_path / "on/traces/rank0.json.gz").read())["traceEvents"]
    marked = [
        bucket_args(phase_name(e["name"]))
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ds:bucket")
    ]
    assert len(marked) == 3 * len(sizes)
    assert {i: b for i, b in marked} == dict(enumerate(sizes))


def test_failing_rank_ends_the_run_and_keeps_outputs(tmp_path, tiny_task):
    out = tmp_path / "run"
    t0 = time.monotonic()
    proc = _run(
        TORCHRUN
        + [
            "--nproc-per-node",
            "2",
            "-m",
            "dnabert_scaling",
            "train",
            *TINY,
            "--data",
            str(tiny_task),
            "--steps",
            "20",
            "--warmup-steps",
            "0",
            "--inject-fault",
            "1:4",
            "--dist-timeout",
            "30",
            "--out",
            str(out),
        ],
        timeout=120,
    )
    elapsed = time.monotonic() - t0
    assert proc.returncode != 0
    assert elapsed < 90
    assert "injected fault on rank 1 at step 4" in proc.stderr
    failed = json.loads((out / "rank1/summary.json").read_text())
    assert failed["status"] == "failed" and "injected fault" in failed["error"] and failed["stopped"] is False
    assert json.loads((out / "summary.json").read_text())["status"] == "failed"
    # the other rank's per-step log survives, with whole lines
    steps = _steps(out / "rank0/steps.jsonl")
    assert 1 <= len(steps) <= 5


def test_sigterm_is_recorded_as_a_stopped_rank(tmp_path, tiny_task):
    """A launcher ending a rank with SIGTERM (torchrun does, once another rank failed) still gets
    the failure recorded: the rank's summary marked ``stopped``, and rank 0 the run's summary."""
    import signal

    out = tmp_path / "run"
    cmd = [*TRAIN, *TINY, "--no-ddp", "--data", str(tiny_task), "--steps", "100000", "--warmup-steps", "0", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    steps = out / "rank0" / "steps.jsonl"
    deadline = time.monotonic() + 120
    while not (steps.is_file() and steps.read_text().count("\n") >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "stopped by SIGTERM" in err, err[-2000:]
    rank = json.loads((out / "rank0" / "summary.json").read_text())
    assert rank["status"] == "failed" and rank["stopped"] is True and "Terminated" in rank["error"], rank
    assert json.loads((out / "summary.json").read_text())["status"] == "failed"
    assert "Terminated: stopped by SIGTERM" in (out / "rank0" / "error.txt").read_text()


def test_tiny_model_learns_planted_motifs(tmp_path, tiny_task):
    out = tmp_path / "run"
    proc = _run(
        TRAIN
        + [
            *TINY,
            "--no-ddp",
            "--data",
            str(tiny_task),
            "--task",
            "prom_core_all",
            "--steps",
            "80",
            "--warmup-steps",
            "0",
            "--batch-size",
            "32",
            "--lr",
            "2e-3",
            "--lr-warmup-steps",
            "5",
            "--eval",
            "--out",
            str(out),
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dev_accuracy"] > 0.8  # chance is 0.5
    assert summary["ranks"][0]["loss_last"] < summary["ranks"][0]["loss_first"]


def test_bad_arguments_are_clear_errors(tmp_path):
    proc = _run(TRAIN + ["--model", "tiny", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "r")])
    assert proc.returncode == 2
    assert "GUE task folder does not exist" in proc.stderr and "Traceback" not in proc.stderr
