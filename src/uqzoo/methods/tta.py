"""The ``tta`` method -- test-time augmentation: one MAP network, S augmented copies of each input.

A MAP network (trained exactly as ``map``) predicts each point on S
augmented copies of it; the S predictions are the predictive draws. The
augmentations are :mod:`uqzoo.perturb`'s families -- ``illumination``,
``offset``, ``noise``, ``band_dropout``, ``spectral_shift``,
``gaussian_noise``, ``missing_features`` -- each with a magnitude or a range
(``"gaussian_noise:0.1"``, ``"illumination:0.9-1.1"``), applied in the
order given; draw s draws its own magnitudes, noise and dropped features.
:func:`augment` does the same on top of any fitted posterior: draw s is base
draw s (cycled) on augmentation s.

What the spread means
---------------------
The spread of TTA's draws measures how sensitive the network's prediction is
to the chosen augmentations, **not** posterior uncertainty: it does not
shrink as training data grow, it is zero when the augmentation list is
empty (TTA is then the MAP network), and it grows with the augmentation
magnitudes, whatever the data say about the weights. Its intervals are
credible intervals of nothing; read them as a robustness check of the point
prediction under perturbations you chose, and compare its coverage with the
other methods' on that understanding.

Every draw is still an ordinary parameter set (the MAP weights, or a base
draw) in the shared layout; the augmentation is data attached to the
posterior (:class:`~uqzoo._channels.InputAugmentation`: the steps, a seed
and the training statistics the families need), which the one predictive
engine applies draw by draw and which saves and loads with it, no code.

References
----------
Wang, G., Li, W., Aertsen, M., Deprest, J., Ourselin, S. and Vercauteren, T.
(2019). Aleatoric uncertainty estimation with test-time augmentation for
medical image segmentation with convolutional neural networks.
Neurocomputing 338.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from uqzoo._channels import InputAugmentation
from uqzoo._validation import _show, check_int, check_seed
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.methods import _trainer
from uqzoo.methods._config import (
    FreeDraws,
    check_draw_memory,
    check_draws,
    check_training_sizes,
    config_dict,
    set_field,
)
from uqzoo.perturb import Perturbation
from uqzoo.posterior import Posterior

__all__ = ["DEFAULT_AUGMENTATIONS", "Config", "InputAugmentation", "augment", "fit",
           "parse_augmentations"]

# Gaussian noise of a tenth of each feature's training sd: defined on every data
# set (tabular or spectral) and the low end of uz.perturb's default range for it.
DEFAULT_AUGMENTATIONS: tuple[str, ...] = ("gaussian_noise:0.1",)


def parse_augmentations(value: object, name: str = "augmentations") -> tuple[str, ...]:
    """The augmentation list as ``family:low-high`` labels, each checked against its family.

    Parameters
    ----------
    value : str, Perturbation, or sequence of them
        ``"FAMILY"`` (the family's default range), ``"FAMILY:VALUE"`` or
        ``"FAMILY:LOW-HIGH"`` (:meth:`uqzoo.perturb.Perturbation.parse`); an
        empty sequence is no augmentation.
    name : str
        The argument's name in error messages.

    Returns
    -------
    tuple of str
        Canonical labels: ``FAMILY:LOW-HIGH``, or ``FAMILY:VALUE`` for one magnitude.

    Raises
    ------
    InvalidInputError
        Naming the argument, the entry, and the family's allowed magnitudes.

    Examples
    --------
    >>> from uqzoo.methods.tta import parse_augmentations
    >>> parse_augmentations(["illumination:0.9-1.1", "gaussian_noise:0.2"])
    ('illumination:0.9-1.1', 'gaussian_noise:0.2')
    """
    entries: list[object]
    if isinstance(value, (str, Perturbation)):
        entries = [value]
    elif isinstance(value, Sequence) and not isinstance(value, bytes):
        entries = list(value)
    else:
        raise InvalidTypeError(f"{name} must be a list of augmentations such as "
                               f"['gaussian_noise:0.1', 'illumination:0.9-1.1'], got "
                               f"{_show(value)}")
    labels = []
    for entry in entries:
        try:
            pert = entry if isinstance(entry, Perturbation) else Perturbation.parse(entry)
        except (InvalidInputError, InvalidTypeError) as exc:
            raise type(exc)(f"{name} entry {_show(entry)}: {exc}") from None
        label = pert.label
        if pert.low == pert.high:             # one magnitude: FAMILY:VALUE, not VALUE-VALUE
            text = f"{pert.low:.15g}"
            label = (f"{label.rsplit(':', 1)[0]}:"
                     f"{text if float(text) == pert.low else repr(pert.low)}")
        labels.append(label)
    return tuple(labels)


def _steps(labels: Sequence[str]) -> tuple[tuple[str, float, float, str | None], ...]:
    out = []
    for label in labels:
        pert = Perturbation.parse(label)
        out.append((pert.family, pert.low, pert.high,
                    pert.fill if pert.family == "band_dropout" else None))
    return tuple(out)


def _check_fits(data: Any, labels: Sequence[str]) -> None:
    """The data-dependent checks of :mod:`uqzoo.perturb`, as for a perturbed copy: a
    dropout fraction must leave a feature; a spectral family on a table of named
    features is a DataWarning."""
    from uqzoo import perturb

    for label in labels:
        perturb._check_fits(data, Perturbation.parse(label))


@dataclasses.dataclass(frozen=True)
class Config(FreeDraws, _trainer.TrainingConfig):
    """Hyper-parameters of test-time augmentation.

    Parameters
    ----------
    augmentations : sequence of str
        The augmentations, applied in order to each draw's copy of the
        inputs: ``"FAMILY:VALUE"`` or ``"FAMILY:LOW-HIGH"`` with a family of
        :func:`uqzoo.perturb.names` and a magnitude in its domain
        (``uz.perturb.FAMILIES[family].domain()``); each draw draws its
        magnitude uniformly from the range. Default ``("gaussian_noise:0.1",)``:
        Gaussian noise of 0.1 training sd on every feature, defined on any
        data. An empty list is the MAP network (every draw the same).
    num_samples : int
        S, the number of augmented copies (default 100).
    optimizer, learning_rate, momentum, num_epochs, batch_size, validation_fraction, patience
        The shared trainer's options (:class:`uqzoo.methods._trainer.TrainingConfig`),
        defaults as ``map``: the MAP network is trained exactly as ``map`` trains it.
    convergence_window, convergence_rtol, class_weight
        As in :class:`~uqzoo.methods._trainer.TrainingConfig`.
    """

    augmentations: tuple[str, ...] = DEFAULT_AUGMENTATIONS
    num_samples: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        set_field(self, "augmentations", parse_augmentations(self.augmentations))
        set_field(self, "num_samples", check_draws(self.num_samples, "num_samples"))
        check_training_sizes(self, 1, "members")


def augment(posterior: Posterior, data: Any, augmentations: object = DEFAULT_AUGMENTATIONS,
            *, num_samples: int | None = None, seed: int = 0) -> Posterior:
    """Test-time augmentation on top of a fitted posterior.

    Draw s is base draw ``s mod S_base`` evaluated on augmented copy s of the
    inputs. The method name and config stay the base's (as a recalibrated
    posterior keeps them); ``input_augmentation`` records the augmentation.
    The spread then mixes the base posterior's uncertainty with the
    network's sensitivity to the augmentations (see the module docstring).

    Parameters
    ----------
    posterior : Posterior
        Any fitted posterior without an augmentation of its own.
    data : ClassificationData
        The data it was fitted on: the augmentations use its training
        statistics and standardisation (as :mod:`uqzoo.perturb` does).
    augmentations : str or sequence of str
        As :class:`Config`'s ``augmentations``.
    num_samples : int, optional
        S; the base posterior's number of draws by default.
    seed : int
        Seeds the augmentations (magnitudes, noise, dropped features).

    Returns
    -------
    Posterior

    Examples
    --------
    >>> import uqzoo as uz
    >>> from uqzoo.methods.tta import augment
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)
    >>> post = uz.fit("ensemble", spec, data, seed=0, num_members=3, num_epochs=100,
    ...               progress_bar=False)
    >>> augment(post, data, ["gaussian_noise:0.2"], num_samples=6).predict_proba_draws(
    ...     data.X_test).shape
    (6, 50, 2)
    """
    from uqzoo.datasets import ClassificationData

    if not isinstance(posterior, Posterior):
        raise InvalidTypeError(f"posterior must be a uqzoo Posterior, got {_show(posterior)}")
    if posterior.input_augmentation is not None:
        raise InvalidInputError("posterior already has an input augmentation; augment its "
                                "base posterior instead")
    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(f"data must be a ClassificationData, got {_show(data)}")
    if data.n_features != posterior.spec.in_features:
        raise InvalidInputError(f"data has {data.n_features} features; the posterior's "
                                f"network takes {posterior.spec.in_features}")
    labels = parse_augmentations(augmentations)
    _check_fits(data, labels)
    base = posterior.num_draws
    S = base if num_samples is None else check_draws(num_samples, "num_samples")
    check_draw_memory(posterior.spec, S, "num_samples")
    augmentation = InputAugmentation.from_data(_steps(labels), data, check_seed(seed))
    if S == base:
        return dataclasses.replace(posterior, input_augmentation=augmentation)
    index = np.arange(S) % base
    return dataclasses.replace(
        posterior, draws={k: v[index] for k, v in posterior.draws.items()},
        sample_shape=(1, S), sample_stats={}, input_augmentation=augmentation,
        diagnostics={**posterior.diagnostics, "tta_base_draws": check_int(base, "draws")})


def fit(spec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Train the MAP network, then attach the augmentations.

    ``seed`` seeds the initialisation exactly as ``map``'s (so ``tta`` without
    augmentations predicts as ``map`` with the same seed) and, through a
    derived seed, the augmentations. The other arguments are the
    :class:`uqzoo.methods.Method` protocol's; the fit uses ``data``'s training
    split, and its training statistics for the augmentations.

    Returns
    -------
    Posterior
        S = ``num_samples`` draws, each the MAP weights, ``sample_shape``
        (1, S); ``input_augmentation`` the augmentations; ``diagnostics["loss"]``
        (1, epochs).

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
    >>> post = uz.fit("tta", spec, data, seed=0, num_samples=20, num_epochs=200,
    ...               augmentations=["gaussian_noise:0.2"], progress_bar=False)
    >>> post.predict_proba_draws(data.X_test).shape
    (20, 50, 2)
    """
    check_draw_memory(spec, config.num_samples, "num_samples")
    _check_fits(data, config.augmentations)
    # Built (and checked against the data's features) before the training. Its seed is
    # derived, so that the MAP's initialisation is map's.
    augment_seed = int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])
    augmentation = InputAugmentation.from_data(_steps(config.augmentations), data,
                                               augment_seed)
    result, info = _trainer.fit_members(spec, data, config, seed=seed, num_members=1,
                                        progress_bar=progress_bar, desc="tta")
    trained = {k: v[0] for k, v in result.params.items()}
    draws = {k: np.repeat(np.asarray(v, dtype=np.float32)[None], config.num_samples, axis=0)
             for k, v in trained.items()}
    diagnostics = _trainer.training_diagnostics(result, config)
    diagnostics["init_seeds"] = np.asarray(info["init_seeds"], dtype=np.int64)
    convergence = _trainer.convergence(result, config, what="network")
    return Posterior(spec=spec, method="tta", config=config_dict(config), seed=seed,
                     draws=draws, diagnostics=diagnostics, input_augmentation=augmentation,
                     converged=convergence.converged,
                     warnings=tuple(f"tta: {m}" for m in convergence.messages))
