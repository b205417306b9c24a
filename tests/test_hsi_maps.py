"""HSI maps mark the ground truth and exactly the High Confidence Set's confident errors."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import uqzoo as uz
from uqzoo import plots
from uqzoo.datasets import ClassificationData
from uqzoo.errors import InvalidInputError, InvalidTypeError

DELTA = 0.2
LEVEL = 0.8


def kinds_scene(seed=0, rows=12, cols=17, S=60):
    """Pixels of three kinds with draws far from the HCS thresholds, and random labels.

    kind 0: every draw of P(target) in [0.001, 0.05] (confidently background at any
    level), kind 2: in [0.95, 0.999] (confidently target), kind 1: in [0.3, 0.7]
    (uncertain). The confident errors are then known without any quantile.
    """
    rng = np.random.default_rng(seed)
    n = rows * cols
    r, c = np.mgrid[:rows, :cols]
    coords = np.column_stack([r.ravel(), c.ravel()])
    kind = rng.integers(0, 3, n)
    y = rng.integers(0, 2, n)
    lo = np.array([0.001, 0.3, 0.95])[kind]
    hi = np.array([0.05, 0.7, 0.999])[kind]
    p = lo + (hi - lo) * rng.uniform(size=(S, n))
    draws = np.stack([1 - p, p], axis=-1)
    X = np.zeros((n, 1))
    data = ClassificationData(X, y, X, y, 2, coords_test=coords,
                              meta={"image_shape": (rows, cols)},
                              class_names=("background", "target"))
    return draws, data, kind


def marked_pixels(ax, gid):
    """(row, column) of the scatter markers with this gid on ax."""
    found = [col for col in ax.collections if col.get_gid() == gid]
    assert len(found) == 1
    xy = np.asarray(found[0].get_offsets())
    return {(int(np.rint(y)), int(np.rint(x))) for x, y in xy.reshape(-1, 2)}


def pixel_set(coords, mask):
    return {(int(a), int(b)) for a, b in coords[mask]}


def truth_edges(ax):
    found = [col for col in ax.collections if col.get_gid() == "ground_truth"]
    assert len(found) == 1
    return [np.asarray(s) for s in found[0].get_segments()]


def test_marks_equal_the_confident_errors_computed_from_kinds():
    draws, data, kind = kinds_scene()
    report = uz.evaluate(draws, data, levels=(0.5, LEVEL), delta=DELTA)
    misses = (data.y_test == 1) & (kind == 0)
    false_alarms = (data.y_test == 0) & (kind == 2)
    assert misses.any() and false_alarms.any()
    got_m, got_fa = plots.confident_errors(report, level=LEVEL)
    np.testing.assert_array_equal(got_m, misses)
    np.testing.assert_array_equal(got_fa, false_alarms)
    fig = plots.hsi_maps(report, level=LEVEL)
    hcs_ax = fig.axes[2]
    coords = data.coords_test
    assert marked_pixels(hcs_ax, "confident_misses") == pixel_set(coords, misses)
    assert marked_pixels(hcs_ax, "confident_false_alarms") == pixel_set(coords, false_alarms)
    labels = [t.get_text() for t in hcs_ax.get_legend().get_texts()]
    assert labels[0] == "ground truth: target"
    assert f"({int(misses.sum())})" in labels[1] and f"({int(false_alarms.sum())})" in labels[2]


def test_truth_outline_is_the_boundary_of_the_target_pixels():
    draws, data, _ = kinds_scene(seed=1)
    report = uz.evaluate(draws, data, levels=(LEVEL,))
    fig = plots.hsi_maps(report, level=LEVEL)
    rows, cols = data.meta["image_shape"]
    mask = np.zeros((rows, cols), bool)
    mask[tuple(data.coords_test[data.y_test == 1].T)] = True
    # Independent count: target pixels' sides that face a non-target pixel or the border.
    padded = np.pad(mask, 1)
    inner = padded[1:-1, 1:-1]
    expected = sum(int((inner & ~np.roll(padded, shift, axis)[1:-1, 1:-1]).sum())
                   for shift, axis in ((1, 0), (-1, 0), (1, 1), (-1, 1)))
    for ax in fig.axes[:3]:  # every map, not the colour bars
        edges = truth_edges(ax)
        assert len(edges) == expected
        for seg in edges:
            (x0, y0), (x1, y1) = seg
            # A unit edge on the pixel grid with a target pixel on exactly one side.
            assert abs(x1 - x0) + abs(y1 - y0) == pytest.approx(1.0)
            mx, my = (x0 + x1) / 2, (y0 + y1) / 2
            if x0 == x1:   # vertical edge between columns
                sides = [(round(my), int(mx - 0.5)), (round(my), int(mx + 0.5))]
            else:
                sides = [(int(my - 0.5), round(mx)), (int(my + 0.5), round(mx))]
            inside = [0 <= r < rows and 0 <= c < cols and mask[r, c] for r, c in sides]
            assert sum(inside) == 1


def test_axes_as_numpy_array_and_switches():
    draws, data, _ = kinds_scene()
    report = uz.evaluate(draws, data, levels=(LEVEL,))
    fig = Figure()
    grid = fig.subplots(2, 3)                         # a numpy array of Axes
    assert plots.hsi_maps(report, ax=grid[0]) is fig
    plots.hsi_maps(report, ax=grid[1], truth=False, errors=False)
    assert [c.get_gid() for c in grid[1, 2].collections] == []
    assert grid[1, 2].get_legend() is None
    plots.hsi_maps(report, ax=tuple(grid[0]))         # tuples and lists too
    for bad in (grid, grid[0, :2], [1, 2, 3]):
        with pytest.raises(InvalidTypeError, match="3 matplotlib Axes"):
            plots.hsi_maps(report, ax=bad)
    with pytest.raises(InvalidInputError, match="level"):
        plots.confident_errors(report, level=0.9)
    with pytest.raises(InvalidTypeError):
        plots.confident_errors("report")


@pytest.fixture(scope="module")
def muufl():
    data = uz.datasets.load("muufl-target", seed=0)
    # A quick Laplace fit: the maps are under test, not the method.
    result = uz.compare(data, ["laplace"], seed=0, levels=(0.5, LEVEL), delta=DELTA,
                        configs={"laplace": {"num_epochs": 300}}, num_draws=200,
                        progress_bar=False)
    return data, result


def test_muufl_marks_equal_errors_computed_from_the_draws(muufl):
    data, result = muufl
    post = result.posteriors["laplace"]
    report = uz.evaluate(post.predict_proba_draws(data.X_test, seed=0), data,
                         levels=(LEVEL,), delta=DELTA)
    p = post.predict_proba_draws(data.X_test, seed=0)[..., 1].astype(np.float64)
    lower, upper = np.quantile(p, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
    # float32 draws: a bound within rounding of a threshold may fall either way.
    tol = 1e-5
    clear = (np.abs(upper - DELTA) > tol) & (np.abs(lower - (1 - DELTA)) > tol)
    is_target = data.y_test == 1
    misses = is_target & (upper < DELTA)
    false_alarms = ~is_target & (lower > 1 - DELTA)
    fig = plots.hsi_maps(report, level=LEVEL)
    coords = data.coords_test
    got_m = marked_pixels(fig.axes[2], "confident_misses")
    got_fa = marked_pixels(fig.axes[2], "confident_false_alarms")
    assert got_m & pixel_set(coords, clear) == pixel_set(coords, misses & clear)
    assert got_fa & pixel_set(coords, clear) == pixel_set(coords, false_alarms & clear)
    # the three real target pixels are outlined: 3 isolated or touching pixels
    assert int(is_target.sum()) == 3
    assert 8 <= len(truth_edges(fig.axes[0])) <= 12


def test_muufl_comparison_maps(muufl, tmp_path):
    data, result = muufl
    fig = plots.comparison_maps(result, data, level=LEVEL)
    panels = [ax for ax in fig.axes if ax.get_images() and ax.get_title()]
    names = [ax.get_title().split("\n")[0].removeprefix("FAILED ") for ax in panels]
    assert names == ["laplace", *uz.detectors.names()]
    for ax in panels:
        assert "AUROC" in ax.get_title()
        assert len(truth_edges(ax)) >= 8
    rep = result.reports["laplace"]
    misses, false_alarms = plots.confident_errors(rep, level=LEVEL)
    assert marked_pixels(panels[0], "confident_misses") == pixel_set(data.coords_test, misses)
    assert (marked_pixels(panels[0], "confident_false_alarms")
            == pixel_set(data.coords_test, false_alarms))
    fig.savefig(tmp_path / "maps.png", dpi=80)
    with pytest.raises(InvalidTypeError, match="Comparison"):
        plots.comparison_maps(rep)


def test_cli_compare_out_writes_maps_at_an_evaluated_level(tmp_path, capsys):
    from uqzoo.cli import main

    out = tmp_path / "res"
    # 0.8 is not among the levels: the maps use the first one instead of failing.
    code = main(["compare", "--dataset", "muufl-target", "--methods", "laplace",
                 "--levels", "0.9,0.95", "--num-draws", "100", "--set",
                 "laplace.num_epochs=200", "--reference", "none", "--no-progress",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr()
    for name in ("maps.png", "maps_laplace.png"):
        assert (out / name).stat().st_size > 1000


def test_a_point_estimates_width_map_has_no_negative_colour_bar_and_one_scale_serves_all():
    draws, data, _ = kinds_scene()
    point = uz.evaluate(draws[:1], data, levels=(LEVEL,))        # one draw: width 0
    assert np.all(point.interval_width == 0)
    fig = plots.hsi_maps(point, data, level=LEVEL)
    low, high = fig.axes[1].images[0].get_clim()
    assert (low, high) == (0.0, 1.0)
    fig = plots.hsi_maps(point, data, level=LEVEL, width_max=0.25)
    assert fig.axes[1].images[0].get_clim() == (0.0, 0.25)


def test_eleven_methods_get_eleven_colours():
    draws, data, _ = kinds_scene()
    report = uz.evaluate(draws, data, levels=(LEVEL,))
    names = uz.methods.names()
    assert len(names) >= 11
    fig = plots.risk_coverage_plot(dict.fromkeys(names, report))
    colours = [line.get_color() for line in fig.axes[0].get_lines()][:len(names)]
    assert len(set(colours)) == len(names)
