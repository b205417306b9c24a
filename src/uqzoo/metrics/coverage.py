"""Coverage of credible intervals against known true probabilities, and their width."""

from __future__ import annotations

import dataclasses

import numpy as np

from uqzoo._validation import as_probabilities
from uqzoo.errors import InvalidInputError
from uqzoo.metrics._common import check_bounds

__all__ = ["CoverageResult", "IntervalWidth", "coverage", "interval_width"]


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
