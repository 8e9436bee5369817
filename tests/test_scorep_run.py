"""Score-P run support: the command and environment, detection, post-run checks.

Score-P cannot be installed on the machines that run these tests, so ``python -m scorep`` itself
is not run: the tests check the argv/environment we build against what the bindings expect,
run our module launcher for real, probe availability against stand-in executables on PATH, and
run the post-run checks on real Score-P experiment directories (the samples) and on archives in
the Score-P 9 layout.
"""

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import DATA
from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.run.tracing import scorep as sp
from tracegen import write_ground_truth

CASITA = DATA / "traces" / "scorep-cuda-2rank"
PINGPONG = DATA / "traces" / "scorep-mpi-pingpong"


@pytest.fixture
def clean_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("SCOREP_"):
            monkeypatch.delenv(k)
    return monkeypatch


@pytest.mark.parametrize(
    "value, size",
    [("64M", 64 << 20), ("4m", 4 << 20), ("8k", 8192), ("8 kB", 8192), ("1024", 1024), ("12B", 12), ("1g", 1 << 30),
     ("4MiB", None), ("4M B", None), ("x", None), ("", None), ("-4M", None)],
)  # fmt: skip
def test_score_p_sizes_are_read_as_score_p_reads_them(value, size):
    assert sp.scorep_size(value) == size


@pytest.mark.parametrize(
    "buffer, chunk, refused",
    [("4M", "4M", True), ("4194311", "4M", True), ("4194312", "4M", False), ("1M", "4M", True), ("64M", "4M", False),
     ("8k", "8k", True), ("64M", "8k", False), ("1k", "512", False), ("nonsense", "4M", False)],
)  # fmt: skip
def test_a_cupti_buffer_that_cannot_hold_one_chunk_is_refused(tmp_path, clean_env, buffer, chunk, refused):
    """Score-P 8.4 grants a chunk only while buffer >= chunks + 8 bytes: a buffer of at most one chunk records
    nothing. Refused by the environment (and by train before its run folder is claimed); a chunk below 1 KiB
    (Score-P takes 8 kB) or a value Score-P cannot read is left to Score-P."""
    clean_env.setenv("SCOREP_CUDA_BUFFER", buffer)
    clean_env.setenv("SCOREP_CUDA_BUFFER_CHUNK", chunk)
    if refused:
        with pytest.raises(ArtifactError, match=f"SCOREP_CUDA_BUFFER={buffer} cannot hold one SCOREP_CUDA_BUFFER_CHUNK={chunk}"):
            sp.scorep_environment(0, tmp_path / "run")
    else:
        assert sp.scorep_environment(0, tmp_path / "run")["SCOREP_CUDA_BUFFER"] == buffer


def test_the_trace_buffer_grows_with_a_long_run_up_to_what_score_p_takes(tmp_path, clean_env):
    """SCOREP_TOTAL_MEMORY: the default of its kind up to ~1,000 steps (~250 with every Python call), twice what
    the steps' records take beyond that, never more than Score-P 8.4 takes (under 4 GiB); a caller's value wins."""
    env_of = lambda **kw: sp.scorep_environment(0, tmp_path / "r", **kw)["SCOREP_TOTAL_MEMORY"]  # noqa: E731
    assert env_of() == env_of(steps=55) == env_of(steps=1024) == "256M"
    assert env_of(steps=55, python_instrumentation=True) == env_of(steps=256, python_instrumentation=True) == "2G"
    for steps, python in ((1025, False), (5005, False), (300, True)):
        value = sp.scorep_size(env_of(steps=steps, python_instrumentation=python))
        per_step = sp.TRACE_BYTES_PER_STEP_PYTHON if python else sp.TRACE_BYTES_PER_STEP
        assert 2 * steps * per_step <= value < 2 * steps * per_step + 2**20, (steps, python, value)
    assert env_of(steps=10**6) == env_of(steps=2000, python_instrumentation=True) == "4095M"  # Score-P's most
    clean_env.setenv("SCOREP_TOTAL_MEMORY", "1G")
    assert env_of(steps=10**6) == "1G"


