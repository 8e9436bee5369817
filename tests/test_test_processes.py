"""The conftest fixture that ends every process a test started: a test that fails on a timeout
while a detached process of its own (as torchrun's ranks are) is still running leaves nothing."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from conftest import PYTHON, ROOT

INNER_TEST = """
import os
import subprocess
import sys


def test_times_out_with_a_detached_process_running():
    # a grandchild in a session of its own, as torchrun's ranks are: outside the test's process group
    starter = (
        "import subprocess; q = subprocess.Popen(['sleep', '300'], start_new_session=True, "
        "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(q.pid)"
    )
    pid = subprocess.run([sys.executable, "-c", starter], capture_output=True, text=True, check=True).stdout.strip()
    with open(os.environ["PIDFILE"], "w") as f:
        f.write(pid)
    subprocess.run(["sleep", "300"], timeout=1)  # times out: the test fails here
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _run_inner(tmp_path: Path, conftest: str) -> int:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "conftest.py").write_text(conftest)
    (inner / "test_inner.py").write_text(INNER_TEST)
    pidfile = tmp_path / "pid"
    proc = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(inner)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PIDFILE": str(pidfile)},
    )
    assert proc.returncode == 1 and "TimeoutExpired" in proc.stdout, proc.stdout[-3000:]
    return int(pidfile.read_text())


def test_a_timed_out_test_leaves_no_process_running(tmp_path):
    pid = _run_inner(tmp_path, (ROOT / "tests" / "conftest.py").read_text())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:  # re-parented to init, which reaps it
        time.sleep(0.1)
    assert not _alive(pid)


def test_without_the_fixture_the_process_is_left(tmp_path):
    """The control: the same inner test without the fixture leaves its detached process running
    (so the test above can fail); this test ends it itself."""
    plain = "import sys\nsys.path.insert(0, %r)\n" % str(ROOT / "artifact")
    pid = _run_inner(tmp_path, plain)
    try:
        assert _alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)
    assert shutil.which("sleep")
