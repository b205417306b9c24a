"""uz.metrics.interval_score: the interval score of Gneiting & Raftery (2007) (issue 26)."""

import numpy as np
import pytest
from scipy import stats

import uqzoo as uz
from uqzoo.errors import InvalidInputError

# A seeded statistical check may fail by chance with at most this probability.
FALSE_ALARM = 1e-3
Z = float(stats.norm.isf(FALSE_ALARM))          # one-sided


def test_hand_computation():
    # level 0.8: α = 0.2, penalty 2/α = 10 per unit outside
    lower = np.array([[0.2, 0.6], [0.5, 0.3], [0.05, 0.85]])
    upper = np.array([[0.4, 0.8], [0.7, 0.5], [0.15, 0.95]])
    p_true = np.array([[0.3, 0.7], [0.1, 0.9], [0.2, 0.8]])
    # point 0 covered: width 0.2 in both columns; point 1: 0.2 + 10 × 0.4 in both;
    # point 2: truth 0.05 over / under each bound: 0.1 + 10 × 0.05
    by_hand = np.array([0.2, 0.2 + 4.0, 0.1 + 0.5])
    assert uz.metrics.interval_score(lower, upper, p_true, 0.8) == pytest.approx(by_hand.mean())
    w = np.array([1.0, 0.0, 3.0])
    assert uz.metrics.interval_score(lower, upper, p_true, 0.8, sample_weight=w) == \
        pytest.approx((by_hand * w).sum() / w.sum())
    W = np.array([[1, 1, 1], [0, 2, 0]])
    np.testing.assert_allclose(
        uz.metrics.interval_score(lower, upper, p_true, 0.8, sample_weight=W),
        [by_hand.mean(), by_hand[1]])


def test_a_zero_width_interval_at_the_truth_scores_zero():
    p = np.array([[0.3, 0.7], [0.5, 0.5]])
    assert uz.metrics.interval_score(p, p, p, 0.95) == 0.0


@pytest.mark.parametrize("level", [0.5, 0.8, 0.95])
def test_minimised_in_expectation_by_the_true_quantiles(level):
    # p ~ Beta(2, 5) at every point; the constant interval of the α/2 and
    # 1 − α/2 quantiles must score lower in expectation than any other. Each
    # rival is compared on the same draws (a paired difference), and must be
    # worse by more than Z standard errors of that difference.
    rng = np.random.default_rng(0)
    N = 200_000
    p = rng.beta(2, 5, size=N)
    truth = np.stack([1 - p, p], -1)
    alpha = 1 - level
    q_lo, q_hi = stats.beta.ppf([alpha / 2, 1 - alpha / 2], 2, 5)
    spread = q_hi - q_lo

    def per_point(lo, hi):
        lower = np.broadcast_to(np.array([1 - hi, lo]), (N, 2))
        upper = np.broadcast_to(np.array([1 - lo, hi]), (N, 2))
        return _per_point(lower, upper, truth, level)

    best = per_point(q_lo, q_hi)
    rivals = [(q_lo - 0.1 * spread, q_hi - 0.1 * spread), (q_lo + 0.1 * spread,
                                                           q_hi + 0.1 * spread),
              (q_lo + 0.1 * spread, q_hi - 0.1 * spread),     # narrower
              (q_lo - 0.1 * spread, q_hi + 0.1 * spread)]     # wider
    for lo, hi in rivals:
        lo, hi = max(lo, 0.0), min(hi, 1.0)
        diff = per_point(lo, hi) - best
        se = diff.std(ddof=1) / np.sqrt(N)
        assert diff.mean() > Z * se, (lo, hi, diff.mean(), se)
    # the public function gives the mean of the same per-point scores
    lower = np.broadcast_to(np.array([1 - q_hi, q_lo]), (N, 2))
    upper = np.broadcast_to(np.array([1 - q_lo, q_hi]), (N, 2))
    assert uz.metrics.interval_score(lower, upper, truth, level) == pytest.approx(best.mean())


def _per_point(lower, upper, truth, level):
    from uqzoo.metrics.coverage import interval_score_per_point
    return interval_score_per_point(np.asarray(lower, float), np.asarray(upper, float), truth,
                                    level)


def test_bad_input_names_argument_value_and_what_is_allowed():
    p = np.array([[0.3, 0.7]])
    with pytest.raises(InvalidInputError, match=r"level must .*\(0(\.0)?, 1(\.0)?\).*got 1\.5"):
        uz.metrics.interval_score(p, p, p, 1.5)
    with pytest.raises(InvalidInputError, match=r"shape \(N, K\) \(one level at a time\)"):
        uz.metrics.interval_score(p[None], p[None], p, 0.8)
    with pytest.raises(InvalidInputError, match="lower must not exceed upper"):
        uz.metrics.interval_score(p, p[:, ::-1], p, 0.8)
    with pytest.raises(InvalidInputError, match=r"sample_weight must have shape \(1,\)"):
        uz.metrics.interval_score(p, p, p, 0.8, sample_weight=[1.0, 2.0])
