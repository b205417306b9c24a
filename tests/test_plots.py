"""Plots render without error to PNG, with the expected axes."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from uqzoo import plots
from uqzoo.datasets import ClassificationData
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.evaluate import evaluate


def scene(seed=0, rows=20, cols=30, spread=15.0):
    """A toy HSI scene: a bright target blob, draws around the true probability."""
    rng = np.random.default_rng(seed)
    r, c = np.mgrid[:rows, :cols]
    coords = np.column_stack([r.ravel(), c.ravel()])
    dist = np.hypot(r - rows / 2, c - cols / 3).ravel()
    pt = 1 / (1 + np.exp(dist - 5))
    y = (rng.uniform(size=pt.size) < pt).astype(int)
    p = rng.beta(spread * pt + 0.2, spread * (1 - pt) + 0.2, size=(200, pt.size))[..., None]
    draws = np.concatenate([1 - p, p], -1)
    X = np.zeros((pt.size, 1))
    data = ClassificationData(X, y, X, y, 2, p_true_test=np.column_stack([1 - pt, pt]),
                              coords_test=coords, meta={"image_shape": (rows, cols)},
                              class_names=("background", "target"))
    return draws, data


@pytest.fixture(scope="module")
def reports():
    out = {}
    for name, spread in (("sharp", 40.0), ("vague", 6.0)):
        draws, data = scene(spread=spread)
        out[name] = evaluate(draws, data, levels=(0.5, 0.8, 0.9, 0.95))
    return out, data


def test_reliability_diagram_from_report_and_probs(tmp_path, reports):
    reps, _ = reports
    fig = plots.reliability_diagram(reps["sharp"])
    assert len(fig.axes) == 2
    fig.savefig(tmp_path / "rel.png")
    p1 = np.random.default_rng(0).uniform(size=400)
    fig2 = plots.reliability_diagram(np.column_stack([1 - p1, p1]), (p1 > 0.4).astype(int),
                                     confidence="positive_class", n_bins=8)
    fig2.savefig(tmp_path / "rel2.png")
    assert (tmp_path / "rel.png").stat().st_size > 1000


def test_reliability_diagram_into_given_axes(reports):
    from matplotlib.figure import Figure
    reps, _ = reports
    fig = Figure()
    ax = fig.subplots()
    out = plots.reliability_diagram(reps["sharp"], ax=ax, confidence="positive_class")
    assert out is fig and len(fig.axes) == 2          # the axes and its histogram twin


def test_coverage_and_risk_coverage_plots(tmp_path, reports):
    reps, _ = reports
    fig = plots.coverage_plot(reps)
    assert len(fig.axes) == 2
    cov_ax = fig.axes[0]
    assert len(cov_ax.get_legend().get_texts()) == 3    # band + two methods
    fig.savefig(tmp_path / "coverage.png")
    own = Figure()
    axes = own.subplots(1, 2)                      # a numpy array, as plt.subplots gives
    assert plots.coverage_plot(reps, ax=axes) is own
    assert plots.coverage_plot(reps, ax=list(axes)) is own
    with pytest.raises(InvalidTypeError, match="pair of matplotlib Axes"):
        plots.coverage_plot(reps, ax=axes[0])
    with pytest.raises(InvalidTypeError, match="pair of matplotlib Axes"):
        plots.coverage_plot(reps, ax=(axes[0], "x"))
    fig = plots.risk_coverage_plot(reps)
    assert len(fig.axes[0].get_lines()) == 2
    fig.savefig(tmp_path / "rc.png")


def test_hsi_maps(tmp_path, reports):
    reps, _data = reports
    fig = plots.hsi_maps(reps["vague"], level=0.8)
    assert len(fig.axes) == 6
    hcs_image = fig.axes[2].get_images()[0].get_array()
    assert set(np.unique(hcs_image.compressed())) <= {0.0, 1.0, 2.0}
    fig.savefig(tmp_path / "maps.png")


def test_plot_errors(reports):
    reps, _ = reports
    with pytest.raises(InvalidTypeError):
        plots.coverage_plot({"x": 3})
    with pytest.raises(InvalidInputError, match="level"):
        plots.hsi_maps(reps["sharp"], level=0.7)
    rng = np.random.default_rng(0)
    no_coords = evaluate(rng.dirichlet([1, 1], size=(20, 30)), rng.integers(0, 2, 30))
    with pytest.raises(InvalidInputError, match="image_shape"):
        plots.hsi_maps(no_coords)
    with pytest.raises(InvalidInputError, match="coverage"):
        plots.coverage_plot({"no truth": no_coords})
    with pytest.raises(InvalidInputError, match="y"):
        plots.reliability_diagram(np.array([[0.2, 0.8]]))


def test_reliability_diagram_names_the_positive_class(reports):
    reps, _ = reports
    fig = plots.reliability_diagram(reps["sharp"], confidence="positive_class")
    assert fig.axes[1].get_xlabel() == "P(y = target)"     # the data's class name, not "1"
    p1 = np.linspace(0.05, 0.95, 40)
    bare = plots.reliability_diagram(np.column_stack([1 - p1, p1]), (p1 > 0.5).astype(int),
                                     confidence="positive_class")
    assert bare.axes[1].get_xlabel() == "P(y = 1)"
