"""``sgld``: stochastic gradient Langevin dynamics (Welling & Teh 2011) on BlackJAX.

Each step moves every chain by

    θ ← θ + ε ∇̂ log p(θ | D) + √(2ε) ξ,   ξ ~ N(0, I),   ε = step_size / N,

``blackjax.sgld``'s kernel, with ∇̂ the minibatch estimate of the gradient of
the one model core's log posterior (log prior + N/B × the minibatch's
class-weighted log-likelihood; :mod:`uqzoo.methods._sgmcmc`). There is no
Metropolis correction: the draws carry a bias that shrinks with ε, and the
draws stop moving when ε is too small -- which the diagnostics catch
(``one_point``). ``num_burnin`` steps are discarded; the ``num_samples /
num_chains`` draws of each chain are spread over the rest.

Defaults and where they come from: :class:`Config` and
``benchmarks/sgmcmc_defaults.py`` (development data only).

References
----------
Welling, Teh (2011). Bayesian learning via stochastic gradient Langevin
dynamics. ICML.
"""

from __future__ import annotations

import dataclasses

from uqzoo.methods import _sgmcmc
from uqzoo.posterior import Posterior
from uqzoo.spec import MLPSpec

__all__ = ["Config", "fit"]


@dataclasses.dataclass(frozen=True)
class Config(_sgmcmc.Decaying):
    """Settings of SGLD.

    Parameters
    ----------
    num_steps : int
        Steps per chain, burn-in included. Default 20000.
    num_burnin : int
        Steps discarded first, < num_steps. Default 5000.
    step_size : float
        Per training row: the kernel's ε is step_size / N. Default 0.05: of
        1e-3, 1e-2 and 0.05 on development data (``benchmarks/sgmcmc_defaults.py``,
        benchmarks/README.md "SG-MCMC defaults") the only one whose 80 % and
        95 % intervals covered the truth at about the nominal rate (0.86 / 0.98;
        0.62 / 0.84 at 1e-2) with the lowest R-hat (1.10).
    batch_size : int
        Minibatch rows, at most N. Default 100.
    num_samples : int
        S in all, a multiple of num_chains. Default 1000.
    num_chains : int
        Default 4.
    thinning : int or None
        Steps between kept draws; None (default) spreads the draws evenly.
    step_size_schedule : {"constant", "polynomial"}
        Default "constant".
    final_step_size_fraction : float
        Of the polynomial schedule. Default 0.1.
    num_diagnostic_points : int
        Default 10.
    class_weight : None, "balanced" or sequence of float

    Notes
    -----
    ``num_steps`` = 20000 and ``num_burnin`` = 5000 with 4 chains and
    minibatches of 100: the run the step size was measured with (about 30 s
    on the 2-core development machine, compilation included).
    The options are :class:`uqzoo.methods._sgmcmc.Common`'s and
    :class:`~uqzoo.methods._sgmcmc.Decaying`'s, documented there.
    """

    step_size: float = 0.05


def make_step(grad_estimator, cfg: Config):
    """BlackJAX's SGLD step: (key, position, minibatch, ε, temperature) -> position."""
    import blackjax

    return blackjax.sgld(grad_estimator).step


def fit(spec: MLPSpec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Sample the Bayesian MLP's posterior with SGLD.

    ``seed`` seeds the chains' starts (torch's default initialisation), the
    minibatches and the injected noise. The other arguments are the
    :class:`uqzoo.methods.Method` protocol's.

    Returns
    -------
    Posterior
        ``draws`` of shape (num_samples, *param_shape), ``sample_shape =
        (num_chains, num_samples / num_chains)``; ``diagnostics`` with
        ``rhat_predictive`` (num_diagnostic_points, K'), ESS, ``sampling_share``,
        ``logit_spread_ratio`` and ``one_point`` (:mod:`uqzoo.methods._sgmcmc`).

    Warns
    -----
    ConvergenceWarning
        Non-finite chains, chains far apart (the 90th percentile of the
        predictive R-hat over the diagnostic points above 1.5, not HMC's 1.01:
        :data:`uqzoo.methods._sgmcmc.RHAT_LIMIT` says why), or draws that are
        effectively one point; the posterior is then ``converged=False``.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(10, 10))
    >>> post = uz.fit("sgld", spec, data, seed=0, num_steps=2000, num_burnin=500,
    ...               num_samples=100, progress_bar=False)              # doctest: +SKIP
    >>> post.predict_proba_draws(data.X_test).shape                      # doctest: +SKIP
    (100, 50, 2)
    """
    return _sgmcmc.fit("sgld", spec, data, config, seed, make_step, _sgmcmc.decaying_schedule,
                       _sgmcmc.plain_phases, progress_bar)
