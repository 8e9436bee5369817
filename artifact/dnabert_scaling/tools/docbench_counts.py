"""Figures of the shipped Score-P benchmark (``h200-bench/bench-trace-scorep.json``) that ARTIFACT.md F
quotes in its prose: what one process of Score-P as released records on the host against launch-only
Score-P (``scripts/scorep_count.py``'s counts of every round's experiment), and how far apart the
untraced steps of one configuration lie across the rounds (why only steps seconds apart compare)."""

from __future__ import annotations

import statistics

from dnabert_scaling.analysis.stats import is_finite_number
from dnabert_scaling.tools.docbench import bench_file
from dnabert_scaling.tools.docfacts import Facts

SHIPPED = "h200-bench/bench-trace-scorep.json"
AS_RELEASED, LAUNCH_ONLY = "scorep-all", "scorep-launch"
QUERIES = ("cuCtxGetDevice_v2", "cuDevicePrimaryCtxGetState")  # the context queries PyTorch makes around a launch
LAUNCHES = ("cuLaunchKernel", "cuLaunchKernelEx")


def _dict(x: object) -> dict:
    """``x`` where it is a JSON object, else {} (a hand-edited file reads as holding nothing there)."""
    return x if isinstance(x, dict) else {}


def _count(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _experiments(data: dict, mode: str) -> tuple[list[dict], str | None]:
    """``mode``'s counted experiments (a positive count of Enter events each), or the reason they cannot be
    read: one process counted twice (its round and run repeated), or a region holding more events than the
    process, or a count that is not a whole number."""
    counts = _dict(_dict(data.get("counts")).get(mode)).get("experiments")
    found = [
        e
        for e in (counts if isinstance(counts, list) else [])
        if isinstance(e, dict) and _count(e.get("host_enters")) and e["host_enters"] > 0
    ]
    keys = [(str(e.get("source")), e.get("round")) for e in found]
    if len(set(keys)) != len(keys):
        return [], f"`{mode}` lists one counted process twice"
    for e in found:
        regions = _dict(e.get("top_host_regions"))
        if not all(_count(x) and x <= e["host_enters"] for x in regions.values()):
            return [], f"a counted process of `{mode}` has a region count that is not a whole number at most its events"
    return found, None


def _span(values: list[int]) -> str:
    return f"{min(values):,}" if min(values) == max(values) else f"{min(values):,}-{max(values):,}"


def _share(experiments: list[dict], names: tuple[str, ...]) -> str:
    """The share of the Enter events that ``names`` hold, over the experiments (a range where they differ);
    "not among the listed regions" where a process's top list leaves one out (a share it cannot give)."""
    if any(n not in _dict(e.get("top_host_regions")) for e in experiments for n in names):
        return "a share not known (not among the listed regions)"
    shares = [sum(e["top_host_regions"][n] for n in names) / e["host_enters"] for e in experiments]
    lo, hi = f"{100 * min(shares):.1f}%", f"{100 * max(shares):.1f}%"
    return lo if lo == hi else f"{lo}-{hi}"


def host_events(facts: Facts, _: str | None) -> str:
    """The Enter events of one benchmark process under Score-P as released and under launch-only Score-P,
    and the shares of the context queries and of the launches among the former."""
    data = bench_file(facts, SHIPPED)
    (full, problem), (launch, launch_problem) = _experiments(data, AS_RELEASED), _experiments(data, LAUNCH_ONLY)
    if problem or launch_problem:
        return f"(the counts of `{SHIPPED}` are not read: {problem or launch_problem})"
    if not full:
        return f"(no counted experiment of `{AS_RELEASED}` in `{SHIPPED}`)"
    configs = data.get("configs")
    sizes = ", ".join(str(c) for c in configs) if isinstance(configs, list) and configs else "?"
    steps = f"{data.get('warmup', '?')} warm-up and {data.get('steps', '?')} measured steps at each of {sizes}"
    text = (
        f"{_span([e['host_enters'] for e in full])} Enter events in each of {len(full)} counted processes of Score-P as released "
        f"(`{AS_RELEASED}`; a process runs {steps}), {_share(full, QUERIES[:1])} of them `{QUERIES[0]}` and "
        f"{_share(full, QUERIES[1:])} `{QUERIES[1]}`, {_share(full, LAUNCHES)} kernel launches (`{'`, `'.join(LAUNCHES)}`)"
    )
    if launch:
        text += f"; launch-only Score-P (`{LAUNCH_ONLY}`) records {_span([e['host_enters'] for e in launch])} for the same work"
    return text + f" (`expected/reference/{SHIPPED}`, `counts`)"


def untraced_spread(facts: Facts, _: str | None) -> str:
    """The range of the rounds' median untraced step, per configuration, with the ratio of its ends: over
    every round, and within the run (one lent machine) where it is widest."""
    data = bench_file(facts, SHIPPED)
    parts = []
    configs = data.get("configs")
    for config in [c for c in configs if isinstance(c, str)] if isinstance(configs, list) else []:
        per_run: dict[str, list[float]] = {}
        keys = [(str(r.get("source")), r.get("round")) for r in data.get("rounds") or []]
        if len(set(keys)) != len(keys):
            return f"(the rounds of `{SHIPPED}` are not read: one round of one run is listed twice)"
        for r in data.get("rounds") or []:
            steps = _dict(_dict(r.get("steps_ms")).get(config)).get("untraced")
            if isinstance(steps, list) and steps and all(is_finite_number(x) and x > 0 for x in steps):
                per_run.setdefault(str(r.get("source") or "the run"), []).append(statistics.median(steps))
        medians = [x for xs in per_run.values() for x in xs]
        if len(medians) < 2:
            continue
        text = (
            f"{min(medians):.1f}-{max(medians):.1f} ms at {config} ({max(medians) / min(medians):.2f}x over {len(medians)} rounds"
        )
        if len(per_run) > 1:
            run, xs = max(per_run.items(), key=lambda kv: max(kv[1]) / min(kv[1]))
            text += f" of {len(per_run)} runs; within one run up to {max(xs) / min(xs):.2f}x, {run}"
        parts.append(text + ")")
    if not parts:
        return f"(no untraced rounds in `{SHIPPED}`)"
    return "the rounds' median untraced step " + ", ".join(parts) + f" (`expected/reference/{SHIPPED}`)"
