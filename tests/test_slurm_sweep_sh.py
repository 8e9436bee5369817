"""scripts/slurm/sweep.sh's input checks and when it writes, against stand-in SLURM commands.

The stand-ins (sbatch, scontrol, sinfo on PATH) answer like a one-partition cluster and log every
sbatch call, so the order "check everything, then write the job directories, then submit" and the
refusal to rewrite the job directory of a job still pending are checked without a cluster
(tests/test_slurm_cluster.py runs sweep.sh against a real one).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.slurm import load_config

SWEEP = ROOT / "scripts" / "slurm" / "sweep.sh"

FAKE = {
    "scontrol": """#!/bin/bash
case "$1 $2" in
    "ping "*) echo "Slurmctld(primary) at fake is UP" ;;
    "show partition") echo "PartitionName=debug AllowGroups=ALL Default=YES MaxNodes=UNLIMITED Nodes=n1 TotalNodes=1" ;;
    "show node") echo "NodeName=n1 Arch=x86_64 CPUTot=16 Gres=gpu:8 State=IDLE" ;;
    "show job") echo "JobId=$4 JobName=x JobState=${FAKE_JOB_STATE:-COMPLETED} Reason=None" ;;
    *) echo "fake scontrol: unexpected $*" >&2; exit 1 ;;
esac
""",
    "sinfo": "#!/bin/bash\necho debug\n",
    "sbatch": """#!/bin/bash
printf '%s\\n' "$*" >> "$FAKE_LOG"
case " $* " in
    *" --test-only "*) echo "sbatch: Job 1 to start at now using 1 processors on nodes n1 in partition debug" >&2 ;;
    *) n=$(( $(grep -vc -- --test-only "$FAKE_LOG") + 100 )); echo "$n" ;;
esac
""",
}


@pytest.fixture
def fake_slurm(tmp_path):
    """PATH with the stand-in SLURM commands first; returns the sbatch log."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    for name, text in FAKE.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "sbatch.log"
    log.touch()
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_LOG": str(log)}, log


def sweep(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "DNABERT_SLURM_CONFIG"}
    e.update(env or {})
    return subprocess.run(["bash", str(SWEEP), *args], capture_output=True, text=True, timeout=60, env=e)


def files_under(folder: Path) -> dict[str, bytes]:
    return (
        {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()} if folder.exists() else {}
    )


# --- writing: only after every check, never in --dry-run or --test-only --------------------------------


def test_simple_mode_writes_job_directories_and_submits(tmp_path, fake_slurm):
    env, log = fake_slurm
    out = tmp_path / "runs"
    proc = sweep(
        "--no-container", "--gpus-per-node", "8", "--tracers", "none,scorep", "--repeats", "2",
        "--world-sizes", "2,4", "--out", str(out), "--", "--model", "tiny", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    jd = out / "slurm" / "ws2"
    assert (jd / "world_size").read_text().strip() == "2"
    rundirs = [(jd / f"run-{k:03d}.rundir").read_text().strip() for k in range(4)]
    assert [Path(r).name for r in rundirs] == ["ws2-none-r0", "ws2-none-r1", "ws2-scorep-r0", "ws2-scorep-r1"]
    args = (jd / "run-002.args").read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in args] == ["--model", "tiny", "--tracer", "scorep", "--out", rundirs[2]]
    assert (jd / "jobid").read_text().strip() == "101" and (out / "slurm" / "ws4" / "jobid").read_text().strip() == "102"
    submits = [line for line in log.read_text().splitlines() if "--test-only" not in line]
    assert len(submits) == 2 and "--dependency=afterok:101" in submits[1]
    assert "ws=2 job=101" in proc.stdout and "ws=4 job=102" in proc.stdout


