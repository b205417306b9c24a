"""Where the SG-MCMC defaults come from: a step-size sweep on development data only.

    nice -n 15 python benchmarks/sgmcmc_defaults.py [--steps 1e-3,1e-2,...] [--hmc]

Development data: ``sim-teacher`` with p = 2, n_train = 1,000 and a teacher
the seed study never uses (``teacher_seed=7``, data ``seed=424242``; the study
uses teacher_seed 0 and hashed data seeds), the study's network (2 × 10 tanh,
N(0, 1) prior on every weight). Judged against

- the truth: coverage of p_true by the 80 % and 95 % intervals on 2,000 test
  points (sim-teacher's probabilities are known);
- with ``--hmc``, also an HMC run of the same network, prior and data (4
  chains × 500 draws after 500 warm-up): top-label agreement and predictive
  W₁ (``uz.fidelity``, ``require_gate=False`` -- the run is a yardstick);

and each method's own diagnostics (max predictive R-hat, logit spread ratio,
one-point flag) and wall time, for each step size per training row. Prints a
markdown table (the one in benchmarks/README.md, "SG-MCMC defaults").
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import uqzoo as uz


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="1e-4,1e-3,1e-2,3e-2,1e-1")
    parser.add_argument("--methods", default="sgld,sghmc,csgmcmc")
    parser.add_argument("--hmc", action="store_true", help="also judge against an HMC run")
    args = parser.parse_args(argv)
    data = uz.datasets.load("sim-teacher", p=2, n_train=1000, n_test=2000, seed=424242,
                            teacher_seed=7, teacher_prior="iid")
    spec = uz.MLPSpec(2, 2, hidden=(10, 10), prior="iid")
    ref, rows = None, []
    if args.hmc:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = uz.fit("hmc", spec, data, seed=1, num_warmup=500, num_samples=2000,
                         num_chains=4, progress_bar=False)
        rows.append(("hmc", "-", _judge(ref, ref, data, time.perf_counter() - t0, own=True)))
    for method in args.methods.split(","):
        for step in (float(s) for s in args.steps.split(",")):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                post = uz.fit(method, spec, data, seed=1, step_size=step, progress_bar=False)
            rows.append((method, f"{step:g}", _judge(post, ref, data,
                                                     time.perf_counter() - t0)))
            print(method, step, rows[-1][2], flush=True)
    head = ("| method | step_size | agreement | W1 | coverage@0.8 | coverage@0.95 | width@0.8 "
            "| max R-hat | spread ratio | one point | s |")
    print("\n" + head + "\n" + "|---" * 11 + "|")
    for method, step, r in rows:
        print(f"| {method} | {step} | {r['agreement']} | {r['w1']} | {r['coverage']:.3f} | "
              f"{r['coverage95']:.3f} | {r['width']:.3f} | {r['rhat']:.3f} | {r['ratio']} | "
              f"{r['one_point']} | {r['seconds']:.1f} |")


def _judge(post, ref, data, seconds, own=False):
    """One table row's numbers for ``post``."""
    report = uz.evaluate(post, data, levels=(0.8, 0.95))
    cov, width = report.value("coverage", 0.8), report.value("interval_width", 0.8)
    agreement, w1 = "-", "-"
    if ref is not None and not own:
        fid = uz.fidelity(post, ref, data.X_test, require_gate=False)
        agreement = f"{fid['agreement'].value:.3f}"
        w1 = f"{fid['wasserstein1'].value:.4f}"
    d = post.diagnostics
    ratio = d.get("logit_spread_ratio")
    return {"agreement": agreement, "w1": w1, "coverage": cov,
            "coverage95": report.value("coverage", 0.95), "width": width,
            "rhat": float(np.nanmax(d["rhat_predictive"])) if np.any(
                np.isfinite(d["rhat_predictive"])) else float("nan"),
            "ratio": "-" if ratio is None else f"{ratio:.3g}",
            "one_point": d.get("one_point", "-"), "seconds": seconds}


if __name__ == "__main__":
    main()
