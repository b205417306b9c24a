"""Calibration metrics: hand cases, reference libraries, pinned conventions, properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uqzoo.metrics import (
    adaptive_binning,
    adaptive_ece,
    adaptive_mce,
    brier,
    calibration_bins,
    classwise_ece,
    ece,
    mce,
    nll,
    reliability_curve,
    rmsce,
)
from uqzoo.metrics.calibration import NLL_CLIP


def binary(p1):
    p1 = np.asarray(p1, dtype=float)
    return np.stack([1 - p1, p1], axis=1)


def off_edge_data(seed, N, K, n_bins=15):
    """Probabilities with no confidence within 1e-9 of a bin edge."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(K, 0.7), size=N)
    conf = p.max(axis=1)
    frac = conf * n_bins - np.round(conf * n_bins)
    keep = (np.abs(frac) > 1e-6) & (np.abs(p[:, -1] * n_bins - np.round(p[:, -1] * n_bins)) > 1e-6)
    p = p[keep]
    y = np.array([rng.choice(K, p=row) for row in p])
    return p, y


# ---------------------------------------------------------------- hand cases

def test_ece_mce_rmsce_hand_case():
    p = binary([0.9, 0.7, 0.4, 0.3])
    y = np.array([1, 0, 0, 1])
    # top-label: confidences 0.9, 0.7, 0.6, 0.7; correct: 1, 0, 1, 0
    # all in bin (0.5, 1]: mean conf 0.725, acc 0.5 -> gap 0.225
    assert ece(p, y, n_bins=2) == pytest.approx(0.225)
    assert mce(p, y, n_bins=2) == pytest.approx(0.225)
    assert rmsce(p, y, n_bins=2) == pytest.approx(0.225)
    # positive-class: p1 = 0.9, 0.7 | 0.4, 0.3 ; y==1: 1, 0 | 0, 1
    # bin (0.5, 1]: conf 0.8, freq 0.5, gap 0.3; bin (0, 0.5]: conf 0.35, freq 0.5, gap 0.15
    assert ece(p, y, n_bins=2, confidence="positive_class") == pytest.approx(0.225)
    assert mce(p, y, n_bins=2, confidence="positive_class") == pytest.approx(0.3)
    assert rmsce(p, y, n_bins=2, confidence="positive_class") == pytest.approx(
        np.sqrt(0.5 * 0.09 + 0.5 * 0.0225))


def test_classwise_ece_hand_case():
    p = np.array([[0.1, 0.9], [0.3, 0.7], [0.6, 0.4]])
    # column 0 vs y==0 and column 1 vs y==1 both give 1/3 (worked in the docstring)
    assert classwise_ece(p, [1, 0, 0], n_bins=2) == pytest.approx(1 / 3)


def test_brier_and_nll_hand_case():
    p = np.array([[0.2, 0.8], [0.6, 0.4], [0.1, 0.9]])
    y = np.array([1, 1, 0])
    assert brier(p, y) == pytest.approx((0.08 + 0.72 + 1.62) / 3)
    assert nll(p, y) == pytest.approx(-(np.log(0.8) + np.log(0.4) + np.log(0.1)) / 3)


# ------------------------------------------------------ pinned conventions

def test_bin_membership_is_right_closed_guo():
    # 0.6 = the edge between bins 2 and 3 of 5 -> (0.4, 0.6], the lower bin.
    edges = np.linspace(0, 1, 6)
    bins = calibration_bins(binary([edges[3]]), [1], n_bins=5)
    assert bins.count.tolist() == [0, 0, 1, 0, 0]
    # torchmetrics uses [lo, hi) and would put it in bin 3; see next test.


def test_confidence_zero_goes_to_first_bin():
    bins = calibration_bins(binary([0.0, 1.0]), [0, 1], n_bins=4, confidence="positive_class")
    assert bins.count.tolist() == [1, 0, 0, 1]


