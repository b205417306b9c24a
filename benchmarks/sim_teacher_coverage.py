"""Coverage and width of each method's credible intervals where the truth is known.

Superseded by the seed study, ``experiments/seed_study`` (all seven methods on
one draw budget, well- and mis-specified truths, 20 replicates with Monte
Carlo errors); kept for the method variants below and the figures in
benchmarks/README.md that it produced.

For every method in ``METHODS`` (default configurations unless noted), fit on
the data set's training rows, summarise the posterior predictive at the test
points with equal-tailed intervals at 80 % and 95 % (``post.summarize``), and
report, for the probability of class 1:

- coverage: the fraction of test points whose true probability
  ``p_true_test`` lies inside the interval (nominal: the level);
- width: the mean interval width;
- fit time (seconds, compilation included) and the number of draws S.

Coverage is a proportion over N test points: its binomial standard error at
nominal coverage c is √(c(1 − c)/N) (0.006 at 80 %, N = 5000) -- but the test
points share one fitted posterior, so replicate data seeds (``--replicates``)
show the between-fit spread, which is the larger one.

    python benchmarks/sim_teacher_coverage.py                    # sim-teacher, n_train 1000
    python benchmarks/sim_teacher_coverage.py --dataset hsi-sim  # hsi-sim, default size

Add a method by adding a line to ``METHODS``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import uqzoo as uz

# method name -> fit options (the defaults where empty). The same table serves
# every data set; hmc and mfvi join it when they exist.
METHODS: dict[str, dict] = {
    "ensemble": {},
    "bootstrap": {},
    "ensemble (20 members)": {"method": "ensemble", "num_members": 20},
    "bootstrap (20 members)": {"method": "bootstrap", "num_members": 20},
    "mc_dropout": {"dropout": 0.1},
    "swag": {},
    "swag (diagonal)": {"method": "swag", "covariance": "diagonal"},
    "multiswag (3 runs)": {"method": "swag", "num_runs": 3},
    "laplace": {},
    "laplace (nn predictive)": {"method": "laplace", "predictive": "nn"},
    "laplace (last layer)": {"method": "laplace", "subset": "last_layer"},
}
LEVELS = (0.8, 0.95)


def evaluate(name: str, options: dict, data, spec, seed: int) -> dict:
    options = dict(options)
    method = options.pop("method", name)
    start = time.perf_counter()
    post = uz.fit(method, spec, data, seed=seed, progress_bar=False, **options)
    fit_seconds = time.perf_counter() - start
    summary = post.summarize(np.array(data.X_test), levels=LEVELS)
    truth = data.p_true_test[:, 1]
    row = {"method": name, "S": post.num_draws, "fit_s": fit_seconds,
           "warnings": len(post.warnings)}
    for i, level in enumerate(summary.levels):
        lower, upper = summary.lower[i][:, 1], summary.upper[i][:, 1]
        row[f"cover{int(level * 100)}"] = float(np.mean((lower <= truth) & (truth <= upper)))
        row[f"width{int(level * 100)}"] = float(np.mean(upper - lower))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="sim-teacher", choices=["sim-teacher", "hsi-sim"])
    parser.add_argument("--methods", nargs="*", default=list(METHODS))
    parser.add_argument("--replicates", type=int, default=1,
                        help="data seeds 0..R-1 (the fit seed follows the data seed)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    rows = []
    for rep in range(args.replicates):
        if args.dataset == "sim-teacher":
            data = uz.datasets.load("sim-teacher", n_train=1000, seed=rep)
        else:
            data = uz.datasets.load("hsi-sim", seed=rep)
        spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(10, 10))
        if rep == 0:
            print(data)
        for name in args.methods:
            row = evaluate(name, METHODS[name], data, spec, seed=rep)
            row["replicate"] = rep
            rows.append(row)
            print(f"  {name:26s} S={row['S']:5d} fit {row['fit_s']:6.1f} s  "
                  f"80%: cover {row['cover80']:.3f} width {row['width80']:.3f}  "
                  f"95%: cover {row['cover95']:.3f} width {row['width95']:.3f}", flush=True)
    import pandas as pd

    table = pd.DataFrame(rows).groupby("method", sort=False).mean(numeric_only=True)
    print(f"\n{args.dataset}, mean over {args.replicates} replicate(s):")
    print(table.drop(columns=["replicate"]).round(3).to_string())
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
