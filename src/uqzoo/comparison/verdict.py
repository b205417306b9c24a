"""The verdict of a comparison: what its numbers say, as data and as sentences.

:func:`verdict` judges a :class:`~uqzoo.comparison.compare.Comparison` (or a
bare table of its columns). Its first sentence answers the question: "Trust
X: ..." -- the best-scoring method by a proper score (the interval score of
the true probability where it is known; otherwise the closeness to a
reference posterior that passed its gate, when the comparison has one, else
the NLL of the test labels; :mod:`uqzoo.comparison.ranking`) among those that did not fail,
converged, have the draws their levels need (a point estimate never qualifies)
and, where coverage can be judged, do not under-cover -- named only when its
paired bootstrap interval to every other such method excludes 0 ("X, Y and Z
are tied ..." otherwise), or "No method is trustworthy here: ...", with the
reason in numbers. Labels alone judge the mean prediction, not the
uncertainty: without true probabilities and without a gated reference the
first sentence says so, and trusts at most a method's mean prediction. Then: which
fits failed or did not converge, which
methods' intervals under- or over-cover the true probability beyond Monte
Carlo error, which are best calibrated, what recalibration changed and which
rankings move under shift. :func:`report_table` is the wider table the
verdict judges and the HTML report (:mod:`uqzoo.comparison.report`) shows.
Nothing here renders; the report only renders what this module decided.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from uqzoo import headline
from uqzoo._validation import _show
from uqzoo.comparison.ranking import Ranking, rank_methods, ranked_fidelity
from uqzoo.errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    from uqzoo.comparison.compare import Comparison, Settings

__all__ = ["COVERAGE_Z", "Verdict", "report_table", "verdict"]

# Coverage at nominal level L on N test points is judged against the binomial
# band L ± COVERAGE_Z · sqrt(L (1 − L) / N): the two-sided 95 % normal quantile,
# the same band uqzoo.plots.coverage_plot shades, so the verdict and the
# figure agree. Points are treated as independent; neighbouring pixels of a
# scene are not, so the band is then too narrow rather than too wide.
COVERAGE_Z = 1.959963984540054
# The verdict trusts no method whose intervals miss the true probability more
# than TRUST_MISS_RATIO times as often as they claim at some level (coverage
# below 1 − 2.5 (1 − L): 0.5 at 0.8, 0.875 at 0.95). Not the binomial band
# above: one data set's coverage varies far more than binomially between data
# sets (the points share one posterior) -- HMC's on the seed study's
# well-specified teacher has a replicate sd of ~0.10 at 0.8 and ~0.036 at
# 0.95 (its Monte Carlo errors 0.022 and 0.008 × √20), so this threshold is
# 3 and 2.3 of those sds below nominal: a right posterior trips it in about
# 1 % of data sets, and the old demo's intervals (0.43 / 0.65) trip it.
TRUST_MISS_RATIO = 2.5


# -- the wide table ---------------------------------------------------------------------

def _check_result(result: object) -> Comparison:
    from uqzoo.comparison.compare import Comparison

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
    levels = _settings(result).levels
    extra: dict[str, dict[str, Any]] = {}
    for name, report in result.reports.items():
        d = {**report.to_dict(), "n_test": report.n_points}
        extra[name] = {c.key: d[c.key] for c in headline.columns(levels, where="report")
                       if c.key not in table.columns and c.key in d}
    if extra:
        more = pd.DataFrame.from_dict(extra, orient="index")
        table = table.join(more, how="left")
    return table


def _settings(result: Comparison, data: Any = None) -> Settings:
    """The comparison's recorded settings; for one assembled by hand (no settings),
    what its reports and ``data`` say."""
    if result.settings is not None:
        return result.settings
    from uqzoo.comparison.compare import Settings, describe_data

    first = next(iter(result.reports.values()), None)
    if data is not None:
        items = describe_data(data)
    elif first is not None:
        items = (("test points", f"{first.n_points:,}"),
                 ("classes", f"{first.n_classes}: {', '.join(map(str, first.class_names))}"),
                 ("true probabilities", "known" if first.p_true is not None else "unknown"))
    else:
        items = ()
    return Settings(
        levels=tuple(first.levels) if first is not None else _levels_in(result.table),
        delta=float(first.delta) if first is not None else math.nan,
        interval=None, num_draws=None,
        fars=tuple(first.pd_at_far.far) if first is not None and first.pd_at_far is not None
        else (),
        seed=None, data_name=str(data.name) if data is not None else "",
        n_test=int(first.n_points) if first is not None else None, data=items)


def _levels_in(table: pd.DataFrame) -> tuple[float, ...]:
    """The credible levels of a user's table, from its column keys (``coverage@0.8``)."""
    found = {c.at for c in map(headline.parse_key, table.columns)
             if c is not None and c.headline.axis == "level" and c.at is not None}
    return tuple(sorted(found))


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
    conformal_fixes : dict of str to bool
        With ``compare(conformal=...)``, for every row whose own label sets
        cover less than the conformal level (the Clopper–Pearson interval of
        their coverage entirely below it): whether the conformal sets do not
        (their interval reaches the level).
    ranking_changes : tuple of str
        Under shift: the comparison's :attr:`~uqzoo.comparison.compare.Comparison.ranking_changes`
        (also among the sentences).
    recommended : str or None
        The method to trust (the first sentence says why), None when no
        method is trustworthy or the evidence does not separate the best
        from another candidate (a tie). Without true probabilities and
        without a gated reference posterior, trusted for its mean prediction
        only.
    rankings : tuple of Ranking
        The proper-score rankings behind it (:mod:`uqzoo.comparison.ranking`);
        from a bare table, point values without intervals.
    warned : dict of str to str
        Fits with warnings (the data's doing, or too small to call a failure),
        with their flags.
    answer : str
        The first sentence: "Trust X: ...", "X, Y and Z are tied ...", or "No
        method is trustworthy here: ...", opened by "The test labels judge
        the mean prediction only ..." where nothing else judges ("" for a
        bare table without a proper score).
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
    recommended: str | None = None
    rankings: tuple[Ranking, ...] = ()
    warned: Mapping[str, str] = dataclasses.field(default_factory=dict)
    answer: str = ""
    conformal_fixes: Mapping[str, bool] = dataclasses.field(default_factory=dict)

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
    >>> v.recommended is None       # no proper score in this table
    True
    """
    from uqzoo.comparison.compare import Comparison

    if isinstance(result_or_table, Comparison):
        return _judge(report_table(result_or_table), n_points,
                      _settings(result_or_table).levels, strict=True, result=result_or_table)
    if isinstance(result_or_table, pd.DataFrame):
        return _judge(result_or_table, n_points, _levels_in(result_or_table), strict=True)
    raise InvalidTypeError(f"result_or_table must be a Comparison or a pandas DataFrame, "
                           f"got {_show(result_or_table)}")


def _judge(table: pd.DataFrame, n_points: int | Mapping[str, int] | None,
           levels: Sequence[float], *, strict: bool, result: Comparison | None = None
           ) -> Verdict:
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
    if result is not None and result.settings is not None and result.settings.left_out:
        skipped = result.settings.left_out
        sentences.append(
            f"Left out, because the model does not declare what "
            f"{'it needs' if len(skipped) == 1 else 'they need'}: "
            + "; ".join(f"{name} ({reason})" for name, reason in skipped) + ".")
    if failed:
        parts = [f"{name} ({flags})" if flags else name for name, flags in failed.items()]
        verb = "fit failed" if len(failed) == 1 else "fits failed"
        sentences.append(
            f"{len(failed)} of {len(names)} {verb}: {_names(parts)}. Their accuracy and "
            "calibration numbers describe a broken model, however good they look.")

    warned = {}
    if "warning_flags" in table.columns:
        for name in names:
            flags = rows[name]["warning_flags"]
            if isinstance(flags, str) and flags:
                warned[name] = flags
    if warned:
        parts = [f"{name} ({flags})" for name, flags in warned.items()]
        sentences.append(
            f"Warnings, not failures (the data's doing -- the true probabilities fail the "
            f"same way, or the ranking is informative where the 0.5 threshold is not -- or an "
            f"excess of confident errors too small to matter): {_names(parts)}; the reports "
            "say which.")

    not_converged = tuple(n for n in names
                          if "converged" in table.columns and _is_false(rows[n]["converged"]))
    if not_converged:
        whose = "its" if len(not_converged) == 1 else "their"
        sentences.append(f"{_names(not_converged)} did not converge by {whose} own "
                         "diagnostics (R-hat, ESS, divergences or the loss trace): treat "
                         "those numbers with care.")

    coverage = headline.get("coverage")
    level_columns = {float(lv): coverage.key(lv) for lv in levels
                     if coverage.key(lv) in table.columns}
    covered = sorted(level_columns)
    coverage_known = bool(covered) and any(
        _finite(rows[n][level_columns[lv]]) for n in names for lv in covered)
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
            for level in covered:
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
            head = ", then ".join(f"{n} ({float(rows[n]['ece']):.3g})" for n in ranked[:3])
            left_out = " (failed fits left out)" if failed else ""
            sentences.append(f"Best calibrated by ECE (top-label, equal-width bins; lower is "
                             f"better){left_out}: {head}.")
        elif failed:
            sentences.append("No method is left to rank by calibration: every fit failed.")
    if result is not None:
        # a Comparison assembled by hand has no scores: rank its reports here
        kept = {n: r for n, r in result.reports.items() if n in names and n not in failed}
        rankings = tuple(result.scores) or rank_methods(
            kept, seed=result.settings.seed if result.settings and result.settings.seed else 0,
            fidelity=ranked_fidelity(
                {n: f for n, f in result.fidelity.items() if n in kept},
                result.settings.reference if result.settings else None,
                has_truth=any(getattr(r, "p_true", None) is not None for r in kept.values())))
        sentences += _reference_sentences(result, rankings)
    else:
        rankings = _table_rankings(table, names, failed, levels, coverage_known)
    recommended, first = _recommend(rows, names, failed, not_converged, under, claimed,
                                    coverage_known, level_columns, rankings, counts,
                                    levels, result)
    if first:
        sentences.insert(0, first)
    sentences[1:1] = [_ranking_sentence(r) for r in rankings]
    maps = dict((result.recalibration or {}).get("rows", {})) if result is not None else {}
    lowers, recalibrated = _recalibration_sentences(whole, maps, levels)
    sentences += recalibrated
    changes = tuple(result.ranking_changes) if result is not None else ()
    fixes: dict[str, bool] = {}
    if result is not None:
        fixes, conformal_text = conformal_sentences(result)
        sentences += conformal_text
        sentences += _shift_sentences(result)
    return Verdict(failed=failed, not_converged=not_converged,
                   under_cover={k: tuple(v) for k, v in under.items()},
                   over_cover={k: tuple(v) for k, v in over.items()},
                   cover_as_claimed=tuple(claimed), best_calibrated=tuple(ranked),
                   coverage_known=coverage_known, sentences=tuple(sentences),
                   recalibration_lowers_ece=lowers, ranking_changes=changes,
                   recommended=recommended, rankings=rankings, warned=warned,
                   answer=first, conformal_fixes=fixes)


def _table_rankings(table: pd.DataFrame, names: Sequence[str], failed: Mapping[str, str],
                    levels: Sequence[float], coverage_known: bool) -> tuple[Ranking, ...]:
    """Rankings from a bare table's point values (no reports: no bootstrap intervals)."""
    fits = [n for n in names if n not in failed]
    out = []
    score = headline.get("interval_score")
    keys = [score.key(lv) for lv in levels if score.key(lv) in table.columns]
    metrics: list[tuple[str, list[str]]] = []
    if coverage_known and keys:
        metrics.append(("interval_score", keys))
    metrics += [(m, [m]) for m in ("nll", "brier") if m in table.columns]
    for metric, columns in metrics[:2]:
        values = {n: float(np.mean([float(table.loc[n, c]) for c in columns])) for n in fits
                  if all(_finite(table.loc[n, c]) for c in columns)}
        if values:
            out.append(Ranking.from_values(metric, values))
    return tuple(out)


