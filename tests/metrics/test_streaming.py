"""Accumulators: any chunking, merged in any order, equals one update bit for bit."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import (
    CalibrationAccumulator,
    ClasswiseCalibrationAccumulator,
    HCSAccumulator,
    IntervalAccumulator,
    ScoreAccumulator,
    brier,
    classwise_ece,
    coverage,
    credible_interval,
    ece,
    hcs_summary,
    high_confidence_set,
    interval_width,
    nll,
)

LEVELS = (0.5, 0.8, 0.95)


def make_data(seed, N, K, S=30):
    rng = np.random.default_rng(seed)
    draws = rng.dirichlet(np.full(K, 0.4), size=(S, N))
    mean = draws.mean(0)
    ci = credible_interval(draws, LEVELS)
    lo, hi = ci.lower, ci.upper
    p_true = rng.dirichlet(np.full(K, 0.4), size=N)
    y = rng.integers(0, K, N)
    return mean, lo, hi, p_true, y


def fresh(K):
    return [CalibrationAccumulator(K), ClasswiseCalibrationAccumulator(K), ScoreAccumulator(K),
            IntervalAccumulator(LEVELS, K, with_truth=True), HCSAccumulator(LEVELS, K, 0.2)]


def feed(accs, mean, lo, hi, p_true, y, sl):
    accs[0].update(mean[sl], y[sl])
    accs[1].update(mean[sl], y[sl])
    accs[2].update(mean[sl], y[sl])
    accs[3].update(lo[:, sl], hi[:, sl], p_true[sl])
    accs[4].update(lo[:, sl], hi[:, sl], y[sl])


def results(accs):
    bins = accs[0].compute()
    scores = accs[2].compute()
    iv = accs[3].compute()
    h = accs[4].compute()
    return [bins.count, bins.confidence_sum, bins.outcome_count, np.array(bins.errors()),
            accs[1].compute(), np.array([scores.brier, scores.nll, scores.accuracy,
                                         scores.balanced_accuracy]),
            iv.width_per_class, iv.width_per_class_stderr, iv.width_overall,
            iv.width_overall_stderr, iv.coverage_per_class, iv.coverage_overall,
            iv.coverage_overall_stderr, h.size, h.accuracy, h.missed_targets]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), N=st.integers(1, 120), K=st.integers(2, 4),
       cuts=st.lists(st.floats(0, 1), max_size=6), tree=st.booleans())
def test_random_chunkings_merge_to_one_shot_exactly(seed, N, K, cuts, tree):
    mean, lo, hi, p_true, y = make_data(seed, N, K)
    one = fresh(K)
    feed(one, mean, lo, hi, p_true, y, slice(0, N))
    bounds = sorted({0, N, *(int(c * N) for c in cuts)})
    parts = []
    for a, b in itertools.pairwise(bounds):
        accs = fresh(K)
        feed(accs, mean, lo, hi, p_true, y, slice(a, b))
        parts.append(accs)
    if tree:                                   # merge pairwise, right to left
        while len(parts) > 1:
            right = parts.pop()
            parts[-1] = [x.merge(z) for x, z in zip(parts[-1], right, strict=True)]
        merged = parts[0]
    else:
        merged = parts[0]
        for accs in parts[1:]:
            merged = [x.merge(z) for x, z in zip(merged, accs, strict=True)]
    for got, want in zip(results(merged), results(one), strict=True):
        np.testing.assert_array_equal(got, want)


def test_accumulators_agree_with_one_shot_functions():
    mean, lo, hi, p_true, y = make_data(0, 500, 3)
    accs = fresh(3)
    feed(accs, mean, lo, hi, p_true, y, slice(0, 500))
    assert accs[0].compute().errors()[0] == ece(mean, y)
    assert float(accs[1].compute().mean()) == classwise_ece(mean, y)
    s = accs[2].compute()
    assert s.brier == brier(mean, y) and s.nll == nll(mean, y)
    iv = accs[3].compute()
    cov = coverage(lo, hi, p_true)
    np.testing.assert_allclose(iv.coverage_per_class, cov.per_class, rtol=1e-14)
    np.testing.assert_allclose(iv.coverage_overall, cov.overall, rtol=1e-14)
    np.testing.assert_allclose(iv.coverage_overall_stderr, cov.overall_stderr, rtol=1e-9)
    w = interval_width(lo, hi)
    np.testing.assert_allclose(iv.width_per_class, w.per_class, rtol=1e-12)
    np.testing.assert_allclose(iv.width_per_class_stderr, w.per_class_stderr, rtol=1e-8)
    h = hcs_summary(high_confidence_set(lo, hi, 0.2), y)
    h2 = accs[4].compute()
    np.testing.assert_array_equal(h.size, h2.size)
    np.testing.assert_array_equal(h.missed_targets, h2.missed_targets)


def test_large_input_is_processed_in_blocks_with_the_same_result():
    rng = np.random.default_rng(1)
    N = 200_000                                  # > one block of 65,536 rows
    p1 = rng.uniform(size=N)
    p = np.stack([1 - p1, p1], 1)
    y = (rng.uniform(size=N) < p1).astype(int)
    acc = CalibrationAccumulator(2)
    for start in range(0, N, 7777):
        acc.update(p[start:start + 7777], y[start:start + 7777])
    assert acc.compute().errors()[0] == ece(p, y)


def test_merge_rejects_mismatched_accumulators():
    with pytest.raises(InvalidInputError, match="n_bins"):
        CalibrationAccumulator(2, 10).merge(CalibrationAccumulator(2, 15))
    with pytest.raises(InvalidTypeError):
        CalibrationAccumulator(2).merge(ScoreAccumulator(2))
    with pytest.raises(InvalidInputError, match="delta"):
        HCSAccumulator(LEVELS, 2, 0.1).merge(HCSAccumulator(LEVELS, 2, 0.2))


def test_failed_update_leaves_accumulator_unchanged():
    acc = CalibrationAccumulator(2).update(np.array([[0.3, 0.7]]), [1])
    before = acc.compute().count.copy()
    with pytest.raises(InvalidInputError):
        acc.update(np.array([[0.3, 0.7], [0.5, 0.6]]), [1, 0])
    np.testing.assert_array_equal(acc.compute().count, before)


def test_compute_before_update_is_an_error():
    with pytest.raises(InvalidInputError, match="update"):
        ScoreAccumulator(2).compute()
