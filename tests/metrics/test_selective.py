"""Selective prediction: hand cases, ties, scikit-learn cross-checks."""

import numpy as np
import pytest

from uqzoo.errors import InvalidInputError
from uqzoo.metrics import (
    accuracy,
    auarc,
    aurc,
    balanced_accuracy,
    eaurc,
    misclassification_auroc,
    risk_coverage_curve,
)

P = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
Y = np.array([0, 1, 0, 0])
# confidences 0.9 ok, 0.8 wrong, 0.6 ok, 0.7 wrong -> sorted: ok, wrong, wrong, ok


def test_risk_coverage_hand_case():
    curve = risk_coverage_curve(P, Y)
    assert curve.coverage.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert curve.risk == pytest.approx([0, 0, 1 / 2, 2 / 3, 1 / 2])


def test_aurc_eaurc_hand_case():
    assert aurc(P, Y) == pytest.approx(0.0625 + 0.25 * (0.5 + 2 / 3) / 2 + 0.25 * (2 / 3 + 0.5) / 2)
    assert aurc(P, Y, method="mean_over_k") == pytest.approx((0 + 1 / 2 + 2 / 3 + 1 / 2) / 4)
    # oracle with 2 errors of 4: risks 0, 0, 1/3, 1/2
    best_trap = 0.25 * (1 / 3) / 2 + 0.25 * (1 / 3 + 1 / 2) / 2
    assert eaurc(P, Y) == pytest.approx(aurc(P, Y) - best_trap)
    assert eaurc(P, Y, method="mean_over_k") == pytest.approx(
        aurc(P, Y, method="mean_over_k") - (1 / 3 + 1 / 2) / 4)
    r = 0.5
    assert eaurc(P, Y, method="mean_over_k", optimum="asymptotic") == pytest.approx(
        aurc(P, Y, method="mean_over_k") - (r + (1 - r) * np.log(1 - r)))


def test_eaurc_zero_for_perfect_ranking():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    p1 = rng.uniform(size=200)
    p = np.stack([1 - p1, p1], 1)
    wrong = p.argmax(1) != y
    conf = np.where(wrong, 0.0, 1.0) + rng.uniform(0, 0.5, 200)   # every error below every hit
    for method in ("trapezoid", "mean_over_k"):
        assert eaurc(p, y, confidence=conf, method=method) == pytest.approx(0.0, abs=1e-15)


def test_trapezoid_aurc_ignores_order_of_ties_mean_over_k_does_not():
    # Two tied points, one right and one wrong: the tie-aware curve does not
    # care which comes first; the classic mean over k does.
    p = np.array([[0.9, 0.1], [0.7, 0.3], [0.7, 0.3]])
    y1, y2 = np.array([0, 0, 1]), np.array([0, 1, 0])
    assert aurc(p, y1) == aurc(p, y2)
    assert aurc(p, y1, method="mean_over_k") != aurc(p, y2, method="mean_over_k")


def test_misclassification_auroc_matches_sklearn_with_ties():
    from sklearn.metrics import roc_auc_score
    rng = np.random.default_rng(1)
    p = rng.dirichlet([1, 1, 1], size=500)
    p = np.round(p, 2)
    p[:, 2] = 1 - p[:, 0] - p[:, 1]
    p = np.clip(p, 0, 1)
    y = rng.integers(0, 3, 500)
    correct = p.argmax(1) == y
    ours = misclassification_auroc(p, y)
    assert ours == pytest.approx(roc_auc_score(correct, p.max(1)), rel=1e-12)
    # the same number as AUROC of the uncertainty for detecting errors
    assert ours == pytest.approx(roc_auc_score(~correct, -p.max(1)), rel=1e-12)


def test_misclassification_auroc_nan_when_no_errors():
    assert np.isnan(misclassification_auroc(np.array([[0.9, 0.1], [0.2, 0.8]]), [0, 1]))


def test_accuracy_and_balanced_accuracy_match_sklearn():
    from sklearn.metrics import accuracy_score, balanced_accuracy_score
    rng = np.random.default_rng(2)
    p = rng.dirichlet([1, 2, 3, 1], size=300)
    y = rng.choice(4, size=300, p=[0.1, 0.2, 0.6, 0.1])
    assert accuracy(p, y) == pytest.approx(accuracy_score(y, p.argmax(1)))
    assert balanced_accuracy(p, y) == pytest.approx(balanced_accuracy_score(y, p.argmax(1)))


