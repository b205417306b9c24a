"""The SQLite store and the analysis on top of it, with synthetic results (no fits)."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.errors import FileFormatError, InvalidInputError, OutputPathError
from uqzoo.study.store import LEVEL_METRICS, TASK_METRICS, Store

STUDY = """\
[study]
name = "synthetic"
replicates = 4
levels = [0.5, 0.9]
[[datasets]]
name = "sim-teacher"
grid = { n_train = [100, 200] }
[[methods]]
name = "laplace"
[[methods]]
name = "ensemble"
"""


@pytest.fixture()
def study(tmp_path):
    path = tmp_path / "synthetic.toml"
    path.write_text(STUDY)
    return uz.study.read_study(path)


def fake_result(task, rng, *, status="done"):
    """A result shaped like run_task's, with random metric values."""
    if status == "failed":
        return {"task_id": task.id, "status": "failed", "error": "ValueError: boom",
                "traceback": "Traceback ...", "timings": {"task_seconds": 0.1}}
    metrics = {name: float(rng.uniform()) for name in TASK_METRICS}
    metrics.update(num_draws=100, converged=None, eval_failed=False, eval_flags="")
    return {
        "task_id": task.id, "status": "done", "metrics": metrics,
        "levels": [{"level": lv, **{m: float(rng.uniform()) for m in LEVEL_METRICS}}
                   for lv in task.config["levels"]],
        "report": {"accuracy": metrics["accuracy"], "coverage@0.5": math.nan},
        "fit_config": {"num_epochs": 1000, "batch_size": None},
        "diagnostics": {"fit_seconds": 1.0}, "warnings": [],
        "timings": {"started": 1.0, "finished": 2.0, "task_seconds": 1.0, "fit_seconds": 0.9},
        "worker": "here:1", "versions": {"uqzoo": "0.1.0"},
    }


def test_plan_record_resume(study, tmp_path):
    tasks = study.tasks()
    rng = np.random.default_rng(0)
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.plan(study, tasks)
        assert store.todo(tasks) == tasks
        store.record(fake_result(tasks[0], rng))
        store.record(fake_result(tasks[1], rng, status="failed"))
        assert store.counts() == {"pending": len(tasks) - 2, "done": 1, "failed": 1}
        assert store.todo(tasks) == tasks[2:]
        assert store.todo(tasks, retry_failed=True) == tasks[1:]
        store.plan(study, tasks)                  # planning again keeps what is finished
        assert store.counts()["done"] == 1
        store.record(fake_result(tasks[1], rng))  # a retried task: one row, two attempts
        rows = store.con.execute("SELECT task_id, status, attempts FROM tasks "
                                 "WHERE status != 'pending'").fetchall()
        assert sorted(rows) == sorted([(tasks[0].id, "done", 1), (tasks[1].id, "done", 2)])
        n_levels = store.con.execute("SELECT COUNT(*) FROM levels").fetchone()[0]
        assert n_levels == 2 * len(study.levels)
        with pytest.raises(InvalidInputError, match="not planned"):
            store.record(dict(fake_result(tasks[0], rng), task_id="0" * 16))
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    config_json, fit_config = con.execute(
        "SELECT config_json, fit_config_json FROM tasks WHERE task_id = ?",
        (tasks[0].id,)).fetchone()
    assert config_json == tasks[0].config_json
    assert '"batch_size": null' in fit_config
    con.close()


def test_a_failed_write_leaves_no_half_task(study, tmp_path):
    tasks = study.tasks()
    rng = np.random.default_rng(1)
    with Store(tmp_path / "s.sqlite") as store:
        store.plan(study, tasks)
        bad = fake_result(tasks[0], rng)
        bad["levels"].append(dict(bad["levels"][0]))   # the same level twice: a key clash
        with pytest.raises(sqlite3.IntegrityError):
            store.record(bad)
        assert store.counts()["done"] == 0
        assert store.con.execute("SELECT COUNT(*) FROM levels").fetchone()[0] == 0


