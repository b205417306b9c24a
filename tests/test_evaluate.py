"""uz.evaluate: raw draws and streamed posteriors give the same numbers as the metrics."""

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.datasets import ClassificationData
from uqzoo.errors import InvalidInputError
from uqzoo.evaluate import EvalReport, evaluate
from uqzoo.metrics import (
    aurc,
    brier,
    coverage,
    credible_interval,
    ece,
    hcs_summary,
    high_confidence_set,
    nll,
)

LEVELS = (0.5, 0.8, 0.9)


def simulated(seed=0, N=1500, S=120, K=2):
    rng = np.random.default_rng(seed)
    p_true = rng.dirichlet(np.full(K, 0.8), size=N)
    y = np.array([rng.choice(K, p=row) for row in p_true])
    g = rng.gamma(p_true * 15 + 0.05, size=(S, N, K))        # Dirichlet draws per point
    draws = g / g.sum(axis=-1, keepdims=True)
    return draws, y, p_true


class StandInPosterior:
    """Anything with ``summarize``: here, X holds the row index into fixed draws."""

    def __init__(self, draws, converged=None, warnings=()):
        self._draws = draws
        self.method = "stand-in"
        self.converged = converged
        self.warnings = warnings
        self.num_draws = draws.shape[0]
        self.calls = 0

    def summarize(self, X, levels=(0.5, 0.8, 0.9, 0.95), chunk_size=None):
        from uqzoo.predictive import PredictiveSummary
        from uqzoo.metrics.uncertainty import entropy_of
        self.calls += 1
        d = self._draws[:, X[:, 0].astype(int)]
        ci = credible_interval(d, levels)
        lo, hi = ci.lower, ci.upper
        return PredictiveSummary(mean=d.mean(0), levels=tuple(levels), lower=lo, upper=hi,
                                 expected_entropy=entropy_of(d).mean(0), num_draws=d.shape[0])


def as_data(y, p_true, K, coords=None, meta=None):
    N = y.shape[0]
    X = np.arange(N, dtype=np.float32)[:, None]
    return ClassificationData(X, y, X, y, n_classes=K, p_true_test=p_true,
                              coords_test=coords, meta=meta or {})


def test_draws_path_matches_metric_functions():
    draws, y, p_true = simulated()
    report = evaluate(draws, y, levels=LEVELS, p_true=p_true)
    assert isinstance(report, EvalReport)
    mean = draws.mean(0)
    assert report.value("ece", variant="top_label, equal_width/15 bins") == ece(mean, y)
    assert report.value("brier") == brier(mean, y)
    assert report.value("nll") == nll(mean, y)
    assert report.value("aurc", variant="tie-aware trapezoid, max probability") == \
        pytest.approx(aurc(mean, y), abs=1e-15)
    ci = credible_interval(draws, LEVELS)
    lo, hi = ci.lower, ci.upper
    cov = coverage(lo, hi, p_true)
    hcs = hcs_summary(high_confidence_set(lo, hi, 0.2), y)
    for i, level in enumerate(LEVELS):
        assert report.value("coverage", level, cls=1) == pytest.approx(cov.per_class[i, 1])
        assert report.value("hcs_size", level, cls=1) == hcs.size[i, 0]
        assert report.value("hcs_missed_targets", level, cls=1) == hcs.missed_targets[i, 0]
    np.testing.assert_allclose(report.interval_width, (hi - lo).astype(np.float32))
    assert report.num_draws == draws.shape[0] and report.n_points == y.shape[0]
    assert report.streamed is False and report.converged is None


@pytest.mark.parametrize("K", [2, 3])
def test_streamed_posterior_equals_raw_draws_exactly(K):
    draws, y, p_true = simulated(seed=K, N=900, K=K)
    post = StandInPosterior(draws)
    streamed = evaluate(post, as_data(y, p_true, K), levels=LEVELS, chunk_size=128)
    assert post.calls == 8                                      # ceil(900 / 128)
    raw = evaluate(draws, y, levels=LEVELS, p_true=p_true)
    assert streamed.streamed and streamed.method == "stand-in"
    pd_cols = ["metric", "variant", "level", "class"]
    a = streamed.table.sort_values(pd_cols).reset_index(drop=True)
    b = raw.table.sort_values(pd_cols).reset_index(drop=True)
    assert a[pd_cols].equals(b[pd_cols])
    np.testing.assert_array_equal(a.value.to_numpy(), b.value.to_numpy())
    np.testing.assert_array_equal(streamed.hcs_positive, raw.hcs_positive)


