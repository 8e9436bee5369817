"""The interval of a median that every measured target of the documents is judged by
(``analysis.stats.median_interval``, ``tools.cost_verdicts.bound_verdict``): its ends are order
statistics, its coverage the binomial one, and it holds the median as often as it says."""

from __future__ import annotations

import math
import random

import pytest

from dnabert_scaling.analysis.stats import median_interval
from dnabert_scaling.tools.cost_verdicts import bound_verdict


def test_the_ends_and_coverage_are_the_order_statistics_and_the_binomial_tail():
    assert median_interval(range(5)) is None  # (min, max) of 5 covers 1 - 2/32 = 0.9375 < 0.95
    six = median_interval([6, 1, 5, 2, 4, 3])
    assert (six.lo, six.hi, six.k, six.n) == (1, 6, 1, 6) and six.coverage == pytest.approx(1 - 2 / 64)
    # 18 rounds: P(Bin(18, 1/2) <= 4) = 4048 / 2**18, so k = 5 covers 0.969; k = 6 would cover 0.904
    eighteen = median_interval(range(100, 118))
    assert (eighteen.lo, eighteen.hi, eighteen.k) == (104, 113, 5)
    assert eighteen.coverage == pytest.approx(1 - 2 * 4048 / 2**18)
    assert median_interval(range(18), level=0.90).k == 6  # a lower level, a narrower interval
    for broken in (math.nan, math.inf, None, "1.0", True):  # a broken round is never quietly left out
        with pytest.raises(ValueError):
            median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, broken])
    assert median_interval([]) is None


def test_it_holds_the_median_at_least_as_often_as_its_coverage_says():
    rng = random.Random(20261204)
    for n in (6, 11, 18, 39):
        for draw in (lambda: rng.lognormvariate(0.2, 0.1), lambda: 1.0 + rng.expovariate(8.0)):
            truth = sorted(draw() for _ in range(200_001))[100_000]  # the distribution's median, closely
            trials = 4000
            held = 0
            for _ in range(trials):
                iv = median_interval([draw() for _ in range(n)])
                held += iv.lo <= truth <= iv.hi
            # the promised coverage, less three standard errors of a proportion over 4000 trials
            assert held / trials >= iv.coverage - 3 * math.sqrt(0.05 * 0.95 / trials), (n, held / trials)


def test_a_bound_is_met_or_missed_only_where_the_interval_lies_on_one_side_of_it():
    assert bound_verdict([1.10, 1.12, 1.13, 1.15, 1.16, 1.20], 1.25) == ("met", "95% interval of the median 1.10-1.20")
    assert bound_verdict([1.26, 1.27, 1.28, 1.30, 1.31, 1.40], 1.25)[0] == "missed"
    assert bound_verdict([1.20, 1.22, 1.24, 1.26, 1.28, 1.30], 1.25)[0] == "not established"  # median 1.25: no side
    assert bound_verdict([1.20, 1.21, 1.22, 1.23, 1.24, 1.26], 1.25)[0] == "not established"  # median below, one round over
    assert bound_verdict([1.0] * 5, 1.25) == ("not established", "5 rounds, too few for a 95% interval of the median")
    assert bound_verdict([1.25] * 6, 1.25)[0] == "met"  # "at most": the bound itself meets it
    # an end that rounds to the bound gets a third digit, so "missed" never reads as "1.12-..." against 1.12
    assert bound_verdict([1.121, 1.13, 1.14, 1.15, 1.16, 1.17], 1.12) == ("missed", "95% interval of the median 1.121-1.170")
    # a difference against 0 (Score-P against torch.profiler): negative ends read "to", not a dash
    assert bound_verdict([-0.3, -0.2, -0.25, -0.1, -0.15, -0.05], 0.0) == ("met", "95% interval of the median -0.30 to -0.05")


