"""``hmc``: the No-U-Turn sampler on the Bayesian MLP -- the reference posterior.

Model: every weight and bias ~ N(0, prior_scale²) (``spec.prior_scale``), or,
with ``hierarchical=True``, layer i's weights and biases ~ N(0, τ_i²) with
τ_i ~ HalfNormal(prior_scale), written non-centred (w = τ_i · z, z ~ N(0, 1))
because the centred form gives NUTS a funnel. Likelihood: Bernoulli on one
logit for two classes, categorical on K logits otherwise.

NumPyro is the default backend. uqzoo drives NumPyro's NUTS kernel
(``numpyro.infer.hmc.hmc``) itself rather than through ``numpyro.infer.MCMC``:

- the compiled warm-up and sampling programs are cached per (spec, settings),
  so a second fit of the same network on data of the same size compiles
  nothing;
- chains run in parallel threads, one per JAX CPU device (XLA releases the
  GIL while it computes, but JAX runs one computation at a time on a CPU
  device). JAX has one CPU device unless the program asks for more before
  JAX starts, ``jax.config.update("jax_num_cpu_devices", n)`` -- a
  process-wide setting a library must not make on its user's behalf -- so by
  default "parallel" chains run one after another. Each chain runs the same
  compiled program either way;
- sampling runs in short compiled segments, so a progress bar costs nothing.
  The kernel is NumPyro's own, adaptation included: from the same starting
  state and key the chain equals ``numpyro.infer.MCMC``'s (tested), and the
  defaults (target 0.8, tree depth 10, diagonal mass, U(-2, 2) start) are
  NumPyro's.

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
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from uqzoo import predictive as engine
from uqzoo._validation import _show
from uqzoo.errors import ConvergenceWarning, InvalidInputError, InvalidTypeError
from uqzoo.methods import _diagnostics
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
from uqzoo.posterior import Posterior
from uqzoo.spec import MLPSpec

__all__ = ["BACKENDS", "CHAIN_METHODS", "INITS", "Config", "fit"]

BACKENDS = ("numpyro", "pyro")
CHAIN_METHODS = ("parallel", "sequential", "vectorized")
INITS = ("uniform", "prior", "torch")

# Iterations per compiled call: long enough that Python's per-call overhead
# (~0.1 ms) vanishes against even a tiny network's NUTS step, short enough
# that the progress bar moves. One size for every call, so one compilation.
_SEGMENT = 50
# NumPyro's default init_to_uniform radius, on the unconstrained scale.
_UNIFORM_RADIUS = 2.0


def check_bool(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidTypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


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
    init : {"uniform", "prior", "torch"}
        Chain initialisation: ``"uniform"`` U(-2, 2) on the unconstrained
        scale (NumPyro's default), ``"prior"`` a draw from the prior,
        ``"torch"`` torch ``nn.Linear``'s default init (small weights).
    hierarchical : bool
        Per-layer scales τ_i ~ HalfNormal(prior_scale) (non-centred).
        Their draws are in ``sample_stats["layer_scale"]``.
    float64 : bool
        Sample in double precision. NumPyro: JAX's x64 mode is switched on
        inside the fit only (``jax.enable_x64`` context), never globally.
        Draws are stored as float32 like every method's.
    backend : {"numpyro", "pyro"}
    chain_method : {"parallel", "sequential", "vectorized"}
        NumPyro only. ``"parallel"`` runs chains in threads, as many at a
        time as there are JAX CPU devices and cores: call
        ``jax.config.update("jax_num_cpu_devices", os.cpu_count())`` at the
        start of the program for that, since with JAX's default single CPU
        device they run one after another; ``"sequential"`` one after another;
        ``"vectorized"`` all in one ``vmap``-ed program (each iteration lasts
        as long as the slowest chain's tree). The same seed, settings and
        ``chain_method`` give bit-identical draws on the same machine. Across
        chain methods the chains start identically and sample the same
        posterior, but are not promised to be identical: "parallel" and
        "sequential" agree exactly where XLA rounds alike in every thread,
        ``vmap`` reorders float operations, and the chaotic Hamiltonian
        dynamics amplify any rounding difference.
    jit_compile : bool
        Pyro only: trace the potential energy with the PyTorch JIT.
    num_diagnostic_points : int
        Training points whose predictive probability gets R-hat and ESS.
    """

    num_warmup: int = 500
    num_samples: int = 4000
    num_chains: int = 4
    thinning: int = 1
    target_accept: float = 0.8
    max_tree_depth: int = 10
    dense_mass: bool = False
    init: str = "uniform"
    hierarchical: bool = False
    float64: bool = False
    backend: str = "numpyro"
    chain_method: str = "parallel"
    jit_compile: bool = True
    num_diagnostic_points: int = 10

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
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
        set_("hierarchical", check_bool(self.hierarchical, "hierarchical"))
        set_("float64", check_bool(self.float64, "float64"))
        set_("backend", check_choice(self.backend, "backend", BACKENDS))
        set_("chain_method", check_choice(self.chain_method, "chain_method", CHAIN_METHODS))
        set_("jit_compile", check_bool(self.jit_compile, "jit_compile"))
        set_("num_diagnostic_points", check_int(self.num_diagnostic_points,
                                                "num_diagnostic_points", minimum=1))

    @property
    def draws_per_chain(self) -> int:
        """Draws each chain keeps: ``num_samples / num_chains``."""
        return self.num_samples // self.num_chains


