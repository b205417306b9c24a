"""The HTML report of a comparison: content, verdict, escaping, atomic writing, CLI outputs."""

from __future__ import annotations

import base64
import errno
import html.parser
import importlib
import importlib.util
import math
import os
import re

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo import _files
from uqzoo.cli import main
from uqzoo.comparison import report

compare_module = importlib.import_module("uqzoo.comparison.compare")

SMALL = {"ensemble": {"num_members": 3, "num_epochs": 60},
         "laplace": {"num_epochs": 60, "num_samples": 40}}


# -- reading the page back ------------------------------------------------------------------

class _Page(html.parser.HTMLParser):
    """What a browser would see: elements, the comparison table's rows, images, text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.text: list[str] = []
        self._in_table = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "table" and attributes.get("id") == "comparison":
            self._in_table = True
        if tag == "tr" and self._in_table and "data-method" in attributes:
            self.rows.append(attributes["data-method"] or "")
        if tag == "img":
            self.images.append(attributes)

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False

    def handle_data(self, data):
        self.text.append(data)

    @property
    def plain(self) -> str:
        return " ".join(" ".join(self.text).split())


def _png_ok(src: str) -> bool:
    prefix = "data:image/png;base64,"
    return src.startswith(prefix) and base64.b64decode(src[len(prefix):]).startswith(
        b"\x89PNG\r\n\x1a\n")


def _assert_self_contained(text: str, page: _Page) -> None:
    assert not any(tag in ("script", "link", "iframe", "object", "embed")
                   for tag, _ in page.tags)
    for tag, attributes in page.tags:
        for name in ("src", "href", "srcset", "action"):
            value = attributes.get(name)
            assert value is None or value.startswith("data:") or value.startswith("#"), \
                (tag, name, value)
    assert "http-equiv=\"Content-Security-Policy\"" in text
    assert "url(" not in text.split("</style>")[0].split("<style>")[1]


# -- comparisons to report on -----------------------------------------------------------

@pytest.fixture(scope="module")
def sim():
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=300)
    result = uz.compare(data, ["laplace", "ensemble"], configs=SMALL, num_draws=40,
                        progress_bar=False)
    return data, result


def _comparison(reports: dict, fit_seconds: float = 0.5) -> uz.Comparison:
    """A Comparison of given reports, its table assembled as uz.compare assembles it."""
    rows = [{**rep.to_dict(), "method": name, "kind": "posterior", "fit_seconds": fit_seconds}
            for name, rep in reports.items()]      # reports of raw draws have method None
    table = pd.DataFrame(rows).set_index("method")
    table["failed"] = table["failed"].astype("boolean")
    levels = next(iter(reports.values())).levels
    has_truth = next(iter(reports.values())).p_true is not None
    cols = [c for c in compare_module._headline_columns(levels, has_truth)
            if c in table.columns and c != "kind"]
    return uz.Comparison(table=table[cols], reports=reports, posteriors={})


def _scene(name: str = "scene", class_names=("background", "target")):
    """A 6 × 8 scene, every pixel a test pixel, with true probabilities."""
    rng = np.random.default_rng(1)
    coords = np.array([(r, c) for r in range(6) for c in range(8)])
    p1 = rng.uniform(0.05, 0.95, size=len(coords))
    y = (rng.uniform(size=len(coords)) < p1).astype(int)
    X = rng.normal(size=(len(coords), 2))
    data = uz.ClassificationData(X, y, X, y, 2, p_true_test=np.stack([1 - p1, p1], 1),
                                 coords_test=coords, class_names=class_names, name=name,
                                 meta={"image_shape": (6, 8)})
    return data, p1


def _draws(p1: np.ndarray, concentration: float, seed: int) -> np.ndarray:
    """60 draws of P(target) around a model's estimate of p1 (off by logit noise sd 0.7)."""
    rng = np.random.default_rng(seed)
    logit = np.log(p1 / (1 - p1)) + rng.normal(0, 0.7, size=p1.size)
    centre = 1 / (1 + np.exp(-logit))
    q = rng.beta(concentration * centre, concentration * (1 - centre), size=(60, p1.size))
    return np.stack([1 - q, q], -1)


# -- content ----------------------------------------------------------------------------

