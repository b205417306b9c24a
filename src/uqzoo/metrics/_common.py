"""Checks, exact sums and the weighting helpers shared by the metric modules."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from uqzoo._validation import (
    as_array,
    as_labels,
    as_probabilities,
    check_int,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError

# A float64 sum of integers is exact while it stays below 2**53. Values are
# split into two 26-bit integer limbs, so one bincount may add up to
# 2**(53 - 26) = 2**27 values per bin before it could round.
_LIMB_BITS = 26
_MAX_EXACT_CHUNK = 2**27


# Calibration bins: every binned metric keeps about eight length-B arrays of
# 8-byte totals (counts, outcome counts, two fixed-point limbs, edges, and
# bincount's 2B scratch), so 10**6 bins cost ~64 MB. More bins than that leave
# almost every bin empty for any data set uqzoo evaluates; the bound turns a
# typo (n_bins=10**12) into a clear error instead of a MemoryError.
MAX_BINS = 10**6
# Class-wise calibration bins every class column separately: K × B bins.
MAX_CLASSWISE_BINS = 2**24


def check_n_bins(n_bins: object, n_classes: int = 1) -> int:
    """``n_bins`` as an int in [1, MAX_BINS], with n_classes × n_bins <= MAX_CLASSWISE_BINS."""
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    if n_bins > MAX_BINS:
        raise InvalidInputError(
            f"n_bins must be at most {MAX_BINS:,} (each bin keeps ~64 bytes of totals, and "
            f"more bins than that are nearly all empty), got {n_bins:,}")
    if n_classes * n_bins > MAX_CLASSWISE_BINS:
        raise InvalidInputError(
            f"n_bins × number of classes = {n_bins:,} × {n_classes:,} must be at most "
            f"{MAX_CLASSWISE_BINS:,} (2**24 class-wise bins, ~1 GiB of totals); lower n_bins")
    return n_bins


# Per-point work runs over blocks of rows small enough that every temporary
# stays in cache: on 10^7 points this is 4-7x faster than whole-array numpy.
BLOCK_ROWS = 2**16


def validated_blocks(probs: object, y: object, *, n_classes: int | None = None,
                     probs_name: str = "probs", y_name: str = "y"
                     ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Validate (N, K) probabilities with their labels; yield float64 row blocks.

    Shapes and labels are checked before the first block is yielded; the
    probability checks of :func:`as_probabilities` run block by block.
    """
    arr = probs if isinstance(probs, np.ndarray) else None
    if arr is None or arr.ndim != 2 or arr.shape[0] <= BLOCK_ROWS:
        p = as_probabilities(probs, probs_name, n_classes=n_classes)
        labels = as_labels(y, y_name, n_classes=p.shape[1], n_rows=p.shape[0])
        yield p.astype(np.float64, copy=False), labels
        return
    as_probabilities(arr[:1], probs_name, n_classes=n_classes)       # dtype and K
    labels = as_labels(y, y_name, n_classes=arr.shape[1], n_rows=arr.shape[0])
    for start in range(0, arr.shape[0], BLOCK_ROWS):
        block = as_probabilities(arr[start:start + BLOCK_ROWS], probs_name)
        yield block.astype(np.float64, copy=False), labels[start:start + BLOCK_ROWS]


