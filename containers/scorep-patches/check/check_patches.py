#!/usr/bin/env python3
"""Regression check of the project's Score-P patches (needs a CUDA GPU): the two-thread lab.

``two_threads.py --backward`` launches the forward kernels from the main thread and the backward
kernels from PyTorch's autograd thread onto one stream: the smallest program that lost kernels
under Score-P 8.4 on CUDA 13 (about half or more were skipped before the stream-order patch).
It runs under ``python -m scorep`` once per driver-callback mode the install supports
(``SCOREP_CUDA_DRIVER_CALLBACKS=all``, and ``launch`` when ``share/scorep-patches.txt`` lists
the launch-callbacks patch) and counts the trace with ``scripts/scorep_count.py``:

* every mode: at least as many kernels as ``cuLaunchKernel*`` launches inside the lab region
  (none lost), and no "[CUPTI Activity] Skipping" line in the output;
* ``launch``: no host region of the driver API other than the launch, copy and memset calls
  (the subscription holds), and at most a tenth of the host events of ``all``;
* ``records`` (where ``8.4-cupti-launch-records.patch`` is listed): as ``launch``, the launches on
  ``CUDA launches[<thread id>]`` locations, and every kernel carries the correlation id of one of
  them (``kernels_linked``: none lost, none linked to the wrong call).

Then the overlap lab, ``pdl_lab.py`` (built with nvcc from ``pdl_lab.cu``), in the default mode
of the install (``launch`` where the launch-callbacks patch is listed, else ``all``): pairs of kernels on one stream whose second kernel, a programmatic dependent
launch that does not wait, ends inside the first (the device clock counts the pairs where it did).
Released Score-P 8.4 drops such a kernel ("[CUPTI Activity] Skipping ..."). Where the install
lists ``8.4-cupti-overlap-kept.patch``, the lab must have produced such pairs and every kernel of
its launches must be in the trace; where it does not, the lab's figures are printed as a
contrast, not judged. The lab needs nvcc and a GPU of compute capability 9.0 or newer: without
them, or when no pair ended inside its primary, an install with the patch cannot be checked here
(exit status 2, the patch NOT CHECKED; never a pass).

Where the install lists ``8.4-cupti-stream-ref-cache.patch``, the stream-reuse lab,
``stream_reuse.py`` (streams created and destroyed in turn, their handles reused), in ``launch``
mode with the cache on and off: every kernel must be referred to by as many launches as run on
its GPU location (a stale cached location would point a new stream's launches at an old one),
and no launch may lack its reference. When no handle was reused the cache's forgetting was not
exercised: the patch is NOT CHECKED (exit status 2).

Prints one JSON line per lab and mode and a verdict; exit status 0 passed, 1 failed, 2 cannot run
here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LAUNCH_PREFIXES = ("cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset")


def patches_of(prefix: Path) -> str:
    listed = prefix / "share" / "scorep-patches.txt"
    return listed.read_text() if listed.is_file() else ""


RECORDS_PATCH = "8.4-cupti-launch-records.patch"


def modes_of(prefix: Path) -> list[str]:
    """The driver-callback modes the install can run: ``all`` always, ``launch`` with the launch-callbacks
    patch, ``records`` with the records patch on top of it."""
    patches = patches_of(prefix)
    if "-cupti-launch-callbacks.patch" not in patches:
        return ["all"]
    return ["all", "launch", "records"] if RECORDS_PATCH in patches else ["all", "launch"]


def default_mode_of(prefix: Path) -> str:
    """The install's default driver-callback mode, as the artifact picks it: the last of :func:`modes_of`."""
    return modes_of(prefix)[-1]


