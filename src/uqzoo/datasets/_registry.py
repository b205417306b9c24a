"""The explicit table of named data sets behind :func:`load` and :func:`names`."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from uqzoo._validation import _show, check_choice
from uqzoo.datasets import real
from uqzoo.datasets._base import ClassificationData
from uqzoo.datasets.hsi_sim import load_hsi_sim
from uqzoo.datasets.known_truth import load_gaussian_mixture, load_nonlinear_logistic
from uqzoo.datasets.simulated import load_sim_teacher
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["load", "names", "options"]

LOADERS: dict[str, Callable[..., ClassificationData]] = {
    "sim-teacher": load_sim_teacher,
    "hsi-sim": load_hsi_sim,
    "gaussian-mixture": load_gaussian_mixture,
    "nonlinear-logistic": load_nonlinear_logistic,
    "indian-pines": real.load_indian_pines,
    "muufl-target": real.load_muufl_target,
    "breast-cancer": real.load_breast_cancer,
    "wine": real.load_wine,
    "iris": real.load_iris,
    "digits": real.load_digits,
    "penguins": real.load_penguins,
    "caravan": real.load_caravan,
}


def names() -> list[str]:
    """Names accepted by :func:`load`, in a stable order.

    Example
    -------
    >>> import uqzoo as uz
    >>> "hsi-sim" in uz.datasets.names()
    True
    """
    return list(LOADERS)


def options(name: str) -> dict[str, object]:
    """The options of data set ``name`` with their defaults.

    Example
    -------
    >>> import uqzoo as uz
    >>> uz.datasets.options("iris")
    {'test_size': 0.25, 'seed': 0, 'standardize': True}
    """
    name = check_choice(name, "name", names())
    return {p.name: p.default for p in inspect.signature(LOADERS[name]).parameters.values()}


def load(name: str, **options_: object) -> ClassificationData:
    """Load a named data set.

    Parameters
    ----------
    name : str
        One of :func:`names`: ``"sim-teacher"``, ``"hsi-sim"``,
        ``"gaussian-mixture"``, ``"nonlinear-logistic"`` (simulated, with exact
        ``p_true_test``), ``"indian-pines"``, ``"muufl-target"``
        (real hyperspectral), ``"breast-cancer"``, ``"wine"``, ``"iris"``,
        ``"digits"``, ``"penguins"``, ``"caravan"`` (real tabular).
    **options_
        The data set's options (see :func:`options` and each loader's
        docstring in :mod:`uqzoo.datasets`); unknown ones are an error.

    Returns
    -------
    ClassificationData

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", p=3, n_train=200, seed=0)
    >>> data.n_features, data.n_train
    (3, 200)
    """
    if not isinstance(name, str):
        raise InvalidTypeError(f"name must be a str, one of {names()}; got {_show(name)}")
    name = check_choice(name, "name", names())
    allowed = options(name)
    unknown = sorted(set(options_) - set(allowed))
    if unknown:
        raise InvalidInputError(
            f"unknown option(s) {unknown} for data set {name!r}; allowed: {sorted(allowed)}"
        )
    return LOADERS[name](**options_)
