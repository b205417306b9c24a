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
A run whose loss still falls over the SWA phase (:func:`stationarity`) is
reported ``converged=False``.

Notes
-----
**Why SWAG under-disperses on small data, and the learning rate.** SWAG's
covariance is that of SGD's stationary distribution, which for constant-rate
SGD with momentum μ, rate η and batch B is about η / (2B(1 − μ)) · H⁻¹C
(Mandt, Hoffman and Blei 2017), C the per-example gradient covariance and H
the Hessian of the mean loss. Near a mode C ≈ the data part of H, so in the
directions the data determine it is η / (2B(1 − μ)) times the identity,
whatever the number of training rows N, while the posterior's is
(N h)⁻¹ for a direction of curvature h. The ratio SGD / posterior is
η N h / (2B(1 − μ)). Maddox et al. ran CIFAR (N = 50,000, B = 128) with a
SWA rate of 0.01: η N / (2B(1 − μ)) ≈ 20. The same constants at N = 1000 and
B = 64 give 0.8, 25 times less spread. Measured on development data
(sim-teacher, seed 100, n_train 1000, the default 2×10 tanh fan-in spec):
the mean-loss curvature spans 1e-3 to 1.2 (median 1e-2); with the old
default (rate 0.01) SWAG's predictive variance of the logit was 0.014 of
the (GGN Laplace) posterior's, its 80 % / 95 % intervals covered p_true at
0.07 / 0.09, and per-epoch snapshots (15 steps apart) had a lag-1
autocorrelation of 0.86 (0.46 at lag 20), so the K = 20 deviations spanned
less than one relaxation time. The variance grows linearly in η / B as the
formula says (0.048 at η = 0.03, 0.24 at 0.1; 0.058 at B = 16); full batch
has no noise at all (coverage 0.03 / 0.04). The default ``swa_learning_rate``
of 0.25 keeps the paper's η N / (2B(1 − μ)) ≈ 20 at N = 1000, B = 64: there
the logit variance is 0.44 of the posterior's, the lag-1 autocorrelation
0.37. What no rate fixes: the prior-dominated directions (low curvature,
where the posterior is widest) carry no gradient noise, so SGD never explores
them (their variance ratio stays below 1e-3 at every rate tried), and
H⁻¹C is not H⁻¹, so the high-curvature directions are over-dispersed when
the typical ones are right. On the development sets (sim-teacher,
gaussian-mixture, nonlinear-logistic, seeds 100-102) 80 % intervals covered
0.08 with the old defaults and 0.42 with these (Laplace: 0.61); no rate or
batch size tried (η 0.01-0.4, B 16 or 64) exceeded 0.47.

References
----------
Maddox, W. J., Izmailov, P., Garipov, T., Vetrov, D. P. and Wilson, A. G.
(2019). A simple baseline for Bayesian uncertainty in deep learning. NeurIPS.
Wilson, A. G. and Izmailov, P. (2020). Bayesian deep learning and a
probabilistic perspective of generalization. NeurIPS (MultiSWAG).
Mandt, S., Hoffman, M. D. and Blei, D. M. (2017). Stochastic gradient descent
as approximate Bayesian inference. JMLR 18.
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
from uqzoo.methods import _diagnostics, _trainer
from uqzoo.methods._config import (
    FreeDraws,
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
    "stationarity",
    "swag_covariance",
    "swag_init",
    "swag_sample",
    "swag_update",
]

COVARIANCES = ("lowrank", "diagonal")
# Floor on the diagonal variance, as the reference implementation's var_clamp:
# θ̄² − θ̄² can come out slightly negative in float32 for a weight that barely moves.
_VAR_FLOOR = 1e-30
# The snapshots should sample SGD's stationary distribution: a run whose mean
# loss over the second half of the SWA phase is lower than over the first half
# by more than this (relative) or than epoch-to-epoch noise explains is still
# descending, and its moments measure the descent, not the spread.
STATIONARITY_RTOL = 1e-3


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


