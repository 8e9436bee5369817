"""scripts/bench_trace.py on the CPU: the per-round ratios it reports, the child command lines, and
its refusal without a GPU (the measurement itself needs CUDA)."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

from conftest import PYTHON, ROOT


@pytest.fixture(scope="module")
def bt():
    spec = importlib.util.spec_from_file_location("bench_trace", ROOT / "scripts" / "bench_trace.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(rnd, mode, ms, micro=False, **figures):
    return {"round": rnd, "mode": mode, "micro": micro, "result": {"8x70": {"step_ms_median": ms}}, **figures}


def test_ratio_is_per_round_against_the_untraced_process(bt):
    runs = [
        _run(0, "untraced", 40.0),
        _run(0, "scorep-launch", 50.0, trace_bytes_per_step=1000.0, kernels_found_share=1.0),
        _run(1, "untraced", 50.0),
        _run(1, "scorep-launch", 55.0, micro=True, trace_bytes_per_step=1400.0, kernels_found_share=0.5),
        _run(2, "untraced", 45.0),
        _run(2, "scorep-launch", 63.0, trace_bytes_per_step=1200.0, kernels_found_share=0.99),
        _run(3, "scorep-launch", 10.0),  # no untraced process in this round: not a ratio
        {"round": 4, "mode": "scorep-launch", "micro": False, "exit_status": 1, "error": "boom"},  # failed
    ]
    rows = {r["mode"]: r for r in bt.summarise(runs, ["8x70"])}
    row = rows["scorep-launch"]
    assert row["rounds"] == 3
    assert row["ratio_median"] == pytest.approx(1.25) and row["ratio_min"] == pytest.approx(1.1)
    assert row["ratio_max"] == pytest.approx(1.4)
    # trace figures only from processes without the per-call loops; the kernel share is the worst one
    assert row["trace_bytes_per_step"] == pytest.approx(1100.0) and row["kernels_found_share"] == pytest.approx(0.99)
    assert rows["untraced"]["ratio_median"] == 1.0 and rows["untraced"]["trace_bytes_per_step"] is None


def test_child_command_lines(bt, tmp_path):
    args = bt.main.__globals__["argparse"].Namespace(model="base", configs="8x70", warmup=3, steps=12)
    plain = bt.child_argv("torch", args, tmp_path / "x.json", micro=False)
    assert "-m" not in plain and plain[plain.index("--child") + 1] == "torch"
    traced = bt.child_argv("scorep-launch", args, tmp_path / "x.json", micro=True)
    assert traced[1:4] == ["-m", "scorep", "--cuda"] and "--noinstrumenter" in traced and traced[-1] == "--micro"
    assert bt.MODES["scorep-launch"] == ("driver,kernel,memcpy,references", "launch")
    assert bt.MODES["scorep-nodriver"][0] == "kernel,memcpy"


def test_refuses_without_a_gpu():
    import torch

    if torch.cuda.is_available():  # pragma: no cover - a GPU machine
        pytest.skip("a GPU is present")
    proc = subprocess.run(
        [PYTHON, str(ROOT / "scripts" / "bench_trace.py"), "--rounds", "1"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr
