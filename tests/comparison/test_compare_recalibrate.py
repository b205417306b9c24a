"""compare(recalibrate=...): recalibrated rows beside the originals, the config key and the flag.

Issue 15: "the report can show whether recalibration fixes a method's ECE and
what it does to its interval coverage". Every recalibrated number is checked
against ``uz.evaluate(uz.recalibrate(...))`` computed on its own, with the
calibration points held out as :func:`uz.calibration_split` holds them out.
"""

from __future__ import annotations

import html.parser
import importlib

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from _stand_ins import stand_in_fit
from uqzoo import methods as method_registry
from uqzoo.cli import main
from uqzoo.comparison.config import CompareConfig, read_config
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.recalibrate import DEFAULT_CALIBRATION_FRACTION

compare_module = importlib.import_module("uqzoo.comparison.compare")

LEVELS = (0.8, 0.95)
TINY_SCENE = ["--dataset", "hsi-sim", "--data-option", "size=24", "--data-option", "n_bands=8"]
SMALL_TABLE = ["--dataset", "sim-teacher", "--data-option", "n_train=200",
               "--data-option", "n_test=300"]
@pytest.fixture
def stand_ins(monkeypatch):
    """Stand-in fits; records the training data every fit saw."""
    seen: list = []

    def fit(name, spec, data, **kwargs):
        seen.append((name, data))
        return stand_in_fit(name, spec, data, **kwargs)
    monkeypatch.setattr(method_registry, "fit", fit)
    return seen


def _independent(post, data, method, seed=0, levels=LEVELS):
    """uz.evaluate of uz.recalibrate, the calibration points held out by calibration_split."""
    _, calibration = uz.calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=seed)
    recalibrated = uz.recalibrate(post, method=method, seed=seed, calibration=calibration)
    return recalibrated, uz.evaluate(recalibrated, data, levels=levels)


# -- uz.compare ---------------------------------------------------------------------------

def test_recalibrated_rows_equal_an_independent_recalibration_of_a_real_fit():
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=300, seed=0)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(5,))
    result = uz.compare(data, ["laplace"], model=spec, levels=LEVELS, num_draws=40,
                        configs={"laplace": {"num_epochs": 60}}, recalibrate="temperature",
                        progress_bar=False)
    table = result.table
    assert list(table.index) == ["laplace", "laplace+temperature"]
    assert list(table["kind"]) == ["posterior", "recalibrated"]
    assert list(result.reports) == list(result.posteriors) == list(table.index)
    original = result.posteriors["laplace"]
    assert original.logit_transform is None
    recalibrated, report = _independent(original, data, "temperature")
    d = report.to_dict()
    for column in ("ece", "nll", "brier", "accuracy", "coverage@0.8", "coverage@0.95",
                   "interval_width@0.8", "interval_width@0.95"):
        assert table.loc["laplace+temperature", column] == pytest.approx(d[column], rel=1e-12,
                                                                         abs=1e-15), column
    kept = result.posteriors["laplace+temperature"].logit_transform
    assert kept.temperature == pytest.approx(recalibrated.logit_transform.temperature,
                                             rel=1e-12)
    record = result.recalibration
    fit_data, (X_cal, _) = uz.calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=0)
    assert (record["method"], record["seed"]) == ("temperature", 0)
    assert (record["n_calibration"], record["n_fit"]) == (X_cal.shape[0], fit_data.n_train)
    row = record["rows"]["laplace+temperature"]
    assert row["of"] == "laplace" and row["temperature"] == kept.temperature
    assert row["converged"] is True and row["nll_after"] <= row["nll_before"]


def test_every_fit_and_detector_trains_without_the_calibration_points(stand_ins, monkeypatch):
    from uqzoo import detectors

    data = uz.datasets.load("hsi-sim", size=24, n_bands=8, seed=0, progress_bar=False)
    fit_detector = detectors.fit_detector
    detector_rows: list[int] = []

    def recording_detector(name, X, y, **kwargs):
        detector_rows.append(X.shape[0])
        return fit_detector(name, X, y, **kwargs)
    monkeypatch.setattr(detectors, "fit_detector", recording_detector)
    result = uz.compare(data, ["laplace", "ensemble"], levels=(0.8,), seed=3,
                        recalibrate="temperature", target_prior=[0.7, 0.3],
                        progress_bar=False)
    fit_data, _ = uz.calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=3)
    assert [name for name, _ in stand_ins] == ["laplace", "ensemble"]
    for _, seen in stand_ins:
        np.testing.assert_array_equal(seen.X_train, fit_data.X_train)
        np.testing.assert_array_equal(seen.y_train, fit_data.y_train)
        np.testing.assert_array_equal(seen.X_test, data.X_test)
    assert detector_rows == [fit_data.n_train] * len(detectors.names())
    assert list(result.table.index[:4]) == ["laplace", "laplace+temperature", "ensemble",
                                            "ensemble+temperature"]
    assert list(result.table["kind"]) == ["posterior", "recalibrated"] * 2 + \
        ["detector"] * len(detectors.names())
    # the target prior is applied after the recalibration, on top of it
    transform = result.posteriors["laplace+temperature"].logit_transform
    assert transform.info["method"] == "prior_shift"
    assert transform.info["after"]["kind"] == "temperature"
    T = result.recalibration["rows"]["laplace+temperature"]["temperature"]
    np.testing.assert_allclose(transform.scale, [1 / T], rtol=1e-12)


