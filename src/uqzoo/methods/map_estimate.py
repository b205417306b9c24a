"""The ``map`` method -- MAP point estimate: one network trained to the posterior mode, one draw.

The no-uncertainty baseline every method must beat: the same network and
prior as every other method, trained once by the shared trainer
(:mod:`uqzoo.methods._trainer`) towards the MAP of the log loss plus the
spec's Gaussian prior, full batch with Adam until its loss plateaus -- the
network Laplace builds its Gaussian around. The posterior holds S = 1 draw,
so its credible intervals have zero width: every "interval" is the point
p̂(x), it covers the true probability almost never, and its High Confidence
Set is p̂(x) > 1 − δ. A conformal label set (:func:`uqzoo.conformal`) on
top of it is the point-model-plus-conformal baseline of the literature.

References
----------
Angelopoulos, A. N. and Bates, S. (2023). Conformal prediction: a gentle
introduction. Foundations and Trends in Machine Learning 16(4) -- the MAP
network as the base model of split conformal prediction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from uqzoo.methods import _trainer
from uqzoo.methods._config import check_training_sizes, config_dict
from uqzoo.posterior import Posterior

__all__ = ["Config", "fit"]


@dataclasses.dataclass(frozen=True)
class Config(_trainer.TrainingConfig):
    """Hyper-parameters of the MAP fit: the shared trainer's only.

    Parameters
    ----------
    optimizer, learning_rate, momentum, num_epochs, batch_size, validation_fraction, patience
        The shared trainer's options (:class:`uqzoo.methods._trainer.TrainingConfig`);
        defaults: full-batch Adam at learning rate 0.01, trained until the
        loss plateaus within a 5000-epoch budget (the posterior is
        ``converged=False`` when it has not), no early stopping -- the same
        MAP fit as Laplace's.
    convergence_window, convergence_rtol, class_weight
        As in :class:`~uqzoo.methods._trainer.TrainingConfig`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        check_training_sizes(self, 1, "members")

    @classmethod
    def budget_options(cls, num_draws: int, options: Mapping[str, Any]) -> dict[str, Any]:
        """No options: a point estimate is one draw whatever the budget."""
        return {}


def fit(spec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Train one network to the MAP.

    ``seed`` seeds the initialisation (and the validation split, when used). The other
    arguments are the :class:`uqzoo.methods.Method` protocol's; the fit uses ``data``'s
    training split.

    Returns
    -------
    Posterior
        S = 1 draw, ``sample_shape`` (1, 1); ``diagnostics["loss"]`` (1, epochs).

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
    >>> post = uz.fit("map", spec, data, seed=0, num_epochs=200, progress_bar=False)
    >>> post.sample_shape, post.predict_proba_draws(data.X_test).shape
    ((1, 1), (1, 50, 2))
    """
    result, info = _trainer.fit_members(spec, data, config, seed=seed, num_members=1,
                                        progress_bar=progress_bar, desc="map")
    diagnostics = _trainer.training_diagnostics(result, config)
    diagnostics["init_seeds"] = np.asarray(info["init_seeds"], dtype=np.int64)
    convergence = _trainer.convergence(result, config, what="network")
    return Posterior(spec=spec, method="map", config=config_dict(config), seed=seed,
                     draws=result.params, diagnostics=diagnostics,
                     converged=convergence.converged,
                     warnings=tuple(f"map: {m}" for m in convergence.messages))
