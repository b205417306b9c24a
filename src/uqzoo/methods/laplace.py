"""Laplace approximation around the MAP with the generalised Gauss–Newton curvature.

1. Train one network to the MAP with the shared trainer.
2. Curvature, in float64 with torch: the GGN G = Σ_n J_nᵀ Λ_n J_n, where
   J_n = ∂f(x_n)/∂θ is the Jacobian of the logits of the shared forward
   (:func:`uqzoo.nets.torch.forward_logits`) and Λ_n the Hessian of the
   negative log-likelihood (:func:`uqzoo.nets.torch.log_likelihood_terms`)
   in the logits -- p(1 − p) for a sigmoid, diag(p) − ppᵀ for a softmax --
   both by ``torch.func`` autodiff, exact. ``subset="all"`` takes every weight and bias
   (``hessian="full"``: the exact P × P matrix, cheap for these small
   networks; ``"diag"``: its diagonal); ``subset="last_layer"`` only the last
   layer's, with the rest fixed at the MAP.
3. Prior precision δ (scalar, or one per layer) tuned by maximising the
   Laplace approximation of the log marginal likelihood

       log Z(δ) ≈ log p(D | θ*) − ½ Σ δ_i θ*_i² + ½ Σ log δ_i − ½ log det(G + diag δ),

   at the trained θ* (the usual post-hoc practice of Immer et al. 2021 and
   laplace-torch: θ* is not re-trained for the tuned δ). δ_i is the spec's
   prior precision 1/``prior_sd``² of parameter i times a tuned factor (one,
   or one per layer); ``prior_tuning="none"`` keeps the spec's prior.
4. S draws θ ~ N(θ*, (G + diag δ)⁻¹) through a Cholesky factor of the
   precision. ``predictive="glm"`` (default) makes the posterior push them
   through the network linearised at θ* (the GLM predictive, which suits the
   GGN; Immer, Korzepa & Bauer 2021); ``"nn"`` through the network itself.

:func:`probit_mean` gives the probit approximation of the GLM predictive
mean without sampling.

References
----------
MacKay, D. J. C. (1992). A practical Bayesian framework for backpropagation
networks. Neural Computation. Immer, A., Korzepa, M. and Bauer, M. (2021).
Improving predictions of Bayesian neural nets via local linearization.
AISTATS. Daxberger, E. et al. (2021). Laplace redux -- effortless Bayesian
deep learning. NeurIPS.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from uqzoo._validation import as_float_matrix, check_choice
from uqzoo.errors import InvalidInputError
from uqzoo.methods import _config, _trainer
from uqzoo.methods._config import (
    MAX_MATRIX_ELEMENTS,
    FreeDraws,
    check_draw_memory,
    check_draws,
    check_training_sizes,
    config_dict,
)
from uqzoo.models import Model, unsupported
from uqzoo.nets import torch as tnet
from uqzoo.posterior import Posterior, check_anchored
from uqzoo.spec import MLPSpec

__all__ = [
    "HESSIANS",
    "PREDICTIVES",
    "PRIOR_TUNINGS",
    "SUBSETS",
    "Config",
    "fit",
    "probit_mean",
]

SUBSETS = ("all", "last_layer")
HESSIANS = ("full", "diag")
PRIOR_TUNINGS = ("scalar", "layerwise", "none")
PREDICTIVES = ("glm", "nn")
# Rows per chunk of the Jacobian: chunk × n_outputs × P float64 values stay in the tens of MiB.
_JACOBIAN_ELEMENTS = 2**22
# Search range of the prior precision: far wider than any sensible prior
# (scale 1e-3 to 1e3), and it keeps the log-determinant finite.
_LOG_DELTA_BOUNDS = (math.log(1e-6), math.log(1e6))


@dataclasses.dataclass(frozen=True)
class Config(FreeDraws, _trainer.TrainingConfig):
    """Hyper-parameters of the Laplace approximation.

    Parameters
    ----------
    subset : {"all", "last_layer"}
        Which parameters get a Gaussian (the rest stay at the MAP).
    hessian : {"full", "diag"}
        The GGN as a full matrix (default) or its diagonal.
    prior_tuning : {"scalar", "layerwise", "none"}
        Maximise the Laplace marginal likelihood over one prior precision
        (default), one per layer (weight and bias of a layer share it), or keep
        the spec's prior. Tuning multiplies the spec's per-parameter
        precision 1/``prior_sd``² by the factor.
    predictive : {"glm", "nn"}
        Linearised (default) or network predictive of the draws.
    num_samples : int
        S, the number of parameter draws (default 1000).
    optimizer, learning_rate, momentum, num_epochs, batch_size, validation_fraction, patience
        The MAP trainer's options (:class:`uqzoo.methods._trainer.TrainingConfig`).
    """

    subset: str = "all"
    hessian: str = "full"
    prior_tuning: str = "scalar"
    predictive: str = "glm"
    num_samples: int = 1000

    def __post_init__(self) -> None:
        super().__post_init__()
        set_ = object.__setattr__
        set_(self, "subset", check_choice(self.subset, "subset", SUBSETS))
        set_(self, "hessian", check_choice(self.hessian, "hessian", HESSIANS))
        set_(self, "prior_tuning", check_choice(self.prior_tuning, "prior_tuning",
                                                PRIOR_TUNINGS))
        set_(self, "predictive", check_choice(self.predictive, "predictive", PREDICTIVES))
        set_(self, "num_samples", check_draws(self.num_samples, "num_samples"))
        check_training_sizes(self, 1, "members")


# -- the layout of the Laplace parameters ---------------------------------------------------


def _layer_of_each_param(spec: Model) -> np.ndarray:
    """Layer index (in ``spec.layers()``) of every entry of the flattened parameters, (P,)."""
    index = {layer: i for i, layer in enumerate(spec.layers())}
    return np.concatenate([np.full(math.prod(shape), index[spec.layer_of(key)])
                           for key, shape in spec.param_shapes().items()])


def _last_layer(spec: Model) -> str:
    """The model's last layer; a model that names none is refused."""
    if spec.last_layer is None:
        raise unsupported("laplace", spec, "the model's last layer for subset='last_layer'",
                          "name it (uz.models.from_function(..., last_layer='head')) or use "
                          "subset='all'")
    return spec.last_layer


