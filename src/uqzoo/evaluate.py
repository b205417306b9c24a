"""``evaluate``: every method's posterior predictive → one tidy table of trust metrics.

Two paths give the same numbers:

- a ``Posterior`` is streamed: the test inputs are cut into chunks, each
  summarised by ``posterior.summarize`` (mean probabilities, equal-tailed
  bounds per level, expected entropy) and fed to exact accumulators, so
  memory is O(S × chunk), never O(S × N);
- raw draws (S, N, K) are summarised chunk by chunk the same way.

Metrics that need a global sort (AURC, E-AURC, AUARC, misclassification
AUROC, detection ROC, quantile-binned and adaptive ECE) are computed exactly
at the end on the (N, K) posterior-mean probabilities, which are kept (16
bytes per point for K = 2: 160 MB at 10^7 points).

Binary problems are also read as target detection (class 1 the target, its
posterior-mean probability the score): detection AUROC and Pd at fixed
false-alarm rates with exact intervals. Every evaluation ends with a failure
check (:class:`FitFailure`): a fit at chance, one that predicts a single
class, ranks targets below background, or whose High Confidence Set holds
more confident errors than its own probabilities allow, is listed in
``EvalReport.failures`` and first in ``summary()``, never hidden behind a
high accuracy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uqzoo import _data_checks, headline
from uqzoo import shift as under_shift
from uqzoo._progress import progress_bar as progress
from uqzoo._validation import (
    DEFAULT_LEVELS,
    _show,
    as_labels,
    as_probabilities,
    check_choice,
    check_int,
    check_levels,
    check_seed,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import bootstrap as boot
from uqzoo.metrics import calibration as cal
from uqzoo.metrics import selective as sel
from uqzoo.metrics.coverage import interval_score_per_point
from uqzoo.metrics.detection import (
    DEFAULT_FARS,
    DetectionROC,
    PdAtFar,
    _check_fars,
    detection_roc,
    pd_at_far,
)
from uqzoo.metrics.hcs import HCS_SIDES, check_delta
from uqzoo.metrics.intervals import SUMMARY_INTERVALS, credible_interval, min_draws
from uqzoo.metrics.streaming import (
    CalibrationAccumulator,
    ClasswiseCalibrationAccumulator,
    HCSAccumulator,
    IntervalAccumulator,
    ScoreAccumulator,
)
from uqzoo.metrics.uncertainty import entropy_of

__all__ = ["DEFAULT_FARS", "DEFAULT_LEVELS", "GROUP_METRICS", "EvalReport", "FitFailure",
           "evaluate"]

# Rows per streamed chunk when the caller gives none: the per-chunk outputs
# (mean, L bounds) are small; the engine bounds its own S × chunk work memory.
_DEFAULT_CHUNK = 2**16
TABLE_COLUMNS = ["metric", "variant", "level", "class", "value", "stderr"]
# Level of the Clopper–Pearson interval on Pd in the table.
PD_CONFIDENCE = 0.95

# -- failure detector thresholds ------------------------------------------------
# Two severities (FitFailure.severity): "failed" -- the method failed, its
# numbers describe a broken model -- and "warning" -- something a user should
# know that is the data's doing or too small to matter. A fit that is right
# must almost never be "failed": benchmarks/failure_false_alarms.py measures
# how often it is (see the figures beside each threshold).
#
# Balanced accuracy is "at chance" when it is not CHANCE_Z binomial standard
# errors above what predictions independent of the labels would score (see
# _chance_level): one-sided z = 2, so a fit that truly is at chance is flagged
# ~98 % of the time, and one 2 SE above chance half the time.
CHANCE_Z = 2.0
# A prediction of one class everywhere, or at chance, is the fit's failure
# only when its *ranking* is no better than a prior-only model's (which ranks
# every point alike: AUROC 0.5): an AUROC -- detection AUROC of P(class 1) on
# binary data, misclassification AUROC of the top probability otherwise --
# more than RANKING_Z DeLong standard errors above 0.5 is informative, and
# then the 0.5 threshold (the argmax) is what is uninformative at this class
# prior: a warning. One-sided z = 3: a ranking with no information is taken
# for informative in 0.13 % of test sets. Where the truth is known, a Bayes
# classifier (argmax of p_true) that also predicts one class, or is also at
# chance, makes it the data's doing: a warning too.
RANKING_Z = 3.0
# Detection AUROC "below chance": more than BELOW_CHANCE_Z DeLong standard
# errors under 0.5, i.e. targets ranked below background (a warning where
# the truth's own ranking is not clearly above chance either).
BELOW_CHANCE_Z = 2.0
# A side of the HCS "holds confident errors" when they are at least
# HCS_ERROR_MIN_RATE of the points that could be hit (the class's points for
# misses, the other points for false alarms; so that a negligible
# miscalibration on millions of pixels is not called a failure) and either
# (a) a model whose own posterior-mean probabilities were right would make that
# many or more with probability below HCS_ERROR_P (Chernoff bound on the
# Poisson-binomial count: each confident member errs independently with its
# own probability) -- the fit is overconfident -- or (b) they are more than
# HCS_MAJORITY of those points: the set confidently dismisses most targets,
# as a fit that calls a rare class background everywhere does, however well
# its probabilities match the class prior.
#
# Significance alone is no failure: on thousands of points a binomial test
# finds any small miscalibration (HMC on the seed study's well-specified
# teacher was flagged in 20 of 20 replicates). (a) is a failure only with a
# practical margin as well: at least HCS_ERROR_RATIO times the errors the
# fit expects AND an excess of at least HCS_ERROR_MARGIN of the exposed
# points; significant without that margin it is a warning. (b) is a failure
# only beside a failed ranking (the set dismisses most targets because the
# fit ranks nothing); with an informative ranking and as many errors as the
# fit expects, the targets are hard to tell apart at this prior: a warning.
HCS_ERROR_P = 1e-3
HCS_ERROR_MIN_RATE = 0.01
HCS_ERROR_RATIO = 2.0
HCS_ERROR_MARGIN = 0.02
HCS_MAJORITY = 0.5
SEVERITIES = ("failed", "warning")


@dataclasses.dataclass(frozen=True)
class FitFailure:
    """One way a fit failed, found by :func:`evaluate`.

    Attributes
    ----------
    kind : str
        ``"one_class"`` (predicts one class everywhere), ``"chance"``
        (balanced accuracy not above chance), ``"below_chance_ranking"``
        (binary: targets ranked below background), ``"hcs_confident_misses"``
        or ``"hcs_confident_false_alarms"`` (the High Confidence Set holds
        confident errors).
    message : str
        What was found, with the numbers.
    severity : {"failed", "warning"}
        ``"failed"``: the method failed (``EvalReport.failures``).
        ``"warning"``: the data's doing -- the true probabilities' own
        classifier fails the same way, or the fit's ranking is informative
        and only its 0.5 threshold is not -- or a significant but small
        excess of confident errors (``EvalReport.fit_warnings``).
    """

    kind: str
    message: str
    severity: str = "failed"

    def __str__(self) -> str:
        return self.message


@dataclasses.dataclass(frozen=True, eq=False)
class EvalReport:
    """What :func:`evaluate` found, as a tidy table plus the arrays plots need.

    Attributes
    ----------
    table : pandas.DataFrame
        Columns ``metric, variant, level, class, value, stderr``: one row per
        metric × level × class; ``level`` is NaN for level-free metrics,
        ``class`` is the class's original label (``classes``: e.g. 5, or
        ``"Gentoo"``) and <NA> for metrics over all classes, and ``variant``
        names the convention (e.g. ``"top_label, equal_width/15 bins"``). The
        ``class`` column is nullable Int64 when the labels are integers,
        object otherwise. With ``bootstrap``, two more columns ``ci_low,
        ci_high``: the percentile interval of every row over the bootstrap
        replicates (NaN for rows that are interval bounds themselves).
    levels : tuple of float
    delta : float
    side : str
    n_points, n_classes, num_draws : int
    class_names : tuple of str
        Display name of each class 0..K-1.
    mean : ndarray of shape (N, K)
        Posterior-mean probabilities.
    y : ndarray of shape (N,)
    p_true : ndarray of shape (N, K) or None
    interval_width : float32 ndarray of shape (L, N, K)
        Width of the equal-tailed interval per level.
    hcs_positive, hcs_negative : bool ndarray of shape (L, N, C)
        High Confidence Set membership per level for the judged classes
        ``hcs_classes`` (``(1,)`` for binary problems).
    hcs_classes : tuple of int
        Column indices 0..K-1 (not labels) of the judged classes.
    expected_entropy : ndarray of shape (N,) or None
    reliability : dict of str to ReliabilityCurve
        Keyed by variant (top-label always; positive-class for K = 2).
    risk_coverage : RiskCoverageCurve
    coords : int ndarray of shape (N, 2) or None
        Pixel (row, column) of each test point, for HSI maps.
    image_shape : tuple of int or None
    method : str or None
        The posterior's method, when evaluated from a Posterior.
    converged : bool or None
        False when the posterior reported non-convergence: its numbers are
        then suspect, and ``summary()`` says so.
    warnings : tuple of str
        The posterior's own warnings (convergence diagnostics).
    failures : tuple of FitFailure
        Ways the fit failed, found by the evaluation (see :class:`FitFailure`);
        ``summary()`` shows them first and ``to_dict()`` as ``failed`` and
        ``flags``.
    fit_warnings : tuple of FitFailure
        The same checks' findings of severity ``"warning"``: the data's doing
        or too small to call a failure (``to_dict()``: ``warning_flags``).
    interval_score : float32 ndarray of shape (L, N) or None
        With true probabilities: each point's interval score at each level
        (:func:`uqzoo.metrics.interval_score`, mean over the K columns).
    detection_roc : DetectionROC or None
        Binary problems with both classes in ``y``: the detection ROC of
        P(class 1).
    pd_at_far : PdAtFar or None
        Binary problems: Pd at the false-alarm rates ``far`` with
        Clopper–Pearson intervals at level ``PD_CONFIDENCE``.
    streamed : bool
        True when computed through ``Posterior.summarize``.
    classes : tuple
        The original label of each class 0..K-1 (``data.classes`` or
        ``posterior.classes``; ``(0, ..., K-1)`` when neither is known), as
        in the table's ``class`` column.
    shift : pandas.DataFrame or None
        With ``perturbations``: every table row under each perturbation, as
        mean ± sd over the perturbed copies beside the clean value. Columns
        ``perturbation`` (its label, e.g. ``"illumination:0.8-1.2"``),
        ``family, low, high`` (the magnitude range), ``metric, variant, level,
        class`` (as in ``table``), ``clean, mean, sd`` (sample sd over the
        copies, ``ddof=1``) and ``k`` (copies that computed the row: coverage
        needs the copy's ``p_true``, see :mod:`uqzoo.perturb`).
    shift_copies : pandas.DataFrame or None
        Every copy's headline numbers (its ``to_dict``): columns
        ``perturbation, family, copy, magnitude, p_true, key, value``;
        ``p_true`` says whether the copy's truth was ``"unchanged"``,
        ``"recomputed"`` or ``"unavailable"``. ``to_dict`` adds their mean and
        sd as ``"<key>_shift_mean"`` and ``"<key>_shift_sd"`` (with
        ``"[<perturbation>]"`` appended when there are several).
    bootstrap : BootstrapResult or None
        With ``bootstrap``: B, seed, level, stratification and the (B, rows)
        replicate values behind ``ci_low`` / ``ci_high``
        (:mod:`uqzoo.metrics.bootstrap`).
    conformal : uqzoo.conformal.ConformalReport or None
        With ``conformal``: the split-conformal sets judged on the test points
        beside the model's own sets (coverage, size, exact conditional
        coverage) and the conformal HCS's dismissed targets.
    groups : pandas.DataFrame or None
        When the data carry test groups (``data.groups_test``): one row per
        group, columns ``group, n_points`` and the :data:`GROUP_METRICS`
        (``ece``, ``auarc``, ``balanced_accuracy``, ``detection_auroc``; NaN
        where a group cannot have one, e.g. AUROC of a group without targets),
        each the pooled metric's function applied to the group's rows. The
        table then also has their medians over the groups (NaN ignored) as
        level-free rows ``<metric>_group_median`` (Mehrtens et al. 2023 report
        ECE as the median over slides), in ``to_dict`` too.
    """

    table: pd.DataFrame
    levels: tuple[float, ...]
    delta: float
    side: str
    n_points: int
    n_classes: int
    num_draws: int
    class_names: tuple[str, ...]
    mean: np.ndarray
    y: np.ndarray
    p_true: np.ndarray | None
    interval_width: np.ndarray
    hcs_positive: np.ndarray
    hcs_negative: np.ndarray
    hcs_classes: tuple[int, ...]
    expected_entropy: np.ndarray | None
    reliability: dict
    risk_coverage: Any
    coords: np.ndarray | None = None
    image_shape: tuple[int, ...] | None = None
    method: str | None = None
    converged: bool | None = None
    warnings: tuple[str, ...] = ()
    streamed: bool = False
    classes: tuple[Any, ...] = ()
    failures: tuple[FitFailure, ...] = ()
    detection_roc: DetectionROC | None = None
    pd_at_far: PdAtFar | None = None
    shift: pd.DataFrame | None = None
    shift_copies: pd.DataFrame | None = None
    bootstrap: boot.BootstrapResult | None = None
    fit_warnings: tuple[FitFailure, ...] = ()
    interval_score: np.ndarray | None = None
    conformal: Any = None
    groups: pd.DataFrame | None = None

    def value(self, metric: str, level: float | None = None, cls: object = None,
              variant: str | None = None) -> float:
        """The value of one row of the table (first match).

        ``cls`` is a class's original label, as in the table's ``class``
        column (``report.classes``); None selects the rows over all classes.
        """
        rows = self._rows(metric, level, cls, variant)
        if rows.empty:
            raise InvalidInputError(
                f"no row for metric={metric!r}, level={level}, class={cls}, variant={variant}; "
                f"metrics present: {sorted(self.table.metric.unique())}"
            )
        return float(rows.value.iloc[0])

    def _rows(self, metric: str, level: float | None, cls: object,
              variant: str | None) -> pd.DataFrame:
        t = self.table
        mask = t.metric == metric
        mask &= t.level.isna() if level is None else np.isclose(t.level.astype(float), level)
        mask &= t["class"].isna() if cls is None else (t["class"] == cls).fillna(False)
        if variant is not None:
            mask &= t.variant == variant
        return t[mask]

    def to_dict(self) -> dict[str, Any]:
        """Headline numbers, flat: ``"coverage@0.8"``, ``"ece"``, ``"hcs_size@0.8"``, ...

        The keys are those of :data:`uqzoo.headline.HEADLINE` that this report
        has, at its levels and false-alarm rates, after a few that describe the
        evaluation (``n_points``, ``n_classes``, ``num_draws``, ``method``,
        ``converged``, ``failed``, ``flags``).
        """
        out: dict[str, Any] = {
            "n_points": self.n_points, "n_classes": self.n_classes,
            "num_draws": self.num_draws, "method": self.method, "converged": self.converged,
            "failed": bool(self.failures),
            "flags": ", ".join(dict.fromkeys(f.kind for f in self.failures)),
            "warning_flags": ", ".join(dict.fromkeys(f.kind for f in self.fit_warnings)),
        }
        fars = self.pd_at_far.far if self.pd_at_far is not None else ()
        for column in headline.columns(self.levels, fars):
            if column.headline.group != "fit":
                value = self._headline_value(column.headline.name, column.at)
                if value is not None:
                    out[column.key] = value
        if self.shift_copies is not None:
            out.update(under_shift.headline(self.shift_copies, out))
        return out

    def _headline_value(self, name: str, at: float | None) -> float | int | None:
        """One headline number of this report, None where it has none."""
        if name.startswith("pd_at_far"):
            if self.pd_at_far is None:
                return None
            r, i = self.pd_at_far, list(self.pd_at_far.far).index(at)
            return float({"pd_at_far": r.pd, "pd_at_far_lower": r.lower,
                          "pd_at_far_upper": r.upper}[name][i])
        if name == "detection_auroc":
            return None if self.detection_roc is None else self.detection_roc.auroc
        if name == "ece_quantile":
            rows = self.table[(self.table.metric == "ece")
                              & self.table.variant.str.startswith("top_label, quantile")]
            return None if rows.empty else float(rows.value.iloc[0])
        if name.startswith("hcs_"):
            t = self.table
            at_level = t.level.notna() & np.isclose(t.level.astype(float).fillna(-1.0),
                                                    float(at or 0.0))

            def total(metric: str) -> np.ndarray:
                return t.loc[at_level & (t.metric == metric), "value"].to_numpy(np.float64)

            size = float(total("hcs_size").sum())
            if name == "hcs_size":
                return int(size)
            if name == "hcs_proportion":
                return size / (self.n_points * len(self.hcs_classes))
            if name == "hcs_accuracy":
                pooled = np.nansum(total("hcs_accuracy") * total("hcs_size"))
                return float(pooled / size) if size > 0 else float("nan")
            if name == "hcs_missed_targets":
                return int(total("hcs_missed_targets").sum())
            # hcs_errors: confident misses plus confident false alarms
            return round(float(total("hcs_missed_targets").sum()
                               + total("hcs_false_targets").sum()))
        rows = self._rows(name, at, None, None)
        return None if rows.empty else float(rows.value.iloc[0])

    def summary(self) -> str:
        """A short human-readable account of the headline numbers."""
        d = self.to_dict()
        head = (f"EvalReport: {self.n_points} points, K={self.n_classes}, "
                f"S={self.num_draws} draws" + (f", method={self.method}" if self.method else ""))
        lines = [head]
        for failure in self.failures:
            lines.append(f"  FAILED ({failure.kind}): {failure.message}")
        for caution in self.fit_warnings:
            lines.append(f"  WARNING ({caution.kind}): {caution.message}")
        if self.converged is False:
            lines.append("  WARNING: the posterior did NOT converge; treat these numbers "
                         "with care.")
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        lines.append(f"  accuracy {d['accuracy']:.4f}  balanced {d['balanced_accuracy']:.4f}  "
                     f"ECE {d['ece']:.4f}  Brier {d['brier']:.4f}  NLL {d['nll']:.4f}  "
                     f"AURC {d['aurc']:.4f}")
        for level in self.levels:
            key = f"{level:g}"
            cov = d.get(f"coverage@{key}")
            cov_text = f"coverage {cov:.3f}  " if cov is not None else ""
            lines.append(
                f"  level {key}: {cov_text}width {d[f'interval_width@{key}']:.4f}  "
                f"HCS(δ={self.delta:g}) {d[f'hcs_size@{key}']} pts "
                f"({d[f'hcs_proportion@{key}']:.1%}), accuracy {d[f'hcs_accuracy@{key}']:.4f}, "
                f"missed targets {d[f'hcs_missed_targets@{key}']}"
            )
        if self.detection_roc is not None and self.pd_at_far is not None:
            roc, r = self.detection_roc, self.pd_at_far
            pds = "  ".join(
                f"Pd@FAR {far:g} {r.pd[i]:.3f} [{r.lower[i]:.3f}, {r.upper[i]:.3f}]"
                for i, far in enumerate(r.far))
            lines.append(f"  detection ({r.n_targets} targets): AUROC {roc.auroc:.4f}  {pds}")
        if self.groups is not None:
            medians = "  ".join(
                f"{label} {d[key]:.4f}" for key, label in (
                    ("ece_group_median", "ECE"), ("auarc_group_median", "AUARC"),
                    ("balanced_accuracy_group_median", "balanced"),
                    ("detection_auroc_group_median", "AUROC")) if key in d)
            lines.append(f"  median over {len(self.groups)} test groups: {medians}")
        if self.conformal is not None:
            lines.append(self.conformal.summary())
        if self.shift_copies is not None:
            lines += under_shift.summary_lines(self.shift_copies, d, self.levels)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


@dataclasses.dataclass
class _Chunk:
    mean: np.ndarray             # (n, K)
    lower: np.ndarray            # (L, n, K)
    upper: np.ndarray
    expected_entropy: np.ndarray | None
    num_draws: int | None = None


def _resolve_data(data_or_labels: object, p_true: object
                  ) -> tuple[np.ndarray | None, object, object, dict]:
    """(X or None, y, p_true, extras) from a ClassificationData or a label array."""
    if hasattr(data_or_labels, "X_test") and hasattr(data_or_labels, "y_test"):
        data: Any = data_or_labels
        if p_true is not None:
            raise InvalidInputError(
                "p_true must not be given with a ClassificationData: its p_true_test is used"
            )
        meta = getattr(data, "meta", {}) or {}
        shape = meta.get("image_shape")
        classes = getattr(data, "classes", None)
        extras = dict(coords=getattr(data, "coords_test", None),
                      image_shape=tuple(int(s) for s in shape) if shape is not None else None,
                      class_names=tuple(getattr(data, "class_names", None) or ()),
                      classes=tuple(classes) if classes is not None else None,
                      n_classes=getattr(data, "n_classes", None),
                      groups=getattr(data, "groups_test", None))
        return np.asarray(data.X_test), np.asarray(data.y_test), data.p_true_test, extras
    return None, data_or_labels, p_true, dict(coords=None, image_shape=None, class_names=(),
                                              classes=None, n_classes=None, groups=None)


def _check_match(posterior: Any, X: np.ndarray, extras: dict) -> None:
    """The posterior's network must take the data's features and predict its classes."""
    spec = getattr(posterior, "spec", None)
    if spec is None:
        return
    fit_d, fit_k = int(spec.in_features), int(spec.n_classes)
    data_d = X.shape[1] if X.ndim == 2 else None
    data_k = extras["n_classes"]
    if data_d != fit_d or (data_k is not None and int(data_k) != fit_k):
        has = f"{data_d} features" + (f" and {data_k} classes" if data_k is not None else "")
        raise InvalidInputError(
            f"data_or_labels does not match the posterior: posterior was fit with {fit_d} "
            f"features and {fit_k} classes; data has {has}"
        )
    fit_classes = getattr(posterior, "classes", None)
    data_classes = extras["classes"]
    # Equal as Python values: 1 == 1.0 == True, so an int/float/bool spelling
    # of the same labels passes; different labels (same count) do not.
    if fit_classes is not None and data_classes is not None \
            and tuple(fit_classes) != tuple(data_classes):
        raise InvalidInputError(
            f"data_or_labels does not match the posterior: posterior was fit with classes "
            f"{_show(tuple(fit_classes))}; data has classes {_show(tuple(data_classes))}"
        )


def _draw_chunks(draws: np.ndarray, levels: tuple[float, ...], chunk: int,
                 interval: str) -> Iterator[_Chunk]:
    for start in range(0, draws.shape[1], chunk):
        d = draws[:, start:start + chunk].astype(np.float64, copy=False)
        ci = credible_interval(d, levels, kind=interval)
        yield _Chunk(mean=d.mean(axis=0), lower=ci.lower, upper=ci.upper,
                     expected_entropy=entropy_of(d).mean(axis=0), num_draws=d.shape[0])


def _posterior_chunks(posterior: Any, X: np.ndarray, levels: tuple[float, ...], chunk: int,
                      inner_chunk: int | None, interval: str) -> Iterator[_Chunk]:
    for start in range(0, X.shape[0], chunk):
        # A writable copy: ClassificationData arrays are read-only, which torch
        # warns about when it wraps them without copying.
        X_chunk = np.array(X[start:start + chunk])
        options = {} if interval == "equal_tailed" else {"interval": interval}
        s = posterior.summarize(X_chunk, levels=levels, chunk_size=inner_chunk, **options)
        if tuple(float(v) for v in s.levels) != levels:
            raise InvalidInputError(
                f"posterior.summarize returned levels {s.levels}, asked for {levels}"
            )
        yield _Chunk(mean=np.asarray(s.mean, dtype=np.float64),
                     lower=np.asarray(s.lower, dtype=np.float64),
                     upper=np.asarray(s.upper, dtype=np.float64),
                     expected_entropy=(None if s.expected_entropy is None
                                       else np.asarray(s.expected_entropy, dtype=np.float64)),
                     num_draws=int(s.num_draws))


def evaluate(posterior_or_draws: object, data_or_labels: object,
             levels: Sequence[float] = DEFAULT_LEVELS, delta: float = 0.2, *,
             p_true: object = None, chunk_size: int | None = None, n_bins: int = 15,
             side: str = "both", progress_bar: bool = False,
             far: Sequence[float] = DEFAULT_FARS,
             interval: str = "equal_tailed", perturbations: object = None,
             copies: int = 10, seed: int = 0, bootstrap: int | None = None,
             bootstrap_confidence: float = boot.DEFAULT_CONFIDENCE,
             bootstrap_stratified: bool = True, conformal: object = None) -> EvalReport:
    """Evaluate a posterior predictive: intervals, coverage, HCS, calibration, selection.

    Parameters
    ----------
    posterior_or_draws : Posterior or array of shape (S, N, K)
        A fitted posterior (anything with ``summarize``; streamed, memory
        O(S × chunk)) or raw probability draws.
    data_or_labels : ClassificationData or array of shape (N,)
        The data (its ``X_test``, ``y_test``, ``p_true_test``, pixel
        coordinates and ``meta["image_shape"]`` are used) or the test labels.
        A Posterior needs a ClassificationData (it needs X_test).
    levels : sequence of float in (0, 1)
        Credible levels of the equal-tailed intervals.
    delta : float in (0, 0.5)
        High Confidence Set threshold δ (Ries et al.: α = δ = 0.2, so the
        level-0.8 rows are the paper's HCS).
    p_true : array of shape (N, K), optional
        True probabilities, with a label array only; enables coverage.
    chunk_size : int, optional
        Test points per streamed chunk (default 65,536); passed on to
        ``summarize`` as its own chunk size when given.
    n_bins : int
        Equal-width and quantile bins of the calibration metrics.
    side : {"both", "negative", "positive"}
        Which confident decisions form the HCS.
    progress_bar : bool
        Show a tqdm bar over chunks.
    far : sequence of float in (0, 1)
        False-alarm rates of the ``pd_at_far`` rows (binary problems).
    interval : {"equal_tailed", "order_statistic"}
        How interval bounds are read from the S draws: percentile intervals
        interpolated as ``np.quantile`` does (the literature's usual choice),
        or order-statistic intervals that hold a new draw with probability at
        least the level whatever S is (:func:`uqzoo.metrics.min_draws`).
        Either way, a level that needs more draws than the posterior has is
        named in ``warnings``: a percentile interval from too few draws covers
        far less than its level, an order-statistic one is all of [0, 1].
    perturbations : list, optional
        Also evaluate on ``copies`` perturbed copies of the test set per entry
        (:mod:`uqzoo.perturb`): a family name (``"illumination"``, its default
        range), ``"family:low-high"``, ``(family, (low, high))``, a
        :class:`~uqzoo.perturb.Perturbation`, or ready-made
        :class:`~uqzoo.perturb.PerturbedCopies` of this data. Needs a
        Posterior and a ClassificationData. Every metric then comes as mean ±
        sd over the copies beside its clean value (``shift``,
        ``shift_copies``, ``to_dict``, ``summary``). The copies are made one
        at a time (memory: one copy).
    copies : int
        Perturbed copies per perturbation (K >= 1).
    seed : int
        Seed of the copies (magnitudes, noise, dropped features) and of the
        bootstrap weights (an independent stream): the same seed gives every
        method the same copies and the same bootstrap replicates.
    bootstrap : int >= 1, optional
        B, the number of test-set bootstrap replicates; every row of the
        table then gets a percentile interval (columns ``ci_low``,
        ``ci_high``; ``report.bootstrap``). A Poisson bootstrap streamed with
        the chunks, so it scales to millions of points; sort-based metrics
        are recomputed per replicate with weights (see
        :mod:`uqzoo.metrics.bootstrap` for which bootstrap and why). Cost
        O(B × N); B = 1000 is the usual choice for 95 % percentile intervals.
    bootstrap_confidence : float in (0, 1)
        Level of the percentile intervals (default 0.95).
    bootstrap_stratified : bool
        Keep each class's test count in every replicate (default; right for
        class counts fixed by design and for rare classes); False resamples
        the class mix too, as for a test set drawn i.i.d.
    conformal : uqzoo.conformal.ConformalSets, optional
        A split-conformal rule calibrated for this posterior on held-out
        points (:func:`uqzoo.conformal.conformalize`). Its label sets of the
        test points' posterior-mean probabilities are judged beside the
        model's own sets at the same level (:func:`uqzoo.conformal.judge`):
        marginal and per-class coverage, set size, singleton rate, with true
        probabilities the exact conditional coverage and its worst decile,
        and the conformal High Confidence Set's dismissed targets; as
        ``report.conformal`` and as level-free ``conformal_*`` /
        ``plain_set_*`` rows of the table (variant: score, calibration, level).

    Returns
    -------
    EvalReport
        Its ``failures`` list what is wrong with the fit: predictions of one
        class everywhere; a balanced accuracy within ``CHANCE_Z`` = 2
        standard errors of what label-blind predictions would score; for
        binary data a detection AUROC more than 2 DeLong standard errors
        below 0.5; and, per level, HCS confident misses or false alarms far
        beyond what the fit's own probabilities expect (``HCS_ERROR_P``) or
        more than half of the points they could hit, and at least 1 % of
        them (``HCS_ERROR_MIN_RATE``).

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, size=(200, 50, 1)); draws = np.concatenate([1 - p, p], -1)
    >>> report = uz.evaluate(draws, rng.integers(0, 2, 50), levels=(0.8,))
    >>> sorted(report.table.columns)
    ['class', 'level', 'metric', 'stderr', 'value', 'variant']

    References
    ----------
    Ries, D., et al. High confidence sets for uncertainty quantification in
    hyperspectral target detection.
    """
    levels = check_levels(levels)
    delta = check_delta(delta)
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    side = check_choice(side, "side", HCS_SIDES)
    interval = check_choice(interval, "interval", SUMMARY_INTERVALS)
    fars = tuple(float(f) for f in _check_fars(far))
    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    chunk = chunk_size or _DEFAULT_CHUNK
    if not isinstance(progress_bar, bool):
        raise InvalidTypeError(f"progress_bar must be True or False, got {_show(progress_bar)}")
    shift_plan = under_shift.plan(perturbations, copies, seed, posterior_or_draws, data_or_labels)
    bootstrap, bootstrap_confidence = boot.check_bootstrap(bootstrap, bootstrap_confidence)
    if not isinstance(bootstrap_stratified, bool):
        raise InvalidTypeError(f"bootstrap_stratified must be True or False, got "
                               f"{_show(bootstrap_stratified)}")
    weights = None if bootstrap is None else boot.PoissonWeights(bootstrap, check_seed(seed))

    if conformal is not None:
        from uqzoo.conformal import ConformalSets

        if not isinstance(conformal, ConformalSets):
            raise InvalidTypeError(
                f"conformal must be None or a ConformalSets (uz.conformal.conformalize / "
                f"uz.conformal.calibrate), got {_show(conformal)}")
    X, y_raw, truth_raw, extras = _resolve_data(data_or_labels, p_true)
    is_posterior = hasattr(posterior_or_draws, "summarize")
    if is_posterior:
        if X is None:
            raise InvalidInputError(
                "evaluating a Posterior needs a ClassificationData (for X_test), got "
                f"{_show(data_or_labels)}; pass the data, or pass draws with labels"
            )
        _check_match(posterior_or_draws, X, extras)
        N = X.shape[0]
        K = int(posterior_or_draws.spec.n_classes) if hasattr(posterior_or_draws, "spec") \
            else None
        num_draws = int(getattr(posterior_or_draws, "num_draws", 0) or 0)
        chunks = _posterior_chunks(posterior_or_draws, X, levels, chunk, chunk_size, interval)
    else:
        draws = as_probabilities(posterior_or_draws, "posterior_or_draws", ndim=3)
        num_draws, N, K = draws.shape
        if extras["n_classes"] is not None and int(extras["n_classes"]) != K:
            raise InvalidInputError(
                f"posterior_or_draws has K = {K} class columns; data_or_labels has "
                f"{extras['n_classes']} classes"
            )
        chunks = _draw_chunks(draws, levels, chunk, interval)
    y = as_labels(y_raw, "y", n_classes=K, n_rows=N)
    truth = None
    if truth_raw is not None:
        truth = as_probabilities(truth_raw, "p_true", n_rows=N,
                                 n_classes=K).astype(np.float64, copy=False)
    chunks = progress(chunks, total=math.ceil(N / chunk), desc="evaluate", unit="chunk",
                      enabled=progress_bar)

    fit_classes = getattr(posterior_or_draws, "classes", None) if is_posterior else None
    classes = extras["classes"] or (tuple(fit_classes) if fit_classes is not None else None)
    report_parts = _accumulate(chunks, y, truth, levels, delta, side, n_bins, N, K, classes,
                               fars, weights, bootstrap_stratified)
    bootstrap_result = None
    if report_parts["bootstrap"] is not None:
        report_parts["table"], bootstrap_result = boot.attach(
            report_parts["bootstrap"], report_parts["table"], report_parts["mean"], y, levels,
            report_parts["classes"], n_bins, fars, bootstrap_confidence)
    if report_parts["num_draws"] is not None:
        num_draws = report_parts["num_draws"]
    K = report_parts["mean"].shape[1]
    classes = report_parts["classes"]
    conformal_report = None
    if conformal is not None:
        conformal_report, report_parts["table"] = _with_conformal(
            conformal, report_parts["mean"], y, truth, report_parts["table"], classes)
    group_table = None
    if extras["groups"] is not None:
        group_table, medians = _per_group(report_parts["mean"], y, np.asarray(extras["groups"]),
                                          n_bins)
        report_parts["table"] = pd.concat(
            [report_parts["table"],
             medians.astype({"class": report_parts["table"]["class"].dtype})],
            ignore_index=True)
    names = extras["class_names"] or tuple(str(c) for c in classes)
    warnings = tuple(str(w) for w in getattr(posterior_or_draws, "warnings", ()) or ()) \
        + _draw_count_warnings(int(num_draws), levels, interval) \
        + _data_checks.check_evaluation(data_or_labels, fars)
    found = _find_failures(report_parts, y, levels, names, truth)
    report = EvalReport(
        table=report_parts["table"], levels=levels, delta=delta, side=side, n_points=N,
        n_classes=K, num_draws=int(num_draws), class_names=names,
        mean=report_parts["mean"], y=y, p_true=truth,
        interval_width=report_parts["width"], hcs_positive=report_parts["hcs_pos"],
        hcs_negative=report_parts["hcs_neg"], hcs_classes=report_parts["hcs_classes"],
        expected_entropy=report_parts["expected_entropy"],
        reliability=report_parts["reliability"], risk_coverage=report_parts["risk_coverage"],
        coords=extras["coords"], image_shape=extras["image_shape"],
        method=getattr(posterior_or_draws, "method", None) if is_posterior else None,
        converged=getattr(posterior_or_draws, "converged", None) if is_posterior else None,
        warnings=warnings, streamed=is_posterior, classes=classes,
        failures=tuple(f for f in found if f.severity == "failed"),
        fit_warnings=tuple(f for f in found if f.severity == "warning"),
        interval_score=report_parts["interval_score"],
        detection_roc=report_parts["detection_roc"], pd_at_far=report_parts["pd_at_far"],
        bootstrap=bootstrap_result, conformal=conformal_report, groups=group_table,
    )
    if shift_plan is not None:
        # Each copy is evaluated exactly as the clean data; only tables are combined.
        shift, shift_copies = under_shift.run(
            shift_plan, data_or_labels, report.table,
            lambda copy: evaluate(posterior_or_draws, copy, levels, delta,
                                  chunk_size=chunk_size, n_bins=n_bins, side=side, far=fars,
                                  interval=interval, conformal=conformal),
            progress_bar=progress_bar)
        report = dataclasses.replace(report, shift=shift, shift_copies=shift_copies)
    return report


# Metrics reported per test group, each by the same function as its pooled row.
GROUP_METRICS = ("ece", "auarc", "balanced_accuracy", "detection_auroc")


def _per_group(mean: np.ndarray, y: np.ndarray, groups: np.ndarray, n_bins: int
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per test group, the table rows of their medians)."""
    nan = float("nan")
    K = mean.shape[1]
    rows = []
    for group in np.unique(groups):
        member = groups == group
        p, labels = mean[member], y[member]
        n_targets = int((labels == 1).sum())
        rows.append({
            "group": group.item(), "n_points": int(member.sum()),
            "ece": float(cal.ece(p, labels, n_bins)),
            # one point has no rejection axis: AUARC is NaN there by definition
            "auarc": float(sel.auarc(p, labels)) if labels.size > 1 else nan,
            "balanced_accuracy": float(sel.balanced_accuracy(p, labels)),
            "detection_auroc": (float(detection_roc(p[:, 1], labels == 1).auroc)
                                if K == 2 and 0 < n_targets < labels.size else nan),
        })
    table = pd.DataFrame(rows, columns=["group", "n_points", *GROUP_METRICS])
    variants = {"ece": f"top_label, equal_width/{n_bins} bins",
                "auarc": "Mehrtens et al. 2023, balanced accuracy, x = k / k_max",
                "balanced_accuracy": "mean recall over present classes",
                "detection_auroc": "score P(class 1), tie-aware"}
    medians = []
    for metric in GROUP_METRICS:
        values = table[metric].to_numpy(np.float64)
        known = values[~np.isnan(values)]
        if metric == "detection_auroc" and K != 2:
            continue
        medians.append(dict(
            metric=f"{metric}_group_median",
            variant=f"median over {known.size} of {len(table)} test groups, "
                    f"{variants[metric]}",
            level=nan, **{"class": None},
            value=float(np.median(known)) if known.size else nan, stderr=nan))
    return table, pd.DataFrame(medians, columns=TABLE_COLUMNS)


