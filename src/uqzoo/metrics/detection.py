"""Target-detection metrics: the detection ROC, its AUROC, and Pd at a false-alarm rate.

A detector gives every pixel a score, higher meaning more target-like, and
declares "target" when the score reaches a threshold τ. Against the truth
(``is_target``), each τ has a probability of detection Pd(τ) (the share of
targets with score ≥ τ) and a false-alarm rate FAR(τ) (the share of
background with score ≥ τ). Target detection is judged at a small fixed FAR
(10⁻³, 10⁻²: an analyst can only inspect so many false alarms), so these
metrics complement the misclassification AUROC of :mod:`uqzoo.metrics.selective`,
which measures something else (telling a classifier's errors from its
correct answers).

Scores are any real numbers: a network's P(target), a classical detector's
statistic (:mod:`uqzoo.detectors`). Ties are handled exactly as
``sklearn.metrics.roc_curve`` does: tied scores move together.

:func:`detection_auroc` and :func:`pd_at_far` take ``sample_weight``,
frequency weights as scikit-learn's: with integer weights the result is that
of the sample in which pixel i appears w_i times; (R, N) weights are R
weightings of the same pixels (the bootstrap's replicates).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable

import numpy as np
from scipy import stats

from uqzoo._validation import _show, as_array, check_float
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics._common import check_sample_weight, check_scores, group_ends, ratio, unstack

__all__ = ["DetectionROC", "PdAtFar", "clopper_pearson", "detection_auroc", "detection_roc",
           "pd_at_far"]

# Operating points the HSI literature reports: one false alarm
# per thousand and per hundred background pixels.
DEFAULT_FARS = (1e-3, 1e-2)


@dataclasses.dataclass(frozen=True, eq=False)
class DetectionROC:
    """The empirical detection ROC, one point per distinct score, and its area.

    Attributes
    ----------
    false_alarm_rate : float64 ndarray of shape (M + 1,)
        FAR(τ) = share of background pixels with score ≥ τ, ascending from 0.
    probability_of_detection : float64 ndarray of shape (M + 1,)
        Pd(τ) = share of target pixels with score ≥ τ, ascending to 1.
    thresholds : float64 ndarray of shape (M + 1,)
        τ of each point, descending: ``inf`` (nothing declared), then the M
        distinct scores.
    auroc : float
        Area under the ROC (trapezoid over all points): the probability that
        a random target scores above a random background pixel, ties
        counting one half.
    auroc_stderr : float
        DeLong et al.'s standard error of ``auroc`` (NaN with fewer than two
        targets or two background pixels).
    n_targets, n_background : int
    """

    false_alarm_rate: np.ndarray
    probability_of_detection: np.ndarray
    thresholds: np.ndarray
    auroc: float
    auroc_stderr: float
    n_targets: int
    n_background: int


@dataclasses.dataclass(frozen=True, eq=False)
class PdAtFar:
    """Probability of detection at fixed false-alarm rates, with exact intervals.

    All arrays have shape (F,), one entry per requested false-alarm rate; with
    a (R, N) ``sample_weight``, (R, F), one row per weighting.

    Attributes
    ----------
    far : float64 ndarray
        The requested false-alarm rates, in the order given.
    pd : float64 ndarray
        Pd at the operating point chosen for each ``far`` (see
        :func:`pd_at_far`).
    lower, upper : float64 ndarray
        Clopper–Pearson interval for Pd at level ``confidence``.
    threshold : float64 ndarray
        The threshold τ of each operating point (``inf``: nothing declared).
    far_achieved : float64 ndarray
        The empirical FAR at τ, ≤ ``far``; it is 0 when there are fewer than
        1 / far background pixels, since then no false alarm fits the budget.
    n_detected : int64 ndarray
        Targets with score ≥ τ (with ``sample_weight``: their total weight, float64).
    n_targets, n_background : int
        With ``sample_weight``: the total weights of targets and background,
        float, or float64 ndarray of shape (R,) for (R, N) weights.
    confidence : float
    """

    far: np.ndarray
    pd: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    threshold: np.ndarray
    far_achieved: np.ndarray
    n_detected: np.ndarray
    n_targets: float | np.ndarray
    n_background: float | np.ndarray
    confidence: float

    @property
    def pd_stderr(self) -> np.ndarray:
        """Binomial standard error sqrt(Pd (1 − Pd) / n_targets), shape of ``pd``."""
        return np.sqrt(self.pd * (1 - self.pd) / np.asarray(self.n_targets)[..., None])


def _check_is_target(is_target: object) -> np.ndarray:
    """A 1-D bool mask from bools or 0/1 numbers; at least one target and one background."""
    arr = as_array(is_target, "is_target", "a 1-D array of booleans or 0/1")
    if arr.ndim != 1:
        raise InvalidInputError(f"is_target must be 1-D, got shape {arr.shape}")
    if arr.dtype != np.bool_:
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise InvalidTypeError(
                f"is_target must hold booleans or 0/1, got dtype {arr.dtype}")
        bad = ~np.isin(arr, (0, 1))
        if bad.any():
            raise InvalidInputError(
                f"is_target must hold booleans or 0/1, found {arr[bad][0].item()!r} at index "
                f"{int(np.flatnonzero(bad)[0])}")
        arr = arr == 1
    n_targets = int(arr.sum())
    if n_targets == 0:
        raise InvalidInputError(
            f"is_target must mark at least one target (True or 1), got none among "
            f"{arr.shape[0]} points: Pd is undefined without targets")
    if n_targets == arr.shape[0]:
        raise InvalidInputError(
            f"is_target must leave at least one background point (False or 0), got "
            f"{n_targets} targets and no background: the false-alarm rate is undefined")
    return arr


def _check_fars(far: object) -> np.ndarray:
    """False-alarm rates as a float64 (F,) array, each in (0, 1), none repeated."""
    if isinstance(far, np.ndarray) and far.ndim == 0:
        far = far.item()
    values: Iterable[object]
    if isinstance(far, numbers.Real) and not isinstance(far, bool):
        values = (far,)
    elif isinstance(far, (str, bytes, dict)) or not isinstance(far, Iterable):
        raise InvalidTypeError(
            f"far must be a number or a sequence of numbers in (0, 1), got {_show(far)}")
    else:
        values = far
    out = [check_float(v, "far entry", low=0.0, high=1.0, low_open=True, high_open=True)
           for v in values]
    if not out:
        raise InvalidInputError("far must hold at least one false-alarm rate in (0, 1), got none")
    if len(set(out)) != len(out):
        raise InvalidInputError(f"far must not repeat a rate, got {tuple(out)}")
    return np.asarray(out, dtype=np.float64)


def _roc_counts(scores: np.ndarray, is_target: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cumulative (targets, background) with score ≥ τ for τ = inf, then distinct scores.

    Returns thresholds (M + 1,) descending and the int64 counts (M + 1,).
    """
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    t = is_target[order]
    # The last index of each run of equal scores: tied points move together.
    last = np.flatnonzero(np.diff(s) != 0)
    last = np.append(last, s.shape[0] - 1)
    tp = np.cumsum(t, dtype=np.int64)[last]
    fp = (last + 1) - tp
    zero = np.zeros(1, dtype=np.int64)
    return (np.concatenate([[np.inf], s[last]]), np.concatenate([zero, tp]),
            np.concatenate([zero, fp]))