def _last_layer_keys(spec: Model) -> list[str]:
    last = _last_layer(spec)
    return [k for k in spec.param_shapes() if spec.layer_of(k) == last]


def _subset_index(spec: Model, subset: str) -> np.ndarray:
    layer = _layer_of_each_param(spec)
    if subset == "all":
        return np.arange(layer.size)
    return np.flatnonzero(layer == spec.layers().index(_last_layer(spec)))


# -- Jacobians and curvature (torch, float64, autodiff of the shared forward) ---------------

# Per-row log-likelihood: (N, n_outputs) logits and (N,) targets to (N,).
LogLikelihoodTerms = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _tensors(spec: Model, flat: np.ndarray) -> dict[str, torch.Tensor]:
    return {k: torch.as_tensor(np.array(v), dtype=torch.float64)
            for k, v in spec.unflatten(np.asarray(flat, dtype=np.float64)).items()}


def _targets(y: np.ndarray) -> torch.Tensor:
    """Labels as int64 (what ``gather`` indexes with), real targets as float64."""
    y = np.array(y)
    return torch.as_tensor(y.astype(np.int64 if y.dtype.kind in "biu" else np.float64))


def logits_and_jacobian(spec: Model, params: dict[str, torch.Tensor], X: torch.Tensor,
                        last_layer_only: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits and their Jacobian in the parameters, by autodiff of the shared forward.

    ``torch.func.jacrev`` of :func:`uqzoo.nets.torch.forward_logits` for one
    row, vmapped over the rows. With ``last_layer_only`` only the last
    layer's weight and bias are differentiated (the rest are constants).

    Parameters
    ----------
    spec : MLPSpec
    params : dict of tensors
        One parameter set.
    X : tensor of shape (N, D)
    last_layer_only : bool

    Returns
    -------
    logits : tensor of shape (N, n_outputs)
    jacobian : tensor of shape (N, n_outputs, P_sub)
        Columns in the flattened layout (``MLPSpec.flatten``), restricted to
        the last layer with ``last_layer_only``.
    """
    keys = _last_layer_keys(spec) if last_layer_only else list(spec.param_shapes())
    if not isinstance(spec, MLPSpec):
        return _model_logits_and_jacobian(spec, params, X, keys)
    varied = {k: params[k] for k in keys}
    fixed = {k: v for k, v in params.items() if k not in varied}

    def row_logits(sub: dict[str, torch.Tensor], x: torch.Tensor):
        z = tnet.forward_logits(spec, {**fixed, **sub}, x[None])[0]
        return z, z

    jac, logits = torch.func.vmap(torch.func.jacrev(row_logits, has_aux=True),
                                  in_dims=(None, 0))(varied, X)
    n = X.shape[0]
    return logits, torch.cat([jac[k].reshape(n, spec.n_outputs, -1) for k in keys], dim=-1)


def _model_logits_and_jacobian(model: Model, params: dict[str, torch.Tensor], X: torch.Tensor,
                               keys: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`logits_and_jacobian` for any model: ``jax.jacrev`` of its ``apply`` per row,
    in float64 (``jax.enable_x64`` for this call only)."""
    import jax

    with jax.enable_x64(True):
        logits, jacobian = _jacobian_program(model, tuple(keys))(
            {k: v.numpy() for k, v in params.items()}, X.numpy())
        return torch.from_numpy(np.array(logits)), torch.from_numpy(np.array(jacobian))


@functools.lru_cache(maxsize=16)
def _jacobian_program(model: Model, keys: tuple[str, ...]) -> Callable:
    import jax
    import jax.numpy as jnp

    def row(varied, fixed, x):
        z = model.apply({**fixed, **varied}, x[None])[0]
        return z, z

    def program(params, X):
        varied = {k: params[k] for k in keys}
        fixed = {k: v for k, v in params.items() if k not in varied}
        jac, logits = jax.vmap(jax.jacrev(row, has_aux=True), in_axes=(None, None, 0))(
            varied, fixed, X)
        n = X.shape[0]
        return logits, jnp.concatenate([jac[k].reshape(n, model.n_outputs, -1)
                                        for k in keys], axis=-1)

    return jax.jit(program)


def logit_hessians(log_likelihood_terms: LogLikelihoodTerms, logits: torch.Tensor,
                   y: torch.Tensor) -> torch.Tensor:
    """Λ_n = −∂² log p(y_n | f_n) / ∂f_n², the likelihood's curvature in the logits.

    Reverse over reverse (``jacrev`` twice) rather than ``torch.func.hessian``
    (forward over reverse): torch's forward mode is not thread-safe, and
    with O ≤ K outputs per row the extra reverse pass costs little.

    Parameters
    ----------
    log_likelihood_terms : callable
        ``(logits (N, O), y (N,)) -> (N,)``, e.g. the spec's
        :func:`uqzoo.nets.torch.log_likelihood_terms`.
    logits : tensor of shape (N, O)
    y : tensor of shape (N,)

    Returns
    -------
    tensor of shape (N, O, O)
        p(1 − p) for a sigmoid, diag(p) − ppᵀ for a softmax.
    """
    def negative(z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return -log_likelihood_terms(z[None], target[None])[0]

    return torch.func.vmap(torch.func.jacrev(torch.func.jacrev(negative)))(logits, y)


class _Curvature(NamedTuple):
    ggn: np.ndarray                 # (P_sub, P_sub) or (P_sub,) float64
    log_likelihood: float


def _curvature(spec: Model, flat_map: np.ndarray, X: np.ndarray, y: np.ndarray,
               subset_index: np.ndarray, hessian: str,
               log_likelihood_terms: LogLikelihoodTerms,
               row_weights: np.ndarray | None = None) -> _Curvature:
    """GGN Σ_n w_n J_nᵀ Λ_n J_n (full or diagonal) over the subset, and Σ_n w_n log p(y_n |
    θ*), in float64; w_n = 1 without row weights."""
    params = _tensors(spec, flat_map)
    last_layer_only = subset_index.size < flat_map.size
    n_sub = subset_index.size
    ggn = torch.zeros((n_sub, n_sub) if hessian == "full" else (n_sub,), dtype=torch.float64)
    log_lik = 0.0
    chunk = max(1, _JACOBIAN_ELEMENTS // (spec.n_outputs * flat_map.size))
    for start in range(0, X.shape[0], chunk):
        xc = torch.as_tensor(np.array(X[start:start + chunk]), dtype=torch.float64)
        yc = _targets(y[start:start + chunk])
        z, J = logits_and_jacobian(spec, params, xc, last_layer_only)
        terms = log_likelihood_terms(z, yc)
        lam = logit_hessians(log_likelihood_terms, z, yc)
        if row_weights is not None:
            wc = torch.as_tensor(row_weights[start:start + chunk], dtype=torch.float64)
            terms, lam = wc * terms, wc[:, None, None] * lam
        log_lik += float(terms.sum())
        weighted = lam @ J                                              # Λ_n J_n, (n, O, P_sub)
        if hessian == "full":
            # One (P_sub, n·O) × (n·O, P_sub) product per chunk.
            ggn += J.reshape(-1, n_sub).T @ weighted.reshape(-1, n_sub)
        else:
            ggn += (J * weighted).sum(dim=(0, 1))
    if hessian == "full":
        # Symmetric up to the rounding of the two product orders; Cholesky and
        # eigh read one triangle, so make both the same.
        ggn = 0.5 * (ggn + ggn.T)
    return _Curvature(ggn.numpy(), log_lik)


# -- marginal likelihood and prior tuning ----------------------------------------------------


class _Evidence:
    """log Z(δ) and its gradient in log λ, for δ_i = λ_g · base_i with λ constant per group.

    ``base`` is the spec's prior precision of each parameter, 1/``prior_sd``²
    (under the fan-in prior a layer's weights and biases differ), and λ_g the
    factor tuning multiplies it by in group (layer) g; λ = 1 is the spec's prior.
    """

    def __init__(self, curvature: _Curvature, theta: np.ndarray, groups: np.ndarray,
                 base: np.ndarray, hessian: str):
        self.ggn = curvature.ggn
        self.log_lik = curvature.log_likelihood
        self.theta_sq = theta ** 2
        self.groups = groups
        self.base = np.asarray(base, dtype=np.float64)
        self.num_groups = int(groups.max()) + 1
        self.hessian = hessian
        self._eig: tuple[np.ndarray, np.ndarray] | None = None

    def expand(self, factors: np.ndarray) -> np.ndarray:
        return np.asarray(factors, dtype=np.float64)[self.groups] * self.base

    def precision(self, factors: np.ndarray) -> np.ndarray:
        delta = self.expand(factors)
        if self.hessian == "diag":
            return self.ggn + delta
        return self.ggn + np.diag(delta)

    def logdet_and_inverse_diag(self, factors: np.ndarray) -> tuple[float, np.ndarray]:
        delta = self.expand(factors)
        if self.hessian == "diag":
            h = self.ggn + delta
            return float(np.sum(np.log(h))), 1.0 / h
        if np.all(factors == factors[0]):
            # One λ: with B = diag(base), G + λB = B½ (B^-½ G B^-½ + λI) B½, so the
            # eigenvalues of the scaled G, computed once, give every log-determinant.
            if self._eig is None:
                root = np.sqrt(self.base)
                self._eig = np.linalg.eigh(self.ggn / np.outer(root, root))
            lam, vec = self._eig
            shifted = np.maximum(lam, 0.0) + factors[0]
            logdet = float(np.sum(np.log(shifted)) + np.sum(np.log(self.base)))
            return logdet, ((vec * vec) @ (1.0 / shifted)) / self.base
        chol = np.linalg.cholesky(self.precision(factors))
        inv_chol = _triangular_inverse(chol)
        return 2.0 * float(np.sum(np.log(np.diag(chol)))), np.sum(inv_chol * inv_chol, axis=0)

    def value_and_grad(self, log_factors: np.ndarray) -> tuple[float, np.ndarray]:
        delta_groups = np.exp(log_factors)
        delta = self.expand(delta_groups)
        logdet, inv_diag = self.logdet_and_inverse_diag(delta_groups)
        value = (self.log_lik - 0.5 * np.sum(delta * self.theta_sq)
                 + 0.5 * np.sum(np.log(delta)) - 0.5 * logdet)
        per_param = -0.5 * self.theta_sq + 0.5 / delta - 0.5 * inv_diag     # ∂/∂δ_i
        grad = np.bincount(self.groups, weights=per_param * delta,
                           minlength=self.num_groups)
        return value, grad


def _triangular_inverse(lower: np.ndarray) -> np.ndarray:
    from scipy.linalg import solve_triangular
    return solve_triangular(lower, np.eye(lower.shape[0]), lower=True)


def _tune(evidence: _Evidence, start: np.ndarray, tuning: str) -> np.ndarray:
    """Per-group prior precisions maximising the evidence (L-BFGS-B on log δ)."""
    from scipy.optimize import minimize

    if tuning == "none":
        return start
    if tuning == "scalar":
        def objective(x):
            value, grad = evidence.value_and_grad(np.full(evidence.num_groups, x[0]))
            return -value, -np.array([grad.sum()])
        x0 = np.log(start[:1])
    else:
        def objective(x):
            value, grad = evidence.value_and_grad(x)
            return -value, -grad
        x0 = np.log(start)
    result = minimize(objective, x0, jac=True, method="L-BFGS-B",
                      bounds=[_LOG_DELTA_BOUNDS] * x0.size)
    x = np.broadcast_to(result.x, (evidence.num_groups,)) if tuning == "scalar" else result.x
    return np.exp(np.asarray(x, dtype=np.float64))


class LaplaceResult(NamedTuple):
    """The Gaussian of a Laplace approximation (float64).

    subset_index : (P_sub,) int     entries of the flattened parameters it covers
    precision : (P_sub, P_sub) or (P_sub,)  G + diag δ (full or diagonal)
    ggn : like precision            the curvature alone
    prior_precision : (L,)          δ of each layer's entries of widest prior: the
                                    MLP's biases, λ_l / prior_scale² (its
                                    weights': × fan_in under the fan-in prior; equal
                                    entries when tuned as a scalar)
    log_likelihood : float          log p(D | θ*)
    log_marginal_likelihood : float the Laplace evidence at the final δ
    """

    subset_index: np.ndarray
    precision: np.ndarray
    ggn: np.ndarray
    prior_precision: np.ndarray
    log_likelihood: float
    log_marginal_likelihood: float


def laplace_at(spec: Model, params: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray, *,
               subset: str = "all", hessian: str = "full", prior_tuning: str = "scalar",
               log_likelihood_terms: LogLikelihoodTerms | None = None,
               row_weights: np.ndarray | None = None) -> LaplaceResult:
    """The Laplace Gaussian around given parameters θ*, in float64.

    Parameters
    ----------
    spec : MLPSpec
    params : dict of arrays
        θ*, one parameter set (the MAP).
    X : array of shape (N, D)
    y : array of shape (N,)
        Labels in 0..K-1 (integers), or the targets ``log_likelihood_terms`` expects.
    subset, hessian, prior_tuning
        As in :class:`Config`.
    log_likelihood_terms : callable, optional
        ``(logits (N, n_outputs), y (N,)) -> (N,)`` per-row log p(y | f).
        By default the spec's Bernoulli/categorical likelihood,
        :func:`uqzoo.nets.torch.log_likelihood_terms`; tests pass a Gaussian
        one for the exact linear-Gaussian case. Its curvature in the logits
        must be positive semi-definite for the GGN to be.
    row_weights : array of shape (N,), optional
        Each row's likelihood weight (class weights): the likelihood, its
        GGN and the evidence are of Π_n p(y_n | x_n, θ)^w_n.

    Returns
    -------
    LaplaceResult
    """
    flat = spec.flatten({k: np.asarray(v, dtype=np.float64) for k, v in params.items()})
    index = _subset_index(spec, subset)
    groups = _layer_of_each_param(spec)[index]
    groups = np.unique(groups, return_inverse=True)[1]
    if log_likelihood_terms is None:
        def log_likelihood_terms(logits, labels):
            return tnet.log_likelihood_terms(spec, logits, labels)
    curvature = _curvature(spec, flat, X, y, index, hessian, log_likelihood_terms, row_weights)
    base = spec.flatten({key: np.full(shape, spec.prior_sd(key) ** -2.0)
                         for key, shape in spec.param_shapes().items()})[index]
    evidence = _Evidence(curvature, flat[index], groups, base, hessian)
    factors = _tune(evidence, np.ones(evidence.num_groups), prior_tuning)
    log_evidence, _ = evidence.value_and_grad(np.log(factors))
    # Reported per layer as the precision of the layer's entries of widest prior
    # (the MLP's biases: λ_l / prior_scale²); NaN for layers outside the subset.
    layers = spec.layers()
    widest = {layer: max(spec.prior_sd(k) for k in spec.param_shapes()
                         if spec.layer_of(k) == layer) for layer in layers}
    per_layer = np.full(len(layers), np.nan)
    in_subset = np.unique(_layer_of_each_param(spec)[index])
    per_layer[in_subset] = factors / np.array([widest[layers[i]] for i in in_subset]) ** 2
    return LaplaceResult(subset_index=index, precision=evidence.precision(factors),
                         ggn=curvature.ggn, prior_precision=per_layer,
                         log_likelihood=curvature.log_likelihood,
                         log_marginal_likelihood=float(log_evidence))


def _sample(result: LaplaceResult, center: np.ndarray, num: int,
            rng: np.random.Generator) -> np.ndarray:
    """θ* + (precision)^{-1/2} z over the subset, (num, P) float64."""
    from scipy.linalg import solve_triangular

    z = rng.standard_normal((result.subset_index.size, num))
    if result.precision.ndim == 1:
        noise = z / np.sqrt(result.precision)[:, None]
    else:
        # precision = L Lᵀ, so L⁻ᵀ z has covariance (L Lᵀ)⁻¹.
        chol = np.linalg.cholesky(result.precision)
        noise = solve_triangular(chol.T, z, lower=False)
    draws = np.repeat(center[None], num, axis=0)
    draws[:, result.subset_index] += noise.T
    return draws


# -- the method ---------------------------------------------------------------------------


def fit(spec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Train to the MAP, build the GGN Laplace Gaussian, tune the prior, draw S samples.

    ``seed`` seeds the initialisation and the draws. The curvature and evidence use the
    training rows the MAP was trained on (all of ``X_train`` unless a validation split is
    held out). The other arguments are the :class:`uqzoo.methods.Method` protocol's; the fit
    uses ``data``'s training split.

    Returns
    -------
    Posterior
        S = ``num_samples`` draws, ``anchor`` = the MAP, ``predictive`` as
        configured. Diagnostics: ``prior_precision`` (L,) per layer (NaN for
        layers outside the subset), ``log_marginal_likelihood``,
        ``log_likelihood``, ``posterior_precision`` ((P_sub, P_sub) or (P_sub,)),
        ``subset_index`` (P_sub,), the MAP's ``loss`` trace and timings.

    Examples
    --------
    The GGN Laplace Gaussian around the MAP, read through the GLM predictive:

    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
    >>> post = uz.fit("laplace", spec, data, seed=0, num_samples=100, num_epochs=300,
    ...               progress_bar=False)
    >>> post.predict_proba_draws(data.X_test).shape, post.predictive
    ((100, 50, 2), 'glm')
    """
    check_draw_memory(spec, config.num_samples, "num_samples")
    if config.hessian == "full":
        n_sub = _subset_index(spec, config.subset).size
        if n_sub * n_sub > MAX_MATRIX_ELEMENTS:
            raise InvalidInputError(
                f"hessian='full' with subset={config.subset!r} builds a {n_sub:,} × {n_sub:,} "
                f"float64 precision matrix ({n_sub * n_sub * 8 / 2**30:.1f} GiB); at most "
                f"{MAX_MATRIX_ELEMENTS:,} entries (2 GiB) are allowed: use hessian='diag' or "
                f"subset='last_layer'")
    # The MAP is trained from ``seed`` itself, exactly as ``uz.fit("map", ..., seed)``
    # trains it: in a comparison the laplace row is the Laplace approximation around the
    # map row's network. MAP fits of one scene differ far more between seeds than a
    # Laplace predictive differs from its MAP (on Indian Pines, Corn-notill, blocked
    # split: detection AUROC 0.59-0.90 over three seeds, the GLM predictive within 0.02
    # of its own MAP's), so a MAP of another seed made laplace look worse or better than
    # map for no reason of its own. The draws have their own stream, apart from the four
    # the trainer spawns from ``seed``.
    ss_draws = np.random.SeedSequence([seed, 1])
    result, info = _trainer.fit_members(spec, data, config, seed=seed, num_members=1,
                                        progress_bar=progress_bar, desc="laplace (MAP)")
    map_params = {k: v[0] for k, v in result.params.items()}
    rows = info["train_index"]
    curvature_start = time.perf_counter()
    gaussian = laplace_at(spec, map_params, data.X_train[rows], data.y_train[rows],
                          subset=config.subset, hessian=config.hessian,
                          prior_tuning=config.prior_tuning,
                          row_weights=_config.row_weights(
                              config.class_weight, data.y_train[rows], spec.n_classes))
    center = spec.flatten({k: v.astype(np.float64) for k, v in map_params.items()})
    samples = _sample(gaussian, center, config.num_samples, np.random.default_rng(ss_draws))
    draws = spec.unflatten(samples.astype(np.float32))
    diagnostics = _trainer.training_diagnostics(result, config)
    convergence = _trainer.convergence(result, config, what="network")
    diagnostics.update(
        prior_precision=gaussian.prior_precision,
        log_marginal_likelihood=gaussian.log_marginal_likelihood,
        log_likelihood=gaussian.log_likelihood,
        posterior_precision=gaussian.precision,
        subset_index=gaussian.subset_index.astype(np.int64),
        seconds_curvature=time.perf_counter() - curvature_start)
    return Posterior(spec=spec, method="laplace", config=config_dict(config), seed=seed,
                     draws=draws, diagnostics=diagnostics, predictive=config.predictive,
                     anchor=map_params, converged=convergence.converged,
                     warnings=tuple(f"laplace: {m}" for m in convergence.messages))


def probit_mean(posterior: Posterior, X: object) -> np.ndarray:
    """Probit approximation of the GLM predictive mean, without sampling.

    For two classes, with the linearised logit f(x) ~ N(μ(x), v(x)),
    μ = f(x, θ*) and v = J(x) Σ J(x)ᵀ (Σ the Laplace covariance):

        E[σ(f)] ≈ σ( μ / √(1 + π v / 8) )

    (MacKay 1992; exact for the probit link, within 0.02 of the logistic
    integral everywhere). For K > 2 classes each logit is scaled by its own
    variance, σ_k = softmax(μ_k / √(1 + π v_kk / 8)) -- the generalisation used
    by laplace-torch's ``link_approx="probit"``, an approximation that ignores
    the covariance between logits.

    Parameters
    ----------
    posterior : Posterior
        A ``laplace`` posterior (either predictive; the Gaussian is the same).
    X : array of shape (N, D)

    Returns
    -------
    ndarray of shape (N, K), float64
        Approximate predictive class probabilities.

    Examples
    --------
    The probit approximation of the predictive mean, without drawing:

    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
    >>> post = uz.fit("laplace", spec, data, seed=0, num_samples=10, num_epochs=300,
    ...               progress_bar=False)
    >>> p = probit_mean(post, data.X_test)
    >>> p.shape, bool(abs(p.sum(axis=1) - 1.0).max() < 1e-12)
    ((50, 2), True)
    """
    from scipy.linalg import solve_triangular

    anchor = check_anchored(posterior, "laplace", "probit_mean needs the MAP it was built around")
    spec = posterior.spec
    X = as_float_matrix(X, "X", n_features=spec.in_features)
    precision = np.asarray(posterior.diagnostics["posterior_precision"], dtype=np.float64)
    index = np.asarray(posterior.diagnostics["subset_index"], dtype=np.int64)
    flat = spec.flatten({k: v.astype(np.float64) for k, v in anchor.items()})
    if index.size != (precision.shape[0]):
        raise InvalidInputError("posterior_precision and subset_index disagree in size")
    params = _tensors(spec, flat)
    chol = None if precision.ndim == 1 else np.linalg.cholesky(precision)
    out = np.empty((X.shape[0], spec.n_classes))
    chunk = max(1, _JACOBIAN_ELEMENTS // (spec.n_outputs * flat.size))
    for start in range(0, X.shape[0], chunk):
        xc = torch.as_tensor(np.array(X[start:start + chunk]), dtype=torch.float64)
        z, jacobian = logits_and_jacobian(spec, params, xc, index.size < flat.size)
        J = jacobian.numpy()                                             # (n, O, P_sub)
        if chol is None:
            var = np.einsum("nop,p->no", J * J, 1.0 / precision)
        else:
            n, n_out, _ = J.shape
            # v = J P⁻¹ Jᵀ = ‖L⁻¹ Jᵀ‖² per output, P = L Lᵀ.
            half = solve_triangular(chol, J.reshape(n * n_out, -1).T, lower=True)
            var = np.sum(half * half, axis=0).reshape(n, n_out)
        transform = posterior.logit_transform
        if transform is not None:
            # a recalibrated posterior: its linearised logit w f + b ~ N(w μ + b, w² v)
            z = (z * torch.tensor(transform.scale.tolist(), dtype=z.dtype)
                 + torch.tensor(transform.shift.tolist(), dtype=z.dtype))
            var = var * transform.scale**2
        scaled = z / torch.as_tensor(np.sqrt(1.0 + math.pi * var / 8.0))
        out[start:start + chunk] = tnet.logits_to_proba(spec, scaled).numpy()
    return out
