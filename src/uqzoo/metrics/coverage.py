"""Coverage of credible intervals against known true probabilities, and their width."""

from __future__ import annotations

import dataclasses

import numpy as np

from uqzoo._validation import as_probabilities, check_float
from uqzoo.errors import InvalidInputError
from uqzoo.metrics._common import check_bounds, check_sample_weight, unstack, weighted_mean

__all__ = ["CoverageResult", "IntervalWidth", "coverage", "interval_score", "interval_width"]


@dataclasses.dataclass(frozen=True, eq=False)
class CoverageResult:
    """How often intervals contain the true class probability.

    Leading axes ``...`` are those of the bounds beyond (N, K), e.g. (L,) for
    several levels at once.

    Attributes
    ----------
    covered : bool ndarray of shape (..., N, K)
        lower <= p_true <= upper (closed interval).
    per_observation : ndarray of shape (..., N)
        Fraction of a point's K class intervals that cover.
    per_class : ndarray of shape (..., K)
        Coverage of each class column.
    per_class_stderr : ndarray of shape (..., K)
        Binomial standard error sqrt(c (1 - c) / N).
    overall : ndarray of shape (...)
        Mean of ``covered`` over points and classes.
    overall_stderr : ndarray of shape (...)
        Standard error that treats each point as one unit (its K columns are
        dependent): sqrt(mean((r_i - c)^2) / N) with r_i the per-observation
        fraction. It equals the binomial error when every point is covered in
        all or none of its columns (always the case for K = 2 up to ties).
    n : int
        N, the number of points.
    """

    covered: np.ndarray
    per_observation: np.ndarray
    per_class: np.ndarray
    per_class_stderr: np.ndarray
    overall: np.ndarray
    overall_stderr: np.ndarray
    n: int


@dataclasses.dataclass(frozen=True, eq=False)
class IntervalWidth:
    """Widths of credible intervals and their means with standard errors.

    Attributes
    ----------
    width : ndarray of shape (..., N, K)
        upper - lower.
    per_class, per_class_stderr : ndarray of shape (..., K)
        Mean width of each class column and sd / sqrt(N) (population sd).
    overall, overall_stderr : ndarray of shape (...)
        Mean over points and classes; the error treats each point as a unit.
    """

    width: np.ndarray
    per_class: np.ndarray
    per_class_stderr: np.ndarray
    overall: np.ndarray
    overall_stderr: np.ndarray


def coverage(lower: object, upper: object, p_true: object) -> CoverageResult:
    """Empirical coverage of credible intervals for the true class probabilities.

    A level-(1 - α) interval should contain the true probability about
    (1 - α) of the time; compare ``per_class`` with the nominal level using
    ``per_class_stderr``.

    Parameters
    ----------
    lower, upper : array of shape (N, K) or (L, N, K)
        Interval bounds, e.g. from :func:`credible_interval`.
    p_true : array of shape (N, K)
        True class probabilities; rows sum to one.

    Returns
    -------
    CoverageResult

    Examples
    --------
    Each class's true probability lies in one of its two intervals:

    >>> import numpy as np, uqzoo as uz
    >>> lower = np.array([[0.1, 0.5], [0.6, 0.1]]); upper = lower + 0.3
    >>> p_true = np.array([[0.3, 0.7], [0.5, 0.5]])
    >>> uz.metrics.coverage(lower, upper, p_true).per_class
    array([0.5, 0.5])
    """
    lo, hi = check_bounds(lower, upper)
    N, K = lo.shape[-2:]
    truth = as_probabilities(p_true, "p_true", n_rows=N, n_classes=K)
    covered = (lo <= truth) & (truth <= hi)
    per_obs = covered.mean(axis=-1)
    per_class = covered.mean(axis=-2)
    overall = per_obs.mean(axis=-1)
    return CoverageResult(
        covered=covered,
        per_observation=per_obs,
        per_class=per_class,
        per_class_stderr=np.sqrt(per_class * (1 - per_class) / N),
        overall=overall,
        overall_stderr=np.sqrt(((per_obs - overall[..., None]) ** 2).mean(axis=-1) / N),
        n=N,
    )


