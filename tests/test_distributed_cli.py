"""Rank set-up from launcher variables, and the analyze command's inputs and bad-input errors."""

import json
import subprocess

import pytest

from dnabert_scaling.run.train.distributed import expand_first_host, rank_info
from dnabert_scaling.errors import ArtifactError

from conftest import DATA, PYTHON, ROOT


def test_rank_from_torchrun_variables():
    info = rank_info({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "n1", "MASTER_PORT": "1234"})
    assert (info.rank, info.local_rank, info.world_size, info.master_addr, info.master_port, info.source) == (
        3,
        1,
        4,
        "n1",
        1234,
        "torchrun",
    )


def test_rank_from_slurm_variables():
    env = {
        "SLURM_PROCID": "5",
        "SLURM_LOCALID": "1",
        "SLURM_NTASKS": "8",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NODELIST": "gpu[007-008]",
    }
    info = rank_info(env)
    assert (info.rank, info.local_rank, info.world_size, info.source) == (5, 1, 8, "slurm")
    assert info.master_addr == "gpu007"
    assert info.master_port == 15000 + 4242 % 20000
    with pytest.raises(ArtifactError, match="rank 9 is outside world size 8"):
        rank_info({**env, "SLURM_PROCID": "9"})
    with pytest.raises(ArtifactError, match="SLURM_NTASKS='eight' is not an integer"):
        rank_info({**env, "SLURM_NTASKS": "eight"})


@pytest.mark.parametrize("nodelist, first", [("node[003-005,9]", "node003"), ("a1,b2", "a1"), ("gpu-[10-12]-ib", "gpu-10-ib")])
def test_first_host_of_a_nodelist(nodelist, first, monkeypatch):
    monkeypatch.setenv("PATH", "")  # without scontrol: the parser
    assert expand_first_host(nodelist) == first


def _analyze(*args):
    return subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "analyze", *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_analyze_bare_traces_and_manifest(tmp_path):
    trace = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
    # one rank of a two-rank run: the missing rank is named
    proc = _analyze("--world-size", "2", trace, "--out", tmp_path / "r0")
    assert proc.returncode == 2 and "rank" in proc.stderr and "1" in proc.stderr
    manifest = tmp_path / "traces.toml"
    manifest.write_text(
        f'[[traced]]\nworld_size = 1\ntracer = "torch"\ntraces = ["{(DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz").as_posix()}"]\nbatch_size = 32\n'
    )
    proc = _analyze("--trace-manifest", manifest, "--out", tmp_path / "r1")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((tmp_path / "r1" / "metrics.json").read_text())
    traced = metrics["world_sizes"]["1"]["traced"]
    # that trace marks its steps as 'train_step', not ds:step: no measured step, a failed sanity check
    assert traced["sanity"]["steps_complete"] is False
    assert any("no measured step" in p for p in traced["sanity"]["problems"])
    assert traced["gpu"]["step_time_s"] is None and traced["gpu"]["kernels_per_step"] is None


@pytest.mark.parametrize(
    "content, message",
    [
        ("[[traced]]\nworld_size = 0\ntraces = ['a']\n", "world_size must be a positive integer"),
        ("[[traced]]\nworld_size = 1\ntraces = 'a'\n", "traces must be a list of paths"),
        ("[[traced]]\nworld_size = 1\ntraces = ['a']\ncolour = 'red'\n", "unknown keys"),
        ("not toml [", "cannot read trace manifest"),
        ("x = 1\n", "needs [[traced]] entries"),
    ],
)
def test_bad_trace_manifests(tmp_path, content, message):
    manifest = tmp_path / "m.toml"
    manifest.write_text(content)
    proc = _analyze("--trace-manifest", manifest, "--out", tmp_path / "out")
    assert proc.returncode == 2 and message in proc.stderr and str(manifest) in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_analyze_refuses_a_folder_without_runs_and_keeps_old_results(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "metrics.json").write_text('{"old": true}')
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _analyze(empty, "--out", out)
    assert proc.returncode == 2 and "holds no run folders" in proc.stderr
    assert json.loads((out / "metrics.json").read_text()) == {"old": True}


@pytest.mark.parametrize(
    "gpus, message",
    [
        ("1,,4", "comma-separated list of integers"),
        ("1,1", "twice"),
        ("0", "positive world sizes"),
        ("a", "comma-separated list"),
    ],
)
def test_sweep_rejects_bad_world_sizes(tmp_path, gpus, message):
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "sweep", "--gpus", gpus, "--device", "cpu", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_sweep_without_gpus_needs_an_explicit_cpu_request(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible here")
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "sweep", "--gpus", "1", "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and "no CUDA device is visible" in proc.stderr and "--device cpu" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_summarize_checks_the_world_size_of_one_archive():
    archive = DATA / "traces" / "scorep-cuda-2rank"
    bad = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "summarize", str(archive), "--world-size", "4"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad.returncode == 2 and "expected world size 4" in bad.stderr and "traces.otf2" in bad.stderr
    ok = subprocess.run(
        f"{PYTHON} -m dnabert_scaling summarize {archive} --world-size 2 --json - | head -1",
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert ok.stdout.strip() == "{" and "Traceback" not in ok.stderr
