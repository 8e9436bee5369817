"""An input path that holds something other than the file it should be is named as what it is.

A folder where a claims file belongs, a table where a results folder belongs, a folder or a symbolic
link loop where a trace file belongs: each refused with exit status 2, the path and what is there
(``errors.path_kind``, asked by every reader before it opens a file), never as a message about
something else (an output inside an input, damaged gzip data). Real processes on the shipped data.
"""

import shutil
import subprocess

import pytest

from cliprocess import assert_refused, file_digests
from conftest import PYTHON, ROOT

CLI = [PYTHON, "-m", "dnabert_scaling"]
RESULTS = ROOT / "expected" / "reference-results" / "h200-b8"
SWEEP = ROOT / "expected" / "reference" / "h200-b8"
LOOP = "is a symbolic link loop"


def _run(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=ROOT)


@pytest.fixture
def results(tmp_path):
    shutil.copytree(RESULTS, tmp_path / "results")
    return tmp_path / "results"


def test_a_claims_path_that_is_a_folder_is_named_as_one(tmp_path, results):
    """``--expected`` naming a folder: said so, not that the output "lies inside the input" folder."""
    before = file_digests(results)
    for args in (
        ["check", results, "--expected", tmp_path, "--quiet"],
        ["analyze", SWEEP, "--expected", tmp_path, "--out", tmp_path / "new"],
        ["report", results, "--expected", tmp_path, "--out", tmp_path / "report"],
    ):
        assert_refused(
            _run(*args), f"{tmp_path}: is a folder, not a regular file: not read as a claims file", absent=["lies inside"]
        )
    assert file_digests(results) == before and not (tmp_path / "new").exists() and not (tmp_path / "report").exists()


def test_a_table_given_for_a_results_folder_is_named_as_no_results(results):
    table = results / "tables" / "throughput.csv"
    before = file_digests(results)
    for command in ("check", "report"):
        args = [command, table] + (["--out", results.parent / "report"] if command == "report" else [])
        assert_refused(
            _run(*args), f"{table}: is a regular file, not a results folder or its metrics.json", absent=["not a folder"]
        )
    assert file_digests(results) == before


def _sweep_with(tmp_path, make):
    """A copy of the h200-b8 sweep whose traced run's rank0.json.gz is replaced by ``make(path)``."""
    sweep = tmp_path / "sweep"
    shutil.copytree(SWEEP, sweep)
    trace = sweep / "ws1-torch-r0" / "traces" / "rank0.json.gz"
    trace.unlink()
    make(trace)
    return sweep, trace


def test_a_trace_that_is_a_folder_is_named_as_one(tmp_path):
    sweep, trace = _sweep_with(tmp_path, lambda p: p.mkdir())
    assert_refused(_run("analyze", sweep, "--out", tmp_path / "r"), f"{trace}: is a folder, not a regular file", absent=["FIFO"])
    assert_refused(_run("summarize", trace), f"{trace}: is a folder, not a regular file", absent=["FIFO"])
    assert not (tmp_path / "r").exists()


def test_a_trace_that_is_a_symlink_loop_is_named_as_one(tmp_path):
    """A link to itself, in a run folder and given on its own (where the output check's path
    resolution used to end in a RuntimeError traceback): a loop, not corrupt gzip data."""
    sweep, trace = _sweep_with(tmp_path, lambda p: p.symlink_to(p.name))
    for args in (
        ["analyze", sweep, "--out", tmp_path / "r"],
        ["analyze", "--world-size", "1", trace, "--out", tmp_path / "r"],
        ["summarize", trace],
    ):
        assert_refused(_run(*args), f"{trace}: {LOOP}", absent=["gzip", "Errno"])
    assert not (tmp_path / "r").exists()


def test_a_claims_file_that_is_a_symlink_loop_is_named_as_one(tmp_path, results):
    loop = tmp_path / "claims.toml"
    loop.symlink_to(loop.name)
    assert_refused(_run("check", results, "--expected", loop, "--quiet"), f"{loop}: {LOOP}")
