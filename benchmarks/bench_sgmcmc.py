"""SG-MCMC against full-batch NUTS: wall time to reach a stated closeness to a gated
HMC reference, side by side in one process.

    nice -n 15 python benchmarks/bench_sgmcmc.py [--n 100000] [--methods sgld,sghmc,csgmcmc]

Problem: ``sim-teacher`` (p = 2, default fan-in teacher and prior), the 2 × 10
tanh network, ``--n`` training rows, 2,000 test points. Every arm fits the
*same* ``MLPSpec`` object to the *same* ``ClassificationData`` object (asserted:
equal specs, and ``uz.fidelity(..., data=data)`` checks each posterior against
the reference's data fingerprint), so prior, data and network are equal.

The reference is ``uz.reference_posterior`` (4 chains × 1,000 draws after
1,000 warm-up, or ``--reference-draws``; gated all the same: R-hat ≤ 1.01,
bulk/tail ESS ≥ 400), seed 0; its time is reported but is not part of any arm.

Closeness, the same yardsticks for every arm: on the test points, top-label
agreement ≥ ``--agreement`` (0.99) and predictive W₁ to the reference at most a
fraction (``--fractions``: 0.5, 0.25, 0.1) of the reference's own spread, the
mean over the test points of the sd of its draws of p. A fixed W₁ (0.02 was
tried) says nothing on large data, where the posterior is narrow: at 5,000 rows
every arm met it on its first rung. A tenth of the spread is a mean shift of
0.1 sd, or a sd about 12 % off, at every point, whatever N. Each arm runs a
ladder of budgets, doubling its length, until it meets the strictest fraction
or runs out of rungs, and the table gives, per fraction, the wall time
(compilation included, as a user pays it) of the first rung that meets it:

- NUTS (``hmc``, 4 chains × 250 draws, seed 1): warm-up 50, 100, 200, ...
- SG-MCMC (seed 1, defaults otherwise): num_steps = 1,000, 2,000, 4,000, ...
  (``csgmcmc`` from 16,000: its 4 cycles must hold 250 draws each) with
  num_burnin a quarter of them.

The draw budget is the same in every rung: S = 1,000 (uqzoo compare's).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import uqzoo as uz
from uqzoo.reference import reference_gate

S = 1000


def _rungs(method: str, n_rungs: int):
    for r in range(n_rungs):
        if method == "hmc":
            yield {"num_warmup": 50 * 2**r, "num_samples": S, "num_chains": 4}
        else:
            steps = (16_000 if method == "csgmcmc" else 1000) * 2**r
            yield {"num_steps": steps, "num_burnin": steps // 4, "num_samples": S}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--methods", default="sgld,sghmc,csgmcmc")
    parser.add_argument("--agreement", type=float, default=0.99)
    parser.add_argument("--fractions", default="0.5,0.25,0.1",
                        help="W1 allowed, as shares of the reference's mean predictive sd")
    parser.add_argument("--rungs", type=int, default=7)
    parser.add_argument("--reference", help="a saved reference posterior (.nc) to reuse")
    parser.add_argument("--reference-draws", type=int, default=4000,
                        help="the reference's kept draws, 4 chains (gated all the same)")
    parser.add_argument("--save-reference", help="where to save the reference")
    args = parser.parse_args(argv)

    data = uz.datasets.load("sim-teacher", p=2, n_train=args.n, n_test=2000, seed=0)
    spec = uz.MLPSpec(2, 2, hidden=(10, 10))
    t0 = time.perf_counter()
    if args.reference:
        ref = uz.load_posterior(args.reference)
        ref_seconds = float("nan")
    else:
        ref = uz.reference_posterior(spec, data, seed=0, progress_bar=False,
                                     num_samples=args.reference_draws)
        ref_seconds = time.perf_counter() - t0
        if args.save_reference:
            ref.save(args.save_reference)
    assert ref.spec == spec
    gate = reference_gate(ref)
    print(f"reference: n={args.n}, {ref_seconds:.0f} s, gate passed={gate.passed} "
          f"(R-hat max {gate.rhat_max:.4f}, ESS bulk/tail min {gate.ess_bulk_min:.0f}/"
          f"{gate.ess_tail_min:.0f})", flush=True)
    if not gate.passed:
        print("reference failed its gate:", *gate.messages, sep="\n  ")
        return
    spread = float(np.mean(np.std(ref.predict_proba_draws(data.X_test)[..., 1], axis=0)))
    fractions = sorted((float(f) for f in args.fractions.split(",")), reverse=True)
    print(f"reference spread (mean sd of p over the test points) {spread:.4f}", flush=True)
    reached: dict[tuple[str, float], tuple] = {}
    methods = ["hmc", *args.methods.split(",")]
    for method in methods:
        for options in _rungs(method, args.rungs):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                post = uz.fit(method, spec, data, seed=1, progress_bar=False, **options)
            seconds = time.perf_counter() - t0
            assert post.spec == spec       # the same network and prior as the reference
            assert post.num_draws == S     # the same draw budget in every arm
            fid = uz.fidelity(post, ref, data.X_test, data=data)
            agree, w1 = fid["agreement"].value, fid["wasserstein1"].value
            print(f"  {method} {options}: {seconds:.1f} s, agreement {agree:.4f}, "
                  f"W1 {w1:.5f} ({w1 / spread:.2f} of the spread)", flush=True)
            for f in fractions:
                if (method, f) not in reached and agree >= args.agreement and w1 <= f * spread:
                    reached[method, f] = (options, seconds, w1)
            if (method, fractions[-1]) in reached:
                break
    print(f"\nFirst rung with agreement ≥ {args.agreement} and W1 ≤ the fraction × the "
          f"reference's spread ({spread:.4f}); wall s (budget):\n")
    print("| method | " + " | ".join(f"W1 ≤ {f:g} × spread" for f in fractions) + " |")
    print("|---" * (len(fractions) + 1) + "|")
    for method in methods:
        cells = []
        for f in fractions:
            if (method, f) in reached:
                options, seconds, w1 = reached[method, f]
                budget = ", ".join(f"{k}={v}" for k, v in options.items() if k != "num_samples")
                cells.append(f"{seconds:.1f} ({budget})")
            else:
                cells.append(f"not in {args.rungs} rungs")
        print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
