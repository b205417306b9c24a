"""Selective prediction: risk–coverage, AURC, E-AURC, AUARC, misclassification AUROC.

All metrics rank points by a confidence score (default: the top-label
probability max_k p_k; pass ``confidence=`` to rank by any other score, higher
meaning more confident, e.g. ``-predictive_entropy(p)``). The prediction is
the argmax of ``probs``; the loss is the 0/1 misclassification.

All of these need a global sort of N scores. The evaluator computes them
exactly on the (N, K) posterior-mean probabilities, which fit in memory even
for 10^7 points (the streaming path never holds the (S, N, K) draws).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from uqzoo._validation import check_choice
from uqzoo.metrics._common import check_probs_and_labels, check_scores

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

AURC_METHODS = ("trapezoid", "mean_over_k")
EAURC_OPTIMA = ("exact", "asymptotic")
# How AUARC scales its rejection axis: by the last rejection count of the grid
# (the authors' code), or by N.
AUARC_X_AXES = ("k_over_kmax", "k_over_n")


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


def aurc(probs: object, y: object, *, confidence: object = None,
         method: str = "trapezoid") -> float:
    """Area under the risk–coverage curve.

    Parameters
    ----------
    probs : array of shape (N, K)
    y : array of shape (N,)
    confidence : array of shape (N,), optional
        Ranking score, higher = more confident; default max_k p_k.
    method : {"trapezoid", "mean_over_k"}
        ``"trapezoid"`` (default): tie-aware -- points with equal confidence
        are rejected together -- and integrated by the trapezoid rule over
        coverage from 0 (where the curve starts at the most confident group's
        risk) to 1. It does not depend on the order of tied points.
        ``"mean_over_k"``: the classic (1/N) Σ_k risk(top k) of Geifman et
        al.'s code, which ranks tied points in input order (a stable sort),
        so with ties its value depends on that order.

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> round(uz.metrics.aurc(p, [0, 1, 0, 0]), 6)
    0.354167

    References
    ----------
    Geifman, Y., Uziel, G., El-Yaniv, R. (2019). Bias-reduced uncertainty
    estimation for deep neural classifiers. ICLR.
    """
    method = check_choice(method, "method", AURC_METHODS)
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
          method: str = "trapezoid", optimum: str = "exact") -> float:
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

    Returns
    -------
    float

    Examples
    --------
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


def auarc(probs: object, y: object, *, confidence: object = None,
          x_axis: str = "k_over_kmax") -> float:
    """Area under the balanced-accuracy–rejection curve (Mehrtens et al. 2023).

    Points are sorted by confidence ascending (stable) and the k least
    confident rejected, for k = 0, s, 2s, ..., k_max, the grid's last k below
    N, with s = max(1, N // 1000). At each k the balanced accuracy (mean
    recall over the classes present among the kept labels, as scikit-learn's
    ``balanced_accuracy_score``) is computed on the kept points, and AUARC is
    its trapezoid integral over the rejection axis x. Higher is better.

    Parameters
    ----------
    probs : array of shape (N, K)
    y : array of shape (N,)
    confidence : array of shape (N,), optional
        Ranking score, higher = more confident; default max_k p_k.
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

    Returns
    -------
    float
        NaN for ``"k_over_kmax"`` when N = 1 (k_max = 0: no rejection axis).

    Examples
    --------
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


def misclassification_auroc(probs: object, y: object, *, confidence: object = None) -> float:
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

    Returns
    -------
    float in [0, 1] or NaN

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]])
    >>> round(uz.metrics.misclassification_auroc(p, [0, 1, 0, 0]), 6)
    0.5
    """
    _, _, error, conf = _prepare(probs, y, confidence)
    n_err = int(error.sum())
    n_ok = error.shape[0] - n_err
    if n_err == 0 or n_ok == 0:
        return float("nan")
    ranks = stats.rankdata(conf)
    return float((ranks[~error].sum() - n_ok * (n_ok + 1) / 2) / (n_ok * n_err))


def accuracy(probs: object, y: object) -> float:
    """Fraction of points whose argmax class equals the label.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> uz.metrics.accuracy(np.array([[0.9, 0.1], [0.4, 0.6]]), [0, 0])
    0.5
    """
    p, labels = check_probs_and_labels(probs, y)
    return float(np.mean(p.argmax(axis=1) == labels))


def balanced_accuracy(probs: object, y: object) -> float:
    """Mean recall over the classes present in ``y`` (scikit-learn's definition).

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6]])
    >>> uz.metrics.balanced_accuracy(p, [0, 1, 1])
    0.75
    """
    p, labels = check_probs_and_labels(probs, y)
    return _balanced_accuracy(labels, p.argmax(axis=1))
