"""Hostile inputs that once ended in a traceback, a hang or a silent answer: one line, exit 2."""

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.cli import main
from uqzoo.reference import data_fingerprint

SMALL_STUDY = Path(__file__).parents[1] / "experiments" / "examples" / "small.toml"


@pytest.mark.parametrize("address, needle", [
    ("bogus", "must look like tcp://HOST:PORT"),
    ("tcp://", "must look like tcp://HOST:PORT"),
    ("tcp://host:notaport", "port 'notaport' must be an integer in 1..65535"),
    ("udp://1.2.3.4:5", "scheme 'udp' is not one Dask listens on"),
])
def test_a_malformed_dask_address_is_one_line_before_any_connection(address, needle,
                                                                    tmp_path, capsys):
    start = time.perf_counter()
    code = main(["study", "run", str(SMALL_STUDY), "--store", str(tmp_path / "s.sqlite"),
                 "--executor", "dask", "--address", address, "--no-progress"])
    assert code == 2 and time.perf_counter() - start < 30
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and needle in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []          # no store made either


# -- silent answers are errors ----------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny():
    return uz.datasets.load("sim-teacher", n_train=60, n_test=30, seed=0)


def _reference_of(post: uz.Posterior) -> uz.Posterior:
    """``post`` dressed as a gated HMC reference of the data it was fitted on."""
    num = post.num_draws
    ess = np.full((10, 1), float(num))
    diagnostics = {**post.diagnostics, "rhat_predictive": np.ones((10, 1)),
                   "ess_bulk_predictive": ess, "ess_tail_predictive": ess, "rhat_lp": 1.0,
                   "ess_bulk_lp": float(num), "ess_tail_lp": float(num), "num_divergent": 0}
    return dataclasses.replace(post, method="hmc", sample_shape=(4, num // 4),
                               diagnostics=diagnostics)


def test_conformal_mondrian_without_conformal_is_an_error(tiny):
    with pytest.raises(uz.InvalidInputError, match="conformal_mondrian needs conformal=LEVEL"):
        uz.compare(tiny, ["laplace"], conformal_mondrian=True, progress_bar=False)
    with pytest.raises(uz.InvalidInputError, match="conformal_score needs conformal=LEVEL"):
        uz.compare(tiny, ["laplace"], conformal_score="aps", progress_bar=False)


def test_every_fit_records_its_training_fingerprint_and_fidelity_checks_it(tiny, tmp_path):
    post = uz.fit("ensemble", uz.MLPSpec(tiny.n_features, 2, hidden=(3,)), tiny, seed=0,
                  num_members=4, num_epochs=20, progress_bar=False)
    assert post.diagnostics["data_fingerprint"] == data_fingerprint(tiny)
    post.save(tmp_path / "post.nc")
    loaded = uz.load_posterior(tmp_path / "post.nc")
    assert loaded.diagnostics["data_fingerprint"] == data_fingerprint(tiny)
    other = uz.datasets.load("sim-teacher", n_train=60, n_test=30, seed=1)
    other_post = uz.fit("ensemble", uz.MLPSpec(other.n_features, 2, hidden=(3,)), other,
                        seed=0, num_members=4, num_epochs=20, progress_bar=False)
    reference = _reference_of(other_post)
    assert uz.fidelity(other_post, reference, other.X_test, data=other,
                       require_gate=False) is not None
    for scored in (post, loaded):
        with pytest.raises(uz.InvalidInputError, match=r"posterior was fitted on other "
                                                       r"training data .* fit the ensemble "
                                                       r"posterior on the reference's data"):
            uz.fidelity(scored, reference, other.X_test, require_gate=False)
    # a file from before fingerprints still loads, and is scored as it is
    old = dataclasses.replace(post, diagnostics={k: v for k, v in post.diagnostics.items()
                                                 if k != "data_fingerprint"})
    old.save(tmp_path / "old.nc")
    assert "data_fingerprint" not in uz.load_posterior(tmp_path / "old.nc").diagnostics
    assert uz.fidelity(old, reference, other.X_test, require_gate=False) is not None


def test_fidelity_require_gate_must_be_a_bool(tiny):
    post = uz.fit("ensemble", uz.MLPSpec(tiny.n_features, 2, hidden=(3,)), tiny, seed=0,
                  num_members=4, num_epochs=20, progress_bar=False)
    with pytest.raises(uz.InvalidTypeError, match="require_gate must be True or False, "
                                                  "got 'no'"):
        uz.fidelity(post, _reference_of(post), tiny.X_test, require_gate="no")


# -- interrupts ---------------------------------------------------------------------------------

def test_study_status_says_interrupted_for_a_run_stopped_by_ctrl_c(tmp_path, capsys,
                                                                   monkeypatch):
    from uqzoo.study import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield                                        # a generator, as the executors are

    monkeypatch.setattr(runner, "_run_local", interrupted)
    store = tmp_path / "s.sqlite"
    assert main(["study", "run", str(SMALL_STUDY), "--store", str(store), "--workers", "1",
                 "--no-progress"]) == 130
    assert capsys.readouterr().err == "uqzoo: interrupted\n"
    assert main(["study", "status", str(store)]) == 0
    out = capsys.readouterr().out
    assert "interrupted (stopped before its tasks ended" in out and "finished" not in out


_TINY_COMPARE = ["compare", "--methods", "laplace,mfvi", "--data-option", "n_train=60",
                 "--data-option", "n_test=40", "--set", "laplace.num_epochs=30",
                 "--set", "laplace.num_samples=10", "--set", "mfvi.num_steps=50",
                 "--num-draws", "10", "--no-progress"]


@pytest.mark.parametrize("signals", [(signal.SIGINT, signal.SIGINT),
                                     (signal.SIGTERM, signal.SIGINT)])
def test_two_signals_during_compare_out_exit_cleanly_and_leave_no_temporary(tmp_path,
                                                                            signals):
    # Signals arrive while the outputs are written (the legend is printed just
    # before); the second one once tore XLA's threads down mid-shutdown (exit 139).
    out = tmp_path / "results"
    child = subprocess.Popen([sys.executable, "-m", "uqzoo.cli", *_TINY_COMPARE,
                              "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        for line in child.stdout:
            if line.startswith("S (num_draws)"):
                break
        for sig in signals:
            child.send_signal(sig)
            time.sleep(0.05)
        _, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    expected = 130 if signals[0] == signal.SIGINT else 143
    if child.returncode == 0:            # it finished writing before the first signal
        pytest.skip("the run ended before the signals arrived")
    assert child.returncode == expected, stderr[-3000:]
    assert stderr.splitlines()[-1:] == ["uqzoo: interrupted"], stderr[-3000:]
    assert "Traceback" not in stderr and "Segmentation" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- bounded work ---------------------------------------------------------------------------------

def test_compare_refuses_a_prediction_past_its_bound_naming_num_draws(capsys, monkeypatch):
    import importlib
    monkeypatch.setattr(uz.methods, "fit", _must_not_fit)
    # 2**20 draws × 5,000 points × (181 + 60): the probe's run of more than 5 minutes
    assert main(["compare", "--methods", "laplace", "--num-draws", "1048576",
                 "--data-option", "n_test=5000", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lower num_draws (--num-draws)" in err, err
    assert "1,048,576 draws × 5,000 test points" in err
    compare_module = importlib.import_module("uqzoo.comparison.compare")
    spec = uz.MLPSpec(5, 2)
    assert compare_module._prediction_work({}, 1000, 5000, spec) < \
        uz._limits.LONG_PREDICTION_WORK   # a default run shows no prediction bar


def _must_not_fit(*args, **kwargs):
    raise AssertionError("a fit started although the prediction was refused")


# -- messages -------------------------------------------------------------------------------------

def test_an_all_full_conformal_set_says_why_in_the_verdict_and_the_report(tmp_path):
    # Mondrian calibration on 3 to 7 points per class: every level-0.9 set holds all 3 labels
    data = uz.datasets.load("sim-teacher", n_train=75, n_test=60, n_classes=3, seed=0)
    assert data.n_classes == 3
    result = uz.compare(data, ["laplace"], conformal=0.9, conformal_mondrian=True,
                        configs={"laplace": {"num_epochs": 30, "num_samples": 20}},
                        progress_bar=False)
    rule = result.conformal["rules"]["laplace"]
    assert rule.full_set_classes == (0, 1, 2)
    text = " ".join(uz.report.verdict(result).sentences)
    counts = ", ".join(f"{k}: {int(n)}" for k, n in enumerate(rule.class_counts))
    assert max(rule.class_counts) < 9
    assert (f"every set holds all labels: too few calibration points per class ({counts}) "
            "for a finite threshold at level 0.9, which needs at least 9 per class") in text, \
        text
    page = uz.write_report(result, tmp_path / "report.html", data=data).read_text()
    assert "every set holds all labels: too few calibration points per class" in page
