"""Prior-shift correction: a posterior's probabilities moved to another class prior.

A classifier's P(y = k | x) depends on the class prior it learned under. When
the scene's prior differs -- targets are 0.5 % of the pixels but the fit saw
them balanced (``class_weight="balanced"``), or saw a training split richer in
targets than the scene -- Bayes' rule moves each probability exactly, provided
only the prior changed (p(x | y) is the same; Saerens, Latinne & Decaestecker
2002):

    P'(k | x) ∝ P(k | x) · π'_k / π_k.

On the logits that is a shift: log(π'_k / π_k) added to logit k of a softmax,
or log(π'_1 / π'_0) − log(π_1 / π_0) to the one logit of a sigmoid. uqzoo
applies it to every posterior draw's logits (the posterior's
:class:`~uqzoo.transform.LogitTransform`), so means, credible intervals and
High Confidence Sets all refer to the new prior, and the shifted posterior
saves and loads like any other.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from uqzoo._validation import _show, in_class_order
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["prior_shift", "prior_shift_logits"]

# Probabilities of a prior must sum to 1 within this (they are usually typed by hand).
_SUM_TOLERANCE = 1e-6


def _as_prior(value: object, name: str, classes: tuple[Any, ...] | None,
              n_classes: int) -> np.ndarray:
    """A class prior as (K,) float64, from a sequence or a dict label -> probability."""
    labels = list(range(n_classes)) if classes is None else list(classes)
    if isinstance(value, Mapping):
        probs = in_class_order(value, labels, name, "a probability", owner="the posterior does")
    elif isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InvalidTypeError(f"{name} must be a sequence of {n_classes} class probabilities "
                               f"or a dict label -> probability, got {_show(value)}")
    else:
        probs = list(value)
    try:
        prior = np.asarray(probs, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"{name} must hold numbers, got {_show(value)}") from None
    if prior.shape != (n_classes,):
        raise InvalidInputError(f"{name} must have one probability per class ({n_classes}), got "
                                f"{prior.size}")
    if not np.all(np.isfinite(prior)) or np.any(prior <= 0) or np.any(prior >= 1):
        raise InvalidInputError(f"{name} probabilities must lie in (0, 1), got {prior.tolist()}")
    if abs(prior.sum() - 1.0) > _SUM_TOLERANCE:
        raise InvalidInputError(f"{name} must sum to 1, got {prior.tolist()} (sum "
                                f"{prior.sum():.6g})")
    return prior / prior.sum()


def prior_shift_logits(from_prior: np.ndarray, to_prior: np.ndarray) -> np.ndarray:
    """The shift of each logit that moves probabilities from one class prior to another.

    Shape (1,) for two classes (the network's single logit), (K,) otherwise.

    Examples
    --------
    >>> prior_shift_logits(np.array([0.5, 0.5]), np.array([0.99, 0.01])).round(4).tolist()
    [-4.5951]
    """
    log_ratio = np.log(to_prior) - np.log(from_prior)
    if log_ratio.shape[0] == 2:
        return np.array([log_ratio[1] - log_ratio[0]])
    return log_ratio


def prior_shift(posterior: Any, prior: object, *, from_prior: object = None) -> Any:
    """The posterior with its probabilities moved to class prior ``prior``.

    Parameters
    ----------
    posterior : Posterior
    prior : sequence of float or dict
        The target prior π' (e.g. the scene's class frequencies): one
        probability per class in the order of ``posterior.classes``, or a
        dict label -> probability. Each in (0, 1), summing to 1.
    from_prior : sequence of float or dict, optional
        The prior π the posterior's probabilities refer to. By default the
        one ``uz.fit`` recorded, ``posterior.diagnostics["class_prior"]``:
        the training labels' frequencies, or π_k ∝ c_k n_k under class
        weights (uniform for ``class_weight="balanced"``).

    Returns
    -------
    Posterior
        The same draws with a logit shift composed into its logit transform
        (after any recalibration already there); ``info`` records both priors.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2, hidden=(4,))
    >>> post = uz.fit("laplace", spec, data, seed=0, num_epochs=200, num_samples=50,
    ...               class_weight="balanced", progress_bar=False)
    >>> post.diagnostics["class_prior"].tolist()
    [0.5, 0.5]
    >>> scene = uz.prior_shift(post, [0.9, 0.1])
    >>> before, after = (p.predict_proba(data.X_test)[:, 1].mean() for p in (post, scene))
    >>> bool(after < before)
    True
    """
    from uqzoo.posterior import Posterior
    from uqzoo.transform import LogitTransform

    if not isinstance(posterior, Posterior):
        raise InvalidTypeError(f"posterior must be a Posterior, got {_show(posterior)}")
    spec = posterior.spec
    target = _as_prior(prior, "prior", posterior.classes, spec.n_classes)
    if from_prior is None:
        recorded = posterior.diagnostics.get("class_prior")
        if recorded is None:
            raise InvalidInputError(
                "from_prior is needed: this posterior does not record the class prior it was "
                "fit under (diagnostics['class_prior'], which uz.fit sets)")
        from_prior = np.asarray(recorded, dtype=np.float64)
    source = _as_prior(from_prior, "from_prior", posterior.classes, spec.n_classes)
    shift = prior_shift_logits(source, target)
    old = posterior.logit_transform
    info = {"method": "prior_shift", "from_prior": source.tolist(), "to_prior": target.tolist()}
    if old is None:
        scale, total_shift = np.ones(spec.n_outputs), shift
    else:
        scale, total_shift = old.scale, old.shift + shift
        info["after"] = {"kind": old.kind, "info": dict(old.info)}
    if not all(math.isfinite(v) for v in total_shift):
        raise InvalidInputError("the prior shift is not finite; the priors are too extreme")
    transform = LogitTransform("vector", scale, total_shift, info)
    diagnostics = {**posterior.diagnostics, "class_prior": target}
    return dataclasses.replace(posterior, logit_transform=transform, diagnostics=diagnostics)
