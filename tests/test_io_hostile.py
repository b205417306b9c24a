"""Hostile posterior files: ``load_posterior`` reads only what it expects (issue 9).

Each file here is a valid saved posterior altered with h5py the way an attacker
(or a careless tool) could: data pointing into other files, sizes declared but
never written, CF attributes that rescale weights, attributes of the wrong
type. Every one must end in a ``FileFormatError`` naming what is wrong --
never another file's bytes, never a large allocation.
"""

import h5py
import numpy as np
import pytest

import uqzoo as uz
from uqzoo import io

SPEC = uz.MLPSpec(3, 2, hidden=(4,))
SECRET = b"TOP-SECRET-BYTES" * 4      # 64 bytes, 16 float32s


def _posterior():
    return uz.Posterior(
        spec=SPEC, method="ensemble", config={"num_members": 4}, seed=7,
        draws=SPEC.init_params(0, num=4), sample_stats={"loss": np.zeros((1, 4, 3))},
        diagnostics={"seconds": 1.5, "loss": np.ones((4, 10), np.float32),
                     "note": "fine"},
        warnings=("a warning",), classes=("no", "yes"))


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "post.nc"
    _posterior().save(path)
    return path


@pytest.fixture
def secret(tmp_path):
    """Another local file with known bytes: a hostile file must never expose them."""
    path = tmp_path / "secret.bin"
    path.write_bytes(SECRET)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["data"] = np.frombuffer(SECRET, dtype=np.float32)
        f.create_group("group")["data"] = np.frombuffer(SECRET, dtype=np.float32)
    return path, other


def _refused(path, needle):
    with pytest.raises(uz.FileFormatError, match=needle) as info:
        uz.load_posterior(path)
    assert "TOP-SECRET" not in str(info.value)
    return info.value


def test_the_untouched_file_loads(saved):
    post = uz.load_posterior(saved)
    assert post.classes == ("no", "yes") and post.diagnostics["note"] == "fine"
    assert post.sample_stats["loss"].shape == (1, 4, 3)


@pytest.mark.parametrize("group", ["diagnostics", "sample_stats"])
def test_external_storage_is_refused(saved, secret, group):
    with h5py.File(saved, "r+") as f:
        f[group].create_dataset("x", shape=(1, 4, 4) if group == "sample_stats" else (16,),
                                dtype="<f4", external=[(str(secret[0]), 0, len(SECRET))])
    _refused(saved, f"/{group}/x uses external storage")


def test_external_storage_of_a_weight_is_refused(saved, secret):
    with h5py.File(saved, "r+") as f:
        del f["posterior/layers.1.bias"]
        f["posterior"].create_dataset("layers.1.bias", shape=(1, 4, 1), dtype="<f4",
                                      external=[(str(secret[0]), 0, 16)])
    _refused(saved, "external storage")


@pytest.mark.parametrize("where", ["diagnostics/x", "anchor", "posterior/layers.0.bias"])
def test_external_links_are_refused(saved, secret, where):
    with h5py.File(saved, "r+") as f:
        if where in f:
            del f[where]
        target = "/group" if where == "anchor" else "/data"
        f[where] = h5py.ExternalLink(str(secret[1]), target)
    _refused(saved, "ExternalLink, a link to data elsewhere")


def test_soft_links_are_refused(saved):
    with h5py.File(saved, "r+") as f:
        f["diagnostics/alias"] = h5py.SoftLink("/posterior/layers.0.weight")
    _refused(saved, "SoftLink")


def test_virtual_datasets_are_refused(saved, secret):
    layout = h5py.VirtualLayout(shape=(16,), dtype="f4")
    layout[:] = h5py.VirtualSource(str(secret[1]), "data", shape=(16,))
    with h5py.File(saved, "r+") as f:
        f["diagnostics"].create_virtual_dataset("v", layout)
    _refused(saved, "virtual dataset")


