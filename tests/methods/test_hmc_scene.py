"""HMC on hyperspectral scenes: the input rotation is exact, the MAP warm start,
the time estimate and what compare says before a long fit, the progress
estimate, and a short run on the shipped MUUFL Gulfport subset.
"""

import warnings

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.errors import InvalidInputError, SlowFitWarning
from uqzoo.methods import hmc


def correlated_inputs(n=60, d=7, seed=0):
    """Columns sharing one strong factor, as neighbouring spectral bands do."""
    rng = np.random.default_rng(seed)
    factor = rng.normal(size=(n, 1))
    return factor + 0.3 * rng.normal(size=(n, d))


@pytest.mark.parametrize(("prior", "hierarchical"), [("fan_in", False), ("iid", True)])
def test_rotation_leaves_the_log_density_unchanged(prior, hierarchical):
    """U(W̃ V^T; X) = U(W̃; X V) for the model's potential, in float64.

    Both sides sum the same ~n·(d·h + h² + h) products in a different order;
    float64 rounding of that is ~1e-13 relative, so rtol 1e-9 is generous.
    """
    X = correlated_inputs()
    y = (X[:, 0] > 0).astype(np.int32)
    spec = uz.MLPSpec(X.shape[1], 2, hidden=(4, 3), prior=prior)
    V = hmc._input_rotation(X)
    np.testing.assert_allclose(V.T @ V, np.eye(V.shape[0]), atol=1e-12)
    program = hmc._numpyro_program(spec, hierarchical, 10, 0.8, 10, False, True, False)
    rng = np.random.default_rng(1)
    z = {k: rng.normal(size=s) for k, s in hmc._site_shapes(spec, hierarchical).items()}
    site = hmc._first_layer_site(hierarchical)
    z_rot = {**z, site: z[site] @ V}                                  # W̃ = W V
    import jax
    with jax.enable_x64(True):
        u, grad = program.gradient(z, X, y)
        u_rot, grad_rot = program.gradient(z_rot, X @ V, y)
    assert float(u_rot) == pytest.approx(float(u), rel=1e-9)
    # the gradient rotates with the parameters (V is orthogonal)
    np.testing.assert_allclose(np.asarray(grad_rot[site]), np.asarray(grad[site]) @ V,
                               rtol=1e-7, atol=1e-9)


def test_map_warm_start_starts_each_chain_at_its_own_mode():
    X = correlated_inputs(n=200)
    # noisy labels: a MAP exists (separable data would send the weights to infinity)
    p = 1 / (1 + np.exp(-2 * (X[:, 1] - X[:, 2])))
    y = (np.random.default_rng(2).random(200) < p).astype(np.int64)
    # the iid prior: the MAP trainer and the model share it however the default moves
    spec = uz.MLPSpec(X.shape[1], 2, hidden=(5,), prior="iid")
    cfg = hmc.Config(num_samples=8, num_chains=2, num_warmup=4, init="map", map_epochs=1000)
    starts = hmc._chain_starts(spec, cfg, seed=3, X=X, y=y)
    again = hmc._chain_starts(spec, cfg, seed=3, X=X, y=y)
    uniform = hmc._chain_starts(spec, hmc.Config(num_samples=8, num_chains=2, num_warmup=4,
                                                 init="uniform"), seed=3)
    program = hmc._numpyro_program(spec, False, 4, 0.8, 10, False, False, False)

    def grad_norm(z):
        _, g = program.gradient(z, X.astype(np.float32), y.astype(np.int32))
        return np.sqrt(sum(float(np.sum(np.square(v))) for v in g.values()))

    for (z, key), (z2, key2), (zu, _) in zip(starts, again, uniform, strict=True):
        for k in z:
            np.testing.assert_array_equal(z[k], z2[k])                 # seeded
        np.testing.assert_array_equal(key, key2)
        # near a mode: the potential's gradient is a small fraction of a random start's
        assert grad_norm(z) < 0.05 * grad_norm(zu), (grad_norm(z), grad_norm(zu))
    a, b = (s[0]["layers.0.weight"] for s in starts)
    assert not np.allclose(a, b)                                       # independent starts
    with pytest.raises(InvalidInputError, match="training data"):
        hmc._chain_starts(spec, cfg, seed=3)


def test_segments_start_with_one_iteration_and_adapt_to_the_rate():
    rates: list[float] = []
    lengths = []
    for n in hmc._segments(500, rates):
        lengths.append(n)
        rates.append(0.1)            # 0.1 s per iteration: 20 iterations per 2 s
    assert lengths[0] == 1 and sum(lengths) == 500
    assert set(lengths[1:-1]) == {int(hmc._SEGMENT_SECONDS / 0.1)}
    fast: list[float] = []
    lengths = []
    for n in hmc._segments(120, fast):
        lengths.append(n)
        fast.append(1e-6)
    assert lengths == [1, hmc._SEGMENT, hmc._SEGMENT, 120 - 1 - 2 * hmc._SEGMENT]