def test_a_verdict_needs_finite_rounds_and_no_run_against_it():
    six = [1.10, 1.12, 1.13, 1.15, 1.16, 1.20]
    for broken in (math.nan, math.inf, None, True):  # a broken round makes the figure not established, never met
        assert bound_verdict([*six, broken], 1.25) == ("not established", "1 of 7 round values not finite numbers")
    # two to five runs: a run whose own rounds' interval lies wholly on the other side overrules the pooled rounds
    low, high = [1.10 + 0.01 * (k % 10) for k in range(24)], [1.30, 1.31, 1.32, 1.33, 1.34, 1.35]
    assert bound_verdict(low + high, 1.25)[0] == "met"  # the rounds alone
    verdict, said = bound_verdict(low + high, 1.25, {"a.json": low, "b.json": high})
    assert verdict == "not established"
    assert (
        said
        == "95% interval of the median 1.13-1.18, but the interval of a run's own rounds lies on the other side (b.json 1.30-1.35)"
    )
    # a run with too few rounds for an interval of its own, or whose interval holds the bound, does not
    assert bound_verdict(low + [1.30, 1.31], 1.25, {"a.json": low, "b.json": [1.30, 1.31]})[0] == "met"
    assert bound_verdict(low + [1.20, 1.30] * 3, 1.25, {"a.json": low, "b.json": [1.20, 1.30] * 3})[0] == "met"
    # six runs or more: the interval of the runs' medians must lie on the same side
    runs = {f"r{i}.json": [1.10, 1.11, 1.12] for i in range(5)} | {"r5.json": [1.40, 1.41, 1.42]}
    values = [x for xs in runs.values() for x in xs]
    assert bound_verdict(values, 1.25)[0] == "met"
    assert bound_verdict(values, 1.25, runs) == (
        "not established",
        "95% interval of the median 1.10-1.12, but over the 6 runs' medians the interval is 1.11-1.41",
    )
    runs["r5.json"] = [1.12, 1.13, 1.14]
    assert bound_verdict(values[:-3] + runs["r5.json"], 1.25, runs) == (
        "met",
        "95% interval of the median 1.10-1.12; over the 6 runs' medians 1.11-1.13",
    )
    assert bound_verdict(low + high, 1.25, {"a.json": low + high}) == ("met", "95% interval of the median 1.13-1.18")  # one run
    # rounds that do not tell the bound say so whatever the runs; from six runs on, the runs' interval is said too,
    # so that a reader sees whether more rounds of the same runs could settle it (here the runs straddle the bound)
    straddle = {f"s{i}.json": [1.20 + 0.02 * i] * 3 for i in range(6)}  # run medians 1.20 to 1.30
    pooled = [x for xs in straddle.values() for x in xs]
    assert bound_verdict(pooled, 1.25, straddle) == (
        "not established",
        "95% interval of the median 1.22-1.28; over the 6 runs' medians 1.20-1.30",
    )
    assert bound_verdict(pooled[:15], 1.25, dict(list(straddle.items())[:5])) == (  # five runs: no interval of theirs
        "not established",
        "95% interval of the median 1.22-1.26",
    )
    # an end within 0.0005 of the bound gets a fourth digit, and both ends as many
    assert bound_verdict([1.1204, 1.13, 1.14, 1.15, 1.16, 1.17], 1.12)[1] == "95% interval of the median 1.1204-1.1700"


def _merge(runs, ratios, processes=("scorep-launch-chunk4m",)):
    """A merge of ``runs`` ((file, number of rounds), in order) with the default mode's ratios at 8x70."""
    merged_from, rounds, k = [], [], 0
    for i, (name, n) in enumerate(runs):
        merged_from.append({"file": name, "date": "2026-12-04", "revision": f"rev{i}", "wall_s": 100.0 + i, "rounds": n})
        rounds += [{"round": k + j, "source": name, "processes": {p: {} for p in processes}} for j in range(n)]
        k += n
    modes = [{"mode": "scorep-launch-chunk4m", "config": "8x70", "round_ratios": [[j, x] for j, x in enumerate(ratios)]}]
    return {"modes": modes, "merged_from": merged_from, "rounds": rounds}


