"""Post-hoc recalibration for any posterior: temperature and vector scaling.

A method's probabilities may be systematically over- or under-confident.
Temperature scaling (Guo et al. 2017) divides every logit by one T > 0 fitted
on held-out data; vector scaling fits one scale and one shift per logit,
w ⊙ z + b (W = diag(w)). Here the map is fitted once and applied to *every
posterior draw's* logits by the predictive engine, so the recalibrated
posterior has recalibrated means, intervals, High Confidence Sets and
entropies, and is judged with the same metrics as the original
(:func:`uqzoo.evaluate`). The result is a :class:`~uqzoo.Posterior` of the
same method with a :class:`~uqzoo.predictive.LogitTransform` attached; it
saves and loads like any other.

What is minimised
-----------------
The negative log-likelihood, on calibration data, of the **posterior-mean
predictive** p̄(y | x) = (1/S) Σ_s softmax(g(z_s(x)))_y, with g the map being
fitted -- the probabilities :func:`uqzoo.evaluate` scores (its NLL, Brier and
ECE are those of p̄). Minimising the mean over draws of each draw's own NLL
instead would fit every draw as if it were the whole predictive and, for a
wide posterior, over-sharpen p̄. With one draw (a MAP network) both are Guo
et al.'s objective. The optimiser is torch's L-BFGS with a strong-Wolfe line
search, in float64, on log T (temperature) or on (w, b) (vector).

Where the calibration data come from
------------------------------------
By default a stratified ``calibration_fraction`` of the *training* data. The
posterior should ideally have been fitted without those points -- a network
is more confident on points it was trained on, so T fitted on them is too
small (too little softening). Split first with :func:`calibration_split`,
fit on the rest, then pass the held-out part as ``calibration=(X, y)``::

    fit_data, calibration = uz.calibration_split(data, 0.2, seed=0)
    post = uz.fit("ensemble", spec, fit_data, seed=0)
    post_ts = uz.recalibrate(post, method="temperature", calibration=calibration)

The test set is never used.

References
----------
Guo, C., Pleiss, G., Sun, Y., Weinberger, K. Q. (2017). On calibration of
modern neural networks. ICML. (Temperature, vector and matrix scaling.)
Platt, J. (1999). Probabilistic outputs for support vector machines.
(Vector scaling of a single logit is Platt scaling.)
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np

from uqzoo._data_checks import MIN_CLASS_ROWS
from uqzoo._validation import (
    _show,
    as_calibration_pair,
    as_labels,
    check_choice,
    check_float,
    check_int,
    check_seed,
)
from uqzoo.errors import ConvergenceWarning, DataWarning, InvalidInputError, InvalidTypeError
from uqzoo.predictive import augmented_draws, logit_draws
from uqzoo.spec import MLPSpec
from uqzoo.transform import LOGIT_TRANSFORMS, LogitTransform

__all__ = ["DEFAULT_CALIBRATION_FRACTION", "RECALIBRATION_METHODS", "LogitTransform",
           "calibration_split", "recalibrate"]

RECALIBRATION_METHODS = LOGIT_TRANSFORMS
# Guo et al. hold out 5,000 of 50,000 CIFAR images (10 %) for calibration; with
# the few thousand points of uqzoo's tabular and simulated sets, 20 % keeps
# several hundred points to fit a one- or 2K-parameter map on.
DEFAULT_CALIBRATION_FRACTION = 0.2
# L-BFGS stops when the largest gradient entry of the mean NLL is below this:
# far below the NLL's own sampling noise (order 1/sqrt(n) per parameter).
_GRADIENT_TOLERANCE = 1e-9
_MAX_ITERATIONS = 500


def _check_fraction(fraction: object) -> float:
    return check_float(fraction, "calibration_fraction", low=0.0, high=1.0, low_open=True,
                       high_open=True)


def _stratified_pick(y: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Boolean mask of the calibration points: round(fraction · n_k) of each class k,
    at least one of every class with two or more points, never all of a class."""
    rng = np.random.default_rng(seed)
    pick = np.zeros(y.shape[0], dtype=bool)
    for k in np.unique(y):
        members = np.flatnonzero(y == k)
        n_k = members.shape[0]
        take = min(max(round(fraction * n_k), 1 if n_k >= 2 else 0), n_k - 1)
        if take > 0:
            pick[rng.choice(members, size=take, replace=False)] = True
    return pick


