"""Summaries of a study across replicates, with Monte Carlo standard errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from uqzoo import headline
from uqzoo._validation import _show
from uqzoo.errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CONFORMAL_SUMMARY", "FIDELITY_SUMMARY", "GROUP_COLUMNS", "SUMMARY_METRICS", "summarize"]

GROUP_COLUMNS = ("dataset", "setting", "method", "variant", "level")
# Closeness to a reference posterior: averaged by default where a study's
# [reference] made it (columns of results that hold any value).
FIDELITY_SUMMARY = tuple(h.name for h in headline.HEADLINE
                         if h.needs_reference and "study" in h.where)
# Split-conformal label sets: likewise, where a study's ``conformal`` made them.
CONFORMAL_SUMMARY = tuple(h.name for h in headline.HEADLINE
                          if h.group == "conformal" and "study" in h.where)
# Averaged over replicates always, each with its Monte Carlo standard error: the
# other headlines shown in studies, in the headline table's order, then the fit's
# cost (fit_seconds).
_ALWAYS = [h for h in headline.HEADLINE if "study" in h.where
           and h.name not in (*FIDELITY_SUMMARY, *CONFORMAL_SUMMARY)]
SUMMARY_METRICS = (*(h.name for h in _ALWAYS if h.group != "fit"),
                   *(h.name for h in _ALWAYS if h.group == "fit"))


def summarize(results: pd.DataFrame, *, by: Sequence[str] = GROUP_COLUMNS,
              metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Coverage, width and the other metrics per method × setting × level, over replicates.

    Each replicate is one independent draw of the training data (and of the
    fit), so the mean over replicates estimates the expected metric and its
    Monte Carlo standard error is ``sd / sqrt(n)`` (sample sd, ddof 1).

    Parameters
    ----------
    results : pandas.DataFrame
        :func:`uqzoo.study.load`'s table (only ``status == "done"`` rows count).
    by : sequence of str
        Grouping columns; default ``dataset, setting, method, variant, level``.
    metrics : sequence of str, optional
        Columns to average; default :data:`SUMMARY_METRICS` (the headlines
        of :data:`uqzoo.headline.HEADLINE` shown in studies: coverage,
        interval width and score, HCS, accuracy, ECE, Brier, NLL, then
        ``fit_seconds``; the interval score is NaN without true
        probabilities and for tasks stored before it was kept) and, where the
        results hold them (a study with ``[reference]``), the closeness to the
        reference posterior (:data:`FIDELITY_SUMMARY`) and (a study with
        ``conformal``) the split-conformal sets (:data:`CONFORMAL_SUMMARY`).

    Returns
    -------
    pandas.DataFrame
        One row per group: the ``by`` columns, ``n_replicates``, for each
        metric its mean and ``<metric>_mcse`` (NaN with fewer than two
        replicates; NaN values, such as an HCS accuracy of an empty set, are
        left out of both), ``coverage_error`` = coverage − level (when both
        are present), ``n_not_converged`` and ``n_eval_failed``.

    Example
    -------
    >>> import uqzoo as uz
    >>> table = uz.study.summarize(uz.study.load("results.sqlite"))   # doctest: +SKIP
    >>> table[["method", "level", "coverage", "coverage_mcse"]]        # doctest: +SKIP
    """
    import numpy as np
    import pandas as pd

    if not isinstance(results, pd.DataFrame):
        raise InvalidTypeError(f"results must be a DataFrame from uz.study.load, got "
                               f"{_show(results)}")
    by = list(by)
    if metrics is None:
        metrics = [*SUMMARY_METRICS,
                   *(m for m in (*FIDELITY_SUMMARY, *CONFORMAL_SUMMARY)
                     if m in results.columns and results[m].notna().any())]
    metrics = list(metrics)
    missing = [c for c in (*by, *metrics) if c not in results.columns]
    if missing:
        raise InvalidInputError(f"results lacks column(s) {missing}; uz.study.load gives "
                                f"{list(results.columns)}")
    frame = results
    if "status" in frame.columns:
        frame = frame[frame.status == "done"]
    frame = frame.copy()
    for flag in ("converged", "eval_failed"):
        if flag not in frame.columns:
            frame[flag] = pd.array([pd.NA] * len(frame), dtype="boolean")
    frame["_not_converged"] = (frame["converged"] == False).fillna(False)  # noqa: E712
    frame["_eval_failed"] = frame["eval_failed"].fillna(False).astype(bool)
    for metric in metrics:
        frame[metric] = frame[metric].astype(np.float64)
    grouped = frame.groupby(by, dropna=False, sort=True)
    out = grouped.size().rename("n_replicates").to_frame()
    for metric in metrics:
        stats = grouped[metric].agg(["mean", "std", "count"])
        out[metric] = stats["mean"]
        out[f"{metric}_mcse"] = (stats["std"] / np.sqrt(stats["count"])).where(
            stats["count"] >= 2)
    out["n_not_converged"] = grouped["_not_converged"].sum()
    out["n_eval_failed"] = grouped["_eval_failed"].sum()
    out = out.reset_index()
    if "coverage" in out.columns and "level" in out.columns:
        position = out.columns.get_loc("coverage_mcse")
        out.insert(int(position) + 1, "coverage_error", out["coverage"] - out["level"])
    return out
