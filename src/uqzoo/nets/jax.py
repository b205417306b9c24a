"""JAX forward over the shared parameter layout (a pytree of arrays).

Mirrors :mod:`uqzoo.nets.torch`; the two agree to float32 precision.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp

from uqzoo.spec import MLPSpec

__all__ = ["forward_logits", "log_likelihood", "logits_to_proba", "predict_proba"]

_ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu, "sigmoid": jax.nn.sigmoid}


def forward_logits(spec: MLPSpec, params: Mapping[str, jax.Array], X: jax.Array) -> jax.Array:
    """Logits of shape (*B, N, n_outputs) for params with leading axes B (maybe none)."""
    act = _ACTIVATIONS[spec.activation]
    h = X
    last = spec.n_layers - 1
    for i in range(spec.n_layers):
        weight = params[f"layers.{i}.weight"]
        bias = params[f"layers.{i}.bias"]
        h = jnp.matmul(h, jnp.swapaxes(weight, -1, -2)) + bias[..., None, :]
        if i < last:
            h = act(h)
    return h


def logits_to_proba(spec: MLPSpec, logits: jax.Array) -> jax.Array:
    """(..., N, n_outputs) logits to (..., N, K) probabilities."""
    if spec.n_classes == 2:
        return jnp.concatenate([jax.nn.sigmoid(-logits), jax.nn.sigmoid(logits)], axis=-1)
    return jax.nn.softmax(logits, axis=-1)


def predict_proba(spec: MLPSpec, params: Mapping[str, jax.Array], X: jax.Array) -> jax.Array:
    return logits_to_proba(spec, forward_logits(spec, params, X))


def log_likelihood(spec: MLPSpec, params: Mapping[str, jax.Array], X: jax.Array,
                   y: jax.Array) -> jax.Array:
    """Summed Bernoulli/categorical log-likelihood of labels y (N,) in 0..K-1."""
    logits = forward_logits(spec, params, X)
    if spec.n_classes == 2:
        z = logits[..., 0]
        # log σ(z) for y=1 and log σ(-z) for y=0, written stably.
        return jnp.sum(-jax.nn.softplus(jnp.where(y == 1, -z, z)), axis=-1)
    logp = jax.nn.log_softmax(logits, axis=-1)
    # Labels broadcast over the parameters' leading axes (draws, chains).
    index = jnp.broadcast_to(y[..., None], (*logp.shape[:-1], 1))
    return jnp.sum(jnp.take_along_axis(logp, index, axis=-1)[..., 0], axis=-1)