def _difference_text(ranking: Ranking, name: str) -> str:
    estimate, low, high = ranking.difference[name]
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{name} +{estimate:.3g}"
    tie = ", tied" if name in ranking.tied else ""
    return f"{name} +{estimate:.3g} [{low:+.3g}, {high:+.3g}]{tie}"


def _ranking_sentence(ranking: Ranking) -> str:
    best = ranking.best
    head = f"{best} {ranking.values[best]:.3g}"
    rest = [_difference_text(ranking, n) for n in ranking.methods[1:]]
    if ranking.replicates:
        how = (f"lower is better; each difference to the best with its "
               f"{ranking.confidence:.0%} paired bootstrap interval, B = {ranking.replicates}, "
               f"the same replicates for every method; tied: the interval holds 0")
    else:
        how = "lower is better; point values only (pass the Comparison for intervals)"
    return f"Ranked by {ranking.label} ({how}): {'; '.join([head, *rest])}."


def _draw_shortfall(rows: Mapping[str, Any], name: str, levels: Sequence[float]) -> str | None:
    """Why a method's draws cannot carry intervals at the asked levels, or None.

    One draw is a point estimate (intervals of width 0); fewer than
    :func:`uqzoo.metrics.min_draws` of the highest level leave that level's
    percentile interval without interior order statistics, so it covers far
    less than it claims. A table without a ``num_draws`` column is not judged.
    """
    from uqzoo.metrics import min_draws

    value = rows[name].get("num_draws") if hasattr(rows[name], "get") else None
    if not _finite(value):
        return None
    draws = int(float(value))                          # type: ignore[arg-type]
    if draws <= 1:
        return "a point estimate: one draw, intervals of width 0"
    if levels:
        top = max(levels)
        need = min_draws(top)
        if draws < need:
            return f"{draws} draws, fewer than the {need} that level {top:g} needs"
    return None


