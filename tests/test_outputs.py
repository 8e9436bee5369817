"""The output policy (outputs.py) of every writing subcommand, with real processes.

No output may be, hold or lie inside an input; a folder is replaced whole or not at all and only
when it holds nothing but the artifact's own files; temporary files go on every exit path;
SIGINT/SIGTERM give 130/143 and one line. Every case checks the sha256 of everything it started
with."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cliprocess import assert_refused, file_digests
from conftest import DATA, PYTHON, ROOT, TEST_MARKER, can_mount_read_only, marked_processes

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.outputs import refuse_overlap, replaced_folder, write_texts_atomic

CLI = [PYTHON, "-m", "dnabert_scaling"]
KINETO = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"
REFERENCE = ROOT / "expected" / "reference-results" / "h200-b8"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "artifact")}


def _run(args, cwd, timeout=300):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=_env())


def _results(folder: Path) -> Path:
    shutil.copytree(REFERENCE, folder)
    return folder


# ---- outputs over inputs ---------------------------------------------------------------------


def _overlap_cases(w: Path) -> dict[str, tuple[list, str]]:
    """(command line, expected words) of each writing subcommand told to write over its input."""
    trace = w / "trace.json.gz"
    results = w / "results"
    return {
        "summarize --json INPUT": (["summarize", trace, "--json", trace], "--json: is also an input"),
        "predict --out INPUT": (["predict", trace, "--out", trace], "--out: is also an input"),
        "check: claims named like an output": (
            ["check", results, "--expected", results / "verdicts.txt"],
            "is also an input",
        ),
        "check: metrics file named like an output": (["check", results / "verdicts.json"], "is also an input"),
        "analyze --out holding an input": (
            ["analyze", "--world-size", "1", results / "tables" / "trace.json.gz", "--out", results],
            "--out: holds the input",
        ),
        "analyze --out inside an input run": (
            ["analyze", "--world-size", "1", trace, "--out", w / "trace.json.gz" / "r"],
            "",
        ),
        "analyze --out a symlink to the inputs' folder": (
            ["analyze", "--world-size", "1", w / "traces" / "rank0.json.gz", "--out", w / "link"],
            "--out: is a symbolic link",
        ),
        "report --out inside an input": (["report", results, "--out", results / "tables"], "lies inside the input"),
        "convert --out holding an input": (
            ["convert", w / "conv" / "all-ranks" / "rank0.json.gz", "--out", w / "conv", "--merged", "--force"],
            "holds the input",
        ),
    }


def _overlap_workspace(w: Path) -> None:
    shutil.copy(KINETO, w / "trace.json.gz")
    _results(w / "results")
    shutil.copy(KINETO, w / "results" / "tables" / "trace.json.gz")
    (w / "traces").mkdir()
    shutil.copy(KINETO, w / "traces" / "rank0.json.gz")
    (w / "link").symlink_to(w / "traces")
    (w / "conv" / "all-ranks").mkdir(parents=True)
    shutil.copy(KINETO, w / "conv" / "all-ranks" / "rank0.json.gz")


@pytest.mark.parametrize("case", list(_overlap_cases(Path("."))))
def test_no_output_over_an_input(tmp_path, case):
    _overlap_workspace(tmp_path)
    before = file_digests(tmp_path, links=False)
    args, words = _overlap_cases(tmp_path)[case]
    proc = _run(args, cwd=tmp_path)
    if case == "analyze --out inside an input run":  # a file on its path: refused as before
        assert_refused(proc, "--out")
    else:
        assert_refused(proc, words)
    assert file_digests(tmp_path, links=False) == before


TINY = ["--model", "tiny", "--steps", "1", "--no-ddp", "--device", "cpu"]


@pytest.mark.parametrize("command", ["train", "sweep"])
def test_train_and_sweep_do_not_write_into_their_data(tmp_path, tiny_task, command):
    task = tmp_path / "task"
    shutil.copytree(tiny_task, task)
    before = file_digests(tmp_path, links=False)
    if command == "train":
        args = ["train", *TINY, "--data", task, "--out", task / "run"]
    else:
        args = ["sweep", "--gpus", "1", "--device", "cpu", "--data", task, "--out", task, "--", "--model", "tiny"]
    assert_refused(_run(args, cwd=tmp_path), "--out:", "input")
    assert file_digests(tmp_path, links=False) == before and sorted(p.name for p in task.iterdir()) == sorted(
        p.name for p in tiny_task.iterdir()
    )


# every writing command with its output option last, and whether that output is a folder or a file
WRITERS = [
    (["train", *TINY, "--out"], "dir"),
    (["sweep", "--gpus", "1", "--device", "cpu", "--out"], "dir"),
    (["busbw", "--out"], "file"),
    (["analyze", "--world-size", "1", KINETO, "--out"], "dir"),
    (["check", REFERENCE, "--out"], "dir"),
    (["report", REFERENCE, "--out"], "dir"),
    (["convert", KINETO, "--out"], "dir"),
    (["synth-data", "--out"], "dir"),
    (["predict", KINETO, "--out"], "file"),
    (["summarize", KINETO, "--json"], "file"),
]


@pytest.mark.parametrize("args, kind", WRITERS, ids=[a[0] for a, _ in WRITERS])
def test_an_empty_output_path_is_refused(tmp_path, args, kind):
    """``--out ''`` would be the current folder: its tables/ once went, with a user's file in it."""
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "mine.txt").write_text("the user's\n")
    before = file_digests(tmp_path, links=False)
    assert_refused(_run([*args, ""], cwd=tmp_path), "empty path")
    assert file_digests(tmp_path, links=False) == before


