"""Which order statistics of S draws make a credible interval's bounds.

One definition, shared by the streaming predictive engine
(:func:`uqzoo.summarize`) and the evaluator's intervals
(:func:`uqzoo.metrics.credible_interval`), so both give the same bounds. A
core module: the engine sits below the metrics and must not import them;
:mod:`uqzoo.metrics.intervals` re-exports these names.
"""

from __future__ import annotations

import math
from typing import Literal

from uqzoo._validation import choices

__all__ = ["INTERVAL_KINDS", "SUMMARY_INTERVALS", "IntervalKind", "SummaryInterval",
           "min_draws", "quantile_plan"]

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
