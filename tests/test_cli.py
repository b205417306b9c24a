"""The command line and ``uz.compare``: the README's main job, end to end on small data."""

import importlib
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo import _files, cli
from uqzoo.cli import main

# the module, not the function uz.compare of the same name
compare_module = importlib.import_module("uqzoo.comparison.compare")
posterior_module = importlib.import_module("uqzoo.posterior")

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
    # the printed table: short headers within 120 columns, the verdict under it
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("method "))
    assert lines[start].split() == ["method", "S", "fit", "s", "conv", "cov@0.8", "w@0.8",
                                    "cov@0.95", "w@0.95", "HCS%@0.8", "acc", "ECE", "NLL",
                                    "AUROC", "rank"][:len(lines[start].split())]
    table_lines = lines[start:lines.index("", start)]
    assert [line.split()[0] for line in table_lines[1:]] == ["ensemble", "laplace"]
    assert max(map(len, table_lines)) <= cli.TABLE_WIDTH
    assert "Best calibrated by ECE" in out
    assert "balanced_accuracy" not in out                     # --wide prints it
    table = pd.read_csv(tmp_path / "results.csv", index_col="method")
    assert list(table.index) == ["ensemble", "laplace"]
    assert table["coverage@0.95"].between(0, 1).all()
    # results.parquet always, the same table with its types
    parquet = pd.read_parquet(tmp_path / "results.parquet")
    assert list(parquet.index) == ["ensemble", "laplace"]
    assert parquet["num_draws"].dtype.kind == "i" and str(parquet["failed"].dtype) == "boolean"
    np.testing.assert_allclose(parquet["accuracy"], table["accuracy"])
    # the saved posteriors are the ones evaluated: reloading reproduces the table's accuracy
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=300)
    post = uz.load_posterior(tmp_path / "laplace.nc")
    report = uz.evaluate(post, data, levels=(0.8, 0.95))
    assert report.to_dict()["accuracy"] == pytest.approx(table.loc["laplace", "accuracy"])
    for name in ("coverage.png", "risk_coverage.png", "reliability_ensemble.png"):
        assert (tmp_path / name).stat().st_size > 0


def _table(rows, levels):
    table = pd.DataFrame(rows).set_index("method")
    table["failed"] = table["failed"].astype("boolean")
    return table


def _row(method, levels, **extra):
    row = {"method": method, "kind": "posterior", "num_draws": 1000, "fit_seconds": 123.4,
           "converged": True, "failed": False, "flags": "", "accuracy": 0.9, "ece": 0.01,
           "nll": 0.25, "balanced_accuracy": 0.9, "brier": 0.1, "aurc": 0.05,
           "detection_auroc": 0.995, "rank": 1, **extra}
    for level in levels:
        row.update({f"coverage@{level:g}": 0.8, f"interval_width@{level:g}": 0.123,
                    f"hcs_proportion@{level:g}": 0.456})
    return row


