"""Credible intervals for class probabilities from posterior predictive draws."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np

from uqzoo._validation import DEFAULT_LEVELS, as_probabilities, check_choice, check_levels, choices
from uqzoo.errors import InvalidInputError

__all__ = ["DEFAULT_LEVELS", "CredibleInterval", "credible_interval", "min_draws",
           "quantile_plan"]

IntervalKind = Literal["equal_tailed", "order_statistic", "hdi"]
INTERVAL_KINDS = choices(IntervalKind)
# The kinds a streaming summary can read from sorted draws (HDI needs every
# draw's neighbours, so it is offered on materialised draws only).
SummaryInterval = Literal["equal_tailed", "order_statistic"]
SUMMARY_INTERVALS = choices(SummaryInterval)
# Floating slack when (S + 1)(1 - L)/2 is an integer in exact arithmetic
# (e.g. S = 39, L = 0.95): the rank must not drop by one through rounding.
_RANK_SLACK = 1e-9


def min_draws(level: float) -> int:
    """Fewest draws S for which a level-L interval has interior order statistics.

    The order-statistic interval [x_(r), x_(S+1-r)] with r = ⌊(S + 1)(1 - L)/2⌋
    holds a new exchangeable draw with probability (S + 1 - 2r)/(S + 1) ≥ L;
    it needs r ≥ 1, i.e. S ≥ 2/(1 - L) - 1: 9 draws at 80 %, 39 at 95 %.
    Percentile intervals from fewer draws than this cover far less than L
    (an exact sampler's 95 % interval from S = 5 draws holds a new draw about
    64 % of the time).

    Examples
    --------
    >>> from uqzoo.metrics import min_draws
    >>> min_draws(0.8), min_draws(0.95)
    (9, 39)
    """
    return max(1, math.ceil(2 / (1 - level) - 1 - _RANK_SLACK))


def quantile_plan(num_draws: int, levels: tuple[float, ...], kind: str = "equal_tailed"
                  ) -> tuple[list[tuple[int, int, float]], tuple[int, ...]]:
    """Which order statistics make each interval bound, for S draws.

    Parameters
    ----------
    num_draws : int
        S.
    levels : tuple of float
        Credible levels.
    kind : {"equal_tailed", "order_statistic"}
        ``"equal_tailed"``: ``np.quantile``'s default ("linear") interpolation
        at (1 - L)/2 and (1 + L)/2. ``"order_statistic"``: the ranks
        r = ⌊(S + 1)(1 - L)/2⌋ and S + 1 - r, no interpolation (see
        :func:`min_draws`).

    Returns
    -------
    plan : list of (rank_a, rank_b, fraction), two per level (lower, upper)
        0-based ranks into the sorted draws; the bound is
        x_a + fraction · (x_b - x_a).
    unbounded : tuple of int
        Indices of levels for which S is too small to have an order-statistic
        interval (r = 0): their bounds are the whole range [0, 1].
    """
    plan: list[tuple[int, int, float]] = []
    unbounded = []
    for i, level in enumerate(levels):
        if kind == "order_statistic":
            r = math.floor((num_draws + 1) * (1 - level) / 2 + _RANK_SLACK)
            if r == 0:
                unbounded.append(i)
                plan += [(0, 0, 0.0), (num_draws - 1, num_draws - 1, 0.0)]
            else:
                plan += [(r - 1, r - 1, 0.0), (num_draws - r, num_draws - r, 0.0)]
            continue
        for q in ((1 - level) / 2, (1 + level) / 2):
            pos = q * (num_draws - 1)
            lo = math.floor(pos)
            plan.append((lo, min(lo + 1, num_draws - 1), pos - lo))
    return plan, tuple(unbounded)

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
