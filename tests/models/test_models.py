"""uz.Model: a user's network, written as a JAX function, through every way in.

The strongest check is that the MLP written by hand with ``from_function`` is
the same model as ``MLPSpec``: the same draws give the same predictive (the
generic vmapped engine against the fused torch one), the same GLM predictive
(jax.linearize against torch's linearised MLP) and the same Laplace GGN (JAX
Jacobians against torch's). The rest are a model that is not an MLP -- a 1-D
convolution over the features -- fitted, evaluated, saved, loaded, compared
and refused where it lacks what a method needs.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import uqzoo as uz
from uqzoo import testing
from uqzoo.errors import InvalidInputError, InvalidTypeError, UnsupportedModelError
from uqzoo.methods import laplace
from uqzoo.predictive import _GENERIC_BYTES, _make_forward

pytestmark = pytest.mark.xdist_group("models")


def mlp_apply(p, X):
    """MLPSpec's network (tanh, one logit), written as a user would."""
    h = X
    layers = p["layers"]
    for i, layer in enumerate(layers):
        h = h @ layer["weight"].T + layer["bias"]
        if i < len(layers) - 1:
            h = jnp.tanh(h)
    return h


def mlp_as_function(spec: uz.MLPSpec, prior: str = "iid") -> uz.Model:
    init = spec.init_params(0)
    tree = {"layers": [{"weight": init[f"layers.{i}.weight"], "bias": init[f"layers.{i}.bias"]}
                       for i in range(spec.n_layers)]}
    scales = spec.prior_sds()
    return uz.models.from_function(mlp_apply, tree, in_features=spec.in_features,
                                   n_classes=spec.n_classes, prior_scale=scales,
                                   last_layer=f"layers.{spec.n_layers - 1}")


def cnn_model(D: int, n_classes: int = 2, channels: int = 3, width: int = 3) -> uz.Model:
    """A 1-D convolution over the features, tanh, then a linear head."""
    out = 1 if n_classes == 2 else n_classes

    def cnn(p, X):
        h = jax.lax.conv(X[:, None, :], p["conv"]["w"], (1,), "VALID")     # (N, C, D-w+1)
        h = jnp.tanh(h + p["conv"]["b"][None, :, None]).reshape(X.shape[0], -1)
        return h @ p["head"]["w"] + p["head"]["b"]

    rng = np.random.default_rng(0)
    params = {"conv": {"w": rng.normal(0, 0.5, (channels, 1, width)).astype(np.float32),
                       "b": np.zeros(channels, np.float32)},
              "head": {"w": rng.normal(0, 0.3, (channels * (D - width + 1), out))
                       .astype(np.float32),
                       "b": np.zeros(out, np.float32)}}
    return uz.models.from_function(cnn, params, in_features=D, n_classes=n_classes,
                                   last_layer="head")


@pytest.fixture(scope="module")
def data():
    return uz.datasets.load("sim-teacher", n_train=150, n_test=40, seed=0)


@pytest.fixture(scope="module")
def cnn(data):
    return cnn_model(data.n_features)


# -- the MLP written as a function is MLPSpec ------------------------------------------------

@pytest.mark.parametrize("n_classes", [2, 3])
def test_mlp_as_function_predicts_as_mlpspec(n_classes):
    spec = uz.MLPSpec(4, n_classes, hidden=(6, 5), prior="fan_in")
    model = mlp_as_function(spec)
    assert isinstance(spec, uz.Model) and set(model.param_shapes()) == set(spec.param_shapes())
    assert all(model.prior_sd(k) == spec.prior_sd(k) for k in spec.param_shapes())
    draws = spec.init_params(3, num=40)
    X = np.random.default_rng(1).normal(size=(300, 4))
    fused = uz.proba_draws(spec, draws, X)
    generic = uz.proba_draws(model, draws, X)
    # float32 forward passes in two libraries: products of a few terms of size ~1.
    np.testing.assert_allclose(generic, fused, atol=2e-6)
    a = uz.summarize(spec, draws, X, levels=(0.8,))
    b = uz.summarize(model, draws, X, levels=(0.8,))
    np.testing.assert_allclose(b.mean, a.mean, atol=2e-6)
    np.testing.assert_allclose(b.lower, a.lower, atol=2e-6)
    np.testing.assert_allclose(b.expected_entropy, a.expected_entropy, atol=1e-5)


def test_mlp_as_function_linearises_as_mlpspec():
    spec = uz.MLPSpec(3, 2, hidden=(5,))
    model = mlp_as_function(spec)
    anchor = spec.init_params(0)
    draws = {k: v[None] + 0.1 * np.random.default_rng(2).normal(size=(30, *v.shape))
             .astype(np.float32) for k, v in anchor.items()}
    X = np.random.default_rng(3).normal(size=(50, 3))
    np.testing.assert_allclose(uz.proba_draws(model, draws, X, anchor=anchor),
                               uz.proba_draws(spec, draws, X, anchor=anchor), atol=2e-6)


