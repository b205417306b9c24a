"""``p_true_test`` of the simulators is itself calibrated.

If p_true(x) = P(y = 1 | x) exactly, then given the test inputs the labels are
independent Bernoulli(p_i), so in a bin B of p_true values the count of y = 1
has mean Σ_B p_i and variance Σ_B p_i (1 - p_i). The bin's frequency of y = 1
therefore differs from its mean p_true by a standard error
sqrt(Σ_B p_i (1 - p_i)) / n_B; we allow 4 of them (two-sided 6e-5 per bin).
"""

import numpy as np
import pytest

import uqzoo.datasets as datasets

N_SE = 4.0


def assert_calibrated(p: np.ndarray, y: np.ndarray, n_bins: int = 10) -> None:
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    bins = np.clip(np.digitize(p, edges) - 1, 0, n_bins - 1)
    for b in range(n_bins):
        in_bin = bins == b
        n = in_bin.sum()
        if n == 0:
            continue
        p_b, y_b = p[in_bin], y[in_bin]
        se = np.sqrt(np.sum(p_b * (1 - p_b))) / n
        gap = abs(y_b.mean() - p_b.mean())
        assert gap <= N_SE * se, (
            f"bin [{edges[b]:.1f}, {edges[b + 1]:.1f}): n={n}, mean p_true={p_b.mean():.4f}, "
            f"frequency={y_b.mean():.4f}, {gap / max(se, 1e-300):.1f} standard errors"
        )


def test_sim_teacher_binary_p_true_is_calibrated():
    data = datasets.load("sim-teacher", p=5, n_train=200, n_test=200_000, seed=3)
    assert_calibrated(data.p_true_test[:, 1], data.y_test)


@pytest.mark.parametrize("teacher", [
    dict(teacher_hidden=(30,), teacher_activation="relu", teacher_prior="fan_in",
         teacher_prior_scale=2.0),
    dict(teacher_prior="fan_in", teacher_prior_scale=2.0),
])
def test_sim_teacher_p_true_is_calibrated_for_other_teachers(teacher):
    """The mis-specified (wide ReLU) and fan-in-prior teachers: same calibration check."""
    data = datasets.load("sim-teacher", p=5, n_train=200, n_test=100_000, seed=6,
                         teacher_seed=1, **teacher)
    assert_calibrated(data.p_true_test[:, 1], data.y_test)


def test_sim_teacher_multiclass_p_true_is_calibrated_per_class():
    data = datasets.load("sim-teacher", p=4, n_classes=3, n_train=200, n_test=100_000, seed=4)
    for k in range(3):
        assert_calibrated(data.p_true_test[:, k], (data.y_test == k).astype(float))


@pytest.mark.slow
def test_hsi_sim_p_true_is_calibrated():
    p, y = [], []
    for seed in (0, 1):
        data = datasets.load("hsi-sim", size=200, seed=seed)
        p.append(data.p_true_test[:, 1])
        y.append(data.y_test)
    assert_calibrated(np.concatenate(p), np.concatenate(y))


@pytest.mark.slow
def test_hsi_sim_p_true_is_calibrated_with_few_bands_and_heavy_occlusion():
    data = datasets.load("hsi-sim", size=200, n_bands=30, occluded_fraction=0.6,
                         noise=0.02, seed=5)
    assert_calibrated(data.p_true_test[:, 1], data.y_test)


def test_calibration_check_can_fail():
    # The check must reject a truth that is off: shift p_true by 0.1.
    data = datasets.load("sim-teacher", p=5, n_train=200, n_test=50_000, seed=3)
    with pytest.raises(AssertionError):
        assert_calibrated(np.clip(data.p_true_test[:, 1] + 0.1, 0, 1), data.y_test)


@pytest.mark.parametrize("covariance", ["shared", "unequal"])
@pytest.mark.parametrize("balance", [0.5, 0.2])
def test_gaussian_mixture_p_true_is_the_calibrated_bayes_posterior(covariance, balance):
    """Labels are drawn first and x given y, so calibration of p_true checks the
    Bayes-posterior formula itself, not merely how y was sampled."""
    data = datasets.load("gaussian-mixture", p=4, n_train=50, n_test=40_000, seed=3,
                         covariance=covariance, balance=balance)
    assert_calibrated(data.p_true_test[:, 1], data.y_test)
    # and the class balance is the prior: mean posterior = P(y = 1)
    se = np.sqrt(balance * (1 - balance) / data.n_test)
    assert abs(data.p_true_test[:, 1].mean() - balance) <= N_SE * se


def test_nonlinear_logistic_p_true_is_calibrated():
    data = datasets.load("nonlinear-logistic", p=6, n_train=50, n_test=40_000, seed=4)
    assert_calibrated(data.p_true_test[:, 1], data.y_test)