def _tied_with(chosen: str, candidates: Sequence[str], primary: Ranking,
               result: Comparison | None) -> tuple[str, ...]:
    """The candidates the evidence does not separate from ``chosen`` (itself excluded).

    When ``chosen`` is the ranking's best its paired intervals say it; otherwise
    the candidates are ranked again among themselves, on the same replicates.
    """
    others = [n for n in candidates if n != chosen]
    if not others or not primary.replicates:
        return ()
    if chosen == primary.best:
        return tuple(n for n in primary.tied if n in others)
    if result is None:
        return ()
    fidelity = ({n: result.fidelity[n] for n in candidates if n in result.fidelity}
                if primary.metric == "wasserstein1" else None)
    again = rank_methods({n: result.reports[n] for n in candidates}, [primary.metric],
                         replicates=primary.replicates, seed=primary.seed or 0,
                         confidence=primary.confidence, fidelity=fidelity)[0]
    return tuple(n for n in again.tied if n != again.best)


def _recommend(rows: Mapping[str, Any], names: Sequence[str], failed: Mapping[str, str],
               not_converged: Sequence[str], under: Mapping[str, list[float]],
               claimed: Sequence[str], coverage_known: bool,
               level_columns: Mapping[float, str], rankings: Sequence[Ranking],
               counts: Mapping[str, int] | None, levels: Sequence[float] = (),
               result: Comparison | None = None) -> tuple[str | None, str]:
    """(the method to trust or None, the verdict's first sentence).

    A method is named only when the evidence separates it: the best-scoring
    candidate by the first ranking whose paired bootstrap interval to every
    other candidate excludes 0. A candidate did not fail, converged, has the
    draws its levels need and, where coverage is known, does not miss the
    truth far too often. Without true probabilities and without a gated
    reference posterior the labels judge the mean prediction only, and the
    sentence says so first.
    """
    def coverage_text(name: str) -> str:
        return ", ".join(f"{float(rows[name][c]):.3f} at {lv:g}"
                         for lv, c in sorted(level_columns.items()) if _finite(rows[name][c]))

    fits = [n for n in names if n not in failed]
    if not fits:
        return None, (f"No method is trustworthy here: every fit failed "
                      f"({_names([f'{n} ({f})' if f else n for n, f in failed.items()])}).")
    if not rankings:        # a bare table without a proper score: nothing to recommend from
        return None, ""
    primary = rankings[0]
    judged = coverage_known and counts is not None
    labels_only = primary.metric in ("nll", "brier")

    def why_not(name: str) -> str | None:
        if name in not_converged:
            return "did not converge"
        short = _draw_shortfall(rows, name, levels)
        if short is not None:
            return short
        if not judged:
            return None
        misses = [(lv, float(rows[name][c])) for lv, c in sorted(level_columns.items())
                  if _finite(rows[name][c])
                  and 1 - float(rows[name][c]) > TRUST_MISS_RATIO * (1 - lv)]
        if misses:
            return (f"misses the true probability more than {TRUST_MISS_RATIO:g}× as often "
                    f"as claimed (coverage {_names([f'{c:.3f} at {lv:g}' for lv, c in misses])})")
        return None

    head = ""
    if labels_only:
        head = ("The test labels judge the mean prediction only, not the uncertainty: "
                "there are no true probabilities and no reference posterior that passed its "
                "gate. ")
    candidates = [n for n in primary.methods if why_not(n) is None]
    if not candidates:
        best = primary.best
        return None, (f"{head}No method is trustworthy here: the best-scoring fit by "
                      f"{primary.label}, {best} ({primary.values[best]:.3g}), is ruled out: "
                      f"{why_not(best)}; so is every other fit that did not fail "
                      f"({_names([f'{n}: {why_not(n)}' for n in primary.methods[1:]]) or 'none'})."
                      )
    chosen = candidates[0]
    better = primary.methods[:primary.methods.index(chosen)]
    passed_over = (f"; {_names([f'{n} ({why_not(n)})' for n in better])} "
                   f"{'scores' if len(better) == 1 else 'score'} better but "
                   f"{'is' if len(better) == 1 else 'are'} not recommended for uncertainty"
                   if better else "")
    tied = _tied_with(chosen, candidates, primary, result)
    if tied:
        group = [chosen, *tied]
        values = _names([f"{n} {primary.values[n]:.3g}" for n in group])
        what = "mean predictions" if labels_only else "fits"
        return None, (f"{head}{_names(group)} are tied by {primary.label} ({values}; the "
                      f"{primary.confidence:.0%} paired bootstrap interval of every difference "
                      f"holds 0): the evidence does not separate their {what}, so none of them "
                      f"is named to trust{passed_over}.")
    parts = [f"{primary.label} {primary.values[chosen]:.3g}"]
    if chosen == primary.best:
        parts.append("the best")
    if primary.replicates and chosen == primary.best and len(primary.methods) > 1:
        parts.append(f"ahead of the next, {_difference_text(primary, primary.methods[1])}")
    elif primary.replicates and len(candidates) > 1:
        parts.append(f"separated from the other candidates ({_names(candidates[1:])})")
    if labels_only:
        text = f"{head}Trust the mean prediction of {chosen}: {', '.join(parts)}{passed_over}"
    else:
        text = f"Trust {chosen}: {', '.join(parts)}{passed_over}"
    if judged and level_columns:
        text += (f"; its intervals cover the true probability as claimed ({coverage_text(chosen)})"
                 if chosen in claimed else
                 f"; coverage of the true probability {coverage_text(chosen)}, "
                 + ("below the binomial band but within " if chosen in under else
                    "outside the binomial band but within ")
                 + f"{TRUST_MISS_RATIO:g}× the nominal miss rate (one data set's coverage "
                 "varies more than binomially)")
    elif not coverage_known and primary.metric == "wasserstein1":
        text += ("; coverage cannot be checked without known true probabilities, so this "
                 "rests on closeness to the exact posterior: the reference posterior, which "
                 "passed its gate")
    elif not coverage_known:
        text += ("; coverage cannot be checked without known true probabilities, so this "
                 "rests on the test labels alone and says nothing of its intervals")
    return chosen, text + "."