def check_probs_and_labels(probs: object, y: object, probs_name: str = "probs",
                           y_name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Validate (N, K) probabilities and their (N,) labels together."""
    p = as_probabilities(probs, probs_name).astype(np.float64, copy=False)
    labels = as_labels(y, y_name, n_classes=p.shape[1], n_rows=p.shape[0])
    return p, labels


def check_bounds(lower: object, upper: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate interval bounds of matching shape (..., N, K) within [0, 1]."""
    out = []
    for name, value in (("lower", lower), ("upper", upper)):
        arr = as_array(value, name, "a rectangular numeric array")
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise InvalidTypeError(f"{name} must have a real dtype, got dtype {arr.dtype}")
        if arr.ndim < 2 or arr.size == 0:
            raise InvalidInputError(
                f"{name} must have shape (N, K) or (L, N, K) and not be empty, got {arr.shape}"
            )
        arr = arr.astype(np.float64, copy=False)
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{name} must be finite, found NaN or inf")
        lo, hi = arr.min(), arr.max()
        if lo < 0 or hi > 1:
            raise InvalidInputError(
                f"{name} must lie in [0, 1] (bounds of probabilities), found [{lo}, {hi}]"
            )
        out.append(arr)
    lo_arr, hi_arr = out
    if lo_arr.shape != hi_arr.shape:
        raise InvalidInputError(
            f"lower and upper must have the same shape, got {lo_arr.shape} and {hi_arr.shape}"
        )
    if np.any(lo_arr > hi_arr):
        raise InvalidInputError("lower must not exceed upper; found lower > upper somewhere")
    return lo_arr, hi_arr


def check_sample_weight(sample_weight: object, n_rows: int) -> np.ndarray:
    """Frequency weights as float64 of shape (R, N): one row per replicate.

    ``sample_weight`` of shape (N,) becomes one row; (R, N) is R weightings of
    the same N points, each metric then returning R values. Weights must be
    finite and ≥ 0 with a positive total in every row (a row of zeros leaves
    no sample to score).
    """
    name = "sample_weight"
    arr = as_array(sample_weight, name, "a rectangular numeric array of shape (N,) or (R, N)")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidTypeError(
            f"{name} must have an integer or real dtype, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[-1] != n_rows or arr.shape[0] == 0:
        raise InvalidInputError(
            f"{name} must have shape ({n_rows},) or (R, {n_rows}) with R >= 1 (one weight per "
            f"point, leading axis replicates), got shape {arr.shape}")
    W = np.atleast_2d(arr).astype(np.float64)
    bad = ~np.isfinite(W) | (W < 0)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f"index {at[1]}" if arr.ndim == 1 else f"index {at}"
        raise InvalidInputError(
            f"{name} must be finite and >= 0, found {W[at]} at {where}")
    empty = ~(W.sum(axis=1) > 0)
    if empty.any():
        row = int(np.flatnonzero(empty)[0])
        where = "" if arr.ndim == 1 else f" (row {row})"
        raise InvalidInputError(
            f"{name} must have a positive total, got all weights 0{where}")
    return W


def unstack(values: np.ndarray, sample_weight: object) -> np.ndarray | float:
    """A metric's (R,) values as returned: a float for (N,) weights, else the array."""
    return float(values[0]) if np.asarray(sample_weight).ndim == 1 else values


def total_weight(W: np.ndarray) -> np.ndarray:
    """Σ of each row of weights (R, N) → (R,), snapped to the nearest integer within rounding.

    Sums of real weights that should total an integer (a stratified bootstrap
    replicate totals N up to the rounding of n_k / W_k · W_k) land within a
    few ulp of it; snapping keeps the integer-grid metrics (E-AURC's oracle,
    AUARC's rejection grid, quantile-bin positions) on the unweighted grid.
    """
    n = W.sum(axis=1)
    near = np.round(n)
    return np.where(np.abs(n - near) <= 64 * np.finfo(np.float64).eps * n, near, n)


def weighted_mean(per_point: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Σ_i w_i f_i / Σ_i w_i of per-point values (N,) for each row of W (R, N); (R,)."""
    return (W @ per_point) / W.sum(axis=1)


def ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b where b > 0, NaN elsewhere (an empty denominator), without warnings."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)


def group_ends(sorted_values: np.ndarray) -> np.ndarray:
    """Index of the last element of each run of equal values in a sorted array."""
    return np.append(np.flatnonzero(sorted_values[1:] != sorted_values[:-1]),
                     sorted_values.shape[0] - 1)


def check_scores(scores: object, name: str, n_rows: int) -> np.ndarray:
    """A finite (N,) float score per point."""
    arr = as_array(scores, name, "a 1-D numeric array")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidTypeError(f"{name} must have a real dtype, got dtype {arr.dtype}")
    if arr.shape != (n_rows,):
        raise InvalidInputError(f"{name} must have shape ({n_rows},), got {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be finite, found NaN or inf")
    return arr


class FixedPointSums:
    """Per-bin sums of values in [0, 2**exponent], exact and order-free.

    Each value is rounded once to a multiple of 2**(exponent - 52) (an error
    below 2**(exponent - 53), i.e. under 1.2e-16 for values in [0, 1]) and then
    summed as integers, so the result does not depend on how the data were
    chunked, merged or ordered: streaming and one-shot results are
    bit-identical.

    Parameters
    ----------
    n_bins : int
        Number of independent sums.
    exponent : int
        Values must lie in [0, 2**exponent].
    """

    def __init__(self, n_bins: int, exponent: int = 0) -> None:
        self.exponent = exponent
        self.hi = np.zeros(n_bins, dtype=np.int64)
        self.lo = np.zeros(n_bins, dtype=np.int64)

    def add(self, values: np.ndarray, index: np.ndarray | None = None) -> None:
        """Add ``values`` (1-D) into bins ``index`` (1-D ints; all in bin 0 if None)."""
        n_bins = self.hi.shape[0]
        for start in range(0, max(values.shape[0], 1), _MAX_EXACT_CHUNK):
            v = values[start:start + _MAX_EXACT_CHUNK]
            scaled = v * float(2 ** (_LIMB_BITS - self.exponent))
            hi = np.floor(scaled)
            lo = np.rint((scaled - hi) * float(2**_LIMB_BITS))
            if index is None:
                self.hi[0] += int(hi.sum())
                self.lo[0] += int(lo.sum())
            else:
                idx = index[start:start + _MAX_EXACT_CHUNK]
                self.hi += np.bincount(idx, weights=hi, minlength=n_bins).astype(np.int64)
                self.lo += np.bincount(idx, weights=lo, minlength=n_bins).astype(np.int64)

    def merged(self, other: FixedPointSums) -> FixedPointSums:
        out = FixedPointSums(self.hi.shape[0], self.exponent)
        out.hi = self.hi + other.hi
        out.lo = self.lo + other.lo
        return out

    def values(self) -> np.ndarray:
        """The sums as float64, a deterministic function of the integer totals."""
        return (self.hi.astype(np.float64) * 2.0 ** (self.exponent - _LIMB_BITS)
                + self.lo.astype(np.float64) * 2.0 ** (self.exponent - 2 * _LIMB_BITS))