def test_one_run_at_a_time(study, tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path), pytest.raises(OutputPathError, match="another study run"):
        Store(path).open()
    with Store(path):                        # released when the first run closed
        pass


def test_an_unwritable_store_or_lock_path_is_one_clear_error(study, tmp_path, monkeypatch):
    # issue 25 item 6: a lock path that is a folder, and a store in a read-only folder,
    # ended in IsADirectoryError / PermissionError tracebacks
    (tmp_path / "s.sqlite.lock").mkdir()
    with pytest.raises(OutputPathError, match=r"lock file .*s.sqlite.lock' is a folder"):
        Store(tmp_path / "s.sqlite").open()
    import uqzoo.study.store as store_module

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(store_module, "open", refused, raising=False)  # root ignores chmod
    with pytest.raises(OutputPathError, match=r"cannot create its lock file .*Permission "
                                              r"denied; the store's folder must be writable"):
        Store(tmp_path / "t.sqlite").open()


def test_a_full_disk_during_a_run_is_one_clear_error_and_keeps_the_store(study, tmp_path):
    # issue 25 item 6: disk full raised sqlite3.OperationalError out of `study run`
    tasks = study.tasks()
    rng = np.random.default_rng(2)
    with Store(tmp_path / "s.sqlite") as store:
        store.plan(study, tasks)
        store.record(fake_result(tasks[0], rng))
        pages = store.con.execute("PRAGMA page_count").fetchone()[0]
        store.con.execute(f"PRAGMA max_page_count = {pages}")     # SQLite's "disk full"
        big = dict(fake_result(tasks[1], rng), traceback="x" * 200_000)
        with pytest.raises(OutputPathError, match=r"cannot be written: database or disk is "
                                                  r"full; nothing of this write was kept"):
            store.record(big)
        assert store.counts()["done"] == 1 and not store.con.in_transaction
        store.con.execute(f"PRAGMA max_page_count = {2**30}")
        store.record(fake_result(tasks[1], rng))                  # and it goes on
        assert store.counts()["done"] == 2


def test_a_link_to_the_store_is_refused(study, tmp_path):
    # A link --store alias.sqlite once ran beside --store s.sqlite; now no writer of
    # uqzoo writes through a link at all.
    path = tmp_path / "s.sqlite"
    (tmp_path / "alias.sqlite").symlink_to(path)
    with Store(path), pytest.raises(OutputPathError, match="is a symbolic link to"):
        Store(tmp_path / "alias.sqlite").open()


def test_a_store_refuses_another_file_of_the_same_study_name(study, tmp_path):
    # issue 25 item 4: another n_train under the same name was pooled silently
    other_path = tmp_path / "edited.toml"
    other_path.write_text(STUDY.replace("n_train = [100, 200]", "n_train = [100, 300]"))
    assert other_path.read_text() != STUDY
    other = uz.study.read_study(other_path)
    assert other.name == study.name
    with Store(tmp_path / "s.sqlite") as store:
        store.plan(study, study.tasks())
        store.plan(study, study.tasks())                 # the same file again: resumed
        with pytest.raises(InvalidInputError, match=rf"already holds study {study.name!r} "
                                                    r"from another study file .*new store"):
            store.plan(other, other.tasks())
        assert store.counts()["pending"] == len(study.tasks())


