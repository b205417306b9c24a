"""Evaluation under shift: uz.evaluate / uz.compare with perturbations, and its figure (issue 15).

Posteriors here are fixed parameter draws (no fit), so every number is
checked against per-copy evaluations computed by hand from the same copies.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo import methods as method_registry
from uqzoo import shift as under_shift
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.posterior import Posterior

LEVELS = (0.8,)


def fixed_posterior(data, seed, scale=1.0, method="laplace"):
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(4,))
    draws = {k: scale * v for k, v in spec.init_params(seed=seed, num=40).items()}
    return Posterior(spec=spec, method=method, config={}, seed=seed, draws=draws)


@pytest.fixture(scope="module")
def data():
    return uz.datasets.load("gaussian-mixture", p=3, n_train=60, n_test=300, seed=0)


@pytest.fixture(scope="module")
def post(data):
    return fixed_posterior(data, seed=1)


def by_hand(post, copies):
    """Per-copy evaluations: the table values and the headline dict of each copy."""
    reports = [uz.evaluate(post, d, levels=LEVELS) for d in copies]
    return reports


def test_shift_mean_and_sd_are_those_of_the_per_copy_evaluations(data, post):
    report = uz.evaluate(post, data, levels=LEVELS, copies=3, seed=5,
                         perturbations=["gaussian_noise:0.2-0.6", ("illumination", (0.5, 1.5))])
    clean = uz.evaluate(post, data, levels=LEVELS)
    pd.testing.assert_frame_equal(report.table, clean.table)
    shift = report.shift
    assert list(shift.columns) == under_shift.SHIFT_COLUMNS
    assert list(dict.fromkeys(shift.perturbation)) == ["gaussian_noise:0.2-0.6",
                                                       "illumination:0.5-1.5"]
    for label, family, magnitude in [("gaussian_noise:0.2-0.6", "gaussian_noise", (0.2, 0.6)),
                                     ("illumination:0.5-1.5", "illumination", (0.5, 1.5))]:
        copies = uz.perturb.copies(data, family, k=3, seed=5, magnitude=magnitude)
        reports = by_hand(post, copies)
        rows = shift[shift.perturbation == label]
        # one row per clean row, same order, the clean value beside it
        assert len(rows) == len(clean.table)
        np.testing.assert_array_equal(rows.clean.to_numpy(), clean.table.value.to_numpy())
        values = np.stack([r.table.value.to_numpy() for r in reports])      # (K, rows)
        finite = np.isfinite(values)
        k = finite.sum(axis=0)
        np.testing.assert_array_equal(rows.k.to_numpy(), k)
        # mean and sample sd (ddof=1) over the copies that computed the row
        want_mean = np.array([v[f].mean() if f.any() else np.nan
                              for v, f in zip(values.T, finite.T, strict=True)])
        want_sd = np.array([v[f].std(ddof=1) if f.sum() > 1 else np.nan
                            for v, f in zip(values.T, finite.T, strict=True)])
        # the same floats reduced the same way: equal to rounding of the last bit
        np.testing.assert_allclose(rows["mean"].to_numpy(), want_mean, rtol=1e-14, atol=0)
        np.testing.assert_allclose(rows.sd.to_numpy(), want_sd, rtol=1e-12, atol=0)
        # the magnitudes of the copies are recorded
        per_copy = report.shift_copies[(report.shift_copies.perturbation == label)
                                       & (report.shift_copies.key == "ece")]
        np.testing.assert_array_equal(per_copy.magnitude.to_numpy(), copies.magnitudes)
        # headline numbers in to_dict, keyed by perturbation when there are several
        d = report.to_dict()
        eces = [r.to_dict()["ece"] for r in reports]
        assert d[f"ece_shift_mean[{label}]"] == pytest.approx(np.mean(eces), rel=1e-14)
        assert d[f"ece_shift_sd[{label}]"] == pytest.approx(np.std(eces, ddof=1), rel=1e-12)
        covs = [r.to_dict()["coverage@0.8"] for r in reports]
        assert d[f"coverage@0.8_shift_mean[{label}]"] == pytest.approx(np.mean(covs),
                                                                       rel=1e-14)
    text = report.summary()
    assert "under gaussian_noise:0.2-0.6 (3 copies, p_true recomputed)" in text
    assert "under illumination:0.5-1.5 (3 copies, p_true unchanged)" in text


def test_one_perturbation_gives_plain_shift_keys_and_ready_copies_the_same_numbers(data,
                                                                                    post):
    copies = uz.perturb.copies(data, "offset", k=2, seed=3, magnitude=(-0.5, 0.5))
    made = uz.evaluate(post, data, levels=LEVELS, perturbations=["offset:-0.5-0.5"],
                       copies=2, seed=3)
    ready = uz.evaluate(post, data, levels=LEVELS, perturbations=[copies])
    pd.testing.assert_frame_equal(made.shift, ready.shift)
    d = made.to_dict()
    assert "ece_shift_mean" in d and "ece_shift_sd" in d and "accuracy_shift_mean" in d


def test_copies_without_a_truth_have_no_coverage_but_the_clean_value_stays():
    teacher = uz.datasets.load("sim-teacher", p=3, n_train=60, n_test=200)
    report = uz.evaluate(fixed_posterior(teacher, seed=2), teacher, levels=LEVELS,
                         perturbations=["noise"], copies=2)
    cov = report.shift[(report.shift.metric == "coverage") & report.shift["class"].isna()]
    assert cov.k.tolist() == [0] and math.isnan(cov["mean"].iloc[0])
    assert cov.clean.iloc[0] == report.value("coverage", 0.8)
    assert set(report.shift_copies.p_true) == {"unavailable"}
    assert "coverage@0.8_shift_mean" not in report.to_dict()


def test_one_copy_has_no_sd(data, post):
    report = uz.evaluate(post, data, levels=LEVELS, perturbations=["illumination"], copies=1)
    assert report.shift.k.max() == 1 and report.shift.sd.isna().all()


@pytest.mark.parametrize("call, error, message", [
    (lambda p, d: uz.evaluate(p.predict_proba_draws(d.X_test), d.y_test,
                              perturbations=["noise"]),
     InvalidInputError, r"perturbations need a fitted Posterior"),
    (lambda p, d: uz.evaluate(p, d, perturbations=["noise"], copies=0),
     InvalidInputError, r"copies must be >= 1, got 0"),
    (lambda p, d: uz.evaluate(p, d, perturbations=["noise"], copies=10**9),   # issue 25 item 3
     InvalidInputError, r"copies must be at most 1,000 .*got 1,000,000,000"),
    (lambda p, d: uz.evaluate(p, d, perturbations=["fog"]),
     InvalidInputError, r"perturbation family must be one of 'illumination'"),
    (lambda p, d: uz.evaluate(p, d, perturbations=["noise", "noise:20-40"]),
     InvalidInputError, r"must not repeat a perturbation.*noise:20-40"),
    (lambda p, d: uz.evaluate(p, d, perturbations=[]),
     InvalidInputError, r"at least one family"),
    (lambda p, d: uz.evaluate(p, d, perturbations=[3.5]),
     InvalidTypeError, r"perturbations\[0\] must be a family name"),
    (lambda p, d: uz.evaluate(p, d, perturbations=42),
     InvalidTypeError, r"perturbations must be a list of family names"),
    (lambda p, d: uz.evaluate(p, d, perturbations=[("illumination", (-1, 1))]),
     InvalidInputError, r"magnitude low of illumination \(gain\) must lie in \(0\.0, inf\]"),
    (lambda p, d: uz.evaluate(p, d, perturbations=[uz.perturb.copies(
        uz.datasets.load("gaussian-mixture", p=3, n_train=60, n_test=300, seed=1),
        "noise", k=1)]),
     InvalidInputError, r"perturbations\[0\] holds copies of other data"),
    (lambda p, d: uz.evaluate(p, d, perturbations=["noise"], seed=-2),
     InvalidInputError, r"seed must be an integer in \[0, 2\*\*63\)"),
])
def test_bad_shift_options_fail_before_any_work(data, post, call, error, message):
    with pytest.raises(error, match=message):
        call(post, data)


# -- compare ------------------------------------------------------------------------------

@pytest.fixture
def fake_fits(monkeypatch):
    """laplace and ensemble as fixed draws of different sharpness: fast, deterministic."""
    def fit(name, spec, data, seed=0, progress_bar=False, **config):
        scale = {"laplace": 0.5, "ensemble": 2.0}[name]
        return fixed_posterior(data, seed={"laplace": 1, "ensemble": 2}[name], scale=scale,
                               method=name)
    monkeypatch.setattr(method_registry, "fit", fit)


def test_compare_adds_shift_columns_from_the_same_copies_for_every_method(data, fake_fits):
    result = uz.compare(data, ["laplace", "ensemble"], levels=LEVELS, seed=4,
                        perturbations=["gaussian_noise:0.3-0.9"], copies=3,
                        progress_bar=False)
    table = result.table
    for col in ("ece_shift_mean", "ece_shift_sd", "coverage@0.8_shift_mean",
                "coverage@0.8_shift_sd", "accuracy_shift_mean"):
        assert col in table.columns
    # each shift column sits after the headline columns, in their order
    assert list(table.columns).index("coverage@0.8_shift_mean") < \
        list(table.columns).index("ece_shift_mean")
    copies = uz.perturb.copies(data, "gaussian_noise", k=3, seed=4, magnitude=(0.3, 0.9))
    for name in ("laplace", "ensemble"):
        report = result.reports[name]
        # every method saw the same copies
        ece_rows = report.shift_copies[report.shift_copies.key == "ece"]
        np.testing.assert_array_equal(ece_rows.magnitude.to_numpy(), copies.magnitudes)
        eces = [r.to_dict()["ece"] for r in by_hand(result.posteriors[name], copies)]
        assert table.loc[name, "ece_shift_mean"] == pytest.approx(np.mean(eces), rel=1e-14)
        assert table.loc[name, "ece_shift_sd"] == pytest.approx(np.std(eces, ddof=1),
                                                                rel=1e-12)
    assert list(result.shift.columns) == ["method", *under_shift.SHIFT_COLUMNS]
    assert set(result.shift.method) == {"laplace", "ensemble"}
    # rankings agree with the numbers they show; a sentence per changed ranking
    ranked = result.rankings
    for _, group in ranked.groupby(["perturbation", "metric"]):
        bad = {"higher": -1, "lower": 1}.get(group.criterion.iloc[0].split()[0], None)
        if bad is not None:
            assert list(group.sort_values("clean_rank").clean * bad) == \
                sorted(group.clean * bad)
            assert list(group.sort_values("shift_rank").shift_mean * bad) == \
                sorted(group.shift_mean * bad)
        assert group.changed.iloc[0] == (list(group.clean_rank) != list(group.shift_rank))
    n_changed = ranked.groupby(["perturbation", "metric"]).changed.first().sum()
    assert len(result.ranking_changes) == n_changed


def test_compare_without_perturbations_is_unchanged(data, fake_fits):
    result = uz.compare(data, ["laplace"], levels=LEVELS, progress_bar=False)
    assert result.shift is None and result.rankings is None and result.ranking_changes == ()
    assert not any("_shift_" in c for c in result.table.columns)


def test_compare_checks_perturbations_before_fitting(data, monkeypatch):
    def fit(*args, **kwargs):
        raise AssertionError("fitted before the perturbations were checked")
    monkeypatch.setattr(method_registry, "fit", fit)
    with pytest.raises(InvalidInputError, match=r"magnitude high \(missing_features"):
        uz.compare(data, ["laplace"], perturbations=["missing_features:0.1-0.99"],
                   progress_bar=False)


class _Stub:
    """What rankings reads from a report: to_dict, levels and shift_copies."""

    levels = (0.8,)

    def __init__(self, clean, shifted, failed=False):
        self._clean = {**clean, "failed": failed}
        self.shift_copies = pd.DataFrame(
            [dict(perturbation="noise:20-40", family="noise", copy=i, magnitude=30.0,
                  p_true="recomputed", key=key, value=v)
             for key, values in shifted.items() for i, v in enumerate(values)])

    def to_dict(self):
        return dict(self._clean)


def test_ranking_changes_are_plain_sentences_with_paired_copy_counts():
    reports = {
        "hmc": _Stub({"ece": 0.01, "coverage@0.8": 0.79},
                     {"ece": [0.05, 0.06, 0.04], "coverage@0.8": [0.7, 0.72, 0.71]}),
        "swag": _Stub({"ece": 0.02, "coverage@0.8": 0.5},
                      {"ece": [0.03, 0.07, 0.02], "coverage@0.8": [0.4, 0.45, 0.5]},
                      failed=True),
    }
    ranked, changes = under_shift.rankings(reports)
    assert len(changes) == 1                  # ECE swaps; coverage keeps hmc first
    sentence = changes[0]
    assert sentence.startswith("Under noise:20-40 (3 copies) the ranking by ece "
                               "(lower is better) changes")
    assert "clean, best first: hmc 0.01, swag [failed] 0.02" in sentence
    assert "shifted: swag [failed] 0.04 ± 0.026, hmc 0.05 ± 0.01" in sentence
    assert sentence.endswith("swag beats hmc in 2 of 3 copies.")
    cov = ranked[ranked.metric == "coverage@0.8"].set_index("method")
    assert cov.criterion.iloc[0] == "closest to 0.8 is best"
    assert (cov.loc["hmc", "clean_rank"], cov.loc["hmc", "shift_rank"]) == (1, 1)
    assert not cov.changed.any()


# -- the figure ---------------------------------------------------------------------------

def test_shift_errorbars_draws_clean_and_mean_pm_sd_per_method(data, post):
    other = fixed_posterior(data, seed=2, scale=2.0)
    reports = {name: uz.evaluate(p, data, levels=LEVELS, copies=3,
                                 perturbations=["illumination", "gaussian_noise"])
               for name, p in (("a", post), ("b", other))}
    fig = uz.plots.shift_errorbars(reports, "coverage@0.8")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    bars = list(ax.containers)                              # one ErrorbarContainer per dot
    assert len(bars) == 2 * 2
    for bar, (name, label) in zip(bars, [("a", "illumination:0.8-1.2"),
                                         ("a", "gaussian_noise:0.1-0.5"),
                                         ("b", "illumination:0.8-1.2"),
                                         ("b", "gaussian_noise:0.1-0.5")], strict=True):
        d = reports[name].to_dict()
        y = bar.lines[0].get_ydata()[0]
        assert y == pytest.approx(d[f"coverage@0.8_shift_mean[{label}]"])
        segment = bar.lines[2][0].get_segments()[0]          # the vertical bar
        assert segment[1][1] - segment[0][1] == pytest.approx(
            2 * d[f"coverage@0.8_shift_sd[{label}]"])
    clean_dots = [line for line in ax.lines
                  if line.get_color() == "black" and line.get_marker() == "o"]
    assert sorted(float(line.get_ydata()[0]) for line in clean_dots) == sorted(
        rep.to_dict()["coverage@0.8"] for rep in reports.values())
    assert any(line.get_linestyle() == "--" for line in ax.lines)      # the nominal level


def test_shift_errorbars_bad_input(data, post):
    clean = uz.evaluate(post, data, levels=LEVELS)
    with pytest.raises(InvalidInputError, match="was not evaluated under shift"):
        uz.plots.shift_errorbars({"a": clean})
    shifted = uz.evaluate(post, data, levels=LEVELS, perturbations=["offset"], copies=2)
    with pytest.raises(InvalidInputError, match=r"metric 'ece_shift_mean' is not a headline"):
        uz.plots.shift_errorbars({"a": shifted}, "ece_shift_mean")
    with pytest.raises(InvalidInputError, match=r"metric 'coverage@0.5' is not a headline"):
        uz.plots.shift_errorbars({"a": shifted}, "coverage@0.5")


# -- the command line and config files ----------------------------------------------------

TINY_SCENE = ["--dataset", "hsi-sim", "--data-option", "size=24", "--data-option", "n_bands=8"]


def test_cli_compare_under_shift_writes_the_shift_table_rankings_and_figures(
        tmp_path, capsys, fake_fits):
    from uqzoo.cli import main
    from uqzoo.comparison.config import read_config

    out = tmp_path / "run"
    assert main(["compare", *TINY_SCENE, "--methods", "laplace,ensemble", "--levels", "0.8",
                 "--perturb", "illumination:0.8-1.2", "--perturb", "noise:15-30",
                 "--copies", "2", "--no-progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "under illumination:0.8-1.2: mean ± sd over 2 copies" in text
    assert "p_true recomputed" in text           # noise on hsi-sim: the exact truth
    shift = pd.read_csv(out / "shift.csv")
    assert set(shift.perturbation) == {"illumination:0.8-1.2", "noise:15-30"}
    assert set(shift.method) == {"laplace", "ensemble"}
    assert {"perturbation", "metric", "method", "clean_rank", "shift_rank"} <= set(
        pd.read_csv(out / "rankings.csv").columns)
    for key in ("ece", "accuracy", "coverage@0.8", "detection_auroc"):
        assert (out / f"shift_{key}.png").is_file()
    results = pd.read_csv(out / "results.csv", index_col=0)
    assert "ece_shift_mean[noise:15-30]" in results.columns
    assert (out / "report.html").is_file()
    # the resolved config repeats the run under shift
    config = read_config(out / "config.toml")
    assert config.perturb == ("illumination:0.8-1.2", "noise:15-30") and config.copies == 2


@pytest.mark.parametrize("argv, needle", [
    (["--perturb", "illumination:abc"], "must be written FAMILY[:LOW-HIGH]"),
    (["--perturb", "fog"], "perturbation family must be one of 'illumination'"),
    (["--perturb", "illumination:-1-2"], "magnitude low of illumination (gain) must lie in"),
    (["--perturb", "noise", "--copies", "0"], "--copies must be >= 1, got 0"),
    (["--copies", "3"], "--copies needs --perturb"),
    (["--perturb", "noise", "--perturb", "noise:20-40"], "more than once"),
])
def test_cli_bad_perturb_options_exit_2_with_one_line_before_any_work(argv, needle, capsys,
                                                                      monkeypatch):
    from uqzoo.cli import main

    def must_not_run(*args, **kwargs):
        raise AssertionError("work started before the options were checked")
    monkeypatch.setattr(uz.datasets, "load", must_not_run)
    monkeypatch.setattr(method_registry, "fit", must_not_run)
    assert main(["compare", *TINY_SCENE, "--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("uqzoo: error:")
    assert needle in err


@pytest.mark.parametrize("body, needle", [
    ('perturb = ["fog"]', "compare.perturb[0]: perturbation family must be one of"),
    ('perturb = "noise"', "compare.perturb: must be an array of perturbations"),
    ("copies = 3", "compare.copies: needs perturb"),
    ('perturb = ["noise"]\ncopies = 0', "compare.copies: must be >= 1"),
    ('perturb = ["noise", "noise:20-40"]', "lists 'noise:20-40' twice"),
])
def test_config_file_perturb_errors_name_the_key(tmp_path, body, needle):
    from uqzoo.comparison.config import read_config

    path = tmp_path / "run.toml"
    path.write_text(f"[compare]\n{body}\n")
    with pytest.raises(InvalidInputError if "array" not in needle else InvalidTypeError) as info:
        read_config(path)
    assert "run.toml" in str(info.value) and needle in str(info.value)
