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
        from uqzoo.metrics.uncertainty import entropy_of
        from uqzoo.predictive import PredictiveSummary
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
    with pytest.raises(InvalidInputError, match=r"labels in 0\.\.1"):
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


# -- detection rows and the failure detector (issue 12) -----------------------------------

def concentrated_draws(p_target, S=200, concentration=400.0, seed=0):
    """(S, N, 2) draws of P(target) ~ Beta around ``p_target``: tight, confident intervals."""
    rng = np.random.default_rng(seed)
    p = np.clip(np.asarray(p_target, float), 1e-4, 1 - 1e-4)
    p1 = rng.beta(p * concentration, (1 - p) * concentration, size=(S, p.size))
    return np.stack([1 - p1, p1], axis=-1)


def test_binary_table_holds_detection_rows_equal_to_the_metrics():
    from uqzoo.metrics import detection_roc, pd_at_far
    draws, y, p_true = simulated(seed=4, N=3000)
    report = evaluate(draws, y, levels=(0.8,), p_true=p_true, far=(1e-3, 1e-2, 0.1))
    score = draws.mean(0)[:, 1]
    roc = detection_roc(score, y == 1)
    assert report.value("detection_auroc", cls=1) == roc.auroc
    assert report.to_dict()["detection_auroc"] == roc.auroc
    want = pd_at_far(score, y == 1, far=(1e-3, 1e-2, 0.1))
    for i, far in enumerate((1e-3, 1e-2, 0.1)):
        variant = f"far={far:g}"
        assert report.value("pd_at_far", cls=1, variant=variant) == want.pd[i]
        assert report.value("pd_at_far_lower", cls=1, variant=variant) == want.lower[i]
        assert report.value("pd_at_far_upper", cls=1, variant=variant) == want.upper[i]
        assert report.value("far_achieved", cls=1, variant=variant) <= far
        assert report.to_dict()[f"pd_at_far@{far:g}"] == want.pd[i]
    assert "detection (" in report.summary() and "Pd@FAR 0.001" in report.summary()
    assert report.failures == () and report.to_dict()["failed"] is False


def test_no_detection_rows_for_three_classes_or_one_present_class():
    draws, y, _ = simulated(N=300, K=3)
    report = evaluate(draws, y, levels=(0.8,))
    assert "detection_auroc" not in set(report.table.metric) and report.detection_roc is None
    draws, _, _ = simulated(N=300, K=2)
    report = evaluate(draws, np.zeros(300, int), levels=(0.8,))
    assert "pd_at_far" not in set(report.table.metric) and report.pd_at_far is None


def test_bad_far_is_refused_before_any_work():
    draws, y, _ = simulated(N=50)
    with pytest.raises(InvalidInputError, match=r"far entry must lie in \(0.0, 1.0\), got 2.0"):
        evaluate(StandInPosterior(draws), as_data(y, None, 2), far=2.0)


def test_a_fit_that_gives_up_on_rare_targets_is_flagged_loudly():
    # The failure: 0.5 % targets, P(target) ≈ 0.01 everywhere. Accuracy
    # 99.5 %, low ECE, and every target confidently called background.
    N, n_targets = 4000, 20
    y = (np.arange(N) < n_targets).astype(int)
    draws = concentrated_draws(np.full(N, 0.01))
    report = evaluate(draws, y, levels=(0.8, 0.95))
    assert report.value("accuracy") == 0.995
    kinds = [f.kind for f in report.failures]
    assert kinds == ["one_class", "hcs_confident_misses"]
    assert "predicts class '0' for all 4000 test points" in str(report.failures[0])
    assert "20 of 20 points of class '1' confidently called not '1'" in str(report.failures[1])
    text = report.summary().splitlines()
    assert text[1].startswith("  FAILED (one_class)") and text[2].startswith("  FAILED (hcs_")
    d = report.to_dict()
    assert d["failed"] is True and d["flags"] == "one_class, hcs_confident_misses"


def test_chance_level_noise_model():
    # The chance test's mean and standard error are those of balanced accuracy
    # under label-blind predictions: over R = 2000 simulated label-blind
    # predictors the sample mean must match within 4 standard errors of a
    # mean, and the sample sd within 4 × its own relative error 1/√(2R).
    from uqzoo.evaluate import _chance_level
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(300, int), np.ones(40, int), np.full(60, 2)]
    q = np.array([0.6, 0.1, 0.3])
    bas = []
    for _ in range(2000):
        pred = rng.choice(3, size=y.size, p=q)
        bas.append(np.mean([(pred[y == k] == k).mean() for k in range(3)]))
    chance, se = _chance_level(rng.choice(3, size=400_000, p=q), np.tile(y, 1000))
    # the same per-class counts ×1000 shrink se by √1000; compare like with like
    se *= np.sqrt(1000)
    assert np.mean(bas) == pytest.approx(chance, abs=4 * se / np.sqrt(2000))
    assert np.std(bas, ddof=1) == pytest.approx(se, rel=4 / np.sqrt(2 * 2000))


