"""uz.perturb: each family changes what it claims and nothing else; seeds; exact truth (issue 15).

Statistical checks use tolerances from the sampling distribution (normal
quantiles with a Bonferroni correction over the checks of one test), never a
magic number; floating-point checks use a bound derived from float32 storage.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import uqzoo as uz
from uqzoo.datasets import hsi_sim, known_truth
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.perturb import FAMILIES, Perturbation

# Family-wise false-alarm rate of each statistical test below.
ALPHA = 1e-3
# float32 keeps 24 significant bits: storing z rounds it by at most 2^-24 |z|.
F32_HALF_ULP = 2.0**-24
# float64 work before the float32 rounding (a few operations on O(1) values).
F64_SLACK = 1e-12


@pytest.fixture(scope="module")
def hsi():
    return uz.datasets.load("hsi-sim", size=32, n_bands=20, seed=0, progress_bar=False)


@pytest.fixture(scope="module")
def mixture():
    return uz.datasets.load("gaussian-mixture", p=4, n_train=300, n_test=400,
                            covariance="unequal", seed=0)


def raw(data, X):
    """Features in the data's raw units (standardisation undone)."""
    X = np.asarray(X, dtype=np.float64)
    if data.meta.get("standardized"):
        return X * data.meta["scale"] + data.meta["mean"]
    return X


def assert_stored(data, X_stored, X_raw_expected):
    """X_stored is X_raw_expected, standardised with the training statistics and stored
    as float32: equal within float32 rounding of the standardised value."""
    if data.meta.get("standardized"):
        z = (X_raw_expected - data.meta["mean"]) / data.meta["scale"]
    else:
        z = X_raw_expected
    bound = F32_HALF_ULP * np.abs(z) + F64_SLACK * (1 + np.abs(z))
    assert np.all(np.abs(X_stored.astype(np.float64) - z) <= bound)


