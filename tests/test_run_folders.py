"""What `train` and `sweep` write into, set aside or delete, and the options they refuse before writing
anything, with real processes on CPU (the tester's run-side findings).

- `train --out` refuses a sweep folder and a folder holding files a run does not write, with or
  without `--overwrite`; `--overwrite` deletes only an earlier run (one with a run record);
- `sweep --out` (and `--fresh`, which sets the folder aside) refuses a folder a sweep did not write;
- a CPU world size above the stated limit is refused before torchrun starts;
- an unknown `--task`, a fault that cannot fire, `--no-ddp` at world size 2, a bad `MASTER_PORT`
  and a batch larger than a rank's rows are refused before the run folder is claimed;
- `--seq-len` above the data's longest sequence is recorded as a deviation, and a CPU rehearsal is
  not recorded as GPUs shared round-robin with NCCL.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cliprocess import assert_refused, cli_process, file_digests
from conftest import PYTHON, ROOT

T = ["--model", "tiny", "--steps", "1", "--warmup-steps", "0", "--no-progress", "--batch-size", "2"]
TRAIN = ["train", *T, "--device", "cpu", "--no-ddp"]
SWEEP = ["sweep", "--gpus", "1", "--device", "cpu", "--tracer", "none", "--repeats", "1", "--no-busbw", "--skip-plain-baseline"]
SHIPPED = ROOT / "expected" / "reference"


def _run(args, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The command line with this process's environment, ``env`` added and ``$DNABERT_SCALING_GUE`` unset."""
    env = {**os.environ, **(env or {})}
    env.pop("DNABERT_SCALING_GUE", None)
    return cli_process(args, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory) -> Path:
    """A real CPU sweep on its own synthetic task (world size 1, one untraced run)."""
    out = tmp_path_factory.mktemp("sweep") / "runs"
    proc = _run([*SWEEP, "--out", out, "--", *T])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "synthetic-data").is_dir() and (out / "sweep.json").is_file()
    return out


def _copy(folder: Path, tmp_path: Path, name: str = "copy") -> Path:
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    return copy


# --- train --out ---------------------------------------------------------------------------------


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]], ids=["plain", "overwrite"])
@pytest.mark.parametrize("without_data", [False, True], ids=["whole", "no-synthetic-data"])
def test_train_refuses_a_sweep_folder(sweep_folder, tmp_path, overwrite, without_data):
    out = _copy(sweep_folder, tmp_path)
    if without_data:
        shutil.rmtree(out / "synthetic-data")
    before = file_digests(out)
    assert_refused(_run([*TRAIN, *overwrite, "--out", out]), "--out: holds a sweep (", "sweep.json", "ws1-none-r0", out)
    assert file_digests(out) == before  # the sweep's shared synthetic-data/ above all


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]], ids=["plain", "overwrite"])
def test_train_refuses_a_folder_holding_foreign_files(tmp_path, overwrite):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "mine.txt").write_text("keep me\n")
    (mine / "config.json").write_text('{"vocab_size": 4096}\n')  # a model's config is not a run's
    package = _copy(ROOT / "artifact" / "dnabert_scaling" / "run" / "train", tmp_path, "package")
    for out, names in [(mine, ["config.json", "mine.txt"]), (package, ["__init__.py", "buckets.py"])]:
        before = file_digests(out)
        assert_refused(_run([*TRAIN, *overwrite, "--out", out]), "--out: holds files that are not a run's (", *names)
        assert file_digests(out) == before


def test_overwrite_needs_a_run_record(tmp_path):
    """Files named like a run's but no config.json / summary.json of a run: not known to be an earlier run."""
    out = tmp_path / "left"
    (out / "rank0").mkdir(parents=True)
    (out / "rank0" / "steps.jsonl").write_text("{}\n")
    before = file_digests(out)
    for overwrite in ([], ["--overwrite"]):
        assert_refused(_run([*TRAIN, *overwrite, "--out", out]), "no run record", "rank0/steps.jsonl", out)
        assert file_digests(out) == before


