"""Figures of an evaluation: reliability, coverage, risk–coverage, HSI maps.

Every function returns a :class:`matplotlib.figure.Figure` and takes an
optional ``ax`` to draw into. Without one, the figure is built with
:class:`~matplotlib.figure.Figure` directly, not through pyplot: no global
state, no GUI backend needed (safe under Agg, in tests and on servers).
"""

from __future__ import annotations

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

__all__ = ["coverage_plot", "hsi_maps", "reliability_diagram", "risk_coverage_plot"]

# 1.96: the two-sided 95 % normal quantile, for binomial bands.
_Z95 = 1.959963984540054


def _figure_of(ax: Axes) -> Figure:
    """The top-level figure an Axes draws into (a subfigure's parent figure)."""
    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


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
        if not isinstance(ax, Sequence) or len(ax) != 2:
            raise InvalidTypeError("ax must be a pair (coverage axes, width axes)")
        ax_cov, ax_width = ax
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
        colour = f"C{i}"
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
    ax_width.legend(fontsize=8)
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
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0); p = rng.dirichlet([1, 1], size=(50, 300))
    >>> rep = uz.evaluate(p, rng.integers(0, 2, 300))
    >>> len(uz.plots.risk_coverage_plot({"toy": rep}).axes)
    1
    """
    reports = _check_reports(reports)
    if ax is None:
        fig = Figure(figsize=(5, 4), layout="constrained")
        ax = fig.subplots()
    else:
        fig = _figure_of(ax)
    for i, (name, rep) in enumerate(reports.items()):
        rc = rep.risk_coverage
        aurc_value = rep.value("aurc", variant="tie-aware trapezoid, max probability")
        ax.plot(rc.coverage, rc.risk, color=f"C{i}", lw=1.5,
                label=f"{name} (AURC {aurc_value:.4f})")
    ax.set_xlabel("coverage (fraction of points kept)")
    ax.set_ylabel("selective risk (error rate among kept)")
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig


def _image(values: np.ndarray, coords: np.ndarray, shape: tuple[int, int],
           fill: float = np.nan) -> np.ndarray:
    img = np.full(shape, fill, dtype=np.float64)
    img[coords[:, 0], coords[:, 1]] = values
    return img


def hsi_maps(report: EvalReport, data: object = None, *, level: float = 0.8,
             class_index: int | None = None, ax: Sequence | None = None) -> Figure:
    """Maps of a hyperspectral scene: mean P(target), interval width, High Confidence Set.

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
    coords = report.coords
    shape = report.image_shape
    if data is not None:
        coords = coords if coords is not None else getattr(data, "coords_test", None)
        if shape is None:
            meta_shape = (getattr(data, "meta", {}) or {}).get("image_shape")
            shape = tuple(int(s) for s in meta_shape) if meta_shape is not None else None
    if coords is None or shape is None:
        raise InvalidInputError(
            "hsi_maps needs pixel coordinates and meta['image_shape']: evaluate an HSI "
            "ClassificationData, or pass it as data"
        )
    shape = (int(shape[0]), int(shape[1]))
    coords = np.asarray(coords)
    matches = [i for i, lv in enumerate(report.levels) if np.isclose(lv, level)]
    if not matches:
        raise InvalidInputError(f"level {level} was not evaluated; levels: {report.levels}")
    li = matches[0]
    if class_index is None:
        class_index = report.hcs_classes[0]
    if class_index not in report.hcs_classes:
        raise InvalidInputError(
            f"class_index must be one of the judged classes {report.hcs_classes}, got {class_index}"
        )
    ci = report.hcs_classes.index(class_index)
    if ax is None:
        fig = Figure(figsize=(13, 4.2), layout="constrained")
        axes = fig.subplots(1, 3, sharex=True, sharey=True)
    else:
        if not isinstance(ax, Sequence) or len(ax) != 3:
            raise InvalidTypeError("ax must be three axes (probability, width, HCS)")
        axes = list(ax)
        fig = axes[0].figure
    name = report.class_names[class_index] if report.class_names else str(class_index)
    prob = _image(report.mean[:, class_index], coords, shape)
    im = axes[0].imshow(prob, vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    axes[0].set_title(f"posterior mean P({name})", fontsize=9)
    fig.colorbar(im, ax=axes[0], shrink=0.8)
    width = _image(report.interval_width[li, :, class_index].astype(np.float64), coords, shape)
    im = axes[1].imshow(width, vmin=0, cmap="magma", interpolation="nearest")
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
    bar.ax.set_yticklabels(["confident\nbackground", "uncertain", "confident\ntarget"],
                           fontsize=8)
    for a in axes:
        a.set_xticks([])
        a.set_yticks([])
    return fig
