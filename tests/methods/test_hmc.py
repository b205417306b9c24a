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
from uqzoo.nets import numpyro_model

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
        return (np.sum(np.logaddexp(0, np.where(y == 1, -z, z)))
                + theta @ theta / (2 * prior_scale**2))

    mode = optimize.minimize(neg_log_post, np.zeros(3), method="BFGS").x
    p = 1 / (1 + np.exp(-X @ mode))
    hessian = X.T @ (X * (p * (1 - p))[:, None]) + np.eye(3) / prior_scale**2
    sd = np.sqrt(np.diag(np.linalg.inv(hessian)))
    axes = [np.linspace(m - 8 * s, m + 8 * s, points) for m, s in zip(mode, sd, strict=True)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    z = grid @ X.T
    log_post = (-np.logaddexp(0, np.where(y == 1, -z, z)).sum(1)
                - (grid**2).sum(1) / (2 * prior_scale**2))
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
    # The quadrature reference puts N(0, 1) on every coefficient: the "iid" prior.
    return data, uz.MLPSpec(2, 2, hidden=(), prior="iid"), quadrature_posterior(data)


@pytest.mark.slow
def test_logistic_regression_matches_quadrature(logistic):
    data, spec, (mean_ref, sd_ref) = logistic
    post = uz.fit("hmc", spec, data, seed=1, num_warmup=300, num_samples=2000,
                  progress_bar=False)
    assert post.converged, post.warnings
    assert post.sample_shape == (4, 500)
    assert_matches_reference(post, mean_ref, sd_ref)


@pytest.mark.slow
def test_pyro_backend_matches_quadrature(logistic):
    data, spec, (mean_ref, sd_ref) = logistic
    with warnings.catch_warnings():
        # 2 short chains: an R-hat slightly above 1.01 is possible and not the point here.
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=2, backend="pyro", jit_compile=False,
                      num_warmup=150, num_samples=600, num_chains=2, progress_bar=False)
    assert post.sample_stats["diverging"].shape == (2, 300)
    assert post.sample_stats["step_size"].min() > 0
    assert_matches_reference(post, mean_ref, sd_ref)


def mean_and_standard_error(theta_by_chain):
    """Posterior mean of each column of (chains, draws, P) draws and its MC standard error.

    The standard error is sd/√ESS with NumPyro's (Geyer) ESS, the one for a
    mean (ArviZ's bulk ESS is for ranks).
    """
    from numpyro.diagnostics import effective_sample_size

    theta_by_chain = np.asarray(theta_by_chain, dtype=np.float64)
    ess = effective_sample_size(theta_by_chain)
    flat = theta_by_chain.reshape(-1, theta_by_chain.shape[-1])
    return flat.mean(0), flat.std(0) / np.sqrt(ess)


def assert_same_posterior_mean(theta_a, theta_b, comparisons=1):
    """Two samplers' (chains, draws, P) draws agree in mean within MC error.

    |mean_a - mean_b| < k·√(se_a² + se_b²) per parameter, k = 4 for a single
    comparison of 3 parameters: a two-sided false-alarm rate of 6.3e-5 per
    parameter, ≤ 1.9e-4 for the family (Bonferroni). With more comparisons
    in one test k grows so that the family-wise rate stays ≤ 2e-4.
    """
    n_tests = theta_a.shape[-1] * comparisons
    k = stats.norm.isf(2e-4 / n_tests / 2)
    mean_a, se_a = mean_and_standard_error(theta_a)
    mean_b, se_b = mean_and_standard_error(theta_b)
    bound = k * np.sqrt(se_a**2 + se_b**2)
    assert np.all(np.abs(mean_a - mean_b) < bound), (mean_a, mean_b, bound)


def by_chain(post):
    chains, draws = post.sample_shape
    return as_vector(post).reshape(chains, draws, -1)


@pytest.mark.slow
def test_draws_match_numpyro_mcmc_within_monte_carlo_error(logistic):
    """uqzoo's driver and ``numpyro.infer.MCMC(NUTS(model))``: same posterior.

    Same model (uqzoo's), same settings, same seed as key; the chains differ
    (each derives its key and start its own way), so the posterior means are
    compared within their Monte Carlo error.
    """
    import jax
    from numpyro.infer import MCMC, NUTS

    data, spec, _ = logistic
    settings = dict(num_warmup=300, num_chains=2)
    post = uz.fit("hmc", spec, data, seed=3, progress_bar=False, num_samples=2000, **settings)
    # NumPyro's num_samples is per chain, uqzoo's the total.
    mcmc = MCMC(NUTS(numpyro_model.bayesian_mlp(spec)), chain_method="sequential",
                progress_bar=False, num_samples=1000, **settings)
    mcmc.run(jax.random.key(3), data.X_train.astype(np.float32), data.y_train.astype(np.int32))
    samples = mcmc.get_samples(group_by_chain=True)
    reference = np.concatenate([np.asarray(samples["layers.0.weight"])[:, :, 0, :],
                                np.asarray(samples["layers.0.bias"])], axis=-1)
    assert_same_posterior_mean(by_chain(post), reference)


