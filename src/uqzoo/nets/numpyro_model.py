"""The Bayesian MLP as a NumPyro model: the one HMC (NUTS) and MF-VI (SVI) both use.

Prior: the spec's, on the sites of :mod:`uqzoo.nets.sites` (plain, or
hierarchical with per-layer scales, non-centred). Likelihood: the model
core's, :func:`uqzoo.nets.jax.log_likelihood_terms` of
:func:`uqzoo.nets.jax.forward_logits`, each row's term optionally multiplied
by its weight, added as one factor. Mirrors :mod:`uqzoo.nets.pyro_model`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpyro
import numpyro.distributions as dist

from uqzoo.models import Model
from uqzoo.nets import jax as jnet
from uqzoo.nets.sites import as_mlp, fan_in_factor

__all__ = ["bayesian_mlp"]


def bayesian_mlp(spec: Model, hierarchical: bool = False,
                 batch_size: int | None = None) -> Callable[..., None]:
    """The network's joint density as a NumPyro model ``model(X, y, weights=None, kl_weight=None)``.

    Parameters
    ----------
    spec : Model
        The network and its prior (``spec.prior_sd(key)``, ``spec.prior_scale``).
    hierarchical : bool
        :class:`uqzoo.MLPSpec` only: per-layer scales τ_i ~ HalfNormal(prior_scale)
        in prior_scale's place,
        written non-centred (sites ``"layer_scale.i"`` and ``"<key>_std"``);
        otherwise one site per parameter, θ ~ N(0, ``spec.prior_sd(key)``²).
    batch_size : int or None
        With B < N, each evaluation's likelihood is that of B rows drawn
        without replacement (a ``numpyro.plate`` with ``subsample_size``),
        scaled by N / B: an unbiased estimate of the full-data term. None
        (default) or B ≥ N uses every row.

    Returns
    -------
    model : callable
        ``model(X, y, weights=None, kl_weight=None)`` with X of shape (N, D),
        y int labels of shape (N,), ``weights`` each row's likelihood weight
        (N,) or None (all ones), and ``kl_weight`` β, which scales the prior
        sites' log density (under an SVI guide scaled alike, the ELBO's KL
        term) or None (β = 1, no scaling).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from numpyro.infer.util import log_density
    >>> from uqzoo.spec import MLPSpec
    >>> spec = MLPSpec(3, 2, hidden=(4,))
    >>> params = {k: jnp.zeros(s) for k, s in spec.param_shapes().items()}
    >>> X, y = jnp.zeros((5, 3)), jnp.zeros(5, jnp.int32)
    >>> float(log_density(bayesian_mlp(spec), (X, y), {}, params)[0]) < 0
    True
    """
    shapes = spec.param_shapes()

    def prior() -> dict:
        params = {}
        for key, shape in shapes.items():
            if hierarchical:
                if key.endswith(".weight"):   # weight before bias: the layer's τ
                    scale = numpyro.sample(f"layer_scale.{key.split('.')[1]}",
                                           dist.HalfNormal(as_mlp(spec).prior_scale))
                std = numpyro.sample(key + "_std",
                                     dist.Normal(0.0, 1.0).expand(shape).to_event(len(shape)))
                params[key] = scale * fan_in_factor(spec, key) * std
            else:
                params[key] = numpyro.sample(
                    key, dist.Normal(0.0, spec.prior_sd(key)).expand(shape)
                    .to_event(len(shape)))
        return params

    def log_likelihood_terms(params, X, y, weights):
        terms = jnet.log_likelihood_terms(spec, jnet.forward_logits(spec, params, X), y)
        return terms if weights is None else weights * terms

    def model(X, y, weights=None, kl_weight=None) -> None:
        scaled = (contextlib.nullcontext() if kl_weight is None
                  else numpyro.handlers.scale(scale=kl_weight))
        with scaled:
            params = prior()
        n = X.shape[0]
        if batch_size is None or batch_size >= n:
            numpyro.factor("log_likelihood", log_likelihood_terms(params, X, y, weights).sum(-1))
            return
        # The plate scales the minibatch log-likelihood by N / batch_size.
        with numpyro.plate("data", n, subsample_size=batch_size):
            Xb = numpyro.subsample(X, event_dim=1)
            yb = numpyro.subsample(y, event_dim=0)
            wb = None if weights is None else numpyro.subsample(weights, event_dim=0)
            numpyro.factor("log_likelihood", log_likelihood_terms(params, Xb, yb, wb))

    return model
