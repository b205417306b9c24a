"""The test-set bootstrap of ``uz.evaluate(..., bootstrap=B)`` (issue 15).

- the Poisson(1) weights: their law, and independence from the chunking;
- every weighted formula reduces to its row's metric at unit weights, and,
  for the sort-based metrics, at integer weights to the metric of the
  sample with repeated points;
- the intervals cover a metric whose true value is known about as often as
  their level says, within a binomial tolerance derived from the number of
  simulated data sets;
- stratified replicates keep the class counts; bad options are clear errors.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import uqzoo as uz
from uqzoo.metrics import bootstrap as boot
from uqzoo.metrics import calibration as cal
from uqzoo.metrics import selective as sel
from uqzoo.metrics.detection import detection_roc
from uqzoo.testing import tiny_data

EPS = float(np.finfo(np.float64).eps)
# A seeded statistical check may fail by chance with at most this probability
# (Z = 3.29 standard errors).
FALSE_ALARM = 1e-3
Z = float(stats.norm.isf(FALSE_ALARM / 2))


def binary_case(N, seed, S=60):
    """Draws (S, N, 2) around a truth, labels from the truth."""
    rng = np.random.default_rng(seed)
    centre = rng.beta(2, 2, size=N)
    p = np.clip(centre + rng.normal(scale=0.08, size=(S, N)), 0.001, 0.999)[..., None]
    draws = np.concatenate([1 - p, p], -1)
    truth = np.stack([1 - centre, centre], -1)
    y = (rng.random(N) < centre).astype(int)
    return draws, y, truth


def multiclass_case(N, seed, K=3, S=50):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=3.0, size=(N, K))
    draws = np.exp(logits + rng.normal(scale=0.3, size=(S, N, K)))
    draws /= draws.sum(-1, keepdims=True)
    # ties in the confidence: round the probabilities to a coarse grid
    draws = np.round(draws, 2)
    draws /= draws.sum(-1, keepdims=True)
    truth = draws.mean(0)
    y = (rng.random((N, 1)) > np.cumsum(truth, axis=1)).sum(axis=1)
    return draws, np.minimum(y, K - 1), truth


# -- the weights ---------------------------------------------------------------------------

def test_poisson_thresholds_are_the_poisson_cdf():
    cdf = stats.poisson.cdf(np.arange(boot._THRESHOLDS.shape[0]), 1.0)
    # floor(F · 2**64) / 2**64 is within 2**-64 of F, plus scipy's own rounding
    np.testing.assert_allclose(boot._THRESHOLDS.astype(float) / 2.0**64, cdf,
                               rtol=0, atol=4 * EPS)
    assert stats.poisson.sf(boot._THRESHOLDS.shape[0] - 1, 1.0) < 2.0**-60


def test_weights_have_the_poisson_law():
    n = 200_000
    w = boot.PoissonWeights(2, seed=3).block(0, n // 2).reshape(-1).astype(float)
    # mean 1 and variance 1, within Z standard errors (Var of the sample
    # variance of Poisson(1) is (μ4 − σ⁴)/n = (4 − 1)/n)
    assert abs(w.mean() - 1) < Z * math.sqrt(1 / n)
    assert abs(w.var() - 1) < Z * math.sqrt(3 / n)
    for k in range(4):
        p = stats.poisson.pmf(k, 1.0)
        assert abs(np.mean(w == k) - p) < Z * math.sqrt(p * (1 - p) / n)


def test_weights_do_not_depend_on_the_chunking():
    w = boot.PoissonWeights(5, seed=1)
    whole = w.block(0, 1001)
    for cuts in ([0, 1, 2, 3, 1001], [0, 7, 500, 999, 1001], [0, 4, 8, 1001]):
        parts = [w.block(a, b) for a, b in itertools.pairwise(cuts)]
        np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole)
    np.testing.assert_array_equal(w.block(10, 20, range(2, 4)), whole[2:4, 10:20])
    assert not np.array_equal(boot.PoissonWeights(5, seed=2).block(0, 1001), whole)


# -- every formula is its row's metric -----------------------------------------------------

# Rows the streamed bootstrap does not resample yet: the interval score (added with
# the verdict's ranking, which bootstraps it paired across methods itself, in
# uqzoo.comparison.ranking). They carry no ci_low/ci_high.
NOT_BOOTSTRAPPED = ("interval_score",)


def assert_original_reproduces_the_table(report):
    t = report.table
    value = t.value.to_numpy(dtype=float)
    original = report.bootstrap.original
    bounds_rows = t.metric.isin(["pd_at_far_lower", "pd_at_far_upper", *NOT_BOOTSTRAPPED]
                                ).to_numpy()
    assert np.all(np.isnan(original[bounds_rows]))
    rest = ~bounds_rows
    assert np.array_equal(np.isnan(value[rest]), np.isnan(original[rest])), \
        t[rest & (np.isnan(value) != np.isnan(original))]
    ok = rest & ~np.isnan(value)
    # ratios of sums of at most N terms, summed in another order: rounding
    # below N ε of the magnitude of the terms
    bound = 8 * report.n_points * EPS * np.maximum(1.0, np.abs(value[ok]))
    bad = np.abs(value[ok] - original[ok]) > bound
    assert not bad.any(), t[ok][bad].assign(original=original[ok][bad])


@pytest.mark.parametrize("case", ["binary", "multiclass"])
def test_unit_weights_reproduce_every_row(case):
    if case == "binary":
        draws, y, truth = binary_case(700, seed=0)
    else:
        draws, y, truth = multiclass_case(500, seed=1)
    report = uz.evaluate(draws, y, p_true=truth, levels=(0.5, 0.9), bootstrap=20, seed=0,
                         chunk_size=97)
    assert_original_reproduces_the_table(report)
    if case == "multiclass":        # the HCS is not empty, so its rows are exercised
        assert report.table[report.table.metric == "hcs_size"].value.sum() > 0


def test_a_streamed_posterior_gets_intervals_too():
    data = tiny_data(n_train=60, n_test=300)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(3,))
    post = uz.Posterior(spec=spec, method="map", config={}, seed=0,
                        draws=spec.init_params(seed=0, num=40))
    report = uz.evaluate(post, data, levels=(0.8,), bootstrap=30, seed=4)
    assert_original_reproduces_the_table(report)
    assert {"ci_low", "ci_high"} <= set(report.table.columns)
    assert report.bootstrap.replicates.shape == (30, len(report.table))


def test_every_row_gets_an_interval_but_the_interval_bounds():
    draws, y, truth = binary_case(800, seed=2)
    report = uz.evaluate(draws, y, p_true=truth, levels=(0.8,), bootstrap=50, seed=0)
    t = report.table
    bounds_rows = t.metric.isin(["pd_at_far_lower", "pd_at_far_upper", *NOT_BOOTSTRAPPED])
    has_value = t.value.notna()
    assert t[has_value & ~bounds_rows].ci_low.notna().all(), t[t.ci_low.isna()]
    assert t[bounds_rows].ci_low.isna().all()
    finite = t.ci_low.notna()
    assert (t[finite].ci_low <= t[finite].ci_high).all()
    # and every metric of the table is covered: nothing silently left out
    assert set(t.metric[has_value]) - set(t.metric[finite]) <= {
        "pd_at_far_lower", "pd_at_far_upper", *NOT_BOOTSTRAPPED}


def test_the_intervals_do_not_depend_on_the_chunking():
    draws, y, truth = binary_case(600, seed=3)
    a = uz.evaluate(draws, y, p_true=truth, levels=(0.8,), bootstrap=40, seed=5,
                    chunk_size=600)
    b = uz.evaluate(draws, y, p_true=truth, levels=(0.8,), bootstrap=40, seed=5,
                    chunk_size=37)
    ra, rb = a.bootstrap.replicates, b.bootstrap.replicates
    assert np.array_equal(np.isnan(ra), np.isnan(rb))
    # the same weights; only the order of float additions differs
    ok = ~np.isnan(ra)
    assert np.all(np.abs(ra[ok] - rb[ok]) <= 8 * 600 * EPS * np.maximum(1, np.abs(ra[ok])))


def test_integer_weights_are_repeated_points():
    # For integer weights the weighted sort-based metrics equal the plain
    # metrics of the sample in which point i appears w_i times.
    draws, y, _ = multiclass_case(300, seed=4, K=2)
    mean = draws.mean(0)
    rng = np.random.default_rng(0)
    W = rng.poisson(1.0, size=(3, 300)).astype(float)
    got = boot.rank_metrics(boot._RankPlan(mean, y, detection=True), W, 15, (1e-2, 0.1))
    for g in range(3):
        w = W[g].astype(int)
        m, yy = np.repeat(mean, w, axis=0), np.repeat(y, w)
        bound = 64 * len(yy) * EPS
        assert got[("aurc", "trapezoid")][g] == pytest.approx(sel.aurc(m, yy), abs=bound)
        assert got[("aurc", "mean_over_k")][g] == pytest.approx(
            sel.aurc(m, yy, method="mean_over_k"), abs=bound)
        assert got[("eaurc",)][g] == pytest.approx(sel.eaurc(m, yy), abs=bound)
        assert got[("auarc",)][g] == pytest.approx(sel.auarc(m, yy), abs=bound)
        assert got[("misclassification_auroc",)][g] == pytest.approx(
            sel.misclassification_auroc(m, yy), abs=bound)
        assert got[("detection_auroc",)][g] == pytest.approx(
            detection_roc(m[:, 1], yy == 1).auroc, abs=bound)
        for kind, conf in (("top", "top_label"), ("pos", "positive_class")):
            assert got[("ece_quantile", kind)][g] == pytest.approx(
                cal.ece(m, yy, binning="quantile", confidence=conf), abs=bound)
        pdf = uz.metrics.pd_at_far(m[:, 1], yy == 1, far=(1e-2, 0.1))
        np.testing.assert_allclose([got[("pd_at_far", i)][g] for i in range(2)], pdf.pd,
                                   atol=bound)


def test_the_oracle_aurc_matches_the_integer_one():
    n = 57
    E = np.arange(0, n + 1)
    got = sel.optimal_aurc_real(np.full(E.shape, float(n)), E.astype(float))
    want = [sel.optimal_aurc(n, int(e)) for e in E]
    np.testing.assert_allclose(got, want, rtol=0, atol=64 * n * EPS)
    got = sel.optimal_aurc_real(np.full(E.shape, float(n)), E.astype(float), "mean_over_k")
    want = [sel.optimal_aurc(n, int(e), "mean_over_k") for e in E]
    np.testing.assert_allclose(got, want, rtol=0, atol=64 * n * EPS)


# -- coverage of a known value -------------------------------------------------------------

def coverage_tolerance(level, R):
    """Z binomial standard errors of a coverage estimated from R intervals."""
    return Z * math.sqrt(level * (1 - level) / R)


@pytest.mark.slow
def test_stratified_intervals_cover_a_known_accuracy():
    # A fixed classifier on test sets with class counts fixed by design
    # (n_0 = n_1 = N/2, what stratification assumes): it is right on a class-k
    # point with probability a_k, so the true accuracy is (a_0 + a_1) / 2.
    # The accuracy row's interval is computed by the same accumulator,
    # weights and percentile rule as evaluate's.
    N, R, B, level = 300, 200, 250, 0.9
    a = np.array([0.7, 0.85])
    truth = a.mean()
    y = np.repeat([0, 1], N // 2)
    covered = 0
    for r in range(R):
        rng = np.random.default_rng(r)
        correct = rng.random(N) < a[y]
        acc = boot.BootstrapAccumulator(boot.PoissonWeights(B, seed=r), 2, (0.8,), 15, (1,),
                                        with_truth=False, with_entropy=False)
        F = np.zeros((N, acc.layout.size))
        F[:, acc.layout["hit"].start] = correct
        acc.update(0, y, F)
        T, class_weights, _ = acc.totals()
        values = boot.sum_metrics(T, acc.layout, (1,), boot.total_weight(class_weights))
        low, high = boot.percentile_interval(values[("accuracy",)][:, None], level)
        covered += bool(low[0] <= truth <= high[0])
    assert abs(covered / R - level) <= coverage_tolerance(level, R)


@pytest.mark.slow
def test_unstratified_intervals_cover_a_known_accuracy_of_iid_classes():
    # Classes drawn i.i.d. with P(y = 1) = 0.3: the true accuracy is
    # 0.7 a_0 + 0.3 a_1, and its variability includes the class mix.
    N, R, B, level = 300, 200, 250, 0.9
    a = np.array([0.7, 0.95])
    truth = 0.7 * a[0] + 0.3 * a[1]
    covered = 0
    for r in range(R):
        rng = np.random.default_rng(10_000 + r)
        y = (rng.random(N) < 0.3).astype(int)
        correct = rng.random(N) < a[y]
        acc = boot.BootstrapAccumulator(boot.PoissonWeights(B, seed=r), 2, (0.8,), 15, (1,),
                                        with_truth=False, with_entropy=False,
                                        stratified=False)
        F = np.zeros((N, acc.layout.size))
        F[:, acc.layout["hit"].start] = correct
        acc.update(0, y, F)
        T, class_weights, _ = acc.totals()
        values = boot.sum_metrics(T, acc.layout, (1,), boot.total_weight(class_weights))
        low, high = boot.percentile_interval(values[("accuracy",)][:, None], level)
        covered += bool(low[0] <= truth <= high[0])
    assert abs(covered / R - level) <= coverage_tolerance(level, R)


@pytest.mark.slow
def test_evaluate_intervals_cover_a_known_detection_auroc():
    # Target scores N(d, 1), background N(0, 1), fixed counts: the true AUROC is
    # Φ(d / √2). End to end through evaluate (its weighted Mann–Whitney row).
    N, R, B, level, d = 200, 80, 150, 0.9, 1.0
    truth = stats.norm.cdf(d / math.sqrt(2))
    y = np.repeat([0, 1], N // 2)
    covered = 0
    for r in range(R):
        rng = np.random.default_rng(20_000 + r)
        score = rng.normal(size=N) + d * y
        p1 = 1 / (1 + np.exp(-score))
        draws = np.stack([1 - p1, p1], -1)[None]
        report = uz.evaluate(draws, y, levels=(0.8,), bootstrap=B, seed=r,
                             bootstrap_confidence=level)
        row = report.table[report.table.metric == "detection_auroc"].iloc[0]
        covered += bool(row.ci_low <= truth <= row.ci_high)
    assert abs(covered / R - level) <= coverage_tolerance(level, R)


# -- stratification ------------------------------------------------------------------------

def test_stratified_replicates_keep_the_class_counts():
    # A classifier that calls everything class 1: its accuracy is the share of
    # class 1, fixed in every stratified replicate and variable otherwise.
    N = 400
    y = np.repeat([0, 1], [100, 300])
    draws = np.tile([[0.3, 0.7]], (N, 1))[None]
    strat = uz.evaluate(draws, y, levels=(0.8,), bootstrap=50, seed=0)
    loose = uz.evaluate(draws, y, levels=(0.8,), bootstrap=50, seed=0,
                        bootstrap_stratified=False)
    col = int(np.flatnonzero(strat.table.metric.to_numpy() == "accuracy")[0])
    np.testing.assert_allclose(strat.bootstrap.replicates[:, col], 0.75, rtol=0,
                               atol=8 * N * EPS)
    assert loose.bootstrap.replicates[:, col].std() > 0.01
    assert strat.bootstrap.stratified and not loose.bootstrap.stratified


def test_the_same_seed_gives_every_method_the_same_replicates():
    # Two "methods" with different probabilities but the same predictions: with
    # one seed their recall replicates coincide (the same weights), so method
    # differences can be bootstrapped pairwise.
    draws, y, _ = binary_case(300, seed=5)
    shrunk = 0.5 + (draws - 0.5) * 0.5                 # same argmax, less confident
    a = uz.evaluate(draws, y, levels=(0.8,), bootstrap=30, seed=9)
    b = uz.evaluate(shrunk, y, levels=(0.8,), bootstrap=30, seed=9)
    c = uz.evaluate(shrunk, y, levels=(0.8,), bootstrap=30, seed=10)
    assert np.array_equal(a.mean.argmax(1), b.mean.argmax(1))
    cols = np.flatnonzero(a.table.metric.to_numpy() == "recall")
    ra, rb = a.bootstrap.replicates[:, cols], b.bootstrap.replicates[:, cols]
    np.testing.assert_allclose(ra, rb, rtol=0, atol=8 * 300 * EPS)
    assert not np.allclose(rb, c.bootstrap.replicates[:, cols])


# -- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(bootstrap=0), uz.InvalidInputError, r"bootstrap must be >= 1, got 0"),
    (dict(bootstrap=-5), uz.InvalidInputError, r"bootstrap must be >= 1, got -5"),
    (dict(bootstrap=2.5), uz.InvalidTypeError, r"bootstrap must be an integer, got 2.5"),
    (dict(bootstrap="100"), uz.InvalidTypeError, r"bootstrap must be an integer, got '100'"),
    (dict(bootstrap=10**6), uz.InvalidInputError, r"bootstrap must be <= 100000, got 1000000"),
    (dict(bootstrap=10, bootstrap_confidence=1.0), uz.InvalidInputError,
     r"bootstrap_confidence must lie in \(0.0, 1.0\), got 1.0"),
    (dict(bootstrap=10, bootstrap_stratified="yes"), uz.InvalidTypeError,
     r"bootstrap_stratified must be True or False, got 'yes'"),
    (dict(bootstrap=10, seed=-1), uz.InvalidInputError, r"seed must be"),
])
def test_bad_bootstrap_options_are_clear_errors(kwargs, error, needle):
    draws, y, _ = binary_case(20, seed=0, S=5)
    with pytest.raises(error, match=needle):
        uz.evaluate(draws, y, levels=(0.8,), **kwargs)


def test_no_bootstrap_leaves_the_table_as_it_was():
    draws, y, _ = binary_case(50, seed=0, S=5)
    report = uz.evaluate(draws, y, levels=(0.8,))
    assert "ci_low" not in report.table.columns and report.bootstrap is None


def test_the_stream_is_philox_at_the_documented_counter():
    # replicate b, point i: word i of Philox(key, counter = b · 2**192), after
    # the inverse Poisson CDF -- pinned, so a refactoring cannot move it
    w = boot.PoissonWeights(3, seed=11)
    key = np.random.SeedSequence(11, spawn_key=(boot._STREAM,)).generate_state(2, np.uint64)
    for b in range(3):
        raw = np.random.Philox(key=key, counter=b << 192).random_raw(40)[5:33]
        np.testing.assert_array_equal(w.block(5, 33)[b], boot._poisson_from_raw(raw))


# -- ECE's sensitivity to binning ---------------------------------------------------------

def test_ece_binning_draws_each_binning_of_each_method():
    reports = {}
    for name, seed in (("a", 0), ("b", 1)):
        draws, y, _ = binary_case(400, seed=seed, S=20)
        reports[name] = uz.evaluate(draws, y, levels=(0.8,))
    fig = uz.plots.ece_binning(reports, n_bins=(10, 15, 30))
    lines = fig.axes[0].get_lines()
    # two schemes and a floor per method
    assert len(lines) == 3 * len(reports)
    by_label = {line.get_label(): line.get_ydata() for line in lines}
    for name, rep in reports.items():
        for scheme, label in (("equal_width", "equal width"), ("quantile", "equal mass")):
            want = [cal.ece(rep.mean, rep.y, b, binning=scheme) for b in (10, 15, 30)]
            np.testing.assert_array_equal(by_label[f"{name}, {label}"], want)
        floor = by_label[f"{name}, calibrated floor (equal width)"]
        assert np.all((floor > 0) & (floor < 1))


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(binnings=["log"]), uz.InvalidInputError,
     r"binnings entry must be one of 'equal_width', 'quantile'; got 'log'"),
    (dict(n_bins=[0, 15]), uz.InvalidInputError, r"n_bins entry must be >= 1, got 0"),
    (dict(n_bins=15), uz.InvalidTypeError, r"n_bins must be a non-empty sequence"),
    (dict(reference_draws=0), uz.InvalidInputError, r"reference_draws must be >= 1, got 0"),
])
def test_ece_binning_bad_options(kwargs, error, needle):
    draws, y, _ = binary_case(50, seed=0, S=5)
    rep = uz.evaluate(draws, y, levels=(0.8,))
    with pytest.raises(error, match=needle):
        uz.plots.ece_binning(rep, **kwargs)
    draws3, y3, _ = multiclass_case(50, seed=0, S=5)
    rep3 = uz.evaluate(draws3, y3, levels=(0.8,))
    with pytest.raises(uz.InvalidInputError, match="needs binary reports; report 'method'"):
        uz.plots.ece_binning(rep3, confidence="positive_class")
