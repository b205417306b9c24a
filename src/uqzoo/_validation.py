"""Checks shared by every public entry point.

They turn malformed input into :mod:`uqzoo.errors` exceptions whose message
names the argument, shows the bad value and says what is allowed, so that no
user ever sees a traceback from deep inside numpy, JAX or torch.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import get_args

import numpy as np

from uqzoo.errors import InvalidInputError, InvalidTypeError

# Tolerance for "rows sum to one": float32 softmax outputs are off by a few ulp
# per class; 1e-4 accepts K up to ~1000 classes in float32 and still rejects
# anything that is not a probability vector.
PROBABILITY_SUM_ATOL = 1e-4


# The credible levels every summary, evaluation and table uses unless told
# otherwise: defined once, here beside ``check_levels`` (a light module, so the
# predictive engine and the evaluator share it without importing each other).
DEFAULT_LEVELS = (0.5, 0.8, 0.9, 0.95)

def _show(value: object, limit: int = 80) -> str:
    """A short repr of ``value`` for error messages."""
    if isinstance(value, np.ndarray):
        text = f"array(shape={value.shape}, dtype={value.dtype})"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_seed(seed: object, name: str = "seed") -> int:
    """Return ``seed`` as a non-negative Python int."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise InvalidTypeError(
            f"{name} must be a non-negative integer, got {_show(seed)} "
            f"of type {type(seed).__name__}"
        )
    seed = int(seed)
    if seed < 0 or seed >= 2**63:
        raise InvalidInputError(f"{name} must be an integer in [0, 2**63), got {seed}")
    return seed