def test_progress_estimate_counts_sampling_only():
    now = [100.0]
    progress = hmc._Progress(total=1000, enabled=False, desc="t", clock=lambda: now[0])
    now[0] += 30.0                  # a MAP fit and a compilation: not sampling
    progress.start()
    for _ in range(10):
        now[0] += 2.0
        progress(10, leapfrog=10 * 127, seconds=2.0)              # 5 it/s, 127 steps each
    text = progress.estimate()
    # 900 iterations left at 5 it/s: 180 s = 3.0 min
    assert text.startswith("<3.0 min left") and "127 leapfrog/it" in text
    assert "1.57 ms/leapfrog" in text                  # 2 s per 10 × 127 steps
    assert hmc._format_seconds(30) == "30 s" and hmc._format_seconds(7200) == "2.0 h"


@pytest.fixture(scope="module")
def muufl():
    return uz.datasets.load("muufl-target", seed=0)


@pytest.mark.slow
def test_time_estimate_on_muufl(muufl):
    spec = uz.MLPSpec(muufl.n_features, 2)
    cfg = hmc.Config(num_warmup=500, num_samples=1000, num_chains=2, max_tree_depth=9)
    est = hmc.time_estimate(spec, muufl, cfg)
    assert est.iterations_per_chain == 1000 and est.rounds == 2     # one JAX CPU device
    assert est.typical_steps == hmc.TYPICAL_LEAPFROG_STEPS and est.max_steps == 511
    typical = hmc.TYPICAL_LEAPFROG_STEPS
    assert est.seconds == pytest.approx(2 * 1000 * typical * est.seconds_per_gradient)
    assert est.seconds_max / est.seconds == pytest.approx(511 / typical)
    shallow = hmc.time_estimate(spec, muufl, hmc.Config(max_tree_depth=5))
    assert shallow.typical_steps == shallow.max_steps == 31        # capped by the depth
    assert 1e-6 < est.seconds_per_gradient < 1.0
    assert "max_tree_depth=9" in est.message()
    assert hmc.time_estimate(spec, muufl, hmc.Config(backend="pyro")) is None


def test_compare_says_before_the_first_fit_when_hmc_will_be_long(muufl, monkeypatch):
    seen = []

    def no_fit(*args, **kwargs):
        seen.append([w.category for w in caught])
        raise RuntimeError("stop before fitting")

    monkeypatch.setattr(hmc, "LONG_FIT_SECONDS", 0.0)   # any fit counts as long
    monkeypatch.setattr(uz.methods, "fit", no_fit)
    # A fit that raises becomes a failed row, so every fit is tried; with all
    # of them failed there is nothing to compare. No reference: this test is
    # about the fits' time estimate only.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(uz.InvalidInputError, match="stop before fitting"):
            uz.compare(muufl, ["laplace", "hmc"], progress_bar=False, reference=None)
    assert seen[0] == [SlowFitWarning]              # said before laplace's fit, the first
    assert [w.category for w in caught].count(SlowFitWarning) == 1      # and once
    message = str(caught[0].message)
    assert message.startswith("hmc: expect about") and "configs={'hmc'" in message
    monkeypatch.setattr(hmc, "LONG_FIT_SECONDS", 1e9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(uz.InvalidInputError):
            uz.compare(muufl, ["hmc"], progress_bar=False, reference=None)
    assert not [w for w in caught if w.category is SlowFitWarning]


@pytest.mark.slow
def test_short_nuts_run_on_muufl(muufl):
    """2 chains from MAP warm starts in rotated coordinates, on real 72-band pixels.

    Far too short to converge (that is the benchmark's job): it checks that
    the path runs end to end, the draws come back in the original
    coordinates (their predictive equals the rotated computation), and the
    timings that say where the time went are there.
    """
    spec = uz.MLPSpec(muufl.n_features, 2, hidden=(10, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, muufl, seed=0, num_warmup=40, num_samples=40,
                      num_chains=2, max_tree_depth=6, init="map", map_epochs=300,
                      rotate_inputs=True, progress_bar=False)
    assert post.sample_shape == (2, 20)
    assert post.sample_stats["tree_depth"].max() <= 6
    d = post.diagnostics
    for key in ("seconds_map", "seconds_compile", "seconds_warmup", "seconds_sampling",
                "seconds_per_leapfrog"):
        assert d[key] > 0, key
    assert d["leapfrog_steps_sampling"] == int(post.sample_stats["n_steps"].sum())
    # the draws are in the data's coordinates: P(target) through the rotated
    # first layer on rotated inputs is the same (float32 rounding, ~1e-6)
    V = hmc._input_rotation(muufl.X_train)
    rotated = {**post.draws, "layers.0.weight": post.draws["layers.0.weight"] @ V}
    X = muufl.X_test[:200]
    p = uz.proba_draws(spec, post.draws, X)
    p_rot = uz.proba_draws(spec, rotated, (X.astype(np.float64) @ V).astype(np.float32))
    # float32 inputs and products: the logits differ by ~1e-5 at most (72 terms of
    # |w x| < 10 at 6e-8 relative), the probabilities by a quarter of that.
    np.testing.assert_allclose(p, p_rot, atol=2e-4)
