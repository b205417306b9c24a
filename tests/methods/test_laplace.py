"""Laplace: exact on linear-Gaussian, Newton reference on logistic regression, GGN, sampling.

The Jacobians and the curvature come from autodiff of the shared forward;
they are checked here against central finite differences (independent of
autograd) with a Richardson estimate of the truncation error, and against
the closed forms of Λ (p(1 − p), diag(p) − ppᵀ).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

import uqzoo as uz
from uqzoo.methods import laplace
from uqzoo.nets import torch as tnet

U64 = 2.0 ** -53        # unit roundoff of float64


def gamma64(n: int) -> float:
    """Higham's γ_n: the relative error bound of an n-term float64 sum or dot product."""
    return n * U64 / (1 - n * U64)


def _gaussian(noise_scale: float):
    """Per-row log N(y | f, noise_scale²) on the one output: the exact linear-Gaussian case."""
    def log_likelihood_terms(logits, y):
        r = (y - logits[:, 0]) / noise_scale
        return -0.5 * r * r - math.log(noise_scale) - 0.5 * math.log(2 * math.pi)
    return log_likelihood_terms


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
    spec = uz.MLPSpec(3, 2, hidden=(), prior_scale=prior_scale, prior="iid")
    Z = np.c_[X, np.ones(len(y))]                       # flattened layout: weight, then bias
    precision = Z.T @ Z / sigma ** 2 + delta * np.eye(4)
    theta = np.linalg.solve(precision, Z.T @ y / sigma ** 2)
    evidence = stats.multivariate_normal(np.zeros(len(y)),
                                         sigma ** 2 * np.eye(len(y)) + Z @ Z.T / delta).logpdf(y)
    params = spec.unflatten(theta)
    full = laplace.laplace_at(spec, params, X, y, prior_tuning="none",
                              log_likelihood_terms=_gaussian(sigma))
    np.testing.assert_allclose(np.linalg.inv(full.precision), np.linalg.inv(precision),
                               rtol=1e-8, atol=1e-12)
    assert abs(full.log_marginal_likelihood - evidence) < 1e-8
    diag = laplace.laplace_at(spec, params, X, y, hessian="diag", prior_tuning="none",
                              log_likelihood_terms=_gaussian(sigma))
    np.testing.assert_allclose(diag.precision, np.diag(precision), rtol=1e-12)


def test_scalar_tuning_maximises_the_evidence():
    X, y = _linear_gaussian(seed=1)
    spec = uz.MLPSpec(3, 2, hidden=(), prior="iid")
    Z = np.c_[X, np.ones(len(y))]
    theta = np.linalg.lstsq(Z, y, rcond=None)[0]
    tuned = laplace.laplace_at(spec, spec.unflatten(theta), X, y,
                               log_likelihood_terms=_gaussian(0.4))
    best = tuned.prior_precision[0]
    for factor in (0.9, 1.1):
        other = laplace.laplace_at(
            uz.MLPSpec(3, 2, hidden=(), prior_scale=1 / math.sqrt(best * factor), prior="iid"),
            spec.unflatten(theta), X, y, prior_tuning="none",
            log_likelihood_terms=_gaussian(0.4))
        assert other.log_marginal_likelihood < tuned.log_marginal_likelihood
    # Stationarity: at the optimum of log Z(δ) = const − δ‖θ‖²/2 + P/2 log δ − ½ log det(G + δI).
    lam = np.linalg.eigvalsh(tuned.ggn)
    grad = -0.5 * theta @ theta + 2.0 / best - 0.5 * np.sum(1 / (lam + best))
    assert abs(grad * best) < 1e-4


def test_fan_in_prior_gives_each_parameter_its_own_precision_exactly():
    """Linear-Gaussian closed form under the fan-in prior: weights N(0, s²/D), bias N(0, s²)."""
    X, y = _linear_gaussian(seed=2)
    sigma, s = 0.4, 0.8
    spec = uz.MLPSpec(3, 2, hidden=(), prior_scale=s)                 # prior="fan_in"
    delta = np.array([3 / s ** 2] * 3 + [1 / s ** 2])
    Z = np.c_[X, np.ones(len(y))]
    precision = Z.T @ Z / sigma ** 2 + np.diag(delta)
    theta = np.linalg.solve(precision, Z.T @ y / sigma ** 2)
    evidence = stats.multivariate_normal(
        np.zeros(len(y)), sigma ** 2 * np.eye(len(y)) + Z @ np.diag(1 / delta) @ Z.T).logpdf(y)
    full = laplace.laplace_at(spec, spec.unflatten(theta), X, y, prior_tuning="none",
                              log_likelihood_terms=_gaussian(sigma))
    np.testing.assert_allclose(full.precision, precision, rtol=1e-12)
    assert abs(full.log_marginal_likelihood - evidence) < 1e-8
    # Scalar tuning scales every precision by one factor c: no factor within ±5 % on a
    # fine grid beats the tuned one.
    tuned = laplace.laplace_at(spec, spec.unflatten(theta), X, y,
                               log_likelihood_terms=_gaussian(sigma))
    c = tuned.prior_precision[0] * s ** 2
    grid = c * np.exp(np.linspace(-0.05, 0.05, 11))

    def closed(cc):
        # The evidence at θ* with every precision scaled by cc (prior_scale s/√cc).
        scaled = uz.MLPSpec(3, 2, hidden=(), prior_scale=s / np.sqrt(cc))
        return laplace.laplace_at(scaled, spec.unflatten(theta), X, y, prior_tuning="none",
                                  log_likelihood_terms=_gaussian(sigma)).log_marginal_likelihood
    values = [closed(cc) for cc in grid]
    # the grid's middle point is the tuned factor itself
    assert np.argmax(values) == 5
    assert abs(values[5] - tuned.log_marginal_likelihood) < 1e-8


