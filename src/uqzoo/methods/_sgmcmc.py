"""What ``sgld``, ``sghmc`` and ``csgmcmc`` share: options, the compiled sampler loop
on BlackJAX's kernels, and the diagnostics that say when a run did not work.

The target is the one model core's posterior (:mod:`uqzoo.nets.jax`): log prior
plus the log-likelihood, each row's term multiplied by its class weight. Its
gradient is estimated on a minibatch of B rows drawn uniformly with replacement
at every step, the likelihood part scaled by N / B
(``blackjax.sgmcmc.gradients.grad_estimator``: N times the minibatch mean), an
unbiased estimate of the full-data gradient. The kernels are BlackJAX's
(``blackjax.sgld``, ``blackjax.sghmc``); uqzoo writes no sampler step of its own.

Step sizes are given *per training row*: the kernel's step is ``step_size / N``
(SGLD) or its square root (SGHMC, whose step multiplies a momentum), so a step
size that works on 1,000 rows keeps working on 100,000 -- the log posterior's
curvature grows with N and the step must shrink with it.

The sampler runs as compiled ``lax.scan`` / ``fori_loop`` segments of many
steps, the chains side by side in one ``vmap``; Python only moves from one
segment to the next (and the progress bar with it). Every step's random key is
``fold_in(key, step)``, so the draws do not depend on how the run is cut into
segments.

Diagnostics (:func:`diagnose`)
------------------------------
- ``rhat_predictive`` / ``ess_bulk_predictive`` / ``ess_tail_predictive``:
  split R-hat and ESS of the predictive probability at ``num_diagnostic_points``
  training points across the rows of ``sample_shape`` -- the chains for
  ``sgld`` and ``sghmc``; the (chain, cycle) pairs for ``csgmcmc`` (and across
  chains alone as ``rhat_predictive_chains``), as for HMC
  (:mod:`uqzoo.methods._diagnostics` says why function space, not weights);
- ``sampling_share``: the share of all steps spent in sampling stages (after
  burn-in, outside csgmcmc's exploration stages);
- ``logit_spread_ratio``: is the posterior more than one point? The
  between-draw variance of the logits at the diagnostic points (within each
  chain, averaged over chains) over the variance a local Gaussian
  (linearised Laplace) approximation at the chain's last draw gives them:
  J_x (Λ_prior + Σ_i c_i J_iᵀ Λ_i J_i)⁻¹ J_xᵀ, J the logits' Jacobians, Λ_i
  the likelihood's curvature in the logits (the GGN; Immer et al. 2021),
  from up to ``_GGN_ROWS`` training rows scaled to N. A sampler that explores
  the posterior has a ratio near 1; one whose step is too small for its run
  barely moves and has a ratio near 0. Below :data:`ONE_POINT_FRACTION` the
  run is flagged ``one_point`` (a ``ConvergenceWarning``). The yardstick is the
  local curvature, not the minibatch gradient noise: the noise a step injects
  shrinks with the step, so a too-small step would pass a noise-relative test.

References
----------
Welling, Teh (2011). Bayesian learning via stochastic gradient Langevin
dynamics. ICML.
Chen, Fox, Guestrin (2014). Stochastic gradient Hamiltonian Monte Carlo. ICML.
Zhang, Li, Zhang, Chen, Wilson (2020). Cyclical stochastic gradient MCMC for
Bayesian deep learning. ICLR.
Immer, Korzepa, Bauer (2021). Improving predictions of Bayesian neural nets
via local linearization. AISTATS.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from uqzoo._progress import progress_bar as progress
from uqzoo.errors import ConvergenceWarning, InvalidInputError
from uqzoo.methods import _diagnostics
from uqzoo.methods._config import (
    check_choice,
    check_class_weight,
    check_draw_memory,
    check_draws,
    check_float,
    check_int,
    check_iterations,
    check_members,
    config_dict,
    row_weights,
)
from uqzoo.posterior import Posterior
from uqzoo.spec import MLPSpec

__all__ = ["ONE_POINT_FRACTION", "RHAT_LIMIT", "RHAT_QUANTILE", "SCHEDULES", "Common",
           "Decaying", "Phase", "decaying_schedule", "diagnose", "fit", "plain_phases", "run"]

# A run is "effectively one point" when its draws' logit variance is below this
# share of the local Laplace variance, i.e. their sd is below 10 % of the
# posterior sd the local curvature implies. On development data a working run
# sits near 1 and a step 10^4 times too small near 1e-4 (benchmarks/sgmcmc_defaults.py).
ONE_POINT_FRACTION = 0.01
# The chains are "far apart" -- the run is not converged -- when the 90th
# percentile over the diagnostic points of the predictive split R-hat exceeds
# RHAT_LIMIT (with the default 10 points, about the second largest). Not HMC's 1.01 on the
# maximum: without a Metropolis step and with minibatch noise, SG-MCMC chains at
# the default budgets keep a bulk ESS of ~15-100 per point, and R-hat's own noise
# at that ESS (R-hat² ≈ 1 + chains / ESS for chains that have mixed; Vats and
# Knudson 2021) puts even right fits at 1.05-1.4; the 1.01 rule fired on every
# one of 32 development fits whose intervals covered p_true as they should, and on
# all 120 seed-study fits. Measured (benchmarks/sgmcmc_flag_rates.py, 16 data sets
# of development data, 8 of them held out from the choice): the 90th percentile
# is 1.06-1.34 for default sgld and sghmc fits (coverage 0.62-0.92 at 80 %, HMC's
# own spread between data sets) and 1.64-2.73 for runs whose step is 50× too small
# (coverage 0.16-0.62); 1.5 lies between them: 0 of 32 right fits flagged, 32 of
# 32 wrong runs. The maximum is noisier than a quantile: right fits reach 1.40.
RHAT_QUANTILE = 0.9
RHAT_LIMIT = 1.5
# Training rows the GGN of the one-point check is computed on (scaled to N):
# 4,096 rows give the curvature to a few per cent, at a cost independent of N.
_GGN_ROWS = 4096
# Parameters up to which the GGN is a full matrix (P² float64: 128 MiB at 4,096);
# above it, its diagonal.
_GGN_FULL_MAX = 4096
# Steps per compiled call while advancing (burn-in, exploration): enough to
# hide Python's per-call overhead, few enough for a live progress bar.
_CHUNK = 1000


@dataclasses.dataclass(frozen=True)
class Common:
    """Options every SG-MCMC method shares (see each method's ``Config``).

    Parameters
    ----------
    num_steps : int
        Sampler steps per chain, burn-in included (each one minibatch gradient;
        for sghmc one kernel call of ``num_integration_steps`` gradients).
    num_burnin : int
        First steps of each chain that are discarded; less than ``num_steps``.
    step_size : float
        Step size per training row (> 0; each method sets its own default): the kernel's step is
        ``step_size / N`` for Langevin dynamics, ``sqrt(step_size / N)`` for
        SGHMC; for csgmcmc it is the peak of each cycle.
    batch_size : int
        Rows per minibatch (drawn uniformly with replacement); at most N.
    num_samples : int
        S, draws kept in all, shared evenly by the chains (and cycles).
    num_chains : int
        Independent chains, run side by side, each from its own start.
    thinning : int or None
        Steps between kept draws; None spreads a chain's draws evenly over
        its sampling steps (the last draw at the last step).
    num_diagnostic_points : int
        Training points whose predictive probability gets R-hat and ESS and
        whose logits the one-point check uses.
    class_weight : None, "balanced" or sequence of float
        Each row's log-likelihood term is multiplied by its class's weight.
    """

    num_steps: int = 20000
    num_burnin: int = 5000
    step_size: float = 1e-3
    batch_size: int = 100
    num_samples: int = 1000
    num_chains: int = 4
    thinning: int | None = None
    num_diagnostic_points: int = 10
    class_weight: str | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("num_steps", check_iterations(self.num_steps, "num_steps"))
        set_("num_burnin", check_int(self.num_burnin, "num_burnin", minimum=0))
        if self.num_burnin >= self.num_steps:
            raise InvalidInputError(
                f"num_burnin must be less than num_steps ({self.num_steps}): burn-in is part "
                f"of the run and draws are kept after it; got {self.num_burnin}")
        set_("step_size", check_float(self.step_size, "step_size", low=0.0, low_open=True))
        set_("batch_size", check_int(self.batch_size, "batch_size", minimum=1))
        set_("num_samples", check_draws(self.num_samples, "num_samples"))
        set_("num_chains", check_members(self.num_chains, "num_chains"))
        groups = self.num_chains * self.cycles
        if self.num_samples % groups:
            raise InvalidInputError(
                f"num_samples ({self.num_samples}) must be a multiple of {self._groups_text} "
                f"({groups}): it is the total S, split evenly over them")
        if self.thinning is not None:
            set_("thinning", check_int(self.thinning, "thinning", minimum=1))
        set_("num_diagnostic_points", check_int(self.num_diagnostic_points,
                                                "num_diagnostic_points", minimum=1))
        set_("class_weight", check_class_weight(self.class_weight))

    # csgmcmc overrides these two; a plain sampler is one "cycle" per chain.
    @property
    def cycles(self) -> int:
        """Cycles per chain (1 for sgld and sghmc)."""
        return 1

    @property
    def _groups_text(self) -> str:
        return "num_chains"

    @classmethod
    def budget_options(cls, num_draws: int, options: Mapping[str, Any]) -> dict[str, Any]:
        """``num_draws`` rounded up to a multiple of the chains (× cycles), which share it."""
        groups = int(options.get("num_chains", cls().num_chains))
        if "num_cycles" in {f.name for f in dataclasses.fields(cls)}:
            groups *= int(options.get("num_cycles", cls().num_cycles))  # type: ignore[attr-defined]
        return {"num_samples": groups * -(-num_draws // groups)}

    @property
    def draws_per_group(self) -> int:
        """Draws kept per chain (per cycle of a chain for csgmcmc)."""
        return self.num_samples // (self.num_chains * self.cycles)

    def check_thinning(self, sampling_steps: int, where: str) -> int:
        """The thinning used when ``sampling_steps`` steps are there to keep draws from."""
        per = self.draws_per_group
        thin = self.thinning if self.thinning is not None else sampling_steps // per
        if thin < 1 or per * thin > sampling_steps:
            raise InvalidInputError(
                f"{per} draws {where} × thinning {self.thinning or 1} need "
                f"{per * (self.thinning or 1)} sampling steps, but there are only "
                f"{sampling_steps}: raise num_steps (now {self.num_steps}), or lower "
                f"num_samples (now {self.num_samples})"
                + ("" if self.thinning is None else " or thinning"))
        return thin


SCHEDULES = ("constant", "polynomial")
# Welling & Teh (2011) decay the step as a(b + t)^-γ, γ in (0.5, 1] for the
# Robbins-Monro conditions; they used γ = 0.55, and so does "polynomial".
_DECAY_EXPONENT = 0.55


@dataclasses.dataclass(frozen=True)
class Decaying(Common):
    """:class:`Common` plus the step-size schedule of sgld and sghmc.

    Parameters
    ----------
    step_size_schedule : {"constant", "polynomial"}
        ``"constant"``: ``step_size`` throughout. ``"polynomial"``:
        step_size · (1 + c t)^-0.55 (Welling & Teh 2011), c chosen so that
        the last step is ``final_step_size_fraction`` × ``step_size``.
    final_step_size_fraction : float
        Last over first step size of the polynomial schedule, in (0, 1].
    """

    step_size_schedule: str = "constant"
    final_step_size_fraction: float = 0.1

    def __post_init__(self) -> None:
        super().__post_init__()
        set_ = functools.partial(object.__setattr__, self)
        set_("step_size_schedule", check_choice(self.step_size_schedule, "step_size_schedule",
                                                SCHEDULES))
        set_("final_step_size_fraction", check_float(
            self.final_step_size_fraction, "final_step_size_fraction", low=0.0, high=1.0,
            low_open=True))
        plain_phases(self)           # raises when the draws do not fit the sampling steps


def decaying_schedule(cfg: Decaying, t):
    """(per-row step size, temperature 1) at traced step ``t``."""
    import jax.numpy as jnp

    if cfg.step_size_schedule == "constant":
        return jnp.float32(cfg.step_size), jnp.float32(1.0)
    rate = ((cfg.final_step_size_fraction ** (-1.0 / _DECAY_EXPONENT) - 1.0)
            / max(cfg.num_steps - 1, 1))
    step = cfg.step_size * (1.0 + rate * t.astype(jnp.float32)) ** (-_DECAY_EXPONENT)
    return step.astype(jnp.float32), jnp.float32(1.0)


def plain_phases(cfg: Common) -> tuple[list[Phase], float]:
    """Burn-in, then each chain's draws spread evenly over its sampling steps (the last
    draw at the last step); and the share of steps spent sampling."""
    sampling = cfg.num_steps - cfg.num_burnin
    thin = cfg.check_thinning(sampling, "per chain")
    per = cfg.draws_per_group
    return [Phase(cfg.num_steps - per * thin, per, thin)], sampling / cfg.num_steps


class Phase(NamedTuple):
    """One stretch of a chain's run: advance ``steps`` steps, then keep ``draws``
    draws, each after ``thinning`` further steps."""

    steps: int
    draws: int = 0
    thinning: int = 1


# -- the compiled sampler --------------------------------------------------------------------

class _Program(NamedTuple):
    # (positions, key, t0, n_advance, n_keep, thinning, data) -> (positions, kept (seg, C, ...)):
    # advance n_advance steps from step t0, then keep n_keep ≤ seg draws, each after
    # ``thinning`` further steps. One compiled program serves burn-in and sampling.
    segment_fn: Any
    segment: int   # draws per call (static)


@functools.lru_cache(maxsize=16)
def _program(spec: MLPSpec, make_step: Callable, schedule: Callable, cfg: Any,
             n_rows: int, segment: int) -> _Program:
    """The jitted segment function for one (spec, method, config, N); cached."""
    import jax
    import jax.numpy as jnp
    from blackjax.sgmcmc.gradients import grad_estimator
    from jax import lax

    from uqzoo.nets import jax as nets

    def log_prior(position):
        return nets.log_prior(spec, position)

    def log_likelihood(position, row):
        x, y, w = row
        logits = nets.forward_logits(spec, position, x[None, :])
        return w * nets.log_likelihood_terms(spec, logits, y[None])[0]

    kernel = make_step(grad_estimator(log_prior, log_likelihood, n_rows), cfg)
    chains = cfg.num_chains

    def one_step(t, carry):
        positions, key, data = carry
        X, y, w = data
        step_size, temperature = schedule(cfg, t)
        keys = jax.random.split(jax.random.fold_in(key, t), 2 * chains)
        rows = jax.vmap(lambda k: jax.random.randint(k, (cfg.batch_size,), 0, n_rows))(
            keys[chains:])                                            # (C, B)
        minibatch = (X[rows], y[rows], w[rows])
        positions = jax.vmap(kernel, in_axes=(0, 0, 0, None, None))(
            keys[:chains], positions, minibatch, step_size / n_rows, temperature)
        return positions, key, data

    def segment_fn(positions, key, t0, n_advance, n_keep, thinning, data):
        # One loop over all the segment's steps (one copy of the step in the compiled
        # program, which halves its compile time against a loop per stretch); after
        # every ``thinning``-th step past n_advance, the positions go to their slot.
        kept = jax.tree.map(lambda p: jnp.zeros((segment, *p.shape), p.dtype), positions)

        def body(t, carry):
            positions, kept = carry
            positions = one_step(t, (positions, key, data))[0]
            done = t - t0 - n_advance + 1                  # steps run past the advance
            keep = (done > 0) & (done % thinning == 0)
            slot = jnp.clip(done // thinning - 1, 0, segment - 1)
            kept = jax.tree.map(
                lambda buf, p: buf.at[slot].set(jnp.where(keep, p, buf[slot])), kept, positions)
            return positions, kept

        stop = t0 + n_advance + n_keep * thinning
        return lax.fori_loop(t0, stop, body, (positions, kept))

    return _Program(jax.jit(segment_fn), segment)


class Run(NamedTuple):
    """:func:`run`'s result."""

    draws: dict[str, np.ndarray]     # (C, G·D, *shape) float32: a chain's draws in order
    finite: np.ndarray               # (C,) bool: the chain's last position is finite
    seconds: float


