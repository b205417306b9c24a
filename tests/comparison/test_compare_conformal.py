"""compare(conformal=...): split-conformal sets beside every method's own, in the table, the
verdict, the report, the config file and the CLI (issue 23).

Fits are stand-ins (tests/_stand_ins.py): conformal calibration is post-hoc on the
posterior-mean predictive, so what is checked here is the plumbing -- the split,
the rule of every row, the columns, the words -- against ``uz.conformal`` run on
its own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from _stand_ins import stand_in_fit
from uqzoo import methods as method_registry
from uqzoo.cli import main
from uqzoo.comparison.config import read_config
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.recalibrate import DEFAULT_CALIBRATION_FRACTION

SMALL = ["--dataset", "gaussian-mixture", "--data-option", "n_train=300",
         "--data-option", "n_test=400"]


@pytest.fixture
def stand_ins(monkeypatch):
    seen: list = []

    def fit(name, spec, data, **kwargs):
        seen.append((name, data))
        return stand_in_fit(name, spec, data, **kwargs)
    monkeypatch.setattr(method_registry, "fit", fit)
    return seen


@pytest.fixture(scope="module")
def data():
    return uz.datasets.load("gaussian-mixture", n_train=400, n_test=600, seed=1)


def test_conformal_columns_equal_uz_conformal_on_its_own(stand_ins, data):
    result = uz.compare(data, ["laplace", "ensemble"], levels=(0.8,), conformal=0.9,
                        recalibrate="temperature", progress_bar=False)
    fit_data, calibration = uz.calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=0)
    assert all(seen.n_train == fit_data.n_train for _, seen in stand_ins)   # one split for all
    record = result.conformal
    assert record is not None
    assert (record["level"], record["score"], record["mondrian"]) == (0.9, "lac", False)
    assert (record["n_calibration"], record["n_fit"]) == (calibration[0].shape[0],
                                                          fit_data.n_train)
    assert set(record["rules"]) == set(result.table.index)      # recalibrated rows too
    for name in ("laplace", "ensemble+temperature"):
        post = result.posteriors[name]
        rule = uz.conformal.conformalize(post, calibration=calibration, alpha=0.1)
        np.testing.assert_array_equal(rule.thresholds, record["rules"][name].thresholds)
        alone = uz.evaluate(post, data, levels=(0.8,), conformal=rule).to_dict()
        for column in ("conformal_coverage", "conformal_set_size", "conformal_worst_decile",
                       "plain_set_coverage", "plain_worst_decile",
                       "conformal_hcs_missed_rate"):
            assert result.table.loc[name, column] == pytest.approx(alone[column]), column
    judged = uz.report.verdict(result)
    said = [s for s in judged.sentences if "label-set coverage" in s or "label sets" in s]
    assert len(said) == len(result.table)
    assert all("mean set size" in s and "worst-decile conditional coverage" in s for s in said)
    # the conformal HCS beside the credible-interval HCS, at each credible level
    from uqzoo.comparison.verdict import credible_missed_rates

    report = result.reports["laplace"]
    [(level, rate)] = credible_missed_rates(report)
    targets = report.y == 1
    assert level == 0.8
    assert rate == pytest.approx(report.hcs_negative[0][targets, 0].mean())
    about_laplace = next(s for s in said if "of laplace at level" in s
                         or s.startswith("laplace's own"))
    assert f"its credible-interval HCS {rate:.1%} at 0.8" in about_laplace
    assert all("its credible-interval HCS" in s for s in said)


def test_the_verdict_says_when_conformalization_fixes_coverage(stand_ins, data):
    # the ensemble stand-in (C = 0.05) is shrunk towards 0.5 and over-covers; the laplace
    # stand-in is a plain logistic regression
    result = uz.compare(data, ["laplace", "ensemble"], levels=(0.8,), conformal=0.95,
                        progress_bar=False)
    judged = uz.report.verdict(result)
    for name, fixed in judged.conformal_fixes.items():
        own = result.reports[name].conformal.plain
        assert own.coverage_interval[1] < 0.95
        assert fixed == (result.reports[name].conformal.conformal.coverage_interval[1] >= 0.95)
    page = uz.report.render_report(result, data=data)
    assert 'id="conformal"' in page and 'id="conformal-table"' in page
    assert "Conformal label sets" in page and "worst 10 %" in page
    assert 'id="conditional-coverage-plot"' in page and "credible HCS missed 0.8" in page
    fig = uz.plots.conditional_coverage_plot(result.reports)
    assert len(fig.axes) == 1


@pytest.mark.parametrize("value, error, needle", [
    (1.5, InvalidInputError, r"conformal must be a level in \(0, 1\) such as 0.9 .*, got 1.5"),
    (0.0, InvalidInputError, r"conformal must be a level in \(0, 1\) .*, got 0.0"),
    ("0.9", InvalidTypeError, r"conformal must be a level in \(0, 1\) .*, got '0.9'"),
    (True, InvalidTypeError, r"conformal must be a level in \(0, 1\) .*, got True"),
])
def test_a_bad_conformal_is_refused_before_any_fit(monkeypatch, data, value, error, needle):
    monkeypatch.setattr(method_registry, "fit",
                        lambda *a, **k: pytest.fail("fitted before conformal was checked"))
    with pytest.raises(error, match=needle):
        uz.compare(data, ["laplace"], conformal=value, progress_bar=False)
    with pytest.raises(InvalidInputError, match="conformal_score"):
        uz.compare(data, ["laplace"], conformal=0.9, conformal_score="raps",
                   progress_bar=False)


def test_the_config_keys_read_and_write_back(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[compare]\nconformal = 0.9\nconformal_score = "aps"\n'
                    "conformal_mondrian = true\n")
    config = read_config(path)
    assert (config.conformal, config.conformal_score, config.conformal_mondrian) == \
        (0.9, "aps", True)
    assert config.to_dict()["compare"]["conformal"] == 0.9
    for text, needle in (("conformal = 1.2", "must be a level in (0, 1)"),
                         ('conformal = 0.9\nconformal_score = "x"', "must be one of lac, aps"),
                         ('conformal_score = "aps"', "conformal_score: needs conformal = LEVEL")):
        path.write_text(f"[compare]\n{text}\n")
        with pytest.raises(InvalidInputError, match=needle.replace("(", r"\(").replace(")",
                                                                                       r"\)")):
            read_config(path)


def test_cli_conformal_writes_columns_and_a_config_that_repeats_it(tmp_path, capsys,
                                                                    stand_ins):
    out = tmp_path / "run"
    assert main(["compare", *SMALL, "--methods", "laplace", "--levels", "0.8",
                 "--conformal", "0.9", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "conformal columns: split-conformal LAC label sets at level 0.9" in printed
    results = pd.read_csv(out / "results.csv", index_col="method")
    assert "conformal_coverage" in results.columns
    assert read_config(out / "config.toml").conformal == 0.9
    assert 'id="conformal"' in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("flags, needle", [
    (["--conformal", "90%"], "--conformal must be a level in (0, 1) such as 0.9"),
    (["--conformal", "1"], "--conformal must be a level in (0, 1) such as 0.9"),
    (["--conformal", "0.9", "--conformal-score", "raps"],
     "--conformal-score must be one of lac, aps"),
    (["--conformal-mondrian"], "--conformal-mondrian needs --conformal LEVEL"),
])
def test_cli_bad_conformal_exits_2_in_one_line_before_any_work(capsys, monkeypatch, flags,
                                                               needle):
    def must_not_run(*args, **kwargs):
        raise AssertionError("work started before --conformal was checked")
    monkeypatch.setattr(uz.datasets, "load", must_not_run)
    monkeypatch.setattr(method_registry, "fit", must_not_run)
    assert main(["compare", *SMALL, "--no-progress", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error: ") and err.count("\n") == 1 and needle in err