def test_report_holds_data_table_figures_and_verdict(sim, tmp_path):
    data, result = sim
    path = uz.write_report(result, tmp_path / "report.html", data=data,
                           settings='[compare]\nseed = 0\n')
    assert path == tmp_path / "report.html"
    text = path.read_text(encoding="utf-8")
    page = _Page(text)
    _assert_self_contained(text, page)
    assert page.rows == ["laplace", "ensemble"]
    # reliability per method, coverage (p_true known), risk–coverage; every one a PNG
    assert len(page.images) == 2 + 1 + 1
    assert all(_png_ok(img["src"] or "") for img in page.images)
    assert all(img.get("alt") for img in page.images)
    plain = page.plain
    for sentence in uz.report.verdict(result).sentences:
        assert " ".join(sentence.split()) in plain
    for words in ("sim-teacher", "200 train, 300 test", "known (simulated)", "Run settings",
                  "seed = 0", "HCS wrong", "ECE adapt.", "misclass. AUROC", "AURC",
                  "Brier", "NLL", "balanced", "coverage", "width"):
        assert words in plain, words
    # the table's numbers are the comparison's
    shown = re.search(r'data-method="laplace">(.*?)</tr>', text).group(1)
    acc = result.table.loc["laplace", "accuracy"]
    assert f"<td>{acc:.4f}</td>" in shown


def test_report_table_adds_hcs_errors_and_calibration_variants(sim):
    _, result = sim
    table = uz.report.report_table(result)
    assert list(table.index) == list(result.table.index)
    assert set(result.table.columns) <= set(table.columns)
    rep = result.reports["laplace"]
    t = rep.table
    for level in rep.levels:
        at = np.isclose(t.level.astype(float).fillna(-1), level)
        wrong = t[at & t.metric.isin(["hcs_missed_targets", "hcs_false_targets"])].value.sum()
        assert table.loc["laplace", f"hcs_errors@{level:g}"] == wrong
        assert table.loc["laplace", f"hcs_size@{level:g}"] == rep.to_dict()[f"hcs_size@{level:g}"]
    d = rep.to_dict()
    for key in ("mce", "adaptive_ece", "classwise_ece", "misclassification_auroc"):
        assert table.loc["laplace", key] == d[key]
    assert table.loc["laplace", "n_test"] == 300


def test_verdict_of_the_real_comparison_follows_its_numbers(sim):
    _, result = sim
    v = uz.report.verdict(result)
    assert v.coverage_known
    for name, rep in result.reports.items():
        for level in rep.levels:
            coverage = result.table.loc[name, f"coverage@{level:g}"]
            band = report.COVERAGE_Z * math.sqrt(level * (1 - level) / rep.n_points)
            assert (level in v.under_cover.get(name, ())) == (coverage < level - band)
            assert (level in v.over_cover.get(name, ())) == (coverage > level + band)
    eces = result.table["ece"].sort_values()
    assert list(v.best_calibrated) == list(eces.index)


def test_verdict_sentences_match_a_constructed_table():
    # N = 1000: the band at 0.8 is 1.96 * sqrt(0.16 / 1000) = 0.0248, at 0.95 0.0135
    table = pd.DataFrame(
        {"kind": ["posterior"] * 5 + ["detector"],
         "converged": [True, None, None, None, False, None],
         "failed": pd.array([False, False, False, True, False, pd.NA], dtype="boolean"),
         "flags": ["", "", "", "one_class", "", ""],
         "coverage@0.8": [0.79, 0.70, 0.83, 0.80, 0.776, np.nan],
         "coverage@0.95": [0.95, 0.90, 0.9636, 0.95, 0.94, np.nan],
         "ece": [0.020, 0.050, 0.030, 0.001, 0.010, np.nan],
         # columns that share the level but are not coverage, and a shifted run's summary
         "interval_width@0.8": [0.1] * 6, "hcs_proportion@0.8": [0.5] * 6,
         "coverage@0.8_shift_mean": [0.1] * 6},
        index=pd.Index(["hmc", "swag", "laplace", "bootstrap", "mfvi", "ace"], name="method"))
    v = uz.report.verdict(table, n_points=1000)
    assert v.failed == {"bootstrap": "one_class"}
    assert v.not_converged == ("mfvi",)
    assert v.under_cover == {"swag": (0.8, 0.95)}
    assert v.over_cover == {"laplace": (0.8, 0.95)}
    # 0.776 is 0.024 below 0.8 (inside the 0.0248 band); the detector row is not judged
    assert v.cover_as_claimed == ("hmc", "bootstrap", "mfvi")
    assert v.best_calibrated == ("mfvi", "hmc", "laplace", "swag")   # failed fit left out
    text = str(v)
    assert "1 of 5 fit failed: bootstrap (one_class)" in text
    assert "mfvi did not converge" in text
    assert "swag at 0.8 (0.700 vs 0.8 ± 0.025) and 0.95 (0.900 vs 0.95 ± 0.014)" in text
    assert "Over-cover (intervals wider than they claim): laplace at 0.8 (0.830 vs 0.8 ± " \
           "0.025) and 0.95 (0.964 vs 0.95 ± 0.014)." in text
    assert "Cover as claimed at every level, within Monte Carlo error: hmc, bootstrap and " \
           "mfvi." in text
    assert "(failed fits left out): mfvi (0.01), then hmc (0.02), then laplace " \
           "(0.03)." in text
    # the same, with test points per method and from an n_test column
    assert uz.report.verdict(table, n_points=dict.fromkeys(table.index, 1000)) == v
    assert uz.report.verdict(table.assign(n_test=1000)) == v