@pytest.mark.parametrize("mode", ["--dry-run", "--test-only"])
def test_dry_run_and_test_only_write_nothing(tmp_path, fake_slurm, mode):
    env, log = fake_slurm
    out = tmp_path / "runs"
    proc = sweep(mode, "--no-container", "--gpus-per-node", "8", "--world-sizes", "1,8", "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert not out.exists()
    if mode == "--dry-run":
        assert len(proc.stdout.splitlines()) == 2 and log.read_text() == ""  # SLURM not asked either
    else:
        assert "2 job(s) would be accepted; nothing submitted or written" in proc.stdout
        assert all("--test-only" in line for line in log.read_text().splitlines())


def test_a_pending_job_keeps_its_job_directory(tmp_path, fake_slurm):
    """Resubmitting while the earlier job still waits: refused before run-*.args are touched."""
    env, log = fake_slurm
    out = tmp_path / "runs"
    first = sweep(
        "--no-container", "--gpus-per-node", "8", "--world-sizes", "1", "--out", str(out), "--", "--steps", "5", env=env
    )
    assert first.returncode == 0, first.stderr
    before = files_under(out)
    calls = log.read_text()
    again = sweep(
        "--no-container", "--gpus-per-node", "8", "--world-sizes", "1", "--tracers", "torch,scorep", "--out", str(out),
        "--", "--steps", "50", env={**env, "FAKE_JOB_STATE": "PENDING"},
    )  # fmt: skip
    assert again.returncode == 2
    assert f"job 101 of {out}/slurm/ws1 is still PENDING: wait for it or scancel it before resubmitting" in again.stderr
    assert files_under(out) == before and log.read_text() == calls
    # once it has ended, the same command rewrites the job directory and submits
    done = sweep(
        "--no-container", "--gpus-per-node", "8", "--world-sizes", "1", "--tracers", "torch,scorep", "--out", str(out),
        "--", "--steps", "50", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (out / "slurm" / "ws1").glob("run-*.args")) == ["run-000.args", "run-001.args"]
    assert b"50\0--tracer\0torch\0" in (out / "slurm" / "ws1" / "run-000.args").read_bytes()


# --- numbers: decimal, bounded -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, conf, shape",
    [
        (["--world-sizes", "08"], "", ("ws8", "--ntasks=8", "--nodes=2")),
        (["--world-sizes", "8", "--gpus-per-node", "08"], "", ("ws8", "--ntasks=8", "--nodes=1")),
        (["--world-sizes", "8"], "GPUS_PER_NODE=08\n", ("ws8", "--ntasks=8", "--nodes=1")),
        (["--world-sizes", "9", "--max-nodes", "09", "--cpus-per-task", "010"], "", ("ws9", "--nodes=3", "--cpus-per-task=10")),
    ],
)
def test_leading_zeros_are_decimal(tmp_path, args, conf, shape):
    extra = []
    if conf:
        (tmp_path / "site.conf").write_text(conf)
        extra = ["--config", str(tmp_path / "site.conf")]
    proc = sweep("--dry-run", "--no-container", *extra, *args, "--out", str(tmp_path / "runs"))
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    words = proc.stdout.split()
    assert f"--job-name=dnabert-{shape[0]}" in words and all(s in words for s in shape[1:])


def test_prepared_job_dir_world_size_is_plain_digits(tmp_path):
    """A job directory's world_size must be what the batch script compares with SLURM_NTASKS."""
    jd = tmp_path / "ws8"
    jd.mkdir()
    (jd / "run-000.args").write_bytes(b"--out\0x\0")
    for text, ok in (("8\n", True), ("08\n", False), ("1234567890123456789\n", False)):
        (jd / "world_size").write_text(text)
        proc = sweep("--dry-run", "--no-container", "--gpus-per-node", "8", "--job-dir", str(jd))
        if ok:
            assert proc.returncode == 0 and "--ntasks=8" in proc.stdout, proc.stderr
        else:
            assert proc.returncode == 2 and "is not a positive integer (plain digits, no leading zero)" in proc.stderr


# --- bad input: one line, exit 2, nothing written ----------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--world-sizes", "99999999999999999999"], "--world-sizes: '99999999999999999999' is too large (at most 999999999)"),
        (["--world-sizes", "1", "--gpus-per-node", "1234567890"], "--gpus-per-node: '1234567890' is too large"),
        (["--world-sizes", "1,x"], "--world-sizes: 'x' is not a positive integer"),
        (["--world-sizes", "1,"], "--world-sizes: '' is not a positive integer"),
        (["--world-sizes", "1,4,01"], "--world-sizes lists world size 1 twice ('1,4,01'): each world size is one job"),
        (["--world-sizes", "1", "--tracers", "none,bogus"], "--tracers: unknown tracer 'bogus'"),
        (["--world-sizes", "1", "--tracers", "none,none"], "--tracers lists 'none' twice ('none,none')"),
        (["--world-sizes", "1", "--repeats", "0"], "--repeats: '0' is not a positive integer"),
        (["--world-sizes", "1", "--", "--out", "/elsewhere"], "--out is set by the sweep for each run; leave it out"),
        (["--world-sizes", "1", "--", "--ou=/elsewhere"], "--out is set by the sweep for each run; leave it out"),
        (["--world-sizes", "1", "--", "--tracer", "scorep"], "--tracer is set by the sweep for each run (--tracers)"),
        (["--world-sizes", "1", "--image", "/nonexist.sif"], "--image and --no-container exclude each other: give one"),
        (["--job-dir", "{tmp}", "--out", "{tmp}/runs"], "--out, --tracers, --repeats and train options (after --) go with"),
    ],
)
@pytest.mark.parametrize("mode", ["--dry-run", "--test-only", None])
def test_bad_options_write_nothing(tmp_path, fake_slurm, args, message, mode):
    env, log = fake_slurm
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out = ["--out", str(tmp_path / "runs")] if "--world-sizes" in args else []
    proc = sweep(*([mode] if mode else []), "--no-container", *args[:2], *out, *args[2:], env=env)
    assert proc.returncode == 2 and proc.stderr == f"sweep.sh: error: {message}" + proc.stderr.split(message, 1)[1], proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not proc.stdout
    assert not (tmp_path / "runs").exists() and log.read_text() == ""