@pytest.mark.parametrize("seed", range(3))
def test_label_blind_fit_is_flagged_at_chance_and_a_good_one_is_not(seed):
    rng = np.random.default_rng(seed)
    N = 2000
    y = rng.integers(0, 2, N)
    blind = concentrated_draws(rng.uniform(0.2, 0.8, N), concentration=30, seed=seed)
    kinds = [f.kind for f in evaluate(blind, y, levels=(0.8,)).failures]
    assert "chance" in kinds and "one_class" not in kinds
    draws, y_good, _ = simulated(seed=seed, N=N)
    assert evaluate(draws, y_good, levels=(0.8,)).failures == ()


def test_inverted_ranking_is_flagged():
    draws, y, _ = simulated(seed=1, N=1000)
    report = evaluate(draws[..., ::-1], y, levels=(0.8,))
    kinds = [f.kind for f in report.failures]
    assert "below_chance_ranking" in kinds and "chance" in kinds
    assert report.detection_roc.auroc < 0.5


def test_hcs_errors_are_judged_against_the_fits_own_probabilities():
    # Calibrated and confident: P(target) is 0.1 or 0.9 with tight intervals, so
    # all points are in the HCS (δ = 0.2), and ~10 % of each side is wrong --
    # exactly what the fit says. Not a failure.
    rng = np.random.default_rng(0)
    N = 4000
    p = np.where(np.arange(N) % 2 == 0, 0.1, 0.9)
    y = (rng.random(N) < p).astype(int)
    draws = concentrated_draws(p, concentration=4000)
    report = evaluate(draws, y, levels=(0.8,))
    hcs_size = report.value("hcs_size", 0.8, cls=1)
    assert hcs_size == N and report.value("hcs_missed_targets", 0.8, cls=1) > 100
    assert report.failures == ()
    # The same intervals with P(target) = 0.01 / 0.99 claimed, and the same
    # labels: ~10 % confident errors where the fit expects ~1 %.
    overconfident = concentrated_draws(np.where(p < 0.5, 0.01, 0.99), concentration=4000)
    kinds = [f.kind for f in evaluate(overconfident, y, levels=(0.8,)).failures]
    assert kinds == ["hcs_confident_misses", "hcs_confident_false_alarms"]


def test_streamed_report_carries_failures_like_raw_draws():
    N = 600
    y = (np.arange(N) < 6).astype(int)
    draws = concentrated_draws(np.full(N, 0.01))
    streamed = evaluate(StandInPosterior(draws), as_data(y, None, 2), levels=(0.8,),
                        chunk_size=128)
    raw = evaluate(draws, y, levels=(0.8,))
    assert streamed.failures == raw.failures and streamed.failures


def test_too_few_draws_for_a_level_are_named_with_the_minimum():
    rng = np.random.default_rng(3)
    p = rng.beta(2, 2, size=(5, 60, 1))
    draws = np.concatenate([1 - p, p], axis=-1)
    y = rng.integers(0, 2, 60)
    few = evaluate(draws, y, levels=(0.5, 0.8, 0.95))
    (warning,) = [w for w in few.warnings if "too few" in w]
    assert "S = 5" in warning and "0.8 needs 9" in warning and "0.95 needs 39" in warning
    assert "0.5 needs" not in warning                       # 5 draws suffice at 50 %
    assert "too few" in few.summary()
    p40 = rng.beta(2, 2, size=(40, 60, 1))
    enough = evaluate(np.concatenate([1 - p40, p40], axis=-1), y, levels=(0.5, 0.8, 0.95))
    assert not [w for w in enough.warnings if "too few" in w]


def test_order_statistic_intervals_from_too_few_draws_are_the_whole_range():
    rng = np.random.default_rng(4)
    p = rng.beta(2, 2, size=(5, 30, 1))
    draws = np.concatenate([1 - p, p], axis=-1)
    truth = np.concatenate([1 - p[0], p[0]], axis=-1)
    y = rng.integers(0, 2, 30)
    report = evaluate(draws, y, levels=(0.5, 0.8), p_true=truth, interval="order_statistic")
    d = report.to_dict()
    assert d["interval_width@0.8"] == 1.0 and d["coverage@0.8"] == 1.0
    assert d["interval_width@0.5"] < 1.0          # S = 5 >= min_draws(0.5) = 3
    with pytest.raises(InvalidInputError, match="interval"):
        evaluate(draws, y, interval="hdi")


