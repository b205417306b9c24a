"""The Bayesian MLP as a NumPyro model and as a Pyro model (HMC's and MF-VI's one model each).

Each model's log joint is checked against an independent float64 reference
(numpy forward, scipy densities): the plain prior with and without row
weights, the hierarchical prior on its non-centred sites, the KL weight β on
the prior, and the N / B scaling of a subsampled likelihood. Where the model
runs in float32, the tolerance is the worst-case float32 rounding bound of
``_float32_reference``; in float64 it is the same bound with float64's unit
roundoff.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

import uqzoo as uz
from _float32_reference import ELEMENTWISE_ULPS, U32, forward64, gamma
from uqzoo.methods._config import row_weights
from uqzoo.nets import sites

U64 = 2.0**-53


def _problem(n_classes: int, hierarchical: bool = False, n: int = 30):
    spec = uz.MLPSpec(4, n_classes, hidden=(5, 3), prior_scale=0.7)
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = rng.integers(0, n_classes, size=n)
    params = spec.init_params(1)
    z = sites.params_to_sites(spec, hierarchical, params, np.float64)
    if hierarchical:
        # Layer scales away from prior_scale, so τ matters.
        for i in range(spec.n_layers):
            z[f"layer_scale.{i}"] = np.asarray(np.log(0.3 + 0.4 * i))
    return spec, X, y, z


def _log_likelihood_terms64(spec, params, X, y) -> np.ndarray:
    logits, _ = forward64(spec, params, X)
    if spec.n_classes == 2:
        return -np.logaddexp(0.0, np.where(y == 1, -logits[:, 0], logits[:, 0]))
    return logits[np.arange(len(y)), y] - special.logsumexp(logits, axis=1)


def _reference(spec, z, X, y, weights, hierarchical, kl_weight=1.0):
    """(log joint, Σ |terms|) in float64: β · log prior(sites) + Σ w_i log p(y_i | x_i, θ)."""
    params, scales = sites.sites_to_params(spec, hierarchical, z)
    terms = _log_likelihood_terms64(spec, params, X, y)
    terms = terms if weights is None else weights * terms
    if hierarchical:
        prior_terms = [stats.halfnorm.logpdf(scales, scale=spec.prior_scale)]
        prior_terms += [stats.norm.logpdf(np.asarray(z[k + "_std"], np.float64)).ravel()
                        for k in spec.param_shapes()]
    else:
        prior_terms = [stats.norm.logpdf(np.asarray(z[k], np.float64),
                                         scale=spec.prior_sd(k)).ravel()
                       for k in spec.param_shapes()]
    prior = np.concatenate(prior_terms)
    magnitude = np.abs(terms).sum() + kl_weight * np.abs(prior).sum()
    return kl_weight * prior.sum() + terms.sum(), magnitude


def _site_values(z, hierarchical):
    """Sites at their constrained values (τ, not log τ), as the models' traces hold them."""
    return {k: (np.exp(v) if k.startswith("layer_scale.") else v) for k, v in z.items()}


def _numpyro_log_joint(model, args, values, float64: bool):
    import jax
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    dtype = jnp.float64 if float64 else jnp.float32
    with jax.enable_x64(float64):
        args = tuple(a if a is None or isinstance(a, float) else
                     jnp.asarray(a, jnp.int32 if a.dtype.kind == "i" else dtype) for a in args)
        value, trace = log_density(model, args, {},
                                   {k: jnp.asarray(v, dtype) for k, v in values.items()})
        return float(value), trace


def _pyro_log_joint(model, args, values, float64: bool):
    import pyro
    import torch

    dtype = torch.float64 if float64 else torch.float32
    args = tuple(a if a is None or isinstance(a, float) else
                 torch.as_tensor(np.array(a), dtype=torch.int64 if a.dtype.kind == "i" else dtype)
                 for a in args)
    conditioned = pyro.poutine.condition(
        model, data={k: torch.as_tensor(np.array(v), dtype=dtype) for k, v in values.items()})
    trace = pyro.poutine.trace(conditioned).get_trace(*args)
    return float(trace.log_prob_sum()), trace


def _model(backend: str, spec, hierarchical=False, batch_size=None, float64=False):
    if backend == "numpyro":
        from uqzoo.nets import numpyro_model
        return numpyro_model.bayesian_mlp(spec, hierarchical, batch_size), _numpyro_log_joint
    import torch

    from uqzoo.nets import pyro_model
    dtype = torch.float64 if float64 else torch.float32
    return pyro_model.bayesian_mlp(spec, hierarchical, batch_size, dtype=dtype), _pyro_log_joint


def _float64_tolerance(spec, X, magnitude: float) -> float:
    """Float64 rounding of the two evaluations of the same sum: the summation's γ_n
    (n = parameters + rows), a few ulp per elementwise function, and the logits' own
    rounding (the float32 bound of ``_float32_reference`` rescaled to float64's u)."""
    n_terms = spec.n_params + X.shape[0]
    g64 = n_terms * U64 / (1 - n_terms * U64)
    logit_bound = forward64(spec, spec.init_params(1), X)[1].max() * U64 / U32
    return 2 * (g64 * magnitude + ELEMENTWISE_ULPS * U64 * magnitude
                + 2 * X.shape[0] * logit_bound) + 1e-300


