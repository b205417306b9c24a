"""Users' own data: arrays, CSV files and hyperspectral cubes into :class:`ClassificationData`."""

from __future__ import annotations

import dataclasses
import lzma
import math
import numbers
import os
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from uqzoo._limits import MAX_DEFLATE_RATIO, MAX_SKIPROWS
from uqzoo._validation import (
    _show,
    as_array,
    as_float_matrix,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_seed,
)
from uqzoo.datasets import _splits
from uqzoo.datasets._base import MAX_CLASSES, ClassificationData, check_groups
from uqzoo.datasets._standardize import (
    check_test_size,
    stratified_split,
    warn_if_float32_loses_precision,
)
from uqzoo.datasets._standardize import standardize as _standardize
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError

__all__ = ["from_arrays", "from_csv", "from_hsi"]


def _as_array(value: object, name: str) -> np.ndarray:
    return as_array(value, name, "a rectangular numeric array")


def _missing_labels(name: str) -> InvalidInputError:
    return InvalidInputError(
        f"{name} must not hold missing labels (None or NaN); drop those rows or give them a "
        "label first"
    )


def _plain_values(arr: np.ndarray, name: str) -> np.ndarray:
    """A 1-D label array as one plain kind: bool, integer, finite float64 or str."""
    kind = arr.dtype.kind
    if kind == "S":
        try:
            arr = np.char.decode(arr, "utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{name} holds byte strings that are not UTF-8") from exc
    elif kind == "O":
        arr = _plain_objects(arr, name)
    kind = arr.dtype.kind
    if kind == "f":
        if np.isnan(arr).any():
            raise _missing_labels(name)
        if np.isinf(arr).any():
            raise InvalidInputError(f"{name} must hold finite labels, found an infinite one")
        arr = arr.astype(np.float64, copy=False)
    if kind not in "biufU":
        raise InvalidTypeError(
            f"{name} must hold class labels that are str, int, float or bool; got dtype "
            f"{arr.dtype}"
        )
    return arr


