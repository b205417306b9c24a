"""Helpers for method ``Config`` dataclasses: validation in ``__post_init__``, and
the class-weight option every method shares. The size limits live in
:mod:`uqzoo._limits` (below :mod:`uqzoo.io`, which checks files against them)
and are re-exported here for the methods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from uqzoo._limits import (
    MAX_DRAW_BYTES,
    MAX_DRAWS,
    MAX_ITERATIONS,
    MAX_MATRIX_ELEMENTS,
    MAX_MEMBERS,
    MAX_TRACE_ELEMENTS,
    check_chain_sizes,
    check_draw_memory,
    check_draws,
    check_iterations,
    check_members,
    check_trace,
)
from uqzoo._validation import check_choice, check_float, check_int
from uqzoo.errors import InvalidInputError

__all__ = [
    "MAX_DRAWS",
    "MAX_DRAW_BYTES",
    "MAX_ITERATIONS",
    "MAX_MATRIX_ELEMENTS",
    "MAX_MEMBERS",
    "MAX_TRACE_ELEMENTS",
    "FreeDraws",
    "MemberDraws",
    "check_chain_sizes",
    "check_choice",
    "check_class_weight",
    "check_draw_memory",
    "check_draws",
    "check_float",
    "check_int",
    "check_iterations",
    "check_members",
    "check_trace",
    "check_training_sizes",
    "class_weights",
    "config_dict",
    "effective_class_prior",
    "row_weights",
    "set_field",
]

class FreeDraws:
    """``Config`` mixin of a method whose posterior draws are free to make (a sampler,
    a variational or Gaussian approximation, dropout masks): ``num_samples`` is S."""

    @classmethod
    def budget_options(cls, num_draws: int, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options that make this method emit ``num_draws`` posterior draws."""
        return {"num_samples": num_draws}


class MemberDraws:
    """``Config`` mixin of a method whose every draw is a trained network (ensembles,
    the bootstrap): a common draw budget does not apply; ``num_members`` is S."""

    @classmethod
    def budget_options(cls, num_draws: int, options: Mapping[str, Any]) -> dict[str, Any]:
        """No options: the default ``num_members`` is enough for every default level."""
        return {}


def config_dict(config: Any) -> dict:
    """The config as a plain dict (what a Posterior stores and saves)."""
    return dataclasses.asdict(config)


def set_field(config: Any, name: str, value: Any) -> None:
    """Replace a field of a frozen config during ``__post_init__`` (normalisation)."""
    object.__setattr__(config, name, value)


def check_training_sizes(config: Any, num_members: int, members_name: str) -> None:
    """Bound a trained method's ``num_epochs`` and its (members, epochs) loss trace.

    ``TrainingConfig`` checks ``num_epochs >= 1``; this adds the upper bounds.
    """
    set_field(config, "num_epochs", check_iterations(config.num_epochs, "num_epochs"))
    check_trace(num_members, config.num_epochs, members_name, "num_epochs")


# -- class weights: a reweighted likelihood, the same option in every method -------------

def check_class_weight(value: object, name: str = "class_weight"
                       ) -> str | tuple[float, ...] | None:
    """None, "balanced" or a tuple of positive finite floats (one per class)."""
    if value is None or value == "balanced":
        return value
    if isinstance(value, str):
        raise InvalidInputError(f"{name} must be None, 'balanced' or one positive weight per "
                                f"class, got {value!r}")
    if isinstance(value, dict) or not hasattr(value, "__iter__"):
        raise InvalidInputError(
            f"{name} must be None, 'balanced' or a sequence of one positive weight per class "
            f"(uz.fit also takes a dict label -> weight), got {type(value).__name__}")
    weights = tuple(check_float(v, f"{name} entry", low=0.0, low_open=True) for v in value)
    if len(weights) < 2:
        raise InvalidInputError(f"{name} needs one weight per class (at least 2), got "
                                f"{len(weights)}")
    return weights


def class_weights(class_weight: str | tuple[float, ...] | None, y: Any,
                  n_classes: int) -> Any:
    """c_k per class (float64, shape (K,)) for labels ``y`` in 0..K-1, or None for none."""
    import numpy as np

    if class_weight is None:
        return None
    if class_weight == "balanced":
        counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=n_classes)
        if np.any(counts == 0):
            missing = np.flatnonzero(counts == 0).tolist()
            raise InvalidInputError(f"class_weight='balanced' needs every class in the training "
                                    f"labels; class indices {missing} have none")
        return len(y) / (n_classes * counts.astype(np.float64))
    if len(class_weight) != n_classes:
        raise InvalidInputError(f"class_weight has {len(class_weight)} weights; the data have "
                                f"{n_classes} classes")
    return np.asarray(class_weight, dtype=np.float64)


def row_weights(class_weight: str | tuple[float, ...] | None, y: Any, n_classes: int) -> Any:
    """The likelihood weight c_{y_i} of each training row (float32, (N,)), or None."""
    import numpy as np

    per_class = class_weights(class_weight, y, n_classes)
    if per_class is None:
        return None
    return per_class[np.asarray(y, dtype=np.int64)].astype(np.float32)


def effective_class_prior(class_weight: str | tuple[float, ...] | None, y: Any,
                          n_classes: int) -> Any:
    """The class prior a fit's probabilities refer to: π_k ∝ c_k n_k (float64, (K,)).

    Without class weights, the training labels' frequencies.
    """
    import numpy as np

    counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=n_classes).astype(np.float64)
    per_class = class_weights(class_weight, y, n_classes)
    mass = counts if per_class is None else counts * per_class
    return mass / mass.sum()
