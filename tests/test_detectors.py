"""Classical detectors: textbook formulas, invariances, and known-truth Gaussian scenes."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.covariance import ledoit_wolf

import uqzoo as uz
from uqzoo.detectors import fit_detector
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import detection_roc

EPS = np.finfo(np.float64).eps


def gaussian_scene(seed, D=6, d2=4.0, n_bg=4000, n_tg=400):
    """Background ~ N(μ, Σ); targets = background + d with dᵀΣ⁻¹d = d2 (the SNR)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(D, D))
    sigma = A @ A.T / D + 0.5 * np.eye(D)
    mu = 3.0 + rng.normal(size=D)             # away from 0, so CEM differs from MF
    d = rng.normal(size=D)
    d *= math.sqrt(d2 / (d @ np.linalg.solve(sigma, d)))
    chol = np.linalg.cholesky(sigma)

    def draw(n_b, n_t):
        X = mu + rng.normal(size=(n_b + n_t, D)) @ chol.T
        X[n_b:] += d
        return X, (np.arange(n_b + n_t) >= n_b).astype(int)

    X_train, y_train = draw(n_bg, n_tg)
    X_test, y_test = draw(n_bg, n_tg)
    return dict(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test, mu=mu,
                sigma=sigma, d=d, d2=d2)


def textbook(name, det, X):
    """The detector formulas with an explicit float64 inverse (what the module must not do)."""
    mu, s = det.background_mean, det.signature
    if name == "cem":
        R_inv = np.linalg.inv(det.background_covariance + np.outer(mu, mu))
        return X @ R_inv @ s / (s @ R_inv @ s)
    S_inv = np.linalg.inv(det.background_covariance)
    xc = X - mu
    if name == "rx":
        return np.einsum("nd,de,ne->n", xc, S_inv, xc)
    sc = s - mu
    m = xc @ S_inv @ sc
    if name == "matched_filter":
        return m / (sc @ S_inv @ sc)
    return np.sign(m) * m**2 / ((sc @ S_inv @ sc) * np.einsum("nd,de,ne->n", xc, S_inv, xc))


def solve_tolerance(matrix, D):
    """Forward error of two backward-stable solves of a κ-conditioned system: ~D κ ε each."""
    return 10 * D * np.linalg.cond(matrix) * EPS


# -- (a) formulas --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ace", "cem", "matched_filter", "rx"])
def test_scores_equal_the_textbook_formulas(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(46, 5)) @ rng.normal(size=(5, 5)) + 2.0
    y = (np.arange(46) < 6).astype(int)
    X[y == 1] += rng.normal(size=5)
    det = fit_detector(name, X, y)
    bg = X[y == 0]
    cov, rho = ledoit_wolf(bg)
    np.testing.assert_allclose(det.background_covariance, cov, rtol=1e-13, atol=0)
    assert det.shrinkage == pytest.approx(rho, rel=1e-12) and det.shrinkage_method == "ledoit-wolf"
    np.testing.assert_array_equal(det.background_mean, bg.mean(axis=0))
    np.testing.assert_array_equal(det.signature, X[y == 1].mean(axis=0))
    assert (det.n_targets, det.n_background) == (6, 40)
    X_new = rng.normal(size=(30, 5)) * 2 + 1.0
    got, want = det.score(X_new), textbook(name, det, X_new)
    matrix = det.background_covariance + (np.outer(det.background_mean, det.background_mean)
                                          if name == "cem" else 0)
    tol = solve_tolerance(matrix, 5)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    assert got.dtype == np.float64


def test_the_four_functions_are_fit_then_score():
    scene = gaussian_scene(0, n_bg=300, n_tg=30)
    args = scene["X_train"], scene["y_train"], scene["X_test"][:50]
    for name in uz.detectors.names():
        direct = getattr(uz.detectors, name)(*args)
        np.testing.assert_array_equal(direct, fit_detector(name, *args[:2]).score(args[2]))


def test_fixed_shrinkage_is_the_documented_convex_combination():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 4)) * [1.0, 2.0, 3.0, 4.0]
    y = (np.arange(80) < 10).astype(int)
    S = np.cov(X[y == 0], rowvar=False, bias=True)
    for rho in (0.0, 0.3, 1.0):
        det = fit_detector("matched_filter", X, y, shrinkage=rho)
        want = (1 - rho) * S + rho * np.trace(S) / 4 * np.eye(4)
        np.testing.assert_allclose(det.background_covariance, want, rtol=1e-12)
        assert det.shrinkage == rho and det.shrinkage_method == "fixed"