def _plain_objects(arr: np.ndarray, name: str) -> np.ndarray:
    """An object array of labels (pandas columns, lists of str) as a typed array."""
    import pandas as pd

    if arr.size and np.asarray(pd.isna(arr)).any():   # None, NaN, pd.NA, NaT
        raise _missing_labels(name)
    items = [v.item() if isinstance(v, np.generic) else v for v in arr.tolist()]
    if all(isinstance(v, str) for v in items):
        return np.array(items, dtype=str)
    if all(isinstance(v, bool) for v in items):
        return np.array(items, dtype=bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        try:
            return np.array(items, dtype=np.int64)
        except OverflowError as exc:
            raise InvalidInputError(f"{name} holds integer labels beyond 64 bits") from exc
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        return np.array(items, dtype=np.float64)
    kinds = sorted({type(v).__name__ for v in items})
    raise InvalidTypeError(
        f"{name} must hold labels of one kind (all str, all numbers or all bool), got types "
        f"{kinds}"
    )


def _label_values(y: object, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Labels as a plain 1-D array, and the order a pandas Categorical gives them.

    Returns
    -------
    values : ndarray of shape (N,)
        dtype kind ``b``, ``i``/``u``, ``f`` (finite) or ``U``.
    order : ndarray or None
        For a pandas Categorical (or categorical Series): the categories that
        occur in ``y``, in category order; None otherwise (sorted order).
    """
    import pandas as pd

    if y is None or isinstance(y, (str, bytes, Mapping)):
        raise InvalidTypeError(f"{name} must be a 1-D array of class labels, got {_show(y)}")
    if isinstance(getattr(y, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(y)
        if (cat.codes < 0).any():
            raise _missing_labels(name)
        categories = _plain_values(np.asarray(cat.categories.to_numpy()), name)
        # Unused categories are dropped (as remove_unused_categories): a class
        # with no example at all cannot be trained or judged.
        return categories[cat.codes], categories[np.unique(cat.codes)]
    arr = as_array(y, name, "a 1-D array of class labels")
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be 1-D (one label per row), got shape {arr.shape}")
    return _plain_values(arr, name), None


def _preview(values: np.ndarray, limit: int = 8) -> str:
    """A few labels for an error message, as Python scalars."""
    shown = [v.item() if isinstance(v, np.generic) else v for v in values[:limit]]
    return str(shown)[:-1] + (", ...]" if len(values) > limit else "]")


def _codes(values: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """The index in ``classes`` of each label (every label is known to be there)."""
    sorter = np.argsort(classes, kind="stable")
    pos = np.searchsorted(classes, values, sorter=sorter)
    return sorter[np.minimum(pos, classes.shape[0] - 1)].astype(np.int64)


def _encode_labels(y: object, y_test: object, *, n_rows: int, n_test_rows: int | None,
                   n_classes: object, class_names: Sequence[str] | None, y_name: str
                   ) -> tuple[np.ndarray, np.ndarray | None, tuple, int]:
    """Map any labels to classes 0..K-1, as scikit-learn's LabelEncoder does.

    Classes are the distinct training labels in sorted order (a pandas
    Categorical: category order). Two conventions are kept from before the
    encoding existed: integer labels within 0..K-1 for a declared K
    (``n_classes``, or the length of ``class_names``) are class indices, so
    that empty classes can be declared; and ``class_names`` given with
    string labels name those labels and fix their order.

    Returns
    -------
    y_codes, y_test_codes : int64 arrays (the second None without ``y_test``)
    classes : tuple
        The original label of each class, plain Python scalars.
    n_classes : int
    """
    values, order = _label_values(y, y_name)
    if values.shape[0] != n_rows:
        raise InvalidInputError(
            f"{y_name} must have one label per row of X ({n_rows}), got {values.shape[0]}"
        )
    test_values = None
    if y_test is not None:
        test_values, _ = _label_values(y_test, "y_test")
        if n_test_rows is not None and test_values.shape[0] != n_test_rows:
            raise InvalidInputError(
                f"y_test must have one label per row of X_test ({n_test_rows}), got "
                f"{test_values.shape[0]}"
            )
        if (values.dtype.kind == "U") != (test_values.dtype.kind == "U"):
            raise InvalidTypeError(
                f"y_test holds labels of dtype {test_values.dtype} but {y_name} holds "
                f"{values.dtype}: both must be strings, or both numbers/booleans"
            )
    if n_classes is not None:
        n_classes = check_int(n_classes, "n_classes", minimum=2, maximum=MAX_CLASSES)
    names = None if class_names is None else [str(c) for c in class_names]
    seen = np.unique(values)
    if seen.size < 2:
        raise InvalidInputError(
            f"{y_name} must hold at least two distinct labels (classes) to train on, got "
            f"{_preview(seen) if seen.size else 'none'}"
        )
    if test_values is not None:
        unseen = np.setdiff1d(np.unique(test_values), seen)
        if unseen.size:
            raise InvalidInputError(
                f"y_test holds labels {_preview(unseen)} that the training labels {y_name} "
                f"do not; every test class must appear in training, which has "
                f"{_preview(seen)}"
            )
    declared = n_classes if n_classes is not None else (
        len(names) if names is not None else None)
    integers = values.dtype.kind in "iu" and (test_values is None
                                              or test_values.dtype.kind in "iu")
    if values.dtype.kind == "U" and names is not None:
        if len(set(names)) != len(names):
            raise InvalidInputError(f"class_names must be distinct, got {names}")
        unknown = np.setdiff1d(seen, np.array(names))
        if unknown.size:
            raise InvalidInputError(
                f"{y_name} holds labels {_preview(unknown)} that are not in class_names {names}"
            )
        if n_classes is not None and n_classes != len(names):
            raise InvalidInputError(
                f"n_classes={n_classes} does not match the {len(names)} class_names {names}"
            )
        classes = np.array(names)
    elif integers and declared is not None and seen[0] >= 0 and seen[-1] < declared:
        # Class indices already: keep them, so that declared classes may be empty.
        empty = np.setdiff1d(np.arange(declared), seen)
        if n_classes is None and empty.size:
            # Extra names alone are more often a mistake (a name too many) than a
            # class meant to stay empty: only n_classes declares one.
            raise InvalidInputError(
                f"class_names holds {len(names or ())} names {names} but {y_name} holds "
                f"{seen.size} classes {_preview(seen)}: no row has class "
                f"{_preview(empty)}; give one name per class, or declare the empty "
                f"class(es) with n_classes={declared}")
        classes = np.arange(declared)
    else:
        classes = seen if order is None else order
        if n_classes is not None and n_classes != classes.shape[0]:
            raise InvalidInputError(
                f"n_classes={n_classes} does not match the {classes.shape[0]} distinct labels "
                f"of {y_name} {_preview(classes)}; n_classes may exceed that only when the "
                f"labels are the integers 0..n_classes-1"
            )
        if names is not None and len(names) != classes.shape[0]:
            raise InvalidInputError(
                f"class_names must hold one name per class: {y_name} has "
                f"{classes.shape[0]} distinct labels {_preview(classes)}, got {len(names)} "
                f"names {names}"
            )
    y_codes = _codes(values, classes)
    test_codes = None if test_values is None else _codes(test_values, classes)
    return y_codes, test_codes, tuple(v.item() for v in classes), int(classes.shape[0])


def from_arrays(X: object, y: object, *, X_test: object = None, y_test: object = None,
                test_size: float = 0.25, seed: int = 0, n_classes: int | None = None,
                class_names: Sequence[str] | None = None, standardize: bool = True,
                p_true_test: object = None, name: str = "custom", groups: object = None,
                groups_test: object = None, split: str = "stratified") -> ClassificationData:
    """Build a :class:`ClassificationData` from arrays.

    Labels of any kind are encoded as scikit-learn's ``LabelEncoder`` does:
    the distinct labels of ``y``, sorted, become classes 0..K-1 and are kept
    as ``data.classes``, so labels {5, 6} give two classes, not seven. Without
    ``X_test``, a seeded stratified split holds out ``test_size`` of each
    class; with ``split="groups"`` whole groups (hospitals, sites: rows that
    share conditions) are held out instead, so the test set is a shift to
    groups the model never saw. Features are standardised with training
    statistics, computed in float64 (``meta["mean"]``, ``meta["scale"]``),
    unless ``standardize=False``.

    Parameters
    ----------
    X : array of shape (N, D)
        Finite numeric features, D >= 1.
    y : array of shape (N,)
        Labels: int, str, bool or float (no NaN/None), or a pandas
        Categorical (its category order is the class order; unused
        categories are dropped). At least two distinct labels.
    X_test, y_test : arrays of shape (N_test, D) and (N_test,), optional
        A given test set; then ``X``, ``y`` are all training data, and every
        label of ``y_test`` must occur in ``y``.
    test_size : float in (0, 1)
        Held-out fraction per class when no test set is given; with
        ``split="groups"`` the share of the groups held out,
        ``round(test_size * G)`` of G groups (at least one, at most G − 1).
    seed : int
        Seed of the split.
    n_classes : int, optional
        K. With integer labels in 0..n_classes-1 the labels are the class
        indices and classes without examples may be declared; with any other
        labels it must equal the number of distinct labels.
    class_names : sequence of str, optional
        Display names, one per class in class order. With string labels they
        may instead list the labels themselves, in the order wanted (labels
        missing from ``y`` then become declared, empty classes).
    standardize : bool
        Centre and scale features with training statistics.
    p_true_test : array of shape (N_test, K), optional
        Known true class probabilities of the test points; only with ``X_test``.
    name : str
        Name of the data set.
    groups : array of shape (N,), optional
        The group of every row of ``X`` (integer or string labels). Kept as
        ``groups_train`` / ``groups_test``, so :func:`uqzoo.evaluate` reports
        metrics per test group.
    groups_test : array of shape (N_test,), optional
        The group of every row of a given ``X_test`` (with ``X_test`` only).
    split : {"stratified", "groups"}
        How the test set is held out when no ``X_test`` is given: a seeded
        stratified split of rows, or whole groups chosen by ``seed`` (needs
        ``groups``).

    Returns
    -------
    ClassificationData
        ``classes`` holds the original labels, ``class_names`` their display
        strings. With ``split="groups"``, ``meta["test_groups"]`` lists the
        held-out groups.

    Raises
    ------
    InvalidInputError
        ``split="groups"`` without ``groups``, with a given ``X_test``, with
        one group only, or when the held-out groups take every row of a class
        (it would have no training rows).

    Warns
    -----
    uqzoo.errors.DataWarning
        With ``standardize=False``, when features are so large (above 1e15)
        or so offset from zero that float32 no longer resolves their spread.

    Example
    -------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> data = uz.datasets.from_arrays(X, np.where(X[:, 0] > 0, "yes", "no"), seed=0)
    >>> data.n_train, data.n_test, data.classes
    (30, 10, ('no', 'yes'))

    Whole groups held out (four sites, one of them for testing):

    >>> site = np.repeat(["a", "b", "c", "d"], 10)
    >>> shifted = uz.datasets.from_arrays(X, X[:, 0] > 0, groups=site, split="groups", seed=0)
    >>> shifted.meta["test_groups"], shifted.groups_test.tolist() == ["c"] * 10
    (['c'], True)
    """
    return _from_arrays(X, y, X_test=X_test, y_test=y_test, test_size=test_size, seed=seed,
                        n_classes=n_classes, class_names=class_names,
                        standardize=standardize, p_true_test=p_true_test, name=name,
                        groups=groups, groups_test=groups_test, split=split)


# How from_arrays and from_csv hold out a test set when none is given.
ARRAY_SPLITS = ("stratified", "groups")


def _group_split(y: np.ndarray, groups: np.ndarray, test_size: float, seed: int,
                describe: Callable[[int], str] = str) -> tuple[np.ndarray, np.ndarray, list]:
    """(train rows, test rows, held-out groups): whole groups to test, chosen by ``seed``.

    ``round(test_size * G)`` of the G distinct groups, at least one and at most
    G − 1, are held out. ``describe`` names a class code in messages.
    """
    names = np.unique(groups)
    if names.size < 2:
        raise InvalidInputError(
            f"split='groups' needs at least two groups (one to train on, one to test), got "
            f"only {_preview(names)}")
    n_test = min(max(round(test_size * names.size), 1), names.size - 1)
    held = np.sort(np.random.default_rng(seed).permutation(names)[:n_test])
    is_test = np.isin(groups, held)
    train, test = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    lost = sorted(set(np.unique(y[test]).tolist()) - set(np.unique(y[train]).tolist()))
    if lost:
        raise InvalidInputError(
            f"split='groups' with seed={seed} holds out groups {_preview(held)}, which hold "
            f"every row of class(es) {[describe(k) for k in lost]}: no training rows would be "
            "left for them; use another seed or test_size, or regroup")
    return train, test, held.tolist()


def _from_arrays(X, y, *, X_test, y_test, test_size, seed, n_classes, class_names,
                 standardize, p_true_test, name, extra_meta=None,
                 y_name: str = "y", groups: object = None, groups_test: object = None,
                 split: str = "stratified", groups_name: str = "groups") -> ClassificationData:
    seed = check_seed(seed)
    test_size = check_test_size(test_size)
    split = check_choice(split, "split", ARRAY_SPLITS)
    standardize = check_bool(standardize, "standardize")
    if not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str, got {_show(name)}")
    if class_names is not None and (isinstance(class_names, str)
                                    or not isinstance(class_names, Sequence)):
        raise InvalidTypeError(f"class_names must be a sequence of str, got {_show(class_names)}")
    if (X_test is None) != (y_test is None):
        raise InvalidInputError("X_test and y_test must be given together (or neither)")
    X32 = as_float_matrix(X, "X")
    if X32.shape[1] == 0:
        raise InvalidInputError(
            f"X must have at least one feature column, got shape {X32.shape}")
    # Validated above; standardise from float64 so that large offsets keep
    # their spread (float32 first would round 1e8 + u, u < 4, to 1e8).
    X64 = np.asarray(X, dtype=np.float64)
    X_te32 = None if X_test is None else as_float_matrix(X_test, "X_test",
                                                         n_features=X32.shape[1])
    y, y_te, classes, n_classes = _encode_labels(
        y, y_test, n_rows=X32.shape[0], n_test_rows=None if X_te32 is None else X_te32.shape[0],
        n_classes=n_classes, class_names=class_names, y_name=y_name)
    train: np.ndarray | None = None
    test: np.ndarray | None = None
    row_groups = check_groups(groups, groups_name, X32.shape[0])
    if groups_test is not None and X_test is None:
        raise InvalidInputError(
            "groups_test needs X_test: it names the group of each given test row")
    if split == "groups" and (X_test is not None or row_groups is None):
        raise InvalidInputError(
            "split='groups' holds out whole groups, so it needs groups (each row's group)"
            if X_test is None else
            "split='groups' applies when no X_test is given (the split makes the test set)")
    held: list | None = None
    if X_test is None:
        if p_true_test is not None:
            raise InvalidInputError(
                "p_true_test needs X_test and y_test: its rows must match given test points"
            )
        if split == "groups":
            assert row_groups is not None
            train, test, held = _group_split(
                y, row_groups, test_size, seed,
                describe=lambda k: classes[k] if classes is not None else k)
        else:
            train, test = stratified_split(y, test_size, seed)
        X_train, y_train, X_te, y_te = X64[train], y[train], X64[test], y[test]
        groups_tr = None if row_groups is None else row_groups[train]
        groups_te = None if row_groups is None else row_groups[test]
    else:
        X_train, y_train = X64, y
        X_te = np.asarray(X_test, dtype=np.float64)
        groups_tr = row_groups
        groups_te = check_groups(groups_test, "groups_test", X_te32.shape[0]) \
            if X_te32 is not None and groups_test is not None else None
    assert y_te is not None
    meta = {"options": {"test_size": test_size if X_test is None else None, "seed": seed,
                        "standardize": standardize, "split": split}, **(extra_meta or {})}
    if held is not None:
        meta["test_groups"] = held
    if train is not None:
        meta["train_index"], meta["test_index"] = train, test
    if standardize:
        X_train, X_te, stats = _standardize(X_train, X_te)
        meta.update(stats)
    else:
        warn_if_float32_loses_precision(X_train, X_te, stacklevel=3)
    meta["standardized"] = standardize
    return ClassificationData(X_train=X_train, y_train=y_train, X_test=X_te, y_test=y_te,
                              n_classes=n_classes, p_true_test=p_true_test,
                              class_names=None if class_names is None else tuple(class_names),
                              name=name, meta=meta, classes=classes,
                              groups_train=groups_tr, groups_test=groups_te)


def _check_path(path: object, name: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"{name} must be a file path, got {_show(path)}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileFormatError(f"{name}: no such file {path!r}")
    return path


def _check_skiprows(skiprows: object) -> None:
    """Bound pandas.read_csv's ``skiprows`` (a count, or the row numbers to skip)."""
    if skiprows is None or callable(skiprows):
        return
    if isinstance(skiprows, numbers.Integral) and not isinstance(skiprows, bool):
        count = int(skiprows)
    elif isinstance(skiprows, (list, tuple, set, range, np.ndarray)):
        count = len(skiprows)
    else:
        return                                   # pandas says what it expects
    if count > MAX_SKIPROWS:
        raise InvalidInputError(
            f"read_csv option skiprows must skip at most {MAX_SKIPROWS:,} rows (pandas keeps "
            f"every skipped row number in memory), got {count:,}")


def _header_names(pd: Any, path: str, options: Mapping[str, object], frame: Any) -> list[str]:
    """The column names as the file writes them, before pandas renames repeats.

    Only for the default header (the first row read); with ``names`` or
    another ``header`` the frame's own columns are the names.
    """
    if "names" in options or options.get("header", "infer") not in ("infer", 0):
        return [str(c) for c in frame.columns]
    raw = pd.read_csv(path, **{**options, "header": None, "nrows": 1, "dtype": str,
                               "usecols": None, "index_col": None})
    if raw.shape[0] == 0:
        return [str(c) for c in frame.columns]
    return [str(v) for v in raw.iloc[0].tolist()]


# read_csv options that make it return a TextFileReader instead of a DataFrame.
_READER_OPTIONS = ("chunksize", "iterator")


def from_csv(path: object, target: str, *, X_test: object = None, y_test: object = None,
             test_size: float = 0.25, seed: int = 0, n_classes: int | None = None,
             class_names: Sequence[str] | None = None, standardize: bool = True,
             p_true_test: object = None, name: str | None = None,
             group_column: str | None = None, split: str = "stratified",
             **read_csv_options: object) -> ClassificationData:
    """Load a CSV file with one row per example and a ``target`` column.

    Every other column is a feature and must be numeric with no missing
    values. The target column's labels are encoded as in :func:`from_arrays`
    (distinct labels sorted, or a categorical column's category order, become
    classes 0..K-1; the labels are kept in ``data.classes``). Parameters after
    ``target`` are those of :func:`from_arrays`; ``read_csv_options`` go to
    :func:`pandas.read_csv`, except ``chunksize`` and ``iterator``, which make
    it return a reader instead of a table.

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    target : str
        Name of the label column.
    group_column : str, optional
        Name of a column that holds each row's group (a hospital, a site;
        integer or string labels). It is not a feature; the data keep it as
        ``groups_train`` / ``groups_test``, and ``split="groups"`` holds out
        whole groups (see :func:`from_arrays`).
    split : {"stratified", "groups"}
        As :func:`from_arrays`; ``"groups"`` needs ``group_column``.

    Returns
    -------
    ClassificationData
        ``meta["feature_names"]`` lists the feature columns in order;
        ``meta["group_column"]`` names the group column when there is one.

    Warns
    -----
    uqzoo.errors.DataWarning
        As :func:`from_arrays`, with ``standardize=False``.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.from_csv("penguins.csv", target="species")  # doctest: +SKIP
    """
    import pandas as pd

    path = _check_path(path, "path")
    if not isinstance(target, str):
        raise InvalidTypeError(f"target must be a column name (str), got {_show(target)}")
    for option in _READER_OPTIONS:
        if option in read_csv_options:
            raise InvalidInputError(
                f"from_csv does not accept the pandas.read_csv option {option}="
                f"{_show(read_csv_options[option])}: it makes read_csv return a reader, not a "
                "table; read the whole file (or load it with pandas and call from_arrays)"
            )
    _check_skiprows(read_csv_options.get("skiprows"))
    # A file that is not what its compression option says fails inside the
    # decompressor, each with its own exception type.
    unreadable = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError,
                  ValueError, OSError, EOFError, zipfile.BadZipFile, tarfile.TarError,
                  lzma.LZMAError, zlib.error)
    try:
        frame = pd.read_csv(path, **read_csv_options)
        header = _header_names(pd, path, read_csv_options, frame)
    except TypeError as exc:
        raise InvalidInputError(f"unknown option for pandas.read_csv: {exc}") from exc
    except unreadable as exc:
        given = read_csv_options.get("compression")
        how = f" with compression={given!r}" if given is not None else ""
        reason = " ".join(str(exc).split())            # one line, whatever the decompressor said
        raise FileFormatError(f"cannot read {path!r} as CSV{how}: {reason}") from exc
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        # pandas renames a second 'label' to 'label.1', which would then be a feature.
        raise InvalidInputError(
            f"{path!r} names column(s) {repeated} more than once; every column needs its own "
            "name (pandas would rename the second one and use it as a feature)")
    if target not in frame.columns:
        raise InvalidInputError(
            f"target={target!r} is not a column of {path!r}; columns are {list(frame.columns)}"
        )
    if split == "groups" and group_column is None:
        raise InvalidInputError("split='groups' needs group_column, the column naming each "
                                "row's group")
    if group_column is not None:
        if not isinstance(group_column, str):
            raise InvalidTypeError(
                f"group_column must be a column name (str), got {_show(group_column)}")
        if group_column not in frame.columns or group_column == target:
            raise InvalidInputError(
                f"group_column={group_column!r} is not a feature column of {path!r}; columns "
                f"are {list(frame.columns)} (target={target!r})")
    if frame.shape[0] == 0:
        raise InvalidInputError(f"{path!r} holds no data rows")
    not_features = [target] if group_column is None else [target, group_column]
    features = frame.drop(columns=not_features)
    if features.shape[1] == 0:
        raise InvalidInputError(
            f"{path!r} has no feature columns besides {' and '.join(map(repr, not_features))}")
    groups = None
    if group_column is not None:
        column = frame[group_column]
        if column.isna().any():
            raise InvalidInputError(f"group column {group_column!r} holds missing values")
        if pd.api.types.is_float_dtype(column):
            raise InvalidInputError(
                f"group column {group_column!r} must hold integer or string group labels, "
                "got floats")
        groups = column.to_numpy()
    non_numeric = [str(c) for c in features.columns
                   if not pd.api.types.is_numeric_dtype(features[c])]
    if non_numeric:
        raise InvalidInputError(
            f"feature columns must be numeric; {non_numeric} are not (encode them, e.g. with "
            "pandas.get_dummies, or drop them)"
        )
    missing = [str(c) for c in features.columns if features[c].isna().any()]
    if missing:
        raise InvalidInputError(f"feature columns {missing} hold missing values (NaN)")
    return _from_arrays(features.to_numpy(dtype=np.float64), frame[target], X_test=X_test,
                        y_test=y_test, test_size=test_size, seed=seed, n_classes=n_classes,
                        class_names=class_names, standardize=standardize,
                        p_true_test=p_true_test,
                        name=name if name is not None else os.path.basename(path),
                        extra_meta={"feature_names": tuple(str(c) for c in features.columns),
                                    "source": path,
                                    **({"group_column": group_column}
                                       if group_column is not None else {})},
                        y_name=f"target column {target!r}", groups=groups, split=split,
                        groups_name="groups" if group_column is None
                        else f"group column {group_column!r}")


# -- hyperspectral scenes ------------------------------------------------------------------

# File types, by suffix, that from_hsi reads.
_ARRAY_FILES = (".npz", ".mat", ".npy")
_CUBE_FILES = (*_ARRAY_FILES, ".hdr")
_LABEL_FILES = (*_CUBE_FILES, ".png")

SPLITS = ("stratified", "left-right", "top-bottom", "blocks", "random")
_SPATIAL_SPLITS = ("stratified", "left-right", "top-bottom", "blocks")
# split="stratified" holds out half of each class: a Pd@FAR needs test targets
# (uqzoo._data_checks warns under 20) as much as the fit needs training ones.
_STRATIFIED_TEST_SIZE = 0.5
# The guard band of spatial splits, in pixels. The point-spread function of an
# imaging spectrometer spreads each ground spot mainly into the adjacent pixels,
# so a training pixel one or two pixels from a test pixel shares part of its
# signal (and, through spatial autocorrelation, usually its material); two
# pixels remove that direct overlap while costing few training pixels.
DEFAULT_GUARD = 2
# Blocks of split="blocks" by default: the image cut into a 5 × 5 grid. With
# the default test_size of 0.25 about six blocks test, enough to spread the
# test set over the scene, while blocks stay large next to the guard band
# (which costs training pixels around every test block).
_DEFAULT_GRID = 5


def _largest_guard(fits: Callable[[int], bool], upper: int) -> int | None:
    """The largest guard in [0, upper] with which ``fits`` holds, or None if none does.

    A wider band only drops more training pixels, so ``fits`` is taken as
    monotone and bisected; the guard found is checked, never assumed.
    """
    if upper < 0 or not fits(0):
        return None
    low, high = 0, upper            # fits(low) holds
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _suffix(path: str) -> str:
    return os.path.splitext(path)[1].lower()


def _describe(arrays: Mapping[str, np.ndarray]) -> str:
    """The variables of a file with shapes and dtypes, for error messages."""
    if not arrays:
        return "no arrays"
    return ", ".join(f"{k} {getattr(v, 'shape', '?')} {getattr(v, 'dtype', type(v).__name__)}"
                     for k, v in sorted(arrays.items()))


def _npy_header(handle: Any) -> tuple[tuple[int, ...], np.dtype, int] | None:
    """(shape, dtype, header length) of the .npy array at ``handle``; None if not one."""
    from numpy.lib import format as npy

    start = handle.tell()
    try:
        version = npy.read_magic(handle)
    except ValueError:
        return None
    read_header = npy.read_array_header_1_0 if version == (1, 0) else \
        npy.read_array_header_2_0
    shape, _, dtype = read_header(handle)
    return tuple(shape), dtype, handle.tell() - start


def _check_declared(shape: tuple[int, ...], dtype: np.dtype, available: int,
                    where: str) -> None:
    """Refuse an array whose header declares more data than its file holds.

    np.load allocates the declared shape before reading: a 200-byte .npy that
    claims 36 TiB would end in a MemoryError (or swap the machine) otherwise.
    """
    declared = math.prod(shape) * dtype.itemsize
    if declared > available:
        raise FileFormatError(
            f"cannot read {where}: its array header declares {declared:,} bytes of data but "
            f"the file holds at most {max(available, 0):,}; the file is damaged or was not "
            "written by numpy")


@dataclasses.dataclass(frozen=True)
class _NpzMember:
    """One array of a .npz file, known by its header and read only when picked.

    Every member used to be decompressed when the file was opened: a 1.5 MB
    file holding an unused 1.5 GiB array of zeros then took 1.6 GB.
    """

    path: str
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def load(self) -> np.ndarray:
        try:
            with open(self.path, "rb") as handle, np.load(handle) as archive:
                return np.asarray(archive[self.name])     # allow_pickle stays False
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error) as exc:
            raise FileFormatError(f"cannot read {self.name!r} of {self.path!r}: {exc}") \
                from exc


