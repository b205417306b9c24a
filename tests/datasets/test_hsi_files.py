"""from_hsi on scenes from files: label files, variable names, the unlabelled value,
target-vs-background, spatial splits with a guard band, and errors that name classes
by the labels the user wrote."""

import itertools
import re

import numpy as np
import pytest
import scipy.io
from PIL import Image

import uqzoo as uz
import uqzoo.datasets as datasets
from uqzoo.datasets._splits import block_grid
from uqzoo.datasets.real import _data_file


def _scene(seed=0, height=16, width=18, bands=4):
    """A small multi-class scene: labels 0 (unlabelled), 1, 2 and a rare 3."""
    rng = np.random.default_rng(seed)
    cube = rng.normal(size=(height, width, bands)).astype(np.float32)
    labels = np.zeros((height, width), np.int64)
    labels[1:6, 1:8] = 1
    labels[9:15, 2:7] = 2
    labels[2:7, 10:17] = 2
    labels[10:15, 10:16] = 1
    labels[0, 1:3] = 3            # a rare class: two pixels top left, two bottom right
    labels[15, 15:17] = 3
    return cube, labels


def _target_mask(height=40, width=40):
    """A 0/1 target mask with three small 'planes' (rare: 27 of 1600 pixels)."""
    mask = np.zeros((height, width), np.uint8)
    mask[5:8, 6:9] = 1
    mask[20:23, 30:33] = 1
    mask[33:36, 12:15] = 1
    cube = np.random.default_rng(1).normal(size=(height, width, 3))
    cube[mask == 1] += 2.0
    return cube, mask


def _all_coords(data):
    return np.concatenate([data.coords_train, data.coords_test])


def _as_set(coords):
    return {(int(r), int(c)) for r, c in coords}


def _same(a, b):
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    np.testing.assert_array_equal(a.coords_test, b.coords_test)
    np.testing.assert_array_equal(a.coords_train, b.coords_train)
    assert a.classes == b.classes


# label files ------------------------------------------------------------------------------

def test_labels_from_separate_files_of_every_kind(tmp_path):
    cube, labels = _scene()
    direct = datasets.from_hsi(cube, labels)
    scipy.io.savemat(tmp_path / "cube.mat", {"img": cube, "wl": np.arange(4.0)})
    # the label file holds other variables too; the one of the cube's image shape is picked
    scipy.io.savemat(tmp_path / "gt.mat", {"gt": labels, "names": np.arange(3.0)[None],
                                           "crop": labels[:5, :5]})
    np.savez(tmp_path / "gt.npz", map=labels.astype(np.uint8))
    np.save(tmp_path / "gt.npy", labels.astype(np.int16))
    Image.fromarray(labels.astype(np.uint8), mode="L").save(tmp_path / "gt_grey.png")
    palette = Image.fromarray(labels.astype(np.uint8), mode="P")
    palette.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255] * 64)
    palette.save(tmp_path / "gt_palette.png")
    for labels_file in ("gt.mat", "gt.npz", "gt.npy", "gt_grey.png", "gt_palette.png"):
        for cube_file in (tmp_path / "cube.mat", str(tmp_path / "cube.mat")):
            data = datasets.from_hsi(cube_file, str(tmp_path / labels_file))
            _same(data, direct)
            assert data.meta["labels_source"] == str(tmp_path / labels_file)
    as_path = datasets.from_hsi(tmp_path / "cube.mat", tmp_path / "gt.mat")
    assert as_path.meta["cube_key"] == "img" and as_path.meta["labels_key"] == "gt"
    assert as_path.name == "cube.mat"


def test_one_bit_png_is_a_boolean_mask(tmp_path):
    cube, mask = _target_mask()
    Image.fromarray(mask.astype(bool)).convert("1").save(tmp_path / "mask.png")
    data = datasets.from_hsi(cube, tmp_path / "mask.png", split="top-bottom")
    _same(data, datasets.from_hsi(cube, mask.astype(bool), split="top-bottom"))
    assert data.classes == (False, True) and data.class_names == ("background", "target")


