"""A comparison as one self-contained HTML page: table, figures and a verdict.

``uqzoo compare --out DIR`` writes ``DIR/report.html`` with
:func:`write_report`; in Python::

    result = uz.compare(data, ["hmc", "ensemble", "laplace"])
    uz.write_report(result, "report.html", data=data)

The page needs nothing but a browser: figures are PNG images embedded as
``data:`` URIs, the style sheet is inline, there is no script, and a
Content-Security-Policy forbids every network request, so the file reads the
same offline, attached to an e-mail or years later. Every string that comes
from the user (data set, class and method names, file paths, settings) is
HTML-escaped.

What the page holds, in reading order:

1. a verdict generated from the numbers (:func:`verdict`): which fits failed
   or did not converge, which methods' intervals under- or over-cover the
   true probability beyond Monte Carlo error, which are best calibrated;
   with recalibration (``uz.compare(recalibrate=...)``), per method whether
   it lowered the ECE and how coverage moved at each level; under shift
   (``uz.compare(perturbations=...)``), every change of the methods' ranking
   (:attr:`Comparison.ranking_changes`);
2. the data and its train/test split (and the calibration split);
3. the comparison table (:func:`report_table`): the columns of
   :attr:`Comparison.table` plus, per level, the High Confidence Set's size
   and its confident errors, the ECE variants and misclassification AUROC;
   recalibrated rows (``laplace+temperature``) sit under their originals,
   and a short table sets each beside its original (map, ECE, coverage,
   width, NLL);
4. with a reference posterior (``uz.compare(reference=...)``), "Closeness to
   the exact posterior": each method's fidelity scores beside their Monte
   Carlo yardstick, whether the reference passed its gate (said plainly when
   it did not), one figure per method (per-point 1-Wasserstein distance and
   interval width against the reference's) and, for hyperspectral scenes, a
   map of where each method departs from the reference;
5. under shift, one table per perturbation with each method's headline
   metrics clean and as mean ± sd over the perturbed copies (the numbers of
   :attr:`Comparison.shift`), and one error-bar figure per metric
   (:func:`uqzoo.plots.shift_errorbars`);
6. reliability diagrams, coverage against the nominal level and width against
   coverage (only when the true probabilities are known), risk–coverage
   curves, and for hyperspectral scenes the maps of probability, interval
   width and High Confidence Set of every method side by side;
7. the run's settings, when given (``uqzoo compare`` passes its resolved
   configuration, the file that repeats the run).

The file is rendered whole in memory and written atomically
(:func:`uqzoo.io.write_file_atomically`: temporary file, ``fsync``,
``os.replace``): an error or Ctrl-C while rendering or writing leaves no
half-written report, and an earlier report at the same path stays as it was.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import html
import io
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from uqzoo import headline
from uqzoo._validation import _show
from uqzoo._version import __version__
from uqzoo.comparison.verdict import (
    COVERAGE_Z,
    Verdict,
    _check_result,
    _copies_of,
    _finite,
    _is_true,
    _judge,
    _map_text,
    _recalibration_pairs,
    _settings,
    credible_missed_rates,
    report_table,
    verdict,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.headline import Column

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from uqzoo.comparison.compare import Comparison, Settings

__all__ = ["COVERAGE_Z", "Verdict", "render_report", "report_table", "verdict",
           "write_report"]     # the verdict's names too, as before the split

# PNG resolution of the embedded figures: sharp on a laptop screen, and a
# report of seven methods with maps stays near 1-2 MB.
_DPI = 96



# -- HTML --------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
background:#fafbfc;line-height:1.45}
main{max-width:1280px;margin:0 auto;padding:1.2rem 1.6rem 3rem}
h1{font-size:1.55rem;margin:.2rem 0}h2{font-size:1.2rem;margin:2rem 0 .6rem;
border-bottom:1px solid #d8dde6;padding-bottom:.25rem}h3{font-size:1rem;margin:1rem 0 .3rem}
.sub{color:#5b6577;font-size:.9rem;margin:0}
.verdict li{margin:.25rem 0}.verdict{background:#fff;border:1px solid #d8dde6;
border-left:4px solid #3b6fb6;padding:.5rem 1rem .5rem 2rem;border-radius:4px}
dl.data{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem;margin:0}
dl.data dt{color:#5b6577}dl.data dd{margin:0}
.scroll{overflow-x:auto;border:1px solid #d8dde6;border-radius:4px;background:#fff}
table{border-collapse:collapse;font-size:.82rem;white-space:nowrap}
th,td{padding:.3rem .55rem;border-bottom:1px solid #eceff4;text-align:right}
thead th{background:#f1f4f8;position:sticky;top:0}
thead tr.group th{text-align:center;border-left:1px solid #d8dde6}
th[scope=row]{text-align:left;background:#f7f9fb;position:sticky;left:0;z-index:1}
td.under{background:#fde2e1}td.over{background:#e1ecfd}td.ok{background:#e3f5e6}
tr.failed th,tr.failed td{color:#9b1c1c}tr.failed th::after{content:" ✗"}
tr.detector th,tr.detector td{color:#5b6577;font-style:italic}
td.na{color:#aab2bf}
tr.recalibrated th[scope=row]{padding-left:1.3rem;font-weight:normal}
table.shift td.sd{color:#3d4656}table.shift td.clean{color:#5b6577}
.figs{display:flex;flex-wrap:wrap;gap:1rem}
figure{margin:0;background:#fff;border:1px solid #d8dde6;border-radius:4px;padding:.4rem}
figure img{display:block;max-width:100%;height:auto}
figure.small{flex:0 1 400px}figure.small img{width:100%}
figcaption{font-size:.85rem;color:#3d4656;margin-top:.3rem;max-width:62rem}
.legend{font-size:.85rem;color:#3d4656}.legend dt{font-weight:600}
pre{background:#fff;border:1px solid #d8dde6;padding:.7rem;overflow-x:auto;font-size:.8rem}
footer{color:#5b6577;font-size:.8rem;margin-top:2.5rem}
.gate{background:#fff;border:1px solid #d8dde6;border-left:4px solid #2e7d32;padding:.5rem 1rem}
.gate.failed{border-left-color:#9b1c1c;background:#fdf1f0}
"""