def _npz_members(path: str) -> dict[str, Any]:
    """The arrays of a .npz file by name, as headers (:class:`_NpzMember`), sizes checked."""
    members: dict[str, Any] = {}
    with open(path, "rb") as handle, zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with archive.open(info) as member:
                header = _npy_header(member)
            if header is None:
                raise FileFormatError(f"{info.filename!r} in {path!r} is not a .npy array")
            shape, dtype, length = header
            if dtype.hasobject:
                raise FileFormatError(f"{info.filename!r} in {path!r} holds Python objects "
                                      "(dtype object); uqzoo reads numeric arrays only")
            # The directory's uncompressed size can be forged; deflate cannot expand
            # more than MAX_DEFLATE_RATIO:1, and a stored member not at all.
            ratio = {zipfile.ZIP_STORED: 1, zipfile.ZIP_DEFLATED: MAX_DEFLATE_RATIO}
            available = info.file_size
            if info.compress_type in ratio:
                available = min(available, info.compress_size * ratio[info.compress_type])
            _check_declared(shape, dtype, available - length, f"{info.filename!r} in {path!r}")
            name = info.filename[:-4]
            members[name] = _NpzMember(path, name, shape, dtype)
    return members


def _loaded(value: Any) -> Any:
    """A picked array: an :class:`_NpzMember` read now, anything else as it is."""
    return value.load() if isinstance(value, _NpzMember) else value


