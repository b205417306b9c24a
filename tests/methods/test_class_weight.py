"""Class weights: one reweighted likelihood in every method, and the prior-shift correction.

With integer weights, Π_i p(y_i | x_i, θ)^c_{y_i} is the likelihood of the data
with each row of class k repeated c_k times: the tests compare the weighted
objective with the repeated rows' one, which is known without any weights.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import uqzoo as uz
from uqzoo.errors import DataWarning
from uqzoo.methods import _config, laplace
from uqzoo.nets import numpyro_model
from uqzoo.testing import tiny_data

WEIGHTS = (1.0, 3.0)


def _problem(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (rng.random(n) < 0.25).astype(np.int64)
    return X, y


def _repeated(X, y, weights=WEIGHTS):
    reps = np.asarray(weights, dtype=np.int64)[y]
    return np.repeat(X, reps, axis=0), np.repeat(y, reps)


def test_row_weights_follow_the_rule_and_bad_values_are_named():
    y = np.array([0, 0, 0, 1])
    assert _config.row_weights(None, y, 2) is None
    np.testing.assert_allclose(_config.row_weights("balanced", y, 2), [2 / 3] * 3 + [2.0])
    assert _config.effective_class_prior("balanced", y, 2).tolist() == [0.5, 0.5]
    assert _config.effective_class_prior(None, y, 2).tolist() == [0.75, 0.25]
    np.testing.assert_allclose(_config.effective_class_prior((1.0, 3.0), y, 2), [0.5, 0.5])
    for bad, match in [("weighted", "'balanced'"), ((1.0,), "one weight per class"),
                       ((1.0, -2.0), "class_weight entry"), (3.0, "sequence")]:
        with pytest.raises(uz.InvalidInputError, match=match):
            uz.methods.make_config("ensemble", class_weight=bad)
    with pytest.raises(uz.InvalidInputError, match="class indices \\[1\\]"):
        _config.row_weights("balanced", np.zeros(5, int), 2)


@pytest.mark.parametrize("method", uz.methods.names())
def test_every_method_takes_class_weights_and_records_the_prior_it_refers_to(method):
    data = tiny_data()
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    options = {"hmc": dict(num_warmup=20, num_samples=20, num_chains=2),
               "mfvi": dict(num_steps=100, num_samples=10),
               "mc_dropout": dict(num_epochs=30, num_samples=10),
               "ensemble": dict(num_members=2, num_epochs=30),
               "bootstrap": dict(num_members=2, num_epochs=30),
               "swag": dict(num_epochs=40, num_samples=10, batch_size=16),
               "laplace": dict(num_epochs=30, num_samples=10),
               "map": dict(num_epochs=30),
               "sgld": dict(num_steps=100, num_burnin=20, num_samples=10, num_chains=2,
                            batch_size=10),
               "sghmc": dict(num_steps=100, num_burnin=20, num_samples=10, num_chains=2,
                             batch_size=10, num_integration_steps=2),
               "csgmcmc": dict(num_steps=100, num_samples=10, num_chains=1, num_cycles=2,
                               batch_size=10),
               "tta": dict(num_epochs=30, num_samples=10)}[method]
    labels = list(range(data.n_classes)) if data.classes is None else list(data.classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        post = uz.fit(method, spec, data, seed=0, progress_bar=False,
                      class_weight=dict(zip(labels, [1.0] + [2.0] * (len(labels) - 1),
                                            strict=True)), **options)
    assert post.config["class_weight"] == [1.0] + [2.0] * (len(labels) - 1)   # JSON-plain
    counts = np.bincount(data.y_train, minlength=data.n_classes).astype(float)
    expected = counts * np.array([1.0] + [2.0] * (len(labels) - 1))
    np.testing.assert_allclose(post.diagnostics["class_prior"], expected / expected.sum())
    with pytest.raises(uz.InvalidInputError, match=r"do(es)? not have"):
        uz.fit(method, spec, data, class_weight={"no such class": 1.0}, **options)


def test_laplace_weighted_curvature_and_evidence_equal_repeated_rows():
    X, y = _problem()
    spec = uz.MLPSpec(3, 2, hidden=(4,))
    params = spec.init_params(1)
    weighted = laplace.laplace_at(spec, params, X, y, prior_tuning="none",
                                  row_weights=_config.row_weights(WEIGHTS, y, 2))
    Xr, yr = _repeated(X, y)
    repeated = laplace.laplace_at(spec, params, Xr, yr, prior_tuning="none")
    # Float64 sums of the same terms in another grouping: relative rounding ~1e-15.
    np.testing.assert_allclose(weighted.ggn, repeated.ggn, rtol=1e-10, atol=1e-12)
    assert abs(weighted.log_likelihood - repeated.log_likelihood) < 1e-9
    assert abs(weighted.log_marginal_likelihood - repeated.log_marginal_likelihood) < 1e-9


def _numpyro_log_density(model, args, params):
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    value, _ = log_density(model, args, {}, {k: jnp.asarray(v) for k, v in params.items()})
    return float(value)


def _float32_sum_bound(spec, params, X, y):
    """A bound on two float32 evaluations of Σ log p(y_i | x_i, θ) + log p(θ) disagreeing:
    γ_n of the sum of |terms| (n terms), twice; the logits' own rounding is the same
    computation on the same rows in both and cancels up to the summation order."""
    from _float32_reference import gamma
    from uqzoo.nets import torch as tnet

    terms = tnet.log_likelihood_terms(spec, tnet.forward_logits(
        spec, tnet.to_tensors(params, torch.float64), torch.as_tensor(X, dtype=torch.float64)),
        torch.as_tensor(y)).abs().sum().item()
    prior = abs(float(tnet.log_prior(spec, tnet.to_tensors(params, torch.float64))))
    return 4 * gamma(len(y) + spec.n_params + 8) * (terms + prior) + 1e-4


def test_hmc_and_mfvi_weighted_log_density_equals_repeated_rows():
    import jax.numpy as jnp

    X, y = _problem()
    spec = uz.MLPSpec(3, 2, hidden=(4,))
    params = spec.init_params(2)
    w = _config.row_weights(WEIGHTS, y, 2)
    Xr, yr = _repeated(X, y)
    bound = _float32_sum_bound(spec, params, Xr, yr)
    model = numpyro_model.bayesian_mlp(spec, False)          # HMC's model
    weighted = _numpyro_log_density(model, (jnp.asarray(X), jnp.asarray(y, jnp.int32),
                                            jnp.asarray(w)), params)
    repeated = _numpyro_log_density(model, (jnp.asarray(Xr), jnp.asarray(yr, jnp.int32)),
                                    params)
    assert abs(weighted - repeated) <= bound
    vi = numpyro_model.bayesian_mlp(spec, False, None)       # MF-VI's, kl_weight given
    weighted = _numpyro_log_density(vi, (jnp.asarray(X), jnp.asarray(y, jnp.int32),
                                         jnp.asarray(w), 1.0), params)
    repeated = _numpyro_log_density(vi, (jnp.asarray(Xr), jnp.asarray(yr, jnp.int32),
                                         jnp.ones(len(yr), jnp.float32), 1.0), params)
    assert abs(weighted - repeated) <= bound


def test_map_training_with_weights_reaches_the_repeated_rows_map():
    """Logistic regression (convex): the weighted and the repeated-rows objectives are the
    same function up to a factor N'/N, so both fits converge to the one MAP."""
    X, y = _problem(n=60, seed=3)
    spec = uz.MLPSpec(3, 2, hidden=())
    Xr, yr = _repeated(X, y)
    options = dict(num_members=1, num_epochs=3000, learning_rate=0.05, progress_bar=False)
    weighted = uz.fit("ensemble", spec, uz.ClassificationData(X, y, X[:5], y[:5], n_classes=2),
                      seed=0, class_weight=WEIGHTS, **options)
    repeated = uz.fit("ensemble", spec, uz.ClassificationData(Xr, yr, X[:5], y[:5], n_classes=2),
                      seed=0, **options)
    a, b = (spec.flatten({k: v[0] for k, v in p.draws.items()}) for p in (weighted, repeated))
    # Both runs stop once their loss plateaus; the MAP's posterior sd here is ~0.3, and
    # a plateaued Adam run sits within ~1e-3 of the optimum on this conditioned problem.
    np.testing.assert_allclose(a, b, atol=2e-2)


