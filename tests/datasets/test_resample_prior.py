"""uz.datasets.resample_prior (issue 15): exact class counts, points taken from the
test set (without replacement by default), the truth moved to the new prior by
Bayes' rule -- checked against the generator's exact posterior -- and clear
errors for priors that are not one."""

import math

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.datasets.known_truth import shifted_p_true_gaussian_mixture
from uqzoo.testing import tiny_data

EPS = float(np.finfo(np.float64).eps)


@pytest.fixture(scope="module")
def mixture():
    return uz.datasets.load("gaussian-mixture", p=2, n_train=100, n_test=3000, seed=0)


def rows_of(X):
    return [tuple(r) for r in np.asarray(X)]


def test_counts_follow_the_prior_and_points_come_from_the_test_set(mixture):
    rare = uz.datasets.resample_prior(mixture, {1: 0.005}, seed=1)
    counts = np.bincount(rare.y_test, minlength=2)
    available = np.bincount(mixture.y_test, minlength=2)
    # default size: the scarcer class used up at its prior share
    n = math.floor(min(available[0] / 0.995, available[1] / 0.005) + 1e-9)
    assert rare.n_test == n
    assert counts[1] == round(0.005 * n) and counts.sum() == n
    # every row is a distinct test row, with its own label and coordinates
    lookup = {r: i for i, r in enumerate(rows_of(mixture.X_test))}
    index = np.array([lookup[r] for r in rows_of(rare.X_test)])
    assert np.unique(index).size == n and np.all(np.diff(index) > 0)
    np.testing.assert_array_equal(rare.y_test, mixture.y_test[index])
    np.testing.assert_array_equal(rare.X_train, mixture.X_train)
    record = rare.meta["resampled_prior"]
    assert record["counts"] == {0: int(counts[0]), 1: int(counts[1])}
    assert record["prior"] == {0: pytest.approx(0.995), 1: pytest.approx(0.005)}
    assert (record["replace"], record["seed"], record["n"]) == (False, 1, n)


def test_largest_remainders_make_the_counts_sum_to_n():
    data = tiny_data(n_classes=3, n_train=60, n_test=300)
    out = uz.datasets.resample_prior(data, [0.2, 0.3, 0.5], n=101, seed=0, replace=True)
    counts = np.bincount(out.y_test, minlength=3)
    assert counts.sum() == 101
    assert np.all(np.abs(counts - 101 * np.array([0.2, 0.3, 0.5])) < 1)


def test_with_replacement_any_size_and_repeats(mixture):
    big = uz.datasets.resample_prior(mixture, {1: 0.9}, n=5000, replace=True, seed=2)
    assert big.n_test == 5000 and np.bincount(big.y_test)[1] == 4500
    assert len(set(rows_of(big.X_test))) < 5000        # points repeat
    default = uz.datasets.resample_prior(mixture, {1: 0.5}, replace=True, seed=2)
    assert default.n_test == mixture.n_test


def test_the_same_seed_gives_the_same_points(mixture):
    a = uz.datasets.resample_prior(mixture, {1: 0.1}, seed=5)
    b = uz.datasets.resample_prior(mixture, {1: 0.1}, seed=5)
    c = uz.datasets.resample_prior(mixture, {1: 0.1}, seed=6)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    assert not np.array_equal(a.X_test, c.X_test)


def test_p_true_moves_to_the_new_prior_exactly(mixture):
    # gaussian-mixture: P(y = 1 | x) = σ(log-likelihood ratio + logit(balance)),
    # so the exact truth at a new prior is the generator's posterior with that
    # balance. Bayes' rule from the old truth must give it.
    new = 0.02
    balance = mixture.meta["balance"]
    rare = uz.datasets.resample_prior(mixture, {1: new}, seed=3,
                                      source_prior=[1 - balance, balance])
    exact = shifted_p_true_gaussian_mixture(
        uz.ClassificationData(mixture.X_train, mixture.y_train, rare.X_test, rare.y_test,
                              n_classes=2, meta={**mixture.meta, "balance": new}),
        rare.X_test, np.eye(2), np.zeros(2), np.zeros(2))
    # The stored truth was computed from float64 features, the reference from the
    # float32 copies: their gap δ at the old prior, times the largest slope of the
    # prior map p ↦ r p / (r p + 1 − p), bounds the gap at the new one.
    picked = set(rows_of(rare.X_test))
    index = [i for i, r in enumerate(rows_of(mixture.X_test)) if r in picked]
    old = shifted_p_true_gaussian_mixture(mixture, mixture.X_test[index], np.eye(2),
                                          np.zeros(2), np.zeros(2))
    delta = np.abs(old - mixture.p_true_test[index, 1]).max()
    r = (new / (1 - new)) / (balance / (1 - balance))
    slope = max(r, 1 / r)
    bound = slope * delta + 16 * EPS
    assert np.abs(rare.p_true_test[:, 1] - exact).max() <= bound
    np.testing.assert_allclose(rare.p_true_test.sum(axis=1), 1.0, rtol=0, atol=4 * EPS)
    # kept as it was when asked
    kept = uz.datasets.resample_prior(mixture, {1: new}, seed=3, adjust_p_true=False)
    np.testing.assert_array_equal(kept.p_true_test[:, 1], mixture.p_true_test[index, 1])