def _delong_stderr(scores: np.ndarray, is_target: np.ndarray) -> float:
    """DeLong's standard error of the AUROC from its structural components."""
    pos = np.sort(scores[is_target])
    neg = np.sort(scores[~is_target])
    n_pos, n_neg = pos.shape[0], neg.shape[0]
    if n_pos < 2 or n_neg < 2:
        return float("nan")
    # V10_i: share of background below target i (ties one half); V01_j: share of
    # targets above background j. Their means are both the AUROC.
    below = np.searchsorted(neg, pos, side="left")
    tied = np.searchsorted(neg, pos, side="right") - below
    v10 = (below + 0.5 * tied) / n_neg
    above = n_pos - np.searchsorted(pos, neg, side="right")
    tied = np.searchsorted(pos, neg, side="right") - np.searchsorted(pos, neg, side="left")
    v01 = (above + 0.5 * tied) / n_pos
    var = v10.var(ddof=1) / n_pos + v01.var(ddof=1) / n_neg
    return float(np.sqrt(var))


def _allowed_false_alarms(far: float, n_background: int) -> int:
    """The largest count k with k / n_background ≤ far, as the float division says.

    ``floor(far * n)`` alone can be one short (0.29 * 100 = 28.999...96 while
    29 / 100 == 0.29), so the neighbours are checked with the same division
    the reported ``far_achieved`` uses.
    """
    k = int(np.floor(far * n_background))
    while k + 1 <= n_background and (k + 1) / n_background <= far:
        k += 1
    while k > 0 and k / n_background > far:
        k -= 1
    return k


