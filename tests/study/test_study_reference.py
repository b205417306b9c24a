"""A study's ``[reference]``: closeness to the exact posterior as one more metric per task.

The reference posterior is a stand-in (draws around a logistic regression, with
the diagnostics of a run that passes the gate): a real one is a long NUTS run,
tested in tests/test_reference.py. The fits are real (Laplace, tiny).
"""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
import uqzoo.reference
from _stand_ins import stand_in_fit
from uqzoo.errors import InvalidInputError
from uqzoo.fidelity import METRICS
from uqzoo.reference import DIVERGENCE_RATE_MAX, REFERENCE_OPTIONS, data_fingerprint
from uqzoo.study import runner
from uqzoo.study.store import FIDELITY_METRICS, Store

BASE = """\
[study]
name = "closeness"
replicates = 2
levels = [0.9]
[spec]
hidden = [3]
[[datasets]]
name = "gaussian-mixture"
options = { p = 2, n_train = 100, n_test = 60 }
[[methods]]
name = "laplace"
config = { num_epochs = 30 }
grid = { num_samples = [40, 50] }
"""
FIDELITY_COLUMNS = [f"fidelity_{m}" for m in METRICS]


def write(tmp_path, text, name="study.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def stand_in_reference(spec, data, *, seed, progress_bar=False, **options):
    """What uz.reference_posterior returns, made in milliseconds: a gated "hmc" posterior."""
    post = stand_in_fit("laplace", spec, data, seed=seed)
    ess = np.full((10, 1), 1000.0)
    diagnostics = {**post.diagnostics, "data_fingerprint": data_fingerprint(data),
                   "reference_max_divergence_rate": DIVERGENCE_RATE_MAX,
                   "rhat_predictive": np.ones((10, 1)), "ess_bulk_predictive": ess,
                   "ess_tail_predictive": ess, "rhat_lp": 1.001, "ess_bulk_lp": 900.0,
                   "ess_tail_lp": 950.0, "num_divergent": 0}
    return dataclasses.replace(post, method="hmc", sample_shape=(4, 10),
                               config={"num_warmup": 1000, "num_samples": 40,
                                       "target_accept": 0.8, "seed_seen": seed},
                               diagnostics=diagnostics)


def test_reference_table_enters_tasks_only_when_asked(tmp_path):
    plain = uz.study.read_study(write(tmp_path, BASE, "plain.toml"))
    asked = uz.study.read_study(write(tmp_path, BASE + "[reference]\nnum_warmup = 200\n"))
    assert plain.reference is None
    assert all("reference" not in t.config and t.reference_seed is None for t in plain.tasks())
    # the defaults of a reference, with the study's own on top, in every task
    assert asked.reference["num_warmup"] == 200
    assert asked.reference["num_chains"] == REFERENCE_OPTIONS["num_chains"]
    assert asked.reference["num_samples"] == REFERENCE_OPTIONS["num_samples"]
    tasks = asked.tasks()
    assert all(t.config["reference"] == asked.reference for t in tasks)
    assert {t.id for t in tasks}.isdisjoint({t.id for t in plain.tasks()})
    # one reference per replicate, shared by its methods, other seeds than the fits'
    seeds = {(t.replicate, t.reference_seed) for t in tasks}
    assert len(seeds) == 2 and len({s for _, s in seeds}) == 2
    assert not {t.reference_seed for t in tasks} & {t.seed for t in tasks}
    empty = uz.study.read_study(write(tmp_path, BASE + "[reference]\n", "empty.toml"))
    assert empty.reference["num_warmup"] == REFERENCE_OPTIONS["num_warmup"]


@pytest.mark.parametrize(("text", "fragment"), [
    (BASE + "[reference]\nnum_warmups = 10\n",
     r"reference\.num_warmups: unknown key in \[reference\]"),
    (BASE + "[reference]\nnum_chains = 0\n", r"study\.toml: reference: .*num_chains"),
    ("reference = 3\n" + BASE, r"reference: must be a table"),
])
def test_bad_reference_table_names_file_and_key(tmp_path, text, fragment):
    with pytest.raises(uz.errors.UqzooError, match=fragment):
        uz.study.read_study(write(tmp_path, text))


@pytest.fixture
def references(monkeypatch):
    """Stand-in references; records the seed of each one sampled."""
    made: list[int] = []

    def make(spec, data, *, seed, **options):
        made.append(seed)
        return stand_in_reference(spec, data, seed=seed, **options)
    monkeypatch.setattr(uqzoo.reference, "reference_posterior", make)
    monkeypatch.setattr(runner, "_REFERENCES", {})
    return made


def test_run_task_scores_closeness_and_a_worker_samples_one_reference(tmp_path, references):
    study = uz.study.read_study(write(tmp_path, BASE + "[reference]\nnum_warmup = 200\n"))
    first = [t for t in study.tasks() if t.replicate == 0]
    assert len(first) == 2
    results = [runner.run_task(task) for task in first]
    assert references == [first[0].reference_seed]        # sampled once, for both methods
    for task, result in zip(first, results, strict=True):
        metrics = result["metrics"]
        assert metrics["reference_gate_passed"] is True
        assert metrics["num_draws"] == task.config["method"]["config"]["num_samples"]
        for name in METRICS:
            value = metrics[f"fidelity_{name}"]
            assert np.isfinite(value) and metrics[f"fidelity_{name}_mc_floor"] >= 0
        assert 0 < metrics["fidelity_wasserstein1"] < 1
        assert result["timings"]["reference_seconds"] >= 0
    # the study store keeps it, and the summary averages it over replicates
    store = tmp_path / "s.sqlite"
    with Store(store) as st:
        st.plan(study, study.tasks())
        for result in results:
            st.record(result)
    frame = uz.study.load(store)
    assert frame["reference_gate_passed"].tolist() == [True, True]
    for column in FIDELITY_COLUMNS:
        assert frame[column].notna().all()
    summary = uz.study.summarize(frame)
    assert set(FIDELITY_COLUMNS) <= set(summary.columns)


def test_without_reference_nothing_of_it_runs(tmp_path, references):
    study = uz.study.read_study(write(tmp_path, BASE))
    result = runner.run_task(study.tasks()[0])
    assert references == []
    assert not any(k.startswith(("fidelity_", "reference_")) for k in result["metrics"])
    assert "reference_seconds" not in result["timings"]


def test_a_store_made_before_the_fidelity_columns_is_read_and_extended(tmp_path):
    study = uz.study.read_study(write(tmp_path, BASE))
    path = tmp_path / "old.sqlite"
    with Store(path) as st:
        st.plan(study, study.tasks())
    con = sqlite3.connect(path)                # as a store of before: without the columns
    for column in (*FIDELITY_METRICS, "reference_seconds", "fidelity_seconds"):
        con.execute(f"ALTER TABLE tasks DROP COLUMN {column}")
    con.commit()
    con.close()
    frame = uz.study.load(path, status="all")
    assert frame[FIDELITY_COLUMNS].isna().all().all()
    assert frame["reference_gate_passed"].isna().all()
    summary_columns = uz.study.summarize(pd.DataFrame(frame)).columns
    assert not set(FIDELITY_COLUMNS) & set(summary_columns)
    with Store(path):                          # a run opening it adds them
        pass
    con = sqlite3.connect(path)
    columns = {row[1] for row in con.execute("PRAGMA table_info(tasks)")}
    con.close()
    assert set(FIDELITY_METRICS) <= columns


def test_unknown_reference_key_error_names_the_hmc_options(tmp_path):
    with pytest.raises(InvalidInputError, match=r"allowed: .*num_chains"):
        uz.study.read_study(write(tmp_path, BASE + "[reference]\nlevel = 0.9\n"))
