"""Groups: rows keep their group, split="groups" holds whole groups out, bad groups refused."""

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.errors import InvalidInputError, InvalidTypeError


def _sites(n_sites=6, per_site=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_sites * per_site, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=X.shape[0]) > 0).astype(int)
    site = np.repeat([f"site{i}" for i in range(n_sites)], per_site)
    return X, y, site


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("test_size", [0.2, 0.5])
def test_split_groups_holds_whole_groups_out(seed, test_size):
    X, y, site = _sites()
    data = uz.datasets.from_arrays(X, y, groups=site, split="groups", test_size=test_size,
                                   seed=seed)
    held = data.meta["test_groups"]
    assert len(held) == round(test_size * 6)
    assert set(data.groups_test) == set(held)
    assert not set(data.groups_train) & set(held)
    # whole groups: every row of a held-out site is in test, with its own features
    assert data.n_test == 30 * len(held)
    rows = np.flatnonzero(np.isin(site, held))
    np.testing.assert_array_equal(data.meta["test_index"], rows)
    np.testing.assert_array_equal(data.groups_test, site[rows])


def test_stratified_split_keeps_each_rows_group():
    X, y, site = _sites()
    data = uz.datasets.from_arrays(X, y, groups=site, seed=0)
    np.testing.assert_array_equal(data.groups_train, site[data.meta["train_index"]])
    np.testing.assert_array_equal(data.groups_test, site[data.meta["test_index"]])
    plain = uz.datasets.from_arrays(X, y, seed=0)
    assert plain.groups_train is None and plain.groups_test is None


def test_given_test_set_takes_its_own_groups():
    X, y, site = _sites()
    data = uz.datasets.from_arrays(X[:120], y[:120], X_test=X[120:], y_test=y[120:],
                                   groups=site[:120], groups_test=np.arange(60) % 2)
    assert data.groups_test.dtype == np.int64 and set(data.groups_test) == {0, 1}


def test_csv_group_column_is_kept_and_is_not_a_feature(tmp_path):
    import pandas as pd

    X, y, site = _sites()
    path = tmp_path / "sites.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "hospital": site, "label": y}).to_csv(
        path, index=False)
    data = uz.datasets.from_csv(path, "label", group_column="hospital", split="groups", seed=1)
    assert data.meta["feature_names"] == ("a", "b")
    assert data.meta["group_column"] == "hospital"
    assert set(data.groups_test) == set(data.meta["test_groups"])
    assert not set(data.groups_train) & set(data.groups_test)


def test_hsi_region_groups_are_the_split_blocks():
    cube = np.random.default_rng(0).normal(size=(20, 20, 4))
    mask = np.zeros((20, 20), bool)
    mask[2:5, 2:5] = mask[13:17, 12:16] = True
    data = uz.datasets.from_hsi(cube, mask, split="blocks", guard=1, seed=0,
                                region_groups=True)
    bh, bw = data.meta["options"]["block_size"]
    for coords, groups in ((data.coords_train, data.groups_train),
                           (data.coords_test, data.groups_test)):
        np.testing.assert_array_equal(groups, (coords[:, 0] // bh) * (-(-20 // bw))
                                      + coords[:, 1] // bw)
    assert not set(data.groups_train) & set(data.groups_test)   # whole blocks test
    plain = uz.datasets.from_hsi(cube, mask, split="blocks", guard=1, seed=0)
    assert plain.groups_test is None


def test_one_group_is_refused():
    X, y, _ = _sites()
    with pytest.raises(InvalidInputError, match=r"split='groups' needs at least two groups"):
        uz.datasets.from_arrays(X, y, groups=np.zeros(len(y), int), split="groups")


def test_groups_that_take_a_class_out_of_training_are_refused():
    X, _, site = _sites(n_sites=2)
    y = (site == "site1").astype(int)           # each class lives in one site only
    with pytest.raises(InvalidInputError, match=r"which hold every row of class\(es\) \[") \
            as info:
        uz.datasets.from_arrays(X, y, groups=site, split="groups", seed=0)
    assert "no training rows would be left" in str(info.value)


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(split="groups"), InvalidInputError, "needs groups"),
    (dict(split="clusters"), InvalidInputError, "split must be one of"),
    (dict(groups=np.zeros(5, int)), InvalidInputError, "one group label per row (N = 180)"),
    (dict(groups=np.linspace(0, 1, 180)), InvalidTypeError, "integer or string group labels"),
    (dict(groups=[None] * 180), InvalidTypeError, "integer or string group labels"),
    (dict(groups_test=np.zeros(5, int)), InvalidInputError, "groups_test needs X_test"),
])
def test_bad_groups_are_one_clear_error(kwargs, error, needle):
    X, y, _ = _sites()
    with pytest.raises(error) as info:
        uz.datasets.from_arrays(X, y, **kwargs)
    assert needle in str(info.value)


def test_csv_bad_group_column(tmp_path):
    import pandas as pd

    X, y, site = _sites()
    path = tmp_path / "sites.csv"
    pd.DataFrame({"a": X[:, 0], "hospital": site, "label": y}).to_csv(path, index=False)
    with pytest.raises(InvalidInputError, match="group_column='ward' is not a feature column"):
        uz.datasets.from_csv(path, "label", group_column="ward")
    with pytest.raises(InvalidInputError, match="split='groups' needs group_column"):
        uz.datasets.from_csv(path, "label", split="groups")


def test_classification_data_checks_groups():
    X = np.zeros((4, 1))
    y = np.array([0, 1, 0, 1])
    data = uz.ClassificationData(X, y, X, y, 2, groups_train=["a", "a", "b", "b"],
                                 groups_test=[1, 2, 3, 4])
    assert data.groups_train.dtype.kind == "U" and data.groups_test.dtype == np.int64
    assert not data.groups_test.flags.writeable
    with pytest.raises(InvalidTypeError, match="groups_test must hold integer or string"):
        uz.ClassificationData(X, y, X, y, 2, groups_test=[True, False, True, False])
