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


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_interrupting_the_driver_stops_its_workers(tiny_study, tmp_path):
    """SIGINT to the driver alone (as ``kill -INT`` sends it, not to the whole group
    as a terminal's Ctrl-C does) ends the run at once: the workers are terminated,
    not waited for while they finish tasks whose results nobody will store."""
    store = tmp_path / "interrupted.sqlite"
    command = [sys.executable, "-m", "uqzoo.cli", "study", "run", str(tiny_study),
               "--store", str(store), "--workers", "2", "--threads", "1", "--no-progress"]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            children = subprocess.run(["pgrep", "-g", str(process.pid)], capture_output=True,
                                      text=True).stdout.split()
            if len(children) >= 3:                         # driver + 2 spawned workers
                break
            time.sleep(0.05)
        time.sleep(1.0)                                    # the workers are busy with tasks
        process.send_signal(signal.SIGINT)
        # Waiting for the running tasks took 20-25 s here (worker start-up and
        # compilation included); terminating them takes well under a second.
        # 8 s leaves a loaded machine room without letting a wait pass.
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            process.poll()                                 # reap the driver once it exits
            if not _group_alive(process.pid):
                break
            time.sleep(0.1)
        assert not _group_alive(process.pid), "the interrupted run waited for its workers"
    finally:
        if _group_alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0 and b"interrupted" in stderr, stderr.decode()[-2000:]
