"""Running one rank under Score-P: availability, the command and environment, post-run checks.

The facts this relies on (see ``shared/reference/scorep-otf2.md`` and scorep_binding_python's
``__main__.py``):

* ``python -m scorep [opts] SCRIPT ARGS`` compiles a small init library, sets ``LD_PRELOAD``,
  sets ``SCOREP_PYTHON_BINDINGS_INITIALISED=true`` and re-executes itself; Score-P then starts
  before ``import torch``, so CUPTI is subscribed first. Options it does not know
  (``--cuda``, ``--mpp=none``, ``--thread=pthread``, ``--nocompiler``) go to ``scorep-config``.
  Every ``-...`` argument before the script is taken as such an option, so ``-m module`` is not
  supported: we pass ``resources/scorep/run_module.py`` as the script, then the module.
* Since bindings 4.5.0 ``--thread=pthread`` is no longer implied; without it PyTorch's autograd
  thread would be folded into the main thread's location.
* NCCL-only DDP is not an MPI program: each rank is its own Score-P measurement (``--mpp=none``)
  with its own ``SCOREP_EXPERIMENT_DIRECTORY``. Score-P does not create the parent directory,
  and an existing experiment directory is renamed away by default; we create the parent,
  refuse a stale experiment directory, and set ``SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY=false``
  so that a clash aborts the measurement instead of renaming silently.
* A full trace buffer makes Score-P flush mid-run (``TRACE BUFFER FLUSH``), a full CUPTI
  buffer drops records: both are sized below for the study, and reported by
  :func:`check_experiment`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.layout import ANCHOR, RunLayout
from dnabert_scaling.provenance import Fallback

RESOURCES = Path(__file__).resolve().parents[2] / "resources" / "scorep"
LAUNCHER = RESOURCES / "run_module.py"
PYTHON_FILTER = RESOURCES / "python-instrumentation.filter"

# Low perturbation: kernels, copies and the driver calls with their stream references. Left out
# on purpose: `sync` (synchronises around synchronous copies), `gpumemusage` (context
# synchronisation on every allocation), `idle`/`kernel_counter` (not needed; idle is derived).
DEFAULT_CUDA_ENABLE = "driver,kernel,memcpy,references"

# Which driver API calls reach Score-P (SCOREP_CUDA_DRIVER_CALLBACKS, a variable of the project's
# patch containers/scorep-patches/8.4-cupti-launch-callbacks.patch). Released Score-P subscribes
# to the whole driver domain: PyTorch's context and device queries around every launch (85% of
# the host events of a DNABERT-2 step on the H200) each cost a CUPTI callback and two events.
# "launch" keeps only cuLaunch*, cuGraphLaunch*, cuMemcpy*, cuMemset*: the launch records and
# their stream references, all the analysis reads.
LAUNCH_PATCH_SUFFIX = "-cupti-launch-callbacks.patch"
# "records" (containers/scorep-patches/8.4-cupti-launch-records.patch, on top of the one above): the
# same calls from CUPTI's activity records, no callback on the launch path, each launch carrying its
# CUPTI correlation id, so that a Score-P trace links launches to kernels (the idle split, completeness
# by correlation) as a Kineto trace does. Also the cheaper of the two on the H200 (ARTIFACT.md F).
# The default is the best mode the installed Score-P lists in share/scorep-patches.txt (written by
# containers/build-scorep.sh): "records", else "launch", else "all" (recorded as a fallback). A Score-P
# without the records patch records every driver call when given "records".
RECORDS_PATCH_SUFFIX = "-cupti-launch-records.patch"
PATCHES_FILE = Path("share") / "scorep-patches.txt"

# Trace buffer. One kernel costs about 110 bytes of trace records: the cuLaunchKernel Enter/Leave
# with its CUDA_STREAM_REF attribute (~34 B), PyTorch's one or two further driver calls per
# kernel (~50 B) and the kernel's Enter/Leave on its stream location (~28 B). 50 steps x 1,000
# kernels x 110 B = 5.5 MB; warm-up steps, model set-up and NCCL's helper threads add a few MB.
# 256 MiB leaves a >20x margin, so no mid-run flush; memory is reserved per process (8 ranks on
# a node: 2 GiB of 1+ TiB). With full Python instrumentation every Python call adds an
# Enter/Leave (~30 B); a DNABERT-2 step makes ~1e5 calls: 50 x 1e5 x 30 B = 150 MB, so 2 GiB.
# A longer run gets more (:func:`default_total_memory`: twice the bytes its steps need), up to what Score-P 8.4
# takes at most (under 4 GiB a process; it cuts a larger value to that itself); a run beyond even that
# flushes mid-run, which :func:`check_experiment` reports.
DEFAULT_TOTAL_MEMORY = "256M"
DEFAULT_TOTAL_MEMORY_PYTHON = "2G"
TRACE_BYTES_PER_STEP = 128 * 1024  # ~1,015 kernels x ~110 B of records, rounded up
TRACE_BYTES_PER_STEP_PYTHON = 4 * 1024 * 1024  # ~1e5 Python calls x ~30 B, rounded up
MAX_TOTAL_MEMORY_MIB = 4095  # SCOREP_TOTAL_MEMORY is at most 4 GiB less one page (SCOREP_Memory.c)
# CUPTI activity buffer: a kernel activity record is ~200 B, a copy ~150 B. Score-P drains it only at a
# context synchronisation and at the end (the training loop synchronises at neither inside a run), so it must
# hold every record of the run: 50 steps x 1,000 kernels (10 MB) needs ~12 MB; 64 MiB gives 5x margin
# (Score-P's default 1 MiB holds ~5,000 kernels: dropped records). A longer run gets a buffer sized for its
# steps (:func:`default_cuda_buffer`), so that no run of the artifact's own settings drops records.
DEFAULT_CUDA_BUFFER = "64M"
RECORDS_PER_STEP = 2_000  # a DNABERT-2 base step launches ~1,015 kernels and ~30 copies (H200, 2026-12-03): twice that
RECORD_BYTES = 256  # a kernel record of CUDA 13's CUPTI, rounded up
# CUPTI's activity buffers, handed out by Score-P one chunk at a time: 4 MB, not Score-P's 8 kB (with
# which CUPTI asks for a new buffer every ~40 kernel records). A modest gain: on the H200 launch-only
# Score-P cost 1.27x against 1.29x at 8x70 and 1.21x against 1.25x at 32x70 (medians of the 20
# lockstep rounds that ran both, 4 MB the cheaper in 14 and 13 of them; in call L's 10 rounds in 8
# and 8: splits a sign test does not tell from none, file by file), with the same trace; the
# per-call loops, one per run, did not show a cheaper launch (ARTIFACT.md F). The 64M above still caps the total: 15 chunks
# (Score-P 8.4's get_free_buffer grants a chunk only while the chunks so far, the new one and 8 bytes of
# alignment stay within SCOREP_CUDA_BUFFER; it frees them only when it drains them, at a context
# synchronisation or at the end). So a buffer of at most one chunk plus 8 bytes records nothing at all
# (and a chunk larger than the buffer makes Score-P raise the buffer to the chunk, the same): refused
# before a run by :func:`check_cuda_buffers`.
DEFAULT_CUDA_BUFFER_CHUNK = "4M"
CUPTI_ALIGN_BYTES = 8  # SCOREP_CUPTI_ACTIVITY_ALIGN_SIZE in Score-P 8.4's scorep_cupti_activity_internal.h
DEFAULT_TIMER = "clock_gettime"  # avoids Score-P's TSC warnings; CUPTI stamps use the same clock

INITIALISED_VARS = ("SCOREP_PYTHON_BINDINGS_INITIALISED", "SCOREP_PYTHON_BINDINGS_INITALISED")  # 2nd: old spelling

_DROPPED_RE = re.compile(r"dropp?ed\b.*\brecords?|\brecords?\b.*\bdropp?ed", re.IGNORECASE)
_FLUSH_RE = re.compile(r"TRACE BUFFER FLUSH|trace buffer flush|flush(ed|ing)? (of )?the (trace )?buffer", re.IGNORECASE)
_ADVICE_RE = re.compile(r"\[Score-P\].*(SCOREP_TOTAL_MEMORY|SCOREP_CUDA_BUFFER)")
# CUPTI records Score-P read but did not write: "[CUPTI Activity] Skipping ..." after "start time <
# last written timestamp", "Reached maximum CUDA buffer size", "Dropped N records".
_SKIPPED_RE = re.compile(r"\[CUPTI Activity\].*\bSkipping\b|Reached maximum CUDA buffer size", re.IGNORECASE)
_TIMESTAMP_ORDER_RE = re.compile(r"\[CUPTI Activity\].*start time.*<.*last written timestamp", re.IGNORECASE)
# The same order problem where Score-P kept the record: its start moved to the last written timestamp
# ("Set kernel start time to sync-point time (truncate ...)"), or, with the project's
# 8.4-cupti-overlap-kept.patch, a kernel that ended before it written with zero duration.
_KEPT_SHORTENED_RE = re.compile(r"\[CUPTI Activity\].*(start time to sync-point time|written with zero duration)", re.IGNORECASE)
_CUPTI_FAIL_RE = re.compile(r"CUPTI.*(fail|error|could not|unable)|subscri(be|ption).*(fail|error)", re.IGNORECASE)


def scorep_available() -> tuple[bool, str]:
    """Whether this machine can run ``python -m scorep --cuda``; the reason when it cannot."""
    problems = []
    if importlib.util.find_spec("scorep") is None:
        problems.append("the Score-P Python bindings are not installed (`pip install scorep`, needs Score-P)")
    config = shutil.which("scorep-config")
    if config is None:
        problems.append("scorep-config is not on PATH (Score-P not installed or not loaded)")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        problems.append("no C compiler (the bindings compile an init library at every start)")
    if config is not None:
        info = shutil.which("scorep-info", path=str(Path(config).parent)) or shutil.which("scorep-info")
        if info:
            try:
                out = subprocess.run([info, "config-summary"], capture_output=True, text=True, timeout=30).stdout
            except (OSError, subprocess.SubprocessError):
                out = ""
            m = re.search(r"CUDA support:\s*(\w+)", out)
            if m and m.group(1).lower() != "yes":
                problems.append(f"this Score-P was built without CUDA support (scorep-info: 'CUDA support: {m.group(1)}')")
    if problems:
        return False, "; ".join(problems)
    return True, f"Score-P at {Path(config).parent.parent}"


def scorep_prefix() -> Path | None:
    """The install prefix of the Score-P whose ``scorep-config`` is on PATH (None: none)."""
    config = shutil.which("scorep-config")
    return Path(config).parent.parent if config else None


def installed_patches(prefix) -> list[str] | None:
    """The patch file names ``<prefix>/share/scorep-patches.txt`` lists (``patch: NAME sha256 X``
    lines); None when the file is missing or unreadable (a Score-P not built by
    ``containers/build-scorep.sh``)."""
    if prefix is None:
        return None
    try:
        text = (Path(prefix) / PATCHES_FILE).read_text(errors="replace")
    except OSError:
        return None
    return [line.split()[1] for line in text.splitlines() if line.startswith("patch:") and len(line.split()) > 1]


def _not_listed(patches: list[str] | None, suffix: str) -> str | None:
    """Where an install's patch list lacks the patch ending in ``suffix``, said; None where it lists it."""
    if patches and any(p.endswith(suffix) for p in patches):
        return None
    return "has no share/scorep-patches.txt" if patches is None else "does not list it in share/scorep-patches.txt"


