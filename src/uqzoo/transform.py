"""A map applied to every draw's logits before they become probabilities.

Post-hoc recalibration (:func:`uqzoo.recalibrate`) and prior shift
(:func:`uqzoo.prior_shift`) each produce one; the network forwards
(:mod:`uqzoo.nets`) and the predictive engine apply it. It lives in its own
low module so that the forwards and the engine can both import it without an
import circle.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

from uqzoo._validation import check_choice, check_float, choices
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.models import Model

__all__ = ["LOGIT_TRANSFORMS", "LogitTransform", "check_transform"]

TransformKind = Literal["temperature", "vector"]
LOGIT_TRANSFORMS = choices(TransformKind)


@dataclasses.dataclass(frozen=True, eq=False)
class LogitTransform:
    """An affine map z ↦ scale · z + shift applied to every draw's logits.

    Post-hoc recalibration (:func:`uqzoo.recalibrate`) fits one; the engine
    applies it wherever logits become probabilities, before the sigmoid or
    softmax, for every draw, so means, intervals and entropies all see the
    recalibrated probabilities.

    Attributes
    ----------
    kind : {"temperature", "vector"}
        ``"temperature"``: z / T with one T > 0 for every logit (Guo et al.
        2017); ``"vector"``: w ⊙ z + b with one (w_k, b_k) per logit (vector
        scaling, W = diag(w); for two classes, whose network has one logit,
        this is Platt scaling of that logit).
    scale : float64 ndarray of shape (n_outputs,)
        1 / T for every logit, or w.
    shift : float64 ndarray of shape (n_outputs,)
        0, or b.
    info : dict
        Provenance, JSON-plain: how and on what the transform was fitted
        (method, seed, calibration points, NLL before and after, ...).
    """

    kind: str
    scale: np.ndarray
    shift: np.ndarray
    info: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = check_choice(self.kind, "kind", LOGIT_TRANSFORMS)
        scale = np.array(self.scale, dtype=np.float64).reshape(-1)
        shift = np.array(self.shift, dtype=np.float64).reshape(-1)
        if scale.shape != shift.shape or scale.size == 0:
            raise InvalidInputError(
                f"scale and shift must be 1-D of one length (n_outputs), got shapes "
                f"{np.shape(self.scale)} and {np.shape(self.shift)}")
        if not (np.all(np.isfinite(scale)) and np.all(np.isfinite(shift))):
            raise InvalidInputError("scale and shift must be finite")
        if kind == "temperature" and (np.any(scale <= 0) or np.any(scale != scale[0])
                                      or np.any(shift != 0)):
            raise InvalidInputError(
                "a temperature transform has one positive scale 1/T for every logit and no "
                f"shift, got scale {scale.tolist()} and shift {shift.tolist()}")
        if not isinstance(self.info, Mapping):
            raise InvalidTypeError(f"info must be a dict, got {type(self.info).__name__}")
        try:
            info = json.loads(json.dumps(dict(self.info)))
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"info must be JSON-serialisable: {exc}") from None
        scale.flags.writeable = False
        shift.flags.writeable = False
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "shift", shift)
        object.__setattr__(self, "info", info)

    @classmethod
    def from_temperature(cls, temperature: float, n_outputs: int,
                         info: Mapping[str, Any] | None = None) -> LogitTransform:
        """z / T on all ``n_outputs`` logits."""
        T = check_float(temperature, "temperature", low=0.0, low_open=True)
        return cls("temperature", np.full(n_outputs, 1.0 / T), np.zeros(n_outputs),
                   dict(info or {}))

    @property
    def n_outputs(self) -> int:
        return int(self.scale.shape[0])

    @property
    def temperature(self) -> float | None:
        """T for a temperature transform, None for vector scaling."""
        return 1.0 / float(self.scale[0]) if self.kind == "temperature" else None

    def apply(self, logits: np.ndarray) -> np.ndarray:
        """The transformed (..., n_outputs) logits, float64 (a reference for the engine)."""
        return np.asarray(logits, dtype=np.float64) * self.scale + self.shift

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, as saved in a posterior file."""
        return {"kind": self.kind, "scale": self.scale.tolist(),
                "shift": self.shift.tolist(), "info": dict(self.info)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LogitTransform:
        if not isinstance(d, Mapping) or set(d) != {"kind", "scale", "shift", "info"}:
            raise InvalidInputError(
                "a logit transform is a dict with keys 'info', 'kind', 'scale' and 'shift', "
                f"got {sorted(d) if isinstance(d, Mapping) else type(d).__name__}")
        for key in ("scale", "shift"):
            values = d[key]
            if not isinstance(values, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                raise InvalidInputError(f"logit transform {key!r} must be a list of numbers")
        return cls(d["kind"], d["scale"], d["shift"], d["info"])

    def __repr__(self) -> str:
        if self.kind == "temperature":
            return f"LogitTransform(temperature={self.temperature:.4g})"
        return (f"LogitTransform(vector, w={np.round(self.scale, 4).tolist()}, "
                f"b={np.round(self.shift, 4).tolist()})")


def check_transform(spec: Model, transform: object) -> LogitTransform | None:
    """``transform`` checked against ``spec``'s number of logits (None passes through)."""
    if transform is None:
        return None
    if not isinstance(transform, LogitTransform):
        raise InvalidTypeError(
            f"logit_transform must be a LogitTransform or None, got {type(transform).__name__}")
    if transform.n_outputs != spec.n_outputs:
        raise InvalidInputError(
            f"logit_transform acts on {transform.n_outputs} logits; the network has "
            f"{spec.n_outputs} (n_outputs)")
    return transform
