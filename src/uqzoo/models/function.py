"""Any pure JAX function as a :class:`uqzoo.Model`: :func:`from_function`.

The user's parameters are a pytree (nested dicts, lists, tuples, or any
registered node); uqzoo keeps them as a flat dict keyed by each leaf's dotted
path (``{"conv": {"w": ...}}`` → ``"conv.w"``) and rebuilds the pytree for
every call of the user's function, so the user's code sees its own
structure and uqzoo's methods, files and evaluator see one layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from uqzoo._validation import _show, check_float, check_int
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.models._base import MAX_PARAMS, Model

__all__ = ["FunctionModel", "from_function", "leaf_paths"]

# Rows of the probe batch each new model is checked on.
_PROBE_ROWS = 3
_MAX_WIDTH = 1_000_000


def _path_part(entry: Any) -> str:
    import jax.tree_util as jtu

    if isinstance(entry, jtu.DictKey):
        return str(entry.key)
    if isinstance(entry, jtu.SequenceKey):
        return str(entry.idx)
    if isinstance(entry, jtu.GetAttrKey):
        return str(entry.name)
    if isinstance(entry, jtu.FlattenedIndexKey):
        return str(entry.key)
    return str(entry).strip(".[]'\"")


def _unboxed(path: tuple) -> tuple:
    """A path without a last ``.value`` attribute: a leaf kept in a box (a Flax
    variable) is named by its box (``"conv.kernel"``, not ``"conv.kernel.value"``)."""
    import jax.tree_util as jtu

    last = path[-1] if path else None
    if len(path) > 1 and isinstance(last, jtu.GetAttrKey) and last.name == "value":
        return path[:-1]
    return path


def leaf_paths(tree: Any) -> tuple[list[str], list[Any], Any]:
    """Dotted path, value and treedef of every leaf of ``tree``, in JAX's leaf order."""
    import jax.tree_util as jtu

    with_path, treedef = jtu.tree_flatten_with_path(tree)
    paths = [".".join(_path_part(e) for e in _unboxed(path)) or "param"
             for path, _ in with_path]
    if len(set(paths)) != len(paths):
        raise InvalidInputError(f"params has leaves whose dotted paths coincide: {paths}")
    return paths, [leaf for _, leaf in with_path], treedef


