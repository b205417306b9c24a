"""Methods ranked by a proper score, with paired bootstrap intervals of each difference.

With known true probabilities the intervals themselves are scored: the
interval score of Gneiting & Raftery (2007) of each level's interval for the
true probability (:func:`uqzoo.metrics.interval_score`), averaged over the
levels, and the NLL of the test labels. Without a truth, the NLL and the
Brier score of the test labels. Both are strictly proper, so no method can
win by stating something other than what it believes. Without a truth but
with a reference posterior that passed its gate (``uz.compare(reference=...)``),
the first ranking is by closeness to that exact posterior instead: the mean
per-point 1-Wasserstein distance between each method's draws of the class
probabilities and the reference's (:func:`uqzoo.fidelity`), the reference's
own row left out; then the NLL.

Every method is scored on the same Poisson(1) bootstrap replicates of the test
set (:class:`uqzoo.metrics.bootstrap.PoissonWeights`, one seed for all), so the
difference of a method to the best is a *paired* difference: its percentile
interval is narrow where the methods err on the same points, and when it holds
0 the two are tied -- "no method is better" is a possible answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from uqzoo._validation import check_float, check_int, check_seed
from uqzoo.errors import InvalidInputError
from uqzoo.metrics import calibration as cal
from uqzoo.metrics.bootstrap import PoissonWeights

__all__ = ["DEFAULT_REPLICATES", "SCORES", "Ranking", "rank_methods", "ranked_fidelity"]

# B = 500 replicates: the 2.5 % and 97.5 % quantiles of a difference then rest
# on ~12 replicates each side, enough for a tie / no-tie call; the cost is B × N
# multiply-adds per method (0.1 s for 7 methods on 2,500 points).
DEFAULT_REPLICATES = 500
# Points per block of bootstrap weights: B × block bytes at a time (32 MB).
_BLOCK = 2**16

# metric -> (words, needs the truth); lower is better for all of them.
SCORES: dict[str, tuple[str, bool]] = {
    "interval_score": ("interval score of the true probability, mean over levels", True),
    "wasserstein1": ("closeness to the reference posterior (1-Wasserstein distance between "
                     "the draws of p, mean over test points)", False),
    "nll": ("NLL of the test labels", False),
    "brier": ("Brier score of the test labels", False),
}


@dataclasses.dataclass(frozen=True)
class Ranking:
    """Methods ranked by one proper score (lower is better).

    Attributes
    ----------
    metric : str
        ``"interval_score"``, ``"wasserstein1"``, ``"nll"`` or ``"brier"``
        (:data:`SCORES`).
    methods : tuple of str
        Best first.
    values : dict of str to float
        Each method's score on the test set.
    difference : dict of str to (float, float, float)
        Each method's score minus the best's, and the percentile interval of
        that difference over the paired bootstrap replicates (NaN for a
        ranking made from point values alone).
    tied : tuple of str
        The best and every method whose interval of the difference holds 0.
    replicates : int
        B (0 for a ranking from point values alone).
    confidence : float
    seed : int or None
    """

    metric: str
    methods: tuple[str, ...]
    values: Mapping[str, float]
    difference: Mapping[str, tuple[float, float, float]]
    tied: tuple[str, ...]
    replicates: int
    confidence: float
    seed: int | None

    @property
    def best(self) -> str:
        return self.methods[0]

    @property
    def label(self) -> str:
        return SCORES[self.metric][0]

    def rank(self) -> dict[str, int]:
        """1 for the best, by the point values."""
        return {name: i + 1 for i, name in enumerate(self.methods)}

    @classmethod
    def from_values(cls, metric: str, values: Mapping[str, float]) -> Ranking:
        """A ranking from point values alone (a table without its reports): no intervals."""
        order = tuple(sorted(values, key=lambda n: (values[n], list(values).index(n))))
        nan = float("nan")
        best = values[order[0]]
        return cls(metric=metric, methods=order, values=dict(values),
                   difference={n: (values[n] - best, nan, nan) for n in order},
                   tied=(order[0],), replicates=0, confidence=nan, seed=None)


def ranked_fidelity(fidelity: Mapping[str, Any], reference: Any, *, has_truth: bool,
                    left_out: Collection[str] = ()) -> dict[str, Any] | None:
    """The fidelities a ranking goes by, or None when it goes by the usual scores.

    Parameters
    ----------
    fidelity : dict of str to Fidelity
        Per row of a comparison (:attr:`Comparison.fidelity`).
    reference : ReferenceSettings or None
        :attr:`Settings.reference`: its ``gate`` and its ``row`` (the table's row
        that is the reference itself, or None).
    has_truth : bool
        With known true probabilities the interval score ranks, not fidelity.
    left_out : collection of str
        Rows not to rank (failed fits).

    Returns
    -------
    dict of str to Fidelity or None
        None without a reference, with the truth known, or when the reference did
        not pass its gate (closeness to an unconverged run ranks nothing); else
        every row's fidelity but the reference's own and those ``left_out``.
    """
    if reference is None or has_truth or not reference.gate.passed:
        return None
    chosen = {n: f for n, f in fidelity.items() if n != reference.row and n not in left_out}
    return chosen or None


def _per_point(report: Any, metric: str, fidelity: Any = None) -> np.ndarray | None:
    """A report's per-point values of ``metric`` (N,), None where it has none."""
    if metric == "wasserstein1":
        if fidelity is None:
            return None
        return np.asarray(fidelity.per_point["wasserstein1"], np.float64)
    if metric == "interval_score":
        scores = getattr(report, "interval_score", None)
        return None if scores is None else np.asarray(scores, np.float64).mean(axis=0)
    mean, y = np.asarray(report.mean, np.float64), np.asarray(report.y)
    if metric == "nll":
        return cal.nll_per_point(mean, y)
    return np.clip(cal.brier_per_point(mean, y), 0.0, 2.0)