@pytest.mark.parametrize("args, kind", WRITERS, ids=[a[0] for a, _ in WRITERS])
def test_an_output_path_that_is_a_symlink_is_refused_by_every_command(tmp_path, args, kind):
    """One rule (``outputs.refuse_link``, in the checks every writing command makes): an output that is
    a symbolic link is refused, naming the option; ``analyze`` refused it while ``check`` and ``report``
    wrote through it. Nothing is written where the link points."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real.json").write_text("{}\n")
    (tmp_path / "dir").symlink_to(tmp_path / "real")
    (tmp_path / "file").symlink_to(tmp_path / "real.json")
    before = file_digests(tmp_path, links=False)
    assert_refused(_run([*args, tmp_path / kind], cwd=tmp_path), f"{tmp_path / kind}: ", "is a symbolic link; give the")
    assert file_digests(tmp_path, links=False) == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "dir",
        "file",
        "real",
        "real.json",
    ]


def test_analyze_refuses_a_folder_with_files_it_did_not_write(tmp_path):
    """A folder holding a user's tables/mine.txt: refused, named, nothing deleted; the current
    folder (``--out .``, or above it) is never replaced."""
    work = tmp_path / "work"
    (work / "tables").mkdir(parents=True)
    (work / "tables" / "mine.txt").write_text("the user's\n")
    (work / "notes.md").write_text("notes\n")
    before = file_digests(tmp_path, links=False)
    proc = _run(["analyze", "--world-size", "1", KINETO, "--out", work], cwd=tmp_path)
    assert_refused(proc, "did not write", "notes.md", "tables/mine.txt")
    for out, cwd in ((".", work), ("..", work / "tables")):
        assert_refused(_run(["analyze", "--world-size", "1", KINETO, "--out", out], cwd=cwd), "current folder")
    (work / "notes.md").unlink()
    (work / "tables" / "mine.txt").unlink()
    assert_refused(_run(["analyze", "--world-size", "1", KINETO, "--out", "."], cwd=work), "current folder")  # even when empty
    assert sorted(p.name for p in work.iterdir()) == ["tables"]
    assert {k: v for k, v in before.items() if "work" not in k} == file_digests(tmp_path, links=False)


def test_analyze_replaces_its_own_folder_and_keeps_the_other_commands_files(tmp_path):
    results = _results(tmp_path / "r")
    verdicts = (results / "verdicts.json").read_bytes()
    proc = _run(["analyze", "--world-size", "1", KINETO, "--out", results], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (results / "verdicts.json").read_bytes() == verdicts  # carried over, reported stale
    assert "stale" in proc.stderr
    assert (
        json.loads((results / "metrics.json").read_text())["sources"]
        != json.loads((REFERENCE / "metrics.json").read_text())["sources"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # no temporary folder left
    assert oct(results.stat().st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_predict_does_not_write_into_the_shipped_results(tmp_path):
    """Neither by default nor by an explicit --out (which replaced a shipped predictions.json, another
    file predict had written): the shipped evidence changes only by make refresh-reference."""
    before = file_digests(REFERENCE, links=False)
    proc = _run(["predict", REFERENCE], cwd=ROOT)
    assert_refused(proc, "inside the shipped evidence", "--out")
    shipped = ROOT / "expected" / "reference-results" / "h200-buckets-b8"
    was = (shipped / "predictions.json").read_bytes()
    trace = ROOT / "expected" / "reference" / "h200-buckets-b8" / "ws1-torch-r0" / "traces" / "rank0.json.gz"
    proc = _run(["predict", trace, "--gpus", "8", "--out", shipped / "predictions.json"], cwd=tmp_path)
    assert_refused(proc, "inside the shipped evidence")
    assert (shipped / "predictions.json").read_bytes() == was
    assert file_digests(REFERENCE, links=False) == before and not (REFERENCE / "predictions.json").exists()


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and modification time (folders included)."""
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def test_no_command_writes_inside_the_shipped_evidence(tmp_path):
    """Every writing command refuses an output that is or lies inside the source tree's expected/ (the
    shipped traces, results, report and claims), given as a new folder or over a shipped one, before it
    writes anything: outputs.refuse_shipped, called by writable_dir, writable_file and refuse_foreign."""
    expected = ROOT / "expected"
    before = _listing(expected)
    results = _results(tmp_path / "results")
    tiny = ["--model", "tiny", "--steps", "1", "--warmup-steps", "0", "--batch-size", "2", "--no-progress"]
    cases = {
        "analyze over a shipped set": ["analyze", "--world-size", "1", KINETO, "--out", REFERENCE],
        "report over the shipped report": ["report", results, "--out", expected / "reference-results"],
        "check into expected/": ["check", results, "--out", expected / "probe-check"],
        "train into a shipped trace set": [
            "train",
            *tiny,
            "--device",
            "cpu",
            "--out",
            expected / "reference" / "h200-b8",
            "--overwrite",
        ],
        "sweep over expected/ itself": [
            "sweep",
            "--device",
            "cpu",
            "--gpus",
            "1",
            "--no-busbw",
            "--out",
            expected,
            "--fresh",
            "--",
            *tiny,
        ],
        "synth-data into expected/": ["synth-data", "--out", expected / "probe-data"],
        "convert into expected/": ["convert", KINETO, "--out", expected / "probe-convert"],
    }
    for what, args in cases.items():
        proc = _run(args, cwd=tmp_path)
        assert proc.returncode == 2, (what, proc.returncode, proc.stderr[-2000:])
        assert "inside the shipped evidence" in proc.stderr and "Traceback" not in proc.stderr, (what, proc.stderr[-2000:])
    proc = subprocess.run(
        [PYTHON, ROOT / "scripts" / "reproduce.py", "--kick-tires", "--out", expected / "probe-reproduce"],
        capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=300,
    )  # fmt: skip
    assert_refused(proc, "inside the shipped evidence")
    assert _listing(expected) == before  # nothing written, moved or deleted
    assert file_digests(results, links=False) == file_digests(REFERENCE, links=False)