def test_colour_png_is_refused(tmp_path):
    cube, labels = _scene()
    rgb = np.stack([labels, labels * 2, labels], axis=-1).astype(np.uint8)
    Image.fromarray(rgb, mode="RGB").save(tmp_path / "colour.png")
    with pytest.raises(uz.InvalidInputError, match=r"colour PNG.*grayscale"):
        datasets.from_hsi(cube, tmp_path / "colour.png")
    grey_as_rgb = np.repeat(labels[..., None], 3, axis=-1).astype(np.uint8)
    Image.fromarray(grey_as_rgb, mode="RGB").save(tmp_path / "grey.png")
    _same(datasets.from_hsi(cube, tmp_path / "grey.png"), datasets.from_hsi(cube, labels))


def test_envi_label_file(tmp_path):
    envi = pytest.importorskip("spectral.io.envi")
    cube, labels = _scene()
    envi.save_image(str(tmp_path / "gt.hdr"), labels.astype(np.uint8)[..., None],
                    dtype=np.uint8, force=True)
    _same(datasets.from_hsi(cube, tmp_path / "gt.hdr"), datasets.from_hsi(cube, labels))


def test_an_envi_header_larger_than_its_data_file_says_so(tmp_path):
    # issue 25 item 8: a header declaring 40 TB gave "cannot read ENVI file ...: " and nothing
    envi = pytest.importorskip("spectral.io.envi")
    cube, labels = _scene()
    envi.save_image(str(tmp_path / "cube.hdr"), cube, dtype=np.float32, force=True)
    header = (tmp_path / "cube.hdr").read_text()
    header = re.sub(r"lines = \d+", "lines = 100000", header)
    header = re.sub(r"samples = \d+", "samples = 100000", header)
    header = re.sub(r"bands = \d+", "bands = 1000", header)
    (tmp_path / "cube.hdr").write_text(header)
    with pytest.raises(uz.FileFormatError, match=r"header declares \(100000, 100000, 1000\) "
                                                 r"\(40,000,000,000,000 bytes\) but the data "
                                                 r"file .* holds 4,608"):
        datasets.from_hsi(tmp_path / "cube.hdr", labels)


def test_variables_found_or_named_and_ambiguity_lists_them(tmp_path):
    cube, labels = _scene()
    scipy.io.savemat(tmp_path / "two.mat", {"a": cube, "b": cube * 2, "gt": labels,
                                            "other_gt": labels})
    with pytest.raises(uz.InvalidInputError,
                       match=r"cannot tell which array .* is the cube: \['a', 'b'\].*"
                             r"a \(16, 18, 4\) float32.*pass cube_key"):
        datasets.from_hsi(tmp_path / "two.mat", labels)
    with pytest.raises(uz.InvalidInputError,
                       match=r"is the labels: \['gt', 'other_gt'\].*labels_key"):
        datasets.from_hsi(tmp_path / "two.mat", None, cube_key="a")
    data = datasets.from_hsi(tmp_path / "two.mat", None, cube_key="b", labels_key="gt")
    assert data.meta["cube_key"] == "b" and data.meta["labels_key"] == "gt"
    np.savez(tmp_path / "no_gt.npz", gt=labels[:, :-1], wl=np.arange(4))
    with pytest.raises(uz.InvalidInputError,
                       match=r"holds no 2-D arrays of the cube's image shape \(16, 18\).*"
                             r"gt \(16, 17\) int64, wl \(4,\) int64"):
        datasets.from_hsi(cube, tmp_path / "no_gt.npz")
    with pytest.raises(uz.InvalidInputError, match=r"labels_key='mask' is not in .*gt \(16, 17\)"):
        datasets.from_hsi(cube, tmp_path / "no_gt.npz", labels_key="mask")
    with pytest.raises(uz.InvalidInputError, match="labels is given as an array"):
        datasets.from_hsi(cube, labels, labels_key="gt")
    with pytest.raises(uz.InvalidInputError, match="cube is an array cube"):
        datasets.from_hsi(cube, "gt")
    with pytest.raises(uz.FileFormatError, match="labels: no such file"):
        datasets.from_hsi(cube, str(tmp_path / "absent.mat"))
    (tmp_path / "gt.tif").write_bytes(b"\x00" * 16)
    with pytest.raises(uz.FileFormatError, match=r"unsupported labels file type '\.tif'"):
        datasets.from_hsi(cube, tmp_path / "gt.tif")


