"""The verdict on a user's own data (scikit-learn's breast cancer and wine tables).

Without true probabilities the test labels judge the mean prediction only: the
verdict says so first, never recommends a point estimate or a method with too
few draws for its levels for uncertainty, and with ``hmc`` among the methods a
reference posterior is sampled by default (``reference="auto"``). The fast test
trains briefly and skips the reference (its budget set to 0 s); the slow ones
run the defaults.
"""

from __future__ import annotations

import importlib

import pytest

import uqzoo as uz
from uqzoo.metrics import min_draws

compare_module = importlib.import_module("uqzoo.comparison.compare")

POINT_AND_POSTERIORS = ["map", "laplace", "ensemble", "mc_dropout"]
BRIEF = {name: {"num_epochs": 150, "convergence_window": None}
         for name in POINT_AND_POSTERIORS}


def _assert_sound(result):
    judged = uz.report.verdict(result)
    assert judged.answer.startswith("The test labels judge the mean prediction only") or (
        result.settings.reference is not None and result.settings.reference.passed)
    chosen = judged.recommended
    if chosen is not None:
        draws = int(result.table.loc[chosen, "num_draws"])
        assert chosen != "map" and draws >= min_draws(max(result.settings.levels))
    # a point estimate is never named to trust, in any words
    assert "Trust map" not in judged.answer and "of map:" not in judged.answer
    return judged


def test_breast_cancer_recommends_no_point_estimate(monkeypatch):
    monkeypatch.setattr(compare_module, "AUTO_REFERENCE_SECONDS", 0.0)
    data = uz.datasets.load("breast-cancer", seed=0)
    result = uz.compare(data, POINT_AND_POSTERIORS, configs=BRIEF, num_draws=100,
                        progress_bar=False)
    judged = _assert_sound(result)
    assert result.settings.reference is None
    assert any(s.startswith("No reference posterior was sampled") and "uqzoo reference" in s
               for s in judged.sentences)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::uqzoo.errors.SlowFitWarning")
@pytest.mark.parametrize("name", ["breast-cancer", "wine"])
def test_default_comparison_recommends_no_point_estimate(name):
    data = uz.datasets.load(name, seed=0)
    _assert_sound(uz.compare(data, POINT_AND_POSTERIORS, progress_bar=False))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::uqzoo.errors.SlowFitWarning")
def test_hmc_among_the_methods_brings_fidelity_columns_without_asking():
    data = uz.datasets.load("breast-cancer", seed=0)
    result = uz.compare(data, ["hmc", "laplace", "map"], progress_bar=False,
                        configs={"hmc": compare_module.QUICK_CONFIGS["hmc"]})
    assert any(c.startswith("fidelity_") for c in result.table.columns)
    assert result.settings.reference.source == "auto"
    _assert_sound(result)