def test_driver_runs_the_chain_numpyro_mcmc_runs_from_the_same_state(logistic):
    """Segment-wise driving changes nothing: from uqzoo's starting state and
    key, ``MCMC`` runs the same chain, warm-up adaptation included.

    ``post_warmup_state`` makes ``MCMC.run`` start from a given state; this one
    has iteration counter 0, so NumPyro's own kernel adapts for ``num_warmup``
    iterations exactly as in a plain run. The two are different compiled
    programs: on the machines we tried they agree bit for bit, but XLA may
    fuse the loop bodies differently elsewhere, so the test allows float32
    rounding (1e-7 relative per operation) grown over 200 iterations of a
    stable, log-concave target -- rtol 1e-4 is ~1000× that. A rounding error
    could flip a discrete NUTS decision only when a uniform draw falls within
    ~1e-7 of its threshold, a chance of ~1e-4 over the whole run.
    """
    import jax
    from numpyro.infer import MCMC, NUTS

    data, spec, _ = logistic
    # NumPyro's own start and coordinates: no MAP warm start, no input rotation.
    cfg = hmc.Config(num_warmup=120, num_samples=80, num_chains=1, init="uniform",
                     rotate_inputs=False)
    with warnings.catch_warnings():
        # One short chain: its R-hat is not the point here.
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=7, progress_bar=False,
                      num_warmup=cfg.num_warmup, num_samples=cfg.num_samples,
                      num_chains=cfg.num_chains, init=cfg.init,
                      rotate_inputs=cfg.rotate_inputs)
    ((z0, key_data),) = hmc._chain_starts(spec, cfg, seed=7)
    program = hmc._numpyro_program(spec, cfg.hierarchical, cfg.num_warmup, cfg.target_accept,
                                   cfg.max_tree_depth, cfg.dense_mass, cfg.float64, False)
    X, y = data.X_train.astype(np.float32), data.y_train.astype(np.int32)
    start = program.init(z0, jax.random.wrap_key_data(key_data), X, y)
    # NUTS's defaults (target 0.8, depth 10, diagonal mass): uqzoo's defaults
    # must equal them, or the adaptation would differ.
    mcmc = MCMC(NUTS(numpyro_model.bayesian_mlp(spec)), num_warmup=cfg.num_warmup,
                num_samples=cfg.num_warmup + cfg.num_samples, progress_bar=False)
    mcmc.post_warmup_state = start
    mcmc.run(start.rng_key, X, y)
    samples = mcmc.get_samples()
    for key in spec.param_shapes():
        np.testing.assert_allclose(post.draws[key], np.asarray(samples[key])[cfg.num_warmup:],
                                   rtol=1e-4, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("chain_method", hmc.CHAIN_METHODS)
def test_same_seed_and_chain_method_give_identical_draws(logistic, chain_method):
    """The promise that holds: same seed, settings and machine, same bits."""
    data, spec, _ = logistic
    kwargs = dict(num_warmup=30, num_samples=60, num_chains=3, chain_method=chain_method,
                  progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        first = uz.fit("hmc", spec, data, seed=5, **kwargs)
        second = uz.fit("hmc", spec, data, seed=5, **kwargs)
    for key in spec.param_shapes():
        np.testing.assert_array_equal(first.draws[key], second.draws[key])
    for name, values in first.sample_stats.items():
        np.testing.assert_array_equal(values, second.sample_stats[name], err_msg=name)


@pytest.mark.slow
def test_chain_methods_sample_the_same_posterior(logistic):
    """Parallel, sequential and vectorized chains: the same posterior.

    Not the same bits: on the machine we test on "parallel" and "sequential"
    run each chain through the same compiled program and agree exactly, but
    another CPU or thread schedule may round differently, and ``vmap``
    reorders float operations anyway; Hamiltonian dynamics amplify any
    rounding difference. So means are compared within Monte Carlo error.
    """
    data, spec, _ = logistic
    kwargs = dict(num_warmup=200, num_samples=1500, num_chains=3, progress_bar=False)
    fits = {method: uz.fit("hmc", spec, data, seed=5, chain_method=method, **kwargs)
            for method in ("parallel", "sequential", "vectorized")}
    for post in fits.values():
        assert post.converged, post.warnings
        assert post.sample_shape == (3, 500)
    reference = by_chain(fits["parallel"])
    for method in ("sequential", "vectorized"):
        assert_same_posterior_mean(reference, by_chain(fits[method]), comparisons=2)


def test_auto_chain_method_rule():
    """"auto": vectorized for a small network, one after another for a large
    one or a single chain, as the Config docstring says (one JAX CPU device
    here; the several-device case is checked in a fresh interpreter below)."""
    assert len(hmc._cpu_devices()) == 1
    small = uz.MLPSpec(2, 2, hidden=(10, 10))                       # 151 parameters
    scene = uz.MLPSpec(189, 2, hidden=(10, 10))                     # 2,021 parameters
    assert hmc.Config().chain_method == "auto"
    assert hmc.resolve_chain_method(small, 1000, hmc.Config()) == "vectorized"
    assert hmc.resolve_chain_method(scene, 5000, hmc.Config()) == "sequential"
    assert hmc.resolve_chain_method(small, 1000, hmc.Config(num_chains=1,
                                                            num_samples=10)) == "sequential"
    for method in ("parallel", "sequential", "vectorized"):
        cfg = hmc.Config(chain_method=method)
        assert hmc.resolve_chain_method(small, 1000, cfg) == method


def test_auto_chain_method_runs_the_chosen_method(logistic):
    """The default fit is the fit of the method the rule picks: same bits."""
    data, spec, _ = logistic
    kwargs = dict(num_warmup=30, num_samples=60, num_chains=3)
    assert hmc.resolve_chain_method(spec, len(data.X_train), hmc.Config()) == "vectorized"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        auto = uz.fit("hmc", spec, data, seed=5, progress_bar=False, **kwargs)
        chosen = uz.fit("hmc", spec, data, seed=5, progress_bar=False,
                        chain_method="vectorized", **kwargs)
    for key in spec.param_shapes():
        np.testing.assert_array_equal(auto.draws[key], chosen.draws[key])


PARALLEL_ON_TWO_DEVICES = """
import warnings
import jax
jax.config.update("jax_num_cpu_devices", 2)
import numpy as np
import uqzoo as uz
from uqzoo.methods import hmc

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 2))
y = (rng.random(30) < 1 / (1 + np.exp(-(X @ [1.0, -0.5] + 0.3)))).astype(int)
data = uz.ClassificationData(X, y, X[:5], y[:5], n_classes=2)
spec = uz.MLPSpec(2, 2, hidden=())
kwargs = dict(num_warmup=30, num_samples=60, num_chains=3, progress_bar=False)
assert len(hmc._cpu_devices()) == 2
# "auto" runs chains on the devices the user configured.
assert hmc.resolve_chain_method(spec, 30, hmc.Config()) == "parallel"
with warnings.catch_warnings():
    warnings.simplefilter("ignore", uz.ConvergenceWarning)
    first = uz.fit("hmc", spec, data, seed=5, chain_method="parallel", **kwargs)
    second = uz.fit("hmc", spec, data, seed=5, chain_method="parallel", **kwargs)
for key in spec.param_shapes():
    np.testing.assert_array_equal(first.draws[key], second.draws[key])
    assert np.all(np.isfinite(first.draws[key]))
assert first.sample_shape == (3, 20)
print("ok")
"""


@pytest.mark.slow
def test_parallel_chains_on_several_jax_cpu_devices():
    """With several JAX CPU devices, "parallel" puts chain c on device c mod n.

    JAX's device count is fixed when its backend starts, so this runs in a
    fresh interpreter; it checks that the device path runs and keeps the
    same-seed, same-machine promise.
    """
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-W", "error::DeprecationWarning:uqzoo",
                             "-c", PARALLEL_ON_TWO_DEVICES],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


def test_diagnostics_and_sample_stats(logistic):
    data, spec, _ = logistic
    post = uz.fit("hmc", spec, data, seed=1, num_warmup=300, num_samples=2000,
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
        post = uz.fit("hmc", spec, data, seed=0, num_warmup=5, num_samples=16,
                      num_chains=2, progress_bar=False)
    assert post.converged is False
    assert post.warnings and all(w.startswith("hmc:") for w in post.warnings)
    assert "NOT CONVERGED" in repr(post)


@pytest.mark.slow
def test_hierarchical_and_float64_run_and_do_not_leak_x64():
    import jax.numpy as jnp

    data = logistic_data()
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=0, num_warmup=30, num_samples=20,
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
        truth = {k: rng.normal(0, spec.prior_sd(k), size=s).astype(np.float32)
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
