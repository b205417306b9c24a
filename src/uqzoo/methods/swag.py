"""SWAG: a Gaussian over the weights from the moments of an SGD trajectory.

SGD with momentum runs under the learning-rate schedule of Maddox et al.
(constant ``learning_rate`` for the first half of the pre-SWA phase, a linear
decay to ``swa_learning_rate`` over the next 40 %, then constant
``swa_learning_rate``). From the epoch ``swa_start · num_epochs`` on, every
``collect_every`` epochs the parameters θ_i are collected into running first
and second moments θ̄ and θ̄², and the last K = ``max_rank`` deviations
D_i = θ_i − θ̄ (θ̄ after the update) are kept. A draw is

    θ = θ̄ + √scale · ( √var ⊙ z₁ + Dᵀ z₂ / √(K − 1) ),   var = θ̄² − θ̄²,
    z₁ ~ N(0, I_P),  z₂ ~ N(0, I_K),

a Gaussian with covariance scale · (diag(var) + DᵀD / (K − 1)); ``scale = 0.5``
is the paper's ½ (the average of the diagonal and low-rank estimates), not an
extra shrinkage. ``covariance="diagonal"`` drops the low-rank part
(SWAG-diagonal); ``num_runs > 1`` is MultiSWAG: independent SWAG runs from
different initialisations, trained together by the vectorised trainer, whose
draws are pooled.

The state updates (:func:`swag_init`, :func:`swag_update`) are pure functions
of one run; the trainer calls them after every epoch inside its compiled loop.

References
----------
Maddox, W. J., Izmailov, P., Garipov, T., Vetrov, D. P. and Wilson, A. G.
(2019). A simple baseline for Bayesian uncertainty in deep learning. NeurIPS.
Wilson, A. G. and Izmailov, P. (2020). Bayesian deep learning and a
probabilistic perspective of generalization. NeurIPS (MultiSWAG).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from uqzoo._validation import check_choice, check_float, check_int
from uqzoo.errors import InvalidInputError
from uqzoo.methods import _trainer
from uqzoo.methods._config import (
    check_draw_memory,
    check_draws,
    check_members,
    check_training_sizes,
    config_dict,
)
from uqzoo.posterior import Posterior
from uqzoo.spec import MLPSpec

__all__ = [
    "COVARIANCES",
    "Config",
    "SwagState",
    "fit",
    "learning_rate_schedule",
    "swag_covariance",
    "swag_init",
    "swag_sample",
    "swag_update",
]

COVARIANCES = ("lowrank", "diagonal")
# Floor on the diagonal variance, as the reference implementation's var_clamp:
# θ̄² − θ̄² can come out slightly negative in float32 for a weight that barely moves.
_VAR_FLOOR = 1e-30


class SwagState(NamedTuple):
    """Running SWAG moments of one run.

    n : int32 ()                 snapshots collected so far
    mean : float32 (P,)          θ̄, the running mean
    sq_mean : float32 (P,)       θ̄², the running mean of squares
    deviations : float32 (K, P)  ring buffer of the last K deviations θ_i − θ̄_i;
                                 row (i mod K) holds snapshot i (0-based)
    """

    n: jax.Array
    mean: jax.Array
    sq_mean: jax.Array
    deviations: jax.Array


def swag_init(num_params: int, rank: int) -> SwagState:
    """The empty state: no snapshots."""
    zeros = jnp.zeros(num_params, jnp.float32)
    return SwagState(jnp.zeros((), jnp.int32), zeros, zeros,
                     jnp.zeros((rank, num_params), jnp.float32))


def swag_update(state: SwagState, theta: jax.Array) -> SwagState:
    """Add snapshot θ (P,): update both moments, then store θ − θ̄ (new mean)."""
    n1 = state.n + 1
    weight = 1.0 / n1.astype(jnp.float32)
    mean = state.mean + (theta - state.mean) * weight
    sq_mean = state.sq_mean + (theta * theta - state.sq_mean) * weight
    slot = state.n % state.deviations.shape[0]
    deviations = state.deviations.at[slot].set(theta - mean)
    return SwagState(n1, mean, sq_mean, deviations)


def _parts(state, diagonal: bool):
    n = int(np.asarray(state.n))
    mean = np.asarray(state.mean, dtype=np.float64)
    var = np.maximum(np.asarray(state.sq_mean, dtype=np.float64) - mean ** 2, _VAR_FLOOR)
    if diagonal:
        return mean, var, None
    rank = min(n, np.asarray(state.deviations).shape[0])
    if rank < 2:
        raise InvalidInputError(
            f"the low-rank SWAG covariance needs at least 2 snapshots, got {n}; collect "
            f"more (a longer SWA phase or a smaller collect_every)")
    return mean, var, np.asarray(state.deviations, dtype=np.float64)[:rank]


def swag_covariance(state: SwagState, scale: float = 0.5,
                    diagonal: bool = False) -> np.ndarray:
    """The covariance the draws follow: scale · (diag(var) + DᵀD / (K − 1)), (P, P) float64.

    K is the number of stored deviations, min(n, max_rank). For inspection and
    tests; sampling never forms this matrix.
    """
    _mean, var, dev = _parts(state, diagonal)
    cov = np.diag(var)
    if dev is not None:
        cov = cov + dev.T @ dev / (dev.shape[0] - 1)
    return scale * cov


def swag_sample(state: SwagState, num_samples: int, rng: np.random.Generator,
                scale: float = 0.5, diagonal: bool = False) -> np.ndarray:
    """Draws θ̄ + √scale (√var ⊙ z₁ + Dᵀz₂/√(K − 1)), shape (num_samples, P), float64.

    Examples
    --------
    >>> import numpy as np
    >>> state = swag_init(3, rank=4)
    >>> for theta in np.arange(15.0).reshape(5, 3) ** 0.5:
    ...     state = swag_update(state, theta)
    >>> swag_sample(state, 10, np.random.default_rng(0)).shape
    (10, 3)
    """
    mean, var, dev = _parts(state, diagonal)
    z1 = rng.standard_normal((num_samples, mean.size))
    noise = np.sqrt(var) * z1
    if dev is not None:
        z2 = rng.standard_normal((num_samples, dev.shape[0]))
        noise = noise + z2 @ dev / math.sqrt(dev.shape[0] - 1)
    return mean + math.sqrt(scale) * noise


def learning_rate_schedule(num_epochs: int, swa_start_epoch: int, learning_rate: float,
                           swa_learning_rate: float) -> np.ndarray:
    """The per-epoch learning rates of Maddox et al. (their ``schedule``), (num_epochs,).

    With t = epoch / swa_start_epoch: ``learning_rate`` for t ≤ 0.5, a linear
    decay to ``swa_learning_rate`` for 0.5 < t ≤ 0.9, ``swa_learning_rate`` after.
    """
    t = np.arange(num_epochs) / max(swa_start_epoch, 1)
    ratio = swa_learning_rate / learning_rate
    factor = np.where(t <= 0.5, 1.0, np.where(t <= 0.9, 1.0 - (1.0 - ratio) * (t - 0.5) / 0.4,
                                               ratio))
    return (learning_rate * factor).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class _Collector:
    """The trainer hook: collect a snapshot after the epochs of the SWA phase."""

    spec: MLPSpec
    start_epoch: int
    collect_every: int
    rank: int

    def init(self, params) -> SwagState:
        return swag_init(self.spec.n_params, self.rank)

    def update(self, state: SwagState, params, epoch) -> SwagState:
        theta = jnp.concatenate([params[k].reshape(-1) for k in self.spec.param_shapes()])
        collect = (epoch >= self.start_epoch) & \
            ((epoch - self.start_epoch) % self.collect_every == 0)
        updated = swag_update(state, theta)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(collect, a, b), updated, state)


@dataclasses.dataclass(frozen=True)
class Config(_trainer.OptimizerConfig):
    """Hyper-parameters of SWAG and MultiSWAG.

    Parameters
    ----------
    optimizer : {"sgd", "adam"}
        SGD with momentum (default), as in the paper.
    learning_rate : float
        Initial learning rate (default 0.05).
    momentum : float
        Default 0.9.
    num_epochs : int
        Total epochs, pre-SWA and SWA phases together (default 300).
    batch_size : int or None
        Default 64: SWAG's spread comes from minibatch noise; full batch
        (``None``) collapses it.
    swa_start : float
        Fraction of ``num_epochs`` after which snapshots are collected (default 0.5).
    swa_learning_rate : float
        The constant learning rate of the SWA phase (default 0.01).
    collect_every : int
        Collect a snapshot every this many epochs of the SWA phase (default 1).
    max_rank : int
        K, the number of deviations kept for the low-rank part (default 20).
    scale : float
        Covariance scale (default 0.5, the paper's).
    covariance : {"lowrank", "diagonal"}
        Low-rank plus diagonal (SWAG, default) or diagonal only (SWAG-diagonal).
    num_runs : int
        Number of independent SWAG runs pooled (MultiSWAG when > 1; default 1).
    num_samples : int
        S, the total number of draws, split as evenly as possible over the runs
        (default 100).

    There is no early stopping (``validation_fraction``, ``patience``): SWAG
    samples along the SGD trajectory, so every epoch of the SWA phase is used.
    """

    optimizer: str = "sgd"
    learning_rate: float = 0.05
    num_epochs: int = 300
    batch_size: int | None = 64
    swa_start: float = 0.5
    swa_learning_rate: float = 0.01
    collect_every: int = 1
    max_rank: int = 20
    scale: float = 0.5
    covariance: str = "lowrank"
    num_runs: int = 1
    num_samples: int = 100

    def __post_init__(self) -> None:
        super().__post_init__()
        set_ = object.__setattr__
        set_(self, "swa_start", check_float(self.swa_start, "swa_start", low=0.0, high=1.0,
                                            high_open=True))
        set_(self, "swa_learning_rate", check_float(
            self.swa_learning_rate, "swa_learning_rate", low=0.0, low_open=True))
        set_(self, "collect_every", check_int(self.collect_every, "collect_every", minimum=1))
        set_(self, "max_rank", check_int(self.max_rank, "max_rank", minimum=2))
        set_(self, "scale", check_float(self.scale, "scale", low=0.0, low_open=True))
        set_(self, "covariance", check_choice(self.covariance, "covariance", COVARIANCES))
        set_(self, "num_runs", check_members(self.num_runs, "num_runs"))
        set_(self, "num_samples", check_draws(self.num_samples, "num_samples",
                                              minimum=self.num_runs))
        check_training_sizes(self, self.num_runs, "num_runs")
        # Each run allocates max_rank deviation vectors up front (swag_init), so
        # num_runs × max_rank parameter vectors are bounded like draws (and by
        # their bytes in fit, once the spec is known).
        check_draws(self.num_runs * self.max_rank, "num_runs × max_rank")
        if self.num_snapshots < 2:
            raise InvalidInputError(
                f"swag collects only {self.num_snapshots} snapshot(s) with num_epochs="
                f"{self.num_epochs}, swa_start={self.swa_start}, collect_every="
                f"{self.collect_every}; it needs at least 2")

    @property
    def swa_start_epoch(self) -> int:
        return round(self.swa_start * self.num_epochs)

    @property
    def num_snapshots(self) -> int:
        return math.ceil((self.num_epochs - self.swa_start_epoch) / self.collect_every)


def fit(spec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Run ``num_runs`` SWAG trajectories together and draw from their Gaussians.

    Parameters
    ----------
    spec : MLPSpec
    data : ClassificationData
    config : Config
    seed : int
        Seeds the initialisations, minibatch orders and the draws.
    progress_bar : bool

    Returns
    -------
    Posterior
        S = ``num_samples`` draws (runs pooled, run-major); diagnostics hold the
        loss traces (R, epochs), the moments ``swag_mean``, ``swag_sq_mean`` (R, P),
        the deviations ``swag_deviations`` (R, K, P) and ``num_snapshots``.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2, hidden=(10, 10))
    >>> post = uz.fit("swag", spec, data, seed=0, num_epochs=60, num_samples=20,
    ...               progress_bar=False)
    >>> post.predict_proba_draws(data.X_test).shape
    (20, 50, 2)
    """
    check_draw_memory(spec, config.num_samples, "num_samples")
    check_draw_memory(spec, config.num_runs * config.max_rank, "num_runs × max_rank")
    ss_train, ss_draws = np.random.SeedSequence(seed).spawn(2)
    schedule = learning_rate_schedule(config.num_epochs, config.swa_start_epoch,
                                      config.learning_rate, config.swa_learning_rate)
    collector = _Collector(spec=spec, start_epoch=config.swa_start_epoch,
                           collect_every=config.collect_every, rank=config.max_rank)
    result, _ = _trainer.fit_members(
        spec, data, config, seed=int(ss_train.generate_state(1)[0]),
        num_members=config.num_runs, learning_rates=schedule, hook=collector,
        progress_bar=progress_bar, desc="swag")
    states = result.hook_state
    rng = np.random.default_rng(ss_draws)
    diagonal = config.covariance == "diagonal"
    per_run = np.full(config.num_runs, config.num_samples // config.num_runs)
    per_run[: config.num_samples % config.num_runs] += 1
    samples = []
    for r in range(config.num_runs):
        run_state = SwagState(*(np.asarray(leaf)[r] for leaf in states))
        samples.append(swag_sample(run_state, int(per_run[r]), rng, config.scale, diagonal))
    draws = spec.unflatten(np.concatenate(samples).astype(np.float32))
    diagnostics = _trainer.training_diagnostics(result, config)
    diagnostics.update(
        swag_mean=np.asarray(states.mean, np.float32),
        swag_sq_mean=np.asarray(states.sq_mean, np.float32),
        swag_deviations=np.asarray(states.deviations, np.float32),
        num_snapshots=np.asarray(states.n, np.int64),
        learning_rates=schedule)
    return Posterior(spec=spec, method="swag", config=config_dict(config), seed=seed,
                     draws=draws, diagnostics=diagnostics)
