"""scripts/slurm/sweep.sh writes only into a new or empty folder or a sweep's own: a non-empty --out holding
anything a sweep does not write (a foreign folder) is refused (exit 2, naming the folder and what is
foreign) before anything is written or submitted, by the rule ``dnabert-scaling sweep`` applies
(``run.folders.sweep_entry``), checked here name by name against it."""

from __future__ import annotations

import json

import pytest

from dnabert_scaling.run.folders import foreign_sweep_entries
from test_slurm_sweep_sh import fake_slurm, files_under, sweep  # noqa: F401 (fake_slurm: a fixture)

SIMPLE = ("--no-container", "--gpus-per-node", "8", "--world-sizes", "1,2")


@pytest.mark.parametrize("mode", ["", "--dry-run", "--test-only"])
def test_a_foreign_folder_is_refused_before_anything_is_written(tmp_path, fake_slurm, mode):  # noqa: F811
    env, log = fake_slurm
    out = tmp_path / "home"
    (out / "src").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    before = files_under(tmp_path)
    proc = sweep(*([mode] if mode else []), *SIMPLE, "--out", str(out), env=env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.strip().count("\n") == 0
    assert f"--out '{out}' holds files a sweep does not write (notes.txt, src)" in proc.stderr
    assert "give another --out, or move them away" in proc.stderr
    assert files_under(tmp_path) == before and not (out / "slurm").exists()
    assert log.read_text() == ""  # not even sbatch --test-only


def test_many_foreign_names_are_counted(tmp_path):
    out = tmp_path / "home"
    out.mkdir()
    for i in range(8):
        (out / f"f{i}").write_text("x")
    proc = sweep("--dry-run", *SIMPLE, "--out", str(out))
    assert proc.returncode == 2 and "(f0, f1, f2, f3, f4 and 3 more)" in proc.stderr, proc.stderr


def test_an_earlier_sweep_sh_sweep_and_a_sweep_s_folder_are_taken(tmp_path, fake_slurm):  # noqa: F811
    env, _ = fake_slurm
    out = tmp_path / "runs"
    assert sweep(*SIMPLE, "--out", str(out), env=env).returncode == 0
    (out / "ws1-none-r0" / "rank0").mkdir(parents=True)  # what the jobs write
    assert sweep(*SIMPLE, "--out", str(out), env=env).returncode == 0
    python_sweep = tmp_path / "sweep"
    for name in ("ws1-torch-r0", "ws2-none-r1-noddp", "ws2-none-r0.failed-20260101-120000", "synthetic-data"):
        (python_sweep / name).mkdir(parents=True)
    (python_sweep / "sweep.json").write_text(json.dumps({"schema": "dnabert-scaling/sweep/1"}))
    for name in ("busbw-ws2.json", "busbw-ws2.log", "scorep-preflight.json"):
        (python_sweep / name).write_text("{}")
    proc = sweep("--dry-run", *SIMPLE, "--out", str(python_sweep))
    assert proc.returncode == 0, proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert sweep("--dry-run", *SIMPLE, "--out", str(empty)).returncode == 0


# (name, is a folder, content of a file)
NAMES = [
    ("ws4-scorep-r0", True, None),
    ("ws4-scorep-r0", False, "x"),
    ("ws4-torchx-r0", True, None),
    ("ws1-none-r2-noddp", True, None),
    ("ws1-none-r2.failed-20260101-120000-2", True, None),
    ("ws1-none-r2.failed-2026", True, None),
    ("sweep.json", False, json.dumps({"schema": "dnabert-scaling/sweep/1"})),
    ("sweep.json", False, json.dumps({"method": "bayes"})),  # another tool's sweep.json
    ("sweep.json", True, None),
    ("slurm", True, None),
    ("slurm", False, "x"),
    ("synthetic-data", True, None),
    ("busbw-ws8.json", False, "{}"),
    ("busbw-ws8.log", False, "x"),
    ("busbw-ws8.txt", False, "x"),
    ("scorep-preflight.json", False, "{}"),
    ("scorep-preflight.json.lock", False, ""),
    (".write-test-abc", False, ""),
    (".sweep.json.x1.partial", False, ""),
    (".busbw-ws2.json.x1.partial", False, ""),
    (".hidden", False, "x"),
    ("results", True, None),
    ("report.html", False, "x"),
]


@pytest.mark.parametrize("name,is_dir,text", NAMES)
def test_sweep_sh_and_the_sweep_judge_a_name_alike(tmp_path, name, is_dir, text):
    out = tmp_path / "out"
    out.mkdir()
    if is_dir:
        (out / name).mkdir()
    else:
        (out / name).write_text(text)
    foreign = foreign_sweep_entries(out)
    proc = sweep("--dry-run", *SIMPLE, "--out", str(out))
    assert proc.returncode == (2 if foreign else 0), (foreign, proc.stderr)
    if foreign:
        assert f"holds files a sweep does not write ({name})" in proc.stderr


def test_a_link_in_the_folder_is_foreign(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "ws1-none-r0").symlink_to(tmp_path)
    assert foreign_sweep_entries(out) == ["ws1-none-r0"]
    proc = sweep("--dry-run", *SIMPLE, "--out", str(out))
    assert proc.returncode == 2 and "(ws1-none-r0)" in proc.stderr, proc.stderr


def test_a_file_named_like_a_run_is_foreign_to_the_sweep_too(tmp_path, capsys):
    """It ended ``dnabert-scaling sweep`` in an IndexError traceback (run.folders.sweep_entry)."""
    from dnabert_scaling.cli import main as cli_main

    out = tmp_path / "out"
    out.mkdir()
    (out / "ws1-none-r0").write_text("x")
    assert cli_main(["sweep", "--device", "cpu", "--gpus", "1", "--out", str(out), "--", "--model", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "holds files a sweep does not write (ws1-none-r0)" in err and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["ws1-none-r0"]


@pytest.mark.parametrize("tail", ["", "/", "/.", "//./"])
@pytest.mark.parametrize("target", ["empty", "missing"])
def test_a_link_as_out_is_refused_as_sweep_refuses_it(tmp_path, target, tail):
    """--out that is a symbolic link (to an empty folder, or dangling) is refused (exit 2) before anything is written:
    the runs would land where the command line does not name, as ``dnabert-scaling sweep`` refuses it (refuse_link).
    A trailing '/' or '/.' (once a way round: the shell's tests follow the link there) is read as pathlib reads it."""
    pointed = tmp_path / target
    if target == "empty":
        pointed.mkdir()
    link = tmp_path / "runs"
    link.symlink_to(pointed)
    before = files_under(tmp_path)
    proc = sweep("--dry-run", *SIMPLE, "--out", str(link) + tail)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.strip() == f"sweep.sh: error: --out '{link}' is a symbolic link; give the folder it points to"
    assert files_under(tmp_path) == before
    assert not pointed.exists() or not any(pointed.iterdir())


def test_a_file_given_as_a_folder_and_an_option_without_its_value_are_refused_up_front(tmp_path):
    """A tester's cases: a file as --out with a trailing '/' passed the checks until mkdir failed at submission;
    an option with no value, or an empty one, ended in a raw bash message with exit 1."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = sweep("--dry-run", *SIMPLE, "--out", f"{afile}/")
    assert proc.returncode == 2 and proc.stderr.strip() == f"sweep.sh: error: --out '{afile}' exists and is not a folder"
    for argv, said in (
        (["--dry-run", *SIMPLE, "--out"], "--out needs a value"),
        (["--dry-run", *SIMPLE, "--out", ""], "--out needs a value, not an empty one"),
        (["--dry-run", "--repeats", "", *SIMPLE, "--out", str(tmp_path / "o")], "--repeats needs a value, not an empty one"),
        (["--dry-run", "--repeats", "1001", *SIMPLE, "--out", str(tmp_path / "o")], "--repeats: '1001' is more than 1000 runs"),
    ):
        proc = sweep(*argv)
        assert proc.returncode == 2 and proc.stderr.strip().startswith(f"sweep.sh: error: {said}"), (argv, proc.stderr)
    assert files_under(tmp_path) == {"afile": b"x"}  # nothing written
