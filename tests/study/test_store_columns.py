"""The store's metric columns come from uqzoo.headline, and stores of the first layout
stay readable and are extended (synthetic rows, plus one real task)."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

import uqzoo as uz
from uqzoo import headline
from uqzoo.errors import FileFormatError
from uqzoo.study import runner
from uqzoo.study.analysis import CONFORMAL_SUMMARY, FIDELITY_SUMMARY, SUMMARY_METRICS
from uqzoo.study.store import LEVEL_METRICS, TASK_METRICS, TIMINGS, Store

# The levels blob of the first stores of format 1: a level, then these nine, by
# position. Never reorder: every blob written since holds a prefix of LEVEL_METRICS.
FIRST_LEVEL_METRICS = ("coverage", "coverage_se", "interval_width", "interval_width_se",
                       "hcs_size", "hcs_proportion", "hcs_accuracy", "hcs_accuracy_se",
                       "hcs_missed_targets")
# The store's own columns beside the metrics: the task's bookkeeping and the
# reference's gate and Monte Carlo floors.
BOOKKEEPING = {"num_draws", "converged", "eval_failed", "reference_gate_passed"}

STUDY = """\
[study]
name = "columns"
replicates = 4
levels = [0.5, 0.9]
[[datasets]]
name = "sim-teacher"
options = { p = 2, n_train = 100, n_test = 200 }
[[methods]]
name = "map"
config = { num_epochs = 20 }
"""


def _columns(entries) -> set[str]:
    return {c for h in entries for c in (h.name, *((f"{h.name}_se",) if h.stderr else ()))}


def test_the_stores_metric_columns_are_the_headlines_tagged_store():
    kept = [h for h in headline.HEADLINE if "store" in h.where]
    assert set(LEVEL_METRICS) == _columns(h for h in kept if h.axis == "level")
    floors = {f"{h.name}_mc_floor" for h in kept if h.needs_reference}
    assert set(TASK_METRICS) == _columns(h for h in kept if h.axis is None) | floors \
        | BOOKKEEPING
    assert len(set(TASK_METRICS)) == len(TASK_METRICS)
    assert not any(h.axis == "far" for h in kept)
    # the standard errors the first stores kept, and the interval score's
    assert {h.name for h in kept if h.stderr} == {
        "accuracy", "mean_predictive_entropy", "mean_mutual_information", "detection_auroc",
        "coverage", "interval_width", "hcs_accuracy", "interval_score"}
    assert headline.get("interval_score").where >= {"study", "store"}


def test_the_level_blob_layout_is_append_only():
    assert LEVEL_METRICS[:9] == FIRST_LEVEL_METRICS
    assert LEVEL_METRICS[9:] == ("interval_score", "interval_score_se")


def test_the_summary_averages_the_headlines_shown_in_studies():
    study = {h.name for h in headline.HEADLINE if "study" in h.where}
    assert set(SUMMARY_METRICS) == study - set(FIDELITY_SUMMARY) - set(CONFORMAL_SUMMARY)
    assert SUMMARY_METRICS[-1] == "fit_seconds" and "interval_score" in SUMMARY_METRICS
    # every one of them is a column of load() (a metric kept per task, or a timing)
    assert set(SUMMARY_METRICS) <= {*TASK_METRICS, *LEVEL_METRICS, *TIMINGS}


def test_every_stored_standard_error_is_the_evaluators():
    rng = np.random.default_rng(0)
    S, N, K = 30, 300, 2
    logits = 2 * rng.normal(size=(N, K))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    y = (rng.uniform(size=N) < p[:, 1]).astype(int)
    draws = np.exp(logits[None] + 0.5 * rng.normal(size=(S, N, K)))
    draws /= draws.sum(-1, keepdims=True)
    report = uz.evaluate(draws.astype(np.float32), y, levels=(0.5, 0.9), p_true=p)
    task = runner._task_metrics(report)
    levels = runner._level_metrics(report)
    ses = [c for c in (*TASK_METRICS, *LEVEL_METRICS) if c.endswith("_se")]
    assert ses
    for column in ses:
        values = [task[column]] if column in task else [row[column] for row in levels]
        assert all(math.isfinite(v) and v >= 0 for v in values), column
    for row, level in zip(levels, (0.5, 0.9), strict=True):
        assert row["interval_score"] == report.value("interval_score", level)
        assert row["hcs_accuracy"] == report.to_dict()[f"hcs_accuracy@{level:g}"]


def _format(store):
    con = sqlite3.connect(store)
    try:
        return con.execute("PRAGMA user_version").fetchone()[0]
    finally:
        con.close()


def test_a_store_of_an_unknown_format_is_refused_by_its_number(tmp_path):
    store = tmp_path / "s.sqlite"
    with Store(store):
        pass
    assert _format(store) == 2
    con = sqlite3.connect(store)
    con.execute("PRAGMA user_version = 3")
    con.commit()
    con.close()
    with pytest.raises(FileFormatError, match="has store format 3; this uqzoo reads "
                                                 "formats 1, 2"):
        uz.study.load(store)


def _first_layout_store(tmp_path):
    """A store as the first uqzoo of format 1 wrote it: levels rows of nine metrics
    inserted by position, headerless blobs of width 10, no interval score."""
    path = tmp_path / "old.toml"
    path.write_text(STUDY)
    study = uz.study.read_study(path)
    tasks = study.tasks()
    store = tmp_path / "old.sqlite"
    with Store(store) as st:
        st.plan(study, tasks)
    con = sqlite3.connect(store)
    con.execute("PRAGMA user_version = 1")
    for column in LEVEL_METRICS[9:]:
        con.execute(f"ALTER TABLE levels DROP COLUMN {column}")
    rng = np.random.default_rng(5)
    old = {}
    for task in tasks[:2]:
        rows = np.column_stack([study.levels, rng.uniform(size=(len(study.levels), 9))])
        old[task.id] = rows
        con.execute("UPDATE tasks SET status = 'done', attempts = 1, accuracy = 0.75, "
                    "levels_blob = ? WHERE task_id = ?", (rows.astype("<f8").tobytes(), task.id))
        con.executemany("INSERT INTO levels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(task.id, *map(float, row)) for row in rows])
    con.commit()
    con.close()
    return study, tasks, store, old


def test_a_store_of_the_first_layout_is_read_and_extended(tmp_path):
    study, tasks, store, old = _first_layout_store(tmp_path)
    frame = uz.study.load(store)
    assert len(frame) == 2 * len(study.levels)
    for task_id, rows in old.items():
        mine = frame[frame.task_id == task_id]
        np.testing.assert_array_equal(mine[["level", *FIRST_LEVEL_METRICS]].to_numpy(), rows)
        assert mine.interval_score.isna().all() and mine.interval_score_se.isna().all()
    assert (frame.accuracy == 0.75).all()
    assert _format(store) == 1                       # reading changes nothing

    # a run opens it: the levels table gains the new columns, the old rows keep theirs,
    # and the store becomes format 2, which a uqzoo of format 1 refuses by its number
    rng = np.random.default_rng(6)
    with Store(store) as st:
        assert _format(store) == 2
        columns = {row[1] for row in st.con.execute("PRAGMA table_info(levels)")}
        assert set(LEVEL_METRICS) <= columns
        for task in tasks[2:]:
            st.record({
                "task_id": task.id, "status": "done",
                "metrics": {m: float(rng.uniform()) for m in TASK_METRICS},
                "levels": [{"level": lv, **{m: float(rng.uniform()) for m in LEVEL_METRICS}}
                           for lv in study.levels]})
    frame = uz.study.load(store, status="all")
    assert len(tasks) == 4 and len(frame) == len(tasks) * len(study.levels)
    new = frame[frame.task_id.isin([t.id for t in tasks[2:]])]
    assert new.interval_score.notna().all()
    assert frame[frame.task_id.isin(old)].interval_score.isna().all()
    # the blobs of both layouts read as the levels table holds them
    con = sqlite3.connect(store)
    table = {(r[0], r[1]): r[2:] for r in con.execute(
        f"SELECT task_id, level, {', '.join(LEVEL_METRICS)} FROM levels")}
    con.close()
    for row in frame.itertuples():
        expected = np.array(table[(row.task_id, row.level)], dtype=float)
        np.testing.assert_array_equal(
            [getattr(row, m) for m in LEVEL_METRICS], expected)   # None read as NaN
    summary = uz.study.summarize(frame)
    assert summary.interval_score.notna().all()          # the new tasks' mean


def test_a_blob_of_a_later_uqzoo_or_a_damaged_one(tmp_path):
    study, _, store, old = _first_layout_store(tmp_path)
    task_id = next(iter(old))
    m = len(LEVEL_METRICS) + 2                    # a later uqzoo appended two
    rows = np.arange(2 * (1 + m), dtype=float).reshape(2, 1 + m) + 2
    rows[:, 0] = study.levels
    con = sqlite3.connect(store)
    con.execute("UPDATE tasks SET levels_blob = ? WHERE task_id = ?",
                (np.concatenate(([m], rows.ravel())).astype("<f8").tobytes(), task_id))
    con.commit()
    frame = uz.study.load(store)
    mine = frame[frame.task_id == task_id]
    np.testing.assert_array_equal(mine[["level", *LEVEL_METRICS]].to_numpy(),
                                  rows[:, :1 + len(LEVEL_METRICS)])
    con.execute("UPDATE tasks SET levels_blob = ? WHERE task_id = ?",
                (np.array([11.0, 0.5, 1.0]).tobytes(), task_id))
    con.commit()
    con.close()
    with pytest.raises(FileFormatError, match=rf"task {task_id!r}: its levels_blob is not "
                                              "whole rows of a level and 11 metrics"):
        uz.study.load(store)


def test_a_task_run_now_stores_the_reports_interval_score(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(STUDY)
    study = uz.study.read_study(path)
    task = study.tasks()[0]
    result = uz.study.run_task(task)
    store = tmp_path / "s.sqlite"
    with Store(store) as st:
        st.plan(study, study.tasks())
        st.record(result)
    frame = uz.study.load(store).set_index("level")
    for level in study.levels:
        stored = frame.loc[level, "interval_score"]
        assert stored == result["report"][f"interval_score@{level:g}"]     # copied
        assert math.isfinite(frame.loc[level, "interval_score_se"])
