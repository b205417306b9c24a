"""Deep ensemble: members differ by initialisation and minibatch order; seeded; saves and loads."""

from __future__ import annotations

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.methods import _trainer, ensemble

# One small configuration for the whole module, so the trainer compiles once.
METHOD = "ensemble"
DATA_SEED = 0
FIT_SEED = 3
OPTIONS = dict(num_members=3, num_epochs=150, learning_rate=0.02)


def test_draws_are_the_members(post, data):
    assert post.method == "ensemble" and post.sample_shape == (1, 3)
    probs = post.predict_proba_draws(np.array(data.X_test))
    assert probs.shape == (3, data.n_test, 2)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert post.diagnostics["loss"].shape == (3, OPTIONS["num_epochs"])
    assert post.diagnostics["seconds"] > 0 and post.diagnostics["seconds_training"] > 0
    assert post.config["num_members"] == 3 and post.seed == 3


def test_members_differ_by_initialisation_and_minibatch_order(post, spec, data):
    """Retraining member m alone from its recorded initialisation and its own
    minibatch key gives member m: nothing else distinguishes the members."""
    config = ensemble.Config(**OPTIONS)
    assert config.batch_size == ensemble.DEFAULT_BATCH_SIZE < data.n_train
    seeds = [int(s) for s in post.diagnostics["init_seeds"]]
    assert len(set(seeds)) == 3
    # fit_members spawns (split, init, keys, resample) from the fit seed.
    key_seeds = _trainer.member_seeds(np.random.SeedSequence(3).spawn(4)[2], 3)
    for m, seed in enumerate(seeds):
        alone = _trainer.train(spec, data.X_train, data.y_train,
                               {k: v[None] for k, v in spec.init_params(seed).items()},
                               config, keys=_trainer.member_keys([key_seeds[m]]))
        for k in spec.param_shapes():
            np.testing.assert_allclose(post.draws[k][m], alone.params[k][0], atol=1e-5)
    # ... and the members are genuinely different networks.
    w = post.draws["layers.0.weight"]
    assert np.abs(w[0] - w[1]).max() > 1e-2


def test_default_batch_falls_back_to_full_batch_on_small_data(spec):
    small = uz.datasets.load("sim-teacher", n_train=60, n_test=10, seed=0)
    post = uz.fit("ensemble", spec, small, seed=0, progress_bar=False, **OPTIONS)
    assert post.config["batch_size"] == 100 and post.diagnostics["batch_size_used"] == 60
    with pytest.raises(uz.InvalidInputError, match="batch_size must be at most the 60"):
        uz.fit("ensemble", spec, small, seed=0, progress_bar=False, batch_size=64,
               num_members=2, num_epochs=5)


def test_same_seed_same_draws_other_seed_other_draws(post, spec, data):
    again = uz.fit("ensemble", spec, data, seed=3, progress_bar=False, **OPTIONS)
    other = uz.fit("ensemble", spec, data, seed=4, progress_bar=False, **OPTIONS)
    for k in post.draws:
        np.testing.assert_array_equal(post.draws[k], again.draws[k])
    assert not np.array_equal(post.draws["layers.0.weight"], other.draws["layers.0.weight"])


def test_save_load_round_trip(post, tmp_path, data):
    path = tmp_path / "ensemble.nc"
    post.save(path)
    loaded = uz.load_posterior(path)
    assert loaded.method == "ensemble" and loaded.config == post.config
    for k in post.draws:
        np.testing.assert_array_equal(loaded.draws[k], post.draws[k])
    np.testing.assert_array_equal(loaded.diagnostics["loss"], post.diagnostics["loss"])


def test_multiclass_and_early_stopping():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 4))
    y = np.argmax(X[:, :3] + rng.normal(size=(150, 3)), axis=1)
    data = uz.ClassificationData(X[:120], y[:120], X[120:], y[120:], n_classes=3)
    spec = uz.MLPSpec(4, 3, hidden=(6,))
    post = uz.fit("ensemble", spec, data, seed=0, progress_bar=False, num_members=2,
                  num_epochs=400, learning_rate=0.05, validation_fraction=0.2, patience=10)
    assert post.predict_proba_draws(X[120:]).shape == (2, 30, 3)
    stopped = post.diagnostics["stopped_epoch"]
    assert post.diagnostics["val_loss"].shape[0] == 2 and np.all(stopped <= 400)


def test_bad_config_is_rejected(spec, data):
    with pytest.raises(uz.InvalidInputError, match="num_members"):
        uz.fit("ensemble", spec, data, num_members=0)
    with pytest.raises(uz.InvalidInputError, match="unknown option"):
        uz.fit("ensemble", spec, data, members=3)
    with pytest.raises(uz.InvalidInputError, match="optimizer"):
        uz.fit("ensemble", spec, data, optimizer="lbfgs")