def _check_inputs(scores: object, is_target: object) -> tuple[np.ndarray, np.ndarray]:
    mask = _check_is_target(is_target)
    return check_scores(scores, "scores", mask.shape[0]), mask


def detection_roc(scores: object, is_target: object) -> DetectionROC:
    """The empirical detection ROC of a score and its area, tie-aware.

    The detector declares "target" when the score is at least τ. Every
    distinct score is a threshold, so tied points are declared together; the
    curve equals ``sklearn.metrics.roc_curve(is_target, scores,
    drop_intermediate=False)`` and its area ``roc_auc_score``.

    Parameters
    ----------
    scores : array of shape (N,)
        Finite detection scores, higher meaning more target-like.
    is_target : array of shape (N,)
        True (or 1) for target pixels, False (or 0) for background; at least
        one of each.

    Returns
    -------
    DetectionROC
        FAR, Pd and thresholds of shape (M + 1,) for M distinct scores, the
        AUROC and its DeLong standard error.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> roc = uz.metrics.detection_roc([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
    >>> roc.false_alarm_rate.tolist(), roc.probability_of_detection.tolist()
    ([0.0, 0.0, 0.5, 1.0], [0.0, 0.5, 1.0, 1.0])
    >>> roc.auroc
    0.875

    References
    ----------
    Kay, S. M. (1998). Fundamentals of Statistical Signal Processing, Vol. 2:
    Detection Theory, ch. 3 (Pd, PFA and the ROC). Prentice Hall.
    DeLong, E. R., DeLong, D. M. & Clarke-Pearson, D. L. (1988). Comparing the
    areas under two or more correlated ROC curves: a nonparametric approach.
    Biometrics 44(3), 837–845.
    """
    s, mask = _check_inputs(scores, is_target)
    thresholds, tp, fp = _roc_counts(s, mask)
    n_pos = int(mask.sum())
    n_neg = mask.shape[0] - n_pos
    far = fp / n_neg
    pd_ = tp / n_pos
    auroc = float(np.trapezoid(pd_, far))
    return DetectionROC(false_alarm_rate=far, probability_of_detection=pd_,
                        thresholds=thresholds, auroc=auroc,
                        auroc_stderr=_delong_stderr(s, mask), n_targets=n_pos,
                        n_background=n_neg)


def clopper_pearson(successes: object, trials: int, confidence: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper–Pearson) binomial interval for a proportion.

    The interval holds every p for which the observed count is not in
    either tail of Binomial(trials, p) at (1 − confidence) / 2; its coverage
    is at least ``confidence`` for every p and every number of trials, which
    normal-approximation intervals do not guarantee with few targets.

    Parameters
    ----------
    successes : int or int array
        Counts in 0..trials.
    trials : int
        Number of trials (≥ 1).
    confidence : float in (0, 1)

    Returns
    -------
    (lower, upper) : float64 ndarrays of the shape of ``successes``

    Examples
    --------
    >>> import uqzoo as uz
    >>> lo, hi = uz.metrics.clopper_pearson(3, 3)
    >>> round(float(lo), 4), float(hi)
    (0.2924, 1.0)

    References
    ----------
    Clopper, C. J. & Pearson, E. S. (1934). The use of confidence or fiducial
    limits illustrated in the case of the binomial. Biometrika 26(4), 404–413.
    """
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                             high_open=True)
    if isinstance(trials, (bool, np.bool_)) or not isinstance(trials, numbers.Integral) \
            or trials < 1:
        raise InvalidInputError(f"trials must be an integer >= 1, got {_show(trials)}")
    k = np.asarray(successes)
    if not np.issubdtype(k.dtype, np.integer) or (k.size and (k.min() < 0 or k.max() > trials)):
        raise InvalidInputError(
            f"successes must be integers in 0..trials={trials}, got {_show(successes)}")
    return clopper_pearson_bounds(k, trials, confidence)


def clopper_pearson_bounds(successes: object, trials: object, confidence: float
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The Clopper–Pearson formula on checked counts (the one in the package).

    ``successes`` and ``trials`` broadcast together, 0 ≤ successes ≤ trials,
    trials > 0. At real (weighted) counts the same Beta quantiles are
    evaluated, which for integer weights is the exact interval of the
    sample with repeated points.
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    tail = (1 - confidence) / 2
    # the Beta parameters are kept positive where np.where discards the quantile
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(tail, np.maximum(k, 1e-300), n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1 - tail, k + 1, np.maximum(n - k, 1e-300)),
                         1.0)
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def _grouped(cum: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per-group totals (R, groups) from cumulative sums (R, N) at the group ends."""
    return np.diff(cum[:, ends], axis=1, prepend=0.0)


