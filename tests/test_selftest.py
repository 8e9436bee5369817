"""The installation self-test (run by the container's %test) passes on this installation."""

import subprocess

from conftest import PYTHON, ROOT


def test_selftest_passes():
    proc = subprocess.run(
        [PYTHON, "-m", "dnabert_scaling", "selftest", "--skip-train"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "selftest model        ok" in proc.stdout and "0 failed" in proc.stdout
