"""Laplace: exact on linear-Gaussian, Newton reference on logistic regression, GGN, sampling."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

import uqzoo as uz
from uqzoo.methods import laplace


def _linear_gaussian(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.array([1.0, -0.5, 0.25]) + 0.3 + 0.4 * rng.normal(size=n)
    return X, y


def test_linear_gaussian_is_exact():
    """No hidden layer, Gaussian likelihood: covariance and evidence are the closed form."""
    X, y = _linear_gaussian()
    sigma, prior_scale = 0.4, 0.8
    delta = 1 / prior_scale ** 2
    spec = uz.MLPSpec(3, 2, hidden=(), prior_scale=prior_scale)
    Z = np.c_[X, np.ones(len(y))]                       # flattened layout: weight, then bias
    precision = Z.T @ Z / sigma ** 2 + delta * np.eye(4)
    theta = np.linalg.solve(precision, Z.T @ y / sigma ** 2)
    evidence = stats.multivariate_normal(np.zeros(len(y)),
                                         sigma ** 2 * np.eye(len(y)) + Z @ Z.T / delta).logpdf(y)
    params = spec.unflatten(theta)
    full = laplace.laplace_at(spec, params, X, y, prior_tuning="none",
                              likelihood="gaussian", noise_scale=sigma)
    np.testing.assert_allclose(np.linalg.inv(full.precision), np.linalg.inv(precision),
                               rtol=1e-8, atol=1e-12)
    assert abs(full.log_marginal_likelihood - evidence) < 1e-8
    diag = laplace.laplace_at(spec, params, X, y, hessian="diag", prior_tuning="none",
                              likelihood="gaussian", noise_scale=sigma)
    np.testing.assert_allclose(diag.precision, np.diag(precision), rtol=1e-12)


def test_scalar_tuning_maximises_the_evidence():
    X, y = _linear_gaussian(seed=1)
    spec = uz.MLPSpec(3, 2, hidden=())
    Z = np.c_[X, np.ones(len(y))]
    theta = np.linalg.lstsq(Z, y, rcond=None)[0]
    tuned = laplace.laplace_at(spec, spec.unflatten(theta), X, y, likelihood="gaussian",
                               noise_scale=0.4)
    best = tuned.prior_precision[0]
    for factor in (0.9, 1.1):
        other = laplace.laplace_at(
            uz.MLPSpec(3, 2, hidden=(), prior_scale=1 / math.sqrt(best * factor)),
            spec.unflatten(theta), X, y, prior_tuning="none", likelihood="gaussian",
            noise_scale=0.4)
        assert other.log_marginal_likelihood < tuned.log_marginal_likelihood
    # Stationarity: at the optimum of log Z(δ) = const − δ‖θ‖²/2 + P/2 log δ − ½ log det(G + δI).
    lam = np.linalg.eigvalsh(tuned.ggn)
    grad = -0.5 * theta @ theta + 2.0 / best - 0.5 * np.sum(1 / (lam + best))
    assert abs(grad * best) < 1e-4


@pytest.fixture(scope="module")
def logistic():
    rng = np.random.default_rng(0)
    n, d = 200, 3
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([1.5, -1.0, 0.5]) + 0.3)))).astype(int)
    data = uz.ClassificationData(X, y, X[:20], y[:20], n_classes=2)
    spec = uz.MLPSpec(d, 2, hidden=(), prior_scale=1.5)
    X = data.X_train.astype(np.float64)    # the float32 rows the fit sees
    Z = np.c_[X, np.ones(n)]
    delta = 1 / spec.prior_scale ** 2
    theta = np.zeros(d + 1)
    for _ in range(100):                   # Newton's method on the log posterior
        p = 1 / (1 + np.exp(-Z @ theta))
        hessian = Z.T @ (Z * (p * (1 - p))[:, None]) + delta * np.eye(d + 1)
        theta -= np.linalg.solve(hessian, Z.T @ (p - y) + delta * theta)
    p = 1 / (1 + np.exp(-Z @ theta))
    hessian = Z.T @ (Z * (p * (1 - p))[:, None]) + delta * np.eye(d + 1)
    log_lik = np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))
    evidence = (log_lik - 0.5 * delta * theta @ theta + 0.5 * (d + 1) * np.log(delta)
                - 0.5 * np.linalg.slogdet(hessian)[1])
    return dict(data=data, spec=spec, theta=theta, hessian=hessian, evidence=evidence)


def test_logistic_regression_matches_newton(logistic):
    spec, data = logistic["spec"], logistic["data"]
    ref_theta, ref_hessian = logistic["theta"], logistic["hessian"]
    # Given the Newton MAP, the float64 core reproduces Hessian and evidence exactly.
    at_ref = laplace.laplace_at(spec, spec.unflatten(ref_theta), data.X_train, data.y_train,
                                prior_tuning="none")
    np.testing.assert_allclose(at_ref.precision, ref_hessian, rtol=1e-10)
    assert abs(at_ref.log_marginal_likelihood - logistic["evidence"]) < 1e-8
    # End to end: the trained MAP is the Newton MAP to float32 precision, far inside
    # the posterior's spread; Hessian and evidence follow to the same precision.
    post = uz.fit("laplace", spec, data, seed=0, progress_bar=False, prior_tuning="none",
                  num_epochs=2000, learning_rate=0.05, num_samples=4000)
    ours = spec.flatten({k: v.astype(np.float64) for k, v in post.anchor.items()})
    sd = np.sqrt(np.diag(np.linalg.inv(ref_hessian)))
    assert np.all(np.abs(ours - ref_theta) < 1e-4 * sd)
    np.testing.assert_allclose(post.diagnostics["posterior_precision"], ref_hessian, rtol=1e-4)
    assert abs(post.diagnostics["log_marginal_likelihood"] - logistic["evidence"]) < 1e-3
    # The draws follow N(θ*, H⁻¹): mean and covariance within Monte Carlo error.
    draws = spec.flatten(post.draws, leading=1).astype(np.float64)
    cov = np.linalg.inv(post.diagnostics["posterior_precision"])
    n, P = draws.shape
    entries = list(itertools.combinations_with_replacement(range(P), 2))
    k = stats.norm.isf(1e-3 / (2 * (P + len(entries))))
    assert np.all(np.abs(draws.mean(0) - ours) < k * np.sqrt(np.diag(cov) / n))
    sample_cov = np.cov(draws, rowvar=False)
    for a, b in entries:
        se = np.sqrt((cov[a, b] ** 2 + cov[a, a] * cov[b, b]) / (n - 1))
        assert abs(sample_cov[a, b] - cov[a, b]) < k * se


def test_hand_written_jacobian_matches_autodiff():
    spec = uz.MLPSpec(3, 4, hidden=(5, 3), activation="tanh")
    params = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in spec.init_params(0).items()}
    X = torch.as_tensor(np.random.default_rng(0).normal(size=(6, 3)))
    z, J = laplace.logits_and_jacobian(spec, params, X)
    flat = torch.as_tensor(spec.flatten({k: v.numpy() for k, v in params.items()}))

    def logits(vector):
        p = {}
        start = 0
        for key, shape in spec.param_shapes().items():
            size = math.prod(shape)
            p[key] = vector[start:start + size].reshape(shape)
            start += size
        from uqzoo.nets import torch as tnet
        return tnet.forward_logits(spec, p, X)

    ref = torch.func.jacrev(logits)(flat)                      # (N, O, P)
    np.testing.assert_allclose(J.numpy(), ref.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(z.numpy(), logits(flat).numpy(), rtol=1e-12)
    _, J_last = laplace.logits_and_jacobian(spec, params, X, last_layer_only=True)
    last = laplace._subset_index(spec, "last_layer")
    np.testing.assert_allclose(J_last.numpy(), ref.numpy()[..., last], rtol=1e-12, atol=1e-14)


def test_multiclass_ggn_equals_its_definition():
    spec = uz.MLPSpec(3, 3, hidden=(4,))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 3, size=30)
    params = spec.init_params(2)
    result = laplace.laplace_at(spec, params, X, y, prior_tuning="none")
    t = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in params.items()}
    z, J = laplace.logits_and_jacobian(spec, t, torch.as_tensor(X))
    p = torch.softmax(z, -1).numpy()
    ggn = sum(J[n].numpy().T @ (np.diag(p[n]) - np.outer(p[n], p[n])) @ J[n].numpy()
              for n in range(30))
    np.testing.assert_allclose(result.ggn, ggn, rtol=1e-10, atol=1e-12)
    diag = laplace.laplace_at(spec, params, X, y, hessian="diag", prior_tuning="none")
    np.testing.assert_allclose(diag.ggn, np.diag(ggn), rtol=1e-10, atol=1e-12)
    lp = laplace.laplace_at(spec, params, X, y, prior_tuning="layerwise")
    assert lp.prior_precision.shape == (2,) and np.all(lp.prior_precision > 0)


@pytest.fixture(scope="module")
def net_posts():
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=60, seed=4)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(8, 8))
    common = dict(num_epochs=300, learning_rate=0.02, progress_bar=False)
    posts = {
        "glm": uz.fit("laplace", spec, data, seed=0, num_samples=2000, **common),
        "last": uz.fit("laplace", spec, data, seed=0, subset="last_layer", num_samples=50,
                       **common),
        "nn": uz.fit("laplace", spec, data, seed=0, predictive="nn", hessian="diag",
                     prior_tuning="layerwise", num_samples=50, **common),
    }
    return data, spec, posts


def test_probit_mean_uses_the_linearised_variance(net_posts):
    data, spec, posts = net_posts
    post = posts["glm"]
    assert post.predictive == "glm"
    X = np.array(data.X_test)
    approx = laplace.probit_mean(post, X)
    assert approx.shape == (60, 2)
    # Rebuild μ and v from the glm draws: the linearised logits are N(μ, v) exactly.
    from uqzoo.nets import torch as tnet
    draws = tnet.to_tensors(post.draws)
    anchor = tnet.to_tensors(post.anchor)
    f = tnet.linearized_logits(spec, anchor, draws, torch.from_numpy(X))[..., 0].numpy()
    mu = tnet.forward_logits(spec, anchor, torch.from_numpy(X))[:, 0].numpy()
    S = f.shape[0]
    v_mc = f.astype(np.float64).var(0, ddof=1)
    v = (8 / math.pi) * ((mu / np.log(approx[:, 1] / approx[:, 0])) ** 2 - 1)
    # Sample variance of S Gaussian draws: relative SE √(2/(S−1)); Bonferroni over 60 points.
    k = stats.norm.isf(1e-3 / (2 * 60))
    ok = np.abs(mu) > 0.05                     # v is recoverable only where μ is not ~0
    assert np.all(np.abs(v_mc[ok] / v[ok] - 1) < k * math.sqrt(2 / (S - 1)))
    # The probit value is within 0.02 of the exact logistic-normal integral.
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    exact = np.sum(weights[None] / (1 + np.exp(-(mu[:, None] + np.sqrt(v)[:, None] * nodes))),
                   axis=1) / np.sqrt(2 * np.pi)
    assert np.max(np.abs(approx[:, 1] - exact)) < 0.02


def test_subsets_predictives_and_round_trip(net_posts, tmp_path):
    data, _spec, posts = net_posts
    last = posts["last"]
    # Only the last layer varies across draws.
    np.testing.assert_array_equal(last.draws["layers.0.weight"],
                                  np.broadcast_to(last.anchor["layers.0.weight"],
                                                  last.draws["layers.0.weight"].shape))
    assert np.std(last.draws["layers.2.weight"], axis=0).min() > 0
    assert np.isnan(last.diagnostics["prior_precision"][:2]).all()
    nn = posts["nn"]
    assert nn.predictive == "nn" and nn.diagnostics["posterior_precision"].ndim == 1
    assert nn.diagnostics["prior_precision"].shape == (3,)
    path = tmp_path / "laplace.nc"
    posts["glm"].save(path)
    loaded = uz.load_posterior(path)
    assert loaded.predictive == "glm"
    X = np.array(data.X_test[:10])
    np.testing.assert_array_equal(loaded.predict_proba_draws(X),
                                  posts["glm"].predict_proba_draws(X))
    np.testing.assert_allclose(laplace.probit_mean(loaded, X),
                               laplace.probit_mean(posts["glm"], X))


def test_bad_config_is_rejected():
    data = uz.datasets.load("sim-teacher", n_train=50, n_test=10, seed=0)
    spec = uz.MLPSpec(data.n_features, 2)
    for key, value in [("subset", "first_layer"), ("hessian", "kfac"),
                       ("prior_tuning", "cv"), ("predictive", "probit")]:
        with pytest.raises(uz.InvalidInputError, match=key):
            uz.fit("laplace", spec, data, **{key: value})
    with pytest.raises(uz.InvalidTypeError, match="laplace"):
        laplace.probit_mean("posterior", np.zeros((1, 5)))