# -- issue #26: failures that mean failure ---------------------------------------------

def test_one_class_is_the_datas_doing_when_the_truth_predicts_one_class_too():
    # Every true probability below 0.5: the Bayes classifier predicts class 0
    # everywhere, and so does a fit that is exactly right. A warning, not a failure.
    rng = np.random.default_rng(0)
    N = 3000
    p = rng.uniform(0.05, 0.45, N)
    y = (rng.random(N) < p).astype(int)
    report = evaluate(concentrated_draws(p), y, levels=(0.8,),
                      p_true=np.stack([1 - p, p], -1))
    assert report.failures == () and report.to_dict()["failed"] is False
    kinds = [f.kind for f in report.fit_warnings]
    assert kinds[0] == "one_class" and report.fit_warnings[0].severity == "warning"
    assert "so does the truth" in report.fit_warnings[0].message
    assert report.to_dict()["warning_flags"].startswith("one_class")
    assert "  WARNING (one_class)" in report.summary()


def test_one_class_with_an_informative_ranking_is_a_warning_pointing_to_detection():
    # No truth: a right fit on a rare class predicts background everywhere, but
    # ranks targets far above background (AUROC ≫ 0.5 + 3 SE): the 0.5 threshold,
    # not the fit, is uninformative.
    rng = np.random.default_rng(1)
    N = 4000
    p = np.minimum(rng.beta(0.5, 6, N), 0.45)
    y = (rng.random(N) < p).astype(int)
    report = evaluate(concentrated_draws(p), y, levels=(0.8,))
    assert report.detection_roc.auroc > 0.7
    assert "one_class" not in [f.kind for f in report.failures]
    warning = next(f for f in report.fit_warnings if f.kind == "one_class")
    assert "0.5 threshold is uninformative" in warning.message
    assert "detection metrics" in warning.message


def test_a_small_significant_hcs_excess_is_a_warning_a_large_one_a_failure():
    # Half the points claim P(1) = 0.03, half 0.97 (tight intervals: all in the
    # HCS); the truth is 0.05 / 0.95: ~1,000 confident errors a side where the
    # fit expects 600 -- far beyond chance on 40,000 points (Chernoff p ≪ 1e-3),
    # but under 2× expected: a warning. Claiming 0.01 / 0.99 (expects 200) fails.
    rng = np.random.default_rng(2)
    N = 40_000
    truth = np.where(np.arange(N) % 2 == 0, 0.05, 0.95)
    y = (rng.random(N) < truth).astype(int)
    small = evaluate(concentrated_draws(np.where(truth < 0.5, 0.03, 0.97), concentration=4000),
                     y, levels=(0.8,))
    assert small.failures == ()
    assert {f.kind for f in small.fit_warnings} == {"hcs_confident_misses",
                                                    "hcs_confident_false_alarms"}
    assert "a small miscalibration, not a failure" in small.fit_warnings[0].message
    large = evaluate(concentrated_draws(np.where(truth < 0.5, 0.01, 0.99), concentration=4000),
                     y, levels=(0.8,))
    assert {f.kind for f in large.failures} == {"hcs_confident_misses",
                                                "hcs_confident_false_alarms"}


@pytest.mark.slow
def test_a_right_fit_is_almost_never_failed():
    # False-alarm rate of the whole failure check on fits that are exactly right
    # (posterior-mean probabilities = the truth), over R = 100 data sets of
    # varied signal and class prior, some where the truth itself predicts one
    # class. Were the rate 1 %, 5 or more of 100 would happen with probability
    # 0.34 % (binomial); the check's design rate is far below that.
    R, N = 100, 1000
    failed = 0
    for seed in range(R):
        rng = np.random.default_rng(seed)
        bias, slope = rng.normal(0, 2), rng.uniform(0, 3)
        p = 1 / (1 + np.exp(-(bias + slope * rng.normal(size=N))))
        y = (rng.random(N) < p).astype(int)
        if y.min() == y.max():
            continue
        report = evaluate(concentrated_draws(p, S=50, seed=seed), y, levels=(0.8, 0.95),
                          p_true=np.stack([1 - p, p], -1))
        failed += bool(report.failures)
    assert failed < 5


def test_inverted_ranking_is_a_failure_where_the_truth_ranks_well():
    # SWAG's failure: targets ranked below background. The truth's own ranking is
    # informative here, so the data are not to blame.
    draws, y, p_true = simulated(seed=1, N=1000)
    report = evaluate(draws[..., ::-1], y, levels=(0.8,), p_true=p_true)
    kinds = [f.kind for f in report.failures]
    assert "below_chance_ranking" in kinds and "chance" in kinds
    assert "where the true probabilities score detection AUROC" in next(
        f.message for f in report.failures if f.kind == "chance")