# the unlabelled value and target-vs-background ----------------------------------------------

def test_a_zero_one_mask_needs_unlabelled_none_and_the_error_says_so():
    cube, mask = _target_mask()
    with pytest.raises(uz.InvalidInputError) as caught:
        datasets.from_hsi(cube, mask)
    message = str(caught.value)
    # names the label as written (1), not its class index, and points to the fix
    assert "all hold 1 (27 pixels)" in message and "pass unlabelled=None" in message
    assert "class [0]" not in message
    data = datasets.from_hsi(cube, mask, unlabelled=None, split="blocks", seed=0)
    assert data.classes == (0, 1) and data.meta["options"]["unlabelled"] is None
    assert data.n_train + data.n_test + len(data.meta["guard_coords"]) == 40 * 40


def test_other_unlabelled_values():
    cube, labels = _scene()
    shifted = np.where(labels == 0, 255, labels)
    _same(datasets.from_hsi(cube, shifted, unlabelled=255), datasets.from_hsi(cube, labels))
    negative = np.where(labels == 0, -1, labels)
    _same(datasets.from_hsi(cube, negative, unlabelled=-1), datasets.from_hsi(cube, labels))
    with pytest.raises(uz.InvalidInputError, match=r"labels must be >= 0, found -1.*unlabelled=-1"):
        datasets.from_hsi(cube, negative)
    everything = datasets.from_hsi(cube, labels, unlabelled=None, split="blocks", seed=0)
    assert everything.classes == (0, 1, 2, 3)
    with pytest.raises(uz.InvalidTypeError, match="unlabelled"):
        datasets.from_hsi(cube, labels, unlabelled="none")


def test_classes_are_the_labels_present_not_a_range():
    cube, labels = _scene()
    gappy = np.where(labels == 2, 7, labels)        # labels 1, 3, 7
    data = datasets.from_hsi(cube, gappy, split="blocks", seed=0)
    assert data.classes == (1, 3, 7) and data.n_classes == 3
    coords = data.coords_test
    np.testing.assert_array_equal(np.array(data.classes)[data.y_test],
                                  gappy[coords[:, 0], coords[:, 1]])


def test_target_class_by_label_value_or_name():
    cube, labels = _scene()
    data = datasets.from_hsi(cube, labels, target_class=2, split="blocks", seed=0)
    assert data.classes == (False, True) and data.class_names == ("background", "2")
    assert data.meta["target_class"] == 2 and data.meta["options"]["target_class"] == 2
    for coords, y in ((data.coords_train, data.y_train), (data.coords_test, data.y_test)):
        np.testing.assert_array_equal(y, labels[coords[:, 0], coords[:, 1]] == 2)
    assert _as_set(_all_coords(data)) | _as_set(data.meta["guard_coords"]) == \
        _as_set(np.argwhere(labels > 0))                     # unlabelled pixels stay out
    named = datasets.from_hsi(cube, labels, target_class="road", split="blocks", seed=0,
                              class_names={2: "road", 1: "grass"})
    assert named.class_names == ("background", "road") and named.meta["target_class"] == 2
    np.testing.assert_array_equal(named.y_test, data.y_test)
    listed = datasets.from_hsi(cube, labels, target_class="road", split="blocks", seed=0,
                               class_names=["grass", "road", "plane"])
    np.testing.assert_array_equal(listed.y_test, data.y_test)
    mask = datasets.from_hsi(cube, labels > 0, target_class=True, split="top-bottom")
    assert mask.classes == (False, True) and mask.class_names == ("background", "target")


