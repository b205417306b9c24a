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
4. under shift, one table per perturbation with each method's headline
   metrics clean and as mean ± sd over the perturbed copies (the numbers of
   :attr:`Comparison.shift`), and one error-bar figure per metric
   (:func:`uqzoo.plots.shift_errorbars`);
5. reliability diagrams, coverage against the nominal level and width against
   coverage (only when the true probabilities are known), risk–coverage
   curves, and for hyperspectral scenes the maps of probability, interval
   width and High Confidence Set of every method side by side;
6. the run's settings, when given (``uqzoo compare`` passes its resolved
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

from uqzoo._validation import _show
from uqzoo.errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from uqzoo.compare import Comparison

__all__ = ["COVERAGE_Z", "Verdict", "render_report", "report_table", "verdict",
           "write_report"]

# Coverage at nominal level L on N test points is judged against the binomial
# band L ± COVERAGE_Z · sqrt(L (1 − L) / N): the two-sided 95 % normal quantile,
# the same band uqzoo.plots.coverage_plot shades, so the verdict and the
# figure agree. Points are treated as independent; neighbouring pixels of a
# scene are not, so the band is then too narrow rather than too wide.
COVERAGE_Z = 1.959963984540054

# PNG resolution of the embedded figures: sharp on a laptop screen, and a
# report of seven methods with maps stays near 1-2 MB.
_DPI = 96

# Exactly "name@level": not the "<column>_shift_mean" columns of a shifted run.
_COVERAGE_COLUMN = re.compile(r"^coverage@([0-9.eE+-]+)$")
_LEVEL_COLUMN = re.compile(r"^(?:coverage|interval_width|hcs_proportion)@([0-9.eE+-]+)$")


# -- the wide table ---------------------------------------------------------------------

def _check_result(result: object) -> Comparison:
    from uqzoo.compare import Comparison

    if not isinstance(result, Comparison):
        raise InvalidTypeError(f"result must be a uqzoo Comparison (what uz.compare returns), "
                               f"got {_show(result)}")
    return result


def _hcs_counts(report: Any, level: float) -> tuple[int, int]:
    """(size, confident errors) of a report's High Confidence Set at ``level``,
    summed over the judged classes; errors are confident misses plus confident
    false alarms."""
    t = report.table
    at = t.level.notna() & np.isclose(t.level.astype(float).fillna(-1.0), level)

    def total(metric: str) -> int:
        return round(float(t.loc[at & (t.metric == metric), "value"].sum()))

    return total("hcs_size"), total("hcs_missed_targets") + total("hcs_false_targets")


def report_table(result: Comparison) -> pd.DataFrame:
    """The comparison table of a report: :attr:`Comparison.table` and more.

    Parameters
    ----------
    result : Comparison
        What :func:`uqzoo.compare` returns.

    Returns
    -------
    pandas.DataFrame
        One row per method (classical detectors last, as in the comparison),
        with the comparison's columns and, for every method with a report:
        ``n_test`` (points evaluated), ``hcs_size@L`` and ``hcs_errors@L``
        (confident misses plus confident false alarms of the High Confidence
        Set at level L), ``mce``, ``adaptive_ece``, ``classwise_ece``,
        ``ece_quantile`` (top-label, equal-mass bins), ``eaurc`` and
        ``misclassification_auroc``.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=300)
    >>> result = uz.compare(data, ["laplace"], progress_bar=False)     # doctest: +SKIP
    >>> uz.report.report_table(result).loc["laplace", "hcs_errors@0.8"]  # doctest: +SKIP
    """
    result = _check_result(result)
    table = result.table.copy()
    levels = _levels_of(table)
    extra: dict[str, dict[str, Any]] = {}
    for name, report in result.reports.items():
        d = report.to_dict()
        row: dict[str, Any] = {"n_test": report.n_points}
        for level in report.levels:
            size, errors = _hcs_counts(report, level)
            row[f"hcs_size@{level:g}"] = size
            row[f"hcs_errors@{level:g}"] = errors
        for key in ("mce", "adaptive_ece", "classwise_ece", "eaurc", "misclassification_auroc"):
            if key in d:
                row[key] = d[key]
        quantile = report.table[(report.table.metric == "ece")
                                & report.table.variant.str.startswith("top_label, quantile")]
        if not quantile.empty:
            row["ece_quantile"] = float(quantile.value.iloc[0])
        extra[name] = row
        levels = levels or tuple(report.levels)
    if extra:
        more = pd.DataFrame.from_dict(extra, orient="index")
        more = more[[c for c in more.columns if c not in table.columns]]
        table = table.join(more, how="left")
    return table


def _levels_of(table: pd.DataFrame) -> tuple[float, ...]:
    found = []
    for column in table.columns:
        match = _LEVEL_COLUMN.match(str(column))
        if match:
            found.append(float(match.group(1)))
    return tuple(sorted(set(found)))



