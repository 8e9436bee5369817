"""Score-P preflight: does Score-P record complete traces on this machine?

``--tracer auto`` (train and sweep) uses Score-P only when a preflight on this machine shows
complete traces: a few real training steps under Score-P (the same ``train`` command, single
process, on a synthetic task), read back and measured with the completeness gate
(:func:`dnabert_scaling.analysis.completeness.trace_completeness`). Score-P 8.4 on CUDA 13 without
the stream-order patch records a few percent of the kernels (containers/scorep-patches/); such a
Score-P is then not used, and the fallback to torch.profiler carries the preflight's figures.

The result is kept as JSON, so that the ranks of a run and the runs of a sweep share one
preflight: at ``$DNABERT_SCALING_SCOREP_PREFLIGHT`` when set (the sweep sets it to
``<out>/scorep-preflight.json``), else in the cache folder under a name made of the host and the
Score-P installation (its path and the modification time of its CUDA adapter), so that a rebuilt
Score-P is checked again. Concurrent callers (the ranks of one node) take a file lock; one runs the
preflight, the others read its result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import ANCHOR, RunLayout

ENV_RESULT = "DNABERT_SCALING_SCOREP_PREFLIGHT"
SCHEMA = "dnabert-scaling/scorep-preflight/1"
STEPS, WARMUP, BATCH = 3, 2, 8
# the distributed launcher's variables: the preflight is one process of its own
_DIST_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
)


def _installation_key() -> str:
    config = shutil.which("scorep-config") or ""
    prefix = Path(config).resolve().parent.parent if config else Path("/")
    stamp = ""
    for lib in sorted((prefix / "lib").glob("libscorep_adapter_cuda_mgmt.so*")):
        stamp += f"{lib.name}:{lib.stat().st_mtime_ns};"
    return hashlib.sha256(f"{socket.gethostname()}|{prefix}|{stamp}".encode()).hexdigest()[:16]


def result_path() -> Path:
    """Where this machine's preflight result lives (see the module docstring)."""
    explicit = os.environ.get(ENV_RESULT)
    if explicit:
        return Path(explicit)
    cache = os.environ.get("DNABERT_SCALING_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dnabert-scaling"
    )
    return Path(cache) / f"scorep-preflight-{_installation_key()}.json"


def _preflight_command(workdir: Path, model: str) -> tuple[list[str], dict[str, str]]:
    argv = [
        sys.executable,
        "-m",
        "dnabert_scaling",
        "train",
        "--tracer",
        "scorep",
        "--model",
        model,
        "--synthetic",
        "--batch-size",
        str(BATCH),
        "--steps",
        str(STEPS),
        "--warmup-steps",
        str(WARMUP),
        "--no-progress",
        "--out",
        str(workdir / "run"),
    ]
    env = {k: v for k, v in os.environ.items() if k not in _DIST_VARS and k != ENV_RESULT}
    return argv, env


def run_preflight(workdir: Path, model: str = "base", timeout: float = 900.0) -> dict[str, Any]:
    """Run the preflight in ``workdir`` and measure it; the result document (never raises for a
    Score-P that runs but loses records: that is ``status: incomplete``)."""
    from dnabert_scaling.analysis.completeness import trace_completeness
    from dnabert_scaling.traces.otf2_reader import read_otf2

    argv, env = _preflight_command(workdir, model)
    started = time.time()
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "host": socket.gethostname(),
        "scorep": shutil.which("scorep-config"),
        "command": argv,
        "steps": STEPS,
        "model": model,
        "batch_size": BATCH,
    }
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        result.update(status="failed", reason=f"the Score-P preflight run did not finish in {timeout:.0f} s")
        return result
    result["seconds"] = round(time.time() - started, 1)
    log = (proc.stdout or "") + (proc.stderr or "")
    result["log_tail"] = log[-2000:]
    if proc.returncode != 0:
        result.update(
            status="failed",
            reason=f"the Score-P preflight run failed (exit status {proc.returncode}): "
            f"{log.strip().splitlines()[-1] if log.strip() else 'no output'}",
        )
        return result
    anchor = RunLayout(workdir / "run").scorep_dir(0) / ANCHOR
    try:
        trace = read_otf2(anchor)
        c = trace_completeness(kernels_only(trace))
        every = trace_completeness(trace)
    except ArtifactError as exc:
        result.update(status="failed", reason=f"the preflight trace cannot be measured: {exc}")
        return result
    result.update(
        status=c["status"],
        launches=c["launches"],
        activities=c["activities"],
        ratio=c["ratio"],
        steps_below_bound=c["steps_below_bound"],
        bound=c["bound"],
        reason=c["reason"],
        steps_measured=sum(int(r.get("steps") or 0) for r in c["per_rank"].values()),
        all_kinds={k: every[k] for k in ("status", "launches", "activities", "ratio", "reason")},
    )
    return result


def kernels_only(trace):
    """The trace with only its kernel launches and kernels (the phase regions kept): what the
    preflight judges. Score-P 8.4 writes no device-to-device copies at all (its CUPTI memcpy writer
    returns early for them), so counting the copy calls would fail every Score-P 8.4 trace that has
    all of its kernels; the copy figures are kept beside (``all_kinds``)."""
    from dnabert_scaling.traces.classify import launched_kind
    from dnabert_scaling.traces.model import Trace

    host = trace.host
    is_launch = (host["kind"] == "launch").to_numpy()
    kernel_call = host["name"].astype(str).map(lambda n: launched_kind(n) == "kernel").to_numpy()
    return Trace(trace.gpu[trace.gpu["kind"].astype(str) == "kernel"], host[~is_launch | kernel_call], trace.ranks)


def preflight(model: str = "base") -> dict[str, Any]:
    """This machine's preflight result: read when kept, else run (under a file lock) and kept."""
    import fcntl

    path = result_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactError(f"cannot create the folder for the Score-P preflight result ({exc.strerror})", path.parent) from None
    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            try:
                kept = json.loads(path.read_text())
                if kept.get("schema") == SCHEMA and kept.get("status"):
                    kept["kept_at"] = str(path)
                    return kept
            except (OSError, ValueError):
                pass  # unreadable: run again and overwrite
        print(f"Score-P preflight: {STEPS} steps under Score-P to check its traces are complete ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="scorep-preflight-") as tmp:
            result = run_preflight(Path(tmp), model)
        path.write_text(json.dumps(result, indent=2) + "\n")
        result["kept_at"] = str(path)
        return result


def describe(result: dict[str, Any]) -> str:
    """One sentence with the preflight's figures, for the fallback and the logs."""
    if result.get("ratio") is not None:
        text = (
            f"Score-P recorded {100 * result['ratio']:.1f}% of the launched kernels in the preflight "
            f"({result.get('activities', 0):,} GPU activities for {result.get('launches', 0):,} launches, "
            f"{result.get('steps_below_bound', 0)} of {result.get('steps_measured', result.get('steps'))} steps below "
            f"{100 * result.get('bound', 0.999):g}%)"
        )
    else:
        text = f"Score-P preflight {result.get('status')}: {result.get('reason')}"
    if result.get("kept_at"):
        text += f"; preflight result {result['kept_at']}"
    return text
