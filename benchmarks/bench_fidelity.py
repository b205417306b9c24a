"""Benchmark: ``uz.fidelity`` against one ``summarize`` of each of its two posteriors.

Issue #21's claim: fidelity on 10⁶ points × 1000 draws streams in the
evaluator's chunks (memory O(draws × chunk)) within 2× of one ``summarize``
of both posteriors. Measured here at a reduced size, in one process, side by
side: S = 1000 draws for each of two posteriors of a 200-10-10-1 tanh network
over N = 100,000 points (``--points`` changes N).

The two arms do the same work on the same inputs: the same two draw sets, the
same X, the same worker count (the default, the cores available), each arm's
every draw pushed through the network at every point. The ``summarize`` arm
asks for the single 90 % level that fidelity compares. Both arms are run in
alternation, ``--repeats`` times, and the best of each is reported (the
machine may be shared; the load average is printed before and after).

The posteriors are stand-ins (i.i.d. Gaussian draws around one network), the
reference one labelled "hmc" with diagnostics that pass the reference gate:
what is timed is the streaming, not the sampler.

Run ``python benchmarks/bench_fidelity.py`` (a few minutes on 2 cores) or
``--points 5000 --repeats 1`` for a smoke run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

import uqzoo as uz
from uqzoo.fidelity import fidelity
from uqzoo.predictive import default_workers


def stand_in(spec: uz.MLPSpec, seed: int, num_draws: int, reference: bool) -> uz.Posterior:
    rng = np.random.default_rng(seed)
    centre = spec.init_params(seed=123)
    draws = {k: (v[None] + 0.3 * rng.normal(size=(num_draws, *v.shape))).astype(np.float32)
             for k, v in centre.items()}
    diagnostics = {}
    if reference:
        ess = np.full((10, 1), float(num_draws))
        diagnostics = {"data_fingerprint": "sha256:" + "0" * 64,
                       "rhat_predictive": np.ones((10, 1)), "ess_bulk_predictive": ess,
                       "ess_tail_predictive": ess, "rhat_lp": 1.0,
                       "ess_bulk_lp": float(num_draws), "ess_tail_lp": float(num_draws),
                       "num_divergent": 0}
    return uz.Posterior(spec=spec, method="hmc" if reference else "swag", config={},
                        seed=seed, draws=draws, sample_shape=(4, num_draws // 4),
                        diagnostics=diagnostics)


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads: robust to other jobs."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spec = uz.MLPSpec(200, 2, hidden=(10, 10))
    reference = stand_in(spec, 0, args.draws, reference=True)
    method = stand_in(spec, 1, args.draws, reference=False)
    X = np.random.default_rng(2).normal(size=(args.points, 200)).astype(np.float32)
    workers = default_workers()
    print(f"N={args.points:,}, S={args.draws} per posterior, 200-10-10-1 tanh, "
          f"{workers} workers, load average before {os.getloadavg()}")
    # Warm both paths once on a small slice (thread pools, allocator, torch kernels).
    fidelity(method, reference, X[:2000], workers=workers)
    reference.summarize(X[:2000], levels=(0.9,), workers=workers)

    summarize_s, fidelity_s, summarize_cpu, fidelity_cpu = [], [], [], []
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), cpu_seconds()
        reference.summarize(X, levels=(0.9,), workers=workers)
        method.summarize(X, levels=(0.9,), workers=workers)
        summarize_s.append(time.perf_counter() - t0)
        summarize_cpu.append(cpu_seconds() - c0)
        t0, c0 = time.perf_counter(), cpu_seconds()
        fid = fidelity(method, reference, X, workers=workers)
        fidelity_s.append(time.perf_counter() - t0)
        fidelity_cpu.append(cpu_seconds() - c0)
    result = {
        "points": args.points, "draws": args.draws, "workers": workers,
        "two_summarize_s": min(summarize_s), "fidelity_s": min(fidelity_s),
        "ratio_wall": min(fidelity_s) / min(summarize_s),
        "two_summarize_cpu_s": min(summarize_cpu), "fidelity_cpu_s": min(fidelity_cpu),
        "ratio_cpu": min(fidelity_cpu) / min(summarize_cpu),
        "all_two_summarize_s": summarize_s, "all_fidelity_s": fidelity_s,
        "peak_rss_mib": peak_rss_mib(), "load_after": os.getloadavg(),
    }
    print(fid)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
