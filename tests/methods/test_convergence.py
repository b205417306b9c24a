"""MAP fits train until their loss plateaus, within a budget, or say that they did not."""

from __future__ import annotations

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.methods import _diagnostics, _trainer, hmc, mfvi, swag

WINDOW = 20


def _problem(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    return X, y


@pytest.fixture(scope="module")
def plateau_run():
    spec = uz.MLPSpec(4, 2, hidden=(6, 5))
    X, y = _problem()
    init = spec.init_params(3, num=3)
    config = _trainer.TrainingConfig(num_epochs=3000, learning_rate=0.02,
                                     convergence_window=WINDOW, convergence_rtol=1e-4)
    result = _trainer.train(spec, X, y, init, config, keys=_trainer.member_keys([0, 1, 2]))
    return spec, X, y, init, config, result


def test_members_stop_where_the_windowed_rule_first_holds(plateau_run):
    """The compiled rule (float32, in the loop) stops each member at the first epoch at
    which the rule of MF-VI's ELBO check (float64, on the recorded trace) holds; the
    two may disagree only where the decrease is within float32 rounding of the
    tolerance, which this run does not come near."""
    _spec, _X, _y, _init, config, result = plateau_run
    assert result.stopped.all() and np.all(result.stopped_epoch < config.num_epochs)
    for m, stop in enumerate(result.stopped_epoch):
        trace = result.loss[m, :stop].astype(np.float64)
        assert np.all(np.isfinite(trace)) and np.all(np.isnan(result.loss[m, stop:]))
        holds = _diagnostics.window_change(trace, WINDOW, config.convergence_rtol).steady
        before = _diagnostics.window_change(trace[:-1], WINDOW, config.convergence_rtol).steady
        assert holds and not before, (m, stop)
    # Members stop on their own schedules, and the run ends when the last one does.
    assert result.loss.shape[1] >= result.stopped_epoch.max()
    assert len(set(result.stopped_epoch.tolist())) > 1


def test_a_stopped_member_keeps_the_parameters_of_its_stopping_epoch(plateau_run):
    spec, X, y, init, config, result = plateau_run
    m = int(np.argmin(result.stopped_epoch))
    stop = int(result.stopped_epoch[m])
    alone = _trainer.train(spec, X, y, {k: v[m:m + 1] for k, v in init.items()},
                           _trainer.TrainingConfig(num_epochs=stop, learning_rate=0.02,
                                                   convergence_window=None),
                           keys=_trainer.member_keys([m]))
    for k in init:
        np.testing.assert_allclose(result.params[k][m], alone.params[k][0], atol=1e-5)
    assert _trainer.convergence(result, config) == _trainer.Convergence(True, ())


def test_a_budget_too_short_is_reported_with_its_reason():
    spec = uz.MLPSpec(4, 2, hidden=(6, 5))
    X, y = _problem()
    keys = _trainer.member_keys([0, 1])
    init = spec.init_params(3, num=2)
    # Long enough to check, too short to plateau: still descending fast.
    config = _trainer.TrainingConfig(num_epochs=4 * WINDOW, learning_rate=0.001,
                                     convergence_window=WINDOW)
    result = _trainer.train(spec, X, y, init, config, keys=keys)
    converged, messages = _trainer.convergence(result, config)
    assert converged is False and not result.stopped.any()
    assert "2 of 2 members had not reached a plateau" in messages[0]
    assert "num_epochs=80" in messages[0]
    # Too short to check at all.
    short = _trainer.TrainingConfig(num_epochs=WINDOW, convergence_window=WINDOW)
    converged, messages = _trainer.convergence(
        _trainer.train(spec, X, y, init, short, keys=keys), short)
    assert converged is False and "shorter than the 2 × convergence_window" in messages[0]
    # No rule: no verdict, and the whole budget is trained.
    free = _trainer.TrainingConfig(num_epochs=3 * WINDOW, convergence_window=None)
    result = _trainer.train(spec, X, y, init, free, keys=keys)
    assert _trainer.convergence(result, free) == _trainer.Convergence(None, ())
    assert result.loss.shape == (2, 3 * WINDOW) and np.all(np.isfinite(result.loss))


def test_early_stopping_is_the_rule_with_a_validation_split():
    spec = uz.MLPSpec(4, 2, hidden=(6, 5), prior_scale=100.0)
    X, y = _problem(n=60)
    y = np.where(np.random.default_rng(0).random(60) < 0.3, 1 - y, y)   # label noise
    X_val, y_val = _problem(n=60, seed=1)
    init = spec.init_params(5, num=2)
    keys = _trainer.member_keys([0, 1])
    config = _trainer.TrainingConfig(num_epochs=600, learning_rate=0.05,
                                     validation_fraction=0.2, patience=20)
    result = _trainer.train(spec, X, y, init, config, keys=keys, X_val=X_val, y_val=y_val)
    assert _trainer.convergence(result, config).converged is True
    cut = _trainer.TrainingConfig(num_epochs=int(result.stopped_epoch.min()) - 1,
                                  learning_rate=0.05, validation_fraction=0.2, patience=20)
    result = _trainer.train(spec, X, y, init, cut, keys=keys, X_val=X_val, y_val=y_val)
    converged, messages = _trainer.convergence(result, cut)
    assert converged is False and "validation loss was still improving" in messages[0]


def test_every_convergence_check_returns_one_type():
    """The trainer's rule, SWAG's stationarity, MF-VI's ELBO check and HMC's R-hat gate
    all answer with a Convergence: the verdict and one message per reason."""
    Convergence = _diagnostics.Convergence
    assert _trainer.Convergence is Convergence
    rng = np.random.default_rng(0)
    steady = 1.0 + 0.01 * rng.normal(size=(1, 200))
    falling = np.linspace(2.0, 1.0, 200)[None]
    assert swag.stationarity(steady, 100) == Convergence(True, ())
    verdict = swag.stationarity(falling, 100)
    assert type(verdict) is Convergence and verdict.converged is False
    assert "still fell" in verdict.messages[0]

    cfg = mfvi.Config(num_steps=200, convergence_window=50)
    for losses, expected in ((steady[0], True), (falling[0], False)):
        change = _diagnostics.window_change(losses, cfg.window, cfg.convergence_rtol)
        verdict = mfvi.elbo_convergence(losses, change, cfg)
        assert type(verdict) is Convergence and verdict.converged is expected
        assert len(verdict.messages) == (not expected)
    nan = np.r_[steady[0, :-1], np.nan]
    verdict = mfvi.elbo_convergence(nan, _diagnostics.window_change(nan, 50, 1e-3), cfg)
    assert verdict.converged is False and "non-finite" in verdict.messages[0]

    cfg = hmc.Config(num_samples=40, num_chains=2)
    good = {"num_divergent": 0, "rhat_predictive": np.array([[1.001], [1.004]])}
    assert hmc._convergence(good, cfg, 40) == Convergence(True, ())
    bad = {"num_divergent": 3, "rhat_predictive": np.array([[1.2], [np.nan]])}
    verdict = hmc._convergence(bad, cfg, 40)
    assert type(verdict) is Convergence and verdict.converged is False
    assert "3 of 40" in verdict.messages[0] and "1.200" in verdict.messages[1]


def test_window_change_is_the_windowed_rule():
    """Steady when the last window's mean fell by at most max(rtol, 3 SE) (relative)
    from the window before; not computed (NaN, not steady) when too short or non-finite."""
    trace = np.r_[np.full(10, 2.0), np.full(10, 1.0)]
    change = _diagnostics.window_change(trace, 10, 0.1)
    assert change == _diagnostics.WindowChange(False, 1.0, 0.1)
    assert _diagnostics.window_change(trace, 10, 1.0).steady
    short = _diagnostics.window_change(trace, 11, 0.1)
    assert not short.steady and np.isnan(short.relative_change) and np.isnan(short.tolerance)


@pytest.mark.parametrize("method", ["ensemble", "bootstrap", "mc_dropout", "laplace"])
def test_methods_say_whether_they_converged(method):
    data = uz.datasets.load("sim-teacher", p=3, n_train=150, n_test=20, seed=101)
    spec = uz.MLPSpec(3, 2, hidden=(5,))
    options = {"mc_dropout": {"num_samples": 10}, "laplace": {"num_samples": 10}}.get(
        method, {"num_members": 2})
    short = uz.fit(method, spec, data, seed=0, progress_bar=False, num_epochs=60,
                   convergence_window=20, learning_rate=1e-3, **options)
    assert short.converged is False
    assert short.warnings[0].startswith(f"{method}: ") and "plateau" in short.warnings[0]
    again = uz.fit(method, spec, data, seed=0, progress_bar=False, num_epochs=60,
                   convergence_window=20, learning_rate=1e-3, **options)
    assert again.warnings == short.warnings
    for k in short.draws:
        np.testing.assert_array_equal(short.draws[k], again.draws[k])
    long = uz.fit(method, spec, data, seed=0, progress_bar=False, num_epochs=3000,
                  convergence_window=50, learning_rate=0.02, **options)
    assert long.converged is True and long.warnings == ()
    stopped = long.diagnostics["stopped_epoch"]
    assert np.all(stopped < 3000) and long.diagnostics["loss"].shape[1] == stopped.max()


def test_compare_shows_false_for_a_fit_that_did_not_converge():
    data = uz.datasets.load("sim-teacher", p=3, n_train=150, n_test=20, seed=101)
    result = uz.compare(data, ["ensemble"], model=uz.MLPSpec(3, 2, hidden=(5,)),
                        progress_bar=False,
                        configs={"ensemble": {"num_members": 2, "num_epochs": 60,
                                              "convergence_window": 20,
                                              "learning_rate": 1e-3}})
    value = result.table.loc["ensemble", "converged"]
    assert value is False or value is np.False_
    assert "plateau" in result.reports["ensemble"].warnings[0]


def test_bad_convergence_options_are_rejected():
    with pytest.raises(uz.InvalidInputError, match="convergence_window"):
        _trainer.TrainingConfig(convergence_window=1)
    with pytest.raises(uz.InvalidTypeError, match="convergence_window"):
        _trainer.TrainingConfig(convergence_window=2.5)
    with pytest.raises(uz.InvalidInputError, match="convergence_rtol"):
        _trainer.TrainingConfig(convergence_rtol=-1.0)
