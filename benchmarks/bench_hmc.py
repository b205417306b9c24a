"""NUTS on a 50-10-10-1 network, n = 2000: uqzoo vs plain NumPyro vs Pyro, side by side.

Measures, in one process:

- ``plain``: a hand-written NumPyro NUTS script of the same model (one chain,
  ``numpyro.infer.MCMC``), the baseline users would write themselves;
- ``uqzoo1``: ``uz.fit("hmc", ..., num_chains=1)`` with the same settings;
- ``uqzoo4``: uqzoo's default, 4 chains in parallel threads;
- ``seq4``: the same 4 chains one after another (``chain_method="sequential"``);
- ``pyro``: Pyro NUTS with ``jit_compile=True`` (fewer iterations by default:
  it is ~4× slower; ESS/s is a rate, so it stays comparable);
- ``coverage``: sim-teacher (p = 5, 2×10 network, n_train = 1000) coverage of
  the true probability by NUTS's 80 % and 95 % equal-tailed intervals.

ESS/s = median over 10 test points of the bulk ESS (ArviZ) of the posterior
predictive probability, divided by the wall time of the whole fit including
compilation (each part starts from empty compilation caches).

Run: ``python benchmarks/bench_hmc.py [--parts plain,uqzoo1,uqzoo4,seq4,pyro,coverage]``
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import uqzoo as uz
from uqzoo.methods import _diagnostics, hmc


def problem(seed=0):
    data = uz.datasets.load("sim-teacher", p=50, n_train=2000, n_test=10, seed=seed)
    return data, uz.MLPSpec(50, 2, hidden=(10, 10))


def ess_per_second(spec, draws_by_chain, X_test, seconds):
    """draws_by_chain: dict of (chains, draws, *shape) arrays."""
    chains, per_chain = next(iter(draws_by_chain.values())).shape[:2]
    flat = {k: v.reshape((chains * per_chain,) + v.shape[2:]) for k, v in draws_by_chain.items()}
    proba = uz.predict_proba_draws(spec, flat, X_test)[..., 1]
    ess = _diagnostics.rhat_ess(proba.reshape(chains, per_chain, -1))["ess_bulk"]
    return float(np.median(ess)), float(np.median(ess)) / seconds


def run_plain(data, spec, num_warmup, num_samples, seed):
    """What a user writes by hand: the model in NumPyro, one chain, MCMC.run."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    def model(X, y):
        h = X
        sizes = (50, 10, 10, 1)
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = numpyro.sample(f"w{i}", dist.Normal(0, 1).expand((b, a)).to_event(2))
            c = numpyro.sample(f"b{i}", dist.Normal(0, 1).expand((b,)).to_event(1))
            h = h @ w.T + c
            if i < 2:
                h = jnp.tanh(h)
        numpyro.sample("y", dist.Bernoulli(logits=h[:, 0]), obs=y)

    t0 = time.perf_counter()
    mcmc = MCMC(NUTS(model), num_warmup=num_warmup, num_samples=num_samples, num_chains=1,
                progress_bar=False)
    mcmc.run(jax.random.key(seed), jnp.asarray(data.X_train), jnp.asarray(data.y_train))
    samples = mcmc.get_samples(group_by_chain=True)
    jax.block_until_ready(samples)
    seconds = time.perf_counter() - t0
    draws = {}
    for i in range(3):
        draws[f"layers.{i}.weight"] = np.asarray(samples[f"w{i}"])
        draws[f"layers.{i}.bias"] = np.asarray(samples[f"b{i}"])
    return draws, seconds


def run_uqzoo(data, spec, seed, **config):
    hmc._numpyro_program.cache_clear()       # pay compilation, like the plain script
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=seed, progress_bar=False, **config)
    seconds = time.perf_counter() - t0
    chains, per_chain = post.sample_shape
    draws = {k: v.reshape((chains, per_chain) + v.shape[1:]) for k, v in post.draws.items()}
    return draws, seconds, post, [str(w.message) for w in caught]


