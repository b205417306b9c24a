"""Ensembles, MC dropout, MF-VI, HMC and TTA under a held-out domain and label noise.

A small version of the experiment of Mehrtens et al. (2023): methods fitted on the left
half of an ``hsi-sim`` scene, with 0 / 10 / 20 % of the training labels flipped, and judged
on the right half with no shift, a weak and a strong held-out domain (another illumination
and clutter mix, exact truth). The test half is cut into regions, the groups over which the
median ECE is taken. Every cell is the mean over replicates with its Monte Carlo standard
error (sd / √R); each replicate draws its own scene and fits with its own seed.

Usage::

    python experiments/shift_and_noise/run.py [--config config.toml] [--out results.csv]

writes ``results.csv`` (one row per replicate × shift × noise × method) and
``table.md`` (the means ± MC errors) beside the config, and prints the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

import uqzoo as uz

HERE = Path(__file__).parent
METRICS = ("auarc", "ece_group_median", "ece", "balanced_accuracy")


def _with_regions(data: uz.ClassificationData, regions: int) -> uz.ClassificationData:
    """Each test pixel's group: its cell of a regions × regions grid over the test half."""
    size = data.meta["image_shape"][0]
    half = size // 2
    rows, cols = data.coords_test[:, 0], data.coords_test[:, 1] - half
    groups = (rows * regions // size) * regions + cols * regions // (size - half)
    return dataclasses.replace(data, groups_test=groups.astype(np.int64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(HERE / "config.toml"))
    parser.add_argument("--out", default=str(HERE / "results.csv"))
    args = parser.parse_args()
    config = tomllib.loads(Path(args.config).read_text())
    levels = tuple(config["levels"])
    rows = []
    start = time.perf_counter()
    seeds = np.random.SeedSequence(config["seed"]).generate_state(config["replicates"])
    for replicate, seed in enumerate(int(s) % 2**31 for s in seeds):
        for shift in config["shifts"]:
            clean = uz.datasets.load("hsi-sim", seed=seed, domain_shift=shift,
                                     progress_bar=False, **config["data"])
            clean = _with_regions(clean, config["regions"])
            for rate in config["label_noise"]:
                data = uz.datasets.with_label_noise(clean, rate, seed=seed) if rate else clean
                spec = uz.MLPSpec(data.n_features, data.n_classes,
                                  hidden=tuple(config["spec"]["hidden"]))
                for method, options in config["methods"].items():
                    t0 = time.perf_counter()
                    post = uz.fit(method, spec, data, seed=seed, progress_bar=False, **options)
                    report = uz.evaluate(post, data, levels=levels)
                    d = report.to_dict()
                    rows.append({"replicate": replicate, "shift": shift, "label_noise": rate,
                                 "method": method, **{m: d.get(m, np.nan) for m in METRICS},
                                 **{f"coverage@{lv:g}": d[f"coverage@{lv:g}"] for lv in levels},
                                 "failed": d["failed"], "seconds": time.perf_counter() - t0})
                    print(f"[{time.perf_counter() - start:6.0f} s] replicate {replicate} "
                          f"{shift:6s} noise {rate:.1f} {method:10s} "
                          f"AUARC {d['auarc']:.3f} ECE med {d['ece_group_median']:.3f}",
                          flush=True)
    results = pd.DataFrame(rows)
    results.to_csv(args.out, index=False)
    table = summarize(results, levels)
    text = _markdown(table)
    Path(args.out).with_name("table.md").write_text(text + "\n")
    print(text)
    print(f"total {time.perf_counter() - start:.0f} s")


def _markdown(table: pd.DataFrame) -> str:
    """A GitHub table (pandas' to_markdown needs tabulate, which uqzoo does not depend on)."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |",
             "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def summarize(results: pd.DataFrame, levels: tuple[float, ...]) -> pd.DataFrame:
    """Mean ± Monte Carlo error (sd / √R over replicates) of each metric per cell."""
    columns = [*METRICS, *(f"coverage@{lv:g}" for lv in levels)]
    out = []
    for (shift, rate, method), cell in results.groupby(["shift", "label_noise", "method"],
                                                       sort=False):
        row = {"shift": shift, "label noise": rate, "method": method}
        for c in columns:
            values = cell[c].to_numpy(float)
            se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else np.nan
            row[c] = f"{values.mean():.3f} ± {se:.3f}"
        row["failed fits"] = f"{int(cell['failed'].sum())}/{len(cell)}"
        out.append(row)
    return pd.DataFrame(out)


if __name__ == "__main__":
    main()