def calibration_split(data: Any, calibration_fraction: float = DEFAULT_CALIBRATION_FRACTION,
                      *, seed: int) -> tuple[Any, tuple[np.ndarray, np.ndarray]]:
    """Hold out a stratified part of the training data for recalibration.

    Parameters
    ----------
    data : ClassificationData
    calibration_fraction : float in (0, 1)
        Share of each class's training points held out (rounded; at least one
        point of every class with two or more, never a whole class).
    seed : int
        Chooses the held-out points.

    Returns
    -------
    (fit_data, (X_calibration, y_calibration))
        ``fit_data`` is ``data`` with the held-out points removed from its
        training set (test set unchanged; ``meta["calibration_split"]``
        records the fraction and seed); fit the posterior on it and pass the
        pair to :func:`recalibrate` as ``calibration``.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> fit_data, (X_cal, y_cal) = uz.calibration_split(data, 0.25, seed=0)
    >>> fit_data.n_train + X_cal.shape[0] == data.n_train
    True
    """
    _check_data(data)
    fraction = _check_fraction(calibration_fraction)
    seed = check_seed(seed)
    pick = _stratified_pick(np.asarray(data.y_train), fraction, seed)
    keep = ~pick
    coords = None if data.coords_train is None else data.coords_train[keep]
    meta = {**data.meta, "calibration_split": {"calibration_fraction": fraction,
                                               "seed": seed, "n_calibration": int(pick.sum())}}
    groups = None if getattr(data, "groups_train", None) is None else data.groups_train[keep]
    fit_data = dataclasses.replace(data, X_train=data.X_train[keep], y_train=data.y_train[keep],
                                   coords_train=coords, groups_train=groups, meta=meta)
    return fit_data, (np.array(data.X_train[pick]), np.array(data.y_train[pick]))


def _check_data(data: object) -> None:
    if not (hasattr(data, "X_train") and hasattr(data, "y_train")):
        raise InvalidTypeError(
            f"data must be a ClassificationData (its training set is split for calibration), "
            f"got {_show(data)}")


