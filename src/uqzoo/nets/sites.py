"""The Bayesian network's latent sites: names, shapes, and the map to the parameter layout.

The NumPyro model (:mod:`uqzoo.nets.numpyro_model`) and the Pyro model
(:mod:`uqzoo.nets.pyro_model`) sample the same sites, defined here once,
in plain numpy:

- plain prior: one site per parameter, named as in the layout
  (``"layers.i.weight"``, ``"layers.i.bias"``), θ ~ N(0, ``spec.prior_sd(key)``²);
- ``hierarchical=True`` (:class:`uqzoo.MLPSpec` only): per layer i a scale ``"layer_scale.i"``,
  τ_i ~ HalfNormal(``spec.prior_scale``), and per parameter a standard normal
  ``"<key>_std"``, z ~ N(0, 1), with θ = τ_i · ``fan_in_factor(spec, key)`` · z
  -- the non-centred form (the centred one gives NUTS a funnel), in which
  τ_i takes ``prior_scale``'s place in layer i.

Both PPLs map HalfNormal's support (the positive reals) to the real line
with exp, so on the unconstrained scale τ_i = exp(site value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from uqzoo.models import Model
from uqzoo.spec import MLPSpec

__all__ = ["as_mlp", "fan_in_factor", "first_layer_site", "params_to_sites", "site_shapes",
           "sites_to_params"]


def as_mlp(spec: Model) -> MLPSpec:
    """The MLP the hierarchical sites are defined for (HMC refuses other models first)."""
    if not isinstance(spec, MLPSpec):
        raise TypeError(f"hierarchical sites need an MLPSpec, got {type(spec).__name__}")
    return spec


def fan_in_factor(spec: Model, key: str) -> float:
    """``prior_sd(key) / prior_scale``: 1/√fan_in for weights under the fan-in prior, else 1.

    The hierarchical model's layer scale τ_i plays the part of ``prior_scale``.
    """
    return spec.prior_sd(key) / as_mlp(spec).prior_scale


def site_shapes(spec: Model, hierarchical: bool) -> dict[str, tuple[int, ...]]:
    """Latent sites and their shapes, in the models' sampling order.

    All are real-valued on the unconstrained scale (τ_i's site is log τ_i).
    """
    if not hierarchical:              # one site per parameter: any model's layout
        return spec.param_shapes()
    out: dict[str, tuple[int, ...]] = {}
    for key, shape in spec.param_shapes().items():
        if key.endswith(".weight"):
            out[f"layer_scale.{key.split('.')[1]}"] = ()
        out[key + "_std"] = shape
    return out


def first_layer_site(hierarchical: bool) -> str:
    """The site holding the first layer's weights (in units of its prior sd if hierarchical)."""
    return "layers.0.weight" + ("_std" if hierarchical else "")


def sites_to_params(spec: Model, hierarchical: bool, z: Mapping[str, np.ndarray]
                    ) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Unconstrained site values (any leading axes, kept) to the layout, and the scales τ.

    Returns
    -------
    params : dict of ndarray
        The layout's parameters, shape (*B, *param_shape); float64 if hierarchical.
    scales : ndarray of shape (*B, n_layers), float64, or None when not hierarchical
    """
    if not hierarchical:
        return {k: np.asarray(z[k]) for k in spec.param_shapes()}, None
    scales = np.stack([np.exp(np.asarray(z[f"layer_scale.{i}"], dtype=np.float64))
                       for i in range(as_mlp(spec).n_layers)], axis=-1)
    params = {}
    for key, shape in spec.param_shapes().items():
        layer = int(key.split(".")[1])
        tau = scales[..., layer].reshape(scales.shape[:-1] + (1,) * len(shape))
        params[key] = tau * fan_in_factor(spec, key) * np.asarray(z[key + "_std"],
                                                                  dtype=np.float64)
    return params, scales


def params_to_sites(spec: Model, hierarchical: bool, params: Mapping[str, np.ndarray],
                    dtype) -> dict[str, np.ndarray]:
    """One parameter set to the sites' unconstrained values (τ_i = prior_scale if hierarchical)."""
    if not hierarchical:
        return {k: np.asarray(v, dtype=dtype) for k, v in params.items()}
    out: dict[str, np.ndarray] = {}
    for key in spec.param_shapes():
        if key.endswith(".weight"):
            out[f"layer_scale.{key.split('.')[1]}"] = np.asarray(math.log(as_mlp(spec).prior_scale),
                                                                 dtype=dtype)
        # θ = τ · (prior_sd / prior_scale) · z with τ = prior_scale: z = θ / prior_sd
        out[key + "_std"] = (np.asarray(params[key], np.float64)
                             / spec.prior_sd(key)).astype(dtype)
    return out
