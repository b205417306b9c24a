"""High Confidence Sets: points whose whole credible interval clears a threshold."""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from uqzoo._validation import as_labels, check_choice, check_delta, choices
from uqzoo.metrics._common import check_bounds

__all__ = [
    "HCS_SIDES",
    "HCSSummary",
    "HcsSide",
    "HighConfidenceSet",
    "check_delta",
    "hcs_summary",
    "high_confidence_set",
]

HcsSide = Literal["both", "negative", "positive"]
HCS_SIDES = choices(HcsSide)


@dataclasses.dataclass(frozen=True, eq=False)
class HighConfidenceSet:
    """Membership of a High Confidence Set, one-vs-rest per class.

    Attributes
    ----------
    positive : bool ndarray of shape (..., N, C)
        The interval for P(class c) lies strictly above 1 − δ (confidently c).
        All False when ``side == "negative"``.
    negative : bool ndarray of shape (..., N, C)
        The interval lies strictly below δ (confidently not c). All False when
        ``side == "positive"``.
    classes : tuple of int
        The C class columns judged: ``(1,)`` for K = 2 (class 1 is the
        target; class 0 is its mirror image), ``0..K-1`` for K > 2.
    delta : float
    side : str
    """

    positive: np.ndarray
    negative: np.ndarray
    classes: tuple[int, ...]
    delta: float
    side: str

    @property
    def members(self) -> np.ndarray:
        """bool (..., N, C): in the HCS (either side)."""
        return self.positive | self.negative

    @property
    def decision(self) -> np.ndarray:
        """int8 (..., N, C): 1 confidently c, 0 confidently not c, -1 uncertain."""
        out = np.full(self.positive.shape, -1, dtype=np.int8)
        out[self.negative] = 0
        out[self.positive] = 1
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class HCSSummary:
    """How large and how right a High Confidence Set is, per judged class.

    All arrays have shape (..., C).

    Attributes
    ----------
    size : int ndarray
        Number of points in the set (both sides that ``side`` allows).
    proportion : ndarray
        size / N.
    accuracy : ndarray
        Fraction of members whose confident decision matches the label
        (NaN for an empty set).
    accuracy_stderr : ndarray
        Binomial standard error of ``accuracy`` (NaN for an empty set).
    n_targets : int ndarray
        Points whose label is the class.
    detected_targets : int ndarray
        True targets in the positive part.
    missed_targets : int ndarray
        True targets in the negative part: points the set confidently calls
        background although they are the class. Always 0 for ``side="positive"``.
    false_targets : int ndarray
        Points confidently called the class that are not.
    n : int
    """

    size: np.ndarray
    proportion: np.ndarray
    accuracy: np.ndarray
    accuracy_stderr: np.ndarray
    n_targets: np.ndarray
    detected_targets: np.ndarray
    missed_targets: np.ndarray
    false_targets: np.ndarray
    n: int

    # Detection reading of the counts: the class is the target, the rest its
    # background; a confident miss and a confident false alarm are the two
    # confident errors a detection analyst acts on without looking.

    @property
    def n_background(self) -> np.ndarray:
        """int (..., C): points whose label is not the class."""
        return self.n - self.n_targets

    @property
    def confident_errors(self) -> np.ndarray:
        """int (..., C): confident misses plus confident false alarms."""
        return self.missed_targets + self.false_targets

    @property
    def detected_target_rate(self) -> np.ndarray:
        """(..., C): detected_targets / n_targets, NaN without targets."""
        return _rate(self.detected_targets, self.n_targets)

    @property
    def missed_target_rate(self) -> np.ndarray:
        """(..., C): missed_targets / n_targets, NaN without targets."""
        return _rate(self.missed_targets, self.n_targets)

    @property
    def false_target_rate(self) -> np.ndarray:
        """(..., C): false_targets / n_background, the confident false-alarm rate."""
        return _rate(self.false_targets, self.n_background)


def _rate(count: np.ndarray, total: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, count / np.maximum(total, 1), np.nan)


def hcs_classes(n_classes: int) -> tuple[int, ...]:
    """The class columns an HCS judges: the target (1) when binary, else all."""
    return (1,) if n_classes == 2 else tuple(range(n_classes))


