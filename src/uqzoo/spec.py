"""The network every method shares, and the layout of its parameters.

A network is ``in_features -> hidden[0] -> ... -> n_outputs`` fully connected
layers with one activation between them. Parameters are a ``dict`` keyed like
a torch ``state_dict`` of a module whose ``nn.ModuleList`` is called
``layers``: ``"layers.0.weight"`` of shape (out, in), ``"layers.0.bias"`` of
shape (out,), then ``"layers.1.*"`` and so on. Parameter *draws* are the same
dict with a leading S axis -- the layout of ``torch.func.stack_module_state``
and a JAX pytree -- so every method's posterior is read the same way.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from typing import Literal

import numpy as np

from uqzoo._validation import _show, check_choice, check_float, check_int, choices
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["ACTIVATIONS", "PRIORS", "MLPSpec"]

Activation = Literal["tanh", "relu", "sigmoid"]
ACTIVATIONS = choices(Activation)
Prior = Literal["fan_in", "iid"]
PRIORS = choices(Prior)

# Keys older releases wrote into a spec that are no longer part of it.
_LEGACY_KEYS = ("dropout",)

# Widths beyond this are typos for the small networks uqzoo is about; the bound
# keeps a typo from turning into an impossible allocation.
_MAX_WIDTH = 1_000_000

# Parameters of one network. Every method keeps S float32 draws of all of them,
# within uqzoo._limits.MAX_DRAW_BYTES (4 GiB); 2**24 parameters (64 MiB a draw)
# leave room for 64 draws, about the fewest that equal-tailed 0.95 intervals
# need (39). Checked from the widths, before anything is allocated.
MAX_PARAMS = 2**24


@dataclasses.dataclass(frozen=True)
class MLPSpec:
    """A small fully connected classifier.

    Parameters
    ----------
    in_features : int
        D, the number of input features.
    n_classes : int
        K >= 2. Two classes use a single logit and a sigmoid (identifiable,
        which helps HMC); K > 2 use K logits and a softmax. Probabilities
        always come out as (..., N, K), binary as ``[1 - p, p]``.
    hidden : tuple of int
        Widths of the hidden layers; ``()`` is logistic/softmax regression.
    activation : {"tanh", "relu", "sigmoid"}
        The non-linearity after every hidden layer.
    prior_scale : float
        s, the scale of the Gaussian prior (see ``prior``). Every method uses
        the same prior; MAP training uses the matching weight decay.
    prior : {"fan_in", "iid"}
        ``"fan_in"`` (default): the weights of a layer with n inputs are
        N(0, s²/n) and its biases N(0, s²) -- Neal's (1996) scaling, under
        which a unit's pre-activation has prior variance about 2 s² for
        standardised inputs whatever the width, so a 200-band input does not
        saturate tanh. ``"iid"``: every weight and bias N(0, s²), uqzoo 0.1's
        prior (and the one teacher networks such as ``sim-teacher`` draw
        from); with D inputs a first-layer pre-activation then has prior sd
        s·√(D + 1), 14 for 200 bands.

    The spec is the architecture and prior only: what a method does on top
    (MC dropout's rate, an ensemble's size) lives in that method's ``Config``.

    Examples
    --------
    >>> import uqzoo as uz
    >>> spec = uz.MLPSpec(50, 2, hidden=(10, 10))
    >>> spec.n_params
    631
    >>> spec.param_shapes()["layers.0.weight"]
    (10, 50)
    """

    in_features: int
    n_classes: int
    hidden: tuple[int, ...] = (10, 10)
    activation: str = "tanh"
    prior_scale: float = 1.0
    prior: str = "fan_in"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "in_features", check_int(self.in_features, "in_features", minimum=1,
                                            maximum=_MAX_WIDTH))
        set_(self, "n_classes", check_int(self.n_classes, "n_classes", minimum=2,
                                          maximum=_MAX_WIDTH))
        hidden = self.hidden
        if isinstance(hidden, (int, np.integer)) and not isinstance(hidden, bool):
            hidden = (hidden,)
        if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__"):
            raise InvalidTypeError(f"hidden must be a tuple of positive ints, got {_show(hidden)}")
        set_(self, "hidden", tuple(check_int(h, "hidden entry", minimum=1, maximum=_MAX_WIDTH)
                                   for h in hidden))
        if self.n_params > MAX_PARAMS:
            raise InvalidInputError(
                f"hidden={self.hidden} makes a network of {self.n_params:,} parameters "
                f"({self.in_features} inputs, {self.n_outputs} outputs); uqzoo allows at most "
                f"{MAX_PARAMS:,} (2**24): every method keeps its draws of all parameters in "
                f"memory (64 draws of this bound take 4 GiB); use narrower layers")
        set_(self, "activation", check_choice(self.activation, "activation", ACTIVATIONS))
        set_(self, "prior_scale", check_float(self.prior_scale, "prior_scale", low=0.0,
                                              low_open=True))
        set_(self, "prior", check_choice(self.prior, "prior", PRIORS))

    @property
    def n_outputs(self) -> int:
        """Number of logits: 1 for two classes, K otherwise."""
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """(in_features, *hidden, n_outputs)."""
        return (self.in_features, *self.hidden, self.n_outputs)

    @property
    def n_layers(self) -> int:
        return len(self.hidden) + 1

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of one parameter set, in layer order (weight then bias)."""
        sizes = self.layer_sizes
        shapes: dict[str, tuple[int, ...]] = {}
        for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
            shapes[f"layers.{i}.weight"] = (fan_out, fan_in)
            shapes[f"layers.{i}.bias"] = (fan_out,)
        return shapes

    @property
    def n_params(self) -> int:
        return sum(math.prod(s) for s in self.param_shapes().values())

    def to_dict(self) -> dict:
        """Plain-JSON form, for saving."""
        return {**dataclasses.asdict(self), "hidden": list(self.hidden)}

    @classmethod
    def from_dict(cls, d: Mapping) -> MLPSpec:
        """The spec from :meth:`to_dict`'s form, also as written by older releases.

        Format 1 files (uqzoo 0.1) carried MC dropout's rate as ``"dropout"``
        in every spec; it is not part of the architecture and is dropped here
        (an MC-dropout posterior keeps its rate in its config).
        """
        fields = {k: v for k, v in d.items() if k not in _LEGACY_KEYS}
        return cls(**{**fields, "hidden": tuple(fields["hidden"])})

    def prior_sd(self, key: str) -> float:
        """The prior standard deviation of parameter ``key`` (e.g. ``"layers.0.weight"``).

        Examples
        --------
        >>> spec = MLPSpec(100, 2, hidden=(10,), prior_scale=2.0)
        >>> spec.prior_sd("layers.0.weight"), spec.prior_sd("layers.0.bias")
        (0.2, 2.0)
        >>> MLPSpec(100, 2, hidden=(10,), prior="iid").prior_sd("layers.1.weight")
        1.0
        """
        shape = self.param_shapes().get(key)
        if shape is None:
            raise InvalidInputError(f"key must be a parameter of the spec, got {_show(key)}; "
                                    f"allowed: {list(self.param_shapes())}")
        if self.prior == "fan_in" and key.endswith(".weight"):
            return self.prior_scale / math.sqrt(shape[1])
        return self.prior_scale

    def prior_sds(self) -> dict[str, float]:
        """:meth:`prior_sd` of every parameter, in layer order."""
        return {key: self.prior_sd(key) for key in self.param_shapes()}

    # -- parameter layout helpers -------------------------------------------------

    def check_draws(self, draws: object, name: str = "draws") -> dict[str, np.ndarray]:
        """Validate parameter draws (leading S axis) against this spec.

        Returns the draws as a dict of float32 numpy arrays in layer order.
        Raises a clear error for missing/extra keys, wrong shapes, a ragged S
        axis or non-finite values.
        """
        return _check_layout(self, draws, name, leading=True)

    def check_params(self, params: object, name: str = "params") -> dict[str, np.ndarray]:
        """Validate one parameter set (no leading S axis) against this spec."""
        return _check_layout(self, params, name, leading=False)

    def init_params(self, seed: int, num: int | None = None) -> dict[str, np.ndarray]:
        """Random initial parameters: torch ``nn.Linear``'s default init.

        U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases. With
        ``num`` given, returns ``num`` independent sets with a leading axis.
        """
        rng = np.random.default_rng(seed)
        lead = () if num is None else (num,)
        out = {}
        for key, shape in self.param_shapes().items():
            fan_in = self.layer_sizes[int(key.split(".")[1])]
            bound = 1.0 / math.sqrt(fan_in)
            out[key] = rng.uniform(-bound, bound, size=lead + shape).astype(np.float32)
        return out

    def flatten(self, params: Mapping[str, np.ndarray], leading: int = 0) -> np.ndarray:
        """Concatenate parameters into vectors, layer order, row-major.

        ``leading`` is the number of leading batch axes (1 for draws).
        """
        parts = []
        for key, shape in self.param_shapes().items():
            arr = np.asarray(params[key])
            parts.append(arr.reshape((*arr.shape[:leading], math.prod(shape))))
        return np.concatenate(parts, axis=-1)

    def unflatten(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Inverse of :meth:`flatten`; leading axes are kept."""
        vector = np.asarray(vector)
        if vector.shape[-1] != self.n_params:
            raise InvalidInputError(
                f"vector must have last axis n_params = {self.n_params}, got shape {vector.shape}"
            )
        lead = vector.shape[:-1]
        out, start = {}, 0
        for key, shape in self.param_shapes().items():
            size = math.prod(shape)
            out[key] = vector[..., start:start + size].reshape(lead + shape)
            start += size
        return out


def _check_layout(spec: MLPSpec, draws: object, name: str, leading: bool) -> dict[str, np.ndarray]:
    if not isinstance(draws, Mapping):
        raise InvalidTypeError(
            f"{name} must be a dict of arrays keyed like a torch state_dict "
            f"({', '.join(spec.param_shapes())}), got {_show(draws)}"
        )
    expected = spec.param_shapes()
    missing = [k for k in expected if k not in draws]
    extra = [k for k in draws if k not in expected]
    if missing or extra:
        raise InvalidInputError(
            f"{name} does not match the spec's layout: missing {missing}, unexpected {extra}; "
            f"expected keys {list(expected)}"
        )
    out: dict[str, np.ndarray] = {}
    n_draws = None
    for key, shape in expected.items():
        value = draws[key]
        try:
            arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)
        except Exception as exc:
            raise InvalidTypeError(f"{name}[{key!r}] must be a numeric array") from exc
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise InvalidTypeError(f"{name}[{key!r}] must be numeric, got dtype {arr.dtype}")
        want = ("S", *shape) if leading else shape
        ok = arr.ndim == len(want) and arr.shape[int(leading):] == shape
        if not ok:
            raise InvalidInputError(
                f"{name}[{key!r}] must have shape {want}, got {arr.shape}"
            )
        if leading:
            if n_draws is None:
                n_draws = arr.shape[0]
            elif arr.shape[0] != n_draws:
                raise InvalidInputError(
                    f"{name} entries must share the draw axis S; {key!r} has "
                    f"{arr.shape[0]} draws, earlier entries {n_draws}"
                )
        if not np.all(np.isfinite(arr)):
            raise InvalidInputError(f"{name}[{key!r}] must be finite, found NaN or inf")
        out[key] = arr.astype(np.float32, copy=False)
    if leading and n_draws == 0:
        raise InvalidInputError(f"{name} must hold at least one draw, got S = 0")
    return out
