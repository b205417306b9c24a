"""``Model``: the network every method, the evaluator and the files share.

A model is a classifier ``apply(params, X) -> logits`` over a flat parameter
dict, its Gaussian prior (a standard deviation per parameter) and its
likelihood. Parameters are keyed by *leaf path*: ``"layers.0.weight"`` for
:class:`uqzoo.MLPSpec`, the dotted path of each leaf of a user's pytree
(``"conv.kernel"``, ``"blocks.0.w"``) for a wrapped model. Parameter *draws*
are the same dict with a leading S axis, so every method's posterior is read
the same way whatever the network.

What a model must give: ``in_features``, ``n_classes``,
:meth:`Model.param_shapes`, :meth:`Model.prior_sd`, :meth:`Model.apply`,
:meth:`Model.init_params` and :meth:`Model.describe`. Everything else
(layout checks, flattening, the fingerprint files record) is written once
here. Optional capabilities a method may need are declared, not guessed:
:attr:`Model.last_layer` (Laplace's ``subset="last_layer"``) and
:attr:`Model.dropout_masks` (MC dropout's masks, the MLP's alone for now).
"""

from __future__ import annotations

import abc
import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from uqzoo._validation import _show
from uqzoo.errors import InvalidInputError, InvalidTypeError, UnsupportedModelError

__all__ = ["LIKELIHOODS", "MAX_PARAMS", "Model", "fingerprint_of", "unsupported"]

# Parameters of one network. Every method keeps S float32 draws of all of them,
# within uqzoo._limits.MAX_DRAW_BYTES (4 GiB); 2**24 parameters (64 MiB a draw)
# leave room for 64 draws, about the fewest that equal-tailed 0.95 intervals
# need (39). Checked from the shapes, before anything is allocated.
MAX_PARAMS = 2**24

# The likelihoods a model may declare. Classification is all uqzoo evaluates
# today; a regression likelihood is another entry here and another branch of
# uqzoo.nets.jax.log_likelihood_terms, not another model type.
LIKELIHOODS = ("categorical",)


class Model(abc.ABC):
    """A classifier network with a Gaussian prior: what :func:`uqzoo.fit` takes.

    Two classes use a single logit and a sigmoid (identifiable, which helps
    HMC); K > 2 use K logits and a softmax. Probabilities always come out as
    (..., N, K), binary as ``[1 - p, p]``.

    Subclass it, or wrap a network you already have:
    :func:`uqzoo.models.from_function` (any pure JAX function),
    :func:`uqzoo.models.from_flax`, :func:`uqzoo.models.from_equinox`.
    """

    in_features: int
    n_classes: int
    # The likelihood of a label given the logits; see LIKELIHOODS.
    likelihood: ClassVar[str] = "categorical"
    # True when the forward pass accepts MC dropout's per-hidden-layer masks
    # (uqzoo.nets.jax.forward_logits(..., hidden_masks=...)).
    dropout_masks: ClassVar[bool] = False

    # -- what a model defines ------------------------------------------------------------

    @abc.abstractmethod
    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of one parameter set, by leaf path, in the model's order."""

    @abc.abstractmethod
    def prior_sd(self, key: str) -> float:
        """The prior standard deviation of every entry of parameter ``key``."""

    @abc.abstractmethod
    def apply(self, params: Mapping[str, Any], X: Any) -> Any:
        """Logits (N, n_outputs) of one parameter set at X (N, D), a JAX function."""

    @abc.abstractmethod
    def init_params(self, seed: int, num: int | None = None) -> dict[str, np.ndarray]:
        """Random initial parameters (float32); ``num`` sets with a leading axis."""

    @abc.abstractmethod
    def describe(self) -> dict:
        """The structure as plain JSON (its ``"kind"`` first): what a file records."""

    # -- optional capabilities -----------------------------------------------------------

    @property
    def last_layer(self) -> str | None:
        """The layer (see :meth:`layer_of`) Laplace's ``subset="last_layer"`` covers,
        or None when the model does not name one."""
        return None

    def layer_of(self, key: str) -> str:
        """The layer parameter ``key`` belongs to: its leaf path without the last part.

        Laplace's ``prior_tuning="layerwise"`` tunes one prior precision per layer.
        """
        return key.rsplit(".", 1)[0] if "." in key else key

    # -- written once for every model -----------------------------------------------------

    @property
    def n_outputs(self) -> int:
        """Number of logits: 1 for two classes, K otherwise."""
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def n_params(self) -> int:
        return sum(math.prod(s) for s in self.param_shapes().values())

    def layers(self) -> list[str]:
        """The layers of :meth:`layer_of`, in parameter order."""
        return list(dict.fromkeys(self.layer_of(k) for k in self.param_shapes()))

    def prior_sds(self) -> dict[str, float]:
        """:meth:`prior_sd` of every parameter, in parameter order."""
        return {key: self.prior_sd(key) for key in self.param_shapes()}

    def fingerprint(self) -> str:
        """A hash of :meth:`describe`: leaf paths, shapes, dtypes and prior.

        A posterior file records it; loading the file with a model of another
        fingerprint is refused.
        """
        return fingerprint_of(self.describe())

    def check_draws(self, draws: object, name: str = "draws") -> dict[str, np.ndarray]:
        """Validate parameter draws (leading S axis) against this model.

        Returns the draws as a dict of float32 numpy arrays in parameter order.
        Raises a clear error for missing/extra keys, wrong shapes, a ragged S
        axis or non-finite values.
        """
        return _check_layout(self, draws, name, leading=True)

    def check_params(self, params: object, name: str = "params") -> dict[str, np.ndarray]:
        """Validate one parameter set (no leading S axis) against this model."""
        return _check_layout(self, params, name, leading=False)

    def flatten(self, params: Mapping[str, np.ndarray], leading: int = 0) -> np.ndarray:
        """Concatenate parameters into vectors, parameter order, row-major.

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

    def summary(self) -> str:
        """One line for tables and reports: the kind and the parameter count."""
        return f"{self.describe().get('kind', type(self).__name__)} ({self.n_params:,} parameters)"


def fingerprint_of(description: Mapping) -> str:
    """sha256 (first 16 hex digits) of a model description's canonical JSON."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def unsupported(method: str, model: Model, missing: str, how: str) -> UnsupportedModelError:
    """The one error a method raises for a model that lacks what it needs."""
    return UnsupportedModelError(
        f"{method} cannot fit {model.summary()}: it needs {missing}; {how}")


def _check_layout(model: Model, draws: object, name: str, leading: bool) -> dict[str, np.ndarray]:
    if not isinstance(draws, Mapping):
        raise InvalidTypeError(
            f"{name} must be a dict of arrays keyed by leaf path "
            f"({', '.join(model.param_shapes())}), got {_show(draws)}"
        )
    expected = model.param_shapes()
    missing = [k for k in expected if k not in draws]
    extra = [k for k in draws if k not in expected]
    if missing or extra:
        raise InvalidInputError(
            f"{name} does not match the model's layout: missing {missing}, unexpected {extra}; "
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