def rank_methods(reports: Mapping[str, Any], metrics: Sequence[str] | None = None, *,
                 replicates: int = DEFAULT_REPLICATES, seed: int = 0,
                 confidence: float = 0.95,
                 fidelity: Mapping[str, Any] | None = None) -> tuple[Ranking, ...]:
    """Rank evaluated methods by proper scores, with paired bootstrap intervals.

    Parameters
    ----------
    reports : dict of str to EvalReport
        The methods to rank, all evaluated on the same test set.
    metrics : sequence of str, optional
        Among :data:`SCORES`. Default: ``("interval_score", "nll")`` when every
        report knows the true probabilities; else ``("wasserstein1", "nll")``
        with ``fidelity``; else ``("nll", "brier")``.
    replicates : int
        B, the Poisson bootstrap replicates shared by all methods.
    seed : int
        Seed of the replicates.
    confidence : float in (0, 1)
        Level of the percentile interval of each difference.
    fidelity : dict of str to Fidelity, optional
        Closeness to a reference posterior, scored on the reports' test points
        (:func:`uqzoo.fidelity`); the ``"wasserstein1"`` ranking holds only the
        reports named here (so a reference's own row is left out by leaving
        it out of this dict), each by its per-point W1.

    Returns
    -------
    tuple of Ranking
        One per metric, in the order asked; empty without reports.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> from uqzoo.comparison.ranking import rank_methods
    >>> rng = np.random.default_rng(0); p = rng.uniform(0.1, 0.9, 400)
    >>> y = (rng.random(400) < p).astype(int)
    >>> def draws(q): return np.stack([1 - q, q], -1)[None].repeat(3, 0)
    >>> reports = {"right": uz.evaluate(draws(p), y, levels=(0.8,)),
    ...            "flat": uz.evaluate(draws(np.full(400, 0.5)), y, levels=(0.8,))}
    >>> rank_methods(reports)[0].methods
    ('right', 'flat')

    References
    ----------
    Gneiting, T., & Raftery, A. E. (2007). Strictly proper scoring rules,
    prediction, and estimation. JASA 102(477), 359-378.
    """
    replicates = check_int(replicates, "replicates", minimum=2, maximum=100_000)
    seed = check_seed(seed)
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                             high_open=True)
    names = list(reports)
    if not names:
        return ()
    fidelity = dict(fidelity or {})
    if metrics is None:
        truth = all(getattr(reports[n], "interval_score", None) is not None for n in names)
        metrics = (("interval_score", "nll") if truth else
                   ("wasserstein1", "nll") if fidelity else ("nll", "brier"))
    for metric in metrics:
        if metric not in SCORES:
            raise InvalidInputError(f"metrics must be among {list(SCORES)}, got {metric!r}")
    unknown = sorted(set(fidelity) - set(names))
    if unknown:
        raise InvalidInputError(f"fidelity names {unknown}, which are not among the reports "
                                f"{names}")
    for name, fid in fidelity.items():
        if int(fid.n_points) != int(reports[name].n_points):
            raise InvalidInputError(
                f"fidelity[{name!r}] scores {fid.n_points} points, its report "
                f"{reports[name].n_points}: score both on the same test set")
    first = reports[names[0]]
    for name in names[1:]:
        if reports[name].n_points != first.n_points or not np.array_equal(
                reports[name].y, first.y):
            raise InvalidInputError(
                f"reports must be evaluated on the same test set to be ranked by paired "
                f"differences; {name!r} has {reports[name].n_points} points, "
                f"{names[0]!r} {first.n_points} (or other labels)")
    N = int(first.n_points)
    weights = PoissonWeights(replicates, seed)
    out = []
    for metric in metrics:
        if metric == "wasserstein1":
            ranked = [n for n in names if n in fidelity]
            if not ranked:
                raise InvalidInputError("cannot rank by wasserstein1 without fidelity (pass "
                                        "fidelity={name: uz.fidelity(...)})")
        else:
            ranked = names
        values = {n: _per_point(reports[n], metric, fidelity.get(n)) for n in ranked}
        missing = [n for n, v in values.items() if v is None]
        if missing:
            raise InvalidInputError(
                f"cannot rank by {metric}: {missing} have no true probabilities")
        sums = {n: np.zeros(replicates) for n in ranked}
        total = np.zeros(replicates)
        for start in range(0, N, _BLOCK):
            stop = min(start + _BLOCK, N)
            W = weights.block(start, stop).astype(np.float64)
            total += W.sum(axis=1)
            for n in ranked:
                sums[n] += W @ values[n][start:stop]               # type: ignore[index]
        # a replicate of weight 0 everywhere (P = e^-N) scores nothing: left out
        kept = total > 0
        reps = {n: sums[n][kept] / total[kept] for n in ranked}
        point = {n: float(values[n].mean()) for n in ranked}      # type: ignore[union-attr]
        order = tuple(sorted(ranked, key=lambda n: (point[n], ranked.index(n))))
        best = order[0]
        tail = (1 - confidence) / 2
        difference, tied = {}, [best]
        for n in order:
            d = reps[n] - reps[best]
            low, high = np.quantile(d, [tail, 1 - tail]) if n != best else (0.0, 0.0)
            difference[n] = (point[n] - point[best], float(low), float(high))
            if n != best and low <= 0:
                tied.append(n)
        out.append(Ranking(metric=metric, methods=order, values=point, difference=difference,
                           tied=tuple(tied), replicates=replicates, confidence=confidence,
                           seed=seed))
    return tuple(out)
