"""The Bayesian MLP as a Pyro model: the one HMC and MF-VI's Pyro backends both use.

The same sites, prior and likelihood as :mod:`uqzoo.nets.numpyro_model`,
with the model core's torch forward and likelihood
(:func:`uqzoo.nets.torch.log_likelihood_terms` of
:func:`uqzoo.nets.torch.forward_logits`). Needs pyro-ppl (``uqzoo[pyro]``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pyro
import pyro.distributions as pdist
import torch

from uqzoo.nets import torch as tnet
from uqzoo.nets.sites import fan_in_factor
from uqzoo.spec import MLPSpec

__all__ = ["bayesian_mlp"]


def bayesian_mlp(spec: MLPSpec, hierarchical: bool = False, batch_size: int | None = None,
                 dtype: torch.dtype = torch.float32) -> Callable[..., None]:
    """The network's joint density as a Pyro model ``model(X, y, weights=None, kl_weight=None)``.

    Parameters
    ----------
    spec : MLPSpec
    hierarchical : bool
        Per-layer scales τ_i ~ HalfNormal(prior_scale), non-centred (see
        :mod:`uqzoo.nets.sites`); otherwise θ ~ N(0, ``spec.prior_sd(key)``²).
    batch_size : int or None
        With B < N, the likelihood of B rows drawn without replacement
        (``pyro.plate`` with ``subsample_size``), scaled by N / B.
    dtype : torch.dtype
        Of the prior's parameters; the data must match it.

    Returns
    -------
    model : callable
        ``model(X, y, weights=None, kl_weight=None)``: X (N, D), y int64
        labels (N,), ``weights`` each row's likelihood weight (N,) or None,
        ``kl_weight`` β scaling the prior sites' log density or None (β = 1),
        as in :func:`uqzoo.nets.numpyro_model.bayesian_mlp`.

    Examples
    --------
    >>> import torch, pyro
    >>> from uqzoo.spec import MLPSpec
    >>> spec = MLPSpec(3, 2, hidden=(4,))
    >>> zeros = {k: torch.zeros(s) for k, s in spec.param_shapes().items()}
    >>> model = pyro.poutine.condition(bayesian_mlp(spec), data=zeros)
    >>> trace = pyro.poutine.trace(model).get_trace(torch.zeros(5, 3), torch.zeros(5).long())
    >>> float(trace.log_prob_sum()) < 0
    True
    """
    shapes = spec.param_shapes()
    zero = torch.zeros((), dtype=dtype)

    def prior() -> dict:
        params = {}
        for key, shape in shapes.items():
            if hierarchical:
                if key.endswith(".weight"):   # weight before bias: the layer's τ
                    scale = pyro.sample(f"layer_scale.{key.split('.')[1]}",
                                        pdist.HalfNormal(torch.tensor(spec.prior_scale,
                                                                      dtype=dtype)))
                std = pyro.sample(key + "_std", pdist.Normal(zero, 1.0).expand(shape)
                                  .to_event(len(shape)))
                params[key] = scale * fan_in_factor(spec, key) * std
            else:
                sd = torch.tensor(spec.prior_sd(key), dtype=dtype)
                params[key] = pyro.sample(key, pdist.Normal(zero, sd).expand(shape)
                                          .to_event(len(shape)))
        return params

    def log_likelihood_terms(params, X, y, weights):
        terms = tnet.log_likelihood_terms(spec, tnet.forward_logits(spec, params, X), y)
        return terms if weights is None else weights * terms

    def model(X, y, weights=None, kl_weight=None) -> None:
        scaled = (contextlib.nullcontext() if kl_weight is None
                  else pyro.poutine.scale(scale=kl_weight))
        with scaled:
            params = prior()
        n = X.shape[0]
        if batch_size is None or batch_size >= n:
            pyro.factor("log_likelihood", log_likelihood_terms(params, X, y, weights).sum())
            return
        # The plate scales the minibatch log-likelihood by N / batch_size.
        with pyro.plate("data", n, subsample_size=batch_size) as idx:
            wb = None if weights is None else weights[idx]
            pyro.factor("log_likelihood", log_likelihood_terms(params, X[idx], y[idx], wb))

    return model