def test_verdict_without_truth_and_bad_arguments():
    table = pd.DataFrame({"ece": [0.02, 0.01]}, index=pd.Index(["a", "b"], name="method"))
    v = uz.report.verdict(table)
    assert not v.coverage_known and v.best_calibrated == ("b", "a")
    assert v.sentences[0].startswith("Coverage is not judged")
    with pytest.raises(uz.InvalidInputError, match="n_points is required"):
        uz.report.verdict(table.assign(**{"coverage@0.9": [0.9, 0.9]}))
    with pytest.raises(uz.InvalidInputError, match=r"n_points must be a positive integer"):
        uz.report.verdict(table.assign(**{"coverage@0.9": [0.9, 0.9]}), n_points=0)
    with pytest.raises(uz.InvalidTypeError, match="Comparison or a pandas DataFrame"):
        uz.report.verdict({"a": 1})
    with pytest.raises(uz.InvalidTypeError, match="result must be a uqzoo Comparison"):
        uz.report.render_report(table)
    with pytest.raises(uz.InvalidTypeError, match="settings must be a string"):
        uz.report.render_report(uz.Comparison(table=table, reports={}, posteriors={}),
                                settings={"a": 1})


def test_scene_report_has_maps_side_by_side_and_detector_rows_are_not_judged(tmp_path):
    data, p1 = _scene()
    reports = {name: uz.evaluate(_draws(p1, c, seed), data, levels=(0.8, 0.95))
               for seed, (name, c) in enumerate([("wide", 3.0), ("narrow", 300.0)])}
    result = _comparison(reports)
    table = result.table.copy()
    table.insert(0, "kind", "posterior")
    table.loc["rx"] = pd.Series({"kind": "detector", "fit_seconds": 0.01,
                                 "detection_auroc": 0.7})
    result = uz.Comparison(table=table, reports=reports, posteriors={})
    text = uz.report.render_report(result, data=data)
    page = _Page(text)
    assert page.rows == ["wide", "narrow", "rx"]
    ids = [a.get("id") for t, a in page.tags if t == "figure"]
    assert ids == ["reliability-wide", "reliability-narrow", "coverage-plot",
                   "risk-coverage-plot", "maps-wide", "maps-narrow"]
    assert 'class="detector"' in text
    v = uz.report.verdict(result)
    assert "rx" not in v.best_calibrated and "rx" not in v.cover_as_claimed
    assert "narrow" in v.under_cover         # a posterior far too sure of itself
    assert "scene 6×8 pixels" in page.plain


def test_user_strings_are_escaped(tmp_path):
    evil = '<script>alert("x")</script>'
    data, p1 = _scene(name=f"scene {evil}", class_names=("bg & <i>", f"t{evil}"))
    reports = {f"m{evil}": uz.evaluate(_draws(p1, 20.0, 0), data, levels=(0.8,))}
    result = _comparison(reports)
    text = uz.report.render_report(result, data=data, title=f"T {evil}",
                                   settings=f"name = '{evil}'")
    page = _Page(text)
    assert not any(tag == "script" for tag, _ in page.tags)
    assert "<script>" not in text and "<i>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    assert page.rows == [f"m{evil}"]                       # read back intact
    assert f"T {evil}" in page.plain and "bg & <i>" in page.plain
    _assert_self_contained(text, page)


# -- written atomically -------------------------------------------------------------------

def _os_with(**overrides):
    """``os`` as ``uqzoo.io`` sees it, with some functions replaced."""
    namespace = {name: staticmethod(fn) for name, fn in overrides.items()}
    namespace["__getattr__"] = lambda self, name: getattr(os, name)
    return type("Os", (), namespace)()