def run(spec: MLPSpec, X: np.ndarray, y: np.ndarray, w: np.ndarray, cfg: Any, seed: int,
        make_step: Callable, schedule: Callable, phases: list[Phase], *, desc: str,
        progress_bar: bool) -> Run:
    """Run ``cfg.num_chains`` chains through ``phases`` and keep their draws.

    Parameters
    ----------
    make_step : callable
        ``make_step(grad_estimator, cfg)`` returns the kernel step
        ``(key, position, minibatch, step_size / N, temperature) -> position``
        built on a BlackJAX kernel. Hashable (a module-level function).
    schedule : callable
        ``schedule(cfg, t)``: the per-row step size and the temperature at
        (0-based, traced) step t; temperature 0 is a noise-free step
        (csgmcmc's exploration).
    phases : list of Phase
        Consecutive stretches covering ``cfg.num_steps`` steps.
    """
    import jax
    import jax.numpy as jnp

    n_rows = X.shape[0]
    kept = max(p.draws for p in phases)
    thin = max(p.thinning for p in phases)
    # Draws per compiled collect call: about _CHUNK steps' worth, at most the draws wanted.
    segment = max(1, min(kept, _CHUNK // thin))
    program = _program(spec, make_step, schedule, cfg, n_rows, segment)
    starts = spec.init_params(int(np.random.default_rng([seed, 0x56AD]).integers(2**63)),
                              num=cfg.num_chains)
    positions = {k: jnp.asarray(v) for k, v in starts.items()}
    rng = np.random.default_rng([seed, 0x5C4C])
    key = jax.random.wrap_key_data(jnp.asarray(rng.integers(0, 2**32, size=2,
                                                            dtype=np.uint32)))
    data = (jnp.asarray(X, jnp.float32), jnp.asarray(y, jnp.int32), jnp.asarray(w, jnp.float32))
    pieces: list[dict[str, np.ndarray]] = []
    t = 0
    bar = progress(total=cfg.num_steps, desc=desc, unit="step", enabled=progress_bar)
    start = time.perf_counter()
    try:
        for phase in phases:
            for done in range(0, phase.steps, _CHUNK):
                n = min(_CHUNK, phase.steps - done)
                positions, _ = program.segment_fn(positions, key, jnp.int32(t), jnp.int32(n),
                                                  jnp.int32(0), jnp.int32(1), data)
                t += n
                bar.update(n)
            for done in range(0, phase.draws, segment):
                n = min(segment, phase.draws - done)
                positions, out = program.segment_fn(positions, key, jnp.int32(t), jnp.int32(0),
                                                    jnp.int32(n), jnp.int32(phase.thinning),
                                                    data)
                pieces.append({k: np.asarray(v[:n]) for k, v in out.items()})
                t += n * phase.thinning
                bar.update(n * phase.thinning)
        jax.block_until_ready(positions)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    # pieces: (n, C, ...) each -> (C, total, ...)
    draws = {k: np.swapaxes(np.concatenate([p[k] for p in pieces]), 0, 1).astype(np.float32)
             for k in starts}
    finite = np.all(np.stack([np.isfinite(np.asarray(v)).reshape(cfg.num_chains, -1).all(1)
                              for v in positions.values()]), axis=0)
    return Run(draws, finite, seconds)


# -- diagnostics ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=16)
def _logit_functions(spec: MLPSpec):
    """Jitted (logits, Jacobian of the logits) of a flat parameter vector, for one spec."""
    import jax

    from uqzoo.nets import jax as nets

    shapes = spec.param_shapes()

    def logits(flat, x):
        params, offset = {}, 0
        for key, shape in shapes.items():
            size = int(np.prod(shape))
            params[key] = flat[offset:offset + size].reshape(shape)
            offset += size
        return nets.forward_logits(spec, params, x)

    return jax.jit(logits), jax.jit(jax.jacfwd(logits))


def _laplace_logit_variance(spec: MLPSpec, params: Mapping[str, np.ndarray], X: np.ndarray,
                            w: np.ndarray, X_points: np.ndarray, seed: int) -> np.ndarray:
    """Linearised-Laplace variance of each logit at ``X_points`` around ``params``: (n, O)."""
    logits, jacobian = _logit_functions(spec)
    n = X.shape[0]
    rng = np.random.default_rng([seed, 0x66A1])
    rows = np.sort(rng.choice(n, size=min(n, _GGN_ROWS), replace=False))
    flat = np.asarray(spec.flatten(params), np.float32)
    Xr = np.asarray(X[rows], np.float32)
    J = np.asarray(jacobian(flat, Xr), np.float64)                     # (m, O, P)
    z = np.asarray(logits(flat, Xr), np.float64)                       # (m, O)
    if spec.n_classes == 2:
        p = 1.0 / (1.0 + np.exp(-z[:, 0]))
        lam = (p * (1 - p))[:, None, None]                            # (m, 1, 1)
    else:
        e = np.exp(z - z.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        lam = np.einsum("mk,kl->mkl", p, np.eye(p.shape[1])) - p[:, :, None] * p[:, None, :]
    lam = lam * (w[rows] * (n / rows.size))[:, None, None]
    prior_precision = 1.0 / spec.flatten({k: np.full(s, spec.prior_sd(k))
                                          for k, s in spec.param_shapes().items()}) ** 2
    Jx = np.asarray(jacobian(flat, np.asarray(X_points, np.float32)), np.float64)  # (n, O, P)
    if J.shape[-1] <= _GGN_FULL_MAX:
        LJ = np.einsum("mok,mkp->mop", lam, J)                         # Λ_i J_i
        H = np.einsum("mop,moq->pq", J, LJ, optimize=True) + np.diag(prior_precision)
        L = np.linalg.cholesky(H)
        V = np.linalg.solve(L, Jx.reshape(-1, J.shape[-1]).T)         # (P, n·O)
        return (V ** 2).sum(axis=0).reshape(Jx.shape[:2])
    diag = np.einsum("mop,moq,mqp->p", J, lam, J, optimize=True) + prior_precision
    return (Jx ** 2 / diag).sum(axis=-1)


def diagnose(spec: MLPSpec, draws: Mapping[str, np.ndarray], sample_shape: tuple[int, int],
             X: np.ndarray, y: np.ndarray, w: np.ndarray, cfg: Any, seed: int,
             last: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """R-hat/ESS across the rows of ``sample_shape``, and the one-point check.

    ``draws`` are flat (S, ...) in row-major ``sample_shape`` order; ``last`` is
    each chain's last position (C, ...), where the local Laplace variance is taken.
    """
    from uqzoo import predictive as engine

    rows_, per = sample_shape
    idx = _diagnostics.predictive_points(seed, X.shape[0], cfg.num_diagnostic_points)
    proba = engine.proba_draws(spec, draws, X[idx])                   # (S, n, K)
    if spec.n_classes == 2:
        proba = proba[..., 1:]
    out: dict[str, Any] = {"predictive_points": idx}
    norms = _diagnostics.layer_norms(spec, draws)
    for name, values in (("predictive", proba), ("layer_norm", norms)):
        summary = _diagnostics.rhat_ess(values.reshape((rows_, per, *values.shape[1:])))
        for stat, arr in summary.items():
            out[f"{stat}_{name}"] = arr
    if cfg.cycles > 1 and cfg.num_chains > 1:
        chains = proba.reshape((cfg.num_chains, -1, *proba.shape[1:]))
        out["rhat_predictive_chains"] = _diagnostics.rhat_ess(chains)["rhat"]

    # One point? Within-chain variance of the logits against the local Laplace variance.
    logits = _logits(spec, draws, X[idx])                             # (S, n, O)
    logits = logits.reshape((cfg.num_chains, -1, *logits.shape[1:]))
    within = logits.var(axis=1, ddof=1).mean(axis=0)                  # (n, O)
    laplace = np.mean([_laplace_logit_variance(spec, {k: v[c] for k, v in last.items()},
                                               X, w, X[idx], seed)
                       for c in range(cfg.num_chains)], axis=0)
    ratio = within / laplace
    out["logit_variance_draws"] = within
    out["logit_variance_laplace"] = laplace
    out["logit_spread_ratio"] = float(np.median(ratio))
    out["one_point"] = bool(out["logit_spread_ratio"] < ONE_POINT_FRACTION)
    return out


def _logits(spec: MLPSpec, draws: Mapping[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """(S, n, O) logits of the draws at X, float64."""
    logits, _ = _logit_functions(spec)
    flat = np.asarray(spec.flatten(draws, leading=1), np.float32)
    Xf = np.asarray(X, np.float32)
    return np.stack([np.asarray(logits(f, Xf), np.float64) for f in flat])


def convergence(method: str, diagnostics: Mapping[str, Any], cfg: Any,
                finite: np.ndarray) -> _diagnostics.Convergence:
    """The verdict: finite chains, chains not far apart (:data:`RHAT_LIMIT`), not one point."""
    messages = []
    if not finite.all():
        messages.append(
            f"{method}: {int((~finite).sum())} of {cfg.num_chains} chains became non-finite "
            f"(the step overshot the posterior's curvature); lower step_size (now "
            f"{cfg.step_size}).")
    rhat = np.asarray(diagnostics["rhat_predictive"])
    if np.all(np.isnan(rhat)):
        messages.append(
            f"{method}: R-hat could not be computed ({cfg.draws_per_group} draws per chain; "
            f"at least 4 are needed, or the predictive probabilities are constant), so "
            f"convergence is unchecked.")
    elif np.nanquantile(rhat, RHAT_QUANTILE) > RHAT_LIMIT:
        share = float(np.mean(rhat[np.isfinite(rhat)] > RHAT_LIMIT))
        messages.append(
            f"{method}: split R-hat of the predictive probability exceeds {RHAT_LIMIT} at "
            f"{share:.0%} of the {rhat.shape[0]} diagnostic training points (its "
            f"{RHAT_QUANTILE:.0%} quantile is {np.nanquantile(rhat, RHAT_QUANTILE):.2f}; "
            f"flagged above {RHAT_LIMIT}): the chains are far apart; run longer "
            f"(num_steps={cfg.num_steps}) or raise step_size (now {cfg.step_size}).")
    if diagnostics["one_point"]:
        messages.append(
            f"{method}: the draws are effectively one point: the logits' between-draw "
            f"variance is {diagnostics['logit_spread_ratio']:.2g} of the local Laplace "
            f"variance (median over {rhat.shape[0]} diagnostic points; flagged below "
            f"{ONE_POINT_FRACTION}); raise step_size (now {cfg.step_size}) or num_steps.")
    return _diagnostics.Convergence(not messages, tuple(messages))


def fit(method: str, spec: MLPSpec, data, cfg: Any, seed: int, make_step: Callable,
        schedule: Callable, phases_fn: Callable, progress_bar: bool,
        extra: Callable | None = None) -> Posterior:
    """The whole fit of one SG-MCMC method: run, reshape, diagnose, warn, wrap.

    ``phases_fn(cfg)`` gives the phases and the share of steps in sampling
    stages; ``extra(cfg)`` adds method-specific diagnostics.
    """
    check_draw_memory(spec, cfg.num_samples, "num_samples")
    X = np.asarray(data.X_train, dtype=np.float32)
    y = np.asarray(data.y_train)
    if cfg.batch_size > X.shape[0]:
        raise InvalidInputError(
            f"batch_size must be at most the {X.shape[0]} training rows, got {cfg.batch_size}")
    weights = row_weights(cfg.class_weight, y, spec.n_classes)
    w = np.ones(y.shape, np.float32) if weights is None else weights
    phases, sampling_share = phases_fn(cfg)
    result = run(spec, X, y, w, cfg, seed, make_step, schedule, phases, desc=method,
                 progress_bar=progress_bar)
    groups, per = cfg.num_chains * cfg.cycles, cfg.draws_per_group
    flat = {k: v.reshape((groups * per, *v.shape[2:])) for k, v in result.draws.items()}
    last = {k: v[:, -1] for k, v in result.draws.items()}
    t0 = time.perf_counter()
    if result.finite.all() and all(np.isfinite(v).all() for v in flat.values()):
        diagnostics = diagnose(spec, flat, (groups, per), X, y, w, cfg, seed, last)
    else:
        nan = np.full(min(cfg.num_diagnostic_points, X.shape[0]), np.nan)
        diagnostics = {"rhat_predictive": nan, "one_point": False,
                       "logit_spread_ratio": float("nan")}
    diagnostics.update({
        "sampling_share": sampling_share,
        "gradient_evaluations": int(cfg.num_chains * cfg.num_steps
                                    * getattr(cfg, "num_integration_steps", 1)),
        "seconds_sampling": result.seconds,
        "seconds_diagnostics": time.perf_counter() - t0,
        **(extra(cfg) if extra is not None else {}),
    })
    verdict = convergence(method, diagnostics, cfg, result.finite)
    for message in verdict.messages:
        warnings.warn(message, ConvergenceWarning, stacklevel=4)
    return Posterior(spec=spec, method=method, config=config_dict(cfg), seed=seed, draws=flat,
                     sample_shape=(groups, per), diagnostics=diagnostics,
                     converged=bool(verdict.converged), warnings=verdict.messages)
