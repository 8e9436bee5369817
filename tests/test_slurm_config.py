"""The slurm executor's settings and the sbatch commands of scripts/slurm/sweep.sh (no cluster needed).

sweep.sh --dry-run prints the exact sbatch commands it would submit, so the job shapes (nodes,
tasks, GPUs, dependencies) are checked here without SLURM; tests/test_slurm_cluster.py submits
them to a real one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.sweep.spec import RunSpec
from dnabert_scaling.run.slurm import (
    SlurmConfig,
    add_slurm_arguments,
    config_from_args,
    gres_gpus,
    group_plan,
    load_config,
    nodes_for,
    run_slurm,
)

SWEEP = ROOT / "scripts" / "slurm" / "sweep.sh"
JOB = ROOT / "scripts" / "slurm" / "dnabert-job.sbatch"
RANK = ROOT / "scripts" / "slurm" / "dnabert-rank.sh"
EXAMPLE = ROOT / "scripts" / "slurm" / "site.conf.example"


def sweep(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "DNABERT_SLURM_CONFIG"}
    e.update(env or {})
    return subprocess.run(["bash", str(SWEEP), *args], capture_output=True, text=True, timeout=60, env=e)


def dry_run(tmp_path: Path, *args: str, sizes: str = "1,4,8") -> list[list[str]]:
    proc = sweep(
        "--dry-run", "--no-container", "--world-sizes", sizes, "--out", str(tmp_path / "runs"), *args, "--", "--model", "tiny"
    )
    assert proc.returncode == 0, proc.stderr
    return [shlex.split(line) for line in proc.stdout.strip().splitlines()]


def opts(cmd: list[str]) -> dict[str, str]:
    """sbatch's --key=value options of one command (up to the batch script)."""
    out = {}
    for a in cmd[1:]:
        if not a.startswith("--"):
            break
        k, _, v = a.partition("=")
        out[k] = v
    return out


# --- the settings file ----------------------------------------------------------------------------


def test_settings_file_values_and_origins(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text(
        "# comment\n\nPARTITION=gpu\nACCOUNT='proj 1'\nTIME=01:30:00   # trailing comment\n"
        "GPUS_PER_NODE=8\nMAX_NODES=2\nNO_CONTAINER=yes\nBIND=/scratch,/data\n"
        'SBATCH_ARGS="--qos=high --exclusive"\nMEM=\n'
    )
    values, origin = load_config(conf)
    assert values == {
        "partition": "gpu",
        "account": "proj 1",
        "time": "01:30:00",
        "gpus_per_node": 8,
        "max_nodes": 2,
        "no_container": True,
        "binds": ("/scratch", "/data"),
        "sbatch_args": ("--qos=high", "--exclusive"),
    }
    assert origin["gpus_per_node"] == f"GPUS_PER_NODE ({conf}:6)"
    cfg = SlurmConfig.from_file(conf)
    assert cfg.mem is None and cfg.gpus_per_node == 8 and cfg.source == conf


@pytest.mark.parametrize(
    "line, message",
    [
        ("PARTITON=gpu", "line 2: unknown setting 'PARTITON'"),
        ("GPUS_PER_NODE=four", "GPUS_PER_NODE ({}:2): 'four' is not a non-negative integer"),
        ("MAX_NODES=0", "MAX_NODES ({}:2): '0' is not a positive integer"),
        ("partition gpu", "line 2: expected KEY=value"),
        ("NO_CONTAINER=maybe", "'maybe' is not 0 or 1"),
        ("TIME=02:00:00", "line 2: TIME is given twice (first on line 1): give it once"),
        ('PARTITION="gpu', 'line 2: PARTITION: the quote " is not closed'),
        ("PARTITION='gpu", "line 2: PARTITION: the quote ' is not closed"),
        ('PARTITION="gpu"x', "line 2: PARTITION: text after the closing quote"),
        ("GPUS_PER_NODE=99999999999999999999", "'99999999999999999999' is too large (at most 999999999)"),
        ("IMAGE=a.sif\nNO_CONTAINER=1", "IMAGE (line 2) and NO_CONTAINER (line 3) exclude each other"),
    ],
)
def test_settings_file_errors_name_file_and_line(tmp_path, line, message):
    conf = tmp_path / "bad.conf"
    conf.write_text(f"TIME=01:00:00\n{line}\n")
    with pytest.raises(ArtifactError) as err:
        load_config(conf)
    assert str(err.value).startswith(f"{conf}: ") or f"({conf}:2)" in str(err.value)
    assert message.format(conf) in str(err.value)


def test_settings_file_quotes_and_comments(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("PARTITION=\"gpu a\"  # the big one\nACCOUNT='p#1'\nGPUS_PER_NODE=08\nMEM=4G#x\n")
    values, _ = load_config(conf)
    assert values == {"partition": "gpu a", "account": "p#1", "gpus_per_node": 8, "mem": "4G#x"}


def test_settings_file_with_a_nul_byte_is_a_one_line_error(tmp_path):
    """A NUL byte passed on ends in an 'embedded null byte' traceback; every text reader refuses it (read_text_file)."""
    conf = tmp_path / "x.conf"
    conf.write_bytes(b"PARTITION=gpu\x00\n")
    with pytest.raises(ArtifactError, match=r"x\.conf: holds a NUL byte \(character 13\), so it is not a SLURM settings file"):
        load_config(conf)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "artifact")}
    env.pop("DNABERT_SLURM_CONFIG", None)
    cmd = [sys.executable, "-m", "dnabert_scaling", "sweep", "--executor", "slurm", "--gpus", "1", "--out", str(tmp_path / "sl")]
    proc = subprocess.run([*cmd, "--slurm-config", str(conf)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "holds a NUL byte" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "sl").exists()


def test_settings_file_not_utf8_is_a_one_line_error(tmp_path):
    conf = tmp_path / "x.conf"
    conf.write_bytes(b"PARTITION=gpu\xff\n")
    with pytest.raises(ArtifactError, match=r"x\.conf: not UTF-8 text, so not a SLURM settings file"):
        load_config(conf)
    with pytest.raises(ArtifactError, match="is a folder, not a regular file"):
        load_config(tmp_path)
    # the sweep command, with --slurm-config and with $DNABERT_SLURM_CONFIG: exit 2, no traceback, nothing written
    env = {**os.environ, "PYTHONPATH": str(ROOT / "artifact")}
    env.pop("DNABERT_SLURM_CONFIG", None)
    cmd = [sys.executable, "-m", "dnabert_scaling", "sweep", "--executor", "slurm", "--gpus", "1", "--out", str(tmp_path / "sl")]
    for extra, more_env in ((["--slurm-config", str(conf)], {}), ([], {"DNABERT_SLURM_CONFIG": str(conf)})):
        proc = subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=120, env={**env, **more_env})
        assert proc.returncode == 2, proc.stderr
        assert f"{conf}: not UTF-8 text" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "sl").exists()