# -- the model, in both backends --------------------------------------------------------

def _site_shapes(spec: MLPSpec, hierarchical: bool) -> dict[str, tuple[int, ...]]:
    """Latent sites and their shapes, all on the unconstrained (real) scale."""
    out: dict[str, tuple[int, ...]] = {}
    for key, shape in spec.param_shapes().items():
        layer = int(key.split(".")[1])
        if hierarchical and key.endswith(".weight"):
            out[f"layer_scale.{layer}"] = ()
        out[key + ("_std" if hierarchical else "")] = shape
    return out


def _to_layout(spec: MLPSpec, hierarchical: bool,
               z: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Unconstrained draws (leading axes kept) to the shared layout, and the scales τ.

    HalfNormal's support is the positive reals, which NumPyro and Pyro both
    map to the real line with exp; so τ = exp(site value).
    """
    if not hierarchical:
        return {k: np.asarray(z[k]) for k in spec.param_shapes()}, None
    scales = np.stack([np.exp(np.asarray(z[f"layer_scale.{i}"], dtype=np.float64))
                       for i in range(spec.n_layers)], axis=-1)
    params = {}
    for key, shape in spec.param_shapes().items():
        layer = int(key.split(".")[1])
        tau = scales[..., layer].reshape(scales.shape[:-1] + (1,) * len(shape))
        params[key] = (tau * np.asarray(z[key + "_std"], dtype=np.float64))
    return params, scales


def _numpyro_model(spec: MLPSpec, hierarchical: bool):
    import numpyro
    import numpyro.distributions as dist

    from uqzoo.nets.jax import log_likelihood

    shapes = spec.param_shapes()

    def model(X, y):
        params = {}
        scale = spec.prior_scale
        for key, shape in shapes.items():
            layer = int(key.split(".")[1])
            if hierarchical:
                if key.endswith(".weight"):
                    scale = numpyro.sample(f"layer_scale.{layer}",
                                           dist.HalfNormal(spec.prior_scale))
                std = numpyro.sample(key + "_std",
                                     dist.Normal(0.0, 1.0).expand(shape).to_event(len(shape)))
                params[key] = scale * std
            else:
                params[key] = numpyro.sample(
                    key, dist.Normal(0.0, scale).expand(shape).to_event(len(shape)))
        numpyro.factor("log_likelihood", log_likelihood(spec, params, X, y))

    return model


def _initial_values(spec: MLPSpec, cfg: Config, rng: np.random.Generator,
                    dtype) -> dict[str, np.ndarray]:
    """One chain's starting point on the unconstrained scale."""
    sites = _site_shapes(spec, cfg.hierarchical)
    if cfg.init == "uniform":
        return {k: rng.uniform(-_UNIFORM_RADIUS, _UNIFORM_RADIUS, size=s).astype(dtype)
                for k, s in sites.items()}
    if cfg.init == "prior":
        out = {}
        for k, s in sites.items():
            if k.startswith("layer_scale."):
                out[k] = np.log(np.abs(rng.normal(0.0, spec.prior_scale, size=s))).astype(dtype)
            else:
                scale = 1.0 if cfg.hierarchical else spec.prior_scale
                out[k] = rng.normal(0.0, scale, size=s).astype(dtype)
        return out
    params = spec.init_params(int(rng.integers(2**63)))
    if not cfg.hierarchical:
        return {k: v.astype(dtype) for k, v in params.items()}
    out = {}
    for k in sites:
        if k.startswith("layer_scale."):
            out[k] = np.asarray(math.log(spec.prior_scale), dtype=dtype)
        else:
            out[k] = (params[k[:-len("_std")]] / spec.prior_scale).astype(dtype)
    return out


# -- NumPyro: compiled programs, cached ---------------------------------------------------

class _Program(NamedTuple):
    init: Any        # (z0, key, X, y) -> HMCState
    segment: Any     # (state, n, X, y, *, thinning) -> (state, buffers)


@functools.lru_cache(maxsize=16)
def _numpyro_program(spec: MLPSpec, hierarchical: bool, num_warmup: int, target_accept: float,
                     max_tree_depth: int, dense_mass: bool, float64: bool,
                     vectorized: bool) -> _Program:
    """Jitted init and segment functions for one model and sampler setting.

    NumPyro's ``hmc()`` keeps the sampler settings in closure variables set by
    ``init_kernel``; caching the pair per setting keeps them consistent.

    Warm-up and sampling run the same ``segment`` program: NumPyro's kernel
    itself switches adaptation off once the state's iteration counter reaches
    ``num_warmup``, so one compiled NUTS kernel serves both phases (a separate
    warm-up program cost a second compilation of the whole tree builder, ~3 s
    of a ~100 s fit of the 50-10-10-1 benchmark network). Driven this way the
    chain is bit-identical to ``numpyro.infer.MCMC`` started from the same
    state (``tests/methods/test_hmc.py``).
    """
    import jax
    import jax.numpy as jnp
    from jax import lax
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import initialize_model

    model = _numpyro_model(spec, hierarchical)
    float_dtype = np.float64 if float64 else np.float32
    with jax.enable_x64(float64):
        dummy = (jnp.zeros((2, spec.in_features), float_dtype), jnp.zeros((2,), jnp.int32))
        _, potential_fn_gen, _, _ = initialize_model(jax.random.key(0), model,
                                                     dynamic_args=True, model_args=dummy)
    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_fn_gen, algo="NUTS")

    def init(z0, key, X, y):
        return init_kernel(z0, num_warmup, dense_mass=dense_mass,
                           target_accept_prob=target_accept, max_tree_depth=max_tree_depth,
                           model_args=(X, y), rng_key=key)

    def segment(state, n, X, y, thinning):
        """Run n kept iterations (n ≤ _SEGMENT), each the last of ``thinning``."""
        def record(s, diverging, leapfrog):
            return {"z": s.z, "diverging": diverging, "acceptance_rate": s.accept_prob,
                    "n_steps": s.num_steps, "step_size": s.adapt_state.step_size,
                    "energy": s.energy, "lp": -s.potential_energy, "leapfrog": leapfrog}

        def thinned(_, carry):
            s, diverging, leapfrog = carry
            s = sample_kernel(s, model_args=(X, y))
            return s, diverging | s.diverging, leapfrog + s.num_steps

        # Leapfrog counts take num_steps' integer type (int64 under x64).
        no_steps = jnp.zeros_like(state.num_steps)
        probe = record(state, jnp.zeros((), bool), no_steps)
        buffers = jax.tree.map(lambda a: jnp.zeros((_SEGMENT, *jnp.shape(a)),
                                                   jnp.result_type(a)), probe)

        def body(i, carry):
            s, buf = carry
            s, diverging, leapfrog = lax.fori_loop(
                0, thinning, thinned, (s, jnp.zeros((), bool), no_steps))
            buf = jax.tree.map(lambda b, v: b.at[i].set(v), buf, record(s, diverging, leapfrog))
            return s, buf
        return lax.fori_loop(0, n, body, (state, buffers))

    if vectorized:
        init = jax.vmap(init, in_axes=(0, 0, None, None))
        segment_one = segment

        def segment(state, n, X, y, thinning):
            return jax.vmap(functools.partial(segment_one, thinning=thinning),
                            in_axes=(0, None, None, None))(state, n, X, y)
    return _Program(jax.jit(init), jax.jit(segment, static_argnames=("thinning",)))