def test_mlp_as_function_has_mlpspecs_laplace_curvature(data):
    spec = uz.MLPSpec(data.n_features, 2, hidden=(4,))
    model = mlp_as_function(spec)
    params = spec.init_params(5)
    X, y = data.X_train[:60], data.y_train[:60]
    for subset in ("all", "last_layer"):
        a = laplace.laplace_at(spec, params, X, y, subset=subset, prior_tuning="layerwise")
        b = laplace.laplace_at(model, params, X, y, subset=subset, prior_tuning="layerwise")
        # The flattened orders differ (JAX sorts dict keys: bias before weight):
        # compare entry by entry through the parameter names.
        order = _permutation(spec, model)[a.subset_index]
        position = {int(j): i for i, j in enumerate(b.subset_index)}
        perm = [position[int(j)] for j in order]
        np.testing.assert_allclose(b.ggn[np.ix_(perm, perm)], a.ggn, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(b.log_marginal_likelihood, a.log_marginal_likelihood,
                                   rtol=1e-9)
        np.testing.assert_allclose(b.prior_precision, a.prior_precision, rtol=1e-6)


def _permutation(spec: uz.Model, model: uz.Model) -> np.ndarray:
    """Index into model's flat vector of each entry of spec's flat vector."""
    sizes = {k: int(np.prod(s)) for k, s in model.param_shapes().items()}
    offsets, at = {}, 0
    for k, n in sizes.items():
        offsets[k] = at
        at += n
    return np.concatenate([offsets[k] + np.arange(int(np.prod(s)))
                           for k, s in spec.param_shapes().items()])


# -- a model that is not an MLP ------------------------------------------------------------

@pytest.mark.parametrize("method,options", [
    ("hmc", dict(num_samples=100, num_warmup=100, num_chains=2)),
    ("laplace", dict(num_samples=100, num_epochs=200)),
    ("ensemble", dict(num_members=3, num_epochs=200)),
    ("sgld", dict(num_samples=100, num_steps=1000, num_burnin=500)),
    ("mfvi", dict(num_samples=50, num_steps=500)),
])
def test_a_cnn_fits_evaluates_saves_and_loads(method, options, data, cnn, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit(method, cnn, data, seed=0, progress_bar=False, **options)
    assert post.spec is cnn and set(post.draws) == set(cnn.param_shapes())
    proba = post.predict_proba_draws(data.X_test)
    assert proba.shape == (post.num_draws, data.n_test, 2) and np.all(np.isfinite(proba))
    report = uz.evaluate(post, data)
    assert 0.0 <= report.to_dict()["ece"] <= 1.0
    path = tmp_path / "post.nc"
    post.save(path)
    loaded = uz.load_posterior(path, model=cnn)
    np.testing.assert_array_equal(loaded.predict_proba_draws(data.X_test), proba)
    with pytest.raises(InvalidInputError, match=r"load it with that model.*model="):
        uz.load_posterior(path)
    other = cnn_model(data.n_features, channels=2)
    with pytest.raises(InvalidInputError, match=r"does not match the file's.*fingerprint"):
        uz.load_posterior(path, model=other)
    with pytest.raises(InvalidInputError, match=r"does not match the file's"):
        uz.load_posterior(path, model=uz.MLPSpec(data.n_features, 2))


def test_hmc_on_the_cnn_samples_the_posterior_a_long_run_does(data, cnn):
    """Two independent HMC runs agree on the predictive within their Monte Carlo error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)   # judged below, by the draws
        runs = [uz.fit("hmc", cnn, data, seed=s, progress_bar=False, num_samples=400,
                       num_warmup=300, num_chains=2) for s in (0, 1)]
    means = [r.predict_proba_draws(data.X_test)[..., 1] for r in runs]
    # Per point: |difference of means| against 5 combined standard errors, with an
    # effective sample size of a quarter of the draws (autocorrelated chains).
    se = np.sqrt(sum(m.var(axis=0) / (m.shape[0] / 4) for m in means))
    gap = np.abs(means[0].mean(axis=0) - means[1].mean(axis=0))
    assert np.mean(gap <= 5 * se + 1e-3) >= 0.95


def test_compare_takes_a_model_and_leaves_out_what_it_cannot_fit(data, cnn):
    result = uz.compare(data, ["map", "mc_dropout", "ensemble"], model=cnn, progress_bar=False,
                        configs={"ensemble": {"num_members": 3, "num_epochs": 200},
                                 "map": {"num_epochs": 200}}, reference=None)
    assert list(result.table.index) == ["map", "ensemble"]
    (name, reason), = result.settings.left_out
    assert name == "mc_dropout" and "dropout" in reason
    assert "cnn" in result.settings.model
    assert any(s.startswith("Left out") and "mc_dropout" in s
               for s in uz.report.verdict(result).sentences)


def test_conformance_suite_passes_on_a_user_model():
    small = testing.tiny_data(n_features=6)
    model = cnn_model(6, channels=2)
    report = testing.check_method("ensemble", model, small, num_members=2, num_epochs=20)
    assert "save/load round-trip" in report.passed


# -- what a model does not declare, and bad models ------------------------------------------

def test_methods_name_what_the_model_lacks(data, cnn):
    with pytest.raises(UnsupportedModelError, match=r"mc_dropout.*dropout"):
        uz.fit("mc_dropout", cnn, data, seed=0, progress_bar=False)
    with pytest.raises(UnsupportedModelError, match=r"hmc.*hierarchical"):
        uz.fit("hmc", cnn, data, seed=0, progress_bar=False, hierarchical=True)
    nameless = uz.models.from_function(cnn._apply_tree, cnn.tree(cnn.init_params(0)),
                                       in_features=data.n_features, n_classes=2)
    with pytest.raises(UnsupportedModelError, match=r"last layer.*last_layer="):
        uz.fit("laplace", nameless, data, seed=0, progress_bar=False, subset="last_layer")


def test_bad_models_are_refused_before_any_fit():
    params = {"w": np.ones((3, 1), np.float32)}
    with pytest.raises(InvalidInputError, match=r"shape \(N, 1\).*got shape \(3, 2\)"):
        uz.models.from_function(lambda p, X: jnp.concatenate([X @ p["w"]] * 2, axis=1),
                                params, in_features=3, n_classes=2)
    with pytest.raises(InvalidInputError, match=r"non-finite"):
        uz.models.from_function(lambda p, X: X @ p["w"] / 0.0, params, in_features=3,
                                n_classes=2)
    with pytest.raises(InvalidTypeError, match=r"'w' must be a float array"):
        uz.models.from_function(lambda p, X: X @ p["w"], {"w": np.ones((3, 1), int)},
                                in_features=3, n_classes=2)
    with pytest.raises(InvalidInputError, match=r"at most 16,777,216"):
        uz.models.from_function(lambda p, X: X[:, :1], {"w": np.zeros(2**24 + 1, np.float32)},
                                in_features=3, n_classes=2)
    with pytest.raises(InvalidInputError, match=r"apply.*failed"):
        uz.models.from_function(lambda p, X: X @ p["v"], params, in_features=3, n_classes=2)
    with pytest.raises(InvalidInputError, match=r"keyed by leaf path"):
        uz.models.from_function(lambda p, X: X @ p["w"], params, in_features=3, n_classes=2,
                                prior_scale={"v": 1.0})
    with pytest.raises(InvalidTypeError, match=r"model must be a uqzoo\.Model"):
        uz.fit("map", "mlp", testing.tiny_data(), seed=0)


def test_the_generic_engine_streams_in_bounded_chunks(cnn):
    """Memory O(S × chunk): the summary of many rows is the same in any chunking."""
    draws = cnn.init_params(1, num=20)
    X = np.random.default_rng(0).normal(size=(700, cnn.in_features))
    whole = uz.summarize(cnn, draws, X, levels=(0.9,), chunk_size=700)
    chunked = uz.summarize(cnn, draws, X, levels=(0.9,), chunk_size=64)
    np.testing.assert_allclose(chunked.mean, whole.mean, atol=1e-6)
    np.testing.assert_allclose(chunked.upper, whole.upper, atol=1e-6)
    # Sized from XLA's memory account: a chunk's buffers within the 16 MiB budget.
    forward = _make_forward(cnn, draws, None, None)
    rows = forward.chunk_rows(None)
    assert 1 <= rows <= 2048
    memory = forward.program.lower(forward.jax_draws, X[:rows].astype(np.float32)).compile() \
        .memory_analysis()
    assert memory.temp_size_in_bytes + memory.output_size_in_bytes <= 1.05 * _GENERIC_BYTES


@pytest.mark.slow
def test_hmc_on_the_cnn_matches_a_long_reference_within_its_mc_floor(data, cnn):
    """HMC of the default length on the CNN against a gated reference (4 × 4000 draws):
    every fidelity score's deviation within the Monte Carlo floor + 3 sd it reports."""
    reference = uz.reference_posterior(cnn, data, seed=1, progress_bar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit("hmc", cnn, data, seed=0, num_samples=1000, num_warmup=500,
                      num_chains=2, progress_bar=False)
    scores = uz.fidelity(post, reference, data.X_test, data=data)
    assert all(s.within_mc_error() for s in scores.scores), scores


def test_uqclassifier_takes_a_model_or_a_factory(data):
    from sklearn.base import clone

    for model in (cnn_model(data.n_features), cnn_model):
        clf = uz.UQClassifier("ensemble", model=model, random_state=0,
                              method_options={"num_members": 2, "num_epochs": 50})
        clf = clone(clf).fit(data.X_train, data.y_train)
        assert set(clf.posterior_.draws) == {"conv.b", "conv.w", "head.b", "head.w"}
        lower, upper = clf.predict_interval(data.X_test[:5], level=0.9)
        assert np.all(lower <= upper)
    with pytest.raises(InvalidTypeError, match=r"model must be None, a uqzoo\.Model"):
        uz.UQClassifier(model="cnn.py").fit(data.X_train, data.y_train)
