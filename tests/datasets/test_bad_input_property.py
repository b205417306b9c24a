"""Random malformed input to the data entry points raises only uqzoo errors."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import uqzoo as uz
import uqzoo.datasets as datasets

ANY_ARRAY = st.one_of(
    hnp.arrays(dtype=st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.int8]),
               shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6),
               elements=None),
    hnp.arrays(dtype=np.dtype("U3"), shape=hnp.array_shapes(max_dims=2, max_side=4)),
    st.none(), st.text(max_size=5), st.integers(), st.floats(),
    st.lists(st.lists(st.floats(), max_size=3), max_size=4),
)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _accepted_or_uqzoo_error(call):
    try:
        result = call()
    except uz.UqzooError:
        return
    assert isinstance(result, uz.ClassificationData)
    assert np.isfinite(result.X_train).all() and np.isfinite(result.X_test).all()


@SETTINGS
@given(X=ANY_ARRAY, y=ANY_ARRAY, test_size=st.one_of(st.floats(), st.integers(-1, 2)),
       seed=st.one_of(st.integers(-2, 3), st.floats(), st.none()))
def test_from_arrays_random_input(X, y, test_size, seed):
    _accepted_or_uqzoo_error(lambda: datasets.from_arrays(X, y, test_size=test_size,
                                                          seed=seed))


@SETTINGS
@given(cube=ANY_ARRAY, labels=ANY_ARRAY,
       split=st.sampled_from(["left-right", "random", "diagonal", 3]))
def test_from_hsi_random_input(cube, labels, split):
    _accepted_or_uqzoo_error(lambda: datasets.from_hsi(cube, labels, split=split))


@SETTINGS
@given(name=st.one_of(st.sampled_from(datasets.names()), st.text(max_size=6), st.integers()),
       option=st.sampled_from(["seed", "test_size", "p", "size", "split", "bogus"]),
       value=st.one_of(st.integers(-3, 3), st.floats(), st.text(max_size=3), st.none()))
def test_load_random_options(name, option, value):
    if name == "hsi-sim" and option == "size" and isinstance(value, int) and value >= 8:
        value = 8  # keep it fast; a valid size is not what this test is about
    try:
        datasets.load(name, **{option: value})
    except uz.UqzooError as exc:
        assert str(exc), "a uqzoo error must say what was wrong"


def test_property_check_would_notice_foreign_errors():
    with pytest.raises(ZeroDivisionError):
        _accepted_or_uqzoo_error(lambda: 1 / 0)