# -- the verdict ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the numbers of a comparison say, as data and as sentences.

    Attributes
    ----------
    failed : dict of str to str
        Fits flagged as failed (:class:`uqzoo.evaluate.FitFailure`), with their
        flags (e.g. ``"one_class"``).
    not_converged : tuple of str
        Methods whose own diagnostics report non-convergence.
    under_cover, over_cover : dict of str to tuple of float
        Methods whose coverage of the true probability lies below (above) the
        nominal level L by more than ``COVERAGE_Z`` binomial standard errors
        sqrt(L(1 − L)/N), and the levels where it does.
    cover_as_claimed : tuple of str
        Methods within that band at every level.
    best_calibrated : tuple of str
        Methods not flagged as failed, by ascending top-label ECE.
    coverage_known : bool
        Whether the table had coverage columns (true probabilities known).
    sentences : tuple of str
        The verdict in words, in the order the report shows it.
    recalibration_lowers_ece : dict of str to bool
        For every method with a recalibrated row (kind ``"recalibrated"``,
        named ``"<method>+<map>"``): whether the recalibrated ECE is lower.
    ranking_changes : tuple of str
        Under shift: the comparison's :attr:`~uqzoo.compare.Comparison.ranking_changes`
        (also among the sentences).
    """

    failed: Mapping[str, str]
    not_converged: tuple[str, ...]
    under_cover: Mapping[str, tuple[float, ...]]
    over_cover: Mapping[str, tuple[float, ...]]
    cover_as_claimed: tuple[str, ...]
    best_calibrated: tuple[str, ...]
    coverage_known: bool
    sentences: tuple[str, ...]
    recalibration_lowers_ece: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    ranking_changes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "\n".join(self.sentences)


def _names(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _is_true(value: object) -> bool:
    return value is True or (isinstance(value, (bool, np.bool_)) and bool(value))


def _is_false(value: object) -> bool:
    return value is False or (isinstance(value, (bool, np.bool_)) and not bool(value))


def _finite(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(
        float(value))


def verdict(result_or_table: Comparison | pd.DataFrame, *,
            n_points: int | Mapping[str, int] | None = None) -> Verdict:
    """The verdict of a comparison, generated from its numbers.

    Parameters
    ----------
    result_or_table : Comparison or pandas.DataFrame
        A comparison, or a table with its columns (one row per method; the
        ``kind``, ``converged``, ``failed``, ``flags``, ``coverage@L`` and
        ``ece`` columns are used where present, rows of kind ``"detector"``
        are skipped).
    n_points : int or dict of str to int, optional
        Test points per method, for the Monte Carlo band of coverage. Taken
        from the reports of a Comparison, or from an ``n_test`` column;
        required for a table with coverage columns and neither.

    Returns
    -------
    Verdict

    Examples
    --------
    >>> import pandas as pd, uqzoo as uz
    >>> table = pd.DataFrame({"coverage@0.9": [0.90, 0.70], "ece": [0.02, 0.05]},
    ...                      index=pd.Index(["hmc", "swag"], name="method"))
    >>> v = uz.report.verdict(table, n_points=1000)
    >>> v.under_cover, v.cover_as_claimed, v.best_calibrated
    ({'swag': (0.9,)}, ('hmc',), ('hmc', 'swag'))
    """
    from uqzoo.compare import Comparison

    if isinstance(result_or_table, Comparison):
        return _judge(report_table(result_or_table), n_points, strict=True,
                      result=result_or_table)
    if isinstance(result_or_table, pd.DataFrame):
        return _judge(result_or_table, n_points, strict=True)
    raise InvalidTypeError(f"result_or_table must be a Comparison or a pandas DataFrame, "
                           f"got {_show(result_or_table)}")


def _judge(table: pd.DataFrame, n_points: int | Mapping[str, int] | None, *,
           strict: bool, result: Comparison | None = None) -> Verdict:
    """The verdict of a table; without ``strict``, coverage without known N is shown
    as not judged instead of raising. A comparison adds what the table cannot say:
    the fitted recalibration maps and the ranking changes under shift."""
    whole = table
    if "kind" in table.columns:
        table = table[table["kind"].astype(str) != "detector"]
    names = [str(n) for n in table.index]
    rows = {str(n): row for n, row in table.iterrows()}
    sentences: list[str] = []

    failed = {}
    if "failed" in table.columns:
        for name in names:
            if _is_true(rows[name]["failed"]):
                flags = rows[name].get("flags", "")
                failed[name] = "" if not isinstance(flags, str) else flags
    if failed:
        parts = [f"{name} ({flags})" if flags else name for name, flags in failed.items()]
        verb = "fit failed" if len(failed) == 1 else "fits failed"
        sentences.append(
            f"{len(failed)} of {len(names)} {verb}: {_names(parts)}. Their accuracy and "
            "calibration numbers describe a broken model, however good they look.")

    not_converged = tuple(n for n in names
                          if "converged" in table.columns and _is_false(rows[n]["converged"]))
    if not_converged:
        whose = "its" if len(not_converged) == 1 else "their"
        sentences.append(f"{_names(not_converged)} did not converge by {whose} own "
                         "diagnostics (R-hat, ESS, divergences or the loss trace): treat "
                         "those numbers with care.")

    level_columns = {}
    for column in table.columns:
        match = _COVERAGE_COLUMN.match(str(column))
        if match:
            level_columns[float(match.group(1))] = column
    levels = sorted(level_columns)
    coverage_known = bool(levels) and any(
        _finite(rows[n][level_columns[lv]]) for n in names for lv in levels)
    under: dict[str, list[float]] = {}
    over: dict[str, list[float]] = {}
    claimed: list[str] = []
    counts = None
    if coverage_known and (strict or n_points is not None or "n_test" in table.columns):
        counts = _point_counts(table, names, n_points)
    if coverage_known and counts is None:
        sentences.append("Coverage is shown but not judged: the number of test points is "
                         "not known.")
    elif coverage_known:
        assert counts is not None
        under_text: list[str] = []
        over_text: list[str] = []
        for name in names:
            n = counts[name]
            judged = 0
            low_parts, high_parts = [], []
            for level in levels:
                value = rows[name][level_columns[level]]
                if not _finite(value):
                    continue
                judged += 1
                band = COVERAGE_Z * math.sqrt(level * (1 - level) / n)
                shown = f"{level:g} ({float(value):.3f} vs {level:g} ± {band:.3f})"
                if value < level - band:
                    under.setdefault(name, []).append(level)
                    low_parts.append(shown)
                elif value > level + band:
                    over.setdefault(name, []).append(level)
                    high_parts.append(shown)
            if low_parts:
                under_text.append(f"{name} at {_names(low_parts)}")
            if high_parts:
                over_text.append(f"{name} at {_names(high_parts)}")
            if judged and name not in under and name not in over:
                claimed.append(name)
        rule = (f"coverage of the true probability outside the nominal level ± "
                f"{COVERAGE_Z:.2f} binomial standard errors")
        if under_text:
            sentences.append(f"Under-cover ({rule}; intervals too narrow): "
                             f"{'; '.join(under_text)}.")
        else:
            sentences.append("No method under-covers beyond Monte Carlo error.")
        if over_text:
            sentences.append(f"Over-cover (intervals wider than they claim): "
                             f"{'; '.join(over_text)}.")
        if claimed:
            sentences.append(f"Cover as claimed at every level, within Monte Carlo error: "
                             f"{_names(claimed)}.")
        else:
            sentences.append("No method covers as claimed at every level.")
    else:
        sentences.append(
            "Coverage is not judged: the comparison has no coverage of true probabilities, "
            "which only simulated data carry. Judge the intervals by calibration, NLL and "
            "the risk–coverage curves instead, or compare on simulated data.")

    ranked: list[str] = []
    if "ece" in table.columns:
        scored = [(float(rows[n]["ece"]), n) for n in names
                  if n not in failed and _finite(rows[n]["ece"])]
        ranked = [n for _, n in sorted(scored)]
        if ranked:
            head = ", then ".join(f"{n} ({float(rows[n]['ece']):.4f})" for n in ranked[:3])
            left_out = " (failed fits left out)" if failed else ""
            sentences.append(f"Best calibrated by ECE (top-label, equal-width bins; lower is "
                             f"better){left_out}: {head}.")
        elif failed:
            sentences.append("No method is left to rank by calibration: every fit failed.")
    maps = dict((result.recalibration or {}).get("rows", {})) if result is not None else {}
    lowers, recalibrated = _recalibration_sentences(whole, maps)
    sentences += recalibrated
    changes = tuple(result.ranking_changes) if result is not None else ()
    if result is not None:
        sentences += _shift_sentences(result)
    return Verdict(failed=failed, not_converged=not_converged,
                   under_cover={k: tuple(v) for k, v in under.items()},
                   over_cover={k: tuple(v) for k, v in over.items()},
                   cover_as_claimed=tuple(claimed), best_calibrated=tuple(ranked),
                   coverage_known=coverage_known, sentences=tuple(sentences),
                   recalibration_lowers_ece=lowers, ranking_changes=changes)


def _recalibration_pairs(table: pd.DataFrame) -> list[tuple[str, str]]:
    """(recalibrated row, its original) for every row of kind "recalibrated" named
    "<original>+<map>" whose original is in the table."""
    if "kind" not in table.columns:
        return []
    names = [str(n) for n in table.index]
    out = []
    for name, kind in zip(names, table["kind"], strict=True):
        original = name.rpartition("+")[0]
        if str(kind) == "recalibrated" and original in names:
            out.append((name, original))
    return out


_MAP_NAMES = {"temperature": "Temperature scaling", "vector": "Vector scaling"}


def _map_text(name: str, fitted: Mapping[str, Any] | None) -> str:
    """"temperature scaling (T = 1.83)", from a row of Comparison.recalibration."""
    kind = name.rpartition("+")[2]
    what = _MAP_NAMES.get(kind, f"Recalibration ({kind})")
    if not fitted:
        return what
    temperature = fitted.get("temperature")
    if temperature is not None and _finite(temperature):
        return f"{what} (T = {float(temperature):.3g})"
    scale, shift = fitted.get("scale") or [], fitted.get("shift") or []
    if 0 < len(scale) <= 3:
        return (f"{what} (w = {', '.join(f'{float(w):.3g}' for w in scale)}; "
                f"b = {', '.join(f'{float(b):.3g}' for b in shift)})")
    return what


def _recalibration_sentences(table: pd.DataFrame, maps: Mapping[str, Mapping[str, Any]]
                             ) -> tuple[dict[str, bool], list[str]]:
    """Per recalibrated method: did the ECE fall, and how did coverage move at each level."""
    lowers: dict[str, bool] = {}
    sentences: list[str] = []
    coverage = sorted((float(m.group(1)), str(c)) for c in table.columns
                      if (m := _COVERAGE_COLUMN.match(str(c))))
    widths = sorted((float(m.group(1)), str(c)) for c in table.columns
                    if (m := re.match(r"^interval_width@([0-9.eE+-]+)$", str(c))))
    for name, original in _recalibration_pairs(table):
        before, after = table.loc[original], table.loc[name]
        if "ece" not in table.columns or not (_finite(before["ece"]) and _finite(after["ece"])):
            continue
        ece_before, ece_after = float(before["ece"]), float(after["ece"])
        lowers[original] = ece_after < ece_before
        fitted = maps.get(name)
        how = _map_text(name, fitted)
        verb = "lowers" if lowers[original] else "does not lower"
        text = (f"{how} {verb} the ECE of {original}: {ece_before:.4f} → {ece_after:.4f} "
                f"({name})")
        moves = []
        for level, column in coverage:
            a, b = before[column], after[column]
            if not (_finite(a) and _finite(b)):
                continue
            a, b = float(a), float(b)
            toward = ("closer to" if abs(b - level) < abs(a - level) else
                      "further from" if abs(b - level) > abs(a - level) else "as far from")
            moves.append(f"at {level:g} {a:.3f} → {b:.3f} ({toward} nominal)")
        if moves:
            text += f"; coverage of the true probability {_names(moves)}"
        elif widths:
            shown = [f"at {level:g} {float(before[c]):.3f} → {float(after[c]):.3f}"
                     for level, c in widths if _finite(before[c]) and _finite(after[c])]
            if shown:
                text += (f"; coverage is not known (no true probabilities), interval width "
                         f"{_names(shown)}")
        text += "."
        if fitted and fitted.get("converged") is False:
            text += (" Its map found no minimum of the calibration NLL (calibration data "
                     "separated perfectly, or uninformative): treat it with care.")
        sentences.append(text)
    return lowers, sentences


def _shift_sentences(result: Comparison) -> list[str]:
    """What was shifted, then the ranking changes (or that there are none)."""
    if result.shift is None:
        return []
    counts = {label: _copies_of(result, label)
              for label in dict.fromkeys(result.shift.perturbation.astype(str))}
    named = _names([f"{label} ({n} copies)" for label, n in counts.items()])
    sentences = [f"Under shift, {named}: every method was evaluated again on the same "
                 "perturbed copies of the test set; \u201cUnder shift\u201d shows each "
                 "headline metric clean and as mean ± sd over the copies."]
    shifted = set(result.shift.method.astype(str))
    if result.ranking_changes:
        sentences += list(result.ranking_changes)
    elif len(shifted) >= 2:
        sentences.append("No ranking of the methods by a headline metric changes under "
                         "shift.")
    return sentences


def _copies_of(result: Comparison, label: str) -> int:
    """Copies made of one perturbation (those of the first report evaluated under shift)."""
    for report in result.reports.values():
        copies = getattr(report, "shift_copies", None)
        if copies is not None:
            return int(copies["copy"][copies.perturbation == label].nunique())
    return int(result.shift.k[result.shift.perturbation == label].max())  # type: ignore[union-attr]


def _point_counts(table: pd.DataFrame, names: Sequence[str],
                  n_points: int | Mapping[str, int] | None) -> dict[str, int]:
    def checked(value: object, where: str) -> int:
        # a table's integer column turns float beside detector rows (NaN there)
        whole = isinstance(value, (int, np.integer)) or (
            isinstance(value, (float, np.floating)) and float(value).is_integer())
        if isinstance(value, bool) or not whole or float(value) < 1:  # type: ignore[arg-type]
            raise InvalidInputError(f"{where} must be a positive integer (test points), got "
                                    f"{_show(value)}")
        return int(value)  # type: ignore[call-overload]

    if n_points is not None:
        if isinstance(n_points, Mapping):
            missing = [n for n in names if n not in n_points]
            if missing:
                raise InvalidInputError(f"n_points has no entry for {missing}; it names "
                                        f"{sorted(n_points)}")
            return {n: checked(n_points[n], f"n_points[{n!r}]") for n in names}
        count = checked(n_points, "n_points")
        return dict.fromkeys(names, count)
    if "n_test" in table.columns:
        return {n: checked(table.loc[n, "n_test"], f"n_test of {n!r}") for n in names}
    raise InvalidInputError("n_points is required to judge a table's coverage columns "
                            "against Monte Carlo error (pass the number of test points), "
                            "or pass the Comparison itself")


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
th[scope=row]{text-align:left;background:#f7f9fb}
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
"""

