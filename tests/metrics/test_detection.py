"""Detection ROC, Pd at a false-alarm rate and Clopper–Pearson intervals, against references."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score, roc_curve

from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import (
    clopper_pearson,
    detection_roc,
    hcs_summary,
    high_confidence_set,
    pd_at_far,
)


def tied_scores(seed, n_bg=400, n_tg=30, levels=25):
    """Scores rounded onto a coarse grid, so that many points tie (a saturated network)."""
    rng = np.random.default_rng(seed)
    is_target = np.zeros(n_bg + n_tg, dtype=bool)
    is_target[rng.choice(n_bg + n_tg, n_tg, replace=False)] = True
    scores = np.round((rng.normal(size=is_target.size) + 1.5 * is_target) * levels / 6) / levels
    return scores, is_target


@pytest.mark.parametrize("seed", range(5))
def test_roc_equals_sklearn_with_ties(seed):
    scores, is_target = tied_scores(seed)
    assert np.unique(scores).size < scores.size / 4            # the test needs ties
    roc = detection_roc(scores, is_target)
    fpr, tpr, thr = roc_curve(is_target, scores, drop_intermediate=False)
    np.testing.assert_array_equal(roc.false_alarm_rate, fpr)
    np.testing.assert_array_equal(roc.probability_of_detection, tpr)
    np.testing.assert_array_equal(roc.thresholds[1:], thr[1:])
    assert roc.thresholds[0] == np.inf
    # one trapezoid sum against another in another order: equal to rounding
    assert roc.auroc == pytest.approx(roc_auc_score(is_target, scores), abs=1e-14)
    assert (roc.n_targets, roc.n_background) == (30, 400)


def test_roc_hand_case_and_label_spellings():
    roc = detection_roc([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
    assert roc.false_alarm_rate.tolist() == [0.0, 0.0, 0.5, 1.0]
    assert roc.probability_of_detection.tolist() == [0.0, 0.5, 1.0, 1.0]
    assert roc.auroc == 0.875                    # 3 pairs won, 1 tied: (3 + 0.5) / 4
    for spelling in ([True, True, False, False], np.array([1.0, 1.0, 0.0, 0.0])):
        assert detection_roc([0.9, 0.8, 0.8, 0.1], spelling).auroc == 0.875


def test_delong_stderr_is_the_spread_of_the_auroc():
    # Noise model: the AUROC over independent replicates scatters with standard
    # deviation sd; DeLong's estimate is consistent for it. With R = 300
    # replicates the sample sd has relative error ~1 / sqrt(2R) = 4 %; the
    # mean DeLong estimate must agree within 4 such errors.
    rng = np.random.default_rng(0)
    aucs, ses = [], []
    is_target = np.arange(300) < 40
    for _ in range(300):
        scores = rng.normal(size=300) + 1.0 * is_target
        roc = detection_roc(scores, is_target)
        aucs.append(roc.auroc)
        ses.append(roc.auroc_stderr)
    sd = np.std(aucs, ddof=1)
    assert np.mean(ses) == pytest.approx(sd, rel=4 / np.sqrt(2 * 300))
    # the Gaussian-shift truth: AUROC = Φ(1 / √2), within 4 standard errors of the mean
    assert np.mean(aucs) == pytest.approx(stats.norm.cdf(1 / np.sqrt(2)),
                                          abs=4 * sd / np.sqrt(300))


def test_delong_stderr_is_nan_with_one_target():
    roc = detection_roc([0.3, 0.2, 0.9], [0, 0, 1])
    assert roc.auroc == 1.0 and np.isnan(roc.auroc_stderr)


# -- Pd at a false-alarm rate ----------------------------------------------------------

def brute_force_pd(scores, is_target, far):
    """Try every threshold; keep the best Pd among those with empirical FAR ≤ far."""
    best, best_t = 0.0, np.inf
    for t in np.unique(scores):
        declared = scores >= t
        if declared[~is_target].mean() <= far and declared[is_target].mean() >= best:
            if declared[is_target].mean() > best or t < best_t:
                best, best_t = declared[is_target].mean(), t
    return best


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("far", [1e-3, 1e-2, 0.05, 0.29])
def test_pd_at_far_is_the_best_pd_within_budget(seed, far):
    scores, is_target = tied_scores(seed, n_bg=1000, n_tg=25)
    r = pd_at_far(scores, is_target, far=far)
    assert r.pd[0] == brute_force_pd(scores, is_target, far)
    assert r.far_achieved[0] <= far
    declared = scores >= r.threshold[0]
    assert declared[~is_target].mean() == r.far_achieved[0]
    assert declared[is_target].sum() == r.n_detected[0]


def test_pd_at_far_float_budget_edge():
    # 29 false alarms among 100 is a FAR of exactly 0.29 as floats divide, though
    # 0.29 * 100 = 28.999999999999996: the 29th false alarm fits the budget.
    scores = np.concatenate([np.arange(100.0), [200.0]])
    is_target = np.r_[np.zeros(100, bool), True]
    scores[70] = 150.0                              # put some background above ...
    r = pd_at_far(scores, is_target, far=0.29)
    assert r.far_achieved[0] == 0.29


def test_pd_at_far_with_fewer_background_than_one_over_far():
    # 500 background pixels: one false alarm is a FAR of 0.002 > 0.001, so none fits.
    rng = np.random.default_rng(1)
    is_target = np.arange(505) < 5
    scores = rng.normal(size=505) + 2 * is_target
    r = pd_at_far(scores, is_target, far=(1e-3, 1e-2))
    assert r.far_achieved[0] == 0.0
    assert r.n_detected[0] == int((scores[is_target] > scores[~is_target].max()).sum())
    assert r.far_achieved[1] <= 0.01 and r.far.tolist() == [1e-3, 1e-2]


def test_pd_interval_is_clopper_pearson():
    scores, is_target = tied_scores(3, n_bg=2000, n_tg=12)
    r = pd_at_far(scores, is_target, far=(1e-3, 1e-2, 0.1), confidence=0.9)
    for k, lo, hi in zip(r.n_detected, r.lower, r.upper, strict=True):
        want = stats.binomtest(int(k), 12).proportion_ci(0.9, method="exact")
        assert lo == pytest.approx(want.low, abs=1e-12)
        assert hi == pytest.approx(want.high, abs=1e-12)
        assert lo <= k / 12 <= hi
    np.testing.assert_allclose(r.pd_stderr, np.sqrt(r.pd * (1 - r.pd) / 12))


def test_clopper_pearson_covers_at_least_its_level():
    # Exact intervals: coverage ≥ confidence for every p. Enumerate the binomial
    # outcomes exactly (no simulation) for a few (n, p).
    for n in (3, 10, 40):
        lo, hi = clopper_pearson(np.arange(n + 1), n, 0.95)
        for p in (0.01, 0.2, 0.5, 0.93):
            covered = (lo <= p) & (p <= hi)
            assert stats.binom.pmf(np.arange(n + 1), n, p)[covered].sum() >= 0.95 - 1e-12
    assert clopper_pearson(0, 5)[0] == 0.0 and clopper_pearson(5, 5)[1] == 1.0


# -- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [detection_roc, pd_at_far])
def test_bad_input_names_the_argument(fn):
    with pytest.raises(InvalidInputError, match=r"is_target must mark at least one target.*3 "
                                                r"points"):
        fn([0.1, 0.2, 0.3], [0, 0, 0])
    with pytest.raises(InvalidInputError, match="at least one background point"):
        fn([0.1, 0.2, 0.3], [True, True, True])
    with pytest.raises(InvalidInputError, match="scores must be finite"):
        fn([0.1, np.nan, 0.3], [0, 1, 0])
    with pytest.raises(InvalidInputError, match=r"scores must have shape \(3,\)"):
        fn([0.1, 0.3], [0, 1, 0])
    with pytest.raises(InvalidInputError, match="is_target must hold booleans or 0/1, found 2"):
        fn([0.1, 0.2, 0.3], [0, 1, 2])
    with pytest.raises(InvalidTypeError, match="is_target"):
        fn([0.1, 0.2, 0.3], "abc")


@pytest.mark.parametrize("far, needle", [
    (0.0, r"far entry must lie in \(0.0, 1.0\), got 0.0"),
    (1.0, r"far entry must lie in \(0.0, 1.0\), got 1.0"),
    ((0.01, 2.0), "got 2.0"),
    ((), "at least one false-alarm rate"),
    ((0.01, 0.01), "must not repeat"),
    (np.nan, "far entry must be finite"),
])
def test_bad_far_rejected(far, needle):
    with pytest.raises(InvalidInputError, match=needle):
        pd_at_far([0.1, 0.9], [0, 1], far=far)


def test_bad_confidence_and_far_type_rejected():
    with pytest.raises(InvalidInputError, match=r"confidence must lie in \(0.0, 1.0\)"):
        pd_at_far([0.1, 0.9], [0, 1], confidence=95)
    with pytest.raises(InvalidTypeError, match="far must be a number or a sequence"):
        pd_at_far([0.1, 0.9], [0, 1], far="0.01")


# -- High Confidence Set in detection terms -----------------------------------------------

def test_hcs_detection_counts_and_rates():
    # P(target) intervals: two confident targets (one right), two confident
    # background (one a target: a confident miss), one uncertain target.
    lo1 = np.array([0.0, 0.01, 0.85, 0.9, 0.3])
    hi1 = np.array([0.1, 0.15, 0.95, 1.0, 0.7])
    lower, upper = np.stack([1 - hi1, lo1], -1), np.stack([1 - lo1, hi1], -1)
    s = hcs_summary(high_confidence_set(lower, upper), [0, 1, 1, 0, 1])
    assert s.n_background.tolist() == [2]
    assert s.confident_errors.tolist() == [2]             # one miss + one false alarm
    assert s.detected_target_rate.tolist() == [1 / 3]
    assert s.missed_target_rate.tolist() == [1 / 3]
    assert s.false_target_rate.tolist() == [1 / 2]
    none = hcs_summary(high_confidence_set(lower, upper), [0, 0, 0, 0, 0])
    assert np.isnan(none.missed_target_rate[0]) and none.false_target_rate[0] == 2 / 5