def run_lab(
    mode: str, work: Path, lab: list[str] | None = None, name: str = "lab", extra_env: dict | None = None
) -> tuple[dict, str]:
    """``lab`` (default: the two-thread lab) under Score-P in driver-callback ``mode``, counted."""
    exp = work / f"{name}-{mode}"
    env = {
        **os.environ,
        "SCOREP_EXPERIMENT_DIRECTORY": str(exp),
        "SCOREP_ENABLE_TRACING": "true",
        "SCOREP_ENABLE_PROFILING": "false",
        "SCOREP_CUDA_ENABLE": "driver,kernel,memcpy,references",
        "SCOREP_CUDA_DRIVER_CALLBACKS": mode,
        "SCOREP_CUDA_BUFFER": "64M",
        "SCOREP_TIMER": "clock_gettime",
        **(extra_env or {}),
    }
    argv = [sys.executable, "-m", "scorep", "--cuda", "--mpp=none", "--thread=pthread", "--nocompiler", "--noinstrumenter"]
    lab = lab or [str(HERE / "two_threads.py"), "--backward"]
    proc = subprocess.run([*argv, *lab], env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    if proc.returncode == 2 and name != "lab":
        raise CannotRun(f"{name}: cannot run here: {log[-600:].strip()}")
    if proc.returncode != 0:
        said = [
            x for x in log.splitlines() if x.startswith("[Score-P]") and any(w in x.lower() for w in ("error", "fatal", "memory"))
        ]
        why = " | ".join(said[:3]) or log[-1500:]
        raise RuntimeError(f"{name} under Score-P ({mode}) failed with exit status {proc.returncode}: {why}")
    sys.path.insert(0, str(ROOT / "scripts"))
    from scorep_count import count

    return {**count(exp, step_region="ds:lab"), "experiment": str(exp)}, log


CACHE_PATCH = "8.4-cupti-stream-ref-cache.patch"


def stream_refs(exp: Path) -> dict:
    """Per GPU location: the kernels on it, and the kernel launches whose CUDA_STREAM_REF names it;
    the launches without the reference."""
    import otf2

    kernels: Counter = Counter()
    referred: Counter = Counter()
    unreferenced = 0
    with otf2.reader.open(str(Path(exp) / "traces.otf2")) as tr:
        gpu = {loc for loc in tr.definitions.locations if loc.type == otf2.LocationType.GPU}
        for loc, ev in tr.events:
            if not isinstance(ev, otf2.events.Enter):
                continue
            if loc in gpu:
                kernels[loc.name] += 1
            elif ev.region.name.startswith("cuLaunchKernel"):
                ref = next((v for a, v in (ev.attributes or {}).items() if a.name == "CUDA_STREAM_REF"), None)
                if ref is None:
                    unreferenced += 1
                else:
                    referred[getattr(ref, "name", str(ref))] += 1
    return {"kernels": dict(kernels), "referred": dict(referred), "unreferenced": unreferenced}


def reference_problems(name: str, refs: dict) -> list[str]:
    """Where the launches' stream references and the kernels' locations disagree."""
    problems = []
    if refs["unreferenced"]:
        problems.append(f"{name}: {refs['unreferenced']} kernel launches without a stream reference")
    wrong = {
        loc: (refs["referred"].get(loc, 0), refs["kernels"].get(loc, 0))
        for loc in set(refs["kernels"]) | set(refs["referred"])
        if refs["referred"].get(loc, 0) != refs["kernels"].get(loc, 0)
    }
    if wrong:
        shown = ", ".join(f"{loc}: {r} launches refer to it, {k} kernels ran on it" for loc, (r, k) in sorted(wrong.items())[:4])
        problems.append(f"{name}: launches refer to the wrong stream on {len(wrong)} GPU locations ({shown})")
    return problems


def run_reuse_lab(work: Path) -> list[str]:
    """The stream-reuse lab in launch mode, the cache on and off: its figures printed, then judged;
    :class:`CannotRun` when no stream handle was reused (the forgetting was not exercised) and nothing
    failed (a loss or a wrong reference seen is a failure either way)."""
    problems, reused = [], True
    for cache in ("true", "false"):
        c, log = run_lab(
            "launch", work, [str(HERE / "stream_reuse.py")], name=f"reuse-cache-{cache}",
            # every stream is a Score-P location with trace buffers of its own: more memory than the default
            extra_env={"SCOREP_CUDA_STREAM_REF_CACHE": cache, "SCOREP_TOTAL_MEMORY": "512M"},
        )  # fmt: skip
        lab = next((json.loads(line) for line in log.splitlines() if line.startswith('{"lab": "stream_reuse"')), None)
        refs = stream_refs(Path(c["experiment"]))
        name = f"stream_reuse (launch, cache {cache})"
        print(json.dumps({**(lab or {}), "cache": cache, "gpu_locations": len(refs["kernels"]),
                          "kernels": sum(refs["kernels"].values()), "launches_referring": sum(refs["referred"].values()),
                          "unreferenced": refs["unreferenced"]}))  # fmt: skip
        step = c["per_step"][0] if c["per_step"] else None
        problems += losses(name, step, log, c["step_windows"]) + reference_problems(name, refs)
        reused = reused and bool(lab) and lab["distinct_handles"] < lab["streams"]
    if not reused and not problems:
        raise CannotRun("stream_reuse: no stream handle was reused: the cache's forgetting was not exercised")
    return problems


class CannotRun(Exception):
    """A lab that cannot run on this machine (no nvcc, a GPU too old for it)."""


def run_overlap_lab(mode: str, work: Path, patched: bool) -> list[str]:
    """The overlap lab in ``mode``: its figures printed, then judged (:func:`overlap_verdicts`)."""
    c, log = run_lab(mode, work, [str(HERE / "pdl_lab.py"), "--build-dir", str(work)], name="pdl")
    lab = next((json.loads(line) for line in log.splitlines() if line.startswith('{"pairs"')), None)
    step = c["per_step"][0] if c["per_step"] else {"launches": 0, "kernels": 0}
    print(json.dumps({"lab": "pdl", "mode": mode, **(lab or {}), "launches": step["launches"],
                      "kernels": step["kernels"], "no_skipping_message": "[CUPTI Activity] Skipping" not in log}))  # fmt: skip
    return overlap_verdicts(mode, lab, step, log, patched)


def overlap_verdicts(mode: str, lab: dict | None, step: dict, log: str, patched: bool) -> list[str]:
    """The overlap lab's problems: none for an install without the patch (its figures are the
    contrast); :class:`CannotRun` when the lab made no kernel end inside its predecessor."""
    if not patched:
        return []
    if not lab or not lab.get("contained"):  # the lab did not make the case: nothing to judge, not a pass
        raise CannotRun(f"pdl: no kernel ended inside its predecessor on this GPU ({lab}): the overlap path was not exercised")
    return losses(f"pdl ({mode})", step, log, "")


def losses(name: str, step: dict | None, log: str, windows: Any) -> list[str]:
    """What a lab's one region shows lost: no launch in it, fewer kernels than launches, a Score-P skip."""
    problems = []
    if step is None or not step["launches"]:
        problems.append(f"{name}: no launches in the lab region (step windows: {windows})")
    elif step["kernels"] < step["launches"]:
        problems.append(f"{name}: {step['kernels']} kernels for {step['launches']} launches: kernels lost")
    if "[CUPTI Activity] Skipping" in log:
        problems.append(f"{name}: Score-P skipped CUDA activity records")
    return problems


def verdicts(mode: str, c: dict, log: str, host_all: int | None) -> list[str]:
    problems = losses(mode, c["per_step"][0] if c["per_step"] else None, log, c["step_windows"])
    if mode in ("launch", "records"):
        driver = [n for n in c["host_regions"] if n.startswith("cu") and not n.startswith(LAUNCH_PREFIXES)]
        if driver:
            problems.append(f"{mode}: other driver API calls recorded: {', '.join(sorted(driver)[:8])}")
        if host_all and c["host_enters"] > host_all / 10:
            problems.append(f"{mode}: {c['host_enters']} host events against {host_all} with all (expected < 10%)")
    if mode == "records":
        sys.path.insert(0, str(ROOT / "scripts"))
        from scorep_count import is_launch_location

        elsewhere = sorted(loc for loc in c["launches_by_location"] if not is_launch_location(loc))
        if elsewhere:
            problems.append(f"records: launches on {', '.join(elsewhere)}, not on a CUDA launches[...] location")
        linked = c.get("kernels_linked")
        if linked is None:
            problems.append("records: the launches carry no CUPTI_CORRELATION_ID")
        elif linked < c["kernels"]:
            problems.append(f"records: {c['kernels'] - linked} of {c['kernels']} kernels carry no launch's correlation id")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prefix", type=Path, required=True, help="the Score-P install to check")
    p.add_argument("--lab", choices=("all", "stream-reuse"), default="all", help="all labs, or the stream-reuse lab alone")
    args = p.parse_args(argv)
    try:
        import torch

        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
    except ImportError as exc:
        print(f"check_patches: cannot run here ({exc})", file=sys.stderr)
        return 2
    problems: list[str] = []
    not_checked = None
    if args.lab == "stream-reuse" and CACHE_PATCH not in patches_of(args.prefix):
        print(f"check_patches: {args.prefix} lists no {CACHE_PATCH}: the stream-reuse lab has nothing to check", file=sys.stderr)
        return 2
    try:
        not_checked = run_labs(args, problems)
    except RuntimeError as exc:  # a lab that did not finish under Score-P: a failure, said in one line
        problems.append(str(exc))
    for msg in problems:
        print(f"check_patches: FAIL {msg}")
    if problems:
        print("check_patches: FAILED")
        return 1
    print(f"check_patches: {not_checked or 'passed'}")
    return 2 if not_checked else 0


def run_labs(args, problems: list[str]) -> str | None:
    """The labs ``args.lab`` names, their problems appended to ``problems`` as they are found (so a lab
    that fails later loses none); returns what they could not check, or None."""
    host_all = not_checked = None
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes_of(args.prefix) if args.lab == "all" else []:
            c, log = run_lab(mode, Path(tmp))
            if mode == "all":
                host_all = c["host_enters"]
            problems += verdicts(mode, c, log, host_all)
            keep = ("launches", "kernels", "kernels_linked", "host_enters", "step_windows", "steps_complete")
            print(json.dumps({"lab": "two_threads", "mode": mode, **{k: c[k] for k in keep}}))
        patched = "8.4-cupti-overlap-kept.patch" in patches_of(args.prefix)
        try:
            if args.lab == "all":
                problems += run_overlap_lab(default_mode_of(args.prefix), Path(tmp), patched)
        except CannotRun as exc:
            if patched:
                not_checked = f"8.4-cupti-overlap-kept.patch NOT CHECKED ({exc})"
            else:
                print(f"check_patches: the overlap lab did not run ({exc}); this install lacks its patch")
        if CACHE_PATCH in patches_of(args.prefix):
            try:
                problems += run_reuse_lab(Path(tmp))
            except CannotRun as exc:
                not_checked = "; ".join(x for x in (not_checked, f"{CACHE_PATCH} NOT CHECKED ({exc})") if x)
    return not_checked


if __name__ == "__main__":
    sys.exit(main())
