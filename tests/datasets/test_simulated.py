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
    # The default (fan-in) teacher is a weak signal, but a signal: its own
    # detection AUROC on 20,000 points is more than 10 DeLong standard errors
    # above 0.5 (issue #26: the default data must be well specified, not easy).
    data = datasets.load("sim-teacher", n_test=20_000)
    p1 = data.p_true_test[:, 1]
    assert 0.2 < p1.mean() < 0.8
    roc = uz.metrics.detection_roc(p1, data.y_test == 1)
    assert roc.auroc > 0.5 + 10 * roc.auroc_stderr
    # and the iid teacher (the old default) a strong one
    iid = datasets.load("sim-teacher", n_test=20_000, teacher_prior="iid").p_true_test[:, 1]
    assert 0.2 < np.mean((iid > 0.05) & (iid < 0.95)) < 0.9


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


def test_teacher_architecture_and_prior_are_options():
    data = datasets.load("sim-teacher", p=4, n_train=50, n_test=300, seed=2, teacher_seed=3,
                         teacher_hidden=(30,), teacher_activation="relu",
                         teacher_prior="fan_in", teacher_prior_scale=2.0)
    teacher = data.meta["teacher"]
    assert teacher["layers.0.weight"].shape == (30, 4)
    assert teacher["layers.1.weight"].shape == (1, 30)
    assert (data.meta["teacher_hidden"], data.meta["teacher_activation"],
            data.meta["teacher_prior"], data.meta["teacher_prior_scale"]) == (
        (30,), "relu", "fan_in", 2.0)
    # p_true is the ReLU teacher's sigmoid: relu(W0 x + b0) then the output layer.
    X = np.asarray(data.X_test, dtype=np.float64)
    hidden = np.maximum(X @ teacher["layers.0.weight"].T + teacher["layers.0.bias"], 0.0)
    logits = hidden @ teacher["layers.1.weight"].T[:, 0] + teacher["layers.1.bias"][0]
    np.testing.assert_allclose(data.p_true_test[:, 1], 1 / (1 + np.exp(-logits)), rtol=1e-6)
    np.testing.assert_allclose(teacher_logits(teacher, X, activation="relu")[:, 0], logits,
                               rtol=1e-10)
    # A logistic-regression truth: no hidden layer.
    linear = datasets.load("sim-teacher", n_train=50, n_test=10, teacher_hidden=())
    assert list(linear.meta["teacher"]) == ["layers.0.weight", "layers.0.bias"]


def test_fan_in_teacher_weights_have_the_fan_in_prior_sd():
    """Weights of a layer with n inputs are N(0, s²/n), biases N(0, s²): the sample sd of
    each layer's weights is within a few standard errors of s/√n (sd of a normal sample
    sd: σ/√(2(m−1)) for m draws)."""
    s = 1.7
    data = datasets.load("sim-teacher", p=200, n_train=10, n_test=10,
                         teacher_hidden=(400, 300), teacher_prior="fan_in",
                         teacher_prior_scale=s)
    teacher = data.meta["teacher"]
    for i, fan_in in enumerate((200, 400, 300)):
        for part, sd in (("weight", s / np.sqrt(fan_in)), ("bias", s)):
            values = teacher[f"layers.{i}.{part}"].ravel()
            if values.size < 100:       # the output bias is one number
                continue
            se = sd / np.sqrt(2 * (values.size - 1))
            assert abs(values.std(ddof=1) - sd) < 5 * se, (i, part)
    # The iid teacher with the same seed is the same draws, unscaled.
    iid = datasets.load("sim-teacher", p=200, n_train=10, n_test=10,
                        teacher_hidden=(400, 300), teacher_prior="iid")
    np.testing.assert_allclose(teacher["layers.1.weight"],
                               s / np.sqrt(400) * iid.meta["teacher"]["layers.1.weight"],
                               rtol=1e-15)


def test_default_teacher_is_a_draw_of_the_default_networks_prior():
    # Issue #26: the embedded default data are well specified for the default
    # network and prior (MLPSpec's), so HMC covers at its nominal rate on them.
    a = datasets.load("sim-teacher", n_test=200, seed=4)
    spec = uz.MLPSpec(5, 2)
    b = datasets.load("sim-teacher", n_test=200, seed=4, teacher_hidden=spec.hidden,
                      teacher_activation=spec.activation, teacher_prior=spec.prior,
                      teacher_prior_scale=spec.prior_scale)
    np.testing.assert_array_equal(a.p_true_test, b.p_true_test)
    assert (a.meta["teacher_prior"], a.meta["teacher_prior_scale"], a.meta["teacher_hidden"]) \
        == ("fan_in", 1.0, (10, 10))


@pytest.mark.parametrize("bad, error", [
    (dict(teacher_hidden=(0,)), uz.InvalidInputError),
    (dict(teacher_hidden="10"), uz.InvalidInputError),
    (dict(teacher_hidden=(2.5,)), uz.InvalidTypeError),
    (dict(teacher_activation="gelu"), uz.InvalidInputError),
    (dict(teacher_prior="laplace"), uz.InvalidInputError),
    (dict(teacher_prior_scale=0.0), uz.InvalidInputError),
])
def test_bad_teacher_options(bad, error):
    with pytest.raises(error):
        datasets.load("sim-teacher", **bad)