class _Progress:
    """A thread-safe tqdm counter of NUTS iterations (or a no-op)."""

    def __init__(self, total: int, enabled: bool, desc: str):
        self._bar = None
        self._lock = threading.Lock()
        if enabled:
            from tqdm.auto import tqdm
            self._bar = tqdm(total=total, desc=desc, unit="it")

    def __call__(self, n: int) -> None:
        if self._bar is not None:
            with self._lock:
                self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _chunks(total: int) -> list[int]:
    return [min(_SEGMENT, total - start) for start in range(0, total, _SEGMENT)]


def _chain_starts(spec: MLPSpec, cfg: Config, seed: int
                  ) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    """Each chain's starting point (unconstrained) and NUTS key data (uint32 (2,)).

    Each chain's key and starting point derive from its own child seed, so a
    chain's draws do not depend on how many chains run or how.
    """
    float_dtype = np.float64 if cfg.float64 else np.float32
    starts = []
    for child in np.random.SeedSequence(seed).spawn(cfg.num_chains):
        key_data = np.random.default_rng(child).integers(0, 2**32, size=2, dtype=np.uint32)
        z0 = _initial_values(spec, cfg, np.random.default_rng(child.spawn(1)[0]), float_dtype)
        starts.append((z0, key_data))
    return starts


