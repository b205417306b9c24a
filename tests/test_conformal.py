"""uz.conformal: split-conformal label sets, the conformal HCS, and how sets are judged.

Conformal calibration is post-hoc on predictions, so these tests need no
network: probabilities are drawn directly, or come from a logistic-regression
posterior (one draw) fitted in milliseconds. The statistical tests have a
noise model: the coverage of a split-conformal set given its calibration is
Beta(n + 1 − l, l), l = ⌊(n + 1)α⌋ (Vovk 2012; Angelopoulos & Bates 2023,
§C), and the test labels add a binomial term.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import uqzoo as uz
from uqzoo.conformal import (
    calibrate,
    conformal_hcs,
    conformalize,
    evaluate_sets,
    label_scores,
    nonconformity_scores,
    predictive_sets,
    quantile_rank,
)
from uqzoo.posterior import Posterior


def _logistic_posterior(data, seed=0):
    """A one-draw posterior of a logistic regression (the network with no hidden layer)."""
    lr = LogisticRegression(C=1.0).fit(data.X_train, data.y_train)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=())
    draws = {"layers.0.weight": lr.coef_[None], "layers.0.bias": lr.intercept_[None]}
    return Posterior(spec=spec, method="map", config={}, seed=seed, draws=draws)


def _calibrated_draws(rng, n, K=3, concentration=1.0):
    p = rng.dirichlet(np.full(K, concentration), size=n)
    y = (rng.uniform(size=(n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    return p, np.minimum(y, K - 1)


# -- the rule --------------------------------------------------------------------------

def test_quantile_rank_is_the_finite_sample_order_statistic():
    assert quantile_rank(99, 0.1) == 90           # (n+1)(1-α) = 90 exactly, no extra rank
    assert quantile_rank(100, 0.1) == 91
    assert quantile_rank(8, 0.1) == 9             # > n: no finite threshold


def test_too_few_calibration_points_give_the_full_label_set():
    rng = np.random.default_rng(0)
    p, y = _calibrated_draws(rng, 8)
    rule = calibrate(p, y, alpha=0.1)
    assert np.isinf(rule.thresholds).all() and rule.full_set_classes == (0, 1, 2)
    assert rule.predict(p).all()
    assert "too few calibration points" in rule.summary()


def test_mondrian_gives_a_rare_class_its_own_threshold():
    rng = np.random.default_rng(1)
    p, y = _calibrated_draws(rng, 400)
    keep = (y != 2) | (rng.uniform(size=y.shape) < 0.02)     # class 2 made rare
    rule = calibrate(p[keep], y[keep], alpha=0.1, mondrian=True)
    assert rule.class_counts[2] < 9 and rule.full_set_classes == (2,)
    assert np.isfinite(rule.thresholds[:2]).all()
    assert rule.predict(p)[:, 2].all()


def test_lac_threshold_by_hand():
    p = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]] * 5)
    y = np.array([0, 1, 1, 0] * 5)
    scores = nonconformity_scores(p, y, "lac")            # 0.1, 0.6, 0.3, 0.8 (×5)
    rule = calibrate(p, y, alpha=0.25)                    # rank ⌈21 × 0.75⌉ = 16
    assert rule.thresholds[0] == pytest.approx(np.sort(scores)[15]) == pytest.approx(0.8)


def test_aps_scores_count_ties_in():
    p = np.array([[0.4, 0.4, 0.2], [0.6, 0.3, 0.1]])
    np.testing.assert_allclose(label_scores(p, "aps"), [[0.8, 0.8, 1.0], [0.6, 0.9, 1.0]])


def test_aps_sets_are_never_empty_and_lac_sets_can_be():
    rng = np.random.default_rng(2)
    p, y = _calibrated_draws(rng, 2000, concentration=0.3)
    lac = calibrate(p[:1000], y[:1000], alpha=0.4).predict(p[1000:])
    aps = calibrate(p[:1000], y[:1000], alpha=0.4, score="aps").predict(p[1000:])
    assert aps.any(axis=1).all()
    assert not lac.any(axis=1).all()


def test_predictive_sets_reach_the_level_with_the_fewest_labels():
    p = np.array([[0.5, 0.3, 0.2], [0.95, 0.04, 0.01], [0.34, 0.33, 0.33]])
    np.testing.assert_array_equal(predictive_sets(p, 0.9),
                                  [[True, True, True], [True, False, False],
                                   [True, True, True]])
    np.testing.assert_array_equal(predictive_sets(p, 0.8),
                                  [[True, True, False], [True, False, False],
                                   [True, True, True]])


# -- judging sets ----------------------------------------------------------------------

def test_conditional_coverage_is_the_true_mass_of_the_set():
    sets = np.array([[True, False, False], [True, True, False], [False, False, True]] * 10)
    p_true = np.array([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.1, 0.1, 0.8]] * 10)
    y = np.array([0, 2, 2] * 10)
    r = evaluate_sets(sets, y, p_true, level=0.9)
    np.testing.assert_allclose(r.conditional_coverage[:3], [0.7, 0.6, 0.8])
    assert r.coverage == pytest.approx(2 / 3)
    assert r.worst_decile_coverage == pytest.approx(0.6)    # the 3 lowest: all 0.6
    assert r.mean_size == pytest.approx(4 / 3) and r.singleton_rate == pytest.approx(2 / 3)
    assert math.isnan(r.class_coverage[1]) and r.class_coverage[2] == pytest.approx(0.5)
    lo, hi = r.coverage_interval
    assert lo < 2 / 3 < hi
    assert r.below_level_share == 1.0


def test_without_truth_there_is_no_conditional_coverage():
    r = evaluate_sets(np.ones((5, 2), bool), [0, 1, 0, 1, 1], level=0.9)
    assert r.conditional_coverage is None and r.worst_decile_coverage is None
    assert r.coverage == 1.0 and r.empty_rate == 0.0


@pytest.mark.parametrize("call, needle", [
    (lambda p, y: calibrate(p, y, alpha=1.5), "alpha"),
    (lambda p, y: calibrate(p, y, alpha=0.1, score="raps"), "score"),
    (lambda p, y: calibrate(p, y, mondrian="yes"), "mondrian"),
    (lambda p, y: calibrate(p, y[:-1]), "y"),
    (lambda p, y: calibrate(p + 0.1, y), "probs"),
    (lambda p, y: conformal_hcs(p, y, alpha=0.0), "alpha"),
    (lambda p, y: evaluate_sets(p, y, level=0.9), "sets"),
    (lambda p, y: evaluate_sets(p > 0.2, y, level=90), "level"),
    (lambda p, y: calibrate(p, y).predict(p[:, :2]), "probs"),
])
def test_bad_input_is_a_clear_error(call, needle):
    p, y = _calibrated_draws(np.random.default_rng(0), 50)
    with pytest.raises(uz.UqzooError, match=needle):
        call(p, y)


def test_conformalize_a_posterior_on_a_seeded_training_split():
    data = uz.datasets.load("gaussian-mixture", n_train=600, n_test=500, seed=3)
    fit_data, calibration = uz.calibration_split(data, 0.25, seed=5)
    post = _logistic_posterior(fit_data)
    given = conformalize(post, calibration=calibration, alpha=0.2, score="aps")
    from_data = conformalize(post, data, calibration_fraction=0.25, seed=5, alpha=0.2,
                             score="aps")
    np.testing.assert_array_equal(given.thresholds, from_data.thresholds)   # the same split
    assert from_data.info == {"calibration": "training split", "calibration_fraction": 0.25,
                              "seed": 5, "n_calibration": 150}
    assert given.hcs is not None and given.hcs.alpha == 0.2
    with pytest.raises(uz.InvalidInputError, match="calibration"):
        conformalize(post, alpha=0.2)
    with pytest.raises(uz.InvalidInputError, match="not both"):
        conformalize(post, data, calibration=calibration)
    with pytest.raises(uz.InvalidTypeError, match="posterior"):
        conformalize("map", data)


# -- the conformal HCS -----------------------------------------------------------------

def test_conformal_hcs_threshold_by_hand():
    # 19 targets with p_1 = 0.01 .. 0.19: m = ⌊20 × 0.1⌋ − 1 = 1, λ = 2nd smallest = 0.02
    p1 = np.r_[np.arange(1, 20) / 100, np.full(30, 0.05)]
    y = np.r_[np.ones(19, int), np.zeros(30, int)]
    hcs = conformal_hcs(np.c_[1 - p1, p1], y, alpha=0.1)
    assert hcs.classes == (1,) and hcs.dismiss_below[0] == pytest.approx(0.02)
    decided = hcs.predict(np.c_[1 - p1, p1])
    assert decided.negative[:, 0].sum() == 1                  # only p_1 = 0.01 is dismissed
    few = conformal_hcs(np.c_[1 - p1, p1][-35:], y[-35:], alpha=0.1)   # 5 targets: m < 0
    assert few.dismiss_below[0] == -np.inf
    assert not few.predict(np.c_[1 - p1, p1]).negative.any()


# -- statistics against the truth -------------------------------------------------------

SEEDS = range(20)


def _beta_binomial_var(n_cal: int, n_test: int, alpha: float) -> float:
    """Variance of one seed's test coverage: Beta(n+1−l, l) given the calibration
    (l = ⌊(n+1)α⌋) plus the test labels' binomial term."""
    l_ = math.floor((n_cal + 1) * alpha)
    a, b = n_cal + 1 - l_, l_
    mean = a / (a + b)
    beta_var = a * b / ((a + b) ** 2 * (a + b + 1))
    return beta_var + mean * (1 - mean) / n_test