def test_example_settings_file_is_valid_for_both_parsers(tmp_path):
    values, _ = load_config(EXAMPLE)
    assert values["gpus_per_node"] == 4 and values["gpu_bind"] == "node"
    cmds = dry_run(tmp_path, "--config", str(EXAMPLE))
    assert len(cmds) == 3 and opts(cmds[0])["--time"] == values["time"]


def test_options_override_the_settings_file(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("PARTITION=small\nGPUS_PER_NODE=4\nBIND=/a\nIMAGE=x.sif\n")
    parser = argparse.ArgumentParser()
    add_slurm_arguments(parser)
    args = parser.parse_args(
        [
            "--slurm-config",
            str(conf),
            "--partition",
            "big",
            "--bind",
            "/b",
            "--no-container",
            "--sbatch-arg=--qos=high",
            "--time-limit",
            "00:10:00",
        ]
    )
    cfg = config_from_args(args)
    assert cfg.partition == "big" and cfg.gpus_per_node == 4 and cfg.binds == ("/a", "/b")
    assert cfg.no_container is True and cfg.sbatch_args == ("--qos=high",) and cfg.time == "00:10:00"
    assert cfg.where("partition") == "--partition" and cfg.where("gpus_per_node").startswith("GPUS_PER_NODE (")
    # Nothing given: every field keeps its default (None options do not override).
    empty = config_from_args(parser.parse_args([]))
    assert empty == SlurmConfig()


def test_image_and_no_container(tmp_path):
    parser = argparse.ArgumentParser()
    add_slurm_arguments(parser)
    with pytest.raises(ArtifactError, match="--image and --no-container exclude each other: give one"):
        config_from_args(parser.parse_args(["--image", "x.sif", "--no-container"]))
    # an option overrides the settings file's choice either way
    conf = tmp_path / "image.conf"
    conf.write_text("IMAGE=x.sif\n")
    cfg = config_from_args(parser.parse_args(["--slurm-config", str(conf), "--no-container"]))
    assert cfg.no_container is True
    conf.write_text("NO_CONTAINER=1\n")
    cfg = config_from_args(parser.parse_args(["--slurm-config", str(conf), "--image", "y.sif"]))
    assert cfg.no_container is False and cfg.image == Path("y.sif") and cfg.where("no_container") == "--image"


def test_config_from_environment_variable(tmp_path, monkeypatch):
    conf = tmp_path / "env.conf"
    conf.write_text("PARTITION=fromenv\n")
    monkeypatch.setenv("DNABERT_SLURM_CONFIG", str(conf))
    parser = argparse.ArgumentParser()
    add_slurm_arguments(parser)
    assert config_from_args(parser.parse_args([])).partition == "fromenv"


def test_missing_image_is_an_error_before_anything_else(tmp_path):
    with pytest.raises(ArtifactError, match="image does not exist"):
        SlurmConfig(image=tmp_path / "nope.sif").check()
    with pytest.raises(ArtifactError, match="no image for the slurm executor"):
        SlurmConfig().check()
    SlurmConfig(no_container=True).check()


# --- helpers -----------------------------------------------------------------------------------------


def test_gres_parsing_and_node_counts():
    assert gres_gpus("gpu:8") == 8
    assert gres_gpus("gpu:a100:4(S:0-1)") == 4
    assert gres_gpus("gpu:a100:2,gpu:v100:2(S:0)", "v100") == 2
    assert gres_gpus("gpu:a100:2,gpu:v100:2") == 4
    assert gres_gpus("(null)") == 0 and gres_gpus("shard:8") == 0
    cfg = SlurmConfig(gpus_per_node=4, no_container=True)
    assert [nodes_for(n, cfg) for n in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]
    assert nodes_for(16, SlurmConfig(gpus_per_node=0)) == 1


def test_plan_grouping(tmp_path):
    plan = [RunSpec(4, "none", 0, tmp_path / "a"), RunSpec(1, "none", 0, tmp_path / "b"), RunSpec(4, "scorep", 0, tmp_path / "c")]
    groups = group_plan(plan)
    assert list(groups) == [1, 4] and [s.name for s in groups[4]] == ["ws4-none-r0", "ws4-scorep-r0"]
    with pytest.raises(ArtifactError, match="share the run directory"):
        group_plan([RunSpec(1, "none", 0, tmp_path / "a"), RunSpec(2, "none", 0, tmp_path / "a")])


def test_complete_runs_are_not_submitted(tmp_path, monkeypatch):
    """Every run complete: run_slurm returns without touching SLURM (no sbatch on PATH here)."""
    plan = []
    for n in (1, 2):
        run = tmp_path / f"ws{n}-none-r0"
        run.mkdir()
        (run / "summary.json").write_text(json.dumps({"status": "ok"}))
        plan.append(RunSpec(n, "none", 0, run))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    results = run_slurm(plan, SlurmConfig(no_container=True), log=lambda m: None)
    assert [(r.world_size, r.state, r.job_id, r.skipped) for r in results] == [
        (1, "SKIPPED", None, ["ws1-none-r0"]),
        (2, "SKIPPED", None, ["ws2-none-r0"]),
    ]


def test_failed_run_is_resubmitted_but_complete_one_is_not(tmp_path, monkeypatch):
    ok = tmp_path / "ws1-none-r0"
    ok.mkdir()
    (ok / "summary.json").write_text(json.dumps({"status": "ok"}))
    failed = tmp_path / "ws2-none-r0"
    failed.mkdir()
    (failed / "summary.json").write_text(json.dumps({"status": "failed"}))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ArtifactError, match="'sbatch' not found"):
        run_slurm([RunSpec(1, "none", 0, ok), RunSpec(2, "none", 0, failed)], SlurmConfig(no_container=True), log=lambda m: None)
    assert not (tmp_path / "slurm" / "ws2").exists(), "nothing is written before validation passes"


