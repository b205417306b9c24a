"""The posterior approximators and the MAP baseline, behind one ``fit`` function.

Each method lives in its own module, which satisfies the :class:`Method`
protocol:

- ``Config``: a frozen dataclass whose fields are the method's
  hyper-parameters (and only those it uses) with documented defaults,
  validated in ``__post_init__``;
- ``fit(spec, data, config, *, seed, progress_bar) -> Posterior``, where
  ``spec`` is any :class:`uqzoo.Model`; a method that needs what the model
  does not declare raises :class:`uqzoo.UnsupportedModelError`.

The registry is an explicit dict (no subclass scanning); modules are
imported on first use so that ``import uqzoo`` does not pay for JAX, and
checked against the protocol when first imported. Adding a method is one
module, one line in :data:`REGISTRY` and one line in the conformance table
(``tests/methods/test_conformance.py``); ``docs/architecture.md`` walks
through an example.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import time
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from uqzoo.datasets import ClassificationData
    from uqzoo.models import Model
    from uqzoo.posterior import Posterior

from uqzoo._validation import _show, check_seed, in_class_order
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.methods._config import check_class_weight  # public: the option every method takes

__all__ = ["REGISTRY", "check_class_weight", "fit", "get", "make_config", "names"]

REGISTRY: dict[str, str] = {
    "hmc": "uqzoo.methods.hmc",
    "mfvi": "uqzoo.methods.mfvi",
    "mc_dropout": "uqzoo.methods.mc_dropout",
    "ensemble": "uqzoo.methods.ensemble",
    "bootstrap": "uqzoo.methods.bootstrap",
    "swag": "uqzoo.methods.swag",
    "laplace": "uqzoo.methods.laplace",
    # not uqzoo.methods.map: importing a submodule binds its name in this package,
    # and a submodule named map would hide the builtin map() here
    "map": "uqzoo.methods.map_estimate",
    "sgld": "uqzoo.methods.sgld",
    "sghmc": "uqzoo.methods.sghmc",
    "csgmcmc": "uqzoo.methods.csgmcmc",
    "tta": "uqzoo.methods.tta",
}


class MethodConfig(Protocol):
    """What the registry and :func:`uqzoo.compare` need of a method's ``Config``:
    a (frozen) dataclass with ``budget_options``."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def budget_options(cls, num_draws: int,
                       options: Mapping[str, Any]) -> dict[str, Any]: ...


class Method(Protocol):
    """The contract every posterior approximator module meets.

    Attributes
    ----------
    Config : type
        A frozen dataclass of the method's hyper-parameters, each with a
        documented default; ``__post_init__`` validates them and raises uqzoo
        errors naming the field, the value and what is allowed. Its
        classmethod ``budget_options(num_draws, options) -> dict`` names the
        options that make the method emit ``num_draws`` posterior draws
        (``{}`` where each draw is a trained network), so that
        :func:`uqzoo.compare` gives every method the same draw budget
        without knowing any method by name.

    Notes
    -----
    ``fit`` trains on ``data``'s training split only, derives all randomness
    from ``seed`` (same seed, same draws) and returns a :class:`Posterior`
    whose ``draws`` are S parameter sets in the shared layout, with the
    method's name, its config (``dataclasses.asdict(config)``), the seed,
    ``sample_shape`` ((chains, draws) or (1, S)), diagnostics (timings of
    its phases as ``"seconds_<phase>"``; :func:`fit` adds the whole fit's
    wall time as ``"seconds"``), and ``converged``/``warnings`` where the
    method can tell. ``uqzoo.testing.check_method`` checks all of it.
    """

    Config: type[MethodConfig]

    def fit(self, spec: Model, data: ClassificationData, config: Any, *, seed: int,
            progress_bar: bool = True) -> Posterior: ...