def assert_untouched(data, copy, same_truth):
    """Everything but X_test (and p_true where it may change) is the clean data's."""
    for name in ("X_train", "y_train", "y_test", "coords_train", "coords_test"):
        a, b = getattr(data, name), getattr(copy, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    assert copy.X_test.shape == data.X_test.shape
    assert (copy.n_classes, copy.classes, copy.class_names, copy.name) == \
        (data.n_classes, data.classes, data.class_names, data.name)
    if same_truth:
        assert np.array_equal(copy.p_true_test, data.p_true_test)


# -- each family does what it says and nothing else -------------------------------------

@pytest.mark.parametrize("name", ["hsi", "mixture"])
def test_illumination_scales_exactly(name, request):
    data = request.getfixturevalue(name)
    copy = uz.perturb.illumination(data, 0.7)
    assert_untouched(data, copy, same_truth=True)
    assert_stored(data, copy.X_test, 0.7 * raw(data, data.X_test))
    info = copy.meta["perturbation"]
    assert (info["family"], info["magnitude"], info["p_true"]) == ("illumination", 0.7,
                                                                   "unchanged")


@pytest.mark.parametrize("name", ["hsi", "mixture"])
def test_offset_adds_exactly(name, request):
    data = request.getfixturevalue(name)
    copy = uz.perturb.offset(data, -0.03)
    assert_untouched(data, copy, same_truth=True)
    assert_stored(data, copy.X_test, raw(data, data.X_test) - 0.03)


@pytest.mark.parametrize("shift", [0.3, -0.5])
def test_spectral_shift_mixes_each_band_with_its_neighbour(hsi, shift):
    copy = uz.perturb.spectral_shift(hsi, shift)
    assert_untouched(hsi, copy, same_truth=True)
    x = raw(hsi, hsi.X_test)
    s = abs(shift)
    neighbour = np.roll(x, -1, axis=1) if shift > 0 else np.roll(x, 1, axis=1)
    edge = -1 if shift > 0 else 0            # the edge band reads itself
    neighbour[:, edge] = x[:, edge]
    assert_stored(hsi, copy.X_test, (1 - s) * x + s * neighbour)


def test_noise_has_the_sd_its_snr_says(hsi):
    snr_db = 20.0
    copy = uz.perturb.noise(hsi, snr_db, seed=3)
    assert_untouched(hsi, copy, same_truth=False)
    train = raw(hsi, hsi.X_train)
    sd = np.sqrt(np.mean(train**2)) / 10 ** (snr_db / 20)
    assert copy.meta["perturbation"]["noise_sd"] == pytest.approx(sd, rel=1e-12)
    eps = (raw(hsi, copy.X_test) - raw(hsi, hsi.X_test)) / sd
    n = eps.size
    # Two checks (mean 0, variance 1) of n i.i.d. N(0, 1) values: z of the mean is
    # mean·√n, of the variance (s² − 1)/√(2/n) (normal approximation of χ²_n / n).
    z = stats.norm.ppf(1 - ALPHA / 4)
    assert abs(eps.mean()) * math.sqrt(n) < z
    assert abs(eps.var() - 1) / math.sqrt(2 / n) < z


def test_gaussian_noise_is_relative_to_each_features_training_sd(mixture):
    scale = 0.4
    copy = uz.perturb.gaussian_noise(mixture, scale, seed=1)
    assert_untouched(mixture, copy, same_truth=False)
    sd = scale * mixture.X_train.astype(np.float64).std(axis=0)
    eps = (copy.X_test.astype(np.float64) - mixture.X_test) / sd      # (N, D), N(0, 1)
    n, D = eps.shape
    z = stats.norm.ppf(1 - ALPHA / (2 * D))    # one variance check per feature
    assert np.all(np.abs(eps.var(axis=0) - 1) / math.sqrt(2 / n) < z)


@pytest.mark.parametrize("fill", ["zero", "interpolate"])
def test_band_dropout_kills_the_share_of_bands_it_says(hsi, fill):
    fraction = 0.25
    copy = uz.perturb.band_dropout(hsi, fraction, fill=fill, seed=2)
    assert_untouched(hsi, copy, same_truth=False)
    D = hsi.n_features
    dead = np.array(copy.meta["perturbation"]["dead_features"])
    assert dead.size == math.floor(fraction * D + 0.5) == 5
    live = np.setdiff1d(np.arange(D), dead)
    x = raw(hsi, hsi.X_test)
    expected = x.copy()
    for d in dead:
        if fill == "zero":
            expected[:, d] = 0.0
        else:                           # linear in the band index between live neighbours
            left, right = live[live < d], live[live > d]
            if left.size and right.size:
                lo, hi = left[-1], right[0]
                expected[:, d] = x[:, lo] + (x[:, hi] - x[:, lo]) * (d - lo) / (hi - lo)
            else:
                expected[:, d] = x[:, (left if left.size else right)[-1 if left.size else 0]]
    assert_stored(hsi, copy.X_test, expected)


def test_missing_features_are_imputed_with_the_training_mean(mixture):
    copy = uz.perturb.missing_features(mixture, 0.5, seed=4)
    assert_untouched(mixture, copy, same_truth=False)
    missing = np.array(copy.meta["perturbation"]["missing_features"])
    assert missing.size == 2
    expected = mixture.X_test.astype(np.float64)
    expected[:, missing] = mixture.X_train.astype(np.float64).mean(axis=0)[missing]
    assert_stored(mixture, copy.X_test, expected)


def test_input_data_are_not_changed(hsi):
    before = hsi.X_test.copy()
    for name in uz.perturb.names():
        uz.perturb.copies(hsi, name, k=1, seed=0)
    assert np.array_equal(hsi.X_test, before)


# -- copies and seeds -----------------------------------------------------------------------

def test_same_seed_same_copies_other_seed_other_copies(mixture):
    a = uz.perturb.copies(mixture, "gaussian_noise", k=3, seed=7)
    b = uz.perturb.copies(mixture, "gaussian_noise", k=3, seed=7)
    c = uz.perturb.copies(mixture, "gaussian_noise", k=3, seed=8)
    assert np.array_equal(a.magnitudes, b.magnitudes) and a.seeds == b.seeds
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.X_test, y.X_test)
        assert np.array_equal(x.p_true_test, y.p_true_test)
    assert not np.array_equal(a.magnitudes, c.magnitudes)
    assert all(not np.array_equal(x.X_test, y.X_test) for x, y in zip(a, c, strict=True))
    # copies differ from each other too
    assert not np.array_equal(a[0].X_test, a[1].X_test)