# No script, no external anything: the page may load only its own inline
# style and data: images. A browser refuses (and logs) any other request.
_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        "base-uri 'none'; form-action 'none'")

# column -> (group, header, description) of the report table; per-level columns
# are keyed by their prefix.
_COLUMNS: dict[str, tuple[str, str, str]] = {
    "kind": ("fit", "kind", "posterior (a fitted method), recalibrated (that posterior "
             "after temperature or vector scaling fitted on held-out training data; its fit "
             "s is the recalibration's) or detector (a classical detector: scores only)"),
    "num_draws": ("fit", "S", "posterior draws S (one per member for ensembles and "
                  "bootstraps)"),
    "fit_seconds": ("fit", "fit s", "wall-clock seconds to fit"),
    "converged": ("fit", "converged", "the method's own convergence check (— : it has none)"),
    "failed": ("fit", "failed", "the fit failed (see flags), whatever its accuracy"),
    "flags": ("fit", "flags", "how it failed: one_class, chance, below_chance_ranking, "
              "hcs_confident_misses, hcs_confident_false_alarms"),
    "n_test": ("fit", "N test", "test points evaluated"),
    "coverage@": ("level {L}", "coverage", "share of test points whose level-L interval "
                  "holds the true probability (nominal L); red: below, blue: above the "
                  "nominal level beyond Monte Carlo error, green: within it"),
    "interval_width@": ("level {L}", "width", "mean width of the level-L credible interval"),
    "hcs_proportion@": ("level {L}", "HCS %", "share of points in the High Confidence Set"),
    "hcs_size@": ("level {L}", "HCS size", "points in the High Confidence Set"),
    "hcs_errors@": ("level {L}", "HCS wrong", "confident decisions of the High Confidence "
                    "Set that were wrong (confident misses + confident false alarms)"),
    "accuracy": ("accuracy", "accuracy", "accuracy of the posterior-mean prediction"),
    "balanced_accuracy": ("accuracy", "balanced", "mean recall over classes"),
    "ece": ("calibration", "ECE", "expected calibration error, top-label, 15 equal-width "
            "bins"),
    "ece_quantile": ("calibration", "ECE q", "ECE with 15 equal-mass bins"),
    "adaptive_ece": ("calibration", "ECE adapt.", "adaptive-binning ECE (Ding et al.)"),
    "classwise_ece": ("calibration", "ECE cw", "class-wise ECE, mean over classes"),
    "mce": ("calibration", "MCE", "maximum calibration error, top-label"),
    "brier": ("calibration", "Brier", "Brier score, sum over classes (0-2)"),
    "nll": ("calibration", "NLL", "negative log-likelihood per point (nats)"),
    "aurc": ("selective", "AURC", "area under the risk–coverage curve (lower is better)"),
    "eaurc": ("selective", "E-AURC", "AURC minus its optimum"),
    "misclassification_auroc": ("selective", "misclass. AUROC", "how well confidence "
                                "separates right from wrong predictions"),
    "detection_auroc": ("detection", "AUROC", "detection AUROC, class 1 the target"),
    "pd_at_far@": ("detection", "Pd@FAR {L}", "probability of detection at false-alarm "
                   "rate {L}"),
    "pd_at_far_lower@": ("detection", "lower", "Clopper–Pearson 95 % lower bound of Pd"),
    "pd_at_far_upper@": ("detection", "upper", "Clopper–Pearson 95 % upper bound of Pd"),
}