def test_vector_scaling_rows_and_the_verdict_says_what_recalibration_did(stand_ins, tmp_path):
    data = uz.datasets.load("sim-teacher", p=3, n_classes=3, n_train=300, n_test=300, seed=0,
                            teacher_seed=3)      # classes 11, 38, 11 in the calibration split
    result = uz.compare(data, ["laplace", "ensemble"], levels=LEVELS, recalibrate="vector",
                        progress_bar=False)
    table = result.table
    assert list(table.index) == ["laplace", "laplace+vector", "ensemble", "ensemble+vector"]
    for name in ("laplace", "ensemble"):
        fitted, report = _independent(result.posteriors[name], data, "vector")
        assert table.loc[f"{name}+vector", "ece"] == pytest.approx(report.to_dict()["ece"],
                                                                   rel=1e-12, abs=1e-15)
        row = result.recalibration["rows"][f"{name}+vector"]
        assert row["temperature"] is None
        np.testing.assert_allclose(row["scale"], fitted.logit_transform.scale, rtol=1e-10)
    judged = uz.report.verdict(result)
    lowers = {n: bool(table.loc[f"{n}+vector", "ece"] < table.loc[n, "ece"])
              for n in ("laplace", "ensemble")}
    assert dict(judged.recalibration_lowers_ece) == lowers
    for name in ("laplace", "ensemble"):
        before, after = table.loc[name], table.loc[f"{name}+vector"]
        sentence = next(s for s in judged.sentences if s.startswith("Vector scaling (w = ")
                        and f" the ECE of {name}: " in s)
        verb = "lowers" if lowers[name] else "does not lower"
        assert f"{verb} the ECE of {name}: {before['ece']:.3g} → {after['ece']:.3g}" in sentence
        # coverage of the true probability at each level, and whether it moved to nominal
        for level in LEVELS:
            a, b = before[f"coverage@{level:g}"], after[f"coverage@{level:g}"]
            toward = "closer to" if abs(b - level) < abs(a - level) else "further from"
            assert f"at {level:g} {a:.3f} → {b:.3f} ({toward} nominal)" in sentence
    # the report sets each recalibrated row beside its original, with these numbers
    text = uz.write_report(result, tmp_path / "report.html", data=data).read_text()
    columns = ["ece", "coverage@0.8", "interval_width@0.8", "coverage@0.95",
               "interval_width@0.95", "nll"]
    want = [(name, f"{name}+vector", column) for name in ("laplace", "ensemble")
            for column in columns]
    cells = _recalibration_cells(text)
    assert [(m, r, key) for m, r, key, _, _ in cells] == want
    for original, recalibrated, key, before, after in cells:
        assert float(before) == table.loc[original, key]
        assert float(after) == table.loc[recalibrated, key]
    assert "20% of each class, seed 0" in text and 'id="recalibration"' in text


def test_without_true_probabilities_the_verdict_gives_widths_instead_of_coverage():
    table = pd.DataFrame({"kind": ["posterior", "recalibrated", "detector"],
                          "ece": [0.08, 0.03, np.nan],
                          "interval_width@0.8": [0.10, 0.25, np.nan]},
                         index=pd.Index(["mfvi", "mfvi+temperature", "rx"], name="method"))
    judged = uz.report.verdict(table)
    assert dict(judged.recalibration_lowers_ece) == {"mfvi": True}
    assert judged.sentences[-1] == (
        "Temperature scaling lowers the ECE of mfvi: 0.08 → 0.03 (mfvi+temperature); "
        "coverage is not known (no true probabilities), interval width at 0.8 0.100 → "
        "0.250.")


def _recalibration_cells(text: str) -> list[tuple[str, str, str, str, str]]:
    """(original, recalibrated, key, data-before, data-after) of the recalibration table."""
    cells: list[tuple[str, str, str, str, str]] = []

    class Parser(html.parser.HTMLParser):
        row: tuple[str, str] | None = None

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "tr" and "data-recalibrated" in a:
                self.row = (a["data-method"], a["data-recalibrated"])
            elif tag == "td" and self.row is not None and "data-before" in a:
                cells.append((*self.row, a["data-key"], a["data-before"], a["data-after"]))

        def handle_endtag(self, tag):
            if tag == "tr":
                self.row = None
    Parser().feed(text)
    return cells


