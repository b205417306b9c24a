"""The Flax NNX and Equinox examples (examples/): tested as a user runs them.

Each example is reached as the CLI and study files reach it, by
``FILE.py:FACTORY``; the Flax CNN is checked against the same network written
as a plain JAX function, and both pass the method conformance suite.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import uqzoo as uz
from uqzoo import testing

pytest.importorskip("flax")
pytest.importorskip("equinox")

pytestmark = pytest.mark.xdist_group("models")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CNN = f"{EXAMPLES / 'spectral_cnn_flax.py'}:make"
RESMLP = f"{EXAMPLES / 'residual_mlp_equinox.py'}:make"


@pytest.fixture(scope="module")
def scene():
    return uz.datasets.load("hsi-sim", size=20, n_bands=12, seed=0)


def test_flax_cnn_is_the_network_it_wraps(scene):
    model = uz.models.from_file(CNN, scene.n_features, 2)
    assert model.kind == "flax" and model.last_layer == "head"
    assert list(model.param_shapes()) == ["conv.bias", "conv.kernel", "head.bias",
                                          "head.kernel"]

    def by_hand(p, X):                     # the same CNN, written out: (N, bands, 1) input
        h = jax.lax.conv_general_dilated(X[:, :, None], p["conv.kernel"], (1,), "VALID",
                                         dimension_numbers=("NWC", "WIO", "NWC"))
        h = jnp.tanh(h + p["conv.bias"]).reshape(X.shape[0], -1)
        return h @ p["head.kernel"] + p["head.bias"]

    draws = model.init_params(1, num=6)
    X = scene.X_test[:50]
    flat = {k: jnp.asarray(v) for k, v in draws.items()}
    want = jax.nn.sigmoid(jax.vmap(by_hand, in_axes=(0, None))(flat, jnp.asarray(X)))[..., 0]
    got = uz.proba_draws(model, draws, X)[..., 1]
    np.testing.assert_allclose(got, np.asarray(want), atol=2e-6)
    # init(key) gives independent starting points: an ensemble's members differ.
    assert not np.array_equal(draws["conv.kernel"][0], draws["conv.kernel"][1])


@pytest.mark.parametrize("source,method,options", [
    (CNN, "laplace", dict(num_samples=100, num_epochs=150, subset="last_layer")),
    (CNN, "ensemble", dict(num_members=3, num_epochs=150)),
    (RESMLP, "hmc", dict(num_samples=100, num_warmup=100, num_chains=2)),
    (RESMLP, "swag", dict(num_epochs=100)),
])
def test_the_examples_fit_and_round_trip(source, method, options, scene, tmp_path):
    model = uz.models.from_file(source, scene.n_features, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit(method, model, scene, seed=0, progress_bar=False, **options)
    proba = post.predict_proba_draws(scene.X_test)
    assert np.all(np.isfinite(proba))
    post.save(tmp_path / "p.nc")
    again = uz.load_posterior(tmp_path / "p.nc", model=uz.models.from_file(source,
                                                                           scene.n_features, 2))
    np.testing.assert_array_equal(again.predict_proba_draws(scene.X_test), proba)


@pytest.mark.parametrize("source", [CNN, RESMLP])
def test_conformance_suite_on_the_examples(source):
    small = testing.tiny_data(n_features=8, n_classes=3)
    model = uz.models.from_file(source, 8, 3)
    for method, options in (("map", dict(num_epochs=20)), ("laplace", dict(num_epochs=20,
                                                                            num_samples=20))):
        report = testing.check_method(method, model, small, **options)
        assert "save/load round-trip" in report.passed
        assert "probabilities (S, N, K) sum to one" in report.passed
