"""Run the seed study on a SLURM or PBS cluster through dask-jobqueue.

    pip install "uqzoo[dask]" dask-jobqueue
    python experiments/seed_study/run_cluster.py --scheduler slurm --jobs 8 \
        --config experiments/seed_study/jobqueue.yaml --store seed_study.sqlite

The driver (this script) runs where it can reach the nodes -- a login node, or
a small long job -- starts the Dask scheduler, asks the batch system for
``--jobs`` worker jobs (``jobqueue.yaml``: 16 single-threaded workers each)
and hands the study to ``uz.study.run``. It alone writes the store: keep the
store on a local disk of the driver's machine (SQLite's WAL mode needs one),
not on NFS/Lustre, and copy it out when done. Stop it at any time; run the
same command again and it does only the unfinished tasks.

``--dry-run`` checks the study file and the jobqueue settings and prints the
plan without dask-jobqueue or a cluster.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _read_config(path: Path) -> dict:
    import yaml

    with open(path) as handle:
        config = yaml.safe_load(handle)
    if not isinstance(config, dict) or "jobqueue" not in config:
        raise SystemExit(f"{path}: not a dask-jobqueue config (no top-level 'jobqueue' key)")
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--study", type=Path, default=HERE / "study.toml")
    parser.add_argument("--store", type=Path, default=Path("seed_study.sqlite"))
    parser.add_argument("--scheduler", choices=("slurm", "pbs"), default="slurm")
    parser.add_argument("--config", type=Path, default=HERE / "jobqueue.yaml",
                        help="dask-jobqueue settings, merged into dask.config")
    parser.add_argument("--jobs", type=int, default=8, help="worker jobs to keep running")
    parser.add_argument("--retry-failed", action="store_true")
    parser.add_argument("--dry-run", action="store_true",
                        help="check the study and the settings, print the plan, run nothing")
    args = parser.parse_args(argv)

    import uqzoo as uz

    study = uz.study.read_study(args.study)          # a bad study fails here, before any job
    config = _read_config(args.config)
    settings = config["jobqueue"][args.scheduler]
    workers = args.jobs * int(settings["processes"])
    print(f"{study.name}: {len(study.tasks())} tasks; {args.jobs} {args.scheduler} jobs × "
          f"{settings['processes']} workers = {workers} workers; store {args.store}")
    if args.dry_run:
        return 0

    import dask
    from dask_jobqueue import PBSCluster, SLURMCluster

    dask.config.update(dask.config.config, config, priority="new")
    cluster_class = {"slurm": SLURMCluster, "pbs": PBSCluster}[args.scheduler]
    with cluster_class() as cluster:
        print(cluster.job_script())
        # adapt, not scale: jobs that reach their walltime are replaced.
        cluster.adapt(minimum_jobs=args.jobs, maximum_jobs=args.jobs)
        summary = uz.study.run(study, store=args.store, executor="dask",
                               address=cluster.scheduler_address, threads=1,
                               retry_failed=args.retry_failed)
    print(f"{summary.done} done, {summary.failed} failed, {summary.remaining} remaining in "
          f"{summary.seconds / 3600:.1f} h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
