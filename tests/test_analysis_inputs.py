"""Several sweep folders analysed together, with the shipped reference sweeps and real processes.

Two sweeps name their runs alike (``ws1-none-r0``): where the runs come from several folders,
every name in metrics.json, the tables and the messages carries the sweep folder. The analysis
reads one traced run per world size; two (one per sweep) are refused naming both, never one
dropped in silence.
"""

import json

from cliprocess import assert_refused, cli_process
from conftest import ROOT

REF = ROOT / "expected" / "reference"


def _analyze(*args):
    return cli_process(["analyze", *args])


def test_two_traced_runs_of_one_world_size_are_refused_naming_both(tmp_path):
    """h200-scorep-b8 and h200-scorep-b8-torch each hold a traced world-size-1 run: the analysis would
    read one and drop the other, so it is refused, naming both with their sweep folders."""
    out = tmp_path / "results"
    proc = _analyze(REF / "h200-scorep-b8", REF / "h200-scorep-b8-torch", "--out", out)
    assert_refused(proc, "world size 1 has 2 traced runs", "h200-scorep-b8/ws1-scorep-r0", "h200-scorep-b8-torch/ws1-torch-r0")
    assert not out.exists()


def test_runs_of_several_sweeps_are_named_with_their_sweep_folder(tmp_path):
    """The untraced runs of two sweeps both count, and metrics.json and the throughput table tell them
    apart: each name carries its sweep folder, where it used to be ``ws1-none-r0`` twice."""
    out = tmp_path / "results"
    proc = _analyze(REF / "h200-scorep-b8", REF / "h200-scorep-b8-torch" / "ws1-none-r0", "--out", out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = json.loads((out / "metrics.json").read_text())
    one = metrics["world_sizes"]["1"]
    assert one["throughput"]["runs"] == ["h200-scorep-b8/ws1-none-r0", "h200-scorep-b8-torch/ws1-none-r0"]
    assert one["traced"]["run"] == "h200-scorep-b8/ws1-scorep-r0"
    assert metrics["provenance"]["from_run"] == "h200-scorep-b8/ws1-none-r0"
    table = (out / "tables" / "throughput.csv").read_text()
    assert "h200-scorep-b8-torch/ws1-none-r0," in table and "h200-scorep-b8/ws1-none-r0," in table


def test_one_sweep_keeps_its_run_names(tmp_path):
    out = tmp_path / "results"
    assert _analyze(REF / "h200-scorep-b8", "--out", out).returncode == 0
    one = json.loads((out / "metrics.json").read_text())["world_sizes"]["1"]
    assert one["throughput"]["runs"] == ["ws1-none-r0"] and one["traced"]["run"] == "ws1-scorep-r0"


def test_mixed_configurations_name_the_sweep_folders(tmp_path):
    """h200-b8 and h200-b32 differ in batch size; both hold ws1-none-r0 and so on: the refusal names
    each run with its sweep folder, so the two lists can be told apart."""
    proc = _analyze(REF / "h200-b8", REF / "h200-b32", "--out", tmp_path / "results")
    assert_refused(proc, "batch_size_per_rank is 8 in h200-b8/ws1-none-r0", "32 in h200-b32/ws1-none-r0")
    assert "...." not in proc.stderr
