"""Tables and figures of the seed study, from its store.

    python experiments/seed_study/make_results.py seed_study.sqlite

writes, next to this file, ``results/summary.csv`` (coverage, width, HCS, ECE,
Brier, NLL and fit time per truth × method × level, with Monte Carlo standard
errors across replicates), ``results/coverage.png``,
``results/width_coverage.png`` and ``results/ece.png``, and prints the
README's table (markdown). Only the tasks of the current ``study.toml`` are
used: a store that also holds tasks of an earlier version of the file (other
options hash to other task ids) gives the same results as a fresh one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

import uqzoo as uz
from uqzoo.study import plots

HERE = Path(__file__).resolve().parent
METHOD_ORDER = ["hmc", "bootstrap", "laplace", "mfvi", "mc_dropout", "swag", "ensemble",
                "sgld", "sghmc", "csgmcmc"]


def markdown_table(summary: pd.DataFrame, levels=(0.8, 0.95)) -> str:
    """Coverage ± MC s.e. and mean width at ``levels``, one row per method, truths side by side."""
    datasets = list(dict.fromkeys(summary.dataset))
    head = ["method"]
    for dataset in datasets:
        short = dataset.split(" (")[0]
        head += [f"{short}: coverage@{level:g}" for level in levels]
        head.append(f"{short}: width@{levels[0]:g}")
    head += ["fit s (median)", "reps"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for method in METHOD_ORDER:
        cells = [method]
        rows = summary[summary.method == method]
        if rows.empty:
            continue
        for dataset in datasets:
            one = rows[rows.dataset == dataset].set_index("level")
            for level in levels:
                r = one.loc[level]
                cells.append(f"{r.coverage:.3f} ± {r.coverage_mcse:.3f}")
            cells.append(f"{one.loc[levels[0]].interval_width:.3f}")
        cells.append(f"{rows.fit_seconds_median.iloc[0]:.1f}")
        cells.append(f"{int(rows.n_replicates.min())}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    ids = {task.id for task in uz.study.expand(HERE / "study.toml")}
    results = uz.study.load(args.store)
    results = results[results.task_id.isin(ids)]
    summary = uz.study.summarize(results)
    # Fit time is skewed (compilation in a worker's first task): the median over all
    # of a method's tasks, besides the per-setting means.
    medians = (results.drop_duplicates("task_id").groupby("method")
               .fit_seconds.median().rename("fit_seconds_median").reset_index())
    summary = summary.merge(medians, on="method", how="left")
    args.out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out / "summary.csv", index=False)
    for name, fig in [("coverage", plots.coverage_plot(summary)),
                      ("width_coverage", plots.width_coverage_plot(summary)),
                      ("ece", plots.metric_plot(summary, "ece"))]:
        fig.savefig(args.out / f"{name}.png", dpi=110)
    n_tasks = results.task_id.nunique()
    print(f"{n_tasks} of {len(ids)} tasks done\n")
    print(markdown_table(summary))


if __name__ == "__main__":
    main()