# No script, no external anything: the page may load only its own inline
# style and data: images. A browser refuses (and logs) any other request.
_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        "base-uri 'none'; form-action 'none'")

def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _ordered_columns(table: pd.DataFrame, settings: Settings) -> list[_Shown]:
    """The table's columns in display order, described; columns of no headline last."""
    known = [c for c in headline.columns(settings.levels, settings.fars, where="report")
             if c.key in table.columns]
    keys = {c.key for c in known}
    out = [_Shown(c.key, c.headline.name, c.group, c.label, c.description, c.at)
           for c in known]
    return out + [_Shown(str(c), str(c), "other", str(c), "") for c in table.columns
                  if str(c) not in keys]


@dataclasses.dataclass(frozen=True)
class _Shown:
    """One column of the report's table: key, headline name, group, header, meaning."""

    key: str
    name: str
    group: str
    header: str
    description: str
    at: float | None = None


def _cell(name: str, value: object, css: str = "") -> str:
    """One cell; ``name`` is its headline's (``hcs_proportion``, not ``hcs_proportion@0.8``)."""
    missing = value is None or value is pd.NA or (
        isinstance(value, (float, np.floating)) and math.isnan(float(value)))
    if missing or (isinstance(value, str) and value == ""):
        return '<td class="na">—</td>'
    if name == "converged":
        text = "yes" if _is_true(value) else "NO"
    elif name == "failed":
        text = "FAILED" if _is_true(value) else "no"
    elif isinstance(value, (bool, np.bool_)):
        text = "yes" if value else "no"
    elif isinstance(value, (int, np.integer)):
        text = f"{int(value):,}"
    elif isinstance(value, (float, np.floating)):
        v = float(value)
        if name == "fit_seconds":
            text = f"{v:.1f}" if v >= 10 else f"{v:.2f}"
        elif name == "hcs_proportion":
            text = f"{v:.1%}"
        elif name in ("hcs_size", "hcs_errors", "num_draws", "n_test") and v.is_integer():
            text = f"{int(v):,}"
        else:
            text = f"{v:.4f}" if abs(v) < 1000 else f"{v:,.0f}"
    else:
        text = str(value)
    cls = f' class="{css}"' if css else ""
    return f"<td{cls}>{_e(text)}</td>"


# The first table's columns besides the ranking's own (rank, then the proper scores
# that rank): what a reader needs to follow the verdict, few enough to fit the page.
_FIRST_COLUMNS = ("failed", "num_draws", "converged", "coverage", "accuracy", "nll", "ece",
                  "detection_auroc")
_RANKED_BY = {"interval_score": "interval_score", "wasserstein1": "fidelity_wasserstein1",
              "nll": "nll", "brier": "brier"}


def _split_columns(columns: Sequence[_Shown], judged: Verdict
                   ) -> tuple[list[_Shown], list[_Shown]]:
    """(the first table's columns: rank and the ranking's scores first, then the verdict's
    few others; every other column, for the second table)."""
    order = ["rank"] + [_RANKED_BY[r.metric] for r in judged.rankings if r.metric in _RANKED_BY]
    order += list(_FIRST_COLUMNS)
    first: list[_Shown] = []
    for name in dict.fromkeys(order):
        first += [c for c in columns if c.name == name and c not in first]
    return first, [c for c in columns if c not in first]


