"""The one data container every method and the evaluator accept."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from uqzoo._validation import (
    _show,
    as_array,
    as_float_matrix,
    as_labels,
    as_probabilities,
    check_int,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["MAX_CLASSES", "ClassificationData", "check_classes", "check_groups"]

# A bound far above any classification problem this library is for, so that a
# typo cannot make the default class names (one string per class) exhaust memory.
MAX_CLASSES = 100_000


def _frozen(arr: np.ndarray | None) -> np.ndarray | None:
    """A read-only copy, so nobody can change a dataset after validation."""
    if arr is None:
        return None
    arr = np.array(arr, copy=True)
    arr.setflags(write=False)
    return arr


def _check_coords(coords: object, name: str, n_rows: int) -> np.ndarray | None:
    if coords is None:
        return None
    arr = as_array(coords, name, "an integer (N, 2) array")
    if arr.ndim != 2 or arr.shape != (n_rows, 2) or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidInputError(
            f"{name} must be an integer (N, 2) array of (row, column) pixel positions "
            f"with N = {n_rows}, got {_show(arr)}"
        )
    if arr.size and arr.min() < 0:
        raise InvalidInputError(f"{name} must hold non-negative pixel positions")
    return arr.astype(np.int64)


def check_groups(groups: object, name: str, n_rows: int) -> np.ndarray | None:
    """``groups`` as a 1-D int64 or str array of one group label per row, or None.

    A group is where a row came from (a hospital, a site, a region of a
    scene): rows of one group share its conditions, so a model is judged on
    groups it never saw (``split="groups"``) and per group
    (:func:`uqzoo.evaluate`). Labels are integers or strings; floats, bools
    and missing values are refused, since a group must be named exactly.
    """
    if groups is None:
        return None
    arr = as_array(groups, name, "a 1-D array of integer or string group labels")
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise InvalidInputError(
            f"{name} must be a 1-D array of one group label per row (N = {n_rows}), "
            f"got {_show(arr)}")
    if arr.dtype == object:
        values = arr.tolist()
        if all(isinstance(v, str) for v in values):
            arr = np.array(values, dtype=str) if values else np.zeros(0, dtype=str)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                 for v in values):
            arr = np.array(values, dtype=np.int64)
    if np.issubdtype(arr.dtype, np.integer) and arr.dtype != np.bool_:
        return arr.astype(np.int64)
    if arr.dtype.kind == "U":
        return arr
    raise InvalidTypeError(
        f"{name} must hold integer or string group labels (no floats, bools or missing "
        f"values), got {_show(arr)}")


def check_classes(classes: object, n_classes: int) -> tuple[Any, ...]:
    """The original class labels as a tuple of plain Python scalars, one per class.

    ``None`` means the labels are the class indices themselves: ``(0, ..., K-1)``.
    Labels must be str, int, float or bool (numpy scalars are converted with
    ``.item()``), distinct, and not NaN, so that they survive a JSON round
    trip in a saved posterior unchanged.
    """
    if classes is None:
        return tuple(range(n_classes))
    if isinstance(classes, (str, bytes, Mapping)) or not isinstance(classes, Iterable):
        raise InvalidTypeError(f"classes must be a sequence of labels, got {_show(classes)}")
    labels = tuple(v.item() if isinstance(v, np.generic) else v for v in classes)
    bad = [v for v in labels if not isinstance(v, (str, int, float, bool))
           or (isinstance(v, float) and not np.isfinite(v))]
    if bad:
        raise InvalidTypeError(
            f"classes must hold str, int, float or bool labels (floats finite), got "
            f"{_show(bad[0])} of type {type(bad[0]).__name__}"
        )
    if len(labels) != n_classes or len(set(labels)) != n_classes:
        raise InvalidInputError(
            f"classes must hold {n_classes} distinct labels, one per class, got {_show(labels)}"
        )
    return labels


@dataclasses.dataclass(frozen=True, eq=False)
class ClassificationData:
    """A train/test classification problem, validated once at construction.

    Parameters
    ----------
    X_train, X_test : array of shape (N_train, D) and (N_test, D)
        Finite features, stored as float32.
    y_train, y_test : array of shape (N_train,) and (N_test,)
        Integer labels in ``0..n_classes-1``.
    n_classes : int
        K >= 2. The training labels must contain at least two classes.
    p_true_test : array of shape (N_test, K) or None
        The true class probabilities P(y = k | x) of the test points when they
        are known (simulated data); rows sum to one.
    class_names : tuple of str
        One display name per class, in label order; by default ``str`` of
        each entry of ``classes``.
    name : str
        The dataset's name, e.g. ``"hsi-sim"``.
    meta : mapping
        Provenance and preprocessing (standardisation statistics, options,
        citation, image shape for HSI scenes).
    coords_train, coords_test : int array of shape (N, 2) or None
        (row, column) pixel positions for HSI scenes, so maps can be drawn.
    classes : tuple, optional
        The original label of each class 0..K-1 (str, int, float or bool;
        numpy scalars become Python scalars), as scikit-learn's ``classes_``:
        ``uz.datasets.from_arrays(X, y)`` with labels {5, 6} stores classes 0
        and 1 and ``classes == (5, 6)``. Default ``tuple(range(n_classes))``.
        Fitted posteriors and evaluation tables carry these labels.
    groups_train, groups_test : array of shape (N_train,) and (N_test,) or None
        The group of every row (a hospital, a site, a region of a scene):
        integer or string labels, stored as int64 or str arrays. With
        ``groups_test``, :func:`uqzoo.evaluate` also reports metrics per test
        group and their median. None when the data carry no groups.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> data = uz.ClassificationData(X[:15], y[:15], X[15:], y[15:], n_classes=2)
    >>> data.n_features, data.n_train, data.n_test
    (3, 15, 5)
    >>> data.classes, data.class_names
    ((0, 1), ('0', '1'))
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    p_true_test: np.ndarray | None = None
    class_names: tuple[str, ...] | None = None
    name: str = "custom"
    meta: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    coords_train: np.ndarray | None = None
    coords_test: np.ndarray | None = None
    classes: tuple[Any, ...] | None = None
    groups_train: np.ndarray | None = None
    groups_test: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: validated copies replace the inputs
        n_classes = check_int(self.n_classes, "n_classes", minimum=2, maximum=MAX_CLASSES)
        X_train = as_float_matrix(self.X_train, "X_train")
        if X_train.shape[1] == 0:
            raise InvalidInputError(
                f"X_train must have at least one feature column, got shape {X_train.shape}")
        X_test = as_float_matrix(self.X_test, "X_test", n_features=X_train.shape[1])
        y_train = as_labels(self.y_train, "y_train", n_classes, n_rows=X_train.shape[0])
        y_test = as_labels(self.y_test, "y_test", n_classes, n_rows=X_test.shape[0])
        present = np.unique(y_train)
        if present.size < 2:
            raise InvalidInputError(
                f"y_train must contain at least two classes, got only {present.tolist()}"
            )
        p_true = self.p_true_test
        if p_true is not None:
            p_true = as_probabilities(p_true, "p_true_test", n_rows=X_test.shape[0],
                                      n_classes=n_classes).astype(np.float64)
        classes = check_classes(self.classes, n_classes)
        names = self.class_names
        if names is None:
            names = tuple(str(c) for c in classes)
        if isinstance(names, (str, bytes)) or not isinstance(names, Iterable) \
                or len(tuple(names)) != n_classes:
            raise InvalidInputError(
                f"class_names must hold one name per class ({n_classes}), got {_show(names)}"
            )
        if not isinstance(self.name, str):
            raise InvalidTypeError(f"name must be a str, got {_show(self.name)}")
        if not isinstance(self.meta, Mapping):
            raise InvalidTypeError(f"meta must be a mapping, got {_show(self.meta)}")
        set_(self, "n_classes", n_classes)
        set_(self, "X_train", _frozen(X_train))
        set_(self, "X_test", _frozen(X_test))
        set_(self, "y_train", _frozen(y_train))
        set_(self, "y_test", _frozen(y_test))
        set_(self, "p_true_test", _frozen(p_true))
        set_(self, "class_names", tuple(str(n) for n in names))
        set_(self, "classes", classes)
        set_(self, "meta", dict(self.meta))
        set_(self, "coords_train", _frozen(_check_coords(self.coords_train, "coords_train",
                                                          X_train.shape[0])))
        set_(self, "coords_test", _frozen(_check_coords(self.coords_test, "coords_test",
                                                         X_test.shape[0])))
        set_(self, "groups_train", _frozen(check_groups(self.groups_train, "groups_train",
                                                        X_train.shape[0])))
        set_(self, "groups_test", _frozen(check_groups(self.groups_test, "groups_test",
                                                       X_test.shape[0])))

    @property
    def n_features(self) -> int:
        """D, the number of input features."""
        return self.X_train.shape[1]

    @property
    def n_train(self) -> int:
        return self.X_train.shape[0]

    @property
    def n_test(self) -> int:
        return self.X_test.shape[0]

    def __repr__(self) -> str:
        truth = "known" if self.p_true_test is not None else "unknown"
        return (
            f"ClassificationData(name={self.name!r}, n_train={self.n_train}, "
            f"n_test={self.n_test}, n_features={self.n_features}, "
            f"n_classes={self.n_classes}, p_true_test={truth})"
        )