def _read_arrays(path: str, what: str) -> dict[str, Any]:
    """The arrays of a .npz, .mat or .npy file (a .npy holds one, named by the file);
    a .npz's as :class:`_NpzMember` headers, read when picked."""
    suffix = _suffix(path)
    if suffix in (".npz", ".npy"):
        try:
            if suffix == ".npz":
                return _npz_members(path)
            # Open the file here: np.load leaks its handle when the file is damaged.
            with open(path, "rb") as handle:
                header = _npy_header(handle)
                if header is None:
                    raise FileFormatError(f"{path!r} is not a .npy array file")
                shape, dtype, length = header
                _check_declared(shape, dtype, os.fstat(handle.fileno()).st_size - length,
                                repr(path))
                handle.seek(0)
                loaded = np.load(handle)  # allow_pickle stays False
                if not isinstance(loaded, np.ndarray):
                    raise FileFormatError(f"{path!r} is not a .npy array file")
                return {os.path.basename(path)[:-4]: loaded}
        except FileFormatError:
            raise
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise FileFormatError(f"cannot read {path!r} as {suffix}: {exc}") from exc
    if suffix == ".mat":
        import scipy.io

        try:
            raw = scipy.io.loadmat(path)
        except NotImplementedError as exc:  # MATLAB v7.3 files are HDF5
            raise FileFormatError(
                f"cannot read {path!r}: MATLAB v7.3 (HDF5) files are not supported; save "
                "with -v7 or convert to .npz"
            ) from exc
        except Exception as exc:  # scipy raises many kinds on damaged files
            raise FileFormatError(f"cannot read {path!r} as MATLAB .mat: {exc}") from exc
        return {k: v for k, v in raw.items() if not k.startswith("__")}
    allowed = _CUBE_FILES if what == "cube" else _LABEL_FILES
    raise FileFormatError(
        f"{what} {path!r}: unsupported {what} file type {suffix or '(none)'!r}; use "
        f"{', '.join(allowed)}"
    )