def weighted_auroc(score: np.ndarray, positive: np.ndarray, W: np.ndarray,
                   order: np.ndarray) -> np.ndarray:
    """Weighted Mann–Whitney AUROC, P(score⁺ > score⁻) + ½ P(tie), per row of W (R, N); (R,).

    ``order``: the stable ascending order of ``score`` (a caller scoring many
    weightings sorts once). NaN where a row gives positives or negatives no
    weight.
    """
    ends = group_ends(score[order])
    Ws = W[:, order]
    pos = _grouped(np.cumsum(Ws * positive[order], axis=1), ends)
    neg = _grouped(np.cumsum(Ws * ~positive[order], axis=1), ends)
    below = np.cumsum(neg, axis=1) - neg
    total_pos, total_neg = pos.sum(axis=1), neg.sum(axis=1)
    return ratio(np.sum(pos * (below + 0.5 * neg), axis=1), total_pos * total_neg)


def detection_auroc(scores: object, is_target: object, *, sample_weight: object = None
                    ) -> float | np.ndarray:
    """Area under the detection ROC: P(target scores above background), ties one half.

    The ``auroc`` of :func:`detection_roc`, here with optional frequency weights.

    Parameters
    ----------
    scores : array of shape (N,)
    is_target : array of shape (N,)
        At least one target and one background point.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights, finite and ≥ 0; leading axes are replicates.

    Returns
    -------
    float in [0, 1], or ndarray of shape (R,) for (R, N) ``sample_weight``
        NaN for a weighting that gives all targets or all background weight 0.

    Examples
    --------
    >>> import uqzoo as uz
    >>> uz.metrics.detection_auroc([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0])
    0.875
    >>> uz.metrics.detection_auroc([0.9, 0.8, 0.8, 0.1], [1, 1, 0, 0],
    ...                            sample_weight=[1, 0, 1, 1])
    1.0

    References
    ----------
    Hanley, J. A., McNeil, B. J. (1982). The meaning and use of the area under
    a receiver operating characteristic (ROC) curve. Radiology 143(1), 29–36.
    """
    s, mask = _check_inputs(scores, is_target)
    if sample_weight is None:
        return detection_roc(s, mask).auroc
    W = check_sample_weight(sample_weight, s.shape[0])
    return unstack(weighted_auroc(s, mask, W, np.argsort(s, kind="stable")), sample_weight)


def weighted_pd_at_far(score: np.ndarray, target: np.ndarray, W: np.ndarray,
                       fars: np.ndarray, order: np.ndarray, confidence: float) -> PdAtFar:
    """:func:`pd_at_far` for each row of weights W (R, N): a PdAtFar of (R, F) arrays.

    The threshold is the lowest whose weighted false-alarm rate is ≤ far.
    ``order``: the stable descending order of ``score``. Pd is NaN for a row
    that gives the targets or the background no weight.
    """
    s = score[order]
    ends = group_ends(s)
    Ws = W[:, order]
    R = W.shape[0]
    zero = np.zeros((R, 1))
    tp = np.concatenate([zero, np.cumsum(Ws * target[order], axis=1)[:, ends]], axis=1)
    fp = np.concatenate([zero, np.cumsum(Ws * ~target[order], axis=1)[:, ends]], axis=1)
    n_pos, n_neg = tp[:, -1], fp[:, -1]
    rate = ratio(fp, n_neg[:, None])
    # fp is non-decreasing: the last point within budget is the lowest threshold
    idx = np.maximum(np.sum(rate[:, :, None] <= fars[None, None, :], axis=1) - 1, 0)   # (R, F)
    rows = np.arange(R)[:, None]
    detected = tp[rows, idx]
    lower, upper = clopper_pearson_bounds(detected, n_pos[:, None], confidence)
    thresholds = np.concatenate([[np.inf], s[ends]])
    return PdAtFar(far=np.broadcast_to(fars, idx.shape).copy(),
                   pd=ratio(detected, n_pos[:, None]), lower=lower, upper=upper,
                   threshold=thresholds[idx], far_achieved=rate[rows, idx],
                   n_detected=detected, n_targets=n_pos, n_background=n_neg,
                   confidence=confidence)


