"""uz.UQClassifier: scikit-learn's estimator checks, Pipeline / CV / grid search, uq outputs."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import uqzoo as uz
from uqzoo.metrics import high_confidence_set
from uqzoo.sklearn import UQClassifier

# Tiny fits: Laplace after a short MAP run, or a 3-member ensemble.
LAPLACE = {"num_epochs": 200, "num_samples": 50}
ENSEMBLE = {"num_members": 3, "num_epochs": 300}

# Every check of scikit-learn 1.9 passes; a check this estimator cannot meet
# would be listed here with its reason (parametrize_with_checks then expects
# it to fail). check_array_api_input skips itself unless SCIPY_ARRAY_API=1 (then it
# passes too).
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@parametrize_with_checks(
    [UQClassifier("laplace", hidden=(5,), method_options=LAPLACE, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def blobs(n=90, k=2, seed=0):
    """k Gaussian blobs in 3-D, 5.7 sd apart, features on scales a scaler must fix."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = 4.0 * np.eye(3)[y] + rng.normal(size=(n, 3))
    return X * np.array([100.0, 0.01, 1.0]) + 50.0, y


def test_facade_exports_the_class():
    assert uz.UQClassifier is UQClassifier
    assert "UQClassifier" in uz.__all__


def test_constructor_only_stores():
    """STYLE 8: no validation in __init__; bad values are reported by fit, naming them."""
    clf = UQClassifier("no-such-method", hidden="wide", method_options=[1])
    assert clf.get_params()["method"] == "no-such-method"
    X, y = blobs()
    with pytest.raises(TypeError, match="method_options"):
        clf.fit(X, y)
    with pytest.raises(ValueError, match="method must be one of"):
        UQClassifier("no-such-method").fit(X, y)
    with pytest.raises(ValueError, match=r"unknown option.*num_epoch"):
        UQClassifier(method_options={"num_epoch": 3}).fit(X, y)


@pytest.mark.parametrize("key, own", [("seed", "random_state"), ("progress_bar", "progress_bar")])
def test_method_options_must_not_shadow_estimator_parameters(key, own):
    X, y = blobs()
    with pytest.raises(ValueError, match=f"{key!r}.*{own}"):
        UQClassifier(method_options={key: 1}).fit(X, y)