def _with_conformal(rule: Any, mean: np.ndarray, y: np.ndarray, truth: np.ndarray | None,
                    table: pd.DataFrame, classes: tuple) -> tuple[Any, pd.DataFrame]:
    """The rule judged on the test points, and the table with its rows appended."""
    from uqzoo.conformal import judge

    if rule.n_classes != mean.shape[1]:
        raise InvalidInputError(
            f"conformal was calibrated for {rule.n_classes} classes; the posterior has "
            f"{mean.shape[1]}")
    judged = judge(rule, mean, y, truth)
    rows = [{**row, "level": float("nan"),
             "class": None if row["class"] is None else classes[row["class"]]}
            for row in judged.rows()]
    extra = pd.DataFrame(rows, columns=TABLE_COLUMNS).astype({"class": table["class"].dtype})
    return judged, pd.concat([table, extra], ignore_index=True)


def _draw_count_warnings(num_draws: int, levels: tuple[float, ...], interval: str
                         ) -> tuple[str, ...]:
    """One line per level the draws are too few for (see :func:`min_draws`)."""
    short = [(level, min_draws(level)) for level in levels if num_draws < min_draws(level)]
    if not short:
        return ()
    what = ("its intervals are all of [0, 1]" if interval == "order_statistic" else
            "its percentile intervals cover far less than their level")
    needs = ", ".join(f"{level:g} needs {need}" for level, need in short)
    return (f"S = {num_draws} draws are too few for level(s) {needs} draws; {what}. "
            f"Draw more (num_samples / num_members) or drop those levels.",)