def test_not_a_store(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("hello " * 200)
    with pytest.raises(FileFormatError, match="not a uqzoo study store"):
        uz.study.load(text)
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.close()
    with pytest.raises(FileFormatError, match="SQLite file but not a uqzoo study store"):
        uz.study.load(other)
    with pytest.raises(FileFormatError, match="no such store"):
        uz.study.load(tmp_path / "missing.sqlite")
    with pytest.raises(OutputPathError, match="does not exist"):
        Store(tmp_path / "no" / "s.sqlite").open()


def test_load_is_tidy(study, tmp_path):
    tasks = study.tasks()
    rng = np.random.default_rng(2)
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.plan(study, tasks)
        for task in tasks[:-1]:
            store.record(fake_result(task, rng))
        store.record(fake_result(tasks[-1], rng, status="failed"))
    done = uz.study.load(path)
    assert len(done) == (len(tasks) - 1) * len(study.levels)
    assert not done.duplicated(["task_id", "level"]).any()
    assert set(done.level) == set(study.levels)
    assert {"coverage", "interval_width", "hcs_proportion", "ece", "brier", "nll",
            "accuracy", "num_draws", "fit_seconds", "converged"} <= set(done.columns)
    assert done.converged.isna().all() and str(done.converged.dtype) == "boolean"
    # load reads the packed copy of the levels; it equals the levels table
    con = sqlite3.connect(path)
    table = pd.read_sql_query("SELECT * FROM levels", con)
    con.close()
    merged = done.merge(table, on=["task_id", "level"], suffixes=("", "_table"))
    assert len(merged) == len(done)
    for metric in LEVEL_METRICS:
        np.testing.assert_array_equal(merged[metric], merged[f"{metric}_table"])
    failed = uz.study.load(path, status="failed")
    assert len(failed) == 1 and np.isnan(failed.level.iloc[0])
    assert failed.error.iloc[0] == "ValueError: boom"
    assert len(uz.study.load(path, status="all")) == len(done) + 1
    with pytest.raises(InvalidInputError, match="status must be"):
        uz.study.load(path, status="finished")


def test_summarize_gives_monte_carlo_standard_errors(study, tmp_path):
    tasks = study.tasks()
    rng = np.random.default_rng(3)
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.plan(study, tasks)
        for task in tasks:
            store.record(fake_result(task, rng))
    df = uz.study.load(path)
    summary = uz.study.summarize(df)
    # 2 settings × 2 methods × 2 levels, each over 4 replicates
    assert len(summary) == 8 and (summary.n_replicates == study.replicates).all()
    row = summary.iloc[0]
    cell = df[(df.setting == row.setting) & (df.method == row.method)
              & (df.level == row.level)]
    assert row.coverage == pytest.approx(cell.coverage.mean())
    assert row.coverage_mcse == pytest.approx(cell.coverage.std(ddof=1) / np.sqrt(len(cell)))
    assert row.coverage_error == pytest.approx(row.coverage - row.level)
    assert row.ece_mcse == pytest.approx(cell.ece.std(ddof=1) / np.sqrt(len(cell)))
    # the interval score, kept per level since the store's columns come from the
    # headline table, is averaged like coverage
    assert row.interval_score == pytest.approx(cell.interval_score.mean())
    assert row.interval_score_mcse == pytest.approx(
        cell.interval_score.std(ddof=1) / np.sqrt(len(cell)))
    single = uz.study.summarize(df[df.replicate == 0])
    assert single.coverage_mcse.isna().all()          # one replicate: no standard error
    with pytest.raises(InvalidInputError, match="lacks column"):
        uz.study.summarize(df.drop(columns="coverage"))


def test_plots(study, tmp_path):
    tasks = study.tasks()
    rng = np.random.default_rng(4)
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.plan(study, tasks)
        for task in tasks:
            store.record(fake_result(task, rng))
    summary = uz.study.summarize(uz.study.load(path))
    plots = uz.study.plots
    assert len(plots.coverage_plot(summary).axes) == 2          # one panel per setting
    assert len(plots.width_coverage_plot(summary).axes) == 2
    fig = plots.metric_plot(summary, "hcs_proportion", level=0.9)
    fig.savefig(tmp_path / "hcs.png")
    assert (tmp_path / "hcs.png").stat().st_size > 0
    with pytest.raises(InvalidInputError, match=r"level 0\.8 is not in the summary"):
        plots.metric_plot(summary, "ece", level=0.8)
    with pytest.raises(InvalidInputError, match="summary is empty"):
        plots.coverage_plot(summary.iloc[:0])
    assert isinstance(summary, pd.DataFrame)