@pytest.fixture(scope="module")
def logistic():
    rng = np.random.default_rng(0)
    n, d = 200, 3
    X = rng.normal(size=(n, d))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([1.5, -1.0, 0.5]) + 0.3)))).astype(int)
    data = uz.ClassificationData(X, y, X[:20], y[:20], n_classes=2)
    spec = uz.MLPSpec(d, 2, hidden=(), prior_scale=1.5, prior="iid")
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


def _as64(params):
    return {k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in params.items()}


def _central_differences(spec, params, X, eps):
    """(f(θ + ε e_j) − f(θ − ε e_j)) / 2ε for every flattened parameter j, (N, O, P)."""
    flat = spec.flatten({k: np.asarray(v, dtype=np.float64) for k, v in params.items()})
    X64 = torch.as_tensor(X, dtype=torch.float64)
    columns = []
    for j in range(flat.size):
        step = np.zeros_like(flat)
        step[j] = eps
        plus = tnet.forward_logits(spec, _as64(spec.unflatten(flat + step)), X64)
        minus = tnet.forward_logits(spec, _as64(spec.unflatten(flat - step)), X64)
        columns.append(((plus - minus) / (2 * eps)).numpy())
    return np.stack(columns, axis=-1)


def _finite_difference_jacobian(spec, params, X):
    """Central-difference Jacobian (N, O, P) and a bound on its error (a scalar).

    The error of a central difference is c ε² + O(ε⁴) truncation plus rounding
    of about γ·|f|/ε. Richardson: D(ε) − D(2ε) ≈ −3 c ε², so |D(ε) − D(2ε)| / 3
    estimates the truncation (doubled for the next term). For tanh and
    sigmoid networks the forward with |θ| and |x| bounds every |W h + b| on
    the way (both activations are monotone and odd or positive), so it gives
    the magnitude the float64 rounding is relative to, once per layer. With
    ε = 1e-3 the rounding term is ~1e4 times below the truncation.
    """
    eps = 1e-3
    fine = _central_differences(spec, params, X, eps)
    coarse = _central_differences(spec, params, X, 2 * eps)
    magnitude = tnet.forward_logits(spec, _as64({k: np.abs(v) for k, v in params.items()}),
                                    torch.as_tensor(np.abs(X))).numpy().max()
    rounding = spec.n_layers * gamma64(max(spec.layer_sizes) + 1) * magnitude / eps
    return fine, 2 * np.abs(fine - coarse).max() / 3 + rounding


@pytest.mark.parametrize(("activation", "n_classes"), [("tanh", 4), ("sigmoid", 2)])
def test_jacobian_matches_central_differences(activation, n_classes):
    spec = uz.MLPSpec(3, n_classes, hidden=(5, 3), activation=activation)
    params = spec.init_params(0)
    X = np.random.default_rng(0).normal(size=(6, 3))
    z, J = laplace.logits_and_jacobian(spec, _as64(params), torch.as_tensor(X))
    J_fd, error = _finite_difference_jacobian(spec, params, X)
    assert J.shape == J_fd.shape == (6, spec.n_outputs, spec.n_params)
    # A column out of place or a missing layer errs by O(|J|) ~ 0.1-1, ~1e6 times the bound.
    assert np.abs(J.numpy() - J_fd).max() <= error
    torch.testing.assert_close(z, tnet.forward_logits(spec, _as64(params), torch.as_tensor(X)),
                               rtol=0, atol=0)
    _, J_last = laplace.logits_and_jacobian(spec, _as64(params), torch.as_tensor(X),
                                            last_layer_only=True)
    last = laplace._subset_index(spec, "last_layer")
    assert np.abs(J_last.numpy() - J_fd[..., last]).max() <= error


