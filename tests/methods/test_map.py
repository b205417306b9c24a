"""The ``map`` method: one MAP network, one draw (issue 23)."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.testing import tiny_data


def test_one_draw_trained_to_a_plateau():
    data = tiny_data()
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    post = uz.fit("map", spec, data, seed=0, num_epochs=400, progress_bar=False)
    assert post.method == "map" and post.num_draws == 1 and post.sample_shape == (1, 1)
    assert post.diagnostics["loss"].shape[0] == 1
    assert post.converged is not None
    draws = post.predict_proba_draws(data.X_test)
    np.testing.assert_allclose(draws[0], post.predict_proba(data.X_test), rtol=1e-6)


def test_loading_the_method_leaves_the_packages_map_builtin_alone():
    """Regression: a submodule named ``map`` bound itself over builtins.map in
    uqzoo.methods, so every later error message built with map() raised TypeError."""
    uz.methods.get("map")
    import uqzoo.methods as package

    assert getattr(package, "map", builtins.map) is builtins.map
    with pytest.raises(uz.InvalidInputError, match="method must be one of"):
        uz.methods.get("nope")