def test_copies_record_their_magnitudes_and_can_be_rebuilt_one_by_one(hsi):
    c = uz.perturb.copies(hsi, "band_dropout", k=4, seed=1, magnitude=(0.1, 0.3))
    assert len(c) == 4 and c.truth == "recomputed"
    assert np.all((c.magnitudes >= 0.1) & (c.magnitudes <= 0.3))
    assert not c.magnitudes.flags.writeable
    for i, copy in enumerate(c):
        info = copy.meta["perturbation"]
        assert info["magnitude"] == c.magnitudes[i] and info["copy"] == i
        again = uz.perturb.apply(hsi, "band_dropout", c.magnitudes[i], seed=c.seeds[i])
        assert np.array_equal(again.X_test, copy.X_test)
    # copy i depends on (seed, i) only: the first copies of a longer run are these
    longer = uz.perturb.copies(hsi, "band_dropout", k=6, seed=1, magnitude=(0.1, 0.3))
    assert np.array_equal(longer.magnitudes[:4], c.magnitudes)
    assert np.array_equal(longer[3].X_test, c[3].X_test)


def test_a_single_magnitude_is_used_by_every_copy(mixture):
    c = uz.perturb.copies(mixture, "illumination", k=3, magnitude=1.1)
    assert np.all(c.magnitudes == 1.1)
    assert c.perturbation == Perturbation("illumination", (1.1, 1.1))


def test_default_ranges_are_used_and_inside_their_domain():
    for name, fam in FAMILIES.items():
        p = Perturbation(name)
        assert p.magnitude == fam.default
        Perturbation(name, fam.default)          # inside the domain: no error


@pytest.mark.parametrize("text, family, magnitude, fill", [
    ("illumination", "illumination", (0.8, 1.2), None),
    ("illumination:0.8-1.2", "illumination", (0.8, 1.2), None),
    ("offset:-0.02-0.02", "offset", (-0.02, 0.02), None),
    ("spectral_shift:-0.5--0.1", "spectral_shift", (-0.5, -0.1), None),
    ("noise:20,40", "noise", (20.0, 40.0), None),
    ("noise:30", "noise", (30.0, 30.0), None),
    ("gaussian_noise:1e-3-1e-2", "gaussian_noise", (1e-3, 1e-2), None),
    ("band_dropout(interpolate):0.1-0.2", "band_dropout", (0.1, 0.2), "interpolate"),
])
def test_parse_reads_the_cli_forms_and_labels_read_back(text, family, magnitude, fill):
    p = Perturbation.parse(text)
    assert (p.family, p.magnitude) == (family, magnitude)
    assert p.fill == (fill or ("zero" if family == "band_dropout" else None))
    assert Perturbation.parse(p.label) == p


# -- the truth ------------------------------------------------------------------------------

def test_truth_is_unchanged_recomputed_or_unavailable_as_documented():
    teacher = uz.datasets.load("sim-teacher", p=3, n_train=60, n_test=20)
    for name, fam in FAMILIES.items():
        c = uz.perturb.copies(teacher, name, k=1)
        if fam.keeps_truth:
            assert c.truth == "unchanged"
            assert np.array_equal(c[0].p_true_test, teacher.p_true_test)
        else:
            assert c.truth == "unavailable" and c[0].p_true_test is None
            assert "no closed form" in c[0].meta["perturbation"]["p_true_note"]
    real = uz.datasets.load("iris")
    with pytest.warns(uz.DataWarning, match="illumination models hyperspectral"):
        assert uz.perturb.copies(real, "illumination", k=1).truth == "unavailable"


def test_a_spectral_family_on_a_table_of_named_features_warns():
    # issue 25 item 7: illumination, spectral_shift and band_dropout on tabular data were
    # silently accepted
    table = uz.datasets.load("iris")
    for family in ("illumination", "spectral_shift", "band_dropout"):
        with pytest.warns(uz.DataWarning, match=rf"{family} models hyperspectral.*'iris' is a "
                                                r"table.*use gaussian_noise"):
            uz.perturb.copies(table, family, k=1)
    uz.perturb.copies(table, "gaussian_noise", k=1)      # the tabular families do not warn


