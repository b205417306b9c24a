"""Flax NNX and Equinox modules as :class:`uqzoo.Model` (optional extras).

Each adapter splits a module into its trainable arrays -- the parameters every
method puts a posterior on -- and the rest, held fixed, and hands the pair to
:func:`uqzoo.models.from_function`. ``pip install "uqzoo[flax]"`` or
``"uqzoo[equinox]"`` installs the library (versions tested with the
project's JAX: flax 0.12.8, equinox 0.13.8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from uqzoo._validation import _show
from uqzoo.errors import InvalidTypeError
from uqzoo.models.function import FunctionModel

__all__ = ["from_equinox", "from_flax"]


def _library(name: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"uz.models.from_{extra} needs {name}: pip install "
                          f'"uqzoo[{extra}]"') from exc


def from_flax(module: Any, *, in_features: int, n_classes: int,
              prior_scale: float | Mapping[str, float] = 1.0,
              init: Callable[[Any], Any] | None = None, last_layer: str | None = None,
              name: str | None = None) -> FunctionModel:
    """A Flax NNX module ``module(X) -> logits`` (X of shape (N, D)) as a :class:`uqzoo.Model`.

    Its ``nnx.Param`` variables are the parameters, named by their paths
    (``"conv.kernel"``, ``"head.bias"``); every other state (batch-norm
    statistics, RNG counters) is held at its value in ``module``.

    Parameters
    ----------
    module : flax.nnx.Module
        Called on a batch of rows, returning logits (N, 1) for two classes or (N, K).
    in_features, n_classes, prior_scale, last_layer, name
        As :func:`uqzoo.models.from_function`.
    init : callable, optional
        ``init(key) -> module``: a new module of the same structure for a
        ``jax.random`` key (e.g. ``lambda key: MyNet(rngs=nnx.Rngs(key))``),
        used for every trainer's starting point; by default each entry is
        N(mean, sd²) of its leaf in ``module``.

    Examples
    --------
    >>> import jax.numpy as jnp, uqzoo as uz
    >>> from flax import nnx
    >>> class SpectralCNN(nnx.Module):
    ...     def __init__(self, bands, rngs):
    ...         self.conv = nnx.Conv(1, 4, kernel_size=(5,), padding="VALID", rngs=rngs)
    ...         self.head = nnx.Linear(4 * (bands - 4), 1, rngs=rngs)
    ...     def __call__(self, x):
    ...         h = jnp.tanh(self.conv(x[:, :, None]))          # (N, bands - 4, 4)
    ...         return self.head(h.reshape(x.shape[0], -1))
    >>> model = uz.models.from_flax(SpectralCNN(16, nnx.Rngs(0)), in_features=16,
    ...                             n_classes=2, last_layer="head",
    ...                             init=lambda key: SpectralCNN(16, nnx.Rngs(key)))
    >>> list(model.param_shapes())
    ['conv.bias', 'conv.kernel', 'head.bias', 'head.kernel']
    """
    nnx = _library("flax.nnx", "flax")
    if not isinstance(module, nnx.Module):
        raise InvalidTypeError(f"module must be a flax.nnx.Module, got {_show(module)}")
    graphdef, params, rest = nnx.split(module, nnx.Param, ...)

    def apply(p: Any, X: Any) -> Any:
        return nnx.merge(graphdef, p, rest)(X)

    apply.__name__ = name or type(module).__name__

    def params_of(key: Any) -> Any:
        return nnx.split(init(key), nnx.Param, ...)[1]    # type: ignore[misc]

    return FunctionModel(apply, params, in_features=in_features, n_classes=n_classes,
                         prior_scale=prior_scale, init=None if init is None else params_of,
                         last_layer=last_layer, name=apply.__name__, kind="flax")


def from_equinox(module: Any, *, in_features: int, n_classes: int,
                 prior_scale: float | Mapping[str, float] = 1.0,
                 init: Callable[[Any], Any] | None = None, last_layer: str | None = None,
                 batched: bool = False, name: str | None = None) -> FunctionModel:
    """An Equinox module as a :class:`uqzoo.Model`.

    Its inexact (float) arrays are the parameters, named by their paths
    (``"blocks.0.weight"``); everything else is static.

    Parameters
    ----------
    module : equinox.Module
        By Equinox's convention called on one row (D,), returning its logits
        (1,) for two classes or (K,); uqzoo vmaps it over the rows. With
        ``batched=True`` it is called on (N, D) and returns (N, ·) itself.
    in_features, n_classes, prior_scale, last_layer, name
        As :func:`uqzoo.models.from_function`.
    init : callable, optional
        ``init(key) -> module``: a new module of the same structure for a
        ``jax.random`` key, used for every trainer's starting point.
    batched : bool
        Whether ``module`` takes a batch of rows.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, equinox as eqx, uqzoo as uz
    >>> class ResidualMLP(eqx.Module):
    ...     inp: eqx.nn.Linear
    ...     block: eqx.nn.Linear
    ...     out: eqx.nn.Linear
    ...     def __init__(self, d, key):
    ...         k = jax.random.split(key, 3)
    ...         self.inp = eqx.nn.Linear(d, 8, key=k[0])
    ...         self.block = eqx.nn.Linear(8, 8, key=k[1])
    ...         self.out = eqx.nn.Linear(8, 1, key=k[2])
    ...     def __call__(self, x):
    ...         h = jnp.tanh(self.inp(x))
    ...         return self.out(h + jnp.tanh(self.block(h)))
    >>> model = uz.models.from_equinox(ResidualMLP(5, jax.random.key(0)), in_features=5,
    ...                                n_classes=2, last_layer="out",
    ...                                init=lambda key: ResidualMLP(5, key))
    >>> model.n_params
    129
    """
    eqx = _library("equinox", "equinox")
    if not isinstance(module, eqx.Module):
        raise InvalidTypeError(f"module must be an equinox.Module, got {_show(module)}")
    import jax

    params, static = eqx.partition(module, eqx.is_inexact_array)

    def call(p: Any, X: Any) -> Any:
        net = eqx.combine(p, static)
        return net(X) if batched else jax.vmap(net)(X)

    call.__name__ = name or type(module).__name__

    def params_of(key: Any) -> Any:
        return eqx.partition(init(key), eqx.is_inexact_array)[0]   # type: ignore[misc]

    return FunctionModel(call, params, in_features=in_features, n_classes=n_classes,
                         prior_scale=prior_scale, init=None if init is None else params_of,
                         last_layer=last_layer, name=call.__name__, kind="equinox")