def test_target_class_and_multiclass_background():
    # With three classes, the background is every label but target_class.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(90, 3))
    y = np.arange(90) % 3
    det = fit_detector("ace", X, y, target_class=2)
    np.testing.assert_array_equal(det.signature, X[y == 2].mean(axis=0))
    np.testing.assert_array_equal(det.background_mean, X[y != 2].mean(axis=0))


# -- (b) invariances -------------------------------------------------------------------------

def test_ace_is_invariant_to_scaling_the_pixel():
    scene = gaussian_scene(3, n_bg=500, n_tg=50)
    det = fit_detector("ace", scene["X_train"], scene["y_train"])
    X = scene["X_test"][:200]
    centred = X - det.background_mean
    base = det.score(X)
    for c in (0.01, 0.7, 25.0):
        np.testing.assert_allclose(det.score(det.background_mean + c * centred), base,
                                   rtol=1e-12, atol=1e-12)
    # one-sided: pointing away from the signature flips the sign, not the size
    np.testing.assert_allclose(det.score(det.background_mean - 3.0 * centred), -base,
                               rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(base) <= 1 + 1e-12)


def test_cem_and_matched_filter_pass_the_signature_with_gain_one():
    scene = gaussian_scene(4, n_bg=500, n_tg=50)
    for name in ("cem", "matched_filter"):
        det = fit_detector(name, scene["X_train"], scene["y_train"])
        assert det.score(det.signature[None, :])[0] == pytest.approx(1.0, abs=1e-12)
    mf = fit_detector("matched_filter", scene["X_train"], scene["y_train"])
    assert mf.score(mf.background_mean[None, :])[0] == pytest.approx(0.0, abs=1e-12)
    ace = fit_detector("ace", scene["X_train"], scene["y_train"])
    assert ace.score(ace.signature[None, :])[0] == pytest.approx(1.0, abs=1e-12)
    assert ace.score(ace.background_mean[None, :])[0] == 0.0       # no direction, no evidence


def test_rx_is_the_squared_mahalanobis_distance():
    from scipy.spatial.distance import mahalanobis
    scene = gaussian_scene(5, n_bg=300, n_tg=0)
    det = fit_detector("rx", scene["X_train"], scene["y_train"])
    assert det.signature is None and det.n_targets == 0          # RX needs no targets
    VI = np.linalg.inv(det.background_covariance)
    X = scene["X_test"][:40]
    want = np.array([mahalanobis(x, det.background_mean, VI) ** 2 for x in X])
    tol = solve_tolerance(det.background_covariance, X.shape[1])
    np.testing.assert_allclose(det.score(X), want, rtol=tol)


# -- (c) known truth: the Gaussian scene -----------------------------------------------------

def exact_linear_auroc(w, scene):
    """AUROC of the score wᵀx on the scene's populations: Φ(wᵀd / √(2 wᵀΣw))."""
    return stats.norm.cdf(w @ scene["d"] / math.sqrt(2 * w @ scene["sigma"] @ w))


@pytest.mark.parametrize("seed", range(3))
def test_matched_filter_is_near_the_neyman_pearson_optimum(seed):
    scene = gaussian_scene(seed)
    D, n_bg, n_tg, d2 = 6, 4000, 400, scene["d2"]
    oracle = stats.norm.cdf(math.sqrt(d2 / 2))     # the LRT's AUROC, for any detector a bound
    # Sample covariance (ρ = 0) so the Reed–Mallett–Brennan loss applies: the
    # normalised SNR ρ = d_fit² / d² of a filter from n background samples is
    # Beta(n − D + 2, D − 1) (n − 1 samples: the mean is estimated). The
    # signature ŝ − μ̂ = d + e with whitened e ~ N(0, (1/n_tg + 1/n_bg) I)
    # loses at most |e_⊥|² / d² ~ σ_e² χ²_{D−1} / d². Both at 1e-4 tails.
    det = fit_detector("matched_filter", scene["X_train"], scene["y_train"], shrinkage=0.0)
    w = np.linalg.solve(det.background_covariance, det.signature - det.background_mean)
    fitted = exact_linear_auroc(w, scene)
    rho_cov = stats.beta.ppf(1e-4, n_bg - 1 - D + 2, D - 1)
    rho_sig = 1 - (1 / n_tg + 1 / n_bg) * stats.chi2.ppf(1 - 1e-4, D - 1) / d2
    floor = stats.norm.cdf(math.sqrt(d2 * rho_cov * rho_sig / 2))
    assert floor <= fitted <= oracle + 1e-12
    roc = detection_roc(det.score(scene["X_test"]), scene["y_test"])
    # Test-sample noise only (the fit is fixed): 4 DeLong standard errors.
    assert abs(roc.auroc - fitted) <= 4 * roc.auroc_stderr
    assert roc.auroc >= floor - 4 * roc.auroc_stderr