@pytest.mark.parametrize("class_weight", [None, "balanced"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("backend", ["numpyro", "pyro"])
def test_float32_model_is_the_model_core_prior_and_likelihood(backend, n_classes, class_weight):
    """In float32 (how HMC and MF-VI run by default), the log joint is the spec's prior
    plus the (weighted) log-likelihood; class weights multiply row i's term by c_{y_i}."""
    spec, X, y, z = _problem(n_classes)
    weights = row_weights(class_weight, y, n_classes)
    model, log_joint = _model(backend, spec)
    got, _ = log_joint(model, (X, y, weights), z, float64=False)
    expected, magnitude = _reference(spec, z, X, y, weights, hierarchical=False)
    # Each side is a float32 evaluation of the same sum. Its rounding: the sum
    # of P + N terms in any order (γ_n) and a few ulp per term for
    # exp/log/softplus, relative to Σ |terms|; plus the float32 logits' own
    # error (the worst-case bound of _float32_reference), through a
    # log-likelihood that moves by at most twice a logit's change (σ' ≤ 1,
    # and a softmax shift of every logit). Twice that: two such evaluations.
    w = np.ones(len(y)) if weights is None else weights
    _, logit_bound = forward64(spec, sites.sites_to_params(spec, False, z)[0], X)
    n_terms = spec.n_params + X.shape[0]
    tol = 2 * (gamma(n_terms) * magnitude + ELEMENTWISE_ULPS * U32 * magnitude
               + 2 * (w * logit_bound.max(axis=1)).sum())
    assert abs(got - expected) <= tol


@pytest.mark.parametrize("hierarchical", [False, True])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("backend", ["numpyro", "pyro"])
def test_log_joint_with_weights_and_kl_weight_matches_float64(backend, n_classes, hierarchical):
    """Plain and hierarchical prior (τ_i ~ HalfNormal(prior_scale), z ~ N(0, 1),
    θ = τ_i · fan-in factor · z), row weights, and β scaling the prior alone."""
    spec, X, y, z = _problem(n_classes, hierarchical)
    weights = row_weights("balanced", y, n_classes)
    model, log_joint = _model(backend, spec, hierarchical, float64=True)
    values = _site_values(z, hierarchical)
    for kl_weight in (None, 0.25):
        got, _ = log_joint(model, (X, y, weights, kl_weight), values, float64=True)
        expected, magnitude = _reference(spec, z, X, y, weights, hierarchical,
                                         1.0 if kl_weight is None else kl_weight)
        assert abs(got - expected) <= _float64_tolerance(spec, X, magnitude), kl_weight


@pytest.mark.parametrize("backend", ["numpyro", "pyro"])
def test_subsampled_likelihood_is_the_batch_scaled_by_n_over_b(backend):
    """With batch_size B < N the likelihood is (N / B) Σ_{i in the batch} w_i log p(y_i | ...),
    B distinct rows."""
    spec, X, y, z = _problem(3, n=40)
    weights = row_weights("balanced", y, 3)
    batch = 8
    model, log_joint = _model(backend, spec, batch_size=batch, float64=True)
    if backend == "numpyro":
        from numpyro import handlers
        got, trace = log_joint(handlers.seed(model, rng_seed=3), (X, y, weights), z,
                               float64=True)
        idx = np.asarray(trace["data"]["value"])
    else:
        got, trace = log_joint(model, (X, y, weights), z, float64=True)
        idx = trace.nodes["data"]["value"].numpy()
    assert len(set(idx.tolist())) == batch
    params, _ = sites.sites_to_params(spec, False, z)
    terms = weights[idx] * _log_likelihood_terms64(spec, params, X[idx], y[idx])
    prior, prior_magnitude = _reference(spec, z, X[:0], y[:0], None, hierarchical=False)
    expected = prior + len(y) / batch * terms.sum()
    magnitude = prior_magnitude + len(y) / batch * np.abs(terms).sum()
    assert abs(got - expected) <= _float64_tolerance(spec, X, magnitude)


@pytest.mark.parametrize("hierarchical", [False, True])
def test_numpyro_and_pyro_models_sample_the_same_sites(hierarchical):
    """One set of sites, named and shaped as :func:`uqzoo.nets.sites.site_shapes` says."""
    spec, X, y, z = _problem(2, hierarchical)
    values = _site_values(z, hierarchical)
    expected = sites.site_shapes(spec, hierarchical)
    for backend in ("numpyro", "pyro"):
        model, log_joint = _model(backend, spec, hierarchical, float64=True)
        _, trace = log_joint(model, (X, y), values, float64=True)
        nodes = trace if backend == "numpyro" else trace.nodes
        # Conditioning marks the latent sites observed; the likelihood is the factor.
        got = {name: tuple(site["value"].shape) for name, site in nodes.items()
               if site["type"] == "sample" and name != "log_likelihood"}
        assert got == expected, backend


@pytest.mark.parametrize("hierarchical", [False, True])
def test_sites_round_trip_the_layout(hierarchical):
    """Parameters to sites (τ_i = prior_scale) and back are the parameters."""
    spec = uz.MLPSpec(6, 3, hidden=(4,), prior_scale=1.5)
    params = spec.init_params(0)
    z = sites.params_to_sites(spec, hierarchical, params, np.float64)
    back, scales = sites.sites_to_params(spec, hierarchical, z)
    # float64: θ / sd, exp(log τ), τ · (sd / τ) · z -- a few roundings of ≤ 1 ulp each
    # (exp and log within 1 ulp), so 16 ulp is a bound with margin.
    for key, value in params.items():
        np.testing.assert_allclose(back[key], value, rtol=16 * U64, err_msg=key)
    if hierarchical:
        np.testing.assert_allclose(scales, spec.prior_scale, rtol=4 * U64)
    else:
        assert scales is None
