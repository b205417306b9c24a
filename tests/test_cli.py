"""The command line and ``uz.compare``: the README's main job, end to end on small data."""

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.cli import main

SMALL_DATA = ["--data-option", "n_train=200", "--data-option", "n_test=300"]
FAST = ["--set", "ensemble.num_members=3", "--set", "ensemble.num_epochs=100",
        "--set", "laplace.num_epochs=100", "--set", "laplace.num_samples=50"]


def test_lists(capsys):
    assert main(["datasets"]) == 0
    assert "hsi-sim" in capsys.readouterr().out.split()
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}:" in out for name in uz.methods.names())


def test_compare_writes_table_posteriors_and_plots(tmp_path, capsys):
    code = main(["compare", "--methods", "ensemble,laplace", "--no-progress",
                 "--out", str(tmp_path), *SMALL_DATA, *FAST])
    assert code == 0
    out = capsys.readouterr().out
    assert "coverage@0.8" in out and "ensemble" in out and "laplace" in out
    table = pd.read_csv(tmp_path / "comparison.csv", index_col="method")
    assert list(table.index) == ["ensemble", "laplace"]
    assert table["coverage@0.95"].between(0, 1).all()
    # the saved posteriors are the ones evaluated: reloading reproduces the table's accuracy
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=300)
    post = uz.load_posterior(tmp_path / "laplace.nc")
    report = uz.evaluate(post, data, levels=(0.8, 0.95))
    assert report.to_dict()["accuracy"] == pytest.approx(table.loc["laplace", "accuracy"])
    for name in ("coverage.png", "risk_coverage.png", "reliability_ensemble.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_fit_then_evaluate(tmp_path, capsys):
    path = tmp_path / "ens.nc"
    assert main(["fit", "ensemble", "--no-progress", "--out", str(path), *SMALL_DATA,
                 "--set", "num_members=2", "--set", "num_epochs=50"]) == 0
    assert main(["evaluate", str(path), *SMALL_DATA, "--out", str(tmp_path / "t.csv")]) == 0
    table = pd.read_csv(tmp_path / "t.csv")
    assert {"metric", "variant", "level", "class", "value"} <= set(table.columns)


@pytest.mark.parametrize("argv, needle", [
    (["compare", "--methods", "nope"], "method must be one of"),
    (["compare", "--levels", "0.8,abc"], "--levels"),
    (["compare", "--levels", "1.5"], "levels entry must lie in (0.0, 1.0)"),
    (["compare", "--set", "foo=1"], "--set must look like method.option=value"),
    (["compare", "--methods", "ensemble", "--set", "ensemble.bogus=1", *SMALL_DATA],
     "unknown option(s) ['bogus']"),
    (["compare", "--dataset", "no-such-data"], "no-such-data"),
    (["compare", "--hidden", "ten"], "--hidden"),
    (["evaluate", "/nonexistent/post.nc"], "no posterior file"),
])
def test_bad_arguments_exit_2_with_one_line(argv, needle, capsys):
    assert main([*argv, "--no-progress"] if argv[0] != "evaluate" else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and needle in err
    assert "Traceback" not in err


def test_compare_function_validates_and_returns_one_row_per_method():
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=200, seed=1)
    with pytest.raises(uz.InvalidInputError, match="configs names methods"):
        uz.compare(data, ["ensemble"], configs={"laplace": {}})
    with pytest.raises(uz.InvalidInputError, match="delta"):
        uz.compare(data, ["ensemble"], delta=0.7)
    result = uz.compare(data, ["ensemble"], configs={"ensemble": {"num_members": 2,
                                                                 "num_epochs": 50}},
                        progress_bar=False)
    assert list(result.table.index) == ["ensemble"]
    row = result.table.loc["ensemble"]
    assert 0 <= row["coverage@0.8"] <= row["coverage@0.95"] <= 1
    assert np.isfinite(row["fit_seconds"]) and row["fit_seconds"] > 0
