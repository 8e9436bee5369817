#!/usr/bin/env python3
"""The reviewer's two paths: ``make reproduce`` and ``make kick-tires``.

``make reproduce`` (this script without ``--kick-tires``) looks at the machine first:

- GPUs here: the study's sweep at every world size of 1, 2, 4, 8 that fits the GPUs present
  (``--gpus`` to choose; a claim at a world size not run comes out NOT RUN); with SLURM GPU
  nodes: world sizes 1, 4, 8 as the study. Traced with Score-P when it works, else torch.profiler.
  World sizes larger than the local GPUs run as a rehearsal (``sweep --rehearse``: ranks share
  the GPUs round-robin, NCCL over loopback sockets; one GPU rehearses 2, 4 and 8), a result set of
  its own whose magnitudes the checker never judges (one GPU per rank), so a reviewer with one GPU
  sees the NCCL path work;
- no GPU (the embedded default): a CPU smoke sweep (tiny model, gloo, world sizes 1 and 2) that
  shows the runs, their traces, the checker and the report complete on this machine; the GPU
  analysis has nothing to read there, so its metrics and claims are NOT RUN, with the reason.

Either way it then analyses the reference traces shipped in ``expected/reference/`` (recorded on
real GPUs), checks every result set against ``expected/claims.toml``, predicts the scaling from each
set's world-size-1 trace where it holds bucket ranges (``predict``) and writes one report.
``--kick-tires`` does only the last part (reference traces -> analysis -> verdicts -> report).

Every command it runs is printed, so each step can be rerun by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "artifact"))  # also when run without the package installed

from dnabert_scaling.errors import ArtifactError  # noqa: E402
from dnabert_scaling.provenance import below_cwd  # noqa: E402
from dnabert_scaling.run.sweep.local import REHEARSAL_MAX_RANKS_PER_GPU  # noqa: E402  (the sweep refuses more)

CLI = [sys.executable, "-m", "dnabert_scaling"]
AUTO_SIZES = (1, 2, 4, 8)
SMOKE_TRAIN = ["--model", "tiny", "--steps", "8", "--warmup-steps", "2", "--batch-size", "8", "--find-unused-parameters", "false"]


def say(msg: str) -> None:
    print(f"[reproduce] {msg}", flush=True)


def run(cmd: list[str], check: bool = True) -> int:
    say("$ " + shlex.join(str(c) for c in cmd))
    rc = subprocess.run(cmd).returncode
    if check and rc != 0:
        say(f"command failed with exit status {rc}")
        raise SystemExit(rc)
    return rc


def gpus_here() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def slurm_gpus() -> tuple[bool, str]:
    """Whether to submit the GPU sweep to SLURM here, and why (not)."""
    if not shutil.which("sbatch") or not shutil.which("sinfo"):
        return False, "no SLURM commands on PATH"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%G"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"sinfo failed ({exc})"
    if out.returncode != 0:
        return False, "sinfo failed (no controller reachable)"
    if "gpu" not in out.stdout:
        return False, "the SLURM partitions offer no GPU gres"
    conf = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=20).stdout
    if "dnabert-ci" in conf:
        return False, "this is the test cluster of .ci/run (fake GPUs)"
    if not image_path() and not os.environ.get("APPTAINER_CONTAINER"):
        return False, "no dnabert-scaling.sif (build it with containers/build.sh, or set DNABERT_SCALING_IMAGE)"
    return True, "SLURM with GPU nodes"


def image_path() -> Path | None:
    candidate = Path(os.environ.get("DNABERT_SCALING_IMAGE", ROOT / "dnabert-scaling.sif"))
    return candidate if candidate.is_file() else None


def reference_sets() -> list[Path]:
    ref = ROOT / "expected" / "reference"
    if not ref.is_dir():
        return []
    return sorted(p for p in ref.iterdir() if p.is_dir() and any(q.name.startswith("ws") for q in p.iterdir()))


def analyse_and_check(sweep: Path, results: Path, claims: Path) -> int | None:
    """Analysis and verdicts of one result set; None when the analysis itself failed."""
    if run([*CLI, "analyze", str(sweep), "--out", str(results)], check=False) != 0:
        say(f"the analysis of {sweep} failed (message above); it is left out of the report")
        return None
    # the verdicts are results: a FAIL is reported, not a crash of the pipeline
    rc = run([*CLI, "check", str(results), "--expected", str(claims)], check=False)
    # the forecast from the world-size-1 trace: information for the report, never a verdict
    if run([*CLI, "predict", str(results)], check=False) != 0:
        say(f"no prediction for {results} (reason above); the report says so")
    return rc


def compare_with_shipped(result_sets: list[tuple[str, Path, int]]) -> list[str]:
    """kick-tires: each re-derived reference set against the results shipped in expected/reference-results/."""
    from dnabert_scaling.analysis.compare import compare_results

    lines = []
    for name, results, _ in result_sets:
        shipped = ROOT / "expected" / "reference-results" / name.removeprefix("reference-")
        if not (shipped / "metrics.json").is_file():
            lines.append(f"{name}: no shipped results to compare with ({below_cwd(shipped)} is missing)")
            continue
        diffs = compare_results(results, shipped)
        where = below_cwd(shipped)
        if not diffs:
            lines.append(f"{name}: identical to the shipped {where} (metrics of every world size, verdicts)")
        else:
            lines.append(f"{name}: {len(diffs)}{'+' if len(diffs) >= 50 else ''} difference(s) from the shipped {where}:")
            lines += [f"    {d}" for d in diffs]
    return lines


def machine_sweeps(args: argparse.Namespace, out: Path) -> tuple[list[tuple[str, list[str]]], dict]:
    """The sweeps this machine runs, as (name, command): the study's at the world sizes that fit
    (SLURM: 1, 4, 8); on fewer local GPUs than a study world size, a rehearsal of the missing ones
    (ranks sharing the GPUs, never scaling evidence); without GPUs the CPU smoke sweep."""
    n_gpus = 0 if args.cpu else gpus_here()
    slurm, why = slurm_gpus()
    if args.executor == "slurm" or (args.executor == "auto" and slurm and n_gpus == 0 and not args.cpu):
        executor = "slurm"
    else:
        executor = "local"
        if args.executor == "auto" and n_gpus == 0:
            say(f"not submitting to SLURM: {why}")
    if not n_gpus and executor != "slurm":
        say(
            "no GPU here (and no SLURM to use): the embedded default, a CPU smoke sweep (tiny model, gloo, world sizes "
            "1 and 2), traced by torch.profiler; the sweep records why not Score-P as a fallback of every traced run"
        )
        smoke = [*CLI, "sweep", "--gpus", "1,2", "--device", "cpu", "--tracer", "auto", "--repeats", "2"]
        return [("smoke", [*smoke, "--out", str(out / "smoke" / "runs"), "--", *SMOKE_TRAIN])], {}
    extra = (["--image", str(image_path())] if image_path() else ["--no-container"]) if executor == "slurm" else []
    if args.gpus == "auto":
        sizes = [1, 4, 8] if executor == "slurm" else list(AUTO_SIZES)
    else:
        sizes = [int(x) for x in args.gpus.split(",")]
    plan: dict = {}
    skipped = [n for n in sizes if executor == "local" and n > n_gpus]
    sizes = [n for n in sizes if n not in skipped]
    sweeps = []
    base = [*CLI, "sweep", "--executor", executor, *extra, "--tracer", args.tracer]
    if sizes:
        say(f"{n_gpus} GPU(s) here, executor {executor}: the study's sweep at world sizes {sizes}")
        sweeps.append(("gpu", [*base, "--gpus", ",".join(map(str, sizes)), "--out", str(out / "gpu" / "runs")]))
    if skipped:
        plan["not_run"] = skipped
        rehearsed = [n for n in skipped if n <= REHEARSAL_MAX_RANKS_PER_GPU * n_gpus]
        plan["rehearsed"] = rehearsed
        say(
            f"world sizes {skipped} need more than the {n_gpus} GPU(s) here: their claims will be NOT RUN; "
            f"world sizes {rehearsed} run as a rehearsal (ranks share the GPUs, NCCL over loopback sockets): "
            "it shows the multi-GPU path work and is never judged as scaling"
        )
        if rehearsed:
            cmd = [*base, "--rehearse", "--gpus", ",".join(map(str, [1, *rehearsed])), "--out", str(out / "rehearsal" / "runs")]
            sweeps.append(("rehearsal", cmd))
    return sweeps, plan


def run_machine_sweeps(args: argparse.Namespace, out: Path, claims: Path, plan: dict) -> tuple[list, list[str]]:
    """Run this machine's sweeps and analyse each; returns the result sets and the failures."""
    sweeps, extra = machine_sweeps(args, out)
    plan.update(extra)
    result_sets, failures = [], []
    for name, sweep_cmd in sweeps:
        plan["steps"].append({"name": name, "command": sweep_cmd})
        rc = run(sweep_cmd, check=False)
        if rc != 0:
            say(f"the sweep reported failed runs (exit {rc}); analysing what completed")
        verdict_rc = analyse_and_check(out / name / "runs", out / name / "results", claims)
        if verdict_rc is not None:
            result_sets.append((name, out / name / "results", verdict_rc))
        else:
            failures.append(f"{name}: the sweep produced nothing that could be analysed (exit {rc})")
    return result_sets, failures


