"""The network, its likelihood and its prior in JAX: the one definition every JAX
method uses (HMC, MF-VI, the MAP trainer, SG-MCMC, Laplace).

Parameters are a model's layout (a dict keyed by leaf path), optionally with
leading axes B -- draws, chains or ensemble members -- so one function serves
a single network and a stack of them. Any :class:`uqzoo.Model` runs through
its own ``apply``, vmapped over B; :class:`uqzoo.MLPSpec` has the forward
written out (one product for the first layer of a whole stack), which mirrors
:mod:`uqzoo.nets.torch` to float32 precision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from uqzoo.models import Model
from uqzoo.spec import MLPSpec

if TYPE_CHECKING:
    from uqzoo.transform import LogitTransform

__all__ = ["forward_logits", "log_likelihood", "log_likelihood_terms", "log_prior",
           "logits_to_proba", "predict_proba"]

def forward_logits(spec: Model, params: Mapping[str, jax.Array], X: jax.Array, *,
                   hidden_masks: Sequence[jax.Array] | None = None) -> jax.Array:
    """Logits of the network.

    Parameters
    ----------
    spec : Model
    params : dict of arrays
        One parameter set, or a stack with leading axes B.
    X : array of shape (N, D), or (*B, N, D) with rows of each stacked network's own
    hidden_masks : sequence of arrays, optional
        One multiplier per hidden layer, broadcastable to (*B, N, h_i), applied
        to that layer's output (dropout: 0 or 1/(1 - p)); only for a model
        that declares ``dropout_masks`` (the MLP).

    Returns
    -------
    array of shape (*B, N, n_outputs)

    Notes
    -----
    The MLP's forward is :meth:`uqzoo.MLPSpec.apply`, written for stacks: with
    a shared X (N, D), the first layer of every stacked network is one
    (N, D) × (D, B·h) product.
    """
    if not isinstance(spec, MLPSpec):
        if hidden_masks is not None:
            raise TypeError(f"{type(spec).__name__} takes no dropout masks")
        return _vmapped_apply(spec, params, X)
    return spec.apply(params, X, hidden_masks=hidden_masks)


def _vmapped_apply(model: Model, params: Mapping[str, jax.Array], X: jax.Array) -> jax.Array:
    """``model.apply`` over the parameters' leading axes B (and X's, when it has them)."""
    shapes = model.param_shapes()
    key = next(iter(shapes))
    batch = params[key].ndim - len(shapes[key])
    if batch == 0:
        return model.apply(params, X)
    x_axis = 0 if X.ndim > 2 else None
    inner = lambda p, x: _vmapped_apply(model, p, x)  # noqa: E731 -- one axis per level
    return jax.vmap(inner, in_axes=(0, x_axis))(params, X)


def logits_to_proba(spec: Model, logits: jax.Array,
                    transform: LogitTransform | None = None) -> jax.Array:
    """(..., N, n_outputs) logits to (..., N, K) probabilities.

    ``transform``: a posterior's recalibration map z ↦ scale · z + shift
    (:class:`uqzoo.transform.LogitTransform`), applied to the logits first.
    """
    if transform is not None:
        logits = (logits * jnp.asarray(transform.scale, dtype=logits.dtype)
                  + jnp.asarray(transform.shift, dtype=logits.dtype))
    if spec.n_classes == 2:
        return jnp.concatenate([jax.nn.sigmoid(-logits), jax.nn.sigmoid(logits)], axis=-1)
    return jax.nn.softmax(logits, axis=-1)


def predict_proba(spec: Model, params: Mapping[str, jax.Array], X: jax.Array) -> jax.Array:
    """(*B, N, K) class probabilities."""
    return logits_to_proba(spec, forward_logits(spec, params, X))


def log_likelihood_terms(spec: Model, logits: jax.Array, y: jax.Array) -> jax.Array:
    """log p(y_i | x_i, θ) of each row: Bernoulli (one logit) or categorical.

    Parameters
    ----------
    logits : array of shape (*B, N, n_outputs)
    y : int array of shape (N,) or (*B, N), labels in 0..K-1

    Returns
    -------
    array of shape (*B, N)
    """
    if spec.n_classes == 2:
        z = logits[..., 0]
        # log σ(z) for y = 1 and log σ(-z) for y = 0, written stably.
        return -jax.nn.softplus(jnp.where(y == 1, -z, z))
    logp = jax.nn.log_softmax(logits, axis=-1)
    # Labels broadcast over the parameters' leading axes (draws, chains, members).
    index = jnp.broadcast_to(y[..., None], (*logp.shape[:-1], 1))
    return jnp.take_along_axis(logp, index, axis=-1)[..., 0]


def log_likelihood(spec: Model, params: Mapping[str, jax.Array], X: jax.Array,
                   y: jax.Array) -> jax.Array:
    """Summed log-likelihood of labels y (N,) in 0..K-1, shape (*B,)."""
    return jnp.sum(log_likelihood_terms(spec, forward_logits(spec, params, X), y), axis=-1)


def log_prior(spec: Model, params: Mapping[str, jax.Array]) -> jax.Array:
    """log density of the spec's prior, N(0, sd²) with sd = ``spec.prior_sd(key)``.

    Returns an array of shape (*B,) for parameters with leading axes B. The
    MAP objective's weight decay and HMC's potential come from this one
    function; MF-VI's and Laplace's priors use the same ``spec.prior_sds()``.
    """
    total = jnp.zeros(())
    for key, shape in spec.param_shapes().items():
        scale = spec.prior_sd(key)
        value = params[key]
        axes = tuple(range(value.ndim - len(shape), value.ndim))
        total = total + (-0.5 * jnp.sum(jnp.square(value / scale), axis=axes)
                         - math.prod(shape) * (math.log(scale) + 0.5 * math.log(2 * math.pi)))
    return total