def interval_width(lower: object, upper: object) -> IntervalWidth:
    """Width upper − lower of every interval, with means and standard errors.

    Parameters
    ----------
    lower, upper : array of shape (N, K) or (L, N, K)

    Returns
    -------
    IntervalWidth

    Examples
    --------
    One point's two intervals, 0.2 and 0.4 wide:

    >>> import numpy as np, uqzoo as uz
    >>> uz.metrics.interval_width(np.array([[0.1, 0.5]]), np.array([[0.3, 0.9]])).per_class
    array([0.2, 0.4])
    """
    lo, hi = check_bounds(lower, upper)
    if lo.shape[-2] < 1:
        raise InvalidInputError("lower and upper must hold at least one point")
    width = hi - lo
    N = width.shape[-2]
    per_class = width.mean(axis=-2)
    per_obs = width.mean(axis=-1)
    overall = per_obs.mean(axis=-1)
    return IntervalWidth(
        width=width,
        per_class=per_class,
        per_class_stderr=width.std(axis=-2) / np.sqrt(N),
        overall=overall,
        overall_stderr=per_obs.std(axis=-1) / np.sqrt(N),
    )


def interval_score_per_point(lower: np.ndarray, upper: np.ndarray, p_true: np.ndarray,
                             level: float) -> np.ndarray:
    """The interval score of every point, mean over its K class columns: shape (..., N).

    Inputs are validated float64 arrays, ``lower`` and ``upper`` of shape
    (..., N, K) and ``p_true`` of shape (N, K); see :func:`interval_score`.
    """
    alpha = 1.0 - level
    below = np.maximum(lower - p_true, 0.0)         # the truth lies under the interval
    above = np.maximum(p_true - upper, 0.0)         # ... or over it
    return ((upper - lower) + (2.0 / alpha) * (below + above)).mean(axis=-1)


def interval_score(lower: object, upper: object, p_true: object, level: float, *,
                   sample_weight: object = None) -> float | np.ndarray:
    """Interval score of level-``level`` intervals for the true class probabilities.

    The proper scoring rule of Gneiting & Raftery (2007, eq. 43) for a central
    interval [l, u] at level 1 − α, scored at the true value p:

        S(l, u; p) = (u − l) + (2/α) (l − p) 1[p < l] + (2/α) (p − u) 1[p > u],

    the width plus a penalty of 2/α per unit the truth lies outside. Lower is
    better; its expectation is minimised by the α/2 and 1 − α/2 quantiles of
    p's distribution, so neither a too-narrow interval (penalties) nor a
    too-wide one (width) can win. Here the truth is the class probability
    p_true, and a point's score is the mean over its K class columns.

    Parameters
    ----------
    lower, upper : array of shape (N, K)
        Interval bounds in [0, 1], e.g. from :func:`credible_interval`.
    p_true : array of shape (N, K)
        True class probabilities; rows sum to one.
    level : float in (0, 1)
        The intervals' level 1 − α.
    sample_weight : array of shape (N,) or (R, N), optional
        Frequency weights: the weighted mean. Leading axes are replicates.

    Returns
    -------
    float >= 0, or ndarray of shape (R,) for (R, N) ``sample_weight``
        The mean interval score over points.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> lower = np.array([[0.2, 0.6], [0.5, 0.3]]); upper = lower + 0.2
    >>> p_true = np.array([[0.3, 0.7], [0.1, 0.9]])
    >>> # point 1 covered: width 0.2; point 2: width 0.2 + (2/0.2) * 0.4 outside
    >>> round(uz.metrics.interval_score(lower, upper, p_true, level=0.8), 6)
    2.2

    References
    ----------
    Gneiting, T., & Raftery, A. E. (2007). Strictly proper scoring rules,
    prediction, and estimation. Journal of the American Statistical
    Association 102(477), 359-378 (section 6.2, the interval score).
    """
    level = check_float(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    lo, hi = check_bounds(lower, upper)
    if lo.ndim != 2:
        raise InvalidInputError(
            f"lower and upper must have shape (N, K) (one level at a time), got {lo.shape}")
    N, K = lo.shape
    truth = as_probabilities(p_true, "p_true", n_rows=N, n_classes=K).astype(np.float64,
                                                                             copy=False)
    per_point = interval_score_per_point(lo, hi, truth, level)
    if sample_weight is None:
        return float(per_point.mean())
    W = check_sample_weight(sample_weight, N)
    return unstack(weighted_mean(per_point, W), sample_weight)