def driver_callbacks_for(patches: list[str] | None) -> tuple[str, str | None]:
    """The ``SCOREP_CUDA_DRIVER_CALLBACKS`` value for an install with these patches (``records`` where it
    lists both project patches that the mode needs, ``launch`` where it lists the launch-callbacks one), and
    why ``all`` when it is neither (None when it is one of them)."""
    where = _not_listed(patches, LAUNCH_PATCH_SUFFIX)
    if where is None:
        return ("records" if _not_listed(patches, RECORDS_PATCH_SUFFIX) is None else "launch"), None
    return "all", (
        f"the installed Score-P {where}: without containers/scorep-patches/8.4{LAUNCH_PATCH_SUFFIX} every CUDA "
        "driver API call is recorded (about 1.6x the untraced step at batch 8 x 70 on the H200, against "
        "about 1.3x with the patch)"
    )


def default_driver_callbacks() -> tuple[str, str | None]:
    """:func:`driver_callbacks_for` the Score-P on PATH."""
    return driver_callbacks_for(installed_patches(scorep_prefix()))


def _records_driver_api(cuda_enable: str) -> bool:
    flags = {f.strip().lower() for f in cuda_enable.replace("'", "").replace('"', "").split(",") if f.strip()}
    return bool(flags & {"driver", "references", "kernel_callsite", "default", "yes", "1"})


