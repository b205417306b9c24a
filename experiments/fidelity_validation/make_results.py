"""Do fidelity ranks agree with coverage ranks? Tables and a figure from the study store.

    python experiments/fidelity_validation/make_results.py fidelity.sqlite

Per replicate (one data set, all seven methods fitted on it and scored against
its gated reference posterior) the methods are ranked

- by **coverage error**: |coverage of p_true − nominal|, averaged over the
  study's levels (0.5, 0.8, 0.9, 0.95); rank 1 = closest to nominal. This is
  what "coverage rank" means in issue #21 and what the seed study reports.
- by the **interval score** of p_true (Gneiting & Raftery 2007), averaged over
  the same levels; rank 1 = lowest. A proper score: it also rewards narrow
  intervals, so it is the better "which intervals are best" criterion, but it
  is not a coverage rank; given beside it.
- by **fidelity**: the mean per-point 1-Wasserstein distance to the reference
  (rank 1 = smallest) and the interval-overlap share (rank 1 = largest).

For each replicate Spearman's rank correlation between a coverage-side and a
fidelity-side ranking is computed (positive: the methods closest to the exact
posterior are those whose intervals cover best); over replicates its median,
interquartile range and a 95 % bootstrap interval of the median (resampling
replicates, 10,000 times) are reported, per data set, with all seven methods
and with the six approximations alone (HMC, a second exact run, is closest to
the reference by construction). Replicates whose reference failed its gate, or
that lack a method, are left out and counted.

Writes, next to this file, ``results/per_task.csv``, ``results/correlations.csv``,
``results/mean_ranks.csv`` and ``results/fidelity_vs_coverage.png``, and prints
the README's tables (markdown).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter
from scipy.stats import spearmanr

import uqzoo as uz

HERE = Path(__file__).resolve().parent
METHOD_ORDER = ["hmc", "bootstrap", "laplace", "mfvi", "mc_dropout", "swag", "ensemble"]
# (name, column, ascending: rank 1 = smallest value)
COVERAGE_SIDE = [("coverage error", "coverage_error", True),
                 ("interval score", "interval_score", True)]
FIDELITY_SIDE = [("W1 to reference", "fidelity_wasserstein1", True),
                 ("interval overlap", "fidelity_interval_overlap", False),
                 ("|log width ratio|", "abs_log_width_ratio", True)]
N_BOOTSTRAP = 10_000


def per_task(store: Path, ids: set[str]) -> pd.DataFrame:
    """One row per finished task of the study: labels, coverage error, interval score
    (both means over levels), coverage at 0.8 and the fidelity scores."""
    results = uz.study.load(store)
    results = results[results.task_id.isin(ids)].copy()
    results["abs_error"] = (results.coverage - results.level).abs()
    keep = ["task_id", "dataset", "method", "replicate", "data_seed", "fit_seconds",
            "reference_seconds", "reference_gate_passed",
            *[c for c in results.columns if c.startswith("fidelity_")]]
    tasks = results.groupby("task_id").first()[keep[1:]].reset_index()
    errors = results.groupby("task_id").abs_error.mean().rename("coverage_error")
    cov08 = (results[np.isclose(results.level, 0.8)].set_index("task_id").coverage
             .rename("coverage@0.8"))
    tasks = tasks.join(errors, on="task_id").join(cov08, on="task_id")
    # The interval score is in each task's report (EvalReport.to_dict), per level.
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        reports = dict(con.execute("SELECT task_id, report_json FROM tasks "
                                   "WHERE status = 'done'").fetchall())
    finally:
        con.close()

    def interval_score(task_id: str) -> float:
        report = json.loads(reports[task_id])
        values = [v for k, v in report.items() if k.startswith("interval_score@")]
        return float(np.mean(values)) if values else float("nan")

    tasks["interval_score"] = tasks.task_id.map(interval_score)
    # Width against the reference's, as a distance: too narrow and too wide alike.
    tasks["abs_log_width_ratio"] = np.abs(np.log(tasks.fidelity_width_ratio))
    return tasks


def usable(tasks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The replicates with a gated reference and all seven methods, and a count of the
    others per data set."""
    groups = tasks.groupby(["dataset", "replicate"])
    complete = groups.method.transform("nunique") == len(METHOD_ORDER)
    gated = groups.reference_gate_passed.transform(lambda s: bool(s.fillna(False).all()))
    counts = (tasks.assign(complete=complete, gated=gated)
              .groupby(["dataset", "replicate"])[["complete", "gated"]].first()
              .groupby("dataset").agg(replicates=("complete", "size"),
                                      complete=("complete", "sum"), gated=("gated", "sum")))
    return tasks[complete & gated].copy(), counts


