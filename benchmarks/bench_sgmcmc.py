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

Closeness (the stopping rule, the same for every arm): on the test points,
top-label agreement ≥ ``--agreement`` (0.99) and predictive W₁ ≤ ``--w1``
(0.02, on probabilities) to the reference. Each arm runs a ladder of budgets,
doubling its length, and reports the wall time (compilation included, as a
user pays it) of the first rung that meets the rule:

- NUTS (``hmc``, 4 chains × 250 draws, seed 1): warm-up 50, 100, 200, ...
- SG-MCMC (seed 1, defaults otherwise): num_steps = 1,000, 2,000, 4,000, ...
  with num_burnin a quarter of them.

The draw budget is the same in every rung: S = 1,000 (uqzoo compare's).
"""

from __future__ import annotations

import argparse
import time
import warnings

import uqzoo as uz
from uqzoo.reference import reference_gate

S = 1000


def _rungs(method: str, n_rungs: int):
    for r in range(n_rungs):
        if method == "hmc":
            yield {"num_warmup": 50 * 2**r, "num_samples": S, "num_chains": 4}
        else:
            steps = 1000 * 2**r
            yield {"num_steps": steps, "num_burnin": steps // 4, "num_samples": S}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--methods", default="sgld,sghmc,csgmcmc")
    parser.add_argument("--agreement", type=float, default=0.99)
    parser.add_argument("--w1", type=float, default=0.02)
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
    results = []
    for method in ["hmc", *args.methods.split(",")]:
        reached = None
        for options in _rungs(method, args.rungs):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                post = uz.fit(method, spec, data, seed=1, progress_bar=False, **options)
            seconds = time.perf_counter() - t0
            assert post.spec == spec       # the same network and prior as the reference
            fid = uz.fidelity(post, ref, data.X_test, data=data)
            agree, w1 = fid["agreement"].value, fid["wasserstein1"].value
            print(f"  {method} {options}: {seconds:.1f} s, agreement {agree:.4f}, "
                  f"W1 {w1:.4f}", flush=True)
            if agree >= args.agreement and w1 <= args.w1:
                reached = (options, seconds, agree, w1)
                break
        results.append((method, reached))
    print(f"\n| method | budget reaching agreement ≥ {args.agreement} and W1 ≤ {args.w1} "
          f"| wall s | agreement | W1 |\n|---|---|---|---|---|")
    for method, reached in results:
        if reached is None:
            print(f"| {method} | not reached in {args.rungs} rungs | - | - | - |")
        else:
            options, seconds, agree, w1 = reached
            budget = ", ".join(f"{k}={v}" for k, v in options.items())
            print(f"| {method} | {budget} | {seconds:.1f} | {agree:.4f} | {w1:.4f} |")


if __name__ == "__main__":
    main()
