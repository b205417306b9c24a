"""One method whose fit fails does not sink a comparison: it becomes a failed row."""

import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.cli import EXIT_METHOD_FAILED, main

DATA = {"n_train": 60, "n_test": 40}
FAST = {"laplace": {"num_epochs": 50, "num_samples": 20},
        "sgld": {"step_size": 1e30, "num_steps": 200, "num_burnin": 100, "num_samples": 20,
                 "num_chains": 2, "batch_size": 30}}


@pytest.fixture(scope="module")
def data():
    return uz.datasets.load("sim-teacher", seed=0, **DATA)


def test_a_diverging_sgld_is_a_failed_row_beside_laplace(data):
    result = uz.compare(data, ["laplace", "sgld"], configs=FAST, progress_bar=False)
    table = result.table
    assert list(table.index) == ["laplace", "sgld"]
    assert not table.loc["laplace", "failed"] and table.loc["laplace", "accuracy"] > 0.5
    assert table.loc["sgld", "failed"] and table.loc["sgld", "flags"] == "fit_error"
    reason = table.loc["sgld", "failed_reason"]
    assert reason == result.failed_fits["sgld"]
    assert "sgld: the fit diverged" in reason and "--set sgld.step_size=" in reason
    assert pd.isna(table.loc["sgld", "accuracy"])
    assert set(result.reports) == set(result.posteriors) == {"laplace"}


def test_every_fit_failing_is_one_clear_error(data):
    with pytest.raises(uz.InvalidInputError, match="every method's fit failed"):
        uz.compare(data, ["sgld"], configs={"sgld": FAST["sgld"]}, progress_bar=False)


def test_cli_reports_laplace_and_a_failed_sgld_with_its_exit_status(tmp_path, capsys):
    argv = ["compare", "--methods", "laplace,sgld", "--no-progress", "--out",
            str(tmp_path / "out"), *(a for k, v in DATA.items()
                                      for a in ("--data-option", f"{k}={v}"))]
    for name, options in FAST.items():
        argv += [a for k, v in options.items() for a in ("--set", f"{name}.{k}={v}")]
    assert EXIT_METHOD_FAILED == 1
    assert main(argv) == EXIT_METHOD_FAILED
    captured = capsys.readouterr()
    assert "FAILED sgld (fit): sgld: the fit diverged" in captured.out
    assert "Traceback" not in captured.err
    table = pd.read_csv(tmp_path / "out" / "results.csv", index_col="method")
    assert list(table.index) == ["laplace", "sgld"]
    assert table.loc["sgld", "failed"] and not table.loc["laplace", "failed"]
    assert (tmp_path / "out" / "laplace.nc").is_file()
    assert not (tmp_path / "out" / "sgld.nc").exists()
