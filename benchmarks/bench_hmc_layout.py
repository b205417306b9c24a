"""NUTS's state as a dict of sites or as one vector: time per leapfrog step.

NumPyro's ``MCMC(NUTS(model))`` on a user's model, and uqzoo's HMC, keep the
sampler's state as a dict of the model's sites. NumPyro's kernel ravels the
momentum into one vector and back at every leapfrog step and carries every
tree quantity site by site, so handing it the sites laid end to end in one
vector (``jax.flatten_util.ravel_pytree``, NumPyro's own order) changes the
per-step bookkeeping, not the chain. This script measures what that would
save (benchmarks/README.md: too little to adopt).

Both arms are NumPyro's own kernel, unmodified (``numpyro.infer.hmc.hmc`` with
``potential_fn``), on the same potential -- uqzoo's model's
``numpyro.infer.util.potential_energy`` -- one taking the dict, the other the
vector (unravelled to the dict inside). From the same start and key they run
the same chain: the script asserts that the two arms took the same number of
leapfrog steps, iteration by iteration, so each arm's seconds per step is
measured on identical work. One chain, compiled before timing (the first
call of each arm runs zero iterations), the arms alternating within a seed.

Problems: ``teacher2`` (sim-teacher p = 2, n_train 1000, data seed 1, a
2-10-10-1 tanh network under the iid N(0, 1) prior: 151 parameters, 6 sites)
and ``scene`` (hsi-sim, 100 × 100 pixels, 189 bands, the left half trains: a
189-10-10-1 network under the fan-in prior, 2,021 parameters).

    python benchmarks/bench_hmc_layout.py --problem teacher2 --seeds 1,2,3
    python benchmarks/bench_hmc_layout.py --problem scene --seeds 1,2,3 --iterations 60
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def problem(name: str):
    import uqzoo as uz

    if name == "teacher2":
        data = uz.datasets.load("sim-teacher", p=2, n_train=1000, n_test=10, seed=1)
        spec = uz.MLPSpec(2, 2, hidden=(10, 10), prior="iid")
    else:
        data = uz.datasets.load("hsi-sim", size=100, n_bands=189, seed=0, progress_bar=False)
        spec = uz.MLPSpec(data.n_features, 2, hidden=(10, 10))
    return spec, np.asarray(data.X_train, np.float32), np.asarray(data.y_train, np.int32)


def arm_program(spec, X, y, unravel, vector: bool, num_warmup: int):
    """Jitted (init, run n iterations) of NumPyro's NUTS on the dict or the vector."""
    import jax
    from jax import lax
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.hmc import hmc
    from numpyro.infer.util import potential_energy

    from uqzoo.nets import numpyro_model

    model = numpyro_model.bayesian_mlp(spec)

    def on_sites(z):
        return potential_energy(model, (X, y, None), {}, z, enum=False)

    potential = (lambda z: on_sites(unravel(z))) if vector else on_sites
    init_kernel, sample_kernel = hmc(potential_fn=potential, algo="NUTS")

    def init(z0, key):
        return init_kernel(ravel_pytree(z0)[0] if vector else z0, num_warmup, rng_key=key)

    def run(state, n):
        def body(i, carry):
            state, steps = carry
            state = sample_kernel(state)
            return state, steps.at[i].set(state.num_steps)
        return lax.fori_loop(0, n, body, (state, jax.numpy.zeros(512, jax.numpy.result_type(int))))

    return jax.jit(init), jax.jit(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=("teacher2", "scene"), default="teacher2")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--iterations", type=int, default=300,
                        help="NUTS iterations per arm, all in warm-up (at most 512)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import jax
    from jax.flatten_util import ravel_pytree

    spec, X, y = problem(args.problem)
    shapes = spec.param_shapes()
    _, unravel = ravel_pytree({k: np.zeros(s, np.float32) for k, s in shapes.items()})
    n = min(args.iterations, 512)
    arms = {name: arm_program(spec, X, y, unravel, name == "vector", num_warmup=n)
            for name in ("sites", "vector")}
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        rng = np.random.default_rng(seed)
        z0 = {k: rng.uniform(-2, 2, s).astype(np.float32)    # NumPyro's U(-2, 2) start
              for k, s in sorted(shapes.items())}
        key = jax.random.key(seed)
        result = {}
        order = ("sites", "vector") if seed % 2 else ("vector", "sites")
        for name in order:
            init, run = arms[name]
            state = init(z0, key)
            jax.block_until_ready(run(state, 0))                      # compiles
            t0 = time.perf_counter()
            _, steps = jax.block_until_ready(run(state, n))
            seconds = time.perf_counter() - t0
            result[name] = (seconds, np.asarray(steps[:n]))
        np.testing.assert_array_equal(result["sites"][1], result["vector"][1],
                                      err_msg="the arms ran different chains")
        steps = int(result["sites"][1].sum())
        row = {"seed": seed, "iterations": n, "leapfrog_steps": steps,
               **{f"us_per_step_{k}": 1e6 * v[0] / steps for k, v in result.items()}}
        row["vector_over_sites"] = row["us_per_step_vector"] / row["us_per_step_sites"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    ratios = [r["vector_over_sites"] for r in rows]
    ratio = float(np.median(ratios))
    each = ", ".join(f"{r:.3f}" for r in ratios)
    print(f"{args.problem}: time per leapfrog step, vector / dict of sites: median {ratio:.3f} "
          f"over seeds {args.seeds} ({each})")
    if args.json:
        with open(args.json, "x") as f:
            json.dump({"problem": args.problem, "rows": rows, "median_ratio": ratio}, f, indent=1)


if __name__ == "__main__":
    main()