def _read_envi(path: str) -> np.ndarray:
    try:
        from spectral import envi
    except ImportError as exc:
        raise ImportError(
            "reading ENVI files needs the optional 'spectral' package: "
            "pip install 'uqzoo[hsi]'"
        ) from exc
    try:
        image = envi.open(path)
        # The header's size, checked against the data file before load() allocates it:
        # a 40 TB header over a small file otherwise ends in a bare MemoryError.
        declared = math.prod(int(n) for n in image.shape) * np.dtype(image.dtype).itemsize
        available = os.path.getsize(image.filename) - int(getattr(image, "offset", 0))
        if declared > available:
            raise FileFormatError(
                f"cannot read ENVI file {path!r}: its header declares {image.shape} "
                f"({declared:,} bytes) but the data file {image.filename!r} holds "
                f"{max(available, 0):,}; the header or the file is wrong")
        return np.asarray(image.load())
    except FileFormatError:
        raise
    except Exception as exc:  # spectral raises its own and OSError/ValueError kinds
        reason = str(exc) or type(exc).__name__      # a MemoryError has no message
        raise FileFormatError(f"cannot read ENVI file {path!r}: {reason}") from exc


def _read_png(path: str) -> np.ndarray:
    """A grayscale, 1-bit or indexed (palette) PNG as its stored values."""
    # Pillow, not matplotlib.image.imread: imread scales values to [0, 1] and
    # expands a palette into colours, losing the class indices a mask stores.
    from PIL import Image

    try:
        with Image.open(path) as image:
            mode = image.mode
            values = np.array(image.convert("L")) > 0 if mode == "1" else np.array(image)
    except Exception as exc:  # Pillow raises OSError, ValueError and its own kinds
        raise FileFormatError(f"cannot read {path!r} as PNG: {exc}") from exc
    if values.ndim == 3:
        colour = values[..., : min(3, values.shape[2] - (mode in ("LA", "RGBA")))]
        if not np.all(colour == colour[..., :1]):
            raise InvalidInputError(
                f"labels {path!r} is a colour PNG (mode {mode}); a label mask must be "
                "grayscale, 1-bit or indexed (palette), one value per class"
            )
        values = colour[..., 0]  # grey stored as RGB(A); the alpha channel is ignored
    return values


def _pick(arrays: Mapping[str, np.ndarray], key: str | None, *, what: str, key_name: str,
          path: str, fits, fits_text: str) -> tuple[str, np.ndarray]:
    """The array named ``key``, or else the only array that ``fits``."""
    if key is not None:
        if not isinstance(key, str):
            raise InvalidTypeError(f"{key_name} must be a str, got {_show(key)}")
        if key not in arrays:
            raise InvalidInputError(
                f"{key_name}={key!r} is not in {path!r}; it holds {_describe(arrays)}"
            )
        return key, _loaded(arrays[key])
    candidates = sorted(k for k, v in arrays.items() if fits(v))
    if len(candidates) == 1:
        return candidates[0], _loaded(arrays[candidates[0]])
    if not candidates:
        raise InvalidInputError(
            f"{path!r} holds no {fits_text} to use as the {what}; it holds "
            f"{_describe(arrays)}; pass {key_name} to name the array"
        )
    raise InvalidInputError(
        f"cannot tell which array of {path!r} is the {what}: {candidates} are all "
        f"{fits_text} (it holds {_describe(arrays)}); pass {key_name}, e.g. "
        f"{key_name}={candidates[0]!r}"
    )


def _is_numeric_cube(value: object) -> bool:
    return (isinstance(value, (np.ndarray, _NpzMember)) and value.ndim == 3
            and value.dtype.kind in "biuf")


def _load_cube(cube: object, cube_key: str | None
               ) -> tuple[np.ndarray, str | None, dict[str, np.ndarray] | None, str | None]:
    """The cube as an array, its file, the file's arrays (.npz/.mat) and the key used."""
    if not isinstance(cube, (str, os.PathLike)):
        if cube_key is not None:
            raise InvalidInputError(
                f"cube_key={cube_key!r} names an array inside a .npz or .mat file, but cube "
                "is given as an array"
            )
        return _as_array(cube, "cube"), None, None, None
    path = _check_path(cube, "cube")
    if _suffix(path) == ".hdr":
        if cube_key is not None:
            raise InvalidInputError(f"cube_key={cube_key!r} does not apply to an ENVI cube")
        return _read_envi(path), path, None, None
    arrays = _read_arrays(path, "cube")
    key, value = _pick(arrays, cube_key, what="cube", key_name="cube_key", path=path,
                       fits=_is_numeric_cube, fits_text="numeric 3-D arrays (H, W, B)")
    return _as_array(value, "cube"), path, arrays, key


def _labels_from_arrays(arrays: Mapping[str, np.ndarray], key: str | None, path: str,
                        image_shape: tuple[int, ...]) -> tuple[str, np.ndarray]:
    return _pick(arrays, key, what="labels", key_name="labels_key", path=path,
                 fits=lambda v: getattr(v, "shape", None) == image_shape,
                 fits_text=f"2-D arrays of the cube's image shape {image_shape}")


def _is_label_file(labels: object) -> bool:
    """A path-like, or a str that names a file (by suffix, or by existing)."""
    if isinstance(labels, os.PathLike):
        return True
    return isinstance(labels, str) and (_suffix(labels) in _LABEL_FILES
                                        or os.path.isfile(labels))


def _load_labels(labels: object, labels_key: str | None, image_shape: tuple[int, ...],
                 cube_path: str | None, cube_arrays: Mapping[str, np.ndarray] | None
                 ) -> tuple[np.ndarray, str | None, str | None]:
    """The label image, its file (None: an array or the cube's file) and the key used."""
    if _is_label_file(labels):
        path = _check_path(labels, "labels")
        suffix = _suffix(path)
        if suffix in (".hdr", ".png"):
            if labels_key is not None:
                raise InvalidInputError(
                    f"labels_key={labels_key!r} names an array inside a .npz or .mat file; "
                    f"{path!r} holds a single image"
                )
            values = _read_envi(path) if suffix == ".hdr" else _read_png(path)
            if values.ndim == 3 and values.shape[2] == 1:
                values = values[..., 0]         # an ENVI classification image has one band
            return values, path, None
        key, values = _labels_from_arrays(_read_arrays(path, "labels"), labels_key, path,
                                          image_shape)
        return values, path, key
    if isinstance(labels, str):
        if labels_key is not None and labels_key != labels:
            raise InvalidInputError(
                f"labels={labels!r} and labels_key={labels_key!r} name different arrays; "
                "give one"
            )
        labels_key, labels = labels, None
    if labels is not None:
        if labels_key is not None:
            raise InvalidInputError(
                f"labels_key={labels_key!r} names an array inside a file, but labels is "
                "given as an array"
            )
        return _as_array(labels, "labels"), None, None
    if cube_arrays is None:
        where = "an ENVI cube" if cube_path is not None else "an array cube"
        wanted = f"labels_key={labels_key!r}" if labels_key is not None else "labels=None"
        raise InvalidInputError(
            f"{wanted} reads the labels from the cube's .npz/.mat file, but the cube is "
            f"{where}; pass labels as an (H, W) array or a label file "
            f"({', '.join(_LABEL_FILES)})"
        )
    assert cube_path is not None
    key, values = _labels_from_arrays(cube_arrays, labels_key, cube_path, image_shape)
    return _as_array(values, "labels"), None, key


