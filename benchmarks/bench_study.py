"""Benchmark: the study runner -- Dask worker scaling, scheduler and store overhead, load time.

Three figures of issue 14:

1. **Throughput.** One study of ``--tasks`` identical-shape tasks (one data
   setting, replicates only; default: mean-field VI, 10,000 steps on
   n_train = 1,000, about 10 s a task on one core) run on a Dask
   ``LocalCluster`` of 1 worker and of 2 workers, each worker held to one
   thread, into fresh stores. Throughput = tasks / wall time from the start of
   the cluster to the last task recorded; the 2-worker arm's ratio to the
   1-worker arm's is the speed-up. Each worker compiles the method once (its
   first task is slower); a steady-state figure leaves each worker's first
   task out.
2. **Overhead.** Per arm, from the store: each worker's idle time between
   the end of one task and the start of its next (the scheduler's and the
   driver's share: transfer, scheduling, one SQLite transaction per task),
   the driver's time in store writes, and the cluster start-up, each as a
   percentage of the summed task time.
3. **Loading.** A synthetic store of ``--rows`` finished tasks (4 levels
   each, written through ``Store.record`` with fsync off to build it quickly)
   loaded by ``uz.study.load`` into a DataFrame: best of 3.

CPU time per task (``cpu_seconds`` in the store) is printed beside wall time:
on a shared machine a worker whose CPU time is well below its wall time was
waiting for a core, which is what bounds the speed-up, not the scheduler.

    python benchmarks/bench_study.py                      # ~6 minutes on 2 idle cores
    python benchmarks/bench_study.py --tasks 8 --steps 3000   # shorter, on a loaded machine
    python benchmarks/bench_study.py --skip-throughput --rows 100000
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

import uqzoo as uz
from uqzoo.study.store import LEVEL_METRICS, TASK_METRICS, Store

STUDY = """\
[study]
name = "bench"
replicates = {tasks}
levels = [0.5, 0.8, 0.9, 0.95]

[spec]
hidden = [10, 10]

[[datasets]]
name = "sim-teacher"
options = {{ p = 5, n_train = {n_train}, n_test = 2000 }}

