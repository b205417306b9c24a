"""Why the bootstrap's intervals under-cover: each suspect factor, measured (docs/bootstrap.md).

On development data only (seeds 100-102; the README and tests report 0-4), for
sim-teacher, gaussian-mixture and nonlinear-logistic (n_train 1000, n_test
1000, the default 2×10 tanh fan-in spec):

1. coverage of the true probability by bootstrap intervals, varying one factor
   at a time: members (40 vs 100), interval type (percentile, basic, normal),
   a shared initialisation, a weak prior (prior_scale 10), with the deep
   ensemble for reference;
2. the exact sampling distribution of the MAP estimator: one fit to each of
   ``--fresh`` new training sets from the generator, evaluated at the test
   points of seed 100, against which the bootstrap's sd and the estimator's
   bias are measured, and the coverage of intervals built on the exact sd.

    python benchmarks/bootstrap_factors.py            # about 30 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

import uqzoo as uz
from uqzoo.methods import _trainer
from uqzoo.methods import bootstrap as bootstrap_method
from uqzoo.methods import ensemble as ensemble_method

TRUTHS = ("sim-teacher", "gaussian-mixture", "nonlinear-logistic")
LEVELS = (0.8, 0.95)
MEMBERS = 100


def _load(name: str, seed: int, n_test: int = 1000):
    return uz.datasets.load(name, n_train=1000, n_test=n_test, seed=seed)


def _spec(data, **options) -> uz.MLPSpec:
    return uz.MLPSpec(data.n_features, 2, hidden=(10, 10), **options)


def _intervals(draws: np.ndarray, center: np.ndarray, level: float) -> dict:
    """Percentile, basic and normal intervals from bootstrap draws (S, N) of p(x)."""
    a = (1 - level) / 2
    lo, hi = np.quantile(draws, a, axis=0), np.quantile(draws, 1 - a, axis=0)
    z_sd = stats.norm.isf(a) * draws.std(axis=0, ddof=1)
    return {"percentile": (lo, hi), "basic": (2 * center - hi, 2 * center - lo),
            "normal": (center - z_sd, center + z_sd)}


def _shared_init_bootstrap(spec, data, seed: int) -> np.ndarray:
    """Bootstrap members that all start from one initialisation; draws (M, N_test)."""
    counts = bootstrap_method.resample_counts(data.y_train, MEMBERS,
                                              np.random.default_rng([seed, 7]))
    # The initialisation of member 0 of uz.fit("bootstrap", ..., seed=seed).
    first = uz.fit("bootstrap", spec, data, seed=seed, num_members=1, progress_bar=False)
    init = spec.init_params(int(first.diagnostics["init_seeds"][0]))
    result = _trainer.train(spec, data.X_train, data.y_train,
                            {k: np.repeat(v[None], MEMBERS, axis=0) for k, v in init.items()},
                            bootstrap_method.Config(),
                            keys=_trainer.member_keys(list(range(MEMBERS))), weights=counts)
    post = uz.Posterior(spec=spec, method="bootstrap", config={}, seed=seed,
                        draws=result.params)
    return post.predict_proba_draws(np.asarray(data.X_test))[..., 1]


def factors(seeds: list[int]) -> pd.DataFrame:
    rows = []
    for name in TRUTHS:
        for seed in seeds:
            start = time.perf_counter()
            data = _load(name, seed)
            X, truth = np.asarray(data.X_test), data.p_true_test[:, 1]
            spec = _spec(data)
            fits = {}
            ens = uz.fit("ensemble", spec, data, seed=seed, num_members=MEMBERS,
                         progress_bar=False)
            fits["ensemble"] = (ens.predict_proba_draws(X)[..., 1], ens.converged)
            center = fits["ensemble"][0].mean(axis=0)      # the full-data estimate p̂(x)
            boot = uz.fit("bootstrap", spec, data, seed=seed, num_members=MEMBERS,
                          progress_bar=False)
            draws = boot.predict_proba_draws(X)[..., 1]
            fits["bootstrap"] = (draws, boot.converged)
            # Member m is seeded alike whatever the number of members: the first 40
            # of 100 are the 40-member bootstrap.
            fits["bootstrap, 40 members"] = (draws[:40], boot.converged)
            fits["bootstrap, shared initialisation"] = (
                _shared_init_bootstrap(spec, data, seed), None)
            weak = uz.fit("bootstrap", _spec(data, prior_scale=10.0), data, seed=seed,
                          num_members=MEMBERS, progress_bar=False)
            fits["bootstrap, weak prior (s = 10)"] = (weak.predict_proba_draws(X)[..., 1],
                                                      weak.converged)
            for variant, (P, converged) in fits.items():
                for level in LEVELS:
                    for kind, (lo, hi) in _intervals(P, center, level).items():
                        rows.append({"truth": name, "seed": seed, "variant": variant,
                                     "interval": kind, "level": level,
                                     "converged": converged,
                                     "coverage": np.mean((lo <= truth) & (truth <= hi)),
                                     "width": np.mean(np.clip(hi, 0, 1) - np.clip(lo, 0, 1))})
            print(f"{name} seed {seed}: {time.perf_counter() - start:.0f} s", flush=True)
    return pd.DataFrame(rows)


def sampling_distribution(fresh: int) -> None:
    config = ensemble_method.Config(num_members=1)
    for name in TRUTHS:
        ref = _load(name, 100)
        X, truth = np.asarray(ref.X_test), ref.p_true_test[:, 1]
        spec = _spec(ref)
        fits = []
        for r in range(fresh):
            data = _load(name, 2000 + r, n_test=10)
            result, _ = _trainer.fit_members(spec, data, config, seed=2000 + r, num_members=1)
            post = uz.Posterior(spec=spec, method="ensemble", config={}, seed=0,
                                draws=result.params)
            fits.append(post.predict_proba_draws(X)[0, :, 1])
        P = np.array(fits)                                  # (fresh, N): one MAP per data set
        sd_true, bias = P.std(axis=0, ddof=1), P.mean(axis=0) - truth
        boot = uz.fit("bootstrap", spec, ref, seed=100, num_members=MEMBERS,
                      progress_bar=False).predict_proba_draws(X)[..., 1]
        ens = uz.fit("ensemble", spec, ref, seed=100, num_members=MEMBERS,
                     progress_bar=False).predict_proba_draws(X)[..., 1]
        ratio = boot.std(axis=0, ddof=1) / sd_true
        mse = np.mean((P - truth) ** 2, axis=0)
        print(f"\n{name}: {fresh} fresh training sets")
        print(f"  sampling sd of p-hat, median {np.median(sd_true):.3f}; bootstrap sd / true sd "
              f"median {np.median(ratio):.2f} ({np.quantile(ratio, 0.1):.2f}-"
              f"{np.quantile(ratio, 0.9):.2f}); ensemble sd / true sd "
              f"{np.median(ens.std(axis=0, ddof=1) / sd_true):.3f}")
        print(f"  points with |bias| > sd: {np.mean(np.abs(bias) > sd_true):.0%}; bias² share of "
              f"the MSE, median {np.median(bias ** 2 / mse):.2f}")
        for level in LEVELS:
            z = stats.norm.isf((1 - level) / 2)
            print(f"  {level:.0%}: a fit ± z·(exact sd) covers the truth "
                  f"{np.mean(np.abs(P - truth) <= z * sd_true):.2f}, E[p-hat] "
                  f"{np.mean(np.abs(P - P.mean(axis=0)) <= z * sd_true):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[100, 101, 102])
    parser.add_argument("--fresh", type=int, default=100)
    args = parser.parse_args()
    rows = factors(args.seeds)
    grouped = rows.groupby(["variant", "interval", "level"], sort=False)
    table = pd.DataFrame({"coverage": grouped["coverage"].mean(),
                          "se": grouped["coverage"].std(ddof=1) / np.sqrt(grouped.size()),
                          "width": grouped["width"].mean()}).unstack("level")
    with pd.option_context("display.width", 160):
        print(table.round(3).to_string())
    sampling_distribution(args.fresh)


if __name__ == "__main__":
    main()
