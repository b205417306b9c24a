"""Mean-field VI (``uz.fit("mfvi", ...)``): the known mean-field optimum of a
Gaussian model, minibatch scaling, convergence checks, the Pyro backend."""

import warnings

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.methods import mfvi

SEEDS = (0, 1, 2, 3)
K_SE = 4.0


def linear_regression_model(noise_sd, prior_sd, batch_size):
    """y ~ N(Xβ, noise_sd²), β ~ N(0, prior_sd²): the posterior is Gaussian."""
    import numpyro
    import numpyro.distributions as dist

    def model(X, y, kl_weight):
        with numpyro.handlers.scale(scale=kl_weight):
            beta = numpyro.sample("beta", dist.Normal(0.0, prior_sd).expand((X.shape[1],))
                                  .to_event(1))
        with numpyro.plate("data", X.shape[0], subsample_size=batch_size):
            Xb = numpyro.subsample(X, event_dim=1)
            yb = numpyro.subsample(y, event_dim=0)
            numpyro.sample("y", dist.Normal(Xb @ beta, noise_sd), obs=yb)

    return model


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    n, p, noise_sd, prior_sd = 200, 3, 1.0, 1.0
    # Correlated inputs, so the mean-field variances 1/A_jj differ from the
    # posterior's marginal variances (A⁻¹)_jj: the test tells them apart.
    X = rng.normal(size=(n, p)) @ np.array([[1, 0.8, 0], [0, 0.6, 0.5], [0, 0, 1.0]])
    y = X @ np.array([0.5, -1.0, 0.25]) + noise_sd * rng.normal(size=n)
    precision = X.T @ X / noise_sd**2 + np.eye(p) / prior_sd**2
    mean = np.linalg.solve(precision, X.T @ y / noise_sd**2)
    mf_sd = 1 / np.sqrt(np.diag(precision))
    assert np.any(np.sqrt(np.diag(np.linalg.inv(precision))) > 1.5 * mf_sd)
    return X.astype(np.float32), y.astype(np.float32), (noise_sd, prior_sd), mean, mf_sd


def fit_regression(regression, batch_size, **options):
    X, y, (noise_sd, prior_sd), _, _ = regression
    cfg = uz.methods.make_config("mfvi", **{"num_steps": 4000, "learning_rate": 0.02,
                                             "num_particles": 4, **options})
    out = []
    for seed in SEEDS:
        loc, scale, losses = mfvi.optimize_numpyro(
            linear_regression_model, (noise_sd, prior_sd, batch_size), {"beta": (X.shape[1],)},
            {"beta": np.zeros(X.shape[1])}, (X, y), cfg, seed)
        out.append((loc["beta"], scale["beta"], losses))
    return out


def assert_recovers_optimum(fits, mean, mf_sd):
    """Each seed's final iterate is the optimum plus optimiser noise; the spread over
    seeds measures that noise, and the seed average must lie within K_SE of its
    standard error of the optimum."""
    for index, truth in ((0, mean), (1, mf_sd)):
        values = np.array([f[index] for f in fits])
        se = values.std(axis=0, ddof=1) / np.sqrt(len(fits))
        # Float32 arithmetic bounds how small the noise can be measured to be.
        se = np.maximum(se, 1e-5 * np.abs(truth))
        assert np.all(np.abs(values.mean(0) - truth) < K_SE * se), \
            (values.mean(0), truth, se)


def test_recovers_the_mean_field_optimum_of_linear_regression(regression):
    _, _, _, mean, mf_sd = regression
    assert_recovers_optimum(fit_regression(regression, None), mean, mf_sd)


@pytest.mark.slow
def test_minibatches_target_the_same_optimum(regression):
    _, _, _, mean, mf_sd = regression
    fits = fit_regression(regression, 50, num_steps=6000, lr_schedule="exponential",
                          final_lr_fraction=0.01)
    assert_recovers_optimum(fits, mean, mf_sd)


