import numpy as np
import pytest

import uqzoo as uz
import uqzoo.datasets as datasets
from uqzoo.datasets.simulated import teacher_logits


def test_shapes_and_dtypes():
    data = datasets.load("sim-teacher", p=3, n_train=50, n_test=20, seed=0)
    assert data.X_train.shape == (50, 3) and data.X_test.shape == (20, 3)
    assert data.X_train.dtype == np.float32 and data.y_test.dtype == np.int64
    assert data.p_true_test.shape == (20, 2) and data.n_classes == 2
    np.testing.assert_allclose(data.p_true_test.sum(axis=1), 1.0)


def test_p_true_is_the_teacher_in_meta():
    data = datasets.load("sim-teacher", p=4, n_train=10, n_test=100, seed=1, teacher_seed=7)
    teacher = data.meta["teacher"]
    assert teacher["layers.0.weight"].shape == (10, 4)
    assert teacher["layers.2.weight"].shape == (1, 10)
    logits = teacher_logits(teacher, data.X_test)[:, 0]
    np.testing.assert_allclose(data.p_true_test[:, 1], 1 / (1 + np.exp(-logits)), rtol=1e-5)


def test_multiclass_is_a_softmax_teacher():
    data = datasets.load("sim-teacher", p=3, n_classes=4, n_train=200, n_test=100, seed=0)
    assert data.p_true_test.shape == (100, 4)
    logits = teacher_logits(data.meta["teacher"], data.X_test)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(data.p_true_test, expected, rtol=1e-5)


def test_determinism_and_separate_teacher_seed():
    a = datasets.load("sim-teacher", seed=0)
    b = datasets.load("sim-teacher", seed=0)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    other_data = datasets.load("sim-teacher", seed=1)
    assert not np.array_equal(a.X_train, other_data.X_train)
    # Same teacher for another data seed; another teacher for the same data.
    np.testing.assert_array_equal(a.meta["teacher"]["layers.0.weight"],
                                  other_data.meta["teacher"]["layers.0.weight"])
    other_teacher = datasets.load("sim-teacher", seed=0, teacher_seed=1)
    np.testing.assert_array_equal(a.X_train, other_teacher.X_train)
    assert not np.allclose(a.p_true_test, other_teacher.p_true_test)


def test_default_problem_is_neither_trivial_nor_hopeless():
    p1 = datasets.load("sim-teacher", n_test=20_000).p_true_test[:, 1]
    uncertain = np.mean((p1 > 0.05) & (p1 < 0.95))
    assert 0.2 < uncertain < 0.9
    assert 0.2 < p1.mean() < 0.8


def test_logit_scale_sharpens():
    soft = datasets.load("sim-teacher", n_test=5000, logit_scale=0.5).p_true_test[:, 1]
    sharp = datasets.load("sim-teacher", n_test=5000, logit_scale=3.0).p_true_test[:, 1]
    assert np.mean(np.abs(sharp - 0.5)) > np.mean(np.abs(soft - 0.5))


@pytest.mark.parametrize("bad, error", [
    (dict(p=0), uz.InvalidInputError),
    (dict(p=2.5), uz.InvalidTypeError),
    (dict(n_train=1), uz.InvalidInputError),
    (dict(n_classes=1), uz.InvalidInputError),
    (dict(seed=-3), uz.InvalidInputError),
    (dict(seed="0"), uz.InvalidTypeError),
    (dict(teacher_seed=None), uz.InvalidTypeError),
    (dict(logit_scale=0.0), uz.InvalidInputError),
])
def test_bad_options(bad, error):
    with pytest.raises(error):
        datasets.load("sim-teacher", **bad)