def _label_image(labels: np.ndarray) -> np.ndarray:
    """Labels as a bool mask or an int64 image (floats must hold whole numbers)."""
    kind = labels.dtype.kind
    if kind == "b":
        # Re-made from the bytes: Pillow's 1-bit images give bools stored as 255,
        # which numpy's comparisons and searchsorted do not treat as True.
        return labels.view(np.uint8) != 0
    if kind in "iu":
        if kind == "u" and labels.size and labels.max() > np.iinfo(np.int64).max:
            raise InvalidInputError("labels hold values beyond the int64 range")
        return labels.astype(np.int64)
    if kind == "f":
        if not np.all(np.isfinite(labels)):
            raise InvalidInputError(
                "labels hold NaN or infinite values; mark unlabelled pixels with one integer "
                "value instead (0 by default, see unlabelled)"
            )
        if np.all(labels == np.round(labels)) and (labels.size == 0 or
                                                    np.abs(labels).max() < 2.0**53):
            return labels.astype(np.int64)
        raise InvalidInputError("labels must hold whole numbers (class labels), found "
                                "fractional values")
    raise InvalidTypeError(
        f"labels must be an integer label image or a boolean mask, got dtype {labels.dtype}"
    )


def _class_names_of(class_names: object, values: tuple) -> tuple[str, ...] | None:
    """One display name per label value, from a sequence or a {label: name} mapping."""
    if class_names is None:
        return None
    if isinstance(class_names, Mapping):
        names = {(k.item() if isinstance(k, np.generic) else k): str(v)
                 for k, v in class_names.items()}
        return tuple(names.get(v, str(v)) for v in values)
    if isinstance(class_names, str) or not isinstance(class_names, Sequence):
        raise InvalidTypeError(
            f"class_names must be a sequence of str (one per class) or a mapping "
            f"{{label: name}}, got {_show(class_names)}"
        )
    if len(class_names) != len(values):
        raise InvalidInputError(
            f"class_names must hold one name per class of the label image, in label order: "
            f"it has {len(values)} classes {list(values)}, got {len(class_names)} names "
            f"{[str(c) for c in class_names]}; or pass a mapping {{label: name}}"
        )
    return tuple(str(c) for c in class_names)


def _show_label(value: object, name: str | None) -> str:
    text = repr(value)
    return text if name is None or name == str(value) else f"{text} ({name!r})"


def _unlabelled_hint(unlabelled: int | None, image: np.ndarray) -> str:
    """Advice when dropping the unlabelled value may have dropped a real class."""
    if unlabelled is None or image.dtype == np.bool_:
        return ""
    n = int(np.count_nonzero(image == unlabelled))
    if n == 0:
        return ""
    return (f"; label {unlabelled} marks unlabelled pixels (unlabelled={unlabelled}"
            f"{', the default' if unlabelled == 0 else ''}), and {n} pixels hold it: if "
            f"{unlabelled} is a class (the background of a 0/1 target mask), pass "
            "unlabelled=None")


def _resolve_target(target_class: object, values: tuple, names: tuple[str, ...] | None,
                    unlabelled: int | None, is_mask: bool) -> int:
    """The index in ``values`` of the target class, given as a label or a class name."""
    if isinstance(target_class, np.generic):
        target_class = target_class.item()
    if isinstance(target_class, str):
        if names is not None and target_class in names:
            return names.index(target_class)
        raise InvalidInputError(
            f"target_class={target_class!r} is not a class name"
            + (f"; class_names gives {list(names)}" if names is not None else
               " (name classes with class_names)")
            + f"; or give the label value itself, one of {list(values)}"
        )
    if not isinstance(target_class, (int, float, bool)):
        raise InvalidTypeError(
            f"target_class must be a label value of the label image or a class name, got "
            f"{_show(target_class)}"
        )
    if is_mask and target_class in (0, 1):
        target_class = bool(target_class)
    for index, value in enumerate(values):
        if value == target_class and (is_mask or not isinstance(target_class, bool)):
            return index
    if unlabelled is not None and not is_mask and target_class == unlabelled:
        raise InvalidInputError(
            f"target_class={target_class!r} is the unlabelled value (unlabelled="
            f"{unlabelled}); pass unlabelled=None to make {unlabelled} a class"
        )
    raise InvalidInputError(
        f"target_class={target_class!r} is not a label of the label image; its labelled "
        f"pixels hold {list(values)}"
    )


def _check_option_applies(value: object, name: str, split: str, splits: tuple[str, ...]
                          ) -> bool:
    """Whether an option was given; an error if it was given for a split that ignores it."""
    if value is None:
        return False
    if split not in splits:
        raise InvalidInputError(
            f"{name}={_show(value)} applies to split {' or '.join(repr(s) for s in splits)}, "
            f"not split={split!r}"
        )
    return True


