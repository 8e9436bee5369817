"""What a bench_trace.py run needs before its rounds, and what it records of where it ran: the checks
of the modes asked for (a GPU, Score-P and the patches a mode switches), the builds of the bare CUPTI
client and of the stack sampler into the run's work folder, the machine and the code's revision."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from bench_trace_modes import CUPTI_CLIENT_LIB, CUPTI_CLIENT_MODES, DOMAIN_FILTER_LIB, MODE_NEEDS_PATCH, MODES, SCRIPTS

SAMPLER_LIB = "libhost_sampler.so"  # scripts/host_sampler.c, built in the run's work folder for --sample


def check_setup(args, modes: list[str]) -> str | None:
    """Why the benchmark cannot run here, or None."""
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        return "bench-trace: needs a CUDA GPU (tracing cost is a GPU figure); nothing measured"
    unknown = [m for m in modes if m not in MODES]
    if unknown or "untraced" not in modes:
        return f"bench-trace: --modes must include 'untraced' and name only {', '.join(MODES)}"
    if any(MODES[m] is not None for m in modes):
        from dnabert_scaling.run.tracing.scorep import scorep_available

        ok, reason = scorep_available()
        if not ok:
            return f"bench-trace: the Score-P modes need Score-P: {reason}"
        return missing_patch(modes)
    return None


def missing_patch(modes: list[str], prefix: Path | None = None) -> str | None:
    """Why a mode cannot run on the installed Score-P (it lacks the patch the mode switches), or None."""
    from dnabert_scaling.run.tracing.scorep import installed_patches, scorep_prefix

    needed = {m: MODE_NEEDS_PATCH[m] for m in modes if m in MODE_NEEDS_PATCH}
    if not needed:
        return None
    prefix = prefix or scorep_prefix()
    have = installed_patches(prefix) if prefix else None
    names = set(have or [])
    for mode, patch in needed.items():
        if patch not in names:
            where = f"{prefix}/share/scorep-patches.txt" if prefix else "the installed Score-P (none found)"
            listed = ", ".join(sorted(names)) or "no patch"
            return f"bench-trace: mode {mode} needs a Score-P built with {patch}; {where} lists {listed}"
    return None


CUDA_FALLBACKS = (Path("/usr/local/cuda"),)  # where cupti_dir looks last


def libcupti(folder: Path) -> Path | None:
    """CUPTI's shared library in ``folder``'s lib64/ or lib/: libcupti.so (a toolkit's), else the versioned
    file a wheel has (libcupti.so.13)."""
    for lib in ("lib64", "lib"):
        found = [folder / lib / "libcupti.so", *sorted((folder / lib).glob("libcupti.so.*"))]
        for f in found:
            if f.exists():
                return f
    return None


def cupti_dir(env: dict | None = None, fallbacks: tuple[Path, ...] = CUDA_FALLBACKS) -> Path | None:
    """The folder holding CUPTI's include/cupti.h and lib/ or lib64/libcupti.so (or a versioned
    libcupti.so.N): $CUPTI_ROOT, else the toolkit at $CUDA_HOME or of the nvcc on PATH (CUDA 12:
    extras/CUPTI; CUDA 13: targets/<arch>-linux, where Score-P's build takes it from too), else
    ``fallbacks``. A wheel's CUPTI (NVIDIA's nvidia/cu13, as .ci/run installs it) is named by $CUPTI_ROOT."""
    env = os.environ if env is None else env
    roots: list[Path] = [Path(env["CUPTI_ROOT"])] if env.get("CUPTI_ROOT") else []
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    toolkits = [Path(env["CUDA_HOME"])] if env.get("CUDA_HOME") else []
    toolkits += [Path(nvcc).resolve().parent.parent] if nvcc else []  # a wrapper script's folder finds nothing: next
    for cuda in [*toolkits, *fallbacks]:
        roots += [cuda / "extras" / "CUPTI", *sorted(cuda.glob("targets/*-linux")), cuda]
    for d in roots:
        if (d / "include" / "cupti.h").is_file() and libcupti(d) is not None:
            return d
    return None


def build_cupti_client(
    work: Path,
    env: dict | None = None,
    fallbacks: tuple[Path, ...] = CUDA_FALLBACKS,
    modes: tuple[str, ...] = ("cupti-kernels",),
) -> tuple[dict | None, str | None]:
    """Build bench_trace_cupti.c into ``work`` against the toolkit's CUPTI for ``modes`` (the client's
    modes asked for, named in the message): (what was built, None), or (None, why it cannot be)."""
    env = os.environ if env is None else env
    said = f"mode{'s' if len(modes) > 1 else ''} {', '.join(modes)}"
    cupti = cupti_dir(env, fallbacks)
    if cupti is None:
        return (
            None,
            f"bench-trace: {said} need{'' if len(modes) > 1 else 's'} CUPTI (include/cupti.h, libcupti.so): none under $CUPTI_ROOT, "
            f"$CUDA_HOME, nvcc's toolkit or {', '.join(str(f) for f in fallbacks)}",
        )
    so = libcupti(cupti)
    assert so is not None  # cupti_dir found it
    lib = so.parent
    cc = env.get("CC") or shutil.which("cc", path=env.get("PATH")) or "cc"
    out = work / CUPTI_CLIENT_LIB
    argv = [cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", str(out), str(SCRIPTS / "bench_trace_cupti.c")]
    argv += [f"-I{cupti / 'include'}", str(so), f"-Wl,-rpath,{lib}"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        return None, f"bench-trace: {said}: cannot run the C compiler {cc} ({exc.strerror or exc})"
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.split())[-300:]
        return None, f"bench-trace: {said}: bench_trace_cupti.c does not build against {cupti}: {tail}"
    return {"cupti": str(cupti), "libcupti": str(so), "buffer_bytes": CUPTI_CLIENT_MODES}, None


def build_domain_filter(work: Path, modes: tuple[str, ...], env: dict | None = None) -> tuple[str | None, str | None]:
    """Build cupti_domain_filter.c (no CUDA needed) into ``work`` for ``modes`` (named in the message):
    (the library, None), or (None, why it cannot be)."""
    env = os.environ if env is None else env
    said = f"mode{'s' if len(modes) > 1 else ''} {', '.join(modes)}"
    return _build_library(work / DOMAIN_FILTER_LIB, "cupti_domain_filter.c", ["-ldl"], said, env, preloaded=True)


def build_sampler(work: Path, out: Path) -> tuple[str | None, str | None]:
    """Build host_sampler.c into ``work`` and make the folder its samples go to: (the library, None),
    or (None, why not)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return None, f"bench-trace: --sample {out}: cannot make the folder ({exc.strerror or exc})"
    if any(out.glob("samples-*.bin")):
        return None, f"bench-trace: --sample {out}: already holds samples; give an empty or new folder"
    return _build_library(
        work / SAMPLER_LIB, "host_sampler.c", ["-ldl", "-lpthread", "-lrt"], "--sample", os.environ, preloaded=True
    )


