"""NUTS (``uz.fit("hmc", ...)``): exactness on a known posterior, calibration
(SBC), determinism, diagnostics, and the Pyro backend.

Tolerances come from Monte Carlo error: a posterior mean estimate is off by
about sd/√ESS, so we allow K_SE = 4 standard errors (false-alarm rate ~6e-5
per comparison under normality).
"""

import warnings

import numpy as np
import pytest
from scipy import optimize, stats

import uqzoo as uz
from uqzoo.methods import _diagnostics, hmc

K_SE = 4.0


# -- a zero-hidden-layer model: Bayesian logistic regression with an exact reference --

def logistic_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    logits = X @ np.array([1.0, -0.5]) + 0.3
    y = (rng.random(n) < 1 / (1 + np.exp(-logits))).astype(int)
    return uz.ClassificationData(X, y, X[:5], y[:5], n_classes=2)


def quadrature_posterior(data, prior_scale=1.0, points=71):
    """Posterior mean and sd of (w1, w2, b) by brute-force quadrature on a grid.

    The grid spans ±8 Laplace standard deviations around the mode; its spacing
    (0.23 sd) makes the midpoint rule accurate far below Monte Carlo error.
    """
    X = np.column_stack([data.X_train.astype(np.float64), np.ones(data.n_train)])
    y = data.y_train

    def neg_log_post(theta):
        z = X @ theta
        return np.sum(np.logaddexp(0, np.where(y == 1, -z, z))) + theta @ theta / (2 * prior_scale**2)

    mode = optimize.minimize(neg_log_post, np.zeros(3), method="BFGS").x
    p = 1 / (1 + np.exp(-X @ mode))
    hessian = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(3) / prior_scale**2
    sd = np.sqrt(np.diag(np.linalg.inv(hessian)))
    axes = [np.linspace(m - 8 * s, m + 8 * s, points) for m, s in zip(mode, sd)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    z = grid @ X.T
    log_post = -np.logaddexp(0, np.where(y == 1, -z, z)).sum(1) - (grid**2).sum(1) / (2 * prior_scale**2)
    weight = np.exp(log_post - log_post.max())
    weight /= weight.sum()
    mean = weight @ grid
    return mean, np.sqrt(weight @ (grid - mean) ** 2)


def as_vector(post):
    return np.column_stack([post.draws["layers.0.weight"][:, 0, :], post.draws["layers.0.bias"]])


def assert_matches_reference(post, mean_ref, sd_ref):
    theta = as_vector(post).astype(np.float64)
    chains, draws = post.sample_shape
    by_chain = theta.reshape(chains, draws, -1)
    ess = _diagnostics.rhat_ess(by_chain)["ess_bulk"]
    centred_sq = (by_chain - mean_ref) ** 2
    ess_sq = _diagnostics.rhat_ess(centred_sq)["ess_bulk"]
    mean, sd = theta.mean(0), theta.std(0)
    se_mean = sd_ref / np.sqrt(ess)
    # SE of a variance estimate is sd((θ-μ)²)/√ESS; the delta method halves it for the sd.
    se_sd = centred_sq.reshape(-1, 3).std(0) / np.sqrt(ess_sq) / (2 * sd_ref)
    assert np.all(np.abs(mean - mean_ref) < K_SE * se_mean), (mean, mean_ref, se_mean)
    assert np.all(np.abs(sd - sd_ref) < K_SE * se_sd), (sd, sd_ref, se_sd)


@pytest.fixture(scope="module")
def logistic():
    data = logistic_data()
    return data, uz.MLPSpec(2, 2, hidden=()), quadrature_posterior(data)


def test_logistic_regression_matches_quadrature(logistic):
    data, spec, (mean_ref, sd_ref) = logistic
    post = uz.fit("hmc", spec, data, seed=1, num_warmup=300, num_samples=500,
                  progress_bar=False)
    assert post.converged, post.warnings
    assert post.sample_shape == (4, 500)
    assert_matches_reference(post, mean_ref, sd_ref)


def test_pyro_backend_matches_quadrature(logistic):
    data, spec, (mean_ref, sd_ref) = logistic
    with warnings.catch_warnings():
        # 2 short chains: an R-hat slightly above 1.01 is possible and not the point here.
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=2, backend="pyro", jit_compile=False,
                      num_warmup=150, num_samples=300, num_chains=2, progress_bar=False)
    assert post.sample_stats["diverging"].shape == (2, 300)
    assert post.sample_stats["step_size"].min() > 0
    assert_matches_reference(post, mean_ref, sd_ref)