@pytest.mark.parametrize("value", ["platt", "Temperature", 1, ""])
def test_a_bad_recalibrate_is_refused_before_any_fit(monkeypatch, value):
    monkeypatch.setattr(method_registry, "fit",
                        lambda *a, **k: pytest.fail("fitted before recalibrate was checked"))
    data = uz.datasets.load("iris", seed=0)
    with pytest.raises(InvalidInputError, match=r"recalibrate must be one of temperature, "
                                                r"vector \(uz.recalibrate\), or None for no "):
        uz.compare(data, ["laplace"], recalibrate=value, progress_bar=False)


# -- config files and the command line ----------------------------------------------------

def test_the_config_key_reads_writes_back_and_refuses_bad_values(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[compare]\nmethods = ["laplace"]\nrecalibrate = "vector"\n'
                    '[data]\ndataset = "iris"\n')
    config = read_config(path)
    assert config.recalibrate == "vector"
    resolved = config.resolved()
    text = resolved.to_toml()
    assert 'recalibrate = "vector"' in text
    (tmp_path / "config.toml").write_text(text)
    assert read_config(tmp_path / "config.toml") == resolved
    # left out, or "none": no recalibration, and none written
    assert CompareConfig().recalibrate is None
    assert "recalibrate" not in CompareConfig().to_toml()
    path.write_text('[compare]\nrecalibrate = "none"\n')
    assert read_config(path).recalibrate is None
    for body, error, needle in [
            ('recalibrate = "platt"', InvalidInputError,
             "run.toml: compare.recalibrate: must be one of temperature, vector"),
            ("recalibrate = 3", InvalidTypeError,
             "run.toml: compare.recalibrate: must be a string")]:
        path.write_text(f"[compare]\n{body}\n")
        with pytest.raises(error) as caught:
            read_config(path)
        assert needle in str(caught.value)


def test_cli_recalibrate_with_shift_writes_a_report_and_a_config_that_repeats_it(
        tmp_path, capsys, stand_ins, monkeypatch):
    """The issue's command line (illumination, ten copies; tabular data, where the report
    has no maps to draw: tests/test_report_shift.py reports on hsi-sim), recalibrated too."""
    out = tmp_path / "run"
    assert main(["compare", *SMALL_TABLE, "--methods", "laplace", "--levels", "0.8",
                 "--perturb", "illumination:0.8-1.2", "--copies", "10",
                 "--recalibrate", "temperature", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "recalibrated rows (METHOD+temperature): temperature scaling fitted on 40 " \
           "training points held out; every method trained on the other 160." in printed
    results = pd.read_csv(out / "results.csv", index_col="method")
    assert list(results.index) == ["laplace", "laplace+temperature"]
    assert (out / "laplace+temperature.nc").is_file()
    config = read_config(out / "config.toml")
    assert config.recalibrate == "temperature"
    assert config.perturb == ("illumination:0.8-1.2",) and config.copies == 10
    page = (out / "report.html").read_text(encoding="utf-8")
    for section in ('id="recalibration"', 'id="shift"', 'id="shift-table-illumination-0-8-1-2"',
                    'id="shift-ece"', "Temperature scaling (T = "):
        assert section in page, section
    assert "10 copies" in page
    # the config file repeats the run, recalibration included (run here without the
    # copies: the options it asks for are what counts)
    asked: dict = {}
    compare = compare_module.compare

    def recording_compare(data, methods, **kwargs):
        asked.update(kwargs, methods=methods)
        return compare(data, methods, **{**kwargs, "perturbations": None})
    monkeypatch.setattr(compare_module, "compare", recording_compare)
    assert main(["compare", "--config", str(out / "config.toml"), "--no-progress"]) == 0
    assert asked["recalibrate"] == "temperature" and asked["methods"] == ["laplace"]
    assert (asked["perturbations"], asked["copies"]) == (["illumination:0.8-1.2"], 10)
    again = capsys.readouterr().out
    assert "laplace+temperature" in again and "recalibrated rows (METHOD+temperature)" in again


def test_cli_bad_recalibrate_exits_2_in_one_line_before_any_work(tmp_path, capsys,
                                                                 monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("work started before --recalibrate was checked")
    monkeypatch.setattr(uz.datasets, "load", must_not_run)
    monkeypatch.setattr(method_registry, "fit", must_not_run)
    assert main(["compare", *TINY_SCENE, "--no-progress", "--recalibrate", "platt"]) == 2
    err = capsys.readouterr().err
    assert err == ("uqzoo: error: --recalibrate must be one of temperature, vector "
                   "(uz.recalibrate), got 'platt'\n")
    path = tmp_path / "run.toml"
    path.write_text('[compare]\nrecalibrate = "platt"\n')
    assert main(["compare", "--config", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error: ") and err.count("\n") == 1
    assert "run.toml: compare.recalibrate: must be one of temperature, vector" in err
    # the flag and a config file do not mix, like every other setting
    path.write_text("[compare]\n")
    assert main(["compare", "--config", str(path), "--recalibrate", "vector"]) == 2
    assert "--recalibrate cannot be combined with --config" in capsys.readouterr().err