def test_the_printed_table_fits_120_columns():
    levels = (0.8, 0.95)
    names = ["hmc", "mfvi", "mc_dropout", "ensemble", "bootstrap", "swag", "laplace",
             "mc_dropout+temperature"]
    rows = [_row(n, levels) for n in names]
    rows[1]["failed"] = True
    rows.append({"method": "ace", "kind": "detector", "fit_seconds": 0.01,
                 "detection_auroc": 0.9, "failed": None})
    text = cli.narrow_table(_table(rows, levels), levels)
    lines = text.splitlines()
    assert max(map(len, lines)) <= cli.TABLE_WIDTH
    assert "cov@0.95" in lines[0] and "w@0.95" in lines[0]    # both levels, long names too
    assert lines[0].split()[-1] == "rank"                      # shown when the table has it
    assert lines[2].startswith("mfvi*") and lines[-1] == "* failed: see FAILED below"
    ace = next(line for line in lines if line.startswith("ace"))
    assert ace.split()[1:4] == ["-", "0.0", "-"]               # a detector has no draws
    # more levels than fit: the last ones are left out, and the table says so
    many = (0.5, 0.8, 0.9, 0.95, 0.99)
    text = cli.narrow_table(_table([_row(n, many) for n in names], many), many)
    assert max(map(len, text.splitlines())) <= cli.TABLE_WIDTH
    assert "left out to fit 120 columns: --wide or results.csv" in text


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
    (["compare", "--levels", "1.5"], "--levels must be comma-separated credible levels, "
                                     "each a number in (0, 1)"),
    (["compare", "--levels", "nan"], "--levels must be comma-separated credible levels, "
                                     "each a number in (0, 1) such as 0.8,0.95, got 'nan'"),
    (["compare", "--delta", "inf"], "--delta must be a number in (0, 0.5) (the High "
                                    "Confidence Set's threshold δ, e.g. 0.2), got inf"),
    (["compare", "--methods", ""], "--methods must name at least one method"),
    (["compare", "--hidden", "1000000,1000000"], "1,000,008,000,001 parameters"),
    (["compare", "--hidden", "100000,100000"], "uqzoo allows at most 16,777,216"),
    (["compare", "--set", "foo=1"], "--set must look like method.option=value"),
    (["compare", "--methods", "ensemble", "--set", "ensemble.bogus=1", *SMALL_DATA],
     "unknown option(s) ['bogus']"),
    (["compare", "--dataset", "no-such-data"], "no-such-data"),
    (["compare", "--hidden", "ten"], "--hidden"),
    (["evaluate", "/nonexistent/post.nc"], "no posterior file"),
    # issue 25 item 3: each filled memory before a traceback, or blocked forever
    (["compare", "--perturb", "noise", "--copies", "1000000000"],
     "--copies must be at most 1,000"),
    (["compare", "--config", "/dev/zero"], "/dev/zero: not a regular file"),
    # issue 25 item 7: --out "" ran everything, wrote nothing and exited 0
    (["compare", "--out", ""], "--out must be a non-empty path"),
    (["evaluate", "/nonexistent/post.nc", "--out", ""], "--out must be a non-empty path"),
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



def test_compare_function_takes_one_name_and_refuses_none():
    data = uz.datasets.load("sim-teacher", n_train=200, n_test=200, seed=1)
    with pytest.raises(uz.InvalidInputError, match="methods must name at least one method"):
        uz.compare(data, [])
    with pytest.raises(uz.InvalidTypeError, match="methods must be a method name or a list"):
        uz.compare(data, 3)
    with pytest.raises(uz.InvalidInputError, match="method must be one of"):
        uz.compare(data, "nope")
    result = uz.compare(data, "ensemble", configs={"ensemble": {"num_members": 2,
                                                                "num_epochs": 50}},
                        progress_bar=False)
    assert list(result.table.index) == ["ensemble"]


# -- outputs are checked before any work, and written whole -------------------------------

def _must_not_run(*args, **kwargs):
    raise AssertionError("the work started although --out is unusable")


@pytest.fixture
def no_work(monkeypatch):
    """Fitting, comparing and loading fail the test: --out must be refused first."""
    monkeypatch.setattr(uz.methods, "fit", _must_not_run)
    monkeypatch.setattr(compare_module, "compare", _must_not_run)
    monkeypatch.setattr(posterior_module, "load_posterior", _must_not_run)


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and all(n in err for n in needles), err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def _os_with(**overrides):
    """``os`` as ``uqzoo.io`` sees it, with some functions replaced."""
    namespace = {name: staticmethod(fn) for name, fn in overrides.items()}
    namespace["__getattr__"] = lambda self, name: getattr(os, name)
    return type("Os", (), namespace)()


class _ReadOnlyFs:
    f_flag = os.ST_RDONLY


