"""A study's ``conformal`` option: every task judges split-conformal sets (issue 23)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.study.analysis import CONFORMAL_SUMMARY
from uqzoo.study.store import CONFORMAL_METRICS, Store

STUDY = '''
[study]
levels = [0.8]
{extra}
[[datasets]]
name = "gaussian-mixture"
options = {{ n_train = 200, n_test = 300 }}
[[methods]]
name = "map"
config = {{ num_epochs = 100 }}
'''


def _tasks(tmp_path, extra: str):
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(extra=extra))
    return uz.study.expand(path)


def test_conformal_tasks_hold_out_a_split_and_report_the_sets(tmp_path):
    [plain] = _tasks(tmp_path, "")
    [task] = _tasks(tmp_path, 'conformal = 0.9\nconformal_score = "aps"')
    assert "conformal" not in plain.config and plain.id != task.id
    assert task.config["conformal"] == {"level": 0.9, "score": "aps"}
    result = uz.study.run_task(task)
    report = result["report"]
    for key in ("conformal_coverage", "conformal_set_size", "conformal_worst_decile",
                "plain_set_coverage", "plain_worst_decile"):
        assert 0.0 <= report[key] <= 2.0, key
    assert report["conformal_set_size"] >= 1.0        # APS sets are never empty
    # the store's columns, copied from the report
    for key in CONFORMAL_METRICS:          # NaN where the report has none
        np.testing.assert_equal(result["metrics"][key], report.get(key, np.nan), key)


@pytest.mark.parametrize("extra, needle", [
    ("conformal = 1.5", "study.conformal: must be a level in (0, 1)"),
    ('conformal = 0.9\nconformal_score = "raps"', "must be one of lac, aps"),
    ('conformal_score = "aps"', "needs conformal = LEVEL"),
])
def test_a_bad_conformal_option_names_the_key(tmp_path, extra, needle):
    with pytest.raises(uz.InvalidInputError) as caught:
        _tasks(tmp_path, extra)
    assert needle in str(caught.value)


# Two replicates, so that the summary has a Monte Carlo error; tiny, so that one
# spawned worker runs both in seconds.
STORED = '''
[study]
name = "{name}"
replicates = 2
levels = [0.8]
{extra}
[spec]
hidden = [3]
[[datasets]]
name = "gaussian-mixture"
options = {{ n_train = 150, n_test = 100 }}
[[methods]]
name = "map"
config = {{ num_epochs = 30 }}
'''


def _study_file(tmp_path, name: str, extra: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(STORED.format(name=name, extra=extra))
    return path


# A real run through the worker pool: a worker process starts and compiles the fit
# (~20 s on two quiet cores); make test-slow and CI run it, and the tests around it
# check the same columns without a worker.
@pytest.mark.slow
def test_the_store_keeps_the_conformal_sets_and_the_summary_averages_them(tmp_path):
    store = tmp_path / "conformal.sqlite"
    summary = uz.study.run(_study_file(tmp_path, "conf", "conformal = 0.9"), store=store,
                           executor="local", workers=1, threads=1, progress_bar=False)
    assert (summary.done, summary.failed) == (2, 0)
    frame = uz.study.load(store)
    assert len(frame) == 2
    for column in ("conformal_coverage", "conformal_set_size", "plain_set_coverage",
                   "plain_set_size", "conformal_worst_decile", "plain_worst_decile"):
        assert np.isfinite(frame[column]).all(), column
    assert ((frame.conformal_coverage >= 0) & (frame.conformal_coverage <= 1)).all()
    assert (frame.conformal_set_size >= 0).all()
    # the same numbers as the task's report: one source, copied, not recomputed
    con = sqlite3.connect(store)
    reports = dict(con.execute("SELECT task_id, json_extract(report_json, "
                               "'$.conformal_coverage') FROM tasks"))
    con.close()
    assert frame.conformal_coverage.tolist() == [reports[t] for t in frame.task_id]
    table = uz.study.summarize(frame)
    assert len(table) == 1 and table.n_replicates.item() == 2
    for column in CONFORMAL_SUMMARY:
        assert column in table.columns and f"{column}_mcse" in table.columns
    assert table.conformal_coverage.item() == pytest.approx(frame.conformal_coverage.mean())
    assert table.conformal_coverage_mcse.item() == pytest.approx(
        frame.conformal_coverage.std() / np.sqrt(2))


def test_without_the_option_the_conformal_columns_are_nan(tmp_path):
    study = uz.study.read_study(_study_file(tmp_path, "plain", ""))
    [task, _] = study.tasks()
    result = uz.study.run_task(task)
    assert not set(CONFORMAL_METRICS) & set(result["metrics"])
    store = tmp_path / "plain.sqlite"
    with Store(store) as st:
        st.plan(study, study.tasks())
        st.record(result)
    frame = uz.study.load(store)
    assert frame[list(CONFORMAL_METRICS)].isna().all().all()
    assert not set(CONFORMAL_SUMMARY) & set(uz.study.summarize(frame).columns)


def test_a_store_made_before_the_conformal_columns_is_read_and_extended(tmp_path):
    study = uz.study.read_study(_study_file(tmp_path, "old", "conformal = 0.9"))
    path = tmp_path / "old.sqlite"
    with Store(path) as st:
        st.plan(study, study.tasks())
    con = sqlite3.connect(path)                # as a store of before: without the columns
    for column in CONFORMAL_METRICS:
        con.execute(f"ALTER TABLE tasks DROP COLUMN {column}")
    con.commit()
    con.close()
    frame = uz.study.load(path, status="all")
    assert len(frame) == 2 and frame[list(CONFORMAL_METRICS)].isna().all().all()
    with Store(path):                          # a run opening it adds them
        pass
    con = sqlite3.connect(path)
    columns = {row[1] for row in con.execute("PRAGMA table_info(tasks)")}
    con.close()
    assert set(CONFORMAL_METRICS) <= columns
