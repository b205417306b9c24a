"""``sghmc``: stochastic gradient Hamiltonian Monte Carlo (Chen et al. 2014) on BlackJAX.

Each step is one call of ``blackjax.sghmc``'s kernel: a fresh momentum
p ~ N(0, I), then ``num_integration_steps`` steps of

    θ ← θ + ε p,   p ← (1 − αε) p + ε ∇̂ log p(θ | D) + √(2αε) ξ,   ε = √(step_size / N),

(friction α, the parametrisation of Ma et al. 2015) on one minibatch, with
∇̂ the minibatch estimate of the one model core's log-posterior gradient
(:mod:`uqzoo.methods._sgmcmc`). ε is the square root of SGLD's step for the
same ``step_size`` because it multiplies a momentum: one SGHMC step moves θ
by about as much as one SGLD step, and ``num_integration_steps`` of them
follow the posterior's gradient further before the momentum is redrawn. No
Metropolis correction; the diagnostics catch a run that did not move
(``one_point``).

Defaults and where they come from: :class:`Config` and
``benchmarks/sgmcmc_defaults.py`` (development data only).

References
----------
Chen, Fox, Guestrin (2014). Stochastic gradient Hamiltonian Monte Carlo. ICML.
Ma, Chen, Fox (2015). A complete recipe for stochastic gradient MCMC. NeurIPS.
"""

from __future__ import annotations

import dataclasses
import functools

from uqzoo.methods import _sgmcmc
from uqzoo.methods._config import check_float, check_int
from uqzoo.posterior import Posterior
from uqzoo.spec import MLPSpec

__all__ = ["Config", "fit"]


@dataclasses.dataclass(frozen=True)
class Config(_sgmcmc.Decaying):
    """Settings of SGHMC.

    Parameters
    ----------
    num_steps : int
        Kernel calls per chain, burn-in included (each ``num_integration_steps``
        gradients). Default 5000.
    num_burnin : int
        Kernel calls discarded first, < num_steps. Default 1000.
    step_size : float
        Per training row: the integrator's ε is sqrt(step_size / N). Default
        0.01: of 1e-3, 1e-2 and 0.05 on development data
        (``benchmarks/sgmcmc_defaults.py``) the one covering the truth at about
        the nominal rate (0.82 at 80 %; 0.48 at 1e-3). At 0.05 the intervals
        were too wide (0.97 at 80 %): BlackJAX's integrator moves θ and p from
        the same old state, and without a Metropolis step that inflates the
        variance by a factor that grows with ε (1.54 at εω = 0.17 over 3 steps;
        tests/methods/test_sgmcmc.py derives it exactly).
    num_integration_steps : int
        Integration steps per kernel call (one minibatch, one momentum draw),
        1 to 1000. Default 5.
    friction : float
        α > 0, the momentum's friction per unit time. Default 0.01
        (BlackJAX's default).
    batch_size, num_samples, num_chains, thinning, step_size_schedule,
    final_step_size_fraction, num_diagnostic_points, class_weight
        As for every SG-MCMC method (:class:`uqzoo.methods._sgmcmc.Common`,
        :class:`~uqzoo.methods._sgmcmc.Decaying`); defaults 100, 1000, 4,
        None, "constant", 0.1, 10, None.
    """

    num_steps: int = 5000
    num_burnin: int = 1000
    step_size: float = 0.01
    num_integration_steps: int = 5
    friction: float = 0.01

    def __post_init__(self) -> None:
        super().__post_init__()
        set_ = functools.partial(object.__setattr__, self)
        set_("num_integration_steps", check_int(self.num_integration_steps,
                                                "num_integration_steps", minimum=1,
                                                maximum=1000))
        set_("friction", check_float(self.friction, "friction", low=0.0, low_open=True))


def make_step(grad_estimator, cfg: Config):
    """BlackJAX's SGHMC step with ε = sqrt(step_size / N)."""
    import blackjax
    import jax.numpy as jnp

    step = blackjax.sghmc(grad_estimator, num_integration_steps=cfg.num_integration_steps,
                          alpha=cfg.friction).step

    def kernel(key, position, minibatch, step_per_row_over_n, temperature):
        return step(key, position, minibatch, jnp.sqrt(step_per_row_over_n), temperature)

    return kernel


def fit(spec: MLPSpec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Sample the Bayesian MLP's posterior with SGHMC.

    ``seed`` seeds the chains' starts, the minibatches, momenta and noise. The
    other arguments are the :class:`uqzoo.methods.Method` protocol's.

    Returns
    -------
    Posterior
        As :func:`uqzoo.methods.sgld.fit`'s; ``diagnostics["gradient_evaluations"]``
        counts num_chains × num_steps × num_integration_steps.

    Warns
    -----
    ConvergenceWarning
        Non-finite chains, chains far apart (predictive R-hat's 90th
        percentile above 1.5, as for ``sgld``), or draws that are effectively
        one point.

    Examples
    --------
    >>> import uqzoo as uz                                             # doctest: +SKIP
    >>> post = uz.fit("sghmc", spec, data, seed=0, num_steps=1000)     # doctest: +SKIP
    >>> post.diagnostics["one_point"]                                  # doctest: +SKIP
    False
    """
    return _sgmcmc.fit("sghmc", spec, data, config, seed, make_step,
                       _sgmcmc.decaying_schedule, _sgmcmc.plain_phases, progress_bar)