def _unusable_file(tmp_path, case, monkeypatch):
    """A file path that --out cannot be, and the words its error must contain."""
    if case == "missing folder":
        return tmp_path / "nowhere" / "post.nc", "folder", "does not exist"
    if case == "directory":
        return tmp_path, "is a directory"
    if case == "read-only file system":
        monkeypatch.setattr(_files, "os", _os_with(statvfs=lambda path: _ReadOnlyFs()))
        return tmp_path / "post.nc", "read-only file system"
    if case == "folder without write permission":
        # os.access rather than chmod: root may write into a 0o555 folder anyway
        monkeypatch.setattr(_files, "os", _os_with(access=lambda path, mode: False))
        return tmp_path / "post.nc", "is not writable"
    if case == "name too long":
        return tmp_path / ("p" * 253 + ".nc"), "256 bytes long", "at most 255"
    if case == "fifo":
        os.mkfifo(tmp_path / "fifo.nc")
        return tmp_path / "fifo.nc", "FIFO"
    if case == "read-only file":
        path = tmp_path / "post.nc"
        path.write_bytes(b"precious")
        path.chmod(0o444)
        return path, "read-only (mode 0444)"
    raise ValueError(case)


FILE_CASES = ["missing folder", "directory", "read-only file system",
              "folder without write permission", "name too long", "fifo", "read-only file"]


@pytest.mark.parametrize("case", FILE_CASES)
def test_fit_checks_out_before_fitting(tmp_path, capsys, monkeypatch, no_work, case):
    out, *needles = _unusable_file(tmp_path, case, monkeypatch)
    assert main(["fit", "ensemble", "--no-progress", "--out", str(out), *SMALL_DATA]) == 2
    _one_line_error(capsys, f"--out {str(out)!r}", *needles)


@pytest.mark.parametrize("case", FILE_CASES)
def test_evaluate_checks_out_before_loading(tmp_path, capsys, monkeypatch, no_work, case):
    out, *needles = _unusable_file(tmp_path, case, monkeypatch)
    assert main(["evaluate", str(tmp_path / "post.nc"), "--out", str(out)]) == 2
    _one_line_error(capsys, f"--out {str(out)!r}", *needles)


def test_compare_checks_out_before_comparing(tmp_path, capsys, monkeypatch, no_work):
    file = tmp_path / "table.csv"
    file.write_text("a file")
    full = tmp_path / "full"
    full.mkdir()
    (full / "old.csv").write_text("an earlier run")
    cases = [(file, "is a file; it must name a folder"),
             (tmp_path / "nowhere" / "results", "does not exist"),
             (full, "is a folder that is not empty"),
             (tmp_path / ("r" * 256), "256 bytes long")]
    for out, needle in cases:
        assert main(["compare", "--no-progress", "--out", str(out), *SMALL_DATA]) == 2
        _one_line_error(capsys, f"--out {str(out)!r}", needle)
    monkeypatch.setattr(_files, "os", _os_with(statvfs=lambda path: _ReadOnlyFs()))
    assert main(["compare", "--no-progress", "--out", str(tmp_path / "new"), *SMALL_DATA]) == 2
    _one_line_error(capsys, "read-only file system")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "table.csv"]


