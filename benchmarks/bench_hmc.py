"""NUTS on a small tanh network: uqzoo vs plain NumPyro, over several seeds.

Problems (``--problem``): ``p50``, sim-teacher p = 50, n_train 2000, a
50-10-10-1 network; ``teacher2``, issue 22's sim-teacher p = 2, n_train
1000, data seed 1, 2-10-10-1 (151 parameters). Both under the iid N(0, 1)
prior on every weight and bias, the plain script's.

Arms, run interleaved seed by seed in one process (the arm order rotates
with the seed, so a change of machine load falls on every arm alike):

- ``plain``: a hand-written NumPyro NUTS script of the same model (one chain,
  ``numpyro.infer.MCMC``), the baseline users would write themselves;
- ``plainvec``: the same script with 4 chains, ``chain_method="vectorized"``,
  NumPyro's fastest configuration on one CPU device;
- ``uqzoo1``: ``uz.fit("hmc", ..., num_chains=1)`` with the same settings;
- ``uqzoo4``: uqzoo's default, 4 chains, ``chain_method="auto"`` (vectorized
  on one JAX CPU device for these networks, parallel with several: the chosen
  method is in each row);
- ``par4``: the same 4 chains ``chain_method="parallel"``;
- ``seq4``: the same 4 chains one after another (``chain_method="sequential"``);
- ``vec4``: the same 4 chains ``vmap``-ed (``chain_method="vectorized"``);
- ``pyro``: Pyro NUTS with ``jit_compile=True`` (fewer iterations by default:
  it is ~4× slower; ESS/s is a rate, so it stays comparable).

``--coverage`` adds the sim-teacher (p = 5, 2×10 network, n_train = 1000)
coverage of the true probability by NUTS's 80 % and 95 % intervals.

Equal work (STYLE.md rule 20): each arm is judged against the plain arm with
as many chains (``RIVALS``: ``uqzoo1`` against ``plain``, the 4-chain arms
against ``plainvec``), and the script asserts, seed by seed, that the two did
the same work -- chains, warm-up and kept iterations per chain, prior,
network and training data (``work_done``). NUTS has no stopping rule. The
``pyro`` arm runs fewer iterations and has no rival: its ESS/s is a rate only.

Per arm and seed: wall seconds of the whole fit including compilation (JAX's
caches and uqzoo's program cache are cleared before every arm), median over
10 test points of the bulk ESS (ArviZ) of the posterior predictive
probability, ESS/s, and leapfrog steps (= gradient evaluations, warm-up and
sampling, all chains) per wall second, the sampler's cost rate apart from its
efficiency per draw, and the cores the arm got (process CPU seconds / wall
seconds, both of the timed fit alone; on a shared machine other jobs decide
it). Summary: the median of
each over the seeds, and each arm's median ESS/s over its rival's.

The script gives JAX one CPU device per available core
(``jax.config.update("jax_num_cpu_devices", n)`` before JAX starts, as
uqzoo's ``chain_method`` documentation tells users to): JAX runs one
computation at a time per CPU device, so without it uqzoo's "parallel"
chains run one after another. ``--cpu-devices 1`` measures that case. The
single-chain arms use one device either way.

The plain arm is ``numpyro.infer.NUTS`` in ``numpyro.infer.MCMC``, unmodified,
one ``MCMC.run`` call as a user writes it (STYLE.md rule 21: a subclass that
carried a leapfrog count in the state once made this arm about 6x slower, and
uqzoo's ratio against it meaningless). One ``run`` reports only the sampling
phase's ``num_steps``, so the warm-up's leapfrog steps are counted by a second,
untimed and identical run through the documented API (``MCMC.warmup(...,
collect_warmup=True, extra_fields=("num_steps",))`` then ``MCMC.run`` from the
post-warm-up state); the script asserts that the two runs' sampling steps agree.

Run: ``python benchmarks/bench_hmc.py [--problem p50|teacher2] [--parts plain,uqzoo1,uqzoo4]
[--seeds 0,1,2] [--num-warmup 500] [--num-samples 1000] [--cpu-devices N] [--json out.json]``;
issue 22's comparison: ``--problem teacher2 --parts plainvec,uqzoo4 --num-warmup 500
--num-samples 250 --cpu-devices 1``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import time
import warnings

import numpy as np

import uqzoo as uz
from uqzoo.methods import _diagnostics, hmc

# ESS/s over the rival's (RIVALS): issue 22 asks uqzoo's default (uqzoo4) to
# be at least as fast as NumPyro's fastest configuration, vectorized chains.
TARGETS = {"uqzoo1": 0.9, "uqzoo4": 1.0}


PROBLEMS = ("p50", "teacher2")


def problem(name="p50", n_train=None):
    """The data and the network; both arms get the same prior, iid N(0, 1).

    ``p50``: sim-teacher p = 50, n_train 2000 (seed 0), 50-10-10-1.
    ``teacher2``: issue 22's -- sim-teacher p = 2, n_train 1000, seed 1,
    2-10-10-1 (151 parameters).
    """
    p, default_n, seed = {"p50": (50, 2000, 0), "teacher2": (2, 1000, 1)}[name]
    data = uz.datasets.load("sim-teacher", p=p, n_train=n_train or default_n, n_test=10,
                            seed=seed)
    # The plain arm's model puts N(0, 1) on every weight and bias: the "iid"
    # prior (before issue 22 uqzoo's arms ran under the fan-in prior here).
    return data, uz.MLPSpec(p, 2, hidden=(10, 10), prior="iid")


def median_bulk_ess(spec, draws_by_chain, X_test):
    """draws_by_chain: dict of (chains, draws, *shape) arrays."""
    chains, per_chain = next(iter(draws_by_chain.values())).shape[:2]
    flat = {k: v.reshape((chains * per_chain, *v.shape[2:])) for k, v in draws_by_chain.items()}
    proba = uz.proba_draws(spec, flat, X_test)[..., 1]
    ess = _diagnostics.rhat_ess(proba.reshape(chains, per_chain, -1))["ess_bulk"]
    return float(np.median(ess))


def clear_compilation_caches():
    """Every arm pays its compilation, as a fresh process would."""
    import jax

    hmc._numpyro_program.cache_clear()
    jax.clear_caches()


def run_plain(data, spec, seed, num_warmup, num_samples, num_chains=1,
              chain_method="sequential"):
    """What a user writes by hand: the model in NumPyro, MCMC.run.

    Returns draws (chains, draws, ...), wall seconds, leapfrog steps and the
    process CPU seconds of the timed run (not of the untimed counting run).
    """
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    sizes = (spec.in_features, *spec.hidden, 1)
    assert spec.n_classes == 2 and spec.activation == "tanh", spec
    # The spec's prior, as a user would write it: N(0, sd²) per weight and bias
    # (sd = prior_scale, over √fan_in for weights under the fan-in prior).
    sd = spec.prior_sds()

    def model(X, y):
        h = X
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            w = numpyro.sample(f"w{i}", dist.Normal(0, sd[f"layers.{i}.weight"])
                               .expand((b, a)).to_event(2))
            c = numpyro.sample(f"b{i}", dist.Normal(0, sd[f"layers.{i}.bias"])
                               .expand((b,)).to_event(1))
            h = h @ w.T + c
            if i < len(sizes) - 2:
                h = jnp.tanh(h)
        numpyro.sample("y", dist.Bernoulli(logits=h[:, 0]), obs=y)

    def mcmc():
        return MCMC(NUTS(model), num_warmup=num_warmup, num_samples=num_samples,
                    num_chains=num_chains, chain_method=chain_method, progress_bar=False)

    X, y = jnp.asarray(data.X_train), jnp.asarray(data.y_train)
    t0, cpu0 = time.perf_counter(), time.process_time()
    timed = mcmc()
    timed.run(jax.random.key(seed), X, y, extra_fields=("num_steps",))
    samples = timed.get_samples(group_by_chain=True)
    jax.block_until_ready(samples)
    seconds = time.perf_counter() - t0
    cpu_seconds = time.process_time() - cpu0
    sampling = int(np.asarray(timed.get_extra_fields()["num_steps"]).sum())
    # The warm-up's steps, from a second identical run (untimed): MCMC.run is
    # warmup followed by sampling from the post-warm-up state.
    counted = mcmc()
    counted.warmup(jax.random.key(seed), X, y, extra_fields=("num_steps",),
                   collect_warmup=True)
    warmup = int(np.asarray(counted.get_extra_fields()["num_steps"]).sum())
    counted.run(counted.post_warmup_state.rng_key, X, y, extra_fields=("num_steps",))
    assert int(np.asarray(counted.get_extra_fields()["num_steps"]).sum()) == sampling, \
        "the counting run must repeat the timed run"
    leapfrog = warmup + sampling
    draws = {}
    for i in range(len(sizes) - 1):
        draws[f"layers.{i}.weight"] = np.asarray(samples[f"w{i}"])
        draws[f"layers.{i}.bias"] = np.asarray(samples[f"b{i}"])
    return draws, seconds, leapfrog, cpu_seconds


def run_uqzoo(data, spec, seed, **config):
    """uz.fit; returns draws (chains, draws, ...), seconds, leapfrog steps, warnings
    and the fit's process CPU seconds."""
    t0, cpu0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=seed, progress_bar=False, **config)
    seconds = time.perf_counter() - t0
    cpu_seconds = time.process_time() - cpu0
    chains, per_chain = post.sample_shape
    draws = {k: v.reshape((chains, per_chain, *v.shape[1:])) for k, v in post.draws.items()}
    d = post.diagnostics
    leapfrog = (d["leapfrog_steps_warmup"] + d["leapfrog_steps_sampling"]
                if "leapfrog_steps_warmup" in d else None)
    return draws, seconds, leapfrog, [str(w.message) for w in caught], cpu_seconds


