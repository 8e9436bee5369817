"""Wall-clock time of the reviewer's commands, with the machine and the date: the figures the documents quote.

``kick-tires`` runs ``scripts/reproduce.py --kick-tires`` N times (default 3), each into a fresh
temporary folder, and records the median and the range; every run must end with status 0 and say
"identical" for every shipped set, else the figures are not written (a timing of a broken run is
no timing). ``reproduce`` times ``make reproduce``'s body (``scripts/reproduce.py --out``, default
3 runs, each into a fresh folder): on a machine without GPU or SLURM, the embedded default; each run
must end with status 0 and write its SUMMARY.txt. ``setup`` times ``make venv`` in a fresh clone
of this checkout with pip's cache off (default once; it downloads the lock's packages, so the
figure is the network's as much as the machine's). ``make-test`` times ``make test`` (default once). Each writes a JSON file (by default
``docs/timings/<name>.json``) that ``python -m dnabert_scaling.tools docs`` turns into the sentences
of README.md and ARTIFACT.md; the machine is described in it (cores, memory, CPU model, load
average before and after) and ``--note`` says what else ran on it.

    python scripts/bench_timing.py kick-tires [--repeats 3] [--note "..."]
    python scripts/bench_timing.py reproduce [--repeats 3] [--note "..."]
    python scripts/bench_timing.py setup [--repeats 1] [--note "..."]
    python scripts/bench_timing.py make-test [--repeats 1] [--note "..."]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = ROOT / "docs" / "timings"
SCHEMA = "dnabert-scaling/timing/1"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine() -> dict:
    return {
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "cpu_model": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def kick_tires_once(workdir: Path) -> tuple[float, str | None]:
    """One kick-tires run: (seconds, None) or (seconds, why it does not count)."""
    out = workdir / "kt"
    cmd = [sys.executable, str(ROOT / "scripts" / "reproduce.py"), "--kick-tires", "--out", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        return seconds, f"exit status {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    summary = (out / "SUMMARY.txt").read_text() if (out / "SUMMARY.txt").is_file() else ""
    # the comparison lines: "reference-<set>: identical to the shipped ..." or "reference-<set>: N difference(s) ..."
    compared = [line for line in summary.splitlines() if re.match(r"reference-\S+: ", line)]
    differing = [line for line in compared if "identical to the shipped" not in line]
    if not compared or differing:
        return seconds, "the re-derived results differ from expected/reference-results/: " + "; ".join(
            differing or ["none compared"]
        )
    return seconds, None


def reproduce_once(workdir: Path) -> tuple[float, str | None]:
    """One ``make reproduce`` (its body, the virtual environment already made): (seconds, None) or why it does not count."""
    out = workdir / "rp"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "reproduce.py"), "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        return seconds, f"exit status {proc.returncode}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    if not (out / "SUMMARY.txt").is_file():
        return seconds, f"no SUMMARY.txt in {out}"
    return seconds, None


def setup_once(workdir: Path) -> tuple[float, str | None]:
    """``make venv`` in a fresh clone (pip's cache off): (seconds, None) or why it does not count."""
    clone = workdir / "clone"
    proc = subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], capture_output=True, text=True)
    if proc.returncode != 0:
        return 0.0, f"git clone ended with status {proc.returncode}: {proc.stderr[-2000:]}"
    env = dict(os.environ, PIP_NO_CACHE_DIR="1")
    t0 = time.perf_counter()
    proc = subprocess.run(["make", "venv"], cwd=clone, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    (workdir / "make-venv.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return seconds, f"make venv ended with status {proc.returncode}: {(proc.stdout + proc.stderr)[-2000:]}"
    return seconds, None


def make_test_once(workdir: Path) -> tuple[float, str | None]:
    t0 = time.perf_counter()
    proc = subprocess.run(["make", "test"], cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    (workdir / "make-test.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        return seconds, f"make test ended with status {proc.returncode}: {proc.stdout[-2000:]}"
    return seconds, None


COMMANDS = {
    "kick-tires": ("make kick-tires (scripts/reproduce.py --kick-tires)", kick_tires_once, 3),
    "reproduce": ("make reproduce (scripts/reproduce.py --out)", reproduce_once, 3),
    "setup": ("make venv in a fresh clone, pip's cache off", setup_once, 1),
    "make-test": ("make test", make_test_once, 1),
}


def measure(name: str, repeats: int, note: str) -> tuple[dict, list[str]]:
    command, once, _ = COMMANDS[name]
    started = dt.datetime.now(dt.timezone.utc)
    load_before = load_average()
    seconds: list[float] = []
    problems: list[str] = []
    for i in range(repeats):
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
            took, problem = once(Path(tmp))
        print(f"{name} run {i + 1}/{repeats}: {took:.1f} s" + (f" (does not count: {problem})" if problem else ""), flush=True)
        if problem:
            problems.append(problem)
        else:
            seconds.append(round(took, 1))
    record = {
        "schema": SCHEMA,
        "name": name,
        "command": command,
        "measured": bool(seconds) and not problems,
        "date": started.date().isoformat(),
        "started": started.isoformat(timespec="seconds"),
        "repeats": len(seconds),
        "seconds": seconds,
        "median_s": round(statistics.median(seconds), 1) if seconds else None,
        "min_s": min(seconds) if seconds else None,
        "max_s": max(seconds) if seconds else None,
        "machine": machine(),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "git_revision": git_revision(),
        "note": note,
    }
    return record, problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=sorted(COMMANDS), help="the command to time")
    ap.add_argument(
        "--repeats", type=int, default=None, help="runs (default: 3 for kick-tires and reproduce, 1 for setup and make-test)"
    )
    ap.add_argument("--json", type=Path, default=None, help="where to write the figures (default docs/timings/<what>.json)")
    ap.add_argument("--note", default="", help="what else ran on the machine, in words (written into the JSON)")
    args = ap.parse_args(argv)
    repeats = COMMANDS[args.what][2] if args.repeats is None else args.repeats
    if repeats < 1:
        print(f"bench_timing: --repeats must be at least 1, not {repeats}", file=sys.stderr)
        return 2
    target = args.json or TIMINGS / f"{args.what}.json"
    if target.exists() and not target.is_file():
        print(f"bench_timing: {target} exists and is not a file", file=sys.stderr)
        return 2
    record, problems = measure(args.what, repeats, args.note)
    if problems:
        print(f"bench_timing: {len(problems)} run(s) did not count, {target} left as it was:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=2) + "\n")
    m = record["machine"]
    print(
        f"{args.what}: median {record['median_s']} s, range {record['min_s']}-{record['max_s']} s over {record['repeats']} run(s); "
        f"{m['cores']} cores, {m['memory_gib']} GiB, {m['cpu_model']}; {record['date']}; load average before "
        f"{record['load_average_before']}, after {record['load_average_after']}"
    )
    print(f"written: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