def rederive_references(out: Path, claims: Path) -> tuple[list, list[str]]:
    """Analyse and check every reference set shipped in ``expected/reference/``."""
    result_sets, failures = [], []
    refs = reference_sets()
    if not refs:
        say("no reference traces in expected/reference/: nothing recorded on GPUs to re-derive")
    for ref in refs:
        name = f"reference-{ref.name}"
        verdict_rc = analyse_and_check(below_cwd(ref), out / name / "results", claims)
        if verdict_rc is not None:
            result_sets.append((name, out / name / "results", verdict_rc))
        else:
            failures.append(f"{name}: the analysis of the shipped traces failed")
    return result_sets, failures


def summary_lines(result_sets: list, mode: str, seconds: float, report_dir: Path) -> list[str]:
    """The closing summary: time, report, and per result set its verdict counts and fallbacks."""
    took = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    lines = [f"dnabert-scaling {mode}: {took}", f"report: {report_dir / 'report.html'}"]
    for name, results, _ in result_sets:
        verdicts = results / "verdicts.json"
        counts: dict[str, int] = {}
        if verdicts.is_file():
            for c in json.loads(verdicts.read_text()).get("claims", []):
                counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
        if name.startswith("reference-"):
            where = "pre-recorded traces shipped in expected/, re-analysed here"
        elif name == "rehearsal":
            where = "run on this machine as a rehearsal: ranks shared GPUs, not scaling evidence"
        else:
            where = "run on this machine"
        lines.append(
            f"{name} ({where}): "
            + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no verdicts")
            + f"  ({results / 'verdicts.txt'})"
        )
        metrics = results / "metrics.json"
        if metrics.is_file():
            for f in json.loads(metrics.read_text()).get("fallbacks", []):
                lines.append(f"    fallback: {f.get('what')}: {f.get('used')}")
    return lines


