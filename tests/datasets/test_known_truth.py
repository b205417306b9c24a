"""The simulated problems whose truth is not a draw from the network prior."""

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.datasets.known_truth import nonlinear_logit


def test_shared_covariance_gives_a_linear_log_odds_and_unequal_a_quadratic_one():
    for covariance, linear in (("shared", True), ("unequal", False)):
        data = uz.datasets.load("gaussian-mixture", p=3, n_train=20, n_test=400, seed=1,
                                covariance=covariance)
        p1 = data.p_true_test[:, 1]
        log_odds = np.log(p1) - np.log1p(-p1)
        X = np.asarray(data.X_test, dtype=np.float64)
        design = np.column_stack([np.ones(len(X)), X])
        coef, *_ = np.linalg.lstsq(design, log_odds, rcond=None)
        residual = np.abs(design @ coef - log_odds).max()
        # float32 inputs: the linear fit is exact up to the rounding of X (~1e-7 relative)
        assert (residual < 1e-4) == linear, (covariance, residual)


def test_separation_is_the_mahalanobis_distance_between_the_means():
    data = uz.datasets.load("gaussian-mixture", p=5, n_train=20, n_test=20, separation=1.7)
    mu0, mu1 = data.meta["means"]
    cov0 = data.meta["covariances"][0]
    d = mu1 - mu0
    np.testing.assert_allclose(np.sqrt(d @ np.linalg.solve(cov0, d)), 1.7, rtol=1e-12)


def test_the_truth_is_not_a_tanh_network_draw_and_is_reproducible():
    a = uz.datasets.load("nonlinear-logistic", p=5, n_train=50, n_test=30, seed=2)
    b = uz.datasets.load("nonlinear-logistic", p=5, n_train=50, n_test=30, seed=2)
    np.testing.assert_array_equal(a.p_true_test, b.p_true_test)      # same seed, same machine
    logit = nonlinear_logit(np.asarray(a.X_test, np.float64), a.meta["coefficients"], 1.0)
    np.testing.assert_allclose(a.p_true_test[:, 1], 1 / (1 + np.exp(-logit)), rtol=1e-6)
    c = uz.datasets.load("nonlinear-logistic", p=5, n_train=50, n_test=30, seed=2,
                         truth_seed=1)
    assert not np.allclose(a.p_true_test, c.p_true_test)


def test_default_problems_are_neither_trivial_nor_hopeless():
    for name in ("gaussian-mixture", "nonlinear-logistic"):
        p1 = uz.datasets.load(name, n_train=20, n_test=5000).p_true_test[:, 1]
        uncertain = np.mean((p1 > 0.05) & (p1 < 0.95))
        assert 0.3 < uncertain < 0.8, (name, uncertain)


@pytest.mark.parametrize(("name", "options", "needle"), [
    ("gaussian-mixture", {"balance": 1.0}, "balance"),
    ("gaussian-mixture", {"separation": 0}, "separation"),
    ("gaussian-mixture", {"covariance": "diagonal"}, "covariance"),
    ("gaussian-mixture", {"p": 1000, "n_test": 10**6}, "2 GiB"),
    ("nonlinear-logistic", {"p": 1}, "at least 2"),
    ("nonlinear-logistic", {"logit_scale": -1.0}, "logit_scale"),
])
def test_bad_options_are_clear_errors(name, options, needle):
    with pytest.raises(uz.InvalidInputError, match=needle):
        uz.datasets.load(name, **options)


def test_listed_by_the_registry_and_the_cli():
    assert {"gaussian-mixture", "nonlinear-logistic"} <= set(uz.datasets.names())
