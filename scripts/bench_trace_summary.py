"""bench_trace.py's figures from the rounds: per mode and configuration the paired step ratios (per
round, over the rounds, pooled), the per-step figures beside the times, the trace figures (bytes per
step, kernels found, the CUPTI client's counts), the kernel counts of the Score-P experiments and the
per-call figures. A run and a merge of runs summarise their rounds alike."""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from bench_trace_modes import DOMAIN_FILTER_MODES, MICRO_KEYS, MODES, STEP_FIGURES


def nonnegative_number(x) -> bool:
    """Whether ``x`` is a finite number of at least 0 (a figure as a round holds it; no bool, no string)."""
    return type(x) in (int, float) and 0 <= x < float("inf")


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


def paired_ratios(row: dict, cfg: str, mode: str) -> list[float]:
    """Each measured step of ``mode`` over the untraced step of the same turn."""
    times = row.get("steps_ms", {}).get(cfg, {})
    mine, base = times.get(mode) or [], times.get("untraced") or []
    if len(mine) != len(base):  # a round cut short: its turns are not paired
        return []
    procs = row.get("processes") or {}
    statuses = [procs[m].get("exit_status") for m in (mode, "untraced") if isinstance(procs.get(m), dict)]
    if any(st is not None and not (type(st) is int and st == 0) for st in statuses):
        return []  # a process of the pair that failed (even after its last step) measured no set-up that works
    return [t / u for t, u in zip(mine, base) if u > 0]


def summarise(rounds: list[dict], configs: list[str], counts: dict[str, dict] | None = None) -> list[dict]:
    """Per mode and configuration: the per-round medians of the paired step ratios, their median
    and range over the rounds, and the median and quartiles of all pairs pooled."""
    counts = counts or {}
    rows = []
    for mode in MODES:
        for cfg in configs:
            per_round, pooled, steps, numbered = [], [], [], []
            thread: dict[str, list[float]] = {key: [] for key in STEP_FIGURES}  # per-round medians, where recorded
            for row in rounds:
                ratios = paired_ratios(row, cfg, mode)
                if ratios:
                    per_round.append(statistics.median(ratios))
                    numbered.append([row.get("round"), per_round[-1]])
                    pooled += ratios
                    steps.append(statistics.median(row["steps_ms"][cfg][mode]))
                    for key, name in STEP_FIGURES.items():
                        thread[key] += step_medians(row, name, cfg, mode)
            if not per_round:
                continue
            rows.append(
                {
                    "mode": mode,
                    "config": cfg,
                    "ratio_median": statistics.median(per_round),
                    "ratio_min": min(per_round),
                    "ratio_max": max(per_round),
                    "rounds": len(per_round),
                    "pooled_ratio_median": statistics.median(pooled),
                    "pooled_ratio_q1": quantile(pooled, 0.25),
                    "pooled_ratio_q3": quantile(pooled, 0.75),
                    "pairs": len(pooled),
                    "round_ratios": numbered,  # [round, its median ratio]: what the range is taken over
                    "step_ms_median": statistics.median(steps),
                    **step_thread_figures(thread),
                    **trace_figures(rounds, mode, counts.get(mode)),
                }
            )
    return rows


def step_thread_figures(per_round: dict[str, list[float]]) -> dict:
    """Per figure of STEP_FIGURES that some round recorded: its median over the rounds of the per-round
    medians per step (``<figure>_median``) and the rounds behind it (``<figure>_rounds``: a merge of runs
    of different versions may hold a figure for some rounds only). A figure no round recorded is left
    out, so outputs made before a figure existed, and their merges, stay as they were."""
    out = {}
    for key, xs in per_round.items():
        if xs:
            out[f"{key}_median"] = statistics.median(xs)
            out[f"{key}_rounds"] = len(xs)
    return out


def step_medians(row: dict, key: str, cfg: str, mode: str) -> list[float]:
    """[the median over the round's measured steps of ``row[key][cfg][mode]``], or [] where the round
    did not record it (rounds before these figures existed) or recorded a list of another length."""
    xs = (row.get(key) or {}).get(cfg, {}).get(mode)
    ok = isinstance(xs, list) and xs and len(xs) == len(row["steps_ms"][cfg][mode]) and all(nonnegative_number(x) for x in xs)
    return [statistics.median(xs)] if ok else []