def test_invertible_families_keep_the_generators_truth_exactly(hsi):
    """The generator's truth seen through g·M x + b equals the clean truth: the Jacobian
    cancels between the classes. Both sides are computed in float64 on the same x, so
    they differ by rounding only: log-likelihoods of magnitude ≤ 1e5 (20 bands) carry
    errors near 1e5 · 1e-16 · 20 ≈ 1e-10, and 1e-8 on probabilities leaves 100×."""
    x = raw(hsi, hsi.X_test)
    D = hsi.n_features
    clean = hsi_sim.shifted_p_true(hsi, x, np.eye(D), np.zeros(D), np.zeros(D))
    np.testing.assert_allclose(clean, hsi.p_true_test[:, 1], atol=1e-6)  # float32 storage
    for gain, b, shift in [(0.8, 0.0, 0.0), (1.0, 0.04, 0.0), (1.2, 0.01, -0.4)]:
        A = gain * uz.perturb._shift_matrix(D, shift)
        moved = hsi_sim.shifted_p_true(hsi, x @ A.T + b, A, np.full(D, b), np.zeros(D))
        np.testing.assert_allclose(moved, clean, atol=1e-8)


def _calibration_z(p, y, n_bins):
    """Per-bin z of Σ y − Σ p over equal-mass bins of p; variance Σ p(1 − p)."""
    order = np.argsort(p, kind="stable")
    z = []
    for idx in np.array_split(order, n_bins):
        var = np.sum(p[idx] * (1 - p[idx]))
        z.append((y[idx].sum() - p[idx].sum()) / math.sqrt(var))
    return np.array(z)


def _assert_calibrated(p, y, n_bins):
    """Labels drawn from p agree with p in every bin: |z| below the two-sided normal
    quantile at ALPHA with a Bonferroni correction over the bins."""
    z = _calibration_z(p, y, n_bins)
    limit = stats.norm.ppf(1 - ALPHA / (2 * n_bins))
    assert np.all(np.abs(z) < limit), (np.round(z, 2), limit)
    return z


@pytest.mark.parametrize("family, magnitude", [
    ("noise", 12.0), ("band_dropout", 0.6), ("missing_features", 0.6),
    ("gaussian_noise", 1.0)])
def test_recomputed_truth_is_calibrated_on_hsi_sim(family, magnitude):
    """On hsi-sim the labels come from the generator (a ≥ a_min) and the perturbation
    is drawn inside it: P(y | x') must agree with y in calibration bins. Bins hold the
    uncertain pixels (0.01 < p < 0.99), where a wrong truth would show."""
    data = uz.datasets.load("hsi-sim", size=64, n_bands=20, seed=11, progress_bar=False)
    copy = uz.perturb.apply(data, family, magnitude, seed=5)
    assert copy.meta["perturbation"]["p_true"] == "recomputed"
    p, y = copy.p_true_test[:, 1], copy.y_test
    uncertain = (p > 0.01) & (p < 0.99)
    assert uncertain.sum() >= 200          # enough points for five bins of ~40
    _assert_calibrated(p[uncertain], y[uncertain], n_bins=5)


@pytest.mark.parametrize("family, magnitude", [("gaussian_noise", 1.0),
                                               ("missing_features", 0.5),
                                               ("noise", 5.0)])
def test_recomputed_truth_is_calibrated_on_the_gaussian_mixture(family, magnitude):
    """Fresh labels from the generator, perturbed inside it; 10 equal-mass bins of
    20,000 points. The clean model's posterior at the perturbed points (the truth that
    forgets the perturbation; over seeds 0-7 its worst bin was 7 to 450 standard errors
    off) fails the same test: the test has power."""
    data = uz.datasets.load("gaussian-mixture", p=4, n_train=50, n_test=20_000,
                            covariance="unequal", seed=21)
    copy = uz.perturb.apply(data, family, magnitude, seed=9)
    p, y = copy.p_true_test[:, 1], copy.y_test
    _assert_calibrated(p, y, n_bins=10)
    D = data.n_features
    forgetful = known_truth.shifted_p_true_gaussian_mixture(
        data, copy.X_test.astype(np.float64), np.eye(D), np.zeros(D), np.zeros(D))
    z = _calibration_z(forgetful, y, 10)
    assert np.abs(z).max() > stats.norm.ppf(1 - ALPHA / 20)