# -- prior shift ---------------------------------------------------------------------------

def _logistic_posterior(classes=None):
    """hidden=(): one logit z = w·x + b, a posterior with one draw of known parameters."""
    spec = uz.MLPSpec(2, 2, hidden=())
    draws = {"layers.0.weight": np.array([[[1.0, -0.5]]], np.float32),
             "layers.0.bias": np.array([[0.25]], np.float32)}
    return uz.Posterior(spec=spec, method="ensemble", config={}, seed=0, draws=draws,
                        diagnostics={"class_prior": np.array([0.5, 0.5])}, classes=classes)


def test_prior_shift_is_bayes_rule_on_the_probabilities():
    post = _logistic_posterior(classes=("background", "target"))
    X = np.array([[0.0, 0.0], [2.0, 1.0], [-1.0, 3.0]], np.float32)
    shifted = uz.prior_shift(post, {"background": 0.99, "target": 0.01})
    p = post.predict_proba_draws(X)[0].astype(np.float64)
    # P'(k|x) ∝ P(k|x) π'_k / π_k, computed on the probabilities themselves.
    expected = p * np.array([0.99, 0.01]) / np.array([0.5, 0.5])
    expected /= expected.sum(1, keepdims=True)
    got = shifted.predict_proba_draws(X)[0]
    # float32 sigmoid of a logit known to a few ulp (its size here is < 6): a few 1e-7.
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-6)
    back = uz.prior_shift(shifted, [0.5, 0.5])
    np.testing.assert_allclose(back.predict_proba_draws(X)[0], p, rtol=0, atol=2e-6)
    assert shifted.diagnostics["class_prior"].tolist() == [0.99, 0.01]