def test_a_huge_declared_but_unwritten_variable_is_refused_before_reading(saved):
    # The memory bomb: a 31 KB file declaring 2 GiB that loaded at 5.8 GB peak.
    with h5py.File(saved, "r+") as f:
        f["diagnostics"].create_dataset("bomb", shape=(512, 1048576), dtype="f4")
    assert saved.stat().st_size < 100_000
    _refused(saved, r"\(536,870,912 elements\), more than the 268,435,456")


def test_a_variable_larger_than_its_stored_bytes_is_refused(saved):
    with h5py.File(saved, "r+") as f:   # 64 MiB declared, under the cap, never written
        f["diagnostics"].create_dataset("hollow", shape=(4096, 4096), dtype="f4")
        f["sample_stats"].create_dataset("hollow", shape=(1, 4, 10**6), dtype="f8")
    _refused(saved, "stores only 0 bytes for it")


def test_draws_beyond_the_memory_limit_are_refused_before_reading(saved):
    with h5py.File(saved, "r+") as f:
        for key, shape in SPEC.param_shapes().items():
            del f[f"posterior/{key}"]
            f["posterior"].create_dataset(key, shape=(1, 2**27, *shape), dtype="f4")
    _refused(saved, r"more than the 4 GiB a posterior may hold")


def test_compressed_data_within_zlib_limits_loads(saved):
    with h5py.File(saved, "r+") as f:
        f["diagnostics"].create_dataset("zeros", data=np.zeros((1000, 1000), np.float32),
                                        compression="gzip", chunks=(1000, 1000))
    assert uz.load_posterior(saved).diagnostics["zeros"].shape == (1000, 1000)


def test_a_file_of_many_compressed_variables_of_zeros_is_refused_as_a_whole(saved):
    # issue 25 item 1: a 2.1 MB file of gzip variables of zeros made evaluate use 2.5 GB:
    # each variable was bounded (1032:1), the file as a whole not
    zeros = np.zeros((2048, 1024), np.float32)                      # 8 MiB each
    with h5py.File(saved, "r+") as f:
        for i in range(3):
            f["diagnostics"].create_dataset(f"zeros{i}", data=zeros, compression="gzip",
                                            chunks=(2048, 1024))
    assert saved.stat().st_size < 2**20
    _refused(saved, r"its variables declare 25,1\d\d,\d{3} bytes in all, more than 64 times "
                    r"the file's .*compression bomb")


def test_other_filters_are_refused(saved):
    with h5py.File(saved, "r+") as f:
        f["diagnostics"].create_dataset("packed", data=np.zeros(100, np.int32),
                                        scaleoffset=0, chunks=(100,))
    _refused(saved, "filter")


def test_a_cf_scale_factor_on_a_weight_is_refused_not_applied(saved):
    with h5py.File(saved, "r+") as f:
        f["posterior/layers.0.weight"].attrs["scale_factor"] = np.float32(1000.0)
    _refused(saved, r"/posterior/layers.0.weight carries CF decoding attribute\(s\) "
                    r"\['scale_factor'\]")


@pytest.mark.parametrize("attr, value", [("add_offset", 1.0), ("units", "days since 2000-01-01"),
                                         ("_FillValue", 0.0), ("missing_value", 0.0)])
def test_other_value_changing_attributes_are_refused(saved, attr, value):
    with h5py.File(saved, "r+") as f:
        node = f["diagnostics/loss"]
        if attr in node.attrs:
            del node.attrs[attr]
        node.attrs[attr] = np.float32(value) if not isinstance(value, str) else value
    _refused(saved, attr)