def rank_correlations(tasks: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """Spearman's rho per data set, replicate and (coverage-side, fidelity-side) pair."""
    rows = []
    for (dataset, replicate), one in tasks[tasks.method.isin(methods)].groupby(
            ["dataset", "replicate"]):
        for c_name, c_col, _ in COVERAGE_SIDE:
            for f_name, f_col, f_ascending in FIDELITY_SIDE:
                # both sides oriented so that a small value is good
                fidelity = one[f_col] if f_ascending else -one[f_col]
                if fidelity.nunique() < 2 or one[c_col].nunique() < 2:
                    rho = float("nan")               # a constant ranking has no correlation
                else:
                    rho = spearmanr(one[c_col], fidelity).statistic
                rows.append({"dataset": dataset, "replicate": replicate, "coverage_side": c_name,
                             "fidelity_side": f_name, "rho": float(rho)})
    return pd.DataFrame(rows)


def summarize_rho(rhos: pd.DataFrame, methods_label: str, seed: int = 0) -> pd.DataFrame:
    """Median, IQR and a bootstrap 95 % interval of the median over replicates."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, one in rhos.groupby(["dataset", "coverage_side", "fidelity_side"], sort=False):
        values = one.rho.to_numpy()
        undefined = int((~np.isfinite(values)).sum())     # a ranking without ties broken:
        values = values[np.isfinite(values)]              # every method scored the same
        if not values.size:
            rows.append({"dataset": key[0], "methods": methods_label, "coverage_side": key[1],
                         "fidelity_side": key[2], "n_replicates": 0, "undefined": undefined})
            continue
        boot = np.median(rng.choice(values, size=(N_BOOTSTRAP, values.size)), axis=1)
        rows.append({"dataset": key[0], "methods": methods_label, "coverage_side": key[1],
                     "fidelity_side": key[2], "n_replicates": values.size,
                     "median": np.median(values), "q25": np.quantile(values, 0.25),
                     "q75": np.quantile(values, 0.75), "boot_low": np.quantile(boot, 0.025),
                     "boot_high": np.quantile(boot, 0.975), "mean": values.mean(),
                     "positive": int((values > 0).sum()), "undefined": undefined})
    return pd.DataFrame(rows)


def mean_ranks(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per data set and method: mean rank under each criterion (rank 1 best, over the
    seven methods of each replicate) and the mean of each criterion's value."""
    frame = tasks.copy()
    columns = []
    for _, col, ascending in COVERAGE_SIDE + FIDELITY_SIDE:
        frame[f"rank_{col}"] = frame.groupby(["dataset", "replicate"])[col].rank(
            ascending=ascending)
        columns += [f"rank_{col}", col]
    values = ["coverage@0.8", "fidelity_width_ratio", "fidelity_agreement",
              "fidelity_total_variation", "fit_seconds"]
    out = frame.groupby(["dataset", "method"])[columns + values].mean()
    out["n_replicates"] = frame.groupby(["dataset", "method"]).size()
    out = out.reset_index()
    out["method"] = pd.Categorical(out.method, METHOD_ORDER, ordered=True)
    return out.sort_values(["dataset", "method"]).reset_index(drop=True)


def figure(tasks: pd.DataFrame) -> Figure:
    """Per data set: each method's mean W1 to the reference against its mean coverage
    error, with the spread over replicates (interquartile bars)."""
    datasets = list(dict.fromkeys(tasks.dataset))
    fig = Figure(figsize=(4.6 * len(datasets), 3.9), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(datasets)))
    for ax, dataset in zip(axes, datasets, strict=True):
        one = tasks[tasks.dataset == dataset]
        for i, method in enumerate(METHOD_ORDER):
            m = one[one.method == method]
            if m.empty:
                continue
            x, y = m.fidelity_wasserstein1, m.coverage_error
            ax.errorbar(x.median(), y.median(),
                        xerr=[[x.median() - x.quantile(0.25)], [x.quantile(0.75) - x.median()]],
                        yerr=[[y.median() - y.quantile(0.25)], [y.quantile(0.75) - y.median()]],
                        fmt="o", color=f"C{i}", label=method, capsize=2)
        ax.set_xlabel("W1 to the reference posterior (mean over test points)")
        ax.set_ylabel("coverage error |coverage − level|, mean over levels")
        ax.set_title(f"{dataset}\n({one.replicate.nunique()} data sets; median, IQR)",
                     fontsize=9)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())     # minor labels overlap
    axes[0].legend(fontsize=7)
    return fig