def trace_figures(rounds: list[dict], mode: str, count: dict | None) -> dict:
    """Bytes per executed step (rounds without the per-call loops) and the share of launches whose
    kernel is in the trace; null outside Score-P and without launch records."""
    sizes = [
        r["processes"][mode]["trace_bytes"] / r["executed_steps"]
        for r in rounds
        if whole_round(r) and isinstance(r.get("processes", {}).get(mode, {}).get("trace_bytes"), int)
    ]
    client = [  # the bare CUPTI client's counts
        r["processes"][mode]["cupti_records"]
        for r in rounds
        if whole_round(r) and isinstance(r.get("processes", {}).get(mode, {}).get("cupti_records"), dict)
    ]
    every = experiments_of(count)
    counted = [c for c in every if isinstance(c.get("launches"), int)]
    launches = sum(c["launches"] for c in counted)
    found = sum(min(c["kernels"], c["launches"]) for c in counted)
    extra = {}
    if client:  # the bare CUPTI client's own counts: kernel records per process, records CUPTI dropped
        extra = {
            "cupti_kernel_records": [c.get("kernels") for c in client],  # one per process, in round order
            "cupti_dropped": sum(c.get("dropped") or 0 for c in client),
            "cupti_buffers_not_given": sum(c.get("buffers_not_given") or 0 for c in client),
            "cupti_flush_errors": sum(1 for c in client if "error" in c),
            "cupti_processes": len(client),
        }
        if any("domain_callbacks" in c for c in client):  # a client that counts them (after call T)
            extra["cupti_domain_callbacks"] = [c.get("domain_callbacks") for c in client]
        if any(c.get("launch_records") for c in client):  # the client's launch records (cupti-launch-records)
            extra["cupti_launch_records"] = [c.get("launch_records") for c in client]
            extra["cupti_linked_kernels"] = [c.get("linked_kernels") for c in client]
    linked = [c["kernels_linked"] for c in counted if isinstance(c.get("kernels_linked"), int)]
    if linked:  # launches that carry a correlation id (scorep-records-chunk4m): the kernels one of them names
        extra["kernels_linked"] = sum(linked)
        extra["experiments_linked"] = len(linked)
    if mode in DOMAIN_FILTER_MODES:  # each process's calls held back by scripts/cupti_domain_filter.c; None where
        # the process reported no counts (the filter was not loaded): listed, so the documents read it as not held back
        extra["domain_filter_held_back"] = [
            (r["processes"][mode].get("domain_filter") or {}).get("held_back")
            for r in rounds
            if "error" not in r and isinstance(r.get("processes", {}).get(mode), dict)
        ]
    return {
        **extra,
        "trace_bytes_per_step": statistics.median(sizes) if sizes else None,
        "kernels_found_share": found / launches if launches else None,
        # the counted experiments (one per run: a merge has one per source) and their sums
        "kernels_found": found if launches else None,
        "launches_counted": launches or None,
        "experiments_counted": len(counted) if launches else None,
        # experiments that could not be counted (an error in place of the numbers): never "every kernel found"
        "experiments_uncountable": len(every) - len(counted),
    }


def whole_round(r: dict) -> bool:
    """Whether a round's processes give per-process figures (trace size, kernel and record counts): no
    per-call loops (they add launches to the process) and no error (a process may have stopped early)."""
    return not r["micro"] and "error" not in r


def experiments_of(count: dict | None) -> list[dict]:
    """The counted experiments behind one mode's count: a merge's ``{"experiments": [...]}``, else the
    one count itself (an entry with ``error`` in place of the numbers was not counted)."""
    if not count:
        return []
    return list(count["experiments"]) if "experiments" in count else [count]


def count_kernels(rounds: list[dict], modes: list[str], which: str = "every") -> dict[str, dict]:
    """``scorep_count`` of the Score-P modes' experiments: of every round without per-call loops
    (``which="every"``), or of the first such round only (``"first"``). Per mode
    ``{"experiments": [count, ...]}``, each count naming its round; counted in parallel."""
    from concurrent.futures import ProcessPoolExecutor

    from scorep_count import count_summary

    jobs: list[tuple[str, int, str | None]] = []  # (mode, round, experiment; None: none finished)
    for mode in modes:
        if MODES[mode] is None:
            continue
        for r in rounds:
            if not whole_round(r):
                continue
            exp = r.get("processes", {}).get(mode, {}).get("experiment")
            jobs.append((mode, r["round"], exp if exp and Path(exp, "traces.otf2").is_file() else None))
            if which == "first":
                break
    out: dict[str, dict] = {}
    found = [exp for _, _, exp in jobs if exp]
    results = iter([])
    if found:
        with ProcessPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2) // 2, len(found)))) as pool:
            results = iter(list(pool.map(count_summary, found)))
    for mode, rnd, exp in jobs:  # a process of a whole round without its experiment is said, never skipped
        c = next(results) if exp else {"error": "the process left no finished experiment (no traces.otf2)"}
        out.setdefault(mode, {"experiments": []})["experiments"].append({**c, "round": rnd})
    return out


def per_call(rounds: list[dict]) -> list[dict]:
    """The per-call figures, one entry per mode: the median of every turn of every round that took
    them (a merge of runs has one such round per run), each turn's figure, and the rounds."""
    pooled: dict[str, dict] = {}
    for r in rounds:
        for mode, turns in (r.get("per_call") or {}).items():
            doc = pooled.setdefault(mode, {"mode": mode, "turns": 0, "rounds": []})
            doc["turns"] += len(turns)
            doc["rounds"].append(r.get("round"))
            for key in MICRO_KEYS:
                doc.setdefault(f"{key}_all", []).extend(t[key] for t in turns if isinstance(t.get(key), (int, float)))
    out = []
    for doc in pooled.values():
        for key in MICRO_KEYS:
            xs = doc[f"{key}_all"]
            if not xs and key == "page_fault_ns":  # not measured before this figure: left out, as then
                del doc[f"{key}_all"]
                continue
            doc[key] = statistics.median(xs) if xs else None
        out.append(doc)
    return out
