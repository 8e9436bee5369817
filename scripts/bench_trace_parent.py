"""bench_trace.py's parent: a run (its set-up checked and built, its rounds, the kernel counts, the
document printed and written to ``--json``) or a merge of earlier runs, never writing over an input."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_trace_lockstep import run_round
from bench_trace_merge import merge
from bench_trace_modes import CUPTI_CLIENT_MODES, DOMAIN_FILTER_MODES, mode_settings, parse_configs
from bench_trace_printout import say, show
from bench_trace_setup import build_cupti_client, build_domain_filter, build_sampler, check_setup, machine, revision
from bench_trace_summary import count_kernels, per_call, summarise

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.outputs import foreign_json, refuse_overlap, writable_file, write_text_atomic


def bench_output_problem(data, merging: bool) -> str | None:
    """Why ``--json`` may not replace the JSON document found there, or None where it may: a measurement replaces an
    earlier bench-trace output (``make bench-trace`` run again); a merge only an earlier merge, which its runs make
    again, never a run's own measurements (it may be one of the runs a shipped merge names)."""
    shape = {"method": str, "configs": list, "modes": list, "rounds": list}
    if not isinstance(data, dict) or not all(isinstance(data.get(k), t) for k, t in shape.items()):
        return "a JSON file that is not a bench-trace output"
    if merging and not (isinstance(data.get("merged_from"), list) and data["merged_from"]):
        return "a run's own measurements, which no command makes again"
    return None


def parent(args) -> int:
    if args.json:  # never over an input, never half-written
        try:
            refuse_overlap([("--json", args.json)], args.merge or [])
            writable_file(args.json, "--json")
            foreign = foreign_json(Path(args.json), lambda data: bench_output_problem(data, bool(args.merge)))
            if foreign:  # a device, a FIFO, somebody's notes: replaced by a rename, they would be gone
                raise ArtifactError(
                    f"--json: exists ({foreign}); only an earlier bench-trace "
                    f"{'merge' if args.merge else 'output'} is replaced, so it is not overwritten: give another path, "
                    "or remove it first",
                    args.json,
                )
            if args.sample and Path(args.sample).resolve() == Path(args.json).resolve():  # the folder would take its place
                raise ArtifactError("--json: is also the --sample folder; write them to two places", args.json)
        except ArtifactError as exc:
            say(f"bench-trace: {exc}")
            return 2
    if args.merge:
        return merge(args)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    why = check_setup(args, modes)
    if why:
        print(why, file=sys.stderr)
        return 2
    args.config_names = [f"{b}x{s}" for b, s in parse_configs(args.configs)]
    work = Path(tempfile.mkdtemp(prefix="bench-trace-"))
    try:
        args.cupti_client = args.sampler = None
        if args.sample:
            args.sampler, why = build_sampler(work, Path(args.sample))
            if why:
                print(why, file=sys.stderr)
                return 2
        if any(m in CUPTI_CLIENT_MODES for m in modes):
            args.cupti_client, why = build_cupti_client(work, modes=tuple(m for m in modes if m in CUPTI_CLIENT_MODES))
            if why:
                print(why, file=sys.stderr)
                return 2
        if filtered_modes(modes):
            _, why = build_domain_filter(work, filtered_modes(modes))
            if why:
                print(why, file=sys.stderr)
                return 2
        return measure(args, modes, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the experiments are counted by then


def filtered_modes(modes: list[str]) -> tuple[str, ...]:
    """The modes asked for that run with scripts/cupti_domain_filter.c preloaded."""
    return tuple(m for m in modes if m in DOMAIN_FILTER_MODES)


def measure(args, modes: list[str], work: Path) -> int:
    """The rounds, the kernel counts, the document: printed, and written to ``--json``."""
    rounds: list[dict] = []
    started = time.monotonic()
    for rnd in range(args.rounds):
        if rnd and time.monotonic() - started > args.budget_s:
            print(f"# bench-trace: time budget spent after {rnd} rounds", flush=True)
            break
        t0 = time.monotonic()
        row = run_round(rnd, modes, args, work, micro=rnd == 1 and not args.no_micro)
        row["executed_steps"] = len(args.config_names) * (args.warmup + args.steps)
        row["wall_s"] = round(time.monotonic() - t0, 1)
        rounds.append(row)
        print(f"# round {rnd}: {row['wall_s']} s{' ' + row['error'] if 'error' in row else ''}", flush=True)
    counts = count_kernels(rounds, modes, args.count)
    host = machine()
    doc = {
        "method": "lockstep: one process per mode and round, taking turns step by step (see the script's docstring)",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": host,
        "device": host.get("device", args.device),
        "model": args.model,
        "cpus": args.cpus,
        "step_sync": args.step_sync,
        "counted": args.count,
        "revision": revision(),
        "warmup": args.warmup,
        "steps": args.steps,
        "configs": args.config_names,
        "mode_settings": mode_settings(modes),
        "cupti_client": getattr(args, "cupti_client", None),
        # the modes run with scripts/cupti_domain_filter.c preloaded (their Score-P variables are the default's)
        **({"domain_filter_modes": list(filtered_modes(modes))} if filtered_modes(modes) else {}),
        "modes": summarise(rounds, args.config_names, counts),
        "per_call": per_call(rounds),
        "counts": counts,
        "rounds": rounds,
        "wall_s": round(time.monotonic() - started, 1),
    }
    show(doc)
    if args.json:
        write_text_atomic(args.json, json.dumps(doc, indent=1) + "\n")
    return 0 if doc["modes"] else 1