def test_prior_shift_composes_with_recalibration_and_survives_save_and_load(tmp_path):
    post = _logistic_posterior()
    recalibrated = uz.Posterior(**{**{f.name: getattr(post, f.name)
                                      for f in post.__dataclass_fields__.values()},
                                   "logit_transform": uz.LogitTransform.from_temperature(2.0, 1)})
    shifted = uz.prior_shift(recalibrated, [0.8, 0.2])
    z = np.array([0.25 + 2.0 * 1.0 - 0.5])                # x = (2, 1)
    expected = 1 / (1 + np.exp(-(z / 2.0 + np.log(0.2 / 0.8))))
    got = shifted.predict_proba_draws(np.array([[2.0, 1.0]], np.float32))[0, 0, 1]
    assert abs(got - expected[0]) < 2e-6
    path = tmp_path / "shifted.nc"
    shifted.save(path)
    loaded = uz.load_posterior(path)
    np.testing.assert_array_equal(loaded.logit_transform.shift, shifted.logit_transform.shift)
    assert loaded.logit_transform.info["method"] == "prior_shift"


@pytest.mark.parametrize(("prior", "match"), [
    ([0.5, 0.6], "sum to 1"), ([1.0, 0.0], "in \\(0, 1\\)"), ([0.2, 0.3, 0.5], "one probability"),
    ({"cat": 0.5, 1: 0.5}, "does not have"), ("0.5,0.5", "sequence")])
def test_bad_priors_are_named(prior, match):
    with pytest.raises((uz.InvalidInputError, uz.InvalidTypeError), match=match):
        uz.prior_shift(_logistic_posterior(), prior)


def test_prior_shift_needs_the_source_prior_when_the_posterior_does_not_record_it():
    post = _logistic_posterior()
    bare = uz.Posterior(spec=post.spec, method="ensemble", config={}, seed=0, draws=post.draws)
    with pytest.raises(uz.InvalidInputError, match="from_prior"):
        uz.prior_shift(bare, [0.9, 0.1])
    assert uz.prior_shift(bare, [0.9, 0.1], from_prior=[0.5, 0.5]).logit_transform is not None


