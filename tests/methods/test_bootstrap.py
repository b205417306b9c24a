"""Bootstrap ensemble: resamples are resamples, weighting equals duplicating rows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import uqzoo as uz
from uqzoo.methods import _trainer, bootstrap

METHOD = "bootstrap"
DATA_SEED = 1
FIT_SEED = 5
OPTIONS = dict(num_members=3, num_epochs=150, learning_rate=0.02)


def test_resample_counts_are_resamples():
    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.3).astype(int)
    M, n = 40, len(y)
    counts = bootstrap.resample_counts(y, M, rng)
    assert counts.shape == (M, n) and counts.min() >= 0
    np.testing.assert_array_equal(counts.sum(axis=1), n)
    # A row is left out of a resample with probability (1 - 1/n)^n; the M·n
    # indicators are nearly independent, so a binomial standard error applies.
    p_out = (1 - 1 / n) ** n
    frac_out = np.mean(counts == 0)
    k = stats.norm.isf(1e-4 / 2)
    assert abs(frac_out - p_out) < k * np.sqrt(p_out * (1 - p_out) / (M * n))
    # Member data differ.
    assert len({tuple(c) for c in counts}) == M
    strat = bootstrap.resample_counts(y, M, rng, stratified=True)
    np.testing.assert_array_equal(strat[:, y == 1].sum(axis=1), np.sum(y == 1))
    np.testing.assert_array_equal(strat[:, y == 0].sum(axis=1), np.sum(y == 0))


def test_weighted_member_equals_training_on_the_duplicated_rows(post, spec, data):
    """A member trained with resample counts as weights is the network trained on the resample."""
    counts = post.diagnostics["resample_counts"]
    assert counts.shape == (3, data.n_train)
    np.testing.assert_array_equal(counts.sum(axis=1), data.n_train)
    config = bootstrap.Config(**OPTIONS)
    m = 1
    rows = np.repeat(np.arange(data.n_train), counts[m])
    seed = int(post.diagnostics["init_seeds"][m])
    on_resample = _trainer.train(spec, data.X_train[rows], data.y_train[rows],
                                 {k: v[None] for k, v in spec.init_params(seed).items()},
                                 config, keys=_trainer.member_keys([0]))
    for k in spec.param_shapes():
        np.testing.assert_allclose(post.draws[k][m], on_resample.params[k][0], atol=1e-4)


def test_seeded_and_stratified_option(post, spec, data):
    again = uz.fit("bootstrap", spec, data, seed=5, progress_bar=False, **OPTIONS)
    for k in post.draws:
        np.testing.assert_array_equal(post.draws[k], again.draws[k])
    strat = uz.fit("bootstrap", spec, data, seed=5, progress_bar=False, stratified=True,
                   **OPTIONS)
    counts = strat.diagnostics["resample_counts"]
    y = data.y_train
    np.testing.assert_array_equal(counts[:, y == 1].sum(axis=1), np.sum(y == 1))
    assert strat.config["stratified"] is True


def test_save_load_round_trip(post, tmp_path):
    path = tmp_path / "bootstrap.nc"
    post.save(path)
    loaded = uz.load_posterior(path)
    np.testing.assert_array_equal(loaded.diagnostics["resample_counts"],
                                  post.diagnostics["resample_counts"])
    for k in post.draws:
        np.testing.assert_array_equal(loaded.draws[k], post.draws[k])


def test_bad_config_is_rejected(spec, data):
    with pytest.raises(uz.InvalidTypeError, match="stratified"):
        uz.fit("bootstrap", spec, data, stratified="yes")
    with pytest.raises(uz.InvalidInputError, match="num_members"):
        uz.fit("bootstrap", spec, data, num_members=-1)
