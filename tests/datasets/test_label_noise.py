"""with_label_noise: exactly the stated share of training labels flipped, the test set clean."""

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.errors import InvalidInputError, InvalidTypeError


def _three_class(n=600, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    return uz.datasets.from_arrays(X, np.arange(n) % 3, seed=seed)


@pytest.fixture(scope="module")
def teacher():
    return uz.datasets.load("sim-teacher", n_train=400, n_test=200, seed=0)


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.25, 0.333, 0.9])
@pytest.mark.parametrize("kind", ["symmetric", "class_conditional"])
def test_exactly_the_stated_share_flips_and_test_truth_is_unchanged(teacher, rate, kind):
    noisy = uz.datasets.with_label_noise(teacher, rate, kind, seed=3)
    expected = round(rate * teacher.n_train)
    changed = np.flatnonzero(noisy.y_train != teacher.y_train)
    record = noisy.meta["label_noise"]
    assert changed.size == expected == record["n_flipped"]
    np.testing.assert_array_equal(changed, record["flipped_rows"])
    np.testing.assert_array_equal(teacher.y_train[changed], record["clean_labels"])
    np.testing.assert_array_equal(noisy.X_train, teacher.X_train)
    np.testing.assert_array_equal(noisy.X_test, teacher.X_test)
    np.testing.assert_array_equal(noisy.y_test, teacher.y_test)
    np.testing.assert_array_equal(noisy.p_true_test, teacher.p_true_test)
    assert (record["rate"], record["kind"], record["seed"]) == (rate, kind, 3)
    assert "label_noise" not in teacher.meta             # the input is not changed


def test_same_seed_same_flips_other_seed_other_rows(teacher):
    a = uz.datasets.with_label_noise(teacher, 0.2, seed=1)
    b = uz.datasets.with_label_noise(teacher, 0.2, seed=1)
    c = uz.datasets.with_label_noise(teacher, 0.2, seed=2)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    assert not np.array_equal(a.meta["label_noise"]["flipped_rows"],
                              c.meta["label_noise"]["flipped_rows"])


def test_symmetric_new_labels_are_uniform_over_the_other_classes():
    data = _three_class(n=6000)
    noisy = uz.datasets.with_label_noise(data, 0.5, "symmetric", seed=0)
    rec = noisy.meta["label_noise"]
    old, new = rec["clean_labels"], noisy.y_train[rec["flipped_rows"]]
    assert np.all(old != new)
    # Given the old class, each of the two others is a fair coin: its share within
    # 4 binomial standard errors of 1/2.
    for k in range(3):
        moved = new[old == k]
        share = np.mean(moved == (k + 1) % 3)
        assert abs(share - 0.5) < 4 * np.sqrt(0.25 / moved.size)


def test_class_conditional_follows_the_transition_matrix():
    data = _three_class()
    noisy = uz.datasets.with_label_noise(data, 0.3, "class_conditional", seed=0)
    rec = noisy.meta["label_noise"]
    # the default pair flip: k becomes k + 1
    np.testing.assert_array_equal(noisy.y_train[rec["flipped_rows"]],
                                  (rec["clean_labels"] + 1) % 3)
    to_zero = np.array([[0, 0.5, 0.5], [1, 0, 0], [1, 0, 0]])
    noisy = uz.datasets.with_label_noise(data, 0.3, "class_conditional", seed=0,
                                         transition=to_zero)
    rec = noisy.meta["label_noise"]
    new = noisy.y_train[rec["flipped_rows"]]
    assert np.all(new[rec["clean_labels"] != 0] == 0)
    assert set(new[rec["clean_labels"] == 0]) == {1, 2}


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(rate=1.0), InvalidInputError,
     "rate must be a rate in [0, 1) such as 0.1 (the share of training labels flipped), got 1.0"),
    (dict(rate=-0.1), InvalidInputError, "rate must be a rate in [0, 1)"),
    (dict(rate=float("nan")), InvalidInputError, "rate"),
    (dict(rate="0.1"), InvalidTypeError, "rate"),
    (dict(rate=0.1, kind="pairwise"), InvalidInputError, "kind must be one of"),
    (dict(rate=0.1, transition=np.eye(2)), InvalidInputError,
     "transition applies to kind='class_conditional'"),
    (dict(rate=0.1, kind="class_conditional", transition=np.eye(2)), InvalidInputError,
     "zero diagonal"),
    (dict(rate=0.1, kind="class_conditional", transition=[[0, 0.5], [1, 0]]),
     InvalidInputError, "sum to 1"),
    (dict(rate=0.1, kind="class_conditional", transition=np.zeros((3, 3))),
     InvalidInputError, "(2, 2)"),
])
def test_bad_input_is_one_clear_error(teacher, kwargs, error, needle):
    with pytest.raises(error, match=None) as info:
        uz.datasets.with_label_noise(teacher, **kwargs)
    assert needle in str(info.value)


def test_noise_is_added_once_and_data_must_be_classification_data(teacher):
    noisy = uz.datasets.with_label_noise(teacher, 0.1)
    with pytest.raises(InvalidInputError, match="already carry label noise"):
        uz.datasets.with_label_noise(noisy, 0.1)
    with pytest.raises(InvalidTypeError, match="data must be a ClassificationData"):
        uz.datasets.with_label_noise(teacher.X_train, 0.1)
