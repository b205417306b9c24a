"""Shared by the study tests: a tiny study and one uninterrupted local run of it.

The reference run is made once per session and copied for each test that
needs a store: on this 2-core machine every run pays for spawning workers and
compiling the fit (seconds), so the tests share what they can.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# Six tasks that succeed (two shape-neutral settings × three replicates, one
# compiled program per worker) and three that fail when they load their data:
# nonlinear-logistic needs p >= 2, which only the loader checks.
TINY = """\
[study]
name = "tiny"
replicates = 3
levels = [0.5, 0.9]

[spec]
hidden = [5]

[[datasets]]
name = "sim-teacher"
options = { p = 2, n_train = 100, n_test = 200 }
grid = { logit_scale = [1.0, 2.0] }

[[datasets]]
name = "nonlinear-logistic"
label = "broken"
options = { p = 1, n_train = 100, n_test = 200 }

[[methods]]
name = "laplace"
config = { num_epochs = 30, num_samples = 50 }
"""
N_TASKS = 9
N_FAILING = 3


@pytest.fixture(scope="session")
def tiny_sizes() -> tuple[int, int]:
    """(tasks, failing tasks) of the tiny study."""
    return N_TASKS, N_FAILING


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("study") / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture(scope="session")
def reference_store(tiny_study, tmp_path_factory) -> Path:
    """The tiny study run once, uninterrupted, by the local executor (2 workers, 1 thread)."""
    import uqzoo as uz

    store = tmp_path_factory.mktemp("reference") / "reference.sqlite"
    summary = uz.study.run(tiny_study, store=store, executor="local", workers=2, threads=1,
                           progress_bar=False)
    assert (summary.done, summary.failed) == (N_TASKS - N_FAILING, N_FAILING)
    return store


@pytest.fixture()
def store_copy(reference_store, tmp_path) -> Path:
    """A private copy of the reference store (WAL checkpointed into the main file)."""
    import sqlite3

    con = sqlite3.connect(reference_store)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    target = tmp_path / "copy.sqlite"
    shutil.copyfile(reference_store, target)
    return target
