"""SG-MCMC on BlackJAX (``sgld``, ``sghmc``, ``csgmcmc``): known targets, the
cyclical schedule, the one-point flag, and bad options.

Conformance (shapes, seeds, save/load) is in ``test_conformance.py``.
"""

import warnings

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.errors import ConvergenceWarning, InvalidInputError
from uqzoo.methods import _diagnostics, _sgmcmc, csgmcmc, sghmc, sgld
from uqzoo.testing import tiny_data

K_SE = 4.0


def _fit(module, data, spec, seed=0, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        post = module.fit(spec, data, module.Config(**options), seed=seed, progress_bar=False)
    return post, [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]


def _sghmc_stationary_variance(sd, eps, friction, steps):
    """Stationary Var(θ)/σ² of BlackJAX's SGHMC on N(0, σ²), exactly.

    Its integrator updates θ and p from the same old state (θ' = θ + εp,
    p' = (1 − αε)p − εθ/σ² + √(2αε)ξ), and each kernel call starts from a fresh
    p ~ N(0, 1): a linear Gaussian map whose fixed point is found by iteration.
    Without a Metropolis step the variance is not σ² (1.54 σ² at εω = 0.17 and
    3 steps per call), so the test checks uqzoo's wiring against this value.
    """
    out = np.empty_like(sd)
    for j, s in enumerate(sd):
        A = np.array([[1.0, eps], [-eps / s**2, 1.0 - friction * eps]])
        Q = np.diag([0.0, 2.0 * friction * eps])
        v = s**2
        for _ in range(5000):
            cov = np.diag([v, 1.0])
            for _ in range(steps):
                cov = A @ cov @ A.T + Q
            if abs(cov[0, 0] - v) < 1e-12 * v:
                break
            v = cov[0, 0]
        out[j] = v / s**2
    return out


@pytest.mark.slow
@pytest.mark.parametrize("module, options", [
    (sgld, dict(step_size=0.4, num_steps=20000, num_burnin=2000)),
    (sghmc, dict(step_size=0.4, num_steps=4000, num_burnin=500, num_integration_steps=3)),
])
def test_prior_is_recovered_when_the_likelihood_is_switched_off(module, options):
    """Class weights of 1e-8 leave the prior N(0, sd²) as the target: E[θ²/sd²] is
    known exactly for each discretisation.

    Euler-Maruyama Langevin (SGLD) on N(0, σ²) has stationary variance
    σ²/(1 − ε/(2σ²)), ε = step_size / N; SGHMC's is
    :func:`_sghmc_stationary_variance` with ε = sqrt(step_size / N). The
    tolerance is K_SE standard errors from the ESS of each parameter's draws
    (Var of a mean of θ²/σ² over ESS draws: 2 (E θ²/σ²)²/ESS).
    """
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post, _ = _fit(module, data, spec, num_samples=2000, num_chains=4, batch_size=10,
                   class_weight=(1e-8, 1e-8), **options)
    sd = spec.flatten({k: np.full(s, spec.prior_sd(k)) for k, s in spec.param_shapes().items()})
    theta = spec.flatten(post.draws, leading=1).astype(np.float64)        # (S, P)
    z = (theta / sd) ** 2                                                 # (S, P)
    chains, per = post.sample_shape
    ess = _diagnostics.rhat_ess(theta.reshape(chains, per, -1))["ess_bulk"]
    n = data.X_train.shape[0]
    if module is sgld:
        eps = options["step_size"] / n
        expected = 1.0 / (1.0 - eps / (2 * sd**2))
    else:
        expected = _sghmc_stationary_variance(sd, np.sqrt(options["step_size"] / n),
                                              module.Config().friction,
                                              options["num_integration_steps"])
    se = np.sqrt(np.sum(2.0 * expected**2 / ess)) / sd.size
    assert abs(z.mean(axis=0).mean() - expected.mean()) < K_SE * se, (z.mean(), se)
    # the means: |mean θ/sd| < K_SE sd/sqrt(ESS), averaged over the parameters
    m = (theta / sd).mean(axis=0)
    assert abs(m.mean()) < K_SE * np.sqrt(np.sum(expected / ess)) / sd.size


def test_too_small_a_step_is_flagged_one_point():
    """A step 10^4 times too small barely moves the chains: flagged, warned, not converged."""
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post, messages = _fit(sgld, data, spec, num_steps=2000, num_burnin=500, num_samples=100,
                          num_chains=2, batch_size=10, step_size=1e-7)
    assert post.diagnostics["one_point"] is True
    assert post.diagnostics["logit_spread_ratio"] < _sgmcmc.ONE_POINT_FRACTION
    assert post.converged is False
    assert any("effectively one point" in m for m in messages)
    assert any("effectively one point" in m for m in post.warnings)


def test_a_working_step_is_not_one_point():
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post, messages = _fit(sgld, data, spec, num_steps=6000, num_burnin=1000, num_samples=200,
                          num_chains=2, batch_size=10, step_size=0.04)
    assert post.diagnostics["one_point"] is False
    assert post.diagnostics["logit_spread_ratio"] > 10 * _sgmcmc.ONE_POINT_FRACTION
    assert not any("one point" in m for m in messages)
    # R-hat above HMC's 1.01 is what SG-MCMC's noise gives a working run; not a flag
    assert np.nanmax(post.diagnostics["rhat_predictive"]) > _diagnostics.RHAT_THRESHOLD
    assert post.converged is True and not messages


@pytest.mark.parametrize("rhat, converged", [
    # a right fit: R-hat 1.05-1.3 (development data: 90th percentiles 1.06-1.34), one
    # outlying point at 1.45 -- the quantile, not the maximum, is judged
    ([1.05, 1.1, 1.1, 1.15, 1.2, 1.2, 1.25, 1.3, 1.3, 1.45], True),
    # chains far apart: two points of ten above 1.5 put the 90th percentile above it
    ([1.05, 1.1, 1.1, 1.15, 1.2, 1.2, 1.25, 1.3, 1.6, 1.7], False),
])
def test_chains_far_apart_is_judged_by_the_90th_percentile_of_r_hat(rhat, converged):
    """SG-MCMC's R-hat rule (not HMC's 1.01 on the maximum): _sgmcmc.RHAT_LIMIT on the
    quantile; benchmarks/sgmcmc_flag_rates.py measured where right and wrong fits fall."""
    cfg = sgld.Config()
    rhat = np.array(rhat)[:, None]                     # (points, 1), as diagnose stores it
    verdict = _sgmcmc.convergence("sgld", {"rhat_predictive": rhat, "one_point": False,
                                           "logit_spread_ratio": 0.5}, cfg, np.ones(4, bool))
    assert verdict.converged is converged
    assert np.quantile(rhat, _sgmcmc.RHAT_QUANTILE) > _sgmcmc.RHAT_LIMIT or converged
    if not converged:
        (message,) = verdict.messages
        assert "far apart" in message and "20% of the 10" in message and "1.5" in message


def test_a_step_fifty_times_too_small_is_flagged_far_apart():
    """The wrong runs of the measurement, scaled down: chains that barely move from
    different starts in a short run are flagged, whatever the one-point ratio says."""
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post, messages = _fit(sgld, data, spec, num_steps=2000, num_burnin=500, num_samples=100,
                          num_chains=4, batch_size=10, step_size=0.04 / 50)
    assert np.nanquantile(post.diagnostics["rhat_predictive"], 0.9) > _sgmcmc.RHAT_LIMIT
    assert post.converged is False
    assert any("far apart" in m for m in messages)


def test_cyclical_schedule_and_sampling_share():
    """Cosine cycles after burn-in; temperature 0 exactly in the exploration steps; the
    recorded sampling share is the share of temperature-1 steps; draws at cycle ends."""
    cfg = csgmcmc.Config(num_steps=1003, num_burnin=100, num_cycles=3, num_chains=1,
                         num_samples=30, exploration_fraction=0.4, step_size=0.5)
    import jax.numpy as jnp

    t = jnp.arange(cfg.num_steps)
    step, temperature = (np.asarray(a) for a in csgmcmc.schedule(cfg, t))
    start, length = cfg.first_cycle_start, cfg.cycle_length
    assert start == 100 + (903 - 3 * 301) and length == 301
    assert np.all(step[:start] == np.float32(0.5)) and np.all(temperature[:start] == 0)
    for c in range(3):
        s = start + c * length
        assert step[s] == pytest.approx(0.5)
        assert step[s + length - 1] < 1e-4 * 0.5 * 100            # near 0 at the cycle's end
        assert np.all(temperature[s:s + cfg.exploration_steps] == 0)
        assert np.all(temperature[s + cfg.exploration_steps:s + length] == 1)
    phases, share = csgmcmc.phases(cfg)
    assert share == pytest.approx(temperature.mean())
    # the phases tile the run, and each cycle's last draw is its last step
    ends, t_ = [], 0
    for phase in phases:
        t_ += phase.steps + phase.draws * phase.thinning
        ends.append(t_)
    assert t_ == cfg.num_steps
    assert ends == [start + (c + 1) * length for c in range(3)]


@pytest.mark.slow
def test_csgmcmc_groups_draws_by_chain_and_cycle():
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post, _ = _fit(csgmcmc, data, spec, num_steps=800, num_cycles=2, num_chains=2,
                   num_samples=16, batch_size=10, step_size=0.04)
    assert post.sample_shape == (4, 4)
    assert post.diagnostics["rhat_predictive"].shape[0] == 10
    assert post.diagnostics["rhat_predictive_chains"].shape == \
        post.diagnostics["rhat_predictive"].shape
    assert 0 < post.diagnostics["sampling_share"] < 1


@pytest.mark.slow
def test_draws_do_not_depend_on_the_segment_length(monkeypatch):
    """Keys are fold_in(key, step): cutting the run into other compiled segments
    gives the same chain."""
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    options = dict(num_steps=300, num_burnin=100, num_samples=20, num_chains=2, batch_size=10,
                   step_size=0.01)
    a, _ = _fit(sgld, data, spec, **options)
    monkeypatch.setattr(_sgmcmc, "_CHUNK", 64)
    b, _ = _fit(sgld, data, spec, **options)
    for k in a.draws:
        np.testing.assert_allclose(a.draws[k], b.draws[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("module", [sgld, sghmc, csgmcmc])
def test_budget_options_share_the_draws_evenly(module):
    config = module.Config
    options = config.budget_options(1000, {"num_chains": 3})
    groups = 3 * (4 if module is csgmcmc else 1)
    assert options["num_samples"] % groups == 0 and options["num_samples"] >= 1000
    config(**{"num_chains": 3, **options})          # a valid config


@pytest.mark.parametrize("module, options, name", [
    (sgld, dict(step_size=0.0), "step_size"),
    (sgld, dict(step_size=-1e-3), "step_size"),
    (sgld, dict(num_burnin=20000, num_steps=20000), "num_burnin"),
    (sgld, dict(num_samples=1001), "num_samples"),
    (sgld, dict(batch_size=0), "batch_size"),
    (sgld, dict(num_steps=2000, num_burnin=1500, num_samples=4000), "num_steps"),
    (sgld, dict(step_size_schedule="cosine"), "step_size_schedule"),
    (sgld, dict(final_step_size_fraction=0.0), "final_step_size_fraction"),
    (sghmc, dict(num_integration_steps=0), "num_integration_steps"),
    (sghmc, dict(friction=0.0), "friction"),
    (csgmcmc, dict(exploration_fraction=1.0), "exploration_fraction"),
    (csgmcmc, dict(num_cycles=0), "num_cycles"),
    (csgmcmc, dict(num_samples=1002), "num_chains × num_cycles"),
])
def test_bad_options_name_the_argument(module, options, name):
    with pytest.raises(InvalidInputError, match=name):
        module.Config(**options)


def test_batch_larger_than_the_data_is_refused():
    data = tiny_data(n_train=40)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    with pytest.raises(InvalidInputError, match="batch_size must be at most the 40"):
        sgld.fit(spec, data, sgld.Config(num_steps=100, num_burnin=10, num_samples=10,
                                         num_chains=1, batch_size=41),
                 seed=0, progress_bar=False)
