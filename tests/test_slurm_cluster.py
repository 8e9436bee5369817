"""The SLURM sweep against a real SLURM: the one-node test cluster of scripts/ci/start-slurm.sh
(16 CPUs, 8 fake GPUs made with mknod), started by .ci/run.

- fake GPUs: the 1 -> 4 -> 8 chain requests the right GPUs and every rank gets the right rank,
  local rank, world size and CUDA_VISIBLE_DEVICES (a payload prints them; real GPU jobs are not
  possible here);
- CPU: a real sweep (tiny model, gloo, world sizes 1 and 2) through sbatch with the project's
  scripts, resubmission skipping complete runs, a failing rank failing the job and cancelling the
  dependent one;
- bad settings (unknown partition, a world size larger than the allocation allows, a missing
  image) are errors before anything is submitted.

Without the test cluster these tests skip (under CI=true they fail: .ci/run must start it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import ROOT
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.sweep.spec import RunSpec
from dnabert_scaling.run.slurm import SlurmConfig, SlurmJobError, run_slurm

pytestmark = pytest.mark.slurm

SWEEP = ROOT / "scripts" / "slurm" / "sweep.sh"
CLUSTER = "dnabert-ci"
TINY = (
    "--model",
    "tiny",
    "--no-progress",
    "--find-unused-parameters",
    "false",
    "--device",
    "cpu",
    "--task",
    "prom_core_all",
    "--steps",
    "3",
    "--warmup-steps",
    "1",
    "--batch-size",
    "8",
)
PAYLOAD = (
    'printf \'{"rank": "%s", "local_rank": "%s", "world_size": "%s", "cvd": "%s", "master": "%s:%s", '
    '"job": "%s", "args": "%s"}\\n\' "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" "${CUDA_VISIBLE_DEVICES:-}" '
    '"$MASTER_ADDR" "$MASTER_PORT" "$SLURM_JOB_ID" "$*" > "$OUTDIR/env-$SLURM_JOB_ID-rank$RANK.json"'
)


def _skip_or_fail(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: .ci/run must start the test cluster (scripts/ci/start-slurm.sh)")
    pytest.skip(f"{reason} (start it with: scripts/ci/start-slurm.sh, as root)")


@pytest.fixture(scope="module")
def cluster():
    if shutil.which("sbatch") is None or shutil.which("scontrol") is None:
        _skip_or_fail("SLURM client commands are not installed")
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    if "is UP" not in ping.stdout:
        _skip_or_fail("no SLURM controller answers 'scontrol ping'")
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"^ClusterName\s*=\s*(\S+)", config, re.M)
    if not m or m.group(1) != CLUSTER:
        _skip_or_fail(f"the running SLURM cluster is {m.group(1) if m else '?'!r}, not the test cluster {CLUSTER!r}")
    node = subprocess.run(["scontrol", "-o", "show", "node", "localhost"], capture_output=True, text=True).stdout
    if "Gres=gpu:8" not in node:
        _skip_or_fail("the test node does not have its 8 fake GPUs")
    return True


@pytest.fixture
def prefix():
    """A job-name prefix unique to the test, to find (only) its jobs."""
    return f"t{uuid.uuid4().hex[:6]}-"


def jobs_named(prefix: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-a", "-t", "all", "-o", "%i %j"], capture_output=True, text=True).stdout
    ids = [line.split()[0] for line in out.splitlines() if line.split()[1:2] and line.split()[1].startswith(prefix)]
    # squeue forgets finished jobs quickly; scontrol keeps them for MinJobAge
    out = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"JobId=(\d+) JobName=(\S+)", line)
        if m and m.group(2).startswith(prefix) and m.group(1) not in ids:
            ids.append(m.group(1))
    return ids


def job_fields(job_id: str) -> dict[str, str]:
    line = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True).stdout
    return dict(m.groups() for m in re.finditer(r"(\w[\w:/]*)=(\S*)", line))


def ts(value: str) -> float:
    return time.mktime(time.strptime(value, "%Y-%m-%dT%H:%M:%S"))


def payload_config(prefix: str, **kw) -> SlurmConfig:
    return SlurmConfig(no_container=True, command=PAYLOAD, poll_s=0.5, timeout_s=180, job_name_prefix=prefix, **kw)


def read_envs(outdir: Path, job_id: str) -> list[dict]:
    envs = [json.loads(p.read_text()) for p in sorted(outdir.glob(f"env-{job_id}-rank*.json"))]
    return sorted(envs, key=lambda e: int(e["rank"]))


# --- fake GPUs: requests, ranks, CUDA_VISIBLE_DEVICES ------------------------------------------------


def test_fake_gpu_chain_1_4_8_gives_each_rank_its_place(cluster, tmp_path, prefix, monkeypatch):
    monkeypatch.setenv("OUTDIR", str(tmp_path))
    plan = [RunSpec(n, "none", 0, tmp_path / "runs" / f"ws{n}-none-r0", ("--model", "tiny")) for n in (8, 1, 4)]
    results = run_slurm(plan, payload_config(prefix, gpus_per_node=8), log=lambda m: None)

    assert [(r.world_size, r.state, r.exit_code) for r in results] == [
        (1, "COMPLETED", 0),
        (4, "COMPLETED", 0),
        (8, "COMPLETED", 0),
    ]
    fields = {r.world_size: job_fields(r.job_id) for r in results}
    for r in results:
        n, f = r.world_size, fields[r.world_size]
        assert f["NumNodes"] == "1" and f["NumTasks"] == str(n) and f["TresPerNode"] == f"gres:gpu:{n}"
        assert f["JobName"] == f"{prefix}ws{n}" and r.log == tmp_path / "runs" / "slurm" / f"ws{n}" / f"slurm-{r.job_id}.out"
        assert r.log.is_file() and "all runs of world size" in r.log.read_text()
        envs = read_envs(tmp_path, r.job_id)
        assert [e["rank"] for e in envs] == [str(i) for i in range(n)]
        assert all(e["local_rank"] == e["rank"] and e["world_size"] == str(n) for e in envs)
        assert {e["cvd"] for e in envs} == {",".join(str(i) for i in range(n))}
        assert len({e["master"] for e in envs}) == 1 and envs[0]["master"].startswith("localhost:")
        assert all(e["job"] == r.job_id for e in envs)
        assert envs[0]["args"].endswith(f"--tracer none --out {tmp_path / 'runs' / f'ws{n}-none-r0'}")
    # chained: each world size starts after the previous one ended
    assert ts(fields[4]["StartTime"]) >= ts(fields[1]["EndTime"])
    assert ts(fields[8]["StartTime"]) >= ts(fields[4]["EndTime"])


def test_fake_gpus_one_per_task(cluster, tmp_path, prefix, monkeypatch):
    monkeypatch.setenv("OUTDIR", str(tmp_path))
    plan = [RunSpec(4, "none", 0, tmp_path / "runs" / "ws4-none-r0")]
    (result,) = run_slurm(plan, payload_config(prefix, gpus_per_node=8, gpu_bind="task"), log=lambda m: None)
    assert result.state == "COMPLETED"
    assert job_fields(result.job_id)["TresPerTask"] in ("gres:gpu:1", "gres/gpu:1")
    envs = read_envs(tmp_path, result.job_id)
    assert sorted(e["cvd"] for e in envs) == ["0", "1", "2", "3"]


def test_two_nodes_of_4_gpus_are_requested_for_8_ranks(cluster, tmp_path, prefix):
    """ceil(8 / 4) = 2 nodes: the one-node test partition cannot take it; nothing is submitted."""
    plan = [RunSpec(n, "none", 0, tmp_path / f"ws{n}-none-r0") for n in (1, 4, 8)]
    with pytest.raises(
        ArtifactError, match=r"world size 8 \(2 node\(s\) x 4 GPU\(s\)\) needs 2 nodes but partition 'debug' has 1"
    ):
        run_slurm(plan, payload_config(prefix, gpus_per_node=4), log=lambda m: None)
    assert jobs_named(prefix) == [] and not (tmp_path / "slurm").exists()


# --- bad settings: clear errors, nothing submitted ------------------------------------------------------


@pytest.mark.parametrize(
    "settings, sizes, message",
    [
        (
            dict(partition="nosuch", gpus_per_node=8),
            (1,),
            r"setting partition: partition 'nosuch' does not exist on this cluster \(partitions: debug\)",
        ),
        (
            dict(gpus_per_node=16),
            (16,),
            r"asks for 16 GPU\(s\) per node but the nodes of partition 'debug' have at most 8 GPU\(s\)",
        ),
        (dict(gpus_per_node=4, max_nodes=1), (4, 8), r"world size 8 .* needs 2 nodes, more than setting max_nodes=1 allows"),
        (dict(gpus_per_node=8, gres_type="h100"), (2,), r"have at most 0 GPU\(s\) of type h100"),
        (dict(gpus_per_node=0, cpus_per_task=4), (8,), r"8 task\(s\) x 4 CPU\(s\) do not fit on one node .* \(16 CPUs\)"),
    ],
)
def test_bad_settings_are_refused_before_submission(cluster, tmp_path, prefix, settings, sizes, message):
    plan = [RunSpec(n, "none", 0, tmp_path / f"ws{n}-none-r0") for n in sizes]
    with pytest.raises(ArtifactError, match=message):
        run_slurm(plan, payload_config(prefix, **settings), log=lambda m: None)
    assert jobs_named(prefix) == []


def test_missing_image_is_refused_before_submission(cluster, tmp_path, prefix):
    cfg = SlurmConfig(image=tmp_path / "dnabert-scaling.sif", job_name_prefix=prefix)
    with pytest.raises(ArtifactError, match="image does not exist"):
        run_slurm([RunSpec(1, "none", 0, tmp_path / "r")], cfg, log=lambda m: None)
    assert jobs_named(prefix) == []


def test_sweep_sh_validates_before_submitting(cluster, tmp_path, prefix):
    base = ["bash", str(SWEEP), "--no-container", "--job-name-prefix", prefix, "--out", str(tmp_path / "runs")]
    cases = [
        (["--partition", "nosuch", "--world-sizes", "1"], "partition 'nosuch' does not exist on this cluster (partitions: debug"),
        (
            ["--gpus-per-node", "4", "--world-sizes", "1,4,8"],
            "world size 8 (2 node(s) x 4 GPU(s)) needs 2 nodes but partition 'debug' has 1",
        ),
        (
            ["--gpus-per-node", "12", "--world-sizes", "12"],
            "--gpus-per-node=12 but the nodes of partition 'debug' have at most 8 GPU(s)",
        ),
        (["--gpus-per-node", "8", "--time", "soon", "--world-sizes", "1"], "SLURM would not accept the job (sbatch --test-only)"),
    ]
    for args, message in cases:
        proc = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    assert jobs_named(prefix) == []
    proc = subprocess.run(
        [*base, "--gpus-per-node", "8", "--world-sizes", "1,8", "--test-only"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "2 job(s) would be accepted; nothing submitted" in proc.stdout, proc.stderr
    assert jobs_named(prefix) == []


# --- real training on CPU -----------------------------------------------------------------------------


def test_cpu_sweep_trains_resubmits_only_missing_runs(cluster, tmp_path, prefix, tiny_task):
    runs = tmp_path / "runs"
    train = (*TINY, "--data", str(tiny_task))
    plan = [
        RunSpec(1, "none", 0, runs / "ws1-none-r0", train),
        RunSpec(2, "none", 0, runs / "ws2-none-r0", train),
        RunSpec(2, "none", 1, runs / "ws2-none-r1", train),
    ]
    cfg = SlurmConfig(no_container=True, gpus_per_node=0, poll_s=0.5, timeout_s=300, job_name_prefix=prefix)
    t0 = time.monotonic()
    results = run_slurm(plan, cfg, log=lambda m: None)
    first = time.monotonic() - t0
    assert [(r.world_size, r.state, r.runs) for r in results] == [
        (1, "COMPLETED", ["ws1-none-r0"]),
        (2, "COMPLETED", ["ws2-none-r0", "ws2-none-r1"]),
    ]
    for spec in plan:
        summary = json.loads((spec.run_dir / "summary.json").read_text())
        assert summary["status"] == "ok" and summary["world_size"] == spec.world_size
        assert summary["launcher"] == "slurm" and summary["device_type"] == "cpu"
        assert summary["backend"] == "gloo" and summary["finite_loss"]
        assert [r["rank"] for r in summary["ranks"]] == list(range(spec.world_size))
        for rank in range(spec.world_size):
            steps = (spec.run_dir / f"rank{rank}" / "steps.jsonl").read_text().splitlines()
            assert len(steps) == 4  # 1 warm-up + 3 measured
            assert (spec.run_dir / "logs" / f"rank{rank}.err").is_file()
    first_ids = [r.job_id for r in results]

    # One run lost: only world size 2 is resubmitted, and its job holds only the missing run.
    (runs / "ws2-none-r1" / "summary.json").unlink()
    again = run_slurm(plan, cfg, log=lambda m: None)
    assert [(r.world_size, r.state) for r in again] == [(1, "SKIPPED"), (2, "COMPLETED")]
    assert again[1].runs == ["ws2-none-r1"] and again[1].skipped == ["ws2-none-r0"]
    assert again[1].job_id not in first_ids
    assert json.loads((runs / "ws2-none-r1" / "summary.json").read_text())["status"] == "ok"

    # Everything complete: nothing is submitted.
    before = set(jobs_named(prefix))
    final = run_slurm(plan, cfg, log=lambda m: None)
    assert all(r.state == "SKIPPED" for r in final) and set(jobs_named(prefix)) == before
    assert first < 240


def test_failing_rank_fails_its_job_and_cancels_the_next(cluster, tmp_path, prefix, tiny_task):
    runs = tmp_path / "runs"
    bad = (*TINY, "--data", str(tiny_task), "--inject-fault", "0:1")
    plan = [RunSpec(1, "none", 0, runs / "ws1-none-r0", bad), RunSpec(2, "none", 0, runs / "ws2-none-r0", bad)]
    cfg = SlurmConfig(no_container=True, gpus_per_node=0, poll_s=0.5, timeout_s=180, job_name_prefix=prefix)
    with pytest.raises(SlurmJobError) as err:
        run_slurm(plan, cfg, log=lambda m: None)
    first, second = err.value.results
    assert first.state == "FAILED" and first.exit_code not in (None, 0) and first.failed_run == "ws1-none-r0"
    assert second.state == "CANCELLED" and second.reason == "DependencyNeverSatisfied"
    text = str(err.value)
    assert f"job {first.job_id} (world size 1): FAILED" in text and str(first.log) in text
    assert f"job {second.job_id} (world size 2): CANCELLED (DependencyNeverSatisfied)" in text
    assert str(runs / "ws1-none-r0" / "logs") in text
    assert "rank0.err:" in text and "injected fault on rank 0 at step 1" in text  # the rank's own words
    log = first.log.read_text()
    assert "ws1-none-r0 failed" in log and "injected fault on rank 0 at step 1" in log
    assert json.loads((runs / "ws1-none-r0" / "summary.json").read_text())["status"] == "failed"
    assert (first.job_dir / f"status-{first.job_id}").read_text().startswith("exit_code=")


def test_sweep_sh_simple_mode_skips_complete_runs_inside_the_job(cluster, tmp_path, prefix, tiny_task):
    """The batch script's own skip: a run completed since the job directory was written."""
    runs = tmp_path / "runs"
    done = runs / "ws2-none-r0"
    done.mkdir(parents=True)
    (done / "summary.json").write_text(json.dumps({"status": "ok", "marker": "kept"}, indent=2))
    cli = Path(os.sys.executable).parent / "dnabert-scaling"
    proc = subprocess.run(
        [
            "bash",
            str(SWEEP),
            "--no-container",
            "--cli",
            str(cli),
            "--gpus-per-node",
            "0",
            "--job-name-prefix",
            prefix,
            "--world-sizes",
            "2",
            "--repeats",
            "2",
            "--out",
            str(runs),
            "--",
            *TINY,
            "--data",
            str(tiny_task),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"ws=2 job=(\d+) log=(\S+)", proc.stdout)
    assert m, proc.stdout
    job_id, log = m.group(1), Path(m.group(2))
    deadline = time.monotonic() + 180
    while job_fields(job_id).get("JobState") not in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
        assert time.monotonic() < deadline, "the job did not finish in 180 s"
        time.sleep(0.5)
    assert job_fields(job_id)["JobState"] == "COMPLETED", log.read_text()
    text = log.read_text()
    assert "ws2-none-r0: complete, skipped" in text and "ws2-none-r1: srun exit status 0" in text
    assert json.loads((done / "summary.json").read_text())["marker"] == "kept"
    assert json.loads((runs / "ws2-none-r1" / "summary.json").read_text())["world_size"] == 2


def test_wait_timeout_cancels_the_sweeps_jobs(cluster, tmp_path, prefix):
    cfg = SlurmConfig(no_container=True, command="sleep 60", gpus_per_node=0, poll_s=0.5, timeout_s=2, job_name_prefix=prefix)
    plan = [RunSpec(1, "none", 0, tmp_path / "ws1-none-r0"), RunSpec(2, "none", 0, tmp_path / "ws2-none-r0")]
    with pytest.raises(SlurmJobError, match=r"still unfinished after 2 s; cancelled by the sweep"):
        run_slurm(plan, cfg, log=lambda m: None)
    deadline = time.monotonic() + 30
    while any(job_fields(j).get("JobState") not in ("CANCELLED",) for j in jobs_named(prefix)):
        assert time.monotonic() < deadline, [job_fields(j).get("JobState") for j in jobs_named(prefix)]
        time.sleep(0.5)
    assert len(jobs_named(prefix)) == 2


def test_sweep_command_end_to_end_then_analysis(cluster, tmp_path, prefix):
    """`dnabert-scaling sweep --executor slurm` (the sweep command with this executor), then
    `analyze` and `check` on what the SLURM jobs wrote."""
    cli = str(Path(os.sys.executable).parent / "dnabert-scaling")
    out, results = tmp_path / "runs", tmp_path / "results"
    proc = subprocess.run(
        [
            cli,
            "sweep",
            "--executor",
            "slurm",
            "--gpus",
            "1,2",
            "--device",
            "cpu",
            "--repeats",
            "1",
            "--tracer",
            "none",
            "--no-busbw",
            "--no-container",
            "--gpus-per-node",
            "0",
            "--poll-interval",
            "0.5",
            "--wait-timeout",
            "300",
            "--job-name-prefix",
            prefix,
            "--sbatch-arg=--comment=e2e",
            "--out",
            str(out),
            "--",
            "--model",
            "tiny",
            "--steps",
            "3",
            "--warmup-steps",
            "1",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sweep_log = proc.stdout + proc.stderr
    assert re.search(r"slurm job \d+: COMPLETED", proc.stderr), sweep_log
    ids = jobs_named(prefix)
    assert len(ids) == 2 and all(job_fields(j)["Comment"] == "e2e" for j in ids), (ids, sweep_log)
    for name in ("ws1-none-r0", "ws1-none-r0-noddp", "ws2-none-r0"):
        summary = json.loads((out / name / "summary.json").read_text())
        assert summary["status"] == "ok" and summary["launcher"] == "slurm", (name, summary.get("status"), sweep_log)
        manifest = json.loads((out / name / "manifest.json").read_text())
        assert manifest["executor"] == "slurm" and manifest["status"] == "ok" and manifest["slurm_job"]["id"], manifest
        assert "rank0/steps.jsonl" in manifest["files"]
    proc = subprocess.run([cli, "analyze", "--out", str(results), str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    metrics = json.loads((results / "metrics.json").read_text())
    assert sorted(metrics["world_sizes"]) == ["1", "2"], proc.stdout + proc.stderr
    for n in ("1", "2"):
        assert metrics["world_sizes"][n]["throughput"]["samples_per_s"]["median"] > 0, proc.stdout + proc.stderr
    # The claims are about GPU traces: a CPU sweep without a traced run supports none of them, so
    # every verdict must be NOT RUN (a claim without data is never PASS).
    proc = subprocess.run([cli, "check", str(results)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdicts = json.loads((results / "verdicts.json").read_text())
    assert verdicts["claims"] and {c["verdict"] for c in verdicts["claims"]} == {"NOT RUN"}, verdicts["claims"]


FAKE_APPTAINER = r'''#!{python}
"""Stands in for `apptainer exec` (not installable here): records the call, then runs the command
with only the --env variables (what --cleanenv leaves) plus the image's PATH."""
import json, os, sys
args = sys.argv[1:]
assert args[0] == "exec", args
opts, env, binds, i = [], {{}}, [], 1
while args[i].startswith("--"):
    if args[i] in ("--env", "--bind"):
        (binds.append(args[i + 1]) if args[i] == "--bind" else env.update([args[i + 1].split("=", 1)]))
        i += 2
    else:
        opts.append(args[i]); i += 1
image, command = args[i], args[i + 1:]
assert os.path.isfile(image), image
rank = env.get("SLURM_PROCID", "x")
with open(os.path.join({log!r}, f"call-{{env.get('SLURM_JOB_ID')}}-{{rank}}.json"), "w") as fh:
    json.dump({{"opts": opts, "binds": binds, "env": env, "image": image, "command": command}}, fh)
env["PATH"] = {path!r}
os.execvpe(command[0], command, env)
'''


def test_container_mode_runs_ranks_through_apptainer_exec(cluster, tmp_path, prefix, tiny_task, monkeypatch):
    """The image path of dnabert-rank.sh, with a stand-in apptainer: the ranks get exactly what
    `apptainer exec --nv --cleanenv` would give them, and train still finds its rank and master."""
    calls = tmp_path / "calls"
    calls.mkdir()
    fake = tmp_path / "apptainer"
    fake.write_text(
        FAKE_APPTAINER.format(python=os.sys.executable, log=str(calls), path=f"{Path(os.sys.executable).parent}:/usr/bin:/bin")
    )
    fake.chmod(0o755)
    image = tmp_path / "dnabert-scaling.sif"
    image.write_bytes(b"SIF stand-in")
    run_dir = tmp_path / "runs" / "ws2-none-r0"
    plan = [RunSpec(2, "none", 0, run_dir, (*TINY, "--data", str(tiny_task)))]
    cfg = SlurmConfig(
        image=image,
        apptainer=str(fake),
        gpus_per_node=0,
        binds=("/scratch-test",),
        poll_s=0.5,
        timeout_s=180,
        job_name_prefix=prefix,
        pass_env=("DNABERT_TEST_VAR",),
    )
    monkeypatch.setenv("DNABERT_TEST_VAR", "passed")
    monkeypatch.setenv("SCOREP_TOTAL_MEMORY", "64M")
    (result,) = run_slurm(plan, cfg, log=lambda m: None)
    assert result.state == "COMPLETED", result.log.read_text()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["launcher"] == "slurm" and summary["world_size"] == 2
    recorded = [json.loads(p.read_text()) for p in sorted(calls.glob(f"call-{result.job_id}-*.json"))]
    assert len(recorded) == 2
    for rank, call in enumerate(recorded):
        assert call["opts"] == ["--nv", "--cleanenv"] and call["image"] == str(image)
        assert call["binds"][0].split(",") == [str(run_dir.parent), "/scratch-test"]
        assert call["command"][:2] == ["dnabert-scaling", "train"] and call["command"][-2:] == ["--out", str(run_dir)]
        env = call["env"]
        assert env["SLURM_PROCID"] == str(rank) and env["SLURM_NTASKS"] == "2" and env["MASTER_ADDR"] == "localhost"
        assert env["DNABERT_TEST_VAR"] == "passed" and env["SCOREP_TOTAL_MEMORY"] == "64M"
        assert "RANK" not in env and "PATH" not in env and "HOME" not in env


FAKE_TRAIN = r"""#!/bin/sh
# Stands in for `dnabert-scaling train`: writes the run's outputs, then rank 1 exits with 9
# ("died while shutting down"). With RANK_SUMMARIES=0 the rank summaries are not written.
out=""
while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
mkdir -p "$out/rank$SLURM_PROCID"
[ "${RANK_SUMMARIES:-1}" = 1 ] && printf '{"status": "ok"}\n' > "$out/rank$SLURM_PROCID/summary.json"
[ "$SLURM_PROCID" = 0 ] && printf '{\n  "status": "ok"\n}\n' > "$out/summary.json"
sleep 1
[ "$SLURM_PROCID" = 1 ] && { echo "rank 1: crash at exit" >&2; exit 9; }
exit 0
"""


@pytest.mark.parametrize("rank_summaries", [True, False])
def test_rank_failing_after_a_complete_run(cluster, tmp_path, prefix, monkeypatch, rank_summaries):
    """A non-zero exit once the run is complete by the contract (the run's and every rank's
    summary.json say ok) keeps the run with a warning; without the rank summaries it is a failure."""
    fake = tmp_path / "fake-train"
    fake.write_text(FAKE_TRAIN)
    fake.chmod(0o755)
    monkeypatch.setenv("RANK_SUMMARIES", "1" if rank_summaries else "0")
    run_dir = tmp_path / "runs" / "ws2-none-r0"
    cfg = SlurmConfig(no_container=True, cli=str(fake), gpus_per_node=0, poll_s=0.5, timeout_s=120, job_name_prefix=prefix)
    if rank_summaries:
        (result,) = run_slurm([RunSpec(2, "none", 0, run_dir)], cfg, log=lambda m: None)
        assert result.state == "COMPLETED" and len(result.warnings) == 1
        assert "srun exit status 9 after the run completed" in result.warnings[0]
        assert "rank 1: crash at exit" in result.log.read_text()
    else:
        with pytest.raises(SlurmJobError) as err:
            run_slurm([RunSpec(2, "none", 0, run_dir)], cfg, log=lambda m: None)
        (result,) = err.value.results
        assert result.state == "FAILED" and result.exit_code == 9 and result.failed_run == "ws2-none-r0"
        assert "rank1.err:" in str(err.value) and "rank 1: crash at exit" in str(err.value)