@pytest.mark.parametrize("score, mondrian", [("lac", False), ("aps", False), ("lac", True)])
def test_marginal_coverage_is_one_minus_alpha_within_binomial_error(score, mondrian):
    """Over 20 data sets of gaussian-mixture the mean coverage is within 4 standard errors
    of [1 − α, 1 − α + 1/(n+1)], where the expected coverage ⌈(n+1)(1−α)⌉/(n+1) lies
    (n: the calibration points, or the fewest of one class with Mondrian)."""
    alpha, coverages, variances, n_smallest = 0.1, [], [], []
    for seed in SEEDS:
        data = uz.datasets.load("gaussian-mixture", n_train=500, n_test=1000, seed=seed)
        fit_data, calibration = uz.calibration_split(data, 0.4, seed=seed)
        post = _logistic_posterior(fit_data)
        rule = conformalize(post, calibration=calibration, alpha=alpha, score=score,
                            mondrian=mondrian)
        sets = rule.predict(post.predict_proba(data.X_test))
        report = evaluate_sets(sets, data.y_test, data.p_true_test, level=1 - alpha)
        coverages.append(report.coverage)
        n_cal = int(rule.class_counts.min()) if mondrian else rule.n_calibration
        n_smallest.append(n_cal)
        variances.append(_beta_binomial_var(n_cal, data.n_test, alpha))
    se = math.sqrt(np.mean(variances) / len(coverages))
    mean = float(np.mean(coverages))
    assert 1 - alpha - 4 * se <= mean, (mean, se)
    if score == "lac":
        # the upper end needs continuous scores; non-randomised APS on two classes
        # scores every point whose label is not the top one exactly 1 (the total
        # mass): a tie at q̂, resolved towards the full set, so APS over-covers (0.95)
        assert mean <= 1 - alpha + 1 / (min(n_smallest) + 1) + 4 * se, (mean, se)