def _accumulate(chunks: Iterator[_Chunk], y: np.ndarray, truth: np.ndarray | None,
                levels: tuple[float, ...], delta: float, side: str, n_bins: int, N: int,
                K: int | None, classes: tuple | None,
                fars: tuple[float, ...] = DEFAULT_FARS,
                weights: boot.PoissonWeights | None = None,
                stratified: bool = True) -> dict[str, Any]:
    L = len(levels)
    state: dict[str, Any] = {}
    start = 0
    num_draws = None
    for ch in chunks:
        n = ch.mean.shape[0]
        stop = start + n
        if stop > N:
            raise InvalidInputError(f"the summaries hold more than the {N} test points")
        mean = as_probabilities(ch.mean, "summary mean", n_classes=K)
        if K is None:
            K = mean.shape[1]
        if ch.lower.shape != (L, n, K) or ch.upper.shape != (L, n, K):
            raise InvalidInputError(
                f"summary bounds must have shape (L={L}, n={n}, K={K}), got {ch.lower.shape}"
            )
        if not state:
            state = dict(
                top=CalibrationAccumulator(K, n_bins, "top_label"),
                pos=CalibrationAccumulator(K, n_bins, "positive_class") if K == 2 else None,
                classwise=ClasswiseCalibrationAccumulator(K, n_bins),
                scores=ScoreAccumulator(K),
                intervals=IntervalAccumulator(levels, K, with_truth=truth is not None),
                hcs=HCSAccumulator(levels, K, delta, side),
                mean=np.empty((N, K)),
                width=np.empty((L, N, K), dtype=np.float32),
                expected_entropy=np.empty(N) if ch.expected_entropy is not None else None,
            )
            C = len(state["hcs"].classes)
            state["hcs_pos"] = np.zeros((L, N, C), dtype=bool)
            state["interval_score"] = (np.empty((L, N), dtype=np.float32)
                                       if truth is not None else None)
            state["hcs_neg"] = np.zeros((L, N, C), dtype=bool)
            state["bootstrap"] = None if weights is None else boot.BootstrapAccumulator(
                weights, K, levels, n_bins, state["hcs"].classes, truth is not None,
                ch.expected_entropy is not None, stratified)
        num_draws = ch.num_draws if ch.num_draws is not None else num_draws
        yc = y[start:stop]
        state["top"].update(mean, yc)
        if state["pos"] is not None:
            state["pos"].update(mean, yc)
        state["classwise"].update(mean, yc)
        state["scores"].update(mean, yc)
        tc = truth[start:stop] if truth is not None else None
        state["intervals"].update(ch.lower, ch.upper, tc)
        lo = np.clip(ch.lower, 0.0, 1.0)
        hi = np.clip(ch.upper, 0.0, 1.0)
        pos, neg = state["hcs"].update_validated(lo, hi, yc)
        state["hcs_pos"][:, start:stop] = pos
        state["hcs_neg"][:, start:stop] = neg
        if state["bootstrap"] is not None:       # weights depend on the global index only
            acc = state["bootstrap"]
            acc.update(start, yc, acc.features(mean, yc, ch.lower, ch.upper, tc, pos, neg,
                                               ch.expected_entropy))
        state["mean"][start:stop] = mean
        state["width"][:, start:stop] = hi - lo
        if tc is not None:
            for i, level in enumerate(levels):
                state["interval_score"][i, start:stop] = interval_score_per_point(
                    lo[i], hi[i], tc, level)
        if state["expected_entropy"] is not None and ch.expected_entropy is not None:
            state["expected_entropy"][start:stop] = ch.expected_entropy
        start = stop
    if start != N:
        raise InvalidInputError(f"the summaries covered {start} of the {N} test points")
    parts = _finish(state, y, truth, levels, delta, side, n_bins, num_draws, classes, fars)
    parts["bootstrap"] = state.get("bootstrap")
    return parts


