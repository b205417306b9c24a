"""Benchmark: ``uz.summarize`` against the FLOP bound and a straightforward numpy summary.

The workload of issue 2: S = 1000 parameter draws of a 200-10-10-1 tanh
network over N = 1,000,000 points, levels (0.5, 0.8, 0.9, 0.95). Measured in
one process, side by side:

1. the machine's float32 matrix-multiply peak (a large square sgemm through
   torch, best of several), which turns the network's FLOP count into a lower
   bound on the time of any exact method;
2. ``uqzoo.summarize`` (wall and CPU time, peak resident memory during the
   call, points × draws per second, ratio to the bound);
3. the straightforward numpy approach -- materialise the (S, chunk)
   probabilities chunk by chunk with numpy matrix products and call
   ``np.mean`` and ``np.quantile`` -- on a subset of the points (it is too
   slow to run on all of them), timed and scaled linearly to N. Its results
   on the subset are compared with uqzoo's and asserted equal within float32
   rounding: the two arms do the same work (same draws, points and levels).

Run ``python benchmarks/bench_summarize.py`` for the full figure (a few
minutes) or ``--quick`` for a small smoke run. The machine may be shared:
the load average is printed before and after so a slow figure can be judged.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import sys
import time

import numpy as np
import torch

import uqzoo as uz

LEVELS = (0.5, 0.8, 0.9, 0.95)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS counter (Linux >= 4.0); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def rss_mib(field: str) -> float:
    """VmRSS (current) or VmHWM (peak) of this process, MiB, from /proc."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def matmul_peak_gflops(size: int, repeats: int) -> float:
    """Best float32 GFLOP/s of a (size × size) @ (size × size) torch product."""
    a = torch.randn(size, size, generator=torch.Generator().manual_seed(0))
    b = torch.randn(size, size, generator=torch.Generator().manual_seed(1))
    out = torch.empty(size, size)
    torch.mm(a, b, out=out)  # warm-up: thread pool, page faults
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b, out=out)
        best = min(best, time.perf_counter() - start)
    return 2.0 * size**3 / best / 1e9


def single_core_peak_gflops(size: int, repeats: int) -> float:
    """Best float32 GFLOP/s of one core, timed in thread CPU time.

    CPU time only advances while the thread runs, so this figure, and the
    CPU-time ratio built on it, hold even on a machine shared with other
    jobs, where wall-clock figures are diluted by the other jobs' load.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a = torch.randn(size, size, generator=torch.Generator().manual_seed(0))
        b = torch.randn(size, size, generator=torch.Generator().manual_seed(1))
        out = torch.empty(size, size)
        torch.mm(a, b, out=out)
        best = float("inf")
        for _ in range(repeats):
            start = time.thread_time()
            torch.mm(a, b, out=out)
            best = min(best, time.thread_time() - start)
    finally:
        torch.set_num_threads(before)
    return 2.0 * size**3 / best / 1e9


def network_flops(spec: uz.MLPSpec, num_draws: int, num_points: int) -> float:
    """Multiply-add FLOPs of all layers of all draws at all points."""
    sizes = spec.layer_sizes
    per_draw_point = sum(2 * a * b for a, b in itertools.pairwise(sizes))
    return float(per_draw_point) * num_draws * num_points


def make_inputs(n: int, d: int, seed: int) -> np.ndarray:
    """Standard-normal float32 features, generated in blocks to avoid a float64 copy."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, d), dtype=np.float32)
    block = 100_000
    for start in range(0, n, block):
        X[start:start + block] = rng.standard_normal((min(block, n - start), d),
                                                     dtype=np.float32)
    return X


