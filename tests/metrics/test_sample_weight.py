"""``sample_weight`` on every metric that takes it: frequency weights, as scikit-learn's.

The defining property: with integer weights a weighted metric equals the
unweighted metric of the sample in which point i appears w_i times (zeros
drop the point). A (R, N) weight matrix gives the R values of its rows.
Bad weights are refused with a message naming the argument, the value and
what is allowed.
"""

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.metrics import calibration as cal
from uqzoo.metrics import detection as det
from uqzoo.metrics import selective as sel

EPS = float(np.finfo(np.float64).eps)


def case(N, K, seed):
    """Probabilities rounded to a coarse grid (tied confidences), labels from them."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(K, 0.7), size=N)
    p = np.round(p, 2)
    p[:, -1] = 1.0 - p[:, :-1].sum(axis=1)
    p = np.clip(p, 0.0, 1.0)
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(K, p=row) for row in p])
    return p, y


def weights(N, seed, R=None):
    """Integer weights 0..3 (zeros included), as float."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 4, size=(N,) if R is None else (R, N)).astype(float)


def bound(n):
    # sums of at most n terms of magnitude ≤ 1 (36 for the NLL) in another
    # order, and harmonic numbers from digamma: rounding below n ε per unit,
    # with a margin of 64
    return 64 * n * EPS


def _ece_variants(K):
    kinds = ("top_label", "positive_class") if K == 2 else ("top_label",)
    return [(metric, conf, binning) for metric in (cal.ece, cal.mce, cal.rmsce)
            for conf in kinds for binning in ("equal_width", "quantile")]


# metric(probs, y, **kw) -> float, for every probs-and-labels metric with sample_weight
PROBS_METRICS = {
    "classwise_ece": lambda p, y, **kw: cal.classwise_ece(p, y, 10, **kw),
    "brier": cal.brier,
    "accuracy": sel.accuracy,
    "balanced_accuracy": sel.balanced_accuracy,
    "aurc_trapezoid": sel.aurc,
    "aurc_mean_over_k": lambda p, y, **kw: sel.aurc(p, y, method="mean_over_k", **kw),
    "eaurc": sel.eaurc,
    "eaurc_mean_over_k": lambda p, y, **kw: sel.eaurc(p, y, method="mean_over_k", **kw),
    "eaurc_asymptotic": lambda p, y, **kw: sel.eaurc(p, y, optimum="asymptotic", **kw),
    "auarc": sel.auarc,
    "auarc_k_over_n": lambda p, y, **kw: sel.auarc(p, y, x_axis="k_over_n", **kw),
    "misclassification_auroc": sel.misclassification_auroc,
    "aurc_own_confidence": lambda p, y, **kw: sel.aurc(p, y, confidence=-p[:, 0], **kw),
}


@pytest.mark.parametrize("K", [2, 3])
@pytest.mark.parametrize("name", sorted(PROBS_METRICS))
def test_integer_weights_are_repeated_rows(name, K):
    p, y = case(300, K, seed=K)
    for seed in range(3):
        w = weights(300, seed)
        metric = PROBS_METRICS[name]
        got = metric(p, y, sample_weight=w)
        reps = w.astype(int)
        kw = {}
        if name == "aurc_own_confidence":
            metric = sel.aurc
            kw = dict(confidence=np.repeat(-p[:, 0], reps))
        want = metric(np.repeat(p, reps, axis=0), np.repeat(y, reps), **kw)
        assert isinstance(got, float)
        assert got == pytest.approx(want, rel=0, abs=bound(reps.sum())), (name, seed)


