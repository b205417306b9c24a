"""``hmc``: the No-U-Turn sampler on the Bayesian MLP -- the reference posterior.

Model: the spec's prior, each weight and bias ~ N(0, ``spec.prior_sd(key)``²)
(prior_scale²/fan_in for weights under the default fan-in prior), or, with
``hierarchical=True``, τ_i ~ HalfNormal(prior_scale) takes prior_scale's
place in layer i (weights N(0, τ_i²/fan_in) or N(0, τ_i²), biases N(0, τ_i²)),
written non-centred (w = τ_i · z, z ~ N(0, 1)) because the centred form gives
NUTS a funnel. Likelihood: Bernoulli on one
logit for two classes, categorical on K logits otherwise.

NumPyro is the default backend. uqzoo drives NumPyro's NUTS kernel
(``numpyro.infer.hmc.hmc``) itself rather than through ``numpyro.infer.MCMC``:

- the compiled warm-up and sampling programs are cached per (spec, settings),
  so a second fit of the same network on data of the same size compiles
  nothing;
- ``chain_method="auto"`` (the default) vectorizes the chains of a small
  network (training rows × parameters ≤ 10⁶), runs them in parallel where
  the user configured several JAX CPU devices, and otherwise one after
  another (:func:`resolve_chain_method`). Vectorized chains advance together
  through ``vmap`` of NumPyro's kernel inside the loop, as
  ``numpyro.infer.MCMC``'s vectorized chains do;
- "parallel" chains run in threads, one per JAX CPU device (XLA releases the
  GIL while it computes, but JAX runs one computation at a time on a CPU
  device). JAX has one CPU device unless the program asks for more before
  JAX starts, ``jax.config.update("jax_num_cpu_devices", n)`` -- a
  process-wide setting a library must not make on its user's behalf (the
  ``uqzoo`` command, which owns its process, asks for one per core) -- so by
  default "parallel" chains run one after another. Each chain runs the same
  compiled program either way;
- sampling runs in compiled segments of about two seconds (one iteration
  first), so a progress bar costs nothing and its estimate is known early;
  its remaining time counts sampling only (not the warm start or the
  compilation) at the rate of the last minute, beside the leapfrog steps per
  iteration and the time per step. The kernel is NumPyro's own, adaptation
  included: from the same starting state and key the chain equals
  ``numpyro.infer.MCMC``'s (tested), and the sampler's defaults (target 0.8,
  tree depth 10, diagonal mass) are NumPyro's.

Where a fit's time goes is (leapfrog steps) × (seconds per step): one step
is one gradient of the log posterior over all training rows, and NUTS takes
up to 2**max_tree_depth − 1 of them per iteration. The prior governs the
first factor: the spec's fan-in prior keeps a unit's prior pre-activation
out of tanh's saturation however many inputs it has, and so keeps the trees
short on data with hundreds of correlated inputs. ``init="map"`` (each chain
starts at its own MAP fit) and ``rotate_inputs=True`` (the first layer
sampled in the principal axes of the inputs; exact, see :class:`Config`)
are options for geometries where the start or the input correlations slow
the sampler; a lower ``max_tree_depth`` shortens a run at a cost in ESS per
draw.

:func:`time_estimate` times a few gradients on the data before a fit and
says what the run should cost; :func:`uqzoo.compare` warns
(``SlowFitWarning``) before its first fit when that is long. What each of
these costs and gains on a 189-band scene, and how the estimate compared
with the run: benchmarks/README.md, "NUTS on a 189-band scene".

``backend="pyro"`` runs the same model with Pyro's NUTS (chains one after
another; ``jit_compile`` traces the potential with the PyTorch JIT). Pyro draws
its randomness from torch's global generator; uqzoo seeds it inside
``torch.random.fork_rng`` so that the caller's generator state is untouched.

Diagnostics: per-draw ``diverging``, ``acceptance_rate``, ``n_steps``,
``tree_depth``, ``step_size``, ``energy`` and ``lp`` go to
``Posterior.sample_stats`` (ArviZ names). R-hat and bulk/tail ESS are reported
for the posterior predictive probability at ``num_diagnostic_points`` training
points chosen by the seed, for each layer's weight norm and for the log
density -- not per weight: a network's likelihood is invariant under
permutations of hidden units and sign flips of tanh units, so chains exploring
different but equivalent modes make per-weight R-hat large while the
function-space posterior is perfectly mixed. A fit with any divergent
transition or with predictive R-hat > 1.01 warns (``ConvergenceWarning``) and
is marked ``converged=False``.

References
----------
Hoffman, Gelman (2014). The No-U-Turn sampler. JMLR 15.
Phan, Pradhan, Jankowiak (2019). Composable effects for flexible and
accelerated probabilistic programming in NumPyro. arXiv:1912.11554.
Vehtari et al. (2021). Rank-normalization, folding, and localization: an
improved R-hat. Bayesian Analysis 16(2).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time
import warnings
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from uqzoo import predictive as engine
from uqzoo._progress import progress_bar
from uqzoo._validation import check_bool
from uqzoo.errors import ConvergenceWarning, InvalidInputError
from uqzoo.methods import _config, _diagnostics
from uqzoo.methods._config import (
    check_chain_sizes,
    check_choice,
    check_draws,
    check_float,
    check_int,
    check_iterations,
    check_members,
    config_dict,
)
from uqzoo.models import Model, unsupported
from uqzoo.nets import sites
from uqzoo.posterior import Posterior
from uqzoo.spec import MLPSpec

__all__ = ["BACKENDS", "CHAIN_METHODS", "INITS", "LONG_FIT_SECONDS", "TYPICAL_LEAPFROG_STEPS",
           "Config", "TimeEstimate", "fit", "resolve_chain_method", "time_estimate"]

BACKENDS = ("numpyro", "pyro")
CHAIN_METHODS = ("auto", "parallel", "sequential", "vectorized")
# chain_method="auto" vectorizes the chains when one gradient's work, training
# rows × parameters, is at most this. A 2-10-10-1 network on sim-teacher (1,000
# rows × 151 parameters = 1.5e5) ran 4 chains 4.5× faster vectorized than one
# after another with NumPyro (25.3 s vs 112.6 s): NUTS's per-step
# overhead, not the gradient, set the cost, and vmap pays it once for all
# chains. The 189-band scene (5,000 × 2,021 = 1.0e7) spends its 1.5 ms per
# step in the gradient (benchmarks/README.md, "NUTS on a 189-band scene"),
# which vmap multiplies by the chains, while every iteration waits for the
# deepest tree: there chains run one per device (or one after another).
_VECTORIZE_MAX_WORK = 1_000_000
INITS = ("map", "uniform", "prior", "torch")

# Iterations per compiled call, at most: the buffers of a segment hold this
# many records. The number run in one call is a traced argument, so every
# segment length up to it shares one compilation; the driver picks lengths
# that last about _SEGMENT_SECONDS (starting with one iteration), so the
# progress bar moves and its estimate is known early even when one iteration
# takes seconds, while Python's per-call overhead (~0.1 ms) stays negligible.
_SEGMENT = 50
_SEGMENT_SECONDS = 2.0
# Leapfrog steps per iteration that a time estimate assumes: typical of the
# 189-band benchmark scene, where trees reach depth 7-8 (benchmarks/README.md,
# "NUTS on a 189-band scene"). Smaller problems need fewer; the worst case
# (every tree at max_tree_depth) is always reported beside it.
TYPICAL_LEAPFROG_STEPS = 180
# compare() says so before starting when a fit is expected to take longer.
LONG_FIT_SECONDS = 120.0
# NumPyro's default init_to_uniform radius, on the unconstrained scale.
_UNIFORM_RADIUS = 2.0


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of the NUTS sampler.

    Parameters
    ----------
    num_warmup : int
        Warm-up (adaptation) iterations per chain, discarded. Default 500.
    num_samples : int
        S, the draws kept in all, as for every method: each chain keeps
        ``num_samples / num_chains`` of them (after thinning), so it must be
        a multiple of ``num_chains``. Default 4000 (1000 per chain).
    num_chains : int
        Independent chains. Default 4, enough for split R-hat to mean
        something.
    thinning : int
        Keep every ``thinning``-th iteration (draws per chain × thinning
        iterations are run after warm-up). Default 1.
    target_accept : float
        Dual-averaging target acceptance probability, in (0, 1). Raise it
        (0.9, 0.95) when there are divergences. Default 0.8.
    max_tree_depth : int
        Cap on NUTS doublings (at most 2**depth - 1 leapfrog steps). Default 10.
    dense_mass : bool
        Adapt a dense mass matrix instead of a diagonal one. Default False.
    init : {"map", "uniform", "prior", "torch"}
        Chain initialisation. ``"uniform"`` (default): U(-2, 2) on the
        unconstrained scale (NumPyro's default). ``"map"``: each chain starts
        at its own MAP fit -- ``map_epochs`` full-batch Adam steps of uqzoo's
        MAP trainer (the same likelihood and prior) from torch's default
        initialisation with the chain's own seed, all chains trained
        together; the chains start from different MAPs, so R-hat still
        compares independent starts. Not the default: on the benchmark scene
        it did not shorten the warm-up (benchmarks/README.md, "NUTS on a
        189-band scene").
        ``"prior"``: a draw from the prior; ``"torch"``: torch
        ``nn.Linear``'s default init (small weights).
    map_epochs : int
        Adam steps (learning rate 0.01) of each chain's MAP fit with
        ``init="map"``. Default 1000: a start, not an optimum; warm-up does
        the rest.
    rotate_inputs : bool
        Sample the first layer's weights in the principal axes of the
        training inputs. Default False (benchmarks/README.md, "NUTS on a
        189-band scene", says why). With V the eigenvectors of XᵀX,
        the first layer computes ``W x = (W V)(Vᵀ x)``; NUTS samples
        W̃ = W V against the inputs X V, and the draws are rotated back
        (W = W̃ Vᵀ). This is exact -- the first layer's weights have one
        prior sd (``spec.prior_sd``), so their prior is invariant under
        rotation, and |det V| = 1 -- and it matters for spectra: hundreds of
        strongly correlated bands make the posterior of W correlated across
        inputs, which a diagonal mass matrix cannot follow, whereas W̃'s
        posterior would be close to axis-aligned if the likelihood's
        curvature followed XᵀX (its precision is about σ⁻² I + Vᵀ XᵀDX V,
        with per-row weights D).
    hierarchical : bool
        Per-layer scales τ_i ~ HalfNormal(prior_scale) (non-centred).
        Their draws are in ``sample_stats["layer_scale"]``.
    float64 : bool
        Sample in double precision. NumPyro: JAX's x64 mode is switched on
        inside the fit only (``jax.enable_x64`` context), never globally.
        Draws are stored as float32 like every method's.
    backend : {"numpyro", "pyro"}
    chain_method : {"auto", "parallel", "sequential", "vectorized"}
        NumPyro only. ``"auto"`` (default) picks one by a fixed rule (see
        :func:`resolve_chain_method`): one chain runs alone; with several
        JAX CPU devices configured, ``"parallel"``; otherwise
        ``"vectorized"`` when one gradient's work (training rows ×
        parameters) is at most 10⁶, where NUTS's per-step overhead rather
        than the gradient sets the cost, else ``"sequential"``. The rule reads
        only the data's size, the spec and the device count, so the same
        seed, settings and machine still give the same draws.
        ``"parallel"`` runs chains in threads, as many at a
        time as there are JAX CPU devices and cores: call
        ``jax.config.update("jax_num_cpu_devices", os.cpu_count())`` at the
        start of the program for that, since with JAX's default single CPU
        device they run one after another; ``"sequential"`` one after another;
        ``"vectorized"`` all in one ``vmap``-ed program (each iteration lasts
        as long as the slowest chain's tree). The same seed, settings and
        ``chain_method`` give bit-identical draws on the same machine. Across
        chain methods the chains start identically and sample the same
        posterior, but are not promised to be identical (tested within Monte
        Carlo error): "parallel" and
        "sequential" agree exactly where XLA rounds alike in every thread,
        ``vmap`` reorders float operations, and the chaotic Hamiltonian
        dynamics amplify any rounding difference.
    jit_compile : bool
        Pyro only: trace the potential energy with the PyTorch JIT.
    num_diagnostic_points : int
        Training points whose predictive probability gets R-hat and ESS.
    class_weight : None, "balanced" or sequence of float
        The class weights of every method (:class:`uqzoo.methods._trainer.OptimizerConfig`):
        each row's log-likelihood term in the potential is multiplied by its class's weight.
    """

    num_warmup: int = 500
    num_samples: int = 4000
    num_chains: int = 4
    thinning: int = 1
    target_accept: float = 0.8
    max_tree_depth: int = 10
    dense_mass: bool = False
    init: str = "uniform"
    map_epochs: int = 1000
    rotate_inputs: bool = False
    hierarchical: bool = False
    float64: bool = False
    backend: str = "numpyro"
    chain_method: str = "auto"
    jit_compile: bool = True
    num_diagnostic_points: int = 10
    class_weight: str | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("class_weight", _config.check_class_weight(self.class_weight))
        set_("num_warmup", check_iterations(self.num_warmup, "num_warmup", minimum=0))
        set_("num_samples", check_draws(self.num_samples, "num_samples"))
        set_("num_chains", check_members(self.num_chains, "num_chains"))
        set_("thinning", check_iterations(self.thinning, "thinning"))
        if self.num_samples % self.num_chains:
            raise InvalidInputError(
                f"num_samples ({self.num_samples}) must be a multiple of num_chains "
                f"({self.num_chains}): it is the total S, split evenly over the chains")
        check_chain_sizes(self.num_chains, self.draws_per_chain, self.num_warmup, self.thinning)
        set_("target_accept", check_float(self.target_accept, "target_accept", low=0.0,
                                          high=1.0, low_open=True, high_open=True))
        set_("max_tree_depth", check_int(self.max_tree_depth, "max_tree_depth",
                                         minimum=1, maximum=20))
        set_("dense_mass", check_bool(self.dense_mass, "dense_mass"))
        set_("init", check_choice(self.init, "init", INITS))
        set_("map_epochs", check_iterations(self.map_epochs, "map_epochs"))
        set_("rotate_inputs", check_bool(self.rotate_inputs, "rotate_inputs"))
        set_("hierarchical", check_bool(self.hierarchical, "hierarchical"))
        set_("float64", check_bool(self.float64, "float64"))
        set_("backend", check_choice(self.backend, "backend", BACKENDS))
        set_("chain_method", check_choice(self.chain_method, "chain_method", CHAIN_METHODS))
        set_("jit_compile", check_bool(self.jit_compile, "jit_compile"))
        set_("num_diagnostic_points", check_int(self.num_diagnostic_points,
                                                "num_diagnostic_points", minimum=1))

    @classmethod
    def budget_options(cls, num_draws: int, options: Mapping[str, Any]) -> dict[str, Any]:
        """``num_draws`` rounded up to a multiple of the chains, which share it evenly."""
        chains = int(options.get("num_chains", cls().num_chains))
        return {"num_samples": chains * -(-num_draws // chains)}

    @property
    def draws_per_chain(self) -> int:
        """Draws each chain keeps: ``num_samples / num_chains``."""
        return self.num_samples // self.num_chains


# -- the model's sites (the model itself: uqzoo.nets.numpyro_model / pyro_model) ----------

# Private names kept for the benchmarks and tests that reach into this module.
_site_shapes = sites.site_shapes
_fan_in_factor = sites.fan_in_factor
_first_layer_site = sites.first_layer_site
_to_sites = sites.params_to_sites
_to_layout = sites.sites_to_params


def _initial_values(spec: Model, cfg: Config, rng: np.random.Generator,
                    dtype) -> dict[str, np.ndarray]:
    """One chain's starting point on the unconstrained scale."""
    shapes = sites.site_shapes(spec, cfg.hierarchical)
    if cfg.init == "uniform":
        return {k: rng.uniform(-_UNIFORM_RADIUS, _UNIFORM_RADIUS, size=s).astype(dtype)
                for k, s in shapes.items()}
    if cfg.init == "prior":
        out = {}
        for k, s in shapes.items():
            if k.startswith("layer_scale."):
                scale = sites.as_mlp(spec).prior_scale
                out[k] = np.log(np.abs(rng.normal(0.0, scale, size=s))).astype(dtype)
            else:
                scale = 1.0 if cfg.hierarchical else spec.prior_sd(k)
                out[k] = rng.normal(0.0, scale, size=s).astype(dtype)
        return out
    params = spec.init_params(int(rng.integers(2**63)))
    if not cfg.hierarchical:
        return {k: v.astype(dtype) for k, v in params.items()}
    out = {}
    mlp = sites.as_mlp(spec)
    for k in shapes:
        if k.startswith("layer_scale."):
            out[k] = np.asarray(math.log(mlp.prior_scale), dtype=dtype)
        else:
            key = k[:-len("_std")]
            out[k] = (params[key] / (mlp.prior_scale * sites.fan_in_factor(spec, key))
                      ).astype(dtype)
    return out


# -- NumPyro: compiled programs, cached ---------------------------------------------------

class _Program(NamedTuple):
    init: Any        # (z0, key, X, y, weights=None) -> HMCState
    segment: Any     # (state, n, X, y, weights, *, thinning) -> (state, buffers)
    gradient: Any    # (z, X, y, weights=None) -> (potential energy, its gradient):
                     # one leapfrog's work


@functools.lru_cache(maxsize=16)
def _numpyro_program(spec: Model, hierarchical: bool, num_warmup: int, target_accept: float,
                     max_tree_depth: int, dense_mass: bool, float64: bool,
                     vectorized: bool) -> _Program:
    """Jitted init and segment functions for one model and sampler setting.

    NumPyro's ``hmc()`` keeps the sampler settings in closure variables set by
    ``init_kernel``; caching the pair per setting keeps them consistent.

    Warm-up and sampling run the same ``segment`` program: NumPyro's kernel
    itself switches adaptation off once the state's iteration counter reaches
    ``num_warmup``, so one compiled NUTS kernel serves both phases (a separate
    warm-up program would compile the whole tree builder a second time).
    ``float64`` is not read in the body: it keys the cache, so float32 and
    float64 runs (traced under different ``jax.enable_x64`` settings) keep
    separate programs. Driven this way the
    chain is bit-identical to ``numpyro.infer.MCMC`` started from the same
    state (``tests/methods/test_hmc.py``).
    """
    import jax
    import jax.numpy as jnp
    from jax import lax
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import potential_energy

    from uqzoo.nets import numpyro_model

    model = numpyro_model.bayesian_mlp(spec, hierarchical)

    # NumPyro's own potential (the model's negative log joint at unconstrained
    # values, its HalfNormal scales mapped through their supports' bijections),
    # built as ``initialize_model(..., dynamic_args=True)`` builds it -- without
    # calling it: that also searches for valid initial values by running the
    # model op by op, 5-7 s of one-off compilations per process on this network
    # (the chains' starts are uqzoo's own, _chain_starts), 5 % of a 4-chain fit.
    def potential_fn_gen(*model_args, **model_kwargs):
        return functools.partial(potential_energy, model, model_args, model_kwargs, enum=False)

    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_fn_gen, algo="NUTS")

    # weights: each row's likelihood weight (N,), or None for ones.
    def gradient(z, X, y, weights=None):
        return jax.value_and_grad(potential_fn_gen(X, y, weights))(z)

    def init(z0, key, X, y, weights=None):
        return init_kernel(z0, num_warmup, dense_mass=dense_mass,
                           target_accept_prob=target_accept, max_tree_depth=max_tree_depth,
                           model_args=(X, y, weights), rng_key=key)

    def segment(state, n, X, y, weights, thinning, vectorized=False):
        """Run n kept iterations (n ≤ _SEGMENT), each the last of ``thinning``.

        ``vectorized``: ``state`` holds a batch of chains (leading axis) and
        each iteration advances them all through ``vmap(sample_kernel)``, the
        loop staying outside the ``vmap`` as in ``numpyro.infer.MCMC``'s
        vectorized chains; the buffers come back chains first (chains, _SEGMENT, ...).
        """
        kernel = functools.partial(sample_kernel, model_args=(X, y, weights))
        if vectorized:
            kernel = jax.vmap(kernel)
        def record(s, diverging, leapfrog):
            return {"z": s.z, "diverging": diverging, "acceptance_rate": s.accept_prob,
                    "n_steps": s.num_steps, "step_size": s.adapt_state.step_size,
                    "energy": s.energy, "lp": -s.potential_energy, "leapfrog": leapfrog}

        def thinned(_, carry):
            s, diverging, leapfrog = carry
            s = kernel(s)
            return s, diverging | s.diverging, leapfrog + s.num_steps

        # Leapfrog counts take num_steps' integer type (int64 under x64).
        no_steps = jnp.zeros_like(state.num_steps)
        no_divergence = jnp.zeros(jnp.shape(state.num_steps), bool)
        probe = record(state, no_divergence, no_steps)
        buffers = jax.tree.map(lambda a: jnp.zeros((_SEGMENT, *jnp.shape(a)),
                                                   jnp.result_type(a)), probe)

        def body(i, carry):
            s, buf = carry
            s, diverging, leapfrog = lax.fori_loop(
                0, thinning, thinned, (s, no_divergence, no_steps))
            buf = jax.tree.map(lambda b, v: b.at[i].set(v), buf, record(s, diverging, leapfrog))
            return s, buf
        state, buffers = lax.fori_loop(0, n, body, (state, buffers))
        if vectorized:
            buffers = jax.tree.map(lambda b: jnp.swapaxes(b, 0, 1), buffers)
        return state, buffers

    if vectorized:
        init_one = init

        def init(z0, key, X, y, weights=None):
            return jax.vmap(init_one, in_axes=(0, 0, None, None, None))(z0, key, X, y, weights)

        segment = functools.partial(segment, vectorized=True)
    return _Program(jax.jit(init), jax.jit(segment, static_argnames=("thinning",)),
                    jax.jit(gradient))


class _Progress:
    """A thread-safe progress bar of NUTS iterations (all chains), or a no-op.

    Its time estimate is its own, not tqdm's: tqdm divides by the rate since
    the bar started, which here would count the MAP warm start and the
    compilation (seconds to a minute) as sampling, and early deep warm-up
    trees forever. This one divides the iterations left by the rate of the
    last ``_RATE_WINDOW`` seconds of sampling work of all running chains
    together (parallel chains add up, sequential ones do not), and shows
    what sets the rate: leapfrog steps (gradient evaluations) per iteration
    and milliseconds per leapfrog step, over the same window.
    """

    _RATE_WINDOW = 60.0

    def __init__(self, total: int, enabled: bool, desc: str, clock=time.perf_counter):
        self._bar = None
        self._lock = threading.Lock()
        self._clock = clock
        self._total = total
        self._done = 0
        # (time, iterations done, leapfrog steps done, chain-seconds of segments)
        self._history: list[tuple[float, int, int, float]] = []
        self._leapfrog = 0
        self._busy = 0.0
        if enabled:
            self._bar = progress_bar(
                total=total, desc=desc, unit="it",
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} "
                           "[{elapsed}{postfix}]")

    def phase(self, text: str) -> None:
        """Show what runs before sampling starts (MAP fit, compilation)."""
        if self._bar is not None:
            with self._lock:
                self._bar.set_postfix_str(text, refresh=True)

    def start(self) -> None:
        """A chain is compiled and starts sampling: the rate's clock starts here."""
        with self._lock:
            if not self._history:
                self._history.append((self._clock(), 0, 0, 0.0))

    def __call__(self, n: int, leapfrog: int = 0, seconds: float = 0.0) -> None:
        """n more iterations, with their leapfrog steps and their chain's compute seconds."""
        with self._lock:
            now = self._clock()
            self._done += n
            self._leapfrog += leapfrog
            self._busy += seconds
            if not self._history:
                self._history.append((now, 0, 0, 0.0))
            self._history.append((now, self._done, self._leapfrog, self._busy))
            while len(self._history) > 2 and now - self._history[1][0] > self._RATE_WINDOW:
                self._history.pop(0)
            if self._bar is not None:
                self._bar.set_postfix_str(self._estimate(now), refresh=False)
                self._bar.update(n)

    def _estimate(self, now: float) -> str:
        t0, done0, leap0, busy0 = self._history[0]
        iters, elapsed = self._done - done0, now - t0
        if iters <= 0 or elapsed <= 0:
            return ""
        left = (self._total - self._done) * elapsed / iters
        steps = (self._leapfrog - leap0) / iters
        per_step = (self._busy - busy0) / max(1, self._leapfrog - leap0)
        return (f"<{_format_seconds(left)} left, {steps:.0f} leapfrog/it, "
                f"{1e3 * per_step:.2f} ms/leapfrog")

    def estimate(self) -> str:
        """The remaining time and the recent rate, as the bar shows them."""
        with self._lock:
            return self._estimate(self._history[-1][0]) if self._history else ""

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _format_seconds(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _segments(total: int, seconds_per_iteration: list[float]):
    """Segment lengths summing to ``total``: one iteration first, then about
    ``_SEGMENT_SECONDS`` each at the rate measured so far (at most _SEGMENT).

    ``seconds_per_iteration`` is shared with the caller, who appends each
    segment's measured time per iteration.
    """
    done = 0
    while done < total:
        if seconds_per_iteration:
            n = int(_SEGMENT_SECONDS / max(seconds_per_iteration[-1], 1e-9))
        else:
            n = 1
        n = max(1, min(n, _SEGMENT, total - done))
        yield n
        done += n


def _chain_starts(spec: Model, cfg: Config, seed: int, X: np.ndarray | None = None,
                  y: np.ndarray | None = None
                  ) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    """Each chain's starting point (unconstrained) and NUTS key data (uint32 (2,)).

    Each chain's key and starting point derive from its own child seed, so a
    chain's draws do not depend on how many chains run or how. ``init="map"``
    needs the (possibly rotated) training data ``X``, ``y``.
    """
    float_dtype = np.float64 if cfg.float64 else np.float32
    children = np.random.SeedSequence(seed).spawn(cfg.num_chains)
    keys = [np.random.default_rng(child).integers(0, 2**32, size=2, dtype=np.uint32)
            for child in children]
    rngs = [np.random.default_rng(child.spawn(1)[0]) for child in children]
    if cfg.init == "map":
        if X is None or y is None:
            raise InvalidInputError("init='map' needs the training data")
        starts = _map_starts(spec, cfg, [int(rng.integers(2**31)) for rng in rngs], X, y)
        z0s = [sites.params_to_sites(spec, cfg.hierarchical, params, float_dtype)
               for params in starts]
    else:
        z0s = [_initial_values(spec, cfg, rng, float_dtype) for rng in rngs]
    return list(zip(z0s, keys, strict=True))


def _map_starts(spec: Model, cfg: Config, seeds: list[int], X: np.ndarray,
                y: np.ndarray) -> list[dict[str, np.ndarray]]:
    """One MAP fit per seed, trained together by uqzoo's trainer (full batch, Adam)."""
    from uqzoo.methods import _trainer

    init = {k: np.stack([spec.init_params(s)[k] for s in seeds]) for k in spec.param_shapes()}
    result = _trainer.train(spec, X, y, init, _trainer.OptimizerConfig(num_epochs=cfg.map_epochs),
                            keys=_trainer.member_keys(seeds))
    return [{k: v[c] for k, v in result.params.items()} for c in range(len(seeds))]


def _input_rotation(X: np.ndarray) -> np.ndarray:
    """V (D, D), orthogonal: the principal axes of the training inputs, largest first.

    Eigenvectors of XᵀX in float64, each signed so that its largest entry is
    positive (a deterministic choice; any sign is exact).
    """
    X = np.asarray(X, dtype=np.float64)
    _, V = np.linalg.eigh(X.T @ X)
    V = V[:, ::-1]
    largest = np.argmax(np.abs(V), axis=0)
    signs = np.where(V[largest, np.arange(V.shape[1])] < 0, -1.0, 1.0)
    return np.ascontiguousarray(V * signs)


def _cpu_devices() -> list:
    """JAX's CPU devices: one unless the user asked for more before JAX started
    (``jax.config.update("jax_num_cpu_devices", n)``)."""
    import jax

    return jax.devices("cpu")


def resolve_chain_method(spec: Model, n_rows: int, config: Config) -> str:
    """The chain method a NumPyro fit uses: ``config.chain_method``, or the
    ``"auto"`` rule's choice.

    ``"auto"``: ``"sequential"`` for one chain; ``"parallel"`` when JAX has
    several CPU devices (the user configured them); else ``"vectorized"``
    when ``n_rows`` × the spec's parameter count is at most
    ``_VECTORIZE_MAX_WORK`` (10⁶), otherwise ``"sequential"``.

    Examples
    --------
    >>> from uqzoo.spec import MLPSpec
    >>> resolve_chain_method(MLPSpec(2, 2, hidden=(10, 10)), 1000, Config())
    'vectorized'
    >>> resolve_chain_method(MLPSpec(189, 2, hidden=(10, 10)), 5000, Config())
    'sequential'
    """
    if config.chain_method != "auto":
        return config.chain_method
    if config.num_chains == 1:
        return "sequential"
    if len(_cpu_devices()) > 1:
        return "parallel"
    work = int(n_rows) * spec.n_params
    return "vectorized" if work <= _VECTORIZE_MAX_WORK else "sequential"


def _run_numpyro(spec: Model, X: np.ndarray, y: np.ndarray, cfg: Config, seed: int,
                 progress: _Progress) -> tuple[dict, dict, dict]:
    import jax

    float_dtype = np.float64 if cfg.float64 else np.float32
    chain_method = resolve_chain_method(spec, X.shape[0], cfg)
    vectorized = chain_method == "vectorized"
    program = _numpyro_program(spec, cfg.hierarchical, cfg.num_warmup, cfg.target_accept,
                               cfg.max_tree_depth, cfg.dense_mass, cfg.float64, vectorized)
    X = X.astype(float_dtype)
    y = y.astype(np.int32)
    weights = _config.row_weights(cfg.class_weight, y, spec.n_classes)
    if weights is not None:
        weights = weights.astype(float_dtype)
    t_start = time.perf_counter()
    if cfg.init == "map":
        progress.phase("MAP warm start")
    inits, keys = zip(*_chain_starts(spec, cfg, seed, X, y), strict=True)
    seconds_map = time.perf_counter() - t_start if cfg.init == "map" else 0.0
    progress.phase("compiling")

    # The data enter the compiled programs as arguments, so that one compiled
    # program serves every data set of a shape (a study fits hundreds), except
    # for vectorized chains: there they are closed over, as NumPyro's ``MCMC``
    # does by default (``jit_model_args=False``), because NumPyro's own vectorized
    # chains were measured 7x slower with the data as arguments on another machine
    # (benchmarks/README.md, "NUTS against NumPyro"). One pair serves every chain:
    # a chain's committed start picks the device its programs compile for.
    if vectorized:
        constant_init = jax.jit(lambda z0, key: program.init(z0, key, X, y, weights))
        constant_segment = jax.jit(lambda state, n, thinning: program.segment(
            state, n, X, y, weights, thinning=thinning), static_argnames=("thinning",))

        def init(z0, key, data):
            return constant_init(z0, key)

        def segment(state, n, data, thinning):
            return constant_segment(state, n, thinning=thinning)
    else:
        def init(z0, key, data):
            return program.init(z0, key, *data)

        def segment(state, n, data, thinning):
            return program.segment(state, n, *data, thinning=thinning)

    def run(z0, key_data, device=None):
        """Run chains (one, or a vmapped batch) through warm-up and sampling.

        Returns the kept iterations' records (leading axes: (chains,) draws,
        or draws alone), per-chain counts of warm-up divergences and of
        leapfrog steps in warm-up and sampling, and the two phases' seconds.
        With a ``device``, the chain's arrays are committed to it, so its
        compiled programs run there.
        """
        counts = {"divergent_warmup": 0, "leapfrog_steps_warmup": 0,
                  "leapfrog_steps_sampling": 0}
        per_chain = len(key_data) if vectorized else 1

        def collect(buf, n):
            take = (slice(None), slice(0, n)) if vectorized else slice(0, n)
            return jax.tree.map(lambda b: np.asarray(b)[take], buf)

        with jax.enable_x64(cfg.float64):
            key = jax.random.wrap_key_data(key_data)
            data = (X, y, weights)
            if device is not None:
                z0, key, data = jax.device_put((z0, key, data), device)
            t0 = time.perf_counter()
            state = init(z0, key, data)
            # Compile the segment programs now, running zero iterations, so
            # that the progress estimate and the phase timings count sampling.
            for thin in sorted({1, cfg.thinning}):
                jax.block_until_ready(segment(state, 0, data, thinning=thin))
            t1 = time.perf_counter()
            progress.start()
            per_iteration: list[float] = []
            for n in _segments(cfg.num_warmup, per_iteration):
                s0 = time.perf_counter()
                state, buf = segment(state, n, data, thinning=1)
                warm = collect(buf, n)
                seconds = time.perf_counter() - s0
                per_iteration.append(seconds / n)
                steps = warm["leapfrog"].sum(axis=-1, dtype=np.int64)
                counts["divergent_warmup"] += warm["diverging"].sum(axis=-1, dtype=np.int64)
                counts["leapfrog_steps_warmup"] += steps
                progress(n * per_chain, int(np.sum(steps)), seconds * per_chain)
            t2 = time.perf_counter()
            pieces = []
            # seconds per kept draw (thinning iterations each)
            per_draw = [per_iteration[-1] * cfg.thinning] if per_iteration else []
            for n in _segments(cfg.draws_per_chain, per_draw):
                s0 = time.perf_counter()
                state, buf = segment(state, n, data, thinning=cfg.thinning)
                pieces.append(collect(buf, n))
                seconds = time.perf_counter() - s0
                per_draw.append(seconds / n)
                progress(n * cfg.thinning * per_chain, int(np.sum(pieces[-1]["leapfrog"])),
                         seconds * per_chain)
            t3 = time.perf_counter()
        axis = 1 if vectorized else 0
        out = jax.tree.map(lambda *p: np.concatenate(p, axis=axis), *pieces)
        counts["leapfrog_steps_sampling"] = out.pop("leapfrog").sum(axis=-1, dtype=np.int64)
        return out, counts, (t2 - t1, t3 - t2, t1 - t0)

    if vectorized:
        z0 = {k: np.stack([z[k] for z in inits]) for k in inits[0]}
        out, counts, seconds = run(z0, np.stack(keys))
        counts = {k: np.broadcast_to(np.asarray(v), (cfg.num_chains,))
                  for k, v in counts.items()}
        results = [(jax.tree.map(lambda a, c=c: a[c], out), {k: v[c] for k, v in counts.items()},
                    seconds) for c in range(cfg.num_chains)]
    elif chain_method == "parallel" and cfg.num_chains > 1 and len(_cpu_devices()) > 1:
        # JAX runs one computation at a time on each CPU device (two threads on
        # one device take as long as one after the other: benchmarks/README.md,
        # "NUTS and mean-field VI"), so chains run in parallel only on
        # separate devices -- as many as the user configured, at most one per
        # core. Chain c always gets device c mod n: its result does not
        # depend on thread timing.
        devices = _cpu_devices()
        workers = min(cfg.num_chains, len(devices), engine.default_workers())
        placement = [devices[c % workers] for c in range(cfg.num_chains)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="uqzoo-nuts") as pool:
            results = list(pool.map(run, inits, keys, placement))
    else:
        results = [run(z0, k) for z0, k in zip(inits, keys, strict=True)]

    stacked = jax.tree.map(lambda *a: np.stack(a), *[r[0] for r in results])
    z = stacked.pop("z")
    stats = stacked
    stats["n_steps"] = stats["n_steps"].astype(np.int64)
    stats["tree_depth"] = np.ceil(np.log2(stats["n_steps"] + 1)).astype(np.int64)
    stats["diverging"] = stats["diverging"].astype(bool)
    # Counts are totals over chains; leapfrog steps are gradient evaluations,
    # the sampler's cost independent of the machine.
    extra: dict[str, Any] = {f"num_{k}" if k.startswith("divergent") else k:
                             int(sum(int(r[1][k]) for r in results)) for k in results[0][1]}
    extra["seconds_warmup"] = float(max(r[2][0] for r in results))
    extra["seconds_sampling"] = float(max(r[2][1] for r in results))
    extra["seconds_compile"] = float(max(r[2][2] for r in results))
    extra["seconds_map"] = float(seconds_map)
    # Wall seconds per leapfrog step of one chain: the gradient evaluation plus
    # NUTS's own work per step (tree bookkeeping, the kinetic energy).
    chain_seconds = sum(r[2][0] + r[2][1] for r in results)
    chain_steps = extra["leapfrog_steps_warmup"] + extra["leapfrog_steps_sampling"]
    extra["seconds_per_leapfrog"] = float(chain_seconds / max(1, chain_steps))
    return z, stats, extra


# -- Pyro -------------------------------------------------------------------------------

def _run_pyro(spec: Model, X: np.ndarray, y: np.ndarray, cfg: Config, seed: int,
              progress: _Progress) -> tuple[dict, dict, dict]:
    try:
        from pyro.infer import MCMC, NUTS

        from uqzoo.nets import pyro_model
    except ImportError as exc:  # an optional extra
        raise ImportError("backend='pyro' needs pyro-ppl: pip install 'uqzoo[pyro]'") from exc
    import torch

    dtype = torch.float64 if cfg.float64 else torch.float32
    float_dtype = np.float64 if cfg.float64 else np.float32
    # Copies: the dataset's arrays are read-only, which torch.as_tensor warns about.
    Xt = torch.tensor(np.array(X, dtype=float_dtype))
    yt = torch.tensor(np.array(y, dtype=np.int64))
    weights = _config.row_weights(cfg.class_weight, y, spec.n_classes)
    wt = None if weights is None else torch.tensor(weights.astype(float_dtype))
    model = pyro_model.bayesian_mlp(sites.as_mlp(spec), cfg.hierarchical, dtype=dtype)

    chain_seeds = np.random.SeedSequence(seed).spawn(cfg.num_chains)
    iterations = cfg.draws_per_chain * cfg.thinning
    z_chains, stat_chains = [], []
    t_start = time.perf_counter()
    # The same starting points as the NumPyro backend's (MAP fits included).
    starts = [z0 for z0, _ in _chain_starts(spec, cfg, seed, X, y)]
    for child, start in zip(chain_seeds, starts, strict=True):
        z0 = {k: torch.as_tensor(v) for k, v in start.items()}
        step_sizes = np.zeros(iterations)
        seen = {"divergences": 0}
        diverging = np.zeros(iterations, dtype=bool)

        def hook(kernel, _samples, stage, i, step_sizes=step_sizes, diverging=diverging,
                 seen=seen):
            progress(1)
            if stage == "Sample":
                step_sizes[i] = kernel.step_size
                diverging[i] = len(kernel._divergences) > seen["divergences"]
                seen["divergences"] = len(kernel._divergences)

        # Pyro samples from torch's global generator: seed it inside fork_rng so
        # the caller's generator is restored afterwards.
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            # The PyTorch JIT warns about traced Python control flow in pyro internals.
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.manual_seed(int(np.random.default_rng(child).integers(2**62)))
            kernel = NUTS(model, target_accept_prob=cfg.target_accept,
                          max_tree_depth=cfg.max_tree_depth, full_mass=cfg.dense_mass,
                          jit_compile=cfg.jit_compile, ignore_jit_warnings=True)
            mcmc = MCMC(kernel, num_samples=iterations, warmup_steps=cfg.num_warmup,
                        num_chains=1, initial_params=z0, disable_progbar=True, hook_fn=hook)
            mcmc.run(Xt, yt, wt)
        samples = mcmc.get_samples()
        keep = slice(cfg.thinning - 1, None, cfg.thinning)
        z_chains.append({k: v.detach().numpy()[keep] for k, v in samples.items()})
        blocks = diverging.reshape(cfg.draws_per_chain, cfg.thinning).any(axis=1)
        stat_chains.append({"diverging": blocks, "step_size": step_sizes[keep]})
    elapsed = time.perf_counter() - t_start
    z = {k: np.stack([c[k] for c in z_chains]) for k in z_chains[0]}
    stats = {k: np.stack([c[k] for c in stat_chains]) for k in stat_chains[0]}
    return z, stats, {"seconds_chains": elapsed}  # pyro times warm-up and sampling together


# -- what a fit will cost, before it starts ------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TimeEstimate:
    """What a NUTS fit should cost on this machine, estimated before it starts.

    A fit's time is (leapfrog steps) × (seconds per step). The second factor
    is measured here, on the data; the first depends on the posterior's
    geometry and is only known while sampling (the progress bar shows it),
    so it is given as an assumed typical value and the worst case.

    Attributes
    ----------
    seconds_per_gradient : float
        Median wall time of one evaluation of the compiled potential energy
        and its gradient on the training data -- one leapfrog step's main
        work -- timed now, on this machine, under its current load.
    iterations_per_chain : int
        Warm-up plus kept draws × thinning.
    rounds : int
        Chains that run one after another: ⌈chains / chains at a time⌉
        (``"vectorized"`` counts every chain: an upper estimate).
    typical_steps : int
        Leapfrog steps per iteration assumed for ``seconds``:
        ``TYPICAL_LEAPFROG_STEPS``, capped by 2**max_tree_depth − 1.
    max_steps : int
        2**max_tree_depth − 1: every tree at the cap.
    seconds, seconds_max : float
        Expected sampling time at ``typical_steps`` and at ``max_steps``
        (the MAP warm start and compilation, seconds each, not included).
    max_tree_depth : int
    """

    seconds_per_gradient: float
    iterations_per_chain: int
    rounds: int
    typical_steps: int
    max_steps: int
    seconds: float
    seconds_max: float
    max_tree_depth: int

    @property
    def long(self) -> bool:
        """Expected to take over ``LONG_FIT_SECONDS`` (at the typical step count)."""
        return self.seconds > LONG_FIT_SECONDS

    def message(self) -> str:
        return (f"hmc: expect about {_format_seconds(self.seconds)} of sampling "
                f"({self.rounds} × {self.iterations_per_chain} NUTS iterations × "
                f"~{self.typical_steps} leapfrog steps × {1e3 * self.seconds_per_gradient:.2f} "
                f"ms per gradient, measured here), up to {_format_seconds(self.seconds_max)} "
                f"if every tree reaches max_tree_depth={self.max_tree_depth}; the progress bar "
                f"shows the real rate. Fewer num_warmup / num_samples, or a lower "
                f"max_tree_depth, shorten it.")


def time_estimate(spec: Model, data, config: Config, *,
                  num_gradients: int = 15) -> TimeEstimate | None:
    """Estimate a NUTS fit's sampling time from a few timed gradient evaluations.

    Parameters
    ----------
    spec : Model
    data : ClassificationData
        Only ``X_train`` and ``y_train`` are used.
    config : Config
    num_gradients : int
        Timed evaluations (after one that compiles); the median is used.

    Returns
    -------
    TimeEstimate, or None for ``backend="pyro"`` (its gradient is torch's,
    not timed here).

    Examples
    --------
    >>> import uqzoo as uz
    >>> from uqzoo.methods import hmc
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=10, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)
    >>> est = hmc.time_estimate(spec, data, hmc.Config(num_samples=1000, num_chains=2))
    >>> est.iterations_per_chain, est.typical_steps, est.max_steps
    (1000, 180, 1023)
    """
    import jax

    if config.backend != "numpyro":
        return None
    float_dtype = np.float64 if config.float64 else np.float32
    chain_method = resolve_chain_method(spec, len(data.X_train), config)
    program = _numpyro_program(spec, config.hierarchical, config.num_warmup,
                               config.target_accept, config.max_tree_depth, config.dense_mass,
                               config.float64, chain_method == "vectorized")
    times = []
    with jax.enable_x64(config.float64):
        X = np.asarray(data.X_train, dtype=float_dtype)
        y = np.asarray(data.y_train, dtype=np.int32)
        # The cost does not depend on the point: any parameter values will do.
        z = sites.params_to_sites(spec, config.hierarchical, spec.init_params(0),
                                    float_dtype)
        jax.block_until_ready(program.gradient(z, X, y))        # compiles
        for _ in range(max(1, int(num_gradients))):
            t0 = time.perf_counter()
            jax.block_until_ready(program.gradient(z, X, y))
            times.append(time.perf_counter() - t0)
    per_gradient = float(np.median(times))
    at_once = 1
    if chain_method == "parallel" and len(_cpu_devices()) > 1:
        at_once = min(config.num_chains, len(_cpu_devices()), engine.default_workers())
    rounds = -(-config.num_chains // at_once)
    iterations = config.num_warmup + config.draws_per_chain * config.thinning
    max_steps = 2**config.max_tree_depth - 1
    typical = min(TYPICAL_LEAPFROG_STEPS, max_steps)
    return TimeEstimate(seconds_per_gradient=per_gradient, iterations_per_chain=iterations,
                        rounds=rounds, typical_steps=typical, max_steps=max_steps,
                        seconds=rounds * iterations * typical * per_gradient,
                        seconds_max=rounds * iterations * max_steps * per_gradient,
                        max_tree_depth=config.max_tree_depth)


# -- fit --------------------------------------------------------------------------------

def fit(spec: Model, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Sample the Bayesian MLP's posterior with NUTS.

    ``seed`` seeds the chain starting points and NUTS's randomness. The other arguments are
    the :class:`uqzoo.methods.Method` protocol's; the fit uses ``data``'s training split.

    Returns
    -------
    Posterior
        ``draws`` of shape (num_samples, *param_shape) with
        ``sample_shape = (num_chains, num_samples / num_chains)``; ``sample_stats`` per draw
        (see the module docstring); ``diagnostics`` with R-hat / ESS arrays
        (``rhat_predictive`` of shape (num_diagnostic_points, K'), K' = 1 for
        two classes, else K; ``rhat_layer_norm`` of shape (n_layers,); ...),
        divergence counts, timings and, for NumPyro, the leapfrog steps
        (gradient evaluations) of warm-up and sampling summed over chains
        (``leapfrog_steps_warmup``, ``leapfrog_steps_sampling``).

    Warns
    -----
    ConvergenceWarning
        On divergent transitions or predictive R-hat above 1.01; the
        posterior is then ``converged=False`` and carries the message.

    Examples
    --------
    >>> import uqzoo as uz                                            # doctest: +SKIP
    >>> post = uz.fit("hmc", spec, data, seed=0, num_samples=500)     # doctest: +SKIP
    >>> post.diagnostics["rhat_predictive"].max() < 1.01              # doctest: +SKIP
    True
    """
    _check_model(spec, config)
    X, y = np.asarray(data.X_train), np.asarray(data.y_train)
    iterations = config.num_chains * (config.num_warmup
                                      + config.draws_per_chain * config.thinning)
    rotation = _input_rotation(X) if config.rotate_inputs else None
    X_fit = X if rotation is None else np.asarray(X, dtype=np.float64) @ rotation
    progress = _Progress(iterations, progress_bar, f"hmc ({config.backend})")
    try:
        if config.backend == "numpyro":
            z, stats, timings = _run_numpyro(spec, X_fit, y, config, seed, progress)
        else:
            z, stats, timings = _run_pyro(spec, X_fit, y, config, seed, progress)
    finally:
        progress.close()
    if rotation is not None:
        site = sites.first_layer_site(config.hierarchical)
        z[site] = np.asarray(z[site], dtype=np.float64) @ rotation.T   # W = W̃ Vᵀ
    chains, draws_per_chain = config.num_chains, config.draws_per_chain
    params, scales = sites.sites_to_params(spec, config.hierarchical, z)
    flat = {k: v.reshape((chains * draws_per_chain, *v.shape[2:])).astype(np.float32)
            for k, v in params.items()}
    if scales is not None:
        stats["layer_scale"] = scales.astype(np.float32)

    diagnostics = _convergence_diagnostics(spec, flat, stats, X, config, seed)
    diagnostics.update(timings)
    convergence = _convergence(diagnostics, config, chains * draws_per_chain)
    for message in convergence.messages:
        warnings.warn(message, ConvergenceWarning, stacklevel=3)
    return Posterior(spec=spec, method="hmc", config=config_dict(config), seed=seed,
                     draws=flat, sample_shape=(chains, draws_per_chain), sample_stats=stats,
                     diagnostics=diagnostics, converged=bool(convergence.converged),
                     warnings=convergence.messages)


def _check_model(model: Model, config: Config) -> None:
    """The options written for the MLP's layout refuse any other model, by name."""
    if isinstance(model, MLPSpec):
        return
    for option, on, why in (
            ("backend", config.backend == "pyro", "backend='pyro' (the Pyro model is the MLP's)"),
            ("hierarchical", config.hierarchical,
             "hierarchical=True (per-layer scales of the MLP's weights)"),
            ("rotate_inputs", config.rotate_inputs,
             "rotate_inputs=True (rotates the MLP's first-layer weights)")):
        if on:
            raise unsupported("hmc", model, f"uqzoo.MLPSpec for {why}",
                              f"leave {option} at its default for this model")


def _convergence_diagnostics(spec: Model, draws: dict[str, np.ndarray], stats: dict,
                             X: np.ndarray, cfg: Config, seed: int) -> dict[str, Any]:
    chains, per_chain = cfg.num_chains, cfg.draws_per_chain
    idx = _diagnostics.predictive_points(seed, X.shape[0], cfg.num_diagnostic_points)
    proba = engine.proba_draws(spec, draws, X[idx])                   # (S, n, K)
    if spec.n_classes == 2:
        proba = proba[..., 1:]
    out: dict[str, Any] = {"predictive_points": idx}
    norms = _diagnostics.layer_norms(spec, draws)
    for name, values in (("predictive", proba), ("layer_norm", norms)):
        summary = _diagnostics.rhat_ess(values.reshape((chains, per_chain, *values.shape[1:])))
        for stat, arr in summary.items():
            out[f"{stat}_{name}"] = arr
    if "lp" in stats:
        summary = _diagnostics.rhat_ess(stats["lp"])
        for stat, arr in summary.items():
            out[f"{stat}_lp"] = float(arr)
    out["num_divergent"] = int(np.asarray(stats["diverging"]).sum())
    if "acceptance_rate" in stats:
        out["mean_acceptance_rate"] = float(np.mean(stats["acceptance_rate"]))
    if "tree_depth" in stats:
        out["num_max_tree_depth"] = int((stats["tree_depth"] >= cfg.max_tree_depth).sum())
    return out


def _convergence(diagnostics: dict, cfg: Config, num_draws: int) -> _diagnostics.Convergence:
    """The gate: no divergent transition, and predictive R-hat computed and ≤ 1.01."""
    messages = []
    n_div = diagnostics["num_divergent"]
    if n_div:
        messages.append(
            f"hmc: {n_div} of {num_draws} post-warm-up transitions diverged, so the "
            f"sampler missed part of the posterior; raise target_accept (now "
            f"{cfg.target_accept}) or the warm-up, or try hierarchical=False/True.")
    rhat = np.asarray(diagnostics["rhat_predictive"])
    if np.all(np.isnan(rhat)):
        messages.append(
            f"hmc: R-hat could not be computed ({cfg.draws_per_chain} draws per chain; at "
            f"least 4 are needed, or the predictive probabilities are constant), so "
            f"convergence is unchecked.")
    elif np.nanmax(rhat) > _diagnostics.RHAT_THRESHOLD:
        messages.append(
            f"hmc: split R-hat of the predictive probability at "
            f"{rhat.shape[0]} diagnostic training points reaches {np.nanmax(rhat):.3f} "
            f"(> {_diagnostics.RHAT_THRESHOLD}): the {cfg.num_chains} chains disagree; run "
            f"longer (num_warmup={cfg.num_warmup}, num_samples={cfg.num_samples}).")
    return _diagnostics.Convergence(not messages, tuple(messages))