def high_confidence_set(lower: object, upper: object, delta: float = 0.2,
                        side: str = "both") -> HighConfidenceSet:
    """High Confidence Set of Ries et al. from credible-interval bounds.

    With level-(1 − α) intervals [l, u] for P(target) and threshold δ, a
    point is confidently not target when u < δ and confidently target when
    l > 1 − δ (strict inequalities). The paper's defaults are α = δ = 0.2, so
    pass level-0.8 bounds. For K > 2 classes each class is judged
    one-vs-rest.

    Parameters
    ----------
    lower, upper : array of shape (N, K) or (L, N, K)
        Credible-interval bounds for the class probabilities.
    delta : float in (0, 0.5)
        Threshold δ.
    side : {"both", "negative", "positive"}
        Which confident decisions form the set.

    Returns
    -------
    HighConfidenceSet

    Examples
    --------
    The first point is confidently not a target (u < δ), the second confidently one (l >
    1 − δ), the third neither (-1):

    >>> import numpy as np, uqzoo as uz
    >>> lower = np.array([[0.85, 0.05], [0.02, 0.9], [0.5, 0.3]])
    >>> upper = np.array([[0.95, 0.15], [0.1, 0.98], [0.7, 0.5]])
    >>> uz.metrics.high_confidence_set(lower, upper, delta=0.2).decision[:, 0]
    array([ 0,  1, -1], dtype=int8)

    References
    ----------
    Ries, D., et al. High confidence sets for uncertainty quantification in
    hyperspectral target detection (Sandia National Laboratories).
    """
    lo, hi = check_bounds(lower, upper)
    delta = check_delta(delta)
    side = check_choice(side, "side", HCS_SIDES)
    classes = hcs_classes(lo.shape[-1])
    cols = list(classes)
    lo_c, hi_c = lo[..., cols], hi[..., cols]
    positive = lo_c > 1 - delta
    negative = hi_c < delta
    if side == "negative":
        positive = np.zeros_like(positive)
    elif side == "positive":
        negative = np.zeros_like(negative)
    return HighConfidenceSet(positive=positive, negative=negative, classes=classes,
                             delta=delta, side=side)


def hcs_summary(hcs: HighConfidenceSet, y: object) -> HCSSummary:
    """Size, accuracy and missed targets of a High Confidence Set.

    Parameters
    ----------
    hcs : HighConfidenceSet
    y : array of shape (N,)
        True labels.

    Returns
    -------
    HCSSummary

    Examples
    --------
    Two points enter the set and one is right (the second is called a target but is
    not); no target is confidently dismissed:

    >>> import numpy as np, uqzoo as uz
    >>> lower = np.array([[0.85, 0.05], [0.02, 0.9], [0.5, 0.3]])
    >>> hcs = uz.metrics.high_confidence_set(lower, lower + 0.08)
    >>> s = uz.metrics.hcs_summary(hcs, [0, 0, 1])
    >>> int(s.size[0]), float(s.accuracy[0]), int(s.missed_targets[0])
    (2, 0.5, 0)
    """
    N = hcs.positive.shape[-2]
    max_class = max(hcs.classes) + 1
    labels = as_labels(y, "y", n_rows=N, n_classes=max(max_class, 2))
    is_target = labels[:, None] == np.asarray(hcs.classes)[None, :]     # (N, C)
    return summarize_counts(
        n=N,
        n_pos=hcs.positive.sum(axis=-2),
        n_neg=hcs.negative.sum(axis=-2),
        pos_hit=(hcs.positive & is_target).sum(axis=-2),
        neg_miss=(hcs.negative & is_target).sum(axis=-2),
        n_targets=np.broadcast_to(is_target.sum(axis=0),
                                  (*hcs.positive.shape[:-2], len(hcs.classes))).copy(),
    )


def summarize_counts(n: int, n_pos: np.ndarray, n_neg: np.ndarray, pos_hit: np.ndarray,
                     neg_miss: np.ndarray, n_targets: np.ndarray) -> HCSSummary:
    """Build an :class:`HCSSummary` from integer counts (shared with streaming)."""
    size = n_pos + n_neg
    correct = pos_hit + (n_neg - neg_miss)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(size > 0, correct / np.maximum(size, 1), np.nan)
        acc_se = np.where(size > 0, np.sqrt(acc * (1 - acc) / np.maximum(size, 1)), np.nan)
    return HCSSummary(
        size=size.astype(np.int64),
        proportion=size / n,
        accuracy=acc,
        accuracy_stderr=acc_se,
        n_targets=np.asarray(n_targets, dtype=np.int64),
        detected_targets=np.asarray(pos_hit, dtype=np.int64),
        missed_targets=np.asarray(neg_miss, dtype=np.int64),
        false_targets=np.asarray(n_pos - pos_hit, dtype=np.int64),
        n=n,
    )