def _build_library(
    lib: Path, source: str, libs: list[str], said: str, env, preloaded: bool = False
) -> tuple[str | None, str | None]:
    """Compile one of the scripts' C files (needing no CUDA) into the shared library ``lib``: (its path, None),
    or (None, why not, beginning with ``said``). A ``preloaded`` library goes into LD_PRELOAD, whose entries
    are split at spaces and colons: a path holding either is refused before anything is built."""
    if preloaded and any(c in str(lib) for c in " \t\n:"):
        return None, (
            f"bench-trace: {said}: the work folder {lib.parent} has a space or a colon in its path, which LD_PRELOAD "
            "cannot carry; set TMPDIR to a folder without one"
        )
    cc = env.get("CC") or shutil.which("cc", path=env.get("PATH")) or "cc"
    argv = [cc, "-O2", "-Wall", "-shared", "-fPIC", "-o", str(lib), str(SCRIPTS / source), *libs]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        return None, f"bench-trace: {said}: cannot run the C compiler {cc} ({exc.strerror or exc})"
    if proc.returncode != 0:
        return None, f"bench-trace: {said}: {source} does not build: {' '.join(proc.stderr.split())[-300:]}"
    return str(lib), None


def machine() -> dict:
    import platform

    import torch

    from dnabert_scaling.run.tracing.scorep import installed_patches, scorep_prefix

    doc = {"host_cpus": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__}
    # the Score-P build the Score-P modes ran with: the patches its share/scorep-patches.txt lists (None: unknown)
    doc["scorep_patches"] = installed_patches(scorep_prefix())
    if torch.cuda.is_available():
        doc.update(device=torch.cuda.get_device_name(0), cuda=torch.version.cuda)
    return doc


def revision() -> str | None:
    """The code's revision: $DNABERT_SCALING_REVISION (a copy without git), else git's HEAD."""
    rev = os.environ.get("DNABERT_SCALING_REVISION", "").strip()
    if rev:
        return rev
    proc = subprocess.run(["git", "-C", str(SCRIPTS), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or None