def test_an_installed_copy_protects_a_checkout_s_evidence_too(tmp_path):
    """The package installed elsewhere (the image, a wheel) has no source tree beside it: the evidence is then
    known by its layout (a folder named expected holding claims.toml and reference*/), on the output's way up."""
    installed = tmp_path / "site-packages"
    shutil.copytree(
        ROOT / "artifact" / "dnabert_scaling", installed / "dnabert_scaling", ignore=shutil.ignore_patterns("__pycache__")
    )
    checkout = tmp_path / "checkout" / "expected"
    (checkout / "reference-results").mkdir(parents=True)
    shutil.copy(ROOT / "expected" / "claims.toml", checkout / "claims.toml")
    shipped = _results(checkout / "reference-results" / "h200-b8")
    before = _listing(checkout)
    env = {**os.environ, "PYTHONPATH": str(installed)}
    args = ["analyze", "--world-size", "1", KINETO, "--out", shipped]
    proc = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert_refused(proc, "inside the shipped evidence", str(checkout))
    assert _listing(checkout) == before
    # a folder named expected without the evidence's layout is an ordinary output folder
    plain = tmp_path / "elsewhere" / "expected"
    proc = subprocess.run(
        [*CLI, *map(str, [*args[:-1], plain / "r"])], capture_output=True, text=True, cwd=checkout.parent, env=env, timeout=300
    )  # run where the checkout's claims file is found
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_synth_data_rows_are_bounded(tmp_path):
    proc = _run(["synth-data", "--out", tmp_path / "task", "--rows", f"{10**12},2,2"], cwd=tmp_path, timeout=60)
    assert_refused(proc, "at most 10,000,000 rows")
    assert not (tmp_path / "task").exists()


