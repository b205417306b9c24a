"""``uz.fidelity``: scores against a reference posterior, and their Monte Carlo yardstick.

Noise model: a method equal to the reference scores within ``mc_floor + k·mc_sd``
of the perfect score (the derivation is in :mod:`uqzoo.fidelity`); k = 3.
Stand-in posteriors draw parameters i.i.d. from a Gaussian around a fixed
network, so two stand-ins of different seeds sample the same predictive
exactly -- the cheap form of "a second HMC seed" -- and a real second HMC run
is checked in the slow test at the end.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

import uqzoo as uz
from uqzoo.errors import ConvergenceWarning, InvalidInputError, InvalidTypeError
from uqzoo.fidelity import METRICS, Fidelity, fidelity
from uqzoo.reference import check_reference, data_fingerprint, reference_posterior

K_SD = 3.0            # standard deviations a score may stray beyond its MC floor
FINGERPRINT = "sha256:" + "0" * 64


def stand_in(spec: uz.MLPSpec, seed: int, num_draws: int, *, shrink: float = 1.0,
             method: str = "hmc", fingerprint: str = FINGERPRINT) -> uz.Posterior:
    """I.i.d. parameter draws N(θ₀, 0.5²) around one fixed network θ₀ (shrunk toward θ₀
    by ``shrink``); as an "hmc" posterior, diagnostics that pass the reference gate."""
    rng = np.random.default_rng(seed)
    centre = spec.init_params(seed=123)
    draws = {k: (v[None] + 0.5 / shrink * rng.normal(size=(num_draws, *v.shape))
                 ).astype(np.float32) for k, v in centre.items()}
    diagnostics = {}
    if method == "hmc":
        ess = np.full((10, 1), float(num_draws))
        diagnostics = {"data_fingerprint": fingerprint, "rhat_predictive": np.ones((10, 1)),
                       "ess_bulk_predictive": ess, "ess_tail_predictive": ess,
                       "rhat_lp": 1.0, "ess_bulk_lp": float(num_draws),
                       "ess_tail_lp": float(num_draws), "num_divergent": 0}
    return uz.Posterior(spec=spec, method=method, config={}, seed=seed, draws=draws,
                        sample_shape=(4, num_draws // 4), diagnostics=diagnostics)


def points(n: int, d: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng([seed, 7]).normal(size=(n, d))


@pytest.fixture(params=[2, 3], ids=["binary", "3-class"])
def spec(request) -> uz.MLPSpec:
    return uz.MLPSpec(4, request.param, hidden=(5, 5))


def test_identical_posterior_scores_perfectly(spec):
    ref = stand_in(spec, 0, 400)
    fid = fidelity(ref, ref, points(300, 4), workers=1)
    assert isinstance(fid, Fidelity)
    assert [s.name for s in fid.scores] == list(METRICS)
    for score in fid.scores:
        assert score.perfect == METRICS[score.name].perfect
        assert score.value == pytest.approx(score.perfect, abs=1e-6), score
        assert score.mc_floor >= 0 and score.mc_sd >= 0
    assert set(fid.per_point) == {"agree", "total_variation", "wasserstein1", "overlap",
                                  "width", "reference_width"}
    assert all(v.shape == (300,) for v in fid.per_point.values())


@pytest.mark.parametrize("seed", range(1, 6))
def test_independent_draws_of_the_same_posterior_score_within_mc_error(spec, seed):
    """The yardstick: a second sample of the same predictive, of another size."""
    ref = stand_in(spec, 0, 800)
    second = stand_in(spec, seed, 400)
    fid = fidelity(second, ref, points(500, 4, seed), workers=1)
    for score in fid.scores:
        assert score.within_mc_error(K_SD), score
    # The floors are not vacuous: a distance that MC alone explains is of their size.
    assert fid["total_variation"].value > 0.2 * fid["total_variation"].mc_floor
    assert fid["wasserstein1"].value > 0.2 * fid["wasserstein1"].mc_floor


@pytest.mark.slow
def test_mc_floor_predicts_the_mean_distance_of_replicate_pairs():
    """The floors' derivation: across independent pairs of samples of one predictive,
    the mean total variation and W1 match the mean floor within 3 standard errors."""
    spec = uz.MLPSpec(4, 2, hidden=(5, 5))
    X = points(200, 4)
    tv, w1, tv_floor, w1_floor = [], [], [], []
    for rep in range(12):
        fid = fidelity(stand_in(spec, 100 + rep, 200), stand_in(spec, 200 + rep, 200), X,
                       workers=1, require_gate=False)
        tv.append(fid["total_variation"].value)
        w1.append(fid["wasserstein1"].value)
        tv_floor.append(fid["total_variation"].mc_floor)
        w1_floor.append(fid["wasserstein1"].mc_floor)
    for observed, floor in ((tv, tv_floor), (w1, w1_floor)):
        se = np.std(observed, ddof=1) / np.sqrt(len(observed))
        assert abs(np.mean(observed) - np.mean(floor)) < 3 * se + 0.05 * np.mean(floor), (
            np.mean(observed), np.mean(floor), se)


def test_over_narrow_posterior_is_caught(spec):
    ref = stand_in(spec, 0, 800)
    narrow = stand_in(spec, 1, 400, shrink=10.0, method="swag")
    fid = fidelity(narrow, ref, points(500, 4), workers=1)
    ratio = fid["width_ratio"]
    assert not ratio.within_mc_error(K_SD)
    assert ratio.value < 0.3                         # ~1/10 in parameter scale
    assert ratio.value + ratio.mc_floor + K_SD * ratio.mc_sd < 1.0
    assert not fid["wasserstein1"].within_mc_error(K_SD)
    assert fid.method == "swag" and fid.ess == (400.0, 400.0)


def test_scores_match_direct_computation():
    """Per-point W1 (scipy), total variation and interval widths (np.quantile) from
    the (S, N, K) draws; draw counts differ (300 vs 500)."""
    spec = uz.MLPSpec(4, 3, hidden=(5, 5))
    post, ref = stand_in(spec, 1, 300), stand_in(spec, 0, 500)
    X = points(40, 4)
    fid = fidelity(post, ref, X, level=0.8, workers=1)
    pa, pb = post.predict_proba_draws(X), ref.predict_proba_draws(X)
    w1 = [np.mean([wasserstein_distance(pa[:, i, k], pb[:, i, k]) for k in range(3)])
          for i in range(40)]
    np.testing.assert_allclose(fid.per_point["wasserstein1"], w1, rtol=1e-4, atol=1e-6)
    tv = 0.5 * np.abs(pa.mean(0, dtype=np.float64) - pb.mean(0, dtype=np.float64)).sum(1)
    np.testing.assert_allclose(fid.per_point["total_variation"], tv, rtol=1e-4, atol=1e-6)
    q = np.quantile(pb.astype(np.float64), [0.1, 0.9], axis=0)
    np.testing.assert_allclose(fid.per_point["reference_width"], (q[1] - q[0]).mean(1),
                               rtol=1e-4, atol=1e-6)
    mean_a, mean_b = pa.mean(0, dtype=np.float64), pb.mean(0, dtype=np.float64)
    agree = mean_a.argmax(1) == mean_b.argmax(1)
    # A point whose two largest mean probabilities differ by less than the rounding of
    # a float32 mean over the draws (S · 2**-24 < 1e-4) may break either way on
    # another CPU's summation order; every other point must agree exactly.
    def top_gap(mean):
        top2 = np.sort(mean, axis=1)[:, -2:]
        return top2[:, 1] - top2[:, 0]
    clear = (top_gap(mean_a) > 1e-4) & (top_gap(mean_b) > 1e-4)
    assert clear.mean() >= 0.9
    np.testing.assert_array_equal(fid.per_point["agree"][clear], agree[clear])
    assert fid["agreement"].value == pytest.approx(agree.mean(), abs=(~clear).mean() + 1e-12)


def test_chunking_and_workers_agree_to_rounding(spec):
    post, ref = stand_in(spec, 1, 200), stand_in(spec, 0, 400)
    X = points(301, 4)
    one = fidelity(post, ref, X, workers=1)
    other = fidelity(post, ref, X, workers=2, chunk_size=37)
    for a, b in zip(one.scores, other.scores, strict=True):
        assert a.value == pytest.approx(b.value, rel=1e-5, abs=1e-7)
        assert a.mc_floor == pytest.approx(b.mc_floor, rel=1e-5, abs=1e-7)
    assert one.to_rows()[0] == {"method": "hmc", "metric": "agreement",
                                "value": one["agreement"].value, "perfect": 1.0,
                                "mc_floor": one["agreement"].mc_floor,
                                "mc_sd": one["agreement"].mc_sd, "level": 0.9}
    assert "agreement" in str(one)


def test_bad_input_is_refused():
    spec = uz.MLPSpec(4, 2, hidden=(5, 5))
    ref, post = stand_in(spec, 0, 400), stand_in(spec, 1, 40, method="ensemble")
    X = points(10, 4)
    with pytest.raises(InvalidTypeError, match=r"posterior must be a uqzoo\.Posterior"):
        fidelity("post", ref, X)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="reference must be an HMC posterior"):
        fidelity(ref, post, X)
    with pytest.raises(InvalidInputError, match="level must lie in"):
        fidelity(post, ref, X, level=1.5)
    with pytest.raises(InvalidInputError, match="X"):
        fidelity(post, ref, points(10, 3))
    with pytest.raises(InvalidInputError, match="X must hold at least one row"):
        fidelity(post, ref, np.zeros((0, 4)))
    with pytest.raises(InvalidInputError, match="n_classes"):
        fidelity(stand_in(uz.MLPSpec(4, 3, hidden=(5, 5)), 1, 40, method="swag"), ref, X)
    with pytest.raises(InvalidInputError, match="fitted on other training data"):
        fidelity(stand_in(spec, 1, 40, fingerprint="sha256:" + "1" * 64), ref, X)
    with pytest.raises(InvalidInputError, match="no fidelity score 'nll'"):
        fidelity(post, ref, X)["nll"]


# -- the real thing: two NUTS runs of different seeds --------------------------------------

@pytest.fixture(scope="module")
def hmc_pair():
    """Two gated references of sim-teacher (n_train 200, 2×5 tanh net) with seeds 0 and 1."""
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=300, seed=0)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(5, 5))
    options: dict[str, Any] = {"num_warmup": 200, "num_samples": 1200, "num_diagnostic_points": 20,
               "progress_bar": False}
    first = reference_posterior(spec, data, seed=0, **options)
    second = reference_posterior(spec, data, seed=1, **options)
    return data, first, second


@pytest.mark.slow
def test_second_hmc_seed_scores_within_mc_error(hmc_pair):
    data, first, second = hmc_pair
    assert check_reference(first, data).passed and check_reference(second, data).passed
    fid = fidelity(second, first, data.X_test, data=data)
    for score in fid.scores:
        assert score.within_mc_error(K_SD), (score, str(fid))
    # The reference's ESS, not its S, sets the yardstick.
    assert fid.reference_ess[0] < first.num_draws


@pytest.mark.slow
def test_over_narrow_hmc_posterior_is_caught(hmc_pair):
    """Every draw of a chain shrunk 10× toward that chain's mean (one chain: its own
    mode, so the mean network is a sensible function)."""
    data, first, second = hmc_pair
    per_chain = second.sample_shape[1]
    draws = {k: v[:per_chain] for k, v in second.draws.items()}
    shrunk = {k: v.mean(0) + (v - v.mean(0)) / 10 for k, v in draws.items()}
    narrow = uz.Posterior(spec=second.spec, method="narrow", config={}, seed=0, draws=shrunk)
    fid = fidelity(narrow, first, data.X_test, data=data)
    assert fid["width_ratio"].value < 0.5
    assert not fid["width_ratio"].within_mc_error(K_SD)
    assert not fid["wasserstein1"].within_mc_error(K_SD)


@pytest.mark.slow
def test_reference_of_other_data_is_refused(hmc_pair):
    data, first, second = hmc_pair
    other = uz.datasets.load("sim-teacher", n_train=200, n_test=300, seed=1)
    assert data_fingerprint(other) != data_fingerprint(data)
    with pytest.raises(InvalidInputError, match="other training data"):
        fidelity(second, first, other.X_test, data=other)


def test_failed_gate_is_no_reference():
    """A stand-in whose R-hat fails: refused unless require_gate=False."""
    spec = uz.MLPSpec(4, 2, hidden=(5, 5))
    ref = stand_in(spec, 0, 400)
    bad = uz.Posterior(**{**{f: getattr(ref, f) for f in (
        "spec", "method", "config", "seed", "draws", "sample_shape")},
        "diagnostics": {**ref.diagnostics, "rhat_lp": 1.2}})
    post = stand_in(spec, 1, 40, method="swag")
    with pytest.raises(InvalidInputError, match="did not pass the reference gate"):
        fidelity(post, bad, points(10, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert fidelity(post, bad, points(10, 4), require_gate=False).n_points == 10
