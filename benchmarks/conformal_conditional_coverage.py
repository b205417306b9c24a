"""Exact conditional coverage of label sets, per method, plain vs conformalized (issue #23).

For each data set with known true probabilities, ``uz.compare`` fits every
method (quick settings, the comparison's common draw budget) on 80 % of the
training data and calibrates split-conformal LAC sets at ``--level`` on the
other 20 % (stratified, seed ``--seed``). Each method's *own* set is its most
probable labels until their posterior-mean probability reaches the level
(uncalibrated); its *conformal* set is the calibrated one. On the test points
the truth gives each set's exact conditional coverage P(y ∈ C(x) | x) =
Σ_{k∈C(x)} p_true,k(x): the table shows its mean (= expected marginal
coverage), the mean over the worst 10 % of points, the share of points below
the level, and the mean set size.

    nice -n 15 python benchmarks/conformal_conditional_coverage.py
    nice -n 15 python benchmarks/conformal_conditional_coverage.py --methods map,laplace \\
        --datasets gaussian-mixture
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import uqzoo as uz
from uqzoo.comparison.compare import QUICK_CONFIGS


def rows_of(data_name: str, methods: list[str], level: float, seed: int) -> list[dict]:
    data = uz.datasets.load(data_name, seed=seed)
    start = time.perf_counter()
    result = uz.compare(data, methods, seed=seed, levels=(0.8,),
                        configs={m: QUICK_CONFIGS.get(m, {}) for m in methods},
                        conformal=level, progress_bar=False)
    seconds = time.perf_counter() - start
    rows = []
    for name, report in result.reports.items():
        judged = report.conformal
        row = {"data": data_name, "method": name}
        for what, sets in (("own", judged.plain), ("conformal", judged.conformal)):
            cond = sets.conditional_coverage
            row[f"{what} cov"] = float(np.mean(cond))
            row[f"{what} worst10%"] = sets.worst_decile_coverage
            row[f"{what} <level"] = float(np.mean(cond < level))
            row[f"{what} size"] = sets.mean_size
        rows.append(row)
    print(f"# {data_name}: {len(methods)} methods in {seconds:.0f} s, "
          f"{result.conformal['n_calibration']} calibration points, "
          f"{data.n_test} test points", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="gaussian-mixture,sim-teacher")
    parser.add_argument("--methods", default="map,laplace,ensemble,bootstrap,swag,mc_dropout,"
                                              "mfvi,hmc")
    parser.add_argument("--level", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default=None, help="also write the table here")
    args = parser.parse_args()
    methods = args.methods.split(",")
    rows = []
    for name in args.datasets.split(","):
        rows += rows_of(name, methods, args.level, args.seed)
    table = pd.DataFrame(rows)
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(f"\nlevel {args.level:g}; cov: mean exact conditional coverage; worst10%: its mean "
          f"over the worst 10 % of test points; <level: share of points below the level; "
          f"size: mean labels per set\n")
    print(markdown(table))


def markdown(table: pd.DataFrame) -> str:
    """A GitHub table, numbers to 3 decimals (no tabulate dependency)."""
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(table.columns) + " |",
             "|" + "|".join("--:" if t.kind == "f" else "---" for t in table.dtypes) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in table.itertuples(index=False)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
