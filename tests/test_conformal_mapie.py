"""uqzoo's split-conformal sets equal MAPIE's (the reference implementation) on the same
probabilities and calibration split: LAC and APS, marginal and Mondrian.

MAPIE (1.x) is a test-only dependency. Its ``SplitConformalClassifier`` with
``prefit=True`` wraps a fitted classifier; a stand-in classifier here returns
fixed probabilities for row indices, so both libraries see exactly the same
numbers.

Conventions matched, explicitly:

- quantile: both take the ⌈(n + 1)(1 − α)⌉-th smallest calibration score
  (MAPIE: ``np.quantile(..., ceil((n+1)(1-α))/n, method="lower")``);
- LAC: both put k in the set when 1 − p̂_k ≤ q̂ (MAPIE adds a 1e-8 slack,
  which no score here comes near);
- APS: MAPIE *always* randomises its calibration scores (it subtracts
  U · p̂_y, ``APSConformityScore.get_conformity_scores``); uqzoo's APS is the
  non-randomised one. The test therefore runs MAPIE's APS with that one
  line removed (a subclass whose calibration score is MAPIE's own cumulated
  probability of the true label) and predicts with
  ``include_last_label=False``: MAPIE's non-randomised set {k : s(x, k) ≤ q̂}
  plus the top label when it would be empty, which is uqzoo's APS rule;
- Mondrian: MAPIE 1.x has no Mondrian class; class-conditional calibration is
  MAPIE's split conformal calibrated on the points of one class at a time,
  and uqzoo's column k must equal column k of MAPIE's sets calibrated on the
  class-k points.
"""

from __future__ import annotations

import numpy as np
import pytest

import uqzoo as uz

mapie_classification = pytest.importorskip("mapie.classification")
from mapie.conformity_scores import APSConformityScore  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402


class FixedProbabilities(ClassifierMixin, BaseEstimator):
    """A 'fitted' classifier whose input is a row index into a table of probabilities."""

    def __init__(self, table=None):
        self.table = table

    def fit(self, X, y):   # never called: prefit
        return self

    def predict_proba(self, X):
        return self.table[np.asarray(X, dtype=np.int64)[:, 0]]

    def predict(self, X):
        return np.argmax(self.predict_proba(X), axis=1)

    def __sklearn_is_fitted__(self):
        return True


class NonRandomisedAPS(APSConformityScore):
    """MAPIE's APS with its calibration randomisation removed (see the module notes)."""

    def get_conformity_scores(self, y, y_pred, y_enc=None, **kwargs):
        scores, self.cutoff = self.get_true_label_cumsum_proba(y, y_pred, self.classes)
        return scores


def _problem(seed: int, K: int, n_cal: int, n_test: int):
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.full(K, 0.7), size=n_cal + n_test)
    y = np.array([rng.choice(K, p=row) for row in table])
    return table, y, np.arange(n_cal), np.arange(n_cal, n_cal + n_test)


def _mapie_sets(table, y, cal, test, K, alpha, score):
    clf = FixedProbabilities(table)
    clf.classes_ = np.arange(K)
    conformity = "lac" if score == "lac" else NonRandomisedAPS()
    mapie = mapie_classification.SplitConformalClassifier(
        estimator=clf, confidence_level=1 - alpha, conformity_score=conformity, prefit=True)
    mapie.conformalize(cal[:, None], y[cal])
    params = {"include_last_label": False} if score == "aps" else None
    _, sets = mapie.predict_set(test[:, None], conformity_score_params=params)
    return sets[:, :, 0]


# MAPIE refuses APS on a binary target ("the only valid score is 'lac'")
@pytest.mark.parametrize("score, K, alpha", [("lac", 2, 0.1), ("lac", 4, 0.1), ("lac", 5, 0.2),
                                             ("aps", 3, 0.1), ("aps", 4, 0.1),
                                             ("aps", 5, 0.2)])
def test_marginal_sets_equal_mapie(score, K, alpha):
    table, y, cal, test = _problem(seed=K, K=K, n_cal=300, n_test=400)
    rule = uz.conformal.calibrate(table[cal], y[cal], alpha=alpha, score=score)
    ours = rule.predict(table[test])
    theirs = _mapie_sets(table, y, cal, test, K, alpha, score)
    np.testing.assert_array_equal(ours, theirs)
    assert 1.0 < ours.sum(axis=1).mean() < K       # not a trivial agreement


# calibrated on one class, MAPIE warns that the other labels are missing: that is the point
@pytest.mark.filterwarnings("ignore:WARNING. your conformalization dataset has less labels")
@pytest.mark.parametrize("score", ["lac", "aps"])
def test_mondrian_sets_equal_mapie_calibrated_class_by_class(score, monkeypatch):
    # MAPIE reads one-label calibration data as a binary target and refuses APS on it;
    # the problem is K-class, only the calibration subset is one class
    monkeypatch.setattr(mapie_classification, "check_target", lambda score, y: None)
    K, alpha = 3, 0.1
    table, y, cal, test = _problem(seed=7, K=K, n_cal=600, n_test=400)
    rule = uz.conformal.calibrate(table[cal], y[cal], alpha=alpha, score=score, mondrian=True)
    ours = rule.predict(table[test])
    assert len(set(rule.thresholds.tolist())) == K       # one threshold per class
    for k in range(K):
        of_class = cal[y[cal] == k]
        theirs = _mapie_sets(table, y, of_class, test, K, alpha, score)
        # (APS: both keep the top label in every set, whichever class calibrated)
        np.testing.assert_array_equal(ours[:, k], theirs[:, k])


def test_quantile_is_mapies_order_statistic():
    from mapie.utils import _compute_classification_quantile

    rng = np.random.default_rng(0)
    for n in (9, 10, 99, 250):
        scores = rng.uniform(size=n)
        for alpha in (0.1, 0.2, 0.05):
            rank = uz.conformal.quantile_rank(n, alpha)
            if rank > n:
                continue                  # MAPIE raises; uqzoo returns the full set
            ours = np.sort(scores)[rank - 1]
            theirs = _compute_classification_quantile(scores, np.array([alpha]))[0]
            assert ours == theirs, (n, alpha)