def test_compare_weights_every_method_and_shifts_back_to_the_training_prior():
    data = uz.datasets.load("sim-teacher", n_train=150, n_test=40, seed=1)
    result = uz.compare(data, ["laplace", "ensemble"], seed=0, progress_bar=False,
                        class_weight="balanced", target_prior="train",
                        configs={"laplace": {"num_epochs": 100},
                                 "ensemble": {"num_members": 3, "num_epochs": 100,
                                              "class_weight": None}})
    frequencies = np.bincount(data.y_train, minlength=2) / data.n_train
    laplace_post, ensemble_post = result.posteriors["laplace"], result.posteriors["ensemble"]
    assert laplace_post.config["class_weight"] == "balanced"
    assert ensemble_post.config["class_weight"] is None          # its own config wins
    for post in (laplace_post, ensemble_post):
        np.testing.assert_allclose(post.diagnostics["class_prior"], frequencies)
    # balanced fit → uniform prior; the shift adds log-odds(train) − log-odds(uniform)
    np.testing.assert_allclose(laplace_post.logit_transform.shift,
                               [np.log(frequencies[1] / frequencies[0])])


def test_compare_rejects_a_bad_prior_or_weight_before_any_fit(monkeypatch):
    data = uz.datasets.load("sim-teacher", n_train=50, n_test=20, seed=1)

    def no_fit(*args, **kwargs):
        raise AssertionError("a fit ran before the bad option was caught")
    monkeypatch.setattr(uz.methods, "fit", no_fit)
    with pytest.raises(uz.InvalidInputError, match="target_prior"):
        uz.compare(data, ["laplace"], target_prior="scene")
    with pytest.raises(uz.InvalidInputError, match="sum to 1"):
        uz.compare(data, ["laplace"], target_prior=[0.5, 0.6])
    with pytest.raises(uz.InvalidInputError, match="class_weight"):
        uz.compare(data, ["laplace"], class_weight="weighted")


def test_cli_class_weight_and_target_prior_reach_every_method_and_the_config_file(tmp_path,
                                                                                   capsys):
    from uqzoo.cli import main
    from uqzoo.comparison.config import read_config

    out = tmp_path / "run"
    args = ["compare", "--methods", "laplace,ensemble", "--set", "laplace.num_epochs=50",
            "--set", "ensemble.num_epochs=50", "--set", "ensemble.num_members=2",
            "--data-option", "n_train=100", "--data-option", "n_test=30", "--class-weight",
            "balanced", "--target-prior", "train", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    config = read_config(out / "config.toml")
    assert config.target_prior == "train"
    assert {name: options["class_weight"] for name, options in config.configs.items()} == {
        "laplace": "balanced", "ensemble": "balanced"}
    assert main(["compare", "--class-weight", "inverse"]) == 2
    assert "--class-weight must be 'balanced'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("method, options", [
    ("swag", {}), ("ensemble", {"num_members": 5}), ("bootstrap", {"num_members": 5}),
    ("mc_dropout", {}),
])
def test_a_one_in_2000_class_under_balanced_weights_does_not_derail_the_optimiser(method,
                                                                                  options):
    """Issue #26: "balanced" weighs the one target row 1000 (2000 / (2 · 1)). Its row in
    a minibatch of 64 made SWAG's SGD step ~15× an unweighted one (measured here before
    the trainer normalised the step: detection AUROC 0.825 against 1.000 without
    weights; on the issue's AVIRIS scene 0.32 against 0.99). The step now descends the
    loss divided by the batch's mean weight; every method ranks the targets as well as
    without weights."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    target = np.array([2.5, 2.5, 0.0, 0.0, 0.0])
    X = rng.normal(size=(2000, 5))
    y = np.zeros(2000, np.int64)
    X[0], y[0] = target, 1
    X_test = np.concatenate([rng.normal(size=(400, 5)), target + 0.3 * rng.normal(size=(40, 5))])
    y_test = np.r_[np.zeros(400, np.int64), np.ones(40, np.int64)]
    data = uz.ClassificationData(X.astype(np.float32), y, X_test.astype(np.float32), y_test, 2)
    spec = uz.MLPSpec(5, 2, hidden=(10, 10))
    with pytest.warns(DataWarning, match="class weight 1000"):
        post = uz.fit(method, spec, data, seed=0, progress_bar=False, class_weight="balanced",
                      **options)
    p_target = post.predict_proba_draws(data.X_test).mean(axis=0)[:, 1]
    assert np.all(np.isfinite(p_target))
    assert roc_auc_score(y_test, p_target) > 0.95