def driver_callbacks_fallback(env=None) -> Fallback | None:
    """Inside a Score-P rank: a :class:`Fallback` when every driver API call is being recorded
    (the install lacks the launch-callbacks patch, or ``SCOREP_CUDA_DRIVER_CALLBACKS`` says so)."""
    env = os.environ if env is None else env
    if not _records_driver_api(env.get("SCOREP_CUDA_ENABLE", DEFAULT_CUDA_ENABLE)):
        return None
    mode = env.get("SCOREP_CUDA_DRIVER_CALLBACKS", "all")
    if mode == "launch":
        return None
    if mode == "records":
        where = _not_listed(installed_patches(scorep_prefix()), RECORDS_PATCH_SUFFIX)
        if where is None:
            return None
        reason = f"SCOREP_CUDA_DRIVER_CALLBACKS=records was given, but the installed Score-P {where} (8.4{RECORDS_PATCH_SUFFIX})"
        return Fallback("tracer", "Score-P recording every CUDA driver API call (SCOREP_CUDA_DRIVER_CALLBACKS=all)", reason)
    _, why = default_driver_callbacks()
    reason = why or f"SCOREP_CUDA_DRIVER_CALLBACKS={mode} was given"
    return Fallback("tracer", "Score-P recording every CUDA driver API call (SCOREP_CUDA_DRIVER_CALLBACKS=all)", reason)