@pytest.fixture
def small_result():
    data, p1 = _scene()
    return data, _comparison({"m": uz.evaluate(_draws(p1, 20.0, 0), data, levels=(0.8,))})


@pytest.mark.parametrize("failure", ["disk full at fsync", "Ctrl-C at rename",
                                     "error while rendering"])
def test_a_failed_write_leaves_no_report_and_no_temporary(tmp_path, monkeypatch, small_result,
                                                          failure):
    data, result = small_result
    folder = tmp_path / "out"
    folder.mkdir()
    earlier = folder / "report.html"
    earlier.write_text("an earlier report")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    def broken(*args, **kwargs):
        raise RuntimeError("a figure failed")

    if failure == "disk full at fsync":
        monkeypatch.setattr(_files, "os", _os_with(fsync=full))
        with pytest.raises(uz.OutputPathError, match="no space left on the device"):
            uz.write_report(result, earlier, data=data, overwrite=True)
    elif failure == "Ctrl-C at rename":
        monkeypatch.setattr(_files, "os", _os_with(replace=interrupted))
        with pytest.raises(KeyboardInterrupt):
            uz.write_report(result, earlier, data=data, overwrite=True)
    else:
        monkeypatch.setattr(uz.plots, "risk_coverage_plot", broken)
        with pytest.raises(RuntimeError, match="a figure failed"):
            uz.write_report(result, earlier, data=data, overwrite=True)
    assert [p.name for p in folder.iterdir()] == ["report.html"]    # no temporary left
    assert earlier.read_text() == "an earlier report"                # untouched
    monkeypatch.undo()
    uz.write_report(result, earlier, data=data, overwrite=True)
    assert earlier.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in folder.iterdir()] == ["report.html"]


def test_a_report_refuses_other_data_of_the_same_name_and_size(sim):
    # issue 25 item 7: another seed's data (same name, same n_test) were described silently
    data, result = sim
    other = uz.datasets.load("sim-teacher", n_train=200, n_test=300,
                             seed=data.meta["options"]["seed"] + 1)
    assert (other.name, other.n_test) == (data.name, data.n_test)
    with pytest.raises(uz.InvalidInputError, match=r"other test points or labels .*pass the "
                                                   r"data it compared"):
        uz.report.render_report(result, data=other)


def test_an_unusable_path_is_refused_before_rendering(tmp_path, monkeypatch, small_result):
    data, result = small_result
    monkeypatch.setattr(report, "render_report", lambda *a, **k: pytest.fail("rendered"))
    with pytest.raises(uz.OutputPathError, match="does not exist"):
        uz.write_report(result, tmp_path / "nowhere" / "report.html", data=data)
    with pytest.raises(uz.OutputPathError, match=r"is a directory; give a file path such as "
                                                 r".*report\.html"):      # not posterior.nc
        uz.write_report(result, tmp_path, data=data)


# -- uqzoo compare --out ------------------------------------------------------------------

def test_compare_out_without_true_probabilities_writes_the_report(tmp_path, capsys):
    """Real data have no p_true: --out once failed there after printing the table."""
    out = tmp_path / "iris"
    code = main(["compare", "--dataset", "iris", "--methods", "laplace", "--no-progress",
                 "--set", "laplace.num_epochs=60", "--num-draws", "40", "--reference", "none",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    names = sorted(p.name for p in out.iterdir())
    parquet = any(importlib.util.find_spec(m) for m in ("pyarrow", "fastparquet"))
    expected = {"config.toml", "laplace.nc", "reliability_laplace.png", "report.html",
                "results.csv", "risk_coverage.png"} | ({"results.parquet"} if parquet else set())
    assert set(names) == expected                          # no coverage.png: no truth
    if not parquet:
        assert "results.parquet not written: it needs pyarrow" in printed
    table = pd.read_csv(out / "results.csv", index_col="method")
    assert list(table.index) == ["laplace"] and "coverage@0.8" not in table.columns
    text = (out / "report.html").read_text(encoding="utf-8")
    page = _Page(text)
    assert page.rows == ["laplace"]
    assert "Not shown: the data carry no true probabilities" in page.plain
    assert "Coverage is not judged" in page.plain
    assert "[data] dataset = \"iris\"" in page.plain        # the resolved config, shown
    assert len(page.images) == 2                           # reliability, risk–coverage
    _assert_self_contained(text, page)
