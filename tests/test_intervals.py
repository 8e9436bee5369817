"""Interval algebra: exact hand-computed cases and a brute-force per-nanosecond cross-check."""

import numpy as np
import pytest

from dnabert_scaling import intervals as iv


def mask(a, lo, hi):
    """Reference implementation: a boolean array over [lo, hi) (one cell per ns)."""
    m = np.zeros(hi - lo, dtype=bool)
    for s, e in zip(*a):
        m[s - lo : e - lo] = True
    return m


def as_pairs(u):
    return list(zip(u[0].tolist(), u[1].tolist()))


def is_union(s, e):
    """Property check: sorted, disjoint, non-touching, no empty interval (the ``Intervals`` contract)."""
    s, e = np.asarray(s), np.asarray(e)
    return bool(np.all(e > s) and np.all(s[1:] > e[:-1]))


def test_union_merges_overlapping_touching_and_drops_empty():
    s = [50, 0, 10, 30, 30, 70, 90]
    e = [60, 10, 20, 40, 35, 80, 90]  # [90, 90) is empty; [0,10) and [10,20) touch
    u = iv.union(s, e)
    assert as_pairs(u) == [(0, 20), (30, 40), (50, 60), (70, 80)]
    assert u[0].dtype == np.int64 and u[1].dtype == np.int64
    assert iv.total_length(*u) == 50
    assert iv.total_length(s, e) == 50  # non-union input is merged first
    assert iv.total_length((np.array([5]), np.array([9]))) == 4


def test_union_nested_and_unsorted():
    u = iv.union([10, 0, 2, 50], [20, 100, 3, 60])
    assert as_pairs(u) == [(0, 100)]


def test_empty_inputs():
    e = iv.union([], [])
    assert iv.total_length(*e) == 0
    assert as_pairs(iv.union([], [])) == []
    a = iv.union([0], [10])
    assert as_pairs(iv.intersect(a, e)) == []
    assert as_pairs(iv.subtract(a, e)) == [(0, 10)]
    assert as_pairs(iv.subtract(e, a)) == []
    assert iv.length_in_windows(e, [0, 5], [10, 6]).tolist() == [0, 0]


def test_intersect_subtract_exact():
    a = iv.union([0, 20, 40], [10, 30, 50])
    b = iv.union([5, 25, 50], [22, 45, 60])
    assert as_pairs(iv.intersect(a, b)) == [(5, 10), (20, 22), (25, 30), (40, 45)]
    assert as_pairs(iv.subtract(a, b)) == [(0, 5), (22, 25), (45, 50)]
    assert as_pairs(iv.subtract(b, a)) == [(10, 20), (30, 40), (50, 60)]
    assert as_pairs(iv.union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))) == [(0, 60)]
    # Touching only: no intersection, nothing removed.
    c = iv.union([10], [20])
    assert as_pairs(iv.intersect(iv.union([0], [10]), c)) == []
    assert as_pairs(iv.subtract(iv.union([0], [10]), c)) == [(0, 10)]


def test_windows():
    a = iv.union([0, 20, 40], [10, 30, 50])
    got = iv.length_in_windows(a, [0, 5, 10, 25, 45, -100, 0], [50, 25, 20, 45, 100, 0, 0])
    assert got.tolist() == [30, 10, 0, 10, 5, 0, 0]
    # windows from before the first interval to t: the covered length before t, a non-decreasing ramp
    t = [-1, 0, 5, 15, 25, 35, 45, 99]
    assert iv.length_in_windows(a, [-10] * len(t), t).tolist() == [0, 0, 5, 10, 15, 20, 25, 30]


def test_bad_input_raises():
    with pytest.raises(ValueError, match="ends before it starts"):
        iv.union([10], [5])
    with pytest.raises(ValueError, match="differ in length"):
        iv.union([1, 2], [3])
    with pytest.raises(ValueError):
        iv.length_in_windows(iv.union([0], [1]), [5], [4])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    lo, hi = 0, 2000

    def random_intervals(n):
        s = rng.integers(lo, hi - 1, n)
        e = np.minimum(s + rng.integers(0, 80, n), hi)
        return s, e

    a_raw, b_raw = random_intervals(120), random_intervals(90)
    a, b = iv.union(*a_raw), iv.union(*b_raw)
    ma, mb = mask(a_raw, lo, hi), mask(b_raw, lo, hi)
    assert is_union(*a) and is_union(*b)
    assert np.array_equal(mask(a, lo, hi), ma)
    assert iv.total_length(*a) == int(ma.sum())
    for got, want in (
        (iv.intersect(a, b), ma & mb),
        (iv.subtract(a, b), ma & ~mb),
        (iv.union(np.concatenate([a_raw[0], b_raw[0]]), np.concatenate([a_raw[1], b_raw[1]])), ma | mb),
    ):
        assert is_union(*got)
        assert np.array_equal(mask(got, lo, hi), want)
        assert iv.total_length(*got) == int(want.sum())
    ws = rng.integers(lo, hi, 50)
    we = np.minimum(ws + rng.integers(0, 400, 50), hi)
    want = [int(ma[s:e].sum()) for s, e in zip(ws, we)]
    assert iv.length_in_windows(a, ws, we).tolist() == want
    # The partition identity the summary relies on: |A| = |A - B| + |A & B|.
    assert iv.total_length(*a) == iv.total_length(*iv.subtract(a, b)) + iv.total_length(*iv.intersect(a, b))


def test_large_inputs_are_vectorised():
    """10^6 intervals in well under a second (a Python loop would take many seconds)."""
    import time

    rng = np.random.default_rng(7)
    s = np.sort(rng.integers(0, 10**12, 1_000_000))
    e = s + rng.integers(1, 10**6, s.size)
    t0 = time.perf_counter()
    u = iv.union(s, e)
    inter = iv.intersect(u, iv.union(s[::3] + 10, e[::3] + 10))
    iv.length_in_windows(u, np.arange(0, 10**12, 10**10), np.arange(0, 10**12, 10**10) + 10**9)
    elapsed = time.perf_counter() - t0
    assert iv.total_length(*inter) <= iv.total_length(*u)
    assert elapsed < 5.0
