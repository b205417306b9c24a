"""``uz.reference_posterior``: the gate, the data fingerprint, save/load, the CLI handler.

The gate is tested on stand-in HMC posteriors whose diagnostics are set by
hand (each check failing alone); a real NUTS run that is too short to pass
goes through the ``uqzoo reference`` handler in the slow test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.cli import main
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.methods import hmc
from uqzoo.reference import (
    DIVERGENCE_RATE_MAX,
    ESS_MIN,
    RHAT_MAX,
    check_reference,
    data_fingerprint,
    reference_gate,
    reference_posterior,
)


@pytest.fixture(scope="module")
def data() -> uz.ClassificationData:
    return uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)


def stand_in(data, *, chains: int = 4, num_draws: int = 800, **diagnostics) -> uz.Posterior:
    """An "hmc" posterior of ``data`` whose diagnostics pass the gate unless overridden."""
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(5, 5))
    draws = spec.init_params(seed=0, num=num_draws)
    ess = np.full((10, 1), 1000.0)
    passing = {"data_fingerprint": data_fingerprint(data), "rhat_predictive": np.ones((10, 1)),
               "ess_bulk_predictive": ess, "ess_tail_predictive": ess, "rhat_lp": 1.001,
               "ess_bulk_lp": 900.0, "ess_tail_lp": 950.0, "num_divergent": 0,
               "reference_max_divergence_rate": DIVERGENCE_RATE_MAX}
    return uz.Posterior(spec=spec, method="hmc", config={"num_warmup": 1000,
                                                         "num_samples": num_draws,
                                                         "target_accept": 0.8},
                        seed=0, draws=draws, sample_shape=(chains, num_draws // chains),
                        diagnostics={**passing, **diagnostics})


def test_fingerprint_depends_on_the_training_data_only(data):
    again = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    assert data_fingerprint(again) == data_fingerprint(data)
    assert data_fingerprint(data).startswith("sha256:") and len(data_fingerprint(data)) == 71
    other = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=1)
    assert data_fingerprint(other) != data_fingerprint(data)
    new_test = dataclasses.replace(data, X_test=data.X_test[:10], y_test=data.y_test[:10],
                                   p_true_test=None)
    assert data_fingerprint(new_test) == data_fingerprint(data)
    flipped = dataclasses.replace(data, y_train=1 - data.y_train)
    assert data_fingerprint(flipped) != data_fingerprint(data)
    with pytest.raises(InvalidTypeError, match="data must be a ClassificationData"):
        data_fingerprint(data.X_train)


def test_gate_passes_a_good_run(data):
    gate = reference_gate(stand_in(data))
    assert gate.passed and gate.messages == ()
    assert gate.rhat_max == pytest.approx(1.001)
    assert gate.ess_bulk_min == 900.0 and gate.ess_tail_min == 950.0
    assert gate.divergence_rate == 0.0


@pytest.mark.parametrize(("override", "fragment"), [
    ({"rhat_predictive": np.r_[np.ones(9), RHAT_MAX + 0.02][:, None]}, "R-hat reaches 1.03"),
    ({"rhat_lp": 1.05}, "R-hat reaches 1.05"),
    ({"ess_bulk_lp": ESS_MIN - 1}, "bulk ESS falls to 399"),
    ({"ess_tail_predictive": np.full((10, 1), 120.0)}, "tail ESS falls to 120"),
    ({"num_divergent": 2}, "2 of 800 kept transitions diverged"),
    ({"rhat_lp": np.nan}, "log density's R-hat is missing"),
    ({"rhat_predictive": np.full((10, 1), np.nan)}, "predictive R-hat could not be computed"),
])
def test_gate_names_each_failure(data, override, fragment):
    gate = reference_gate(stand_in(data, **override))
    assert not gate.passed
    assert any(fragment in m for m in gate.messages), gate.messages


def test_gate_needs_four_chains_and_reads_the_recorded_divergence_rate(data):
    gate = reference_gate(stand_in(data, chains=2))
    assert not gate.passed and "2 chain(s)" in gate.messages[0]
    lenient = stand_in(data, num_divergent=2, reference_max_divergence_rate=0.01)
    assert reference_gate(lenient).passed
    assert not reference_gate(lenient, max_divergence_rate=0.0).passed
    with pytest.raises(InvalidInputError, match="max_divergence_rate"):
        reference_gate(lenient, max_divergence_rate=1.5)


def test_check_reference_refuses_other_data_and_non_references(data):
    ref = stand_in(data)
    assert check_reference(ref, data).passed
    other = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=1)
    with pytest.raises(InvalidInputError, match="reference belongs to other training data"):
        check_reference(ref, other)
    plain = dataclasses.replace(ref, diagnostics={k: v for k, v in ref.diagnostics.items()
                                                  if k != "data_fingerprint"})
    with pytest.raises(InvalidInputError, match="has no data fingerprint"):
        check_reference(plain, data)
    swag = dataclasses.replace(ref, method="swag")
    with pytest.raises(InvalidInputError, match="must be an HMC posterior"):
        check_reference(swag, data)
    with pytest.raises(InvalidTypeError, match=r"must be a uqzoo\.Posterior"):
        check_reference("ref.nc", data)  # type: ignore[arg-type]
    failing = stand_in(data, rhat_lp=1.2)
    with pytest.raises(InvalidInputError, match="did not pass the reference gate"):
        check_reference(failing, data)
    assert not check_reference(failing, data, require_gate=False).passed


def test_fingerprint_and_gate_survive_save_and_load(data, tmp_path):
    ref = stand_in(data, num_divergent=1, reference_max_divergence_rate=0.01)
    ref.save(tmp_path / "ref.nc")
    loaded = uz.load_posterior(tmp_path / "ref.nc")
    assert loaded.diagnostics["data_fingerprint"] == data_fingerprint(data)
    assert reference_gate(loaded) == reference_gate(ref)
    assert check_reference(loaded, data).passed
    other = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=1)
    with pytest.raises(InvalidInputError, match="other training data"):
        uz.fidelity(loaded, loaded, other.X_test, data=other)


def test_reference_posterior_refuses_bad_settings_before_sampling(data):
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(5, 5))
    with pytest.raises(InvalidTypeError, match=r"config must be a uqzoo\.methods\.hmc\.Config"):
        reference_posterior(spec, data, {"num_samples": 4000}, seed=0)
    with pytest.raises(InvalidInputError, match=r"unknown HMC option\(s\) \['num_draws'\]"):
        reference_posterior(spec, data, seed=0, num_draws=4000)
    with pytest.raises(InvalidInputError, match="max_divergence_rate"):
        reference_posterior(spec, data, hmc.Config(), seed=0, max_divergence_rate=-1.0)
    with pytest.raises(InvalidTypeError, match="data must be a ClassificationData"):
        reference_posterior(spec, data.X_train, seed=0)


def test_cli_refuses_bad_input(tmp_path, capsys):
    status = main(["reference", "--dataset", "sim-teacher", "--data-option", "n_train=200",
                       "--hidden", "5,5", "--set", "num_draws=10",
                       "--out", str(tmp_path / "ref.nc")])
    assert status == 2
    assert "unknown HMC option(s) ['num_draws']" in capsys.readouterr().err
    assert not (tmp_path / "ref.nc").exists()


@pytest.mark.slow
def test_cli_run_that_misses_the_gate_is_saved_but_no_reference(data, tmp_path, capsys):
    """A real NUTS run, far too short for 400 ESS: exit status 1, the file written,
    and refused as a reference once loaded."""
    out = tmp_path / "ref.nc"
    status = main(["reference", "--dataset", "sim-teacher", "--data-option", "n_train=200",
                       "--data-option", "n_test=50", "--hidden", "5,5", "--seed", "0",
                       "--set", "num_warmup=200", "--set", "num_samples=40",
                       "--no-progress", "--out", str(out)])
    printed = capsys.readouterr().out
    assert status == 1, printed
    assert "reference gate NOT met" in printed and "ESS falls to" in printed
    loaded = uz.load_posterior(out)
    assert loaded.converged is False
    assert any("no reference" in w for w in loaded.warnings)
    with pytest.raises(InvalidInputError, match="did not pass the reference gate"):
        check_reference(loaded, data)
