"""The installation self-test (run by the container's %test) passes on this installation."""

import subprocess

from conftest import PYTHON, ROOT


def test_selftest_passes():
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "selftest", "--skip-train"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "selftest model        ok" in proc.stdout and "0 failed" in proc.stdout
    # the machine's GPU and Score-P are said, never passed as a check: here there is no GPU
    environment = [line for line in proc.stdout.splitlines() if line.startswith("selftest environment")]
    assert len(environment) == 1 and environment[0].startswith("selftest environment  info  ")
    assert "2 passed, 0 failed" in proc.stdout  # tokenizer and model; the environment is not counted


def test_a_failing_check_fails_under_python_O():
    """The checks once were ``assert`` statements: under ``python -O`` (or PYTHONOPTIMIZE) every check passed. A wrong
    expectation (the model card's ids replaced) must fail there too."""
    code = (
        "import argparse, dnabert_scaling.selftest as s; s.MODEL_CARD_IDS = [0]; "
        "raise SystemExit(s.run(argparse.Namespace(skip_train=True)))"
    )
    proc = subprocess.run([PYTHON, "-O", "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1, (proc.stdout, proc.stderr[-2000:])
    assert "selftest tokenizer    FAIL  model card example tokenizes to" in proc.stdout and "1 failed" in proc.stdout
