"""Selective prediction: risk–coverage, AURC, E-AURC, AUARC, misclassification AUROC.

All metrics rank points by a confidence score (default: the top-label
probability max_k p_k; pass ``confidence=`` to rank by any other score, higher
meaning more confident, e.g. ``-predictive_entropy(p)``). The prediction is
the argmax of ``probs``; the loss is the 0/1 misclassification.

All of these need a global sort of N scores. The evaluator computes them
exactly on the (N, K) posterior-mean probabilities, which fit in memory even
for 10^7 points (the streaming path never holds the (S, N, K) draws).

AURC, E-AURC, AUARC, the misclassification AUROC, accuracy and balanced
accuracy take ``sample_weight``: frequency weights, as scikit-learn's. With
integer weights each equals the unweighted metric of the sample in which
point i appears w_i times (coverage and rejection are counted in units of
weight; a point straddling an AUARC grid position is split). A (R, N)
``sample_weight`` is R weightings of the same points (the bootstrap's
replicates) and gives R values; the sort is shared by all R.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
from scipy import special, stats

from uqzoo._validation import check_choice, choices
from uqzoo.metrics._common import (
    check_probs_and_labels,
    check_sample_weight,
    check_scores,
    group_ends,
    ratio,
    total_weight,
    unstack,
    weighted_mean,
)
from uqzoo.metrics.detection import weighted_auroc

__all__ = [
    "RiskCoverageCurve",
    "accuracy",
    "auarc",
    "aurc",
    "balanced_accuracy",
    "eaurc",
    "misclassification_auroc",
    "risk_coverage_curve",
]

AurcMethod = Literal["trapezoid", "mean_over_k"]
AURC_METHODS = choices(AurcMethod)
EAURC_OPTIMA = ("exact", "asymptotic")
# How AUARC scales its rejection axis: by the last rejection count of the grid
# (the authors' code), or by N.
AUARC_X_AXES = ("k_over_kmax", "k_over_n")
_EULER_GAMMA = 0.5772156649015329


@dataclasses.dataclass(frozen=True, eq=False)
class RiskCoverageCurve:
    """Selective risk against coverage, one point per distinct confidence.

    Attributes
    ----------
    coverage : ndarray of shape (G + 1,)
        0, then the fraction of points kept at each distinct confidence
        threshold, ascending to 1.
    risk : ndarray of shape (G + 1,)
        Error rate among the kept points. The first entry (coverage 0) repeats
        the risk of the most confident group, its limit as coverage → 0.
    threshold : ndarray of shape (G + 1,)
        The confidence threshold of each point (first entry repeated).
    """

    coverage: np.ndarray
    risk: np.ndarray
    threshold: np.ndarray


def _prepare(probs: object, y: object, confidence: object
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p, labels = check_probs_and_labels(probs, y)
    pred = p.argmax(axis=1)
    error = pred != labels
    if confidence is None:
        conf = np.take_along_axis(p, pred[:, None], axis=1)[:, 0]
    else:
        conf = check_scores(confidence, "confidence", p.shape[0])
    return p, labels, error, conf


def _curve(error: np.ndarray, conf: np.ndarray) -> RiskCoverageCurve:
    n = error.shape[0]
    order = np.argsort(-conf, kind="stable")
    c = conf[order]
    cum_err = np.cumsum(error[order])
    # Tied confidences are accepted or rejected together: keep only the last
    # position of each run of equal values.
    ends = np.flatnonzero(np.append(c[1:] != c[:-1], True))
    kept = ends + 1
    risk = cum_err[ends] / kept
    return RiskCoverageCurve(coverage=np.concatenate([[0.0], kept / n]),
                             risk=np.concatenate([risk[:1], risk]),
                             threshold=np.concatenate([c[ends[:1]], c[ends]]))


def risk_coverage_curve(probs: object, y: object, *, confidence: object = None
                        ) -> RiskCoverageCurve:
    """Risk–coverage curve, tie-aware.

    Parameters
    ----------
    probs : array of shape (N, K)
    y : array of shape (N,)
    confidence : array of shape (N,), optional
        Ranking score, higher = more confident; default max_k p_k.

    Returns
    -------
    RiskCoverageCurve

    Examples
    --------
    Four points, errors at the second and third most confident; the risk among the kept
    points as coverage grows from the most confident point:

    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> uz.metrics.risk_coverage_curve(p, [0, 1, 0, 0]).risk
    array([0.        , 0.        , 0.5       , 0.66666667, 0.5       ])

    References
    ----------
    Geifman, Y., El-Yaniv, R. (2017). Selective classification for deep
    neural networks. NeurIPS.
    """
    _, _, error, conf = _prepare(probs, y, confidence)
    return _curve(error, conf)


def _aurc(error: np.ndarray, conf: np.ndarray, method: str) -> float:
    if method == "trapezoid":
        curve = _curve(error, conf)
        return float(np.trapezoid(curve.risk, curve.coverage))
    order = np.argsort(-conf, kind="stable")
    k = np.arange(1, error.shape[0] + 1)
    return float(np.mean(np.cumsum(error[order]) / k))


def _harmonic(x: np.ndarray) -> np.ndarray:
    """H(x) = ψ(x + 1) + γ: the harmonic numbers, continued to real x ≥ 0."""
    return special.digamma(x + 1.0) + _EULER_GAMMA


def weighted_aurc(error: np.ndarray, conf: np.ndarray, W: np.ndarray, n: np.ndarray,
                  order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tie-aware trapezoid AURC, mean-over-k AURC) for each row of weights W (R, N); (R,) each.

    Coverage is counted in units of weight. ``n`` (R,): the rows' total
    weights (:func:`~uqzoo.metrics._common.total_weight`); ``order``: the
    stable descending order of ``conf`` (a caller scoring many weightings
    sorts once). Mean over k: point j fills positions K_{j-1}+1 .. K_j of the
    expanded order, each adding its running risk, summed in closed form with
    harmonic numbers H(x) = ψ(x + 1) + γ.
    """
    c = conf[order]
    e = error[order].astype(np.float64)
    Ws = W[:, order]
    cum_w = np.cumsum(Ws, axis=1)
    cum_e = np.cumsum(Ws * e, axis=1)
    ends = group_ends(c)
    kept, errs = cum_w[:, ends], cum_e[:, ends]
    risk = ratio(errs, kept)
    first = np.argmax(kept > 0, axis=1)
    risk0 = risk[np.arange(risk.shape[0]), first]
    risk = np.where(kept > 0, risk, risk0[:, None])
    x = np.concatenate([np.zeros((kept.shape[0], 1)), kept / n[:, None]], axis=1)
    r = np.concatenate([risk0[:, None], risk], axis=1)
    trapezoid = np.sum(np.diff(x, axis=1) * (r[:, 1:] + r[:, :-1]) / 2, axis=1)
    # Σ_k (E_{j-1} + e_j (k − K_{j-1})) / k over point j's positions is
    # (E_{j-1} − e_j K_{j-1}) (H(K_j) − H(K_{j-1})) + e_j w_j. K_{j-1} is the
    # running total before point j, so H(K_{j-1}) is H(K_j) shifted by one
    # point: one digamma pass, not two
    H_end = _harmonic(cum_w)
    H_before = np.concatenate([np.zeros((H_end.shape[0], 1)), H_end[:, :-1]], axis=1)
    before_w = cum_w - Ws
    before_e = cum_e - Ws * e
    mean_over_k = np.sum((before_e - e * before_w) * (H_end - H_before) + e * Ws, axis=1) / n
    return trapezoid, mean_over_k