# ---- the mechanism ---------------------------------------------------------------------------


def test_refuse_overlap_follows_dots_and_symlinks(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.json").write_text("{}")
    (tmp_path / "alias").symlink_to(data)
    for out in (data / ".." / "data", tmp_path / "alias", tmp_path / "alias" / "x.json", tmp_path):
        with pytest.raises(ArtifactError):
            refuse_overlap([("--out", out)], [data / "x.json"])
    refuse_overlap([("--out", tmp_path / "elsewhere")], [data / "x.json"])  # a sibling is fine


def _owned(rel: Path, is_dir: bool) -> bool:
    return not is_dir and rel.suffix == ".txt"


def test_replaced_folder_is_whole_or_old_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("old\n")
    with pytest.raises(RuntimeError):
        with replaced_folder(target, "--out", _owned) as fresh:
            (fresh / "a.txt").write_text("half\n")
            raise RuntimeError("failed midway")
    assert file_digests(target, links=False) == {"a.txt": hashlib.sha256(b"old\n").hexdigest()}
    with replaced_folder(target, "--out", _owned) as fresh:
        (fresh / "b.txt").write_text("new\n")
    assert file_digests(target, links=False) == {"b.txt": hashlib.sha256(b"new\n").hexdigest()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(ArtifactError, match="did not write"):  # a file put there while it worked
        with replaced_folder(target, "--out", _owned) as fresh:
            (fresh / "c.txt").write_text("newer\n")
            (target / "user.csv").write_text("x")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt", "user.csv"]
    with pytest.raises(ArtifactError, match="did not write"):
        with replaced_folder(target, "--out", _owned):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_write_texts_atomic_leaves_the_old_files_when_one_write_fails(tmp_path):
    (tmp_path / "a.txt").write_text("old a")
    (tmp_path / "b.txt").write_text("old b")
    with pytest.raises(UnicodeEncodeError):
        write_texts_atomic({tmp_path / "a.txt": "new a", tmp_path / "b.txt": "\ud800"})  # not encodable
    assert (tmp_path / "a.txt").read_text() == "old a" and (tmp_path / "b.txt").read_text() == "old b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_a_file_checked_as_writable_is_written_into_a_folder_made_only_then(tmp_path):
    from dnabert_scaling.outputs import writable_file

    target = tmp_path / "new" / "deeper" / "out.json"
    writable_file(target, "--json")  # creatable: checked, not made (a refused command leaves no folder)
    assert not (tmp_path / "new").exists()
    write_texts_atomic({target: "{}\n"})
    assert target.read_text() == "{}\n" and sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


SWAP_THEN_HANG = """
import sys, time
from pathlib import Path
from dnabert_scaling.outputs import replaced_folder
with replaced_folder(Path(sys.argv[1]), "--out", lambda rel, is_dir: not is_dir) as fresh:
    (fresh / "a.txt").write_text("new, half")
    print("writing", flush=True)
    time.sleep(300)
"""


def test_sigkill_while_a_folder_is_being_rebuilt_leaves_the_old_one(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.txt").write_text("old\n")
    before = file_digests(target, links=False)
    proc = subprocess.Popen([PYTHON, "-c", SWAP_THEN_HANG, str(target)], stdout=subprocess.PIPE, text=True, env=_env())
    assert proc.stdout.readline().strip() == "writing"
    proc.kill()
    proc.wait()
    assert file_digests(target, links=False) == before


def _analyze_new_tables(tmp_path: Path) -> dict[str, str]:
    ref = tmp_path / "new"
    proc = _run(["analyze", "--world-size", "1", KINETO, "--out", ref], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {k: v for k, v in file_digests(ref, links=False).items() if k.startswith("tables/")}


def test_sigkill_during_analyze_leaves_old_or_new_results_whole(tmp_path):
    """Killed at 12 moments from start-up to the end: each time the folder is the old results
    exactly, or the new ones whole (every new table, a readable metrics.json, verdicts carried)."""
    new_tables = _analyze_new_tables(tmp_path)
    results = _results(tmp_path / "r")
    old = file_digests(results, links=False)
    outcomes = set()
    for delay in [0.1 * i for i in range(12)]:
        if file_digests(results, links=False) != old:
            shutil.rmtree(results)
            _results(results)
        proc = subprocess.Popen(
            [*CLI, "analyze", "--world-size", "1", str(KINETO), "--out", str(results)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
        time.sleep(delay)
        proc.kill()
        proc.wait()
        now = file_digests(results, links=False)
        if now == old:
            outcomes.add("old")
            continue
        assert {k: v for k, v in now.items() if k.startswith("tables/")} == new_tables
        assert set(now) == set(new_tables) | {"metrics.json", "verdicts.json", "verdicts.txt"}
        assert now["verdicts.json"] == old["verdicts.json"]
        json.loads((results / "metrics.json").read_text())
        outcomes.add("new")
    assert "old" in outcomes  # a kill at 0.1 s always lands before the swap


def _wait_for_kernel(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the report's notebook kernel (a child carrying this test's marker) runs."""
    deadline = time.monotonic() + timeout
    value = os.environ[TEST_MARKER]
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        for pid in marked_processes(value):
            try:
                if b"ipykernel_launcher" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return
            except OSError:
                pass
        time.sleep(0.05)
    raise AssertionError("the report's kernel did not start")


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_report_exits_128_plus_the_signal_and_leaves_the_last_report(tmp_path, sig, code):
    results = _results(tmp_path / "r")
    out = tmp_path / "report"
    first = _run(["report", results, "--out", out], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    before, inputs = file_digests(out, links=False), file_digests(results, links=False)
    proc = subprocess.Popen(
        [*CLI, "report", str(results), "--out", str(out)], stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env()
    )
    _wait_for_kernel(proc)
    time.sleep(0.3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-3000:]
    assert err.strip() == f"dnabert-scaling report: interrupted by {sig.name}", err[-3000:]
    assert (
        file_digests(out, links=False) == before and file_digests(results, links=False) == inputs
    )  # no temporary, no failed notebook
    deadline = time.monotonic() + 10
    while marked_processes(os.environ[TEST_MARKER]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not marked_processes(os.environ[TEST_MARKER]), "the kernel outlived the report"


@pytest.mark.slow
def test_sigkill_during_report_leaves_the_last_report_whole(tmp_path):
    results = _results(tmp_path / "r")
    out = tmp_path / "report"
    assert _run(["report", results, "--out", out], cwd=tmp_path).returncode == 0
    before, inputs = file_digests(out, links=False), file_digests(results, links=False)
    scratch = tmp_path / "tmp"  # a killed process cannot remove its scratch folder: keep it out of the machine's /tmp
    scratch.mkdir()
    proc = subprocess.Popen(
        [*CLI, "report", str(results), "--out", str(out)],
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env={**_env(), "TMPDIR": str(scratch)},
    )
    _wait_for_kernel(proc)
    time.sleep(0.5)
    proc.kill()
    proc.wait()
    assert file_digests(out, links=False) == before and file_digests(results, links=False) == inputs


@pytest.mark.skipif(not can_mount_read_only(), reason="needs unshare -m and mount (root or user namespaces)")
def test_a_full_disk_leaves_the_old_results_and_no_temporary(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    script = f"""
set -u
mount -t tmpfs -o size=2m tmpfs {mnt} || exit 99
{sys.executable} -m dnabert_scaling analyze --world-size 1 {KINETO} --out {mnt}/r >/dev/null 2>&1 || exit 98
cd {mnt} && find . -type f | sort | xargs sha256sum > /tmp/.before-$$
head -c 3000000 /dev/zero > {mnt}/fill 2>/dev/null
{sys.executable} -m dnabert_scaling analyze --world-size 1 {KINETO} --out {mnt}/r >/dev/null 2>{mnt}/../err
echo "rc=$?"
rm {mnt}/fill
find . -type f | sort | xargs sha256sum | diff /tmp/.before-$$ - && echo same
rm /tmp/.before-$$
ls -A {mnt}
"""
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300, env=_env())
    err = (tmp_path / "err").read_text()
    assert "rc=2" in proc.stdout and "same" in proc.stdout, (proc.stdout, proc.stderr, err)
    assert proc.stdout.split("same", 1)[1].split() == ["r"], proc.stdout  # no .r.new-* left
    assert "No space left on device" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("target", ["traces.def", "traces/0.evt", "traces/0.def"])
def test_an_otf2_anchor_stands_for_its_whole_archive(tmp_path, target):
    """Given as its anchor file, an archive's definitions and event files are inputs too: summarize
    --json over traces.def replaced it and left the archive unreadable."""
    archive = tmp_path / "x"
    shutil.copytree(DATA / "traces" / "scorep-cuda-2rank", archive)
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in archive.rglob("*") if p.is_file()}
    with pytest.raises(ArtifactError, match="traces.otf2"):
        refuse_overlap([("--json", archive / target)], [archive / "traces.otf2"])
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "summarize", str(archive / "traces.otf2"), "--json", str(archive / target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "write the output elsewhere" in proc.stderr, proc.stderr
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in archive.rglob("*") if p.is_file()} == before


def test_summarize_replaces_only_its_own_summary_unless_forced(tmp_path):
    """A tester's loss: summarize --json replaced any existing file (a user's notes, a trace not named as an input).
    As predict does, it replaces only a summary it wrote; anything else needs --force."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    trace_copy = tmp_path / "other.json.gz"
    trace_copy.write_bytes(KINETO.read_bytes())
    for target, why in ((notes, "not a JSON file"), (trace_copy, "not a JSON file")):
        before = target.read_bytes()
        assert_refused(
            _run(["summarize", KINETO, "--json", target], ROOT),
            f"--json: exists and is not a summary written by summarize ({why}); not overwritten",
            "--force to replace it",
        )
        assert target.read_bytes() == before
    summary = tmp_path / "summary.json"
    assert _run(["summarize", KINETO, "--json", summary], ROOT).returncode == 0
    assert _run(["summarize", KINETO, "--json", summary], ROOT).returncode == 0  # its own: replaced
    assert _run(["summarize", KINETO, "--json", notes, "--force"], ROOT).returncode == 0
    assert json.loads(notes.read_text())["ranks"]


def test_a_huge_world_size_is_refused_without_building_its_ranks(tmp_path):
    """--world-size 10**20 built the set 0..N-1 and was killed for memory; the missing ranks are named from the
    first ten and counted."""
    proc = _run(["summarize", KINETO, "--world-size", str(10**20)], ROOT, timeout=120)
    assert_refused(proc, "rank(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 99,999,999,999,999,999,989 more of world size")