def test_non_converged_posterior_is_flagged():
    draws, y, p_true = simulated(N=200)
    post = StandInPosterior(draws, converged=False, warnings=("R-hat 1.3 > 1.01",))
    report = evaluate(post, as_data(y, p_true, 2), levels=LEVELS)
    assert report.converged is False
    assert report.warnings == ("R-hat 1.3 > 1.01",)
    text = report.summary()
    assert "did NOT converge" in text and "R-hat 1.3" in text
    assert report.to_dict()["converged"] is False


def test_table_is_tidy_and_names_variants():
    draws, y, p_true = simulated(N=300)
    t = evaluate(draws, y, levels=LEVELS, p_true=p_true).table
    assert list(t.columns) == ["metric", "variant", "level", "class", "value", "stderr"]
    assert not t.duplicated(["metric", "variant", "level", "class"]).any()
    ece_variants = set(t[t.metric == "ece"].variant)
    assert {"top_label, equal_width/15 bins", "positive_class, equal_width/15 bins",
            "top_label, quantile/15 bins"} <= ece_variants
    cov = t[(t.metric == "coverage") & t["class"].isna()]
    assert sorted(cov.level) == list(LEVELS)
    assert cov.stderr.notna().all() and (cov.stderr >= 0).all()


def test_without_truth_there_is_no_coverage():
    draws, y, _ = simulated(N=300)
    report = evaluate(draws, y, levels=LEVELS)
    assert "coverage" not in set(report.table.metric)
    assert "coverage@0.8" not in report.to_dict()
    assert "width" in report.summary()


def test_coordinates_and_image_shape_are_carried():
    draws, y, p_true = simulated(N=12)
    coords = np.array([(r, c) for r in range(3) for c in range(4)])
    data = as_data(y, p_true, 2, coords=coords, meta={"image_shape": (3, 4)})
    report = evaluate(StandInPosterior(draws), data, levels=LEVELS)
    assert report.image_shape == (3, 4)
    np.testing.assert_array_equal(report.coords, coords)


def test_real_posterior_through_the_engine():
    import uqzoo as uz
    from uqzoo.posterior import Posterior
    spec = uz.MLPSpec(3, 2, hidden=(4,))
    post = Posterior(spec=spec, method="test", config={}, seed=0,
                     draws=spec.init_params(seed=0, num=64))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3)).astype(np.float32)
    y = rng.integers(0, 2, 500)
    data = ClassificationData(X, y, X, y, n_classes=2)
    streamed = evaluate(post, data, levels=LEVELS, chunk_size=97)
    raw = evaluate(post.predict_proba_draws(X).astype(np.float64), y, levels=LEVELS)
    # The engine works in float32 from the logits: agreement to float32 precision.
    for metric in ("brier", "nll", "accuracy", "mean_predictive_entropy"):
        assert streamed.value(metric) == pytest.approx(raw.value(metric), rel=1e-5)
    np.testing.assert_allclose(streamed.interval_width, raw.interval_width, atol=1e-5)


def test_bad_input():
    draws, y, p_true = simulated(N=50)
    with pytest.raises(InvalidInputError, match="ClassificationData"):
        evaluate(StandInPosterior(draws), y)
    with pytest.raises(InvalidInputError, match="one label per row"):
        evaluate(draws, y[:-1])
    with pytest.raises(InvalidInputError, match="delta"):
        evaluate(draws, y, delta=0.5)
    with pytest.raises(InvalidInputError, match="level"):
        evaluate(draws, y, levels=(0.5, 1.0))
    with pytest.raises(InvalidInputError, match="n_bins"):
        evaluate(draws, y, n_bins=0)
    with pytest.raises(InvalidInputError, match="p_true"):
        evaluate(StandInPosterior(draws), as_data(y, p_true, 2), p_true=p_true)
    with pytest.raises(InvalidInputError, match="sum to 1"):
        evaluate(draws * 0.9, y)
    with pytest.raises(InvalidInputError, match="labels in 0..1"):
        evaluate(draws, np.full(50, 2))