def _rows_html(table: pd.DataFrame, columns: Sequence[_Shown], judged: Verdict,
               table_id: str, grouped: bool = True) -> str:
    """One table of the comparison; ``grouped`` adds a row naming each run of columns'
    group (the first table, in the ranking's order, would repeat them)."""
    groups: list[tuple[str, int]] = []
    for group in (c.group for c in columns):
        if groups and groups[-1][0] == group:
            groups[-1] = (group, groups[-1][1] + 1)
        else:
            groups.append((group, 1))
    head = ['<tr class="group"><th></th>'
            + "".join(f'<th colspan="{n}" scope="colgroup">{_e(g)}</th>' for g, n in groups)
            + "</tr>"] if grouped else []
    head.append('<tr><th scope="col">method</th>' + "".join(
        f'<th scope="col" title="{_e(c.description)}">{_e(c.header)}</th>'
        for c in columns) + "</tr>")
    body = []
    for name, row in table.iterrows():
        name = str(name)
        classes = []
        if "failed" in table.columns and _is_true(row["failed"]):
            classes.append("failed")
        if "kind" in table.columns and str(row["kind"]) in ("detector", "recalibrated"):
            classes.append(str(row["kind"]))
        cells = []
        for column in columns:
            css = ""
            if column.name == "coverage" and _finite(row[column.key]):
                css = ("under" if column.at in judged.under_cover.get(name, ())
                       else "over" if column.at in judged.over_cover.get(name, ()) else "ok")
            cells.append(_cell(column.name, row[column.key], css))
        cls = f' class="{" ".join(classes)}"' if classes else ""
        body.append(f'<tr{cls} data-method="{_e(name)}"><th scope="row">{_e(name)}</th>'
                    + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table id="{table_id}"><thead>{"".join(head)}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _table_html(table: pd.DataFrame, judged: Verdict, settings: Settings) -> str:
    """The comparison in two tables: the ranking's columns and the verdict's first, to fit
    the page; every other column below, scrolled sideways with the method in view."""
    columns = _ordered_columns(table, settings)
    first, rest = _split_columns(columns, judged)
    parts = [_rows_html(table, first, judged, "comparison", grouped=False)]
    if rest:
        parts.append('<p class="sub" id="table-more">Every other column (scroll sideways; '
                     'the method stays in view):</p>'
                     + _rows_html(table, rest, judged, "comparison-more"))
    legend = "".join(f"<dt>{_e(c.header)}</dt><dd>{_e(c.description)}</dd>"
                     for c in _first_of_each([*first, *rest]) if c.description)
    return ("".join(parts)
            + f'<details class="legend"><summary>What the columns mean</summary>'
            f'<dl class="data">{legend}</dl></details>')


def _first_of_each(columns: Sequence[_Shown]) -> list[_Shown]:
    """One column per headline: the legend explains ``coverage`` once, not per level."""
    seen: set[str] = set()
    out = []
    for c in columns:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)
    return out


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    # Metadata off: no software version or date in the bytes of an image.
    fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(fig: Figure, alt: str, caption: str, fig_id: str, small: bool = False,
            caption_first: bool = False) -> str:
    """A figure; ``caption_first`` puts its caption above the image (a heading)."""
    cls = ' class="small"' if small else ""
    image = f'<img alt="{_e(alt)}" src="data:image/png;base64,{_png(fig)}">'
    caption = f"<figcaption>{caption}</figcaption>"
    inner = caption + image if caption_first else image + caption
    return f'<figure id="{_e(fig_id)}"{cls}>{inner}</figure>'


def _width_scale(reports: Mapping[str, Any], level: float) -> float:
    """The widest interval at ``level`` over every report: one width colour scale."""
    top = 0.0
    for rep in reports.values():
        at = [i for i, lv in enumerate(rep.levels) if math.isclose(float(lv), level)]
        if at and rep.interval_width is not None:
            width = np.asarray(rep.interval_width[at[0]], dtype=np.float64)
            if np.isfinite(width).any():
                top = max(top, float(np.nanmax(width)))
    return top if top > 0 else 1.0


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "x"


def _check_same_data(data: Any, settings: Settings) -> None:
    """A report describes its comparison's data; maps drawn from other data would lie."""
    if data is None:
        return
    name, n_test = getattr(data, "name", None), getattr(data, "n_test", None)
    if name != settings.data_name or n_test != settings.n_test:
        raise InvalidInputError(
            f"data is {name!r} with {n_test} test points, but the comparison was run on "
            f"{settings.data_name!r} with {settings.n_test}: pass the data it compared "
            "(or none)")
    if settings.test_fingerprint is not None:
        from uqzoo.comparison.compare import fingerprint_test_set

        if fingerprint_test_set(data) != settings.test_fingerprint:
            raise InvalidInputError(
                f"data is {name!r} with {n_test} test points like the comparison's, but other "
                "test points or labels (another seed or split?): pass the data it compared "
                "(or none)")


def _describe_data(settings: Settings) -> str:
    items = [*settings.data, ("levels", ", ".join(f"{lv:g}" for lv in settings.levels)),
             ("HCS threshold δ", f"{settings.delta:g}")]
    return '<dl class="data">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>"
                                         for k, v in items) + "</dl>"


