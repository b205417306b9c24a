"""How far one data set's coverage lies from nominal for a right posterior (the demo's data).

Issue #26: ``make demo`` (``uqzoo compare``, seed 0, quick settings) shows HMC
covering the true probability 0.858 at 80 % and 0.968 at 95 % on sim-teacher
(p = 5, n_train 1000, n_test 5000, the default fan-in teacher of the default
spec), outside ±1.96 binomial standard errors of its 5,000 test points. This
fits one method with the options ``uqzoo compare`` gives it (its quick
settings and the common draw budget) on the same teacher for several data
seeds, and prints, per data set, coverage and width at 0.8 and 0.95, each
chain's own coverage, R-hat and bulk ESS of the test points' probabilities
(every 10th point), divergences, and the posterior mean's RMSE to the truth
beside the mean posterior sd: whether the sampler mixed, and whether a gap
is the data set's or the method's.

    python benchmarks/demo_coverage.py hmc --seeds 0 1            # ~8 min a fit, loaded
    python benchmarks/demo_coverage.py laplace --seeds 0-9
    python benchmarks/demo_coverage.py laplace --seeds 0-9 --n-train 4000
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import uqzoo as uz
from uqzoo import methods as method_registry
from uqzoo.comparison.compare import DEFAULT_NUM_DRAWS, QUICK_CONFIGS
from uqzoo.methods._diagnostics import rhat_ess

LEVELS = (0.8, 0.95)


def seeds(text: str) -> list[int]:
    if "-" in text:
        first, last = map(int, text.split("-"))
        return list(range(first, last + 1))
    return [int(text)]


def coverage(draws: np.ndarray, p_true: np.ndarray, level: float) -> tuple[float, float]:
    """Equal-tailed interval coverage of p_true and mean width; draws (S, N)."""
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return float(np.mean((low <= p_true) & (p_true <= high))), float(np.mean(high - low))


def one(method: str, seed: int, n_train: int) -> dict:
    data = uz.datasets.load("sim-teacher", seed=seed, n_train=n_train)
    spec = uz.MLPSpec(data.X_train.shape[1], 2)        # the default spec, as uqzoo compare
    options = dict(QUICK_CONFIGS.get(method, {}))
    options.update(method_registry.get(method).Config.budget_options(DEFAULT_NUM_DRAWS, options))
    start = time.perf_counter()
    post = uz.fit(method, spec, data, seed=0, progress_bar=False, **options)
    row: dict = {"seed": seed, "n_train": n_train, "options": options,
                 "fit_s": round(time.perf_counter() - start, 1)}
    draws = post.predict_proba_draws(data.X_test)[..., 1].astype(np.float64)     # (S, N)
    p_true = data.p_true_test[:, 1]
    chains, per_chain = post.sample_shape
    by_chain = draws.reshape(chains, per_chain, -1)
    for level in LEVELS:
        cov, width = coverage(draws, p_true, level)
        row[f"cov@{level}"], row[f"width@{level}"] = round(cov, 4), round(width, 4)
        if chains > 1:
            row[f"per_chain_cov@{level}"] = [round(coverage(c, p_true, level)[0], 3)
                                             for c in by_chain]
    if chains > 1:
        diag = rhat_ess(by_chain[:, :, ::10])
        row["rhat_max"] = round(float(np.nanmax(diag["rhat"])), 4)
        row["ess_bulk_min"] = round(float(np.nanmin(diag["ess_bulk"])), 1)
    if "diverging" in post.sample_stats:
        row["divergences"] = int(np.asarray(post.sample_stats["diverging"]).sum())
    row["rmse_mean_to_truth"] = round(float(np.sqrt(np.mean((draws.mean(0) - p_true) ** 2))), 4)
    row["mean_posterior_sd"] = round(float(draws.std(0).mean()), 4)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method")
    parser.add_argument("--seeds", nargs="+", default=["0"], help="data seeds: 0 1 or 0-9")
    parser.add_argument("--n-train", type=int, default=1000)
    args = parser.parse_args()
    rows = []
    for seed in [s for text in args.seeds for s in seeds(text)]:
        rows.append(one(args.method, seed, args.n_train))
        print(json.dumps(rows[-1]), flush=True)
    if len(rows) > 1:
        for level in LEVELS:
            values = np.array([r[f"cov@{level}"] for r in rows])
            print(f"coverage@{level}: mean {values.mean():.3f}, sd between data sets "
                  f"{values.std(ddof=1):.3f}, range {values.min():.3f}-{values.max():.3f} "
                  f"({len(rows)} data sets)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
