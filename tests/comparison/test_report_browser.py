"""The report in a real browser: headless Chromium shows its table and figures, no errors.

Needs Debian's ``chromium`` and ``chromium-driver`` (``apt-get install chromium
chromium-driver``) and Selenium (the ``test`` extra). Nothing is downloaded at
run time: the driver on PATH is used, never Selenium Manager. Skipped, with the
reason, where any of them is missing -- except where ``UQZOO_REQUIRE_BROWSER=1``
(set by ``.ci/run``, which installs them): there a missing or broken browser
fails the test, so CI cannot pass without having looked at the report.
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo import shift as under_shift

REQUIRED = os.environ.get("UQZOO_REQUIRE_BROWSER") == "1"
CHROMIUM = next(filter(None, (shutil.which(n) for n in ("chromium", "chromium-browser"))),
                None)
DRIVER = shutil.which("chromedriver")


def _unavailable(reason: str):
    """Skip -- or fail, where CI requires the browser (UQZOO_REQUIRE_BROWSER=1)."""
    if REQUIRED:
        pytest.fail(f"{reason}; UQZOO_REQUIRE_BROWSER=1 requires it", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install selenium; it is in the test "
                     "extra)")
    if CHROMIUM is None or DRIVER is None:
        _unavailable("no headless browser: install Debian's chromium and chromium-driver "
                     "(apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,1000",
                     "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    except Exception as exc:          # a driver that does not match the browser, no display...
        _unavailable(f"headless chromium did not start: {type(exc).__name__}: "
                     f"{str(exc).splitlines()[0] if str(exc) else ''}")
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def scene_report(tmp_path_factory):
    return _scene_report(tmp_path_factory.mktemp("report") / "report.html")


def _scene_report(path):
    """A small binary scene with true probabilities: every section of the report."""
    rng = np.random.default_rng(3)
    coords = np.array([(r, c) for r in range(8) for c in range(10)])
    p1 = rng.uniform(0.05, 0.95, size=len(coords))
    y = (rng.uniform(size=len(coords)) < p1).astype(int)
    X = rng.normal(size=(len(coords), 2))
    data = uz.ClassificationData(X, y, X, y, 2, p_true_test=np.stack([1 - p1, p1], 1),
                                 coords_test=coords, name="scene <&> 'quoted'",
                                 meta={"image_shape": (8, 10)})
    reports = {}
    for seed, (name, concentration) in enumerate([("wide", 4.0), ("narrow", 400.0)]):
        q = np.random.default_rng(seed).beta(concentration * p1, concentration * (1 - p1),
                                             size=(50, len(p1)))
        reports[name] = uz.evaluate(np.stack([1 - q, q], -1), data, levels=(0.8, 0.95))
    rows = [{**rep.to_dict(), "method": name, "fit_seconds": 0.1}
            for name, rep in reports.items()]
    table = pd.DataFrame(rows).set_index("method")
    table["failed"] = table["failed"].astype("boolean")
    result = uz.Comparison(table=table, reports=reports, posteriors={})
    return uz.write_report(result, path, data=data, settings="[compare]\nseed = 0\n"), result


def test_report_renders_table_and_figures_without_console_errors(browser, scene_report):
    path, result = scene_report
    browser.get(path.as_uri())
    assert browser.title.endswith("uqzoo report")
    assert "scene <&> 'quoted'" in browser.title

    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#comparison tbody tr'))"
        ".map(r => [r.dataset.method, r.cells.length]);")
    headers = browser.execute_script(
        "return document.querySelectorAll('#comparison thead tr:last-child th').length;")
    assert [name for name, _ in rows] == list(result.table.index)
    assert all(cells == headers for _, cells in rows)          # every row fills the table
    box = browser.execute_script(
        "const r = document.querySelector('#comparison').getBoundingClientRect();"
        "return [r.width, r.height];")
    assert box[0] > 300 and box[1] > 50

    images = browser.execute_script(
        "return Array.from(document.images).map(i => "
        "[i.closest('figure').id, i.complete, i.naturalWidth, i.naturalHeight, "
        "i.getBoundingClientRect().width]);")
    ids = [i[0] for i in images]
    assert ids == ["reliability-wide", "reliability-narrow", "coverage-plot",
                   "risk-coverage-plot", "maps-wide", "maps-narrow"]
    for fig_id, complete, width, height, shown in images:
        assert complete and width > 100 and height > 100 and shown > 100, fig_id

    verdict = browser.find_element("id", "verdict").text
    assert verdict.splitlines() == list(uz.report.verdict(result).sentences)

    # the page asked for nothing over the network: only itself
    requested = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name);")
    assert requested == []
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_the_security_policy_blocks_what_the_report_never_needs(browser, scene_report,
                                                               tmp_path):
    """A control: an external image added to the page is refused and logged, so the
    test above would see a report that tried to fetch anything."""
    path, _ = scene_report
    text = path.read_text(encoding="utf-8").replace(
        "</main>", '<img id="probe" src="https://example.invalid/x.png"></main>')
    (tmp_path / "probe.html").write_text(text, encoding="utf-8")
    browser.get((tmp_path / "probe.html").as_uri())
    assert browser.execute_script("return document.getElementById('probe').naturalWidth;") == 0
    logs = browser.get_log("browser")
    assert any(entry["level"] == "SEVERE" and "Content Security Policy" in entry["message"]
               for entry in logs), logs


def _shifted_report(path):
    """hsi-sim (small) under two perturbations; the fits are stand-ins (draws around a
    logistic regression), chosen so that a ranking changes under noise."""
    from sklearn.linear_model import LogisticRegression

    from uqzoo import methods as method_registry
    from uqzoo.posterior import Posterior

    def fit(name, spec, data, seed=0, progress_bar=False, **config):
        C, sd, draw_seed = {"laplace": (1.0, 0.3, 1), "ensemble": (0.05, 0.05, 2)}[name]
        spec = uz.MLPSpec(data.n_features, 2, hidden=())
        lr = LogisticRegression(C=C).fit(data.X_train, data.y_train)
        rng = np.random.default_rng(draw_seed)
        draws = {"layers.0.weight": lr.coef_[None] + sd * rng.normal(size=(40, 1, 8)),
                 "layers.0.bias": lr.intercept_[None] + sd * rng.normal(size=(40, 1))}
        return Posterior(spec=spec, method=name, config={}, seed=seed, draws=draws)

    data = uz.datasets.load("hsi-sim", size=24, n_bands=8, seed=0, progress_bar=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(method_registry, "fit", fit)
        result = uz.compare(data, ["laplace", "ensemble"], levels=(0.8,), copies=3,
                            perturbations=["illumination:0.8-1.2", "noise:10-20"],
                            progress_bar=False)
    return uz.write_report(result, path, data=data), result


def test_a_report_under_shift_shows_its_tables_figures_and_ranking_sentences(browser,
                                                                           tmp_path):
    path, result = _shifted_report(tmp_path / "shift.html")
    browser.get(path.as_uri())
    tables = browser.execute_script(
        "return Array.from(document.querySelectorAll('table.shift')).map(t => "
        "[t.dataset.perturbation, Array.from(t.tBodies[0].rows).map(r => r.dataset.method),"
        " Array.from(t.tBodies[0].rows).map(r => r.cells.length),"
        " t.querySelectorAll('thead tr:last-child th').length]);")
    assert [t[0] for t in tables] == ["illumination:0.8-1.2", "noise:10-20"]
    for _, rows, cells, headers in tables:
        assert rows == ["laplace", "ensemble"] and all(n == headers for n in cells)
    images = browser.execute_script(
        "return Array.from(document.querySelectorAll('.figs img'))"
        ".filter(i => i.closest('figure').id.startsWith('shift-')).map(i => "
        "[i.closest('figure').id, i.complete, i.naturalWidth, "
        "i.getBoundingClientRect().width]);")
    # one figure per headline metric, in uqzoo.headline's order (the one source of it)
    first = next(iter(result.reports.values()))
    keys = under_shift.headline_keys(first.to_dict(), first.levels)
    assert [i[0] for i in images] == [f"shift-{key.replace('@', '-').replace('.', '-')}"
                                      for key in keys]
    assert {"shift-accuracy", "shift-ece", "shift-brier", "shift-nll", "shift-coverage-0-8",
            "shift-interval_width-0-8", "shift-detection_auroc"} <= {i[0] for i in images}
    assert all(complete and width > 100 and shown > 100 for _, complete, width, shown in images)
    shown = browser.find_element("id", "verdict").text.splitlines()
    assert shown == list(uz.report.verdict(result).sentences)
    assert result.ranking_changes and shown[-len(result.ranking_changes):] == list(
        result.ranking_changes)
    assert browser.execute_script(
        "return performance.getEntriesByType('resource').length;") == 0
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def _eleven_method_report(path):
    """The scene of ``_scene_report`` with every method: the widest comparison table."""
    rng = np.random.default_rng(3)
    coords = np.array([(r, c) for r in range(8) for c in range(10)])
    p1 = rng.uniform(0.05, 0.95, size=len(coords))
    y = (rng.uniform(size=len(coords)) < p1).astype(int)
    X = rng.normal(size=(len(coords), 2))
    data = uz.ClassificationData(X, y, X, y, 2, p_true_test=np.stack([1 - p1, p1], 1),
                                 coords_test=coords, name="eleven",
                                 meta={"image_shape": (8, 10)})
    reports = {}
    for seed, name in enumerate(uz.methods.names()):
        draws = 1 if name == "map" else 50
        concentration = 4.0 * (seed + 1)
        q = np.random.default_rng(seed).beta(concentration * p1, concentration * (1 - p1),
                                             size=(draws, len(p1)))
        reports[name] = uz.evaluate(np.stack([1 - q, q], -1), data, levels=(0.8, 0.95))
    rows = [{**rep.to_dict(), "method": name, "fit_seconds": 1234.5}
            for name, rep in reports.items()]
    table = pd.DataFrame(rows).set_index("method")
    table["failed"] = table["failed"].astype("boolean")
    result = uz.Comparison(table=table, reports=reports, posteriors={})
    return uz.write_report(result, path, data=data), result


def test_the_comparison_table_fits_its_page_and_maps_are_named_above(browser, tmp_path):
    path, result = _eleven_method_report(tmp_path / "eleven.html")
    browser.get(path.as_uri())
    fits = browser.execute_script(
        "const t = document.querySelector('#comparison');"
        "const page = document.querySelector('main').getBoundingClientRect();"
        "const box = t.getBoundingClientRect(); const wrap = t.parentElement;"
        "return [box.left >= page.left, box.right <= page.right,"
        " wrap.scrollWidth <= wrap.clientWidth, box.width, page.width];")
    assert fits[:3] == [True, True, True], fits
    # the columns the ranking uses come first (after the method's name)
    headers = browser.execute_script(
        "return Array.from(document.querySelectorAll('#comparison thead tr:last-child th'))"
        ".map(h => h.textContent);")
    ranking = uz.report.verdict(result).rankings[0]
    assert ranking.metric == "interval_score"
    from uqzoo import headline
    first = next(c.label for c in headline.columns((0.8, 0.95), where="report")
                 if c.key == "interval_score@0.8")
    assert headers[:2] == ["method", first], headers
    # every column is still shown: the rest in a second table, scrolled with the name in view
    more = browser.execute_script(
        "return document.querySelectorAll('#comparison-more thead tr:last-child th').length;")
    assert more > 1
    sticky = browser.execute_script(
        "return getComputedStyle(document.querySelector('#comparison-more tbody th'))"
        ".position;")
    assert sticky == "sticky"
    # each method's name sits above its maps, not under them
    placed = browser.execute_script(
        "return Array.from(document.querySelectorAll('figure[id^=maps-]')).map(f => "
        "[f.id, f.querySelector('figcaption').getBoundingClientRect().bottom <= "
        "f.querySelector('img').getBoundingClientRect().top]);")
    assert len(placed) == len(uz.methods.names()) and all(above for _, above in placed), placed
