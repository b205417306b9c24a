"""``uqzoo study run | status | export``."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.cli import main

# One worker runs every test that uses the session's reference run (make test
# uses --dist loadgroup), so the run is made once, not once per xdist worker.
pytestmark = pytest.mark.xdist_group("study_reference")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "uqzoo.cli", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("text, needle", [
    ('[[datasets]]\nname = "sim-teacher"\n[datasets.options]\np = 2\np = 3\n',
     "bad.toml: datasets.options.p: key given twice (line 5)"),
    ('[[datasets]]\nname = "sim-teacher"\ngrid = { p = [] }\n[[methods]]\nname = "hmc"\n',
     "bad.toml: datasets[0].grid.p: empty grid"),
])
def test_a_bad_study_file_is_one_line_and_exit_2(tmp_path, text, needle):
    study = tmp_path / "bad.toml"
    study.write_text(text)
    store = tmp_path / "results.sqlite"
    done = _cli("study", "run", str(study), "--store", str(store))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("uqzoo: error: "), done.stderr
    assert needle in lines[0]
    assert not store.exists()                      # nothing ran, nothing was written


def _errors(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_bad_arguments_are_one_line(tmp_path, capsys):
    assert main(["study", "status", str(tmp_path / "missing.sqlite")]) == 2
    assert _errors(capsys) == [f"uqzoo: error: store {str(tmp_path / 'missing.sqlite')!r}: "
                               "no such store"]
    study = tmp_path / "s.toml"
    study.write_text('[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "laplace"\n')
    assert main(["study", "run", str(study), "--store", str(tmp_path / "no" / "s.sqlite"),
                 "--address", "tcp://127.0.0.1:1"]) == 2
    assert _errors(capsys) == ["uqzoo: error: address is for executor='dask'; executor is "
                               "'local'"]
    # issue 25 item 8: a folder as --out once suggested .../posterior.nc
    assert main(["study", "export", str(tmp_path / "missing.sqlite"), "--summary",
                 "--out", str(tmp_path)]) == 2
    assert _errors(capsys) == [f"uqzoo: error: --out {str(tmp_path)!r} is a directory; give a "
                               f"file path such as {str(tmp_path / 'summary.csv')!r}"]


@pytest.mark.slow
def test_status(store_copy, tiny_sizes, capsys):
    n_tasks, n_failing = tiny_sizes
    assert main(["study", "status", str(store_copy)]) == 0
    out = capsys.readouterr().out
    assert (f"study 'tiny': {n_tasks} tasks: {n_tasks - n_failing} done, {n_failing} failed, "
            "0 remaining") in out
    assert "last run" in out and "finished" in out
    assert f"{n_failing} × InvalidInputError: p must be at least 2" in out


@pytest.mark.slow
def test_run_of_a_finished_study_does_nothing(store_copy, tiny_sizes, capsys):
    n_tasks, n_failing = tiny_sizes
    con = sqlite3.connect(store_copy)
    (source,) = con.execute("SELECT source FROM studies").fetchone()
    con.close()
    study = store_copy.with_name("tiny.toml")
    study.write_text(source)
    # Exit status 1: the study holds failed tasks (recorded, not an error of the command).
    assert main(["study", "run", str(study), "--store", str(store_copy), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert (f"{n_tasks} tasks, {n_tasks - n_failing} done, {n_failing} failed (this run: 0 "
            f"done, 0 failed") in out
    assert "--retry-failed" in out


@pytest.mark.slow
def test_export_csv(store_copy, tmp_path, capsys):
    out = tmp_path / "results.csv"
    assert main(["study", "export", str(store_copy), "--format", "csv", "--out",
                 str(out)]) == 0
    exported = pd.read_csv(out, keep_default_na=False, na_values=[""])
    loaded = uz.study.load(store_copy)
    assert len(exported) == len(loaded)
    assert list(exported.columns) == list(loaded.columns)
    pd.testing.assert_series_equal(exported.coverage, loaded.coverage, check_exact=False,
                                   rtol=1e-15)
    summary_path = tmp_path / "summary.csv"
    assert main(["study", "export", str(store_copy), "--out", str(summary_path),
                 "--summary"]) == 0
    summary = pd.read_csv(summary_path)
    assert {"coverage", "coverage_mcse", "n_replicates"} <= set(summary.columns)
    capsys.readouterr()
    assert main(["study", "export", str(store_copy), "--out",
                 str(tmp_path / "no" / "x.csv")]) == 2
    assert len(_errors(capsys)) == 1


@pytest.mark.slow
def test_export_parquet(store_copy, tmp_path, capsys):
    out = tmp_path / "results.parquet"
    code = main(["study", "export", str(store_copy), "--format", "parquet", "--out",
                 str(out)])
    if importlib.util.find_spec("pyarrow") is None and \
            importlib.util.find_spec("fastparquet") is None:
        assert code == 2
        assert _errors(capsys) == ["uqzoo: error: --format parquet needs pyarrow (pip install "
                                   "pyarrow); or use --format csv"]
        assert not out.exists()
    else:
        assert code == 0
        assert len(pd.read_parquet(out)) == len(uz.study.load(store_copy))
