"""How often SG-MCMC's convergence flag fires on fits that are right, and on ones that are not.

    nice -n 15 python benchmarks/sgmcmc_flag_rates.py [--seeds 10] [--methods sgld,sghmc,csgmcmc]

Development data only (as ``sgmcmc_defaults.py``): ``sim-teacher`` p = 2,
n_train = 1,000, n_test = 2,000, ``teacher_seed=7`` (the seed study uses 0),
data seeds 424242 + k, well specified (``teacher_prior="iid"`` and the iid
N(0, 1) fit prior), the 2 × 10 tanh network. Per data seed and method, at the
method's defaults and at a step size 50× smaller (a run known to be wrong:
``sgmcmc_defaults.py`` measured its coverage far below nominal), it records
coverage of p_true by the 80 % and 95 % intervals, the predictive R-hat over
the diagnostic points (max, 90th percentile, median), the smallest and the
median bulk ESS, the logit spread ratio and the method's verdict
(``converged``), and prints one row per fit and a summary per (method, step):
how often each candidate rule fires. The rule uqzoo uses is chosen from this
table (benchmarks/README.md, "SG-MCMC: what the convergence flag means").
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

import uqzoo as uz


def _row(method, step_label, k, post, data, seconds):
    report = uz.evaluate(post, data, levels=(0.8, 0.95))
    d = post.diagnostics
    rhat = np.asarray(d["rhat_predictive"], float)
    ess = np.asarray(d["ess_bulk_predictive"], float)
    return {
        "method": method, "step": step_label, "seed": k, "seconds": round(seconds, 1),
        "coverage80": report.value("coverage", 0.8),
        "coverage95": report.value("coverage", 0.95),
        "rhat_max": float(np.nanmax(rhat)), "rhat_q90": float(np.nanquantile(rhat, 0.9)),
        "rhat_median": float(np.nanmedian(rhat)),
        "ess_min": float(np.nanmin(ess)), "ess_median": float(np.nanmedian(ess)),
        "spread_ratio": float(d["logit_spread_ratio"]), "converged": bool(post.converged),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="data seeds 424242 + first_seed + k (0: the 8 that chose "
                        "the rule; 8: the 8 that checked it)")
    parser.add_argument("--methods", default="sgld,sghmc,csgmcmc")
    parser.add_argument("--small-factor", type=float, default=50.0,
                        help="the wrong run's step size is the default's over this")
    parser.add_argument("--json", default=None, help="write every row here")
    args = parser.parse_args(argv)
    spec = uz.MLPSpec(2, 2, hidden=(10, 10), prior="iid")
    rows = []
    for k in range(args.first_seed, args.first_seed + args.seeds):
        data = uz.datasets.load("sim-teacher", p=2, n_train=1000, n_test=2000,
                                seed=424242 + k, teacher_seed=7, teacher_prior="iid")
        for method in args.methods.split(","):
            default = uz.methods.get(method).Config().step_size
            for label, step in (("default", default), ("small", default / args.small_factor)):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    post = uz.fit(method, spec, data, seed=1 + k, step_size=step,
                                  progress_bar=False)
                rows.append(_row(method, label, k, post, data, time.perf_counter() - t0))
                print(json.dumps(rows[-1]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("\n| method | step | fits | coverage@0.8 (median) | coverage@0.95 | R-hat max "
          "(median [range]) | R-hat q90 | ESS min (median) | flagged now | max > 1.05 "
          "| max > 1.1 | q90 > 1.3 |")
    print("|---" * 12 + "|")
    for method in args.methods.split(","):
        for label in ("default", "small"):
            sel = [r for r in rows if r["method"] == method and r["step"] == label]
            if not sel:
                continue
            col = {key: np.array([r[key] for r in sel]) for key in sel[0]}
            print(f"| {method} | {label} | {len(sel)} | {np.median(col['coverage80']):.3f} "
                  f"| {np.median(col['coverage95']):.3f} "
                  f"| {np.median(col['rhat_max']):.3f} [{col['rhat_max'].min():.3f}, "
                  f"{col['rhat_max'].max():.3f}] | {np.median(col['rhat_q90']):.3f} "
                  f"| {np.median(col['ess_min']):.0f} "
                  f"| {int((~col['converged']).sum())} | {int((col['rhat_max'] > 1.05).sum())} "
                  f"| {int((col['rhat_max'] > 1.1).sum())} "
                  f"| {int((col['rhat_q90'] > 1.3).sum())} |")


if __name__ == "__main__":
    main()