def test_the_cupti_buffer_holds_every_record_of_a_long_run(tmp_path, clean_env):
    """Score-P drains CUPTI's buffer only at a context synchronisation or at the end: the artifact's default
    is 64M up to ~100 steps, and grows with the run beyond that; a value given by the caller wins."""
    assert sp.scorep_environment(0, tmp_path / "r", steps=55)["SCOREP_CUDA_BUFFER"] == "64M"
    assert sp.scorep_environment(0, tmp_path / "r")["SCOREP_CUDA_BUFFER"] == "64M"
    for steps in (120, 505, 5005):
        value = sp.scorep_environment(0, tmp_path / "r", steps=steps)["SCOREP_CUDA_BUFFER"]
        chunk = sp.scorep_size(sp.DEFAULT_CUDA_BUFFER_CHUNK)
        assert sp.scorep_size(value) >= steps * sp.RECORDS_PER_STEP * sp.RECORD_BYTES + 2 * chunk, (steps, value)
        assert sp.scorep_size(value) % chunk == 0
    clean_env.setenv("SCOREP_CUDA_BUFFER", "32M")
    assert sp.scorep_environment(0, tmp_path / "r", steps=5005)["SCOREP_CUDA_BUFFER"] == "32M"
    argv, env = sp.scorep_command("/venv/bin/python", ["dnabert_scaling", "train"], 0, tmp_path / "r", steps=5005)
    assert env["SCOREP_CUDA_BUFFER"] == "32M"
    clean_env.delenv("SCOREP_CUDA_BUFFER")
    argv, env = sp.scorep_command("/venv/bin/python", ["dnabert_scaling", "train"], 1, tmp_path / "r", steps=5005)
    assert sp.scorep_size(env["SCOREP_CUDA_BUFFER"]) > 2_500_000_000


def test_train_refuses_a_cupti_buffer_of_one_chunk_before_it_claims_its_folder(tmp_path, clean_env, capsys):
    from dnabert_scaling.cli import main

    clean_env.setenv("SCOREP_CUDA_BUFFER", "4M")
    out = tmp_path / "run"
    argv = ["train", "--model", "tiny", "--synthetic", "--steps", "2", "--tracer", "scorep", "--out", str(out)]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Score-P 8.4 would record no kernel and no copy" in err and "Traceback" not in err
    assert not out.exists()


def test_command_and_environment(tmp_path, clean_env):
    argv, env = sp.scorep_command("/venv/bin/python", ["dnabert_scaling", "train", "--steps", "50"], 3, tmp_path / "run")
    assert argv == [
        "/venv/bin/python",
        "-m",
        "scorep",
        "--cuda",
        "--mpp=none",
        "--thread=pthread",
        "--nocompiler",
        "--noinstrumenter",
        str(sp.LAUNCHER),
        "dnabert_scaling",
        "train",
        "--steps",
        "50",
    ]
    exp = (tmp_path / "run" / "traces" / "scorep-rank3").resolve()
    assert env["SCOREP_EXPERIMENT_DIRECTORY"] == str(exp)
    assert (tmp_path / "run" / "traces").is_dir() and not exp.exists()  # parent made, experiment dir left to Score-P
    assert env["SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY"] == "false"
    assert (env["SCOREP_ENABLE_TRACING"], env["SCOREP_ENABLE_PROFILING"]) == ("true", "false")
    assert env["SCOREP_CUDA_ENABLE"] == "driver,kernel,memcpy,references"
    assert (env["SCOREP_TOTAL_MEMORY"], env["SCOREP_CUDA_BUFFER"], env["SCOREP_TIMER"]) == ("256M", "64M", "clock_gettime")
    assert env["SCOREP_CUDA_BUFFER_CHUNK"] == "4M"  # CUPTI's buffers in 4 MB chunks, not Score-P's 8 kB
    assert "SCOREP_FILTERING_FILE" not in env
    assert env["PATH"] == os.environ["PATH"]  # the complete environment, ready for subprocess
    assert sp.LAUNCHER.is_file()


