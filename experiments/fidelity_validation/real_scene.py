"""Closeness to the exact posterior on a real scene: MUUFL Gulfport, brown cloth vs background.

    python experiments/fidelity_validation/real_scene.py --n-train 600 --out muufl_fidelity/

Loads ``muufl-target`` (seed 0: 72 bands, training pixels from one part of the
flight with the brown cloth's spectrum implanted, tested on the real 36 × 36
crop of another part with its 3 real target pixels), keeps a stratified random
``--n-train`` of its 3,884 training pixels (all of them with ``--n-train 0``;
the full set makes a gated reference too slow for a shared 2-core machine),
samples a reference posterior of compare's default network (2×10 tanh, fan-in
prior) with :func:`uqzoo.reference_posterior` and its gate (4 chains × 600 kept
draws after 500 warm-up by default, shorter than the reference defaults), then
compares the six approximations (``--methods``) at compare's quick settings
against it, as ``uqzoo compare
--reference ref.nc --out DIR`` does: ``DIR`` gets ``reference.nc``,
``results.csv``, ``report.html`` and ``fidelity_<method>.png`` /
``fidelity_maps.png``, and the script prints the fidelity table (markdown).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

import uqzoo as uz
from uqzoo.comparison.compare import QUICK_CONFIGS
from uqzoo.fidelity import METRICS
from uqzoo.reference import reference_gate


def training_subset(data: uz.datasets.ClassificationData, n_train: int,
                    seed: int) -> uz.datasets.ClassificationData:
    """``n_train`` training rows drawn without replacement, each class in proportion;
    the test crop, the bands' standardisation (the full training set's) untouched."""
    rng = np.random.default_rng(seed)
    picked = []
    for label in np.unique(data.y_train):
        rows = np.flatnonzero(data.y_train == label)
        share = round(n_train * rows.size / data.y_train.size)
        picked.append(rng.choice(rows, size=share, replace=False))
    rows = np.sort(np.concatenate(picked))
    meta = dict(data.meta)
    meta["abundance_train"] = np.asarray(meta["abundance_train"])[rows]
    meta["training_subset"] = {"n_train": int(rows.size), "of": int(data.y_train.size),
                               "seed": seed}
    return dataclasses.replace(
        data, X_train=data.X_train[rows], y_train=data.y_train[rows], meta=meta,
        coords_train=None if data.coords_train is None else data.coords_train[rows])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-train", type=int, default=600,
                        help="training pixels kept (0: all 3,884)")
    parser.add_argument("--reference-warmup", type=int, default=500,
                        help="warm-up iterations per chain (reference default 1,000)")
    parser.add_argument("--reference-samples", type=int, default=2400,
                        help="kept draws over the 4 chains (reference default 4,000)")
    parser.add_argument("--methods", default="mfvi,mc_dropout,ensemble,bootstrap,swag,laplace",
                        help="add hmc for a second, independent NUTS run (compare's quick "
                             "settings: 2 chains)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")

    data = uz.datasets.load("muufl-target", seed=0)
    if args.n_train:
        data = training_subset(data, args.n_train, seed=0)
    print(f"muufl-target: {data.y_train.size} training pixels ({int(data.y_train.sum())} "
          f"target), {data.y_test.size} test pixels ({int(data.y_test.sum())} target)")
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=(10, 10))
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # one chain after another: on this shared 2-core machine faster than the
    # vectorized chains "auto" picks for this size (see study.toml)
    ref = uz.reference_posterior(spec, data, seed=1, num_warmup=args.reference_warmup,
                                 num_samples=args.reference_samples,
                                 chain_method="sequential", progress_bar=False)
    t1 = time.perf_counter()
    ref.save(args.out / "reference.nc")
    gate = reference_gate(ref)
    print(f"reference: {t1 - t0:.0f} s; gate passed: {gate.passed} (R-hat max "
          f"{gate.rhat_max:.4f}, bulk/tail ESS min {gate.ess_bulk_min:.0f}/"
          f"{gate.ess_tail_min:.0f}, divergence rate {gate.divergence_rate:.2g})")
    for message in gate.messages:
        print("  ", message)
    methods = args.methods.split(",")
    result = uz.compare(data, methods, model=spec, seed=0,
                        configs={m: QUICK_CONFIGS.get(m, {}) for m in methods},
                        reference=ref if gate.passed else None, progress_bar=False)
    t2 = time.perf_counter()
    print(f"compare: {t2 - t1:.0f} s")
    result.table.to_csv(args.out / "results.csv")
    uz.write_report(result, args.out / "report.html", data=data)
    if result.fidelity:
        shown = dict(result.fidelity)
        for name, fid in shown.items():
            uz.plots.fidelity_plot(fid).savefig(args.out / f"fidelity_{name}.png", dpi=120)
        uz.plots.fidelity_maps(shown, data).savefig(args.out / "fidelity_maps.png", dpi=120)
        head = ["method", *METRICS, "fit s", "detection AUROC", "failed"]
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for name, fid in shown.items():
            row = result.table.loc[name]
            cells = [f"{fid[m].value:.4f} ({fid[m].mc_floor:.4f})" for m in METRICS]
            print(f"| {name} | " + " | ".join(cells)
                  + f" | {row.fit_seconds:.0f} | {row.detection_auroc:.3f} | {row.failed} |")
    print(uz.report.verdict(result))


if __name__ == "__main__":
    main()