def _recalibration_html(result: Comparison, table: pd.DataFrame) -> str:
    """Each recalibrated row beside its original: the map, ECE, coverage, width, NLL."""
    pairs = _recalibration_pairs(table)
    if not pairs:
        return ""
    maps = dict((result.recalibration or {}).get("rows", {}))
    levels = _settings(result).levels
    columns = [("ece", "ECE")] + [
        (f"{prefix}@{level:g}", f"{header} {level:g}") for level in levels
        for prefix, header in (("coverage", "coverage"), ("interval_width", "width"))
        if f"{prefix}@{level:g}" in table.columns] + [("nll", "NLL")]
    columns = [(c, h) for c, h in columns if c in table.columns]
    head = ('<tr><th scope="col">method</th><th scope="col">map</th>'
            + "".join(f'<th scope="col">{_e(h)}: before → after</th>' for _, h in columns)
            + "</tr>")
    body = []
    for name, original in pairs:
        cells = []
        for column, _ in columns:
            a, b = table.loc[original, column], table.loc[name, column]
            text = (f"{float(a):.4f} → {float(b):.4f}" if _finite(a) and _finite(b)
                    else "—")
            full = [repr(float(v)) if _finite(v) else "" for v in (a, b)]
            cells.append(f'<td data-key="{_e(column)}" data-before="{_e(full[0])}" '
                         f'data-after="{_e(full[1])}">{_e(text)}</td>')
        body.append(f'<tr data-method="{_e(original)}" data-recalibrated="{_e(name)}">'
                    f'<th scope="row">{_e(original)}</th>'
                    f"<td>{_e(_map_text(name, maps.get(name)))}</td>{''.join(cells)}</tr>")
    rec = result.recalibration or {}
    where = (f" fitted on {rec['n_calibration']:,} training points held out from every fit"
             if rec else "")
    return (f'<h2 id="recalibration">Recalibration</h2><p>Each method beside its '
            f"recalibrated self (the rows <code>METHOD+MAP</code> of the table above): the map"
            f"{_e(where)}, applied to every posterior draw's logits, and what it does to the "
            f"calibration and to the credible intervals. The verdict says it in words.</p>"
            f'<div class="scroll"><table id="recalibration-table"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _conformal_html(result: Comparison) -> str:
    """Each row's own label sets beside its split-conformal sets (compare(conformal=...))."""
    record = result.conformal
    judged = {n: r.conformal for n, r in result.reports.items()
              if getattr(r, "conformal", None) is not None}
    if not record or not judged:
        return ""
    truth = any(j.conformal.conditional_coverage is not None for j in judged.values())
    levels = next(iter(result.reports.values())).levels
    heads = ["own coverage", "own size", *(["own worst 10 %"] if truth else []),
             "conformal coverage", "conformal size", "singletons",
             *(["conformal worst 10 %"] if truth else []), "conformal HCS missed",
             *(f"credible HCS missed {lv:g}" for lv in levels)]
    head = ('<tr><th scope="col">method</th>'
            + "".join(f'<th scope="col">{_e(h)}</th>' for h in heads) + "</tr>")

    def cov(sets: Any) -> str:
        lo, hi = sets.coverage_interval
        return f"{sets.coverage:.3f} [{lo:.3f}, {hi:.3f}]"

    body = []
    for name, j in judged.items():
        cells = [cov(j.plain), f"{j.plain.mean_size:.2f}"]
        if truth:
            cells.append("—" if j.plain.worst_decile_coverage is None
                         else f"{j.plain.worst_decile_coverage:.3f}")
        cells += [cov(j.conformal), f"{j.conformal.mean_size:.2f}",
                  f"{j.conformal.singleton_rate:.1%}"]
        if truth:
            cells.append("—" if j.conformal.worst_decile_coverage is None
                         else f"{j.conformal.worst_decile_coverage:.3f}")
        cells.append("—" if j.hcs_missed_rate is None else f"{j.hcs_missed_rate:.1%}")
        credible = dict(credible_missed_rates(result.reports[name]))
        cells += [f"{credible[lv]:.1%}" if lv in credible else "—" for lv in levels]
        body.append(f'<tr data-method="{_e(name)}"><th scope="row">{_e(name)}</th>'
                    + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    figure = ""
    if truth:
        from uqzoo import plots

        shown = {n: r for n, r in result.reports.items()
                 if getattr(r, "conformal", None) is not None}
        figure = _figure(plots.conditional_coverage_plot(shown),
                         "distribution of exact conditional coverage, own and conformal sets",
                         "Share of test points whose set covers at most x of the true "
                         "probability mass, P(y ∈ C(x) | x): dashed the method's own sets, "
                         "solid its conformal sets, dotted the level. Mass left of the "
                         "line is where a set covers less than it claims.",
                         "conditional-coverage-plot")
    kind = "class-conditional (Mondrian)" if record["mondrian"] else "marginal"
    conditional = (" With the true probabilities known, <em>worst 10 %</em> is the mean "
                   "exact conditional coverage P(y ∈ C(x) | x) over the tenth of test points "
                   "where it is lowest: conformal coverage is marginal, not conditional."
                   if truth else "")
    return (f'<h2 id="conformal">Conformal label sets</h2><p>Each method\'s own label sets '
            f"(its most probable labels until their probability reaches "
            f"{float(record['level']):g}) beside split-conformal "
            f"{_e(str(record['score']).upper())} sets at the same level, {_e(kind)}, "
            f"calibrated on {int(record['n_calibration']):,} training points held out from "
            f"every fit (seed {int(record['seed'])}). Coverage of the test labels with its "
            f"95 % Clopper–Pearson interval; size: mean labels per set. The conformal HCS "
            f"dismisses a point as not the target when its probability is below a threshold "
            f"set by conformal risk control so that at most α = "
            f"{float(record['alpha']):g} of targets are dismissed in expectation; compare "
            f"the credible-interval HCS's share at each credible level (δ = "
            f"{float(_settings(result).delta):g}).{conditional} The "
            f"verdict says whether conformalization fixes each method's coverage.</p>"
            f'<div class="scroll"><table id="conformal-table"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{figure}')


def _shift_row(shift: pd.DataFrame, column: Column) -> pd.Series | None:
    """The row of one method's and perturbation's ``Comparison.shift`` that a headline
    column reads: the first of its metric (and level) over all classes, as ``to_dict``
    reads the clean table, or the metric's one row of a class (detection AUROC: class 1)."""
    rows = shift[shift.metric == column.headline.name]
    if column.at is not None:
        rows = rows[np.isclose(rows.level.astype(float).fillna(-1.0), column.at)]
    else:
        rows = rows[rows.level.isna()]
    pooled = rows[rows["class"].isna()]
    if not pooled.empty:
        return pooled.iloc[0]
    return rows.iloc[0] if len(rows) == 1 else None


def _shift_cells(key: str, row: pd.Series | None, n_copies: int) -> str:
    """The clean and the shifted cell of one headline key; the numbers in full in data-*."""
    if row is None:
        return (f'<td class="na" data-key="{_e(key)}">—</td>'
                f'<td class="na" data-key="{_e(key)}">—</td>')
    clean, mean, sd, k = float(row["clean"]), float(row["mean"]), float(row["sd"]), int(row["k"])
    clean_text = f"{clean:.4f}" if math.isfinite(clean) else "—"
    if k == 0:
        shifted = "n/a"
    elif not math.isfinite(sd):
        shifted = f"{mean:.4f} (1 copy)"
    else:
        shifted = f"{mean:.4f} ± {sd:.4f}" + (f" ({k} of {n_copies})" if k < n_copies else "")
    data = (f'data-key="{_e(key)}" data-clean="{_e(repr(clean))}" '
            f'data-mean="{_e(repr(mean))}" data-sd="{_e(repr(sd))}" data-k="{k}"')
    return (f'<td class="clean" data-key="{_e(key)}">{_e(clean_text)}</td>'
            f'<td class="shifted" {data}>{_e(shifted)}</td>')


def _shift_html(result: Comparison) -> str:
    """"Under shift": a table per perturbation (clean, mean ± sd over the copies) and one
    error-bar figure per headline metric."""
    from uqzoo import plots
    from uqzoo import shift as under_shift

    if result.shift is None or result.shift.empty:
        return ""
    shift = result.shift
    reports = {name: rep for name, rep in result.reports.items()
               if getattr(rep, "shift_copies", None) is not None}
    methods = [str(m) for m in dict.fromkeys(shift.method)]
    first = next(iter(reports.values()), None)
    shown = (under_shift.headline_columns(first.to_dict(), first.levels)
             if first is not None else [])
    if not shown:
        return ""
    failed = set()
    if "failed" in result.table.columns:
        failed = {str(n) for n, v in result.table["failed"].items() if _is_true(v)}
    parts = ['<h2 id="shift">Under shift</h2>',
             "<p>Every method was evaluated again on perturbed copies of the test set "
             "(<code>uz.perturb</code>), the same copies for every method. Per headline "
             "metric: its value on the clean test set, and its mean ± standard deviation "
             "over the copies (how far the metric moves with the acquisition conditions; "
             "not a standard error). Where the ranking of the methods changes, the verdict "
             "says so.</p>"]
    for label in dict.fromkeys(shift.perturbation.astype(str)):
        n_copies = _copies_of(result, label)
        truth = ""
        if first is not None and first.shift_copies is not None:
            sub = first.shift_copies[first.shift_copies.perturbation == label]
            truth = ", ".join(dict.fromkeys(str(t) for t in sub.p_true))
        sub = shift[shift.perturbation.astype(str) == label]
        head = ['<tr class="group"><th></th>' + "".join(
            f'<th colspan="2" scope="colgroup" title="{_e(c.description)}">{_e(c.title)}</th>'
            for c in shown) + "</tr>",
                '<tr><th scope="col">method</th>' + "".join(
            '<th scope="col">clean</th><th scope="col">shifted</th>' for _ in shown) + "</tr>"]
        body = []
        for method in methods:
            rows = sub[sub.method.astype(str) == method]
            cells = "".join(_shift_cells(c.key, _shift_row(rows, c), n_copies)
                            for c in shown)
            css = ' class="failed"' if method in failed else ""
            body.append(f'<tr{css} data-method="{_e(method)}"><th scope="row">{_e(method)}'
                        f"</th>{cells}</tr>")
        truth_text = f"; true probabilities of the copies: {truth}" if truth else ""
        parts.append(f'<h3 id="shift-{_e(_slug(label))}">{_e(label)}: {n_copies} copies'
                     f"{_e(truth_text)}</h3>"
                     f'<div class="scroll"><table class="shift" id="shift-table-'
                     f'{_e(_slug(label))}" data-perturbation="{_e(label)}"><thead>'
                     f'{"".join(head)}</thead><tbody>{"".join(body)}</tbody></table></div>')
    figs = []
    for c in shown:
        fig = plots.shift_errorbars(reports, c.key)
        figs.append(_figure(fig, f"{c.key} clean and under shift, per method",
                            f"<b>{_e(c.title)}</b>: black, the clean value; coloured, the mean "
                            "over each perturbation's copies with ±1 sd bars.",
                            f"shift-{_slug(c.key)}", small=True))
    parts.append(f'<div class="figs">{"".join(figs)}</div>')
    return "".join(parts)


def _closeness_html(result: Comparison) -> str:
    """"Closeness to the exact posterior": the fidelity table with its MC yardstick,
    the reference's gate, one figure per method and, on HSI scenes, the maps."""
    from uqzoo import plots
    from uqzoo.fidelity import METRICS

    reference = result.settings.reference if result.settings is not None else None
    if reference is None or not result.fidelity:
        return ""
    gate = reference.gate
    if reference.row is not None:
        source = (f"the comparison's own <code>{_e(reference.row)}</code> fit. It is not "
                  f"independent of the {_e(reference.row)} row, whose closeness is perfect by "
                  "construction, and it is a reference only if it passes the gate")
    elif reference.source == "posterior":
        source = "a reference posterior passed in (<code>uz.compare(reference=...)</code>)"
    elif reference.source == "auto":
        source = (f"a reference posterior sampled for this comparison "
                  f"(<code>reference=\"auto\"</code>, seed {reference.seed}, independent of "
                  f"every row)")
    else:
        source = f"the saved reference <code>{_e(reference.source)}</code>"
    numbers = (f"largest R-hat {gate.rhat_max:.4f}, smallest bulk ESS {gate.ess_bulk_min:.0f} "
               f"and tail ESS {gate.ess_tail_min:.0f}, divergence rate "
               f"{gate.divergence_rate:.2g}")
    if reference.passed:
        gate_html = (f'<p class="gate" id="reference-gate" data-passed="true">The reference '
                     f"passed its gate ({_e(numbers)}): within Monte Carlo error it is the exact "
                     "posterior of this network and prior on the training data.</p>")
    else:
        reasons = "".join(f"<li>{_e(m)}</li>" for m in gate.messages)
        gate_html = (f'<div class="gate failed" id="reference-gate" data-passed="false"><p>'
                     f"<strong>The reference did NOT pass its gate</strong> ({_e(numbers)}), so "
                     "it is no reference: the figures below measure closeness to an "
                     "unconverged HMC run, not to the exact posterior, and the verdict ranks "
                     f"nothing by them. Why:</p><ul>{reasons}</ul></div>")
    columns = [(name, headline.get(f"fidelity_{name}")) for name in METRICS]
    head = ['<tr class="group"><th></th>' + "".join(
        f'<th colspan="2" scope="colgroup" title="{_e(h.description)}">{_e(h.label)}</th>'
        for _, h in columns) + "</tr>",
            '<tr><th scope="col">method</th>' + "".join(
        '<th scope="col">value</th><th scope="col">MC floor ± sd</th>' for _ in columns)
            + "</tr>"]
    body = []
    for name, fid in result.fidelity.items():
        cells = []
        for metric, _ in columns:
            score = fid[metric]
            data = (f'data-key="{_e(metric)}" data-value="{_e(repr(score.value))}" '
                    f'data-floor="{_e(repr(score.mc_floor))}" data-sd="{_e(repr(score.mc_sd))}"')
            within = "ok" if score.within_mc_error() else ""
            css = f' class="{within}"' if within else ""
            cells.append(f"<td{css} {data}>{_e(f'{score.value:.4f}')}</td>"
                         f'<td class="clean">{_e(f"{score.mc_floor:.4f} ± {score.mc_sd:.4f}")}'
                         "</td>")
        label = f"{name} (the reference itself)" if name == reference.row else name
        body.append(f'<tr data-method="{_e(name)}"><th scope="row">{_e(label)}</th>'
                    f'{"".join(cells)}</tr>')
    legend = "".join(f"<dt>{_e(h.label)}</dt><dd>{_e(h.description)}</dd>" for _, h in columns)
    parts = ['<h2 id="closeness">Closeness to the exact posterior</h2>',
             f"<p>Each method's posterior predictive on the {reference.n_points:,} test points "
             f"against a reference posterior of the same network and prior, "
             f"{reference.num_draws:,} HMC draws: {source}. Beside each figure its Monte "
             f"Carlo yardstick: what a method equal to the reference would score from "
             f"finite draws alone (floor ± sd; green: the method is within it). "
             f"Intervals at level {reference.level:g}.</p>",
             gate_html,
             f'<div class="scroll"><table class="fidelity" id="fidelity-table"><thead>'
             f'{"".join(head)}</thead><tbody>{"".join(body)}</tbody></table></div>',
             f'<details class="legend"><summary>What the columns mean</summary>'
             f'<dl class="data">{legend}</dl></details>']
    shown = {n: f for n, f in result.fidelity.items() if n != reference.row}
    figs = []
    for name, fid in shown.items():
        fig = plots.fidelity_plot(fid)
        figs.append(_figure(fig, f"closeness of {name} to the reference",
                            f"<b>{_e(name)}</b>: left, each test point's 1-Wasserstein distance "
                            "to the reference (solid: mean; dashed: its Monte Carlo floor); "
                            "right, interval width against the reference's (below the "
                            "diagonal: too narrow).", f"fidelity-{_slug(name)}"))
    if figs:
        parts.append(f'<div class="figs">{"".join(figs)}</div>')
    mapped = [rep for name, rep in result.reports.items() if name in shown
              and rep.coords is not None and rep.image_shape is not None]
    if mapped and shown:
        fig = plots.fidelity_maps(shown, mapped[0])
        parts.append(_figure(fig, "maps of the distance to the reference",
                             "Test pixels of the scene per method: 1-Wasserstein distance "
                             "between the method's draws of p and the reference's, one colour "
                             "scale for all. Blank pixels trained or were not labelled.",
                             "fidelity-maps"))
    return "".join(parts)


def _figures_html(result: Comparison, data: Any) -> str:
    from uqzoo import plots

    reports = dict(result.reports)
    if not reports:
        return ("<p>No figures: the comparison holds no evaluated methods.</p>")
    parts = []
    parts.append('<h2 id="reliability">Reliability</h2>')
    figs = []
    for name, rep in reports.items():
        fig = plots.reliability_diagram(rep)
        figs.append(_figure(fig, f"reliability diagram of {name}",
                            f"<b>{_e(name)}</b>: accuracy against confidence; on the diagonal "
                            "is calibrated, below it overconfident. Bars: Clopper–Pearson "
                            "95 % intervals; lower panel: share of points per bin.",
                            f"reliability-{_slug(name)}", small=True))
    parts.append(f'<div class="figs">{"".join(figs)}</div>')

    has_truth = all(rep.p_true is not None for rep in reports.values())
    parts.append('<h2 id="coverage">Coverage and width</h2>')
    if has_truth:
        fig = plots.coverage_plot(reports)
        parts.append(_figure(fig, "coverage against nominal level, and width against coverage",
                             "Left: empirical coverage of the true probability against the "
                             "nominal level; the grey band is the nominal level ± 1.96 "
                             "binomial standard errors, where a method that covers as "
                             "claimed falls. Right: mean interval width against coverage "
                             "(labels: level); up and to the left is better.",
                             "coverage-plot"))
    else:
        parts.append("<p>Not shown: the data carry no true probabilities, so the coverage of "
                     "credible intervals cannot be measured (simulated data such as "
                     "<code>sim-teacher</code> or <code>hsi-sim</code> have them).</p>")

    parts.append('<h2 id="risk-coverage">Risk–coverage</h2>')
    fig = plots.risk_coverage_plot(reports)
    parts.append(_figure(fig, "risk-coverage curves",
                         "Error rate among the points kept when the least confident are "
                         "set aside first; lower is better (AURC in the legend).",
                         "risk-coverage-plot"))

    mapped = {name: rep for name, rep in reports.items()
              if rep.coords is not None and rep.image_shape is not None}
    if mapped:
        level = next(iter(mapped.values())).levels[0]
        parts.append('<h2 id="maps">Maps</h2>')
        parts.append(f"<p>Test pixels of the scene per method: posterior mean probability "
                     f"of the target, width of the {level:g} credible interval, and the High "
                     f"Confidence Set at level {level:g} (blue: confidently background, red: "
                     f"confidently target, grey: uncertain). Blank pixels trained or were "
                     f"not labelled. One width colour scale serves every method.</p>")
        top = _width_scale(mapped, level)
        for name, rep in mapped.items():
            fig = plots.hsi_maps(rep, data, level=level, width_max=top)
            parts.append(_figure(fig, f"maps of {name}", f"<b>{_e(name)}</b>",
                                 f"maps-{_slug(name)}", caption_first=True))
    return "".join(parts)


def render_report(result: Comparison, *, data: Any = None, title: str | None = None,
                  settings: str | None = None) -> str:
    """The report of a comparison as one self-contained HTML page.

    Parameters
    ----------
    result : Comparison
        What :func:`uqzoo.compare` returns.
    data : ClassificationData, optional
        The data compared, for the pixel coordinates of its maps (the page
        describes the data from :attr:`Comparison.settings`). Other data than
        the comparison's is refused.
    title : str, optional
        The page's heading; default names the data set.
    settings : str, optional
        Text shown verbatim (escaped) under "Run settings", e.g. the resolved
        configuration file of the run.

    Returns
    -------
    str
        The HTML page.
    """
    result = _check_result(result)
    if title is not None and not isinstance(title, str):
        raise InvalidTypeError(f"title must be a string, got {_show(title)}")
    if settings is not None and not isinstance(settings, str):
        raise InvalidTypeError(f"settings must be a string (e.g. TOML text), got "
                               f"{_show(settings)}")
    resolved = _settings(result, data)
    if result.settings is not None:
        _check_same_data(data, resolved)
    table = report_table(result)
    judged = _judge(table, None, resolved.levels, strict=False, result=result)
    data_name = resolved.data_name
    heading = title if title is not None else (
        f"Which uncertainty to trust on {data_name}?" if data_name
        else "Which uncertainty to trust?")
    methods = [str(n) for n in table.index]
    generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    verdict_html = "".join(
        f'<li class="answer"><strong>{_e(s)}</strong></li>' if i == 0 and judged.answer
        else f"<li>{_e(s)}</li>" for i, s in enumerate(judged.sentences))
    settings_html = (f'<h2 id="settings">Run settings</h2><p>Repeat this run with '
                     f"<code>uqzoo compare --config config.toml</code> (the file beside this "
                     f"report):</p><pre>{_e(settings)}</pre>" if settings else "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="uqzoo {_e(__version__)}">
<title>{_e(heading)} — uqzoo report</title>
<style>{_CSS}</style>
</head>
<body>
<main>
<header>
<h1>{_e(heading)}</h1>
<p class="sub">uqzoo {_e(__version__)} report: {len(methods)} rows ({_e(", ".join(methods))}),
generated {_e(generated)}.</p>
</header>
<h2 id="verdict-heading">Verdict</h2>
<ul class="verdict" id="verdict">{verdict_html}</ul>
<h2 id="data">Data and split</h2>
{_describe_data(resolved)}
<h2 id="table">Comparison</h2>
{_table_html(table, judged, resolved)}
{_recalibration_html(result, table)}
{_conformal_html(result)}
{_closeness_html(result)}
{_shift_html(result)}
{_figures_html(result, data)}
{settings_html}
<footer>Made by uqzoo {_e(__version__)}. This page is self-contained: figures are
embedded, nothing is fetched from the network.</footer>
</main>
</body>
</html>
"""


def write_report(result: Comparison, path: str | Path, *, data: Any = None,
                 title: str | None = None, settings: str | None = None,
                 overwrite: bool = False) -> Path:
    """Write the HTML report of a comparison, atomically.

    The page (see :func:`render_report` and the module docstring) is rendered
    whole in memory, then written to a temporary file beside ``path``,
    flushed to disk and renamed over ``path``
    (:func:`uqzoo.io.write_file_atomically`): a failure or Ctrl-C at any point
    leaves no half-written report and no temporary file, and an existing
    report at ``path`` stays as it was.

    Parameters
    ----------
    result : Comparison
    path : str or os.PathLike
        The ``.html`` file; its folder must exist.
    data : ClassificationData, optional
        See :func:`render_report`.
    title : str, optional
    settings : str, optional
    overwrite : bool
        Replace an existing file at ``path`` (a symbolic link is always refused).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    OutputPathError
        The path cannot be written (missing folder, a link, a directory, an
        existing file without ``overwrite``, read-only file system, full
        disk); checked before anything is rendered.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("iris")
    >>> result = uz.compare(data, ["laplace"], progress_bar=False)    # doctest: +SKIP
    >>> uz.write_report(result, "report.html", data=data)             # doctest: +SKIP
    PosixPath('report.html')
    """
    from uqzoo.io import check_output_file, write_file_atomically

    check_output_file(path, what="path", example="report.html",   # before the rendering
                      overwrite=overwrite)
    page = render_report(result, data=data, title=title, settings=settings)
    return write_file_atomically(path, page.encode("utf-8"), what="path", overwrite=overwrite)
