"""MLPSpec and the shared parameter layout."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import uqzoo as uz
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.nets import torch as tnet
from uqzoo.spec import MLPSpec


def test_defaults_shapes_and_parameter_count():
    spec = MLPSpec(50, 2)
    assert spec.hidden == (10, 10) and spec.activation == "tanh"
    assert spec.n_outputs == 1 and spec.layer_sizes == (50, 10, 10, 1) and spec.n_layers == 3
    assert spec.param_shapes() == {
        "layers.0.weight": (10, 50), "layers.0.bias": (10,),
        "layers.1.weight": (10, 10), "layers.1.bias": (10,),
        "layers.2.weight": (1, 10), "layers.2.bias": (1,),
    }
    assert spec.n_params == 50 * 10 + 10 + 10 * 10 + 10 + 10 + 1 == 631


@pytest.mark.parametrize(("hidden", "n_classes"), [((), 2), ((), 5), ((7,), 3), ((4, 3, 2), 2)])
def test_layout_matches_torch_module_for_any_depth(hidden, n_classes):
    spec = MLPSpec(6, n_classes, hidden=hidden)
    assert spec.n_outputs == (1 if n_classes == 2 else n_classes)
    state = tnet.MLP(spec).state_dict()
    assert {k: tuple(v.shape) for k, v in state.items()} == spec.param_shapes()
    assert spec.n_params == sum(v.numel() for v in state.values())
    # and torch.func.stack_module_state gives the draws layout
    stacked, _ = torch.func.stack_module_state([tnet.MLP(spec) for _ in range(3)])
    draws = spec.check_draws({k: v.detach() for k, v in stacked.items()})
    assert all(v.shape == (3, *spec.param_shapes()[k]) for k, v in draws.items())


def test_hidden_accepts_an_int_and_lists():
    assert MLPSpec(3, 2, hidden=5).hidden == (5,)
    assert MLPSpec(3, 2, hidden=[4, np.int64(3)]).hidden == (4, 3)


def test_spec_is_frozen_and_round_trips_through_dict():
    spec = MLPSpec(7, 4, hidden=(3, 2), activation="relu", prior_scale=0.5)
    with pytest.raises(AttributeError):
        spec.in_features = 3
    d = spec.to_dict()
    assert d["hidden"] == [3, 2]
    import json
    assert MLPSpec.from_dict(json.loads(json.dumps(d))) == spec
    # uqzoo 0.1 wrote MC dropout's rate into every spec; such a dict still reads.
    assert MLPSpec.from_dict({**d, "dropout": 0.1}) == spec


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"in_features": 0}, InvalidInputError, "in_features"),
    ({"in_features": 2.5}, InvalidTypeError, "in_features"),
    ({"n_classes": 1}, InvalidInputError, "n_classes"),
    ({"n_classes": True}, InvalidTypeError, "n_classes"),
    ({"hidden": (10, 0)}, InvalidInputError, "hidden"),
    ({"hidden": "10"}, InvalidTypeError, "hidden"),
    ({"hidden": None}, InvalidTypeError, "hidden"),
    ({"activation": "gelu"}, InvalidInputError, "'tanh', 'relu', 'sigmoid'"),
    ({"prior_scale": 0.0}, InvalidInputError, "prior_scale"),
    ({"prior_scale": float("nan")}, InvalidInputError, "prior_scale"),
    ({"dropout": 0.1}, TypeError, "dropout"),       # a method's option, not the spec's
])
def test_bad_spec_arguments_are_named(kwargs, error, match):
    args = {"in_features": 3, "n_classes": 2, **kwargs}
    with pytest.raises(error, match=match):
        MLPSpec(**args)


def test_init_params_is_seeded_and_follows_torch_default_bounds():
    spec = MLPSpec(16, 3, hidden=(9,))
    a, b = spec.init_params(seed=4), spec.init_params(seed=4)
    c = spec.init_params(seed=5)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
        assert a[k].dtype == np.float32 and a[k].shape == spec.param_shapes()[k]
    assert any(not np.array_equal(a[k], c[k]) for k in a)
    assert np.abs(a["layers.0.weight"]).max() <= 1 / math.sqrt(16)
    assert np.abs(a["layers.1.weight"]).max() <= 1 / math.sqrt(9)
    stacked = spec.init_params(seed=4, num=6)
    assert stacked["layers.1.bias"].shape == (6, 3)
    spec.check_draws(stacked)
    spec.check_params(a)


def test_flatten_unflatten_round_trip_with_and_without_draw_axis():
    spec = MLPSpec(5, 4, hidden=(3, 2))
    draws = spec.init_params(seed=0, num=7)
    flat = spec.flatten(draws, leading=1)
    assert flat.shape == (7, spec.n_params)
    back = spec.unflatten(flat)
    for k in draws:
        np.testing.assert_array_equal(back[k], draws[k])
    one = spec.init_params(seed=1)
    np.testing.assert_array_equal(spec.flatten(one), np.concatenate(
        [one[k].ravel() for k in spec.param_shapes()]))
    with pytest.raises(InvalidInputError, match="n_params"):
        spec.unflatten(np.zeros(spec.n_params + 1))


def _draws(spec, num=3):
    return spec.init_params(seed=0, num=num)


@pytest.mark.parametrize(("mutate", "error", "match"), [
    (lambda d: d.pop("layers.1.bias"), InvalidInputError, "missing"),
    (lambda d: d.update({"layers.9.weight": np.zeros((3, 1, 1))}), InvalidInputError,
     "unexpected"),
    (lambda d: d.update({"layers.0.weight": np.zeros((3, 4, 5))}), InvalidInputError,
     r"layers.0.weight.*10, 4\)"),
    (lambda d: d.update({"layers.0.bias": np.zeros((2, 10))}), InvalidInputError,
     "share the draw axis"),
    (lambda d: d.update({"layers.0.bias": np.full((3, 10), np.nan)}), InvalidInputError,
     "finite"),
    (lambda d: d.update({"layers.0.bias": np.full((3, 10), "a")}), InvalidTypeError,
     "numeric"),
    (lambda d: d.update({"layers.0.bias": np.zeros(10)}), InvalidInputError, "shape"),
])
def test_bad_draws_are_rejected_with_the_key_named(mutate, error, match):
    spec = MLPSpec(4, 2)
    draws = dict(_draws(spec))
    mutate(draws)
    with pytest.raises(error, match=match):
        spec.check_draws(draws)


def test_empty_draws_and_non_mappings_are_rejected():
    spec = MLPSpec(4, 2, hidden=())
    empty = {k: np.zeros((0, *s), np.float32) for k, s in spec.param_shapes().items()}
    with pytest.raises(InvalidInputError, match="S = 0"):
        spec.check_draws(empty)
    with pytest.raises(InvalidTypeError, match="keyed by leaf path"):
        spec.check_draws([np.zeros(3)])
    with pytest.raises(InvalidInputError, match="shape"):
        spec.check_params(_draws(spec))     # draws where one set is expected


def test_check_draws_accepts_torch_tensors_and_returns_float32():
    spec = MLPSpec(4, 3, hidden=(2,))
    draws = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in _draws(spec).items()}
    out = spec.check_draws(draws)
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in out.values())


def test_top_level_exports():
    assert uz.MLPSpec is MLPSpec


def test_the_fan_in_prior_scales_weights_by_their_fan_in_and_iid_does_not():
    spec = MLPSpec(16, 3, hidden=(4,), prior_scale=2.0)
    assert spec.prior == "fan_in"
    assert spec.prior_sds() == {"layers.0.weight": 0.5, "layers.0.bias": 2.0,
                                "layers.1.weight": 1.0, "layers.1.bias": 2.0}
    iid = MLPSpec(16, 3, hidden=(4,), prior_scale=2.0, prior="iid")
    assert set(iid.prior_sds().values()) == {2.0}
    with pytest.raises(InvalidInputError, match="'fan_in', 'iid'"):
        MLPSpec(16, 3, prior="gaussian")
    with pytest.raises(InvalidInputError, match=r"layers\.9\.weight"):
        spec.prior_sd("layers.9.weight")
