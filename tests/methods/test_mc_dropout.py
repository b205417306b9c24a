"""MC dropout: masks folded into weights equal masked networks; per-row comparison helper."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

import uqzoo as uz
from _float32_reference import U32, forward64, proba64
from uqzoo.methods import mc_dropout
from uqzoo.nets import torch as tnet

RATE = 0.2
METHOD = "mc_dropout"
DATA_SEED = 2
FIT_SEED = 0
OPTIONS = dict(dropout=RATE, num_samples=400, num_epochs=150, learning_rate=0.02)


def test_folded_draw_equals_the_masked_network():
    """Folding masks into the next layer's weights equals masking the hidden units."""
    spec = uz.MLPSpec(3, 3, hidden=(5, 4), activation="relu")
    params = spec.init_params(0)
    rng = np.random.default_rng(1)
    masks = [rng.random((6, h)) >= 0.3 for h in spec.hidden]
    draws = mc_dropout.fold_masks(spec, params, masks, 0.3)
    X = rng.normal(size=(7, 3)).astype(np.float32)
    folded = tnet.forward_logits(spec, tnet.to_tensors(draws), torch.from_numpy(X)).numpy()
    hidden_masks = [torch.from_numpy((m / np.float32(0.7)).astype(np.float32))[:, None, :]
                    for m in masks]                                    # (S, 1, h)
    masked = tnet.forward_logits(spec, tnet.to_tensors(params), torch.from_numpy(X),
                                 hidden_masks=hidden_masks).numpy()
    # Both are float32 evaluations of the same real network: each is within the
    # float32 bound of its float64 value (the mask's scaling adds one rounding
    # per hidden unit, inside the bound's elementwise ulps), so within twice it.
    # The predictive engine on the folded draws against the masked network's
    # probabilities: likewise within twice the float32 probability bound.
    engine = uz.proba_draws(spec, draws, X)
    masked_proba = tnet.logits_to_proba(spec, torch.from_numpy(masked)).numpy()
    for s in range(6):
        ref, bound = forward64(spec, {k: v[s] for k, v in draws.items()}, X)
        assert np.all(np.abs(folded[s] - masked[s]) <= 2 * (bound + U32 * np.abs(ref)))
        _, proba_bound = proba64(spec, ref, bound)
        assert np.all(np.abs(engine[s] - masked_proba[s]) <= 2 * proba_bound)


def test_draws_drop_each_unit_with_the_rate(post, spec):
    assert post.num_draws == 400 and post.diagnostics["dropout_rate"] == RATE
    # Column j of layers.{l+1}.weight is zero exactly when unit j of layer l was dropped.
    dropped = np.concatenate([
        np.all(post.draws[f"layers.{layer + 1}.weight"] == 0, axis=1).ravel()
        for layer in range(len(spec.hidden))])
    k = stats.norm.isf(1e-4 / 2)
    se = np.sqrt(RATE * (1 - RATE) / dropped.size)
    assert abs(dropped.mean() - RATE) < k * se
    # Kept columns are the trained weights scaled by 1/(1 - p).
    anchor = post.anchor["layers.2.weight"]
    draw = post.draws["layers.2.weight"][0]
    on = ~np.all(draw == 0, axis=0)
    np.testing.assert_allclose(draw[:, on], anchor[:, on] / (1 - RATE), rtol=1e-6)
    # Biases and the first layer are never touched.
    np.testing.assert_array_equal(post.draws["layers.0.weight"][5], post.anchor["layers.0.weight"])


def test_per_row_and_shared_masks_agree_point_by_point(post, data):
    """Both predictives have the same marginal at each point: equal means within MC error."""
    X = np.array(data.X_test)
    shared = post.predict_proba_draws(X)[..., 1].astype(np.float64)
    per_row = mc_dropout.per_row_proba_draws(post, X, seed=1)[..., 1].astype(np.float64)
    assert per_row.shape == shared.shape
    S = shared.shape[0]
    se = np.sqrt(shared.var(0, ddof=1) / S + per_row.var(0, ddof=1) / S)
    # A Bonferroni false-alarm rate of 1e-3 over the test points.
    k = stats.norm.isf(1e-3 / (2 * X.shape[0]))
    assert np.all(np.abs(shared.mean(0) - per_row.mean(0)) <= k * se + 1e-7)
    # Per-row draws are not parameter draws: reproducible by seed, not by the posterior.
    np.testing.assert_array_equal(per_row, mc_dropout.per_row_proba_draws(
        post, X, seed=1)[..., 1])


def test_per_row_draws_are_the_network_under_each_rows_masks(post, spec, data):
    """Row i of draw s is the trained network with that row's own masks folded in.

    The masks are regenerated as documented: per hidden layer, in order,
    uniform (S, rows, width) from a torch generator seeded with ``seed``; a
    unit is kept where u >= p.
    """
    X = np.array(data.X_test[:5])
    S, seed = 7, 11
    per_row = mc_dropout.per_row_proba_draws(post, X, num_samples=S, seed=seed)
    generator = torch.Generator().manual_seed(seed)
    keep = [(torch.rand((S, X.shape[0], h), generator=generator) >= RATE).numpy()
            for h in spec.hidden]
    for i in range(X.shape[0]):
        draws = mc_dropout.fold_masks(spec, post.anchor, [k[:, i] for k in keep], RATE)
        expected = uz.proba_draws(spec, draws, X[i:i + 1])[:, 0]
        for s in range(S):
            ref, bound = forward64(spec, {k: v[s] for k, v in draws.items()}, X[i:i + 1])
            # Two float32 evaluations of one network, each within the bound.
            assert np.all(np.abs(per_row[s, i] - expected[s]) <= 2 * proba64(spec, ref, bound)[1])


def test_the_rate_is_a_config_option_and_bad_options_are_named(spec, data):
    assert uz.methods.make_config("mc_dropout").dropout == 0.1
    with pytest.raises(uz.InvalidInputError, match="dropout"):
        uz.fit("mc_dropout", spec, data, dropout=0.0)
    with pytest.raises(uz.InvalidInputError, match="hidden layer"):
        uz.fit("mc_dropout", uz.MLPSpec(data.n_features, 2, hidden=()), data)
    with pytest.raises(uz.InvalidInputError, match="dropout"):
        uz.fit("mc_dropout", spec, data, dropout=1.0)
    with pytest.raises(uz.InvalidInputError, match="num_samples"):
        uz.fit("mc_dropout", spec, data, num_samples=0)
    with pytest.raises(uz.InvalidTypeError, match="mc_dropout"):
        mc_dropout.per_row_proba_draws("not a posterior", np.zeros((2, data.n_features)))


def test_seeded_and_saved(post, spec, data, tmp_path):
    again = uz.fit("mc_dropout", spec, data, seed=0, progress_bar=False, **OPTIONS)
    for k in post.draws:
        np.testing.assert_array_equal(post.draws[k], again.draws[k])
    path = tmp_path / "mcd.nc"
    post.save(path)
    loaded = uz.load_posterior(path)
    for k in post.draws:
        np.testing.assert_array_equal(loaded.draws[k], post.draws[k])
    X = np.array(data.X_test[:5])
    np.testing.assert_array_equal(mc_dropout.per_row_proba_draws(loaded, X, seed=3),
                                  mc_dropout.per_row_proba_draws(post, X, seed=3))