def _check_protocol(name: str, module: ModuleType) -> None:
    """Fail loudly, for whoever adds a method, when a module does not meet :class:`Method`."""
    config = getattr(module, "Config", None)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)
            and config.__dataclass_params__.frozen):                  # type: ignore[attr-defined]
        raise TypeError(f"method module {module.__name__} ({name!r}) must define Config "
                        f"as a frozen dataclass")
    if not callable(getattr(config, "budget_options", None)):
        raise TypeError(f"{module.__name__}.Config must define the classmethod "
                        f"budget_options(num_draws, options)")
    fit_fn = getattr(module, "fit", None)
    if not callable(fit_fn):
        raise TypeError(f"method module {module.__name__} ({name!r}) must define fit()")
    params = inspect.signature(fit_fn).parameters
    positional = [p for p in params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    if [p.name for p in positional[:3]] != ["spec", "data", "config"] or any(
            params.get(k) is None or params[k].kind is not params[k].KEYWORD_ONLY
            for k in ("seed", "progress_bar")):
        raise TypeError(f"{module.__name__}.fit must have the signature "
                        f"fit(spec, data, config, *, seed, progress_bar)")


def names() -> list[str]:
    """Registered method names, in the order the docs present them."""
    return list(REGISTRY)


def get(name: str) -> Method:
    """The module implementing method ``name`` (checked against :class:`Method`)."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise InvalidInputError(
            f"method must be one of {', '.join(map(repr, REGISTRY))}; got {_show(name)}"
        )
    return _load(name)


@functools.cache
def _load(name: str) -> Method:
    module = importlib.import_module(REGISTRY[name])
    _check_protocol(name, module)
    return module


def make_config(name: str, **options: Any):
    """Build and validate method ``name``'s ``Config``; unknown keys are an error."""
    config_cls = get(name).Config
    allowed = [f.name for f in dataclasses.fields(config_cls)]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InvalidInputError(
            f"unknown option(s) {unknown} for method {name!r}; allowed options: {allowed}"
        )
    return config_cls(**options)


def fit(method: str, model, data, seed: int = 0, *, progress_bar: bool = True,
        **config: Any):
    """Fit posterior approximator ``method`` to ``data``.

    Parameters
    ----------
    method : str
        One of :func:`names`: ``"hmc"``, ``"mfvi"``, ``"mc_dropout"``,
        ``"ensemble"``, ``"bootstrap"``, ``"swag"``, ``"laplace"``, the stochastic-gradient
        MCMC samplers ``"sgld"``, ``"sghmc"``, ``"csgmcmc"``, ``"map"`` (the
        point-estimate baseline: one MAP network, one draw), or ``"tta"``
        (test-time augmentation of the MAP network: its spread is sensitivity
        to the chosen augmentations, not posterior uncertainty).
    model : Model
        The network: :class:`uqzoo.MLPSpec`, or the user's own
        (:func:`uqzoo.models.from_function`, ``from_flax``, ``from_equinox``);
        its ``in_features`` and ``n_classes`` must match ``data``.
    data : ClassificationData
        Only the training part is used.
    seed : int
        All randomness of the fit derives from it: same seed, same draws.
    progress_bar : bool
        Show a progress bar while fitting.
    **config
        The method's hyper-parameters (fields of ``uz.methods.get(method).Config``).

    Returns
    -------
    Posterior
        Parameter draws in the shared layout, with config, seed and
        diagnostics; ``classes`` holds ``data.classes``, the original label of
        each probability column.

    Warns
    -----
    uqzoo.errors.DataWarning
        When a class has fewer than 20 training rows, or a class weight
        (``"balanced"`` included) exceeds 100 (``uqzoo._data_checks``).

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=100, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(10, 10))
    >>> post = uz.fit("ensemble", spec, data, seed=0, num_members=3, progress_bar=False)
    >>> post.predict_proba_draws(data.X_test).shape
    (3, 100, 2)
    """
    from uqzoo.datasets import ClassificationData
    from uqzoo.models import Model

    module = get(method)
    spec = model
    if not isinstance(spec, Model):
        raise InvalidTypeError(f"model must be a uqzoo.Model (uz.MLPSpec, or "
                               f"uz.models.from_function(...)), got {_show(spec)}")
    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(f"data must be a ClassificationData, got {_show(data)}")
    if spec.in_features != data.n_features:
        raise InvalidInputError(
            f"model.in_features ({spec.in_features}) does not match the data's "
            f"{data.n_features} features"
        )
    if spec.n_classes != data.n_classes:
        raise InvalidInputError(
            f"model.n_classes ({spec.n_classes}) does not match the data's "
            f"{data.n_classes} classes"
        )
    seed = check_seed(seed)
    if isinstance(config.get("class_weight"), dict):
        config["class_weight"] = _class_weights_in_order(config["class_weight"], data.classes,
                                                         data.n_classes)
    cfg = make_config(method, **config)
    from uqzoo._data_checks import check_fit
    from uqzoo.methods._config import class_weights

    check_fit(data, class_weights(getattr(cfg, "class_weight", None), data.y_train,
                                  data.n_classes))
    start = time.perf_counter()
    posterior = module.fit(spec, data, cfg, seed=seed, progress_bar=bool(progress_bar))
    seconds = time.perf_counter() - start
    # Methods see classes 0..K-1 only; the original labels they stand for are
    # attached here, once for all methods, and are saved with the posterior.
    # The wall time is measured here too, so that it is one key for every
    # method; a method records only its phases, as "seconds_<phase>". So is
    # the class prior the probabilities refer to, which uz.prior_shift reads.
    from uqzoo.methods._config import effective_class_prior

    class_prior = effective_class_prior(getattr(cfg, "class_weight", None), data.y_train,
                                        data.n_classes)
    # The training data it saw, so that a score against a reference of other
    # data (uz.fidelity) is refused; saved and loaded with the posterior.
    from uqzoo._data_checks import training_fingerprint

    fingerprint = training_fingerprint(data.X_train, data.y_train, data.n_classes)
    return dataclasses.replace(posterior, classes=data.classes,
                               diagnostics={**posterior.diagnostics, "seconds": seconds,
                                            "class_prior": class_prior,
                                            "data_fingerprint": fingerprint})


def _class_weights_in_order(weights: dict, classes: Any, n_classes: int) -> list:
    """A dict label -> weight as the list of weights in the data's class order."""
    labels = list(range(n_classes)) if classes is None else list(classes)
    return in_class_order(weights, labels, "class_weight", "a weight")
