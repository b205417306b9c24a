"""Running studies for real: the Dask executor, resume after SIGKILL, failed tasks.

The metrics are compared bitwise between runs: same machine, same threads per
worker (1), and each task seeded from its id alone, so the executor, the
worker count and an interruption must not change a single bit.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.study.store import LEVEL_METRICS, TASK_METRICS

# One worker runs every test that uses the session's reference run (make test
# uses --dist loadgroup), so the run is made once, not once per xdist worker.
pytestmark = pytest.mark.xdist_group("study_reference")

RESULT_COLUMNS = ["task_id", "status", "error", "seed", "data_seed", "level",
                  *LEVEL_METRICS, *TASK_METRICS, "eval_flags"]


def _results(store) -> pd.DataFrame:
    df = uz.study.load(store, status="all")
    return df[RESULT_COLUMNS].sort_values(["task_id", "level"]).reset_index(drop=True)


def _assert_same_results(a, b) -> None:
    # check_exact: bit-identical, not approximately equal (see the module docstring)
    pd.testing.assert_frame_equal(_results(a), _results(b), check_exact=True)


@pytest.mark.slow
def test_local_run_records_every_task(tiny_sizes, reference_store, tiny_study):
    n_tasks, n_failing = tiny_sizes
    df = uz.study.load(reference_store, status="all")
    tasks = uz.study.expand(tiny_study)
    assert set(df.task_id) == {t.id for t in tasks}
    done = df[df.status == "done"]
    assert len(done) == (n_tasks - n_failing) * 2           # two levels each
    assert done.coverage.between(0, 1).all() and done.interval_width.gt(0).all()
    assert (done.num_draws == 50).all()
    assert done.worker.nunique() == 2                      # both workers took tasks
    failed = df[df.status == "failed"]
    assert len(failed) == n_failing and set(failed.dataset) == {"broken"}
    assert failed.error.str.startswith("InvalidInputError: p must be at least 2").all()
    con = sqlite3.connect(reference_store)
    versions, tb = con.execute("SELECT versions_json, traceback FROM tasks "
                               "WHERE status = 'failed' LIMIT 1").fetchone()
    assert '"torch"' in versions and "Traceback" in tb
    con.close()


@pytest.mark.slow
def test_dask_local_cluster_gives_the_local_executors_results(tiny_sizes, reference_store,
                                                              tiny_study, tmp_path):
    n_tasks, n_failing = tiny_sizes
    pytest.importorskip("distributed")
    store = tmp_path / "dask.sqlite"
    summary = uz.study.run(tiny_study, store=store, executor="dask", workers=2, threads=1,
                           progress_bar=False)
    assert (summary.done, summary.failed, summary.skipped) == (n_tasks - n_failing,
                                                               n_failing, 0)
    _assert_same_results(store, reference_store)


@pytest.mark.slow
def test_resume_after_sigkill(tiny_sizes, reference_store, tiny_study, tmp_path):
    n_tasks, n_failing = tiny_sizes
    store = tmp_path / "killed.sqlite"
    command = [sys.executable, "-m", "uqzoo.cli", "study", "run", str(tiny_study),
               "--store", str(store), "--workers", "1", "--threads", "1", "--no-progress"]
    # Its own session, so that the driver and the workers it spawned die together,
    # as a batch system kills a job.
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    stored = 0
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if store.exists():
                try:
                    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1)
                    stored = con.execute("SELECT COUNT(*) FROM tasks "
                                         "WHERE status != 'pending'").fetchone()[0]
                    con.close()
                except sqlite3.OperationalError:          # schema not there yet
                    stored = 0
                if stored >= 1:
                    break
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL, stderr.decode()[-2000:]
    con = sqlite3.connect(store)
    at_kill = dict(con.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status"))
    con.close()
    assert at_kill.get("pending", 0) > 0, at_kill              # killed part-way
    finished = at_kill.get("done", 0) + at_kill.get("failed", 0)
    assert finished >= 1

    summary = uz.study.run(tiny_study, store=store, workers=1, threads=1, progress_bar=False)
    assert summary.skipped == finished
    assert summary.done + summary.failed == n_tasks - finished
    con = sqlite3.connect(store)
    attempts = [a for (a,) in con.execute("SELECT attempts FROM tasks")]
    n_levels = con.execute("SELECT COUNT(*) FROM levels").fetchone()[0]
    con.close()
    assert len(attempts) == n_tasks and set(attempts) == {1}   # each task exactly once
    assert n_levels == (n_tasks - n_failing) * 2
    _assert_same_results(store, reference_store)


@pytest.mark.slow
def test_failed_tasks_rerun_only_on_retry(tiny_sizes, store_copy):
    n_tasks, n_failing = tiny_sizes
    con = sqlite3.connect(store_copy)
    (source,) = con.execute("SELECT source FROM studies").fetchone()
    con.close()
    path = store_copy.with_suffix(".toml")
    path.write_text(source)

    again = uz.study.run(path, store=store_copy, workers=1, threads=1, progress_bar=False)
    assert (again.done, again.failed, again.skipped) == (0, 0, n_tasks)

    before = _results(store_copy)
    retry = uz.study.run(path, store=store_copy, workers=1, threads=1, retry_failed=True,
                         progress_bar=False)
    assert (retry.done, retry.failed, retry.skipped) == (0, n_failing, n_tasks - n_failing)
    con = sqlite3.connect(store_copy)
    attempts = dict(con.execute("SELECT status, GROUP_CONCAT(DISTINCT attempts) FROM tasks "
                                "GROUP BY status"))
    con.close()
    assert attempts == {"done": "1", "failed": "2"}
    pd.testing.assert_frame_equal(_results(store_copy), before, check_exact=True)


def test_run_task_is_pure(tiny_study):
    """Two calls in one process (warm caches the second time) give the same numbers."""
    task = next(t for t in uz.study.expand(tiny_study) if t.dataset == "sim-teacher")
    first = uz.study.run_task(task)
    second = uz.study.run_task(task)
    np.testing.assert_equal(first["metrics"], second["metrics"])     # NaN equals NaN here
    np.testing.assert_equal(first["levels"], second["levels"])
    assert first["fit_config"]["num_epochs"] == 30
    assert np.isfinite([row["coverage"] for row in first["levels"]]).all()


# One quick task, then two that would run for minutes: MF-VI for 10**6 steps.
QUICK_AND_SLOW = """\
[study]
name = "quick_and_slow"
replicates = 2
levels = [0.9]

