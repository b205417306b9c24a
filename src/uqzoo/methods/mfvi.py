"""``mfvi``: mean-field Gaussian variational inference (Bayes by backprop).

q(θ) = Π_j N(θ_j; m_j, s_j²) over every weight and bias of the network, with
s_j = softplus(ρ_j), fitted by maximising the ELBO

    ELBO(q) = E_q[log p(y | X, θ)] − β · KL(q ‖ p),   p = the spec's prior,

with reparametrised gradients (``num_particles`` draws per step) and the KL in
closed form. ``kl_annealing_steps > 0`` ramps β linearly from ~0 to 1 over
those first steps (Blundell et al. 2015), which keeps q from collapsing onto
the prior early on; the ELBO is exact (β = 1) afterwards. With ``batch_size``
set, each step uses a random minibatch of B rows and scales its
log-likelihood by N / B, an unbiased estimate of the full-data term.

Convergence is judged on the loss (−ELBO) trace: the mean over the last
``convergence_window`` steps must not have dropped, relative to the window
before, by more than noise explains or ``convergence_rtol``
(:func:`elbo_convergence`). Otherwise a
``ConvergenceWarning`` is raised and the posterior is ``converged=False``.

NumPyro SVI is the default backend; ``backend="pyro"`` runs the same model and
guide in Pyro (randomness from torch's generator, seeded inside
``torch.random.fork_rng`` so the caller's state is untouched).

References
----------
Blundell, Cornebise, Kavukcuoglu, Wierstra (2015). Weight uncertainty in
neural networks. ICML.
Kingma, Welling (2014). Auto-encoding variational Bayes. ICLR.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from uqzoo._progress import progress_bar as progress
from uqzoo.errors import ConvergenceWarning, InvalidInputError
from uqzoo.methods import _diagnostics
from uqzoo.methods._config import (
    FreeDraws,
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

__all__ = ["BACKENDS", "LR_SCHEDULES", "Config", "fit"]

BACKENDS = ("numpyro", "pyro")
LR_SCHEDULES = ("constant", "cosine", "exponential")

# Optimiser steps per compiled call: enough to hide Python overhead, few
# enough for a live progress bar. One size for every call: one compilation.
_CHUNK = 500


@dataclasses.dataclass(frozen=True)
class Config(FreeDraws):
    """Settings of mean-field VI.

    Parameters
    ----------
    num_steps : int
        Adam steps. Default 10000.
    learning_rate : float
        Adam's initial step size. Default 0.01.
    lr_schedule : {"constant", "cosine", "exponential"}
        How the step size moves from ``learning_rate`` to
        ``learning_rate × final_lr_fraction`` over the run. Default "cosine".
    final_lr_fraction : float
        Final over initial step size for the decaying schedules, in (0, 1].
        Default 0.1.
    num_particles : int
        Draws from q per ELBO gradient. Default 1.
    init_scale : float
        Initial standard deviation of every factor of q. The means start at
        torch's default initialisation drawn from the seed. Default 0.01.
    kl_annealing_steps : int
        Ramp the KL weight β from 1/kl_annealing_steps to 1 over this many
        first steps; 0 (default) fits the exact ELBO throughout. At most
        half of ``num_steps``.
    batch_size : int or None
        Minibatch size; None (default) uses all rows every step.
    num_samples : int
        S, the draws taken from the fitted q. Default 1000.
    convergence_window : int or None
        Steps per window of the convergence check; None means
        ``max(num_steps // 10, 10)``.
    convergence_rtol : float
        Relative decrease of the windowed loss still counted as converged.
        Default 1e-3.
    backend : {"numpyro", "pyro"}
    class_weight : None, "balanced" or sequence of float
        Multiplies each row's expected log-likelihood in the ELBO by its class's weight; the
        option of every method (:class:`uqzoo.methods._trainer.OptimizerConfig`).
    """

    num_steps: int = 10000
    learning_rate: float = 0.01
    lr_schedule: str = "cosine"
    final_lr_fraction: float = 0.1
    num_particles: int = 1
    init_scale: float = 0.01
    kl_annealing_steps: int = 0
    batch_size: int | None = None
    num_samples: int = 1000
    convergence_window: int | None = None
    convergence_rtol: float = 1e-3
    backend: str = "numpyro"
    class_weight: str | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("num_steps", check_iterations(self.num_steps, "num_steps"))
        set_("learning_rate", check_float(self.learning_rate, "learning_rate", low=0.0,
                                          low_open=True))
        set_("lr_schedule", check_choice(self.lr_schedule, "lr_schedule", LR_SCHEDULES))
        set_("final_lr_fraction", check_float(self.final_lr_fraction, "final_lr_fraction",
                                              low=0.0, high=1.0, low_open=True))
        set_("num_particles", check_members(self.num_particles, "num_particles"))
        set_("init_scale", check_float(self.init_scale, "init_scale", low=0.0, low_open=True))
        set_("kl_annealing_steps", check_int(self.kl_annealing_steps, "kl_annealing_steps",
                                             minimum=0, maximum=self.num_steps // 2))
        if self.batch_size is not None:
            set_("batch_size", check_int(self.batch_size, "batch_size", minimum=1))
        set_("num_samples", check_draws(self.num_samples, "num_samples"))
        if self.convergence_window is not None:
            set_("convergence_window", check_int(self.convergence_window, "convergence_window",
                                                 minimum=2))
        set_("convergence_rtol", check_float(self.convergence_rtol, "convergence_rtol",
                                             low=0.0))
        set_("backend", check_choice(self.backend, "backend", BACKENDS))
        set_("class_weight", check_class_weight(self.class_weight))

    @property
    def window(self) -> int:
        """The convergence-check window actually used."""
        return self.convergence_window or max(self.num_steps // 10, 10)


def learning_rate_at(cfg: Config, step):
    """Step size at (0-based) ``step``: a Python number or a JAX scalar."""
    done = step / max(cfg.num_steps - 1, 1)
    lo = cfg.final_lr_fraction
    if cfg.lr_schedule == "constant":
        return cfg.learning_rate + 0.0 * done
    if cfg.lr_schedule == "exponential":
        return cfg.learning_rate * lo ** done
    cos: Any       # a float, or a JAX scalar inside a traced step
    if isinstance(done, float):
        cos = math.cos(math.pi * done)
    else:
        import jax.numpy as jnp
        cos = jnp.cos(jnp.pi * done)
    return cfg.learning_rate * (lo + (1 - lo) * 0.5 * (1 + cos))


def kl_weight_at(cfg: Config, step):
    """KL weight β at (0-based) ``step``: linear ramp, then 1."""
    if cfg.kl_annealing_steps == 0:
        return 1.0 + 0.0 * step
    ramp = (step + 1) / cfg.kl_annealing_steps
    if isinstance(ramp, (int, float)):
        return min(1.0, ramp)
    import jax.numpy as jnp
    return jnp.minimum(1.0, ramp)


# -- NumPyro ------------------------------------------------------------------------------

def _mean_field_guide(shapes: dict[str, tuple[int, ...]]):
    """Guide q = Π N(loc, softplus(ρ)²) over the model's latent sites ``shapes``."""
    import numpyro
    import numpyro.distributions as dist
    from numpyro.distributions import constraints

    def guide(*args):
        kl_weight = args[-1]   # the model's signature: (*data, kl_weight)
        with numpyro.handlers.scale(scale=kl_weight):
            for key, shape in shapes.items():
                loc = numpyro.param(f"{key}.loc", np.zeros(shape, np.float32))
                scale = numpyro.param(f"{key}.scale", np.ones(shape, np.float32),
                                      constraint=constraints.softplus_positive)
                numpyro.sample(key, dist.Normal(loc, scale).to_event(len(shape)))

    return guide


@functools.lru_cache(maxsize=16)
def _numpyro_program(model_factory: Callable, model_key: Any, shapes_items: tuple,
                     cfg: Config):
    """SVI object and a jitted chunk of optimiser steps, cached per model and config."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from numpyro.infer import SVI, TraceMeanField_ELBO
    from numpyro.optim import Adam

    shapes = dict(shapes_items)
    model = model_factory(*model_key)
    guide = _mean_field_guide(shapes)
    optimizer = Adam(step_size=lambda i: learning_rate_at(cfg, i))
    svi = SVI(model, guide, optimizer, loss=TraceMeanField_ELBO(num_particles=cfg.num_particles))

    def chunk(state, start, n, *data):
        def body(i, carry):
            s, losses = carry
            beta = kl_weight_at(cfg, (start + i).astype(jnp.float32))
            s, loss = svi.update(s, *data, beta)
            return s, losses.at[i].set(loss)
        return lax.fori_loop(0, n, body, (state, jnp.zeros((_CHUNK,), jnp.float32)))

    return svi, jax.jit(chunk)


def optimize_numpyro(model_factory: Callable, model_key: tuple, shapes: dict[str, tuple],
                     init_loc: dict[str, np.ndarray], data: tuple, cfg: Config, seed: int,
                     progress_bar: bool = False):
    """Fit a mean-field normal guide to any NumPyro model: the core of :func:`fit`.

    Parameters
    ----------
    model_factory : callable
        ``model_factory(*model_key)`` returns a NumPyro model ``model(*data,
        kl_weight)`` whose latent sites are exactly ``shapes`` (real-valued)
        and whose prior sites sit under ``numpyro.handlers.scale(kl_weight)``.
        Cached by (model_factory, model_key, shapes, cfg), so both must be hashable.
    model_key : tuple
    shapes : dict of str to tuple
    init_loc : dict of ndarray
        Starting means of q.
    data : tuple of arrays
        The model's data arguments.
    cfg : Config
    seed : int

    Returns
    -------
    loc, scale : dict of ndarray (float64)
        The fitted q's means and standard deviations per site.
    losses : ndarray of shape (num_steps,), float64
        The loss (−ELBO, or its annealed form during annealing) at each step.
    """
    import jax
    import jax.numpy as jnp

    svi, chunk = _numpyro_program(model_factory, model_key, tuple(shapes.items()), cfg)
    rng = np.random.default_rng([seed, 0x51F1])
    key = jax.random.wrap_key_data(jnp.asarray(rng.integers(0, 2**32, size=2,
                                                            dtype=np.uint32)))
    # Values are on the constrained scale: numpyro inverts softplus itself.
    init_params = {}
    for k, shape in shapes.items():
        init_params[f"{k}.loc"] = jnp.asarray(init_loc[k], jnp.float32)
        init_params[f"{k}.scale"] = jnp.full(shape, cfg.init_scale, jnp.float32)
    data = tuple(jnp.asarray(d) for d in data)
    state = svi.init(key, *data, jnp.float32(kl_weight_at(cfg, 0)), init_params=init_params)
    losses = []
    bar = progress(total=cfg.num_steps, desc="mfvi (numpyro)", unit="step", enabled=progress_bar)
    try:
        for start in range(0, cfg.num_steps, _CHUNK):
            n = min(_CHUNK, cfg.num_steps - start)
            state, chunk_losses = chunk(state, jnp.int32(start), jnp.int32(n), *data)
            losses.append(np.asarray(chunk_losses)[:n])
            bar.update(n)
    finally:
        bar.close()
    params = svi.get_params(state)
    loc = {k: np.asarray(params[f"{k}.loc"], np.float64) for k in shapes}
    scale = {k: np.asarray(params[f"{k}.scale"], np.float64) for k in shapes}
    return loc, scale, np.concatenate(losses).astype(np.float64)


# -- Pyro ----------------------------------------------------------------------------------

def _optimize_pyro(spec: MLPSpec, X: np.ndarray, y: np.ndarray, w: np.ndarray,
                   init_loc: dict, cfg: Config, seed: int, progress_bar: bool):
    try:
        import pyro
        import pyro.distributions as pdist
        from pyro.infer import TraceMeanField_ELBO

        from uqzoo.nets import pyro_model
    except ImportError as exc:  # an optional extra
        raise ImportError("backend='pyro' needs pyro-ppl: pip install 'uqzoo[pyro]'") from exc
    import torch

    shapes = spec.param_shapes()
    # Copies: the dataset's arrays are read-only, which torch.as_tensor warns about.
    Xt = torch.tensor(np.array(X, dtype=np.float32))
    yt = torch.tensor(np.array(y, dtype=np.int64))
    wt = torch.tensor(np.array(w, dtype=np.float32))
    rho0 = math.log(math.expm1(cfg.init_scale))
    locs = {k: torch.tensor(init_loc[k], dtype=torch.float32, requires_grad=True) for k in shapes}
    rhos = {k: torch.full(s, rho0, dtype=torch.float32, requires_grad=True)
            for k, s in shapes.items()}
    model = pyro_model.bayesian_mlp(spec, False, cfg.batch_size)

    def guide(X, y, w, kl_weight):
        with pyro.poutine.scale(scale=kl_weight):
            for k, s in shapes.items():
                pyro.sample(k, pdist.Normal(locs[k], torch.nn.functional.softplus(rhos[k]))
                            .to_event(len(s)))

    elbo = TraceMeanField_ELBO(num_particles=cfg.num_particles)
    optimizer = torch.optim.Adam([*locs.values(), *rhos.values()], lr=cfg.learning_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: learning_rate_at(cfg, float(step)) / cfg.learning_rate)
    losses = np.zeros(cfg.num_steps)
    bar = progress(total=cfg.num_steps, desc="mfvi (pyro)", unit="step", enabled=progress_bar)
    # Pyro draws from torch's global generator; fork it so the caller's state survives.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(np.random.default_rng([seed, 0x51F1]).integers(2**62)))
        try:
            for step in range(cfg.num_steps):
                optimizer.zero_grad()
                loss = elbo.differentiable_loss(model, guide, Xt, yt, wt,
                                                float(kl_weight_at(cfg, step)))
                loss.backward()
                optimizer.step()
                schedule.step()
                losses[step] = loss.item()
                if step % 100 == 99:
                    bar.update(100)
        finally:
            bar.close()
    loc = {k: v.detach().numpy().astype(np.float64) for k, v in locs.items()}
    scale = {k: torch.nn.functional.softplus(v).detach().numpy().astype(np.float64)
             for k, v in rhos.items()}
    return loc, scale, losses


# -- convergence and fit ---------------------------------------------------------------------

def elbo_convergence(losses: np.ndarray, change: _diagnostics.WindowChange,
                     cfg: Config) -> _diagnostics.Convergence:
    """Has the fit converged? The loss (−ELBO) must be finite and have stopped falling.

    Parameters
    ----------
    losses : ndarray of shape (num_steps,)
    change : WindowChange
        :func:`uqzoo.methods._diagnostics.window_change` of ``losses`` over
        ``cfg.window`` steps with ``cfg.convergence_rtol``.
    cfg : Config

    Returns
    -------
    Convergence
    """
    if not np.all(np.isfinite(losses)):
        return _diagnostics.Convergence(False, (
            "mfvi: the ELBO became non-finite; lower learning_rate "
            f"(now {cfg.learning_rate}) or init_scale.",))
    if change.steady:
        return _diagnostics.Convergence(True, ())
    return _diagnostics.Convergence(False, (
        f"mfvi: the ELBO was still rising at the end (the mean over the last "
        f"{cfg.window} steps improved by {change.relative_change:.2e} relative to the window "
        f"before, more than the {change.tolerance:.2e} that noise or convergence_rtol "
        f"allow); raise num_steps (now {cfg.num_steps}) or learning_rate.",))


def fit(spec: MLPSpec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Fit mean-field Gaussian VI and draw ``num_samples`` parameter sets from q.

    ``seed`` seeds q's initial means, the ELBO's Monte Carlo draws, minibatches and the
    final draws from q. The other arguments are the :class:`uqzoo.methods.Method`
    protocol's; the fit uses ``data``'s training split.

    Returns
    -------
    Posterior
        ``draws`` of shape (num_samples, *param_shape), ``sample_shape =
        (1, num_samples)``; ``diagnostics["elbo"]`` of shape (num_steps,) is
        the ELBO trace (annealed during KL annealing), ``q_mean`` and
        ``q_std`` of shape (n_params,) are q's parameters flattened in layout
        order, plus the convergence check's numbers and timings.

    Warns
    -----
    ConvergenceWarning
        When the loss was still falling at the end, or became non-finite.

    Examples
    --------
    >>> import uqzoo as uz                                            # doctest: +SKIP
    >>> post = uz.fit("mfvi", spec, data, seed=0, num_steps=5000)     # doctest: +SKIP
    >>> post.diagnostics["elbo"].shape                                 # doctest: +SKIP
    (5000,)
    """
    check_draw_memory(spec, config.num_samples, "num_samples")
    t0 = time.perf_counter()
    X = np.asarray(data.X_train, dtype=np.float32)
    y = np.asarray(data.y_train)
    weights = row_weights(config.class_weight, y, spec.n_classes)
    w = np.ones(y.shape, np.float32) if weights is None else weights
    if config.batch_size is not None and config.batch_size > X.shape[0]:
        raise InvalidInputError(
            f"batch_size must be at most the {X.shape[0]} training rows, got {config.batch_size}")
    init_loc = spec.init_params(int(np.random.default_rng([seed, 0x1417]).integers(2**63)))
    shapes = spec.param_shapes()
    if config.backend == "numpyro":
        from uqzoo.nets import numpyro_model

        loc, scale, losses = optimize_numpyro(
            numpyro_model.bayesian_mlp, (spec, False, config.batch_size), shapes, init_loc,
            (X, y.astype(np.int32), w), config, seed, progress_bar)
    else:
        loc, scale, losses = _optimize_pyro(spec, X, y, w, init_loc, config, seed,
                                            progress_bar)
    t_fit = time.perf_counter() - t0

    rng = np.random.default_rng([seed, 0xD8A5])
    draws = {k: (loc[k] + scale[k] * rng.standard_normal((config.num_samples, *shape)))
             .astype(np.float32) for k, shape in shapes.items()}
    change = _diagnostics.window_change(losses, config.window, config.convergence_rtol)
    convergence = elbo_convergence(losses, change, config)
    for message in convergence.messages:
        warnings.warn(message, ConvergenceWarning, stacklevel=3)
    diagnostics = {
        "elbo": -losses,
        "q_mean": spec.flatten(loc),
        "q_std": spec.flatten(scale),
        "elbo_relative_change": change.relative_change,
        "elbo_tolerance": change.tolerance,
        "seconds_optimization": t_fit,
    }
    return Posterior(spec=spec, method="mfvi", config=config_dict(config), seed=seed,
                     draws=draws, sample_shape=(1, config.num_samples), diagnostics=diagnostics,
                     converged=bool(convergence.converged), warnings=convergence.messages)

