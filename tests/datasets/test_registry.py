import pytest

import uqzoo as uz
import uqzoo.datasets as datasets

EXPECTED = ["sim-teacher", "hsi-sim", "gaussian-mixture", "nonlinear-logistic",
            "indian-pines", "muufl-target", "breast-cancer", "wine", "iris", "digits",
            "penguins", "caravan"]


def test_names():
    assert datasets.names() == EXPECTED


def test_every_loader_takes_seed():
    for name in datasets.names():
        assert "seed" in datasets.options(name), name


def test_unknown_name_lists_the_allowed_ones():
    with pytest.raises(uz.InvalidInputError, match="iris") as info:
        datasets.load("irises")
    assert "'irises'" in str(info.value)


def test_unknown_option_lists_the_allowed_ones():
    with pytest.raises(uz.InvalidInputError, match="test_size") as info:
        datasets.load("iris", n_bands=3)
    assert "n_bands" in str(info.value)


def test_name_of_wrong_type():
    with pytest.raises(uz.InvalidTypeError):
        datasets.load(3)
