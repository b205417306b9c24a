"""``evaluate``: every method's posterior predictive → one tidy table of trust metrics.

Two paths give the same numbers:

- a ``Posterior`` is streamed: the test inputs are cut into chunks, each
  summarised by ``posterior.summarize`` (mean probabilities, equal-tailed
  bounds per level, expected entropy) and fed to exact accumulators, so
  memory is O(S × chunk), never O(S × N);
- raw draws (S, N, K) are summarised chunk by chunk the same way.

Metrics that need a global sort (AURC, E-AURC, AUARC, misclassification
AUROC, quantile-binned and adaptive ECE) are computed exactly at the end on
the (N, K) posterior-mean probabilities, which are kept (16 bytes per point
for K = 2: 160 MB at 10^7 points).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uqzoo._validation import (
    DEFAULT_LEVELS,
    _show,
    as_labels,
    as_probabilities,
    check_choice,
    check_int,
    check_levels,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import calibration as cal
from uqzoo.metrics import selective as sel
from uqzoo.metrics._common import check_delta
from uqzoo.metrics.hcs import HCS_SIDES
from uqzoo.metrics.streaming import (
    CalibrationAccumulator,
    ClasswiseCalibrationAccumulator,
    HCSAccumulator,
    IntervalAccumulator,
    ScoreAccumulator,
)
from uqzoo.metrics.uncertainty import entropy_of

__all__ = ["DEFAULT_LEVELS", "EvalReport", "evaluate"]

# Rows per streamed chunk when the caller gives none: the per-chunk outputs
# (mean, L bounds) are small; the engine bounds its own S × chunk work memory.
_DEFAULT_CHUNK = 2**16
TABLE_COLUMNS = ["metric", "variant", "level", "class", "value", "stderr"]


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
        object otherwise.
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
        The posterior's warnings.
    streamed : bool
        True when computed through ``Posterior.summarize``.
    classes : tuple
        The original label of each class 0..K-1 (``data.classes`` or
        ``posterior.classes``; ``(0, ..., K-1)`` when neither is known), as
        in the table's ``class`` column.
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
        """Headline numbers, flat: ``"coverage@0.8"``, ``"ece"``, ``"hcs_size@0.8"``, ..."""
        out: dict[str, Any] = {
            "n_points": self.n_points, "n_classes": self.n_classes,
            "num_draws": self.num_draws, "method": self.method, "converged": self.converged,
        }
        for name in ("accuracy", "balanced_accuracy", "ece", "mce", "adaptive_ece",
                     "classwise_ece", "brier", "nll", "aurc", "eaurc", "auarc",
                     "misclassification_auroc", "mean_predictive_entropy",
                     "mean_mutual_information"):
            rows = self._rows(name, None, None, None)
            if not rows.empty:
                out[name] = float(rows.value.iloc[0])
        for level in self.levels:
            key = f"{level:g}"
            for name in ("coverage", "interval_width"):
                rows = self._rows(name, level, None, None)
                if not rows.empty:
                    out[f"{name}@{key}"] = float(rows.value.iloc[0])
            sizes = self.table[(self.table.metric == "hcs_size")
                               & np.isclose(self.table.level.astype(float), level)]
            accs = self.table[(self.table.metric == "hcs_accuracy")
                              & np.isclose(self.table.level.astype(float), level)]
            missed = self.table[(self.table.metric == "hcs_missed_targets")
                                & np.isclose(self.table.level.astype(float), level)]
            size = float(sizes.value.sum())
            out[f"hcs_size@{key}"] = int(size)
            out[f"hcs_proportion@{key}"] = size / (self.n_points * len(self.hcs_classes))
            pooled = np.nansum(accs.value.to_numpy() * sizes.value.to_numpy())
            out[f"hcs_accuracy@{key}"] = float(pooled / size) if size > 0 else float("nan")
            out[f"hcs_missed_targets@{key}"] = int(missed.value.sum())
        return out

    def summary(self) -> str:
        """A short human-readable account of the headline numbers."""
        d = self.to_dict()
        head = (f"EvalReport: {self.n_points} points, K={self.n_classes}, "
                f"S={self.num_draws} draws" + (f", method={self.method}" if self.method else ""))
        lines = [head]
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
                  ) -> tuple[np.ndarray | None, np.ndarray, object, dict]:
    """(X or None, y, p_true, extras) from a ClassificationData or a label array."""
    if hasattr(data_or_labels, "X_test") and hasattr(data_or_labels, "y_test"):
        data = data_or_labels
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
                      n_classes=getattr(data, "n_classes", None))
        return np.asarray(data.X_test), np.asarray(data.y_test), data.p_true_test, extras
    return None, data_or_labels, p_true, dict(coords=None, image_shape=None, class_names=(),
                                              classes=None, n_classes=None)


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


def _draw_chunks(draws: np.ndarray, levels: tuple[float, ...], chunk: int
                 ) -> Iterator[_Chunk]:
    qs = [q for lv in levels for q in ((1 - lv) / 2, (1 + lv) / 2)]
    for start in range(0, draws.shape[1], chunk):
        d = draws[:, start:start + chunk].astype(np.float64, copy=False)
        bounds = np.quantile(d, qs, axis=0)
        yield _Chunk(mean=d.mean(axis=0), lower=bounds[0::2], upper=bounds[1::2],
                     expected_entropy=entropy_of(d).mean(axis=0), num_draws=d.shape[0])


def _posterior_chunks(posterior: Any, X: np.ndarray, levels: tuple[float, ...], chunk: int,
                      inner_chunk: int | None) -> Iterator[_Chunk]:
    for start in range(0, X.shape[0], chunk):
        # A writable copy: ClassificationData arrays are read-only, which torch
        # warns about when it wraps them without copying.
        X_chunk = np.array(X[start:start + chunk])
        s = posterior.summarize(X_chunk, levels=levels, chunk_size=inner_chunk)
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
             side: str = "both", progress_bar: bool = False) -> EvalReport:
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

    Returns
    -------
    EvalReport

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
    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    chunk = chunk_size or _DEFAULT_CHUNK
    if not isinstance(progress_bar, bool):
        raise InvalidTypeError(f"progress_bar must be True or False, got {_show(progress_bar)}")

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
        chunks = _posterior_chunks(posterior_or_draws, X, levels, chunk, chunk_size)
    else:
        draws = as_probabilities(posterior_or_draws, "posterior_or_draws", ndim=3)
        num_draws, N, K = draws.shape
        if extras["n_classes"] is not None and int(extras["n_classes"]) != K:
            raise InvalidInputError(
                f"posterior_or_draws has K = {K} class columns; data_or_labels has "
                f"{extras['n_classes']} classes"
            )
        chunks = _draw_chunks(draws, levels, chunk)
    y = as_labels(y_raw, "y", n_classes=K, n_rows=N)
    truth = None
    if truth_raw is not None:
        truth = as_probabilities(truth_raw, "p_true", n_rows=N,
                                 n_classes=K).astype(np.float64, copy=False)
    if progress_bar:
        from tqdm.auto import tqdm
        chunks = tqdm(chunks, total=math.ceil(N / chunk), desc="evaluate", unit="chunk")

    fit_classes = getattr(posterior_or_draws, "classes", None) if is_posterior else None
    classes = extras["classes"] or (tuple(fit_classes) if fit_classes is not None else None)
    report_parts = _accumulate(chunks, y, truth, levels, delta, side, n_bins, N, K, classes)
    if report_parts["num_draws"] is not None:
        num_draws = report_parts["num_draws"]
    K = report_parts["mean"].shape[1]
    classes = report_parts["classes"]
    names = extras["class_names"] or tuple(str(c) for c in classes)
    warnings = tuple(str(w) for w in getattr(posterior_or_draws, "warnings", ()) or ())
    return EvalReport(
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
    )


def _accumulate(chunks: Iterator[_Chunk], y: np.ndarray, truth: np.ndarray | None,
                levels: tuple[float, ...], delta: float, side: str, n_bins: int, N: int,
                K: int | None, classes: tuple | None) -> dict[str, Any]:
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
            state["hcs_neg"] = np.zeros((L, N, C), dtype=bool)
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
        state["mean"][start:stop] = mean
        state["width"][:, start:stop] = hi - lo
        if state["expected_entropy"] is not None and ch.expected_entropy is not None:
            state["expected_entropy"][start:stop] = ch.expected_entropy
        start = stop
    if start != N:
        raise InvalidInputError(f"the summaries covered {start} of the {N} test points")
    return _finish(state, y, truth, levels, delta, side, n_bins, num_draws, classes)


def _finish(state: dict, y: np.ndarray, truth: np.ndarray | None, levels: tuple[float, ...],
            delta: float, side: str, n_bins: int, num_draws: int | None,
            classes: tuple | None) -> dict[str, Any]:
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

    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    if all(isinstance(c, int) and not isinstance(c, bool) for c in classes):
        table["class"] = table["class"].astype("Int64")
    else:
        table["class"] = table["class"].astype(object)
    return dict(table=table, mean=mean, width=state["width"], hcs_pos=state["hcs_pos"],
                hcs_neg=state["hcs_neg"], hcs_classes=state["hcs"].classes,
                expected_entropy=state["expected_entropy"], reliability=reliability,
                risk_coverage=rc, num_draws=num_draws, classes=classes)
