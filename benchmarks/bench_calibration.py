"""Benchmark: uqzoo's calibration metrics against torchmetrics and netcal, one process.

N = 10,000,000 binary predictions (K = 2, confidences uniform, labels drawn
from them: a calibrated forecaster). Each implementation computes the same
metric with 15 equal-width bins; every call is timed several times,
interleaved, and the best time kept (the machine may be shared; the load
average is printed). The ratio is the peer's time over ours (> 1: we are
faster). The values are printed too: torchmetrics' multiclass path sums in
float32, which shows at this N.

Run ``python benchmarks/bench_calibration.py`` (about a minute), or
``--n 1000000`` for a quicker run. netcal and torchmetrics are the ``bench``
extra; a missing one is skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import uqzoo.metrics as M


def best_of(fn, repeats):
    best, value = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, float(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-netcal", action="store_true")
    args = parser.parse_args()
    print("load average before:", os.getloadavg())
    rng = np.random.default_rng(0)
    p1 = rng.uniform(size=args.n)
    probs = np.column_stack([1 - p1, p1])
    y = (rng.uniform(size=args.n) < p1).astype(np.int64)

    cases = {
        "ECE top-label": {"uqzoo": lambda: M.ece(probs, y)},
        "MCE top-label": {"uqzoo": lambda: M.mce(probs, y)},
        "RMSCE top-label": {"uqzoo": lambda: M.rmsce(probs, y)},
        "ECE positive-class": {"uqzoo": lambda: M.ece(probs, y, confidence="positive_class")},
        "MCE positive-class": {"uqzoo": lambda: M.mce(probs, y, confidence="positive_class")},
    }
    try:
        import torch
        from torchmetrics.functional.classification import (
            binary_calibration_error,
            multiclass_calibration_error,
        )
        pt, yt, p1t = torch.from_numpy(probs), torch.from_numpy(y), torch.from_numpy(p1)
        for name, norm in (("ECE", "l1"), ("MCE", "max"), ("RMSCE", "l2")):
            cases[f"{name} top-label"]["torchmetrics"] = (
                lambda norm=norm: multiclass_calibration_error(pt, yt, num_classes=2, n_bins=15,
                                                               norm=norm))
        cases["ECE positive-class"]["torchmetrics"] = (
            lambda: binary_calibration_error(p1t, yt, n_bins=15))
        cases["MCE positive-class"]["torchmetrics"] = (
            lambda: binary_calibration_error(p1t, yt, n_bins=15, norm="max"))
    except ImportError:
        print("torchmetrics not installed: skipped (pip install 'uqzoo[bench]')")
    if not args.skip_netcal:
        try:
            from netcal.metrics import ECE, MCE
            # netcal measures binary problems on P(y = 1) -- the positive-class
            # variant -- whether given p1 or the (N, 2) matrix (checked: same value).
            cases["ECE positive-class"]["netcal"] = lambda: ECE(bins=15).measure(p1, y)
            cases["MCE positive-class"]["netcal"] = lambda: MCE(bins=15).measure(p1, y)
        except ImportError:
            print("netcal not installed: skipped (pip install 'uqzoo[bench]')")

    results = []
    for metric, impls in cases.items():
        times = {name: [float("inf"), None] for name in impls}
        for _ in range(args.repeats):            # interleave to share any load fairly
            for name, fn in impls.items():
                t, v = best_of(fn, 1)
                times[name][0] = min(times[name][0], t)
                times[name][1] = v
        ours = times["uqzoo"][0]
        for name, (t, v) in times.items():
            row = dict(metric=metric, impl=name, seconds=round(t, 3), value=v,
                       ratio_vs_uqzoo=round(t / ours, 2))
            results.append(row)
            print(f"{metric:20s} {name:13s} {t:7.3f} s  value {v:.10f}  "
                  f"peer/uqzoo time {t / ours:5.2f}")
    print("load average after:", os.getloadavg())
    print(json.dumps(dict(n=args.n, results=results)))


if __name__ == "__main__":
    main()