def stationarity(loss: np.ndarray, swa_start_epoch: int) -> _diagnostics.Convergence:
    """Whether each run's training loss was stationary over the SWA phase.

    Compares the mean loss over the second half of the SWA phase with the
    mean over the first half (:func:`uqzoo.methods._diagnostics.window_change`
    with the half as window and :data:`STATIONARITY_RTOL`).

    Parameters
    ----------
    loss : ndarray of shape (R, num_epochs)
        Per-epoch training loss of each run.
    swa_start_epoch : int

    Returns
    -------
    Convergence
    """
    messages = []
    for run, trace in enumerate(np.asarray(loss, dtype=np.float64)):
        phase = trace[swa_start_epoch:]
        window = phase.size // 2
        if window < 2:
            messages.append(f"the SWA phase has {phase.size} epochs, too few (< 4) to check "
                            f"that its loss is stationary; raise num_epochs")
            break
        change = _diagnostics.window_change(phase, window, STATIONARITY_RTOL)
        if not change.steady:
            who = f"run {run}: " if loss.shape[0] > 1 else ""
            messages.append(
                f"{who}the training loss still fell by {change.relative_change:.1e} (relative) "
                f"from the first to the second half of the SWA phase, more than the "
                f"{change.tolerance:.1e} that noise "
                f"or {STATIONARITY_RTOL:g} allow: the snapshots trace a descent, not SGD's "
                f"stationary spread; raise num_epochs or swa_start")
    return _diagnostics.Convergence(not messages, tuple(messages))


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
class Config(FreeDraws, _trainer.OptimizerConfig):
    """Hyper-parameters of SWAG and MultiSWAG.

    Parameters
    ----------
    optimizer : {"sgd", "adam"}
        SGD with momentum (default), as in the paper.
    learning_rate : float
        Learning rate of the pre-training phase (default 0.25, the SWA rate:
        the schedule is then constant). The paper's CIFAR runs start 5-10
        times above their SWA rate; on the development data a start of 0.5
        before a SWA rate of 0.25 cost 2.5 points of accuracy and gave one
        set a 0.03 coverage (module notes).
    momentum : float
        Default 0.9, the paper's.
    num_epochs : int
        Total epochs, pre-SWA and SWA phases together (default 300, the
        paper's; 600 or 1000 changed coverage on the development data by
        at most 0.01).
    batch_size : int or None
        Default 64: SWAG's spread comes from minibatch noise, of variance
        ∝ learning rate / batch size; full batch (``None``) has none.
    swa_start : float
        Fraction of ``num_epochs`` after which snapshots are collected
        (default 0.5; the paper starts at epoch 161 of 300).
    swa_learning_rate : float
        The constant learning rate of the SWA phase (default 0.25): the
        paper's noise-to-posterior scale η N / (2B(1 − μ)) ≈ 20 (rate 0.01,
        N = 50,000, B = 128) carried to N = 1000, B = 64 -- see the module
        notes for why the paper's 0.01 under-disperses 25-fold here. For
        another N or batch size, keep η N / B about 3.9 (momentum 0.9).
    collect_every : int
        Collect a snapshot every this many epochs of the SWA phase (default
        1, the paper's).
    max_rank : int
        K, the number of deviations kept for the low-rank part (default 20,
        the paper's).
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
    learning_rate: float = 0.25
    num_epochs: int = 300
    batch_size: int | None = 64
    swa_start: float = 0.5
    swa_learning_rate: float = 0.25
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

    ``seed`` seeds the initialisations, minibatch orders and the draws. The other arguments
    are the :class:`uqzoo.methods.Method` protocol's; the fit uses ``data``'s training
    split.

    Returns
    -------
    Posterior
        S = ``num_samples`` draws (runs pooled, run-major); ``converged`` says
        whether every run's loss was stationary over the SWA phase
        (:func:`stationarity`); diagnostics hold the
        loss traces (R, epochs), the moments ``swag_mean``, ``swag_sq_mean`` (R, P),
        the deviations ``swag_deviations`` (R, K, P) and ``num_snapshots``.

    Examples
    --------
    Twenty draws from the SWAG Gaussian after 60 epochs of training:

    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
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
    converged, messages = stationarity(result.loss, config.swa_start_epoch)
    diagnostics.update(
        swag_mean=np.asarray(states.mean, np.float32),
        swag_sq_mean=np.asarray(states.sq_mean, np.float32),
        swag_deviations=np.asarray(states.deviations, np.float32),
        num_snapshots=np.asarray(states.n, np.int64),
        learning_rates=schedule)
    return Posterior(spec=spec, method="swag", config=config_dict(config), seed=seed,
                     draws=draws, diagnostics=diagnostics, converged=converged,
                     warnings=tuple(f"swag: {m}" for m in messages))
