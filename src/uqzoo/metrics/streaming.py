"""Streaming accumulators along N: ``update(chunk)``, ``merge(other)``, ``compute()``.

Every accumulator keeps only integer counts and fixed-point integer sums
(:class:`~uqzoo.metrics._common.FixedPointSums`), which are associative, so
any chunking, in any order, merged in any tree, gives bit-for-bit the result
of one update with all the data. ``update`` changes the accumulator in place
and returns it; ``merge`` returns a new accumulator and changes neither input.

What needs a global sort (quantile bins, adaptive bins, AURC, AUARC,
AUROC) is not accumulated: :func:`uqzoo.evaluate` keeps the (N, K)
posterior-mean probabilities, which fit in memory for 10^7 points, and
computes those exactly at the end.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from uqzoo._validation import (
    as_labels,
    as_probabilities,
    check_choice,
    check_delta,
    check_int,
    check_levels,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics._common import (
    FixedPointSums,
    check_bounds,
    check_n_bins,
    validated_blocks,
)
from uqzoo.metrics.calibration import (
    CONFIDENCE_KINDS,
    CalibrationBins,
    brier_per_point,
    classwise_bins,
    classwise_errors,
    equal_width_totals,
    nll_per_point,
    variant_name,
)
from uqzoo.metrics.hcs import HCS_SIDES, HCSSummary, hcs_classes, summarize_counts

__all__ = [
    "CalibrationAccumulator",
    "ClasswiseCalibrationAccumulator",
    "HCSAccumulator",
    "IntervalAccumulator",
    "IntervalSummary",
    "ScoreAccumulator",
    "ScoreSummary",
]

# Brier values lie in [0, 2] = [0, 2**1]; NLL values in [0, 36.04] ⊂ [0, 2**6].
_BRIER_EXPONENT = 1
_NLL_EXPONENT = 6


def _same(a: object, b: object, fields: tuple[str, ...]) -> None:
    if type(a) is not type(b):
        raise InvalidTypeError(
            f"can only merge two {type(a).__name__}s, got a {type(b).__name__}"
        )
    for name in fields:
        if getattr(a, name) != getattr(b, name):
            raise InvalidInputError(
                f"cannot merge accumulators with different {name}: "
                f"{getattr(a, name)!r} and {getattr(b, name)!r}"
            )


class CalibrationAccumulator:
    """Equal-width (Guo) calibration bins, streamed.

    Parameters
    ----------
    n_classes : int >= 2
    n_bins : int >= 1
    confidence : {"top_label", "positive_class"}

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> acc = uz.metrics.CalibrationAccumulator(n_classes=2)
    >>> p = np.array([[0.1, 0.9], [0.3, 0.7], [0.6, 0.4]])
    >>> _ = acc.update(p[:2], [1, 0]).update(p[2:], [0])
    >>> acc.compute().errors()[0] == uz.metrics.ece(p, [1, 0, 0])
    True
    """

    def __init__(self, n_classes: int, n_bins: int = 15, confidence: str = "top_label") -> None:
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.n_bins = check_n_bins(n_bins)
        self.confidence = check_choice(confidence, "confidence", CONFIDENCE_KINDS)
        if self.confidence == "positive_class" and self.n_classes != 2:
            raise InvalidInputError(
                f"confidence='positive_class' needs n_classes = 2, got {self.n_classes}"
            )
        self.n = 0
        self.count = np.zeros(self.n_bins, dtype=np.int64)
        self.outcome = np.zeros(self.n_bins, dtype=np.int64)
        self.confidence_sums = FixedPointSums(self.n_bins)

    def update(self, probs: object, y: object) -> CalibrationAccumulator:
        """Add a chunk of (n, K) probabilities and (n,) labels."""
        staged = CalibrationAccumulator(self.n_classes, self.n_bins, self.confidence)
        for p, labels in validated_blocks(probs, y, n_classes=self.n_classes):
            staged.update_validated(p, labels)
        self.__dict__.update(self.merge(staged).__dict__)
        return self

    def update_validated(self, p: np.ndarray, labels: np.ndarray) -> None:
        count, sums, hits = equal_width_totals(p, labels, self.confidence, self.n_bins)
        self.n += p.shape[0]
        self.count += count
        self.outcome += hits
        self.confidence_sums = self.confidence_sums.merged(sums)

    def merge(self, other: CalibrationAccumulator) -> CalibrationAccumulator:
        """A new accumulator holding both."""
        _same(self, other, ("n_classes", "n_bins", "confidence"))
        out = CalibrationAccumulator(self.n_classes, self.n_bins, self.confidence)
        out.n = self.n + other.n
        out.count = self.count + other.count
        out.outcome = self.outcome + other.outcome
        out.confidence_sums = self.confidence_sums.merged(other.confidence_sums)
        return out

    def compute(self) -> CalibrationBins:
        """The bins; ``.errors()`` gives (ECE, MCE, RMSCE)."""
        if self.n == 0:
            raise InvalidInputError("no data: call update() before compute()")
        return CalibrationBins(count=self.count.copy(),
                               confidence_sum=self.confidence_sums.values(),
                               outcome_count=self.outcome.copy(),
                               edges=np.linspace(0.0, 1.0, self.n_bins + 1), n=self.n,
                               variant=variant_name(self.confidence, "equal_width",
                                                    self.n_bins))


class ClasswiseCalibrationAccumulator:
    """Class-wise ECE bins (every column against 1[y = k]), streamed.

    ``compute()`` returns the per-class ECE, shape (K,); its mean is
    :func:`~uqzoo.metrics.classwise_ece`.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.1, 0.9], [0.3, 0.7], [0.6, 0.4]])
    >>> acc = uz.metrics.ClasswiseCalibrationAccumulator(2).update(p, [1, 0, 0])
    >>> float(acc.compute().mean()) == uz.metrics.classwise_ece(p, [1, 0, 0])
    True
    """

    def __init__(self, n_classes: int, n_bins: int = 15) -> None:
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.n_bins = check_n_bins(n_bins, self.n_classes)
        size = self.n_classes * self.n_bins
        self.n = 0
        self.count = np.zeros(size, dtype=np.int64)
        self.outcome = np.zeros(size, dtype=np.int64)
        self.confidence_sums = FixedPointSums(size)

    def update(self, probs: object, y: object) -> ClasswiseCalibrationAccumulator:
        staged = ClasswiseCalibrationAccumulator(self.n_classes, self.n_bins)
        for p, labels in validated_blocks(probs, y, n_classes=self.n_classes):
            staged.update_validated(p, labels)
        self.__dict__.update(self.merge(staged).__dict__)
        return self

    def update_validated(self, p: np.ndarray, labels: np.ndarray) -> None:
        count, sums, hits = classwise_bins(p, labels, self.n_bins)
        self.n += p.shape[0]
        self.count += count
        self.outcome += hits
        self.confidence_sums = self.confidence_sums.merged(sums)

    def merge(self, other: ClasswiseCalibrationAccumulator) -> ClasswiseCalibrationAccumulator:
        _same(self, other, ("n_classes", "n_bins"))
        out = ClasswiseCalibrationAccumulator(self.n_classes, self.n_bins)
        out.n = self.n + other.n
        out.count = self.count + other.count
        out.outcome = self.outcome + other.outcome
        out.confidence_sums = self.confidence_sums.merged(other.confidence_sums)
        return out

    def compute(self) -> np.ndarray:
        if self.n == 0:
            raise InvalidInputError("no data: call update() before compute()")
        return classwise_errors(self.count, self.confidence_sums.values(), self.outcome,
                                self.n, self.n_classes)


@dataclasses.dataclass(frozen=True)
class ScoreSummary:
    """Proper scores and accuracies of streamed (probabilities, labels)."""

    brier: float
    nll: float
    accuracy: float
    balanced_accuracy: float
    n: int


class ScoreAccumulator:
    """Brier score, NLL, accuracy and balanced accuracy, streamed.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> p = np.array([[0.2, 0.8], [0.6, 0.4]])
    >>> round(uz.metrics.ScoreAccumulator(2).update(p, [1, 1]).compute().brier, 6)
    0.4
    """

    def __init__(self, n_classes: int) -> None:
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.n = 0
        self.brier_sum = FixedPointSums(1, _BRIER_EXPONENT)
        self.nll_sum = FixedPointSums(1, _NLL_EXPONENT)
        self.true_count = np.zeros(self.n_classes, dtype=np.int64)
        self.hit_count = np.zeros(self.n_classes, dtype=np.int64)

    def update(self, probs: object, y: object) -> ScoreAccumulator:
        staged = ScoreAccumulator(self.n_classes)
        for p, labels in validated_blocks(probs, y, n_classes=self.n_classes):
            staged.update_validated(p, labels)
        self.__dict__.update(self.merge(staged).__dict__)
        return self

    def update_validated(self, p: np.ndarray, labels: np.ndarray) -> None:
        self.n += p.shape[0]
        self.brier_sum.add(np.clip(brier_per_point(p, labels), 0.0, 2.0))
        self.nll_sum.add(nll_per_point(p, labels))
        K = self.n_classes
        self.true_count += np.bincount(labels, minlength=K)
        self.hit_count += np.bincount(labels[p.argmax(axis=1) == labels], minlength=K)

    def merge(self, other: ScoreAccumulator) -> ScoreAccumulator:
        _same(self, other, ("n_classes",))
        out = ScoreAccumulator(self.n_classes)
        out.n = self.n + other.n
        out.brier_sum = self.brier_sum.merged(other.brier_sum)
        out.nll_sum = self.nll_sum.merged(other.nll_sum)
        out.true_count = self.true_count + other.true_count
        out.hit_count = self.hit_count + other.hit_count
        return out

    def compute(self) -> ScoreSummary:
        if self.n == 0:
            raise InvalidInputError("no data: call update() before compute()")
        present = self.true_count > 0
        return ScoreSummary(
            brier=float(self.brier_sum.values()[0] / self.n),
            nll=float(self.nll_sum.values()[0] / self.n),
            accuracy=float(self.hit_count.sum() / self.n),
            balanced_accuracy=float(np.mean(self.hit_count[present] / self.true_count[present])),
            n=self.n,
        )


@dataclasses.dataclass(frozen=True, eq=False)
class IntervalSummary:
    """Coverage and width per level and class, from streamed bounds.

    Arrays are (L, K) per class or (L,) overall; standard errors as in
    :class:`~uqzoo.metrics.CoverageResult` and :class:`~uqzoo.metrics.IntervalWidth`.
    Coverage fields are None when no true probabilities were given.
    """

    levels: tuple[float, ...]
    width_per_class: np.ndarray
    width_per_class_stderr: np.ndarray
    width_overall: np.ndarray
    width_overall_stderr: np.ndarray
    coverage_per_class: np.ndarray | None
    coverage_per_class_stderr: np.ndarray | None
    coverage_overall: np.ndarray | None
    coverage_overall_stderr: np.ndarray | None
    n: int


class IntervalAccumulator:
    """Interval width, and coverage of the true probabilities, streamed.

    Parameters
    ----------
    levels : sequence of float
        The levels of the bounds passed to ``update``, ascending.
    n_classes : int
    with_truth : bool
        Whether every ``update`` brings ``p_true`` (coverage is then computed).

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> lower = np.array([[[0.1, 0.5], [0.6, 0.1]]]); upper = lower + 0.3
    >>> acc = uz.metrics.IntervalAccumulator((0.8,), 2, with_truth=True)
    >>> _ = acc.update(lower, upper, p_true=np.array([[0.3, 0.7], [0.5, 0.5]]))
    >>> acc.compute().coverage_per_class
    array([[0.5, 0.5]])
    """

    def __init__(self, levels: object, n_classes: int, with_truth: bool = False) -> None:
        self.levels = check_levels(levels)
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.with_truth = bool(with_truth)
        L, K = len(self.levels), self.n_classes
        self.n = 0
        self.width = FixedPointSums(L * K)
        self.width_sq = FixedPointSums(L * K)
        self.row_width = FixedPointSums(L)
        self.row_width_sq = FixedPointSums(L)
        self.covered = np.zeros((L, K), dtype=np.int64)
        self.row_covered = np.zeros(L, dtype=np.int64)
        self.row_covered_sq = np.zeros(L, dtype=np.int64)

    def update(self, lower: object, upper: object, p_true: object = None) -> IntervalAccumulator:
        """Add bounds of shape (L, n, K) and, with truth, p_true of shape (n, K)."""
        lo, hi = check_bounds(lower, upper)
        L, K = len(self.levels), self.n_classes
        if lo.ndim != 3 or lo.shape[0] != L or lo.shape[2] != K:
            raise InvalidInputError(
                f"lower and upper must have shape (L={L}, n, K={K}), got {lo.shape}"
            )
        truth = None
        if self.with_truth:
            if p_true is None:
                raise InvalidInputError("p_true is required: this accumulator has with_truth=True")
            truth = as_probabilities(p_true, "p_true", n_rows=lo.shape[1], n_classes=K)
        elif p_true is not None:
            raise InvalidInputError("p_true given to an accumulator built with with_truth=False")
        self.update_validated(lo, hi, truth)
        return self

    def update_validated(self, lo: np.ndarray, hi: np.ndarray, truth: np.ndarray | None) -> None:
        L, n, K = lo.shape
        self.n += n
        width = np.clip(hi - lo, 0.0, 1.0)
        cell = np.repeat(np.arange(L * K).reshape(L, 1, K), n, axis=1).reshape(-1)
        flat = width.reshape(-1)
        self.width.add(flat, cell)
        self.width_sq.add(flat * flat, cell)
        row = width.mean(axis=2)                                     # (L, n)
        level_index = np.repeat(np.arange(L), n)
        self.row_width.add(row.reshape(-1), level_index)
        self.row_width_sq.add((row * row).reshape(-1), level_index)
        if truth is not None:
            cov = (lo <= truth) & (truth <= hi)                      # (L, n, K)
            self.covered += cov.sum(axis=1)
            per_row = cov.sum(axis=2).astype(np.int64)              # (L, n)
            self.row_covered += per_row.sum(axis=1)
            self.row_covered_sq += (per_row * per_row).sum(axis=1)

    def merge(self, other: IntervalAccumulator) -> IntervalAccumulator:
        _same(self, other, ("levels", "n_classes", "with_truth"))
        out = IntervalAccumulator(self.levels, self.n_classes, self.with_truth)
        out.n = self.n + other.n
        for name in ("width", "width_sq", "row_width", "row_width_sq"):
            setattr(out, name, getattr(self, name).merged(getattr(other, name)))
        for name in ("covered", "row_covered", "row_covered_sq"):
            setattr(out, name, getattr(self, name) + getattr(other, name))
        return out

    def compute(self) -> IntervalSummary:
        if self.n == 0:
            raise InvalidInputError("no data: call update() before compute()")
        L, K, n = len(self.levels), self.n_classes, self.n
        w = self.width.values().reshape(L, K) / n
        w2 = self.width_sq.values().reshape(L, K) / n
        r = self.row_width.values() / n
        r2 = self.row_width_sq.values() / n
        out: dict[str, np.ndarray | None] = dict(
            width_per_class=w,
            width_per_class_stderr=np.sqrt(np.maximum(w2 - w * w, 0.0) / n),
            width_overall=r,
            width_overall_stderr=np.sqrt(np.maximum(r2 - r * r, 0.0) / n),
            coverage_per_class=None, coverage_per_class_stderr=None,
            coverage_overall=None, coverage_overall_stderr=None,
        )
        if self.with_truth:
            c = self.covered / n
            mean_row = self.row_covered / (n * K)
            mean_row_sq = self.row_covered_sq / (n * K * K)
            out.update(
                coverage_per_class=c,
                coverage_per_class_stderr=np.sqrt(c * (1 - c) / n),
                coverage_overall=mean_row,
                coverage_overall_stderr=np.sqrt(np.maximum(mean_row_sq - mean_row**2, 0.0) / n),
            )
        return IntervalSummary(levels=self.levels, n=n, **out)  # type: ignore[arg-type]


class HCSAccumulator:
    """High Confidence Set counts per level and judged class, streamed.

    ``compute()`` returns an :class:`~uqzoo.metrics.HCSSummary` whose arrays
    have shape (L, C).

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> lower = np.array([[[0.85, 0.05], [0.02, 0.9], [0.5, 0.3]]])
    >>> acc = uz.metrics.HCSAccumulator((0.8,), 2).update(lower, lower + 0.08, [0, 0, 1])
    >>> acc.compute().size
    array([[2]])
    """

    def __init__(self, levels: object, n_classes: int, delta: float = 0.2,
                 side: str = "both") -> None:
        self.levels = check_levels(levels)
        self.n_classes = check_int(n_classes, "n_classes", minimum=2)
        self.delta = check_delta(delta)
        self.side = check_choice(side, "side", HCS_SIDES)
        self.classes = hcs_classes(self.n_classes)
        shape = (len(self.levels), len(self.classes))
        self.n = 0
        self.n_pos = np.zeros(shape, dtype=np.int64)
        self.n_neg = np.zeros(shape, dtype=np.int64)
        self.pos_hit = np.zeros(shape, dtype=np.int64)
        self.neg_miss = np.zeros(shape, dtype=np.int64)
        self.n_targets = np.zeros(len(self.classes), dtype=np.int64)

    def update(self, lower: object, upper: object, y: object) -> HCSAccumulator:
        """Add bounds of shape (L, n, K) and labels (n,)."""
        lo, hi = check_bounds(lower, upper)
        L, K = len(self.levels), self.n_classes
        if lo.ndim != 3 or lo.shape[0] != L or lo.shape[2] != K:
            raise InvalidInputError(
                f"lower and upper must have shape (L={L}, n, K={K}), got {lo.shape}"
            )
        labels = as_labels(y, "y", n_classes=K, n_rows=lo.shape[1])
        self.update_validated(lo, hi, labels)
        return self

    def update_validated(self, lo: np.ndarray, hi: np.ndarray, labels: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Add validated data; returns the (L, n, C) positive and negative masks."""
        cols = list(self.classes)
        positive = lo[..., cols] > 1 - self.delta
        negative = hi[..., cols] < self.delta
        if self.side == "negative":
            positive = np.zeros_like(positive)
        elif self.side == "positive":
            negative = np.zeros_like(negative)
        is_target = labels[:, None] == np.asarray(self.classes)[None, :]     # (n, C)
        self.n += labels.shape[0]
        self.n_pos += positive.sum(axis=1)
        self.n_neg += negative.sum(axis=1)
        self.pos_hit += (positive & is_target).sum(axis=1)
        self.neg_miss += (negative & is_target).sum(axis=1)
        self.n_targets += is_target.sum(axis=0)
        return positive, negative

    def merge(self, other: HCSAccumulator) -> HCSAccumulator:
        _same(self, other, ("levels", "n_classes", "delta", "side"))
        out = HCSAccumulator(self.levels, self.n_classes, self.delta, self.side)
        out.n = self.n + other.n
        for name in ("n_pos", "n_neg", "pos_hit", "neg_miss", "n_targets"):
            setattr(out, name, getattr(self, name) + getattr(other, name))
        return out

    def compute(self) -> HCSSummary:
        if self.n == 0:
            raise InvalidInputError("no data: call update() before compute()")
        return summarize_counts(self.n, self.n_pos, self.n_neg, self.pos_hit, self.neg_miss,
                                np.broadcast_to(self.n_targets, self.n_pos.shape).copy())