def _lambda_closed_form(spec, logits):
    """Hessian of −log p(y | f) in the logits: p(1 − p) or diag(p) − ppᵀ, (N, O, O)."""
    if spec.n_classes == 2:
        p = 1 / (1 + np.exp(-logits[:, 0]))
        return (p * (1 - p))[:, None, None]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return np.einsum("nk,kl->nkl", p, np.eye(spec.n_classes)) - np.einsum("nk,nl->nkl", p, p)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_ggn_equals_its_finite_difference_definition(n_classes):
    """G = Σ_n J_nᵀ Λ_n J_n with J by central differences and Λ in closed form."""
    spec = uz.MLPSpec(3, n_classes, hidden=(4, 3), activation="tanh")
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(25, 3))
    y = rng.integers(0, n_classes, size=25)
    params = spec.init_params(n_classes)
    J, error = _finite_difference_jacobian(spec, params, X)
    logits = tnet.forward_logits(spec, _as64(params), torch.as_tensor(X)).numpy()
    lam = _lambda_closed_form(spec, logits)
    ggn = np.einsum("nop,noq,nqr->pr", J, lam, J)
    # G_autodiff − G_fd = Σ ΔᵀΛJ + JᵀΛΔ + ΔᵀΛΔ with |Δ| ≤ error entrywise;
    # plus the float64 rounding of both sums over n·O² terms.
    lam_abs, J_abs = np.abs(lam), np.abs(J)
    side = error * np.einsum("noq,nqr->r", lam_abs, J_abs)
    bound = (side[:, None] + side[None, :] + error ** 2 * lam_abs.sum()
             + 2 * gamma64(J.shape[0] * spec.n_outputs ** 2 + 2)
             * np.einsum("nop,noq,nqr->pr", J_abs, lam_abs, J_abs))
    full = laplace.laplace_at(spec, params, X, y, prior_tuning="none")
    assert np.all(np.abs(full.ggn - ggn) <= bound)
    np.testing.assert_array_equal(full.ggn, full.ggn.T)
    diag = laplace.laplace_at(spec, params, X, y, hessian="diag", prior_tuning="none")
    assert np.all(np.abs(diag.ggn - np.diag(ggn)) <= np.diag(bound))
    last = laplace._subset_index(spec, "last_layer")
    sub = laplace.laplace_at(spec, params, X, y, subset="last_layer", prior_tuning="none")
    assert np.all(np.abs(sub.ggn - ggn[np.ix_(last, last)]) <= bound[np.ix_(last, last)])
    # log p(D | θ*) is the shared likelihood's.
    expected = float(tnet.log_likelihood(spec, _as64(params), torch.as_tensor(X),
                                         torch.as_tensor(y)))
    assert abs(full.log_likelihood - expected) <= gamma64(25) * np.abs(
        tnet.log_likelihood_terms(spec, torch.as_tensor(logits), torch.as_tensor(y)).numpy()
    ).sum()


def test_multiclass_ggn_equals_its_definition():
    spec = uz.MLPSpec(3, 3, hidden=(4,))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 3, size=30)
    params = spec.init_params(2)
    result = laplace.laplace_at(spec, params, X, y, prior_tuning="none")
    z, J = laplace.logits_and_jacobian(spec, _as64(params), torch.as_tensor(X))
    J = J.numpy()
    lam = _lambda_closed_form(spec, z.numpy())
    ggn = np.einsum("nop,noq,nqr->pr", J, lam, J)
    # Same Jacobian, Λ by autodiff or in closed form: the two sums differ by
    # rounding of ~n·O² terms, and Λ's own rounding of a few ulp of p.
    magnitude = np.einsum("nop,noq,nqr->pr", np.abs(J), np.abs(lam) + 4 * U64, np.abs(J))
    tol = 2 * gamma64(30 * 9 + 4) * magnitude
    assert np.all(np.abs(result.ggn - ggn) <= tol)
    diag = laplace.laplace_at(spec, params, X, y, hessian="diag", prior_tuning="none")
    assert np.all(np.abs(diag.ggn - np.diag(ggn)) <= np.diag(tol))
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


def test_the_map_is_the_map_methods_of_the_same_seed():
    """Laplace is built around exactly the network uz.fit("map", seed) trains, so that in a
    comparison the laplace row differs from the map row by the approximation alone."""
    data = uz.datasets.load("sim-teacher", n_train=120, n_test=20, seed=2)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(5,))
    common = dict(num_epochs=150, progress_bar=False)
    point = uz.fit("map", spec, data, seed=7, **common)
    post = uz.fit("laplace", spec, data, seed=7, num_samples=20, **common)
    for key, value in post.anchor.items():
        np.testing.assert_array_equal(value, point.draws[key][0])
    # the draws are their own stream: another seed, other draws around another MAP
    other = uz.fit("laplace", spec, data, seed=8, num_samples=20, **common)
    assert not np.array_equal(other.draws["layers.0.weight"], post.draws["layers.0.weight"])
