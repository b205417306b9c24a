"""Convergence diagnostics shared by the methods, and the one type their checks return.

Every method's convergence check returns a :class:`Convergence` (the verdict
and, when it is not converged, why): the MAP trainer's plateau or
early-stopping rule (:func:`uqzoo.methods._trainer.convergence`), SWAG's
stationarity check (:func:`uqzoo.methods.swag.stationarity`), MF-VI's ELBO
check and HMC's divergence and R-hat gate. The statistics they are built on
live here too: :func:`window_change` (the windowed decrease of a loss trace)
and :func:`rhat_ess`.

R-hat and ESS come from ArviZ (rank-normalised split R-hat, bulk and tail
ESS; Vehtari et al. 2021). They are computed on quantities that mean the same
thing in every chain: per-layer weight norms and the posterior predictive
probability of a few fixed points. Per-weight R-hat of a neural network is
noise -- permuting hidden units or flipping the sign of a tanh unit's weights
leaves the function unchanged, so different chains legitimately explore
different, equivalent modes and per-weight R-hat is large even for a
perfectly mixed function-space posterior.

References
----------
Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of
MCMC. Bayesian Analysis 16(2).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from uqzoo.models import Model

__all__ = [
    "RHAT_THRESHOLD",
    "Convergence",
    "WindowChange",
    "layer_norms",
    "predictive_points",
    "rhat_ess",
    "window_change",
]

# Vehtari et al. (2021) recommend R-hat < 1.01 (the old 1.1 is too lax).
RHAT_THRESHOLD = 1.01


class Convergence(NamedTuple):
    """What a convergence check found: the verdict, and why it is not converged.

    Attributes
    ----------
    converged : bool or None
        True when the check passed; False when it failed; None when there
        was nothing to check (a MAP trainer config without a stopping rule:
        ``convergence_window=None``, or SWAG's :class:`OptimizerConfig`, which
        judges its own trajectory). A :class:`~uqzoo.Posterior` records it as
        ``converged``.
    messages : tuple of str
        One message per reason it did not converge, each naming the numbers
        and the option to change (empty when it converged).
    """

    converged: bool | None
    messages: tuple[str, ...]


class WindowChange(NamedTuple):
    """:func:`window_change`'s result: has a loss trace stopped decreasing?

    Attributes
    ----------
    steady : bool
        The decrease is within the tolerance (False when it could not be
        computed: too short a trace, or a non-finite loss in its last 2W steps).
    relative_change : float
        (mean of the W steps before the last W − mean of the last W) / |last
        mean|: positive while the loss still falls. NaN when not computed.
    tolerance : float
        The decrease allowed, relative to |last mean|: max(rtol, 3 standard
        errors of the difference of the two means / |last mean|). NaN when
        not computed.
    """

    steady: bool
    relative_change: float
    tolerance: float


def _arviz():
    # ArviZ 0.2x announces its 1.0 refactor with a FutureWarning at import;
    # that notice is not ours to act on, and tests run with warnings as errors.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


def rhat_ess(values: np.ndarray) -> dict[str, np.ndarray]:
    """Split R-hat, bulk ESS and tail ESS of each quantity, via ArviZ.

    Parameters
    ----------
    values : ndarray of shape (chains, draws, *q)
        Draws of the quantities to diagnose, chain by chain. A single chain
        is cut into two halves first (ArviZ needs two chains).

    Returns
    -------
    dict with ``"rhat"``, ``"ess_bulk"``, ``"ess_tail"``, each float64 of shape q.
        NaN where a quantity is constant (R-hat is undefined) or there are
        fewer than 4 draws per chain.
    """
    values = np.asarray(values, dtype=np.float64)
    rest = values.shape[2:]
    nan = np.full(rest, np.nan)
    if values.shape[0] == 1 and values.shape[1] >= 8:
        # ArviZ needs two chains; a lone chain is cut into halves, which ArviZ
        # splits again -- split R-hat over its quarters, the one-chain analogue.
        half = values.shape[1] // 2
        values = values[0, :2 * half].reshape((2, half, *rest))
    if values.shape[0] < 2 or values.shape[1] < 4:
        # ArviZ would only log a "shape validation" notice and return NaN.
        return {"rhat": nan, "ess_bulk": nan.copy(), "ess_tail": nan.copy()}
    # Diagnose only quantities that are finite in every draw: ArviZ logs a
    # notice for NaN input, and a non-finite draw has no R-hat anyway. Nothing
    # here touches ArviZ's logger, which belongs to the caller's process.
    flat = values.reshape((*values.shape[:2], -1))
    finite = np.all(np.isfinite(flat), axis=(0, 1))
    out = {k: np.full(flat.shape[2], np.nan) for k in ("rhat", "ess_bulk", "ess_tail")}
    if finite.any():
        az = _arviz()
        dataset = az.convert_to_dataset({"q": flat[:, :, finite]}, dims={"q": ["q0"]})
        with warnings.catch_warnings():
            # Constant quantities (a saturated probability) make ArviZ divide
            # by zero; they come back as NaN, which is what we report.
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", UserWarning)
            out["rhat"][finite] = az.rhat(dataset)["q"].values
            out["ess_bulk"][finite] = az.ess(dataset, method="bulk")["q"].values
            out["ess_tail"][finite] = az.ess(dataset, method="tail")["q"].values
    return {k: v.reshape(rest) for k, v in out.items()}


def layer_norms(spec: Model, draws: Mapping[str, np.ndarray]) -> np.ndarray:
    """Frobenius norm of each layer's parameters together (``model.layers()``), per draw.

    For the MLP, a layer's weights and bias: invariant under permutations and
    sign flips of hidden units, so comparable across chains. Returns float64
    of shape (S, n_layers).
    """
    squares: dict[str, np.ndarray] = {}
    for key in spec.param_shapes():
        value = np.asarray(draws[key], dtype=np.float64)
        sq = (value ** 2).reshape(value.shape[0], -1).sum(axis=1)
        layer = spec.layer_of(key)
        squares[layer] = squares.get(layer, 0.0) + sq
    return np.sqrt(np.stack([squares[layer] for layer in spec.layers()], axis=-1))


def predictive_points(seed: int, n_train: int, num_points: int) -> np.ndarray:
    """Indices of the training points whose predictive probability is diagnosed.

    Chosen by ``seed`` so a run's diagnostics are reproducible; sorted int64.
    """
    rng = np.random.default_rng([seed, 0x5EED])
    k = min(num_points, n_train)
    return np.sort(rng.choice(n_train, size=k, replace=False)).astype(np.int64)


def window_change(losses: np.ndarray, window: int, rtol: float) -> WindowChange:
    """Whether a loss trace (a negative ELBO, a training loss) has stopped decreasing.

    Compares the mean loss over the last ``window`` steps with the mean over
    the ``window`` steps before. The trace is steady when the decrease is
    within what noise explains (3 standard errors of the difference of the
    two window means, computed from the window variances as if steps were
    independent) or below ``rtol`` of the loss's magnitude. MF-VI's ELBO
    check, SWAG's stationarity check and (in JAX, inside its compiled loop)
    the MAP trainer's plateau rule apply it.

    Parameters
    ----------
    losses : ndarray of shape (T,)
    window : int
        W, steps per window; the trace needs at least 2W.
    rtol : float

    Returns
    -------
    WindowChange

    Examples
    --------
    >>> import numpy as np
    >>> window_change(np.ones(40), window=10, rtol=1e-3).steady
    True
    >>> window_change(np.linspace(2.0, 1.0, 40), window=10, rtol=1e-3).steady
    False
    """
    losses = np.asarray(losses, dtype=np.float64)
    if losses.size < 2 * window or not np.all(np.isfinite(losses[-2 * window:])):
        return WindowChange(False, float("nan"), float("nan"))
    previous, last = losses[-2 * window:-window], losses[-window:]
    scale = max(abs(last.mean()), 1e-12)
    decrease = previous.mean() - last.mean()
    noise = 3.0 * np.sqrt(previous.var(ddof=1) / window + last.var(ddof=1) / window)
    tolerance = max(rtol * scale, noise)
    return WindowChange(bool(decrease <= tolerance), float(decrease / scale),
                        float(tolerance / scale))
