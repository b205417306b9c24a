import numpy as np
import pandas as pd
import pytest
import scipy.io

import uqzoo as uz
import uqzoo.datasets as datasets


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
    first = np.flatnonzero((raw.X_train[:, 0] == X[:, 0].astype(np.float32)[0]))
    assert ordered.class_names == ("emu", "dog", "cat")
    if first.size:
        assert raw.y_train[first[0]] == 2  # "cat" is class 2 in this order


@pytest.mark.parametrize("change, error", [
    (lambda X, y: (X[:, 0], y), uz.InvalidInputError),                      # 1-D X
    (lambda X, y: (np.where(np.eye(60, 3) > 0, np.nan, X), y), uz.InvalidInputError),
    (lambda X, y: (X, y[:-1]), uz.InvalidInputError),                       # length mismatch
    (lambda X, y: (X, y - 1), uz.InvalidInputError),                        # label -1
    (lambda X, y: (X, np.zeros_like(y)), uz.InvalidInputError),             # one class
    (lambda X, y: (X[:0], y[:0]), uz.InvalidInputError),                    # empty
    (lambda X, y: ("X", y), uz.InvalidTypeError),
    (lambda X, y: (X, y + 0.5), uz.InvalidInputError),                      # not whole
])
def test_from_arrays_bad_input(change, error):
    X, y = _toy()
    X, y = change(X, y)
    with pytest.raises(error):
        datasets.from_arrays(X, y)


def test_from_arrays_bad_options():
    X, y = _toy()
    with pytest.raises(uz.InvalidInputError, match="n_classes|labels"):
        datasets.from_arrays(X, y * 3, n_classes=2)
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


def test_from_csv_errors(tmp_path):
    good = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    path = tmp_path / "good.csv"
    good.to_csv(path, index=False)
    with pytest.raises(uz.InvalidInputError, match="'label'.*columns"):
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
    with pytest.raises(uz.InvalidInputError, match="labels_key|'ground'"):
        datasets.from_hsi(tmp_path / "scene.npz", "ground")
    with pytest.raises(uz.InvalidInputError, match="cube_key"):
        datasets.from_hsi(tmp_path / "scene.npz", "gt", cube_key="image")
    np.savez(tmp_path / "two.npz", a=cube, b=cube, gt=labels)
    with pytest.raises(uz.InvalidInputError, match="cube_key"):
        datasets.from_hsi(tmp_path / "two.npz", "gt")


@pytest.mark.parametrize("change, error", [
    (lambda c, l: (c[:, :, 0], l), uz.InvalidInputError),            # 2-D cube
    (lambda c, l: (c, l[:, :-1]), uz.InvalidInputError),             # shape mismatch
    (lambda c, l: (np.where(np.ones_like(c, bool) & (np.arange(4) == 1), np.nan, c), l),
     uz.InvalidInputError),                                           # NaN band
    (lambda c, l: (c, l - 1), uz.InvalidInputError),                  # negative labels
    (lambda c, l: (c, np.zeros_like(l)), uz.InvalidInputError),       # nothing labelled
    (lambda c, l: (c, np.where(l > 0, 1, 0)), uz.InvalidInputError),   # one class
    (lambda c, l: (c, l.astype(str)), uz.InvalidTypeError),
    (lambda c, l: (c.astype(str), l), uz.InvalidTypeError),
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
        datasets.from_hsi(cube, labels)
