"""uz.compare: failure flags, detection columns and classical-detector rows (issue 12)."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo import methods as method_registry
from uqzoo.metrics import detection_roc, pd_at_far
from uqzoo.posterior import Posterior

DETECTORS = ["ace", "cem", "matched_filter", "rx"]


def background_everywhere(spec, data, seed=0, progress_bar=False, **config):
    """A stand-in fit that gives up on the targets: P(target) = σ(−8) for every pixel."""
    draws = {k: np.zeros_like(v) for k, v in spec.init_params(seed=0, num=16).items()}
    last_bias = [k for k in draws if k.endswith("bias")][-1]
    draws[last_bias][:] = -8.0
    return Posterior(spec=spec, method="laplace", config={}, seed=seed, draws=draws)


@pytest.fixture(scope="module")
def muufl():
    return uz.datasets.load("muufl-target", seed=0)


def test_failed_fit_is_flagged_beside_the_classical_detectors(muufl, monkeypatch):
    monkeypatch.setattr(method_registry, "fit", lambda name, *a, **k: background_everywhere(*a,
                                                                                          **k))
    result = uz.compare(muufl, ["laplace"], progress_bar=False, reference=None)
    table = result.table
    assert list(table.index) == ["laplace", *DETECTORS]
    assert table.loc["laplace", "kind"] == "posterior"
    assert (table.loc[DETECTORS, "kind"] == "detector").all()
    # 1,293 of 1,296 right: an accuracy that hides the failure, and the flags that don't
    assert table.loc["laplace", "accuracy"] == pytest.approx(1293 / 1296)
    assert table["failed"].dtype == "boolean" and table.loc["laplace", "failed"] == True  # noqa: E712
    assert table.loc["laplace", "flags"].split(", ")[0] == "one_class"
    assert "hcs_confident_misses" in table.loc["laplace", "flags"]
    # detectors: scores only -- no intervals, no HCS, no failure check
    for col in ("interval_width@0.8", "hcs_proportion@0.95", "accuracy", "failed"):
        assert table.loc[DETECTORS, col].isna().all(), col
    is_target = muufl.y_test == 1
    for name in DETECTORS:
        scores = uz.detectors.fit_detector(name, muufl.X_train, muufl.y_train).score(
            muufl.X_test)
        np.testing.assert_array_equal(result.detectors[name].scores, scores)
        assert table.loc[name, "detection_auroc"] == detection_roc(scores, is_target).auroc
        want = pd_at_far(scores, is_target)
        assert table.loc[name, "pd_at_far@0.01"] == want.pd[1]
        assert table.loc[name, "pd_at_far_upper@0.001"] == want.upper[0]
    report = result.reports["laplace"]
    assert table.loc["laplace", "detection_auroc"] == report.value("detection_auroc", cls=1)
    lo, pd_, hi = (table[f"{c}@0.01"] for c in ("pd_at_far_lower", "pd_at_far",
                                               "pd_at_far_upper"))
    assert ((lo <= pd_) & (pd_ <= hi)).all()


def test_tabular_data_gets_detection_columns_but_no_detectors_unless_asked():
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=300, seed=1)
    configs = {"laplace": {"num_epochs": 30, "num_samples": 50}}
    result = uz.compare(data, "laplace", configs=configs, progress_bar=False)
    table = result.table
    assert list(table.index) == ["laplace"] and "kind" not in table.columns
    assert {"failed", "flags", "balanced_accuracy", "detection_auroc", "pd_at_far@0.001",
            "pd_at_far_lower@0.01", "coverage@0.8"} <= set(table.columns)
    assert result.detectors == {}
    # a fit that learned something is not flagged
    assert not table.loc["laplace", "failed"] and table.loc["laplace", "flags"] == ""
    asked = uz.compare(data, "laplace", configs=configs, progress_bar=False, detectors=True,
                       far=(0.05,))
    assert list(asked.table.index) == ["laplace", *DETECTORS]
    assert "pd_at_far@0.05" in asked.table.columns and "pd_at_far@0.01" not in asked.table


def test_detector_option_is_validated_before_any_fit(monkeypatch):
    def must_not_fit(*args, **kwargs):
        raise AssertionError("a fit started before the arguments were checked")
    monkeypatch.setattr(method_registry, "fit", must_not_fit)
    three = uz.datasets.load("sim-teacher", n_train=100, n_test=50, n_classes=3, seed=0)
    with pytest.raises(uz.InvalidInputError, match=r"detectors=True needs binary .* 3 classes"):
        uz.compare(three, "laplace", detectors=True)
    with pytest.raises(uz.InvalidTypeError, match="detectors must be True, False or None"):
        uz.compare(three, "laplace", detectors="yes")
    with pytest.raises(uz.InvalidInputError, match=r"far entry must lie in \(0.0, 1.0\)"):
        uz.compare(three, "laplace", far=(0.01, 1.5))


def test_three_classes_have_no_detection_columns(monkeypatch):
    data = uz.datasets.load("sim-teacher", n_train=100, n_test=80, n_classes=3, seed=0)
    result = uz.compare(data, "laplace", configs={"laplace": {"num_epochs": 5,
                                                              "num_samples": 20}},
                        progress_bar=False)
    assert not any(c.startswith(("detection", "pd_at_far")) for c in result.table.columns)
    assert isinstance(result.table, pd.DataFrame) and "failed" in result.table.columns


@pytest.mark.parametrize("name", ["evaluate", "compare"])
def test_facade_functions_are_functions_on_plain_first_use(name):
    code = f"import uqzoo\nassert callable(uqzoo.{name}), uqzoo.{name}"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_every_freely_drawing_method_gets_the_same_draw_budget_and_the_table_shows_s():
    data = uz.datasets.load("sim-teacher", n_train=120, n_test=60, seed=0)
    quick = {"num_epochs": 20}
    result = uz.compare(data, ["laplace", "mc_dropout", "ensemble"], num_draws=64,
                        configs={"laplace": quick, "mc_dropout": quick,
                                 "ensemble": {**quick, "num_members": 3}},
                        progress_bar=False)
    s = result.table["num_draws"]
    assert s["laplace"] == s["mc_dropout"] == 64       # the common budget
    assert s["ensemble"] == 3                          # one draw per trained member
    assert result.posteriors["laplace"].num_draws == 64
    # three members are too few for the default levels, and the report says so
    assert any("too few" in w for w in result.reports["ensemble"].warnings)
    own = uz.compare(data, "laplace", num_draws=64, progress_bar=False,
                     configs={"laplace": {**quick, "num_samples": 10}})
    assert own.table.loc["laplace", "num_draws"] == 10   # the caller's own setting wins
    with pytest.raises(uz.InvalidInputError, match="num_draws"):
        uz.compare(data, "laplace", num_draws=0)
    with pytest.raises(uz.InvalidInputError, match="interval"):
        uz.compare(data, "laplace", interval="hdi")


def test_a_data_warning_is_said_once_per_comparison(muufl, monkeypatch):
    import warnings

    monkeypatch.setattr(method_registry, "fit", lambda name, *a, **k: background_everywhere(*a,
                                                                                          **k))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        uz.compare(muufl, ["laplace", "ensemble", "swag"], progress_bar=False, reference=None)
    said = [str(w.message) for w in caught if issubclass(w.category, uz.DataWarning)]
    assert said and len(said) == len(set(said))        # each sentence once, not once per method
    assert any("target pixel" in s for s in said)
