"""``Posterior``: what every method returns.

A posterior is a set of parameter draws in the shared layout plus everything
needed to reproduce and judge it: the spec, the method name, its full config
and seed, and diagnostics. It pushes its draws through the one predictive
engine, and saves to netCDF (ArviZ schema) -- never pickle.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from uqzoo import predictive as engine
from uqzoo._channels import InputAugmentation
from uqzoo._validation import _show, check_int, check_seed, choices
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError
from uqzoo.models import Model
from uqzoo.transform import check_transform

__all__ = ["PREDICTIVES", "Posterior"]

Predictive = Literal["nn", "glm"]
PREDICTIVES = choices(Predictive)


def jsonable(value: Any) -> Any:
    """Config values in the plain-JSON form they take after a save/load round trip."""
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise InvalidTypeError(f"config value {_show(obj)} is not JSON-serialisable")


def _check_classes(classes: object, n_classes: int) -> tuple[Any, ...]:
    """Original labels as a tuple of JSON scalars, one per class, all distinct."""
    if isinstance(classes, (str, bytes)) or (not isinstance(classes, Sequence) \
            and not isinstance(classes, np.ndarray)):
        raise InvalidTypeError(f"classes must be a sequence of labels, got {_show(classes)}")
    labels = tuple(v.item() if isinstance(v, np.generic) else v for v in classes)
    # The types first: set() of a list label (a file's [[0, 1], ...]) raises TypeError.
    if len(labels) != n_classes or not all(
            isinstance(v, (str, int, float, bool)) for v in labels) \
            or len(set(labels)) != n_classes:
        raise InvalidInputError(
            f"classes must hold {n_classes} distinct labels (str, int, float or bool), "
            f"one per class, got {_show(classes)}")
    return labels


@dataclasses.dataclass(frozen=True, eq=False)
class Posterior:
    """Parameter draws of one fitted method, with their provenance.

    Attributes
    ----------
    spec : MLPSpec
    method : str
        Registered method name (``uz.methods.names()``).
    config : dict
        The method's full configuration, JSON-plain (tuples become lists).
    seed : int
        The seed the fit was run with; ``uz.fit(method, spec, data, seed,
        **config)`` reproduces the draws.
    draws : dict of ndarray
        Parameter draws, each (S, *param_shape), float32, S = chains × draws.
    sample_shape : (int, int)
        (chains, draws per chain); (1, S) for methods without chains.
    sample_stats : dict of ndarray
        Per-draw statistics, each of shape ``sample_shape + (...)``
        (divergences, tree depth, step size, ...).
    diagnostics : dict
        Everything else: convergence summaries (R-hat, ESS), ELBO or loss
        traces, timings (seconds). Arrays or scalars.
    predictive : {"nn", "glm"}
        "nn" pushes each draw through the network; "glm" linearises the
        network at ``anchor`` (Laplace's linearised predictive).
    anchor : dict of ndarray or None
        The MAP/mean parameters the "glm" predictive is linearised around.
    converged : bool or None
        False when diagnostics say the fit did not converge; None when the
        method has no such check.
    warnings : tuple of str
        Human-readable convergence or fit warnings, carried into reports.
    classes : tuple or None
        The original class labels (str, int, float or bool), in the order of
        the probability columns 0..K-1; None means the labels are 0..K-1.
    logit_transform : LogitTransform or None
        Post-hoc recalibration (temperature or vector scaling, fitted by
        :func:`uqzoo.recalibrate`) that the predictive engine applies to
        every draw's logits before they become probabilities; None for none.
    input_augmentation : InputAugmentation or None
        Test-time augmentation (:mod:`uqzoo.methods.tta`): draw s is
        evaluated on its own augmented copy of the inputs, so the spread of
        the draws includes the network's sensitivity to the augmentations.
        None (every method but ``tta``): the inputs as given.
    """

    spec: Model
    method: str
    config: Mapping[str, Any]
    seed: int
    draws: Mapping[str, np.ndarray]
    sample_shape: tuple[int, int] = None  # type: ignore[assignment]  # None: (1, S)
    sample_stats: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    diagnostics: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    predictive: str = "nn"
    anchor: Mapping[str, np.ndarray] | None = None
    converged: bool | None = None
    warnings: tuple[str, ...] = ()
    classes: tuple[Any, ...] | None = None
    logit_transform: engine.LogitTransform | None = None
    input_augmentation: InputAugmentation | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.spec, Model):
            raise InvalidTypeError(f"spec must be a uqzoo.Model, got {_show(self.spec)}")
        if not isinstance(self.method, str):
            raise InvalidTypeError(f"method must be a str, got {_show(self.method)}")
        for name in ("config", "sample_stats", "diagnostics"):
            if not isinstance(getattr(self, name), Mapping):
                raise InvalidTypeError(
                    f"{name} must be a dict, got {_show(getattr(self, name))}")
        if isinstance(self.warnings, (str, bytes)) or not isinstance(self.warnings,
                                                                     (tuple, list)):
            raise InvalidTypeError(
                f"warnings must be a tuple of str, got {_show(self.warnings)}")
        draws = self.spec.check_draws(self.draws)
        S = next(iter(draws.values())).shape[0]
        shape = (1, S) if self.sample_shape is None else self.sample_shape
        if not isinstance(shape, (tuple, list)):
            raise InvalidTypeError(
                f"sample_shape must be a (chains, draws) tuple, got {_show(shape)}")
        checked = tuple(check_int(s, "sample_shape entry", minimum=1) for s in shape)
        if len(checked) != 2 or checked[0] * checked[1] != S:
            raise InvalidInputError(
                f"sample_shape must be (chains, draws) with chains × draws = S = {S}, "
                f"got {shape}"
            )
        if self.predictive not in PREDICTIVES:
            raise InvalidInputError(
                f"predictive must be one of {PREDICTIVES}, got {self.predictive!r}"
            )
        anchor = self.anchor
        if anchor is not None:
            anchor = {k: np.asarray(v, dtype=np.float32) for k, v in
                      self.spec.check_params(anchor, "anchor").items()}
        elif self.predictive == "glm":
            raise InvalidInputError("predictive='glm' needs the anchor (MAP) parameters")
        stats = {k: np.asarray(v) for k, v in self.sample_stats.items()}
        for k, v in stats.items():
            if v.shape[:2] != checked:
                raise InvalidInputError(
                    f"sample_stats[{k!r}] must have leading shape {checked}, got {v.shape}"
                )
        set_(self, "draws", draws)
        set_(self, "sample_shape", checked)
        set_(self, "sample_stats", stats)
        set_(self, "diagnostics", dict(self.diagnostics))
        set_(self, "anchor", anchor)
        set_(self, "config", jsonable(dict(self.config)))
        set_(self, "seed", check_seed(self.seed))
        set_(self, "warnings", tuple(str(w) for w in self.warnings))
        if self.converged is not None:
            set_(self, "converged", bool(self.converged))
        if self.classes is not None:
            set_(self, "classes", _check_classes(self.classes, self.spec.n_classes))
        check_transform(self.spec, self.logit_transform)
        augmentation = self.input_augmentation
        if augmentation is not None and (not isinstance(augmentation, InputAugmentation)
                                         or augmentation.n_features != self.spec.in_features):
            raise InvalidInputError(
                f"input_augmentation must be None or an InputAugmentation of the spec's "
                f"{self.spec.in_features} features, got {_show(augmentation)}")

    # -- predictions ------------------------------------------------------------------

    @property
    def num_draws(self) -> int:
        """S, the number of parameter draws."""
        return self.sample_shape[0] * self.sample_shape[1]

    def _subset(self, num_samples: int | None, seed: int) -> dict[str, np.ndarray]:
        idx = self._draw_index(num_samples, seed)
        if idx is None:
            return dict(self.draws)
        return {k: v[idx] for k, v in self.draws.items()}

    def _draw_index(self, num_samples: int | None, seed: int) -> np.ndarray | None:
        """The draws a subset of ``num_samples`` keeps, sorted; None for all."""
        if num_samples is None:
            return None
        num_samples = check_int(num_samples, "num_samples", minimum=1)
        if num_samples > self.num_draws:
            raise InvalidInputError(
                f"num_samples must be at most the {self.num_draws} draws this posterior "
                f"holds, got {num_samples}"
            )
        rng = np.random.default_rng(check_seed(seed))
        return np.sort(rng.choice(self.num_draws, size=num_samples, replace=False))

    def predict_proba_draws(self, X: object, num_samples: int | None = None,
                            seed: int = 0) -> np.ndarray:
        """Class probabilities of each draw, shape (S, N, K), float32.

        Parameters
        ----------
        X : array of shape (N, D)
        num_samples : int, optional
            Use a random subset of this many draws (without replacement,
            chosen with ``seed``); all draws by default.
        seed : int
        """
        if self.input_augmentation is not None:
            idx = self._draw_index(num_samples, seed)
            return engine.augmented_draws(
                self.spec, self._subset(num_samples, seed), X, self.input_augmentation,
                draw_index=idx, anchor=self._anchor(), logit_transform=self.logit_transform)
        return engine.proba_draws(self.spec, self._subset(num_samples, seed), X,
                                  anchor=self._anchor(), logit_transform=self.logit_transform)

    def predict_proba(self, X: object) -> np.ndarray:
        """Posterior-mean class probabilities, shape (N, K), float64.

        Column k belongs to ``classes[k]`` (class k when ``classes`` is None).
        """
        return self.summarize(X, levels=(0.5,)).mean

    def predict(self, X: object) -> np.ndarray:
        """The most probable class of each point under the posterior mean, shape (N,).

        Returned in the original labels (``classes``) when the posterior has
        them, as integer class indices otherwise; ties go to the first class.
        """
        index = self.predict_proba(X).argmax(axis=1)
        if self.classes is None:
            return index
        return np.asarray(self.classes)[index]

    def summarize(self, X: object, levels: Sequence[float] = engine.DEFAULT_LEVELS,
                  chunk_size: int | None = None, interval: str = "equal_tailed",
                  workers: int | None = None,
                  progress_bar: bool = False) -> engine.PredictiveSummary:
        """Streamed per-point summary (mean, interval bounds per level); see
        :func:`uqzoo.predictive.summarize`. Memory O(S × chunk_size) per worker."""
        if self.input_augmentation is not None:
            return engine.augmented_summarize(
                self.spec, self.draws, X, levels, augmentation=self.input_augmentation,
                anchor=self._anchor(), chunk_size=chunk_size, interval=interval,
                progress_bar=progress_bar, logit_transform=self.logit_transform)
        return engine.summarize(self.spec, self.draws, X, levels, anchor=self._anchor(),
                                chunk_size=chunk_size, interval=interval,
                                workers=workers, progress_bar=progress_bar,
                                logit_transform=self.logit_transform)

    def _anchor(self):
        return self.anchor if self.predictive == "glm" else None

    # -- persistence ------------------------------------------------------------------

    def save(self, path, *, overwrite: bool = False) -> None:
        """Write to netCDF (xarray DataTree, ArviZ schema); see :func:`uqzoo.load_posterior`.

        The file is written next to ``path`` and moved into place only when
        complete, so a crash never leaves a half-written file where a good one was.

        Parameters
        ----------
        path : str or os.PathLike
            The file; a symbolic link there is refused, never written through.
        overwrite : bool
            Replace an existing file at ``path`` (without it, an error).
        """
        from uqzoo import io
        io.save_posterior(self, path, overwrite=overwrite)

    def to_datatree(self):
        """An ``xarray.DataTree`` with ``posterior`` and ``sample_stats`` groups (ArviZ)."""
        from uqzoo import io
        return io.to_datatree(self)

    def __repr__(self) -> str:
        flag = {True: "", False: ", NOT CONVERGED", None: ""}[self.converged]
        recal = "" if self.logit_transform is None else f", {self.logit_transform!r}"
        if self.input_augmentation is not None:
            recal += f", {self.input_augmentation!r}"
        return (f"Posterior(method={self.method!r}, draws={self.num_draws}, "
                f"sample_shape={self.sample_shape}, predictive={self.predictive!r}, "
                f"seed={self.seed}{flag}{recal})")


def check_anchored(posterior: object, method: str, needs: str) -> Mapping[str, np.ndarray]:
    """The anchor of ``posterior``, which must be a :class:`Posterior` of ``method``.

    For functions that work from the point a method's draws were built around
    (Laplace's MAP, MC dropout's trained weights); ``needs`` says in the error
    what the anchor is needed for.
    """
    if not isinstance(posterior, Posterior) or posterior.method != method:
        raise InvalidTypeError(f"posterior must be a Posterior of method {method!r}, "
                               f"got {posterior!r}")
    if posterior.anchor is None:
        raise InvalidInputError(f"posterior has no anchor: {needs}")
    return posterior.anchor


def load_posterior(path: str | os.PathLike, model: Model | None = None) -> Posterior:
    """Read a posterior written by :meth:`Posterior.save`.

    The file's structure is checked before any data is read (see
    :mod:`uqzoo.io` for what is refused).

    Parameters
    ----------
    path : str or os.PathLike
    model : Model, optional
        The network the posterior was fitted with. A file of
        :class:`uqzoo.MLPSpec` holds its spec and needs none; a file of your
        own model (:func:`uqzoo.models.from_function`, ...) holds only its
        fingerprint (no code), so pass the same model.

    Raises
    ------
    FileFormatError
        As :func:`uqzoo.io.read_posterior` says, or when the fields do not make
        a valid posterior.
    InvalidInputError
        When a file of your own model is loaded without ``model``, or ``model``
        is not the one the file was fitted with (another fingerprint).
    """
    from uqzoo import io

    fields = io.read_posterior(path, model)
    try:
        return Posterior(**fields)
    except (TypeError, ValueError) as exc:
        raise FileFormatError(f"{str(path)!r} is a damaged uqzoo posterior: {exc}") from exc