# -- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda d: uz.perturb.copies(d, "fog"), InvalidInputError,
     r"family must be one of 'illumination', 'offset'.*got 'fog'"),
    (lambda d: uz.perturb.copies(d, 3), InvalidTypeError, r"family must be a perturbation"),
    (lambda d: uz.perturb.copies(d, "illumination", magnitude=(-0.5, 1.2)), InvalidInputError,
     r"magnitude low of illumination \(gain\) must lie in \(0\.0, inf\], got -0\.5"),
    (lambda d: uz.perturb.copies(d, "illumination", magnitude=(1.2, 0.8)), InvalidInputError,
     r"low <= high.*got \(1\.2, 0\.8\)"),
    (lambda d: uz.perturb.copies(d, "noise", magnitude=(-10, 20)), InvalidInputError,
     r"magnitude low of noise \(SNR \(dB\)\) must lie in \[0\.0, 100\.0\]"),
    (lambda d: uz.perturb.copies(d, "noise", magnitude=(20, float("nan"))), InvalidInputError,
     r"magnitude high of noise .* must be finite"),
    (lambda d: uz.perturb.copies(d, "noise", magnitude="loud"), InvalidTypeError,
     r"magnitude of noise .* must be a real number, got 'loud'"),
    (lambda d: uz.perturb.copies(d, "noise", magnitude=(1, 2, 3)), InvalidInputError,
     r"magnitude must be a number or a pair \(low, high\) for noise"),
    (lambda d: uz.perturb.copies(d, "spectral_shift", magnitude=(0, 0.8)), InvalidInputError,
     r"magnitude high of spectral_shift .* must lie in \[-0\.5, 0\.5\]"),
    (lambda d: uz.perturb.copies(d, "band_dropout", magnitude=(0.1, 1.0)), InvalidInputError,
     r"magnitude high of band_dropout .* must lie in \[0\.0, 1\.0\)"),
    (lambda d: uz.perturb.copies(d, "missing_features", magnitude=0.9), InvalidInputError,
     r"magnitude high \(missing_features.*0\.9 would remove 4 of the data's 4 features"),
    (lambda d: uz.perturb.copies(d, "illumination", k=0), InvalidInputError,
     r"k must be >= 1, got 0"),
    (lambda d: uz.perturb.copies(d, "illumination", k=10**9), InvalidInputError,   # issue 25
     r"k must be at most 1,000 .*got 1,000,000,000"),
    (lambda d: uz.perturb.copies(d, "gaussian_noise:1e308-1e308", k=1), InvalidInputError,
     r"gaussian_noise at magnitude 1e\+308 .*overflow"),   # issue 25: was "must be finite"
    (lambda d: uz.perturb.copies(d, "illumination", k=2.5), InvalidTypeError,
     r"k must be an integer, got 2\.5"),
    (lambda d: uz.perturb.copies(d, "illumination", seed=-1), InvalidInputError,
     r"seed must be an integer in \[0, 2\*\*63\)"),
    (lambda d: uz.perturb.copies(d.X_test, "illumination"), InvalidTypeError,
     r"data must be a ClassificationData"),
    (lambda d: uz.perturb.copies(d, "noise", fill="zero"), InvalidInputError,
     r"fill applies to band_dropout only, not to noise"),
    (lambda d: uz.perturb.band_dropout(d, 0.2, fill="nearest"), InvalidInputError,
     r"fill must be one of 'zero', 'interpolate'; got 'nearest'"),
    (lambda d: uz.perturb.copies(d, "noise:20-40", magnitude=(1, 2)), InvalidInputError,
     r"already names its range"),
    (lambda d: uz.perturb.apply(d, "illumination", 0.0), InvalidInputError,
     r"magnitude of illumination \(gain\) must lie in \(0\.0, inf\]"),
])
def test_bad_input_names_the_argument_the_value_and_what_is_allowed(mixture, call, error,
                                                                    message):
    with pytest.raises(error, match=message):
        call(mixture)


@pytest.mark.parametrize("text, message", [
    ("illumination:abc", r"must be written FAMILY\[:LOW-HIGH\].*got range 'abc'"),
    ("illumination:1.2-0.8", r"low <= high"),
    ("nosuch:1-2", r"perturbation family must be one of"),
    ("illumination:0.8-1.2-1.4", r"must be written FAMILY"),
])
def test_parse_errors(text, message):
    with pytest.raises(InvalidInputError, match=message):
        Perturbation.parse(text)