def _finish(state: dict, y: np.ndarray, truth: np.ndarray | None, levels: tuple[float, ...],
            delta: float, side: str, n_bins: int, num_draws: int | None,
            classes: tuple | None, fars: tuple[float, ...] = DEFAULT_FARS) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    nan = float("nan")
    mean = state["mean"]
    K = mean.shape[1]
    N = mean.shape[0]
    classes = tuple(range(K)) if classes is None else tuple(classes)
    if len(classes) != K:
        raise InvalidInputError(
            f"the data name {len(classes)} classes {_show(classes)}; the probabilities have "
            f"K = {K} columns"
        )

    def add(metric, variant, value, stderr=nan, level=nan, cls=None):
        # Per-class rows speak in the original labels; computing stays on 0..K-1.
        label = None if cls is None else classes[cls]
        rows.append(dict(metric=metric, variant=variant, level=level, **{"class": label},
                         value=float(value), stderr=float(stderr)))

    scores = state["scores"].compute()
    acc_se = math.sqrt(scores.accuracy * (1 - scores.accuracy) / N)
    add("accuracy", "argmax of posterior mean", scores.accuracy, acc_se)
    add("balanced_accuracy", "mean recall over present classes", scores.balanced_accuracy)
    hits, trues = state["scores"].hit_count, state["scores"].true_count
    for k in range(K):
        # recall of class k: the share of its points predicted k (NaN when absent)
        r = hits[k] / trues[k] if trues[k] else nan
        add("recall", "argmax of posterior mean, per true class", r,
            math.sqrt(r * (1 - r) / trues[k]) if trues[k] else nan, cls=k)
    add("brier", "sum over K, range 0-2 (binary: 2x sklearn)", scores.brier)
    add("nll", f"natural log, p clipped at {cal.NLL_CLIP:.3g}", scores.nll)

    reliability = {}
    for key in ("top", "pos"):
        acc = state[key]
        if acc is None:
            continue
        bins = acc.compute()
        e, m, r = bins.errors()
        add("ece", bins.variant, e)
        add("mce", bins.variant, m)
        add("rmsce", bins.variant, r)
        reliability[bins.variant] = cal.curve_from_bins(bins)
    confidence_kinds = ["top_label"] + (["positive_class"] if K == 2 else [])
    for conf in confidence_kinds:
        qb = cal.calibration_bins(mean, y, n_bins, confidence=conf, binning="quantile")
        add("ece", qb.variant, qb.errors()[0])
    per_class = state["classwise"].compute()
    add("classwise_ece", f"mean over classes, equal_width/{n_bins} bins", per_class.mean())
    for k in range(K):
        add("classwise_ece", f"equal_width/{n_bins} bins", per_class[k], cls=k)
    ada = cal.adaptive_binning(mean, y)
    add("adaptive_ece", ada.variant, ada.ece)
    add("adaptive_mce", ada.variant, ada.mce)

    conf = mean.max(axis=1)
    pred = mean.argmax(axis=1)
    error = pred != y
    rc = sel._curve(error, conf)
    add("aurc", "tie-aware trapezoid, max probability", float(np.trapezoid(rc.risk, rc.coverage)))
    add("aurc", "mean_over_k, max probability", sel._aurc(error, conf, "mean_over_k"))
    add("eaurc", "tie-aware trapezoid, exact optimum",
        sel._aurc(error, conf, "trapezoid") - sel.optimal_aurc(N, int(error.sum())))
    add("auarc", "Mehrtens et al. 2023, balanced accuracy, x = k / k_max",
        sel.auarc(mean, y))
    add("misclassification_auroc", "max probability", sel.misclassification_auroc(mean, y))

    total_entropy = entropy_of(mean)
    add("mean_predictive_entropy", "nats", total_entropy.mean(), total_entropy.std() / math.sqrt(N))
    if state["expected_entropy"] is not None:
        mi = np.maximum(total_entropy - state["expected_entropy"], 0.0)
        add("mean_mutual_information", "nats, entropy(mean) - expected entropy", mi.mean(),
            mi.std() / math.sqrt(N))

    iv = state["intervals"].compute()
    for i, level in enumerate(levels):
        add("interval_width", "equal_tailed", iv.width_overall[i], iv.width_overall_stderr[i],
            level=level)
        for k in range(K):
            add("interval_width", "equal_tailed", iv.width_per_class[i, k],
                iv.width_per_class_stderr[i, k], level=level, cls=k)
        if iv.coverage_per_class is not None:
            add("coverage", "equal_tailed", iv.coverage_overall[i], iv.coverage_overall_stderr[i],
                level=level)
            for k in range(K):
                add("coverage", "equal_tailed", iv.coverage_per_class[i, k],
                    iv.coverage_per_class_stderr[i, k], level=level, cls=k)
    scores_iv = state.get("interval_score")
    if scores_iv is not None:
        for i, level in enumerate(levels):
            row = scores_iv[i].astype(np.float64)
            add("interval_score", "Gneiting & Raftery, mean over K, equal_tailed", row.mean(),
                row.std() / math.sqrt(N), level=level)
        overall = scores_iv.astype(np.float64).mean(axis=0)
        add("interval_score", "mean over levels", overall.mean(), overall.std() / math.sqrt(N))
    hcs = state["hcs"].compute()
    variant = f"side={side}, delta={delta:g}"
    for i, level in enumerate(levels):
        for j, k in enumerate(state["hcs"].classes):
            add("hcs_size", variant, hcs.size[i, j], level=level, cls=k)
            add("hcs_proportion", variant, hcs.proportion[i, j], level=level, cls=k)
            add("hcs_accuracy", variant, hcs.accuracy[i, j], hcs.accuracy_stderr[i, j],
                level=level, cls=k)
            add("hcs_missed_targets", variant, hcs.missed_targets[i, j], level=level, cls=k)
            add("hcs_detected_targets", variant, hcs.detected_targets[i, j], level=level, cls=k)
            add("hcs_false_targets", variant, hcs.false_targets[i, j], level=level, cls=k)

    roc, pd_far = None, None
    if K == 2 and 0 < int(y.sum()) < N:
        # Target detection: class 1 is the target, P(class 1) the score.
        roc = detection_roc(mean[:, 1], y == 1)
        add("detection_auroc", "score P(class 1), tie-aware; stderr DeLong", roc.auroc,
            roc.auroc_stderr, cls=1)
        pd_far = pd_at_far(mean[:, 1], y == 1, far=fars, confidence=PD_CONFIDENCE)
        for i, far in enumerate(pd_far.far):
            variant = f"far={far:g}"
            add("pd_at_far", variant, pd_far.pd[i], pd_far.pd_stderr[i], cls=1)
            add("pd_at_far_lower", variant, pd_far.lower[i], cls=1)
            add("pd_at_far_upper", variant, pd_far.upper[i], cls=1)
            add("far_achieved", variant, pd_far.far_achieved[i], cls=1)

    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    if all(isinstance(c, int) and not isinstance(c, bool) for c in classes):
        table["class"] = table["class"].astype("Int64")
    else:
        table["class"] = table["class"].astype(object)
    return dict(table=table, mean=mean, width=state["width"], hcs_pos=state["hcs_pos"],
                hcs_neg=state["hcs_neg"], hcs_classes=state["hcs"].classes,
                expected_entropy=state["expected_entropy"], reliability=reliability,
                risk_coverage=rc, num_draws=num_draws, classes=classes,
                balanced_accuracy=scores.balanced_accuracy, detection_roc=roc,
                pd_at_far=pd_far, interval_score=state.get("interval_score"))