def _calibration_data(posterior: Any, data: Any, calibration: object,
                      calibration_fraction: object, seed: int
                      ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    spec = posterior.spec
    if calibration is not None:
        if data is not None:
            raise InvalidInputError(
                f"recalibrate was given both data ({_show(data)}) and calibration=(X, y); "
                "calibration is fitted on one of them: pass data (its training set is split) "
                "or calibration, not both")
        if calibration_fraction is not None:
            raise InvalidInputError(
                f"calibration_fraction={_show(calibration_fraction)} splits the training data; "
                f"it cannot be combined with explicit calibration=(X, y) data. Pass one of them")
        X, y = as_calibration_pair(calibration, spec.in_features, spec.n_classes)
        return X, y, {"calibration": "given", "n_calibration": int(X.shape[0])}
    if data is None:
        raise InvalidInputError(
            "recalibrate needs calibration data: pass data (a stratified "
            "calibration_fraction of its training set is used) or calibration=(X, y)")
    _check_data(data)
    fraction = DEFAULT_CALIBRATION_FRACTION if calibration_fraction is None \
        else _check_fraction(calibration_fraction)
    X_train = np.asarray(data.X_train)
    if X_train.ndim != 2 or X_train.shape[1] != spec.in_features:
        raise InvalidInputError(
            f"data does not match the posterior: the posterior was fit with "
            f"{spec.in_features} features, data.X_train has shape {X_train.shape}")
    y_train = as_labels(data.y_train, "data.y_train", n_classes=spec.n_classes,
                        n_rows=X_train.shape[0])
    pick = _stratified_pick(y_train, fraction, seed)
    if not pick.any():
        raise InvalidInputError(
            f"calibration_fraction={fraction} of {y_train.shape[0]} training points holds "
            f"no point; use a larger fraction or pass calibration=(X, y)")
    return (X_train[pick], y_train[pick],
            {"calibration": "training split", "calibration_fraction": fraction,
             "n_calibration": int(pick.sum())})


def _warn_if_too_little(y: np.ndarray, n_classes: int) -> None:
    """A DataWarning when the calibration labels cannot pin a map down."""
    present = np.unique(y)
    if present.size < 2:
        warnings.warn(
            f"the calibration data hold only class {int(present[0])} ({y.shape[0]} point"
            f"{'' if y.shape[0] == 1 else 's'}): a map fitted on one class only learns to make "
            "that class more certain (T -> 0), not how reliable the model is; use calibration "
            "data with every class", DataWarning, stacklevel=3)
    elif y.shape[0] < MIN_CLASS_ROWS:
        warnings.warn(
            f"the calibration data hold {y.shape[0]} points (fewer than {MIN_CLASS_ROWS}): "
            "a temperature or vector scaling fitted on so few labels is mostly noise; use "
            "more calibration data", DataWarning, stacklevel=3)


def _mean_predictive_nll(spec: MLPSpec, z: Any, y: Any, log_S: float) -> Any:
    """Mean over points of −log (1/S) Σ_s p_s(y), from transformed logits (S, n, n_out)."""
    import torch

    from uqzoo.nets.torch import log_likelihood_terms
    log_p = log_likelihood_terms(spec, z, y)                          # (S, n)
    return -(torch.logsumexp(log_p, dim=0) - log_S).mean()


def _fit_transform(spec: MLPSpec, logits: np.ndarray, y: np.ndarray, method: str
                   ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Minimise the posterior-mean NLL over the map's parameters; (scale, shift, info)."""
    import torch
    S, _, n_out = logits.shape
    # Copies: the logits or labels may be read-only arrays (a loaded posterior, a
    # caller's frozen data), which torch.as_tensor would share and warn about.
    z = torch.tensor(np.asarray(logits, dtype=np.float64))
    labels = torch.tensor(np.asarray(y, dtype=np.int64))
    log_S = math.log(S)
    if method == "temperature":
        params = [torch.zeros(1, dtype=torch.float64, requires_grad=True)]   # log T

        def transform() -> Any:
            return z * torch.exp(-params[0])
    else:
        params = [torch.ones(n_out, dtype=torch.float64, requires_grad=True),     # w
                  torch.zeros(n_out, dtype=torch.float64, requires_grad=True)]    # b

        def transform() -> Any:
            return z * params[0] + params[1]

    with torch.no_grad():
        before = float(_mean_predictive_nll(spec, z, labels, log_S))
    optimizer = torch.optim.LBFGS(params, lr=1.0, max_iter=_MAX_ITERATIONS,
                                  tolerance_grad=_GRADIENT_TOLERANCE,
                                  tolerance_change=1e-15, history_size=20,
                                  line_search_fn="strong_wolfe")

    def closure() -> Any:
        optimizer.zero_grad()
        loss = _mean_predictive_nll(spec, transform(), labels, log_S)
        loss.backward()
        return loss

    optimizer.step(closure)
    loss = closure()
    gradient = max(float(p.grad.abs().max()) for p in params)       # type: ignore[union-attr]
    iterations = int(optimizer.state[params[0]].get("n_iter", 0))
    still_falls = _still_falls(params, float(loss.detach()),
                               lambda: _mean_predictive_nll(spec, transform(), labels, log_S))
    if method == "temperature":
        temperature = float(torch.exp(params[0]).detach())
        scale, shift = np.full(n_out, 1.0 / temperature), np.zeros(n_out)
    else:
        scale = params[0].detach().numpy().copy()
        shift = params[1].detach().numpy().copy()
    info = {"nll_before": before, "nll_after": float(loss.detach()),
            "gradient_max": gradient, "iterations": iterations,
            "converged": bool(not still_falls and np.all(np.isfinite(scale))
                              and np.all(np.isfinite(shift)))}
    return scale, shift, info


def _still_falls(params: list[Any], loss: float, objective: Any) -> bool:
    """Whether a unit step along any parameter axis lowers the loss: no minimum was found.

    On perfectly separated calibration data the NLL has no minimum -- it falls
    towards 0 as T → 0 (or w → ∞) -- and its gradient vanishes there too, so
    a small gradient does not prove convergence. At a true minimum a unit
    step (a factor e in T) raises the loss by about half the curvature.
    """
    import torch
    # the two losses are each rounded to a few float64 ulps of their size
    slack = 8 * float(np.finfo(np.float64).eps) * abs(loss)
    with torch.no_grad():
        for p in params:
            for i in range(p.shape[0]):
                for step in (1.0, -1.0):
                    p[i] += step
                    moved = float(objective())
                    p[i] -= step
                    if moved < loss - slack:
                        return True
    return False


def recalibrate(posterior: Any, data: Any = None, method: str = "temperature", *,
                seed: int = 0, calibration_fraction: float | None = None,
                calibration: tuple[Any, Any] | None = None,
                num_samples: int | None = None) -> Any:
    """Fit temperature or vector scaling on held-out data and attach it to the posterior.

    Parameters
    ----------
    posterior : Posterior
        Any method's fitted posterior. A transform it already carries is
        replaced: the new one is fitted on its raw logits.
    data : ClassificationData, optional
        Its *training* set provides the calibration split (see the module
        notes: ideally the posterior was fitted without it). Not needed with
        ``calibration``.
    method : {"temperature", "vector"}
        ``"temperature"``: z / T, one T > 0 (Guo et al. 2017).
        ``"vector"``: w ⊙ z + b per logit (for two classes, whose network
        has one logit, Platt scaling of it). With K > 2, b is determined only
        up to a common constant (the softmax ignores it); the probabilities
        are unique.
    seed : int
        Chooses the calibration split and the draws used when
        ``num_samples`` is set.
    calibration_fraction : float in (0, 1), optional
        Stratified share of the training data held out for fitting; default
        ``DEFAULT_CALIBRATION_FRACTION`` (0.2). Not allowed with
        ``calibration``.
    calibration : (X, y), optional
        Explicit calibration data (arrays of shape (n, D) and (n,)), e.g.
        from :func:`calibration_split` before the fit.
    num_samples : int, optional
        Fit on a random subset of this many draws (the memory of the fit is
        S × n × n_outputs float64 numbers); all draws by default. The
        transform is still applied to every draw.

    Returns
    -------
    Posterior
        The same method, draws, config and seed, with ``logit_transform``
        set; ``logit_transform.temperature`` (temperature scaling),
        ``.scale`` / ``.shift``, and ``.info`` (how it was fitted: NLL of the
        posterior-mean predictive on the calibration data before and after,
        points used, convergence) travel with it into saved files.

    Warns
    -----
    ConvergenceWarning
        When no minimum was found: the NLL still falls a unit step away along
        some parameter, as on calibration data that the network separates
        perfectly (T → 0 keeps improving) or whose labels its predictions do
        not inform (T → ∞). ``info["converged"]`` is then False.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=300, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2, hidden=(5,))
    >>> post = uz.fit("laplace", spec, data, seed=0, progress_bar=False)
    >>> ts = uz.recalibrate(post, data, method="temperature", seed=0)
    >>> ts.method == post.method, ts.logit_transform.temperature > 0
    (True, True)

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y., Weinberger, K. Q. (2017). On calibration of
    modern neural networks. ICML.
    """
    if not (hasattr(posterior, "spec") and hasattr(posterior, "draws")
            and hasattr(posterior, "logit_transform")):
        raise InvalidTypeError(f"posterior must be a uqzoo Posterior, got {_show(posterior)}")
    method = check_choice(method, "method", RECALIBRATION_METHODS)
    seed = check_seed(seed)
    if num_samples is not None:
        num_samples = check_int(num_samples, "num_samples", minimum=1,
                                maximum=posterior.num_draws)
    X, y, info = _calibration_data(posterior, data, calibration, calibration_fraction, seed)
    _warn_if_too_little(y, posterior.spec.n_classes)
    draws = posterior._subset(num_samples, seed)
    augmentation = getattr(posterior, "input_augmentation", None)
    if augmentation is not None:       # test-time augmentation: each draw on its own inputs
        logits = augmented_draws(posterior.spec, draws, X, augmentation,
                                 draw_index=posterior._draw_index(num_samples, seed),
                                 anchor=posterior._anchor(), probabilities=False)
    else:
        logits = logit_draws(posterior.spec, draws, X, anchor=posterior._anchor())
    scale, shift, fit_info = _fit_transform(posterior.spec, logits, y, method)
    info = {"method": method, "seed": seed, **info,
            "objective": "NLL of the posterior-mean predictive",
            "num_samples": int(logits.shape[0]), **fit_info}
    if not fit_info["converged"]:
        warnings.warn(
            f"recalibrate(method={method!r}) found no minimum of the NLL after "
            f"{fit_info['iterations']} L-BFGS iterations (it still falls a step further on): "
            f"the calibration data may be separated perfectly (the NLL keeps falling as the "
            f"logits grow, T -> 0), or the predictions carry no information about their "
            f"labels (T -> infinity, uniform probabilities). Use more or other calibration "
            f"data", ConvergenceWarning, stacklevel=2)
    transform = LogitTransform(method, scale, shift, info)
    return dataclasses.replace(posterior, logit_transform=transform)