@pytest.mark.parametrize("seed", range(3))
def test_cem_ace_and_rx_against_the_gaussian_truth(seed):
    scene = gaussian_scene(seed)
    oracle = stats.norm.cdf(math.sqrt(scene["d2"] / 2))
    args = scene["X_train"], scene["y_train"]
    # CEM is linear too: its exact AUROC follows from w = R̂⁻¹ŝ and cannot beat the LRT.
    cem = fit_detector("cem", *args)
    R = cem.background_covariance + np.outer(cem.background_mean, cem.background_mean)
    fitted = exact_linear_auroc(np.linalg.solve(R, cem.signature), scene)
    assert fitted <= oracle + 1e-12
    roc = detection_roc(cem.score(scene["X_test"]), scene["y_test"])
    assert abs(roc.auroc - fitted) <= 4 * roc.auroc_stderr
    # ACE: no closed form here, but no detector beats the Neyman–Pearson test, and
    # ACE must clearly beat chance at this SNR.
    roc = detection_roc(uz.detectors.ace(*args, scene["X_test"]), scene["y_test"])
    assert 0.5 + 4 * roc.auroc_stderr < roc.auroc <= oracle + 4 * roc.auroc_stderr
    # RX given its fit: for x ~ N(m, Σ), (x − μ̂)ᵀΣ̂⁻¹(x − μ̂) has mean
    # tr(Σ̂⁻¹Σ) + δᵀΣ̂⁻¹δ and variance 2 tr((Σ̂⁻¹Σ)²) + 4 δᵀΣ̂⁻¹ΣΣ̂⁻¹δ, δ = m − μ̂.
    rx = fit_detector("rx", *args)
    P = np.linalg.solve(rx.background_covariance, scene["sigma"])
    scores = rx.score(scene["X_test"])
    for label, shift in ((0, 0.0), (1, scene["d"])):
        delta = scene["mu"] + shift - rx.background_mean
        a = np.linalg.solve(rx.background_covariance, delta)
        mean = np.trace(P) + delta @ a
        var = 2 * np.trace(P @ P) + 4 * a @ scene["sigma"] @ a
        got = scores[scene["y_test"] == label]
        assert abs(got.mean() - mean) <= 4 * math.sqrt(var / got.size)


# -- real targets: MUUFL Gulfport ------------------------------------------------------------

@pytest.fixture(scope="module")
def muufl():
    return uz.datasets.load("muufl-target", seed=0)


def irwin_hall_sf(mean, n):
    """P(mean of n iid U(0, 1) ≥ mean): the chance of an AUROC this high with n targets."""
    x = n * (1 - mean)          # by symmetry, P(sum ≤ x)
    return sum((-1) ** k * math.comb(n, k) * (x - k) ** n
               for k in range(math.floor(x) + 1)) / math.factorial(n)


def test_detectors_on_the_real_muufl_crop(muufl):
    X_test = np.asarray(muufl.X_test, dtype=np.float64)
    for name in uz.detectors.names():
        det = fit_detector(name, muufl.X_train, muufl.y_train)
        scores = det.score(muufl.X_test)
        # 72 correlated real bands: the hard case for the numerics
        want = textbook(name, det, X_test)
        matrix = det.background_covariance + (np.outer(det.background_mean,
                                                       det.background_mean)
                                              if name == "cem" else 0)
        tol = solve_tolerance(matrix, X_test.shape[1])
        np.testing.assert_allclose(scores, want, rtol=tol, atol=tol * np.abs(want).max())
        roc = detection_roc(scores, muufl.y_test)
        assert roc.n_targets == 3 and roc.n_background == 1293
        if name != "rx":
            # With 3 targets among 1,293 pixels, under "scores carry no
            # information" the AUROC is the mean of 3 uniform ranks
            # (Irwin–Hall): the signature detectors must beat that at 5 %.
            assert irwin_hall_sf(roc.auroc, 3) < 0.05, (name, roc.auroc)