def under_scorep() -> bool:
    """Whether this process already runs under ``python -m scorep`` (after its re-exec).

    The bindings set ``SCOREP_PYTHON_BINDINGS_INITIALISED=true`` before re-executing; the
    variable is inherited by child processes too, so the ``scorep`` package must also be
    loaded in this interpreter (``python -m scorep`` imports it before the program runs).
    """
    import sys

    flagged = any(os.environ.get(v) == "true" for v in INITIALISED_VARS)
    return flagged and "scorep" in sys.modules


def experiment_dir(run_dir, rank: int) -> Path:
    """``<run_dir>/traces/scorep-rank<R>``, the run layout of docs/design.md."""
    return RunLayout(run_dir).scorep_dir(rank)


def default_total_memory(steps: int | None = None, python_instrumentation: bool = False) -> str:
    """``SCOREP_TOTAL_MEMORY`` for a run of ``steps`` steps (warm-up included): the default of its kind, or
    twice what its steps' records take where that is more, in MiB, at most :data:`MAX_TOTAL_MEMORY_MIB`."""
    floor, per_step = (
        (DEFAULT_TOTAL_MEMORY_PYTHON, TRACE_BYTES_PER_STEP_PYTHON)
        if python_instrumentation
        else (DEFAULT_TOTAL_MEMORY, TRACE_BYTES_PER_STEP)
    )
    need = 2 * (steps or 0) * per_step
    if need <= (scorep_size(floor) or 0):
        return floor
    return f"{min(-(-need // 2**20), MAX_TOTAL_MEMORY_MIB)}M"