# What this script writes in --out: the summary, the report folder and one folder per result set
# (the machine's sweeps and each shipped reference set), each holding its sweep's runs and its results.
SUMMARY = "SUMMARY.txt"
SUMMARY_HEAD = b"dnabert-scaling "  # how summary_lines begins ("dnabert-scaling kick-tires: 71 s")
REPORT_NAMES = ("report.html", "report.ipynb", "report.failed.ipynb")
MACHINE_SETS = ("smoke", "gpu", "rehearsal")
SET_PARTS = ("runs", "results")


def _is_own(entry: Path) -> bool:
    """Whether a name directly in --out is one this script writes there, holding only what it writes
    (a temporary file or folder a killed writer left, ``.NAME.*``, included)."""
    name = entry.name
    if entry.is_symlink():
        return False
    if name == SUMMARY:  # by its content too: the first line this script writes (summary_lines)
        try:
            with entry.open("rb") as f:
                return entry.is_file() and f.read(len(SUMMARY_HEAD)) == SUMMARY_HEAD
        except OSError:
            return False
    if not entry.is_dir():
        return False
    if name == "report":
        own = REPORT_NAMES
    elif name in MACHINE_SETS or name.startswith("reference-"):
        own = SET_PARTS
    else:
        return False
    return all(p.name in own or any(p.name.startswith(f".{n}.") for n in own) for p in entry.iterdir())


