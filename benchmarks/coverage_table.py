"""Coverage of every method's intervals on well- and mis-specified truths, over seeds.

The successor of ``sim_teacher_coverage.py``. For each truth and each seed,
``uz.compare`` fits all seven methods with their defaults on one common draw
budget (``num_draws``, 1000: HMC, MF-VI, MC dropout, SWAG and Laplace draw
that many; ensembles and bootstraps make one draw per member, 40) and
evaluates them on the test points against the exact ``p_true_test``. The
only option changed is HMC's number of chains (2, one per core; still 1000
draws in all). Reported per method and truth: coverage of the 80 % and 95 %
equal-tailed intervals (the share of test points whose true probability
they hold; nominal 0.80 / 0.95) and their mean width, each as the mean over
the R seeds with its Monte Carlo standard error sd / √R across seeds (each
seed draws a new training set, test set and fit, so the seeds are
independent replicates), the draws S, how many fits converged by the
method's own check, and the fit time.

Truths (n_train and n_test as given; p = 5 features; the fitted network is
2 × 10 tanh throughout):

- ``teacher-iid`` (well specified): ``sim-teacher`` with its default 2 × 10
  tanh teacher, weights iid N(0, 1), fitted with that very spec and prior
  (``MLPSpec(..., prior="iid")``) -- the truth is a draw from the prior HMC
  samples.
- ``teacher-relu`` (mis-specified): a 30-unit ReLU teacher with fan-in
  N(0, 2²/fan_in) weights (teacher_seed 1), fitted with the default spec.
- ``gaussian-mixture`` (mis-specified): two Gaussian classes, the exact Bayes
  posterior, default options, default spec.
- ``nonlinear-logistic`` (mis-specified): a logistic model on sin,
  interaction, square and abs features, default spec.

Usage (about 40 minutes on 2 cores with the defaults)::

    python benchmarks/coverage_table.py --seeds 5 --out coverage.csv

Per-seed rows are written to ``--out`` (CSV) after every comparison, and a
run given an existing ``--out`` skips the (truth, seed) pairs already in it.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

# Two JAX CPU devices so that HMC's two chains run in parallel; this must
# happen before JAX is first used.
import jax

jax.config.update("jax_num_cpu_devices", 2)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import uqzoo as uz  # noqa: E402

LEVELS = (0.8, 0.95)
# label -> (data set, its options, spec options, specification)
TRUTHS: dict[str, tuple[str, dict, dict, str]] = {
    "teacher-iid": ("sim-teacher", {}, {"prior": "iid"}, "well specified"),
    "teacher-relu": ("sim-teacher", {"teacher_hidden": (30,), "teacher_activation": "relu",
                                     "teacher_prior": "fan_in", "teacher_prior_scale": 2.0,
                                     "teacher_seed": 1}, {}, "mis-specified"),
    "gaussian-mixture": ("gaussian-mixture", {}, {}, "mis-specified"),
    "nonlinear-logistic": ("nonlinear-logistic", {}, {}, "mis-specified"),
}
CONFIGS = {"hmc": {"num_chains": 2}}


def run_one(truth: str, seed: int, n_train: int, n_test: int) -> list[dict]:
    name, options, spec_options, specification = TRUTHS[truth]
    data = uz.datasets.load(name, n_train=n_train, n_test=n_test, seed=seed, **options)
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(10, 10), **spec_options)
    result = uz.compare(data, spec=spec, seed=seed, levels=LEVELS, configs=CONFIGS,
                        progress_bar=False, detectors=False)
    rows = []
    for method, row in result.table.iterrows():
        out = {"truth": truth, "specification": specification, "seed": seed,
               "method": method, "num_draws": int(row["num_draws"]),
               "converged": row["converged"], "fit_seconds": float(row["fit_seconds"])}
        for level in LEVELS:
            key = f"{level:g}"
            out[f"coverage@{key}"] = float(row[f"coverage@{key}"])
            out[f"interval_width@{key}"] = float(row[f"interval_width@{key}"])
        rows.append(out)
    return rows


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean and Monte Carlo standard error over seeds, per truth and method."""
    out = []
    for truth in [t for t in TRUTHS if t in set(rows["truth"])]:
        for method in [m for m in uz.methods.names() if m in set(rows["method"])]:
            group = rows[(rows["truth"] == truth) & (rows["method"] == method)]
            r = len(group)
            if r == 0:
                continue
            flags = group["converged"].astype(str)
            converged = int(flags.isin(["True", "true"]).sum())
            checked = int(flags.isin(["True", "true", "False", "false"]).sum())
            row = {"truth": truth, "method": method, "seeds": r,
                   "S": int(group["num_draws"].median()),
                   "converged": f"{converged}/{r}" if checked else "no check",
                   "fit_s": group["fit_seconds"].mean()}
            for level in LEVELS:
                key = f"{level:g}"
                for metric in ("coverage", "interval_width"):
                    values = group[f"{metric}@{key}"].to_numpy(dtype=float)
                    row[f"{metric}@{key}"] = values.mean()
                    row[f"{metric}@{key}_se"] = (values.std(ddof=1) / np.sqrt(r) if r > 1
                                                 else np.nan)
            out.append(row)
    return pd.DataFrame(out).set_index(["truth", "method"])


def markdown(summary: pd.DataFrame) -> str:
    lines = []
    for truth in summary.index.get_level_values("truth").unique():
        spec = TRUTHS[truth][3]
        lines += [f"\n**{truth}** ({spec})\n",
                  "| method | S | cover 80 % | width 80 % | cover 95 % | width 95 % "
                  "| converged | fit s |",
                  "|---|---|---|---|---|---|---|---|"]
        for method, row in summary.loc[truth].iterrows():
            cells = [method, str(row["S"])]
            for key in ("0.8", "0.95"):
                cells.append(f"{row[f'coverage@{key}']:.2f} ± {row[f'coverage@{key}_se']:.2f}")
                cells.append(f"{row[f'interval_width@{key}']:.3f}")
            cells += [row["converged"], f"{row['fit_s']:.0f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="data/fit seeds 0..R-1")
    parser.add_argument("--truths", nargs="*", default=list(TRUTHS), choices=list(TRUTHS))
    parser.add_argument("--n-train", type=int, default=500)
    parser.add_argument("--n-test", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("coverage_table.csv"))
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    rows = pd.read_csv(args.out) if args.out.exists() else pd.DataFrame()
    start = time.perf_counter()
    for seed in range(args.seeds):
        for truth in args.truths:
            if len(rows) and ((rows["truth"] == truth) & (rows["seed"] == seed)).any():
                continue
            t = time.perf_counter()
            new = pd.DataFrame(run_one(truth, seed, args.n_train, args.n_test))
            rows = pd.concat([rows, new], ignore_index=True)
            rows.to_csv(args.out, index=False)
            print(f"{truth} seed {seed}: {time.perf_counter() - t:.0f} s "
                  f"(elapsed {time.perf_counter() - start:.0f} s)", flush=True)
    summary = summarise(rows[rows["truth"].isin(args.truths)])
    print(markdown(summary))
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