@pytest.mark.parametrize("name", ["matched_filter", "cem"])
def test_affine_detectors_follow_the_linear_mixing_of_muufl_implants(muufl, name):
    # muufl-target's training pixels are x = a t + (1 − a) b with the real
    # cloth spectrum t and a random real background pixel b, independent of a.
    # An affine score f has f(x) = a f(t) + (1 − a) f(b), so
    # (f(x) − a f(t)) / (1 − a) is distributed as f(b) on the untouched pixels:
    # equal means within 4 two-sample standard errors.
    a = np.asarray(muufl.meta["abundance_train"])
    X, y = muufl.X_train, muufl.y_train
    # Fit on one half only. Not seed 0: the loader draws its implants from
    # default_rng(0).random(N), which would put every implant in this half.
    half = np.random.default_rng(2024).random(X.shape[0]) < 0.5
    det = fit_detector(name, X[half], y[half])
    t = (muufl.meta["target_spectrum"] - muufl.meta["mean"]) / muufl.meta["scale"]
    f_t = det.score(t[None, :])[0]
    held = ~half
    implanted = held & (a > 0) & (a <= 0.9)        # 1 − a ≥ 0.1: no blow-up
    pure = held & (a == 0)
    recovered = (det.score(X[implanted]) - a[implanted] * f_t) / (1 - a[implanted])
    background = det.score(X[pure])
    se = math.sqrt(recovered.var(ddof=1) / recovered.size
                   + background.var(ddof=1) / background.size)
    assert abs(recovered.mean() - background.mean()) <= 4 * se
    assert implanted.sum() > 300 and pure.sum() > 1000


# -- bad input -------------------------------------------------------------------------------

def test_bad_input_names_argument_value_and_what_is_allowed():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = (np.arange(20) < 4).astype(int)
    with pytest.raises(InvalidInputError, match=r"name must be one of 'ace', 'cem', "
                                                r"'matched_filter', 'rx'; got 'glrt'"):
        fit_detector("glrt", X, y)
    with pytest.raises(InvalidInputError, match=r"target_class=1 labels no training pixel "
                                                r"\(labels present: \[0\]\)"):
        fit_detector("ace", X, np.zeros(20, int))
    with pytest.raises(InvalidInputError, match=r"at least 2 background training pixels.*got 1"):
        fit_detector("cem", X, np.r_[np.ones(19, int), 0])
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match="X_train must be finite; found nan at row 3"):
        fit_detector("rx", bad, y)
    det = fit_detector("ace", X, y)
    with pytest.raises(InvalidInputError, match=r"X must have 3 bands.*got shape \(2, 4\)"):
        det.score(np.zeros((2, 4)))
    with pytest.raises(InvalidInputError, match="shrinkage must be one of 'ledoit-wolf'"):
        fit_detector("ace", X, y, shrinkage="oas")
    with pytest.raises(InvalidInputError, match=r"shrinkage must lie in \[0.0, 1.0\], got 1.5"):
        fit_detector("ace", X, y, shrinkage=1.5)
    with pytest.raises(InvalidTypeError, match="target_class must be an integer label"):
        fit_detector("ace", X, y, target_class=True)
    with pytest.raises(InvalidInputError, match="one label per row"):
        fit_detector("ace", X, y[:-1])
    # fewer background pixels than bands and no shrinkage: singular, and the fix is named
    wide = rng.normal(size=(6, 8))
    with pytest.raises(InvalidInputError, match=r"singular.*use shrinkage='ledoit-wolf'"):
        fit_detector("matched_filter", wide, (np.arange(6) < 2).astype(int), shrinkage=0.0)
    assert fit_detector("matched_filter", wide, (np.arange(6) < 2).astype(int)).shrinkage > 0
    twice = np.concatenate([X, X])              # the targets are the background pixels
    with pytest.raises(InvalidInputError, match="signature equals the background mean"):
        fit_detector("ace", twice, np.r_[np.zeros(20, int), np.ones(20, int)])
