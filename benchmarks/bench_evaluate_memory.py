"""Benchmark: peak memory of ``uz.evaluate`` on a Posterior, streamed.

S = 1000 parameter draws of a 10-10-10-1 tanh network (K = 2) over
N = 1,000,000 test points, levels (0.5, 0.8, 0.9, 0.95), through the
streaming path: ``evaluate`` cuts X_test into chunks and calls
``Posterior.summarize`` (the predictive engine) on each, so the (S, N, K)
draws -- 8 GB in float32 -- never exist. Target: peak resident memory under
2 GiB for the whole process.

Reported: peak RSS of the process (``ru_maxrss``, which includes the
interpreter, torch and the data), the RSS before the call, wall time, and
what the report keeps per point. ``--n`` and ``--draws`` shrink the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--features", type=int, default=10)
    args = parser.parse_args()

    import uqzoo as uz
    from uqzoo.evaluate import evaluate
    from uqzoo.posterior import Posterior

    print("load average before:", os.getloadavg())
    spec = uz.MLPSpec(args.features, 2, hidden=(10, 10))
    post = Posterior(spec=spec, method="random-draws", config={}, seed=0,
                     draws=spec.init_params(seed=0, num=args.draws))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.features)).astype(np.float32)
    y = rng.integers(0, 2, args.n)
    p_true = rng.dirichlet([1, 1], size=args.n)
    data = uz.ClassificationData(X[:100], y[:100], X, y, n_classes=2, p_true_test=p_true)
    before = rss_mib()
    t = time.perf_counter()
    report = evaluate(post, data, levels=(0.5, 0.8, 0.9, 0.95), progress_bar=True)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB -> MiB on Linux
    kept = sum(a.nbytes for a in (report.mean, report.interval_width, report.hcs_positive,
                                  report.hcs_negative, report.expected_entropy))
    result = dict(n=args.n, draws=args.draws, wall_s=round(wall, 1),
                  rss_before_mib=round(before), peak_rss_mib=round(peak),
                  under_2GiB=bool(peak < 2048), report_arrays_mib=round(kept / 2**20),
                  draws_if_materialised_mib=round(args.draws * args.n * 2 * 4 / 2**20))
    print(report.summary())
    print("load average after:", os.getloadavg())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