class FunctionModel(Model):
    """A :class:`uqzoo.Model` around a pure JAX function; built by :func:`from_function`."""

    def __init__(self, apply: Callable, params: Any, *, in_features: int, n_classes: int,
                 prior_scale: float | Mapping[str, float] = 1.0,
                 init: Callable[[Any], Any] | None = None, last_layer: str | None = None,
                 name: str | None = None, kind: str = "function"):
        if not callable(apply):
            raise InvalidTypeError(f"apply must be a function apply(params, X) -> logits, got "
                                   f"{_show(apply)}")
        self.in_features = check_int(in_features, "in_features", minimum=1, maximum=_MAX_WIDTH)
        self.n_classes = check_int(n_classes, "n_classes", minimum=2, maximum=_MAX_WIDTH)
        self._apply_tree = apply
        self.kind = kind
        self.name = name or getattr(apply, "__name__", type(apply).__name__)
        paths, leaves, self._treedef = leaf_paths(params)
        if not paths:
            raise InvalidInputError("params must hold at least one array leaf, got none")
        self._shapes: dict[str, tuple[int, ...]] = {}
        self._template: dict[str, np.ndarray] = {}
        for path, leaf in zip(paths, leaves, strict=True):
            arr = np.asarray(leaf)
            if not np.issubdtype(arr.dtype, np.floating):
                raise InvalidTypeError(
                    f"params leaf {path!r} must be a float array (every parameter gets a "
                    f"posterior), got dtype {arr.dtype}; pass constants through apply's closure")
            self._shapes[path] = tuple(int(d) for d in arr.shape)
            self._template[path] = arr.astype(np.float32)
        if self.n_params > MAX_PARAMS:
            raise InvalidInputError(
                f"params has {self.n_params:,} parameters; uqzoo allows at most {MAX_PARAMS:,} "
                f"(2**24): every method keeps its draws of all parameters in memory (64 draws "
                f"of this bound take 4 GiB)")
        self._prior = self._check_prior(prior_scale)
        if init is not None and not callable(init):
            raise InvalidTypeError(f"init must be a function init(key) -> params or None, got "
                                   f"{_show(init)}")
        self._init = init
        if last_layer is not None and last_layer not in self.layers():
            raise InvalidInputError(f"last_layer must be one of the model's layers "
                                    f"{self.layers()}, got {_show(last_layer)}")
        self._last_layer = last_layer
        self._check_apply(self._template, "the params given")

    # -- the prior --------------------------------------------------------------------------

    def _check_prior(self, prior_scale: object) -> dict[str, float]:
        if isinstance(prior_scale, Mapping):
            unknown = [k for k in prior_scale if k not in self._shapes]
            missing = [k for k in self._shapes if k not in prior_scale]
            if unknown or missing:
                raise InvalidInputError(
                    f"prior_scale, when a dict, must be keyed by leaf path, one entry per "
                    f"parameter {list(self._shapes)}; unknown {unknown}, missing {missing}")
            return {k: check_float(prior_scale[k], f"prior_scale[{k!r}]", low=0.0,
                                   low_open=True) for k in self._shapes}
        scale = check_float(prior_scale, "prior_scale", low=0.0, low_open=True)
        return dict.fromkeys(self._shapes, scale)

    # -- Model ------------------------------------------------------------------------------

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(self._shapes)

    def prior_sd(self, key: str) -> float:
        if key not in self._prior:
            raise InvalidInputError(f"key must be a parameter of the model, got {_show(key)}; "
                                    f"allowed: {list(self._shapes)}")
        return self._prior[key]

    @property
    def last_layer(self) -> str | None:
        return self._last_layer

    def tree(self, params: Mapping[str, Any]) -> Any:
        """The user's pytree from a flat dict keyed by leaf path."""
        import jax.tree_util as jtu
        return jtu.tree_unflatten(self._treedef, [params[k] for k in self._shapes])

    def apply(self, params: Mapping[str, Any], X: Any) -> Any:
        return self._apply_tree(self.tree(params), X)

    def init_params(self, seed: int, num: int | None = None) -> dict[str, np.ndarray]:
        """The ``init`` given, called with ``jax.random.key(seed)``; without one, each
        entry N(mean, sd²) of its template leaf (the params given), so a leaf the user
        initialised keeps its scale; a constant leaf (sd 0) is kept as given."""
        lead = () if num is None else (check_int(num, "num", minimum=1),)
        if self._init is not None:
            import jax
            keys = jax.random.split(jax.random.key(seed), math.prod(lead) or 1)
            sets = [self._from_init(k) for k in keys]
            if num is None:
                return sets[0]
            return {k: np.stack([s[k] for s in sets]) for k in self._shapes}
        rng = np.random.default_rng(seed)
        out = {}
        for key, template in self._template.items():
            noise = rng.standard_normal(lead + template.shape)
            out[key] = (template.mean() + template.std() * noise).astype(np.float32)
        return out

    def _from_init(self, key: Any) -> dict[str, np.ndarray]:
        paths, leaves, treedef = leaf_paths(self._init(key))   # type: ignore[misc]
        if treedef != self._treedef:
            raise InvalidInputError(f"init returned a pytree of another structure than "
                                    f"params: {treedef} vs {self._treedef}")
        params = {p: np.asarray(v, dtype=np.float32) for p, v in zip(paths, leaves, strict=True)}
        return self.check_params(params, "init(key)")

    def describe(self) -> dict:
        return {"kind": self.kind, "name": self.name, "in_features": self.in_features,
                "n_classes": self.n_classes, "likelihood": self.likelihood,
                "params": [{"path": k, "shape": list(s), "dtype": "float32",
                            "prior_sd": self._prior[k]} for k, s in self._shapes.items()],
                "last_layer": self._last_layer}

    def summary(self) -> str:
        return f"{'model' if self.kind == 'function' else self.kind} {self.name} " \
               f"({self.n_params:,} parameters)"

    def __repr__(self) -> str:
        return (f"FunctionModel({self.name}, in_features={self.in_features}, "
                f"n_classes={self.n_classes}, n_params={self.n_params})")

    # -- checks -----------------------------------------------------------------------------

    def _check_apply(self, params: Mapping[str, np.ndarray], what: str) -> None:
        """apply on a probe batch: logits of shape (N, n_outputs), finite."""
        import jax.numpy as jnp
        X = jnp.linspace(-1.0, 1.0, _PROBE_ROWS * self.in_features,
                         dtype=jnp.float32).reshape(_PROBE_ROWS, self.in_features)
        try:
            logits = self.apply({k: jnp.asarray(v) for k, v in params.items()}, X)
        except Exception as exc:
            raise InvalidInputError(
                f"apply(params, X) failed on {what} with X of shape {X.shape}: "
                f"{type(exc).__name__}: {exc}") from exc
        shape = getattr(logits, "shape", None)
        want = (_PROBE_ROWS, self.n_outputs)
        if shape != want:
            raise InvalidInputError(
                f"apply(params, X) must return logits of shape (N, {self.n_outputs}) "
                f"({'one logit for two classes' if self.n_classes == 2 else 'one per class'}), "
                f"got shape {shape} for X of shape {X.shape}")
        if not bool(jnp.all(jnp.isfinite(logits))):
            raise InvalidInputError(f"apply(params, X) returned non-finite logits on {what}")