def test_overwrite_replaces_an_earlier_run_and_a_sweeps_run(sweep_folder, tmp_path):
    out = tmp_path / "run"
    assert _run([*TRAIN, "--out", out]).returncode == 0
    assert_refused(_run([*TRAIN, "--out", out]), "--out holds the files of an earlier run", "--overwrite")
    proc = _run([*TRAIN, "--overwrite", "--seed", "7", "--out", out])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((out / "config.json").read_text())["args"]["seed"] == 7
    # a run folder of a sweep (with the sweep's launcher log) is a run, trained on the sweep's data
    sweep = _copy(sweep_folder, tmp_path, "sweep")
    data = sweep / "synthetic-data" / "prom_300_all"
    before = file_digests(data)
    proc = _run([*TRAIN, "--overwrite", "--data", data, "--out", sweep / "ws1-none-r0"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (sweep / "ws1-none-r0" / "logs" / "launcher.log").is_file() and file_digests(data) == before


# --- sweep --out ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fresh", [[], ["--fresh"]], ids=["plain", "fresh"])
def test_sweep_refuses_a_folder_it_did_not_write(tmp_path, fresh):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "mine.txt").write_text("keep me\n")
    shipped = _copy(SHIPPED / "h200-rehearsal", tmp_path, "shipped")  # a shipped set: a sweep and its import record
    run = tmp_path / "run"  # one run of train is not a sweep
    assert _run([*TRAIN, "--out", run]).returncode == 0
    for out, name in [(mine, "mine.txt"), (shipped, "IMPORT.json"), (run, "config.json")]:
        before = file_digests(out)
        assert_refused(_run([*SWEEP, *fresh, "--out", out, "--", *T]), "--out: holds files a sweep does not write (", name, out)
        assert file_digests(out) == before
    assert not list(tmp_path.glob("*.previous-*")), "--fresh set a folder aside"


def test_sweep_fresh_still_sets_aside_its_own_folder(sweep_folder, tmp_path):
    out = _copy(sweep_folder, tmp_path, "runs")
    before = file_digests(out)
    proc = _run([*SWEEP, "--fresh", "--out", out, "--", *T, "--seed", "3"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    kept = list(tmp_path.glob("runs.previous-*"))
    assert len(kept) == 1 and file_digests(kept[0]) == before


def test_what_a_sweep_writes_is_its_own():
    """Every shipped sweep (real runs: Score-P experiments, Kineto traces, NCCL logs, busbw, synthetic
    data) holds nothing a sweep does not write but the import's record, and each of its runs nothing a
    run does not write."""
    from dnabert_scaling.run.folders import foreign_run_entries, foreign_sweep_entries

    sets = [p for p in sorted(SHIPPED.iterdir()) if (p / "sweep.json").is_file()]
    assert len(sets) >= 5
    for folder in sets:
        assert foreign_sweep_entries(folder) == ["IMPORT.json"], folder
        for run in folder.glob("ws*"):
            assert foreign_run_entries(run) == [], run


# --- world sizes ---------------------------------------------------------------------------------


def test_cpu_world_size_above_the_limit_is_refused(tmp_path):
    from dnabert_scaling.run.sweep.local import cpu_rank_limit

    limit = cpu_rank_limit()
    out = tmp_path / "runs"
    proc = _run(["sweep", "--device", "cpu", "--gpus", f"1,{limit + 1}", "--out", out, "--", *T], timeout=60)
    assert_refused(proc, f"world size {limit + 1} on the CPU", f"limit of {limit}", "per CPU core")
    assert not out.exists()
    assert "per CPU core" in _run(["sweep", "--help"]).stdout


# --- options refused before anything is written ---------------------------------------------------


@pytest.mark.parametrize(
    "extra, env, message",
    [
        (["--task", "nosuchtask"], {}, "--task 'nosuchtask': not a GUE task"),
        (["--inject-fault", "5:3"], {}, "rank 5 is not a rank of a run of world size 1"),
        (["--inject-fault", "0:1"], {}, "step 1 is not a step of this run"),
        (["--batch-size", "5000"], {}, "--batch-size 5000: the synthetic stand-in's 2000 training rows"),
        ([], {"MASTER_PORT": "99999", "WORLD_SIZE": "1", "RANK": "0"}, "MASTER_PORT=99999 is not a TCP port"),
        ([], {"OMP_NUM_THREADS": "lots"}, "OMP_NUM_THREADS='lots'"),
        ([], {"OMP_NUM_THREADS": "-3"}, "OMP_NUM_THREADS='-3' is not a positive number"),
    ],
    ids=["task", "fault-rank", "fault-step", "batch", "master-port", "threads", "threads-negative"],
)
def test_train_option_errors_write_nothing(tmp_path, extra, env, message):
    out = tmp_path / "run"
    assert_refused(_run([*TRAIN, *extra, "--out", out], env=env), message)
    assert not out.exists()


def test_a_rendezvous_host_that_cannot_be_resolved_is_refused_up_front(tmp_path):
    """Rank 0 of two with a MASTER_ADDR no resolver knows: refused before the run folder is claimed, where the
    process group would otherwise wait until its timeout and end in a C++ stack."""
    out = tmp_path / "run"
    env = {"MASTER_ADDR": "no-such-host.invalid", "MASTER_PORT": "29500", "WORLD_SIZE": "2", "RANK": "0"}
    train = [a for a in TRAIN if a != "--no-ddp"]
    assert_refused(_run([*train, "--out", out], env=env), "MASTER_ADDR='no-such-host.invalid' (torchrun variables) is not a host")
    assert not out.exists()


def test_an_unknown_task_is_known_by_its_folder(tmp_path, tiny_task):
    out = tmp_path / "run"
    proc = _run([*TRAIN, "--task", "nosuchtask", "--data", tiny_task, "--out", out])
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _run([*SWEEP, "--out", tmp_path / "runs", "--", *T, "--task", "nosuchtask"])
    assert_refused(proc, "the train options: --task 'nosuchtask': not a GUE task", "prom_300_all")
    assert not (tmp_path / "runs").exists()


def test_no_ddp_at_world_size_two_writes_nothing(tmp_path):
    out = tmp_path / "run"
    cmd = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "dnabert_scaling", *TRAIN]
    proc = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode != 0
    # each rank refuses; torchrun stops the other as soon as one exits, at times before it has printed (a busy machine)
    assert proc.stderr.count("--no-ddp is only for world size 1, not 2") in (1, 2), proc.stderr[-3000:]
    assert "earlier run" not in proc.stderr and not out.exists()


def test_a_fault_that_cannot_fire_in_a_sweep_is_refused(tmp_path):
    out = tmp_path / "runs"
    proc = _run(["sweep", "--gpus", "1,2", *SWEEP[3:], "--out", out, "--", *T, "--steps", "3", "--inject-fault", "1:2"])
    assert_refused(proc, "the train options at world size 1: --inject-fault 1:2: rank 1 is not a rank")
    assert not out.exists()


# --- options that did nothing unsaid ---------------------------------------------------------------


def test_seq_len_above_the_data_is_recorded(tmp_path, tiny_task):
    out = tmp_path / "run"
    proc = _run([*TRAIN, "--seq-len", "100000", "--data", tiny_task, "--out", out])
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    note = f"--seq-len 100000 is above the longest training sequence ({summary['seq_len_tokens']} tokens)"
    assert any(d.startswith(note) for d in summary["deviations"]) and note in proc.stderr
    proc = _run([*TRAIN, "--seq-len", "8", "--data", tiny_task, "--out", tmp_path / "cut"])
    assert proc.returncode == 0 and "--seq-len" not in "".join(
        json.loads((tmp_path / "cut" / "summary.json").read_text())["deviations"]
    )


def test_a_cpu_rehearsal_is_not_recorded_as_shared_gpus(tmp_path):
    out = tmp_path / "runs"
    proc = _run(
        ["sweep", "--gpus", "2", "--device", "cpu", "--tracer", "torch", "--rehearse", "--no-busbw", "--out", out, "--", *T]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sweep = json.loads((out / "sweep.json").read_text())
    summary = json.loads((out / "ws2-torch-r0" / "summary.json").read_text())
    records = [f for f in [*sweep["fallbacks"], *summary["fallbacks"]] if f.get("kind") == "rehearsal"]
    assert len(records) == 2 and summary["rehearsal"] is True
    for record in records:
        text = json.dumps(record)
        assert "CPU" in text and "NCCL over" not in text and "round-robin" not in text, record


def test_rehearsal_ranks_per_gpu_have_a_limit():
    """Where GPUs are (the device machine): --rehearse puts at most REHEARSAL_MAX_RANKS_PER_GPU ranks on each."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    from dnabert_scaling.errors import ArtifactError
    from dnabert_scaling.run.sweep.local import REHEARSAL_MAX_RANKS_PER_GPU, check_local_resources

    most = REHEARSAL_MAX_RANKS_PER_GPU * torch.cuda.device_count()
    assert check_local_resources([1, most], "auto", rehearse=True) == "cuda"
    with pytest.raises(
        ArtifactError, match=f"world size {most + 1} would rehearse more than {REHEARSAL_MAX_RANKS_PER_GPU} ranks"
    ):
        check_local_resources([1, most + 1], "auto", rehearse=True)
