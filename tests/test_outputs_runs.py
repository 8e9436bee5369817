"""No command but the three that write runs (``sweep``, ``train``, ``busbw``) writes into a sweep's folder
or a run folder: every output option goes through ``outputs.refuse_protected``, which refuses a path that
is or lies inside one (exit 2, one line naming the option, the path and the folder), as it refuses one
inside the shipped evidence; nothing is written."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from dnabert_scaling.cli import main as cli_main
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.outputs import refuse_foreign, writable_dir, writable_file
from reportfixtures import gpu_results

KINETO = DATA / "traces" / "kineto-h200-1gpu-dnabert2" / "rank0.json.gz"
PACKAGE = ROOT / "artifact" / "dnabert_scaling"
CLAIMS = ROOT / "expected" / "claims.toml"


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()} | {
        str(p.relative_to(folder)) + "/": "" for p in folder.rglob("*") if p.is_dir()
    }


@pytest.fixture
def places(tmp_path) -> dict[str, Path]:
    """A sweep folder as ``sweep`` writes it (sweep.json), one as scripts/slurm/sweep.sh writes it (its job
    folders slurm/ws<N>/, no sweep.json), and a run folder of ``train`` outside any sweep; the results a
    command reads."""
    recorded = tmp_path / "sweep"
    (recorded / "ws1-none-r0").mkdir(parents=True)
    (recorded / "sweep.json").write_text(json.dumps({"schema": "dnabert-scaling/sweep/1", "runs": ["ws1-none-r0"]}))
    slurm = tmp_path / "slurm-sweep"
    (slurm / "ws4-scorep-r0" / "rank0").mkdir(parents=True)
    (slurm / "slurm" / "ws4").mkdir(parents=True)
    (slurm / "slurm" / "ws4" / "world_size").write_text("4\n")
    run = tmp_path / "run"
    (run / "rank0").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"args": {"model": "tiny"}, "rank_info": {"world_size": 1}}))
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "metrics.json").write_text(json.dumps(gpu_results((1, 4))[0]))
    return {"sweep": recorded, "sweep.sh's sweep": slurm, "run": run, "results": tmp_path / "results"}


def _commands(out: Path, results: Path) -> dict[str, list[str]]:
    """Each writing command (but the three that write runs) with ``out`` as its output."""
    return {
        "report": ["report", str(results), "--expected", str(CLAIMS), "--out", str(out)],
        "check": ["check", str(results), "--expected", str(CLAIMS), "--out", str(out)],
        "synth-data": ["synth-data", "--out", str(out)],
        "analyze": ["analyze", "--world-size", "1", str(KINETO), "--out", str(out)],
        "convert": ["convert", str(KINETO), "--out", str(out)],
        "predict": ["predict", str(KINETO), "--out", str(out / "predictions.json")],
        "summarize": ["summarize", str(KINETO), "--json", str(out / "summary.json")],
    }


@pytest.mark.parametrize("command", list(_commands(Path("o"), Path("r"))))
@pytest.mark.parametrize("place", ["sweep", "sweep.sh's sweep", "run"])
@pytest.mark.parametrize("inside", [False, True])
def test_no_command_writes_into_a_sweep_or_a_run(tmp_path, places, capsys, command, place, inside):
    folder = places[place]
    out = folder / "mine" if inside else folder
    before = _tree(tmp_path)
    assert cli_main(_commands(out, places["results"])[command]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    kind = "a run folder" if place == "run" else "a sweep's folder"
    assert f"is or lies inside {kind}" in err and str(folder) in err and "write elsewhere" in err, err
    assert _tree(tmp_path) == before


def test_beside_a_sweep_is_no_sweep(tmp_path, places, capsys):
    """A folder next to a sweep, or one above it holding it, is an ordinary output; so is a folder holding
    run folders without a sweep's record (results are written beside the runs they come from)."""
    assert cli_main(["check", str(places["results"]), "--expected", str(CLAIMS), "--out", str(tmp_path / "v")]) in (0, 1)
    assert (tmp_path / "v" / "verdicts.json").is_file()
    assert cli_main(["synth-data", "--out", str(tmp_path / "task")]) == 0
    (tmp_path / "ws1-none-r0").mkdir()
    (tmp_path / "slurm").mkdir()
    assert cli_main(["synth-data", "--out", str(tmp_path / "task2")]) == 0


def test_the_commands_that_write_runs_may(places):
    for place in ("sweep", "sweep.sh's sweep", "run"):
        with pytest.raises(ArtifactError, match="is or lies inside"):
            writable_dir(places[place] / "x", "--out")
        with pytest.raises(ArtifactError, match="is or lies inside"):
            refuse_foreign(places[place] / "x", "--out", lambda rel, is_dir: True)
        writable_dir(places[place], "--out", into_runs=True)
        writable_file(places[place] / "busbw-ws4.json", "--out", into_runs=True)


def test_only_sweep_train_and_busbw_write_into_runs():
    """The whole class: an output check that lets a command write into runs is one of the three's."""
    allowed = {"run/sweep/driver.py", "run/train/rank.py", "run/busbw.py"}
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "into_runs" and not isinstance(node.value, ast.Name):
                found.add(str(path.relative_to(PACKAGE)))
    assert found == allowed