def tiny_problem():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 2))
    y = (rng.random(120) < 1 / (1 + np.exp(-(1.5 * X[:, 0] - X[:, 1])))).astype(int)
    return uz.ClassificationData(X[:100], y[:100], X[100:], y[100:], n_classes=2)


def test_fit_returns_draws_from_q_and_the_elbo_trace():
    data = tiny_problem()
    spec = uz.MLPSpec(2, 2, hidden=())
    post = uz.fit("mfvi", spec, data, seed=0, num_steps=3000, num_samples=4000,
                  progress_bar=False)
    assert post.converged is True and post.warnings == ()
    assert post.sample_shape == (1, 4000)
    d = post.diagnostics
    assert d["elbo"].shape == (3000,)
    assert d["elbo"][-300:].mean() > d["elbo"][:300].mean()
    flat = spec.flatten(post.draws, leading=1)
    # Draws come from N(q_mean, q_std²): their mean is within 4 standard errors.
    se = d["q_std"] / np.sqrt(4000)
    assert np.all(np.abs(flat.mean(0) - d["q_mean"]) < K_SE * se)
    # ... and their sd within 4 standard errors (sd·/√(2S) for a normal sample).
    assert np.all(np.abs(flat.std(0) - d["q_std"]) < K_SE * d["q_std"] / np.sqrt(2 * 4000))


def test_too_few_steps_warns_and_is_marked():
    data = tiny_problem()
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    with pytest.warns(uz.ConvergenceWarning, match="ELBO was still rising"):
        post = uz.fit("mfvi", spec, data, seed=0, num_steps=60, num_samples=10,
                      progress_bar=False)
    assert post.converged is False and post.warnings[0].startswith("mfvi:")


def test_kl_annealing_ramps_to_one():
    cfg = uz.methods.make_config("mfvi", num_steps=100, kl_annealing_steps=10)
    assert [mfvi.kl_weight_at(cfg, s) for s in (0, 4, 9, 50)] == [0.1, 0.5, 1.0, 1.0]
    assert mfvi.learning_rate_at(cfg, 0) == pytest.approx(cfg.learning_rate)
    assert mfvi.learning_rate_at(cfg, 99) == pytest.approx(cfg.learning_rate * 0.1)


@pytest.mark.slow
def test_pyro_backend_agrees_with_numpyro():
    data = tiny_problem()
    spec = uz.MLPSpec(2, 2, hidden=())
    options = dict(num_steps=2000, num_samples=10, progress_bar=False, learning_rate=0.02)
    numpyro_fits = np.array([uz.fit("mfvi", spec, data, seed=s, **options)
                             .diagnostics["q_mean"] for s in SEEDS])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        pyro_fit = uz.fit("mfvi", spec, data, seed=0, backend="pyro", **options)
    # Both are the optimum plus optimiser noise of the same size: the spread of
    # the NumPyro seeds measures it.
    sd = numpyro_fits.std(0, ddof=1)
    diff = pyro_fit.diagnostics["q_mean"] - numpyro_fits.mean(0)
    assert np.all(np.abs(diff) < K_SE * sd * np.sqrt(1 + 1 / len(SEEDS))), (diff, sd)


@pytest.mark.parametrize("option, value", [
    ("num_steps", 0), ("learning_rate", -1.0), ("lr_schedule", "step"),
    ("kl_annealing_steps", 10**9), ("batch_size", 0), ("backend", "tfp"),
    ("init_scale", 0.0), ("final_lr_fraction", 2.0),
])
def test_bad_config_is_rejected(option, value):
    with pytest.raises((uz.InvalidInputError, uz.InvalidTypeError), match=option):
        uz.methods.make_config("mfvi", **{option: value})


def test_batch_larger_than_data_is_rejected():
    data = tiny_problem()
    with pytest.raises(uz.InvalidInputError, match="batch_size"):
        uz.fit("mfvi", uz.MLPSpec(2, 2, hidden=()), data, seed=0, batch_size=1000,
               progress_bar=False)