def test_out_must_be_a_folder_outside_expected(tmp_path, fake_slurm):
    env, log = fake_slurm
    (tmp_path / "file").write_text("keep\n")
    cases = [
        (tmp_path / "file", f"--out '{tmp_path / 'file'}' exists and is not a folder"),
        (tmp_path / "file" / "runs", f"--out '{tmp_path / 'file' / 'runs'}': '{tmp_path / 'file'}' is not a folder"),
        (ROOT / "expected" / "sweep-runs", "lies inside the shipped evidence"),
        (
            ROOT / "artifact" / ".." / "expected",
            f"--out '{ROOT / 'expected'}' lies inside the shipped evidence {ROOT / 'expected'}",
        ),
    ]
    shipped = files_under(ROOT / "expected")
    for out, message in cases:
        for mode in ("--dry-run", None):
            proc = sweep(*([mode] if mode else []), "--no-container", "--world-sizes", "1", "--out", str(out), env=env)
            assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert (tmp_path / "file").read_text() == "keep\n" and log.read_text() == ""
    assert files_under(ROOT / "expected") == shipped and not (ROOT / "expected" / "sweep-runs").exists()


# --- the settings file: both readers refuse the same files -------------------------------------------------


@pytest.mark.parametrize(
    "text, bash_message, python_message",
    [
        (b"PARTITION=a\nTIME=1\nPARTITION=b\n", "{conf}:3: PARTITION is given twice (first on line 1): give it once", "line 3: PARTITION is given twice"),
        (b'PARTITION="gpu\n', "{conf}:1: PARTITION: the quote \" is not closed: '\"gpu'", 'PARTITION: the quote " is not closed'),
        (b"ACCOUNT='a b\n", "{conf}:1: ACCOUNT: the quote ' is not closed", "ACCOUNT: the quote ' is not closed"),
        (b'PARTITION="gpu" x\n', "{conf}:1: PARTITION: text after the closing quote", "PARTITION: text after the closing quote"),
        (b"PARTITION=gpu\xff\n", "{conf}: not UTF-8 text, so not a settings file", "not UTF-8 text, so not a SLURM settings file"),
        (b"IMAGE=a.sif\nNO_CONTAINER=yes\n", "IMAGE (line 1) and NO_CONTAINER (line 2) exclude each other", "IMAGE (line 1) and NO_CONTAINER (line 2) exclude"),
        (b"GPUS_PER_NODE=1234567890\n", "GPUS_PER_NODE in {conf}: '1234567890' is too large", "'1234567890' is too large"),
    ],
)  # fmt: skip
def test_settings_file_refusals_of_both_readers(tmp_path, text, bash_message, python_message):
    conf = tmp_path / "site.conf"
    conf.write_bytes(text)
    proc = sweep("--dry-run", "--config", str(conf), "--world-sizes", "1", "--out", str(tmp_path / "runs"))
    assert proc.returncode == 2 and bash_message.format(conf=conf) in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not (tmp_path / "runs").exists()
    with pytest.raises(ArtifactError, match=None) as err:
        load_config(conf)
    assert python_message in str(err.value) and str(conf) in str(err.value)


def test_settings_file_values_read_alike(tmp_path):
    """Quotes with a comment after them, comments, leading zeros: the same values in both readers."""
    conf = tmp_path / "site.conf"
    conf.write_text("PARTITION=\"gpu a\"  # big\nACCOUNT='p#1' # who pays\nGPUS_PER_NODE=04\nMEM=4G#x\nNO_CONTAINER=Yes\n")
    values, _ = load_config(conf)
    assert values == {"partition": "gpu a", "account": "p#1", "gpus_per_node": 4, "mem": "4G#x", "no_container": True}
    proc = sweep("--dry-run", "--config", str(conf), "--world-sizes", "8", "--out", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    words = shlex.split(proc.stdout)
    assert "--partition=gpu a" in words and "--account=p#1" in words and "--mem=4G#x" in words
    assert "--nodes=2" in words and "--no-container" in words


def test_image_flag_overrides_the_files_no_container_and_vice_versa(tmp_path):
    image = tmp_path / "x.sif"
    image.write_text("")
    conf = tmp_path / "site.conf"
    conf.write_text("NO_CONTAINER=1\n")
    proc = sweep("--dry-run", "--config", str(conf), "--image", str(image), "--world-sizes", "1", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0 and f"--image {image}" in proc.stdout and "--no-container" not in proc.stdout, proc.stderr
    conf.write_text(f"IMAGE={image}\n")
    proc = sweep("--dry-run", "--config", str(conf), "--no-container", "--world-sizes", "1", "--out", str(tmp_path / "r"))
    assert proc.returncode == 0 and "--no-container" in proc.stdout and "--image" not in proc.stdout, proc.stderr


def test_batch_script_port_base_is_decimal_and_bounded(tmp_path):
    (tmp_path / "world_size").write_text("1\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, "SLURM_JOB_ID": "7", "SLURM_NTASKS": "1"}
    job = ROOT / "scripts" / "slurm" / "dnabert-job.sbatch"
    for value in ("99999999999999999999", "65000", "0800", "x"):
        proc = subprocess.run(
            ["bash", str(job), "--no-container", "--port-base", value, str(tmp_path)], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 2 and "--port-base must be" in proc.stderr and f"'{value}'" in proc.stderr, proc.stderr
        assert len(proc.stderr.splitlines()) == 1