def _reference_sentences(result: Comparison, rankings: Sequence[Ranking]) -> list[str]:
    """What the reference posterior is, whether it passed its gate, and what that means."""
    settings = result.settings
    reference = settings.reference if settings is not None else None
    if reference is None:
        if settings is not None and settings.reference_skipped:
            return [f"No reference posterior was sampled ({settings.reference_skipped}), so "
                    f"nothing here judges the uncertainty itself; {_reference_command(settings)}."]
        return []
    assert settings is not None                     # a reference is recorded in settings
    if reference.source == "auto":
        where = (f"a reference posterior sampled for this comparison (reference='auto': "
                 f"uz.reference_posterior, seed {reference.seed}, independent of the hmc row)")
    elif reference.row is not None:
        where = ("the comparison's own HMC fit (not independent of the hmc row, whose "
                 "closeness is perfect by construction)")
    elif reference.source == "posterior":         # a Posterior passed in, not a file
        where = "a reference posterior passed in (uz.compare(reference=...))"
    else:
        where = f"the saved reference posterior {reference.source}"
    by_fidelity = any(r.metric == "wasserstein1" for r in rankings)
    if not reference.passed:
        return [f"Closeness to the exact posterior was measured against {where}, which did "
                f"NOT pass the reference gate ({'; '.join(reference.gate.messages)}): it is no "
                "reference, its fidelity columns measure closeness to an unconverged run, and "
                f"nothing is ranked by them; {_reference_command(settings)}."]
    text = (f"Closeness to the exact posterior is measured against {where}, which passed the "
            f"reference gate (R-hat ≤ {reference.gate.rhat_max:.3f}, bulk ESS ≥ "
            f"{reference.gate.ess_bulk_min:.0f}, tail ESS ≥ {reference.gate.ess_tail_min:.0f})")
    if by_fidelity:
        return [text + "; the methods are ranked by it (the fidelity_* columns)."]
    if any(r.metric == "interval_score" for r in rankings):
        return [text + "; with known true probabilities the interval score ranks, and the "
                "fidelity_* columns say how close each method comes to the exact posterior."]
    left = "besides the reference itself " if reference.row is not None else ""
    return [text + f"; no fit {left}is left to rank by it."]