def test_rounds_are_attributed_to_runs_by_more_than_their_file_name():
    from dnabert_scaling.tools.cost_verdicts import judge, rounds_of

    one = _merge([("bench-a.json", 6)], [1.10] * 6)
    other = _merge([("bench-a.json", 6)], [1.11] * 6)  # another call's folder: the same name, another run
    other["merged_from"][0]["revision"] = "another"
    verdict, said = judge(
        [rounds_of(one, "8x70", "scorep-launch-chunk4m"), rounds_of(other, "8x70", "scorep-launch-chunk4m")], 1.25
    )
    assert verdict == "met" and "in two of the pooled files" not in said
    verdict, said = judge(
        [rounds_of(one, "8x70", "scorep-launch-chunk4m"), rounds_of(one, "8x70", "scorep-launch-chunk4m")], 1.25
    )
    assert (verdict, said) == ("not established", "one run is in two of the pooled files (bench-a.json and bench-a.json)")


def test_a_size_that_ran_without_ratios_and_rounds_cut_short_are_said():
    from dnabert_scaling.tools.cost_verdicts import judge, rounds_of

    doc = _merge([("a.json", 4), ("b.json", 4)], [1.10] * 8)
    doc["modes"][0]["config"] = "32x70"  # the rounds started the mode, yet no row at 8x70
    got = rounds_of(doc, "8x70", "scorep-launch-chunk4m", label="calls X")
    assert got.problems == ("calls X ran scorep-launch-chunk4m but keeps no ratios of it at 8x70",)
    assert judge([got], 1.25)[0] == "not established"
    doc = _merge([("a.json", 4), ("b.json", 4)], [1.10] * 7)  # round 7 started the mode and gave no ratio
    verdict, said = judge([rounds_of(doc, "8x70", "scorep-launch-chunk4m")], 1.25)
    assert verdict == "met" and said.endswith("; 1 round cut short or with a failed process, not counted")
    assert rounds_of({"modes": []}, "8x70", "scorep-launch-chunk4m").values == ()  # not run at all: nothing to judge, no problem
    assert not rounds_of({"modes": []}, "8x70", "scorep-launch-chunk4m").ran
    doc = _merge([("a.json", 4), ("b.json", 4)], [])  # every round started the mode, none gave a ratio
    got = rounds_of(doc, "8x70", "scorep-launch-chunk4m")
    assert got.ran and got.short == 8  # said, never passed over as a file that did not run the mode
    assert judge([got], 1.25) == (
        "not established",
        "0 rounds, too few for a 95% interval of the median; 8 rounds cut short or with a failed process, not counted",
    )


def test_a_ratio_not_above_zero_is_no_measurement():
    from dnabert_scaling.tools.cost_verdicts import judge, rounds_of

    for bad in (0, -1.2, 0.0):
        doc = _merge([("a.json", 6)], [1.10] * 5 + [bad])
        got = rounds_of(doc, "8x70", "scorep-launch-chunk4m", label="calls X")
        assert got.problems == (f"calls X's scorep-launch-chunk4m at 8x70 has a ratio of {bad!r} in round 5, not above 0",)
        assert judge([got], 1.25)[0] == "not established"


def test_a_merge_of_two_runs_of_one_file_name_is_not_judged():
    from dnabert_scaling.tools.cost_verdicts import judge, rounds_of

    doc = _merge([("bench-a.json", 6), ("bench-a.json", 6)], [1.10] * 12)  # two folders' bench-a.json, merged by hand
    got = rounds_of(doc, "8x70", "scorep-launch-chunk4m", label="calls X")
    assert "calls X merges two runs of one file name" in got.problems and judge([got], 1.25)[0] == "not established"