def test_precedence_and_python_instrumentation(tmp_path, clean_env):
    clean_env.setenv("SCOREP_CUDA_ENABLE", "kernel,memcpy")
    clean_env.setenv("SCOREP_TOTAL_MEMORY", "3G")
    clean_env.setenv("SCOREP_CUDA_BUFFER_CHUNK", "8k")  # Score-P's own chunk, when a user asks for it
    argv, env = sp.scorep_command(
        "python",
        ["-m", "dnabert_scaling", "train"],
        0,
        tmp_path,
        python_instrumentation=True,
        cuda_buffer="128M",
        extra_env={"NCCL_DEBUG": "WARN", "SCOREP_VERBOSE": "true"},
    )
    assert "--noinstrumenter" not in argv and argv[-3:] == [str(sp.LAUNCHER), "dnabert_scaling", "train"]
    assert env["SCOREP_CUDA_ENABLE"] == "kernel,memcpy"  # the user's own setting is kept
    assert env["SCOREP_TOTAL_MEMORY"] == "3G"
    assert env["SCOREP_CUDA_BUFFER"] == "128M"  # an argument wins
    assert env["SCOREP_CUDA_BUFFER_CHUNK"] == "8k"
    assert env["SCOREP_FILTERING_FILE"] == str(sp.PYTHON_FILTER)
    assert env["NCCL_DEBUG"] == "WARN" and env["SCOREP_VERBOSE"] == "true"
    _, env2 = sp.scorep_command("python", ["dnabert_scaling"], 1, tmp_path, cuda_enable="driver,kernel")
    assert env2["SCOREP_CUDA_ENABLE"] == "driver,kernel"
    clean_env.delenv("SCOREP_TOTAL_MEMORY")
    assert sp.scorep_environment(2, tmp_path, python_instrumentation=True)["SCOREP_TOTAL_MEMORY"] == "2G"


def test_existing_experiment_directory_is_refused(tmp_path, clean_env):
    (tmp_path / "traces" / "scorep-rank0").mkdir(parents=True)
    with pytest.raises(ArtifactError, match="experiment directory exists already") as exc:
        sp.scorep_command("python", ["dnabert_scaling", "train"], 0, tmp_path)
    assert "scorep-rank0" in str(exc.value)
    with pytest.raises(ValueError):
        sp.scorep_command("python", ["-m"], 1, tmp_path)