def default_cuda_buffer(steps: int | None = None) -> str:
    """``SCOREP_CUDA_BUFFER`` for a run of ``steps`` steps (warm-up included): :data:`DEFAULT_CUDA_BUFFER`, or
    more where the run's records (:data:`RECORDS_PER_STEP` of :data:`RECORD_BYTES` each step) would not fit
    it, in whole chunks with two to spare."""
    chunk = scorep_size(DEFAULT_CUDA_BUFFER_CHUNK) or 1
    floor = scorep_size(DEFAULT_CUDA_BUFFER) or 0
    need = (steps or 0) * RECORDS_PER_STEP * RECORD_BYTES
    if need + 2 * chunk <= floor:
        return DEFAULT_CUDA_BUFFER
    chunks = -(-need // chunk) + 2
    return f"{chunks * chunk // 1024}K"


_SIZE_RE = re.compile(r"\s*(\d+)\s*([KMGTPE]?)B?\s*", re.IGNORECASE)


def scorep_size(value: str) -> int | None:
    """Bytes of a Score-P size value as Score-P 8.4 reads one (a number, an optional K, M, G, T, P or E
    of 1024 steps, an optional B; any case); None where Score-P would not read it (it says so itself)."""
    m = _SIZE_RE.fullmatch(value)
    if not m:
        return None
    return int(m.group(1)) * 1024 ** (" KMGTPE".index(m.group(2).upper() or " "))


def check_cuda_buffers(env: dict) -> None:
    """Refuse CUPTI buffer settings with which Score-P 8.4 records no kernel and no copy: its activity
    buffer (``SCOREP_CUDA_BUFFER``) must hold one chunk (``SCOREP_CUDA_BUFFER_CHUNK``) plus 8 bytes.
    Values Score-P cannot read are left to Score-P."""
    buffer, chunk = (scorep_size(str(env.get(name, ""))) for name in ("SCOREP_CUDA_BUFFER", "SCOREP_CUDA_BUFFER_CHUNK"))
    if buffer is None or chunk is None or chunk < 1024:  # below 1 KiB Score-P takes its 8 kB chunk instead
        return
    if buffer < chunk + CUPTI_ALIGN_BYTES:
        raise ArtifactError(
            f"SCOREP_CUDA_BUFFER={env['SCOREP_CUDA_BUFFER']} cannot hold one SCOREP_CUDA_BUFFER_CHUNK="
            f"{env['SCOREP_CUDA_BUFFER_CHUNK']} (plus {CUPTI_ALIGN_BYTES} bytes): Score-P 8.4 would record no kernel "
            f"and no copy; give a buffer of several chunks (the artifact's defaults: {DEFAULT_CUDA_BUFFER} in "
            f"{DEFAULT_CUDA_BUFFER_CHUNK} chunks) or unset both"
        )


def scorep_environment(
    rank: int,
    run_dir,
    *,
    python_instrumentation: bool = False,
    cuda_enable: str | None = None,
    total_memory: str | None = None,
    cuda_buffer: str | None = None,
    driver_callbacks: str | None = None,
    base_env: dict | None = None,
    steps: int | None = None,
) -> dict[str, str]:
    """Only the Score-P variables for one rank (see :func:`scorep_command` for the precedence)."""
    env_in = os.environ if base_env is None else base_env
    exp = experiment_dir(run_dir, rank)

    def pick(explicit, name, default):
        if explicit is not None:
            return str(explicit)
        return env_in.get(name) or default

    out = {
        "SCOREP_EXPERIMENT_DIRECTORY": str(exp.resolve()),
        "SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY": "false",
        "SCOREP_ENABLE_TRACING": "true",
        "SCOREP_ENABLE_PROFILING": "false",
        "SCOREP_CUDA_ENABLE": pick(cuda_enable, "SCOREP_CUDA_ENABLE", DEFAULT_CUDA_ENABLE),
        "SCOREP_TOTAL_MEMORY": pick(total_memory, "SCOREP_TOTAL_MEMORY", default_total_memory(steps, python_instrumentation)),
        "SCOREP_CUDA_BUFFER": pick(cuda_buffer, "SCOREP_CUDA_BUFFER", default_cuda_buffer(steps)),
        "SCOREP_CUDA_BUFFER_CHUNK": pick(None, "SCOREP_CUDA_BUFFER_CHUNK", DEFAULT_CUDA_BUFFER_CHUNK),
        "SCOREP_CUDA_DRIVER_CALLBACKS": pick(driver_callbacks, "SCOREP_CUDA_DRIVER_CALLBACKS", default_driver_callbacks()[0]),
        "SCOREP_TIMER": env_in.get("SCOREP_TIMER") or DEFAULT_TIMER,
    }
    if python_instrumentation:
        out["SCOREP_FILTERING_FILE"] = env_in.get("SCOREP_FILTERING_FILE") or str(PYTHON_FILTER)
    check_cuda_buffers(out)
    return out


def scorep_command(
    python,
    module_args,
    rank,
    run_dir,
    *,
    python_instrumentation=False,
    cuda_enable=None,
    total_memory=None,
    cuda_buffer=None,
    extra_env=None,
    steps=None,
) -> tuple[list[str], dict[str, str]]:
    """The argv and the complete environment to run one rank under Score-P.

    argv: ``[python, -m, scorep, --cuda, --mpp=none, --thread=pthread, --nocompiler,
    [--noinstrumenter], <run_module.py>, MODULE, ARGS...]`` where ``module_args`` is
    ``["dnabert_scaling", "train", ...]`` (a leading ``-m`` is accepted and dropped).
    ``--noinstrumenter`` (only the phase user regions and CUDA are recorded) unless
    ``python_instrumentation``, which records every Python call, filtered by
    ``resources/scorep/python-instrumentation.filter``.

    Environment: ``os.environ`` plus the Score-P variables plus ``extra_env``. A value given as an
    argument wins over the caller's own ``SCOREP_*`` environment variable, which wins over the
    defaults above (the trace and CUPTI buffers sized for ``steps``, the run's steps with its warm-up). Creates ``<run_dir>/traces``; raises ArtifactError when the rank's experiment
    directory already exists (Score-P would rename it; delete it or use a new run directory).
    """
    args = [str(a) for a in module_args]
    if args and args[0] == "-m":
        args = args[1:]
    if not args:
        raise ValueError("module_args must name the module to run")
    scorep_env = scorep_environment(  # checked before anything is created
        rank,
        run_dir,
        python_instrumentation=python_instrumentation,
        cuda_enable=cuda_enable,
        total_memory=total_memory,
        cuda_buffer=cuda_buffer,
        steps=steps,
    )
    exp = experiment_dir(run_dir, rank)
    if exp.exists():
        raise ArtifactError(
            "Score-P experiment directory exists already (a previous run?): Score-P would rename it; "
            "remove it or use a new run directory",
            exp,
        )
    try:
        exp.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactError(f"cannot create the traces directory ({exc.strerror})", exp.parent) from None
    if not LAUNCHER.is_file():
        raise ArtifactError("the Score-P module launcher is missing from the installation", LAUNCHER)
    argv = [str(python), "-m", "scorep", "--cuda", "--mpp=none", "--thread=pthread", "--nocompiler"]
    if not python_instrumentation:
        argv.append("--noinstrumenter")
    argv.append(str(LAUNCHER))
    argv.extend(args)
    env = dict(os.environ)
    env.update(scorep_env)
    if extra_env:
        env.update({str(k): str(v) for k, v in extra_env.items()})
    return argv, env


def _log_findings(log_text: str) -> list[str]:
    found: dict[str, int] = {}
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    # Score-P warns once per kind: "start time < last written timestamp" is followed by what it did with
    # the record, kept shortened or skipped; only a skip makes the order problem a loss.
    skipped = any(_SKIPPED_RE.search(text) for text in lines)
    for text in lines:
        if _TIMESTAMP_ORDER_RE.search(text) and skipped:
            key = (
                "Score-P lost CUDA activity records: it skips a record that starts and ends before the last "
                f"timestamp it wrote on the same stream (the trace is incomplete): {text}"
            )
        elif _TIMESTAMP_ORDER_RE.search(text) or _KEPT_SHORTENED_RE.search(text):
            key = (
                "Score-P shortened CUDA activity records that began before the last one it wrote on the same "
                f"stream (kept in the trace, their start moved or their duration set to zero): {text}"
            )
        elif _SKIPPED_RE.search(text):
            key = f"Score-P lost CUDA activity records (the trace is incomplete): {text}"
        elif _DROPPED_RE.search(text) or (_ADVICE_RE.search(text) and "SCOREP_CUDA_BUFFER" in text):
            key = f"Score-P dropped CUDA activity records (raise SCOREP_CUDA_BUFFER): {text}"
        elif _FLUSH_RE.search(text) or (_ADVICE_RE.search(text) and "SCOREP_TOTAL_MEMORY" in text):
            key = f"Score-P flushed its trace buffer during the run (timing perturbed; raise SCOREP_TOTAL_MEMORY): {text}"
        elif _CUPTI_FAIL_RE.search(text) and "score-p" in text.lower():
            key = f"Score-P reported a CUPTI problem: {text}"
        else:
            continue
        found[key] = found.get(key, 0) + 1
    return [k if n == 1 else f"{k} (x{n})" for k, n in found.items()]


def _read_cfg(exp: Path) -> dict[str, str]:
    cfg = exp / "scorep.cfg"
    out = {}
    if cfg.is_file():
        for line in cfg.read_text(errors="replace").splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                k, _, v = line.partition("=")
                out[k.strip()] = v.strip()
    return out


def check_experiment(exp_dir, log_text: str | None = None) -> list[str]:
    """Check one rank's Score-P experiment after the run; returns warnings (list of str).

    Errors (ArtifactError): the directory or its ``traces.otf2`` anchor is missing; the archive
    cannot be read; it has no CUDA stream location ("CUPTI was not subscribed"). Warnings: the
    log reports dropped CUDA records, trace buffer flushes or CUPTI problems; the recorded
    ``SCOREP_CUDA_ENABLE`` includes features that perturb the overlap being measured.
    """
    import otf2

    from dnabert_scaling.traces import otf2_lowlevel as ll

    exp = Path(exp_dir)
    if not exp.is_dir():
        siblings = sorted(p.name for p in exp.parent.glob("scorep-failed*")) if exp.parent.is_dir() else []
        hint = f" (found {', '.join(siblings)}: clashing measurements were renamed)" if siblings else ""
        raise ArtifactError(f"Score-P experiment directory missing{hint}", exp)
    anchor = exp / ANCHOR
    if not anchor.is_file():
        raise ArtifactError(
            "no traces.otf2 in the experiment directory: the measurement did not finish (crash or kill "
            "before Score-P's finalisation) or tracing was off (SCOREP_ENABLE_TRACING)",
            exp,
        )
    with ll.captured_errors() as errors:
        try:
            with otf2.reader.open(str(anchor)) as tr:
                locations = list(tr.definitions.locations)
        except Exception as exc:
            detail = errors.messages[0] if errors.messages else str(exc)
            raise ArtifactError(f"the trace cannot be read ({detail})", anchor) from None
    streams = [l for l in locations if l.type == otf2.LocationType.GPU]
    if not streams:
        names = ", ".join(sorted({l.name for l in locations})) or "none"
        raise ArtifactError(
            "CUPTI was not subscribed: the trace has no CUDA stream locations (locations: "
            f"{names}). Another CUPTI user (torch.profiler, nsys, ncu) may have been active, Score-P may "
            "lack CUDA support, or SCOREP_CUDA_ENABLE did not include 'kernel'",
            exp,
        )
    warnings: list[str] = []
    if all(l.number_of_events == 0 for l in streams):
        warnings.append("the CUDA stream locations hold no events (no kernel ran while Score-P measured)")
    cfg = _read_cfg(exp)
    enabled = cfg.get("SCOREP_CUDA_ENABLE", "").replace("'", "").replace('"', "")
    flags = {f.strip().lower() for f in enabled.split(",") if f.strip()}
    perturbing = sorted(flags & {"sync", "gpumemusage"})
    if perturbing or "yes" in flags or "default" in flags:
        what = ", ".join(perturbing) if perturbing else "the default set (includes sync, gpumemusage)"
        warnings.append(f"SCOREP_CUDA_ENABLE records {what}: extra synchronisation perturbs the overlap measured")
    if _records_driver_api(enabled) and cfg.get("SCOREP_CUDA_DRIVER_CALLBACKS", "all").strip("'\"") not in ("launch", "records"):
        warnings.append(
            "every CUDA driver API call was recorded (SCOREP_CUDA_DRIVER_CALLBACKS is neither 'launch' nor 'records': "
            "Score-P without the project's launch-callbacks patch?): the host cost of the trace is higher"
        )
    if log_text:
        warnings.extend(_log_findings(log_text))
    return warnings
