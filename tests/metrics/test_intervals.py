"""Credible intervals: exact agreement with np.quantile, HDI against ArviZ, nesting."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uqzoo.errors import InvalidInputError
from uqzoo.metrics import credible_interval


def beta_draws(rng, S, N, a=2.0, b=5.0):
    p = rng.beta(a, b, size=(S, N, 1))
    return np.concatenate([1 - p, p], axis=-1)


def test_equal_tailed_matches_np_quantile_exactly():
    rng = np.random.default_rng(0)
    draws = rng.dirichlet([1.0, 2.0, 3.0], size=(257, 40))
    ci = credible_interval(draws, (0.5, 0.9))
    for i, level in enumerate((0.5, 0.9)):
        assert np.array_equal(ci.lower[i], np.quantile(draws, (1 - level) / 2, axis=0))
        assert np.array_equal(ci.upper[i], np.quantile(draws, (1 + level) / 2, axis=0))


def test_one_result_type_whatever_the_number_of_levels():
    """One level or several: the same object, bounds always (L, N, K), levels ascending."""
    draws = beta_draws(np.random.default_rng(1), 100, 7)
    one = credible_interval(draws, 0.8)
    assert one.levels == (0.8,) and one.lower.shape == one.upper.shape == (1, 7, 2)
    lo, hi = one.interval(0.8)
    assert lo.shape == hi.shape == (7, 2)
    np.testing.assert_array_equal(one.width, one.upper - one.lower)
    two = credible_interval(draws, (0.95, 0.8))
    assert two.levels == (0.8, 0.95) and two.lower.shape == (2, 7, 2)
    np.testing.assert_array_equal(two.interval(0.8)[0], lo)    # same machine, same inputs
    with pytest.raises(InvalidInputError, match=r"0\.9"):
        two.interval(0.9)


def test_hdi_matches_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(2)
    draws = beta_draws(rng, 501, 5, a=1.5, b=8.0)
    lo, hi = credible_interval(draws, 0.8, kind="hdi").interval(0.8)
    for n in range(5):
        ref = np.asarray(az.hdi(draws[:, n, 1], hdi_prob=0.8))
        assert lo[n, 1] == pytest.approx(ref[0], abs=0) and hi[n, 1] == pytest.approx(ref[1], abs=0)


def test_hdi_is_narrower_than_equal_tailed_for_skewed_draws():
    draws = beta_draws(np.random.default_rng(3), 2000, 20, a=1.2, b=10.0)
    lo_h, hi_h = credible_interval(draws, 0.9, kind="hdi").interval(0.9)
    lo_e, hi_e = credible_interval(draws, 0.9).interval(0.9)
    assert np.all(hi_h[:, 1] - lo_h[:, 1] <= hi_e[:, 1] - lo_e[:, 1] + 1e-12)


def test_equal_tailed_known_beta_quantiles_within_monte_carlo_error():
    # The sample quantile of S draws has sd sqrt(q(1-q)/S)/f(Q_q); with S = 20000
    # five of those bound the error.
    from scipy import stats
    S, a, b, level = 20000, 2.0, 5.0, 0.8
    draws = beta_draws(np.random.default_rng(4), S, 3, a, b)
    lo, hi = credible_interval(draws, level).interval(level)
    for q, got in (((1 - level) / 2, lo[:, 1]), ((1 + level) / 2, hi[:, 1])):
        truth = stats.beta.ppf(q, a, b)
        sd = np.sqrt(q * (1 - q) / S) / stats.beta.pdf(truth, a, b)
        assert np.all(np.abs(got - truth) < 5 * sd)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), S=st.integers(2, 60), kind=st.sampled_from(
    ["equal_tailed", "hdi"]))
def test_intervals_nested_across_levels(seed, S, kind):
    draws = np.random.default_rng(seed).dirichlet([0.5, 1.0, 2.0], size=(S, 6))
    levels = (0.5, 0.8, 0.9, 0.95)
    ci = credible_interval(draws, levels, kind=kind)
    lo, hi = ci.lower, ci.upper
    assert np.all(lo <= hi)
    if kind == "equal_tailed":          # the sample HDI need not nest
        assert np.all(np.diff(lo, axis=0) <= 0) and np.all(np.diff(hi, axis=0) >= 0)