def test_launcher_runs_a_module_like_python_dash_m(tmp_path):
    mod = tmp_path / "pkg_probe"
    mod.mkdir()
    (mod / "__init__.py").write_text("")
    (mod / "__main__.py").write_text("import sys\nprint(__name__, sys.argv[1:], sys.path[0])\n")
    out = subprocess.run(
        [sys.executable, str(sp.LAUNCHER), "pkg_probe", "train", "--x", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[0] == "__main__" and out[1:5] == ["['train',", "'--x',", "'1']", str(tmp_path)]
    bad = subprocess.run([sys.executable, str(sp.LAUNCHER)], capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_under_scorep(monkeypatch):
    monkeypatch.delenv("SCOREP_PYTHON_BINDINGS_INITIALISED", raising=False)
    monkeypatch.delenv("SCOREP_PYTHON_BINDINGS_INITALISED", raising=False)
    monkeypatch.delitem(sys.modules, "scorep", raising=False)
    assert sp.under_scorep() is False
    monkeypatch.setenv("SCOREP_PYTHON_BINDINGS_INITIALISED", "true")
    assert sp.under_scorep() is False  # inherited variable, bindings not loaded in this interpreter
    monkeypatch.setitem(sys.modules, "scorep", types.ModuleType("scorep"))
    assert sp.under_scorep() is True


def _fake_tools(bin_dir, cuda="yes"):
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in (
        ("scorep-config", "echo --cuda"),
        ("cc", "exit 0"),
        ("scorep-info", f"echo 'Score-P 9.0'; echo '   CUDA support:     {cuda}'"),
    ):
        p = bin_dir / name
        p.write_text(f"#!/bin/sh\n{body}\n")
        p.chmod(0o755)


def test_scorep_available_reports_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CC", raising=False)
    # drop the folders that hold a `scorep` package (not every path containing "scorep": a
    # checkout may live in a folder named so, and its venv's site-packages must stay)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p or ".") / "scorep").exists()])
    if __import__("importlib").util.find_spec("scorep") is not None:  # pragma: no cover - real install
        pytest.skip("the real Score-P bindings are installed here")
    ok, why = sp.scorep_available()
    assert not ok
    assert "Python bindings are not installed" in why and "scorep-config is not on PATH" in why and "C compiler" in why
    # stand-ins for an installation: a `scorep` package and Score-P's tools on PATH
    site = tmp_path / "site"
    (site / "scorep").mkdir(parents=True)
    (site / "scorep" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    _fake_tools(tmp_path / "sp" / "bin", cuda="no")
    monkeypatch.setenv("PATH", str(tmp_path / "sp" / "bin"))
    ok, why = sp.scorep_available()
    assert not ok and "without CUDA support" in why
    _fake_tools(tmp_path / "sp" / "bin", cuda="yes")
    ok, why = sp.scorep_available()
    assert ok and why == f"Score-P at {tmp_path / 'sp'}"


def test_check_experiment_on_real_samples():
    # a Score-P without the launch-callbacks patch recorded every driver API call: said, not an error
    assert sp.check_experiment(CASITA) == [
        "every CUDA driver API call was recorded (SCOREP_CUDA_DRIVER_CALLBACKS is neither 'launch' nor 'records': Score-P without "
        "the project's launch-callbacks patch?): the host cost of the trace is higher"
    ]
    with pytest.raises(ArtifactError, match="CUPTI was not subscribed: the trace has no CUDA stream locations") as exc:
        sp.check_experiment(PINGPONG)
    assert "Master thread" in str(exc.value)


def test_check_experiment_missing_pieces(tmp_path):
    exp = tmp_path / "traces" / "scorep-rank0"
    with pytest.raises(ArtifactError, match="experiment directory missing"):
        sp.check_experiment(exp)
    (tmp_path / "traces" / "scorep-failed-20250101_0000_1234").mkdir(parents=True)
    with pytest.raises(ArtifactError, match="scorep-failed-20250101_0000_1234"):
        sp.check_experiment(exp)
    exp.mkdir()
    (exp / "scorep.cfg").write_text("SCOREP_ENABLE_TRACING=true\n")
    with pytest.raises(ArtifactError, match="no traces.otf2 in the experiment directory"):
        sp.check_experiment(exp)


def test_check_experiment_warnings_from_log_and_config(tmp_path):
    exp = write_ground_truth(tmp_path / "traces" / "scorep-rank0")
    assert sp.check_experiment(exp) == []
    (exp / "scorep.cfg").write_text("SCOREP_ENABLE_TRACING=true\nSCOREP_CUDA_ENABLE='driver','kernel','sync','gpumemusage'\n")
    log = "\n".join(
        [
            "step 10 loss 0.61",
            "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:301: Warning: [CUPTI Activity] Context 1: Dropped 4096 records.",
            "[Score-P] To avoid dropping of records increase the buffer size! Proposed minimum SCOREP_CUDA_BUFFER=8388608",
            "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:301: Warning: [CUPTI Activity] Context 1: Dropped 4096 records.",
            "[Score-P] Trace buffer flush on rank 0 (location 2). Consider increasing SCOREP_TOTAL_MEMORY.",
            "SCOREP_TOTAL_MEMORY=256M",  # the launcher echoing its settings is not a warning
        ]
    )
    warnings = sp.check_experiment(exp, log)
    assert warnings[0] == "SCOREP_CUDA_ENABLE records gpumemusage, sync: extra synchronisation perturbs the overlap measured"
    dropped = [w for w in warnings if w.startswith("Score-P dropped CUDA activity records")]
    assert len(dropped) == 2 and dropped[0].endswith("(x2)")
    flush = [w for w in warnings if w.startswith("Score-P flushed its trace buffer")]
    assert len(flush) == 1 and "Trace buffer flush on rank 0" in flush[0]
    assert warnings[1].startswith("every CUDA driver API call was recorded")  # no SCOREP_CUDA_DRIVER_CALLBACKS in the cfg
    assert len(warnings) == 5
    (exp / "scorep.cfg").write_text("SCOREP_CUDA_ENABLE='driver','kernel'\nSCOREP_CUDA_DRIVER_CALLBACKS='launch'\n")
    assert sp.check_experiment(exp) == []


# Score-P's own lines from the H200 benchmark of 2026-12-04 (call G): every traced process printed them once
ORDER = "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:351: Warning: [CUPTI Activity] Kernel: start time (356066650314) < (356066650440) last written timestamp!"  # noqa: E501
NAMED = "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:354: Warning: [CUPTI Activity] Kernel: '_ZN8cublasLt19splitKreduce_kernel', CUdevice: 0, CUDA stream ID: 7"  # noqa: E501
TRUNCATED = "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:360: Warning: [CUPTI Activity] Set kernel start time to sync-point time (truncate 0.0161%)"  # noqa: E501
SKIPPED = "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:369: Warning: [CUPTI Activity] Skipping ..."
ZERO = "[Score-P] src/adapters/cuda/scorep_cupti_activity.c:372: Warning: [CUPTI Activity] Kernel 'pdl_secondary' ended before the last written timestamp of its stream (CUDA stream ID: 13): written with zero duration at that timestamp"  # noqa: E501


@pytest.mark.parametrize(
    "lines,lost",
    [
        ([ORDER, NAMED, TRUNCATED], False),  # kept, its start moved by 1.6% of its duration: not a loss
        ([ORDER, NAMED, ZERO], False),  # the overlap patch kept it with zero duration
        ([ORDER, NAMED, TRUNCATED, SKIPPED], True),  # a later record of the same kind was skipped
    ],
)
def test_a_record_before_the_last_written_timestamp_is_a_loss_only_when_skipped(lines, lost):
    from dnabert_scaling.analysis.metrics import LOSS_WORDS

    warnings = sp._log_findings("\n".join(lines))
    losses = [w for w in warnings if any(k in w.lower() for k in LOSS_WORDS)]  # what the gate reads as a loss
    assert bool(losses) is lost
    if lost:
        assert any("last written timestamp" in w for w in losses) and any("Skipping" in w for w in losses)
    else:
        assert warnings and all(w.startswith("Score-P shortened CUDA activity records") for w in warnings)


def test_filter_file_syntax():
    lines = [l.strip() for l in sp.PYTHON_FILTER.read_text().splitlines() if l.strip() and not l.strip().startswith("#")]
    assert lines[0] == "SCOREP_REGION_NAMES_BEGIN" and lines[-1] == "SCOREP_REGION_NAMES_END"
    body = lines[1:-1]
    assert body[0] == "EXCLUDE" and body[-2:] == ["INCLUDE", "user:*"]  # phase regions always kept (last rule wins)
    patterns = [l for l in body if l not in ("EXCLUDE", "INCLUDE")]
    assert all(" " not in p for p in patterns)
    import fnmatch

    for kept in (
        "user:ds:step",
        "user:ds:backward",
        "_Z13jacobi_kernelPKfPfiiS1_",
        "dnabert_scaling.run.workload.model:forward",
        "torch.nn.modules.module:_call_impl",
    ):
        excluded = any(fnmatch.fnmatchcase(kept, p) for p in patterns[:-1])
        assert not excluded or kept.startswith("user:"), kept
    assert any(fnmatch.fnmatchcase("importlib._bootstrap:_find_and_load", p) for p in patterns)


def test_tracer_resolution_uses_this_module(monkeypatch):
    """tracing.resolve_tracer (the lead's) relies on scorep_available / under_scorep from here."""
    from dnabert_scaling.run import tracing

    if shutil.which("scorep-config") is None and not sp.under_scorep():
        with pytest.raises(ArtifactError, match="Score-P cannot be used here: .*scorep-config is not on PATH"):
            tracing.resolve_tracer("scorep")
    monkeypatch.setattr(sp, "scorep_available", lambda: (False, "no Score-P in this test"))
    monkeypatch.setattr(sp, "under_scorep", lambda: False)
    tracer, fallback = tracing.resolve_tracer("auto")
    assert tracer == "torch" and "no Score-P in this test" in str(fallback)


def test_a_sweeps_tracer_fallback_reaches_only_the_runs_of_the_tracer_it_chose(monkeypatch):
    """The sweep decides --tracer auto once; its runs get the decision through the environment and record the
    fallback in their own provenance. A run of another tracer, or a malformed value, records none."""
    from dnabert_scaling.provenance import Fallback
    from dnabert_scaling.run.tracing import ENV_SWEEP_FALLBACK, sweep_fallback, sweep_fallback_env

    took = Fallback("tracer", "torch.profiler (Kineto) instead of Score-P", "scorep-config is not on PATH")
    monkeypatch.setenv(ENV_SWEEP_FALLBACK, sweep_fallback_env("torch", took))
    assert sweep_fallback("torch") == took
    assert sweep_fallback("none") is None and sweep_fallback("scorep") is None
    for bad in ("{", "[]", '{"tracer": "torch", "what": "tracer", "used": "", "reason": "x"}', '{"tracer": "torch"}'):
        monkeypatch.setenv(ENV_SWEEP_FALLBACK, bad)
        assert sweep_fallback("torch") is None, bad
    monkeypatch.delenv(ENV_SWEEP_FALLBACK)
    assert sweep_fallback("torch") is None
    # a later sweep in the same process that chose its tracer itself passes no earlier sweep's decision on
    import argparse

    from dnabert_scaling.run.sweep.driver import _resolve_sweep_tracer

    monkeypatch.setenv(ENV_SWEEP_FALLBACK, sweep_fallback_env("torch", took))
    args = argparse.Namespace(tracer="torch", executor="local")
    assert _resolve_sweep_tracer(args, Path("unused"), None, "cpu") is None and sweep_fallback("torch") is None
