"""Faults and bad input (issue 12), each class once, with real processes on CPU.

Every refusal is checked for the exit status, the message naming the file or option, no
traceback, and that nothing that existed before was changed or lost. The fault cases start
real sweeps (torchrun, gloo, the tiny model) and end them by timeout, SIGINT to the sweep alone,
or a rank killed by process id.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cliprocess import assert_refused, file_digests
from conftest import DATA, PYTHON, ROOT, can_mount_read_only

CLI = [PYTHON, "-m", "dnabert_scaling"]
TINY = ["--model", "tiny", "--warmup-steps", "0", "--batch-size", "4", "--find-unused-parameters", "false"]
SWEEP2 = ["sweep", "--gpus", "2", "--device", "cpu", "--tracer", "none", "--repeats", "1", "--no-busbw"]
REFERENCE = ROOT / "expected" / "reference-results" / "h200-b8"


def _run(args, timeout=300, **kw):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=ROOT, **kw)


def _run_processes(run_dir: Path) -> list[int]:
    """Processes (other than the caller) whose command line names ``run_dir``."""
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(run_dir) in cmdline and state != "Z":
            found.append(int(name))
    return found


def _rank_pid(run_dir: Path, rank: int) -> int:
    pids = [
        pid
        for pid in _run_processes(run_dir)
        if f"RANK={rank}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        and b"train" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(pids) == 1, pids
    return pids[0]


def _wait_for_steps(path: Path, sweep: subprocess.Popen, n: int = 3, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert sweep.poll() is None, sweep.communicate()[1][-3000:]
        if path.is_file() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} did not get {n} steps in {timeout} s")


def _training_sweep(tmp_path: Path, tiny_task: Path, *train_args: str) -> tuple[subprocess.Popen, Path]:
    """A 2-rank sweep of a run too long to finish, started in a session of its own (so a signal
    sent to it reaches the sweep only, not torchrun or the ranks), once rank 1 has trained."""
    out = tmp_path / "runs"
    sweep = subprocess.Popen(
        [*CLI, *SWEEP2, "--out", str(out), "--data", str(tiny_task), "--", *TINY, "--steps", "100000", *train_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    run_dir = out / "ws2-none-r0"
    _wait_for_steps(run_dir / "rank1" / "steps.jsonl", sweep)
    return sweep, run_dir


def _assert_run_ended(run_dir: Path, message: str) -> None:
    """No process of the run is left; its status is 'failed' and stays so."""
    assert _run_processes(run_dir) == []
    sizes = {p: p.stat().st_size for p in run_dir.glob("rank*/steps.jsonl")}
    before = file_digests(run_dir)
    time.sleep(3)  # an orphaned rank would go on logging steps and then rewrite summary.json
    assert file_digests(run_dir) == before and {p: p.stat().st_size for p in sizes} == sizes
    for name in ("manifest.json", "summary.json"):
        data = json.loads((run_dir / name).read_text())
        assert data["status"] == "failed" and message in data["message"], data


# --- faults ---------------------------------------------------------------------------------------


def test_run_timeout_ends_every_rank(tmp_path, tiny_task):
    out = tmp_path / "runs"
    proc = _run([*SWEEP2, "--run-timeout", "25", "--out", out, "--data", tiny_task, "--", *TINY, "--steps", "100000"])
    assert proc.returncode == 1
    assert "--run-timeout" in proc.stderr and "ws2-none-r0" in proc.stderr
    run_dir = out / "ws2-none-r0"
    assert len((run_dir / "rank1" / "steps.jsonl").read_text().splitlines()) > 0  # it had started training
    _assert_run_ended(run_dir, "killed with all its ranks after 25 s")
    # the ranks recorded the SIGTERM that ended them (the first to act is marked stopped)
    records = [json.loads(p.read_text()) for p in sorted(run_dir.glob("rank*/summary.json"))]
    assert any(r["status"] == "failed" and r["stopped"] is True for r in records), records


def test_sigint_to_the_sweep_alone_ends_its_run(tmp_path, tiny_task):
    sweep, run_dir = _training_sweep(tmp_path, tiny_task)
    sweep.send_signal(signal.SIGINT)
    _, err = sweep.communicate(timeout=60)
    assert sweep.returncode == 130 and "interrupted" in err and "Traceback" not in err, err[-2000:]
    _assert_run_ended(run_dir, "interrupted")


def test_a_killed_rank_is_named_as_the_cause(tmp_path, tiny_task):
    sweep, run_dir = _training_sweep(tmp_path, tiny_task, "--dist-timeout", "30")
    os.kill(_rank_pid(run_dir, 1), signal.SIGKILL)
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 1
    assert "rank1 was killed by SIGKILL" in err and str(run_dir / "logs" / "launcher.log") in err, err[-2000:]
    _assert_run_ended(run_dir, "rank1 was killed by SIGKILL")


def test_a_hung_rank_ends_the_run_after_the_dist_timeout(tmp_path, tiny_task):
    sweep, run_dir = _training_sweep(tmp_path, tiny_task, "--dist-timeout", "15")
    os.kill(_rank_pid(run_dir, 1), signal.SIGSTOP)  # hung: alive, holding its sockets, doing nothing
    t0 = time.monotonic()
    _, err = sweep.communicate(timeout=180)
    assert sweep.returncode == 1 and time.monotonic() - t0 < 15 + 60, err[-2000:]
    # torchrun SIGKILLs the hung rank once the survivor's collective timed out: both are named
    assert "rank1 was killed by SIGKILL" in err and "rank0 recorded:" in err, err[-2000:]
    assert str(run_dir / "rank0" / "error.txt") in err and str(run_dir / "logs" / "launcher.log") in err
    _assert_run_ended(run_dir, "rank1 was killed by SIGKILL")


def test_failure_message_names_the_first_failing_rank(tmp_path, tiny_task):
    out = tmp_path / "runs"
    proc = _run(
        [*SWEEP2, "--out", out, "--data", tiny_task, "--", *TINY, "--steps", "6", "--inject-fault", "1:2", "--dist-timeout", "30"]
    )
    assert proc.returncode == 1
    run_dir = out / "ws2-none-r0"
    for text in (proc.stderr, json.loads((run_dir / "summary.json").read_text())["message"]):
        assert "rank1 failed first: RuntimeError: injected fault on rank 1 at step 2" in text, text
        assert str(run_dir / "rank1" / "error.txt") in text and str(run_dir / "logs" / "launcher.log") in text
        assert "Connection reset" not in text.split("failed first")[1]


def test_failure_message_leaves_out_ranks_the_launcher_stopped(tmp_path):
    from dnabert_scaling.run.sweep.spec import RunSpec
    from dnabert_scaling.run.sweep.record import failure_message

    run_dir = tmp_path / "ws2-none-r0"
    ranks = ((0, True, 100.0, "Terminated: stopped by SIGTERM"), (1, False, 200.0, "RuntimeError: CUDA out of memory"))
    for rank, stopped, at, error in ranks:
        folder = run_dir / f"rank{rank}"
        folder.mkdir(parents=True)
        (folder / "error.txt").write_text(f"Traceback (most recent call last):\n{error}\n")
        record = {"status": "failed", "rank": rank, "error": error, "stopped": stopped, "failed_at": at}
        (folder / "summary.json").write_text(json.dumps(record))
    message = failure_message(RunSpec(2, "none", 0, run_dir), 1, "")
    assert "rank1 failed first: RuntimeError: CUDA out of memory" in message and "other rank" not in message, message


def test_resume_refuses_changed_train_options(tmp_path, tiny_task):
    out = tmp_path / "runs"
    sweep1 = [
        "sweep",
        "--gpus",
        "1",
        "--device",
        "cpu",
        "--tracer",
        "none",
        "--repeats",
        "1",
        "--no-baseline-no-ddp",
        "--out",
        out,
        "--data",
        tiny_task,
        "--",
        *TINY,
        "--steps",
        "3",
    ]
    assert _run(sweep1).returncode == 0
    before = file_digests(out)
    changed = [*sweep1[: sweep1.index("--batch-size")], "--batch-size", "2", *sweep1[sweep1.index("--batch-size") + 2 :]]
    proc = _run(changed)
    assert_refused(proc, "--batch-size 4 -> 2", "ws1-none-r0", "--fresh", out)
    assert file_digests(out) == before
    # --fresh keeps the old sweep aside and starts a new one with the new options
    proc = _run([*changed[:1], "--fresh", *changed[1:]])
    assert proc.returncode == 0, proc.stderr[-2000:]
    kept = list(tmp_path.glob("runs.previous-*"))
    assert len(kept) == 1 and file_digests(kept[0]) == before
    assert json.loads((out / "ws1-none-r0" / "summary.json").read_text())["batch_size_per_rank"] == 2


def test_train_refuses_an_out_folder_holding_another_run(tmp_path, tiny_task):
    out = tmp_path / "run"
    two_ranks = [
        PYTHON,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "dnabert_scaling",
        "train",
        *TINY,
        "--steps",
        "2",
        "--device",
        "cpu",
        "--no-progress",
        "--data",
        str(tiny_task),
        "--out",
        str(out),
    ]
    assert subprocess.run(two_ranks, capture_output=True, timeout=300).returncode == 0
    before = file_digests(out)
    one_rank = ["train", *TINY, "--steps", "2", "--no-ddp", "--device", "cpu", "--no-progress", "--data", tiny_task, "--out", out]
    assert_refused(_run(one_rank), "--out holds the files of an earlier run", "--overwrite", out)
    assert file_digests(out) == before
    # --overwrite: the earlier run is gone entirely, not mixed with the new one
    assert _run([*one_rank, "--overwrite"]).returncode == 0
    assert not (out / "rank1").exists()
    assert json.loads((out / "summary.json").read_text())["world_size"] == 1


# --- bad input ------------------------------------------------------------------------------------


def _an_existing_file(tmp_path: Path) -> Path:
    f = tmp_path / "existing.txt"
    f.write_text("keep me\n")
    return f


def _writers(tmp_path: Path, out: Path, tiny_task: Path) -> dict[str, list]:
    """Every writing subcommand with ``out`` as its output folder (or file: busbw, summarize)."""
    kineto = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"
    return {
        "train": ["train", *TINY, "--steps", "1", "--no-ddp", "--device", "cpu", "--data", tiny_task, "--out", out],
        "synth-data": ["synth-data", "--out", out],
        "sweep": ["sweep", "--gpus", "1", "--device", "cpu", "--out", out, "--", *TINY],
        "analyze": ["analyze", "--world-size", "1", kineto, "--out", out],
        "check": ["check", REFERENCE, "--out", out],
        "report": ["report", REFERENCE, "--out", out],
        "convert": ["convert", kineto, "--out", out],
    }


@pytest.mark.parametrize("command", ["train", "synth-data", "sweep", "analyze", "check", "report", "convert"])
def test_output_folder_that_is_a_file(tmp_path, tiny_task, command):
    target = _an_existing_file(tmp_path)
    proc = _run(_writers(tmp_path, target, tiny_task)[command])
    assert_refused(proc, "--out: exists and is not a folder", target)
    assert target.read_text() == "keep me\n"


def test_output_file_that_is_a_folder(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "x").write_text("x")
    assert_refused(_run(["busbw", "--out", folder]), "--out: is a folder", folder)
    trace = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"
    assert_refused(_run(["summarize", trace, "--json", folder]), "--json: is a folder", folder)
    assert file_digests(folder) == {"x": hashlib.sha256(b"x").hexdigest()}


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX only")
@pytest.mark.parametrize("command", ["train", "synth-data", "analyze", "convert"])
def test_output_folder_without_write_permission(tmp_path, tiny_task, command):
    import tempfile

    # outside pytest's private (mode 700) tmp folder, so that an unprivileged user can reach it
    base = Path(tempfile.mkdtemp(prefix="faults-ro-"))
    try:
        task = base / "task"
        shutil.copytree(tiny_task, task)
        locked = base / "locked"
        locked.mkdir()
        (locked / "old.txt").write_text("old\n")
        for p in (base, task, *task.iterdir()):
            p.chmod(0o755 if p.is_dir() else 0o644)
        locked.chmod(0o555)
        args = [*CLI, *map(str, _writers(tmp_path, locked / "out", task)[command])]
        if os.geteuid() == 0:
            # Root writes everywhere: run the command without the capabilities that let it. It stays
            # uid 0, the owner of the checkout, so it reads the package and the .venv wherever the
            # repository was cloned (a private, mode 700, folder included), while file permissions
            # now apply to it: it cannot write into the mode 555 folder. (Another uid could not
            # read a private checkout's .venv: "No module named dnabert_scaling".)
            if not shutil.which("setpriv"):
                pytest.skip("running as root without setpriv (util-linux) to drop the capabilities")
            args = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", *args]
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=300,
            cwd="/",
            env={**os.environ, "HOME": str(base), "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert_refused(proc, "--out: cannot be created", "not writable", locked / "out")
        assert sorted(p.name for p in locked.iterdir()) == ["old.txt"]
    finally:
        locked.chmod(0o755)
        shutil.rmtree(base)


@pytest.mark.skipif(not can_mount_read_only(), reason="needs unshare -m and mount (root or user namespaces)")
@pytest.mark.parametrize("command", ["train", "synth-data", "analyze", "convert"])
def test_output_folder_on_a_read_only_file_system(tmp_path, tiny_task, command):
    ro = tmp_path / "ro"
    ro.mkdir()
    target = ro / "out"
    args = " ".join(f"'{a}'" for a in [*CLI, *map(str, _writers(tmp_path, target, tiny_task)[command])])
    # a private mount namespace: a read-only tmpfs over ro/ for this command only
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro tmpfs '{ro}' && exec {args}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert_refused(proc, "--out: cannot be created", "read-only file system", target)
    assert list(ro.iterdir()) == []


@pytest.mark.parametrize(
    "args, option",
    [
        (["train", "--dist-timeout", "0"], "--dist-timeout"),
        (["train", "--bucket-cap-mb", "-1"], "--bucket-cap-mb"),
        (["train", "--steps", "0"], "--steps"),
        (["train", "--batch-size", "-2"], "--batch-size"),
        (["train", "--seq-len", "0"], "--seq-len"),
        (["train", "--warmup-steps", "-1"], "--warmup-steps"),
        (["train", "--steps", "2.5"], "--steps"),
        (["busbw", "--iters", "0"], "--iters"),
        (["busbw", "--sizes-mb", "1,0"], "--sizes-mb"),
        (["busbw", "--sizes-mb", "-4"], "--sizes-mb"),
        (["sweep", "--run-timeout", "0"], "--run-timeout"),
        (["sweep", "--repeats", "0"], "--repeats"),
        (["analyze", "--batch-size", "0"], "--batch-size"),
    ],
)
def test_non_positive_numbers_are_refused(tmp_path, args, option):
    out = tmp_path / "out"
    proc = _run([*args, "--out", out])
    assert_refused(proc, f"argument {option}")
    assert not out.exists()


def _reference_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    shutil.copytree(REFERENCE, folder)
    return folder


def _move_entry(m):
    m["world_sizes"]["8"] = m["world_sizes"].pop("1")


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m["world_sizes"].update({"eight": m["world_sizes"].pop("1")}), "world_sizes key 'eight'"),
        (_move_entry, "world_sizes['8'].world_size is 1"),
        (lambda m: m["world_sizes"]["1"].update(traced="yes"), "world_sizes['1'].traced must be an object or null"),
        (
            lambda m: m["world_sizes"]["1"]["throughput"].update(samples_per_s="fast"),
            "world_sizes['1'].throughput.samples_per_s must be a statistic object",
        ),
        (
            lambda m: m["world_sizes"]["1"]["traced"]["gpu"]["idle_s"].update(median="0.1"),
            "world_sizes['1'].traced.gpu.idle_s.median must be a number",
        ),
        (lambda m: m.pop("schema"), "'schema' is None"),
    ],
)
def test_check_and_report_refuse_malformed_metrics(tmp_path, damage, message):
    folder = _reference_copy(tmp_path)
    metrics = json.loads((folder / "metrics.json").read_text())
    damage(metrics)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    before = file_digests(folder)
    assert_refused(_run(["check", folder]), message, folder / "metrics.json")
    assert_refused(_run(["report", folder, "--out", tmp_path / "report"]), message, folder / "metrics.json")
    assert file_digests(folder) == before and not (tmp_path / "report").exists()


def _trained_run(root: Path, name: str, tiny_task: Path, *extra: str) -> Path:
    run = root / name
    proc = _run(["train", *TINY, "--steps", "2", "--device", "cpu", "--no-progress", "--data", tiny_task, "--out", run, *extra])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return run


def test_analyze_refuses_mixed_configurations(tmp_path, tiny_task):
    runs = tmp_path / "runs"
    _trained_run(runs, "ws1-none-r0", tiny_task)
    _trained_run(runs, "ws1-none-r1", tiny_task, "--batch-size", "2")
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text('{"old": true}\n')
    assert_refused(_run(["analyze", runs, "--out", results]), "mix configurations", "batch_size_per_rank", "ws1-none-r1")
    assert (results / "metrics.json").read_text() == '{"old": true}\n'


def test_analyze_refuses_bad_bare_trace_entries(tmp_path):
    trace = (DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz").as_posix()
    for body, message in [
        (f'[[traced]]\nworld_size = 1\ntraces = ["{trace}"]\nbatch_size = 0\n', "batch_size must be a positive integer"),
        (f'[[traced]]\nworld_size = 1\ntraces = ["{trace}"]\nbatch_size = "8"\n', "batch_size must be a positive integer"),
        (f'[[traced]]\nworld_size = 1\ntraces = ["{trace}"]\n' * 2, "two sets of traces for world size 1"),
    ]:
        manifest = tmp_path / "m.toml"
        manifest.write_text(body)
        assert_refused(_run(["analyze", "--trace-manifest", manifest, "--out", tmp_path / "out"]), message, manifest)
        assert not (tmp_path / "out").exists()


def test_kernels_out_of_order_are_refused(tmp_path):
    import gzip

    source = DATA / "traces" / "kineto-a100-nccl-2rank" / "rank0.json.gz"
    doc = json.loads(gzip.decompress(source.read_bytes()))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    span = max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)
    moved = kernels[len(kernels) // 2]
    moved["ts"] -= 4 * span  # far before the kernels launched ahead of it: summarize saw a 5x window
    broken = tmp_path / "rank0.json.gz"
    broken.write_bytes(gzip.compress(json.dumps(doc).encode()))
    for args in (["summarize", broken], ["analyze", "--world-size", "2", broken, "--out", tmp_path / "out"]):
        assert_refused(
            _run(args),
            f"out of order on rank 0 stream {moved['args']['stream']}",
            f"(launch {moved['args']['correlation']})",
            broken,
        )
    assert not (tmp_path / "out").exists()


def test_a_damaged_local_definition_file_is_named(tmp_path):
    archive = tmp_path / "exp"
    shutil.copytree(DATA / "traces" / "scorep-cuda-2rank", archive)
    damaged = archive / "traces" / "1.def"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2 :] = b"\xff" * (len(data) - len(data) // 2)
    damaged.write_bytes(bytes(data))
    assert_refused(_run(["summarize", archive]), "local definition file traces/1.def")


def test_untraced_run_with_nan_loss_is_not_used_for_scaling(tmp_path, tiny_task):
    runs = tmp_path / "runs"
    _trained_run(runs, "ws1-none-r0", tiny_task)
    nan = _trained_run(runs, "ws1-none-r1", tiny_task, "--lr", "1e38")  # the weights overflow: the loss goes NaN
    assert json.loads((nan / "summary.json").read_text())["finite_loss"] is False
    proc = _run(["analyze", runs, "--out", tmp_path / "results"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = json.loads((tmp_path / "results" / "metrics.json").read_text())
    assert metrics["world_sizes"]["1"]["throughput"]["runs"] == ["ws1-none-r0"]
    assert any("ws1-none-r1" in n and "not finite" in n for n in metrics["notes"])
