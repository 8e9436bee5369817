"""scripts/clock_cost.c, the probe of what one clock reading costs (run on the GPU machine beside the
benchmark): it builds, prints one JSON object with a positive cost per reading, and refuses a bad
argument with exit status 2."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess

import pytest

from conftest import ROOT

SOURCE = ROOT / "scripts" / "clock_cost.c"


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("clock") / "clock_cost"
    subprocess.run([cc, "-O2", "-Wall", "-Werror", "-o", str(exe), str(SOURCE)], check=True, timeout=120)
    return exe


def test_the_probe_prints_each_readings_cost_and_the_clocksource(probe):
    proc = subprocess.run([str(probe), "20000"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    costs = out["ns_per_reading"]
    expected = {
        "clock_gettime(CLOCK_MONOTONIC)",
        "clock_gettime(CLOCK_MONOTONIC_RAW)",
        "clock_gettime(CLOCK_REALTIME)",
        "syscall clock_gettime(CLOCK_MONOTONIC)",
        "syscall clock_gettime(CLOCK_MONOTONIC_RAW)",
    } | ({"rdtsc"} if platform.machine() == "x86_64" else set())
    assert set(costs) == expected
    assert all(0 < v < 1e6 for v in costs.values())
    assert out["calls_per_batch"] == 20000 and out["batches"] == 9
    assert out["clocksource"] is None or out["clocksource"].strip() == out["clocksource"] != ""


@pytest.mark.parametrize("bad", ["x", "0", "-5", "5x", ""])
def test_the_probe_refuses_a_bad_count(probe, bad):
    proc = subprocess.run([str(probe), bad], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "" and "positive integer" in proc.stderr
