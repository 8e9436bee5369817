"""The interval of a median that every measured target of the documents is judged by
(``analysis.stats.median_interval``, ``tools.docbench.bound_verdict``): its ends are order
statistics, its coverage the binomial one, and it holds the median as often as it says."""

from __future__ import annotations

import math
import random

import pytest

from dnabert_scaling.analysis.stats import median_interval
from dnabert_scaling.tools.docbench import bound_verdict


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
    # the rounds' interval is below the bound, but one run's median is not: not established, and said
    rounds = [*six, *six, 1.30, 1.32]
    verdict, said = bound_verdict(rounds, 1.25, {"a.json": [*six, *six], "b.json": [1.30, 1.32]})
    assert verdict == "not established"
    assert said == (
        "95% interval of the median 1.12-1.20, but the median of 1 of 2 runs lies on the other side of the bound (b.json 1.31)"
    )
    assert bound_verdict(rounds, 1.25, {"a.json": rounds}) == ("met", "95% interval of the median 1.12-1.20")  # one run
    # an end within 0.0005 of the bound gets a fourth digit, and both ends as many
    assert bound_verdict([1.1204, 1.13, 1.14, 1.15, 1.16, 1.17], 1.12)[1] == "95% interval of the median 1.1204-1.1700"