@pytest.mark.parametrize("K", [2, 3])
def test_every_ece_variant_and_the_nll_take_repeated_rows(K):
    p, y = case(300, K, seed=10 + K)
    w = weights(300, seed=4)
    reps = w.astype(int)
    pr, yr = np.repeat(p, reps, axis=0), np.repeat(y, reps)
    for metric, conf, binning in _ece_variants(K):
        got = metric(p, y, 10, confidence=conf, binning=binning, sample_weight=w)
        want = metric(pr, yr, 10, confidence=conf, binning=binning)
        assert got == pytest.approx(want, rel=0, abs=bound(reps.sum())), (metric, conf, binning)
    # the NLL's terms reach 36 nats
    assert cal.nll(p, y, sample_weight=w) == pytest.approx(
        cal.nll(pr, yr), rel=0, abs=36 * bound(reps.sum()))


def detection_case(N, seed):
    rng = np.random.default_rng(seed)
    is_target = rng.random(N) < 0.2
    scores = np.round(rng.normal(size=N) + 1.5 * is_target, 1)        # ties
    return scores, is_target


def test_detection_metrics_take_repeated_rows():
    scores, is_target = detection_case(400, seed=0)
    fars = (0.01, 0.05, 0.2)
    for seed in range(3):
        w = weights(400, seed)
        reps = w.astype(int)
        s, t = np.repeat(scores, reps), np.repeat(is_target, reps)
        tol = bound(reps.sum())
        assert det.detection_auroc(scores, is_target, sample_weight=w) == pytest.approx(
            det.detection_roc(s, t).auroc, rel=0, abs=tol)
        got = det.pd_at_far(scores, is_target, far=fars, sample_weight=w)
        want = det.pd_at_far(s, t, far=fars)
        for field in ("pd", "far_achieved", "lower", "upper", "n_detected"):
            np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=0,
                                       atol=tol * max(1, reps.sum()), err_msg=field)
        np.testing.assert_array_equal(got.threshold, want.threshold)
        np.testing.assert_array_equal(got.far, want.far)
        assert got.n_targets == want.n_targets and got.n_background == want.n_background
        assert got.pd_stderr == pytest.approx(want.pd_stderr, abs=tol)


def test_unweighted_detection_auroc_is_the_roc_area():
    scores, is_target = detection_case(300, seed=1)
    assert det.detection_auroc(scores, is_target) == det.detection_roc(scores,
                                                                       is_target).auroc


@pytest.mark.parametrize("name", [*sorted(PROBS_METRICS), "ece_quantile", "nll",
                                  "detection_auroc"])
def test_a_weight_matrix_gives_one_value_per_row(name):
    p, y = case(200, 2, seed=7)
    W = weights(200, seed=8, R=4)
    W[2] = 1.0                                            # unit weights: the plain metric
    if name == "ece_quantile":
        def metric(p, y, **kw):
            return cal.ece(p, y, binning="quantile", **kw)
    elif name == "nll":
        metric = cal.nll
    elif name == "detection_auroc":
        def metric(p, y, **kw):
            return det.detection_auroc(p[:, 1], y == 1, **kw)
    else:
        metric = PROBS_METRICS[name]
    got = metric(p, y, sample_weight=W)
    assert isinstance(got, np.ndarray) and got.shape == (4,)
    rows = [metric(p, y, sample_weight=W[r]) for r in range(4)]
    # the same formula on the same weights, vectorised: rounding of N terms
    np.testing.assert_allclose(got, rows, rtol=0, atol=36 * bound(200))
    assert got[2] == pytest.approx(metric(p, y), rel=0, abs=36 * bound(200))


def test_pd_at_far_with_a_weight_matrix_has_a_row_per_weighting():
    scores, is_target = detection_case(300, seed=2)
    W = weights(300, seed=3, R=3)
    got = det.pd_at_far(scores, is_target, far=(0.01, 0.1), sample_weight=W)
    assert got.pd.shape == got.lower.shape == got.threshold.shape == (3, 2)
    assert got.pd_stderr.shape == (3, 2)
    for r in range(3):
        one = det.pd_at_far(scores, is_target, far=(0.01, 0.1), sample_weight=W[r])
        np.testing.assert_allclose(got.pd[r], one.pd, rtol=0, atol=bound(900))
        np.testing.assert_array_equal(got.threshold[r], one.threshold)
        assert got.n_targets[r] == pytest.approx(W[r] @ is_target, abs=bound(900))