def _cpu_devices() -> list:
    """JAX's CPU devices: one unless the user asked for more before JAX started
    (``jax.config.update("jax_num_cpu_devices", n)``)."""
    import jax

    return jax.devices("cpu")


def _run_numpyro(spec: MLPSpec, X: np.ndarray, y: np.ndarray, cfg: Config, seed: int,
                 progress: _Progress) -> tuple[dict, dict, dict]:
    import jax

    float_dtype = np.float64 if cfg.float64 else np.float32
    vectorized = cfg.chain_method == "vectorized"
    program = _numpyro_program(spec, cfg.hierarchical, cfg.num_warmup, cfg.target_accept,
                               cfg.max_tree_depth, cfg.dense_mass, cfg.float64, vectorized)
    inits, keys = zip(*_chain_starts(spec, cfg, seed), strict=True)
    X = X.astype(float_dtype)
    y = y.astype(np.int32)

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
            Xd, yd = X, y
            if device is not None:
                z0, key, Xd, yd = jax.device_put((z0, key, X, y), device)
            t0 = time.perf_counter()
            state = program.init(z0, key, Xd, yd)
            for n in _chunks(cfg.num_warmup):
                state, buf = program.segment(state, n, Xd, yd, thinning=1)
                warm = collect(buf, n)
                counts["divergent_warmup"] += warm["diverging"].sum(axis=-1, dtype=np.int64)
                counts["leapfrog_steps_warmup"] += warm["leapfrog"].sum(axis=-1, dtype=np.int64)
                progress(n * per_chain)
            t1 = time.perf_counter()
            pieces = []
            for n in _chunks(cfg.draws_per_chain):
                state, buf = program.segment(state, n, Xd, yd, thinning=cfg.thinning)
                pieces.append(collect(buf, n))
                progress(n * cfg.thinning * per_chain)
            t2 = time.perf_counter()
        axis = 1 if vectorized else 0
        out = jax.tree.map(lambda *p: np.concatenate(p, axis=axis), *pieces)
        counts["leapfrog_steps_sampling"] = out.pop("leapfrog").sum(axis=-1, dtype=np.int64)
        return out, counts, (t1 - t0, t2 - t1)

    if vectorized:
        z0 = {k: np.stack([z[k] for z in inits]) for k in inits[0]}
        out, counts, seconds = run(z0, np.stack(keys))
        counts = {k: np.broadcast_to(np.asarray(v), (cfg.num_chains,))
                  for k, v in counts.items()}
        results = [(jax.tree.map(lambda a, c=c: a[c], out), {k: v[c] for k, v in counts.items()},
                    seconds) for c in range(cfg.num_chains)]
    elif cfg.chain_method == "parallel" and cfg.num_chains > 1 and len(_cpu_devices()) > 1:
        # JAX runs one computation at a time on each CPU device (measured with
        # jax 0.10: two threads on JAX's single default CPU device took as
        # long as one after the other), so chains run in parallel only on
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
    return z, stats, extra


# -- Pyro -------------------------------------------------------------------------------