# -- original class labels and mismatched data ------------------------------------------

def test_posterior_on_data_of_another_shape_says_so():
    from uqzoo.posterior import Posterior
    spec = uz.MLPSpec(5, 2, hidden=(4,))
    post = Posterior(spec=spec, method="test", config={}, seed=0,
                     draws=spec.init_params(seed=0, num=4))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = np.arange(30) % 3
    data = ClassificationData(X, y, X, y, n_classes=3)
    with pytest.raises(InvalidInputError, match=r"posterior was fit with 5 features and 2 "
                                                r"classes; data has 4 features and 3 classes"):
        evaluate(post, data)
    draws, _, _ = simulated(N=30, K=2)
    with pytest.raises(InvalidInputError, match=r"K = 2 class columns.*3 classes"):
        evaluate(draws, data)


def test_posterior_and_data_with_other_labels_disagree_clearly():
    from uqzoo.posterior import Posterior
    spec = uz.MLPSpec(1, 2, hidden=(3,))
    post = Posterior(spec=spec, method="test", config={}, seed=0,
                     draws=spec.init_params(seed=0, num=4), classes=("cat", "dog"))
    X = np.arange(10.0)[:, None]
    y = np.arange(10) % 2
    other = ClassificationData(X, y, X, y, n_classes=2, classes=("cat", "emu"))
    with pytest.raises(InvalidInputError, match=r"classes \('cat', 'dog'\); data has classes "
                                                r"\('cat', 'emu'\)"):
        evaluate(post, other)


@pytest.mark.parametrize("classes, dtype", [(("cat", "dog", "emu"), object),
                                            ((5, 6, 9), "Int64")])
def test_per_class_rows_speak_in_the_original_labels(classes, dtype):
    draws, y, p_true = simulated(N=300, K=3)
    X = np.arange(300.0)[:, None]
    data = ClassificationData(X, y, X, y, n_classes=3, p_true_test=p_true, classes=classes)
    report = evaluate(draws, data, levels=LEVELS)
    table = report.table
    assert table["class"].dtype == dtype
    per_class = table[table["class"].notna()]
    assert set(per_class["class"]) == set(classes)
    assert report.classes == classes and report.class_names == tuple(map(str, classes))
    by_index = evaluate(draws, y, levels=LEVELS, p_true=p_true)   # labels 0..2
    for k, label in enumerate(classes):
        assert report.value("coverage", 0.8, cls=label) == \
            by_index.value("coverage", 0.8, cls=k)
        assert report.value("classwise_ece", cls=label,
                            variant="equal_width/15 bins") == \
            by_index.value("classwise_ece", cls=k, variant="equal_width/15 bins")
    assert report.value("ece", variant="top_label, equal_width/15 bins") == \
        by_index.value("ece", variant="top_label, equal_width/15 bins")


def test_fitted_posterior_carries_labels_through_save_load_and_evaluate(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    species = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, "Gentoo", "Adelie")
    data = uz.datasets.from_arrays(X, pd.Categorical(species, ["Gentoo", "Adelie"]), seed=0)
    assert data.classes == ("Gentoo", "Adelie")
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post = uz.fit("ensemble", spec, data, seed=0, progress_bar=False, num_members=2,
                  num_epochs=5)
    assert post.classes == ("Gentoo", "Adelie")
    path = tmp_path / "post.nc"
    post.save(path)
    loaded = uz.load_posterior(path)
    assert loaded.classes == ("Gentoo", "Adelie")
    predicted = loaded.predict(data.X_test)
    index = loaded.predict_proba(data.X_test).argmax(axis=1)
    assert set(predicted) <= {"Gentoo", "Adelie"}
    np.testing.assert_array_equal(predicted, np.array(["Gentoo", "Adelie"])[index])
    table = evaluate(loaded, data, levels=(0.8,)).table
    hcs = table[(table.metric == "hcs_size") & table["class"].notna()]
    assert hcs["class"].tolist() == ["Adelie"]       # binary: the judged class is column 1
    widths = table[(table.metric == "interval_width") & table["class"].notna()]
    assert widths["class"].tolist() == ["Gentoo", "Adelie"]
    with pytest.raises(InvalidInputError, match="classes"):
        evaluate(loaded, uz.datasets.from_arrays(X, species, seed=0))   # sorted: other order