def numpy_summary(spec: uz.MLPSpec, draws: dict, X: np.ndarray, levels, chunk: int):
    """The straightforward approach: (S, chunk) probabilities, then np.quantile."""
    qs = sorted({q for lv in levels for q in ((1 - lv) / 2, (1 + lv) / 2)})
    n_layers = spec.n_layers
    weights = [draws[f"layers.{i}.weight"].transpose(0, 2, 1) for i in range(n_layers)]
    biases = [draws[f"layers.{i}.bias"][:, None, :] for i in range(n_layers)]
    means, quantiles = [], []
    for start in range(0, X.shape[0], chunk):
        h = X[start:start + chunk]
        for i in range(n_layers):
            h = np.matmul(h, weights[i]) + biases[i]          # (S, n, width)
            if i < n_layers - 1:
                h = np.tanh(h)
        p1 = 1.0 / (1.0 + np.exp(-h[..., 0]))                 # (S, n)
        means.append(p1.mean(axis=0))
        quantiles.append(np.quantile(p1, qs, axis=0))
    return np.concatenate(means), np.concatenate(quantiles, axis=1), qs


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small run (N = 20,000, S = 200) to check the script")
    parser.add_argument("--points", type=int, default=None, help="N (default 1,000,000)")
    parser.add_argument("--draws", type=int, default=None, help="S (default 1000)")
    parser.add_argument("--numpy-points", type=int, default=None,
                        help="subset size for the straightforward numpy run (default 20,000)")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    N = args.points or (20_000 if args.quick else 1_000_000)
    S = args.draws or (200 if args.quick else 1000)
    n_numpy = min(N, args.numpy_points or (2_000 if args.quick else 20_000))

    spec = uz.MLPSpec(200, 2, hidden=(10, 10), activation="tanh")
    draws = {k: 2.0 * v for k, v in spec.init_params(seed=0, num=S).items()}
    X = make_inputs(N, spec.in_features, seed=1)
    results = {"N": N, "S": S, "network": "200-10-10-1 tanh", "levels": LEVELS,
               "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
               "load_before": os.getloadavg()}
    print(f"summarize benchmark: N = {N:,}, S = {S}, 200-10-10-1 tanh, levels {LEVELS}, "
          f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()}")

    peak = matmul_peak_gflops(4096 if not args.quick else 2048, repeats=5)
    core_peak = single_core_peak_gflops(2048, repeats=5)
    flops = network_flops(spec, S, N)
    bound = flops / (peak * 1e9)
    cpu_bound = flops / (core_peak * 1e9)
    results.update(peak_gflops=peak, core_peak_gflops=core_peak, flops=flops, bound_s=bound,
                   cpu_bound_s=cpu_bound)
    print(f"float32 matmul peak          {peak:8.1f} GFLOP/s wall, all threads "
          f"({core_peak:.1f} GFLOP/s per core in CPU time)")
    print(f"network FLOPs                {flops:8.3g}  -> bound {bound:.1f} s wall, "
          f"{cpu_bound:.1f} CPU-s")

    rss_before = rss_mib("VmRSS")
    peak_resettable = reset_peak_rss()
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    summary = uz.summarize(spec, draws, X, LEVELS, progress_bar=False)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    rss_peak = rss_mib("VmHWM") if peak_resettable else float("nan")
    results["uqzoo"] = {
        "wall_s": wall, "cpu_s": cpu, "ratio_to_bound": wall / bound,
        "cpu_ratio_to_cpu_bound": cpu / cpu_bound,
        "point_draws_per_s": N * S / wall, "rss_before_mib": rss_before,
        "rss_peak_mib": rss_peak, "rss_peak_minus_before_mib": rss_peak - rss_before,
    }
    print(f"uqzoo.summarize              {wall:8.1f} s wall, {cpu:.1f} s CPU, "
          f"{N * S / wall:.3g} point-draws/s, {wall / bound:.2f}x the bound "
          f"({cpu / cpu_bound:.2f}x in CPU time)")
    print(f"  peak RSS during the call   {rss_peak:8.0f} MiB "
          f"(inputs X alone {X.nbytes / 2**20:.0f} MiB; before the call {rss_before:.0f} MiB)")

    subset = X[:n_numpy]
    t0 = time.perf_counter()
    np_mean, np_q, _qs = numpy_summary(spec, draws, subset, LEVELS, chunk=1000)
    np_wall = time.perf_counter() - t0
    np_scaled = np_wall * N / n_numpy
    ours = np.concatenate([summary.lower[::-1, :n_numpy, 1], summary.upper[:, :n_numpy, 1]])
    max_diff = max(np.abs(np_mean - summary.mean[:n_numpy, 1]).max(),
                   np.abs(np_q - ours).max())
    # Equal work: both arms push the same float32 draws through the same network
    # at the same points and read the same levels, so their answers differ only
    # by the order of float32 sums: a first-layer pre-activation of 201 terms
    # rounds within 201·2⁻²⁴·Σ|xᵢwᵢ| ≈ 1.2e-5·Σ|xᵢwᵢ| (Σ|xᵢwᵢ| is tens here),
    # later layers contract (|tanh'| ≤ 1 on unit-sized weights) and the sigmoid's
    # slope is at most 1/4. A larger difference means the arms did not compute the same thing.
    assert ours.shape == np_q.shape and np_mean.shape == (n_numpy,)
    assert max_diff < 1e-3, f"the two arms disagree by {max_diff:.3g}: not the same work"
    results["numpy"] = {"subset_points": n_numpy, "wall_s_subset": np_wall,
                        "wall_s_scaled_to_N": np_scaled,
                        "speedup_uqzoo": np_scaled / wall, "max_abs_diff_vs_uqzoo": max_diff}
    print(f"numpy + np.quantile          {np_scaled:8.1f} s (measured {np_wall:.1f} s on "
          f"{n_numpy:,} points, scaled x{N / n_numpy:g}); uqzoo is {np_scaled / wall:.1f}x "
          f"faster; max |difference| {max_diff:.2g}")
    results["load_after"] = os.getloadavg()
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
