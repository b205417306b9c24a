"""Figures of an evaluation: reliability, coverage, risk–coverage, HSI maps.

Every function returns a :class:`matplotlib.figure.Figure` and takes an
optional ``ax`` to draw into. Without one, the figure is built with
:class:`~matplotlib.figure.Figure` directly, not through pyplot: no global
state, no GUI backend needed (safe under Agg, in tests and on servers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from uqzoo._validation import _show, check_choice, check_float
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics.calibration import CONFIDENCE_KINDS, reliability_curve

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from uqzoo.evaluate import EvalReport

__all__ = ["comparison_maps", "conditional_coverage_plot", "confident_errors", "coverage_plot",
           "ece_binning",
           "fidelity_maps", "fidelity_plot", "hsi_maps", "reliability_diagram",
           "risk_coverage_plot", "shift_errorbars"]

# 1.96: the two-sided 95 % normal quantile, for binomial bands.
_Z95 = 1.959963984540054


def _figure_of(ax: Axes) -> Figure:
    """The top-level figure an Axes draws into (a subfigure's parent figure)."""
    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


def _figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A new figure of ``figsize`` inches with one axes, or ``ax`` with the figure it is in."""
    if ax is None:
        fig = Figure(figsize=figsize, layout="constrained")
        return fig, fig.subplots()
    return _figure_of(ax), ax


def _is_report(obj: object) -> TypeGuard[EvalReport]:
    return hasattr(obj, "table") and hasattr(obj, "reliability")


def _check_reports(reports: object) -> Mapping[str, EvalReport]:
    if _is_report(reports):
        return {"method": reports}
    if not isinstance(reports, Mapping) or not reports:
        raise InvalidTypeError(
            f"reports must be a non-empty dict of name -> EvalReport, got {_show(reports)}"
        )
    for name, rep in reports.items():
        if not _is_report(rep):
            raise InvalidTypeError(f"reports[{name!r}] must be an EvalReport, got {_show(rep)}")
    return reports


def reliability_diagram(report_or_probs: EvalReport | Any, y: object = None, *,
                        n_bins: int = 15, confidence: str = "top_label",
                        ci_level: float = 0.95, ax: Axes | None = None) -> Figure:
    """Reliability diagram with Clopper–Pearson bars and a confidence histogram.

    Parameters
    ----------
    report_or_probs : EvalReport or array of shape (N, K)
        A report (its stored equal-width curve is drawn; the positive-class
        axis is labelled with the report's class name) or probabilities.
    y : array of shape (N,), optional
        Labels, with probabilities only.
    n_bins : int
        Bins, with probabilities only (a report uses its own).
    confidence : {"top_label", "positive_class"}
    ci_level : float
        Level of the error bars, with probabilities only.
    ax : matplotlib Axes, optional
        Draw here; the histogram then goes on a twin y-axis.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p1 = np.random.default_rng(0).uniform(size=500); p = np.stack([1 - p1, p1], 1)
    >>> fig = uz.plots.reliability_diagram(p, (p1 > 0.5).astype(int))
    >>> len(fig.axes)
    2
    """
    confidence = check_choice(confidence, "confidence", CONFIDENCE_KINDS)
    positive = "1"  # the positive class's name on the axis: a report knows the label
    if _is_report(report_or_probs):
        names: tuple[str, ...] = tuple(getattr(report_or_probs, "class_names", ()) or ())
        positive = str(names[1]) if len(names) == 2 else positive
        curves = report_or_probs.reliability
        matches = [k for k in curves if k.startswith(confidence)]
        if not matches:
            raise InvalidInputError(
                f"this report has no {confidence!r} reliability curve; it has {list(curves)}"
            )
        curve = curves[matches[0]]
    else:
        if y is None:
            raise InvalidInputError("y (labels) is required when probabilities are given")
        ci_level = check_float(ci_level, "ci_level", low=0.0, high=1.0, low_open=True,
                               high_open=True)
        curve = reliability_curve(report_or_probs, y, n_bins, confidence=confidence,
                                  ci_level=ci_level)
    if ax is None:
        fig = Figure(figsize=(5, 6), layout="constrained")
        main, hist = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    else:
        fig = _figure_of(ax)
        main, hist = ax, ax.twinx()
    main.plot([0, 1], [0, 1], ls="--", color="0.5", lw=1, label="perfect calibration")
    err = np.vstack([curve.accuracy - curve.lower, curve.upper - curve.accuracy])
    main.errorbar(curve.confidence, curve.accuracy, yerr=err, fmt="o", ms=4, capsize=2,
                  label=f"observed ({curve.ci_level:.0%} Clopper–Pearson)")
    main.set_xlim(0, 1)
    main.set_ylim(0, 1)
    main.set_ylabel("observed frequency" if confidence == "positive_class" else "accuracy")
    main.set_title(curve.variant, fontsize=9)
    main.legend(loc="upper left", fontsize=8)
    widths = curve.bin_upper - curve.bin_lower
    hist.bar(curve.bin_lower, curve.count / curve.count.sum(), width=widths, align="edge",
             color="C1", alpha=0.4 if ax is not None else 0.8, edgecolor="white")
    hist.set_ylabel("fraction of points")
    (hist if ax is None else main).set_xlabel(
        f"P(y = {positive})" if confidence == "positive_class"
        else "confidence (max probability)")
    return fig


def _level_rows(report: EvalReport, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = report.table
    rows = t[(t.metric == metric) & t["class"].isna()].sort_values("level")
    return (rows.level.to_numpy(float), rows.value.to_numpy(float),
            rows.stderr.to_numpy(float))


def coverage_plot(reports: EvalReport | Mapping[str, EvalReport],
                  ax: Sequence[Axes] | None = None) -> Figure:
    """Empirical coverage against the nominal level, and width against coverage.

    Several methods on one figure. The grey band is the nominal level ±
    1.96 binomial standard errors sqrt(L(1 − L)/N): a well-calibrated
    method's points fall inside it; error bars are the empirical ±1.96 s.e.

    Parameters
    ----------
    reports : dict of str to EvalReport (or one EvalReport)
        Reports computed with known true probabilities.
    ax : pair of matplotlib Axes, optional
        (coverage axes, width axes).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0); pt = rng.uniform(size=200)
    >>> p = rng.beta(20 * pt, 20 * (1 - pt), size=(100, 200))[..., None]
    >>> draws = np.concatenate([1 - p, p], -1)
    >>> rep = uz.evaluate(draws, (rng.uniform(size=200) < pt).astype(int),
    ...                   p_true=np.stack([1 - pt, pt], 1))
    >>> len(uz.plots.coverage_plot({"toy": rep}).axes)
    2
    """
    reports = _check_reports(reports)
    if ax is None:
        fig = Figure(figsize=(10, 4.5), layout="constrained")
        ax_cov, ax_width = fig.subplots(1, 2)
    else:
        from matplotlib.axes import Axes
        # A list, a tuple or the array ``plt.subplots(1, 2)`` returns.
        pair = list(np.ravel(np.asarray(ax, dtype=object))) if not isinstance(ax, Axes) else []
        if len(pair) != 2 or not all(isinstance(a, Axes) for a in pair):
            raise InvalidTypeError(f"ax must be a pair of matplotlib Axes (coverage axes, width "
                                   f"axes), e.g. plt.subplots(1, 2)[1]; got {_show(ax)}")
        ax_cov, ax_width = pair
        fig = _figure_of(ax_cov)
    n_min = min(rep.n_points for rep in reports.values())
    grid = np.linspace(0.01, 0.99, 99)
    band = _Z95 * np.sqrt(grid * (1 - grid) / n_min)
    ax_cov.fill_between(grid, grid - band, grid + band, color="0.85",
                        label=f"nominal ± 1.96 s.e. (N={n_min})")
    ax_cov.plot([0, 1], [0, 1], ls="--", color="0.4", lw=1)
    for i, (name, rep) in enumerate(reports.items()):
        levels, cov, se = _level_rows(rep, "coverage")
        if levels.size == 0:
            raise InvalidInputError(
                f"report {name!r} has no coverage: evaluate it with known p_true"
            )
        lv_w, width, _ = _level_rows(rep, "interval_width")
        colour = _method_colour(i)
        ax_cov.errorbar(levels, cov, yerr=_Z95 * se, fmt="o-", ms=4, capsize=2, color=colour,
                        label=name)
        ax_width.plot(cov, width, "o-", color=colour, label=name)
        for lv, c, w in zip(lv_w, cov, width, strict=True):
            ax_width.annotate(f"{lv:g}", (c, w), textcoords="offset points", xytext=(3, 3),
                              fontsize=7, color=colour)
    ax_cov.set_xlabel("nominal level")
    ax_cov.set_ylabel("empirical coverage of p_true")
    ax_cov.set_xlim(0, 1)
    ax_cov.set_ylim(0, 1.02)
    ax_cov.legend(fontsize=8, loc="upper left")
    ax_width.set_xlabel("empirical coverage")
    ax_width.set_ylabel("mean interval width")
    ax_width.set_title("labels: nominal level", fontsize=8)
    # A fixed corner, not "best": matplotlib warns when its search for the best
    # spot takes over a second, so a loaded machine would turn a report's figure
    # into a warning (an error under the tests' warnings-as-errors). Width grows
    # with coverage, so wide-but-undercovering, the upper left, is the empty corner.
    ax_width.legend(fontsize=8, loc="upper left")
    return fig


# The binnings ece_binning compares by default: Guo et al.'s 15 bins, and 10
# and 30 around it; equal width (Guo) and equal mass (Nixon et al.'s quantile bins).
ECE_BINNING_BINS = (10, 15, 30)
ECE_BINNINGS = ("equal_width", "quantile")


def ece_binning(reports: EvalReport | Mapping[str, EvalReport], *,
                n_bins: Sequence[int] = ECE_BINNING_BINS,
                binnings: Sequence[str] = ECE_BINNINGS, confidence: str = "top_label",
                calibrated_reference: bool = True, reference_draws: int = 20, seed: int = 0,
                ax: Axes | None = None) -> Figure:
    """ECE of each method under several binnings: how much of it is the binning's.

    One line per method and binning scheme -- equal-width bins (Guo et al.,
    solid) and equal-mass bins (Nixon et al., dashed) -- against the number
    of bins. Binned ECE is biased upwards by the noise of the per-bin
    accuracy, more so with more and emptier bins, so a method ranking that
    flips between 10 and 30 bins is not a finding. With
    ``calibrated_reference`` a dotted line per method shows that floor: the
    mean ECE, under the same binning, of labels drawn from the method's own
    confidences (what a perfectly calibrated model with these confidences
    would score).

    Parameters
    ----------
    reports : dict of str to EvalReport (or one EvalReport)
    n_bins : sequence of int
        Numbers of bins (default 10, 15, 30).
    binnings : sequence of {"equal_width", "quantile"}
    confidence : {"top_label", "positive_class"}
        ``"positive_class"`` needs binary reports.
    calibrated_reference : bool
        Draw the perfectly-calibrated floor of the equal-width binning.
    reference_draws : int >= 1
        Simulated label sets averaged for the floor.
    seed : int
        Seed of the simulated labels.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    Probabilities unrelated to the labels, so every binning finds some ECE:

    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, size=(50, 300, 1)); draws = np.concatenate([1 - p, p], -1)
    >>> rep = uz.evaluate(draws, rng.integers(0, 2, 300), levels=(0.8,))
    >>> len(uz.plots.ece_binning({"toy": rep}).axes)
    1

    References
    ----------
    Guo, C., et al. (2017). On calibration of modern neural networks. ICML.
    Nixon, J., et al. (2019). Measuring calibration in deep learning. CVPR Workshops.
    """
    from uqzoo._validation import check_int, check_seed
    from uqzoo.metrics.calibration import BINNINGS, calibration_bins, confidence_and_outcome

    reports = _check_reports(reports)
    if isinstance(n_bins, (str, bytes)) or not isinstance(n_bins, Sequence) or not n_bins:
        raise InvalidTypeError(f"n_bins must be a non-empty sequence of ints, got "
                               f"{_show(n_bins)}")
    bins = sorted({check_int(b, "n_bins entry", minimum=1, maximum=10_000) for b in n_bins})
    if isinstance(binnings, str) or not isinstance(binnings, Sequence) or not binnings:
        raise InvalidTypeError(f"binnings must be a non-empty sequence of "
                               f"{', '.join(map(repr, BINNINGS))}, got {_show(binnings)}")
    schemes = [check_choice(b, "binnings entry", BINNINGS) for b in dict.fromkeys(binnings)]
    confidence = check_choice(confidence, "confidence", CONFIDENCE_KINDS)
    if not isinstance(calibrated_reference, bool):
        raise InvalidTypeError(f"calibrated_reference must be True or False, got "
                               f"{_show(calibrated_reference)}")
    reference_draws = check_int(reference_draws, "reference_draws", minimum=1, maximum=10_000)
    rng = np.random.default_rng(check_seed(seed))
    for name, rep in reports.items():
        if confidence == "positive_class" and rep.n_classes != 2:
            raise InvalidInputError(f"confidence='positive_class' needs binary reports; "
                                    f"report {name!r} has {rep.n_classes} classes")
    fig, ax = _figure_and_axes(ax, (6.5, 4.2))
    styles = {"equal_width": ("o", "-", "equal width"), "quantile": ("s", "--", "equal mass")}
    x = np.arange(len(bins))
    for i, (name, rep) in enumerate(reports.items()):
        colour = _method_colour(i)
        for scheme in schemes:
            marker, line, label = styles[scheme]
            values = [calibration_bins(rep.mean, rep.y, b, confidence=confidence,
                                       binning=scheme).errors()[0] for b in bins]
            ax.plot(x, values, marker=marker, ls=line, color=colour, label=f"{name}, {label}")
        if calibrated_reference:
            conf, _ = confidence_and_outcome(rep.mean, rep.y, confidence)
            # labels drawn from the model's own confidences, scored like the data
            as_binary = np.stack([1 - conf, conf], axis=1)
            floor = np.zeros(len(bins))
            for _ in range(reference_draws):
                y_sim = (rng.random(conf.shape[0]) < conf).astype(np.int64)
                floor += [calibration_bins(as_binary, y_sim, b, confidence="positive_class",
                                           binning="equal_width").errors()[0] for b in bins]
            ax.plot(x, floor / reference_draws, ls=":", color=colour, lw=1,
                    label=f"{name}, calibrated floor (equal width)")
    ax.set_xticks(x, [str(b) for b in bins])
    ax.set_xlabel("number of bins")
    ax.set_ylabel(f"ECE ({confidence.replace('_', '-')})")
    ax.set_ylim(bottom=0)
    ax.set_title("ECE by binning: equal width (Guo) vs equal mass (Nixon)", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def risk_coverage_plot(reports: EvalReport | Mapping[str, EvalReport],
                       ax: Axes | None = None) -> Figure:
    """Selective risk against coverage (tie-aware), one curve per method.

    Parameters
    ----------
    reports : dict of str to EvalReport (or one EvalReport)
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    One method's curve on random probabilities and labels:

    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0); p = rng.dirichlet([1, 1], size=(50, 300))
    >>> rep = uz.evaluate(p, rng.integers(0, 2, 300))
    >>> len(uz.plots.risk_coverage_plot({"toy": rep}).axes)
    1
    """
    reports = _check_reports(reports)
    fig, ax = _figure_and_axes(ax, (5, 4))
    for i, (name, rep) in enumerate(reports.items()):
        rc = rep.risk_coverage
        aurc_value = rep.value("aurc", variant="tie-aware trapezoid, max probability")
        ax.plot(rc.coverage, rc.risk, color=_method_colour(i), lw=1.5,
                label=f"{name} (AURC {aurc_value:.4f})")
    ax.set_xlabel("coverage (fraction of points kept)")
    ax.set_ylabel("selective risk (error rate among kept)")
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig


def conditional_coverage_plot(reports: EvalReport | Mapping[str, EvalReport],
                              ax: Axes | None = None) -> Figure:
    """The distribution of exact conditional coverage of label sets, own and conformal.

    For every report evaluated with ``conformal=`` on data with true
    probabilities, the empirical CDF over test points of P(y ∈ C(x) | x) =
    Σ_{k∈C(x)} p_true,k(x): dashed for the method's own sets, solid for its
    conformal sets, the nominal level as a vertical line. Marginal coverage
    is the mean of each curve; the mass left of the line is the share of
    points a set covers less than it claims.

    Parameters
    ----------
    reports : dict of str to EvalReport (or one EvalReport)
        Each with ``report.conformal`` and true probabilities.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet([1, 1, 1], size=600); y = (rng.uniform(size=600) > p[:, 0]).astype(int)
    >>> rule = uz.conformal.calibrate(p[:300], y[:300], alpha=0.1)
    >>> rep = uz.evaluate(p[300:, None].swapaxes(0, 1), y[300:], p_true=p[300:], conformal=rule)
    >>> len(uz.plots.conditional_coverage_plot({"toy": rep}).axes)
    1
    """
    reports = _check_reports(reports)
    shown = {name: rep.conformal for name, rep in reports.items()
             if rep.conformal is not None
             and rep.conformal.conformal.conditional_coverage is not None}
    if not shown:
        raise InvalidInputError(
            "conditional_coverage_plot needs reports evaluated with conformal= "
            "(uz.evaluate(..., conformal=rule) or uz.compare(..., conformal=0.9)) on data "
            "with true probabilities (p_true)")
    fig, ax = _figure_and_axes(ax, (5.5, 4))
    level = None
    for i, (name, judged) in enumerate(shown.items()):
        level = judged.rule.level
        for sets, style, what in ((judged.plain, "--", "own"),
                                  (judged.conformal, "-", "conformal")):
            values = np.sort(sets.conditional_coverage)
            share = np.arange(1, values.shape[0] + 1) / values.shape[0]
            ax.step(values, share, where="post", color=_method_colour(i), ls=style, lw=1.4,
                    label=f"{name} {what} (worst 10 %: {sets.worst_decile_coverage:.3f})")
    if level is not None:
        ax.axvline(level, color="0.3", lw=1, ls=":", label=f"level {level:g}")
    ax.set_xlabel("conditional coverage P(y ∈ C(x) | x)")
    ax.set_ylabel("share of test points at or below")
    ax.set_xlim(0, 1.01)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left")
    return fig


def _image(values: np.ndarray, coords: np.ndarray, shape: tuple[int, int],
           fill: float = np.nan) -> np.ndarray:
    img = np.full(shape, fill, dtype=np.float64)
    img[coords[:, 0], coords[:, 1]] = values
    return img


# The marks every HSI map shares. The ground truth is a white pixel-edge outline
# over a black stroke, visible on viridis, magma and the HCS colours alike, and
# drawn above the error markers so a marked target keeps its outline. A
# confident miss is a target inside the blue (confidently background) part of
# the HCS, so it gets a yellow cross; a confident false alarm is background
# inside the red part, so it gets a cyan disc; both edged in black.
_TRUTH_GID = "ground_truth"
_MISS_GID = "confident_misses"
_FALSE_ALARM_GID = "confident_false_alarms"
_MISS_STYLE = {"marker": "X", "color": "#ffd400"}
_FALSE_ALARM_STYLE = {"marker": "o", "color": "#00e5ff"}


def _truth_segments(mask: np.ndarray) -> np.ndarray:
    """Pixel edges around the True pixels of a 2-D mask, as (E, 2, 2) (x, y) pairs.

    ``imshow`` puts pixel (r, c) on [c − ½, c + ½] × [r − ½, r + ½]; an edge is
    drawn where a True pixel meets a False one or the border, so touching
    target pixels share one outline.
    """
    padded = np.pad(np.asarray(mask, dtype=bool), 1)
    r, c = np.nonzero(mask)
    x0, x1, y0, y1 = c - 0.5, c + 0.5, r - 0.5, r + 0.5
    sides = (
        (~padded[r, c + 1], (x0, y0), (x1, y0)),      # nothing above
        (~padded[r + 2, c + 1], (x0, y1), (x1, y1)),  # nothing below
        (~padded[r + 1, c], (x0, y0), (x0, y1)),      # nothing to the left
        (~padded[r + 1, c + 2], (x1, y0), (x1, y1)),  # nothing to the right
    )
    segments = [np.stack([np.stack(a, -1)[open_], np.stack(b, -1)[open_]], axis=1)
                for open_, a, b in sides]
    return np.concatenate(segments).reshape(-1, 2, 2)


def _truth_effects() -> list[Any]:
    from matplotlib import patheffects

    return [patheffects.Stroke(linewidth=2.2, foreground="black"), patheffects.Normal()]


def _truth_handle(label: str) -> Any:
    """A legend entry for the outline (a LineCollection's own entry draws no stroke)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color="white", lw=0.9, label=label, path_effects=_truth_effects())


def _draw_truth(ax: Axes, mask: np.ndarray) -> Any:
    from matplotlib.collections import LineCollection

    lines = LineCollection(list(_truth_segments(mask)), colors="white", linewidths=0.9,
                           gid=_TRUTH_GID, zorder=5, path_effects=_truth_effects())
    ax.add_collection(lines, autolim=False)
    return lines


def _marker_size(shape: tuple[int, int], panel_points: float) -> float:
    """Marker area (points²): about a pixel across on a panel ``panel_points`` wide, 4-9 points."""
    side = float(np.clip(0.9 * panel_points / max(shape), 4.0, 9.0))
    return side * side


def _draw_errors(ax: Axes, coords: np.ndarray, misses: np.ndarray, false_alarms: np.ndarray,
                 shape: tuple[int, int], name: str, panel_points: float) -> list[Any]:
    """Scatter the confident errors (column = x, row = y) with counts in their labels."""
    size = _marker_size(shape, panel_points)
    out = []
    for gid, which, style, label in (
            (_MISS_GID, misses, _MISS_STYLE, f"confident miss: {name} called not {name}"),
            (_FALSE_ALARM_GID, false_alarms, _FALSE_ALARM_STYLE,
             f"confident false alarm: called {name}")):
        rows, cols = coords[which, 0], coords[which, 1]
        out.append(ax.scatter(cols, rows, s=size, c=style["color"], marker=style["marker"],
                              edgecolors="black", linewidths=0.5, zorder=4, gid=gid,
                              label=f"{label} ({int(which.sum())})"))
    return out


def confident_errors(report: EvalReport, *, level: float = 0.8,
                     class_index: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The High Confidence Set's wrong decisions: confident misses and false alarms.

    Parameters
    ----------
    report : EvalReport
    level : float
        One of ``report.levels``.
    class_index : int, optional
        The judged class (the target); default 1 (binary) or the first judged class.

    Returns
    -------
    (misses, false_alarms) : two bool ndarrays of shape (N,)
        ``misses``: points of the class whose whole interval lies below δ (the
        set confidently calls them not the class); ``false_alarms``: points
        of other classes whose whole interval lies above 1 − δ.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([0.01, 0.99, 0.5])[None, :, None].repeat(40, 0)
    >>> draws = np.concatenate([1 - p, p], -1)            # (S, N, K), all draws alike
    >>> rep = uz.evaluate(draws, np.array([1, 0, 1]), levels=(0.8,))
    >>> [m.tolist() for m in uz.plots.confident_errors(rep)]
    [[True, False, False], [False, True, False]]
    """
    if not _is_report(report):
        raise InvalidTypeError(f"report must be an EvalReport, got {_show(report)}")
    li, ci, class_index = _level_and_class(report, level, class_index)
    is_class = np.asarray(report.y) == class_index
    return (is_class & report.hcs_negative[li, :, ci],
            ~is_class & report.hcs_positive[li, :, ci])


def _level_and_class(report: EvalReport, level: float,
                     class_index: int | None) -> tuple[int, int, int]:
    """(level index, judged-class column, class index), validated against the report."""
    matches = [i for i, lv in enumerate(report.levels) if np.isclose(lv, level)]
    if not matches:
        raise InvalidInputError(f"level {level} was not evaluated; levels: {report.levels}")
    if class_index is None:
        class_index = report.hcs_classes[0]
    if class_index not in report.hcs_classes:
        raise InvalidInputError(
            f"class_index must be one of the judged classes {report.hcs_classes}, got {class_index}"
        )
    return matches[0], report.hcs_classes.index(class_index), int(class_index)


# One colour per method: matplotlib's ten (tab10), then four more as far from them
# and from each other as a palette allows, so that a comparison of every method
# (eleven, and a recalibrated row or two) never gives two methods one colour.
_METHOD_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#393b79",
                   "#b5cf6b", "#e7969c")


def _method_colour(i: int) -> str:
    """The colour of the i-th method of a figure (cycling past the palette's end)."""
    return _METHOD_COLOURS[i % len(_METHOD_COLOURS)]


def _scene_geometry(report: EvalReport, data: object) -> tuple[np.ndarray, tuple[int, int]]:
    """The test pixels' (row, column) and the image shape, from the report or the data."""
    coords = report.coords
    shape = report.image_shape
    if data is not None:
        coords = coords if coords is not None else getattr(data, "coords_test", None)
        if shape is None:
            meta_shape = (getattr(data, "meta", {}) or {}).get("image_shape")
            shape = tuple(int(s) for s in meta_shape) if meta_shape is not None else None
    if coords is None or shape is None:
        raise InvalidInputError(
            "hsi maps need pixel coordinates and meta['image_shape']: evaluate an HSI "
            "ClassificationData, or pass it as data"
        )
    return np.asarray(coords), (int(shape[0]), int(shape[1]))


def _axes_list(ax: object, count: int, what: str) -> list[Any]:
    """``count`` Axes from a list, tuple or numpy array of them (any shape)."""
    items = list(np.asarray(ax, dtype=object).ravel()) if isinstance(ax, np.ndarray) else ax
    if not isinstance(items, Sequence) or len(items) != count or not all(
            hasattr(a, "imshow") for a in items):
        raise InvalidTypeError(f"ax must be {count} matplotlib Axes ({what}), got {_show(ax)}")
    return list(items)


def hsi_maps(report: EvalReport, data: object = None, *, level: float = 0.8,
             class_index: int | None = None, ax: Sequence | np.ndarray | None = None,
             truth: bool = True, errors: bool = True,
             width_max: float | None = None) -> Figure:
    """Maps of a hyperspectral scene: mean P(target), interval width, High Confidence Set.

    The ground-truth pixels of the class are outlined on every map, and the
    High Confidence Set's wrong decisions are marked on its map: confident
    misses (pixels of the class the set confidently calls background, yellow
    crosses) and confident false alarms (other pixels it confidently calls
    the class, cyan discs), counted in the legend. They are exactly
    :func:`confident_errors`.

    Parameters
    ----------
    report : EvalReport
        Evaluated on the scene's test pixels.
    data : ClassificationData, optional
        Source of ``coords_test`` and ``meta["image_shape"]`` when the report
        does not carry them.
    level : float
        Credible level of the width and HCS maps (one of ``report.levels``;
        0.8 is Ries et al.'s α = 0.2).
    class_index : int, optional
        Target class; default 1 (binary) or the first judged class.
    ax : three matplotlib Axes, optional
        A list, tuple or numpy array (e.g. a row of ``Figure.subplots``).
    truth : bool
        Outline the pixels whose label is the class.
    errors : bool
        Mark the confident misses and false alarms on the HCS map.
    width_max : float, optional
        Top of the width map's colour scale (its bottom is 0): pass one value
        for the maps of several methods so that one colour is one width on
        all of them. Default: this report's widest interval (1 when every
        width is 0, a point estimate's, so the scale never goes below 0).

    Returns
    -------
    matplotlib.figure.Figure
        Pixels outside the test set are blank.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> coords = np.array([(r, c) for r in range(3) for c in range(4)])
    >>> y = np.tile([0, 1], 6); X = np.zeros((12, 1))
    >>> data = uz.ClassificationData(X, y, X, y, 2, coords_test=coords,
    ...                              meta={"image_shape": (3, 4)})
    >>> draws = np.random.default_rng(0).dirichlet([1, 1], size=(50, 12))
    >>> rep = uz.evaluate(draws, data, levels=(0.8,))
    >>> len(uz.plots.hsi_maps(rep).axes)          # three maps and their colour bars
    6
    """
    if not _is_report(report):
        raise InvalidTypeError(f"report must be an EvalReport, got {_show(report)}")
    coords, shape = _scene_geometry(report, data)
    li, ci, class_index = _level_and_class(report, level, class_index)
    if ax is None:
        fig = Figure(figsize=(13, 4.6), layout="constrained")
        axes = list(fig.subplots(1, 3, sharex=True, sharey=True))
    else:
        axes = _axes_list(ax, 3, "probability, width, HCS")
        fig = _figure_of(axes[0])
    name = report.class_names[class_index] if report.class_names else str(class_index)
    prob = _image(report.mean[:, class_index], coords, shape)
    im = axes[0].imshow(prob, vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    axes[0].set_title(f"posterior mean P({name})", fontsize=9)
    fig.colorbar(im, ax=axes[0], shrink=0.8)
    width = _image(report.interval_width[li, :, class_index].astype(np.float64), coords, shape)
    if width_max is not None:
        top = check_float(width_max, "width_max", low=0.0)
    else:
        top = float(np.nanmax(width)) if np.isfinite(width).any() else 0.0
    if not math.isfinite(top) or top <= 0:
        top = 1.0
    im = axes[1].imshow(width, vmin=0, vmax=top, cmap="magma", interpolation="nearest")
    axes[1].set_title(f"{level:g} credible interval width", fontsize=9)
    fig.colorbar(im, ax=axes[1], shrink=0.8)
    # 0 confident background, 1 uncertain, 2 confident target
    category = np.ones(report.n_points)
    category[report.hcs_negative[li, :, ci]] = 0
    category[report.hcs_positive[li, :, ci]] = 2
    cmap = ListedColormap(["#3b6fb6", "#d9d9d9", "#d62728"])
    im = axes[2].imshow(_image(category, coords, shape), vmin=-0.5, vmax=2.5, cmap=cmap,
                        interpolation="nearest")
    axes[2].set_title(f"HCS (level {level:g}, δ={report.delta:g})", fontsize=9)
    bar = fig.colorbar(im, ax=axes[2], ticks=[0, 1, 2], shrink=0.8)
    bar.ax.set_yticklabels([f"confident\nnot {name}", "uncertain", f"confident\n{name}"],
                           fontsize=8)
    handles = []
    if truth:
        is_class = _image((np.asarray(report.y) == class_index).astype(float), coords, shape,
                          fill=0.0) > 0
        for a in axes:
            _draw_truth(a, is_class)
        handles.append(_truth_handle(f"ground truth: {name}"))
    if errors:
        misses, false_alarms = confident_errors(report, level=level, class_index=class_index)
        # panel width in points: a third of the figure, less its colour bar
        panel = 0.25 * 72 * float(fig.get_figwidth())
        handles += _draw_errors(axes[2], coords, misses, false_alarms, shape, name, panel)
    if handles:
        axes[2].legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02),
                       fontsize=7, frameon=False, ncols=1)
    for a in axes:
        a.set_xticks([])
        a.set_yticks([])
        a.set_xlim(-0.5, shape[1] - 0.5)
        a.set_ylim(shape[0] - 0.5, -0.5)
    return fig


def comparison_maps(result: Any, data: object = None, *, level: float = 0.8,
                    far: float | None = None, ncols: int | None = None) -> Figure:
    """One map per method and per classical detector of a comparison on an HSI scene.

    A method's panel is its posterior mean P(target) with the ground truth
    outlined and its High Confidence Set's confident errors marked (as in
    :func:`hsi_maps`); a detector's panel is its score as a percentile among
    the test pixels (detectors have no intervals, hence no HCS). Titles give
    the detection AUROC and Pd at a false-alarm rate, and ``FAILED`` for a
    flagged fit.

    Parameters
    ----------
    result : Comparison
        What :func:`uqzoo.compare` returns, on a binary scene with pixel coordinates.
    data : ClassificationData, optional
        Source of the coordinates when the reports do not carry them.
    level : float
        Credible level of the HCS (one of the reports' levels).
    far : float, optional
        The false-alarm rate of the titles' Pd; default the reports' first.
    ncols : int, optional
        Panels per row; default up to 6.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("muufl-target", seed=0)
    >>> result = uz.compare(data, ["laplace"], progress_bar=False)       # doctest: +SKIP
    >>> uz.plots.comparison_maps(result).savefig("maps.png")           # doctest: +SKIP
    """
    reports = getattr(result, "reports", None)
    detectors = getattr(result, "detectors", None)
    if not isinstance(reports, Mapping) or not isinstance(detectors, Mapping):
        raise InvalidTypeError(f"result must be a Comparison (uz.compare), got {_show(result)}")
    reports = _check_reports(dict(reports)) if reports else {}
    panels = len(reports) + len(detectors)
    if panels == 0:
        raise InvalidInputError("the comparison has no method and no detector to map")
    first = next(iter(reports.values()), None)
    if first is not None and first.n_classes != 2:
        raise InvalidInputError(
            f"comparison_maps maps P(target) of binary scenes; this one has {first.n_classes} "
            f"classes: use hsi_maps per method")
    if first is not None:
        coords, shape = _scene_geometry(first, data)
        y = np.asarray(first.y)
    else:
        if data is None:
            raise InvalidInputError("a comparison of detectors alone needs data for its map")
        coords = np.asarray(getattr(data, "coords_test", None))
        shape_meta = (getattr(data, "meta", {}) or {}).get("image_shape")
        if coords.ndim != 2 or shape_meta is None:
            raise InvalidInputError("data needs coords_test and meta['image_shape']")
        shape = (int(shape_meta[0]), int(shape_meta[1]))
        y = np.asarray(data.y_test)  # type: ignore[attr-defined]
    if ncols is None:
        ncols = min(panels, 6)
    ncols = int(ncols)
    if ncols < 1:
        raise InvalidInputError(f"ncols must be at least 1, got {ncols}")
    nrows = -(-panels // ncols)
    side = 2.3
    fig = Figure(figsize=(side * ncols + 0.6, side * nrows + 1.0), layout="constrained")
    grid = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    is_target = _image((y == 1).astype(float), coords, shape, fill=0.0) > 0
    titles: list[tuple[Any, str, Any, Any, bool, int | None, int | None]] = []
    image = detector_image = None
    for a, (name, rep) in zip(grid, reports.items(), strict=False):
        _level_and_class(rep, level, 1)  # validates the level
        image = a.imshow(_image(rep.mean[:, 1], coords, shape), vmin=0, vmax=1,
                         cmap="viridis", interpolation="nearest")
        _draw_truth(a, is_target)
        misses, false_alarms = confident_errors(rep, level=level, class_index=1)
        _draw_errors(a, coords, misses, false_alarms, shape, "target", 72 * side)
        titles.append((a, name, rep.detection_roc, rep.pd_at_far, bool(rep.failures),
                       int(misses.sum()), int(false_alarms.sum())))
    for a, (name, det) in zip(grid[len(reports):], detectors.items(), strict=False):
        scores = np.asarray(det.scores, dtype=np.float64)
        # Percentile ranks: the detectors' statistics have unrelated scales.
        ranks = (np.argsort(np.argsort(scores, kind="stable"), kind="stable") + 0.5) / scores.size
        detector_image = a.imshow(_image(ranks, coords, shape), vmin=0, vmax=1,
                                  cmap="cividis", interpolation="nearest")
        _draw_truth(a, is_target)
        titles.append((a, name, det.detection_roc, det.pd_at_far, False, None, None))
    for a, name, roc, pdf, failed, n_miss, n_fa in titles:
        lines = [("FAILED " if failed else "") + name]
        stats = []
        if roc is not None:
            stats.append(f"AUROC {roc.auroc:.3f}")
        if pdf is not None and len(pdf.far):
            j = 0 if far is None else int(np.argmin(np.abs(np.log(pdf.far / far))))
            stats.append(f"Pd@{pdf.far[j]:g} {pdf.pd[j]:.2f}")
        if stats:
            lines.append(", ".join(stats))
        if n_miss is not None:
            lines.append(f"HCS errors: {n_miss} miss, {n_fa} f.a.")
        a.set_title("\n".join(lines), fontsize=8, color="#b00000" if failed else "black")
    for a in grid:
        a.set_xticks([])
        a.set_yticks([])
        a.set_xlim(-0.5, shape[1] - 0.5)
        a.set_ylim(shape[0] - 0.5, -0.5)
    for a in grid[panels:]:
        a.set_axis_off()
    from matplotlib.lines import Line2D

    handles = [
        _truth_handle("ground truth: target"),
        *(Line2D([], [], ls="", markeredgecolor="black", markeredgewidth=0.5, markersize=7,
                 markerfacecolor=style["color"], marker=style["marker"],
                 label=f"{what} (level {level:g} HCS)")
          for style, what in ((_MISS_STYLE, "confident miss"),
                              (_FALSE_ALARM_STYLE, "confident false alarm"))),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    # Colour bars beside the whole grid: attached to some panels only, constrained
    # layout would shift those panels' column out of line.
    if image is not None:
        fig.colorbar(image, ax=list(grid), shrink=0.7, label="posterior mean P(target)")
    if detector_image is not None:
        fig.colorbar(detector_image, ax=list(grid), shrink=0.7,
                     label="detector score percentile")
    return fig


def shift_errorbars(reports: EvalReport | Mapping[str, EvalReport], metric: str = "ece", *,
                    ax: Axes | None = None) -> Figure:
    """One headline metric per method: its clean value and its mean ± sd under each shift.

    For every method, a black dot is the value on the clean test set and one
    coloured dot per perturbation is the mean over that perturbation's copies,
    with a bar of ±1 standard deviation across the copies (how much the
    metric moves with the acquisition conditions, not a standard error of the
    mean). Coverage gets its nominal level as a dashed line.

    Parameters
    ----------
    reports : dict of str to EvalReport (or one EvalReport)
        Evaluated with ``perturbations`` (``uz.evaluate`` or ``uz.compare``).
    metric : str
        A headline key of ``EvalReport.to_dict``: ``"ece"``, ``"accuracy"``,
        ``"brier"``, ``"nll"``, ``"coverage@0.8"``, ``"interval_width@0.8"``,
        ``"hcs_proportion@0.8"``, ``"detection_auroc"``, ...
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("gaussian-mixture", p=2, n_train=60, n_test=40)
    >>> spec = uz.MLPSpec(2, 2, hidden=(3,))
    >>> post = uz.Posterior(spec=spec, method="laplace", config={}, seed=0,
    ...                     draws=spec.init_params(seed=0, num=20))
    >>> rep = uz.evaluate(post, data, levels=(0.8,), perturbations=["gaussian_noise"],
    ...                   copies=2)
    >>> len(uz.plots.shift_errorbars({"toy": rep}, "coverage@0.8").axes)
    1
    """
    from uqzoo import shift as under_shift

    reports = _check_reports(reports)
    if not isinstance(metric, str):
        raise InvalidTypeError(f"metric must be a headline key such as 'ece', got "
                               f"{_show(metric)}")
    per_copy: dict[str, Any] = {}
    for name, rep in reports.items():
        if rep.shift_copies is None:
            raise InvalidInputError(
                f"report {name!r} was not evaluated under shift: pass perturbations=[...] to "
                "uz.evaluate or uz.compare")
        per_copy[name] = rep.shift_copies
    labels = list(dict.fromkeys(label for copies in per_copy.values()
                                for label in copies.perturbation))
    fig, ax = _figure_and_axes(ax, (max(4.0, 1.2 * len(reports) + 2), 4))
    width = 0.7 / (len(labels) + 1)
    for i, (name, rep) in enumerate(reports.items()):
        clean = rep.to_dict()
        if metric not in clean or "_shift_" in metric:
            keys = [k for k, v in clean.items() if isinstance(v, float) and "_shift_" not in k]
            raise InvalidInputError(f"metric {metric!r} is not a headline of report {name!r}; "
                                    f"choose one of {', '.join(keys)}")
        ax.plot(i - 0.35 + width / 2, clean[metric], "o", color="black", ms=5,
                label="clean" if i == 0 else None)
        copies = per_copy[name]
        for j, label in enumerate(labels):
            values = copies.value[(copies.perturbation == label)
                                  & (copies.key == metric)].to_numpy()
            mean, sd, k = under_shift.mean_sd(values)
            if k == 0:
                continue
            ax.errorbar(i - 0.35 + width * (j + 1.5), mean, yerr=None if np.isnan(sd) else sd,
                        fmt="o", ms=5, capsize=3, color=f"C{j}",
                        label=f"{label} (mean ± sd, {k} copies)" if i == 0 else None)
    if metric.startswith("coverage@"):
        ax.axhline(float(metric.split("@")[1]), ls="--", color="0.4", lw=1, label="nominal")
    ax.set_xticks(range(len(reports)), list(reports), rotation=30 if len(reports) > 4 else 0)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric}: clean and under shift", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def _check_fidelity(fid: object, what: str = "fid") -> Any:
    if not (hasattr(fid, "per_point") and hasattr(fid, "scores")):
        raise InvalidTypeError(f"{what} must be a uqzoo.Fidelity (uz.fidelity), got {_show(fid)}")
    return fid


def fidelity_plot(fid: Any, *, ax: Sequence | np.ndarray | None = None) -> Figure:
    """One method's closeness to a reference posterior, point by point.

    Left: the histogram of each test point's 1-Wasserstein distance between
    the method's draws of p and the reference's, with the mean (solid) and its
    Monte Carlo floor (dashed; what a method equal to the reference scores from
    finite draws alone). Right: each point's interval width against the
    reference's, on log axes; on the diagonal the widths agree, below it the
    method's intervals are too narrow, above it too wide.

    Parameters
    ----------
    fid : Fidelity
        What :func:`uqzoo.fidelity` returns.
    ax : two matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> fid = uz.fidelity(post, ref, data.X_test, data=data)      # doctest: +SKIP
    >>> uz.plots.fidelity_plot(fid).savefig("fidelity.png")        # doctest: +SKIP
    """
    fid = _check_fidelity(fid)
    if ax is None:
        fig = Figure(figsize=(8.4, 3.4), layout="constrained")
        axes = list(fig.subplots(1, 2))
    else:
        axes = _axes_list(ax, 2, "W1 histogram, widths")
        fig = _figure_of(axes[0])
    w1 = np.asarray(fid.per_point["wasserstein1"], dtype=np.float64)
    score = fid["wasserstein1"]
    axes[0].hist(w1, bins=30, color="C0", alpha=0.8)
    axes[0].axvline(score.value, color="black", lw=1.2, label=f"mean {score.value:.4f}")
    axes[0].axvline(score.mc_floor, color="0.4", ls="--", lw=1,
                    label=f"MC floor {score.mc_floor:.4f}")
    axes[0].set_xlabel("per-point W1 to the reference")
    axes[0].set_ylabel("test points")
    axes[0].legend(fontsize=7)
    width = np.asarray(fid.per_point["width"], dtype=np.float64)
    ref_width = np.asarray(fid.per_point["reference_width"], dtype=np.float64)
    # log axes: widths of 0 (saturated probabilities) are drawn at the smallest positive one
    positive = np.concatenate([width[width > 0], ref_width[ref_width > 0]])
    floor = float(positive.min()) if positive.size else 1e-6
    x, y = np.maximum(ref_width, floor), np.maximum(width, floor)
    axes[1].scatter(x, y, s=6, alpha=0.5, color="C1", edgecolors="none")
    low, high = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
    axes[1].plot([low, high], [low, high], color="black", lw=1, ls="--")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    ratio = fid["width_ratio"].value
    axes[1].set_title(f"width ratio {ratio:.3f} (< 1 too narrow)", fontsize=9)
    axes[1].set_xlabel(f"reference {fid.level:g} interval width")
    axes[1].set_ylabel(f"{fid.method} {fid.level:g} interval width")
    return fig


def fidelity_maps(fidelities: Mapping[str, Any], geometry: object, *,
                  metric: str = "wasserstein1", ncols: int | None = None) -> Figure:
    """Where on a hyperspectral scene each method departs from the reference posterior.

    One panel per method, all on one colour scale: each test pixel's
    1-Wasserstein distance between the method's draws of p and the reference's
    (``metric="wasserstein1"``) or the total variation between their
    predictive means (``"total_variation"``). Blank pixels trained or were not
    labelled.

    Parameters
    ----------
    fidelities : dict of str to Fidelity
        Scored on the scene's test pixels (``Comparison.fidelity``).
    geometry : EvalReport or ClassificationData
        Source of the test pixels' coordinates and the image shape.
    metric : {"wasserstein1", "total_variation"}
    ncols : int, optional
        Panels per row; default up to 4.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> result = uz.compare(scene, ["hmc", "swag"], reference="ref.nc")  # doctest: +SKIP
    >>> uz.plots.fidelity_maps(result.fidelity, scene)                   # doctest: +SKIP
    """
    metric = check_choice(metric, "metric", ("wasserstein1", "total_variation"))
    if not isinstance(fidelities, Mapping) or not fidelities:
        raise InvalidTypeError(f"fidelities must be a non-empty dict of name -> Fidelity, got "
                               f"{_show(fidelities)}")
    for name, fid in fidelities.items():
        _check_fidelity(fid, f"fidelities[{name!r}]")
    if _is_report(geometry):
        coords, shape = _scene_geometry(geometry, None)
    else:
        coords_test = getattr(geometry, "coords_test", None)
        meta_shape = (getattr(geometry, "meta", {}) or {}).get("image_shape")
        if coords_test is None or meta_shape is None:
            raise InvalidInputError("geometry must be an EvalReport or ClassificationData of an "
                                    "HSI scene (pixel coordinates and meta['image_shape'])")
        coords, shape = np.asarray(coords_test), (int(meta_shape[0]), int(meta_shape[1]))
    for name, fid in fidelities.items():
        if fid.n_points != coords.shape[0]:
            raise InvalidInputError(f"fidelities[{name!r}] scores {fid.n_points} points; the "
                                    f"scene has {coords.shape[0]} test pixels")
    values = {n: np.asarray(f.per_point[metric], dtype=np.float64)
              for n, f in fidelities.items()}
    # one scale for all: up to the 99th percentile, so a few far pixels do not wash it out
    top = float(np.percentile(np.concatenate(list(values.values())), 99))
    top = top if top > 0 else 1.0
    ncols = min(len(values), 4) if ncols is None else int(ncols)
    if ncols < 1:
        raise InvalidInputError(f"ncols must be at least 1, got {ncols}")
    nrows = -(-len(values) // ncols)
    side = 2.6
    fig = Figure(figsize=(side * ncols + 0.8, side * nrows + 0.6), layout="constrained")
    grid = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    images = []
    for a, (name, v) in zip(grid, values.items(), strict=False):
        images.append(a.imshow(_image(v, coords, shape), vmin=0, vmax=top, cmap="magma",
                               interpolation="nearest"))
        a.set_title(f"{name}: mean {float(v.mean()):.4f}", fontsize=9)
    for a in grid:
        a.set_xticks([])
        a.set_yticks([])
    for a in grid[len(values):]:
        a.set_axis_off()
    label = ("per-pixel W1 to the reference" if metric == "wasserstein1"
             else "total variation to the reference")
    fig.colorbar(images[0], ax=list(grid), shrink=0.7, label=label)
    return fig
