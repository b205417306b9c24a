"""Users' own data: arrays, CSV files and hyperspectral cubes into :class:`ClassificationData`."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping, Sequence

import numpy as np

from uqzoo._validation import _show, as_float_matrix, check_choice, check_int, check_seed
from uqzoo.datasets._base import MAX_CLASSES, ClassificationData
from uqzoo.datasets._standardize import (
    check_test_size,
    stratified_split,
    warn_if_float32_loses_precision,
)
from uqzoo.datasets._standardize import standardize as _standardize
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError

__all__ = ["from_arrays", "from_csv", "from_hsi"]


def _check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidTypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def _as_array(value: object, name: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except Exception as exc:  # ragged nested lists and the like
        raise InvalidTypeError(f"{name} must be a rectangular numeric array, got "
                               f"{_show(value)}") from exc


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
    try:
        arr = np.asarray(y)
    except Exception as exc:  # ragged nested lists and the like
        raise InvalidTypeError(f"{name} must be a 1-D array of class labels, got "
                               f"{_show(y)}") from exc
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
                p_true_test: object = None, name: str = "custom") -> ClassificationData:
    """Build a :class:`ClassificationData` from arrays.

    Labels of any kind are encoded as scikit-learn's ``LabelEncoder`` does:
    the distinct labels of ``y``, sorted, become classes 0..K-1 and are kept
    as ``data.classes``, so labels {5, 6} give two classes, not seven. Without
    ``X_test``, a seeded stratified split holds out ``test_size`` of each
    class. Features are standardised with training statistics, computed in
    float64 (``meta["mean"]``, ``meta["scale"]``), unless ``standardize=False``.

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
        Held-out fraction per class when no test set is given.
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

    Returns
    -------
    ClassificationData
        ``classes`` holds the original labels, ``class_names`` their display
        strings.

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
    """
    return _from_arrays(X, y, X_test=X_test, y_test=y_test, test_size=test_size, seed=seed,
                        n_classes=n_classes, class_names=class_names,
                        standardize=standardize, p_true_test=p_true_test, name=name)


def _from_arrays(X, y, *, X_test, y_test, test_size, seed, n_classes, class_names,
                 standardize, p_true_test, name, extra_meta=None,
                 y_name: str = "y") -> ClassificationData:
    seed = check_seed(seed)
    test_size = check_test_size(test_size)
    standardize = _check_bool(standardize, "standardize")
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
    if X_test is None:
        if p_true_test is not None:
            raise InvalidInputError(
                "p_true_test needs X_test and y_test: its rows must match given test points"
            )
        train, test = stratified_split(y, test_size, seed)
        X_train, y_train, X_te, y_te = X64[train], y[train], X64[test], y[test]
    else:
        X_train, y_train = X64, y
        X_te = np.asarray(X_test, dtype=np.float64)
        train = test = None
    meta = {"options": {"test_size": test_size if X_test is None else None, "seed": seed,
                        "standardize": standardize}, **(extra_meta or {})}
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
                              class_names=class_names, name=name, meta=meta, classes=classes)


def _check_path(path: object, name: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"{name} must be a file path, got {_show(path)}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileFormatError(f"{name}: no such file {path!r}")
    return path


# read_csv options that make it return a TextFileReader instead of a DataFrame.
_READER_OPTIONS = ("chunksize", "iterator")


def from_csv(path: object, target: str, *, X_test: object = None, y_test: object = None,
             test_size: float = 0.25, seed: int = 0, n_classes: int | None = None,
             class_names: Sequence[str] | None = None, standardize: bool = True,
             p_true_test: object = None, name: str | None = None,
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

    Returns
    -------
    ClassificationData
        ``meta["feature_names"]`` lists the feature columns in order.

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
    try:
        frame = pd.read_csv(path, **read_csv_options)
    except TypeError as exc:
        raise InvalidInputError(f"unknown option for pandas.read_csv: {exc}") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError,
            ValueError, OSError) as exc:
        raise FileFormatError(f"cannot read {path!r} as CSV: {exc}") from exc
    if target not in frame.columns:
        raise InvalidInputError(
            f"target={target!r} is not a column of {path!r}; columns are {list(frame.columns)}"
        )
    if frame.shape[0] == 0:
        raise InvalidInputError(f"{path!r} holds no data rows")
    features = frame.drop(columns=[target])
    if features.shape[1] == 0:
        raise InvalidInputError(f"{path!r} has no feature columns besides target={target!r}")
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
                                    "source": path},
                        y_name=f"target column {target!r}")


def _pick_key(arrays: dict[str, np.ndarray], key: str | None, what: str, path: str,
              ndim: int) -> np.ndarray:
    if key is not None:
        if key not in arrays:
            raise InvalidInputError(
                f"{what}_key={key!r} is not in {path!r}; it holds {sorted(arrays)}"
            )
        return arrays[key]
    candidates = [k for k, v in arrays.items() if getattr(v, "ndim", 0) == ndim]
    if len(candidates) != 1:
        raise InvalidInputError(
            f"cannot tell which array of {path!r} is the {what}: it holds "
            f"{sorted(arrays)}; pass {what}_key"
        )
    return arrays[candidates[0]]


def _read_arrays(path: str) -> dict[str, np.ndarray]:
    """All arrays of a .npz or .mat file."""
    lower = path.lower()
    if lower.endswith(".npz"):
        try:
            # Open the file here: np.load leaks its handle when the archive is damaged.
            with open(path, "rb") as handle:
                loaded = np.load(handle)  # allow_pickle stays False
                if not isinstance(loaded, np.lib.npyio.NpzFile):
                    raise FileFormatError(f"{path!r} is not an .npz archive of named arrays")
                with loaded as z:
                    return {k: z[k] for k in z.files}
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise FileFormatError(f"cannot read {path!r} as .npz: {exc}") from exc
    if lower.endswith(".mat"):
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
    raise FileFormatError(f"{path!r}: unsupported cube file type; use .npz, .mat or .hdr")


def _read_envi(path: str) -> np.ndarray:
    try:
        from spectral import envi
    except ImportError as exc:
        raise ImportError(
            "reading ENVI files needs the optional 'spectral' package: "
            "pip install 'uqzoo[hsi]'"
        ) from exc
    try:
        return np.asarray(envi.open(path).load())
    except Exception as exc:  # spectral raises its own and OSError/ValueError kinds
        raise FileFormatError(f"cannot read ENVI file {path!r}: {exc}") from exc


def from_hsi(cube: object, labels: object, *, cube_key: str | None = None,
             labels_key: str | None = None, split: str = "left-right",
             test_size: float = 0.25, seed: int = 0, zero_is_unlabelled: bool = True,
             class_names: Sequence[str] | None = None, standardize: bool = True,
             name: str = "custom-hsi") -> ClassificationData:
    """A hyperspectral cube and its label image as per-pixel classification data.

    Parameters
    ----------
    cube : array of shape (H, W, B) or path
        The image, or a ``.npz`` / MATLAB ``.mat`` file holding it (pick the
        array with ``cube_key`` when the file holds more than one 3-D array),
        or an ENVI ``.hdr`` header (needs the optional ``spectral`` package).
    labels : array of shape (H, W) or str
        A label image of integer classes, or a boolean target mask (every
        pixel used, True = target); a str names an array in the cube's
        ``.npz``/``.mat`` file (same as ``labels_key``).
    cube_key, labels_key : str, optional
        Array names inside a ``.npz``/``.mat`` file.
    split : {"left-right", "random"}
        ``"left-right"``: pixels in columns < W // 2 train, the rest test (as
        in the seed study: neighbours of test pixels never train).
        ``"random"``: a seeded stratified split with ``test_size``.
    test_size : float in (0, 1)
        Held-out fraction per class (``"random"`` only).
    seed : int
        Seed of the split.
    zero_is_unlabelled : bool
        For an integer label image: 0 marks unlabelled pixels, which are
        dropped, and classes 1..K become 0..K-1. If False, every pixel is
        used and labels must already be 0..K-1.
    class_names : sequence of str, optional
        One name per class.
    standardize : bool
        Standardise each band with training statistics.
    name : str
        Name of the data set.

    Returns
    -------
    ClassificationData
        ``coords_train``/``coords_test`` the (row, column) of every pixel;
        ``meta["image_shape"]`` (H, W); ``classes`` the label value of each
        class in the label image: (1, ..., K) when 0 is unlabelled,
        (0, ..., K-1) otherwise, (False, True) for a mask.

    Warns
    -----
    uqzoo.errors.DataWarning
        As :func:`from_arrays`, with ``standardize=False``.

    Example
    -------
    >>> import numpy as np, uqzoo as uz
    >>> cube = np.random.default_rng(0).normal(size=(8, 8, 5))
    >>> mask = np.zeros((8, 8), bool); mask[2:4, 1:3] = mask[5:7, 5:7] = True
    >>> uz.datasets.from_hsi(cube, mask).n_test
    32
    """
    split = check_choice(split, "split", ("left-right", "random"))
    test_size = check_test_size(test_size)
    seed = check_seed(seed)
    zero_is_unlabelled = _check_bool(zero_is_unlabelled, "zero_is_unlabelled")
    standardize = _check_bool(standardize, "standardize")
    source = None
    if isinstance(cube, (str, os.PathLike)):
        source = _check_path(cube, "cube")
        if source.lower().endswith(".hdr"):
            cube_arr = _read_envi(source)
            if isinstance(labels, str):
                raise InvalidInputError("labels must be an array for an ENVI cube")
        else:
            arrays = _read_arrays(source)
            cube_arr = _pick_key(arrays, cube_key, "cube", source, ndim=3)
            if isinstance(labels, str):
                labels_key = labels
            if isinstance(labels, str) or labels is None:
                labels = _pick_key(arrays, labels_key, "labels", source, ndim=2)
    else:
        cube_arr = cube
    if isinstance(labels, (str, bytes)) or labels is None:
        raise InvalidTypeError(f"labels must be an (H, W) array, got {_show(labels)}")
    cube_arr = _as_array(cube_arr, "cube")
    labels = _as_array(labels, "labels")
    if cube_arr.ndim != 3:
        raise InvalidInputError(f"cube must have shape (H, W, B), got shape {cube_arr.shape}")
    if cube_arr.dtype.kind not in "biuf":
        raise InvalidTypeError(f"cube must be numeric, got dtype {cube_arr.dtype}")
    if labels.shape != cube_arr.shape[:2]:
        raise InvalidInputError(
            f"labels must have the cube's image shape {cube_arr.shape[:2]}, got {labels.shape}"
        )
    if cube_arr.shape[2] == 0:
        raise InvalidInputError(f"cube must have at least one band, got shape {cube_arr.shape}")
    # Class k's original label value, recorded as data.classes.
    first_label = 0
    if labels.dtype == np.bool_:
        used = np.ones(labels.shape, bool)
        label_img = labels.astype(np.int64)
        if class_names is None:
            class_names = ("background", "target")
    elif labels.dtype.kind in "iu" or (labels.dtype.kind == "f" and np.all(
            np.isfinite(labels)) and np.all(labels == np.round(labels))):
        label_img = labels.astype(np.int64)
        if label_img.min() < 0:
            raise InvalidInputError(f"labels must be >= 0, found {label_img.min()}")
        if zero_is_unlabelled:
            used = label_img > 0
            label_img = label_img - 1
            first_label = 1
        else:
            used = np.ones(labels.shape, bool)
    else:
        raise InvalidTypeError(
            f"labels must be an integer label image or a boolean mask, got dtype {labels.dtype}"
        )
    rows, cols = np.nonzero(used)
    if rows.size == 0:
        raise InvalidInputError("labels mark no pixel as labelled")
    pixels = cube_arr[rows, cols]
    X = as_float_matrix(pixels, "cube pixels")
    y = label_img[rows, cols]
    coords = np.stack([rows, cols], axis=1)
    n_classes = max(2, int(y.max()) + 1)
    if class_names is not None:
        n_classes = max(n_classes, len(class_names))
    if labels.dtype == np.bool_:
        classes = (False, True) if n_classes == 2 else None
    else:
        classes = tuple(range(first_label, first_label + n_classes))
    if split == "left-right":
        is_train = cols < cube_arr.shape[1] // 2
        train, test = np.flatnonzero(is_train), np.flatnonzero(~is_train)
        if train.size == 0 or test.size == 0:
            raise InvalidInputError(
                "split='left-right' leaves no labelled pixel in the "
                f"{'left' if train.size == 0 else 'right'} half; use split='random'"
            )
    else:
        train, test = stratified_split(y, test_size, seed)
    if np.unique(y[train]).size < 2:
        raise InvalidInputError(
            f"the training pixels hold only class {np.unique(y[train]).tolist()}; "
            "at least two classes must train"
        )
    meta = {"options": {"split": split, "test_size": test_size, "seed": seed,
                        "zero_is_unlabelled": zero_is_unlabelled, "standardize": standardize},
            "image_shape": tuple(int(s) for s in cube_arr.shape[:2]),
            "source": source}
    if standardize:
        # From the raw pixel values (float64 inside), not the float32 copy.
        X_train, X_test, stats = _standardize(pixels[train], pixels[test])
        meta.update(stats)
    else:
        X_train, X_test = X[train], X[test]
        warn_if_float32_loses_precision(pixels[train], pixels[test], stacklevel=2)
    meta["standardized"] = standardize
    return ClassificationData(X_train=X_train, y_train=y[train], X_test=X_test,
                              y_test=y[test], n_classes=n_classes, class_names=class_names,
                              name=name, meta=meta, coords_train=coords[train],
                              coords_test=coords[test], classes=classes)