[spec]
hidden = [5]

[[datasets]]
name = "sim-teacher"
options = { p = 2, n_train = 100, n_test = 50 }

[[methods]]
name = "laplace"
config = { num_epochs = 30, num_samples = 20 }

[[methods]]
name = "mfvi"
config = { num_steps = 1000000, num_samples = 20 }
"""


@pytest.mark.slow
def test_an_interrupted_local_run_terminates_its_workers(tmp_path, monkeypatch):
    """Closing the local executor's results early (Ctrl-C, an error in the driver)
    terminates the workers instead of leaving them to finish tasks whose results
    nobody will store -- minutes for an HMC task, in processes that outlive a
    driver killed meanwhile."""
    import concurrent.futures

    from uqzoo.study import runner
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads process states from Linux's /proc")

    path = tmp_path / "quick_and_slow.toml"
    path.write_text(QUICK_AND_SLOW)
    tasks = uz.study.expand(path)
    quick = [t for t in tasks if t.method == "laplace"][:1]
    slow = [t for t in tasks if t.method == "mfvi"]
    pools = []

    class RecordingPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", RecordingPool)
    results = runner._run_local(quick + slow, workers=2, threads=1)
    first = next(results)                      # the quick task; both workers now busy
    assert first["task_id"] == quick[0].id and first["status"] == "done"
    pids = list(pools[0]._processes)
    assert len(pids) == 2 and all(_running(pid) for pid in pids)
    results.close()                            # what an interruption does to the generator
    # Terminated, a worker is gone at once; left alone it would run its
    # 10**6-step task for minutes. (Read from /proc, not Process.join: the
    # executor's own thread reaps the workers, and a second join races it.)
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(pid) for pid in pids), "a worker outlived the interrupted run"


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux's /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


_DRIVER = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from uqzoo.study.runner import _init_local_worker
pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                           initializer=_init_local_worker, initargs=(1, os.getpid()))
print(pool.submit(os.getpid).result(), flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    """Whether /proc shows the process, not as a zombie (dead, unreaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]


@pytest.mark.slow          # two interpreters spawn and import uqzoo: seconds, not ms
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_dies_with_its_killed_driver():
    # issue 25 item 5: kill -9 of the driver left its worker idle (747 MB) under PID 1
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER], stdout=subprocess.PIPE,
                              text=True)
    try:
        worker = int(driver.stdout.readline())
        assert _alive(worker)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(worker), f"worker {worker} outlived its driver"
    finally:
        driver.kill()
        driver.wait()
        driver.stdout.close()