def test_ctrl_c_during_a_fit_is_one_line_and_exit_130(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(uz.methods, "fit", interrupted)
    assert main(["fit", "ensemble", "--no-progress", "--out", str(tmp_path / "p.nc"),
                 *SMALL_DATA]) == 130
    assert capsys.readouterr().err == "uqzoo: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def _fake_comparison():
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    post = uz.Posterior(spec=spec, method="ensemble", config={}, seed=0,
                        draws=spec.init_params(0, num=2))
    table = pd.DataFrame({"accuracy": [0.5]}, index=pd.Index(["ensemble"], name="method"))
    return uz.Comparison(table=table, reports={}, posteriors={"ensemble": post})


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_an_interrupted_or_failed_compare_leaves_nothing_half_written(tmp_path, capsys,
                                                                      monkeypatch, failure):
    out = tmp_path / "results"
    monkeypatch.setattr(compare_module, "compare", lambda *a, **k: _fake_comparison())

    def plots_then_fail(reports, data, folder, **kwargs):
        (folder / "coverage.png").write_bytes(b"half a picture")
        raise failure(28, "No space left on device") if failure is OSError else failure()

    monkeypatch.setattr(cli, "_save_plots", plots_then_fail)
    code = main(["compare", "--methods", "ensemble", "--no-progress", "--out", str(out),
                 *SMALL_DATA])
    if failure is KeyboardInterrupt:
        assert code == 130 and capsys.readouterr().err == "uqzoo: interrupted\n"
    else:
        assert code == 2
        _one_line_error(capsys, f"could not write {str(out)!r}: no space left on the device")
    assert list(tmp_path.iterdir()) == []          # neither results nor a temporary folder


def test_compare_replaces_a_full_folder_only_with_overwrite(tmp_path, capsys, monkeypatch):
    out = tmp_path / "results"
    out.mkdir()
    (out / "results.csv").write_text("a run with another seed")
    (out / "hmc.nc").write_text("a method this run does not compare")
    monkeypatch.setattr(compare_module, "compare", lambda *a, **k: _fake_comparison())
    monkeypatch.setattr(cli, "_save_plots",
                        lambda reports, data, folder, **kwargs:
                        (folder / "coverage.png").write_bytes(b"png"))
    argv = ["compare", "--methods", "ensemble", "--no-progress", "--out", str(out), *SMALL_DATA]
    assert main(argv) == 2
    _one_line_error(capsys, "not empty", "--overwrite")
    assert main([*argv, "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["config.toml", "coverage.png",
                                                    "ensemble.nc", "report.html",
                                                    "results.csv", "results.parquet"]
    assert uz.load_posterior(out / "ensemble.nc").method == "ensemble"
    assert [p.name for p in tmp_path.iterdir()] == ["results"]


_CLI_ON_A_FULL_DISK = """
import resource, signal, sys
# The kernel refuses writes past 10 kB (EFBIG), as a full disk does (ENOSPC);
# ignoring SIGXFSZ turns the signal into that error. Set here, not in a
# preexec_fn: forking a process that runs JAX threads can deadlock.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (10_000, 10_000))
from uqzoo.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_fit_onto_a_disk_that_fills_up_is_one_line_not_a_crash(tmp_path):
    # Before issue 9 this ended in signal 11 after several tracebacks.
    out = tmp_path / "post.nc"
    run = subprocess.run(
        [sys.executable, "-c", _CLI_ON_A_FULL_DISK, "fit", "ensemble", "--no-progress",
         "--out", str(out), *SMALL_DATA, "--set", "num_members=2", "--set", "num_epochs=20"],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 2, run.stderr[-3000:]
    assert run.stderr.startswith(f"uqzoo: error: could not write {str(out)!r}: file too large")
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_evaluate_refuses_a_hostile_posterior_in_one_line(tmp_path, capsys):
    import h5py
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"TOP-SECRET" * 8)
    path = tmp_path / "post.nc"
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    uz.Posterior(spec=spec, method="x", config={}, seed=0,
                 draws=spec.init_params(0, num=2)).save(path)
    with h5py.File(path, "r+") as f:
        f["diagnostics"].create_dataset("x", shape=(20,), dtype="<f4",
                                        external=[(str(secret), 0, 80)])
    assert main(["evaluate", str(path), *SMALL_DATA]) == 2
    err = _one_line_error(capsys, "/diagnostics/x uses external storage")
    assert "TOP-SECRET" not in err
    (tmp_path / "half.nc").write_bytes(path.read_bytes()[:3000])
    assert main(["evaluate", str(tmp_path / "half.nc"), *SMALL_DATA]) == 2
    _one_line_error(capsys, "truncated or foreign")


# -- data from files: hyperspectral scenes and CSV tables ---------------------------------

def _scene_files(tmp_path):
    """A 24 × 24 scene with three small targets, cube and 0/1 mask in separate .mat files."""
    import scipy.io

    rng = np.random.default_rng(0)
    cube = rng.normal(size=(24, 24, 5)).astype(np.float32)
    mask = np.zeros((24, 24), np.uint8)
    mask[3:6, 3:6] = mask[15:18, 16:19] = mask[18:21, 4:7] = 1
    cube[mask == 1] += 2.0
    scipy.io.savemat(tmp_path / "cube.mat", {"cube": cube, "wavelengths": np.arange(5.0)[None]})
    scipy.io.savemat(tmp_path / "mask.mat", {"PlaneGT": mask})
    return str(tmp_path / "cube.mat"), str(tmp_path / "mask.mat")


def test_compare_on_a_scene_from_files(tmp_path, capsys):
    cube, mask = _scene_files(tmp_path)
    out = tmp_path / "results"
    argv = ["compare", "--dataset", cube, "--labels", mask, "--unlabelled", "none",
            "--class-names", "background,plane", "--target-class", "plane",
            "--split", "blocks", "--guard", "2", "--methods", "ensemble", "--no-progress",
            "--set", "ensemble.num_members=2", "--set", "ensemble.num_epochs=30",
            "--reference", "none", "--out", str(out)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "scene 24×24: split 'blocks', guard band 2 px" in printed
    assert "True (plane)" in printed and "name='cube.mat'" in printed
    data = uz.datasets.from_hsi(cube, mask, unlabelled=None, target_class=1, split="blocks")
    counts = [data.meta[f"class_counts_{side}"][1] for side in ("train", "test", "guard")]
    assert f"  True (plane): {counts[0]} / {counts[1]} / {counts[2]}" in printed
    # few targets: the data-fit warnings, each once, as one line without Python's source line
    notices = [line for line in captured.err.splitlines() if "DataWarning" in line]
    assert len(notices) == 2
    assert notices[0].startswith(f"uqzoo: DataWarning: class 1 (plane) has {counts[0]} "
                                 "training rows (fewer than 20)")
    assert notices[1] == (f"uqzoo: DataWarning: the test set holds {counts[1]} target pixels "
                          f"(fewer than 20): Pd at FAR 0.001, 0.01 moves by 1/{counts[1]} per "
                          "target and its interval spans most of [0, 1]; test on more targets")
    assert "warnings.warn" not in captured.err
    assert (out / "maps_ensemble.png").stat().st_size > 0
    assert not (out / "coverage.png").exists()     # a real scene has no true probabilities
    post = uz.load_posterior(out / "ensemble.nc")
    table = pd.read_csv(out / "results.csv", index_col="method")
    # the saved posterior, evaluated on the same split built in Python, gives the table
    report = uz.evaluate(post, data, levels=(0.8, 0.95))
    assert report.to_dict()["accuracy"] == pytest.approx(table.loc["ensemble", "accuracy"])


def test_fit_and_evaluate_load_the_same_scene_split(tmp_path, capsys):
    cube, mask = _scene_files(tmp_path)
    scene = ["--dataset", cube, "--labels", mask, "--unlabelled", "none",
             "--split", "top-bottom", "--split-fraction", "0.6", "--guard", "1"]
    post = tmp_path / "post.nc"
    assert main(["fit", "ensemble", *scene, "--no-progress", "--out", str(post),
                 "--set", "num_members=2", "--set", "num_epochs=20"]) == 0
    assert main(["evaluate", str(post), *scene, "--out", str(tmp_path / "t.csv")]) == 0
    table = pd.read_csv(tmp_path / "t.csv")
    accuracy = table.loc[table.metric == "accuracy", "value"].iloc[0]
    data = uz.datasets.from_hsi(cube, mask, unlabelled=None, split="top-bottom",
                                split_fraction=0.6, guard=1)
    assert data.meta["split_boundary"] == 14
    expected = uz.evaluate(uz.load_posterior(post), data).to_dict()["accuracy"]
    assert accuracy == pytest.approx(expected)
    assert "split 'top-bottom', guard band 1 px" in capsys.readouterr().out


def test_random_scene_split_is_flagged_optimistic(tmp_path, capsys, monkeypatch):
    cube, mask = _scene_files(tmp_path)
    monkeypatch.setattr(uz.methods, "fit", lambda *a, **k: (_ for _ in ()).throw(
        KeyboardInterrupt))
    assert main(["fit", "ensemble", "--dataset", cube, "--labels", mask, "--unlabelled",
                 "none", "--split", "random", "--no-progress",
                 "--out", str(tmp_path / "p.nc")]) == 130
    assert "scores are optimistic" in capsys.readouterr().out


def test_fit_on_a_csv_table_with_target(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(
        kind=np.where(X[:, 0] + X[:, 1] > 0, "yes", "no"))
    frame.to_csv(tmp_path / "t.csv", index=False)
    post = tmp_path / "post.nc"
    table = ["--dataset", str(tmp_path / "t.csv"), "--target", "kind", "--test-size", "0.3"]
    assert main(["fit", "ensemble", *table, "--no-progress", "--out", str(post),
                 "--set", "num_members=2", "--set", "num_epochs=20"]) == 0
    assert uz.load_posterior(post).classes == ("no", "yes")
    assert main(["evaluate", str(post), *table]) == 0


@pytest.mark.parametrize("extra, needle", [
    (["--dataset", "iris", "--labels", "m.mat"],
     "--labels applies only when --dataset is a file"),
    (["--dataset", "absent.mat"], "--dataset 'absent.mat': no such file"),
    (["--guard", "two"], "--guard must be an integer, got 'two'"),
    (["--block-size", "4,4,4"], "--block-size must be a block side in pixels, or HEIGHT,WIDTH"),
    (["--unlabelled", "nothing"], "--unlabelled must be an integer label or none"),
    (["--split", "blocks", "--split-fraction", "0.3"],
     "--split-fraction 0.3 applies to split 'left-right' or 'top-bottom', not --split blocks"),
    (["--unlabelled", "0"], "if 0 is a class (the background of a 0/1 target mask), pass "
                            "--unlabelled none"),
    (["--unlabelled", "none", "--split", "left-right", "--split-fraction", "0.1"],
     "--split left-right leaves label 0 with no training pixel (549 labelled: 0 train"),
    (["--unlabelled", "none", "--split-fraction", "0.1"],
     "--split-fraction 0.1 applies to split 'left-right' or 'top-bottom', not --split "
     "stratified"),
    (["--unlabelled", "none", "--target-class", "plane"],
     "--target-class plane is not a class name"),
    (["--unlabelled", "none", "--labels-key", "gt"],
     "--labels-key gt is not in {mask!r}; it holds PlaneGT (24, 24) uint8"),
    (["--split", "blocks", "--data-option", "split=random"], "--split and --data-option"),
    (["--target", "kind"], "--target does not apply to --dataset {cube!r}"),
])
def test_scene_file_mistakes_exit_2_with_one_line(tmp_path, capsys, no_work, extra, needle):
    cube, mask = _scene_files(tmp_path)
    argv = ["compare", "--no-progress", "--dataset", cube, "--labels", mask, *extra]
    if "--dataset" in extra:
        argv = ["compare", "--no-progress", *extra]
    assert main(argv) == 2
    _one_line_error(capsys, needle.format(cube=cube, mask=mask))


def test_table_file_mistakes_exit_2_with_one_line(tmp_path, capsys, no_work):
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]}).to_csv(tmp_path / "t.csv",
                                                                          index=False)
    table = str(tmp_path / "t.csv")
    assert main(["fit", "ensemble", "--dataset", table, "--out", str(tmp_path / "p.nc")]) == 2
    _one_line_error(capsys, f"--dataset {table!r} is a table: name its label column with "
                            "--target COLUMN")
    assert main(["fit", "ensemble", "--dataset", table, "--target", "y", "--guard", "2",
                 "--out", str(tmp_path / "p.nc")]) == 2
    _one_line_error(capsys, "--guard does not apply to --dataset")
    (tmp_path / "scene.tif").write_bytes(b"\x00" * 8)
    assert main(["compare", "--dataset", str(tmp_path / "scene.tif"), "--labels", "m.png"]) == 2
    _one_line_error(capsys, "is a file of a type uqzoo does not read")