def test_two_runs_of_one_file_name_in_two_pooled_files_stay_two_runs():
    """Two calls' folders each hold a bench-a.json: pooled, they are two runs, and neither's rounds are lost."""
    from dnabert_scaling.tools.cost_verdicts import judge, rounds_of

    above = _merge([("bench-a.json", 6), ("bench-c.json", 6)], [1.30, 1.31, 1.32, 1.33, 1.34, 1.35] + [1.10] * 6)
    below = _merge([("bench-a.json", 6), ("bench-d.json", 6)], [1.10] * 12)
    for entry in below["merged_from"]:
        entry["revision"] += "-another-call"
    verdict, said = judge(
        [rounds_of(above, "8x70", "scorep-launch-chunk4m"), rounds_of(below, "8x70", "scorep-launch-chunk4m")], 1.25
    )
    # both bench-a.json runs are counted apart: the one above the bound is not hidden in the other
    assert (verdict, said) == (
        "not established",
        "95% interval of the median 1.10-1.10, but the interval of a run's own rounds lies on the other side "
        "(bench-a.json (pooled file 0) 1.30-1.35)",
    )


def test_a_file_of_other_sizes_is_not_judged_at_this_one_and_no_end_reads_as_minus_zero():
    from dnabert_scaling.tools.cost_verdicts import bound_verdict, rounds_of, rounds_side

    doc = _merge([("a.json", 4), ("b.json", 4)], [1.10] * 8)
    doc["modes"][0]["config"], doc["configs"] = "32x70", ["32x70"]  # the run measured 32x70 only
    got = rounds_of(doc, "8x70", "scorep-launch-chunk4m")
    assert got.values == () and got.problems == ()  # not run at 8x70: nothing to judge, nothing wrong
    # the side of the rounds alone, which the runs may overrule in the verdict
    twelve = _merge([("a.json", 6), ("b.json", 6)], [1.10] * 6 + [1.30] * 6)
    assert rounds_side([rounds_of(twelve, "8x70", "scorep-launch-chunk4m")], 1.25) == "not established"
    assert rounds_side([rounds_of(doc, "8x70", "scorep-launch-chunk4m")], 1.25) is None  # no rounds: no interval
    assert bound_verdict([-0.004, -0.003, -0.002, -0.001, 0.01, 0.02], 0.0)[1] == "95% interval of the median -0.004 to 0.020"


def test_a_lower_bound_is_the_same_rule_mirrored():
    # "at least": met where the interval lies wholly at or above the bound, missed wholly below
    assert bound_verdict([1.50, 1.55, 1.60, 1.62, 1.70, 1.80], 1.5, at_least=True) == (
        "met",
        "95% interval of the median 1.50-1.80",
    )
    assert bound_verdict([1.10, 1.12, 1.13, 1.15, 1.16, 1.49], 1.5, at_least=True)[0] == "missed"
    assert bound_verdict([1.10, 1.12, 1.13, 1.15, 1.16, 1.49], 1.5)[0] == "met"  # the same rounds, read as "at most"
    assert bound_verdict([1.40, 1.45, 1.48, 1.52, 1.55, 1.60], 1.5, at_least=True)[0] == "not established"
    # a run whose own interval lies wholly on the other side vetoes, as for an upper bound
    runs = {"a": [1.6, 1.6, 1.7, 1.7, 1.8, 1.8] * 3, "b": [1.1, 1.1, 1.2, 1.2, 1.3, 1.3]}
    assert bound_verdict(runs["a"] + runs["b"], 1.5, at_least=True)[0] == "met"  # the rounds alone
    verdict, said = bound_verdict(runs["a"] + runs["b"], 1.5, runs, at_least=True)
    assert verdict == "not established" and "b 1.10-1.30" in said
    assert bound_verdict([2.0] * 3, 1.5, at_least=True, unit="repeat") == (
        "not established",
        "3 repeats, too few for a 95% interval of the median",
    )