def pd_at_far(scores: object, is_target: object, far: object = DEFAULT_FARS,
              confidence: float = 0.95, *, sample_weight: object = None) -> PdAtFar:
    """Probability of detection at fixed false-alarm rates, with exact intervals.

    Convention: for each requested rate, the threshold τ is the lowest score
    threshold whose empirical false-alarm rate on the background pixels is at
    most ``far`` (``FAR(τ) ≤ far``), i.e. the last point of the empirical ROC
    (:func:`detection_roc`) that fits the budget. Pd is the share of targets
    with score ≥ τ there. No interpolation and no randomised decision between
    two thresholds: the reported Pd is attainable by a plain threshold, and
    errs on the side of fewer false alarms. With fewer than 1 / far
    background pixels the only FAR that fits is 0 (``far_achieved``).

    The interval is Clopper–Pearson on the target count at that threshold
    (targets are few: three in ``muufl-target``'s test crop). It treats τ as
    fixed; the threshold's own variability from the finite background sample
    is not in it.

    Parameters
    ----------
    scores : array of shape (N,)
        Finite detection scores, higher meaning more target-like.
    is_target : array of shape (N,)
        True (or 1) for targets, False (or 0) for background; at least one of
        each.
    far : float or sequence of float in (0, 1)
        False-alarm rates; default 10⁻³ and 10⁻².
    confidence : float in (0, 1)
        Level of the interval on Pd.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights, finite and ≥ 0 (module notes): counts become total
        weights, and the interval is the Clopper–Pearson formula at the
        weighted counts -- exact for integer weights, a continuation for
        real ones. Leading axes are replicates.

    Returns
    -------
    PdAtFar
        Arrays of shape (F,) in the order of ``far``; (R, F) for (R, N)
        ``sample_weight``.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> is_target = np.arange(2020) < 20
    >>> scores = rng.normal(size=2020) + 3.0 * is_target
    >>> r = uz.metrics.pd_at_far(scores, is_target, far=0.01)
    >>> float(r.far_achieved[0]) <= 0.01, int(r.n_detected[0]), r.n_targets
    (True, 17, 20)
    >>> float(r.lower[0]) < float(r.pd[0]) < float(r.upper[0])
    True

    References
    ----------
    Kay, S. M. (1998). Fundamentals of Statistical Signal Processing, Vol. 2:
    Detection Theory, ch. 3 (Neyman–Pearson: maximise Pd subject to
    PFA ≤ α). Prentice Hall.
    Clopper, C. J. & Pearson, E. S. (1934). Biometrika 26(4), 404–413.
    """
    s, mask = _check_inputs(scores, is_target)
    fars = _check_fars(far)
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                             high_open=True)
    if sample_weight is not None:
        W = check_sample_weight(sample_weight, s.shape[0])
        res = weighted_pd_at_far(s, mask, W, fars, np.argsort(-s, kind="stable"), confidence)
        if np.asarray(sample_weight).ndim == 2:
            return res
        return dataclasses.replace(
            res, **{f.name: getattr(res, f.name)[0] for f in dataclasses.fields(res)
                    if f.name != "confidence"})
    thresholds, tp, fp = _roc_counts(s, mask)
    n_pos = int(mask.sum())
    n_neg = mask.shape[0] - n_pos
    # fp is non-decreasing, so the last point with fp ≤ the allowed count of
    # false alarms is the lowest threshold within budget.
    allowed = np.array([_allowed_false_alarms(f, n_neg) for f in fars], dtype=np.int64)
    idx = np.searchsorted(fp, allowed, side="right") - 1
    detected = tp[idx]
    lower, upper = clopper_pearson(detected, n_pos, confidence)
    return PdAtFar(far=fars, pd=detected / n_pos, lower=lower, upper=upper,
                   threshold=thresholds[idx], far_achieved=fp[idx] / n_neg,
                   n_detected=detected.astype(np.int64), n_targets=n_pos,
                   n_background=n_neg, confidence=confidence)
