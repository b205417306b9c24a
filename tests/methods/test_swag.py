"""SWAG: moments and covariance equal their definitions; draws follow that covariance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

import uqzoo as uz
from uqzoo.methods import _trainer, swag

METHOD = "swag"
DATA_SEED = 3
OPTIONS = dict(num_epochs=40, batch_size=50, swa_start=0.5, num_samples=30, max_rank=5)


def _snapshots(num=30, P=5):
    """A deterministic, non-trivial sequence of parameter snapshots."""
    i = np.arange(1, num + 1)[:, None]
    j = np.arange(1, P + 1)[None, :]
    return (np.sin(0.7 * i * j) + 0.1 * i / j).astype(np.float32)


def _run(snapshots, rank):
    state = swag.swag_init(snapshots.shape[1], rank)
    for theta in snapshots:
        state = swag.swag_update(state, theta)
    return state


def test_moments_and_deviations_equal_their_definitions():
    snaps = _snapshots().astype(np.float64)
    K = 20
    state = _run(snaps.astype(np.float32), K)
    n = len(snaps)
    assert int(state.n) == n
    np.testing.assert_allclose(state.mean, snaps.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.sq_mean, (snaps ** 2).mean(0), rtol=1e-5, atol=1e-6)
    # Deviation of snapshot i is θ_i minus the running mean after i snapshots;
    # the buffer holds the last K, snapshot i in row i mod K.
    running_mean = np.cumsum(snaps, 0) / np.arange(1, n + 1)[:, None]
    for i in range(n - K, n):
        np.testing.assert_allclose(state.deviations[i % K], snaps[i] - running_mean[i],
                                   rtol=1e-4, atol=1e-5)
    D = np.stack([snaps[i] - running_mean[i] for i in range(n - K, n)])
    var = (snaps ** 2).mean(0) - snaps.mean(0) ** 2
    expected = 0.5 * (np.diag(var) + D.T @ D / (K - 1))
    np.testing.assert_allclose(swag.swag_covariance(state, 0.5), expected, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(swag.swag_covariance(state, 0.5, diagonal=True),
                               0.5 * np.diag(var), rtol=1e-3, atol=1e-6)
    # Fewer snapshots than K: only those collected enter the low-rank part.
    short = _run(snaps[:4].astype(np.float32), K)
    D4 = np.stack([snaps[i] - running_mean[i] for i in range(4)])
    var4 = (snaps[:4] ** 2).mean(0) - snaps[:4].mean(0) ** 2
    np.testing.assert_allclose(swag.swag_covariance(short, 1.0), np.diag(var4) + D4.T @ D4 / 3,
                               rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("diagonal", [False, True])
def test_draws_have_the_swag_covariance(diagonal):
    """Sample mean and covariance of many draws within their Monte Carlo standard errors."""
    state = _run(_snapshots(), 20)
    cov = swag.swag_covariance(state, 0.5, diagonal)
    n = 20000
    draws = swag.swag_sample(state, n, np.random.default_rng(0), 0.5, diagonal)
    P = cov.shape[0]
    entries = list(itertools.combinations_with_replacement(range(P), 2))
    # Bonferroni over the mean's P entries and the covariance's P(P+1)/2, at 1e-3 overall.
    k = stats.norm.isf(1e-3 / (2 * (P + len(entries))))
    mean_se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(draws.mean(0) - np.asarray(state.mean)) < k * mean_se)
    sample_cov = np.cov(draws, rowvar=False)
    for a, b in entries:
        # Wishart: Var(S_ab) = (Σ_ab² + Σ_aa Σ_bb) / (n − 1) for Gaussian draws.
        se = np.sqrt((cov[a, b] ** 2 + cov[a, a] * cov[b, b]) / (n - 1))
        assert abs(sample_cov[a, b] - cov[a, b]) < k * se, (a, b)


def test_learning_rate_schedule_is_the_papers():
    lrs = swag.learning_rate_schedule(100, 50, 0.1, 0.01)
    assert lrs.shape == (100,)
    np.testing.assert_allclose(lrs[:26], 0.1)                     # t = e/50 <= 0.5
    np.testing.assert_allclose(lrs[35], 0.1 - 0.09 * (0.7 - 0.5) / 0.4, rtol=1e-6)
    np.testing.assert_allclose(lrs[46:], 0.01)                     # t > 0.9


def test_trainer_collects_the_snapshots(spec, data):
    config = swag.Config(**OPTIONS)
    collector = swag._Collector(spec=spec, start_epoch=config.swa_start_epoch,
                                collect_every=1, rank=5)
    result, _ = _trainer.fit_members(spec, data, config, seed=0, num_members=2,
                                     hook=collector,
                                     learning_rates=swag.learning_rate_schedule(
                                         40, 20, config.learning_rate,
                                         config.swa_learning_rate))
    state = result.hook_state
    np.testing.assert_array_equal(state.n, [20, 20])
    final = spec.flatten(result.params, leading=1)
    # The last epoch is collected last: its deviation is (final params − mean), row 19 mod 5.
    np.testing.assert_allclose(state.deviations[:, 19 % 5], final - state.mean, atol=1e-5)


def test_fit_swag_and_multiswag(spec, data):
    post = uz.fit("swag", spec, data, seed=0, progress_bar=False, **OPTIONS)
    assert post.num_draws == 30 and post.method == "swag"
    assert post.diagnostics["swag_deviations"].shape == (1, 5, spec.n_params)
    np.testing.assert_array_equal(post.diagnostics["num_snapshots"], [20])
    again = uz.fit("swag", spec, data, seed=0, progress_bar=False, **OPTIONS)
    for k in post.draws:
        np.testing.assert_array_equal(post.draws[k], again.draws[k])
    multi = uz.fit("swag", spec, data, seed=0, progress_bar=False, num_runs=3,
                   **{**OPTIONS, "num_samples": 31})
    assert multi.num_draws == 31 and multi.diagnostics["loss"].shape == (3, 40)
    means = multi.diagnostics["swag_mean"]
    assert np.abs(means[0] - means[1]).max() > 1e-3           # independent runs
    diag = uz.fit("swag", spec, data, seed=0, progress_bar=False, covariance="diagonal",
                  **OPTIONS)
    # Same trajectory (same seed), different covariance.
    np.testing.assert_array_equal(diag.diagnostics["swag_mean"], post.diagnostics["swag_mean"])
    assert not np.array_equal(diag.draws["layers.0.weight"], post.draws["layers.0.weight"])


def test_bad_config_is_rejected(spec, data):
    # A config holds only what the method uses: SWAG has no early stopping.
    for option in ("validation_fraction", "patience"):
        with pytest.raises(uz.InvalidInputError, match=f"unknown option.*{option}"):
            uz.fit("swag", spec, data, **{option: 0.1})
    with pytest.raises(uz.InvalidInputError, match="snapshot"):
        uz.fit("swag", spec, data, num_epochs=10, swa_start=0.95)
    with pytest.raises(uz.InvalidInputError, match="covariance"):
        uz.fit("swag", spec, data, covariance="full")
    with pytest.raises(uz.InvalidInputError, match="num_samples"):
        uz.fit("swag", spec, data, num_runs=4, num_samples=2)


def test_stationarity_flags_a_loss_still_falling_over_the_swa_phase():
    rng = np.random.default_rng(0)
    epochs, start = 200, 100
    noise = 0.01 * rng.standard_normal((2, epochs))
    steady = 0.4 + noise
    falling = steady + np.linspace(0.1, 0.0, epochs)[None]      # 0.05 over the phase
    ok, messages = swag.stationarity(steady, start)
    assert ok and messages == ()
    ok, messages = swag.stationarity(np.stack([steady[0], falling[1]]), start)
    assert not ok and len(messages) == 1 and messages[0].startswith("run 1: ")
    assert "still fell" in messages[0]
    ok, messages = swag.stationarity(steady[:, :102], start)
    assert not ok and "too few" in messages[0]


def test_fit_reports_whether_the_swa_phase_was_stationary(spec, data):
    post = uz.fit("swag", spec, data, seed=0, progress_bar=False, **OPTIONS)
    assert post.converged is not None
    assert post.converged == (post.warnings == ())
    # A rate too small to reach the stationary regime: still descending at the end.
    slow = uz.fit("swag", spec, data, seed=0, progress_bar=False,
                  **{**OPTIONS, "learning_rate": 1e-4, "swa_learning_rate": 1e-4})
    assert slow.converged is False and slow.warnings[0].startswith("swag: ")


def test_defaults_are_the_papers_recipe_at_this_data_size():
    """K = 20, scale 0.5, one snapshot per epoch, a constant SWA rate, and the rate that
    keeps Maddox et al.'s η N / (2B(1 − μ)) ≈ 19.5 (0.01, N = 50,000, B = 128) at
    N = 1000, B = 64."""
    config = swag.Config()
    assert (config.max_rank, config.scale, config.collect_every) == (20, 0.5, 1)
    papers = 0.01 * 50_000 / (2 * 128 * (1 - 0.9))
    ours = config.swa_learning_rate * 1000 / (2 * config.batch_size * (1 - config.momentum))
    assert abs(ours / papers - 1) < 0.01
    lrs = swag.learning_rate_schedule(config.num_epochs, config.swa_start_epoch,
                                      config.learning_rate, config.swa_learning_rate)
    np.testing.assert_allclose(lrs[config.swa_start_epoch:], config.swa_learning_rate)
