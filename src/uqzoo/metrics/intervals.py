"""Credible intervals for class probabilities from posterior predictive draws."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from uqzoo._quantiles import (
    INTERVAL_KINDS,
    SUMMARY_INTERVALS,
    IntervalKind,
    SummaryInterval,
    min_draws,
    quantile_plan,
)
from uqzoo._validation import DEFAULT_LEVELS, as_probabilities, check_choice, check_levels
from uqzoo.errors import InvalidInputError

__all__ = ["DEFAULT_LEVELS", "INTERVAL_KINDS", "SUMMARY_INTERVALS", "CredibleInterval",
           "IntervalKind", "SummaryInterval", "credible_interval", "min_draws", "quantile_plan"]

@dataclasses.dataclass(frozen=True, eq=False)
class CredibleInterval:
    """Credible intervals of every class probability of every point, at several levels.

    Attributes
    ----------
    levels : tuple of float
        Credible levels, ascending.
    lower, upper : ndarray of shape (L, N, K), float64
        Interval bounds; index i belongs to ``levels[i]``.
    kind : {"equal_tailed", "hdi"}
    """

    levels: tuple[float, ...]
    lower: np.ndarray
    upper: np.ndarray
    kind: str

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds, each (N, K), at one of ``levels``."""
        matches = [i for i, lv in enumerate(self.levels) if math.isclose(lv, level)]
        if not matches:
            raise InvalidInputError(
                f"level {level} was not computed; available levels: {self.levels}")
        return self.lower[matches[0]], self.upper[matches[0]]

    @property
    def width(self) -> np.ndarray:
        """upper - lower, shape (L, N, K)."""
        return self.upper - self.lower


def credible_interval(draws: object, level: object = 0.8, kind: str = "equal_tailed"
                      ) -> CredibleInterval:
    """Credible interval of every class probability of every point.

    Parameters
    ----------
    draws : array of shape (S, N, K)
        Posterior predictive probability draws; rows sum to one.
    level : float or sequence of float in (0, 1)
        Credible level(s), all computed in one pass, stored in ascending order.
    kind : {"equal_tailed", "order_statistic", "hdi"}
        ``"equal_tailed"``: [Q((1 - L)/2), Q((1 + L)/2)] over the S draws with
        ``np.quantile``'s default ("linear") interpolation -- the definition
        :func:`uqzoo.predictive.summarize` streams, so both agree exactly.
        ``"order_statistic"``: [x_(r), x_(S+1-r)] with r = ⌊(S + 1)(1 - L)/2⌋,
        which holds a new exchangeable draw with probability at least L for
        any S (the whole range [0, 1] when S < :func:`min_draws`).
        ``"hdi"``: the narrowest interval holding ``floor(L * S) + 1`` sorted
        draws (ArviZ's sample HDI convention), per point and class.

    Returns
    -------
    CredibleInterval
        ``lower`` and ``upper`` of shape (L, N, K) whether ``level`` is one
        number or several (L = 1 for one); ``.interval(level)`` gives one
        level's (N, K) bounds.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.random.default_rng(0).beta(2, 5, size=(1000, 3, 1))
    >>> draws = np.concatenate([1 - p, p], axis=-1)
    >>> ci = uz.metrics.credible_interval(draws, (0.8, 0.95))
    >>> ci.lower.shape, ci.levels
    ((2, 3, 2), (0.8, 0.95))
    >>> lower, upper = ci.interval(0.95)
    >>> lower.shape
    (3, 2)

    References
    ----------
    Hyndman, R. J. (1996). Computing and graphing highest density regions.
    The American Statistician 50(2).
    """
    levels = check_levels(level, "level")
    kind = check_choice(kind, "kind", INTERVAL_KINDS)
    arr = as_probabilities(draws, "draws", ndim=3)
    if kind == "equal_tailed":
        qs = [q for lv in levels for q in ((1 - lv) / 2, (1 + lv) / 2)]
        bounds = np.quantile(arr, qs, axis=0)                       # (2L, N, K)
        lower, upper = bounds[0::2], bounds[1::2]
    elif kind == "order_statistic":
        plan, unbounded = quantile_plan(arr.shape[0], levels, kind)
        srt = np.sort(arr, axis=0)
        bounds = np.stack([srt[a] for a, _, _ in plan])             # (2L, N, K)
        lower = bounds[0::2].astype(np.float64)
        upper = bounds[1::2].astype(np.float64)
        lower[list(unbounded)] = 0.0
        upper[list(unbounded)] = 1.0
    else:
        lower, upper = _hdi(arr, levels)
    return CredibleInterval(levels=levels, lower=lower.astype(np.float64, copy=False),
                            upper=upper.astype(np.float64, copy=False), kind=kind)


def _hdi(arr: np.ndarray, levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    S = arr.shape[0]
    srt = np.sort(arr, axis=0)
    lowers, uppers = [], []
    for lv in levels:
        # ArviZ: the interval spans floor(L * S) gaps; ties go to the lowest start.
        span = min(math.floor(lv * S), S - 1)
        widths = srt[span:] - srt[: S - span]                     # (S - span, N, K)
        start = np.argmin(widths, axis=0)[None]
        lowers.append(np.take_along_axis(srt, start, axis=0)[0])
        uppers.append(np.take_along_axis(srt, start + span, axis=0)[0])
    return np.stack(lowers), np.stack(uppers)
