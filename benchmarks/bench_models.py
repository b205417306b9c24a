"""The MLP as the user's own model costs what MLPSpec costs: HMC, the trainer, summarize.

Two arms, one process, the same network: ``uz.MLPSpec(2, 2, hidden=(10, 10),
prior="iid")`` and the same MLP written as a plain JAX function and wrapped by
``uz.models.from_function`` (the generic path every user model takes: HMC's
potential through ``vmap(apply)``, the trainer's stacked members through
``vmap(apply)``, the predictive engine through ``jit(vmap(apply))`` instead of
MLPSpec's fused torch forward). Same data (``sim-teacher`` seed 1, p = 2,
n_train 1000), same seeds, same settings; the arms alternate in order from seed
to seed, and each has one untimed warm-up run (compilation) first. The script
asserts, seed by seed, that the two arms did the same work (method, chains and
draws, settings, parameter shapes, prior, training data; for summarize the
same draws and points).

- HMC: 4 chains × (300 warm-up + 150 draws), float32, vectorized chains. The
  arms' parameters are flattened in different orders (JAX sorts a dict's keys),
  so their chains are different draws of the same posterior and may take
  different numbers of leapfrog steps: the table shows wall time and time per
  leapfrog step (the work-normalised figure).
- Trainer: ``uz.fit("ensemble", ...)``, 10 members, 500 epochs.
- summarize: S = 1000 draws (the same arrays for both arms) over N = 200,000 points.

    python benchmarks/bench_models.py            # 3 seeds, about 25 minutes on 2 cores
    python benchmarks/bench_models.py --quick    # 1 seed, smaller, about 5 minutes
    python benchmarks/bench_models.py --tasks summarize       # one task
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import jax.numpy as jnp
import numpy as np

import uqzoo as uz


def mlp_apply(p, X):
    h = X
    for i, layer in enumerate(p["layers"]):
        h = h @ layer["weight"].T + layer["bias"]
        if i < len(p["layers"]) - 1:
            h = jnp.tanh(h)
    return h


def arms(D: int) -> dict[str, uz.Model]:
    spec = uz.MLPSpec(D, 2, hidden=(10, 10), prior="iid")
    init = spec.init_params(0)
    tree = {"layers": [{"weight": init[f"layers.{i}.weight"], "bias": init[f"layers.{i}.bias"]}
                       for i in range(spec.n_layers)]}
    as_function = uz.models.from_function(mlp_apply, tree, in_features=D, n_classes=2,
                                          prior_scale=1.0)
    assert as_function.param_shapes().keys() == spec.param_shapes().keys()
    return {"MLPSpec": spec, "from_function": as_function}


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--tasks", default="HMC,trainer,summarize",
                        help="comma-separated subset of HMC, trainer, summarize")
    args = parser.parse_args()
    seeds = [0] if args.quick else [0, 1, 2]
    hmc = dict(num_chains=4, num_warmup=150 if args.quick else 300,
               num_samples=(75 if args.quick else 150) * 4, chain_method="vectorized")
    members = dict(num_members=10, num_epochs=200 if args.quick else 500)
    N = 50_000 if args.quick else 200_000
    data = uz.datasets.load("sim-teacher", p=2, n_train=1000, n_test=100, seed=1)
    models = arms(data.n_features)
    X = np.random.default_rng(0).normal(size=(N, data.n_features))
    draws = models["MLPSpec"].init_params(5, num=1000)

    # Each run returns (leapfrog steps or None, the work it did); the arms' work is
    # asserted equal seed by seed (STYLE.md rule 20): method, chains × draws,
    # settings, parameter shapes, prior and training data (its fingerprint).
    def posterior_work(post):
        return {"method": post.method, "sample_shape": tuple(post.sample_shape),
                "config": dict(post.config), "param_shapes": dict(post.spec.param_shapes()),
                "prior": post.spec.prior_sds(),
                "data": post.diagnostics["data_fingerprint"]}

    def run_hmc(model, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", uz.ConvergenceWarning)
            post = uz.fit("hmc", model, data, seed=seed, progress_bar=False, **hmc)
        d = post.diagnostics
        return d["leapfrog_steps_warmup"] + d["leapfrog_steps_sampling"], posterior_work(post)

    def run_trainer(model, seed):
        post = uz.fit("ensemble", model, data, seed=seed, progress_bar=False, **members)
        return None, posterior_work(post)

    def run_summarize(model, seed):
        summary = uz.summarize(model, draws, X, levels=(0.8, 0.95))
        return None, {"draws": {k: v.shape for k, v in draws.items()}, "points": X.shape,
                      "mean": summary.mean.shape}

    rows = []
    chosen = args.tasks.split(",")
    for task, run in (("HMC", run_hmc), ("trainer", run_trainer), ("summarize", run_summarize)):
        if task not in chosen:
            continue
        for model in models.values():           # warm-up: compilation, untimed
            run(model, 99)
        times = {name: [] for name in models}
        steps = {name: [] for name in models}
        for i, seed in enumerate(seeds):
            order = list(models) if i % 2 == 0 else list(models)[::-1]
            work = {}
            for name in order:
                seconds, (out, work[name]) = timed(
                    lambda name=name, seed=seed, run=run: run(models[name], seed))
                times[name].append(seconds)
                steps[name].append(out)
            first, second = work.values()
            assert first == second, f"{task}, seed {seed}: the arms did different work: {work}"
        for name in models:
            wall = statistics.median(times[name])
            per_step = (statistics.median(t / s for t, s in zip(times[name], steps[name],
                                                                   strict=True))
                        if task == "HMC" else None)
            rows.append((task, name, wall, per_step))
            print(f"{task} {name}: wall {times[name]}, per step {per_step}", flush=True)
    print(f"seeds {seeds}; HMC {hmc}; trainer {members}; summarize S = 1000, N = {N:,}")
    print("| task | arm | wall s (median) | µs per leapfrog step | × MLPSpec |")
    print("|---|---|---|---|---|")
    base = {task: wall for task, name, wall, _ in rows if name == "MLPSpec"}
    base_step = {task: s for task, name, _, s in rows if name == "MLPSpec"}
    for task, name, wall, per_step in rows:
        ratio = (per_step / base_step[task]) if per_step is not None else wall / base[task]
        step_text = "" if per_step is None else f"{per_step * 1e6:.1f}"
        print(f"| {task} | {name} | {wall:.2f} | {step_text} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