[[methods]]
name = "mfvi"
config = {{ num_steps = {steps}, num_samples = 1000 }}
"""


def load_average() -> str:
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def throughput_arm(study_path: Path, store: Path, workers: int) -> dict:
    print(f"  {workers} worker(s): load average before {load_average()}", flush=True)
    t0 = time.perf_counter()
    summary = uz.study.run(study_path, store=store, executor="dask", workers=workers,
                           threads=1, progress_bar=False)
    wall = time.perf_counter() - t0
    assert summary.failed == 0, "a benchmark task failed"
    con = sqlite3.connect(store)
    rows = con.execute("SELECT worker, started, finished, task_seconds, cpu_seconds "
                       "FROM tasks ORDER BY worker, started").fetchall()
    first_start = min(r[1] for r in rows)
    last_end = max(r[2] for r in rows)
    con.close()
    by_worker: dict[str, list] = {}
    for row in rows:
        by_worker.setdefault(row[0], []).append(row)
    idle = sum(later[1] - earlier[2] for tasks in by_worker.values()
               for earlier, later in itertools.pairwise(tasks))
    firsts = {tasks[0] for tasks in by_worker.values()}
    steady = [r for r in rows if r not in firsts]
    task_sum = sum(r[3] for r in rows)
    out = {
        "workers": workers, "tasks": len(rows), "wall": summary.seconds, "call": wall,
        "throughput": len(rows) / summary.seconds,
        "task_mean": float(np.mean([r[3] for r in rows])),
        "steady_mean": float(np.mean([r[3] for r in steady])) if steady else float("nan"),
        "cpu_ratio": sum(r[4] for r in rows) / task_sum,
        "startup": first_start - (time.time() - wall),        # cluster up to first task
        "idle_pct": 100 * idle / task_sum, "store_pct": 100 * summary.store_seconds / task_sum,
        "tail": last_end - first_start, "task_sum": task_sum,
        "steady_throughput": (len(steady) / (last_end - min(r[1] for r in steady))
                              if steady else float("nan")),
    }
    print(f"    {out['tasks']} tasks in {out['wall']:.1f} s ({out['throughput']:.3f} tasks/s); "
          f"task wall {out['task_mean']:.1f} s mean ({out['steady_mean']:.1f} s after each "
          f"worker's first), CPU/wall {out['cpu_ratio']:.2f}; cluster start-up "
          f"{out['startup']:.1f} s; worker idle between tasks {out['idle_pct']:.2f} % and "
          f"store writes {out['store_pct']:.3f} % of task time; load average after "
          f"{load_average()}", flush=True)
    return out


def build_store(path: Path, rows: int, study_path: Path) -> None:
    """A store of ``rows`` done tasks with random metrics, written through Store.record."""
    study = uz.study.read_study(study_path)
    tasks = study.tasks()
    rng = np.random.default_rng(0)
    with Store(path) as store:
        store.con.execute("PRAGMA synchronous = OFF")     # building, not measuring, writes
        store.plan(study, tasks)
        for task in tasks:
            metrics = {name: float(v) for name, v in
                       zip(TASK_METRICS, rng.uniform(size=len(TASK_METRICS)), strict=True)}
            metrics.update(num_draws=1000, converged=True, eval_failed=False, eval_flags="")
            store.record({
                "task_id": task.id, "status": "done", "metrics": metrics,
                "levels": [{"level": lv, **dict(zip(LEVEL_METRICS,
                                                    rng.uniform(size=len(LEVEL_METRICS)),
                                                    strict=True))}
                           for lv in study.levels],
                "report": metrics, "fit_config": {"num_steps": 10000},
                "diagnostics": {"fit_seconds": 1.0}, "warnings": [],
                "timings": {"started": 0.0, "finished": 1.0, "task_seconds": 1.0,
                            "fit_seconds": 0.9, "cpu_seconds": 1.0},
                "worker": "bench:0", "versions": {"uqzoo": uz.__version__}})
    assert len(tasks) == rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10000,
                        help="MF-VI steps per task (10,000: about 10 s on one core)")
    parser.add_argument("--n-train", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100_000,
                        help="tasks in the synthetic store that is loaded")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    args = parser.parse_args()

    print(f"cores: {len(os.sched_getaffinity(0))}; load average {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.skip_throughput:
            study_path = folder / "bench.toml"
            study_path.write_text(STUDY.format(tasks=args.tasks, n_train=args.n_train,
                                               steps=args.steps))
            print(f"throughput: {args.tasks} tasks (mfvi, {args.steps} steps, n_train "
                  f"{args.n_train}), Dask LocalCluster, one thread per worker")
            one = throughput_arm(study_path, folder / "one.sqlite", 1)
            two = throughput_arm(study_path, folder / "two.sqlite", 2)
            print(f"  speed-up of 2 workers over 1: {two['throughput'] / one['throughput']:.2f}× "
                  f"(steady state {two['steady_throughput'] / one['steady_throughput']:.2f}×)")
            for arm in (one, two):
                total = 100 * (arm["wall"] * arm["workers"] - arm["task_sum"]) / arm["task_sum"]
                print(f"  {arm['workers']} worker(s): wall × workers − task time = "
                      f"{total:.1f} % of task time (cluster start-up, idle tail, scheduler, "
                      "store)")
        if not args.skip_load:
            study_path = folder / "rows.toml"
            study_path.write_text(STUDY.format(tasks=args.rows, n_train=1000, steps=1000))
            store = folder / "rows.sqlite"
            t0 = time.perf_counter()
            build_store(store, args.rows, study_path)
            print(f"load: built a store of {args.rows:,} done tasks × 4 levels in "
                  f"{time.perf_counter() - t0:.0f} s, {store.stat().st_size / 1e6:.0f} MB")
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                df = uz.study.load(store)
                times.append(time.perf_counter() - t0)
            each = ", ".join(f"{t:.2f}" for t in times)
            print(f"  uz.study.load: {min(times):.2f} s best of 3 ({each}); {len(df):,} rows × "
                  f"{df.shape[1]} columns; load average {load_average()}")
            t0 = time.perf_counter()
            uz.study.summarize(df)
            print(f"  uz.study.summarize on it: {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
