"""Users' own data: arrays, CSV files and hyperspectral cubes into :class:`ClassificationData`."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence

import numpy as np

from uqzoo._validation import _show, as_float_matrix, as_labels, check_choice, check_int
from uqzoo._validation import check_seed
from uqzoo.datasets._base import ClassificationData
from uqzoo.datasets._standardize import check_test_size, standardize as _standardize
from uqzoo.datasets._standardize import stratified_split
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


def _encode_labels(y: object, name: str, class_names: Sequence[str] | None
                   ) -> tuple[object, tuple[str, ...] | None]:
    """Map string (or other non-numeric) labels to 0..K-1, in sorted or given order."""
    if isinstance(y, (str, bytes, dict)) or y is None:
        return y, class_names  # as_labels raises the right error
    try:
        arr = np.asarray(y)
    except Exception:
        return y, class_names
    if arr.ndim != 1 or arr.dtype.kind not in "OUS":
        return y, class_names
    if arr.dtype.kind == "O" and any(v is None or (isinstance(v, float) and np.isnan(v))
                                     for v in arr):
        raise InvalidInputError(f"{name} must not hold missing labels (None or NaN)")
    values = arr.astype(str)
    if class_names is None:
        class_names = tuple(np.unique(values))
    names = [str(c) for c in class_names]
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise InvalidInputError(
            f"{name} holds labels {unknown[:5]} that are not in class_names {names}"
        )
    index = {c: k for k, c in enumerate(names)}
    return np.array([index[v] for v in values], dtype=np.int64), tuple(names)


def from_arrays(X: object, y: object, *, X_test: object = None, y_test: object = None,
                test_size: float = 0.25, seed: int = 0, n_classes: int | None = None,
                class_names: Sequence[str] | None = None, standardize: bool = True,
                p_true_test: object = None, name: str = "custom") -> ClassificationData:
    """Build a :class:`ClassificationData` from arrays.

    Without ``X_test``, a seeded stratified split holds out ``test_size`` of
    each class. Features are standardised with training statistics
    (``meta["mean"]``, ``meta["scale"]``) unless ``standardize=False``.

    Parameters
    ----------
    X : array of shape (N, D)
        Finite numeric features.
    y : array of shape (N,)
        Labels: integers 0..K-1, or strings (mapped to 0..K-1 in the order of
        ``class_names``, sorted when it is not given).
    X_test, y_test : arrays of shape (N_test, D) and (N_test,), optional
        A given test set; then ``X``, ``y`` are all training data.
    test_size : float in (0, 1)
        Held-out fraction per class when no test set is given.
    seed : int
        Seed of the split.
    n_classes : int, optional
        K; by default the largest label + 1 (at least 2).
    class_names : sequence of str, optional
        One name per class.
    standardize : bool
        Centre and scale features with training statistics.
    p_true_test : array of shape (N_test, K), optional
        Known true class probabilities of the test points; only with ``X_test``.
    name : str
        Name of the data set.

    Returns
    -------
    ClassificationData

    Example
    -------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(40, 3))
    >>> data = uz.datasets.from_arrays(X, (X[:, 0] > 0).astype(int), seed=0)
    >>> data.n_train, data.n_test
    (30, 10)
    """
    return _from_arrays(X, y, X_test=X_test, y_test=y_test, test_size=test_size, seed=seed,
                        n_classes=n_classes, class_names=class_names,
                        standardize=standardize, p_true_test=p_true_test, name=name)


def _from_arrays(X, y, *, X_test, y_test, test_size, seed, n_classes, class_names,
                 standardize, p_true_test, name, extra_meta=None) -> ClassificationData:
    seed = check_seed(seed)
    test_size = check_test_size(test_size)
    standardize = _check_bool(standardize, "standardize")
    if not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str, got {_show(name)}")
    if class_names is not None and (isinstance(class_names, str)
                                    or not isinstance(class_names, Sequence)):
        raise InvalidTypeError(f"class_names must be a sequence of str, got {_show(class_names)}")
    y, class_names = _encode_labels(y, "y", class_names)
    if y_test is not None:
        y_test, class_names = _encode_labels(y_test, "y_test", class_names)
    X = as_float_matrix(X, "X")
    if n_classes is not None:
        n_classes = check_int(n_classes, "n_classes", minimum=2)
    elif class_names is not None:
        n_classes = max(2, len(class_names))
    y = as_labels(y, "y", n_classes, n_rows=X.shape[0])
    if (X_test is None) != (y_test is None):
        raise InvalidInputError("X_test and y_test must be given together (or neither)")
    if X_test is None:
        if p_true_test is not None:
            raise InvalidInputError(
                "p_true_test needs X_test and y_test: its rows must match given test points"
            )
        if np.unique(y).size < 2:
            raise InvalidInputError(f"y must contain at least two classes, got {np.unique(y)}")
        train, test = stratified_split(y, test_size, seed)
        X_train, y_train, X_te, y_te = X[train], y[train], X[test], y[test]
    else:
        X_train, y_train = X, y
        X_te = as_float_matrix(X_test, "X_test", n_features=X.shape[1])
        y_te = as_labels(y_test, "y_test", n_classes, n_rows=X_te.shape[0])
        train = test = None
    if n_classes is None:
        n_classes = max(2, int(max(y_train.max(), y_te.max())) + 1)
    meta = {"options": {"test_size": test_size if X_test is None else None, "seed": seed,
                        "standardize": standardize}, **(extra_meta or {})}
    if train is not None:
        meta["train_index"], meta["test_index"] = train, test
    if standardize:
        X_train, X_te, stats = _standardize(X_train, X_te)
        meta.update(stats)
    meta["standardized"] = standardize
    return ClassificationData(X_train=X_train, y_train=y_train, X_test=X_te, y_test=y_te,
                              n_classes=n_classes, p_true_test=p_true_test,
                              class_names=class_names, name=name, meta=meta)


def _check_path(path: object, name: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"{name} must be a file path, got {_show(path)}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileFormatError(f"{name}: no such file {path!r}")
    return path


def from_csv(path: object, target: str, *, X_test: object = None, y_test: object = None,
             test_size: float = 0.25, seed: int = 0, n_classes: int | None = None,
             class_names: Sequence[str] | None = None, standardize: bool = True,
             p_true_test: object = None, name: str | None = None,
             **read_csv_options: object) -> ClassificationData:
    """Load a CSV file with one row per example and a ``target`` column.

    Every other column is a feature and must be numeric with no missing
    values; a non-numeric target column is mapped to class indices (sorted
    order, recorded in ``class_names``). Parameters after ``target`` are those
    of :func:`from_arrays`; ``read_csv_options`` go to :func:`pandas.read_csv`.

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

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.from_csv("penguins.csv", target="species")  # doctest: +SKIP
    """
    import pandas as pd

    path = _check_path(path, "path")
    if not isinstance(target, str):
        raise InvalidTypeError(f"target must be a column name (str), got {_show(target)}")
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
    labels = frame[target]
    if labels.isna().any():
        raise InvalidInputError(f"target column {target!r} holds missing values")
    if pd.api.types.is_numeric_dtype(labels) and not pd.api.types.is_bool_dtype(labels):
        y = labels.to_numpy()
    else:
        y = labels.astype(str).to_numpy(dtype=object)
    return _from_arrays(features.to_numpy(dtype=np.float64), y, X_test=X_test, y_test=y_test,
                        test_size=test_size, seed=seed, n_classes=n_classes,
                        class_names=class_names, standardize=standardize,
                        p_true_test=p_true_test,
                        name=name if name is not None else os.path.basename(path),
                        extra_meta={"feature_names": tuple(str(c) for c in features.columns),
                                    "source": path})


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
        ``meta["image_shape"]`` (H, W).

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
        else:
            used = np.ones(labels.shape, bool)
    else:
        raise InvalidTypeError(
            f"labels must be an integer label image or a boolean mask, got dtype {labels.dtype}"
        )
    rows, cols = np.nonzero(used)
    if rows.size == 0:
        raise InvalidInputError("labels mark no pixel as labelled")
    X = as_float_matrix(cube_arr[rows, cols], "cube pixels")
    y = label_img[rows, cols]
    coords = np.stack([rows, cols], axis=1)
    n_classes = max(2, int(y.max()) + 1)
    if class_names is not None:
        n_classes = max(n_classes, len(class_names))
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
    X_train, X_test = X[train], X[test]
    if standardize:
        X_train, X_test, stats = _standardize(X_train, X_test)
        meta.update(stats)
    meta["standardized"] = standardize
    return ClassificationData(X_train=X_train, y_train=y[train], X_test=X_test,
                              y_test=y[test], n_classes=n_classes, class_names=class_names,
                              name=name, meta=meta, coords_train=coords[train],
                              coords_test=coords[test])
