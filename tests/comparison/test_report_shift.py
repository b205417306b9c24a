"""The report of a comparison under shift: its tables, figures and ranking sentences (issue 15).

The fits are stand-ins (draws around a logistic regression, one sharp and one
wide), so the comparison takes seconds; every number the page shows is checked
against :attr:`Comparison.shift`, the numbers it reports.
"""

from __future__ import annotations

import base64
import html.parser
import math

import numpy as np
import pytest

import uqzoo as uz
from _stand_ins import stand_in_fit
from uqzoo import methods as method_registry
from uqzoo import shift as under_shift
from uqzoo.posterior import Posterior

PERTURBATIONS = ["illumination:0.8-1.2", "noise:10-20"]
COPIES = 3
LEVELS = (0.8,)
@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
    """hsi-sim (small), two methods, evaluated clean and under two perturbations."""
    data = uz.datasets.load("hsi-sim", size=24, n_bands=8, seed=0, progress_bar=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(method_registry, "fit", stand_in_fit)
        result = uz.compare(data, ["laplace", "ensemble"], levels=LEVELS, seed=0,
                            perturbations=PERTURBATIONS, copies=COPIES, progress_bar=False)
    path = uz.write_report(result, tmp_path_factory.mktemp("shift") / "report.html", data=data)
    text = path.read_text(encoding="utf-8")
    return data, result, text, _Page(text)


class _Page(html.parser.HTMLParser):
    """The shift tables' cells, the figures and the verdict's items of a report."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.cells: list[dict] = []           # one per <td> of a shift table
        self.figures: dict[str, str] = {}     # figure id -> img src
        self.verdict: list[str] = []
        self.headings: list[tuple[str | None, str]] = []
        self._table: str | None = None
        self._method: str | None = None
        self._cell: dict | None = None
        self._figure: str | None = None
        self._in_verdict = False
        self._li: list[str] | None = None
        self._h3: list[str] | None = None
        self._h3_id: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "shift" in (a.get("class") or "").split():
            self._table = a["data-perturbation"]
        elif tag == "tr" and self._table is not None:
            self._method = a.get("data-method")
        elif tag == "td" and self._table is not None:
            self._cell = {"perturbation": self._table, "method": self._method, **a, "text": ""}
        elif tag == "figure":
            self._figure = a.get("id")
        elif tag == "img" and self._figure is not None:
            self.figures[self._figure] = a["src"]
        elif tag == "ul" and a.get("id") == "verdict":
            self._in_verdict = True
        elif tag == "li" and self._in_verdict:
            self._li = []
        elif tag == "h3":
            self._h3, self._h3_id = [], a.get("id")

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "td" and self._cell is not None:
            self.cells.append(self._cell)
            self._cell = None
        elif tag == "figure":
            self._figure = None
        elif tag == "ul":
            self._in_verdict = False
        elif tag == "li" and self._li is not None:
            self.verdict.append("".join(self._li))
            self._li = None
        elif tag == "h3" and self._h3 is not None:
            self.headings.append((self._h3_id, "".join(self._h3)))
            self._h3 = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        if self._li is not None:
            self._li.append(data)
        if self._h3 is not None:
            self._h3.append(data)


def _expected(result, method: str, label: str, key: str):
    """The row of Comparison.shift a headline key reads: the first row of its metric and
    level over all classes, as EvalReport.to_dict reads the clean table; detection AUROC
    has one row, of class 1 (the target)."""
    metric, _, level = key.partition("@")
    s = result.shift
    rows = s[(s.method == method) & (s.perturbation == label) & (s.metric == metric)]
    rows = rows[np.isclose(rows.level.astype(float), float(level))] if level else \
        rows[rows.level.isna()]
    if metric == "detection_auroc":
        assert len(rows) == 1 and rows["class"].iloc[0] == 1
        return rows.iloc[0]
    return rows[rows["class"].isna()].iloc[0]


def test_a_shift_table_per_perturbation_holds_the_numbers_of_comparison_shift(shifted):
    _, result, _, page = shifted
    first = next(iter(result.reports.values()))
    keys = under_shift.headline_keys(first.to_dict(), first.levels)
    assert {"accuracy", "ece", "coverage@0.8", "detection_auroc"} <= set(keys)
    shifted_cells = [c for c in page.cells if "shifted" in (c.get("class") or "")]
    clean_cells = [c for c in page.cells if c.get("class") == "clean"]
    # one clean and one shifted cell per perturbation, method and headline metric
    want = [(label, method, key) for label in PERTURBATIONS
            for method in ("laplace", "ensemble") for key in keys]
    assert [(c["perturbation"], c["method"], c["data-key"]) for c in shifted_cells] == want
    assert [(c["perturbation"], c["method"], c["data-key"]) for c in clean_cells] == want
    for cell, clean in zip(shifted_cells, clean_cells, strict=True):
        row = _expected(result, cell["method"], cell["perturbation"], cell["data-key"])
        # the full numbers, as Comparison.shift holds them
        assert float(cell["data-mean"]) == row["mean"]
        assert float(cell["data-clean"]) == row["clean"]
        assert int(cell["data-k"]) == row["k"] == COPIES
        assert float(cell["data-sd"]) == row["sd"]
        # and as shown: the clean value, mean ± sd
        assert clean["text"] == f"{row['clean']:.4f}"
        assert cell["text"] == f"{row['mean']:.4f} ± {row['sd']:.4f}"
        # the same numbers as the table's <key>_shift_mean column (per-copy headlines)
        column = f"{cell['data-key']}_shift_mean[{cell['perturbation']}]"
        assert row["mean"] == pytest.approx(result.table.loc[cell["method"], column],
                                            rel=1e-12)
        assert row["clean"] == result.table.loc[cell["method"], cell["data-key"]]
    # each table says what was perturbed, how often, and what became of the truth
    assert [text for _, text in page.headings] == [
        f"{PERTURBATIONS[0]}: {COPIES} copies; true probabilities of the copies: unchanged",
        f"{PERTURBATIONS[1]}: {COPIES} copies; true probabilities of the copies: recomputed"]


def test_the_shift_figures_are_embedded_one_per_headline_metric(shifted):
    _, result, text, page = shifted
    first = next(iter(result.reports.values()))
    keys = under_shift.headline_keys(first.to_dict(), first.levels)
    ids = [f"shift-{key.replace('@', '-').replace('.', '-')}" for key in keys]
    assert [i for i in page.figures if i.startswith("shift-")] == ids
    for fig_id in ids:
        src = page.figures[fig_id]
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    # the section sits between the comparison table and the other figures
    assert text.index('id="table"') < text.index('id="shift"') < text.index('id="reliability"')


def test_the_ranking_changes_are_sentences_of_the_verdict(shifted):
    _, result, _, page = shifted
    changes = result.ranking_changes
    assert changes, "the stand-ins were chosen so that a ranking changes under noise"
    assert any(c.startswith("Under noise:10-20 (3 copies) the ranking by") for c in changes)
    judged = uz.report.verdict(result)
    assert judged.ranking_changes == changes
    # on the page as in the Verdict, the ranking changes last, after what was shifted
    assert page.verdict == list(judged.sentences)
    assert page.verdict[-len(changes):] == list(changes)
    intro = page.verdict[-len(changes) - 1]
    assert intro.startswith(f"Under shift, {PERTURBATIONS[0]} ({COPIES} copies) and "
                            f"{PERTURBATIONS[1]} ({COPIES} copies):")


def test_a_comparison_without_shift_has_no_shift_section_and_says_nothing_of_it():
    data = uz.datasets.load("gaussian-mixture", p=2, n_train=40, n_test=60, seed=0)
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    post = Posterior(spec=spec, method="laplace", config={}, seed=0,
                     draws=spec.init_params(seed=0, num=20))
    rep = uz.evaluate(post, data, levels=LEVELS)
    import pandas as pd
    table = pd.DataFrame([{**rep.to_dict(), "method": "a"}]).set_index("method")
    result = uz.Comparison(table=table, reports={"a": rep}, posteriors={"a": post})
    page = uz.report.render_report(result, data=data)
    assert 'id="shift"' not in page and "Under shift" not in page
    assert not any("shift" in s for s in uz.report.verdict(result).sentences)


def test_one_shifted_method_has_no_ranking_to_change(shifted):
    """With a single method nothing can change rank: the verdict does not claim otherwise."""
    data, _, _, _ = shifted
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(method_registry, "fit", stand_in_fit)
        result = uz.compare(data, ["laplace"], levels=LEVELS, perturbations=["offset"],
                            copies=2, progress_bar=False, detectors=False)
    sentences = uz.report.verdict(result).sentences
    assert sentences[-1].startswith("Under shift, offset:0-0.05 (2 copies):")
    assert not any("ranking" in s for s in sentences)
    assert math.isfinite(float(result.shift["mean"].iloc[0]))