def test_real_weights_scale_free():
    # frequency weights: multiplying all weights by a constant changes nothing
    p, y = case(150, 3, seed=5)
    w = np.random.default_rng(0).gamma(1.0, size=150)
    for name, metric in PROBS_METRICS.items():
        if name.startswith(("auarc", "eaurc")) or name.endswith("mean_over_k"):
            continue            # their grids count whole units of weight: not scale-free
        a, b = metric(p, y, sample_weight=w), metric(p, y, sample_weight=3.0 * w)
        assert a == pytest.approx(b, rel=0, abs=bound(150)), name


def test_one_clopper_pearson():
    # the reliability curve's intervals and pd_at_far's come from the one formula
    lo, hi = uz.metrics.clopper_pearson(np.array([0, 3, 7, 10]), 10, 0.9)
    lo2, hi2 = det.clopper_pearson_bounds(np.array([0, 3, 7, 10]), np.full(4, 10), 0.9)
    np.testing.assert_array_equal(lo, lo2)
    np.testing.assert_array_equal(hi, hi2)
    assert not hasattr(cal, "clopper_pearson")


# -- bad weights ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad, error, needle", [
    (np.ones(4), uz.InvalidInputError,
     r"sample_weight must have shape \(5,\) or \(R, 5\) with R >= 1 .*got shape \(4,\)"),
    (np.ones((2, 3, 5)), uz.InvalidInputError, r"sample_weight must have shape .*\(2, 3, 5\)"),
    (np.ones((0, 5)), uz.InvalidInputError, r"sample_weight must have shape .*\(0, 5\)"),
    ([1.0, -1.0, 1.0, 1.0, 1.0], uz.InvalidInputError,
     r"sample_weight must be finite and >= 0, found -1.0 at index 1"),
    ([1.0, 1.0, np.nan, 1.0, 1.0], uz.InvalidInputError,
     r"sample_weight must be finite and >= 0, found nan at index 2"),
    ([[1.0] * 5, [1.0, 1.0, 1.0, np.inf, 1.0]], uz.InvalidInputError,
     r"sample_weight must be finite and >= 0, found inf at index \(1, 3\)"),
    (np.zeros(5), uz.InvalidInputError, r"sample_weight must have a positive total, got all"),
    ([[1.0] * 5, [0.0] * 5], uz.InvalidInputError,
     r"sample_weight must have a positive total, got all weights 0 \(row 1\)"),
    ("heavy", uz.InvalidTypeError, r"sample_weight must be a rectangular numeric array .*'heavy'"),
    (np.ones(5, dtype=bool), uz.InvalidTypeError,
     r"sample_weight must have an integer or real dtype, got dtype bool"),
    ([[1, 2], [3]], uz.InvalidTypeError, r"sample_weight must be a rectangular numeric array"),
])
def test_bad_weights_are_clear_errors(bad, error, needle):
    p, y = case(5, 2, seed=0)
    y = np.array([0, 1, 0, 1, 1])
    calls = [lambda kw: cal.ece(p, y, **kw), lambda kw: cal.classwise_ece(p, y, **kw),
             lambda kw: cal.brier(p, y, **kw), lambda kw: cal.nll(p, y, **kw),
             lambda kw: sel.accuracy(p, y, **kw), lambda kw: sel.balanced_accuracy(p, y, **kw),
             lambda kw: sel.aurc(p, y, **kw), lambda kw: sel.eaurc(p, y, **kw),
             lambda kw: sel.auarc(p, y, **kw), lambda kw: sel.misclassification_auroc(p, y, **kw),
             lambda kw: det.detection_auroc(p[:, 1], y, **kw),
             lambda kw: det.pd_at_far(p[:, 1], y, **kw)]
    for call in calls:
        with pytest.raises(error, match=needle):
            call(dict(sample_weight=bad))
