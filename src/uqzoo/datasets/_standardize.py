"""Train/test splitting and feature standardisation shared by every loader.

Both are done here, once, so that every dataset standardises with *training*
statistics only and records them in ``meta`` the same way.
"""

from __future__ import annotations

import warnings

import numpy as np

from uqzoo._validation import check_float, check_seed
from uqzoo.errors import DataWarning, InvalidInputError

__all__ = [
    "check_test_size",
    "standardize",
    "stratified_split",
    "warn_if_float32_loses_precision",
]

# Above this magnitude a raw input saturates any network with the usual weight
# scales, and neighbouring float32 values lie more than 1e8 apart.
LARGE_FEATURE = 1e15
# float32 rounds x to within |x| · 2^-24 (half a unit in its 24-bit significand).
_FLOAT32_HALF_ULP = 2.0**-24
# A feature whose float32 rounding error exceeds this fraction of its standard
# deviation has its variation visibly quantised: 1 % is ~7 bits left of spread.
_RESOLUTION_FRACTION = 0.01


def check_test_size(test_size: object) -> float:
    """Return ``test_size`` as a float in (0, 1)."""
    return check_float(test_size, "test_size", low=0.0, high=1.0, low_open=True,
                       high_open=True)


def stratified_split(y: np.ndarray, test_size: float, seed: int,
                     class_names: tuple[str, ...] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified split of row indices into train and test.

    Each class keeps ``round(test_size * n_k)`` rows for testing, clipped so
    that every class with at least two rows has at least one row on each side;
    a class with a single row goes to training. Written out rather than taken
    from scikit-learn so the split is the same across scikit-learn versions.

    Parameters
    ----------
    y : int array of shape (N,)
        Class labels.
    test_size : float in (0, 1)
        Fraction of each class held out.
    seed : int
        Seed of the permutation.

    Returns
    -------
    train_idx, test_idx : int arrays
        Sorted row indices, disjoint, together ``0..N-1``.

    Example
    -------
    >>> tr, te = stratified_split(np.array([0, 0, 0, 0, 1, 1, 1, 1]), 0.25, seed=0)
    >>> len(tr), len(te)
    (6, 2)
    """
    test_size = check_test_size(test_size)
    rng = np.random.default_rng(check_seed(seed))
    test_parts = []
    for k in np.unique(y):
        members = np.flatnonzero(y == k)
        n_test = round(test_size * members.size)
        if members.size >= 2:
            n_test = min(max(n_test, 1), members.size - 1)
        else:
            n_test = 0
        test_parts.append(rng.permutation(members)[:n_test])
    test_idx = np.sort(np.concatenate(test_parts)) if test_parts else np.zeros(0, int)
    is_test = np.zeros(y.shape[0], dtype=bool)
    is_test[test_idx] = True
    if not is_test.any():
        raise InvalidInputError(
            f"test_size={test_size} leaves no test rows for {y.shape[0]} rows; "
            "pass more data or a larger test_size"
        )
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def standardize(X_train: np.ndarray, X_test: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Centre and scale every feature with the training mean and standard deviation.

    A constant training feature gets scale 1 (it becomes all zeros in training)
    rather than a division by zero.

    Parameters
    ----------
    X_train : array of shape (N_train, D)
    X_test : array of shape (N_test, D)

    Returns
    -------
    X_train_std, X_test_std : float32 arrays of the same shapes
    stats : dict
        ``{"mean": (D,), "scale": (D,)}`` float64, so that
        ``X_std = (X - mean) / scale``.
    """
    X_train64 = np.asarray(X_train, dtype=np.float64)
    mean = X_train64.mean(axis=0)
    scale = X_train64.std(axis=0)
    scale = np.where(scale > 1e-12 * np.maximum(1.0, np.abs(mean)), scale, 1.0)
    X_train_std = ((X_train64 - mean) / scale).astype(np.float32)
    X_test_std = ((np.asarray(X_test, dtype=np.float64) - mean) / scale).astype(np.float32)
    return X_train_std, X_test_std, {"mean": mean, "scale": scale}


def warn_if_float32_loses_precision(X_train: np.ndarray, X_test: np.ndarray, *,
                                    stacklevel: int = 2) -> None:
    """Warn when raw (unstandardised) features will not survive float32.

    The networks compute in float32. A feature is flagged when its magnitude
    exceeds ``LARGE_FEATURE`` (1e15), or when float32 rounding at its
    magnitude, |x| · 2^-24, exceeds 1 % of its training standard deviation
    (a large offset with a small spread, e.g. timestamps in milliseconds).
    Standardising in float64 first, as ``standardize=True`` does, avoids both.

    Parameters
    ----------
    X_train : array of shape (N_train, D)
    X_test : array of shape (N_test, D)
    stacklevel : int
        As :func:`warnings.warn` would take it in the caller, so that the warning
        points at the user's call.

    Warns
    -----
    DataWarning
        Naming how many of the D features are affected, and which.
    """
    X_train = np.asarray(X_train, dtype=np.float64)
    X_test = np.asarray(X_test, dtype=np.float64)
    magnitude = np.abs(X_train).max(axis=0)
    if X_test.size:
        magnitude = np.maximum(magnitude, np.abs(X_test).max(axis=0))
    spread = X_train.std(axis=0)
    huge = magnitude > LARGE_FEATURE
    coarse = (spread > 0) & (magnitude * _FLOAT32_HALF_ULP > _RESOLUTION_FRACTION * spread)
    bad = np.flatnonzero(huge | coarse)
    if bad.size == 0:
        return
    shown = bad[:10].tolist()
    warnings.warn(
        f"{bad.size} of {X_train.shape[1]} features (columns {shown}"
        f"{', ...' if bad.size > 10 else ''}) lose their variation in float32, in which "
        f"the networks compute: values above {LARGE_FEATURE:.0e} in magnitude, or a float32 "
        f"rounding step above {_RESOLUTION_FRACTION:.0%} of the feature's standard "
        "deviation. With standardize=False the fit will be poor; pass standardize=True "
        "(it centres and scales in float64 first) or rescale these features.",
        DataWarning, stacklevel=stacklevel + 1)