def test_edge_convention_differs_from_torchmetrics():
    torch = pytest.importorskip("torch")
    tmf = pytest.importorskip("torchmetrics.functional.classification")
    # 0.5 is the edge of 2 bins. Ours, (lo, hi]: {0.25, 0.5} and {0.75} -> 1/6.
    # torchmetrics, [lo, hi): {0.25} and {0.5, 0.75} -> 1/3.
    p1 = np.array([0.25, 0.5, 0.75])
    y = np.array([1, 0, 1])
    assert ece(binary(p1), y, n_bins=2, confidence="positive_class") == pytest.approx(1 / 6)
    theirs = float(tmf.binary_calibration_error(torch.tensor(p1), torch.tensor(y), n_bins=2))
    assert theirs == pytest.approx(1 / 3)


def test_binary_top_label_differs_from_positive_class():
    p = binary([0.2, 0.3, 0.45, 0.8, 0.9])
    y = np.array([0, 1, 0, 1, 1])
    top = ece(p, y, n_bins=5)
    pos = ece(p, y, n_bins=5, confidence="positive_class")
    assert top != pytest.approx(pos)
    assert calibration_bins(p, y, confidence="positive_class").variant == \
        "positive_class, equal_width/15 bins"


def test_brier_is_twice_sklearn_for_binary():
    from sklearn.metrics import brier_score_loss
    rng = np.random.default_rng(0)
    p1 = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p1).astype(int)
    assert brier(binary(p1), y) == pytest.approx(2 * brier_score_loss(y, p1), rel=1e-12)


def test_brier_multiclass_matches_sklearn_unscaled():
    import inspect

    from sklearn.metrics import brier_score_loss
    if "scale_by_half" not in inspect.signature(brier_score_loss).parameters:
        pytest.skip("this scikit-learn has no multiclass brier_score_loss")
    rng = np.random.default_rng(1)
    p = rng.dirichlet([1, 1, 1], size=400)
    y = rng.integers(0, 3, size=400)
    ref = brier_score_loss(y, p, scale_by_half=False, labels=[0, 1, 2])
    assert brier(p, y) == pytest.approx(ref, rel=1e-12)


def test_nll_matches_sklearn_log_loss_and_clip():
    from sklearn.metrics import log_loss
    rng = np.random.default_rng(2)
    p = rng.dirichlet([2, 2, 2], size=300)
    y = rng.integers(0, 3, size=300)
    assert nll(p, y) == pytest.approx(log_loss(y, p, labels=[0, 1, 2]), rel=1e-12)
    assert nll(binary([1.0]), [0]) == pytest.approx(-np.log(NLL_CLIP))


@pytest.mark.parametrize("K", [2, 3, 5])
def test_top_label_ece_mce_rmsce_match_torchmetrics(K):
    torch = pytest.importorskip("torch")
    tmf = pytest.importorskip("torchmetrics.functional.classification")
    p, y = off_edge_data(K, 3000, K)
    pt, yt = torch.tensor(p), torch.tensor(y)
    # torchmetrics' multiclass path works in float32: agreement to ~1e-6.
    for norm, ours in (("l1", ece), ("max", mce), ("l2", rmsce)):
        ref = float(tmf.multiclass_calibration_error(pt, yt, num_classes=K, n_bins=15, norm=norm))
        assert ours(p, y) == pytest.approx(ref, abs=2e-6)


def test_positive_class_ece_matches_torchmetrics_binary():
    torch = pytest.importorskip("torch")
    tmf = pytest.importorskip("torchmetrics.functional.classification")
    p, y = off_edge_data(11, 3000, 2)
    ref = float(tmf.binary_calibration_error(torch.tensor(p[:, 1]), torch.tensor(y), n_bins=15))
    assert ece(p, y, confidence="positive_class") == pytest.approx(ref, abs=1e-12)


def test_quantile_bins_hand_case():
    # 6 confidences, 3 bins: left edges at sorted positions round(0, 2, 4).
    p1 = np.array([0.95, 0.55, 0.6, 0.7, 0.8, 0.9])
    bins = calibration_bins(binary(p1), [1, 1, 1, 1, 1, 1], n_bins=3,
                            confidence="positive_class", binning="quantile")
    assert bins.edges.tolist() == [0.55, 0.7, 0.9, 1.0]
    assert bins.count.tolist() == [2, 2, 2]
    assert bins.confidence == pytest.approx([0.575, 0.75, 0.925])