def test_source_prior_estimates(mixture):
    by_labels = uz.datasets.resample_prior(mixture, {1: 0.1}, seed=0, source_prior="labels")
    freq = np.bincount(mixture.y_test) / mixture.n_test
    np.testing.assert_allclose(by_labels.meta["resampled_prior"]["source_prior"], freq)
    by_truth = uz.datasets.resample_prior(mixture, {1: 0.1}, seed=0)
    np.testing.assert_allclose(by_truth.meta["resampled_prior"]["source_prior"],
                               mixture.p_true_test.mean(axis=0))


def test_original_labels_name_the_classes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = np.where(X[:, 0] > 0, "target", "clutter")
    data = uz.datasets.from_arrays(X, y, test_size=0.5, seed=0)
    rare = uz.datasets.resample_prior(data, {"target": 0.1}, seed=0)
    labels = np.asarray(rare.classes)[rare.y_test]
    assert round(float(np.mean(labels == "target")), 2) == 0.1


def test_a_resampled_test_set_evaluates_with_per_class_recall(mixture):
    rare = uz.datasets.resample_prior(mixture, {1: 0.05}, seed=0)
    p1 = rare.p_true_test[:, 1]
    draws = np.stack([1 - p1, p1], -1)[None]
    report = uz.evaluate(draws, rare.y_test, levels=(0.8,))
    recall = report.table[report.table.metric == "recall"]
    assert list(recall["class"]) == [0, 1]
    pred = p1 > 0.5
    assert recall.value.iloc[1] == pytest.approx(np.mean(pred[rare.y_test == 1]))


# -- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("prior, kwargs, error, needle", [
    ({0: 0.6, 1: 0.6}, {}, uz.InvalidInputError, r"prior must sum to 1 over the classes, "
                                                   r"got sum 1.2"),
    ([0.3, 0.3], {}, uz.InvalidInputError, r"prior must sum to 1 over the classes, got sum 0.6"),
    ({2: 0.1}, {}, uz.InvalidInputError, r"prior names class 2, which is not a class of the "
                                          r"data; the classes are 0, 1"),
    ({True: 0.1}, {}, uz.InvalidInputError, r"prior names class True"),
    ({1: -0.1}, {}, uz.InvalidInputError, r"prior\[1\] must lie in \[0.0, 1.0\], got -0.1"),
    ({1: 1.5}, {}, uz.InvalidInputError, r"prior\[1\] must lie in \[0.0, 1.0\], got 1.5"),
    ([0.5, 0.25, 0.25], {}, uz.InvalidInputError, r"one probability per class \(2: 0, 1\), "
                                                   r"got 3"),
    ("0.5", {}, uz.InvalidTypeError, r"prior must be a dict \{class: probability\}"),
    ({1: 0.5}, dict(n=0), uz.InvalidInputError, r"n must be >= 1, got 0"),
    ({1: 0.5}, dict(n=10**6), uz.InvalidInputError,
     r"n=1000000 with prior 0: 0.5 needs 500000 test points of class 0 without replacement"),
    ({1: 0.5}, dict(replace="no"), uz.InvalidTypeError, r"replace must be True or False"),
    ({1: 0.5}, dict(source_prior="mean"), uz.InvalidInputError,
     r"source_prior must be one of 'p_true', 'labels'; got 'mean'"),
    ({1: 0.5}, dict(source_prior=[0.5, 0.6]), uz.InvalidInputError,
     r"source_prior must sum to 1"),
])
def test_bad_priors_are_clear_errors(mixture, prior, kwargs, error, needle):
    with pytest.raises(error, match=needle):
        uz.datasets.resample_prior(mixture, prior, seed=0, **kwargs)


def test_a_class_without_test_points_and_a_too_small_n():
    data = tiny_data(n_train=60, n_test=40)
    no_ones = uz.ClassificationData(data.X_train, data.y_train, data.X_test[data.y_test == 0],
                                    data.y_test[data.y_test == 0], n_classes=2)
    with pytest.raises(uz.InvalidInputError, match=r"class\(es\) \[1\], which have no test"):
        uz.datasets.resample_prior(no_ones, {1: 0.1}, seed=0)
    with pytest.warns(uz.DataWarning, match=r"class\(es\) \[1\] get no test point"):
        out = uz.datasets.resample_prior(data, {1: 0.01}, n=15, seed=0)
    assert np.all(out.y_test == 0)
    with pytest.raises(uz.InvalidTypeError, match="data must be a ClassificationData"):
        uz.datasets.resample_prior(data.X_test, {1: 0.1}, seed=0)