def from_function(apply: Callable, params: Any, *, in_features: int, n_classes: int,
                  prior_scale: float | Mapping[str, float] = 1.0,
                  init: Callable[[Any], Any] | None = None,
                  last_layer: str | None = None, name: str | None = None) -> FunctionModel:
    """A :class:`uqzoo.Model` from a pure JAX function ``apply(params, X) -> logits``.

    Parameters
    ----------
    apply : callable
        ``apply(params, X)`` with ``params`` a pytree shaped like ``params``
        and X a float array (N, D); returns logits (N, 1) for two classes
        (the logit of class 1), (N, K) otherwise. Pure and traceable by JAX
        (``jit``, ``vmap``, ``grad``): every method differentiates it.
    params : pytree of float arrays
        One parameter set: the structure, shapes and the default
        initialisation's scale. Every leaf gets a posterior; constants belong
        in ``apply``'s closure.
    in_features, n_classes : int
        D and K.
    prior_scale : float or dict
        The Gaussian prior's standard deviation: iid N(0, s²) for every entry
        (default 1), or a dict keyed by leaf path (``"conv.kernel"``) with one
        s per leaf.
    init : callable, optional
        ``init(key) -> params`` for a ``jax.random`` key, used for ensembles',
        MAP's and every trainer's starting points. By default each entry is
        N(mean, sd²) of its leaf in ``params``.
    last_layer : str, optional
        The layer (leaf path without its last part, e.g. ``"head"`` for
        ``"head.w"`` and ``"head.b"``) that Laplace's ``subset="last_layer"``
        covers.
    name : str, optional
        Shown in tables and recorded in files; the function's name by default.

    Returns
    -------
    FunctionModel

    Raises
    ------
    InvalidInputError
        If ``apply`` fails or returns logits of the wrong shape or non-finite
        ones on a probe batch, or the model has more than 2**24 parameters.
    InvalidTypeError
        If a leaf is not a float array.

    Examples
    --------
    A 1-D convolution over the features, then a linear head:

    >>> import jax, jax.numpy as jnp, numpy as np, uqzoo as uz
    >>> def cnn(p, X):
    ...     h = jax.lax.conv(X[:, None, :], p["conv"]["w"], (1,), "VALID")   # (N, 4, D-2)
    ...     h = jnp.tanh(h + p["conv"]["b"][None, :, None]).reshape(X.shape[0], -1)
    ...     return h @ p["head"]["w"] + p["head"]["b"]
    >>> params = {"conv": {"w": np.full((4, 1, 3), 0.3, np.float32),
    ...                    "b": np.zeros(4, np.float32)},
    ...           "head": {"w": np.full((4 * 6, 1), 0.1, np.float32),
    ...                    "b": np.zeros(1, np.float32)}}
    >>> model = uz.models.from_function(cnn, params, in_features=8, n_classes=2,
    ...                                 last_layer="head")
    >>> list(model.param_shapes())
    ['conv.b', 'conv.w', 'head.b', 'head.w']
    >>> model.n_params
    41
    """
    return FunctionModel(apply, params, in_features=in_features, n_classes=n_classes,
                         prior_scale=prior_scale, init=init, last_layer=last_layer, name=name)
