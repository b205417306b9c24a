import numpy as np
import pytest

import uqzoo as uz
import uqzoo.datasets as datasets

TABULAR = {  # name: (rows, features, per-class counts)
    "breast-cancer": (569, 30, [212, 357]),
    "wine": (178, 13, [59, 71, 48]),
    "iris": (150, 4, [50, 50, 50]),
    "digits": (1797, 64, [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]),
    "penguins": (342, 4, [151, 68, 123]),
    "caravan": (5822, 85, [5474, 348]),
}


def _all_labels(data):
    return np.concatenate([data.y_train, data.y_test])


@pytest.mark.parametrize("name", list(TABULAR))
def test_tabular_shapes_and_class_counts(name):
    rows, features, counts = TABULAR[name]
    data = datasets.load(name, seed=0)
    assert data.n_train + data.n_test == rows
    assert data.n_features == features
    assert data.n_classes == len(counts) == len(data.class_names)
    np.testing.assert_array_equal(np.bincount(_all_labels(data)), counts)
    # Stratified: each class's test share within one row of 25 %.
    test_counts = np.bincount(data.y_test, minlength=len(counts))
    assert np.all(np.abs(test_counts - 0.25 * np.array(counts)) <= 1)
    assert data.X_train.dtype == np.float32
    assert "citation" in data.meta


def test_penguins_one_hot_columns():
    data = datasets.load("penguins", one_hot=True)
    assert data.n_features == 9
    assert data.meta["feature_names"][-2:] == ("sex=female", "sex=male")
    assert data.meta["n_dropped_missing"] == 2


@pytest.mark.parametrize("name", ["wine", "caravan", "indian-pines"])
def test_standardised_with_training_statistics_only(name):
    raw = datasets.load(name, seed=2, standardize=False)
    std = datasets.load(name, seed=2)
    mean, scale = std.meta["mean"], std.meta["scale"]
    np.testing.assert_allclose(mean, raw.X_train.astype(np.float64).mean(axis=0), rtol=1e-5,
                               atol=1e-4)
    np.testing.assert_allclose(std.X_train.mean(axis=0), 0.0, atol=1e-4)
    np.testing.assert_allclose(std.X_test * scale + mean, raw.X_test, rtol=1e-4, atol=1e-3)
    # The test set's own statistics differ from the recorded ones (not leaked in).
    assert not np.allclose(raw.X_test.mean(axis=0), mean)


def test_split_determinism():
    a, b = datasets.load("wine", seed=5), datasets.load("wine", seed=5)
    c = datasets.load("wine", seed=6)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    assert not np.array_equal(a.X_test, c.X_test)


def test_indian_pines_counts_random_split():
    data = datasets.load("indian-pines", split="random", seed=0)
    counts = np.bincount(_all_labels(data), minlength=16)
    assert counts.sum() == 10_249 and data.n_classes == 16 and data.n_features == 200
    names = list(data.class_names)
    assert counts[names.index("Alfalfa")] == 46
    assert counts[names.index("Soybean-mintill")] == 2455
    assert counts[names.index("Stone-Steel-Towers")] == 93
    assert data.meta["image_shape"] == (145, 145)
    assert data.coords_train.shape == (data.n_train, 2)


def test_indian_pines_blocked_split_has_no_neighbours_across():
    data = datasets.load("indian-pines", split="blocked", seed=1, buffer=1)
    test_mask = np.zeros((145, 145), bool)
    test_mask[data.coords_test[:, 0], data.coords_test[:, 1]] = True
    padded = np.pad(test_mask, 1)
    near = np.zeros_like(test_mask)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            near |= padded[1 + dr:146 + dr, 1 + dc:146 + dc]
    assert not near[data.coords_train[:, 0], data.coords_train[:, 1]].any()
    assert 0.15 < data.n_test / (data.n_train + data.n_test) < 0.35
    # rare classes are served first: all 16 classes train and test (before the shared
    # rule of _splits.py, Alfalfa, Grass-pasture-mowed and Oats often had no test pixel)
    assert (data.meta["class_counts_train"] > 0).all()
    assert (data.meta["class_counts_test"] > 0).all()
    # Labels still match the ground truth at the kept coordinates.
    random = datasets.load("indian-pines", split="random", seed=1)
    lookup = {tuple(c): y for c, y in zip(np.concatenate([random.coords_train,
                                                          random.coords_test]),
                                          _all_labels(random), strict=True)}
    for coords, y in ((data.coords_test, data.y_test), (data.coords_train, data.y_train)):
        assert all(lookup[tuple(c)] == label
                   for c, label in zip(coords[:200], y[:200], strict=True))


def test_muufl_target():
    data = datasets.load("muufl-target", seed=0)
    assert data.n_features == 72 and data.n_test == 36 * 36
    assert int(data.y_test.sum()) == 3
    assert data.meta["image_shape"] == (36, 36)
    abundance = data.meta["abundance_train"]
    np.testing.assert_array_equal(data.y_train, abundance >= 0.3)
    assert 0.05 < data.y_train.mean() < 0.5
    other = datasets.load("muufl-target", seed=1)
    assert not np.array_equal(data.X_train, other.X_train)
    np.testing.assert_array_equal(data.y_test, other.y_test)


@pytest.mark.parametrize("name, bad, error", [
    ("iris", dict(test_size=1.0), uz.InvalidInputError),
    ("iris", dict(test_size="0.2"), uz.InvalidTypeError),
    ("indian-pines", dict(split="checkerboard"), uz.InvalidInputError),
    ("indian-pines", dict(block_size=0), uz.InvalidInputError),
    ("muufl-target", dict(target="red"), uz.InvalidInputError),
    ("muufl-target", dict(implant_fraction=0.0), uz.InvalidInputError),
    ("penguins", dict(one_hot=1), uz.InvalidTypeError),
])
def test_bad_options(name, bad, error):
    with pytest.raises(error):
        datasets.load(name, **bad)
