"""Split-conformal label sets and a conformal High Confidence Set, for any posterior.

Conformal prediction turns any model's probabilities into a *label set*
C(x) ⊆ {0..K-1} that holds the true label with probability at least 1 − α
on exchangeable data, whatever the model (Vovk et al. 2005). Here the model
is a posterior's **mean predictive** p̂(x) (``Posterior.predict_proba``),
so every method of the zoo -- and the point-estimate baseline ``map`` --
can be conformalized the same way and judged beside its own Bayesian sets.

How a set is made (split conformal)
-----------------------------------
1. Hold out a calibration split of the *training* data, stratified by class
   and chosen by an explicit ``seed`` (:func:`uqzoo.calibration_split`, the
   same split as :func:`uqzoo.recalibrate`'s), and fit the method on the
   rest -- a network is more confident on points it trained on, so scores
   of its own training points would make the sets too small.
2. Score each calibration point by how badly p̂ fits its label (the
   *nonconformity score* s(x, y), larger is worse):

   - ``"lac"`` (least ambiguous set-valued classifier; Sadinle et al.
     2019): s = 1 − p̂_y(x). The smallest sets on average.
   - ``"aps"`` (adaptive prediction sets; Romano et al. 2020): s = the
     total probability of the labels at least as probable as y,
     Σ_{j: p̂_j ≥ p̂_y} p̂_j (ties counted in, so the score needs no order
     among tied labels). Its sets grow where p̂ is spread out.
3. q̂ = the ⌈(n + 1)(1 − α)⌉-th smallest of the n calibration scores (the
   finite-sample quantile: level ⌈(n+1)(1−α)⌉/n of the scores). The set of
   a new point is C(x) = {k : s(x, k) ≤ q̂}; with ``"aps"`` it also always
   holds the top label, so an APS set is never empty (it can only add
   coverage). This is the non-randomised APS, MAPIE's
   ``include_last_label=False`` rule on non-randomised calibration scores
   (``tests/test_conformal_mapie.py``); randomised APS would trade exactness
   of coverage for a coin flip per point. Its scores tie where labels carry
   the whole remaining mass (with two classes, every point whose label is
   not the top one scores exactly 1), so it over-covers there: 0.95 at
   level 0.9 on gaussian-mixture. LAC has no such ties.

   **Too few calibration points.** When ⌈(n + 1)(1 − α)⌉ > n (n < 1/α − 1:
   fewer than 9 points at α = 0.1, 19 at 0.05), no finite q̂ has the
   guarantee; q̂ is then +∞ and C(x) is the **full label set**, which has it
   trivially. That is not an error (a rare class in Mondrian calibration
   meets it first), but it is recorded: ``ConformalSets.full_set_classes``
   and the summary name it.

Mondrian (class-conditional) calibration (``mondrian=True``; Vovk et al.
2005, Sadinle et al. 2019) takes one q̂_k per class from the calibration
points *of that class*, and puts k in C(x) when s(x, k) ≤ q̂_k: then
P(y ∈ C(x) | y = k) ≥ 1 − α for every class k -- rare targets get their own
guarantee instead of sharing the majority's.

Coverage is *marginal*, averaged over x: a set may under-cover some regions
of x and over-cover others. With simulated data uqzoo knows the truth, so
:func:`evaluate_sets` also reports each point's **exact conditional
coverage** P(y ∈ C(x) | x) = Σ_{k∈C(x)} p_true,k(x), its distribution and
its worst decile, which no peer library can.

The conformal High Confidence Set (risk control)
------------------------------------------------
The credible-interval HCS (:func:`uqzoo.metrics.high_confidence_set`) calls a
point confidently "not class c" when the upper credible bound of P(c) is
below δ. Nothing promises how many true targets it dismisses.
:func:`conformal_hcs` picks the threshold instead by conformal risk control
(Angelopoulos et al. 2022): a point is dismissed when p̂_c(x) < λ_c, with
λ_c the largest value whose calibration loss bound holds,

    λ̂_c = sup{λ : (n_c/(n_c + 1)) · R̂_c(λ) + 1/(n_c + 1) ≤ α},

R̂_c(λ) the share of the n_c calibration points of class c with p̂_c < λ
(loss 1 for a dismissed target, bounded by B = 1). Then the expected share
of class-c test points confidently dismissed is at most α on exchangeable
data. Mirrored, a point is confidently class c when 1 − p̂_c(x) < μ_c with μ_c
set the same way on the other classes' points, so that confident false
alarms are at most α too. λ̂_c is the (m + 1)-th smallest calibration score
with m = ⌊(n_c + 1)α⌋ − 1; when m < 0 (n_c < 1/α − 1) nothing is
dismissed.

References
----------
Vovk, V., Gammerman, A. and Shafer, G. (2005). Algorithmic Learning in a
Random World. Springer. (Split and Mondrian conformal prediction.)
Sadinle, M., Lei, J. and Wasserman, L. (2019). Least ambiguous set-valued
classifiers with bounded error levels. JASA 114(525). (LAC, class-wise.)
Romano, Y., Sesia, M. and Candès, E. (2020). Classification with valid and
adaptive coverage. NeurIPS. (APS.)
Angelopoulos, A. N., Bates, S., Fisch, A., Lei, L. and Schuster, T. (2022).
Conformal risk control. arXiv:2208.02814 (ICLR 2024).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np

from uqzoo._validation import (
    _show,
    as_calibration_pair,
    as_labels,
    as_probabilities,
    check_bool,
    check_choice,
    check_float,
    check_open_interval,
    check_seed,
    choices,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics.detection import clopper_pearson_bounds
from uqzoo.metrics.hcs import HighConfidenceSet, hcs_classes

__all__ = ["SCORES", "ConformalHCS", "ConformalReport", "ConformalSets", "SetReport", "calibrate",
           "check_level", "check_score", "conformal_hcs", "conformalize", "evaluate_sets",
           "judge", "label_scores", "nonconformity_scores", "predictive_sets", "quantile_rank"]

ConformalScore = Literal["lac", "aps"]
SCORES = choices(ConformalScore)
# Level of the Clopper–Pearson intervals on coverage (as on Pd in uz.evaluate).
COVERAGE_CONFIDENCE = 0.95
# (n + 1)(1 − α) is an integer for many (n, α) a user picks (n = 99, α = 0.1:
# 90); in floating point it can land a few ulp above it, and the ceiling would
# then ask for one more order statistic than the level needs. Counts are exact
# below this slack.
_RANK_SLACK = 1e-9
# The share of points in the "worst decile" of conditional coverage.
WORST_SHARE = 0.1


def _check_alpha(alpha: object, name: str = "alpha") -> float:
    return check_float(alpha, name, low=0.0, high=1.0, low_open=True, high_open=True)


def check_level(level: object, name: str = "level") -> float:
    """A conformal sets' level 1 − α in (0, 1), as a float.

    ``name`` is what the user typed (``conformal``, ``--conformal``, or a
    file's key as ``run.toml: compare.conformal:``): every caller of compare's
    ``conformal`` option checks it here, and only the name differs.
    """
    return check_open_interval(level, f"{name} must be a level in (0, 1) such as 0.9 (the "
                                      "label sets' coverage), got", 0.0, 1.0)


def check_score(score: object, name: str = "score") -> str:
    """A nonconformity score's name, one of :data:`SCORES` (see :func:`check_level`)."""
    what = f"{name} must be one of {', '.join(SCORES)} (the nonconformity score), got"
    if not isinstance(score, str):
        raise InvalidTypeError(f"{what} {_show(score)}")
    if score not in SCORES:
        raise InvalidInputError(f"{what} {score!r}")
    return score


def quantile_rank(n: int, alpha: float) -> int:
    """⌈(n + 1)(1 − α)⌉: which order statistic of n scores is the conformal q̂.

    A rank above n means no finite threshold has the 1 − α guarantee.

    Examples
    --------
    >>> from uqzoo.conformal import quantile_rank
    >>> quantile_rank(99, 0.1), quantile_rank(8, 0.1)
    (90, 9)
    """
    return math.ceil((n + 1) * (1 - alpha) - _RANK_SLACK)


def label_scores(probs: object, score: str = "lac") -> np.ndarray:
    """The nonconformity score s(x, k) of every label k (larger fits worse).

    Parameters
    ----------
    probs : array of shape (N, K)
        Predicted class probabilities (a posterior's mean predictive).
    score : {"lac", "aps"}
        ``"lac"``: 1 − p̂_k. ``"aps"``: Σ_{j: p̂_j ≥ p̂_k} p̂_j, the mass of
        the labels at least as probable as k (ties included).

    Returns
    -------
    float64 ndarray of shape (N, K)

    Examples
    --------
    >>> import numpy as np
    >>> from uqzoo.conformal import label_scores
    >>> label_scores(np.array([[0.6, 0.3, 0.1]]), "aps").round(2).tolist()
    [[0.6, 0.9, 1.0]]
    """
    p = as_probabilities(probs, "probs").astype(np.float64, copy=False)
    score = check_choice(score, "score", SCORES)
    if score == "lac":
        return 1.0 - p
    # mass of the labels with p_j >= p_k, for every k: sort descending, cumulate,
    # and give tied labels the cumulated mass of the last of them
    order = np.argsort(-p, axis=1, kind="stable")
    sorted_p = np.take_along_axis(p, order, axis=1)
    cumulated = np.cumsum(sorted_p, axis=1)
    # within a run of equal probabilities, every label gets the run's last sum
    last_of_run = np.empty_like(cumulated)
    K = p.shape[1]
    last_of_run[:, K - 1] = cumulated[:, K - 1]
    for j in range(K - 2, -1, -1):
        tied = sorted_p[:, j] == sorted_p[:, j + 1]
        last_of_run[:, j] = np.where(tied, last_of_run[:, j + 1], cumulated[:, j])
    out = np.empty_like(p)
    np.put_along_axis(out, order, last_of_run, axis=1)
    return np.minimum(out, 1.0)


def nonconformity_scores(probs: object, y: object, score: str = "lac") -> np.ndarray:
    """s(x_i, y_i): each labelled point's nonconformity score, float64 (N,)."""
    p = as_probabilities(probs, "probs")
    labels = as_labels(y, "y", n_classes=p.shape[1], n_rows=p.shape[0])
    return np.take_along_axis(label_scores(p, score), labels[:, None], axis=1)[:, 0]


def _order_statistic(scores: np.ndarray, rank: int) -> float:
    """The rank-th smallest score (1-based); +inf when rank exceeds their number."""
    if rank > scores.shape[0]:
        return math.inf
    if rank < 1:
        return -math.inf
    return float(np.partition(scores, rank - 1)[rank - 1])


@dataclasses.dataclass(frozen=True, eq=False)
class ConformalSets:
    """A calibrated split-conformal label-set rule (see the module notes).

    Attributes
    ----------
    alpha : float
        Miscoverage level: sets hold the label with probability ≥ 1 − α.
    score : {"lac", "aps"}
    mondrian : bool
        One threshold per class (class-conditional coverage) or one for all.
    thresholds : float64 ndarray of shape (K,)
        q̂ (the same in every entry) or q̂_k per class; +inf where there were
        too few calibration points (the full label set).
    n_calibration : int
        Calibration points.
    class_counts : int64 ndarray of shape (K,)
        Calibration points per class.
    hcs : ConformalHCS or None
        The conformal High Confidence Set calibrated on the same points
        (:func:`conformalize` makes it; :func:`calibrate` does not).
    info : dict
        Where the calibration points came from (``"calibration"``:
        ``"given"`` or ``"training split"``, ``calibration_fraction``,
        ``seed``).
    """

    alpha: float
    score: str
    mondrian: bool
    thresholds: np.ndarray
    n_calibration: int
    class_counts: np.ndarray
    hcs: ConformalHCS | None = None
    info: dict = dataclasses.field(default_factory=dict)

    @property
    def level(self) -> float:
        """1 − α."""
        return 1.0 - self.alpha

    @property
    def n_classes(self) -> int:
        return int(self.thresholds.shape[0])

    @property
    def full_set_classes(self) -> tuple[int, ...]:
        """Classes whose threshold is +inf (too few calibration points): always in the set."""
        return tuple(int(k) for k in np.flatnonzero(np.isinf(self.thresholds)))

    def predict(self, probs: object) -> np.ndarray:
        """The label set of each point: bool ndarray (N, K), True where k ∈ C(x).

        Parameters
        ----------
        probs : array of shape (N, K)
            The same model's probabilities on new points.
        """
        p = as_probabilities(probs, "probs", n_classes=self.n_classes)
        sets = label_scores(p, self.score) <= self.thresholds[None, :]
        if self.score == "aps":
            # never empty: the top label is always in (MAPIE's include_last_label=False)
            top = np.argmax(p, axis=1)
            sets[np.arange(p.shape[0]), top] = True
        return sets

    def summary(self) -> str:
        """One line: what the rule is and how it was calibrated."""
        kind = "Mondrian (class-conditional)" if self.mondrian else "marginal"
        qs = ", ".join(f"{q:.4g}" for q in self.thresholds) if self.mondrian \
            else f"{self.thresholds[0]:.4g}"
        text = (f"split-conformal {self.score.upper()} sets at level {self.level:g}, {kind}, "
                f"{self.n_calibration} calibration points; q̂ = {qs}")
        if self.full_set_classes:
            text += (f"; too few calibration points for class(es) "
                     f"{list(self.full_set_classes)}: always in the set")
        return text

    def __repr__(self) -> str:
        return self.summary()


def calibrate(probs: object, y: object, *, alpha: float = 0.1, score: str = "lac",
              mondrian: bool = False) -> ConformalSets:
    """Calibrate split-conformal label sets on held-out probabilities and labels.

    Parameters
    ----------
    probs : array of shape (n, K)
        The model's probabilities on the calibration points (points it was
        not fitted on).
    y : int array of shape (n,)
        Their labels, in 0..K-1.
    alpha : float in (0, 1)
        Miscoverage level; the sets have coverage ≥ 1 − α.
    score : {"lac", "aps"}
        Nonconformity score (:func:`label_scores`).
    mondrian : bool
        Class-conditional calibration: one threshold per class from that
        class's calibration points.

    Returns
    -------
    ConformalSets
        Its ``predict(probs)`` gives the sets of new points.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet([1, 1, 1], size=500); y = np.array([rng.choice(3, p=r) for r in p])
    >>> rule = uz.conformal.calibrate(p[:400], y[:400], alpha=0.1)
    >>> sets = rule.predict(p[400:])
    >>> bool(sets[np.arange(100), y[400:]].mean() > 0.8)
    True
    """
    p = as_probabilities(probs, "probs")
    labels = as_labels(y, "y", n_classes=p.shape[1], n_rows=p.shape[0])
    alpha = _check_alpha(alpha)
    score = check_choice(score, "score", SCORES)
    mondrian = check_bool(mondrian, "mondrian")
    K = p.shape[1]
    scores = nonconformity_scores(p, labels, score)
    counts = np.bincount(labels, minlength=K).astype(np.int64)
    if mondrian:
        thresholds = np.array([_order_statistic(scores[labels == k],
                                                quantile_rank(int(counts[k]), alpha))
                               for k in range(K)])
    else:
        q = _order_statistic(scores, quantile_rank(scores.shape[0], alpha))
        thresholds = np.full(K, q)
    return ConformalSets(alpha=alpha, score=score, mondrian=mondrian,
                         thresholds=thresholds.astype(np.float64),
                         n_calibration=int(scores.shape[0]), class_counts=counts)


def predictive_sets(probs: object, level: float) -> np.ndarray:
    """The model's own (uncalibrated) label sets: the most probable labels until their
    probability reaches ``level``, bool (N, K).

    The set a Bayesian reads off its predictive without conformal calibration:
    were p̂ the true probabilities, it would cover with probability ≥ level at
    every x. It is the APS rule with q̂ = level instead of a calibrated one.
    """
    level = check_float(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    p = as_probabilities(probs, "probs")
    mass_before = label_scores(p, "aps") - p        # mass of strictly more probable labels
    sets = mass_before < level - _RANK_SLACK
    sets[np.arange(p.shape[0]), np.argmax(p, axis=1)] = True
    return sets


# -- the conformal High Confidence Set -------------------------------------------------

def _risk_controlled_threshold(scores: np.ndarray, alpha: float) -> float:
    """λ̂ = sup{λ : #{s_i < λ}/(n+1) + 1/(n+1) ≤ α}: the (m+1)-th smallest score,
    m = ⌊(n+1)α⌋ − 1; −inf (nothing dismissed) when m < 0."""
    n = scores.shape[0]
    m = math.floor((n + 1) * alpha + _RANK_SLACK) - 1
    if m < 0:
        return -math.inf
    return _order_statistic(scores, m + 1)


@dataclasses.dataclass(frozen=True, eq=False)
class ConformalHCS:
    """A High Confidence Set whose thresholds were picked by conformal risk control.

    Attributes
    ----------
    alpha : float
        Bound on the expected share of a class's points confidently dismissed
        (and of the other points confidently called that class).
    classes : tuple of int
        The judged class columns (``(1,)`` for two classes, all for K > 2), as
        in :func:`uqzoo.metrics.high_confidence_set`.
    dismiss_below : float64 ndarray of shape (C,)
        λ̂_c: confidently "not c" when p̂_c(x) < λ̂_c (−inf: never).
    confirm_above : float64 ndarray of shape (C,)
        Confidently "c" when p̂_c(x) > 1 − μ̂_c (+inf threshold: never).
    n_targets, n_background : int64 ndarrays of shape (C,)
        Calibration points of the class and of the others.
    """

    alpha: float
    classes: tuple[int, ...]
    dismiss_below: np.ndarray
    confirm_above: np.ndarray
    n_targets: np.ndarray
    n_background: np.ndarray

    def predict(self, probs: object) -> HighConfidenceSet:
        """The conformal HCS of new points, as the credible HCS's type (``delta`` holds α)."""
        p = as_probabilities(probs, "probs")
        cols = list(self.classes)
        if max(cols) >= p.shape[1]:
            raise InvalidInputError(f"probs has {p.shape[1]} columns; this HCS judges class "
                                    f"columns {cols}")
        pc = p[:, cols]
        negative = pc < self.dismiss_below[None, :]
        positive = pc > self.confirm_above[None, :]
        return HighConfidenceSet(positive=positive, negative=negative, classes=self.classes,
                                 delta=self.alpha, side="both")


def conformal_hcs(probs: object, y: object, *, alpha: float = 0.1) -> ConformalHCS:
    """Calibrate the conformal High Confidence Set by conformal risk control.

    Parameters
    ----------
    probs : array of shape (n, K)
        The model's probabilities on held-out calibration points.
    y : int array of shape (n,)
    alpha : float in (0, 1)
        The tolerated expected share of a class's points that the set
        confidently dismisses (and of other points it confidently calls that
        class).

    Returns
    -------
    ConformalHCS

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=2000); y = (rng.uniform(size=2000) < p1).astype(int)
    >>> hcs = uz.conformal.conformal_hcs(np.c_[1 - p1, p1], y, alpha=0.05)
    >>> 0.0 < float(hcs.dismiss_below[0]) < 0.5
    True

    References
    ----------
    Angelopoulos, A. N., Bates, S., Fisch, A., Lei, L. and Schuster, T. (2022).
    Conformal risk control. arXiv:2208.02814.
    """
    p = as_probabilities(probs, "probs")
    labels = as_labels(y, "y", n_classes=p.shape[1], n_rows=p.shape[0])
    alpha = _check_alpha(alpha)
    classes = hcs_classes(p.shape[1])
    lower, upper, n_t, n_b = [], [], [], []
    for c in classes:
        is_c = labels == c
        lower.append(_risk_controlled_threshold(p[is_c, c], alpha))
        # mirrored: the other points' 1 - p_c, dismissed from "confidently c" below μ
        mu = _risk_controlled_threshold(1.0 - p[~is_c, c], alpha)
        upper.append(1.0 - mu)
        n_t.append(int(is_c.sum()))
        n_b.append(int((~is_c).sum()))
    return ConformalHCS(alpha=alpha, classes=classes,
                        dismiss_below=np.asarray(lower, dtype=np.float64),
                        confirm_above=np.asarray(upper, dtype=np.float64),
                        n_targets=np.asarray(n_t, dtype=np.int64),
                        n_background=np.asarray(n_b, dtype=np.int64))


# -- a posterior, end to end -------------------------------------------------------------

def conformalize(posterior: Any, data: Any = None, *, alpha: float = 0.1, score: str = "lac",
                 mondrian: bool = False, hcs_alpha: float | None = None,
                 calibration: tuple[Any, Any] | None = None,
                 calibration_fraction: float | None = None, seed: int = 0) -> ConformalSets:
    """Split-conformal label sets (and a conformal HCS) for a posterior's mean predictive.

    Parameters
    ----------
    posterior : Posterior
        Any fitted method (anything with ``predict_proba(X)`` and ``spec``).
        It should have been fitted *without* the calibration points: split
        first with :func:`uqzoo.calibration_split` and pass the held-out pair
        as ``calibration``.
    data : ClassificationData, optional
        Instead of ``calibration``: a stratified ``calibration_fraction``
        (default 0.2) of its training set, chosen by ``seed``, is used -- only
        right if the posterior was fitted on the rest.
    alpha : float in (0, 1)
        Miscoverage level of the label sets.
    score : {"lac", "aps"}
    mondrian : bool
        Class-conditional calibration.
    hcs_alpha : float in (0, 1), optional
        α of the conformal High Confidence Set (default: ``alpha``).
    calibration : (X, y), optional
        Held-out calibration points.
    calibration_fraction : float in (0, 1), optional
        With ``data`` only.
    seed : int
        Chooses the calibration split from ``data``.

    Returns
    -------
    ConformalSets
        With ``hcs`` (the conformal HCS) and ``info`` (where the calibration
        points came from).

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=300, n_test=200, seed=0)
    >>> fit_data, calibration = uz.calibration_split(data, 0.2, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2, hidden=(5,))
    >>> post = uz.fit("map", spec, fit_data, seed=0, num_epochs=300, progress_bar=False)
    >>> rule = uz.conformal.conformalize(post, calibration=calibration, alpha=0.1)
    >>> sets = rule.predict(post.predict_proba(data.X_test))
    >>> report = uz.conformal.evaluate_sets(sets, data.y_test, data.p_true_test, level=0.9)
    >>> 0.0 <= report.coverage <= 1.0
    True
    """
    from uqzoo.recalibrate import DEFAULT_CALIBRATION_FRACTION, calibration_split

    if not (hasattr(posterior, "predict_proba") and hasattr(posterior, "spec")):
        raise InvalidTypeError(f"posterior must be a uqzoo Posterior, got {_show(posterior)}")
    seed = check_seed(seed)
    spec = posterior.spec
    if calibration is not None:
        if data is not None or calibration_fraction is not None:
            raise InvalidInputError(
                "conformalize takes calibration=(X, y) or data (with calibration_fraction), "
                f"not both; got data={_show(data)}, "
                f"calibration_fraction={_show(calibration_fraction)}")
        X, y = as_calibration_pair(calibration, spec.in_features, spec.n_classes)
        info: dict[str, Any] = {"calibration": "given", "n_calibration": int(X.shape[0])}
    else:
        if data is None:
            raise InvalidInputError(
                "conformalize needs calibration points: pass calibration=(X, y) (held out "
                "before the fit, uz.calibration_split) or data (a stratified "
                "calibration_fraction of its training set is used)")
        fraction = DEFAULT_CALIBRATION_FRACTION if calibration_fraction is None \
            else calibration_fraction
        _, (X, y) = calibration_split(data, fraction, seed=seed)
        info = {"calibration": "training split", "calibration_fraction": float(fraction),
                "seed": seed, "n_calibration": int(X.shape[0])}
    if X.shape[0] == 0:
        raise InvalidInputError("the calibration data hold no point")
    probs = posterior.predict_proba(X)
    rule = calibrate(probs, y, alpha=alpha, score=score, mondrian=mondrian)
    hcs = conformal_hcs(probs, y, alpha=alpha if hcs_alpha is None
                        else _check_alpha(hcs_alpha, "hcs_alpha"))
    return dataclasses.replace(rule, hcs=hcs, info=info)


# -- judging label sets ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class SetReport:
    """How well label sets cover, on labelled test points (and against the truth).

    Attributes
    ----------
    level : float
        The nominal coverage 1 − α.
    n : int
        Test points.
    coverage : float
        Share of points whose set holds the label (marginal coverage).
    coverage_interval : (float, float)
        Its Clopper–Pearson interval at ``confidence``.
    class_coverage : float64 ndarray of shape (K,)
        Coverage among the points of each class (NaN without any).
    class_coverage_interval : float64 ndarray of shape (K, 2)
    class_counts : int64 ndarray of shape (K,)
    mean_size : float
        Mean number of labels per set.
    singleton_rate, empty_rate : float
        Share of sets with exactly one label, with none.
    conditional_coverage : float64 ndarray of shape (N,) or None
        With true probabilities: P(y ∈ C(x) | x) = Σ_{k∈C(x)} p_true,k(x).
    worst_decile_coverage : float or None
        Mean conditional coverage over the 10 % of points where it is lowest.
    confidence : float
    """

    level: float
    n: int
    coverage: float
    coverage_interval: tuple[float, float]
    class_coverage: np.ndarray
    class_coverage_interval: np.ndarray
    class_counts: np.ndarray
    mean_size: float
    singleton_rate: float
    empty_rate: float
    conditional_coverage: np.ndarray | None
    worst_decile_coverage: float | None
    confidence: float = COVERAGE_CONFIDENCE

    def conditional_quantiles(self, qs: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5)
                              ) -> dict[float, float]:
        """Quantiles of the conditional coverage (empty without the truth)."""
        if self.conditional_coverage is None:
            return {}
        return {q: float(np.quantile(self.conditional_coverage, q)) for q in qs}

    @property
    def below_level_share(self) -> float | None:
        """Share of points whose conditional coverage is below the level (None without
        the truth)."""
        if self.conditional_coverage is None:
            return None
        return float(np.mean(self.conditional_coverage < self.level - 1e-12))

    def summary(self) -> str:
        lo, hi = self.coverage_interval
        text = (f"coverage {self.coverage:.3f} [{lo:.3f}, {hi:.3f}] (nominal {self.level:g}), "
                f"mean size {self.mean_size:.2f}, singletons {self.singleton_rate:.1%}, "
                f"empty {self.empty_rate:.1%}")
        if self.conditional_coverage is not None:
            text += (f"; conditional coverage: worst decile {self.worst_decile_coverage:.3f}, "
                     f"median {np.median(self.conditional_coverage):.3f}, "
                     f"{self.below_level_share:.1%} of points below {self.level:g}")
        return text

    def __repr__(self) -> str:
        return self.summary()


def evaluate_sets(sets: object, y: object, p_true: object = None, *, level: float,
                  confidence: float = COVERAGE_CONFIDENCE) -> SetReport:
    """Coverage, size and exact conditional coverage of label sets.

    Parameters
    ----------
    sets : bool array of shape (N, K)
        True where label k is in the set of point i.
    y : int array of shape (N,)
    p_true : array of shape (N, K), optional
        True class probabilities (simulated data): enables the conditional
        coverage.
    level : float in (0, 1)
        The nominal coverage, 1 − α.
    confidence : float in (0, 1)
        Level of the Clopper–Pearson intervals on coverage.

    Returns
    -------
    SetReport

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> sets = np.array([[True, False], [True, True], [False, True]])
    >>> r = uz.conformal.evaluate_sets(sets, [0, 1, 0], [[0.9, 0.1], [0.5, 0.5], [0.3, 0.7]],
    ...                                level=0.9)
    >>> round(r.coverage, 3), r.mean_size, r.conditional_coverage.tolist()
    (0.667, 1.3333333333333333, [0.9, 1.0, 0.7])
    """
    arr = np.asarray(sets)
    if arr.dtype != np.bool_ or arr.ndim != 2:
        raise InvalidInputError(f"sets must be a bool array of shape (N, K), got {_show(sets)}")
    N, K = arr.shape
    if N == 0:
        raise InvalidInputError("sets must hold at least one point, got shape (0, K)")
    labels = as_labels(y, "y", n_classes=K, n_rows=N)
    level = check_float(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    confidence = check_float(confidence, "confidence", low=0.0, high=1.0, low_open=True,
                             high_open=True)
    covered = arr[np.arange(N), labels]
    hits = int(covered.sum())
    lo, hi = clopper_pearson_bounds(hits, N, confidence)
    counts = np.bincount(labels, minlength=K).astype(np.int64)
    class_hits = np.bincount(labels, weights=covered, minlength=K)
    with np.errstate(invalid="ignore", divide="ignore"):
        class_cov = np.where(counts > 0, class_hits / np.maximum(counts, 1), np.nan)
    c_lo, c_hi = clopper_pearson_bounds(class_hits, np.maximum(counts, 1), confidence)
    class_interval = np.stack([np.where(counts > 0, c_lo, np.nan),
                               np.where(counts > 0, c_hi, np.nan)], axis=1)
    sizes = arr.sum(axis=1)
    conditional = worst = None
    if p_true is not None:
        truth = as_probabilities(p_true, "p_true", n_rows=N, n_classes=K)
        conditional = np.minimum((truth * arr).sum(axis=1), 1.0).astype(np.float64)
        worst_n = max(1, math.ceil(WORST_SHARE * N))
        worst = float(np.partition(conditional, worst_n - 1)[:worst_n].mean())
    return SetReport(level=level, n=N, coverage=hits / N,
                     coverage_interval=(float(lo), float(hi)), class_coverage=class_cov,
                     class_coverage_interval=class_interval, class_counts=counts,
                     mean_size=float(sizes.mean()), singleton_rate=float(np.mean(sizes == 1)),
                     empty_rate=float(np.mean(sizes == 0)), conditional_coverage=conditional,
                     worst_decile_coverage=worst, confidence=confidence)


# -- a calibrated rule judged on test points (what uz.evaluate attaches) -----------------

@dataclasses.dataclass(frozen=True, eq=False)
class ConformalReport:
    """A conformal rule judged on labelled test points, beside the model's own sets.

    Attributes
    ----------
    rule : ConformalSets
    conformal : SetReport
        The calibrated sets.
    plain : SetReport
        The model's own sets at the same level (:func:`predictive_sets`): what
        its probabilities promise without calibration.
    hcs_missed_rate : float or None
        Share of the test points of the judged class(es) that the conformal
        HCS confidently dismissed (pooled over the judged classes; the bound
        is ``rule.hcs.alpha``); None without an HCS.
    hcs_missed_interval : (float, float) or None
        Its Clopper–Pearson interval.
    hcs_proportion : float or None
        Share of (point, judged class) decisions the conformal HCS makes.
    """

    rule: ConformalSets
    conformal: SetReport
    plain: SetReport
    hcs_missed_rate: float | None = None
    hcs_missed_interval: tuple[float, float] | None = None
    hcs_proportion: float | None = None

    def rows(self) -> list[dict[str, Any]]:
        """Tidy rows (metric, variant, class index or None, value, stderr) for EvalReport."""
        variant = (f"{self.rule.score}, {'mondrian' if self.rule.mondrian else 'marginal'}, "
                   f"level {self.rule.level:g}")
        nan = math.nan
        out: list[dict[str, Any]] = []

        def add(metric: str, value: float | None, stderr: float = nan,
                cls: int | None = None) -> None:
            if value is not None:
                out.append({"metric": metric, "variant": variant, "class": cls,
                            "value": float(value), "stderr": float(stderr)})

        # the metric names are the headline names (uqzoo.headline: conformal_*, plain_*)
        for prefix, sets in (("conformal", self.conformal), ("plain", self.plain)):
            cov = sets.coverage
            coverage = "conformal_coverage" if prefix == "conformal" else "plain_set_coverage"
            add(coverage, cov, math.sqrt(cov * (1 - cov) / sets.n))
            add(f"{prefix}_set_size", sets.mean_size)
            add(f"{prefix}_singleton_rate", sets.singleton_rate)
            add(f"{prefix}_worst_decile", sets.worst_decile_coverage)
            for k, value in enumerate(sets.class_coverage):
                if not math.isnan(value):
                    n_k = int(sets.class_counts[k])
                    add(coverage, value, math.sqrt(value * (1 - value) / n_k), k)
        add("conformal_hcs_missed_rate", self.hcs_missed_rate)
        add("conformal_hcs_proportion", self.hcs_proportion)
        return out

    def summary(self) -> str:
        lines = [f"  {self.rule.summary()}",
                 f"    conformal sets: {self.conformal.summary()}",
                 f"    the model's own sets: {self.plain.summary()}"]
        if self.hcs_missed_rate is not None and self.hcs_missed_interval is not None:
            lo, hi = self.hcs_missed_interval
            lines.append(f"    conformal HCS (α = {self.rule.hcs.alpha:g}): "  # type: ignore[union-attr]
                         f"{self.hcs_proportion:.1%} of decisions, dismissed "
                         f"{self.hcs_missed_rate:.3f} [{lo:.3f}, {hi:.3f}] of the targets")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def judge(rule: ConformalSets, probs: object, y: object, p_true: object = None
          ) -> ConformalReport:
    """Judge a calibrated rule on test probabilities and labels (and the truth, if known).

    Parameters
    ----------
    rule : ConformalSets
    probs : array of shape (N, K)
        The same model's probabilities on the test points.
    y : int array of shape (N,)
    p_true : array of shape (N, K), optional

    Returns
    -------
    ConformalReport
    """
    if not isinstance(rule, ConformalSets):
        raise InvalidTypeError(f"conformal must be a ConformalSets (uz.conformal.calibrate or "
                               f"uz.conformal.conformalize), got {_show(rule)}")
    p = as_probabilities(probs, "probs", n_classes=rule.n_classes)
    conformal = evaluate_sets(rule.predict(p), y, p_true, level=rule.level)
    plain = evaluate_sets(predictive_sets(p, rule.level), y, p_true, level=rule.level)
    missed = interval = proportion = None
    if rule.hcs is not None:
        decided = rule.hcs.predict(p)
        labels = as_labels(y, "y", n_classes=rule.n_classes, n_rows=p.shape[0])
        is_target = labels[:, None] == np.asarray(rule.hcs.classes)[None, :]
        n_targets = int(is_target.sum())
        proportion = float((decided.negative | decided.positive).mean())
        if n_targets:
            dismissed = int((decided.negative & is_target).sum())
            missed = dismissed / n_targets
            lo, hi = clopper_pearson_bounds(dismissed, n_targets, COVERAGE_CONFIDENCE)
            interval = (float(lo), float(hi))
    return ConformalReport(rule=rule, conformal=conformal, plain=plain,
                           hcs_missed_rate=missed, hcs_missed_interval=interval,
                           hcs_proportion=proportion)