def run_arm(arm, data, spec, seed, num_warmup, num_samples, pyro_warmup, pyro_samples):
    """One fit; returns (draws, seconds, leapfrog steps or None, CPU seconds, extra dict).

    Seconds and CPU seconds cover the timed fit only: not the plain arm's
    counting run, not the ESS.
    """
    settings = dict(num_warmup=num_warmup, num_samples=num_samples)
    if arm in ("plain", "plainvec"):
        chains = 1 if arm == "plain" else 4
        draws, seconds, leapfrog, cpu = run_plain(data, spec, seed, **settings,
                                                  num_chains=chains, chain_method="vectorized")
        work = work_done(spec, data, chains, num_warmup, num_samples)
        return draws, seconds, leapfrog, cpu, {"work": work}
    config = {"uqzoo1": dict(num_chains=1), "uqzoo4": {},
              "par4": dict(chain_method="parallel"),
              "seq4": dict(chain_method="sequential"),
              "vec4": dict(chain_method="vectorized"),
              "pyro": dict(backend="pyro", jit_compile=True, num_chains=1)}[arm]
    # The plain arm's start and coordinates (NumPyro's U(-2, 2), no input
    # rotation), so that the arms compare the drivers on the same sampler;
    # bench_hmc_scene.py measures uqzoo's MAP warm start and rotation.
    config = {"init": "uniform", "rotate_inputs": False, **config}
    if arm == "pyro":
        settings = dict(num_warmup=pyro_warmup, num_samples=pyro_samples)
    # --num-samples is per chain, as in NumPyro; uqzoo's num_samples is the total.
    settings["num_samples"] *= config.get("num_chains", 4)
    draws, seconds, leapfrog, messages, cpu = run_uqzoo(data, spec, seed, **config, **settings)
    chains = config.get("num_chains", 4)
    work = work_done(spec, data, chains, settings["num_warmup"],
                     settings["num_samples"] // chains)
    # What uqzoo's "auto" chose, under this process's JAX devices.
    method = hmc.resolve_chain_method(spec, len(data.X_train), hmc.Config(**config, **settings))
    return draws, seconds, leapfrog, cpu, {"warnings": messages, "chain_method": method,
                                           "work": work, **settings}


def work_done(spec, data, chains, num_warmup, draws_per_chain):
    """The work an arm does, to assert that rivals do the same (STYLE.md rule 20):
    chains, iterations per chain, the prior and the data. No arm has a
    stopping rule: NUTS runs its iterations."""
    return {"chains": chains, "num_warmup": num_warmup, "draws_per_chain": draws_per_chain,
            "prior": f"{spec.prior} N(0, {spec.prior_scale}²)", "network": spec.hidden,
            "n_train": len(data.X_train),
            "data_checksum": float(np.asarray(data.X_train, np.float64).sum())}


# Each arm's rival: the plain NumPyro run with the same number of chains.
# pyro runs fewer iterations (it is ~4× slower) and has no rival.
RIVALS = {"uqzoo1": "plain", "uqzoo4": "plainvec", "par4": "plainvec", "seq4": "plainvec",
          "vec4": "plainvec"}


def machine():
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                      if line.startswith("Model name")), platform.processor())
    except (OSError, subprocess.CalledProcessError):
        model = platform.processor()
    import jax
    import numpyro
    return {"cpu": model, "cores_available": len(os.sched_getaffinity(0)),
            "jax_cpu_devices": len(jax.devices("cpu")), "jax": jax.__version__,
            "numpyro": numpyro.__version__, "python": platform.python_version()}


