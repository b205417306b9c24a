import numpy as np
import pandas as pd
import pytest
import scipy.io

import uqzoo as uz
import uqzoo.datasets as datasets
from uqzoo.errors import DataWarning


def _toy(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * [1.0, 10.0, 0.1] + [0.0, 5.0, -2.0]
    y = (X[:, 0] > 0).astype(int)
    return X, y


# from_arrays ------------------------------------------------------------------------------

def test_from_arrays_split_and_standardisation():
    X, y = _toy()
    data = datasets.from_arrays(X, y, seed=1)
    assert data.n_train + data.n_test == 60 and data.n_classes == 2
    tr, te = data.meta["train_index"], data.meta["test_index"]
    # Features are validated into float32 first: statistics agree to float32 precision.
    np.testing.assert_allclose(data.meta["mean"], X[tr].mean(axis=0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(data.meta["scale"], X[tr].std(axis=0), rtol=1e-6)
    np.testing.assert_allclose(data.X_test * data.meta["scale"] + data.meta["mean"], X[te],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(data.y_test, y[te])
    again = datasets.from_arrays(X, y, seed=1)
    np.testing.assert_array_equal(again.X_train, data.X_train)
    assert not np.array_equal(datasets.from_arrays(X, y, seed=2).meta["test_index"], te)


def test_from_arrays_given_test_set_and_p_true():
    X, y = _toy()
    p = np.full((10, 2), 0.5)
    data = datasets.from_arrays(X[:50], y[:50], X_test=X[50:], y_test=y[50:],
                                p_true_test=p, standardize=False, name="toy")
    np.testing.assert_allclose(data.X_test, X[50:].astype(np.float32))
    assert data.name == "toy" and data.p_true_test.shape == (10, 2)


def test_from_arrays_string_labels():
    X, _ = _toy(30)
    y = np.array(["cat", "dog", "emu"] * 10)
    data = datasets.from_arrays(X, y)
    assert data.class_names == ("cat", "dog", "emu") and data.n_classes == 3
    ordered = datasets.from_arrays(X, y, class_names=["emu", "dog", "cat"])
    raw = datasets.from_arrays(X, y, class_names=["emu", "dog", "cat"], standardize=False)
    first = np.flatnonzero(raw.X_train[:, 0] == X[:, 0].astype(np.float32)[0])
    assert ordered.class_names == ("emu", "dog", "cat")
    if first.size:
        assert raw.y_train[first[0]] == 2  # "cat" is class 2 in this order


# label encoding, as scikit-learn's LabelEncoder -------------------------------------------

def test_labels_five_six_are_two_classes_not_seven():
    X, y = _toy()
    data = datasets.from_arrays(X, y + 5, seed=1)
    assert data.n_classes == 2 and data.classes == (5, 6)
    assert all(type(c) is int for c in data.classes)     # plain Python, not numpy scalars
    assert data.class_names == ("5", "6")
    np.testing.assert_array_equal(data.y_test, y[data.meta["test_index"]])
    assert np.bincount(data.y_train).size == 2


def test_string_labels_are_sorted_and_kept():
    X, _ = _toy(30)
    y = np.array(["pear", "apple", "fig"] * 10)
    data = datasets.from_arrays(X, y, standardize=False, seed=0)
    assert data.classes == ("apple", "fig", "pear") and data.n_classes == 3
    expected = {"apple": 0, "fig": 1, "pear": 2}
    train = data.meta["train_index"]
    assert data.y_train.tolist() == [expected[v] for v in y[train]]


def test_bool_float_and_object_labels():
    X, y = _toy()
    flags = datasets.from_arrays(X, y > 0)
    assert flags.classes == (False, True) and type(flags.classes[0]) is bool
    floats = datasets.from_arrays(X, np.where(y > 0, 2.5, -0.5))
    assert floats.classes == (-0.5, 2.5) and all(type(c) is float for c in floats.classes)
    objects = datasets.from_arrays(X, np.array(["b" if v else "a" for v in y], dtype=object))
    assert objects.classes == ("a", "b")
    as_list = datasets.from_arrays(X, [int(v) * 10 for v in y])
    assert as_list.classes == (0, 10)


def test_pandas_categorical_keeps_category_order():
    X, y = _toy()
    labels = pd.Categorical(np.where(y > 0, "low", "high"),
                            categories=["low", "unused", "high"])
    for given in (labels, pd.Series(labels)):
        data = datasets.from_arrays(X, given, seed=2)
        # category order, not sorted ("high" < "low"); the unused category is dropped
        assert data.classes == ("low", "high")
        np.testing.assert_array_equal(data.y_test, 1 - y[data.meta["test_index"]])


def test_n_classes_declares_empty_classes_only_for_index_labels():
    X, y = _toy()
    data = datasets.from_arrays(X, y, n_classes=3)
    assert data.n_classes == 3 and data.classes == (0, 1, 2)
    with pytest.raises(uz.InvalidInputError, match=r"n_classes=3 .* 2 distinct labels .*\[5, 6\]"):
        datasets.from_arrays(X, y + 5, n_classes=3)
    assert datasets.from_arrays(X, y + 5, n_classes=2).classes == (5, 6)


def test_class_names_are_display_names_for_non_string_labels():
    X, y = _toy()
    data = datasets.from_arrays(X, y + 5, class_names=["five", "six"])
    assert data.classes == (5, 6) and data.class_names == ("five", "six")
    with pytest.raises(uz.InvalidInputError, match="class_names must hold one name per class"):
        datasets.from_arrays(X, y + 5, class_names=["five", "six", "seven"])
    # issue 25 item 7: three names for 0/1 labels once made an empty third class silently
    with pytest.raises(uz.InvalidInputError, match=r"class_names holds 3 names .* 2 classes "
                                                   r"\[0, 1\]: no row has class \[2\].*"
                                                   r"n_classes=3"):
        datasets.from_arrays(X, y, class_names=["no", "yes", "maybe"])
    declared = datasets.from_arrays(X, y, class_names=["no", "yes", "maybe"], n_classes=3)
    assert declared.n_classes == 3 and declared.class_names[2] == "maybe"


def test_given_test_labels_must_be_training_labels():
    X, y = _toy()
    ok = datasets.from_arrays(X[:40], y[:40] + 5, X_test=X[40:], y_test=y[40:] + 5)
    assert ok.classes == (5, 6)
    np.testing.assert_array_equal(ok.y_test, y[40:])
    with pytest.raises(uz.InvalidInputError, match=r"y_test holds labels \[7\].*\[5, 6\]"):
        datasets.from_arrays(X[:40], y[:40] + 5, X_test=X[40:], y_test=np.full(20, 7))
    with pytest.raises(uz.InvalidInputError, match=r"y_test holds labels \['c'\]"):
        datasets.from_arrays(X[:40], np.where(y[:40] > 0, "a", "b"), X_test=X[40:],
                             y_test=np.where(y[40:] > 0, "a", "c"))
    with pytest.raises(uz.InvalidTypeError, match="y_test"):
        datasets.from_arrays(X[:40], y[:40], X_test=X[40:], y_test=np.where(y[40:], "a", "b"))
    with pytest.raises(uz.InvalidInputError, match="y_test must not hold missing"):
        datasets.from_arrays(X[:40], y[:40] * 1.0, X_test=X[40:],
                             y_test=np.where(y[40:] > 0, np.nan, 0.0))


def test_label_errors_name_the_argument_and_value():
    X, y = _toy()
    with pytest.raises(uz.InvalidInputError, match=r"y must hold at least two .*\[7\]"):
        datasets.from_arrays(X, np.full(60, 7))
    with pytest.raises(uz.InvalidInputError, match="y must not hold missing labels"):
        datasets.from_arrays(X, [None] + ["a", "b"] * 29 + ["a"])
    with pytest.raises(uz.InvalidTypeError, match=r"y must hold labels of one kind.*int.*str"):
        datasets.from_arrays(X, np.array([1, "a"] * 30, dtype=object))
    with pytest.raises(uz.InvalidInputError, match=r"X must have at least one feature.*\(60, 0\)"):
        datasets.from_arrays(X[:, :0], y)


def test_raw_features_too_large_for_float32_warn():
    rng = np.random.default_rng(0)
    X, y = _toy()
    huge = X.copy()
    huge[:, 2] *= 1e16
    with pytest.warns(DataWarning, match=r"1 of 3 features \(columns \[2\]\)"):
        datasets.from_arrays(huge, y, standardize=False)
    offset = X.copy()
    offset[:, 0] = 1e8 + rng.uniform(size=60)        # float32 steps of 8 at 1e8
    offset[:, 1] = 1e12 + rng.uniform(size=60)
    with pytest.warns(DataWarning, match="2 of 3 features"):
        datasets.from_arrays(offset, y, standardize=False)
    # Standardised in float64 first, the offset feature keeps its variation: no warning
    # (warnings are errors here) and the values are still the raw ones, rescaled.
    data = datasets.from_arrays(offset, y, seed=0)
    train = data.meta["train_index"]
    assert np.corrcoef(data.X_train[:, 0], offset[train, 0] - 1e8)[0, 1] > 0.9999
    assert issubclass(DataWarning, UserWarning)


@pytest.mark.parametrize("change, error", [
    (lambda X, y: (X[:, 0], y), uz.InvalidInputError),                      # 1-D X
    (lambda X, y: (np.where(np.eye(60, 3) > 0, np.nan, X), y), uz.InvalidInputError),
    (lambda X, y: (X, y[:-1]), uz.InvalidInputError),                       # length mismatch
    (lambda X, y: (X, np.zeros_like(y)), uz.InvalidInputError),             # one class
    (lambda X, y: (X[:0], y[:0]), uz.InvalidInputError),                    # empty
    (lambda X, y: ("X", y), uz.InvalidTypeError),
    (lambda X, y: (X[:, :0], y), uz.InvalidInputError),                     # no features
    (lambda X, y: (X, np.where(y > 0, np.nan, 1.5)), uz.InvalidInputError),  # NaN label
    (lambda X, y: (X, np.where(y > 0, None, "a")), uz.InvalidInputError),   # None label
    (lambda X, y: (X, np.where(y > 0, np.inf, 0.0)), uz.InvalidInputError),  # inf label
    (lambda X, y: (X, np.array([1, "a"] * 30, dtype=object)), uz.InvalidTypeError),  # mixed
    (lambda X, y: (X, y + 1j), uz.InvalidTypeError),                        # complex
    (lambda X, y: (X, np.stack([y, y], 1)), uz.InvalidInputError),          # 2-D labels
])
def test_from_arrays_bad_input(change, error):
    X, y = _toy()
    X, y = change(X, y)
    with pytest.raises(error):
        datasets.from_arrays(X, y)


def test_from_arrays_bad_options():
    X, y = _toy()
    # labels {0, 3} are not 0..2: n_classes must count the distinct labels, 2
    with pytest.raises(uz.InvalidInputError, match=r"n_classes=3 .* 2 distinct labels"):
        datasets.from_arrays(X, y * 3, n_classes=3)
    assert datasets.from_arrays(X, y * 3, n_classes=2).classes == (0, 3)
    with pytest.raises(uz.InvalidInputError, match="X_test"):
        datasets.from_arrays(X, y, p_true_test=np.full((5, 2), 0.5))
    with pytest.raises(uz.InvalidInputError, match="together"):
        datasets.from_arrays(X, y, X_test=X)
    with pytest.raises(uz.InvalidInputError, match="columns"):
        datasets.from_arrays(X, y, X_test=X[:, :2], y_test=y)
    with pytest.raises(uz.InvalidInputError, match="p_true_test"):
        datasets.from_arrays(X, y, X_test=X, y_test=y, p_true_test=np.full((60, 2), 0.7))
    with pytest.raises(uz.InvalidInputError, match="class_names"):
        datasets.from_arrays(X, np.array(["a", "b"] * 30), class_names=["a", "c"])
    with pytest.raises(uz.InvalidInputError, match="test_size"):
        datasets.from_arrays(X, y, test_size=0.0)


# from_csv ---------------------------------------------------------------------------------

def test_from_csv_round_trip(tmp_path):
    X, _ = _toy(40)
    species = np.array(["Adelie", "Gentoo"] * 20)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(species=species)
    path = tmp_path / "toy.csv"
    frame.to_csv(path, index=False)
    data = datasets.from_csv(path, target="species", seed=3, standardize=False)
    assert data.class_names == ("Adelie", "Gentoo")
    assert data.meta["feature_names"] == ("a", "b", "c") and data.name == "toy.csv"
    ref = datasets.from_arrays(X, (species == "Gentoo").astype(int), seed=3, standardize=False)
    np.testing.assert_allclose(data.X_train, ref.X_train, rtol=1e-6)
    np.testing.assert_array_equal(data.y_test, ref.y_test)


def test_from_csv_encodes_labels_and_keeps_them(tmp_path):
    X, y = _toy(40)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(code=y + 5,
                                                            kind=np.where(y > 0, "x", "w"))
    path = tmp_path / "codes.csv"
    frame.to_csv(path, index=False)
    by_code = datasets.from_csv(path, target="code", usecols=["a", "b", "c", "code"])
    assert by_code.classes == (5, 6) and by_code.n_classes == 2
    order = pd.CategoricalDtype(["x", "w"])
    by_kind = datasets.from_csv(path, target="kind", usecols=["a", "b", "kind"],
                                dtype={"kind": order})
    assert by_kind.classes == ("x", "w")
    holes = frame.assign(code=[None, *frame.code[1:]])
    holes.to_csv(tmp_path / "holes.csv", index=False)
    with pytest.raises(uz.InvalidInputError, match="target column 'code' must not hold missing"):
        datasets.from_csv(tmp_path / "holes.csv", target="code", usecols=["a", "code"])


@pytest.mark.parametrize("option", [{"chunksize": 10}, {"iterator": True}])
def test_from_csv_rejects_reader_options(tmp_path, option):
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]}).to_csv(tmp_path / "t.csv",
                                                                          index=False)
    name = next(iter(option))
    with pytest.raises(uz.InvalidInputError, match=f"{name}="):
        datasets.from_csv(tmp_path / "t.csv", target="y", **option)


def test_from_csv_errors(tmp_path):
    good = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    path = tmp_path / "good.csv"
    good.to_csv(path, index=False)
    with pytest.raises(uz.InvalidInputError, match=r"'label'.*columns"):
        datasets.from_csv(path, target="label")
    text = good.assign(colour=["red", "blue", "red", "blue"])
    text.to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(uz.InvalidInputError, match="colour"):
        datasets.from_csv(tmp_path / "text.csv", target="y")
    holes = good.assign(a=[1.0, None, 3.0, 4.0])
    holes.to_csv(tmp_path / "holes.csv", index=False)
    with pytest.raises(uz.InvalidInputError, match="missing"):
        datasets.from_csv(tmp_path / "holes.csv", target="y")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(uz.FileFormatError):
        datasets.from_csv(tmp_path / "empty.csv", target="y")
    (tmp_path / "binary.csv").write_bytes(b"\xff\xfe\x00\x81\x00garbage" * 10)
    with pytest.raises(uz.UqzooError):
        datasets.from_csv(tmp_path / "binary.csv", target="y")
    with pytest.raises(uz.FileFormatError, match="no such file"):
        datasets.from_csv(tmp_path / "absent.csv", target="y")
    with pytest.raises(uz.InvalidTypeError):
        datasets.from_csv(path, target=0)


def test_from_csv_hostile_options_and_headers_are_one_clear_error(tmp_path):
    # issue 25: skiprows=10**9 filled memory (item 3); compression="zip" on a plain file
    # raised BadZipFile (item 6); a second 'label' column became a feature (item 7)
    path = tmp_path / "plain.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]}).to_csv(path, index=False)
    for skiprows in (10**9, range(2 * 10**6)):
        with pytest.raises(uz.InvalidInputError,
                           match=r"skiprows must skip at most 1,000,000 rows.*got [12],000,000"):
            datasets.from_csv(path, target="y", skiprows=skiprows)
    for compression, needle in [("zip", "not a zip file"), ("gzip", "Not a gzipped file"),
                                ("xz", ""), ("tar", "")]:
        with pytest.raises(uz.FileFormatError,
                           match=rf"plain.csv' as CSV with compression='{compression}': .*"
                                 rf"{needle}") as caught:
            datasets.from_csv(path, target="y", compression=compression)
        assert "\n" not in str(caught.value)
    (tmp_path / "twice.csv").write_text("label,x,label\n0,1.0,1\n1,2.0,0\n0,1.5,1\n1,2.5,0\n")
    with pytest.raises(uz.InvalidInputError, match=r"names column\(s\) \['label'\] more than once"):
        datasets.from_csv(tmp_path / "twice.csv", target="label")
    # names= replaces the header row: no repeat then
    data = datasets.from_csv(tmp_path / "twice.csv", target="y", names=["y", "x", "z"], header=0)
    assert data.meta["feature_names"] == ("x", "z")


# from_hsi ---------------------------------------------------------------------------------

def _scene(seed=0):
    rng = np.random.default_rng(seed)
    cube = rng.normal(size=(10, 12, 4)).astype(np.float32)
    labels = np.zeros((10, 12), np.int64)
    labels[1:4, 1:4] = 1
    labels[6:9, 2:5] = 2
    labels[1:4, 7:10] = 1
    labels[6:9, 8:11] = 2
    return cube, labels


def test_from_hsi_left_right_and_coords():
    cube, labels = _scene()
    data = datasets.from_hsi(cube, labels, standardize=False)
    assert data.n_classes == 2 and data.meta["image_shape"] == (10, 12)
    assert (data.coords_train[:, 1] < 6).all() and (data.coords_test[:, 1] >= 6).all()
    for coords, X, y in ((data.coords_train, data.X_train, data.y_train),
                         (data.coords_test, data.X_test, data.y_test)):
        np.testing.assert_array_equal(X, cube[coords[:, 0], coords[:, 1]])
        np.testing.assert_array_equal(y, labels[coords[:, 0], coords[:, 1]] - 1)
    assert data.n_train + data.n_test == 36


def test_from_hsi_records_the_label_values_as_classes():
    cube, labels = _scene()
    assert datasets.from_hsi(cube, labels).classes == (1, 2)        # 0 is unlabelled
    everything = datasets.from_hsi(cube, labels, unlabelled=None, split="random")
    assert everything.classes == (0, 1, 2) and everything.n_classes == 3
    mask = datasets.from_hsi(cube, labels == 1, split="random")
    assert mask.classes == (False, True) and mask.class_names == ("background", "target")


def test_from_hsi_raw_bands_too_large_for_float32_warn():
    cube, labels = _scene()
    cube = cube.astype(np.float64)
    cube[..., 1] += 1e9
    with pytest.warns(DataWarning, match="1 of 4 features"):
        datasets.from_hsi(cube, labels, standardize=False)
    data = datasets.from_hsi(cube, labels)
    assert data.X_train[:, 1].std() == pytest.approx(1.0, rel=1e-4)


def test_from_hsi_mask_and_random_split():
    cube, labels = _scene()
    mask = labels == 1
    data = datasets.from_hsi(cube, mask, split="random", test_size=0.5, seed=4)
    assert data.n_train + data.n_test == 120
    assert data.class_names == ("background", "target")
    again = datasets.from_hsi(cube, mask, split="random", test_size=0.5, seed=4)
    np.testing.assert_array_equal(again.coords_test, data.coords_test)


def test_from_hsi_npz_and_mat_round_trip(tmp_path):
    cube, labels = _scene()
    direct = datasets.from_hsi(cube, labels)
    np.savez(tmp_path / "scene.npz", cube=cube, gt=labels, wl=np.arange(4.0))
    scipy.io.savemat(tmp_path / "scene.mat", {"img": cube, "gt": labels})
    for path, key in ((tmp_path / "scene.npz", "cube"), (tmp_path / "scene.mat", "img")):
        by_key = datasets.from_hsi(path, "gt", cube_key=key)
        guessed = datasets.from_hsi(path, None)
        for data in (by_key, guessed):
            np.testing.assert_array_equal(data.X_train, direct.X_train)
            np.testing.assert_array_equal(data.y_test, direct.y_test)
            np.testing.assert_array_equal(data.coords_test, direct.coords_test)


def test_from_hsi_envi_round_trip(tmp_path):
    envi = pytest.importorskip("spectral.io.envi")
    cube, labels = _scene()
    envi.save_image(str(tmp_path / "scene.hdr"), cube, dtype=np.float32, force=True)
    data = datasets.from_hsi(tmp_path / "scene.hdr", labels, standardize=False)
    np.testing.assert_array_equal(data.X_train, datasets.from_hsi(cube, labels,
                                                                 standardize=False).X_train)


def test_from_hsi_bad_files(tmp_path):
    cube, labels = _scene()
    np.savez(tmp_path / "scene.npz", cube=cube, gt=labels)
    raw = (tmp_path / "scene.npz").read_bytes()
    (tmp_path / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(uz.FileFormatError):
        datasets.from_hsi(tmp_path / "truncated.npz", "gt")
    (tmp_path / "junk.mat").write_bytes(b"not a matlab file at all" * 20)
    with pytest.raises(uz.FileFormatError):
        datasets.from_hsi(tmp_path / "junk.mat", "gt")
    (tmp_path / "scene.tif").write_bytes(b"\x00" * 16)
    with pytest.raises(uz.FileFormatError, match="unsupported"):
        datasets.from_hsi(tmp_path / "scene.tif", "gt")
    with pytest.raises(uz.InvalidInputError, match=r"labels_key|'ground'"):
        datasets.from_hsi(tmp_path / "scene.npz", "ground")
    with pytest.raises(uz.InvalidInputError, match="cube_key"):
        datasets.from_hsi(tmp_path / "scene.npz", "gt", cube_key="image")
    np.savez(tmp_path / "two.npz", a=cube, b=cube, gt=labels)
    with pytest.raises(uz.InvalidInputError, match="cube_key"):
        datasets.from_hsi(tmp_path / "two.npz", "gt")


@pytest.mark.parametrize("change, error", [
    (lambda c, lab: (c[:, :, 0], lab), uz.InvalidInputError),            # 2-D cube
    (lambda c, lab: (c, lab[:, :-1]), uz.InvalidInputError),             # shape mismatch
    (lambda c, lab: (np.where(np.ones_like(c, bool) & (np.arange(4) == 1), np.nan, c), lab),
     uz.InvalidInputError),                                           # NaN band
    (lambda c, lab: (c, lab - 1), uz.InvalidInputError),                  # negative labels
    (lambda c, lab: (c, np.zeros_like(lab)), uz.InvalidInputError),       # nothing labelled
    (lambda c, lab: (c, np.where(lab > 0, 1, 0)), uz.InvalidInputError),   # one class
    (lambda c, lab: (c, lab.astype(str)), uz.InvalidTypeError),
    (lambda c, lab: (c.astype(str), lab), uz.InvalidTypeError),
])
def test_from_hsi_bad_input(change, error):
    cube, labels = _scene()
    cube, labels = change(cube, labels)
    with pytest.raises(error):
        datasets.from_hsi(cube, labels)


def test_from_hsi_left_right_needs_labels_in_both_halves():
    cube, labels = _scene()
    labels[:, 6:] = 0
    with pytest.raises(uz.InvalidInputError, match="right half"):
        datasets.from_hsi(cube, labels, split="left-right")