def test_chain_methods_give_the_same_draws(logistic):
    data, spec, _ = logistic
    kwargs = dict(num_warmup=30, num_samples=20, num_chains=3, progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        parallel = uz.fit("hmc", spec, data, seed=5, chain_method="parallel", **kwargs)
        sequential = uz.fit("hmc", spec, data, seed=5, chain_method="sequential", **kwargs)
        vectorized = uz.fit("hmc", spec, data, seed=5, chain_method="vectorized", **kwargs)
    for key in spec.param_shapes():
        np.testing.assert_array_equal(parallel.draws[key], sequential.draws[key])
    # vmap reorders float operations, and Hamiltonian dynamics amplify the
    # rounding differences: vectorized chains are equally valid, not identical.
    assert vectorized.sample_shape == (3, 20)
    assert all(np.all(np.isfinite(v)) for v in vectorized.draws.values())


def test_diagnostics_and_sample_stats(logistic):
    data, spec, _ = logistic
    post = uz.fit("hmc", spec, data, seed=1, num_warmup=300, num_samples=500,
                  progress_bar=False)
    for name in ("diverging", "acceptance_rate", "n_steps", "tree_depth", "step_size",
                 "energy", "lp"):
        assert post.sample_stats[name].shape == (4, 500), name
    assert post.sample_stats["tree_depth"].max() <= 10
    d = post.diagnostics
    assert d["rhat_predictive"].shape == (5 if data.n_train < 10 else 10, 1)
    assert d["rhat_layer_norm"].shape == (1,)
    assert d["ess_bulk_predictive"].min() > 100
    assert len(np.unique(d["predictive_points"])) == 10
    assert 0.5 < d["mean_acceptance_rate"] <= 1
    assert d["num_divergent"] == 0


def test_short_run_warns_and_is_marked():
    data = logistic_data()
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    with pytest.warns(uz.ConvergenceWarning, match="R-hat|diverged"):
        post = uz.fit("hmc", spec, data, seed=0, num_warmup=5, num_samples=8,
                      num_chains=2, progress_bar=False)
    assert post.converged is False
    assert post.warnings and all(w.startswith("hmc:") for w in post.warnings)
    assert "NOT CONVERGED" in repr(post)


def test_hierarchical_and_float64_run_and_do_not_leak_x64():
    import jax.numpy as jnp

    data = logistic_data()
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=0, num_warmup=30, num_samples=10,
                      num_chains=2, hierarchical=True, float64=True, init="prior",
                      progress_bar=False)
    assert post.sample_stats["layer_scale"].shape == (2, 10, 2)
    assert np.all(post.sample_stats["layer_scale"] > 0)
    assert post.draws["layers.0.weight"].dtype == np.float32
    assert jnp.zeros(1).dtype == jnp.float32


@pytest.mark.parametrize("option, value, match", [
    ("target_accept", 1.5, "target_accept"),
    ("num_chains", 0, "num_chains"),
    ("backend", "stan", "backend"),
    ("chain_method", "pmap", "chain_method"),
    ("init", "zeros", "init"),
    ("dense_mass", "yes", "dense_mass"),
    ("num_samples", 2.5, "num_samples"),
])
def test_bad_config_is_rejected(option, value, match):
    with pytest.raises((uz.InvalidInputError, uz.InvalidTypeError), match=match):
        uz.methods.make_config("hmc", **{option: value})


def test_per_weight_rhat_is_documented_as_noise():
    assert "permutation" in hmc.__doc__ and "per-weight" in hmc.__doc__


# -- simulation-based calibration (Talts et al. 2018) --------------------------------

SBC_REPLICATES = 100
SBC_DRAWS = 19          # ranks 0..19: 20 values, 5 bins of 4
SBC_BINS = 5
SBC_ALPHA = 0.01        # family-wise false-alarm rate, Bonferroni over the quantities


def _sbc_quantities(spec, params, x_probe):
    """Quantities invariant under hidden-unit permutations and sign flips.

    Per-weight ranks would be non-uniform for a perfectly calibrated sampler
    that stays in one of the equivalent symmetric modes; these are not.
    """
    from uqzoo.nets.torch import forward_logits, to_tensors
    logits = forward_logits(spec, to_tensors(params), to_tensors({"x": x_probe})["x"])
    logits = logits.detach().numpy()[..., 0]                           # (..., 2)
    norm0 = _diagnostics.layer_norms(spec, params)[..., 0]
    return np.concatenate([logits, params["layers.1.bias"], norm0[..., None]], axis=-1)


@pytest.mark.slow
def test_simulation_based_calibration():
    spec = uz.MLPSpec(1, 2, hidden=(2,))
    x_probe = np.array([[-1.0], [1.0]], dtype=np.float32)
    ranks = []
    rng = np.random.default_rng(2018)
    replicate = 0
    while len(ranks) < SBC_REPLICATES:
        replicate += 1
        truth = {k: rng.normal(0, spec.prior_scale, size=s).astype(np.float32)
                 for k, s in spec.param_shapes().items()}
        X = rng.normal(size=(20, 1)).astype(np.float32)
        from uqzoo.nets.torch import predict_proba, to_tensors
        p = predict_proba(spec, to_tensors(truth), to_tensors({"x": X})["x"]).numpy()[:, 1]
        y = (rng.random(20) < p).astype(int)
        if len(np.unique(y)) < 2:
            # Conditioning on the data (here: both classes present) keeps SBC valid.
            continue
        data = uz.ClassificationData(X, y, X[:2], y[:2], n_classes=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", uz.ConvergenceWarning)
            post = uz.fit("hmc", spec, data, seed=replicate, num_warmup=150,
                          num_samples=SBC_DRAWS, thinning=5, num_chains=1,
                          progress_bar=False)
        q_true = _sbc_quantities(spec, {k: v[None] for k, v in truth.items()}, x_probe)[0]
        q_draws = _sbc_quantities(spec, dict(post.draws), x_probe)
        ranks.append((q_draws < q_true).sum(axis=0))
    ranks = np.array(ranks)                                            # (R, Q)
    per_test_alpha = SBC_ALPHA / ranks.shape[1]
    for q in range(ranks.shape[1]):
        counts = np.bincount(ranks[:, q] * SBC_BINS // (SBC_DRAWS + 1), minlength=SBC_BINS)
        result = stats.chisquare(counts)
        assert result.pvalue > per_test_alpha, (q, counts, result.pvalue)
