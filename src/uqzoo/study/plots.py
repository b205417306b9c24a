"""Figures of a study summary: coverage against nominal, width against coverage, metrics.

Each function takes :func:`uqzoo.study.summarize`'s table and returns a
:class:`matplotlib.figure.Figure` with one panel per data-generating setting,
built without pyplot (no global state, no GUI backend), as
:mod:`uqzoo.plots` does. Bands and error bars are ±1.96 Monte Carlo standard
errors across replicates.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from uqzoo._validation import _show, check_float
from uqzoo.errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["coverage_plot", "metric_plot", "width_coverage_plot"]

# 1.96: the two-sided 95 % normal quantile, for Monte Carlo bands.
_Z95 = 1.959963984540054


def _check_summary(summary: object, needed: tuple[str, ...]) -> pd.DataFrame:
    import pandas as pd

    if not isinstance(summary, pd.DataFrame):
        raise InvalidTypeError(f"summary must be a DataFrame from uz.study.summarize, got "
                               f"{_show(summary)}")
    missing = [c for c in needed if c not in summary.columns]
    if missing:
        raise InvalidInputError(f"summary lacks column(s) {missing}; pass "
                                "uz.study.summarize(uz.study.load(store))")
    if summary.empty:
        raise InvalidInputError("summary is empty: the store holds no finished task")
    return summary


def _setting_name(dataset: object, setting: object) -> str:
    return f"{dataset}" + (f"\n{setting}" if setting else "")


def _method_name(method: object, variant: object) -> str:
    return f"{method}" + (f" [{variant}]" if variant else "")


def _panels(summary: pd.DataFrame, n_panels: int, width: float = 3.6,
            height: float = 3.2) -> tuple[Figure, list[Any]]:
    from matplotlib.figure import Figure

    columns = min(n_panels, 4)
    rows = math.ceil(n_panels / columns)
    fig = Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharex=True, sharey=True).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, list(axes[:n_panels])


def _groups(summary: pd.DataFrame) -> list[tuple[tuple[Any, Any], pd.DataFrame]]:
    return list(summary.groupby(["dataset", "setting"], sort=False, dropna=False))


def _colours(summary: pd.DataFrame) -> dict[str, str]:
    names = dict.fromkeys(_method_name(m, v) for m, v in
                          zip(summary.method, summary.variant, strict=True))
    return {name: f"C{i % 10}" for i, name in enumerate(names)}


def coverage_plot(summary: pd.DataFrame) -> Figure:
    """Coverage of the true probability against the nominal level, per method.

    One panel per setting; each method is a line with a ±1.96 Monte Carlo
    standard-error band across replicates. Points on the diagonal are
    calibrated intervals; below it, intervals too narrow.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`uqzoo.study.summarize`'s table.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    One method's coverage at two levels, as summarize's table gives it:

    >>> import pandas as pd
    >>> from uqzoo.study import plots
    >>> summary = pd.DataFrame({"dataset": "sim", "setting": "", "method": "laplace",
    ...                         "variant": "", "level": [0.5, 0.9],
    ...                         "coverage": [0.45, 0.85], "coverage_mcse": [0.02, 0.01]})
    >>> len(plots.coverage_plot(summary).axes)
    1
    """
    summary = _check_summary(summary, ("dataset", "setting", "method", "variant", "level",
                                       "coverage", "coverage_mcse"))
    groups = _groups(summary)
    colours = _colours(summary)
    fig, axes = _panels(summary, len(groups))
    for ax, ((dataset, setting), rows) in zip(axes, groups, strict=True):
        ax.plot([0, 1], [0, 1], ls="--", color="0.4", lw=1)
        for (method, variant), line in rows.groupby(["method", "variant"], sort=False):
            line = line.sort_values("level")
            name = _method_name(method, variant)
            band = _Z95 * line.coverage_mcse.fillna(0.0).to_numpy(float)
            cov = line.coverage.to_numpy(float)
            lv = line.level.to_numpy(float)
            ax.fill_between(lv, cov - band, cov + band, color=colours[name], alpha=0.2, lw=0)
            ax.plot(lv, cov, "o-", ms=3, color=colours[name], label=name)
        ax.set_title(_setting_name(dataset, setting), fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("nominal level")
        ax.set_ylabel("coverage of p_true")
    axes[0].legend(fontsize=7, loc="upper left")
    return fig


def width_coverage_plot(summary: pd.DataFrame) -> Figure:
    """Mean interval width against coverage, per method, one point per level.

    Narrow and covering (bottom right, on each level's nominal line) is best;
    the dotted verticals are the nominal levels.

    Examples
    --------
    The same method with its interval widths:

    >>> import pandas as pd
    >>> from uqzoo.study import plots
    >>> summary = pd.DataFrame({"dataset": "sim", "setting": "", "method": "laplace",
    ...                         "variant": "", "level": [0.5, 0.9],
    ...                         "coverage": [0.45, 0.85], "coverage_mcse": [0.02, 0.01],
    ...                         "interval_width": [0.1, 0.3],
    ...                         "interval_width_mcse": [0.01, 0.01]})
    >>> len(plots.width_coverage_plot(summary).axes)
    1
    """
    summary = _check_summary(summary, ("dataset", "setting", "method", "variant", "level",
                                       "coverage", "coverage_mcse", "interval_width",
                                       "interval_width_mcse"))
    groups = _groups(summary)
    colours = _colours(summary)
    fig, axes = _panels(summary, len(groups))
    for ax, ((dataset, setting), rows) in zip(axes, groups, strict=True):
        for level in sorted(rows.level.dropna().unique()):
            ax.axvline(level, ls=":", color="0.6", lw=0.8)
        for (method, variant), line in rows.groupby(["method", "variant"], sort=False):
            line = line.sort_values("level")
            name = _method_name(method, variant)
            ax.errorbar(line.coverage, line.interval_width,
                        xerr=_Z95 * line.coverage_mcse.fillna(0.0),
                        yerr=_Z95 * line.interval_width_mcse.fillna(0.0),
                        fmt="o-", ms=3, capsize=2, lw=1, color=colours[name], label=name)
        ax.set_title(_setting_name(dataset, setting), fontsize=8)
        ax.set_xlim(0, 1.02)
        ax.set_xlabel("coverage of p_true")
        ax.set_ylabel("mean interval width")
    axes[0].legend(fontsize=7, loc="upper left")
    return fig


def metric_plot(summary: pd.DataFrame, metric: str = "ece", *,
                level: float | None = None) -> Figure:
    """One metric per method across settings (e.g. ECE, or the HCS proportion at a level).

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`uqzoo.study.summarize`'s table.
    metric : str
        A summarised metric with its ``<metric>_mcse`` column: ``"ece"``,
        ``"hcs_proportion"``, ``"accuracy"``, ``"brier"``, ``"nll"``,
        ``"fit_seconds"``, ...
    level : float, optional
        The credible level to show (for level-dependent metrics such as
        ``hcs_proportion``); default: the first level. Task-level metrics are
        the same at every level.

    Examples
    --------
    >>> import pandas as pd
    >>> from uqzoo.study import plots
    >>> summary = pd.DataFrame({"dataset": "sim", "setting": ["a", "b"],
    ...                         "method": "laplace", "variant": "", "level": 0.9,
    ...                         "ece": [0.03, 0.05], "ece_mcse": [0.01, 0.01]})
    >>> len(plots.metric_plot(summary, "ece").axes)
    1
    """
    import numpy as np
    from matplotlib.figure import Figure

    if not isinstance(metric, str):
        raise InvalidTypeError(f"metric must be a column name (str), got {_show(metric)}")
    summary = _check_summary(summary, ("dataset", "setting", "method", "variant", "level",
                                       metric, f"{metric}_mcse"))
    levels = sorted(summary.level.dropna().unique())
    if level is None:
        level = levels[0] if levels else None
    else:
        level = check_float(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
        if not np.isclose(levels, level).any():
            raise InvalidInputError(f"level {level} is not in the summary; levels: "
                                    f"{[float(v) for v in levels]}")
    rows = summary if level is None else summary[np.isclose(summary.level, level)]
    settings = list(dict.fromkeys(_setting_name(d, s).replace("\n", " ")
                                  for d, s in zip(rows.dataset, rows.setting, strict=True)))
    colours = _colours(rows)
    fig = Figure(figsize=(max(5.0, 1.2 * len(settings) + 2), 3.8), layout="constrained")
    ax = fig.subplots()
    n_methods = len(colours)
    for i, (name, colour) in enumerate(colours.items()):
        mine = rows[[_method_name(m, v) == name for m, v in
                     zip(rows.method, rows.variant, strict=True)]]
        x = [settings.index(_setting_name(d, s).replace("\n", " "))
             for d, s in zip(mine.dataset, mine.setting, strict=True)]
        offset = (i - (n_methods - 1) / 2) * 0.8 / max(n_methods, 1)
        ax.errorbar(np.asarray(x, float) + offset, mine[metric],
                    yerr=_Z95 * mine[f"{metric}_mcse"].fillna(0.0), fmt="o", ms=4,
                    capsize=2, color=colour, label=name)
    ax.set_xticks(range(len(settings)), settings, rotation=30, ha="right", fontsize=7)
    suffix = f" at level {level:g}" if level is not None and metric.startswith("hcs") else ""
    ax.set_ylabel(metric + suffix)
    ax.legend(fontsize=7)
    return fig