def test_target_class_errors_name_the_labels():
    cube, labels = _scene()
    with pytest.raises(uz.InvalidInputError, match=r"target_class=0 is the unlabelled value.*"
                                                   r"unlabelled=None"):
        datasets.from_hsi(cube, labels, target_class=0)
    with pytest.raises(uz.InvalidInputError, match=r"target_class=9 is not a label.*\[1, 2, 3\]"):
        datasets.from_hsi(cube, labels, target_class=9)
    with pytest.raises(uz.InvalidInputError, match=r"'plane' is not a class name.*class_names"):
        datasets.from_hsi(cube, labels, target_class="plane")
    with pytest.raises(uz.InvalidInputError, match="class_names must hold one name per class"):
        datasets.from_hsi(cube, labels, class_names=["a", "b"])


# splits and the guard band ------------------------------------------------------------------

def _chebyshev_band(labelled, test, guard):
    """Labelled non-test pixels within Chebyshev distance `guard` of a test pixel, by brute
    force over all pixel pairs (independent of the library's maximum filter)."""
    test_rc = np.argwhere(test)
    band = set()
    for r, c in np.argwhere(labelled & ~test):
        if test_rc.size and np.max(np.abs(test_rc - [r, c]), axis=1).min() <= guard:
            band.add((int(r), int(c)))
    return band


@pytest.mark.parametrize("split, options", [
    ("left-right", {}), ("left-right", {"split_fraction": 0.4}),
    ("top-bottom", {"split_fraction": 0.6}), ("blocks", {"seed": 3}),
    ("blocks", {"block_size": (4, 6), "test_size": 0.4, "seed": 1}),
])
@pytest.mark.parametrize("guard", [0, 1, 2, 3])
def test_guard_band_drops_exactly_the_pixels_near_a_test_pixel(split, options, guard):
    cube, labels = _scene()
    labels = np.where(labels == 3, 2, labels)     # no rare class: every layout is feasible
    data = datasets.from_hsi(cube, labels, split=split, guard=guard, **options)
    labelled = labels > 0
    test = np.zeros(labels.shape, bool)
    test[data.coords_test[:, 0], data.coords_test[:, 1]] = True
    band = _chebyshev_band(labelled, test, guard)
    assert _as_set(data.meta["guard_coords"]) == band
    assert _as_set(data.coords_train) == _as_set(np.argwhere(labelled & ~test)) - band
    assert data.meta["options"]["guard"] == guard
    assert data.meta["class_counts_guard"].sum() == len(band)
    if guard == 0:
        assert not band
    if split == "left-right":
        boundary = int(np.floor(options.get("split_fraction", 0.5) * 18))
        assert data.meta["split_boundary"] == boundary
        right = np.argwhere(labelled[:, boundary:]) + np.array([0, boundary])
        assert _as_set(data.coords_test) == _as_set(right)
    if split == "top-bottom":
        assert (data.coords_test[:, 0] >= 9).all() and (data.coords_train[:, 0] < 9).all()


def test_default_guard_is_two_for_spatial_splits_and_zero_for_random():
    cube, labels = _scene()
    for split in ("left-right", "top-bottom", "blocks"):
        assert datasets.from_hsi(cube, labels, split=split).meta["options"]["guard"] == 2
    random = datasets.from_hsi(cube, labels, split="random")
    assert random.meta["options"]["guard"] == 0 and len(random.meta["guard_coords"]) == 0


