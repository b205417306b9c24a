"""Coverage and width: hand cases and coverage known by construction."""

import numpy as np
import pytest

from uqzoo.metrics import coverage, credible_interval, interval_width


def test_hand_case():
    lower = np.array([[0.1, 0.5], [0.6, 0.1], [0.2, 0.2]])
    upper = np.array([[0.4, 0.8], [0.9, 0.4], [0.8, 0.8]])
    p_true = np.array([[0.3, 0.7], [0.5, 0.5], [0.4, 0.6]])
    res = coverage(lower, upper, p_true)
    assert res.covered.tolist() == [[True, True], [False, False], [True, True]]
    assert res.per_class == pytest.approx([2 / 3, 2 / 3])
    assert res.per_observation.tolist() == [1.0, 0.0, 1.0]
    assert float(res.overall) == pytest.approx(2 / 3)
    # all-or-nothing rows: the point-level error equals the binomial one
    assert float(res.overall_stderr) == pytest.approx(np.sqrt(2 / 3 * 1 / 3 / 3))
    assert res.per_class_stderr == pytest.approx(np.sqrt(2 / 3 * 1 / 3 / 3))


def test_closed_interval_bounds_count_as_covered():
    res = coverage(np.array([[0.3, 0.7]]), np.array([[0.3, 0.7]]), np.array([[0.3, 0.7]]))
    assert res.covered.all()


def test_width_hand_case_and_level_axis():
    lower = np.array([[[0.1, 0.5]], [[0.0, 0.4]]])
    upper = np.array([[[0.3, 0.9]], [[0.5, 1.0]]])
    w = interval_width(lower, upper)
    assert w.width.shape == (2, 1, 2)
    assert w.per_class == pytest.approx(np.array([[0.2, 0.4], [0.5, 0.6]]))
    assert w.overall == pytest.approx([0.3, 0.55])


@pytest.mark.parametrize("level", [0.5, 0.8, 0.95])
def test_coverage_exact_by_exchangeability(level):
    # Truth and the S draws are i.i.d. Beta(a, b) per point: the new value falls
    # between order statistics X_(i) and X_(j) with probability (j - i)/(S + 1).
    # S - 1 = 1000 makes np.quantile's positions integers, so the expected
    # coverage is known exactly; the test allows 4 binomial standard errors.
    S, N, a, b = 1001, 4000, 2.0, 5.0
    rng = np.random.default_rng(int(level * 100))
    p = rng.beta(a, b, size=(S + 1, N))
    draws = np.stack([1 - p[:S], p[:S]], axis=-1)
    truth = np.stack([1 - p[S], p[S]], axis=-1)
    lo, hi = credible_interval(draws, level).interval(level)
    i = round((1 - level) / 2 * (S - 1))
    j = round((1 + level) / 2 * (S - 1))
    expected = (j - i) / (S + 1)
    res = coverage(lo, hi, truth)
    se = np.sqrt(expected * (1 - expected) / N)
    assert abs(res.per_class[1] - expected) < 4 * se
    assert abs(float(res.overall) - expected) < 4 * se


def test_coverage_detects_too_narrow_intervals():
    # The same construction with intervals shrunk to half width must fail the check above.
    S, N = 1001, 4000
    rng = np.random.default_rng(7)
    p = rng.beta(2.0, 5.0, size=(S + 1, N))
    draws = np.stack([1 - p[:S], p[:S]], axis=-1)
    truth = np.stack([1 - p[S], p[S]], axis=-1)
    lo, hi = credible_interval(draws, 0.9).interval(0.9)
    mid = (lo + hi) / 2
    res = coverage(mid - (hi - lo) / 4, mid + (hi - lo) / 4, truth)
    se = np.sqrt(0.9 * 0.1 / N)
    assert abs(res.per_class[1] - 0.9) > 4 * se
