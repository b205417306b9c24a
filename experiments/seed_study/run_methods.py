"""Run only some methods' tasks of the seed study, into a store of their own.

    python experiments/seed_study/run_methods.py sgld,sghmc,csgmcmc --store sgmcmc.sqlite \
        [--workers 1] [--threads 1] [--replicates R]

A method added to ``study.toml`` adds 40 tasks; rerunning the whole study for
them would redo the 280 tasks already tabulated. The tasks of a method are
those ``study.toml`` itself expands to (same ids, same data seeds: a task's
data seed derives from the data setting, replicate and study seed only), so
these results pool with a full run's, and ``make_results.py`` reads them
like any other (``--out`` to keep the committed tables of the other methods).
The store records the same study file (same text, same hash) as a full run.
``--replicates R`` runs replicates 0..R-1 only, on every truth: a short run
gives every cell some replicates, and a later run without it adds the rest
(a replicate's task id does not depend on how many there are).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import uqzoo as uz
from uqzoo.study.studyfile import read_study

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("methods", help="comma-separated method names of study.toml")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--replicates", type=int, default=None,
                        help="only replicates 0..R-1 (default: all of study.toml)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    study = read_study(HERE / "study.toml")
    wanted = args.methods.split(",")
    present = [m.name for m in study.methods]
    missing = sorted(set(wanted) - set(present))
    if missing:
        parser.error(f"not in study.toml: {missing}; its methods are {present}")
    subset = dataclasses.replace(study, methods=tuple(m for m in study.methods
                                                      if m.name in wanted))
    if args.replicates is not None:
        subset = dataclasses.replace(subset, replicates=min(args.replicates, study.replicates))
    summary = uz.study.run(subset, store=args.store, workers=args.workers,
                           threads=args.threads, progress_bar=not args.no_progress)
    print(summary)


if __name__ == "__main__":
    main()
