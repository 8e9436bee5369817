"""The summary of the default Score-P mode's ratio targets over every shipped benchmark file that ran it
(ARTIFACT.md G, the generated part ``scorep-targets-summary``); the default mode is that of each file's
build (:func:`docbench.default_mode_of`: launch-only, or launches from activity records where the build
carries the records patch). Each file is judged on its own rounds and
runs, then the rounds of the build the artifact ships pooled, with CUPTI alone and what the default mode
adds to the bare client that takes the launches the same way beside a target that build does not meet. The
rule is that of :mod:`cost_verdicts`; the shared names are :mod:`docbench`'s."""

from __future__ import annotations

from dnabert_scaling.errors import ArtifactError
from dnabert_scaling.tools import cost_verdicts as cv
from dnabert_scaling.tools.docbench import (
    CACHE_BENCH,
    LAUNCH_MODE,
    RECORDS_MODE,
    SCOREP_RATIO_TARGETS,
    bench_file,
    default_mode_of,
    run_patches,
)
from dnabert_scaling.tools.docbench_parts import H200_RECORDS_BENCH, PARTS_BENCH
from dnabert_scaling.tools.docfacts import Facts
from dnabert_scaling.tools.scorep_series import read_series

# the benchmark files whose default-mode rows the targets are judged on, with what the documents call them:
# every shipped file that ran the default mode, none of them a merge of another's runs (the summary refuses
# to pool a run twice)
TARGET_SETS = (
    ("h200-bench/bench-trace-scorep.json", "calls D to M"),  # the shipped file
    ("h200-bench/gpu-call-2026-12-04-cupti/bench-l.json", "call L"),
    (CACHE_BENCH, "calls N, O and P"),
    ("h200-bench/gpu-call-2026-12-04-profile/bench-abc.json", "calls A, B and C"),
    ("h200-bench/gpu-call-2026-12-05/bench-rs.json", "calls R and S"),
    (PARTS_BENCH, "call T"),
    (H200_RECORDS_BENCH, "call ZH"),  # the first build with the records patch: its default is records mode
)
# the bare CUPTI client that takes the launches as the mode does: with callbacks, or from activity records
CLIENT_OF = {LAUNCH_MODE: "cupti-launch", RECORDS_MODE: "cupti-launch-records"}
TARGET_DEVICE = "NVIDIA H200"  # issue 24's targets are of the lent H200: rounds of another card are never pooled with them
SERIES = "containers/scorep-patches/series-8.4"  # the build the artifact ships: this series' verified patches


def shipped_build(facts: Facts) -> tuple[str, ...] | None:
    """The patches, in order, of the Score-P the artifact builds (the verified entries of its series);
    None where the series cannot be read."""
    try:
        entries, _ = read_series(facts.root / SERIES)
    except OSError:
        return None
    return tuple(e.file for e in entries if e.status == "verified") or None


def mode_of_file(data: dict) -> str:
    """The default mode of the build a benchmark file's runs ran (:func:`docbench.default_mode_of`); the
    launch-only mode where its runs list no build or differ."""
    build = _build_of(data)
    return default_mode_of(build) if build else LAUNCH_MODE


def target_files(facts: Facts) -> list[tuple[str, dict, bool]]:
    """Every file of TARGET_SETS that ran its build's default mode, in order: (what the documents call it, its
    data, whether all its runs ran the build the artifact ships)."""
    build = shipped_build(facts)
    found = []
    for path, said in TARGET_SETS:
        data = bench_file(facts, path)
        devices = run_devices(data)
        if data and any(d != TARGET_DEVICE for d in devices):
            raise ArtifactError(
                f"{said}: its runs ran on {', '.join(sorted({str(d) for d in devices}))}, not only on the {TARGET_DEVICE} "
                "the targets are for; its rounds cannot be pooled with theirs (leave it out of TARGET_SETS)",
                facts.root / "expected/reference" / path,
            )
        mode = mode_of_file(data)
        if any(isinstance(m, dict) and m.get("mode") == mode for m in data.get("modes") or []):
            found.append((said, data, ran_build(data, build)))
    return found


def ran_build(data: dict, build: tuple[str, ...] | None) -> bool:
    """Whether every run of a benchmark file lists ``build``'s patches (:func:`shipped_build`: the artifact's); never
    where either is not known."""
    return build is not None and _build_of(data) == build


def cupti_alone(everyone: list, config: str, bound: float) -> tuple[str, str, int, float | None] | None:
    """CUPTI alone (the bare client, no Score-P, so no build) over the rounds of every file in ``everyone``
    ((what the documents call it, data) pairs) at ``config`` against ``bound``: (where it lies: below the
    bound, above the bound or not told from the bound; what the verdict rests on; the rounds; their
    median); None where no file ran it."""
    alone = [r for said, data in everyone if (r := cv.rounds_of(data, config, "cupti-kernels", label=said)).ran]
    if not alone:
        return None
    verdict, interval = cv.judge(alone, bound)
    where = {"met": "below the bound", "missed": "above the bound"}.get(verdict, "not told from the bound")
    return where, interval, sum(len(r.values) for r in alone), cv.median_of(alone)


def beyond_client(ours: list, config: str, bound: float) -> tuple[str, str, int, float | None] | None:
    """What the default mode adds to the bare client that takes the launches the same way, paired per round over
    the files in ``ours`` at ``config``, against ``bound`` (in untraced steps): (verdict, what it rests on,
    the paired rounds, their median); None where no file ran both."""
    beyond = [
        r
        for said, data in ours
        if (r := cv.rounds_of(data, config, mode := mode_of_file(data), minus=CLIENT_OF[mode], label=said)).ran
    ]
    if not beyond:
        return None
    verdict, interval = cv.judge(beyond, bound)
    return verdict, interval, sum(len(r.values) for r in beyond), cv.median_of(beyond)