def test_blocks_are_whole_seeded_and_hold_every_class_on_both_sides():
    cube, labels = _scene()
    block = (4, 5)
    grid = block_grid(labels.shape, block)
    test_sets = []
    for seed in range(6):
        data = datasets.from_hsi(cube, labels, split="blocks", block_size=block, seed=seed,
                                 guard=1)
        test = np.zeros(labels.shape, bool)
        test[data.coords_test[:, 0], data.coords_test[:, 1]] = True
        for b in np.unique(grid[labels > 0]):
            in_block = test[(grid == b) & (labels > 0)]
            assert in_block.all() or not in_block.any()    # whole blocks test
        # the rare class 3 (4 pixels, two places) trains and tests
        assert (data.meta["class_counts_train"] > 0).all()
        assert (data.meta["class_counts_test"] > 0).all()
        again = datasets.from_hsi(cube, labels, split="blocks", block_size=block, seed=seed,
                                  guard=1)
        _same(again, data)
        test_sets.append(_as_set(data.coords_test))
    assert len({frozenset(s) for s in test_sets}) > 1          # the seed matters


def test_rare_targets_land_on_both_sides_of_a_block_split():
    cube, mask = _target_mask()
    for seed in range(10):
        data = datasets.from_hsi(cube, mask, unlabelled=None, split="blocks", seed=seed)
        assert data.meta["class_counts_test"][1] > 0 and data.meta["class_counts_train"][1] > 0
        share = data.n_test / (data.n_test + data.n_train)
        assert 0.1 < share < 0.35


def test_a_split_that_starves_a_class_names_its_label_and_suggests_another():
    cube, mask = _target_mask()
    mask[:, 20:] = 0                            # every plane on the left
    with pytest.raises(uz.InvalidInputError) as caught:
        datasets.from_hsi(cube, mask, unlabelled=None, class_names=["ground", "plane"],
                          split="left-right")
    message = str(caught.value)
    assert "label 1 ('plane') with no test pixel" in message
    assert "18 labelled: 18 train, 0 test" in message and "split='blocks'" in message
    with pytest.raises(uz.InvalidInputError,
                       match=r"the target, label 1 \('plane'\) with no test pixel"):
        datasets.from_hsi(cube, mask, unlabelled=None, target_class="plane",
                          class_names={1: "plane"}, split="left-right")
    # the default split puts planes on both sides of the same scene
    data = datasets.from_hsi(cube, mask, unlabelled=None)
    assert data.meta["class_counts_train"][1] > 0 and data.meta["class_counts_test"][1] > 0
    # a guard wide enough to swallow a class's training pixels says so
    cube, labels = _scene()
    thin = np.zeros_like(labels)
    thin[:, 7:11] = 1
    thin[:, 2:4] = 2
    thin[:, 14:16] = 2
    with pytest.raises(uz.InvalidInputError,
                       match=r"label 1 with no training pixel .*guard band.*or guard=1 \(the"):
        datasets.from_hsi(cube, thin, guard=3, split="left-right")
    # one labelled pixel cannot both train and test
    single = labels.copy()
    single[single == 3] = 0
    single[0, 0] = 5
    with pytest.raises(uz.InvalidInputError, match=r"label 5 with no test pixel.*random split"):
        datasets.from_hsi(cube, single, split="random")
    with pytest.raises(uz.InvalidInputError, match=r"label 5 with no test pixel"):
        datasets.from_hsi(cube, single, split="blocks")


@pytest.mark.parametrize(("split", "guard"), [("blocks", 10**9), ("blocks", 2**31 - 1),
                                              ("stratified", 10**8), ("left-right", 100)])
def test_a_guard_wider_than_the_scene_is_refused_naming_the_largest_that_fits(split, guard):
    # issue 25 item 2: guard=10**9 once dropped no pixel (as guard=0), 10**8 hung and
    # 2**31 - 1 raised a bare MemoryError; 100 was refused without a usable guard.
    cube, labels = _scene()
    with pytest.raises(uz.InvalidInputError, match=r"does not fit the 16 × 18 scene") as caught:
        datasets.from_hsi(cube, labels, split=split, guard=guard)
    largest = int(str(caught.value).rsplit(" ", 1)[1])
    data = datasets.from_hsi(cube, labels, split=split, guard=largest)
    assert data.meta["options"]["guard"] == largest and len(data.meta["guard_coords"]) > 0
    with pytest.raises(uz.InvalidInputError, match=rf"or guard={largest} \(the largest"):
        datasets.from_hsi(cube, labels, split=split, guard=largest + 1)


