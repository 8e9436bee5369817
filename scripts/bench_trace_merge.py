"""bench_trace.py --merge: one document from the rounds of several earlier outputs of one set-up, and the
check of each input first (every shape the summaries read, no run given twice, no two runs of one file
name), so that a damaged or repeated input is refused with its reason rather than summarised."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bench_trace_modes import CUPTI_COUNT_KEYS, DOMAIN_FILTER_KEYS, MICRO_KEYS, STEP_FIGURES
from bench_trace_printout import say, show
from bench_trace_summary import experiments_of, nonnegative_number, per_call, summarise

from dnabert_scaling.errors import ArtifactError, loads_json, regular_file
from dnabert_scaling.outputs import write_text_atomic

MERGE_KEYS = ("model", "warmup", "steps", "configs", "step_sync")
# what a run's machine record must hold alike in every run pooled (where the runs record it): the card, the Score-P
# patches of the build, and the software that decides which kernels a step launches
SAME_MACHINE = ("device", "scorep_patches", "torch", "cuda")


def merge(args) -> int:
    """One document from the rounds of several runs of the same set-up (same model, configurations,
    steps and step synchronisation): rounds renumbered, each naming its source; the kernel counts of
    every source (``counts[mode]["experiments"]``), the share of kernels found taken over all of them."""
    docs = read_inputs(args.merge)
    if docs is None:
        return 2
    first = docs[0][1]
    for name, doc in docs[1:]:
        differ = [k for k in MERGE_KEYS if doc.get(k) != first.get(k)]
        if differ:
            say(f"bench-trace: {name}: another set-up than {docs[0][0]} ({', '.join(differ)}); not merged")
            return 2
    why = unlike_runs(docs, args.pool_unrecorded)
    if why:
        say(f"bench-trace: {why}; its rounds cannot be pooled with theirs, not merged")
        return 2
    rounds, counts, sources = join_runs(docs)
    runs = [run["file"] for run in sources]
    twice = sorted({f for f in runs if runs.count(f) > 1})
    if twice:  # the merged rounds name their run by file name alone (an input's, or a run of a merged input)
        say(
            f"bench-trace: {', '.join(map(str, twice))}: another input has the same file name (a run of a merged input "
            "counts); the merged rounds name their run by it, so give each run a name of its own (copy or rename one)"
        )
        return 2
    identities: dict[tuple, str] = {}
    for run in sources:  # one run given twice under two names, or edited: the documents tell runs apart by these
        if all(run.get(k) is None for k in ("date", "revision", "wall_s")):
            continue  # nothing to tell it by: the documents judge no merge of such runs (tools/cost_verdicts.py)
        # a run's wall time, to 0.1 s, with its date and revision: a copy cut to fewer rounds keeps them; without a
        # wall time, its number of rounds as well
        keys = ("date", "revision", "wall_s") if run.get("wall_s") is not None else ("date", "revision", "rounds")
        ident = tuple(str(run.get(k)) for k in keys)
        if ident in identities:
            say(
                f"bench-trace: {run['file']}: the same run as {identities[ident]} (its {', '.join(keys)}): a copy of "
                "a run, edited or cut, is not a second run; give each run once"
            )
            return 2
        identities[ident] = run["file"]
    out = {k: first.get(k) for k in ("method", "device", *MERGE_KEYS)}
    settings = {m: v for _, doc in docs for m, v in (doc.get("mode_settings") or {}).items()}  # alike, checked above
    out.update(
        mode_settings=settings or None,
        merged_from=sources,
        modes=summarise(rounds, first["configs"], counts),
        per_call=per_call(rounds),
    )
    out.update(counts=counts, rounds=rounds)
    show(out)
    if args.json:
        write_text_atomic(args.json, json.dumps(out, indent=1) + "\n")
    return 0


def read_inputs(names: list[str]) -> list[tuple[str, dict]] | None:
    """Each input, read and checked, as (its name, its document); or None, said on stderr, where one cannot
    be read, is not a bench-trace output, has the content of another or holds a round another holds."""
    docs, seen, rounds_seen = [], {}, {}
    for name in names:
        try:
            regular_file(name, "a bench-trace output")
            raw = Path(name).read_bytes()
            try:
                doc = loads_json(raw.decode("utf-8"))  # a key twice is refused: which one counts is a parser's choice
            except UnicodeDecodeError:
                raise ValueError("not UTF-8 text") from None
            except RecursionError:  # nested deeper than Python's parser goes: no bench-trace output is
                raise ValueError("nested too deeply to be read") from None
            why = merge_input_problem(doc)
            if why:
                raise ValueError(why)
            doc.setdefault("step_sync", "device")  # the first lockstep version (d6ee75a) knew no other
        except ArtifactError as exc:
            say(f"bench-trace: {exc}")
            return None
        except OSError as exc:
            say(f"bench-trace: {name}: cannot be read ({exc.strerror or exc})")
            return None
        except ValueError as exc:
            say(f"bench-trace: {name}: not a bench-trace output ({exc})")
            return None
        digest = hashlib.sha256(raw).hexdigest()
        if digest in seen:  # the same rounds twice would count twice
            say(f"bench-trace: {name}: the same content as {seen[digest]}; give each output once")
            return None
        seen[digest] = name
        for r in doc["rounds"]:  # a round already given, in another file or a merge that holds it
            if not any(r.get("steps_ms", {}).values()):
                continue  # a round without step times adds nothing to the figures
            mark = round_mark(r)
            if mark in rounds_seen:
                where = rounds_seen[mark]
                say(
                    f"bench-trace: {name}: its round {r['round']} is also {where} (the same step times, or all of them "
                    "scaled by one factor): "
                    "a merge that holds a run is not merged with that run again; give each run once"
                )
                return None
            rounds_seen[mark] = f"round {r['round']} of {name}"
        docs.append((name, doc))
    return docs


def runs_of(name: str, doc: dict) -> list[tuple[str, dict]]:
    """The runs an input holds, as (how to name it, its document's record of it): the file itself, or each run a
    merged input lists."""
    inner = doc.get("merged_from")
    if inner:
        return [(f"{name}'s run {e['file']}", e) for e in inner]
    return [(name, doc)]


def unlike_runs(docs: list[tuple[str, dict]], pool_unrecorded: bool = False) -> str | None:
    """Where two runs to be pooled ran unlike set-ups, which and how (the first such); else None: the machine
    records' ``SAME_MACHINE`` fields (a run that records none of a field another run records cannot be told
    alike, unless ``pool_unrecorded``), the CPU pinning, and the settings of a mode two runs ran."""
    runs = [run for name, doc in docs for run in runs_of(name, doc)]
    for key in SAME_MACHINE:  # the card: the machine record's, else the run's own device name
        values = [
            (where, (run.get("machine") or {}).get(key) or (run.get(key) if key == "device" else None)) for where, run in runs
        ]
        unknown = [where for where, value in values if value is None]
        known = [(where, value) for where, value in values if value is not None]
        for where, value in known[1:]:
            if value != known[0][1]:
                return f"{where}: machine.{key} is {value!r}, but {known[0][0]}'s is {known[0][1]!r}"
        if known and unknown and not pool_unrecorded:
            return (
                f"{unknown[0]}: records no machine.{key}, so it cannot be told to match {known[0][0]}'s {known[0][1]!r} "
                "(--pool-unrecorded pools it: runs recorded before that bookkeeping)"
            )
    pinned = [(where, run.get("cpus")) for where, run in runs]  # null: not pinned, itself a set-up
    for where, cpus in pinned[1:]:
        if cpus != pinned[0][1]:
            return (
                f"{where}: its processes ran pinned to CPUs {cpus!r}, but {pinned[0][0]}'s to {pinned[0][1]!r} (null: not pinned)"
            )
    settings: dict[str, tuple[str, object]] = {}
    for name, doc in docs:
        for mode, value in (doc.get("mode_settings") or {}).items():
            first = settings.setdefault(mode, (name, value))
            if first[1] != value:
                return f"{name}: its mode {mode} ran with {value!r}, but {first[0]}'s with {first[1]!r}"
    for name, doc in docs:  # a mode run without its settings recorded, beside a run that records them
        ran = {m for r in doc["rounds"] for m in (r.get("processes") or {})}
        unrecorded = sorted(m for m in ran if m in settings and m not in (doc.get("mode_settings") or {}))
        if unrecorded and not pool_unrecorded:
            return f"{name}: ran {unrecorded[0]} but records no settings of it, so it cannot be told to match {settings[unrecorded[0]][0]}'s"
    return None


def join_runs(docs: list[tuple[str, dict]]) -> tuple[list[dict], dict[str, dict], list[dict]]:
    """The inputs' rounds renumbered, each naming its run; every run's counted experiments per mode; the
    runs (a merged input gives the runs it holds, its rounds and counts keeping theirs)."""
    rounds: list[dict] = []
    counts: dict[str, dict] = {}
    sources: list[dict] = []
    for name, doc in docs:
        inner = doc.get("merged_from")  # a merged input: its rounds keep their own run, as its counts do
        for r in doc["rounds"]:
            if inner:
                rounds.append({**r, "round": len(rounds)})
            else:
                rounds.append({**r, "round": len(rounds), "source": Path(name).name, "source_round": r["round"]})
        for mode, c in (doc.get("counts") or {}).items():  # every source's counted experiments, none dropped
            found = counts.setdefault(mode, {"experiments": []})["experiments"]
            found += [
                {**e, "source": e.get("source") or Path(name).name} for e in experiments_of(c)
            ]  # a merged input keeps its sources
        keep = ("date", "revision", "cpus", "wall_s", "machine")
        if inner:
            sources += inner
        else:
            sources.append({"file": Path(name).name, "rounds": len(doc["rounds"]), **{k: doc.get(k) for k in keep}})
    return rounds, counts, sources


def round_mark(r: dict) -> str:
    """What identifies a measured round across files: its step times, which a merge copies unchanged, each over the
    round's first step time and rounded to 6 significant digits, so that a copy with every time scaled by one factor
    is the same round too (two rounds measured apart never share every step time's proportion to the others)."""
    times = r.get("steps_ms") or {}
    first = next((xs[0] for per_mode in times.values() for xs in per_mode.values() if xs), 1.0)
    shape = {c: {m: [float(f"{t / first:.6g}") for t in xs] for m, xs in per_mode.items()} for c, per_mode in times.items()}
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


def _count(x) -> bool:
    return type(x) is int and x >= 0


def round_problem(r: dict) -> str | None:
    """What in one round (beyond its number and step times) ``summarise``, ``trace_figures`` and
    ``per_call`` could not read, or None: each field they read, with the type they need."""
    if type(r.get("micro")) is not bool:
        return "'micro' (whether the round ran the per-call loops) is missing or not true or false"
    procs = r.get("processes", {})
    if not isinstance(procs, dict) or not all(isinstance(p, dict) for p in procs.values()):
        return "'processes' is not one entry per mode"
    sized = any(p.get("trace_bytes") is not None for p in procs.values())
    if sized and not (type(r.get("executed_steps")) is int and r["executed_steps"] > 0):
        return "trace sizes without a positive number of executed steps"
    for mode, p in procs.items():
        if p.get("trace_bytes") is not None and not _count(p["trace_bytes"]):
            return f"{mode}: a trace size that is not a whole number of bytes"
        records = p.get("cupti_records")
        if records is not None and not (isinstance(records, dict) and all(_count(records.get(k, 0)) for k in CUPTI_COUNT_KEYS)):
            return f"{mode}: CUPTI record counts that are not whole numbers"
        filtered = p.get("domain_filter")
        if filtered is not None and not (
            isinstance(filtered, dict) and all(_count(filtered.get(k, 0)) for k in DOMAIN_FILTER_KEYS)
        ):
            return f"{mode}: domain filter counts that are not whole numbers"
    for key in STEP_FIGURES.values():  # per-step figures beside the times (absent in older runs)
        per_cfg = r.get(key, {})
        if not isinstance(per_cfg, dict) or not all(
            isinstance(per_mode, dict)
            and all(isinstance(xs, list) and all(nonnegative_number(x) for x in xs) for xs in per_mode.values())
            for per_mode in per_cfg.values()
        ):
            return f"'{key}' is not a list of non-negative numbers per configuration and mode"
    calls = r.get("per_call", {})
    if not isinstance(calls, dict) or not all(
        isinstance(turns, list) and all(isinstance(t, dict) for t in turns) for turns in calls.values()
    ):
        return "per-call figures that are not a list of turns per mode"
    for turns in calls.values():
        for t in turns:
            if not all(t.get(k) is None or nonnegative_number(t[k]) for k in MICRO_KEYS):
                return "per-call figures that are not numbers of nanoseconds"
    return None


def machine_problem(machine) -> str | None:
    """What in a run's machine record the documents could not read (they pool runs by its device and Score-P
    patches), or None; a record may be missing (null)."""
    if machine is None:
        return None
    if not isinstance(machine, dict):
        return "'machine' is not a record of the machine"
    patches = machine.get("scorep_patches")
    if patches is not None and not (isinstance(patches, list) and all(isinstance(p, str) for p in patches)):
        return "'machine.scorep_patches' is not a list of patch file names"
    if machine.get("device") is not None and not isinstance(machine["device"], str):
        return "'machine.device' is not a device name"
    return None


def merge_input_problem(doc) -> str | None:
    """What makes ``doc`` unfit for a merge (the shapes ``summarise`` reads), or None."""
    if not isinstance(doc, dict) or not isinstance(doc.get("rounds"), list) or not doc["rounds"]:
        return "no rounds"
    runs = doc["merged_from"] if isinstance(doc.get("merged_from"), list) else []  # its shape is checked below
    machines = [("", doc.get("machine"))] + [
        (f"merged run {i}: ", e.get("machine")) for i, e in enumerate(runs) if isinstance(e, dict)
    ]
    for where, machine in machines:
        why = machine_problem(machine)
        if why:
            return where + why
    configs = doc.get("configs")
    if not isinstance(configs, list) or not configs or not all(isinstance(c, str) for c in configs):
        return "no list of configurations"
    if doc.get("device") is not None and not isinstance(doc["device"], str):
        return "'device' is not a device name"
    if not (type(doc.get("steps")) is int and doc["steps"] > 0):
        return "'steps' (the measured steps of a turn) is not a positive whole number"
    settings = doc.get("mode_settings")
    if settings is not None and not (
        isinstance(settings, dict) and all(v is None or isinstance(v, dict) for v in settings.values())
    ):
        return "'mode_settings' is not one record (or null) per mode"
    for r in doc["rounds"]:
        if not isinstance(r, dict) or type(r.get("round")) is not int or not isinstance(r.get("steps_ms", {}), dict):
            return "a round without its number or its step times"
        for cfg, times in r.get("steps_ms", {}).items():
            for mode, steps in times.items() if isinstance(times, dict) else [("", None)]:
                ok = isinstance(steps, list) and all(type(t) in (int, float) and 0 < t < float("inf") for t in steps)
                if not ok:
                    return f"round {r['round']}: step times that are not positive numbers"
                if len(steps) > doc["steps"] or (len(steps) < doc["steps"] and not r.get("error")):
                    # only a round whose process failed stops short; a list of another length is no round this ran
                    return (
                        f"round {r['round']}: {len(steps)} step times of {mode} at {cfg}, but its turns measure "
                        f"{doc['steps']} steps and the round records no error"
                    )
        why = round_problem(r)
        if why:
            return f"round {r['round']}: {why}"
    if "merged_from" in doc:  # a merge merged again: each round keeps the run it names
        runs = doc["merged_from"]
        if not (isinstance(runs, list) and runs and all(isinstance(e, dict) and isinstance(e.get("file"), str) for e in runs)):
            return "'merged_from' is not a list of runs, each with its file name"
        names = {e["file"] for e in runs}
        if any(r.get("source") not in names for r in doc["rounds"]):
            return "a round that names none of its merged runs ('source')"
    counts = doc.get("counts") or {}
    if not isinstance(counts, dict) or not all(isinstance(c, dict) for c in counts.values()):
        return "kernel counts that are not one entry per mode"
    for mode, c in counts.items():
        if "experiments" in c and not (isinstance(c["experiments"], list) and all(isinstance(e, dict) for e in c["experiments"])):
            return f"{mode}: kernel counts that are not a list of experiments"
        for e in experiments_of(c):
            numbers = [e.get("launches"), e.get("kernels")]
            if "error" not in e and not all(type(n) is int and n >= 0 for n in numbers):
                return f"{mode}: kernel counts that are not whole numbers of launches and kernels"
    return None
