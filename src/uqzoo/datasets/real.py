"""Real data sets shipped inside the package (provenance in ``data/README.md``).

Every loader returns a seeded train/test split with features standardised by
training statistics, which are recorded in ``meta["mean"]`` and
``meta["scale"]`` (``X_std = (X - mean) / scale``).
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from uqzoo._validation import check_bool, check_choice, check_float, check_int, check_seed
from uqzoo.datasets._base import ClassificationData
from uqzoo.datasets._splits import blocked_test_mask, guard_band
from uqzoo.datasets._standardize import check_test_size, stratified_split
from uqzoo.datasets._standardize import standardize as _standardize
from uqzoo.errors import InvalidInputError

__all__ = [
    "load_breast_cancer",
    "load_caravan",
    "load_digits",
    "load_indian_pines",
    "load_iris",
    "load_muufl_target",
    "load_penguins",
    "load_wine",
]

CITATIONS = {
    "indian-pines": "Baumgardner, M. F., Biehl, L. L., Landgrebe, D. A. (2015). 220 Band "
                    "AVIRIS Hyperspectral Image Data Set: June 12, 1992 Indian Pine Test "
                    "Site 3. Purdue University Research Repository. doi:10.4231/R7RX991C "
                    "(CC BY 3.0)",
    "muufl-target": "P. Gader, A. Zare, R. Close, J. Aitken, G. Tuell, MUUFL Gulfport "
                    "Hyperspectral and LiDAR Airborne Data Set, Univ. of Florida, Tech. Rep. "
                    "REP-2013-570, 2013; A. Zare et al., hsi_toolkit (2019), "
                    "doi:10.5281/zenodo.2638117 (MIT)",
    "breast-cancer": "Wolberg, W. H., Street, W. N., Mangasarian, O. L. (1995). Breast Cancer "
                     "Wisconsin (Diagnostic). UCI Machine Learning Repository; via "
                     "scikit-learn's bundled copy",
    "wine": "Aeberhard, S., Forina, M. (1991). Wine. UCI Machine Learning Repository; via "
            "scikit-learn's bundled copy",
    "iris": "Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. "
            "Annals of Eugenics 7(2); via scikit-learn's bundled copy",
    "digits": "Alpaydin, E., Kaynak, C. (1998). Optical Recognition of Handwritten Digits. "
              "UCI Machine Learning Repository; via scikit-learn's bundled copy",
    "penguins": "Horst, A. M., Hill, A. P., Gorman, K. B. (2020). palmerpenguins: Palmer "
                "Archipelago (Antarctica) penguin data. doi:10.5281/zenodo.3960218 (CC0)",
    "caravan": "van der Putten, P., van Someren, M. (2000). CoIL Challenge 2000: The Insurance "
               "Company Case. Sentient Machine Research; via the ISLP package (BSD)",
}


def _data_file(filename: str) -> np.lib.npyio.NpzFile:
    return np.load(str(resources.files("uqzoo.datasets") / "data" / filename))


def _finish(name: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray,
            *, n_classes: int, class_names, standardize: bool, meta: dict,
            coords: np.ndarray | None = None, feature_names=None) -> ClassificationData:
    """Standardise with training statistics and build the container."""
    X_train, X_test = X[train], X[test]
    if standardize:
        X_train, X_test, stats = _standardize(X_train, X_test)
        meta.update(stats)
    meta["standardized"] = standardize
    meta.setdefault("citation", CITATIONS[name])
    if feature_names is not None:
        meta["feature_names"] = tuple(str(f) for f in feature_names)
    return ClassificationData(
        X_train=X_train, y_train=y[train], X_test=X_test, y_test=y[test],
        n_classes=n_classes, class_names=tuple(str(c) for c in class_names), name=name,
        meta=meta,
        coords_train=None if coords is None else coords[train],
        coords_test=None if coords is None else coords[test],
    )


def _tabular(name: str, X: np.ndarray, y: np.ndarray, class_names, test_size: object,
             seed: object, standardize: object, feature_names=None,
             extra_meta: dict | None = None) -> ClassificationData:
    test_size = check_test_size(test_size)
    seed = check_seed(seed)
    standardize = check_bool(standardize, "standardize")
    train, test = stratified_split(y, test_size, seed)
    meta = {"options": {"test_size": test_size, "seed": seed, "standardize": standardize},
            **(extra_meta or {})}
    return _finish(name, np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64),
                   train, test, n_classes=len(class_names), class_names=class_names,
                   standardize=standardize, meta=meta, feature_names=feature_names)


def _sklearn(name: str, loader_name: str, test_size, seed, standardize) -> ClassificationData:
    from sklearn import datasets as skd  # imported late: only these loaders need it

    bunch = getattr(skd, loader_name)()
    return _tabular(name, bunch.data, bunch.target, bunch.target_names, test_size, seed,
                    standardize, feature_names=getattr(bunch, "feature_names", None))


def load_breast_cancer(*, test_size: float = 0.25, seed: int = 0,
                       standardize: bool = True) -> ClassificationData:
    """Wisconsin diagnostic breast cancer: 569 × 30, binary (212 malignant, 357 benign).

    Parameters
    ----------
    test_size : float in (0, 1)
        Fraction of each class held out (stratified).
    seed : int
        Seed of the split.
    standardize : bool
        Standardise features with training statistics.

    Returns
    -------
    ClassificationData

    Example
    -------
    >>> import uqzoo as uz
    >>> uz.datasets.load("breast-cancer").n_features
    30
    """
    return _sklearn("breast-cancer", "load_breast_cancer", test_size, seed, standardize)


def load_wine(*, test_size: float = 0.25, seed: int = 0,
              standardize: bool = True) -> ClassificationData:
    """Wine recognition: 178 × 13, three cultivars (59, 71, 48).

    Parameters and returns as :func:`load_breast_cancer`.
    """
    return _sklearn("wine", "load_wine", test_size, seed, standardize)


def load_iris(*, test_size: float = 0.25, seed: int = 0,
              standardize: bool = True) -> ClassificationData:
    """Fisher's iris: 150 × 4, three species (50 each).

    Parameters and returns as :func:`load_breast_cancer`.
    """
    return _sklearn("iris", "load_iris", test_size, seed, standardize)


def load_digits(*, test_size: float = 0.25, seed: int = 0,
                standardize: bool = True) -> ClassificationData:
    """8 × 8 handwritten digits: 1797 × 64, ten classes.

    Pixels that are constant in training keep scale 1. Parameters and returns
    as :func:`load_breast_cancer`.
    """
    return _sklearn("digits", "load_digits", test_size, seed, standardize)


def load_penguins(*, test_size: float = 0.25, seed: int = 0, standardize: bool = True,
                  one_hot: bool = False) -> ClassificationData:
    """Palmer penguins: species (Adelie, Chinstrap, Gentoo) from body measurements.

    The 2 of 344 rows without measurements are dropped, leaving 342 (151, 68,
    123). Features: bill length, bill depth, flipper length, body mass; with
    ``one_hot=True`` also island (3 indicator columns) and sex (2 indicator
    columns, both 0 for the 9 remaining birds of unknown sex).

    Parameters
    ----------
    one_hot : bool
        Append the one-hot island and sex columns. They are standardised
        like every other column when ``standardize`` is true.

    Other parameters and returns as :func:`load_breast_cancer`.
    """
    one_hot = check_bool(one_hot, "one_hot")
    with _data_file("tabular_other.npz") as z:
        X = z["penguins_X"].astype(np.float64)
        y = z["penguins_y"].astype(np.int64)
        island, sex = z["penguins_island"], z["penguins_sex"]
        feature_names = list(z["penguins_feature_names"])
        class_names = list(z["penguins_target_names"])
        island_names, sex_names = list(z["penguins_island_names"]), list(z["penguins_sex_names"])
    if one_hot:
        X = np.concatenate([X, (island[:, None] == np.arange(3)).astype(np.float64),
                            (sex[:, None] == np.arange(2)).astype(np.float64)], axis=1)
        feature_names += [f"island={n}" for n in island_names] + [f"sex={n}" for n in sex_names]
    keep = ~np.isnan(X).any(axis=1)
    return _tabular("penguins", X[keep], y[keep], class_names, test_size, seed, standardize,
                    feature_names=feature_names,
                    extra_meta={"n_dropped_missing": int((~keep).sum()), "one_hot": one_hot})


def load_caravan(*, test_size: float = 0.25, seed: int = 0,
                 standardize: bool = True) -> ClassificationData:
    """Caravan insurance (CoIL 2000): 5822 × 85, binary and imbalanced (348 "Yes", 6 %).

    Parameters and returns as :func:`load_breast_cancer`.
    """
    with _data_file("tabular_other.npz") as z:
        X, y = z["caravan_X"], z["caravan_y"]
        feature_names, class_names = z["caravan_feature_names"], z["caravan_target_names"]
    return _tabular("caravan", X, y, class_names, test_size, seed, standardize,
                    feature_names=feature_names)


def load_indian_pines(*, split: str = "random", test_size: float = 0.25, seed: int = 0,
                      block_size: int = 10, buffer: int = 1,
                      standardize: bool = True) -> ClassificationData:
    """AVIRIS Indian Pines: 10,249 labelled pixels, 200 bands, 16 land-cover classes.

    Parameters
    ----------
    split : {"random", "blocked"}
        ``"random"``: a stratified random split of the labelled pixels, so
        training and test pixels are often neighbours (optimistic accuracy).
        ``"blocked"``: whole ``block_size`` × ``block_size`` blocks go to
        test, roughly stratified with rare classes served first, and
        training pixels within ``buffer`` pixels of a test pixel are
        dropped, so the test set measures generalisation to unseen places
        (the rule shared with ``from_hsi(split="blocks")``; see
        ``uqzoo.datasets._splits``). Every class keeps training and test
        pixels whenever its blocks allow (``meta["class_counts_train"]``,
        ``meta["class_counts_test"]``).
    test_size : float in (0, 1)
        Target fraction of each class held out.
    seed : int
        Seed of the split.
    block_size : int
        Side of a spatial block, in pixels (``"blocked"`` only).
    buffer : int
        Guard band in pixels (``"blocked"`` only).
    standardize : bool
        Standardise each band with training statistics.

    Returns
    -------
    ClassificationData
        ``X_*`` float32 (N, 200) from the int16 radiance cube; ``coords_*``
        the (row, column) of each pixel in the 145 × 145 image;
        ``meta["wavelengths_nm"]``, ``meta["image_shape"]``.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("indian-pines", split="blocked", seed=0)
    >>> data.n_classes, data.n_features
    (16, 200)

    References
    ----------
    Baumgardner, Biehl, Landgrebe (2015), doi:10.4231/R7RX991C.
    """
    split = check_choice(split, "split", ("random", "blocked"))
    test_size = check_test_size(test_size)
    seed = check_seed(seed)
    block_size = check_int(block_size, "block_size", minimum=1)
    buffer = check_int(buffer, "buffer", minimum=0)
    standardize = check_bool(standardize, "standardize")
    with _data_file("indian_pines.npz") as z:
        cube, gt = z["cube"], z["gt"].astype(np.int64)
        class_names = [str(c) for c in z["class_names"][1:]]
        wavelengths = z["wavelengths_nm"]
    height, width, _ = cube.shape
    if split == "random":
        rows, cols = np.nonzero(gt > 0)
        y = gt[rows, cols] - 1
        train, test = stratified_split(y, test_size, seed)
        is_train = np.zeros(y.size, bool)
        is_train[train] = True
    else:
        codes = gt - 1                                  # -1 = unlabelled
        test_mask = blocked_test_mask(codes, test_size, (block_size, block_size), seed,
                                      guard=buffer)
        train_mask = (codes >= 0) & ~test_mask & ~guard_band(test_mask, buffer)
        used = train_mask | test_mask
        rows, cols = np.nonzero(used)
        y = gt[rows, cols] - 1
        is_train = train_mask[rows, cols]
    X = cube[rows, cols].astype(np.float64)
    coords = np.stack([rows, cols], axis=1)
    train, test = np.flatnonzero(is_train), np.flatnonzero(~is_train)
    meta = {
        "options": {"split": split, "test_size": test_size, "seed": seed,
                    "block_size": block_size, "buffer": buffer, "standardize": standardize},
        "image_shape": (height, width),
        "wavelengths_nm": wavelengths,
        "class_counts_train": np.bincount(y[train], minlength=16),
        "class_counts_test": np.bincount(y[test], minlength=16),
    }
    return _finish("indian-pines", X, y, train, test, n_classes=16, class_names=class_names,
                   standardize=standardize, meta=meta, coords=coords)


MUUFL_TARGETS = ("brown", "dark_green", "faux_vineyard_green", "pea_green")


def load_muufl_target(*, a_min: float = 0.3, implant_fraction: float = 0.3,
                      target: str = "brown", seed: int = 0,
                      standardize: bool = True) -> ClassificationData:
    """Sub-pixel cloth-target detection on real MUUFL Gulfport pixels (72 bands).

    Training: the 3,884 valid pixels of the MUUFL subset image (``sub_cube``
    where ``sub_mask`` is 1; the others hold fill values), each one, with
    probability ``implant_fraction``, mixed with the real image spectrum t of
    the ``target`` cloth at an abundance a ~ U(0, 1): x = a t + (1 − a) x_bg.
    Label 1 when a >= ``a_min``. Test: the real 36 × 36 target-detection crop
    (1,296 pixels) with its 3 true target pixels (a brown cloth) as label 1.
    The subset image is a different part of the flight than the crop, so no
    test pixel is used in training; it may itself hold unlabelled targets.

    Parameters
    ----------
    a_min : float in (0, 1]
        Smallest implanted abundance labelled as target.
    implant_fraction : float in (0, 1)
        Share of training pixels that get a target implanted.
    target : {"brown", "dark_green", "faux_vineyard_green", "pea_green"}
        The cloth whose image spectrum is implanted; the test crop's targets
        are brown, so other colours test transfer to a mismatched signature.
    seed : int
        Seed of the implanting.
    standardize : bool
        Standardise each band with training statistics.

    Returns
    -------
    ClassificationData
        Binary (``"background"``, ``"target"``); ``coords_train`` positions in
        the 51 × 88 subset image, ``coords_test`` in the 36 × 36 crop
        (``meta["image_shape_train"]``, ``meta["image_shape"]``);
        ``meta["abundance_train"]`` the implanted abundances.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("muufl-target", seed=0)
    >>> int(data.y_test.sum()), data.n_test
    (3, 1296)

    References
    ----------
    Gader et al. (2013), MUUFL Gulfport Hyperspectral and LiDAR Airborne Data
    Set, Univ. of Florida REP-2013-570.
    """
    a_min = check_float(a_min, "a_min", low=0.0, high=1.0, low_open=True)
    implant_fraction = check_float(implant_fraction, "implant_fraction", low=0.0, high=1.0,
                                   low_open=True, high_open=True)
    target = check_choice(target, "target", MUUFL_TARGETS)
    seed = check_seed(seed)
    standardize = check_bool(standardize, "standardize")
    with _data_file("muufl_gulfport_subsets.npz") as z:
        sub_cube, sub_mask = z["sub_cube"].astype(np.float64), z["sub_mask"]
        test_cube, test_gt = z["tgtdet_cube"].astype(np.float64), z["tgtdet_gt"]
        spectrum = z["tgt_img_spectra"][:, list(z["tgt_img_names"]).index(target)]
        wavelengths = z["wavelengths_nm"]
    rng = np.random.default_rng(seed)
    rows, cols = np.nonzero(sub_mask == 1)
    background = sub_cube[rows, cols]
    implanted = rng.random(rows.size) < implant_fraction
    abundance = np.where(implanted, rng.uniform(0.0, 1.0, size=rows.size), 0.0)
    X_train = abundance[:, None] * spectrum + (1 - abundance[:, None]) * background
    y_train = (abundance >= a_min).astype(np.int64)
    if np.unique(y_train).size < 2:
        raise InvalidInputError(
            f"a_min={a_min} with implant_fraction={implant_fraction} labels no training pixel "
            "as target; lower a_min or raise implant_fraction"
        )
    t_rows, t_cols = np.mgrid[0:test_cube.shape[0], 0:test_cube.shape[1]]
    X_test = test_cube.reshape(-1, test_cube.shape[2])
    y_test = (test_gt.ravel() > 0).astype(np.int64)
    X = np.concatenate([X_train, X_test])
    y = np.concatenate([y_train, y_test])
    coords = np.concatenate([np.stack([rows, cols], axis=1),
                             np.stack([t_rows.ravel(), t_cols.ravel()], axis=1)])
    train = np.arange(rows.size)
    test = np.arange(rows.size, rows.size + X_test.shape[0])
    meta = {
        "options": {"a_min": a_min, "implant_fraction": implant_fraction, "target": target,
                    "seed": seed, "standardize": standardize},
        "image_shape": test_cube.shape[:2],
        "image_shape_train": sub_cube.shape[:2],
        "abundance_train": abundance,
        "target_spectrum": spectrum,
        "wavelengths_nm": wavelengths,
    }
    return _finish("muufl-target", X, y, train, test, n_classes=2,
                   class_names=("background", "target"), standardize=standardize,
                   meta=meta, coords=coords)