def test_reliability_curve_clopper_pearson():
    from scipy import stats
    p = binary(np.full(10, 0.75))
    y = np.array([1] * 7 + [0] * 3)
    curve = reliability_curve(p, y, n_bins=4, confidence="positive_class", ci_level=0.9)
    assert curve.count.tolist() == [10]
    assert curve.accuracy.tolist() == [0.7]
    assert curve.lower[0] == pytest.approx(stats.beta.ppf(0.05, 7, 4))
    assert curve.upper[0] == pytest.approx(stats.beta.ppf(0.95, 8, 3))
    assert (curve.bin_lower[0], curve.bin_upper[0]) == (0.5, 0.75)


# --------------------------------------------------- Ding et al. adaptive ECE

def ding_reference(conf, correct, z=1.645):
    """Straight transcription of the published algorithm's steps, one point at a time."""
    pairs = sorted(zip(conf.tolist(), correct.tolist(), strict=True), key=lambda t: t[0],
                   reverse=True)
    n = len(pairs)
    lowest = pairs[-1][0]
    sizes, bin_lo, bin_hi = [0], [1.0], [0.0]
    goal = float("inf")
    for i, (c, _) in enumerate(pairs):
        if sizes[-1] > goal and n - i > 40 and bin_lo[-1] - lowest > 0.05:
            sizes.append(0)
            bin_lo.append(1.0)
            bin_hi.append(0.0)
            goal = float("inf")
        sizes[-1] += 1
        bin_lo[-1] = min(bin_lo[-1], c)
        bin_hi[-1] = max(bin_hi[-1], c)
        spread = bin_hi[-1] - bin_lo[-1]
        goal = float("inf") if spread == 0 else (z / spread) ** 2 * 0.25
    final = list(sizes)
    if goal - sizes[-1] > 0 and len(sizes) > 1:
        take = int((goal - sizes[-1]) * sizes[-1] / n)
        for b in range(len(sizes) - 1):
            final[b] -= take
            final[-1] += take
    out_ece, out_mce, pos = 0.0, 0.0, 0
    for size in final:
        chunk = pairs[pos:pos + size]
        pos += size
        mean_c = sum(c for c, _ in chunk) / size
        acc = sum(1 for _, ok in chunk if ok) / size
        out_ece += abs(acc - mean_c) * size / n
        out_mce = max(out_mce, abs(acc - mean_c))
    return out_ece, out_mce, final


@pytest.mark.parametrize("seed,N,K,temper", [(0, 500, 2, 1.0), (1, 3000, 3, 2.0),
                                             (2, 20000, 2, 0.5), (3, 1500, 10, 1.0),
                                             (4, 200, 2, 1.0)])
def test_adaptive_matches_reference_algorithm(seed, N, K, temper):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(N, K)) * 2
    p = np.exp(logits / temper)
    p /= p.sum(axis=1, keepdims=True)
    p = np.round(p, 3)                       # ties, as real softmax outputs have
    p[:, -1] = 1 - p[:, :-1].sum(axis=1)
    p = np.clip(p, 0, 1)
    p /= p.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(K, p=row) for row in p])
    conf = p.max(axis=1)
    correct = p.argmax(axis=1) == y
    ref_ece, ref_mce, ref_sizes = ding_reference(conf, correct)
    res = adaptive_binning(p, y)
    if min(ref_sizes) <= 0:
        pytest.skip("published code degenerates on this draw")
    assert res.count.tolist() == ref_sizes
    # The reference adds confidences one at a time: ~N ulp of rounding.
    assert res.ece == pytest.approx(ref_ece, rel=1e-10, abs=1e-15)
    assert res.mce == pytest.approx(ref_mce, rel=1e-10, abs=1e-15)
    assert adaptive_ece(p, y) == res.ece and adaptive_mce(p, y) == res.mce