def scorep_targets_summary(facts: Facts, _: str | None) -> str:
    """Each ratio target of the default mode over every benchmark file that ran it, each file judged on
    its own rounds and runs (:mod:`cost_verdicts`). The verdict that heads the line is that of the build
    the artifact ships: the rounds of every file whose runs all list that build's patches, pooled; where
    no file ran that build, the line says so and gives the other builds' verdict (all files must agree).
    Beside a target the shipped build does not meet: CUPTI alone over every file's rounds (the bare
    client loads no Score-P, so no build), and what the default mode adds to the bare client with the
    same launch callbacks, paired per round over the shipped build's rounds."""
    found = target_files(facts)
    if not found:
        return "not judged: no benchmark file with the default mode is shipped"
    build = shipped_build(facts)
    parts = []
    for config, bound in SCOREP_RATIO_TARGETS:
        figures, verdicts, ours, everyone = [], [], [], []
        for said, data, mine in found:
            rounds = cv.rounds_of(data, config, mode_of_file(data), label=said)
            if not rounds.ran:
                continue  # this file did not run the default mode at this size
            verdict, interval = cv.judge([rounds], bound)
            verdicts.append(verdict)
            m = cv.median_of([rounds])
            shown = "" if m is None else f"{m:.2f}x over "
            other = "" if mine else f"; {_other_build(data, build)}"
            figures.append(f"{shown}{said}'s {len(rounds.values)} rounds ({verdict}: {interval}{other})")
            everyone.append((said, data))
            if mine:
                ours.append((said, data, rounds))
        if not figures:
            parts.append(f"at {config} not judged (no rounds)")
            continue
        if ours:
            verdict, interval = cv.judge([r for _, _, r in ours], bound)
            head = f"{verdict} for the build the artifact ships"
            m = cv.median_of([r for _, _, r in ours])
            tail = (
                f"; the {sum(len(r.values) for _, _, r in ours)} rounds of that build "
                f"({' and '.join(said for said, _, _ in ours)}) pooled: {'' if m is None else f'{m:.2f}x '}({verdict}: {interval})"
                if len(ours) > 1
                else ""
            )
            if verdict != "met":
                tail += _cupti_beside(everyone, [(said, data) for said, data, _ in ours], config, bound)
        else:
            agreed = verdicts[0] if len(set(verdicts)) == 1 else "not established"
            head = f"not judged for the build the artifact ships (no file ran it); over the other builds {agreed}"
            tail = ""
        parts.append(f"at {config} (<= {bound:.2f}x) {head}: " + ", ".join(figures) + tail)
    return "; ".join(parts)


def _cupti_beside(everyone: list, ours: list, config: str, bound: float) -> str:
    """Beside a target the shipped build does not meet: CUPTI alone over every file's rounds, and what the
    default mode adds to the bare client that takes the launches the same way over the shipped build's rounds,
    each judged by the same rule (the addition against 0: does Score-P cost more than that client?)."""
    text = ""
    alone = cupti_alone(everyone, config, bound)
    if alone:
        where, interval, n, m = alone
        text += (
            f"; CUPTI alone (the bare client, no Score-P) over the {n} rounds of every file "
            f"that ran it: {'' if m is None else cv.near(m, bound) + 'x, '}{where} ({interval})"
        )
    beyond = beyond_client(ours, config, 0.0)
    if beyond:
        text += (
            f"; the default mode beyond the bare client that takes the launches the same way, paired in "
            f"{beyond[2]} rounds of that build: {beyond_client_said(beyond)}"
        )
    return text


def beyond_client_said(beyond: tuple[str, str, int, float | None]) -> str:
    """:func:`beyond_client` against 0 in words: the median addition, whether Score-P costs more than that client,
    and the interval it rests on."""
    verdict, interval, _, m = beyond
    what = {"met": "no more than that client", "missed": "more than that client"}.get(verdict, "not told from that client")
    return f"{'' if m is None else f'{m:+.3f} of an untraced step, '}{what} (the differences' {interval})"


def run_devices(data: dict) -> list:
    """Per run of a benchmark file (a merge's runs; a single run: itself) the device its machine record
    names, or None where it names none."""
    runs = data.get("merged_from") or [{"machine": data.get("machine")}]
    return [((r.get("machine") or {}) if isinstance(r, dict) else {}).get("device") for r in runs]


def _other_build(data: dict, shipped: tuple[str, ...] | None) -> str:
    """How a file's Score-P differs from the build the artifact ships, in words ("another build: with
    X, without Y"); "another build" alone where either is not known or its runs differ."""
    theirs = _build_of(data)
    if theirs is None or shipped is None:
        return "another build"
    more = [p for p in theirs if p not in shipped]
    fewer = [p for p in shipped if p not in theirs]
    said = [f"with {', '.join(more)}"] * bool(more) + [f"without {', '.join(fewer)}"] * bool(fewer)
    return "another build: " + "; ".join(said) if said else "another build"


def _build_of(data: dict) -> tuple[str, ...] | None:
    """The Score-P build (its patches, in order) that every run of a benchmark file lists; None where a
    run lists none or the runs differ."""
    builds = {None if p is None else tuple(p) for p in run_patches(data)}
    return builds.pop() if len(builds) == 1 and None not in builds else None
