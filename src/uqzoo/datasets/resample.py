"""Resample a test set to a given class prior (class imbalance, rare targets).

Real target detection has targets in well under 1 % of the pixels; a
simulated or benchmark test set usually has far more. :func:`resample_prior`
draws a new test set whose class counts follow a chosen prior exactly (up to
rounding), picking each class's points from that class's test points, so
every point keeps its features, coordinates and label -- only the class mix
changes (the class-conditional distributions p(x | y) are those of the
original test set).

The truth moves with the prior. Where ``p_true_test`` is known it is P(y | x)
in the population the test set came from, whose prior is π. In the resampled
population, with prior π', Bayes' rule gives

    P'(y = k | x) = (π'_k / π_k) P(y = k | x) / Σ_j (π'_j / π_j) P(y = j | x),

and the labels of the resampled set follow P', so ``p_true_test`` is
replaced by it (``adjust_p_true=True``, the default) -- coverage and
calibration are then judged against the truth of the data in hand. A model
fitted under the original prior estimates P, not P': the difference is label
shift, which is exactly what a resampled evaluation shows.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from uqzoo._validation import _show, check_float, check_int, check_seed
from uqzoo.errors import DataWarning, InvalidInputError, InvalidTypeError

__all__ = ["resample_prior"]

# A prior given in full must sum to one within this: 1e-9 accepts decimal
# fractions that do not add up exactly in binary (0.1 + 0.2 + 0.7), nothing else.
PRIOR_SUM_ATOL = 1e-9
SOURCE_PRIORS = ("p_true", "labels")


def _prior_vector(prior: object, classes: tuple[Any, ...], fallback: np.ndarray,
                  name: str) -> np.ndarray:
    """A (K,) prior from a {label: probability} mapping or a length-K sequence.

    Classes a mapping leaves out share the remaining mass in proportion to
    ``fallback`` (the test set's class frequencies).
    """
    K = len(classes)
    allowed = ", ".join(repr(c) for c in classes)
    if isinstance(prior, Mapping):
        given = np.full(K, np.nan)
        for label, value in prior.items():
            # True == 1 in Python; a bool label matches only a bool class
            matches = [k for k, c in enumerate(classes)
                       if c == label and isinstance(c, bool) == isinstance(label, bool)]
            if not matches:
                raise InvalidInputError(
                    f"{name} names class {label!r}, which is not a class of the data; the "
                    f"classes are {allowed} (data.classes)")
            given[matches[0]] = check_float(value, f"{name}[{label!r}]", low=0.0, high=1.0)
    elif isinstance(prior, (str, bytes)) or not isinstance(prior, (Sequence, np.ndarray)):
        raise InvalidTypeError(
            f"{name} must be a dict {{class: probability}} or a sequence of {K} probabilities "
            f"(classes {allowed}), got {_show(prior)}")
    else:
        values = list(prior)
        if len(values) != K:
            raise InvalidInputError(
                f"{name} as a sequence must give one probability per class ({K}: {allowed}), "
                f"got {len(values)}")
        given = np.array([check_float(v, f"{name} entry", low=0.0, high=1.0) for v in values])
    known = ~np.isnan(given)
    total = float(given[known].sum())
    if known.all():
        if abs(total - 1.0) > PRIOR_SUM_ATOL:
            raise InvalidInputError(
                f"{name} must sum to 1 over the classes, got sum {total:.12g} for "
                f"{_show(prior)}")
        return given / total
    if total > 1.0 + PRIOR_SUM_ATOL:
        raise InvalidInputError(
            f"{name} gives probabilities summing to {total:.12g} > 1 for {_show(prior)}; "
            f"the classes left out ({', '.join(repr(classes[k]) for k in np.flatnonzero(~known))}"
            f") share what remains of 1")
    rest = max(0.0, 1.0 - total)
    share = fallback[~known]
    if share.sum() == 0:
        share = np.ones_like(share)
    given[~known] = rest * share / share.sum()
    return given / given.sum()


def _counts(n: int, prior: np.ndarray) -> np.ndarray:
    """round(n · π) per class with largest remainders, so the counts sum to n."""
    exact = n * prior
    counts = np.floor(exact).astype(np.int64)
    short = n - int(counts.sum())
    # ties broken by class index (stable sort), so the counts are deterministic
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[:short]] += 1
    return counts


def resample_prior(data: Any, prior: Mapping[Any, float] | Sequence[float], *,
                   seed: int, n: int | None = None, replace: bool = False,
                   adjust_p_true: bool = True,
                   source_prior: str | Mapping[Any, float] | Sequence[float] = "p_true") -> Any:
    """The data with its test set resampled to a class prior; training set unchanged.

    Parameters
    ----------
    data : ClassificationData
    prior : dict {class: probability} or sequence of K probabilities
        The new class prior. Classes are the data's original labels
        (``data.classes``, as in evaluation tables). A dict may leave classes
        out; they share the remaining probability in proportion to their
        current test frequencies: ``{1: 0.005}`` makes 0.5 % targets and 99.5 %
        background. A full prior must sum to 1.
    seed : int
        Chooses the points.
    n : int, optional
        Size of the new test set. Default: without replacement, the largest
        size the prior allows, min over classes of n_k / π'_k (the scarcest
        class is used up); with replacement, the current test size.
    replace : bool
        ``False`` (default): each class's points are drawn without
        replacement, so no point appears twice and the evaluation's N counts
        distinct points; a prior that needs more points of a class than the
        test set has is an error. ``True``: drawn with replacement -- any
        size, but repeated points make the test set look larger than the
        evidence it holds (standard errors and bootstrap intervals too narrow).
    adjust_p_true : bool
        Replace ``p_true_test`` by the truth of the resampled population
        (module notes). ``False`` keeps P(y | x) of the original population.
    source_prior : {"p_true", "labels"} or dict or sequence
        The prior π of the population ``p_true_test`` describes, for the
        adjustment: ``"p_true"`` (default) its mean over the test set, an
        unbiased estimate; ``"labels"`` the test label frequencies (exact for
        ``hsi-sim``, whose truth is defined with the test scene's own
        frequencies); or the generator's prior, given like ``prior`` (e.g.
        ``gaussian-mixture``: ``[1 - balance, balance]``).

    Returns
    -------
    ClassificationData
        Test rows (features, labels, ``p_true_test``, ``coords_test``) in
        their original order; ``meta["resampled_prior"]`` records the prior,
        counts, n, replace, seed and the source prior used.

    Warns
    -----
    DataWarning
        When a class with positive prior gets no point (n · π'_k < 1/2).

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=2000, seed=0)
    >>> rare = uz.datasets.resample_prior(data, {1: 0.05}, seed=0)
    >>> round(float(np.mean(rare.y_test == 1)), 3), rare.meta["resampled_prior"]["replace"]
    (0.05, False)
    """
    if not (hasattr(data, "X_test") and hasattr(data, "y_test") and hasattr(data, "classes")):
        raise InvalidTypeError(f"data must be a ClassificationData, got {_show(data)}")
    seed = check_seed(seed)
    if not isinstance(replace, bool):
        raise InvalidTypeError(f"replace must be True or False, got {_show(replace)}")
    if not isinstance(adjust_p_true, bool):
        raise InvalidTypeError(f"adjust_p_true must be True or False, got {_show(adjust_p_true)}")
    classes = tuple(data.classes)
    K = len(classes)
    y = np.asarray(data.y_test)
    available = np.bincount(y, minlength=K)
    target = _prior_vector(prior, classes, available / available.sum(), "prior")
    missing = [classes[k] for k in range(K) if target[k] > 0 and available[k] == 0]
    if missing:
        raise InvalidInputError(
            f"prior gives probability to class(es) {missing!r}, which have no test points to "
            f"draw from")
    if n is None:
        positive = target > 0
        # the scarcest class used up; 1e-9 absorbs the rounding of n_k / π_k
        n = int(data.n_test) if replace else math.floor(
            min(available[positive] / target[positive]) + 1e-9)
    else:
        n = check_int(n, "n", minimum=1)
    counts = _counts(n, target)
    if not replace and np.any(counts > available):
        k = int(np.flatnonzero(counts > available)[0])
        raise InvalidInputError(
            f"n={n} with prior {classes[k]!r}: {target[k]:.6g} needs {counts[k]} test points "
            f"of class {classes[k]!r} without replacement; the test set has {available[k]}. "
            f"Use a smaller n (at most {math.floor(available[k] / target[k])}) or "
            f"replace=True")
    empty = [classes[k] for k in range(K) if target[k] > 0 and counts[k] == 0]
    if empty:
        warnings.warn(
            f"resample_prior: n={n} is too small for prior {_show(prior)}: class(es) "
            f"{empty!r} get no test point (n · prior < 1/2)", DataWarning, stacklevel=2)
    rng = np.random.default_rng(seed)
    picks = []
    for k in range(K):
        members = np.flatnonzero(y == k)
        if counts[k]:
            picks.append(rng.choice(members, size=int(counts[k]), replace=replace))
    index = np.sort(np.concatenate(picks)) if picks else np.zeros(0, dtype=np.int64)

    p_true = None if data.p_true_test is None else np.asarray(data.p_true_test)[index]
    source = None
    if p_true is not None and adjust_p_true:
        if isinstance(source_prior, str):
            from uqzoo._validation import check_choice
            kind = check_choice(source_prior, "source_prior", SOURCE_PRIORS)
            source = (np.asarray(data.p_true_test).mean(axis=0) if kind == "p_true"
                      else available / available.sum())
        else:
            source = _prior_vector(source_prior, classes, available / available.sum(),
                                   "source_prior")
        ratio = np.divide(target, source, out=np.zeros(K), where=source > 0)
        weighted = p_true * ratio
        total = weighted.sum(axis=1, keepdims=True)
        # a point whose every class has zero adjusted mass cannot be drawn
        # under the new prior; keep its original truth (it never happens for
        # points picked from a class with π' > 0 and P(y | x) > 0)
        p_true = np.where(total > 0, weighted / np.where(total > 0, total, 1.0), p_true)
    coords = None if data.coords_test is None else np.asarray(data.coords_test)[index]
    record = {
        "prior": {classes[k]: float(target[k]) for k in range(K)},
        "counts": {classes[k]: int(counts[k]) for k in range(K)},
        "n": int(n), "replace": replace, "seed": seed,
        "adjust_p_true": adjust_p_true,
        "source_prior": None if source is None else [float(v) for v in source],
        "n_test_before": int(data.n_test),
    }
    groups = None if data.groups_test is None else np.asarray(data.groups_test)[index]
    return dataclasses.replace(
        data, X_test=np.asarray(data.X_test)[index], y_test=y[index], p_true_test=p_true,
        coords_test=coords, groups_test=groups, meta={**data.meta, "resampled_prior": record})