def test_an_array_header_larger_than_its_file_is_refused_before_allocation(tmp_path):
    # issue 25 item 3: a 200-byte .npy claiming 36 TiB was allocated before reading
    import io
    import zipfile

    from numpy.lib import format as npy

    header = io.BytesIO()
    npy.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                        "shape": (2**20, 2**20, 4)})
    (tmp_path / "huge.npy").write_bytes(header.getvalue() + bytes(64))
    with zipfile.ZipFile(tmp_path / "huge.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("cube.npy", header.getvalue() + bytes(64))
    labels = np.zeros((4, 5), np.int64)
    for name in ("huge.npy", "huge.npz"):
        with pytest.raises(uz.FileFormatError,
                           match=r"header declares 35,184,372,088,832 bytes of data but the "
                                 r"file holds at most \d"):
            datasets.from_hsi(tmp_path / name, labels)


def test_an_npz_member_not_asked_for_is_never_decompressed(tmp_path, monkeypatch):
    # issue 25 item 1: a 1.5 MB .npz holding an unused 1.5 GiB array of zeros took 1.6 GB,
    # every member being decompressed when the file was opened
    import zipfile

    cube, labels = _scene()
    np.savez_compressed(tmp_path / "scene.npz", cube=cube, gt=labels,
                        unused=np.zeros((2, 3), np.float32))
    opened = []
    real_open = zipfile.ZipFile.open

    def watched(self, name, *args, **kwargs):
        opened.append(getattr(name, "filename", name))
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", watched)
    data = datasets.from_hsi(tmp_path / "scene.npz", None, cube_key="cube", labels_key="gt")
    assert data.meta["cube_key"] == "cube" and data.meta["labels_key"] == "gt"
    # each member's header is read once; the data only of the two picked
    assert opened.count("unused.npy") == 1
    assert opened.count("cube.npy") == 2 and opened.count("gt.npy") == 2


def test_split_options_apply_only_where_they_mean_something():
    cube, labels = _scene()
    cases = [({"split": "left-right", "test_size": 0.3}, "test_size=0.3 applies to split"),
             ({"split": "blocks", "split_fraction": 0.3}, "split_fraction=0.3 applies"),
             ({"split": "random", "block_size": 4}, "block_size=4 applies to split 'blocks'"),
             ({"split": "random", "guard": 2}, "guard=2 applies to the spatial splits"),
             ({"split": "checkerboard"}, "split must be one of"),
             ({"split": "left-right", "split_fraction": 1.0}, r"split_fraction must lie in"),
             ({"split": "left-right", "split_fraction": 0.05}, "no labelled pixel in the left"),
             ({"guard": -1}, "guard must be >= 0"),
             ({"split": "blocks", "block_size": (4, 0)}, "block_size width must be >= 1")]
    for options, needle in cases:
        with pytest.raises(uz.InvalidInputError, match=needle):
            datasets.from_hsi(cube, labels, **options)
    data = datasets.from_hsi(cube, labels, split="random", guard=0, test_size=0.5, seed=2)
    assert data.meta["options"] == {
        "split": "random", "split_fraction": None, "test_size": 0.5, "block_size": None,
        "guard": 0, "seed": 2, "unlabelled": 0, "target_class": None, "standardize": True}


# the shipped MUUFL Gulfport crop, saved as a user would have it ------------------------------

def test_muufl_crop_from_mat_files_with_its_three_real_targets(tmp_path):
    with _data_file("muufl_gulfport_subsets.npz") as z:
        cube, truth = z["tgtdet_cube"], z["tgtdet_gt"]
        wavelengths = z["wavelengths_nm"]
    scipy.io.savemat(tmp_path / "muufl.mat", {"hsi": cube, "wavelengths": wavelengths[None]})
    scipy.io.savemat(tmp_path / "targets.mat", {"gt": truth})
    with pytest.raises(uz.InvalidInputError, match=r"all hold 1 \(3 pixels\).*unlabelled=None"):
        datasets.from_hsi(tmp_path / "muufl.mat", tmp_path / "targets.mat")
    # the three targets lie in the left half: a left-right split cannot test them
    with pytest.raises(uz.InvalidInputError, match="label 1 with no test pixel"):
        datasets.from_hsi(tmp_path / "muufl.mat", tmp_path / "targets.mat", unlabelled=None,
                          split="left-right")
    # the default (stratified) split tests and trains them
    data = datasets.from_hsi(tmp_path / "muufl.mat", tmp_path / "targets.mat", unlabelled=None)
    assert data.meta["class_counts_test"][1] >= 1 and data.meta["class_counts_train"][1] >= 1
    for seed in range(3):
        data = datasets.from_hsi(tmp_path / "muufl.mat", tmp_path / "targets.mat",
                                 unlabelled=None, split="blocks", seed=seed)
        assert data.n_features == 72 and data.classes == (0, 1)
        assert data.meta["class_counts_test"][1] >= 1 and data.meta["class_counts_train"][1] >= 1
        coords = _all_coords(data)
        np.testing.assert_array_equal(np.concatenate([data.y_train, data.y_test]),
                                      truth[coords[:, 0], coords[:, 1]])
    pairs = itertools.product(range(36), range(36))
    assert _as_set(_all_coords(data)) | _as_set(data.meta["guard_coords"]) == set(pairs)


def _public_scene_like():
    """100 × 100, 57 target pixels: six 3 × 3 objects right of centre and three pixels left,
    the layout of the public AVIRIS crop of issue #26 (left-right trained 1 target)."""
    labels = np.ones((100, 100), np.int64)
    for r, c in [(10, 60), (30, 85), (55, 70), (75, 90), (88, 58), (45, 52)]:
        labels[r:r + 3, c:c + 3] = 2
    labels[62, 47:49] = 2
    labels[20, 20] = 2
    cube = np.random.default_rng(0).normal(size=(100, 100, 6)) + (labels == 2)[..., None]
    return cube, labels


def test_the_default_split_gives_rare_targets_enough_pixels_on_both_sides():
    cube, labels = _public_scene_like()
    halves = datasets.from_hsi(cube, labels, target_class=2, split="left-right")
    assert halves.meta["class_counts_train"][1] == 2          # the issue: almost none train
    for seed in range(5):
        data = datasets.from_hsi(cube, labels, target_class=2, seed=seed)
        assert data.meta["options"]["split"] == "stratified"
        assert data.meta["options"]["test_size"] == 0.5
        # at least the 20 the data-fit warnings ask for, on both sides
        assert data.meta["class_counts_train"][1] >= 20
        assert data.meta["class_counts_test"][1] >= 20
        assert data.meta["class_counts_guard"].sum() < 0.2 * data.n_train


def test_stratified_refines_the_grid_only_when_a_class_needs_it():
    cube, labels = _scene()
    data = datasets.from_hsi(cube, labels, seed=0, guard=1)
    assert (data.meta["class_counts_train"] > 0).all()
    assert (data.meta["class_counts_test"] > 0).all()
    block = data.meta["options"]["block_size"]
    grid = block_grid(labels.shape, block)
    test = np.zeros(labels.shape, bool)
    test[data.coords_test[:, 0], data.coords_test[:, 1]] = True
    for b in np.unique(grid[labels > 0]):
        in_block = test[(grid == b) & (labels > 0)]
        assert in_block.all() or not in_block.any()           # whole blocks test
    _same(datasets.from_hsi(cube, labels, seed=0, guard=1), data)
    with pytest.raises(uz.InvalidInputError, match="block_size=4 applies to split 'blocks'"):
        datasets.from_hsi(cube, labels, block_size=4)
