"""Saving and loading posteriors: bit-exact round trips of real fits, clear
errors for truncated or foreign files, and a save that cannot destroy a good file."""

import warnings

import numpy as np
import pytest
import xarray as xr

import uqzoo as uz
from uqzoo import io
from uqzoo.testing import tiny_data


@pytest.fixture(scope="module")
def fitted():
    """Real posteriors from the tiny configs the conformance suite uses (compiled once)."""
    data = tiny_data()
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", uz.ConvergenceWarning)
        return {
            "hmc": uz.fit("hmc", spec, data, seed=3, num_warmup=20, num_samples=10,
                          num_chains=2, progress_bar=False),
            "mfvi": uz.fit("mfvi", spec, data, seed=3, num_steps=200, num_samples=20,
                           progress_bar=False),
        }


def assert_identical(a, b):
    assert (a.method, a.seed, a.config, a.spec, a.sample_shape, a.converged, a.warnings,
            a.predictive) == (b.method, b.seed, b.config, b.spec, b.sample_shape, b.converged,
                              b.warnings, b.predictive)
    for mine, theirs in ((a.draws, b.draws), (a.sample_stats, b.sample_stats)):
        assert mine.keys() == theirs.keys()
        for key in mine:
            assert mine[key].dtype == theirs[key].dtype, key
            np.testing.assert_array_equal(mine[key], theirs[key])
    assert a.diagnostics.keys() == b.diagnostics.keys()
    for key, value in a.diagnostics.items():
        other = b.diagnostics[key]
        assert type(value) is type(other), key
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype, key
            np.testing.assert_array_equal(value, other)
        elif value == value:           # NaN scalars compare unequal to themselves
            assert value == other, key


@pytest.mark.parametrize("method", ["hmc", "mfvi"])
def test_round_trip_is_bit_exact(fitted, tmp_path, method):
    post = fitted[method]
    post.save(tmp_path / "post.nc")
    assert_identical(post, uz.load_posterior(tmp_path / "post.nc"))


def test_datatree_has_the_arviz_groups(fitted):
    tree = fitted["hmc"].to_datatree()
    assert {"posterior", "sample_stats"} <= set(tree.children)
    weight = tree["posterior"]["layers.0.weight"]
    assert weight.dims[:2] == ("chain", "draw")
    assert weight.shape[:2] == fitted["hmc"].sample_shape
    assert tree["sample_stats"]["diverging"].dims == ("chain", "draw")


def test_truncated_file_is_a_clear_error(fitted, tmp_path):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])
    with pytest.raises(uz.FileFormatError, match="truncated or foreign"):
        uz.load_posterior(path)


def test_foreign_netcdf_is_a_clear_error(tmp_path):
    path = tmp_path / "foreign.nc"
    xr.Dataset({"temperature": ("time", np.arange(3.0))}).to_netcdf(path, engine="h5netcdf")
    with pytest.raises(uz.FileFormatError, match="not a uqzoo posterior"):
        uz.load_posterior(path)


def test_text_file_and_missing_file_are_clear_errors(tmp_path):
    path = tmp_path / "notes.nc"
    path.write_text("not a netCDF file")
    with pytest.raises(uz.FileFormatError, match="not a readable netCDF"):
        uz.load_posterior(path)
    with pytest.raises(uz.FileFormatError, match="no posterior file"):
        uz.load_posterior(tmp_path / "absent.nc")


def test_failed_save_leaves_the_existing_file_intact(fitted, tmp_path, monkeypatch):
    path = tmp_path / "post.nc"
    fitted["hmc"].save(path)
    before = path.read_bytes()

    def crash_midway(self, filepath, *args, **kwargs):
        with open(filepath, "wb") as f:
            f.write(b"\x89HDF\r\n half a file")
        raise OSError("disk full")

    monkeypatch.setattr(xr.DataTree, "to_netcdf", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        fitted["mfvi"].save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["post.nc"]      # no temporary left
    assert_identical(fitted["hmc"], uz.load_posterior(path))


def test_save_into_a_missing_folder_is_a_clear_error(fitted, tmp_path):
    with pytest.raises(uz.FileFormatError, match="does not exist"):
        fitted["mfvi"].save(tmp_path / "nowhere" / "post.nc")


def test_no_pickle_in_the_file(fitted, tmp_path):
    path = tmp_path / "post.nc"
    fitted["mfvi"].save(path)
    tree = xr.open_datatree(path, engine=io._ENGINE)
    try:
        for node in tree.subtree:
            for var in node.dataset.data_vars.values():
                assert var.dtype != object
    finally:
        tree.close()
