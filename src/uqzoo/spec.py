"""uqzoo's own network, :class:`MLPSpec`: one :class:`uqzoo.Model`, with fast paths.

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
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np

from uqzoo._validation import _show, check_choice, check_float, check_int, choices
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.models import MAX_PARAMS, Model

__all__ = ["ACTIVATIONS", "MAX_PARAMS", "PRIORS", "MLPSpec"]

Activation = Literal["tanh", "relu", "sigmoid"]
ACTIVATIONS = choices(Activation)
Prior = Literal["fan_in", "iid"]
PRIORS = choices(Prior)

# Keys older releases wrote into a spec that are no longer part of it.
_LEGACY_KEYS = ("dropout",)

# Widths beyond this are typos for the small networks uqzoo is about; the bound
# keeps a typo from turning into an impossible allocation.
_MAX_WIDTH = 1_000_000


@dataclasses.dataclass(frozen=True)
class MLPSpec(Model):
    """A small fully connected classifier: uqzoo's own :class:`uqzoo.Model`.

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

    Every method runs on any :class:`uqzoo.Model`; the MLP adds what only it
    declares -- MC dropout's hidden masks, HMC's hierarchical layer scales
    and input rotation, the Pyro backends -- and a fused predictive engine.

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

    dropout_masks: ClassVar[bool] = True

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

    @property
    def last_layer(self) -> str:
        return f"layers.{self.n_layers - 1}"

    def apply(self, params: Mapping[str, Any], X: Any, *,
              hidden_masks: Sequence[Any] | None = None) -> Any:
        """Logits of the network, in JAX: the one definition every JAX method uses.

        Parameters
        ----------
        params : dict of arrays
            One parameter set, or a stack with leading axes B (draws, chains,
            ensemble members).
        X : array of shape (N, D), or (*B, N, D) with rows of each stacked network's own
        hidden_masks : sequence of arrays, optional
            One multiplier per hidden layer, broadcastable to (*B, N, h_i),
            applied to that layer's output (dropout: 0 or 1/(1 - p)).

        Returns
        -------
        array of shape (*B, N, n_outputs)

        Notes
        -----
        With a shared X (N, D), the first layer of every stacked network is one
        (N, D) × (D, B·h) product (``einsum`` with no batch axis lowers to a
        single matrix multiply): the largest saving over a loop of networks,
        and why the MLP keeps this forward rather than vmapping one network.
        """
        import jax
        import jax.numpy as jnp

        act = {"tanh": jnp.tanh, "relu": jax.nn.relu, "sigmoid": jax.nn.sigmoid}[self.activation]
        last = self.n_layers - 1
        h = X
        for i in range(self.n_layers):
            weight = params[f"layers.{i}.weight"]
            bias = params[f"layers.{i}.bias"]
            if i == 0 and X.ndim == 2:
                a = jnp.einsum("nd,...hd->...nh", X, weight)
            else:
                a = jnp.matmul(h, jnp.swapaxes(weight, -1, -2))
            h = a + bias[..., None, :]
            if i < last:
                h = act(h)
                if hidden_masks is not None:
                    h = h * hidden_masks[i]
        return h

    def describe(self) -> dict:
        return {"kind": "mlp", **self.to_dict()}

    def summary(self) -> str:
        widths = "×".join(map(str, self.hidden)) or "no hidden layer"
        return f"MLP {widths} {self.activation} ({self.n_params:,} parameters)"

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