# --- sweep.sh: the sbatch commands --------------------------------------------------------------------


def test_gpu_job_shapes_for_1_4_8_on_4_gpu_nodes(tmp_path):
    cmds = dry_run(
        tmp_path,
        "--gpus-per-node",
        "4",
        "--partition",
        "gpu",
        "--account",
        "acc",
        "--time",
        "00:20:00",
        "--cpus-per-task",
        "6",
        "--mem",
        "100G",
        "--sbatch-arg=--qos=high",
    )
    shapes = [opts(c) for c in cmds]
    assert [(s["--ntasks"], s["--nodes"], s["--ntasks-per-node"], s["--gres"]) for s in shapes] == [
        ("1", "1", "1", "gpu:1"),
        ("4", "1", "4", "gpu:4"),
        ("8", "2", "4", "gpu:4"),
    ]
    for s in shapes:
        assert s["--partition"] == "gpu" and s["--account"] == "acc" and s["--time"] == "00:20:00"
        assert s["--cpus-per-task"] == "6" and s["--mem"] == "100G" and s["--qos"] == "high"
        assert s["--kill-on-invalid-dep"] == "yes"
    assert "--dependency" not in shapes[0]
    assert shapes[1]["--dependency"] == "afterok:<job of ws1>" and shapes[2]["--dependency"] == "afterok:<job of ws4>"
    assert [s["--job-name"] for s in shapes] == ["dnabert-ws1", "dnabert-ws4", "dnabert-ws8"]
    # the batch script, its options and the job directory follow sbatch's options
    tail = cmds[2][cmds[2].index(str(JOB)) :]
    assert tail[-1] == str(tmp_path / "runs" / "slurm" / "ws8") and "--no-container" in tail
    assert tail[tail.index("--rank-script") + 1] == str(RANK)


