"""compare(reference=...): closeness to the exact posterior in a comparison (issue 21, item 3).

The fits are stand-ins (``tests/_stand_ins.py``): draws around a logistic
regression, so ``compare`` runs in a second. The "hmc" stand-in carries the
diagnostics of a run that passes the reference gate (or, with two chains,
one that does not), so the gate's outcome is chosen, not waited for. One
test marked slow runs a real, short HMC.
"""

from __future__ import annotations

import dataclasses
import html.parser
import importlib

import numpy as np
import pytest

import uqzoo as uz
from _stand_ins import stand_in_fit
from uqzoo import headline
from uqzoo import methods as method_registry
from uqzoo.cli import main
from uqzoo.comparison.config import CompareConfig, read_config
from uqzoo.comparison.report import render_report
from uqzoo.comparison.verdict import verdict
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.fidelity import METRICS as FIDELITY_METRICS
from uqzoo.reference import DIVERGENCE_RATE_MAX, data_fingerprint

compare_module = importlib.import_module("uqzoo.comparison.compare")
report_module = importlib.import_module("uqzoo.comparison.report")

FIDELITY_COLUMNS = [f"fidelity_{m}" for m in FIDELITY_METRICS]
SMALL = ["--dataset", "gaussian-mixture", "--data-option", "n_train=100", "--data-option",
         "n_test=60", "--data-option", "p=2"]
PERFECT = {f"fidelity_{m}": info.perfect for m, info in FIDELITY_METRICS.items()}


def _gated(chains: int) -> dict:
    """Diagnostics of an HMC run that passes the gate with 4 chains (fails with fewer)."""
    ess = np.full((10, 1), 1000.0)
    return {"rhat_predictive": np.ones((10, 1)), "ess_bulk_predictive": ess,
            "ess_tail_predictive": ess, "rhat_lp": 1.001, "ess_bulk_lp": 900.0,
            "ess_tail_lp": 950.0, "num_divergent": 0}


