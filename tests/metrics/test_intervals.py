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


def test_order_statistic_interval_reads_the_named_ranks():
    draws = beta_draws(np.random.default_rng(5), 19, 4)
    srt = np.sort(draws, axis=0)
    ci = credible_interval(draws, (0.8, 0.95), kind="order_statistic")
    # S = 19: r = ⌊20 · 0.1⌋ = 2 at 80 %; ⌊20 · 0.025⌋ = 0 at 95 %: no interior ranks.
    np.testing.assert_array_equal(ci.interval(0.8)[0], srt[1])
    np.testing.assert_array_equal(ci.interval(0.8)[1], srt[17])
    np.testing.assert_array_equal(ci.interval(0.95)[0], 0.0)
    np.testing.assert_array_equal(ci.interval(0.95)[1], 1.0)
    assert ci.kind == "order_statistic"


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95])
def test_min_draws_is_where_order_statistic_intervals_begin(level):
    from uqzoo.metrics import min_draws, quantile_plan
    s = min_draws(level)
    assert quantile_plan(s, (level,), "order_statistic")[1] == ()
    assert quantile_plan(s - 1, (level,), "order_statistic")[1] == (0,) or s == 1


@pytest.mark.parametrize("S", [5, 9, 20, 39])
def test_order_statistic_intervals_hold_a_fresh_draw_at_least_as_often_as_claimed(S):
    """Exchangeable draws: a fresh draw lands inside [x_(r), x_(S+1-r)] with probability
    exactly (S + 1 - 2r)/(S + 1) >= L, whatever S; the percentile interval of few
    draws does not. Checked over R replicates within 4 binomial standard errors."""
    from uqzoo.metrics import quantile_plan
    R, level = 20_000, 0.8
    rng = np.random.default_rng(S)
    p = rng.beta(2, 5, size=(S + 1, R, 1))
    draws = np.concatenate([1 - p[:-1], p[:-1]], axis=-1)
    fresh = p[-1, :, 0]
    ci = credible_interval(draws, level, kind="order_statistic")
    lo, hi = ci.interval(level)
    inside = (lo[:, 1] <= fresh) & (fresh <= hi[:, 1])
    plan, unbounded = quantile_plan(S, (level,), "order_statistic")
    exact = 1.0 if unbounded else (plan[1][0] - plan[0][0]) / (S + 1)
    se = np.sqrt(max(exact * (1 - exact), 1 / R) / R)
    assert exact >= level
    assert abs(inside.mean() - exact) <= 4 * se
    if S == 5:                     # the interpolated percentile interval under-covers
        lo_p, hi_p = credible_interval(draws, level).interval(level)
        percentile = np.mean((lo_p[:, 1] <= fresh) & (fresh <= hi_p[:, 1]))
        assert percentile < level - 4 * se
