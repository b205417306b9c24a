"""How often the failure detector (uqzoo.evaluate.FitFailure) fires on fits that are right.

Issue #26, item 1: a fit is ``failed`` only when the method failed, not when
the data are hard. Two cases of fits that are right, per seed:

``logistic``
    A well-specified Bayesian logistic regression: ``sim-teacher`` with
    ``teacher_hidden=()``, ``teacher_prior="iid"``, p = 2, n_train 1000,
    n_test 2500, data seed = replicate; Laplace with ``hidden=()``,
    ``prior="iid"`` (~0.5 s a fit). 20 seeds by default.
``hmc``
    HMC on the seed study's well-specified teacher (experiments/seed_study:
    sim-teacher p = 2, n_train 1000, n_test 2000, teacher_seed 0, teacher
    prior iid; 2×10 tanh, prior iid; 4 chains × 250 draws after 500 warm-up,
    data and fit seed = replicate; judged at the study's levels and δ, read
    from its study.toml). ~2 min a fit on a free core. The predictive draws
    are cached under ``--cache`` so the detector can be re-run on them.

Prints, per seed, coverage at 0.8 and the flags by severity, then the counts.

    python benchmarks/failure_false_alarms.py logistic --seeds 20
    python benchmarks/failure_false_alarms.py hmc --seeds 5 --cache /tmp/hmc_draws
    python benchmarks/failure_false_alarms.py hmc --seeds 20 --cache /tmp/hmc_draws --cached-only
"""

from __future__ import annotations

import argparse
import os
import time
import tomllib
from pathlib import Path

import numpy as np

import uqzoo as uz

# The seed study's levels and HCS threshold: its failure flags were raised at
# every one of its levels, so the false-alarm rate is measured at the same.
with open(Path(__file__).parents[1] / "experiments/seed_study/study.toml", "rb") as _f:
    _STUDY = tomllib.load(_f)["study"]
STUDY_LEVELS, STUDY_DELTA = tuple(_STUDY["levels"]), float(_STUDY["delta"])


def logistic(seed: int):
    data = uz.datasets.load("sim-teacher", p=2, n_train=1000, n_test=2500, seed=seed,
                            teacher_hidden=(), teacher_prior="iid")
    spec = uz.MLPSpec(2, 2, hidden=(), prior="iid")
    post = uz.fit("laplace", spec, data, seed=seed, progress_bar=False)
    return data, post.predict_proba_draws(data.X_test)


def hmc(seed: int, cache: Path | None):
    data = uz.datasets.load("sim-teacher", p=2, n_train=1000, n_test=2000, seed=seed,
                            teacher_seed=0, teacher_prior="iid")
    file = None if cache is None else cache / f"hmc_seed{seed}.npy"
    if file is not None and file.exists():
        return data, np.load(file)
    spec = uz.MLPSpec(2, 2, hidden=(10, 10), prior="iid")
    post = uz.fit("hmc", spec, data, seed=seed, progress_bar=False, num_warmup=500,
                  num_samples=1000, num_chains=4, target_accept=0.8,
                  chain_method="sequential")
    draws = post.predict_proba_draws(data.X_test).astype(np.float32)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        np.save(file, draws)
    return data, draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["logistic", "hmc"])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--cached-only", action="store_true",
                        help="hmc: judge only the seeds whose draws are in --cache (no fit)")
    args = parser.parse_args()
    failed = warned = 0
    seeds = range(args.first, args.first + args.seeds)
    if args.cached_only and args.cache is None:
        parser.error("--cached-only needs --cache")
    if args.cached_only:
        seeds = [s for s in seeds if (args.cache / f"hmc_seed{s}.npy").exists()]
    for seed in seeds:
        start = time.perf_counter()
        data, draws = logistic(seed) if args.case == "logistic" else hmc(seed, args.cache)
        levels, delta = ((0.8, 0.95), 0.2) if args.case == "logistic" else (STUDY_LEVELS,
                                                                             STUDY_DELTA)
        report = uz.evaluate(draws.astype(np.float64), data.y_test, levels=levels,
                             delta=delta, p_true=data.p_true_test)
        hard = [f.kind for f in report.failures]
        soft = [f.kind for f in getattr(report, "fit_warnings", ())]
        failed += bool(hard)
        warned += bool(soft)
        print(f"seed {seed:2d}: coverage@0.8 {report.to_dict()['coverage@0.8']:.3f}  "
              f"failed {hard or '-'}  warning {soft or '-'}  "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
        for f in report.failures:
            print(f"    FAILED {f.kind}: {f.message}")
    n = len(seeds)
    print(f"{args.case}: failed in {failed} of {n} seeds, warning in {warned} of {n}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