def hmc_stand_in(data, chains: int = 4, seed: int = 0):
    """An "hmc" posterior of ``data``: laplace's stand-in draws, as ``chains`` chains."""
    post = stand_in_fit("laplace", None, data, seed=seed)
    return dataclasses.replace(post, method="hmc", sample_shape=(chains, 40 // chains),
                               config={"num_warmup": 1000, "num_samples": 40,
                                       "target_accept": 0.8},
                               diagnostics={**post.diagnostics, **_gated(chains)})


def as_reference(post, data):
    """``post`` marked as uz.reference_posterior marks a reference of ``data``."""
    return dataclasses.replace(post, diagnostics={
        **post.diagnostics, "data_fingerprint": data_fingerprint(data),
        "reference_max_divergence_rate": DIVERGENCE_RATE_MAX})


@pytest.fixture
def stand_ins(monkeypatch):
    """Stand-in fits; "hmc" passes the gate unless ``stand_ins["chains"]`` is set below 4."""
    state = {"chains": 4}

    def fit(name, spec, data, seed=0, progress_bar=False, **config):
        if name == "hmc":
            return hmc_stand_in(data, state["chains"], seed)
        return stand_in_fit(name, spec, data, seed=seed)
    monkeypatch.setattr(method_registry, "fit", fit)
    # HMC's time estimate compiles a gradient: not needed for a stand-in
    monkeypatch.setattr(compare_module, "_say_long_fits", lambda *a, **k: None)
    return state


@pytest.fixture(scope="module")
def data():
    return uz.datasets.load("gaussian-mixture", p=2, n_train=100, n_test=60, seed=0)


@pytest.fixture(scope="module")
def no_truth(data):
    """The same data without known true probabilities (as on a real scene)."""
    return dataclasses.replace(data, p_true_test=None, name="unknown-truth")


def run(data, methods=("hmc", "ensemble"), **kwargs):
    # the stand-ins' network: a saved reference must be of the comparison's network
    kwargs.setdefault("model", uz.MLPSpec(data.n_features, data.n_classes, hidden=()))
    return uz.compare(data, list(methods), levels=(0.8,), progress_bar=False, **kwargs)


# -- the table ----------------------------------------------------------------------------

def test_headline_lists_every_fidelity_score_once():
    entries = [h.name for h in headline.HEADLINE if h.needs_reference]
    assert entries == FIDELITY_COLUMNS
    keys = [c.key for c in headline.columns(where="comparison", has_reference=False)]
    assert not set(keys) & set(FIDELITY_COLUMNS)


def test_reference_hmc_gives_fidelity_columns_and_hmc_is_exact_to_itself(stand_ins, data):
    result = run(data, reference="hmc")
    table = result.table
    assert [c for c in table.columns if c.startswith("fidelity_")] == FIDELITY_COLUMNS
    for column, perfect in PERFECT.items():          # the reference row: perfect, exactly
        assert table.loc["hmc", column] == perfect
    other = result.fidelity["ensemble"]
    assert other["wasserstein1"].value > 0 and other["total_variation"].value > 0
    for score in other.scores:                       # the table shows the Fidelity's values
        assert table.loc["ensemble", f"fidelity_{score.name}"] == score.value
    # the same numbers as uz.fidelity on its own, against the HMC fit as reference
    ref = as_reference(result.posteriors["hmc"], data)
    alone = uz.fidelity(result.posteriors["ensemble"], ref, data.X_test, data=data)
    assert alone["wasserstein1"].value == pytest.approx(other["wasserstein1"].value, rel=1e-6)
    reference = result.settings.reference
    assert (reference.source, reference.row, reference.passed) == ("hmc", "hmc", True)
    assert reference.n_points == data.n_test and reference.num_draws == 40
    assert reference.data_fingerprint == data_fingerprint(data)
    # with known truth the interval score still ranks, and hmc is ranked
    assert result.scores[0].metric == "interval_score"
    assert "hmc" in result.scores[0].methods
    assert any("passed the reference gate" in s and "the interval score ranks" in s
               for s in verdict(result).sentences)


def test_without_reference_no_fidelity_columns(stand_ins, data, no_other_figures):
    result = run(data, ["ensemble"])
    assert not [c for c in result.table.columns if c.startswith("fidelity_")]
    assert result.fidelity == {} and result.settings.reference is None
    assert 'id="closeness"' not in render_report(result)


# -- bad references -----------------------------------------------------------------------

def test_reference_of_other_data_is_refused_before_any_fit(stand_ins, data, tmp_path,
                                                            monkeypatch):
    other = uz.datasets.load("gaussian-mixture", p=2, n_train=100, n_test=60, seed=1)
    path = tmp_path / "other.nc"
    as_reference(hmc_stand_in(other), other).save(path)
    fitted = []
    monkeypatch.setattr(method_registry, "fit", lambda *a, **k: fitted.append(a) or None)
    with pytest.raises(InvalidInputError, match=r"reference='.*other\.nc' is refused: "
                                                r"reference belongs to other training data"):
        run(data, ["ensemble"], reference=path)
    with pytest.raises(InvalidInputError, match=r"reference='.*other\.nc' is refused"):
        run(data, ["ensemble"], reference=str(path))
    assert fitted == []


@pytest.mark.parametrize(("reference", "error", "fragment"), [
    ("missing.nc", InvalidInputError, r"reference='missing\.nc': no such file; allowed: 'auto', "
                                      r"None, 'hmc'"),
    (3, InvalidTypeError, r"reference must be 'auto', None, 'hmc' .* got 3"),
    ("hmc", InvalidInputError, r"reference='hmc' uses the comparison's own HMC fit, but "
                               r"methods are \['ensemble'\]"),
])
def test_bad_reference_names_the_argument_and_what_is_allowed(stand_ins, data, reference,
                                                              error, fragment):
    with pytest.raises(error, match=fragment):
        run(data, ["ensemble"], reference=reference)


def test_reference_of_another_network_is_refused(stand_ins, data):
    with pytest.raises(InvalidInputError, match=r"reference=a Posterior is refused: it is a "
                                                r"posterior of MLPSpec\(.*hidden=\(\)"):
        run(data, ["ensemble"], reference=as_reference(hmc_stand_in(data), data),
            model=uz.MLPSpec(data.n_features, 2, hidden=(4,)))


def test_an_ordinary_hmc_fit_is_no_saved_reference(stand_ins, data):
    with pytest.raises(InvalidInputError, match=r"reference=a Posterior is refused: .*no data "
                                                "fingerprint"):
        run(data, ["ensemble"], reference=hmc_stand_in(data))


def test_saved_reference_of_this_data_is_independent(stand_ins, data, tmp_path):
    path = tmp_path / "ref.nc"
    as_reference(hmc_stand_in(data), data).save(path)
    result = run(data, ["hmc", "ensemble"], reference=path)
    reference = result.settings.reference
    assert reference.source == str(path) and reference.row is None and reference.passed
    # the hmc row is scored like any other against an independent reference: here the
    # same stand-in draws, so exact
    assert result.table.loc["hmc", "fidelity_wasserstein1"] == 0.0


# -- gate, verdict and ranking ------------------------------------------------------------

def test_failed_gate_is_recorded_said_plainly_and_ranks_nothing(stand_ins, no_truth):
    stand_ins["chains"] = 2
    result = run(no_truth, reference="hmc")
    reference = result.settings.reference
    assert not reference.passed
    assert any("2 chain(s)" in m for m in reference.gate.messages)
    assert result.scores[0].metric == "nll"         # not ranked by closeness
    text = str(verdict(result))
    assert "did NOT pass the reference gate" in text and "nothing is ranked by them" in text
    page = render_report(result)
    assert "The reference did NOT pass its gate" in page
    assert 'data-passed="false"' in page


def test_verdict_ranks_by_fidelity_on_data_without_truth_when_the_gate_passed(stand_ins,
                                                                            no_truth):
    result = run(no_truth, ["hmc", "ensemble", "laplace"], reference="hmc")
    primary = result.scores[0]
    assert primary.metric == "wasserstein1"
    assert "hmc" not in primary.methods                  # the reference itself is left out
    assert set(primary.methods) == {"ensemble", "laplace"}
    w1 = {n: result.fidelity[n]["wasserstein1"].value for n in primary.methods}
    assert primary.methods[0] == min(w1, key=w1.get)
    assert primary.values[primary.best] == pytest.approx(w1[primary.best], rel=1e-9)
    assert result.scores[1].metric == "nll" and "hmc" in result.scores[1].methods
    assert result.table.loc[primary.best, "rank"] == 1
    assert result.table["rank"].isna()["hmc"]
    judged = verdict(result)
    assert judged.recommended == primary.best
    assert judged.answer.startswith(f"Trust {primary.best}: closeness to the reference")
    assert "rests on closeness to the exact posterior" in judged.answer
    assert any("passed the reference gate" in s for s in judged.sentences)


def test_verdict_names_a_reference_passed_in_as_a_posterior(stand_ins, no_truth):
    # it once read "the reference posterior posterior" (the source of a Posterior passed in)
    reference = as_reference(hmc_stand_in(no_truth, seed=1), no_truth)
    result = run(no_truth, ["ensemble", "laplace"], reference=reference)
    assert result.settings.reference.source == "posterior"
    text = str(verdict(result))
    assert "measured against a reference posterior passed in" in text
    assert "posterior posterior" not in text


def test_verdict_uses_a_constructed_gate_result(stand_ins, no_truth):
    """A comparison whose reference failed its gate, given a passed gate by hand: the
    verdict (ranking the reports itself, as for a hand-assembled comparison) goes by W1."""
    stand_ins["chains"] = 2
    result = run(no_truth, ["hmc", "ensemble", "laplace"], reference="hmc")
    assert result.scores[0].metric == "nll"
    gate = dataclasses.replace(result.settings.reference.gate, passed=True, messages=())
    settings = dataclasses.replace(result.settings, reference=dataclasses.replace(
        result.settings.reference, gate=gate))
    passed = dataclasses.replace(result, settings=settings, scores=())
    judged = verdict(passed)
    assert judged.rankings[0].metric == "wasserstein1"
    assert "hmc" not in judged.rankings[0].methods
    assert judged.recommended == judged.rankings[0].best


# -- the report -----------------------------------------------------------------------------

class _Cells(html.parser.HTMLParser):
    """The data-* attributes of the fidelity table's cells, per method."""

    def __init__(self):
        super().__init__()
        self.method = None
        self.cells: dict[str, dict[str, dict[str, str]]] = {}
        self.in_table = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.in_table = a.get("id") == "fidelity-table"
        elif self.in_table and tag == "tr" and "data-method" in a:
            self.method = a["data-method"]
        elif self.in_table and tag == "td" and "data-key" in a:
            self.cells.setdefault(self.method, {})[a["data-key"]] = a


@pytest.fixture
def no_other_figures(monkeypatch):
    """The report without its reliability, coverage and map figures (seconds each), which
    other tests check: what is tested here is the closeness section."""
    monkeypatch.setattr(report_module, "_figures_html", lambda result, data: "")


def test_report_has_the_section_with_every_figure_and_its_yardstick(stand_ins, data,
                                                                    no_other_figures):
    result = run(data, reference="hmc")
    page = render_report(result)
    assert '<h2 id="closeness">Closeness to the exact posterior</h2>' in page
    assert 'data-passed="true"' in page and "not independent of the hmc row" in page
    parser = _Cells()
    parser.feed(page)
    assert set(parser.cells) == {"hmc", "ensemble"}
    for name, fid in result.fidelity.items():
        for score in fid.scores:
            cell = parser.cells[name][score.name]
            assert float(cell["data-value"]) == score.value
            assert float(cell["data-floor"]) == score.mc_floor
            assert float(cell["data-sd"]) == score.mc_sd
    assert 'id="fidelity-ensemble"' in page           # a figure per method ...
    assert 'id="fidelity-hmc"' not in page            # ... but not of the reference itself
    assert 'id="fidelity-maps"' not in page           # tabular data: no map


def test_report_maps_an_hsi_scene(stand_ins, no_other_figures):
    scene = uz.datasets.load("hsi-sim", size=24, n_bands=8, seed=0)
    result = uz.compare(scene, ["hmc", "ensemble"], levels=(0.8,), progress_bar=False,
                        reference="hmc", detectors=False)
    page = render_report(result, data=scene)
    assert 'id="fidelity-maps"' in page and 'id="fidelity-ensemble"' in page
    fig = uz.plots.fidelity_maps(result.fidelity, scene)
    assert len(fig.axes) == 3                           # two maps and one colour bar


def test_fidelity_plots_refuse_what_is_no_fidelity(stand_ins, data):
    with pytest.raises(InvalidTypeError, match=r"fid must be a uqzoo\.Fidelity"):
        uz.plots.fidelity_plot({"wasserstein1": 0.1})
    result = run(data, reference="hmc")
    with pytest.raises(InvalidInputError, match="geometry must be an EvalReport or "
                                                "ClassificationData of an HSI scene"):
        uz.plots.fidelity_maps(result.fidelity, data)
    with pytest.raises(InvalidInputError, match="metric must be one of"):
        uz.plots.fidelity_maps(result.fidelity, data, metric="width")


# -- config file and CLI ------------------------------------------------------------------

def test_config_round_trips_the_reference(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[compare]\nmethods = ["hmc"]\nreference = "refs/ref.nc"\n')
    config = read_config(path)
    assert config.reference == str((tmp_path / "refs" / "ref.nc").resolve())
    again = tmp_path / "again.toml"
    again.write_text(config.to_toml())
    assert read_config(again).reference == config.reference
    assert read_config(_write(tmp_path, 'reference = "hmc"')).reference == "hmc"
    assert CompareConfig().reference == "auto"
    with pytest.raises(InvalidInputError, match=r"compare\.reference.*must be \"hmc\""):
        read_config(_write(tmp_path, 'reference = ""'))


def _write(folder, line):
    path = folder / "x.toml"
    path.write_text(f"[compare]\n{line}\n")
    return path


def test_cli_reference_flag_prints_closeness(stand_ins, capsys):
    assert main(["compare", *SMALL, "--methods", "hmc,ensemble", "--levels", "0.8",
                 "--reference", "hmc", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "closeness to the exact posterior (reference: the comparison's own hmc fit" in printed
    assert "hmc: agreement 1.0000 (MC" in printed and "wasserstein1 0.0000 (MC" in printed
    assert "Closeness to the exact posterior is measured against" in printed   # the verdict


def test_cli_out_saves_the_closeness_figures(stand_ins, data, tmp_path):
    from uqzoo.cli import _save_plots

    result = run(data, reference="hmc")
    _save_plots(result.reports, data, tmp_path, comparison=result)
    assert (tmp_path / "fidelity_ensemble.png").stat().st_size > 0
    assert not (tmp_path / "fidelity_hmc.png").exists()       # the reference itself
    assert not (tmp_path / "fidelity_maps.png").exists()      # not a scene


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--reference", "nowhere.nc"], "--reference must be 'auto', 'none', 'hmc' or the path of a "
                                           "reference"),
    (["--methods", "ensemble", "--reference", "hmc"], "--reference hmc uses the comparison's "
                                                       "own HMC fit"),
])
def test_cli_bad_reference_exits_2_with_one_line(stand_ins, capsys, argv, fragment):
    assert main(["compare", *SMALL, "--no-progress", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1


def test_cli_reference_of_other_data_exits_2(stand_ins, tmp_path, capsys):
    other = uz.datasets.load("gaussian-mixture", p=2, n_train=100, n_test=60, seed=1)
    path = tmp_path / "other.nc"
    as_reference(hmc_stand_in(other), other).save(path)
    assert main(["compare", *SMALL, "--methods", "ensemble", "--no-progress", "--hidden", "",
                 "--reference", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is refused: reference belongs to other training data" in err
    assert len(err.splitlines()) == 1


@pytest.mark.slow
def test_a_real_short_hmc_is_its_own_exact_reference_and_fails_the_gate():
    data = uz.datasets.load("gaussian-mixture", p=2, n_train=100, n_test=40, seed=0)
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    result = uz.compare(dataclasses.replace(data, p_true_test=None), ["hmc", "laplace"],
                        model=spec, levels=(0.8,), num_draws=100, progress_bar=False,
                        configs={"hmc": {"num_warmup": 100, "num_chains": 2},
                                 "laplace": {"num_epochs": 50}}, reference="hmc")
    for column, perfect in PERFECT.items():
        assert result.table.loc["hmc", column] == perfect
    assert not result.settings.reference.passed
    assert result.scores[0].metric == "nll"
    assert "The reference did NOT pass its gate" in render_report(result)


# -- reference="auto", the default --------------------------------------------------------

def test_auto_samples_an_independent_reference_when_hmc_is_compared(stand_ins, no_truth):
    seeds = []
    real_fit = method_registry.fit

    def fit(name, spec, data, seed=0, progress_bar=False, **config):
        seeds.append((name, seed, config.get("num_chains")))
        return real_fit(name, spec, data, seed=seed, progress_bar=progress_bar, **config)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(method_registry, "fit", fit)
        result = run(no_truth, ["hmc", "ensemble", "laplace"])      # no reference= at all
    reference = result.settings.reference
    assert reference.source == "auto" and reference.row is None and reference.passed
    # its own seed, not the hmc row's: two independent runs
    assert [s for n, s, _ in seeds if n == "hmc"] == [0, reference.seed]
    assert reference.seed != 0
    assert [c for c in result.table.columns if c.startswith("fidelity_")] == FIDELITY_COLUMNS
    # the hmc row is scored and ranked like any other method
    assert "hmc" in result.scores[0].methods and result.scores[0].metric == "wasserstein1"
    assert result.settings.reference_skipped is None
    text = str(verdict(result))
    assert "sampled for this comparison (reference='auto'" in text


def test_auto_is_skipped_past_its_budget_and_the_verdict_says_how_to_get_one(
        stand_ins, no_truth, monkeypatch):
    monkeypatch.setattr(compare_module, "AUTO_REFERENCE_SECONDS", 0.0)
    result = run(no_truth, ["ensemble", "laplace"])
    assert result.settings.reference is None and not result.fidelity
    skipped = result.settings.reference_skipped
    assert skipped.startswith("HMC's time estimate of a reference run here is ")
    assert "over the 0 s" in skipped
    judged = verdict(result)
    assert judged.answer.startswith("The test labels judge the mean prediction only")
    said = next(s for s in judged.sentences if s.startswith("No reference posterior was sampled"))
    assert "uqzoo reference --dataset unknown-truth" in said and "--reference ref.nc" in said


def test_auto_samples_nothing_where_the_truth_is_known_and_none_turns_it_off(stand_ins, data,
                                                                            no_truth):
    result = run(data, ["hmc", "ensemble"])
    assert result.settings.reference is None and result.settings.reference_skipped is None
    assert not result.fidelity
    off = run(no_truth, ["hmc", "ensemble"], reference=None)
    assert off.settings.reference is None and off.settings.reference_skipped is None
    assert not any(s.startswith("No reference posterior") for s in verdict(off).sentences)


def test_auto_is_the_default_of_config_files_and_the_command_line(tmp_path):
    assert CompareConfig().reference == "auto"
    path = tmp_path / "c.toml"
    path.write_text('[compare]\nreference = "none"\n')
    config = read_config(path)
    assert config.reference is None and 'reference = "none"' in config.to_toml()
    path.write_text('[compare]\nreference = "auto"\n')
    assert read_config(path).reference == "auto"
    assert "reference" not in CompareConfig().to_toml()