def _run_pyro(spec: MLPSpec, X: np.ndarray, y: np.ndarray, cfg: Config, seed: int,
              progress: _Progress) -> tuple[dict, dict, dict]:
    try:
        import pyro
        import pyro.distributions as pdist
        from pyro.infer import MCMC, NUTS
    except ImportError as exc:  # an optional extra
        raise ImportError("backend='pyro' needs pyro-ppl: pip install 'uqzoo[pyro]'") from exc
    import torch

    from uqzoo.nets import torch as tnet

    dtype = torch.float64 if cfg.float64 else torch.float32
    float_dtype = np.float64 if cfg.float64 else np.float32
    # Copies: the dataset's arrays are read-only, which torch.as_tensor warns about.
    Xt = torch.tensor(np.array(X, dtype=float_dtype))
    yt = torch.tensor(np.array(y, dtype=np.int64))
    shapes = spec.param_shapes()

    def model(X, y):
        params = {}
        scale = torch.tensor(spec.prior_scale, dtype=dtype)
        for key, shape in shapes.items():
            layer = int(key.split(".")[1])
            if cfg.hierarchical:
                if key.endswith(".weight"):
                    scale = pyro.sample(f"layer_scale.{layer}",
                                        pdist.HalfNormal(torch.tensor(spec.prior_scale,
                                                                      dtype=dtype)))
                std = pyro.sample(key + "_std", pdist.Normal(torch.zeros((), dtype=dtype), 1.0)
                                  .expand(shape).to_event(len(shape)))
                params[key] = scale * std
            else:
                params[key] = pyro.sample(key, pdist.Normal(torch.zeros((), dtype=dtype), scale)
                                          .expand(shape).to_event(len(shape)))
        logits = tnet.forward_logits(spec, params, X)
        if spec.n_classes == 2:
            z = logits[..., 0]
            loglik = -torch.nn.functional.softplus(torch.where(y == 1, -z, z)).sum()
        else:
            loglik = torch.log_softmax(logits, -1).gather(-1, y[:, None]).sum()
        pyro.factor("log_likelihood", loglik)

    chain_seeds = np.random.SeedSequence(seed).spawn(cfg.num_chains)
    iterations = cfg.draws_per_chain * cfg.thinning
    z_chains, stat_chains = [], []
    t_start = time.perf_counter()
    for child in chain_seeds:
        rng = np.random.default_rng(child.spawn(1)[0])
        start = _initial_values(spec, cfg, rng, float_dtype)
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
            mcmc.run(Xt, yt)
        samples = mcmc.get_samples()
        keep = slice(cfg.thinning - 1, None, cfg.thinning)
        z_chains.append({k: v.detach().numpy()[keep] for k, v in samples.items()})
        blocks = diverging.reshape(cfg.draws_per_chain, cfg.thinning).any(axis=1)
        stat_chains.append({"diverging": blocks, "step_size": step_sizes[keep]})
    elapsed = time.perf_counter() - t_start
    z = {k: np.stack([c[k] for c in z_chains]) for k in z_chains[0]}
    stats = {k: np.stack([c[k] for c in stat_chains]) for k in stat_chains[0]}
    return z, stats, {"seconds_chains": elapsed}  # pyro times warm-up and sampling together


# -- fit --------------------------------------------------------------------------------

def fit(spec: MLPSpec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Sample the Bayesian MLP's posterior with NUTS.

    Parameters
    ----------
    spec : MLPSpec
    data : ClassificationData
        Only ``X_train`` and ``y_train`` are used.
    config : Config
    seed : int
        Chain starting points and NUTS randomness derive from it.
    progress_bar : bool

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
    X, y = np.asarray(data.X_train), np.asarray(data.y_train)
    iterations = config.num_chains * (config.num_warmup
                                      + config.draws_per_chain * config.thinning)
    progress = _Progress(iterations, progress_bar, f"hmc ({config.backend})")
    try:
        if config.backend == "numpyro":
            z, stats, timings = _run_numpyro(spec, X, y, config, seed, progress)
        else:
            z, stats, timings = _run_pyro(spec, X, y, config, seed, progress)
    finally:
        progress.close()
    chains, draws_per_chain = config.num_chains, config.draws_per_chain
    params, scales = _to_layout(spec, config.hierarchical, z)
    flat = {k: v.reshape((chains * draws_per_chain, *v.shape[2:])).astype(np.float32)
            for k, v in params.items()}
    if scales is not None:
        stats["layer_scale"] = scales.astype(np.float32)

    diagnostics = _convergence_diagnostics(spec, flat, stats, X, config, seed)
    diagnostics.update(timings)
    messages = _convergence_messages(diagnostics, config, chains * draws_per_chain)
    for message in messages:
        warnings.warn(message, ConvergenceWarning, stacklevel=3)
    return Posterior(spec=spec, method="hmc", config=config_dict(config), seed=seed,
                     draws=flat, sample_shape=(chains, draws_per_chain), sample_stats=stats,
                     diagnostics=diagnostics, converged=not messages,
                     warnings=tuple(messages))


def _convergence_diagnostics(spec: MLPSpec, draws: dict[str, np.ndarray], stats: dict,
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


def _convergence_messages(diagnostics: dict, cfg: Config, num_draws: int) -> list[str]:
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
    return messages