def coverage(seed=0):
    data = uz.datasets.load("sim-teacher", seed=seed)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(10, 10))
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=seed, progress_bar=False)
    seconds = time.perf_counter() - t0
    summary = post.summarize(np.array(data.X_test), levels=(0.8, 0.95))
    truth = data.p_true_test[:, 1]
    out = {"seconds": seconds, "n_test": data.n_test,
           "max_rhat_predictive": float(np.nanmax(post.diagnostics["rhat_predictive"])),
           "num_divergent": post.diagnostics["num_divergent"],
           "warnings": [str(w.message) for w in caught]}
    for level in (0.8, 0.95):
        lo, hi = summary.interval(level)
        covered = (lo[:, 1] <= truth) & (truth <= hi[:, 1])
        out[f"coverage_{level}"] = float(covered.mean())
        out[f"mean_width_{level}"] = float((hi[:, 1] - lo[:, 1]).mean())
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", default="plain,uqzoo1,uqzoo4,seq4,pyro,coverage")
    parser.add_argument("--num-warmup", type=int, default=500)
    parser.add_argument("--num-samples", type=int, default=1000)
    parser.add_argument("--pyro-warmup", type=int, default=100)
    parser.add_argument("--pyro-samples", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    parts = args.parts.split(",")
    data, spec = problem()
    X_test = np.array(data.X_test)
    settings = dict(num_warmup=args.num_warmup, num_samples=args.num_samples)
    results = {}

    def report(name, draws, seconds, extra=None):
        ess, rate = ess_per_second(spec, draws, X_test, seconds)
        results[name] = {"seconds": round(seconds, 1), "median_bulk_ess": round(ess, 1),
                         "ess_per_second": round(rate, 3), **(extra or {})}
        print(name, results[name], flush=True)

    if "plain" in parts:
        draws, seconds = run_plain(data, spec, seed=0, **settings)
        report("plain_numpyro_1chain", draws, seconds)
    if "uqzoo1" in parts:
        draws, seconds, _, msgs = run_uqzoo(data, spec, 0, num_chains=1, **settings)
        report("uqzoo_hmc_1chain", draws, seconds, {"warnings": len(msgs)})
    if "uqzoo4" in parts:
        draws, seconds, post, msgs = run_uqzoo(data, spec, 0, **settings)
        report("uqzoo_hmc_4chains_parallel", draws, seconds, {"warnings": len(msgs)})
    if "seq4" in parts:
        draws, seconds, post, msgs = run_uqzoo(data, spec, 0, chain_method="sequential",
                                               **settings)
        report("uqzoo_hmc_4chains_sequential", draws, seconds, {"warnings": len(msgs)})
    if "vec4" in parts:
        draws, seconds, post, msgs = run_uqzoo(data, spec, 0, chain_method="vectorized",
                                               **settings)
        report("uqzoo_hmc_4chains_vectorized", draws, seconds, {"warnings": len(msgs)})
    if "pyro" in parts:
        draws, seconds, post, msgs = run_uqzoo(
            data, spec, 0, backend="pyro", jit_compile=True, num_chains=1,
            num_warmup=args.pyro_warmup, num_samples=args.pyro_samples)
        report("pyro_jit_1chain", draws, seconds,
               {"num_warmup": args.pyro_warmup, "num_samples": args.pyro_samples})
    if "coverage" in parts:
        results["sim_teacher_coverage"] = coverage()
        print("sim_teacher_coverage", results["sim_teacher_coverage"], flush=True)

    r = results
    if "plain_numpyro_1chain" in r:
        base = r["plain_numpyro_1chain"]["ess_per_second"]
        for name, target in (("uqzoo_hmc_1chain", 0.9), ("uqzoo_hmc_4chains_parallel", 1.7),
                             ("pyro_jit_1chain", None)):
            if name in r:
                print(f"{name}: {r[name]['ess_per_second'] / base:.2f}× plain NumPyro ESS/s"
                      + (f" (target ≥ {target})" if target else ""))
    if "pyro_jit_1chain" in r and "uqzoo_hmc_1chain" in r:
        print(f"uqzoo 1 chain vs Pyro jit: "
              f"{r['uqzoo_hmc_1chain']['ess_per_second'] / r['pyro_jit_1chain']['ess_per_second']:.2f}× "
              f"(target ≥ 3)")
    if "uqzoo_hmc_4chains_parallel" in r and "uqzoo_hmc_4chains_sequential" in r:
        ratio = r["uqzoo_hmc_4chains_parallel"]["seconds"] / r["uqzoo_hmc_4chains_sequential"]["seconds"]
        print(f"4 chains parallel / sequential wall time: {ratio:.2f} (target ≤ 0.65)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
