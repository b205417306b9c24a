"""The rule of every file uqzoo writes: never through a link, never over a file unasked.

Each writer is tried on a symbolic link to a file of ``tmp_path`` (the
target must be unchanged, the error must name the link and its target) and
on an existing file without ``--overwrite`` / ``overwrite=True`` (unchanged,
and the error names the remedy). The refusals come before any work, so the
CLI cases need no fit.
"""

import os
import re
from pathlib import Path

import pytest

import uqzoo as uz
from uqzoo import _files
from uqzoo.cli import main
from uqzoo.comparison.config import CompareConfig, write_config
from uqzoo.errors import OutputPathError
from uqzoo.study.store import Store

SMALL_DATA = ["--data-option", "n_train=60", "--data-option", "n_test=40"]
PRECIOUS = b"a file the user never named"


def _posterior():
    spec = uz.MLPSpec(2, 2, hidden=(3,))
    return uz.Posterior(spec=spec, method="ensemble", config={}, seed=0,
                        draws=spec.init_params(0, num=2))


def _link(tmp_path, name="link.out"):
    target = tmp_path / "target.txt"
    target.write_bytes(PRECIOUS)
    link = tmp_path / name
    link.symlink_to(target)
    return link, target


def _existing(tmp_path, name="existing.out"):
    path = tmp_path / name
    path.write_bytes(PRECIOUS)
    return path


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and all(n in err for n in needles), err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def _must_not_run(*args, **kwargs):
    raise AssertionError("the work started although --out is refused")


@pytest.fixture
def no_work(monkeypatch):
    import importlib
    monkeypatch.setattr(uz.methods, "fit", _must_not_run)
    monkeypatch.setattr(importlib.import_module("uqzoo.posterior"), "load_posterior",
                        _must_not_run)
    monkeypatch.setattr(importlib.import_module("uqzoo.reference"), "reference_posterior",
                        _must_not_run)
    monkeypatch.setattr(importlib.import_module("uqzoo.comparison.compare"), "compare",
                        _must_not_run)


# -- the library writers ---------------------------------------------------------------------

def test_write_file_atomically_refuses_a_link_naming_link_and_target(tmp_path):
    link, target = _link(tmp_path)
    with pytest.raises(OutputPathError, match=re.escape(
            f"{str(link)!r} is a symbolic link to {str(target)!r}")):
        _files.write_file_atomically(link, b"new", overwrite=True)
    assert target.read_bytes() == PRECIOUS and link.is_symlink()
    dangling = tmp_path / "dangling.out"
    dangling.symlink_to(tmp_path / "created.txt")
    with pytest.raises(OutputPathError, match="symbolic link"):
        _files.write_file_atomically(dangling, b"new")
    assert not (tmp_path / "created.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.out", "link.out",
                                                          "target.txt"]


def test_write_file_atomically_replaces_an_existing_file_only_with_overwrite(tmp_path):
    path = _existing(tmp_path)
    with pytest.raises(OutputPathError, match=r"exists; .* pass overwrite=True"):
        _files.write_file_atomically(path, b"new")
    assert path.read_bytes() == PRECIOUS
    with pytest.raises(OutputPathError, match=r"--out .* exists; .* pass --overwrite"):
        _files.check_output_file(path, what="--out")
    # the replace renames over the path: another name of the old file keeps it
    other_name = tmp_path / "hard_link.out"
    os.link(path, other_name)
    _files.write_file_atomically(path, b"new", overwrite=True)
    assert path.read_bytes() == b"new" and other_name.read_bytes() == PRECIOUS
    with pytest.raises(uz.InvalidTypeError, match="overwrite must be True or False"):
        _files.write_file_atomically(path, b"new", overwrite="yes")  # type: ignore[arg-type]