_ORDER_FIT = ["kind", "num_draws", "fit_seconds", "converged", "failed", "flags", "n_test"]
_LEVEL_PREFIXES = ["coverage@", "interval_width@", "hcs_proportion@", "hcs_size@",
                   "hcs_errors@"]
_ORDER_REST = ["accuracy", "balanced_accuracy", "ece", "ece_quantile", "adaptive_ece",
               "classwise_ece", "mce", "brier", "nll", "aurc", "eaurc",
               "misclassification_auroc", "detection_auroc"]
_FAR_PREFIXES = ["pd_at_far@", "pd_at_far_lower@", "pd_at_far_upper@"]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _ordered_columns(table: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """(column, group, header, description) in display order; unknown columns last."""
    out: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()

    def add(column: str, key: str, level: str = "") -> None:
        group, header, description = _COLUMNS[key]
        out.append((column, group.replace("{L}", level), header.replace("{L}", level),
                    description.replace("{L}", level)))
        seen.add(column)

    columns = [str(c) for c in table.columns]
    for column in _ORDER_FIT:
        if column in columns:
            add(column, column)
    for level in _levels_of_columns(columns, _LEVEL_PREFIXES):
        for prefix in _LEVEL_PREFIXES:
            column = f"{prefix}{level}"
            if column in columns:
                add(column, prefix, level)
    for column in _ORDER_REST:
        if column in columns:
            add(column, column)
    for far in _levels_of_columns(columns, _FAR_PREFIXES):
        for prefix in _FAR_PREFIXES:
            column = f"{prefix}{far}"
            if column in columns:
                add(column, prefix, far)
    for column in columns:
        if column not in seen:
            out.append((column, "other", column, ""))
    return out


def _levels_of_columns(columns: Sequence[str], prefixes: Sequence[str]) -> list[str]:
    found: dict[str, float] = {}
    for column in columns:
        for prefix in prefixes:
            if column.startswith(prefix):
                text = column[len(prefix):]
                try:
                    found[text] = float(text)
                except ValueError:
                    continue
    return sorted(found, key=found.__getitem__)


def _cell(column: str, value: object, css: str = "") -> str:
    missing = value is None or value is pd.NA or (
        isinstance(value, (float, np.floating)) and math.isnan(float(value)))
    if missing or (isinstance(value, str) and value == ""):
        return '<td class="na">—</td>'
    if column == "converged":
        text = "yes" if _is_true(value) else "NO"
    elif column == "failed":
        text = "FAILED" if _is_true(value) else "no"
    elif isinstance(value, (bool, np.bool_)):
        text = "yes" if value else "no"
    elif isinstance(value, (int, np.integer)):
        text = f"{int(value):,}"
    elif isinstance(value, (float, np.floating)):
        v = float(value)
        if column == "fit_seconds":
            text = f"{v:.1f}" if v >= 10 else f"{v:.2f}"
        elif column.startswith(("hcs_proportion@",)):
            text = f"{v:.1%}"
        elif column.startswith(("hcs_size@", "hcs_errors@", "num_draws", "n_test")) \
                and v.is_integer():
            text = f"{int(v):,}"
        else:
            text = f"{v:.4f}" if abs(v) < 1000 else f"{v:,.0f}"
    else:
        text = str(value)
    cls = f' class="{css}"' if css else ""
    return f"<td{cls}>{_e(text)}</td>"


def _table_html(table: pd.DataFrame, judged: Verdict) -> str:
    columns = _ordered_columns(table)
    groups: list[tuple[str, int]] = []
    for _, group, _, _ in columns:
        if groups and groups[-1][0] == group:
            groups[-1] = (group, groups[-1][1] + 1)
        else:
            groups.append((group, 1))
    head = ['<tr class="group"><th></th>'
            + "".join(f'<th colspan="{n}" scope="colgroup">{_e(g)}</th>' for g, n in groups)
            + "</tr>"]
    head.append('<tr><th scope="col">method</th>' + "".join(
        f'<th scope="col" title="{_e(desc)}">{_e(header)}</th>'
        for _, _, header, desc in columns) + "</tr>")
    body = []
    for name, row in table.iterrows():
        name = str(name)
        classes = []
        if "failed" in table.columns and _is_true(row["failed"]):
            classes.append("failed")
        if "kind" in table.columns and str(row["kind"]) in ("detector", "recalibrated"):
            classes.append(str(row["kind"]))
        cells = []
        for column, _, _, _ in columns:
            css = ""
            match = _COVERAGE_COLUMN.match(column)
            if match and _finite(row[column]):
                level = float(match.group(1))
                css = ("under" if level in judged.under_cover.get(name, ())
                       else "over" if level in judged.over_cover.get(name, ()) else "ok")
            cells.append(_cell(column, row[column], css))
        cls = f' class="{" ".join(classes)}"' if classes else ""
        body.append(f'<tr{cls} data-method="{_e(name)}"><th scope="row">{_e(name)}</th>'
                    + "".join(cells) + "</tr>")
    legend = "".join(f"<dt>{_e(header)}</dt><dd>{_e(desc)}</dd>"
                     for column, _, header, desc in columns
                     if desc and not _is_repeat(column, columns))
    return (f'<div class="scroll"><table id="comparison"><thead>{"".join(head)}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            f'<details class="legend"><summary>What the columns mean</summary>'
            f'<dl class="data">{legend}</dl></details>')


def _is_repeat(column: str, columns: list[tuple[str, str, str, str]]) -> bool:
    """A per-level column after its first level: described once."""
    prefix = column.split("@")[0] + "@" if "@" in column else None
    if prefix is None:
        return False
    first = next(c for c, _, _, _ in columns if c.startswith(prefix))
    return column != first


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    # Metadata off: no software version or date in the bytes of an image.
    fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(fig: Figure, alt: str, caption: str, fig_id: str, small: bool = False) -> str:
    cls = ' class="small"' if small else ""
    return (f'<figure id="{_e(fig_id)}"{cls}><img alt="{_e(alt)}" '
            f'src="data:image/png;base64,{_png(fig)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "x"


def _describe_data(data: Any, result: Comparison) -> str:
    items: list[tuple[str, str]] = []
    if data is not None:
        items.append(("data set", str(getattr(data, "name", "custom"))))
        meta = getattr(data, "meta", None) or {}
        description = meta.get("description")
        if isinstance(description, str):
            items.append(("what it is", description))
        items.append(("points", f"{data.n_train:,} train, {data.n_test:,} test"))
        items.append(("features", f"{data.n_features:,}"))
        names = data.class_names or tuple(str(c) for c in range(data.n_classes))
        items.append(("classes", f"{data.n_classes}: {', '.join(map(str, names))}"))
        counts = np.bincount(np.asarray(data.y_test, dtype=np.int64),
                             minlength=data.n_classes)
        items.append(("test points per class",
                      ", ".join(f"{n}: {int(c):,}" for n, c in zip(names, counts,
                                                                      strict=True))))
        options = meta.get("options")
        split = _split_text(meta, options)
        if split:
            items.append(("split", split))
        if isinstance(options, Mapping):
            shown = ", ".join(f"{k}={_option_text(v)}" for k, v in options.items()
                              if _is_plain(v))
            if shown:
                items.append(("options", shown))
        if result.recalibration:
            rec = result.recalibration
            items.append(("calibration split",
                          f"{rec['n_calibration']:,} training points "
                          f"({float(rec['calibration_fraction']):.0%} of each class, seed "
                          f"{rec['seed']}) held out to fit {rec['method']} scaling; every "
                          f"method and detector trained on the other {rec['n_fit']:,}"))
        truth = ("known (simulated): coverage of the true probability is judged"
                 if data.p_true_test is not None else
                 "unknown: coverage cannot be judged, only calibration and selective risk")
        items.append(("true probabilities", truth))
        citation = meta.get("citation")
        if isinstance(citation, str):
            items.append(("source", citation))
    else:
        reports = list(result.reports.values())
        if reports:
            rep = reports[0]
            items.append(("test points", f"{rep.n_points:,}"))
            items.append(("classes", f"{rep.n_classes}: {', '.join(map(str, rep.class_names))}"))
            items.append(("true probabilities",
                          "known" if rep.p_true is not None else "unknown"))
    if result.reports:
        rep = next(iter(result.reports.values()))
        items.append(("levels", ", ".join(f"{lv:g}" for lv in rep.levels)))
        items.append(("HCS threshold δ", f"{rep.delta:g}"))
    if not items:
        return "<p>No description of the data was given.</p>"
    return '<dl class="data">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>"
                                         for k, v in items) + "</dl>"


def _is_plain(value: object) -> bool:
    if isinstance(value, (str, bool, int, float, np.integer, np.floating)) or value is None:
        return True
    return isinstance(value, (tuple, list)) and len(value) <= 8 and all(
        isinstance(v, (str, bool, int, float)) for v in value)


def _option_text(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(map(str, value)) + ")"
    return str(value)


def _split_text(meta: Mapping, options: object) -> str:
    parts = []
    if isinstance(options, Mapping) and "split" in options:
        split = str(options["split"])
        parts.append(split)
        if split == "random" and "image_shape" in meta:
            parts.append("optimistic: test pixels' neighbours trained")
        guard = options.get("guard")
        if guard is not None and split != "random":
            parts.append(f"guard band {guard} px")
        if options.get("test_size") is not None:
            parts.append(f"test share {options['test_size']}")
    elif isinstance(options, Mapping) and options.get("test_size") is not None:
        parts.append(f"stratified random, test share {options['test_size']}")
    elif isinstance(options, Mapping) and "n_test" in options:
        parts.append("independent draws for training and testing (simulated)")
    if "image_shape" in meta:
        shape = tuple(int(s) for s in meta["image_shape"])
        parts.append(f"scene {shape[0]}×{shape[1]} pixels")
    return "; ".join(parts)


def _recalibration_html(result: Comparison, table: pd.DataFrame) -> str:
    """Each recalibrated row beside its original: the map, ECE, coverage, width, NLL."""
    pairs = _recalibration_pairs(table)
    if not pairs:
        return ""
    maps = dict((result.recalibration or {}).get("rows", {}))
    levels = _levels_of(table)
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


def _headline_column(key: str) -> tuple[str, str]:
    """(header, description) of a headline key such as "ece" or "coverage@0.8"."""
    name, at, level = key.partition("@")
    _, header, description = _COLUMNS.get(name + at, ("", key, ""))
    if at:
        return f"{header} {level}", description.replace("{L}", level)
    return header, description


def _shift_row(shift: pd.DataFrame, key: str) -> pd.Series | None:
    """The row of one method's and perturbation's ``Comparison.shift`` that a headline key
    reads: the first of its metric (and level) over all classes, as ``to_dict`` reads the
    clean table, or the metric's one row of a class (detection AUROC: class 1)."""
    metric, at, level = key.partition("@")
    rows = shift[shift.metric == metric]
    if at:
        rows = rows[np.isclose(rows.level.astype(float).fillna(-1.0), float(level))]
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
    from uqzoo import _shift, plots

    if result.shift is None or result.shift.empty:
        return ""
    shift = result.shift
    reports = {name: rep for name, rep in result.reports.items()
               if getattr(rep, "shift_copies", None) is not None}
    methods = [str(m) for m in dict.fromkeys(shift.method)]
    first = next(iter(reports.values()), None)
    keys = (_shift.headline_keys(first.to_dict(), first.levels) if first is not None else [])
    if not keys:
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
    headers = [_headline_column(key) for key in keys]
    for label in dict.fromkeys(shift.perturbation.astype(str)):
        n_copies = _copies_of(result, label)
        truth = ""
        if first is not None and first.shift_copies is not None:
            sub = first.shift_copies[first.shift_copies.perturbation == label]
            truth = ", ".join(dict.fromkeys(str(t) for t in sub.p_true))
        sub = shift[shift.perturbation.astype(str) == label]
        head = ['<tr class="group"><th></th>' + "".join(
            f'<th colspan="2" scope="colgroup" title="{_e(desc)}">{_e(header)}</th>'
            for header, desc in headers) + "</tr>",
                '<tr><th scope="col">method</th>' + "".join(
            '<th scope="col">clean</th><th scope="col">shifted</th>' for _ in keys) + "</tr>"]
        body = []
        for method in methods:
            rows = sub[sub.method.astype(str) == method]
            cells = "".join(_shift_cells(key, _shift_row(rows, key), n_copies)
                            for key in keys)
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
    for key, (header, _) in zip(keys, headers, strict=True):
        fig = plots.shift_errorbars(reports, key)
        figs.append(_figure(fig, f"{key} clean and under shift, per method",
                            f"<b>{_e(header)}</b>: black, the clean value; coloured, the mean "
                            "over each perturbation's copies with ±1 sd bars.",
                            f"shift-{_slug(key)}", small=True))
    parts.append(f'<div class="figs">{"".join(figs)}</div>')
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
                     f"not labelled.</p>")
        for name, rep in mapped.items():
            fig = plots.hsi_maps(rep, data, level=level)
            parts.append(_figure(fig, f"maps of {name}", f"<b>{_e(name)}</b>",
                                 f"maps-{_slug(name)}"))
    return "".join(parts)


def render_report(result: Comparison, *, data: Any = None, title: str | None = None,
                  settings: str | None = None) -> str:
    """The report of a comparison as one self-contained HTML page.

    Parameters
    ----------
    result : Comparison
        What :func:`uqzoo.compare` returns.
    data : ClassificationData, optional
        The data compared: described on the page (split, classes, options),
        and the source of pixel coordinates for maps.
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
    import uqzoo

    result = _check_result(result)
    if title is not None and not isinstance(title, str):
        raise InvalidTypeError(f"title must be a string, got {_show(title)}")
    if settings is not None and not isinstance(settings, str):
        raise InvalidTypeError(f"settings must be a string (e.g. TOML text), got "
                               f"{_show(settings)}")
    table = report_table(result)
    judged = _judge(table, None, strict=False, result=result)
    data_name = str(getattr(data, "name", "")) if data is not None else ""
    heading = title if title is not None else (
        f"Which uncertainty to trust on {data_name}?" if data_name
        else "Which uncertainty to trust?")
    methods = [str(n) for n in table.index]
    generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    verdict_html = "".join(f"<li>{_e(s)}</li>" for s in judged.sentences)
    settings_html = (f'<h2 id="settings">Run settings</h2><p>Repeat this run with '
                     f"<code>uqzoo compare --config config.toml</code> (the file beside this "
                     f"report):</p><pre>{_e(settings)}</pre>" if settings else "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="uqzoo {_e(uqzoo.__version__)}">
<title>{_e(heading)} — uqzoo report</title>
<style>{_CSS}</style>
</head>
<body>
<main>
<header>
<h1>{_e(heading)}</h1>
<p class="sub">uqzoo {_e(uqzoo.__version__)} report: {len(methods)} rows ({_e(", ".join(methods))}),
generated {_e(generated)}.</p>
</header>
<h2 id="verdict-heading">Verdict</h2>
<ul class="verdict" id="verdict">{verdict_html}</ul>
<h2 id="data">Data and split</h2>
{_describe_data(data, result)}
<h2 id="table">Comparison</h2>
{_table_html(table, judged)}
{_recalibration_html(result, table)}
{_shift_html(result)}
{_figures_html(result, data)}
{settings_html}
<footer>Made by uqzoo {_e(uqzoo.__version__)}. This page is self-contained: figures are
embedded, nothing is fetched from the network.</footer>
</main>
</body>
</html>
"""


def write_report(result: Comparison, path: str | Path, *, data: Any = None,
                 title: str | None = None, settings: str | None = None) -> Path:
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

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    OutputPathError
        The path cannot be written (missing folder, a directory, read-only
        file system, full disk); checked before anything is rendered.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("iris")
    >>> result = uz.compare(data, ["laplace"], progress_bar=False)    # doctest: +SKIP
    >>> uz.write_report(result, "report.html", data=data)             # doctest: +SKIP
    PosixPath('report.html')
    """
    from uqzoo.io import check_output_file, write_file_atomically

    check_output_file(path, what="path")        # before the rendering, not after it
    page = render_report(result, data=data, title=title, settings=settings)
    return write_file_atomically(path, page.encode("utf-8"), what="path")