def markdown(frame: pd.DataFrame, formats: dict[str, str]) -> str:
    head = list(formats)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(
            "n/a" if isinstance(row[c], float) and not np.isfinite(row[c])
            else (f"{row[c]:{f}}" if f else str(row[c])) for c, f in formats.items()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    ids = {task.id for task in uz.study.expand(HERE / "study.toml")}
    tasks = per_task(args.store, ids)
    good, counts = usable(tasks)
    args.out.mkdir(parents=True, exist_ok=True)
    tasks.to_csv(args.out / "per_task.csv", index=False)
    approximations = [m for m in METHOD_ORDER if m != "hmc"]
    correlations = pd.concat([
        summarize_rho(rank_correlations(good, METHOD_ORDER), "all 7"),
        summarize_rho(rank_correlations(good, approximations), "6 (without hmc)")])
    correlations.to_csv(args.out / "correlations.csv", index=False)
    ranks = mean_ranks(good)
    ranks.to_csv(args.out / "mean_ranks.csv", index=False)
    figure(good).savefig(args.out / "fidelity_vs_coverage.png", dpi=110)

    print(f"{len(tasks)} of {len(ids)} tasks done; replicates per data set "
          f"(all 7 methods done / reference gate passed):")
    print(counts.to_string(), "\n")
    correlations["spread"] = correlations.apply(
        lambda r: f"[{r.q25:+.2f}, {r.q75:+.2f}]" if r.n_replicates else "n/a", axis=1)
    correlations["95 % CI of median"] = correlations.apply(
        lambda r: f"[{r.boot_low:+.2f}, {r.boot_high:+.2f}]" if r.n_replicates else "n/a",
        axis=1)
    print(markdown(correlations, {"dataset": "", "methods": "", "coverage_side": "",
                                  "fidelity_side": "", "n_replicates": "d", "median": "+.2f",
                                  "spread": "", "95 % CI of median": "", "positive": ".0f",
                                  "undefined": "d"}))
    print()
    print(markdown(ranks, {"dataset": "", "method": "", "rank_coverage_error": ".1f",
                           "rank_interval_score": ".1f", "rank_fidelity_wasserstein1": ".1f",
                           "rank_fidelity_interval_overlap": ".1f",
                           "rank_abs_log_width_ratio": ".1f", "coverage@0.8": ".3f",
                           "coverage_error": ".3f", "interval_score": ".4f",
                           "fidelity_wasserstein1": ".4f",
                           "fidelity_interval_overlap": ".4f",
                           "fidelity_width_ratio": ".2f", "n_replicates": "d"}))
    # The mean ranks themselves: does the order over all replicates agree?
    print()
    for dataset, one in ranks.groupby("dataset", sort=False):
        for c_name, c_col, _ in COVERAGE_SIDE:
            cells = []
            for f_name, f_col, _ in FIDELITY_SIDE:
                rho = spearmanr(one[f"rank_{c_col}"], one[f"rank_{f_col}"]).statistic
                cells.append(f"{f_name} {rho:+.2f}")
            print(f"{dataset}: mean {c_name} rank vs mean rank by " + ", ".join(cells))


if __name__ == "__main__":
    main()