def test_adaptive_top_up_moves_points_to_last_bin():
    # A sparse low tail: splitting stops 0.05 above the minimum, so the last
    # bin spans ~0.05 with ~100 points, fewer than its target 0.25 (z / 0.05)^2 ≈ 270.
    rng = np.random.default_rng(5)
    conf = np.concatenate([rng.uniform(0.6, 1.0, 3000), rng.uniform(0.3, 0.36, 100)])
    y = (rng.uniform(size=conf.size) < conf).astype(int)
    res = adaptive_binning(binary(conf), y, confidence="positive_class")
    ref_ece, ref_mce, ref_sizes = ding_reference(conf, y == 1)
    assert res.top_up_applied
    assert res.count.tolist() == ref_sizes
    assert res.ece == pytest.approx(ref_ece, rel=1e-10)
    assert res.mce == pytest.approx(ref_mce, rel=1e-10)
    first_pass = adaptive_binning(binary(conf), y, confidence="positive_class", top_up=False)
    assert first_pass.count[-1] < res.count[-1]
    assert first_pass.count.sum() == res.count.sum() == 3100


def test_adaptive_z_changes_bins():
    rng = np.random.default_rng(6)
    p1 = rng.uniform(size=5000)
    p = binary(p1)
    y = (rng.uniform(size=5000) < p1).astype(int)
    wide = adaptive_binning(p, y, z=1.2816)
    narrow = adaptive_binning(p, y)
    assert wide.count.shape[0] > narrow.count.shape[0]
    assert wide.variant.endswith("z=1.2816")


# ------------------------------------------------------------------ properties

prob_matrices = st.integers(0, 2**32 - 1).flatmap(
    lambda seed: st.tuples(st.just(seed), st.integers(1, 80), st.integers(2, 5)))


@settings(max_examples=40, deadline=None)
@given(args=prob_matrices, n_bins=st.integers(1, 30), binning=st.sampled_from(
    ["equal_width", "quantile"]))
def test_ece_family_in_unit_interval_and_permutation_invariant(args, n_bins, binning):
    seed, N, K = args
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(K, 0.5), size=N)
    y = rng.integers(0, K, size=N)
    perm = rng.permutation(N)
    for fn in (ece, mce, rmsce):
        v = fn(p, y, n_bins, binning=binning)
        assert 0.0 <= v <= 1.0
        if binning == "equal_width":       # exact sums: bit-identical under permutation
            assert fn(p[perm], y[perm], n_bins) == v
        else:
            assert fn(p[perm], y[perm], n_bins, binning=binning) == pytest.approx(v, abs=1e-12)
    assert 0.0 <= classwise_ece(p, y, n_bins) <= 1.0
    assert classwise_ece(p[perm], y[perm], n_bins) == classwise_ece(p, y, n_bins)
    assert 0.0 <= adaptive_ece(p, y) <= 1.0
    assert adaptive_ece(p[perm], y[perm]) == pytest.approx(adaptive_ece(p, y), abs=1e-12)


def hoeffding_ece_bound(N, n_bins, eta=1e-6):
    """With probability 1 - eta, ECE of calibrated data is below this.

    Each bin's gap is a mean of n_b independent [−1, 1]-bounded... terms with
    mean 0 given the confidences; Hoeffding with a union bound over the bins
    gives |gap_b| <= sqrt(log(2B/η) / (2 n_b)), and Cauchy–Schwarz turns
    Σ_b (n_b/N) sqrt(1/n_b) into at most sqrt(B/N).
    """
    return np.sqrt(n_bins * np.log(2 * n_bins / eta) / (2 * N))


@pytest.mark.parametrize("seed", [0, 1])
def test_ece_near_zero_for_calibrated_data_and_not_for_miscalibrated(seed):
    N, B = 200_000, 15
    rng = np.random.default_rng(seed)
    p1 = rng.uniform(size=N)
    y = (rng.uniform(size=N) < p1).astype(int)
    bound = hoeffding_ece_bound(N, B)
    assert ece(binary(p1), y, B) < bound
    assert ece(binary(p1), y, B, confidence="positive_class") < bound
    # The same bound must reject a miscalibrated forecaster.
    assert ece(binary(p1**2), y, B, confidence="positive_class") > bound