def _block_size(value: object, image_shape: tuple[int, int]) -> tuple[int, int]:
    if value is None:
        return (-(-image_shape[0] // _DEFAULT_GRID), -(-image_shape[1] // _DEFAULT_GRID))
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return (check_int(value[0], "block_size height", minimum=1),
                check_int(value[1], "block_size width", minimum=1))
    if isinstance(value, (tuple, list)):
        raise InvalidInputError(f"block_size must be an int or (height, width), got {value!r}")
    side = check_int(value, "block_size", minimum=1)
    return (side, side)


def from_hsi(cube: object, labels: object = None, *, cube_key: str | None = None,
             labels_key: str | None = None, unlabelled: int | None = 0,
             target_class: object = None, split: str = "stratified",
             split_fraction: float | None = None, test_size: float | None = None,
             block_size: int | tuple[int, int] | None = None, guard: int | None = None,
             seed: int = 0, class_names: Sequence[str] | Mapping | None = None,
             standardize: bool = True, name: str | None = None,
             region_groups: bool = False) -> ClassificationData:
    """A hyperspectral cube and its label image as per-pixel classification data.

    Parameters
    ----------
    cube : array of shape (H, W, B) or path
        The image, or a ``.npz`` / MATLAB ``.mat`` / ``.npy`` file holding it,
        or an ENVI ``.hdr`` header (needs the optional ``spectral`` package).
        In a ``.npz``/``.mat`` file the cube is the one numeric 3-D array, or
        the one named by ``cube_key``.
    labels : array of shape (H, W), path, str or None
        The label image: integer labels, or a boolean target mask. A path
        (``.mat``, ``.npz``, ``.npy``, ENVI ``.hdr``, or a grayscale, 1-bit or
        indexed ``.png``) reads it from its own file; in a ``.npz``/``.mat``
        file it is the one 2-D array of the cube's image shape (H, W), or the
        one named by ``labels_key``. None (or a str that is not a file name,
        taken as ``labels_key``) reads it from the cube's own file.
    cube_key, labels_key : str, optional
        Variable names inside the cube's and the labels' ``.npz``/``.mat``
        files; needed only when the shapes do not tell. An error lists the
        variables with their shapes.
    unlabelled : int or None
        The label value of unlabelled pixels, which are dropped. Default 0,
        the convention of most public scenes (Indian Pines, Pavia, Salinas).
        None: every value is a class, as in a 0/1 target mask whose 0 is the
        background. A boolean mask has no unlabelled value (False is
        background). Negative labels are allowed only as this value.
    target_class : label value or str, optional
        Turn a multi-class label image into target (class 1) against
        background (class 0, every other labelled pixel): the label value as
        written in the label image (e.g. 3, not its class index), or its name
        in ``class_names``. ``data.classes`` is then ``(False, True)`` and
        ``data.class_names`` ``("background", <target's name>)``;
        ``meta["target_class"]`` keeps the label value.
    split : {"stratified", "left-right", "top-bottom", "blocks", "random"}
        ``"stratified"`` (default): whole blocks test, about ``test_size``
        (default half) of each class, rare classes served first, seeded, on
        a 5 × 5 grid of blocks, or a 10 × 10 or 20 × 20 one when that puts
        more classes on both sides or brings each class closer to 20 pixels
        on its smaller side: every class trains and tests where the scene
        allows. A half split puts a class that lies on one side of the image
        on that side only (one target pixel of 57 trained in a public
        100 × 100 AVIRIS crop). ``"left-right"``: columns before
        ``split_fraction`` of the
        width train, the rest test. ``"top-bottom"``: the same with rows.
        ``"blocks"``: the image is cut into a grid of ``block_size`` blocks and
        whole blocks (about ``test_size`` of each class, rare classes served
        first, seeded) test. These four spatial splits drop from training
        every pixel within ``guard`` pixels of a test pixel. ``"random"``: a
        seeded stratified split of pixels with ``test_size`` held out;
        **optimistic**, because test pixels have training neighbours that
        share their signal, so accuracy and calibration look better than on a
        new place.
    split_fraction : float in (0, 1), optional
        Where the boundary of ``"left-right"`` / ``"top-bottom"`` lies, as a
        share of the width / height; default 0.5 (column ``W // 2``).
    test_size : float in (0, 1), optional
        Share of each class that tests, for ``"stratified"`` (default 0.5),
        ``"blocks"`` and ``"random"`` (default 0.25).
    block_size : int or (int, int), optional
        Block height and width in pixels for ``"blocks"``; default the image
        cut into a 5 × 5 grid, ``(ceil(H / 5), ceil(W / 5))``.
    guard : int >= 0, optional
        Width of the guard band of spatial splits, in pixels (Chebyshev
        distance): training pixels this close to a test pixel are dropped.
        Default 2: the sensor's point-spread function spreads each ground spot
        into its neighbours, and land cover is spatially autocorrelated, so a
        training pixel next to a test pixel nearly repeats it and makes the
        test optimistic (Hänsch et al. 2017; Lange et al. 2018). Not used by
        ``"random"`` (only 0 is accepted there). A guard that leaves some class
        without a training or a test pixel (any guard of max(H, W) - 1 or more
        does) is an error that names the largest guard that fits the scene.
    seed : int
        Seed of ``"stratified"``, ``"blocks"`` and ``"random"``.
    class_names : sequence of str or mapping, optional
        Display names of the label image's classes: one per class in label
        order (after dropping ``unlabelled``), or a mapping ``{label: name}``
        (labels missing from it show as themselves; labels not in the image
        are ignored). A bool mask defaults to ``("background", "target")``.
    standardize : bool
        Standardise each band with training statistics.
    name : str, optional
        Name of the data set; default the cube's file name, or
        ``"custom-hsi"`` for an array.
    region_groups : bool
        Give every pixel a group, its region of the scene: the block it lies
        in, on the split's grid for ``"blocks"`` and ``"stratified"`` (so the
        test set is whole held-out regions), else on a 5 × 5 grid. Blocks are
        numbered row by row from 0; :func:`uqzoo.evaluate` then reports
        metrics per test region and their median.

    Returns
    -------
    ClassificationData
        ``coords_train``/``coords_test`` the (row, column) of every pixel;
        ``classes`` the label value of each class as written in the label
        image ((1, 2, ...) with the default ``unlabelled=0``; (False, True)
        for a mask or with ``target_class``). ``meta`` holds
        ``"image_shape"`` (H, W); ``"options"`` (every split option as used:
        split, split_fraction, test_size, block_size, guard, seed,
        unlabelled, target_class, standardize); ``"guard_coords"`` (M, 2),
        the labelled pixels dropped by the guard band; ``"class_counts_train"``,
        ``"class_counts_test"``, ``"class_counts_guard"`` per class;
        ``"source"``, ``"labels_source"``, ``"cube_key"``, ``"labels_key"``.

    Raises
    ------
    uqzoo.InvalidInputError
        When a split leaves a class without a training or a test pixel (the
        message names it by its label and suggests another split), when the
        labels hold fewer than two classes, or when a file's variables are
        ambiguous or missing (the message lists them with their shapes).

    Warns
    -----
    uqzoo.errors.DataWarning
        As :func:`from_arrays`, with ``standardize=False``.

    Example
    -------
    A 20 × 20 noise scene with two target patches, split into whole blocks:

    >>> import numpy as np, uqzoo as uz
    >>> cube = np.random.default_rng(0).normal(size=(20, 20, 5))
    >>> mask = np.zeros((20, 20), bool); mask[2:5, 2:5] = mask[13:17, 12:16] = True
    >>> data = uz.datasets.from_hsi(cube, mask, split="blocks", guard=1, seed=0)
    >>> data.classes, data.meta["options"]["block_size"]
    ((False, True), (4, 4))

    References
    ----------
    Hänsch, R., Ley, A., Hellwich, O. (2017). Correct and still wrong: the
    relationship between sampling strategies and the estimation of the
    generalization error. IGARSS 2017, 3672–3675.

    Lange, J., Cavallaro, G., Götz, M., Erlingsson, E., Riedel, M. (2018). The
    influence of sampling methods on pixel-wise hyperspectral image
    classification with 3D convolutional neural networks. IGARSS 2018, 2087–2090.

    Nalepa, J., Myller, M., Kawulok, M. (2019). Validating hyperspectral image
    segmentation. IEEE Geoscience and Remote Sensing Letters 16(8), 1264–1268.
    """
    split = check_choice(split, "split", SPLITS)
    seed = check_seed(seed)
    standardize = check_bool(standardize, "standardize")
    region_groups = check_bool(region_groups, "region_groups")
    if unlabelled is not None:
        unlabelled = check_int(unlabelled, "unlabelled")
    if name is not None and not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str, got {_show(name)}")
    halves = ("left-right", "top-bottom")
    if _check_option_applies(split_fraction, "split_fraction", split, halves):
        split_fraction = check_float(split_fraction, "split_fraction", low=0.0, high=1.0,
                                     low_open=True, high_open=True)
    elif split in halves:
        split_fraction = 0.5
    if _check_option_applies(test_size, "test_size", split, ("stratified", "blocks", "random")):
        test_size = check_test_size(test_size)
    elif split in ("blocks", "random"):
        test_size = 0.25
    elif split == "stratified":
        test_size = _STRATIFIED_TEST_SIZE
    _check_option_applies(block_size, "block_size", split, ("blocks",))
    if guard is None:
        guard = DEFAULT_GUARD if split in _SPATIAL_SPLITS else 0
    guard = check_int(guard, "guard", minimum=0)
    if split == "random" and guard > 0:
        raise InvalidInputError(
            f"guard={guard} applies to the spatial splits {list(_SPATIAL_SPLITS)}: a random "
            "split puts training pixels next to test pixels by design; pass guard=0 or a "
            "spatial split"
        )

    cube_arr, source, cube_arrays, used_cube_key = _load_cube(cube, cube_key)
    if cube_arr.ndim != 3:
        raise InvalidInputError(f"cube must have shape (H, W, B), got shape {cube_arr.shape}")
    if cube_arr.dtype.kind not in "biuf":
        raise InvalidTypeError(f"cube must be numeric, got dtype {cube_arr.dtype}")
    if cube_arr.shape[2] == 0:
        raise InvalidInputError(f"cube must have at least one band, got shape {cube_arr.shape}")
    image_shape = (int(cube_arr.shape[0]), int(cube_arr.shape[1]))
    raw_labels, labels_source, used_labels_key = _load_labels(
        labels, labels_key, image_shape, source, cube_arrays)
    if raw_labels.shape != image_shape:
        where = f" ({labels_source!r})" if labels_source is not None else ""
        raise InvalidInputError(
            f"labels{where} must have the cube's image shape {image_shape}, got "
            f"{raw_labels.shape}"
        )
    image = _label_image(raw_labels)
    is_mask = image.dtype == np.bool_
    if is_mask:
        used = np.ones(image_shape, bool)
    else:
        negative = image[(image < 0) & (image != unlabelled)] if unlabelled is not None \
            else image[image < 0]
        if negative.size:
            raise InvalidInputError(
                f"labels must be >= 0, found {int(negative.min())}; a negative value may "
                "only mark unlabelled pixels (e.g. unlabelled=-1)"
            )
        used = image != unlabelled if unlabelled is not None else np.ones(image_shape, bool)
    rows, cols = np.nonzero(used)
    if rows.size == 0:
        raise InvalidInputError(
            f"labels mark no pixel as labelled: every pixel holds the unlabelled value "
            f"{unlabelled}"
        )
    pixel_labels = image[rows, cols]
    values = tuple(v.item() for v in np.unique(pixel_labels))
    names = _class_names_of(class_names, values)
    if names is None and is_mask:
        names = tuple({False: "background", True: "target"}[v] for v in values)
    if len(values) < 2:
        what = "the boolean mask is all" if is_mask else "the labelled pixels all hold"
        only = _show_label(values[0], None if names is None else names[0])
        raise InvalidInputError(
            f"labels hold a single class: {what} {only}"
            f" ({rows.size} pixels); at least two classes must train"
            f"{_unlabelled_hint(unlabelled, image)}"
        )
    codes = np.searchsorted(np.array(values), pixel_labels).astype(np.int64)
    if target_class is not None:
        target = _resolve_target(target_class, values, names, unlabelled, is_mask)
        target_value = values[target]
        target_name = names[target] if names is not None else str(target_value)
        y = (codes == target).astype(np.int64)        # two labels or more: background too
        classes: tuple = (False, True)
        out_names: tuple[str, ...] | None = ("background", target_name)
        others = [v for v in values if v != target_value]
        shown = [f"the background (labels {others})",
                 f"the target, label {_show_label(target_value, target_name)}"]
    else:
        target_value = None
        y = codes
        classes, out_names = values, names
        shown = [f"label {_show_label(v, None if names is None else names[k])}"
                 for k, v in enumerate(values)]
    n_classes = len(classes)

    code_image = np.full(image_shape, -1, np.int64)
    code_image[rows, cols] = y

    def split_at(width: int) -> tuple:
        """(is_train, is_test, guard_mask, boundary, block) of the split with guard ``width``."""
        boundary = block = None
        if split == "random":
            assert test_size is not None
            train_idx, test_idx = stratified_split(y, test_size, seed)
            is_train = np.zeros(rows.size, bool)
            is_test = np.zeros(rows.size, bool)
            is_train[train_idx] = True
            is_test[test_idx] = True
            return is_train, is_test, np.zeros(image_shape, bool), boundary, block
        if split in halves:
            assert split_fraction is not None
            axis = 1 if split == "left-right" else 0
            size = image_shape[axis]
            boundary = int(np.floor(split_fraction * size))
            test_mask = _splits.half_test_mask(code_image, axis, boundary)
            along = cols if axis == 1 else rows
            for side, members in (("left" if axis else "top", along < boundary),
                                  ("right" if axis else "bottom", along >= boundary)):
                if not members.any():
                    unit = "columns" if axis else "rows"
                    span = (f"{unit} 0..{boundary - 1}" if side in ("left", "top")
                            else f"{unit} {boundary}..{size - 1}")
                    raise InvalidInputError(
                        f"split={split!r} leaves no labelled pixel in the {side} "
                        f"{'half' if split_fraction == 0.5 else 'part'} "
                        f"({span} at split_fraction={split_fraction}); move split_fraction "
                        "or use split='blocks'"
                    )
        elif split == "stratified":
            assert test_size is not None
            test_mask, block = _splits.stratified_test_mask(code_image, test_size, seed,
                                                            guard=width)
        else:
            assert test_size is not None
            block = _block_size(block_size, image_shape)
            test_mask = _splits.blocked_test_mask(code_image, test_size, block, seed,
                                                  guard=width)
        guard_mask = _splits.guard_band(test_mask, width) & (code_image >= 0)
        is_test = test_mask[rows, cols]
        is_train = ~is_test & ~guard_mask[rows, cols]
        return is_train, is_test, guard_mask, boundary, block

    def every_class_on_both_sides(width: int) -> bool:
        is_train, is_test = split_at(width)[:2]
        return bool(np.all(np.bincount(y[is_train], minlength=n_classes) > 0)
                    and np.all(np.bincount(y[is_test], minlength=n_classes) > 0))

    # One rule for the guard band: it must leave every class a training and a test
    # pixel. A band of max(H, W) - 1 pixels around any test pixel covers the whole
    # image, so no wider guard can fit (and a filter that wide would only burn time
    # and memory); within that, a guard that starves a class is refused the same way.
    widest = max(image_shape) - 2
    if guard > max(widest, 0):
        largest = _largest_guard(every_class_on_both_sides, widest)
        raise InvalidInputError(
            f"guard={guard:,} does not fit the {image_shape[0]} × {image_shape[1]} scene: a "
            f"band that wide around a test pixel covers the whole image; "
            + (f"the largest guard that leaves every class a training and a test pixel "
               f"here is {largest}" if largest is not None else
               "no guard leaves every class a training and a test pixel here"))
    is_train, is_test, guard_mask, boundary, block = split_at(guard)
    counts_train = np.bincount(y[is_train], minlength=n_classes)
    counts_test = np.bincount(y[is_test], minlength=n_classes)
    counts_guard = np.bincount(y[~is_train & ~is_test], minlength=n_classes)
    for k in range(n_classes):
        if counts_train[k] and counts_test[k]:
            continue
        side = "training" if counts_train[k] == 0 else "test"
        total = int(counts_train[k] + counts_test[k] + counts_guard[k])
        if split == "random":
            advice = ("a random split needs two labelled pixels of a class; label more "
                      "pixels of it or mark them unlabelled")
        else:
            advice = {"left-right": "try another split_fraction, split='top-bottom' or "
                                    "split='blocks'",
                      "top-bottom": "try another split_fraction, split='left-right' or "
                                    "split='blocks'",
                      "blocks": "try another seed or a smaller block_size",
                      "stratified": "try another seed, or split='blocks' with a smaller "
                                    "block_size"}[split]
            if guard > 0:
                largest = _largest_guard(every_class_on_both_sides, guard - 1)
                if largest is not None:
                    advice += (f", or guard={largest} (the largest guard that leaves every "
                               "class a training and a test pixel here)")
        raise InvalidInputError(
            f"split={split!r} leaves {shown[k]} with no {side} pixel ({total} labelled: "
            f"{counts_train[k]} train, {counts_test[k]} test, {counts_guard[k]} dropped in "
            f"the guard band); every class must train and test: {advice}"
        )
    train, test = np.flatnonzero(is_train), np.flatnonzero(is_test)
    coords = np.stack([rows, cols], axis=1).astype(np.int64)
    pixels = cube_arr[rows, cols]
    X = as_float_matrix(pixels, "cube pixels")
    meta: dict = {
        "options": {"split": split, "split_fraction": split_fraction, "test_size": test_size,
                    "block_size": block, "guard": guard, "seed": seed,
                    "unlabelled": unlabelled, "target_class": target_value,
                    "standardize": standardize},
        "image_shape": image_shape,
        "source": source, "labels_source": labels_source,
        "cube_key": used_cube_key, "labels_key": used_labels_key,
        "guard_coords": np.argwhere(guard_mask).astype(np.int64),
        "class_counts_train": counts_train, "class_counts_test": counts_test,
        "class_counts_guard": counts_guard,
    }
    if boundary is not None:
        meta["split_boundary"] = boundary
    if target_value is not None:
        meta["target_class"] = target_value
    if standardize:
        # From the raw pixel values (float64 inside), not the float32 copy.
        X_train, X_test, stats = _standardize(pixels[train], pixels[test])
        meta.update(stats)
    else:
        X_train, X_test = X[train], X[test]
        warn_if_float32_loses_precision(pixels[train], pixels[test], stacklevel=2)
    meta["standardized"] = standardize
    if name is None:
        name = os.path.basename(source) if source is not None else "custom-hsi"
    region = None
    if region_groups:
        region_block = block if block is not None else _block_size(None, image_shape)
        region = _splits.block_grid(image_shape, region_block)[rows, cols]
        meta["region_block_size"] = region_block
    return ClassificationData(X_train=X_train, y_train=y[train], X_test=X_test,
                              y_test=y[test], n_classes=n_classes, class_names=out_names,
                              name=name, meta=meta, coords_train=coords[train],
                              coords_test=coords[test], classes=classes,
                              groups_train=None if region is None else region[train],
                              groups_test=None if region is None else region[test])