def check_int(value: object, name: str, *, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as an int within [minimum, maximum]."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(
            f"{name} must be an integer, got {_show(value)} of type {type(value).__name__}"
        )
    value = int(value)
    if minimum is not None and value < minimum:
        raise InvalidInputError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise InvalidInputError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_float(value: object, name: str, *, low: float | None = None,
                high: float | None = None, low_open: bool = False,
                high_open: bool = False) -> float:
    """Return ``value`` as a finite float within the given bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(
            f"{name} must be a real number, got {_show(value)} of type {type(value).__name__}"
        )
    value = float(value)
    if not np.isfinite(value):
        raise InvalidInputError(f"{name} must be finite, got {value}")
    lo_bad = low is not None and (value <= low if low_open else value < low)
    hi_bad = high is not None and (value >= high if high_open else value > high)
    if lo_bad or hi_bad:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        raise InvalidInputError(f"{name} must lie in {left}{lo}, {hi}{right}, got {value}")
    return value


def check_delta(delta: object, name: str = "delta") -> float:
    """δ of a High Confidence Set, strictly between 0 and 0.5, as a float.

    ``name`` is what the user typed (``delta``, ``--delta``, or a file's key
    as ``run.toml: compare.delta:``): the library, the command line and the
    files all check δ here.
    """
    return check_open_interval(delta, f"{name} must be a number in (0, 0.5) (the High "
                                      "Confidence Set's threshold δ, e.g. 0.2), got", 0.0, 0.5)


def check_open_interval(value: object, what: str, low: float, high: float) -> float:
    """A real number in (low, high) as a float; ``what`` starts the message ("x must be
    ..., got"), which ends with the value given."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise InvalidTypeError(f"{what} {_show(value)}")
    number = float(value)
    if not low < number < high:                             # nan and inf fail this too
        raise InvalidInputError(f"{what} {number!r}")
    return number


def check_bool(value: object, name: str) -> bool:
    """``value`` as a bool; only True, False and numpy bools are accepted (not 0/1, not
    strings such as "false", which are truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidTypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def as_array(value: object, name: str, what: str) -> np.ndarray:
    """``value`` as a numpy array, or one error for whatever numpy cannot make rectangular.

    None, strings, bytes, dicts and ragged nested lists are refused with the
    same message everywhere: ``"<name> must be <what>, got <value>"``. The
    caller checks dtype and shape next.
    """
    if value is None or isinstance(value, (str, bytes, dict)):
        raise InvalidTypeError(f"{name} must be {what}, got {_show(value)}")
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:   # ragged nested lists, odd objects
        raise InvalidTypeError(f"{name} must be {what}, got {_show(value)}") from exc


def in_class_order(values: Mapping, labels: Sequence, name: str, what: str,
                   owner: str = "the data do") -> list:
    """A dict label -> value as the list of values in ``labels``' order.

    Every label must be given once and no other: ``what`` names a value in the
    message ("a weight", "a probability"), ``owner`` who has the labels, with
    its verb ("the data do", "the posterior does").
    """
    labels = list(labels)
    unknown = [k for k in values if k not in labels]
    if unknown:
        raise InvalidInputError(f"{name} names class(es) {unknown!r} {owner} not have; "
                                f"the classes are {labels!r}")
    missing = [k for k in labels if k not in values]
    if missing:
        raise InvalidInputError(f"{name} must give every class {what}; missing {missing!r}")
    return [values[k] for k in labels]


def choices(option: object) -> tuple[str, ...]:
    """The strings of a ``Literal[...]`` option type, in order: one source for the type a
    checker sees and the values :func:`check_choice` allows."""
    return tuple(str(v) for v in get_args(option))


def check_choice(value: object, name: str, allowed: Sequence[str]) -> str:
    """Return ``value`` if it is one of the ``allowed`` strings."""
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInputError(
            f"{name} must be one of {', '.join(repr(a) for a in allowed)}; got {_show(value)}"
        )
    return value


def check_levels(levels: object, name: str = "levels") -> tuple[float, ...]:
    """Return credible levels as a sorted tuple of distinct floats in (0, 1)."""
    if isinstance(levels, numbers.Real) and not isinstance(levels, bool):
        levels = (levels,)
    if isinstance(levels, np.ndarray) and levels.ndim == 0:
        levels = levels.reshape(1)
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Iterable):
        raise InvalidTypeError(
            f"{name} must be a number or a sequence of numbers in (0, 1), got {_show(levels)}"
        )
    out = []
    for level in levels:
        out.append(check_float(level, f"{name} entry", low=0.0, high=1.0,
                               low_open=True, high_open=True))
    if not out:
        raise InvalidInputError(f"{name} must hold at least one level in (0, 1), got none")
    if len(set(out)) != len(out):
        raise InvalidInputError(f"{name} must not repeat a level, got {tuple(out)}")
    return tuple(sorted(out))


def _all_finite(arr: np.ndarray) -> bool:
    """Whether every element of a numeric array is finite, without an (N, D) temporary.

    A NaN or an infinity makes the sum NaN or infinite, so a finite sum proves
    every element finite in one read of the array; only a non-finite sum
    (a bad value, or an overflow of finite ones) needs the element-wise check.
    On a 1,000,000 × 200 float32 input the element-wise check allocated a
    191 MiB bool array and took 0.4 s on first use; the sum takes 0.05 s.
    """
    if not np.issubdtype(arr.dtype, np.inexact):
        return True                       # integers and booleans are always finite
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(arr.sum()):
            return True
    return bool(np.all(np.isfinite(arr)))


def as_float_matrix(X: object, name: str, *, n_features: int | None = None,
                    allow_empty: bool = False) -> np.ndarray:
    """Return ``X`` as a finite float32 (N, D) array."""
    arr = as_array(X, name, "a 2-D numeric array")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_):
        raise InvalidTypeError(f"{name} must have a numeric dtype, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise InvalidTypeError(f"{name} must be real-valued, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name} must be 2-D with shape (N, n_features), got shape {arr.shape}"
        )
    if arr.shape[0] == 0 and not allow_empty:
        raise InvalidInputError(f"{name} must hold at least one row, got shape {arr.shape}")
    if n_features is not None and arr.shape[1] != n_features:
        raise InvalidInputError(
            f"{name} must have {n_features} columns (the spec's in_features), "
            f"got shape {arr.shape}"
        )
    if not _all_finite(arr):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidInputError(
            f"{name} must be finite; found {arr[tuple(bad)]} at row {bad[0]}, column {bad[1]}"
        )
    # Networks compute in float32: a larger value would silently become inf.
    limit = float(np.finfo(np.float32).max)
    if arr.dtype.itemsize > 4 and arr.size and np.abs(arr).max() > limit:
        bad = np.argwhere(np.abs(arr) > limit)[0]
        raise InvalidInputError(
            f"{name} must fit in float32 (|x| <= {limit:.4g}); found {arr[tuple(bad)]} at "
            f"row {bad[0]}, column {bad[1]}"
        )
    return arr.astype(np.float32, copy=False)


def as_labels(y: object, name: str, n_classes: int | None = None,
              n_rows: int | None = None) -> np.ndarray:
    """Return labels as an int64 (N,) array with values in 0..n_classes-1."""
    arr = as_array(y, name, "a 1-D integer array")
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be 1-D, got shape {arr.shape}")
    if n_rows is not None and arr.shape[0] != n_rows:
        raise InvalidInputError(
            f"{name} must have one label per row ({n_rows}), got {arr.shape[0]}"
        )
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise InvalidInputError(f"{name} must hold whole-number class labels, got {_show(arr)}")
        arr = arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise InvalidTypeError(f"{name} must have an integer dtype, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise InvalidInputError(f"{name} must hold labels >= 0, found {arr.min()}")
    if n_classes is not None and arr.size and arr.max() >= n_classes:
        raise InvalidInputError(
            f"{name} must hold labels in 0..{n_classes - 1}, found {arr.max()}"
        )
    return arr


def as_calibration_pair(calibration: object, in_features: int,
                        n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """``calibration=(X, y)``, held-out data a recalibration or a conformal rule is fitted
    on, checked against the network: ``(X as float (N, in_features), y as int64 labels)``."""
    if not isinstance(calibration, (tuple, list)) or len(calibration) != 2:
        raise InvalidTypeError(
            f"calibration must be a pair (X, y) of held-out data, got {_show(calibration)}")
    X = as_float_matrix(calibration[0], "calibration X", n_features=in_features)
    y = as_labels(calibration[1], "calibration y", n_classes=n_classes, n_rows=X.shape[0])
    return X, y

def as_probabilities(p: object, name: str, *, n_rows: int | None = None,
                     n_classes: int | None = None, ndim: int = 2) -> np.ndarray:
    """Return ``p`` as a float array whose last axis is a probability vector.

    ``ndim`` is 2 for (N, K) probabilities and 3 for (S, N, K) draws.
    """
    arr = as_array(p, name, "a numeric array")
    if not np.issubdtype(arr.dtype, np.floating) and not np.issubdtype(arr.dtype, np.integer):
        raise InvalidTypeError(f"{name} must have a real dtype, got dtype {arr.dtype}")
    shape_text = "(N, K)" if ndim == 2 else "(S, N, K)"
    if arr.ndim != ndim:
        raise InvalidInputError(f"{name} must have shape {shape_text}, got shape {arr.shape}")
    if arr.shape[-1] < 2:
        raise InvalidInputError(
            f"{name} must have K >= 2 class columns (binary as [1 - p, p]), got shape {arr.shape}"
        )
    if n_rows is not None and arr.shape[-2] != n_rows:
        raise InvalidInputError(f"{name} must have N = {n_rows} rows, got shape {arr.shape}")
    if n_classes is not None and arr.shape[-1] != n_classes:
        raise InvalidInputError(f"{name} must have K = {n_classes} columns, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidInputError(f"{name} must not be empty, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise InvalidInputError(f"{name} must be finite, found NaN or inf")
    lo, hi = arr.min(), arr.max()
    if lo < 0 or hi > 1:
        raise InvalidInputError(f"{name} must lie in [0, 1], found values in [{lo}, {hi}]")
    sums = arr.sum(axis=-1)
    worst = np.abs(sums - 1).max()
    if worst > PROBABILITY_SUM_ATOL:
        raise InvalidInputError(
            f"{name} rows must sum to 1 (within {PROBABILITY_SUM_ATOL}), found a row summing "
            f"to {sums.flat[np.abs(sums - 1).argmax()]}"
        )
    return arr