def foreign_entries(out: Path) -> list[str]:
    """The names in ``out`` that this script does not write there: a folder holding any is not an earlier
    output of ``make reproduce`` or ``make kick-tires`` (which a rerun writes into again)."""
    return sorted(p.name for p in out.iterdir() if not _is_own(p)) if out.is_dir() else []


def prepare_out(out: Path) -> None:
    """Create the output folder, refusing one that is a file or a symbolic link, one that is, holds or lies
    inside what this script reads (the shipped traces, results and claims): an output must never land on
    the evidence; and a folder holding anything but an earlier output of this script (``foreign_entries``),
    into which it would write its set folders, report and summary beside someone else's files."""
    from dnabert_scaling.outputs import refuse_link, refuse_overlap, refuse_protected, shown_names

    refuse_link(out, "--out")
    if out.exists() and not out.is_dir():
        raise ArtifactError("--out: exists and is not a folder", out)
    expected = ROOT / "expected"
    refuse_overlap([("--out", out)], [expected / "reference", expected / "reference-results", expected / "claims.toml"])
    refuse_protected(out, "--out")  # anywhere else inside expected/ as well, or inside a sweep or a run
    foreign = foreign_entries(out)
    if foreign:
        raise ArtifactError(
            f"--out: holds files this script did not write ({shown_names(foreign)}); give a new or empty folder, or the "
            "folder of an earlier `make reproduce` or `make kick-tires`",
            out,
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactError(f"--out: cannot create the folder ({exc.strerror})", out) from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("reproduce"))
    p.add_argument("--kick-tires", action="store_true", help="only the shipped reference traces")
    p.add_argument(
        "--gpus", default="auto", help="world sizes of the GPU sweep; auto: 1, 2, 4, 8 that fit the GPUs here (SLURM: 1, 4, 8)"
    )
    p.add_argument("--executor", choices=("auto", "local", "slurm"), default="auto")
    p.add_argument("--tracer", default="auto")
    p.add_argument("--cpu", action="store_true", help="run the CPU smoke sweep even where GPUs exist")
    args = p.parse_args(argv)
    # shorter, machine-independent paths in the outputs when they lie below the working directory
    out = below_cwd(args.out)
    try:
        prepare_out(out)
    except ArtifactError as exc:
        print(f"reproduce: error: {exc}", file=sys.stderr)
        return 2
    claims = below_cwd(ROOT / "expected" / "claims.toml")
    t0 = time.monotonic()
    plan: dict = {"kick_tires": args.kick_tires, "steps": []}
    result_sets, failures = run_machine_sweeps(args, out, claims, plan) if not args.kick_tires else ([], [])
    refs, ref_failures = rederive_references(out, claims)
    result_sets, failures = result_sets + refs, failures + ref_failures
    if not result_sets:
        say("nothing was analysed")
        return 1
    report_dir = out / "report"
    written_by = (
        "make kick-tires (scripts/reproduce.py --kick-tires)" if args.kick_tires else "make reproduce (scripts/reproduce.py)"
    )
    run([*CLI, "report", *[str(r) for _, r, _ in result_sets], "--out", str(report_dir), "--written-by", written_by])
    lines = summary_lines(result_sets, "kick-tires" if args.kick_tires else "reproduce", time.monotonic() - t0, report_dir)
    if args.kick_tires:
        lines += compare_with_shipped(result_sets)
    lines += [f"FAILED: {f}" for f in failures]
    (out / "SUMMARY.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