# ~12 s each: the second level runs with the slow tests
@pytest.mark.parametrize("alpha", [0.1, pytest.param(0.2, marks=pytest.mark.slow)])
def test_conformal_hcs_holds_its_alpha_on_hsi_sim(alpha):
    """Over 20 simulated scenes, the share of test targets the conformal HCS dismisses is
    at most α within 4 standard errors, and the set is not empty (it dismisses most
    background)."""
    rates, variances, dismissed_background = [], [], []
    for seed in SEEDS:
        data = uz.datasets.load("hsi-sim", size=48, n_bands=20, seed=seed, progress_bar=False)
        fit_data, calibration = uz.calibration_split(data, 0.4, seed=seed)
        post = _logistic_posterior(fit_data)
        rule = conformalize(post, calibration=calibration, alpha=alpha)
        assert rule.hcs is not None
        decided = rule.hcs.predict(post.predict_proba(data.X_test))
        summary = uz.metrics.hcs_summary(decided, data.y_test)
        n_t = int(summary.n_targets[0])
        rates.append(summary.missed_targets[0] / n_t)
        n_cal_t = int(rule.hcs.n_targets[0])
        m = math.floor((n_cal_t + 1) * alpha) - 1
        a, b = m + 1, n_cal_t - m                          # the miss rate given λ: Beta
        variances.append(a * b / ((a + b) ** 2 * (a + b + 1)) + alpha * (1 - alpha) / n_t)
        background = data.y_test == 0
        dismissed_background.append(decided.negative[background, 0].mean())
    se = math.sqrt(np.mean(variances) / len(rates))
    assert np.mean(rates) <= alpha + 4 * se, (np.mean(rates), se)
    assert np.mean(dismissed_background) > 0.5


# -- in uz.evaluate ---------------------------------------------------------------------

def test_evaluate_judges_conformal_sets_beside_the_models_own():
    data = uz.datasets.load("gaussian-mixture", n_train=600, n_test=800, seed=4)
    fit_data, calibration = uz.calibration_split(data, 0.3, seed=4)
    post = _logistic_posterior(fit_data)
    rule = conformalize(post, calibration=calibration, alpha=0.1)
    report = uz.evaluate(post, data, levels=(0.8,), conformal=rule)
    assert report.conformal is not None and report.conformal.rule is rule
    d = report.to_dict()
    assert d["conformal_coverage"] == pytest.approx(report.conformal.conformal.coverage)
    assert d["plain_set_coverage"] == pytest.approx(report.conformal.plain.coverage)
    assert d["plain_worst_decile"] == pytest.approx(report.conformal.plain.worst_decile_coverage)
    assert d["plain_set_size"] == pytest.approx(report.conformal.plain.mean_size)
    assert d["conformal_set_size"] == pytest.approx(report.conformal.conformal.mean_size)
    assert 0.0 <= d["conformal_worst_decile"] <= d["conformal_coverage"] + 0.2
    assert "conformal_hcs_missed_rate" in d
    per_class = report.table[(report.table.metric == "conformal_coverage")
                             & report.table["class"].notna()]
    assert sorted(per_class["class"].tolist()) == list(data.classes or (0, 1))
    assert "split-conformal LAC sets" in report.summary()
    with pytest.raises(uz.InvalidTypeError, match="conformal"):
        uz.evaluate(post, data, levels=(0.8,), conformal=0.9)
    three = calibrate(np.full((20, 3), 1 / 3), np.arange(20) % 3)
    with pytest.raises(uz.InvalidInputError, match="3 classes"):
        uz.evaluate(post, data, levels=(0.8,), conformal=three)
