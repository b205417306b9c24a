"""NUTS on a 189-band, 5,000-pixel scene with a 2×10 network: where the time goes.

Issue 12's goal: a converged 2-chain NUTS run (predictive R-hat ≤ 1.01) on a
189-band scene with 5,000 training pixels and a 2×10 tanh network in at most
15 minutes on 2 cores. The scene is ``hsi-sim`` with ``size=100`` (the left
half, 100 × 50 = 5,000 pixels, trains) and ``n_bands=189``, standardised by
its training statistics; the network has 189·10 + 10 + 10·10 + 10 + 10 + 1 =
2,021 parameters.

A fit's time is (leapfrog steps) × (seconds per step), so the script measures
the two factors apart:

1. ``gradient``: the compiled potential energy and its gradient on the 5,000
   pixels (the work of one leapfrog step), float32 and float64, and the
   potential alone; medians of timed calls after one that compiles, wall
   and process CPU time.
2. ``arms``: whole ``uz.fit("hmc", ...)`` runs, one per setting, each
   reporting wall time and its phases (MAP warm start, compilation, warm-up,
   sampling), leapfrog steps per iteration in warm-up and sampling, the
   tree depths, the step sizes, seconds per leapfrog step, the predictive
   R-hat and bulk/tail ESS at the 10 diagnostic training points, divergences,
   and ``hmc.time_estimate``'s figure made before the run. Arms:

   - ``default``: uqzoo's defaults (NumPyro's U(-2, 2) start, diagonal mass,
     tree depth 10, the spec's default fan-in prior) with 2 chains;
   - ``map``: the same, each chain started at its own MAP fit (``init="map"``);
   - ``rotate``: the same with the first layer in the inputs' principal axes
     (``rotate_inputs=True``);
   - ``map-rotate``: both;
   - ``depth6``: ``default`` with ``max_tree_depth=6``;
   - ``old``: the prior before issue 12 (iid N(0, 1) on every weight), as many
     iterations as the others -- long;
   - ``plainvec``: not uqzoo -- plain NumPyro, ``MCMC(NUTS(model),
     chain_method="vectorized")`` on the same network, prior (the fan-in
     prior, written as a user would: ``benchmarks/bench_hmc.py``'s
     ``run_plain``), data, chains, warm-up and draws, NumPyro's U(-2, 2)
     start; its R-hat and ESS are computed at the same diagnostic points by
     the same code as uqzoo's. Issue 22's bar: ``default`` at least 1.0× its
     ESS per second (the script asserts the work is equal and prints the ratio).

Chains run in parallel: the script gives JAX one CPU device per available
core (``jax.config.update("jax_num_cpu_devices", n)`` before JAX starts, as
``hmc.Config.chain_method`` tells users to).

Run (the figure in benchmarks/README.md; ~6 minutes per arm here)::

    python benchmarks/bench_hmc_scene.py --parts arms --arms plainvec,default --seeds 0,1,2

    python benchmarks/bench_hmc_scene.py --arms default --json /tmp/hmc_scene.json
    python benchmarks/bench_hmc_scene.py --arms default,map,rotate,depth6 --seeds 0
    python benchmarks/bench_hmc_scene.py --parts gradient
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings

import numpy as np

ARMS = {
    "default": {},
    "map": {"init": "map"},
    "rotate": {"rotate_inputs": True},
    "map-rotate": {"init": "map", "rotate_inputs": True},
    "depth6": {"max_tree_depth": 6},
    "old": {"prior": "iid"},
}


def scene(seed: int = 0, dataset: str = "hsi-sim"):
    import uqzoo as uz

    if dataset == "hsi-sim":
        data = uz.datasets.load("hsi-sim", size=100, n_bands=189, seed=seed, progress_bar=False)
    else:
        data = uz.datasets.load(dataset, seed=seed)
    X = np.asarray(data.X_train)
    # The fit needs standardised inputs: check rather than trust.
    assert np.abs(X.mean(0)).max() < 1e-3 and np.abs(X.std(0) - 1).max() < 1e-3, \
        "training inputs are not standardised"
    return data


def median_time(fn, args: tuple, repeats: int) -> tuple[float, float]:
    """Median wall and process-CPU seconds of fn(*args) (blocked until ready)."""
    import jax

    jax.block_until_ready(fn(*args))                  # compiles
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn(*args))
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def gradient_costs(data, repeats: int = 200) -> dict:
    import jax

    import uqzoo as uz
    from uqzoo.methods import hmc

    spec = uz.MLPSpec(data.n_features, 2, hidden=(10, 10))
    first_layer = jax.jit(lambda W, X: X @ W.T)
    out = {}
    for float64 in (False, True):
        dtype = np.float64 if float64 else np.float32
        program = hmc._numpyro_program(spec, False, 10, 0.8, 10, False, float64, False)
        potential = jax.jit(lambda z, X, y, grad=program.gradient: grad(z, X, y)[0])
        with jax.enable_x64(float64):
            X = np.asarray(data.X_train, dtype=dtype)
            y = np.asarray(data.y_train, dtype=np.int32)
            z = hmc._to_sites(spec, False, spec.init_params(0), dtype)
            wall, cpu = median_time(program.gradient, (z, X, y), repeats)
            p_wall, _ = median_time(potential, (z, X, y), repeats)
            m_wall, _ = median_time(first_layer, (z["layers.0.weight"], X), repeats)
        name = "float64" if float64 else "float32"
        out[name] = {"gradient_us": round(1e6 * wall, 1), "gradient_cpu_us": round(1e6 * cpu, 1),
                     "potential_only_us": round(1e6 * p_wall, 1),
                     "first_layer_product_us": round(1e6 * m_wall, 1)}
        print(name, out[name], flush=True)
    return out


def run_plain_arm(data, seed: int, num_warmup: int, draws_per_chain: int,
                  num_chains: int) -> dict:
    """Plain NumPyro's vectorized chains, judged at uqzoo's diagnostic points."""
    import uqzoo as uz
    from bench_hmc import run_plain
    from uqzoo.methods import _diagnostics, hmc

    spec = uz.MLPSpec(data.n_features, 2, hidden=(10, 10))
    load_before = os.getloadavg()[0]
    # CPU seconds of the timed run only: run_plain counts the warm-up's
    # leapfrog steps in a second, untimed run.
    draws, wall, leapfrog, cpu = run_plain(data, spec, seed, num_warmup, draws_per_chain,
                                           num_chains=num_chains, chain_method="vectorized")
    cores = cpu / wall
    flat = {k: v.reshape((num_chains * draws_per_chain, *v.shape[2:]))
            for k, v in draws.items()}
    X = np.asarray(data.X_train)
    idx = _diagnostics.predictive_points(seed, X.shape[0], hmc.Config().num_diagnostic_points)
    proba = uz.proba_draws(spec, flat, X[idx])[..., 1:]
    summary = _diagnostics.rhat_ess(proba.reshape((num_chains, draws_per_chain,
                                                   *proba.shape[1:])))
    row = {
        "arm": "plainvec", "seed": seed, "prior": spec.prior,
        "config": dict(num_warmup=num_warmup, num_samples=num_chains * draws_per_chain,
                       num_chains=num_chains),
        "wall_s": round(wall, 1), "cores_used": round(cores, 2),
        "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
        "leapfrog_steps": leapfrog,
        "ms_per_leapfrog": round(1e3 * wall / max(1, leapfrog), 3),
        "rhat_predictive_max": round(float(np.nanmax(summary["rhat"])), 4),
        "ess_bulk_predictive_min": round(float(np.nanmin(summary["ess_bulk"])), 1),
        "ess_bulk_predictive_median": round(float(np.nanmedian(summary["ess_bulk"])), 1),
        "ess_tail_predictive_min": round(float(np.nanmin(summary["ess_tail"])), 1),
    }
    row["ess_bulk_min_per_second"] = round(row["ess_bulk_predictive_min"] / wall, 3)
    row["ess_bulk_median_per_second"] = round(row["ess_bulk_predictive_median"] / wall, 3)
    print(json.dumps(row), flush=True)
    return row


def run_arm(data, arm: str, seed: int, num_warmup: int, draws_per_chain: int,
            num_chains: int) -> dict:
    import uqzoo as uz
    from bench_hmc import clear_compilation_caches
    from uqzoo.methods import hmc

    # Every arm pays its compilation, as a fresh process would: uqzoo's program
    # cache would otherwise spare its later seeds what plain MCMC pays each time.
    clear_compilation_caches()
    if arm == "plainvec":
        return run_plain_arm(data, seed, num_warmup, draws_per_chain, num_chains)
    options = dict(ARMS[arm])
    prior = options.pop("prior", "fan_in")
    spec = uz.MLPSpec(data.n_features, 2, hidden=(10, 10), prior=prior)
    config = dict(num_warmup=num_warmup, num_samples=num_chains * draws_per_chain,
                  num_chains=num_chains, **options)
    estimate = hmc.time_estimate(spec, data, hmc.Config(**config))
    load_before = os.getloadavg()[0]
    cpu0, t0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", uz.ConvergenceWarning)
        post = uz.fit("hmc", spec, data, seed=seed, progress_bar=False, **config)
    wall = time.perf_counter() - t0
    cores = (time.process_time() - cpu0) / wall
    d, st = post.diagnostics, post.sample_stats
    chains_iters = num_chains * num_warmup
    depth, counts = np.unique(st["tree_depth"], return_counts=True)
    row = {
        "arm": arm, "seed": seed, "prior": prior, "config": config,
        "wall_s": round(wall, 1), "cores_used": round(cores, 2),
        "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
        "seconds_map": round(d["seconds_map"], 1),
        "seconds_compile": round(d["seconds_compile"], 1),
        "seconds_warmup": round(d["seconds_warmup"], 1),
        "seconds_sampling": round(d["seconds_sampling"], 1),
        "leapfrog_per_iteration_warmup": round(d["leapfrog_steps_warmup"] / chains_iters, 1),
        "leapfrog_per_iteration_sampling": round(float(st["n_steps"].mean()), 1),
        "tree_depth_sampling": {int(k): int(v) for k, v in zip(depth, counts, strict=True)},
        "step_size": [round(float(np.median(s)), 4) for s in st["step_size"]],
        "ms_per_leapfrog": round(1e3 * d["seconds_per_leapfrog"], 3),
        "estimate_s": round(estimate.seconds, 1), "estimate_max_s": round(estimate.seconds_max, 1),
        "estimate_ms_per_gradient": round(1e3 * estimate.seconds_per_gradient, 3),
        "rhat_predictive_max": round(float(np.nanmax(d["rhat_predictive"])), 4),
        "ess_bulk_predictive_min": round(float(np.nanmin(d["ess_bulk_predictive"])), 1),
        "ess_bulk_predictive_median": round(float(np.nanmedian(d["ess_bulk_predictive"])), 1),
        "ess_tail_predictive_min": round(float(np.nanmin(d["ess_tail_predictive"])), 1),
        "rhat_lp": round(float(d["rhat_lp"]), 4), "ess_bulk_lp": round(float(d["ess_bulk_lp"]), 1),
        "num_divergent": d["num_divergent"],
        "mean_acceptance_rate": round(d["mean_acceptance_rate"], 3),
        "converged": post.converged, "warnings": [str(w.message) for w in caught],
    }
    row["ess_bulk_min_per_second"] = round(row["ess_bulk_predictive_min"] / wall, 3)
    row["ess_bulk_median_per_second"] = round(row["ess_bulk_predictive_median"] / wall, 3)
    row["leapfrog_steps"] = int(d["leapfrog_steps_warmup"] + d["leapfrog_steps_sampling"])
    row["chain_method"] = hmc.resolve_chain_method(spec, data.n_train, hmc.Config(**config))
    print(json.dumps(row), flush=True)
    return row


def compare_with_plain(runs: list[dict]) -> list[dict]:
    """Per seed, uqzoo's ``default`` arm against ``plainvec``: equal work asserted,
    then the ratio of ESS per second (bulk ESS of the predictive at the same
    diagnostic points, the minimum and the median over points)."""
    ratios = []
    for seed in sorted({r["seed"] for r in runs}):
        arms = {r["arm"]: r for r in runs if r["seed"] == seed}
        if not {"default", "plainvec"} <= set(arms):
            continue
        ours, plain = arms["default"], arms["plainvec"]
        # Equal work: the same chains, warm-up, draws and prior on the same scene.
        assert ours["config"] == plain["config"], (ours["config"], plain["config"])
        assert ours["prior"] == plain["prior"] == "fan_in"
        ratio = {"seed": seed,
                 "min_ess_per_s": round(ours["ess_bulk_min_per_second"]
                                        / plain["ess_bulk_min_per_second"], 3),
                 "median_ess_per_s": round(ours["ess_bulk_median_per_second"]
                                           / plain["ess_bulk_median_per_second"], 3),
                 "leapfrog_per_s": round((ours["leapfrog_steps"] / ours["wall_s"])
                                         / (plain["leapfrog_steps"] / plain["wall_s"]), 3)}
        print("uqzoo default / plain NumPyro vectorized:", json.dumps(ratio), flush=True)
        ratios.append(ratio)
    if ratios:
        print("median over seeds:", {k: round(statistics.median(r[k] for r in ratios), 3)
                                     for k in ("min_ess_per_s", "median_ess_per_s",
                                               "leapfrog_per_s")}, flush=True)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="gradient,arms")
    parser.add_argument("--arms", default="default")
    parser.add_argument("--seeds", default="0", help="fit seeds (the scene is seed 0)")
    parser.add_argument("--num-warmup", type=int, default=500)
    parser.add_argument("--draws-per-chain", type=int, default=500)
    parser.add_argument("--num-chains", type=int, default=2)
    parser.add_argument("--dataset", default="hsi-sim")
    parser.add_argument("--cpu-devices", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json")
    args = parser.parse_args()
    import jax

    # A program (not a library) may set this: one JAX CPU device per core, so
    # that "parallel" chains run in parallel.
    jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    data = scene(dataset=args.dataset)
    results: dict = {"machine": {"cpu": platform.processor() or platform.machine(),
                                 "cores_available": len(os.sched_getaffinity(0)),
                                 "jax": jax.__version__},
                     "scene": {"dataset": args.dataset, "n_train": int(data.n_train),
                               "bands": int(data.n_features),
                               "targets_train": int(np.sum(data.y_train))}}
    print(results, flush=True)
    parts = args.parts.split(",")
    if "gradient" in parts:
        results["gradient"] = gradient_costs(data)
    if "arms" in parts:
        results["runs"] = [run_arm(data, arm, int(seed), args.num_warmup, args.draws_per_chain,
                                   args.num_chains)
                           for seed in args.seeds.split(",") for arm in args.arms.split(",")]
        results["ratios"] = compare_with_plain(results["runs"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