def test_gpu_bind_task_and_gres_type(tmp_path):
    shapes = [opts(c) for c in dry_run(tmp_path, "--gpus-per-node", "8", "--gpu-bind", "task", "--gres-type", "h100")]
    assert all(s["--gpus-per-task"] == "h100:1" and "--gres" not in s for s in shapes)
    shapes = [opts(c) for c in dry_run(tmp_path, "--gpus-per-node", "8", "--gres-type", "h100")]
    assert [s["--gres"] for s in shapes] == ["gpu:h100:1", "gpu:h100:4", "gpu:h100:8"]
    assert [s["--nodes"] for s in shapes] == ["1", "1", "1"]


def test_cpu_only_jobs_request_no_gpus(tmp_path):
    shapes = [opts(c) for c in dry_run(tmp_path, "--gpus-per-node", "0", sizes="1,2")]
    assert [(s["--ntasks"], s["--nodes"]) for s in shapes] == [("1", "1"), ("2", "1")]
    assert not any(k in s for s in shapes for k in ("--gres", "--gpus-per-task", "--ntasks-per-node"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--gpus-per-node", "x"], "--gpus-per-node: 'x' is not a non-negative integer"),
        (["--gpu-bind", "socket"], "must be node or task"),
        (["--max-nodes", "0"], "is not a positive integer"),
        (["--image", "/nonexistent/dnabert.sif"], "image '/nonexistent/dnabert.sif' does not exist"),
        (["--bogus"], "unknown argument '--bogus'"),
    ],
)
def test_sweep_sh_bad_settings_are_errors(tmp_path, args, message):
    base = ["--dry-run", "--world-sizes", "1", "--out", str(tmp_path / "runs")]
    if "--image" not in args:
        base.append("--no-container")
    proc = sweep(*base, *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not proc.stdout


def test_sweep_sh_config_file_errors_name_the_line(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("TIME=01:00:00\n\nGPUS=4\n")
    proc = sweep("--dry-run", "--config", str(conf), "--no-container", "--world-sizes", "1", "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2 and f"{conf}:3: unknown setting 'GPUS'" in proc.stderr
    conf.write_text("GPUS_PER_NODE=lots\n")
    proc = sweep("--dry-run", "--config", str(conf), "--no-container", "--world-sizes", "1", "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2 and "GPUS_PER_NODE in" in proc.stderr and "'lots'" in proc.stderr
    # a flag wins over the file, so the same file with --gpus-per-node is fine
    proc = sweep(
        "--dry-run",
        "--config",
        str(conf),
        "--gpus-per-node",
        "2",
        "--no-container",
        "--world-sizes",
        "4",
        "--out",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 0 and "--nodes=2" in proc.stdout


def test_batch_and_rank_scripts_refuse_to_run_outside_slurm(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    (tmp_path / "world_size").write_text("1\n")
    proc = subprocess.run(["bash", str(JOB), "--no-container", str(tmp_path)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "not inside a SLURM job" in proc.stderr
    args = tmp_path / "a.args"
    args.write_bytes(b"--model\0tiny\0")
    proc = subprocess.run(["bash", str(RANK), str(args)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "SLURM_PROCID is not set" in proc.stderr


def test_rank_script_passes_arguments_and_slurm_ranks(tmp_path):
    """dnabert-rank.sh as srun starts it: the arguments survive intact (spaces, empty strings)."""
    args = tmp_path / "a.args"
    args.write_bytes(b"".join(a.encode() + b"\0" for a in ["--out", str(tmp_path / "run dir"), "", "x y"]))
    fake = tmp_path / "fake-cli"
    fake.write_text(
        '#!/bin/sh\nprintf "%s|" "$@" > "$OUTFILE"; env | grep -E "^(RANK|SLURM_PROCID|MASTER_PORT)=" | sort >> "$OUTFILE"\n'
    )
    fake.chmod(0o755)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
        "SLURM_PROCID": "3",
        "SLURM_LOCALID": "1",
        "SLURM_NTASKS": "4",
        "MASTER_ADDR": "n1",
        "MASTER_PORT": "12345",
        "RANK": "99",
        "DNABERT_SLURM_CLI": str(fake),
        "OUTFILE": str(tmp_path / "out"),
    }
    proc = subprocess.run(["bash", str(RANK), str(args)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "out").read_text()
    assert text.startswith(f"train|--out|{tmp_path / 'run dir'}||x y|")
    # train reads the SLURM variables itself; a stale RANK from the submitting shell is dropped
    assert "RANK=" not in text.replace("SLURM_PROCID", "") and "SLURM_PROCID=3" in text and "MASTER_PORT=12345" in text