# -- failure detector -------------------------------------------------------------------

def _chance_level(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean and standard error of balanced accuracy for label-blind predictions.

    Null model: each point is predicted class k with probability q_k (the
    fit's own prediction frequencies) independently of its label. The recall
    of a present class k is then Binomial(n_k, q_k) / n_k, independent across
    classes, so balanced accuracy = mean over the present classes P of the
    recalls has mean (1/|P|) Σ q_k and variance (1/|P|²) Σ q_k (1 − q_k) / n_k
    -- 1/K with a standard error of order 1/(K √n) when predictions are
    uniform.
    """
    K = int(max(pred.max(), y.max())) + 1
    n_k = np.bincount(y, minlength=K)
    q = np.bincount(pred, minlength=K) / pred.shape[0]
    present = n_k > 0
    m = int(present.sum())
    mean = float(q[present].sum() / m)
    se = float(np.sqrt(np.sum(q[present] * (1 - q[present]) / n_k[present])) / m)
    return mean, se


def _chernoff_log_tail(count: int, expected: float) -> float:
    """log of the Chernoff bound on P(X ≥ count) for a sum X of Bernoullis with mean ``expected``.

    P(X ≥ k) ≤ exp(−μ) (e μ / k)^k for k > μ (and ≤ 1 otherwise).
    """
    if count <= expected:
        return 0.0
    if expected <= 0:
        return -math.inf
    return -expected + count * (1 + math.log(expected) - math.log(count))


def _balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean recall over the classes present in ``y`` (as the report's row)."""
    present = np.unique(y)
    return float(np.mean([np.mean(pred[y == k] == k) for k in present]))


def _argmax_failure(pred: np.ndarray, y: np.ndarray, ba: float, classes: tuple[str, ...],
                    who: str = "predicts") -> tuple[str, str] | None:
    """("one_class" or "chance", what was found) for predictions that carry nothing, or None."""
    N = pred.shape[0]
    if np.unique(y).size < 2:
        return None
    predicted = np.unique(pred)
    if predicted.size == 1:
        return "one_class", (f"{who} class {classes[int(predicted[0])]!r} for all {N} test "
                             f"points (balanced accuracy {ba:.3f})")
    chance, se = _chance_level(pred, y)
    if ba <= chance + CHANCE_Z * se:
        return "chance", (f"balanced accuracy {ba:.3f} is at chance: label-blind predictions "
                          f"with the same class frequencies score {chance:.3f} ± {se:.3f}, "
                          f"and this is within {CHANCE_Z:g} standard errors")
    return None


def _ranking(mean: np.ndarray, y: np.ndarray, roc: DetectionROC | None
             ) -> tuple[str, float, float] | None:
    """(name, AUROC, DeLong standard error) of how probabilities ``mean`` rank the points.

    Binary data: the detection AUROC of P(class 1). Otherwise the
    misclassification AUROC of the top probability (right above wrong); None
    where every prediction is right or every one wrong.
    """
    if roc is not None:
        return "detection AUROC", float(roc.auroc), float(roc.auroc_stderr)
    right = mean.argmax(axis=1) == y
    if right.all() or not right.any():
        return None
    r = detection_roc(mean.max(axis=1), right)
    return "misclassification AUROC", float(r.auroc), float(r.auroc_stderr)


def _informative(ranking: tuple[str, float, float] | None) -> bool:
    """An AUROC more than RANKING_Z standard errors above a prior-only model's 0.5."""
    return ranking is not None and bool(np.isfinite(ranking[2])) \
        and ranking[1] > 0.5 + RANKING_Z * ranking[2]


def _ranking_text(ranking: tuple[str, float, float] | None) -> str:
    return "no ranking" if ranking is None else \
        f"{ranking[0]} {ranking[1]:.3f} ± {ranking[2]:.3f}"


def _find_failures(parts: dict[str, Any], y: np.ndarray, levels: tuple[float, ...],
                   classes: tuple[str, ...], truth: np.ndarray | None = None
                   ) -> tuple[FitFailure, ...]:
    """The fit's failures and warnings; ``classes`` are the display names in the messages.

    The truth, where known, decides whether a classifier that carries nothing
    is the fit's failure or the data's doing (its own Bayes classifier, the
    argmax of ``truth``, fails the same way); otherwise a prior-only model is
    the reference: a fit that ranks points better than it (``RANKING_Z``) is
    not failed because its 0.5 threshold is uninformative.
    """
    mean = parts["mean"]
    pred = mean.argmax(axis=1)
    roc = parts["detection_roc"]
    out: list[FitFailure] = []
    ranking = _ranking(mean, y, roc)
    informative = _informative(ranking)
    truth_ranking = bayes = None
    if truth is not None:
        bayes_pred = truth.argmax(axis=1)
        bayes = _argmax_failure(bayes_pred, y, _balanced_accuracy(bayes_pred, y), classes,
                                who="the Bayes classifier (argmax of the true probabilities) "
                                    "predicts")
        truth_roc = None
        if roc is not None:
            truth_roc = detection_roc(truth[:, 1], y == 1)
        truth_ranking = _ranking(truth, y, truth_roc)
    ranking_failed = False
    argmax = _argmax_failure(pred, y, float(parts["balanced_accuracy"]), classes)
    if argmax is not None:
        kind, message = argmax
        if bayes is not None:
            severity = "warning"
            message += (f"; so does the truth: {bayes[1]}. The data carry too little signal "
                        "for a 0.5 threshold -- not the fit's failure")
        elif informative:
            severity = "warning"
            message += (f"; but its ranking is informative ({_ranking_text(ranking)}, more "
                        f"than {RANKING_Z:g} standard errors above a prior-only model's "
                        "0.5): the 0.5 threshold is uninformative at this class prior -- read "
                        "the detection metrics (AUROC, Pd at a false-alarm rate) instead")
        else:
            severity = "failed"
            ranking_failed = True
            message += (f"; accuracy and ECE only reflect the class balance, and its ranking "
                        f"is no better than a prior-only model's ({_ranking_text(ranking)})")
            if truth_ranking is not None:
                message += f", where the true probabilities score {_ranking_text(truth_ranking)}"
        out.append(FitFailure(kind, message, severity))
    if roc is not None and np.isfinite(roc.auroc_stderr) \
            and roc.auroc < 0.5 - BELOW_CHANCE_Z * roc.auroc_stderr:
        message = (f"ranks targets ({classes[1]!r}) below background: detection AUROC "
                   f"{roc.auroc:.3f} ± {roc.auroc_stderr:.3f}")
        severity = "failed"
        if truth is not None and not _informative(truth_ranking):
            severity = "warning"
            message += (f"; the true probabilities rank no better than chance either "
                        f"({_ranking_text(truth_ranking)}): the data's doing")
        ranking_failed = ranking_failed or severity == "failed"
        out.append(FitFailure("below_chance_ranking", message, severity))
    out += _hcs_failures(parts, y, levels, classes, ranking_failed)
    return tuple(out)


def _hcs_failures(parts: dict[str, Any], y: np.ndarray, levels: tuple[float, ...],
                  classes: tuple[str, ...], ranking_failed: bool = False) -> list[FitFailure]:
    mean = parts["mean"]
    N = mean.shape[0]
    out = []
    for j, k in enumerate(parts["hcs_classes"]):
        is_k = y == k
        n_k = int(is_k.sum())
        p = mean[:, k]
        sides = (
            # (kind, members, wrong, P(wrong) per point, points that can be hit, wording)
            ("hcs_confident_misses", parts["hcs_neg"][..., j], is_k, p, n_k,
             f"points of class {classes[k]!r} confidently called not {classes[k]!r}"),
            ("hcs_confident_false_alarms", parts["hcs_pos"][..., j], ~is_k, 1 - p, N - n_k,
             f"points of other classes confidently called {classes[k]!r}"),
        )
        for kind, members, wrong, p_wrong, exposed, wording in sides:
            found = []
            for i, level in enumerate(levels):
                inside = members[i]
                errors = int((inside & wrong).sum())
                expected = float(p_wrong[inside].sum())
                if exposed == 0 or errors < HCS_ERROR_MIN_RATE * exposed:
                    continue
                overconfident = _chernoff_log_tail(errors, expected) < math.log(HCS_ERROR_P)
                majority = errors > HCS_MAJORITY * exposed
                if not (overconfident or majority):
                    continue
                practical = (errors >= HCS_ERROR_RATIO * expected
                             and errors - expected >= HCS_ERROR_MARGIN * exposed)
                failed = (overconfident and practical) or (majority and ranking_failed)
                found.append((level, errors, expected, overconfident, practical, failed))
            if found:
                failed_at = [f for f in found if f[-1]]
                chosen = failed_at or found
                # the highest level: the smallest set, the strongest evidence
                level, errors, expected, overconfident, practical, failed = chosen[-1]
                also = [f"{lv:g}" for lv, *_ in chosen[:-1]]
                if overconfident and practical:
                    why = (f"the fit's own probabilities expect only {expected:.2f}; at least "
                           f"{HCS_ERROR_RATIO:g}× that and {HCS_ERROR_MARGIN:.0%} of the "
                           f"{exposed} above it")
                elif overconfident:
                    why = (f"the fit's own probabilities expect {expected:.2f}: more than "
                           f"chance allows, but less than {HCS_ERROR_RATIO:g}× that or "
                           f"{HCS_ERROR_MARGIN:.0%} of the {exposed} above it -- a small "
                           "miscalibration, not a failure")
                elif failed:
                    why = (f"most of them; the fit's own probabilities expect {expected:.2f}, "
                           "and its ranking carries nothing")
                else:
                    why = (f"most of them, as the fit's own probabilities expect "
                           f"({expected:.2f}): they are hard to tell apart at this prior")
                out.append(FitFailure(kind, (
                    f"High Confidence Set at level {level:g}: {errors} of {exposed} {wording} "
                    f"({errors / exposed:.1%}: {why})"
                    + (f"; also at levels {', '.join(also)}" if also else "")),
                    "failed" if failed else "warning"))
    return out