def test_a_file_that_appears_during_the_write_is_not_replaced(tmp_path, monkeypatch):
    path = tmp_path / "new.out"
    real_check = _files._check_replaceable
    calls = []

    def appear_after_the_first_check(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:           # after check_output_file's and the writer's own
            path.write_bytes(PRECIOUS)
            return None
        return real_check(*args, **kwargs)

    monkeypatch.setattr(_files, "_check_replaceable", appear_after_the_first_check)
    with pytest.raises(OutputPathError, match="appeared while uqzoo wrote it"):
        _files.write_file_atomically(path, b"new")
    assert path.read_bytes() == PRECIOUS
    assert [p.name for p in tmp_path.iterdir()] == ["new.out"]


def test_posterior_save_refuses_a_link_and_an_existing_file(tmp_path):
    post = _posterior()
    link, target = _link(tmp_path, "link.nc")
    for overwrite in (False, True):
        with pytest.raises(OutputPathError,
                           match=re.escape(f"is a symbolic link to {str(target)!r}")):
            post.save(link, overwrite=overwrite)
    assert target.read_bytes() == PRECIOUS
    path = _existing(tmp_path, "post.nc")
    with pytest.raises(OutputPathError, match=r"exists; .* overwrite=True"):
        post.save(path)
    assert path.read_bytes() == PRECIOUS
    post.save(path, overwrite=True)
    assert uz.load_posterior(path).method == "ensemble"


def test_compare_config_and_report_writers_follow_the_rule(tmp_path):
    link, target = _link(tmp_path, "config.toml")
    config = CompareConfig(methods=("laplace",))
    with pytest.raises(OutputPathError, match="symbolic link"):
        write_config(config, link, overwrite=True)
    existing = _existing(tmp_path, "run.toml")
    with pytest.raises(OutputPathError, match="exists"):
        write_config(config, existing)
    write_config(config, existing, overwrite=True)
    assert b"laplace" in existing.read_bytes()
    report_link, _ = _link(tmp_path, "report.html")
    with pytest.raises(OutputPathError, match="symbolic link"):
        uz.write_report(uz.Comparison(table=None, reports={}, posteriors={}), report_link,
                        overwrite=True)
    assert target.read_bytes() == PRECIOUS


def test_a_study_store_that_is_a_link_is_refused(tmp_path):
    link, target = _link(tmp_path, "s.sqlite")
    with pytest.raises(OutputPathError, match=re.escape(f"is a symbolic link to {str(target)!r}")):
        Store(link).open()
    assert target.read_bytes() == PRECIOUS
    (tmp_path / "t.sqlite.lock").symlink_to(target)
    with pytest.raises(OutputPathError, match=r"lock file .* is a symbolic link"):
        Store(tmp_path / "t.sqlite").open()
    assert target.read_bytes() == PRECIOUS


# -- the command line: exit 2, one line, the target unchanged ---------------------------------

def _argv(command, out, tmp_path):
    if command == "fit":
        return ["fit", "laplace", "--no-progress", "--out", str(out), *SMALL_DATA]
    if command == "evaluate":
        return ["evaluate", str(tmp_path / "post.nc"), "--out", str(out), *SMALL_DATA]
    if command == "reference":
        return ["reference", "--no-progress", "--out", str(out), *SMALL_DATA]
    if command == "study export":
        return ["study", "export", str(tmp_path / "s.sqlite"), "--out", str(out)]
    raise ValueError(command)


WRITERS = ["fit", "evaluate", "reference", "study export"]


@pytest.mark.parametrize("command", WRITERS)
def test_cli_refuses_a_link_at_out_and_leaves_its_target(command, tmp_path, capsys,
                                                         no_work):
    link, target = _link(tmp_path)
    for flags in ([], ["--overwrite"]):
        assert main([*_argv(command, link, tmp_path), *flags]) == 2
        _one_line_error(capsys, f"--out {str(link)!r} is a symbolic link to {str(target)!r}")
    assert target.read_bytes() == PRECIOUS and link.is_symlink()


@pytest.mark.parametrize("command", WRITERS)
def test_cli_refuses_an_existing_file_without_overwrite(command, tmp_path, capsys, no_work):
    path = _existing(tmp_path)
    assert main(_argv(command, path, tmp_path)) == 2
    _one_line_error(capsys, f"--out {str(path)!r} exists", "--overwrite")
    assert path.read_bytes() == PRECIOUS


def test_cli_compare_and_study_run_refuse_links(tmp_path, capsys, no_work):
    folder = tmp_path / "results"
    folder.mkdir()
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert main(["compare", "--no-progress", "--out", str(link), "--overwrite",
                 *SMALL_DATA]) == 2
    _one_line_error(capsys, f"--out {str(link)!r} is a symbolic link to {str(folder)!r}")
    store_link, target = _link(tmp_path, "s.sqlite")
    study = Path(__file__).parents[1] / "experiments" / "examples" / "small.toml"
    assert main(["study", "run", str(study), "--store", str(store_link),
                 "--no-progress"]) == 2
    _one_line_error(capsys, "is a symbolic link to")
    assert target.read_bytes() == PRECIOUS and list(folder.iterdir()) == []


def test_cli_fit_with_overwrite_replaces_the_file(tmp_path, capsys):
    path = _existing(tmp_path, "post.nc")
    assert main(["fit", "map", "--no-progress", "--out", str(path), *SMALL_DATA,
                 "--set", "num_epochs=20", "--overwrite"]) == 0
    assert uz.load_posterior(path).method == "map"