def _reference_command(settings: Settings) -> str:
    """The one command that samples a reference posterior of the compared data."""
    name = settings.data_name or "DATA"
    return (f"`uqzoo reference --dataset {name} --out ref.nc` samples one (longer runs: "
            f"--set num_warmup=... --set num_samples=...), and `uqzoo compare ... --reference "
            f"ref.nc` scores every method by its closeness to it")


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


def _recalibration_sentences(table: pd.DataFrame, maps: Mapping[str, Mapping[str, Any]],
                             levels: Sequence[float]) -> tuple[dict[str, bool], list[str]]:
    """Per recalibrated method: did the ECE fall, and how did coverage move at each level."""
    lowers: dict[str, bool] = {}
    sentences: list[str] = []

    def present(name: str) -> list[tuple[float, str]]:
        key = headline.get(name).key
        return [(float(lv), key(lv)) for lv in sorted(levels) if key(lv) in table.columns]

    coverage, widths = present("coverage"), present("interval_width")
    for name, original in _recalibration_pairs(table):
        before, after = table.loc[original], table.loc[name]
        if "ece" not in table.columns or not (_finite(before["ece"]) and _finite(after["ece"])):
            continue
        ece_before, ece_after = float(before["ece"]), float(after["ece"])
        lowers[original] = ece_after < ece_before
        fitted = maps.get(name)
        how = _map_text(name, fitted)
        verb = "lowers" if lowers[original] else "does not lower"
        text = (f"{how} {verb} the ECE of {original}: {ece_before:.3g} → {ece_after:.3g} "
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


def credible_missed_rates(report: Any) -> list[tuple[float, float]]:
    """(level, share of the judged classes' test points the credible-interval HCS
    confidently dismissed) per level: the rate the conformal HCS bounds by α."""
    y = np.asarray(report.y)
    is_target = y[:, None] == np.asarray(report.hcs_classes)[None, :]
    n_targets = int(is_target.sum())
    if not n_targets:
        return []
    return [(float(level), float((report.hcs_negative[i] & is_target).sum() / n_targets))
            for i, level in enumerate(report.levels)]


def conformal_sentences(result: Comparison) -> tuple[dict[str, bool], list[str]]:
    """Per row with conformal sets: does conformalization fix its coverage, at what size.

    A row's own sets (its most probable labels up to the level) *under-cover*
    when the Clopper–Pearson interval of their coverage lies wholly below the
    level; conformalization then *fixes* it when the conformal sets' interval
    reaches the level. With true probabilities the worst-decile exact
    conditional coverage of both is named too: marginal validity is not
    conditional validity.
    """
    fixes: dict[str, bool] = {}
    sentences: list[str] = []
    for name, report in result.reports.items():
        judged = getattr(report, "conformal", None)
        if judged is None:
            continue
        level = judged.rule.level
        own, con = judged.plain, judged.conformal
        own_lo, own_hi = own.coverage_interval
        con_lo, con_hi = con.coverage_interval
        sizes = f"mean set size {own.mean_size:.2f} → {con.mean_size:.2f}"
        shown = (f"{own.coverage:.3f} [{own_lo:.3f}, {own_hi:.3f}] → {con.coverage:.3f} "
                 f"[{con_lo:.3f}, {con_hi:.3f}]")
        if own_hi < level:
            fixes[name] = con_hi >= level
            verb = "fixes" if fixes[name] else "does not fix"
            text = (f"Conformalization {verb} the label-set coverage of {name} at level "
                    f"{level:g}: {shown}, {sizes}")
        elif own_lo > level:
            smaller = "smaller" if con.mean_size < own.mean_size else "no smaller"
            text = (f"{name}'s own label sets over-cover at level {level:g}; conformal sets "
                    f"keep the level with {smaller} sets: {shown}, {sizes}")
        else:
            text = (f"{name}'s own label sets already cover as claimed at level {level:g}; "
                    f"conformal sets: {shown}, {sizes}")
        text += _full_set_text(judged.rule)
        if own.worst_decile_coverage is not None and con.worst_decile_coverage is not None:
            text += (f"; worst-decile conditional coverage {own.worst_decile_coverage:.3f} → "
                     f"{con.worst_decile_coverage:.3f}")
        if judged.hcs_missed_rate is not None and judged.rule.hcs is not None:
            text += (f"; its conformal HCS dismissed {judged.hcs_missed_rate:.1%} of the "
                     f"test targets (bound {judged.rule.hcs.alpha:g})")
            credible = credible_missed_rates(report)
            if credible:
                shown = ", ".join(f"{rate:.1%} at {lv:g}" for lv, rate in credible)
                text += f", its credible-interval HCS {shown}"
        sentences.append(text + ".")
    return fixes, sentences


def _full_set_text(rule: Any) -> str:
    """Why a conformal set holds every label: classes with too few calibration points."""
    full = getattr(rule, "full_set_classes", ())
    if not full:
        return ""
    # A level-L split-conformal threshold is finite only with n >= 1/(1 - L) - 1
    # calibration points (its quantile's rank (n + 1) L must not exceed n).
    need = math.ceil(1.0 / (1.0 - rule.level) - 1.0 - 1e-9)
    counts = ", ".join(f"{k}: {int(rule.class_counts[k])}" for k in full)
    every = ("every set holds all labels" if len(full) == rule.n_classes
             else f"class(es) {list(full)} are in every set")
    return (f"; {every}: too few calibration points per class ({counts}) for a finite "
            f"threshold at level {rule.level:g}, which needs at least {need} per class "
            f"(more data, a lower level, or marginal instead of Mondrian calibration)")


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