def warm_up_process(arms):
    """Import everything and start JAX's backend on a tiny problem (untimed)."""
    data, spec = problem("teacher2", n_train=100)
    for arm in arms:
        clear_compilation_caches()
        run_arm(arm, data, spec, 0, 5, 5, 5, 5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parts", default="plain,uqzoo1,uqzoo4",
                        help="comma-separated arms: plain, plainvec, uqzoo1, uqzoo4, par4, "
                             "seq4, vec4, pyro")
    parser.add_argument("--problem", default="p50", choices=PROBLEMS)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--num-warmup", type=int, default=500)
    parser.add_argument("--num-samples", type=int, default=1000)
    parser.add_argument("--pyro-warmup", type=int, default=100)
    parser.add_argument("--pyro-samples", type=int, default=200)
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--cpu-devices", type=int, default=len(os.sched_getaffinity(0)),
                        help="JAX CPU devices (default: the cores available)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import jax

    # Before anything touches JAX's backend; see the module docstring.
    jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    arms = args.parts.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    data, spec = problem(args.problem, n_train=args.n_train)
    X_test = np.array(data.X_test)
    results = {"machine": machine(), "settings": vars(args), "runs": []}
    print(results["machine"], flush=True)
    warm_up_process(arms)

    for i, seed in enumerate(seeds):
        order = arms[i % len(arms):] + arms[:i % len(arms)]
        for arm in order:
            clear_compilation_caches()
            load_before = os.getloadavg()[0]
            draws, seconds, leapfrog, cpu_seconds, extra = run_arm(
                arm, data, spec, seed, args.num_warmup, args.num_samples,
                args.pyro_warmup, args.pyro_samples)
            cores_used = cpu_seconds / seconds
            ess = median_bulk_ess(spec, draws, X_test)
            row = {"arm": arm, "seed": seed, "seconds": round(seconds, 1),
                   "median_bulk_ess": round(ess, 1), "ess_per_second": round(ess / seconds, 3),
                   "leapfrog_steps": leapfrog,
                   "leapfrog_per_second": round(leapfrog / seconds) if leapfrog else None,
                   "cores_used": round(cores_used, 2),
                   "load_before": load_before, "load_after": os.getloadavg()[0],
                   **{k: (len(v) if k == "warnings" else v) for k, v in extra.items()}}
            results["runs"].append(row)
            print(row, flush=True)

    summary = {}
    for arm in arms:
        rows = [r for r in results["runs"] if r["arm"] == arm]
        summary[arm] = {key: statistics.median(r[key] for r in rows)
                        for key in ("seconds", "median_bulk_ess", "ess_per_second",
                                    "leapfrog_per_second", "cores_used")
                        if rows[0][key] is not None}
    for arm, s in summary.items():
        rival = RIVALS.get(arm)
        if rival not in summary:
            continue
        # Equal work (STYLE.md rule 20): the same chains, iterations, prior and data.
        pairs = list(zip([r for r in results["runs"] if r["arm"] == arm],
                         [r for r in results["runs"] if r["arm"] == rival], strict=True))
        for mine, theirs in pairs:
            assert mine["seed"] == theirs["seed"]
            assert mine["work"] == theirs["work"], (arm, mine["work"], rival, theirs["work"])
        # The ratio is taken per seed (the same data and starting seed), then its
        # median: a ratio of medians would pair one seed's arm with another's.
        # Per CPU second too: on a shared machine each arm gets what the other
        # jobs leave it (`cores_used`), and the wall ratio measures that as well.
        s[f"ess_per_second_vs_{rival}"] = round(statistics.median(
            m["ess_per_second"] / t["ess_per_second"] for m, t in pairs), 3)
        s[f"ess_per_cpu_second_vs_{rival}"] = round(statistics.median(
            (m["ess_per_second"] / m["cores_used"]) / (t["ess_per_second"] / t["cores_used"])
            for m, t in pairs), 3)
    results["summary"] = summary
    print("\nmedians over seeds", seeds)
    for arm, s in summary.items():
        target = f" (target ≥ {TARGETS[arm]})" if arm in TARGETS and RIVALS[arm] in summary else ""
        print(f"  {arm:8s} {s}{target}")

    if args.coverage:
        results["sim_teacher_coverage"] = coverage()
        print("sim_teacher_coverage", results["sim_teacher_coverage"], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


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


if __name__ == "__main__":
    main()