def test_auarc_hand_case_under_both_x_axes():
    # Ascending confidence: 0.6 (y=0, right), 0.7 (y=0, wrong), 0.8 (y=1, wrong),
    # 0.9 (y=0, right). N = 4, so s = 1 and k = 0, 1, 2, 3 (k_max = 3).
    # Balanced accuracy of the kept points (mean recall over present classes):
    bacc = [
        (2 / 3 + 0 / 1) / 2,   # k=0: class 0 keeps 0.6, 0.7, 0.9 (2 right); class 1 keeps 0.8 (0)
        (1 / 2 + 0 / 1) / 2,   # k=1: class 0 keeps 0.7, 0.9 (1 right); class 1 keeps 0.8 (0)
        (1 / 1 + 0 / 1) / 2,   # k=2: class 0 keeps 0.9 (right); class 1 keeps 0.8 (0)
        1 / 1,                 # k=3: only 0.9 is kept, class 0, right
    ]
    assert bacc == pytest.approx([1 / 3, 1 / 4, 1 / 2, 1])
    trapezoids = (bacc[0] + bacc[1]) / 2 + (bacc[1] + bacc[2]) / 2 + (bacc[2] + bacc[3]) / 2
    # Authors' code: x = k / k_max = 0, 1/3, 2/3, 1 -- every panel 1/3 wide.
    by_kmax = trapezoids / 3
    # x = k / N = 0, 1/4, 2/4, 3/4 -- every panel 1/4 wide, the curve stops at 3/4.
    by_n = trapezoids / 4
    assert by_kmax == pytest.approx(17 / 36) and by_n == pytest.approx(17 / 48)
    assert auarc(P, Y) == pytest.approx(by_kmax, rel=1e-12)
    assert auarc(P, Y, x_axis="k_over_kmax") == pytest.approx(by_kmax, rel=1e-12)
    assert auarc(P, Y, x_axis="k_over_n") == pytest.approx(by_n, rel=1e-12)


def test_auarc_x_axis_is_validated_and_a_single_point_has_no_axis():
    with pytest.raises(InvalidInputError, match=r"x_axis.*'k_over_kmax'.*'fraction'"):
        auarc(P, Y, x_axis="fraction")
    one = np.array([[0.3, 0.7]])
    assert np.isnan(auarc(one, [1]))                        # k_max = 0
    assert auarc(one, [1], x_axis="k_over_n") == 0.0        # one point: no area


def test_auarc_against_a_naive_loop_as_the_authors_write_it():
    import warnings

    from sklearn.metrics import balanced_accuracy_score
    rng = np.random.default_rng(3)
    N = 2001                                   # step s = 2, k_max = 2000
    p = rng.dirichlet([1, 1, 1], size=N)
    y = rng.integers(0, 3, N)
    order = np.argsort(p.max(1), kind="stable")
    pred = p.argmax(1)
    ks, ys = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # sklearn warns when a class vanishes
        for k in range(0, N, N // 1000):       # create_risk_reject_curve's grid
            kept = order[k:]
            ks.append(k)
            ys.append(balanced_accuracy_score(y[kept], pred[kept]))
    ks = np.array(ks)
    assert ks[-1] == 2000
    assert auarc(p, y) == pytest.approx(np.trapezoid(ys, ks / ks.max()), rel=1e-12)
    assert auarc(p, y, x_axis="k_over_n") == pytest.approx(np.trapezoid(ys, ks / N),
                                                           rel=1e-12)


def test_custom_confidence_score_is_used():
    ent = -np.sum(P * np.log(P), axis=1)
    assert aurc(P, Y, confidence=-ent) == aurc(P, Y)   # same ranking for binary
    # ranking 0.7 (wrong), 0.6 (ok), 0.8 (wrong), 0.9 (ok): risks 1, 1/2, 2/3, 1/2
    got = aurc(P, Y, confidence=[0.1, 0.2, 0.3, 0.4])
    assert got == pytest.approx(0.25 * 1 + 0.25 * 0.75 + 0.25 * (7 / 12) + 0.25 * (7 / 12))