def test_string_labels_order_classes_and_columns():
    X, y = blobs(k=3)
    labels = np.array(["setosa", "versicolor", "virginica"])[::-1][y]   # not in sorted order
    clf = UQClassifier("ensemble", hidden=(5,), method_options=ENSEMBLE, random_state=0)
    model = make_pipeline(StandardScaler(), clf).fit(X, labels)
    assert clf.classes_.tolist() == ["setosa", "versicolor", "virginica"]
    assert clf.posterior_.classes == ("setosa", "versicolor", "virginica")
    proba = model.predict_proba(X)
    assert proba.shape == (90, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    assert (model.predict(X) == clf.classes_[proba.argmax(axis=1)]).all()
    assert model.score(X, labels) > 0.9
    assert clf.n_features_in_ == 3


def test_posterior_repeats_with_uz_fit():
    """Hyper-parameters travel: the estimator's fit is uz.fit with random_state as the seed."""
    X, y = blobs()
    Xs = StandardScaler().fit_transform(X)
    clf = UQClassifier("laplace", hidden=(4,), activation="relu", prior_scale=2.0,
                       method_options=LAPLACE, random_state=7).fit(Xs, y)
    post = clf.posterior_
    assert (post.method, post.seed, post.config["num_epochs"]) == ("laplace", 7, 200)
    assert (post.spec.hidden, post.spec.activation, post.spec.prior_scale) == ((4,), "relu", 2.0)
    data = uz.datasets.from_arrays(Xs, y, X_test=Xs[:1], y_test=y[:1], standardize=False)
    again = uz.fit("laplace", post.spec, data, seed=7, progress_bar=False, **LAPLACE)
    np.testing.assert_array_equal(again.predict_proba(Xs), clf.predict_proba(Xs))


def test_random_state_kinds():
    X, y = blobs()
    Xs = StandardScaler().fit_transform(X)
    est = UQClassifier("laplace", hidden=(3,), method_options=LAPLACE)

    def seed_of(random_state):
        return clone(est).set_params(random_state=random_state).fit(Xs, y).posterior_.seed

    assert seed_of(3) == 3
    rs = np.random.RandomState(0)
    assert seed_of(rs) == np.random.RandomState(0).randint(np.iinfo(np.int32).max)
    assert seed_of(rs) != seed_of(np.random.RandomState(0))          # the instance advanced
    gen_seed = seed_of(np.random.default_rng(1))
    assert gen_seed == np.random.default_rng(1).integers(2**63)
    # None: scikit-learn's meaning, NumPy's global random state decides
    assert len({seed_of(None) for _ in range(3)}) == 3
    with pytest.raises(ValueError, match="random_state"):
        seed_of(-1)
    with pytest.raises(TypeError, match="random_state"):
        seed_of("0")


def test_pipeline_cross_val_score_and_grid_search():
    X, y = blobs(n=60)
    labels = np.where(y == 1, "target", "background")
    model = make_pipeline(StandardScaler(),
                          UQClassifier("ensemble", hidden=(4,), method_options=ENSEMBLE,
                                       random_state=0))
    scores = cross_val_score(model, X, labels, cv=2)
    assert scores.shape == (2,) and (scores > 0.8).all()
    grid = GridSearchCV(model, {"uqclassifier__prior_scale": [0.5, 2.0]}, cv=2).fit(X, labels)
    assert grid.best_params_["uqclassifier__prior_scale"] in (0.5, 2.0)
    assert grid.predict_proba(X[:5]).shape == (5, 2)


def test_predict_interval_and_hcs():
    X, y = blobs(k=3)
    Xs = StandardScaler().fit_transform(X)
    clf = UQClassifier("ensemble", hidden=(5,), method_options=ENSEMBLE,
                       random_state=0).fit(Xs, y)
    mean = clf.predict_proba(Xs)
    lower, upper = clf.predict_interval(Xs, level=0.9)
    assert lower.shape == upper.shape == (90, 3)
    # three members: the mean lies between the smallest and largest draw
    assert (lower <= mean + 1e-6).all() and (mean <= upper + 1e-6).all()
    wide_lo, wide_hi = clf.predict_interval(Xs, level=0.99)
    assert (wide_lo <= lower + 1e-7).all() and (upper <= wide_hi + 1e-7).all()
    hcs = clf.predict_hcs(Xs, level=0.8, delta=0.2)
    lo8, hi8 = clf.predict_interval(Xs, level=0.8)
    expected = high_confidence_set(lo8, hi8, delta=0.2)
    assert hcs.classes == (0, 1, 2) and hcs.members.shape == (90, 3)
    np.testing.assert_array_equal(hcs.decision, expected.decision)
    with pytest.raises(ValueError, match="level"):
        clf.predict_interval(Xs, level=1.0)
    with pytest.raises(ValueError, match="delta"):
        clf.predict_hcs(Xs, delta=0.5)


def test_binary_hcs_judges_the_second_class():
    X, y = blobs()
    Xs = StandardScaler().fit_transform(X)
    labels = np.where(y == 1, "target", "background")
    clf = UQClassifier("ensemble", hidden=(5,), method_options=ENSEMBLE,
                       random_state=0).fit(Xs, labels)
    hcs = clf.predict_hcs(Xs)
    assert hcs.members.shape == (90, 1)
    assert clf.classes_[list(hcs.classes)].tolist() == ["target"]
    # well-separated blobs: most points are confidently decided, and rightly
    decided = hcs.decision[:, 0] >= 0
    assert decided.mean() > 0.5
    assert (hcs.decision[decided, 0] == (labels[decided] == "target")).all()


def test_one_class_is_an_error_naming_it():
    X, _ = blobs()
    with pytest.raises(ValueError, match="one class"):
        UQClassifier(method_options=LAPLACE).fit(X, np.zeros(90))