@pytest.mark.parametrize("attr, value, needle", [
    ("converged", '"yes"', "'converged' must be JSON true, false or null"),
    ("converged", "1", "'converged' must be JSON true, false or null"),
    ("warnings", '{"a": 1}', "'warnings' must be a JSON list of strings"),
    ("warnings", "[1, 2]", "'warnings' must be a JSON list of strings"),
    ("seed", "1_000", "'seed' must be a decimal integer"),
    ("seed", " 12", "'seed' must be a decimal integer"),
    ("seed", "99999999999999999999", "seed must be an integer in"),
    ("config", "[1, 2]", "'config' must be a JSON object"),
    ("config", "{not json", "'config' is not valid JSON"),
    ("config", "[" * 100_000, "'config' is not valid JSON"),
    ("spec", '{"in_features": -1, "n_classes": 2, "hidden": []}', "in_features must be >= 1"),
    ("spec", '{"in_features": 3, "n_classes": 2, "hidden": "44"}', "'spec' must be a JSON"),
    ("spec", '{"in_features": 3, "n_classes": 2, "hidden": [4], "evil": 1}',
     "does not describe a valid MLPSpec"),
    ("classes", '"ab"', "'classes' must be a JSON list or null"),
    ("classes", '["a", "a"]', "classes must hold 2 distinct labels"),
    ("classes", '[[0, 1], [2]]', "classes must hold 2 distinct labels"),   # issue 25 item 8
    ("versions", "[]", "'versions' must be a JSON object"),
    ("predictive", "quantum", "predictive must be one of"),
])
def test_root_attributes_are_parsed_against_their_declared_type(saved, attr, value, needle):
    with h5py.File(saved, "r+") as f:
        f.attrs[attr] = value
    _refused(saved, needle)


def test_a_variable_length_attribute_over_the_cap_is_refused_before_parsing(saved):
    # issue 25 item 1: a 64 MB variable-length 'config' loaded (974 MB) despite the 16 MiB cap,
    # h5py reporting 16 bytes of storage for it
    with h5py.File(saved, "r+") as f:
        f.attrs["config"] = '{"num_members": 4, "pad": "' + "x" * (2**24 + 1) + '"}'
    _refused(saved, "attribute 'config' of the root is larger than 16 MiB")


def test_a_root_attribute_of_the_wrong_kind_is_refused(saved):
    with h5py.File(saved, "r+") as f:
        f.attrs["converged"] = np.arange(3)
    _refused(saved, "attribute 'converged' of the root must be a string")


def test_unknown_groups_and_parameters_are_refused(saved, tmp_path):
    with h5py.File(saved, "r+") as f:
        f.create_group("extra")
    _refused(saved, r"group\(s\) \['extra'\]")
    other = tmp_path / "other.nc"
    _posterior().save(other)
    with h5py.File(other, "r+") as f:
        f["posterior/layers.9.weight"] = np.zeros((1, 4, 2, 2), np.float32)
    _refused(other, "'layers.9.weight', which is not a parameter of the spec")


def test_a_parameter_of_the_wrong_shape_or_dtype_is_refused(saved, tmp_path):
    with h5py.File(saved, "r+") as f:
        del f["posterior/layers.0.bias"]
        f["posterior/layers.0.bias"] = np.zeros((1, 4, 5), np.float32)
    _refused(saved, r"layers.0.bias has shape \(1, 4, 5\); the spec implies")
    other = tmp_path / "other.nc"
    _posterior().save(other)
    with h5py.File(other, "r+") as f:
        del f["posterior/layers.0.bias"]
        f["posterior/layers.0.bias"] = np.zeros((1, 4, 4), np.int64)
    _refused(other, "dtype int64; expected a plain float array")


def test_string_and_compound_variables_are_refused(saved):
    with h5py.File(saved, "r+") as f:
        f["diagnostics"].create_dataset("text", data=np.array([b"a", b"b"]),
                                        dtype=h5py.string_dtype())
    _refused(saved, "/diagnostics/text has dtype object")


def test_sample_stats_must_lead_with_chain_and_draw(saved):
    with h5py.File(saved, "r+") as f:
        f["sample_stats/odd"] = np.zeros((2, 2))
    _refused(saved, r"sample statistics lead with \(chain, draw\) = \(1, 4\)")


def test_a_file_written_by_xarray_with_cf_decoding_off_still_round_trips(saved, tmp_path):
    import xarray as xr
    with xr.open_datatree(saved, engine=io._ENGINE, mask_and_scale=False,
                          decode_times=False) as tree:
        copy = tmp_path / "copy.nc"
        tree.load().to_netcdf(copy, engine=io._ENGINE)
    post = uz.load_posterior(copy)
    np.testing.assert_array_equal(post.draws["layers.0.weight"],
                                  _posterior().draws["layers.0.weight"])