def optimal_aurc_real(n: np.ndarray, n_errors: np.ndarray, method: str = "trapezoid"
                      ) -> np.ndarray:
    """AURC of an oracle with n points and E errors, both real (total weights), shape (R,).

    The risk after k = 1..n points is max(k − (n − E), 0) / k (the grid
    k = 1..⌊n⌋ for real n); closed form with harmonic numbers, equal to
    :func:`optimal_aurc` at integer n and E.
    """
    E = np.asarray(n_errors, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    c = n - E                                         # correct points ranked first
    a = np.floor(c) + 1                               # first k with positive risk
    a = np.clip(a, 1, n + 1)
    count = np.floor(n) - a + 1                       # k = a .. n
    total = count - c * (_harmonic(np.floor(n)) - _harmonic(a - 1))
    total = np.where(count > 0, total, 0.0)
    if method == "mean_over_k":
        return total / n
    r1 = np.maximum(1 - c, 0.0)                       # risk at k = 1, repeated at coverage 0
    rn = np.maximum(n - c, 0.0) / n
    return (total + (r1 - rn) / 2) / n


def _weighted_prepare(probs: object, y: object, confidence: object, sample_weight: object
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p, labels, error, conf = _prepare(probs, y, confidence)
    return p, labels, error, conf, check_sample_weight(sample_weight, p.shape[0])


def aurc(probs: object, y: object, *, confidence: object = None,
         method: str = "trapezoid", sample_weight: object = None) -> float | np.ndarray:
    """Area under the risk–coverage curve.

    Parameters
    ----------
    probs, y, confidence
        (N, K) probabilities, (N,) labels and an optional (N,) ranking score, as
        :func:`risk_coverage_curve`.
    method : {"trapezoid", "mean_over_k"}
        ``"trapezoid"`` (default): tie-aware -- points with equal confidence
        are rejected together -- and integrated by the trapezoid rule over
        coverage from 0 (where the curve starts at the most confident group's
        risk) to 1. It does not depend on the order of tied points.
        ``"mean_over_k"``: the classic (1/N) Σ_k risk(top k) of Geifman et
        al.'s code, which ranks tied points in input order (a stable sort),
        so with ties its value depends on that order.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights, finite and ≥ 0 (module notes); leading axes are
        replicates.

    Returns
    -------
    float in [0, 1], or ndarray of shape (R,) for (R, N) ``sample_weight``

    Examples
    --------
    The same four points: the area under that curve. A frequency weight counts a row
    that many times:

    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> round(uz.metrics.aurc(p, [0, 1, 0, 0]), 6)
    0.354167
    >>> w = [1, 2, 0, 1]                     # the sample p0, p1, p1, p3
    >>> bool(np.isclose(uz.metrics.aurc(p, [0, 1, 0, 0], sample_weight=w),
    ...                 uz.metrics.aurc(p[[0, 1, 1, 3]], [0, 1, 1, 0])))
    True

    References
    ----------
    Geifman, Y., Uziel, G., El-Yaniv, R. (2019). Bias-reduced uncertainty
    estimation for deep neural classifiers. ICLR.
    """
    method = check_choice(method, "method", AURC_METHODS)
    if sample_weight is not None:
        _, _, error, conf, W = _weighted_prepare(probs, y, confidence, sample_weight)
        both = weighted_aurc(error, conf, W, total_weight(W), np.argsort(-conf, kind="stable"))
        return unstack(both[AURC_METHODS.index(method)], sample_weight)
    _, _, error, conf = _prepare(probs, y, confidence)
    return _aurc(error, conf, method)


def optimal_aurc(n: int, n_errors: int, method: str = "trapezoid") -> float:
    """AURC of an oracle ranking every correct point above every error, no ties."""
    k = np.arange(1, n + 1)
    risk = np.maximum(k - (n - n_errors), 0) / k
    if method == "mean_over_k":
        return float(risk.mean())
    return float(np.trapezoid(np.concatenate([risk[:1], risk]),
                              np.concatenate([[0.0], k / n])))


def eaurc(probs: object, y: object, *, confidence: object = None,
          method: str = "trapezoid", optimum: str = "exact",
          sample_weight: object = None) -> float | np.ndarray:
    """Excess AURC: AURC minus the AURC of a perfect ranking with the same errors.

    Parameters
    ----------
    probs, y, confidence, method
        As :func:`aurc`.
    optimum : {"exact", "asymptotic"}
        ``"exact"``: the finite-sample AURC, under the same ``method``, of an
        oracle that ranks all N − E correct points above the E errors with no
        ties (risk max(0, k − (N − E)) / k after k points).
        ``"asymptotic"``: Geifman et al.'s r + (1 − r) ln(1 − r), r = E / N,
        the N → ∞ limit, used by most published code.
        With ``sample_weight``, N and E are the total weights of all points
        and of the errors.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights, as :func:`aurc`.

    Returns
    -------
    float, or ndarray of shape (R,) for (R, N) ``sample_weight``

    Examples
    --------
    The same four points: an oracle ranking both errors last would score 0.145833; the
    excess is what this ranking costs:

    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> round(uz.metrics.eaurc(p, [0, 1, 0, 0]), 6)
    0.208333

    References
    ----------
    Geifman, Y., Uziel, G., El-Yaniv, R. (2019). Bias-reduced uncertainty
    estimation for deep neural classifiers. ICLR.
    """
    method = check_choice(method, "method", AURC_METHODS)
    optimum = check_choice(optimum, "optimum", EAURC_OPTIMA)
    if sample_weight is not None:
        _, _, error, conf, W = _weighted_prepare(probs, y, confidence, sample_weight)
        n_w = total_weight(W)
        area = weighted_aurc(error, conf, W, n_w, np.argsort(-conf, kind="stable"))
        E = W @ error.astype(np.float64)
        if optimum == "exact":
            oracle = optimal_aurc_real(n_w, E, method)
        else:
            r = np.minimum(E / n_w, 1.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                oracle = np.where(r < 1, r + (1 - r) * np.log1p(-r), 1.0)
        return unstack(area[AURC_METHODS.index(method)] - oracle, sample_weight)
    _, _, error, conf = _prepare(probs, y, confidence)
    n, n_err = error.shape[0], int(error.sum())
    if optimum == "exact":
        best = optimal_aurc(n, n_err, method)
    else:
        r = n_err / n
        best = r + (1 - r) * np.log1p(-r) if r < 1 else 1.0
    return _aurc(error, conf, method) - float(best)


def _balanced_accuracy(labels: np.ndarray, pred: np.ndarray) -> float:
    present = np.unique(labels)
    total = np.bincount(labels, minlength=present.max() + 1)[present]
    hits = np.bincount(labels[labels == pred], minlength=present.max() + 1)[present]
    return float(np.mean(hits / total))


def weighted_auarc(labels: np.ndarray, hit: np.ndarray, n_classes: int, W: np.ndarray,
                   n: np.ndarray, order: np.ndarray, x_axis: str = "k_over_kmax"
                   ) -> np.ndarray:
    """AUARC for each row of weights W (R, N), rejection counted in units of weight; (R,).

    Row r rejects k = 0, s, 2s, ... < ⌊n_r⌋ units of weight (s = max(1,
    ⌊n_r⌋ // 1000)) from the least confident end; a point that straddles k
    is split. ``n`` (R,): the rows' total weights; ``order``: the stable
    ascending order of the confidence; ``x_axis`` as :func:`auarc` (x = k /
    n_r for ``"k_over_n"``).
    """
    N, K = labels.shape[0], n_classes
    ys, hs = labels[order], hit[order]
    is_c = (ys[:, None] == np.arange(K)[None, :]).astype(np.float64)               # (N, K)
    out = np.full(W.shape[0], np.nan)
    for r in range(W.shape[0]):
        w = W[r, order]
        total = int(np.floor(n[r]))
        step = max(1, total // 1000)
        ks = np.arange(0, total, step, dtype=np.float64)
        if ks.shape[0] < (2 if x_axis == "k_over_kmax" else 1):
            continue                                     # k_max = 0: no rejection axis
        cum_w = np.concatenate([[0.0], np.cumsum(w)])
        cum_c = np.concatenate([np.zeros((1, K)), np.cumsum(w[:, None] * is_c, axis=0)])
        cum_h = np.concatenate([np.zeros((1, K)),
                                np.cumsum((w * hs)[:, None] * is_c, axis=0)])
        # points wholly rejected before position k: j = #{i : cum_w[i + 1] ≤ k}
        j = np.searchsorted(cum_w[1:], ks, side="right")
        partial = np.where(j < N, ks - cum_w[j], 0.0)[:, None]
        jj = np.minimum(j, N - 1)
        kept = cum_c[-1] - cum_c[j] - partial * is_c[jj]                          # (ks, K)
        kept_hit = cum_h[-1] - cum_h[j] - partial * (is_c[jj] * hs[jj, None])
        # "still present": above the rounding of cumulative sums of real weights
        present = kept > 16 * N * np.finfo(np.float64).eps * n[r]
        recall = np.where(present, ratio(kept_hit, kept), 0.0)
        bacc = recall.sum(axis=1) / present.sum(axis=1)
        out[r] = np.trapezoid(bacc, ks / (ks[-1] if x_axis == "k_over_kmax" else n[r]))
    return out


def auarc(probs: object, y: object, *, confidence: object = None,
          x_axis: str = "k_over_kmax", sample_weight: object = None) -> float | np.ndarray:
    """Area under the balanced-accuracy–rejection curve (Mehrtens et al. 2023).

    Points are sorted by confidence ascending (stable) and the k least
    confident rejected, for k = 0, s, 2s, ..., k_max, the grid's last k below
    N, with s = max(1, N // 1000). At each k the balanced accuracy (mean
    recall over the classes present among the kept labels, as scikit-learn's
    ``balanced_accuracy_score``) is computed on the kept points, and AUARC is
    its trapezoid integral over the rejection axis x. Higher is better.

    Parameters
    ----------
    probs, y, confidence
        As :func:`aurc`.
    x_axis : {"k_over_kmax", "k_over_n"}
        ``"k_over_kmax"`` (default): x = k / k_max, so the curve runs from 0
        to exactly 1 -- the published benchmark code of Mehrtens et al.
        (``create_risk_reject_curve`` then ``x / max(x)`` in their
        ``src/eval/visualizations_base.py``); use it to compare with their
        numbers. ``"k_over_n"``: x = k / N, the fraction of all points
        rejected; the curve then stops at k_max / N < 1 (at (N - 1) / N for
        s = 1), so the area is smaller by about that factor. It is this
        library's earlier convention, kept for comparison with results
        computed that way.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights, as :func:`aurc`: N becomes the total weight
        (rounded down on the grid) and k counts units of weight.

    Returns
    -------
    float, or ndarray of shape (R,) for (R, N) ``sample_weight``
        NaN for ``"k_over_kmax"`` when N = 1 (k_max = 0: no rejection axis).

    Examples
    --------
    Balanced accuracy as the least confident points are rejected, on each of the two x
    axes:

    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> round(uz.metrics.auarc(p, [0, 1, 0, 0]), 6)
    0.472222
    >>> round(uz.metrics.auarc(p, [0, 1, 0, 0], x_axis="k_over_n"), 6)
    0.354167

    References
    ----------
    Mehrtens, H. A., Kurz, A., Bucher, T.-C., Brinker, T. J. (2023).
    Benchmarking common uncertainty estimation methods with histopathological
    images under domain shift and label noise. Medical Image Analysis 89.
    Code: https://github.com/DBO-DKFZ/uncertainty-benchmark
    """
    x_axis = check_choice(x_axis, "x_axis", AUARC_X_AXES)
    if sample_weight is not None:
        p, labels, error, conf, W = _weighted_prepare(probs, y, confidence, sample_weight)
        return unstack(weighted_auarc(labels, ~error, p.shape[1], W, total_weight(W),
                                      np.argsort(conf, kind="stable"), x_axis), sample_weight)
    p, labels, error, conf = _prepare(probs, y, confidence)
    n, K = p.shape
    step = max(1, n // 1000)
    order = np.argsort(conf, kind="stable")
    ys = labels[order]
    hit = ~error[order]
    ks = np.arange(0, n, step)
    recall_sum = np.zeros(ks.shape[0])
    n_present = np.zeros(ks.shape[0])
    for cls in range(K):
        is_c = ys == cls
        before = np.concatenate([[0], np.cumsum(is_c)])           # counts in ys[:k]
        before_hit = np.concatenate([[0], np.cumsum(is_c & hit)])
        kept = before[-1] - before[ks]
        kept_hit = before_hit[-1] - before_hit[ks]
        present = kept > 0
        recall_sum[present] += kept_hit[present] / kept[present]
        n_present += present
    bacc = recall_sum / n_present
    if x_axis == "k_over_n":
        return float(np.trapezoid(bacc, ks / n))
    k_max = ks[-1]
    if k_max == 0:
        return float("nan")
    return float(np.trapezoid(bacc, ks / k_max))


def misclassification_auroc(probs: object, y: object, *, confidence: object = None,
                            sample_weight: object = None) -> float | np.ndarray:
    """AUROC of the confidence for telling correct predictions from errors.

    The probability that a random correct point is ranked above a random
    error (ties count one half) -- the same number as the AUROC of the
    uncertainty (−confidence) for detecting errors. NaN when every
    prediction is right or every one is wrong.

    Parameters
    ----------
    probs : array of shape (N, K)
    y : array of shape (N,)
    confidence : array of shape (N,), optional
        Default max_k p_k.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights, as :func:`aurc` (a weighted Mann–Whitney statistic).

    Returns
    -------
    float in [0, 1] or NaN; ndarray of shape (R,) for (R, N) ``sample_weight``

    Examples
    --------
    The correct points have confidences 0.9 and 0.6, the errors 0.8 and 0.7: half the
    (correct, error) pairs are ranked right:

    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> round(uz.metrics.misclassification_auroc(p, [0, 1, 0, 0]), 6)
    0.5
    """
    if sample_weight is not None:
        _, _, error, conf, W = _weighted_prepare(probs, y, confidence, sample_weight)
        return unstack(weighted_auroc(conf, ~error, W, np.argsort(conf, kind="stable")),
                       sample_weight)
    _, _, error, conf = _prepare(probs, y, confidence)
    n_err = int(error.sum())
    n_ok = error.shape[0] - n_err
    if n_err == 0 or n_ok == 0:
        return float("nan")
    ranks = stats.rankdata(conf)
    return float((ranks[~error].sum() - n_ok * (n_ok + 1) / 2) / (n_ok * n_err))


def accuracy(probs: object, y: object, *, sample_weight: object = None) -> float | np.ndarray:
    """Fraction of points whose argmax class equals the label.

    ``sample_weight`` (N,) or (R, N): frequency weights, the weighted
    fraction; leading axes are replicates (R values).

    Examples
    --------
    One of two points is right; weighting the right one 3 to 1:

    >>> import numpy as np, uqzoo as uz
    >>> uz.metrics.accuracy(np.array([[0.9, 0.1], [0.4, 0.6]]), [0, 0])
    0.5
    >>> uz.metrics.accuracy(np.array([[0.9, 0.1], [0.4, 0.6]]), [0, 0], sample_weight=[3, 1])
    0.75
    """
    p, labels = check_probs_and_labels(probs, y)
    hit = p.argmax(axis=1) == labels
    if sample_weight is not None:
        W = check_sample_weight(sample_weight, p.shape[0])
        return unstack(weighted_mean(hit.astype(np.float64), W), sample_weight)
    return float(np.mean(hit))


def class_recalls(class_hits: np.ndarray, class_weights: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(recall (R, K), balanced accuracy (R,)) from weighted hits and weights per class (R, K).

    Balanced accuracy is the mean recall over the classes with positive
    weight; a class without weight has recall NaN.
    """
    recall = ratio(class_hits, class_weights)
    present = class_weights > 0
    return recall, np.sum(np.where(present, recall, 0.0), axis=1) / present.sum(axis=1)


def balanced_accuracy(probs: object, y: object, *, sample_weight: object = None
                      ) -> float | np.ndarray:
    """Mean recall over the classes present in ``y`` (scikit-learn's definition).

    ``sample_weight`` (N,) or (R, N): frequency weights (recall of class k =
    weight of its hits / weight of its points; classes of zero weight are
    absent); leading axes are replicates.

    Examples
    --------
    Class 0 recalled fully, class 1 half; weights change the recall of class 1:

    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6]])
    >>> uz.metrics.balanced_accuracy(p, [0, 1, 1])
    0.75
    >>> uz.metrics.balanced_accuracy(p, [0, 1, 1], sample_weight=[1, 1, 3])
    0.875
    """
    p, labels = check_probs_and_labels(probs, y)
    pred = p.argmax(axis=1)
    if sample_weight is not None:
        W = check_sample_weight(sample_weight, p.shape[0])
        onehot = (labels[:, None] == np.arange(p.shape[1])[None, :]).astype(np.float64)
        _, balanced = class_recalls(W @ (onehot * (pred == labels)[:, None]), W @ onehot)
        return unstack(balanced, sample_weight)
    return _balanced_accuracy(labels, pred)
