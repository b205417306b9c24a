"""Time generating a 200 × 200 ``hsi-sim`` scene with its exact ``p_true``.

Target (issue 2): under a minute. Side by side in the same process, the
straightforward truth: one full-covariance Gaussian log-density
(``scipy.stats.multivariate_normal``, a Cholesky factorisation per
hypothesis) for every (a_vis, component) cell, timed on a subset of cells
and scaled to all of them.

Run:  python benchmarks/bench_hsi_sim.py [--size 200] [--naive-cells 30]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import multivariate_normal

import uqzoo.datasets as datasets
from uqzoo.datasets import hsi_sim


def naive_seconds(data, n_cells: int) -> tuple[float, int]:
    """Seconds the straightforward truth would take on the whole test half.

    Times ``n_cells`` of the (a_vis, component) cells of the prior -- one scipy
    full-covariance log-density over all test pixels each -- and scales by the
    number of cells with a non-zero prior; every cell costs the same (same
    dimension, same pixels). Agreement of the two truths is tested in
    tests/datasets/test_hsi_sim.py (brute force on a small scene).
    """
    opts = data.meta["options"]
    band_idx = np.unique(np.round(np.linspace(0, 210, opts["n_bands"])).astype(int))
    model = hsi_sim.SceneModel(opts["target"], opts["noise"], band_idx)
    covs = [(vec * lam) @ vec.T for lam, vec in zip(model.eigvals, model.eigvecs, strict=True)]
    X = data.X_test.astype(np.float64) * data.meta["scale"] + data.meta["mean"]
    values, counts = data.meta["prior"]["visible_values"], data.meta["prior"]["counts"]
    cells = np.argwhere(counts.sum(axis=2) > 0)
    chosen = cells[np.random.default_rng(0).choice(len(cells), min(n_cells, len(cells)),
                                                   replace=False)]
    eye = np.eye(band_idx.size)
    start = time.perf_counter()
    for i, c in chosen:
        v = values[i]
        mean = v * model.target + (1 - v) * model.means[c]
        cov = (1 - v) ** 2 * covs[c] + opts["noise"] ** 2 * eye
        multivariate_normal(mean, cov).logpdf(X)
    elapsed = time.perf_counter() - start
    return elapsed * len(cells) / len(chosen), len(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--naive-cells", type=int, default=30)
    args = parser.parse_args()

    datasets.load("hsi-sim", size=16, n_bands=5)  # warm imports and the library file
    start = time.perf_counter()
    data = datasets.load("hsi-sim", size=args.size, seed=args.seed, progress_bar=True)
    total = time.perf_counter() - start
    p1 = data.p_true_test[:, 1]
    timing = data.meta["timing_s"]
    print(f"hsi-sim {args.size}x{args.size}, {data.n_features} bands, seed {args.seed}")
    print(f"  total {total:.2f} s (layout + spectra {timing['sample']:.2f} s, "
          f"exact p_true of {data.n_test} test pixels {timing['truth']:.2f} s)  "
          f"target: < 60 s")
    print(f"  distinct a_vis values {data.meta['prior']['visible_values'].size}, "
          f"components {len(hsi_sim.COMPONENTS)}")
    print(f"  uncertain test pixels (0.05 < p_true < 0.95): {np.mean((p1 > .05) & (p1 < .95)):.2%}"
          f"  (issue: 4-12 %)")
    print(f"  class balance: train {data.y_train.mean():.2%} target, "
          f"test {data.y_test.mean():.2%} target")

    if args.naive_cells > 0:
        naive, n_cells = naive_seconds(data, args.naive_cells)
        print(f"  straightforward truth (scipy multivariate_normal per cell, {n_cells} cells): "
              f"~{naive:.0f} s, {naive / timing['truth']:.0f}x the eigenbasis truth "
              f"(timed on {min(args.naive_cells, n_cells)} cells, scaled)")

if __name__ == "__main__":
    main()
