"""Every registered method meets the Method protocol; a module that does not is refused."""

from __future__ import annotations

import dataclasses
import types

import pytest

from uqzoo import methods
from uqzoo.methods import _check_protocol


@pytest.mark.parametrize("name", methods.names())
def test_registered_methods_meet_the_protocol(name):
    module = methods.get(name)
    _check_protocol(name, module)                    # raises if not
    assert dataclasses.is_dataclass(module.Config)


def _module(**attrs):
    module = types.ModuleType("fake_method")
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


@dataclasses.dataclass(frozen=True)
class FrozenConfig:
    rate: float = 0.1

    @classmethod
    def budget_options(cls, num_draws, options):
        return {}


@dataclasses.dataclass(frozen=True)
class NoBudgetConfig:
    rate: float = 0.1


@dataclasses.dataclass
class MutableConfig:
    rate: float = 0.1


def good_fit(spec, data, config, *, seed, progress_bar=True):
    raise NotImplementedError


def positional_seed_fit(spec, data, config, seed, progress_bar=True):
    raise NotImplementedError


@pytest.mark.parametrize(("attrs", "message"), [
    ({"fit": good_fit}, "Config"),
    ({"Config": MutableConfig, "fit": good_fit}, "frozen dataclass"),
    ({"Config": NoBudgetConfig, "fit": good_fit}, "budget_options"),
    ({"Config": FrozenConfig}, "fit"),
    ({"Config": FrozenConfig, "fit": positional_seed_fit}, "signature"),
])
def test_a_module_that_breaks_the_protocol_is_refused(attrs, message):
    with pytest.raises(TypeError, match=message):
        _check_protocol("fake", _module(**attrs))
    _check_protocol("fake", _module(Config=FrozenConfig, fit=good_fit))
