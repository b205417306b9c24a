"""Study files: validation before anything runs, and stable task ids and seeds."""

from __future__ import annotations

import os
import re

import pytest

import uqzoo as uz
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError
from uqzoo.study.studyfile import Task, task_id

BASE = """\
[study]
name = "base"
replicates = 2
levels = [0.5, 0.9]

[spec]
hidden = [5]
prior_scale = 1

[[datasets]]
name = "sim-teacher"
options = { p = 2, n_test = 200 }
grid = { n_train = [100, 200], logit_scale = [1, 2.5] }

[[datasets]]
name = "gaussian-mixture"
options = { covariance = "unequal", p = 2 }

[[methods]]
name = "ensemble"
config = { num_epochs = 30, learning_rate = 0.01 }
grid = { num_members = [3, 5] }

[[methods]]
name = "laplace"
config = { num_epochs = 30 }
"""

# The same study written another way: entries, keys, grid values and tables in
# other orders, 1.0 for 1, and the study seed given explicitly at its default.
PERMUTED = """\
[[methods]]
config = { num_epochs = 30 }
name = "laplace"

[[methods]]
grid = { num_members = [5, 3] }
name = "ensemble"
config = { learning_rate = 0.01, num_epochs = 30 }

[[datasets]]
options = { p = 2, covariance = "unequal" }
name = "gaussian-mixture"

[[datasets]]
name = "sim-teacher"
grid = { logit_scale = [2.5, 1.0], n_train = [200, 100] }
options = { n_test = 200, p = 2 }

[spec]
prior_scale = 1.0
hidden = [5]

[study]
seed = 0
levels = [0.9, 0.5]
replicates = 2
name = "base"
"""


def _write(tmp_path, text, name="study.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _key(task):
    return (task.id, task.seed, task.data_seed, task.dataset, task.setting, task.method,
            task.variant, task.replicate, task.config_json)


def test_expands_every_combination(tmp_path):
    tasks = uz.study.expand(_write(tmp_path, BASE))
    # (4 sim-teacher settings + 1 mixture) × (2 ensemble variants + laplace) × 2 replicates
    assert len(tasks) == 5 * 3 * 2
    assert len({t.id for t in tasks}) == len(tasks)
    assert all(re.fullmatch(r"[0-9a-f]{16}", t.id) for t in tasks)
    assert all(0 <= t.seed < 2**31 and 0 <= t.data_seed < 2**31 for t in tasks)
    settings = {t.setting for t in tasks if t.dataset == "sim-teacher"}
    assert settings == {"logit_scale=1.0, n_train=100", "logit_scale=1.0, n_train=200",
                        "logit_scale=2.5, n_train=100", "logit_scale=2.5, n_train=200"}
    assert {t.variant for t in tasks if t.method == "ensemble"} == {"num_members=3",
                                                                   "num_members=5"}
    config = tasks[0].config
    assert config["spec"] == {"hidden": [5], "activation": "tanh", "prior_scale": 1.0,
                              "prior": "fan_in"}
    assert config["levels"] == [0.5, 0.9]


def test_ids_and_seeds_do_not_depend_on_order(tmp_path):
    base = uz.study.expand(_write(tmp_path, BASE, "a.toml"))
    permuted = uz.study.expand(_write(tmp_path, PERMUTED, "b.toml"))
    assert sorted(map(_key, base)) == sorted(map(_key, permuted))


def test_ids_are_stable_across_versions():
    """A task id is a published key of the store: changing how it is computed orphans
    every existing store, so it is pinned here."""
    config = {"dataset": {"name": "sim-teacher", "options": {"p": 2}},
              "method": {"name": "laplace", "config": {}},
              "spec": {"hidden": [10, 10], "activation": "tanh", "prior_scale": 1.0,
                       "dropout": 0.0},
              "levels": [0.5, 0.8, 0.9, 0.95], "delta": 0.2, "replicate": 0, "seed": 0}
    task = Task.from_config(config)
    assert task.id == task_id(config) == "9535d429f1a6b1b3"
    assert (task.seed, task.data_seed) == (1467183341, 2023983732)


def test_one_replicate_shares_its_data_across_methods(tmp_path):
    tasks = uz.study.expand(_write(tmp_path, BASE))
    by_cell: dict = {}
    for t in tasks:
        by_cell.setdefault((t.dataset, t.setting, t.replicate), set()).add(t.data_seed)
    assert all(len(seeds) == 1 for seeds in by_cell.values())        # common random numbers
    assert len({next(iter(s)) for s in by_cell.values()}) == len(by_cell)
    assert len({t.seed for t in tasks}) == len(tasks)


def test_study_seed_changes_every_task(tmp_path):
    a = uz.study.expand(_write(tmp_path, BASE, "a.toml"))
    b = uz.study.expand(_write(tmp_path, BASE.replace('name = "base"', 'name = "base"\nseed = 1'),
                               "b.toml"))
    assert not {t.id for t in a} & {t.id for t in b}
    assert not {t.data_seed for t in a} & {t.data_seed for t in b}


def test_task_is_frozen_and_hashable(tmp_path):
    task = uz.study.expand(_write(tmp_path, BASE))[0]
    with pytest.raises(AttributeError):
        task.seed = 1
    assert hash(task) == hash(Task.from_config(task.config, study=task.study,
                                               dataset=task.dataset, setting=task.setting,
                                               method=task.method, variant=task.variant))
    task.config["replicate"] = 99                     # a copy: the task is unchanged
    assert task.config["replicate"] == task.replicate


_MINIMAL = '[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "laplace"\n'


@pytest.mark.parametrize("text, error, needles", [
    ("[sutdy]\nname = 'x'\n" + _MINIMAL, InvalidInputError,
     ["sutdy", "allowed: study, spec, datasets, methods"]),
    ("[study]\nreplicate = 3\n" + _MINIMAL, InvalidInputError,
     ["study.replicate", "allowed: name, description, replicates"]),
    ("[study]\nreplicates = '3'\n" + _MINIMAL, InvalidTypeError,
     ["study.replicates", "must be an integer", "'3'"]),
    ("[study]\nreplicates = 0\n" + _MINIMAL, InvalidInputError, ["study.replicates", ">= 1"]),
    ("[study]\nlevels = [0.5, 1.5]\n" + _MINIMAL, InvalidInputError, ["study.levels", "1.5"]),
    ("[study]\nlevels = []\n" + _MINIMAL, InvalidTypeError, ["study.levels", "non-empty"]),
    ("[study]\ndelta = 0.7\n" + _MINIMAL, InvalidInputError, ["study.delta", "(0, 0.5)"]),
    ("[spec]\nin_features = 3\n" + _MINIMAL, InvalidInputError,
     ["spec.in_features", "set by each data set"]),
    ("[spec]\nhidden = 10\n" + _MINIMAL, InvalidTypeError, ["spec.hidden", "[10, 10]"]),
    ("[spec]\nactivation = 'swish'\n" + _MINIMAL, InvalidInputError,
     ["spec", "activation", "'tanh'"]),
    ('[[methods]]\nname = "laplace"\n', InvalidInputError, ["datasets", "missing"]),
    ('datasets = []\n[[methods]]\nname = "laplace"\n', InvalidInputError,
     ["datasets", "empty"]),
    ('[[datasets]]\nname = "sim-teachr"\n[[methods]]\nname = "laplace"\n', InvalidInputError,
     ["datasets[0].name", "'sim-teachr'", "allowed: sim-teacher, hsi-sim"]),
    ('[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "hmcc"\n', InvalidInputError,
     ["methods[0].name", "'hmcc'", "allowed: hmc, mfvi, mc_dropout, ensemble, bootstrap, "
                                   "swag, laplace"]),
    ('[[datasets]]\nname = "sim-teacher"\noption = { p = 2 }\n[[methods]]\nname = "laplace"\n',
     InvalidInputError, ["datasets[0].option", "allowed: name, label, options, grid"]),
    ('[[datasets]]\nname = "sim-teacher"\ngrid = { n_trian = [100] }\n[[methods]]\n'
     'name = "laplace"\n', InvalidInputError,
     ["datasets[0].grid.n_trian", "unknown option of data set 'sim-teacher'", "n_train"]),
    ('[[datasets]]\nname = "sim-teacher"\noptions = { n_train = "100" }\n[[methods]]\n'
     'name = "laplace"\n', InvalidTypeError,
     ["datasets[0].options.n_train", "must be an integer", "'100'"]),
    ('[[datasets]]\nname = "sim-teacher"\noptions = { seed = 3 }\n[[methods]]\n'
     'name = "laplace"\n', InvalidInputError,
     ["datasets[0].options.seed", "set by the study runner"]),
    ('[[datasets]]\nname = "sim-teacher"\ngrid = { p = [] }\n[[methods]]\nname = "laplace"\n',
     InvalidInputError, ["datasets[0].grid.p", "empty grid"]),
    ('[[datasets]]\nname = "sim-teacher"\ngrid = { p = 2 }\n[[methods]]\nname = "laplace"\n',
     InvalidTypeError, ["datasets[0].grid.p", "values to try"]),
    ('[[datasets]]\nname = "sim-teacher"\ngrid = { p = [2, 3, 2] }\n[[methods]]\n'
     'name = "laplace"\n', InvalidInputError, ["datasets[0].grid.p", "twice"]),
    ('[[datasets]]\nname = "sim-teacher"\noptions = { p = 2 }\ngrid = { p = [2, 3] }\n'
     '[[methods]]\nname = "laplace"\n', InvalidInputError,
     ["datasets[0].grid.p", "given twice", "options and in grid"]),
    ('[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "laplace"\n'
     'config = { num_epoch = 3 }\n', InvalidInputError,
     ["methods[0].config.num_epoch", "unknown option of method 'laplace'", "num_epochs"]),
    ('[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "laplace"\n'
     'grid = { num_epochs = [10, 0] }\n', InvalidInputError,
     ["methods[0]", "num_epochs", ">= 1"]),
    ('[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "laplace"\n'
     '[[methods]]\nname = "laplace"\n', InvalidInputError,
     ["methods[1]", "same task as", "methods[0]"]),
    ('[[datasets]]\nname = "sim-teacher"\n[[methods]]\nname = "laplace"\n'
     '[[methods]]\nname = "laplace"\nconfig = { predictive = "nn" }\n', InvalidInputError,
     ["methods[1].label", "also the label of methods[0]"]),
])
def test_bad_study_files_are_rejected_naming_file_and_key(tmp_path, text, error, needles):
    path = _write(tmp_path, text, "bad_study.toml")
    with pytest.raises(error) as caught:
        uz.study.expand(path)
    message = str(caught.value)
    assert message.startswith("bad_study.toml: "), message
    for needle in needles:
        assert needle in message, (needle, message)
    assert "\n" not in message


@pytest.mark.parametrize("text, needles", [
    ('[[datasets]]\nname = "sim-teacher"\n[datasets.options]\np = 2\nn_train = 100\np = 3\n'
     '[[methods]]\nname = "laplace"\n', ["datasets.options.p", "given twice", "line 6"]),
    ('[study]\nname = "a"\n[study]\nreplicates = 2\n' + _MINIMAL, ["given twice", "study"]),
    ('[[datasets]]\nname = "sim-teacher"\noptions = { p = 2, p = 3 }\n', ["given twice"]),
    ("[study\nname = 'x'\n", ["not valid TOML", "line 1"]),
])
def test_toml_errors_name_the_file_and_key(tmp_path, text, needles):
    path = _write(tmp_path, text, "broken.toml")
    with pytest.raises(FileFormatError) as caught:
        uz.study.expand(path)
    message = str(caught.value)
    assert message.startswith("broken.toml: "), message
    for needle in needles:
        assert needle in message, (needle, message)


def test_missing_file_and_bad_path_type(tmp_path):
    with pytest.raises(FileFormatError, match="no such study file"):
        uz.study.expand(tmp_path / "nope.toml")
    with pytest.raises(FileFormatError, match="is a folder"):
        uz.study.expand(tmp_path)
    with pytest.raises(InvalidTypeError, match="path must be"):
        uz.study.expand(3)


@pytest.mark.parametrize("text, needles", [
    # issue 25 item 3: each filled memory for tens of seconds before a traceback
    ("[study]\nreplicates = 1000000000\n" + _MINIMAL,
     ["study.replicates", "at most 100,000", "1,000,000,000"]),
    ("[study]\nreplicates = 2000\n" + _MINIMAL.replace(
        'name = "laplace"', f'name = "laplace"\ngrid = {{ num_epochs = {list(range(1, 101))} }}'),
     ["1 data-set settings × 100 method variants × 2,000 replicates = 200,000 tasks",
      "100,000"]),
    (_MINIMAL.replace('name = "laplace"', f'name = "laplace"\ngrid = {{ num_epochs = '
                      f'{list(range(1, 3001))}, learning_rate = '
                      f'{[i / 1e4 for i in range(1, 3001)]} }}'),
     ["methods[0].grid", "3,000 learning_rate × 3,000 num_epochs = 9,000,000 tasks"]),
])
def test_study_sizes_are_bounded_before_any_task_is_built(tmp_path, text, needles):
    path = _write(tmp_path, text, "huge.toml")
    with pytest.raises(InvalidInputError) as caught:
        uz.study.expand(path)
    message = str(caught.value)
    assert message.startswith("huge.toml: "), message
    for needle in needles:
        assert needle in message, (needle, message)


def test_only_a_small_regular_file_is_read_as_a_study_file(tmp_path):
    # issue 25 items 3 and 6: /dev/zero filled memory, a FIFO blocked forever, a
    # file nested 5000 levels raised RecursionError
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        with pytest.raises(FileFormatError, match="not a regular file"):
            uz.study.expand(path)
    big = _write(tmp_path, _MINIMAL + "# padding\n" * 120_000, "big.toml")
    with pytest.raises(FileFormatError, match=r"big.toml: larger than 1 MiB"):
        uz.study.expand(big)
    deep = _write(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n" + _MINIMAL, "deep.toml")
    with pytest.raises(FileFormatError, match=r"^deep.toml: tables or arrays nested too deeply"):
        uz.study.expand(deep)


def test_nothing_runs_and_no_store_is_made_for_a_bad_file(tmp_path):
    path = _write(tmp_path, _MINIMAL.replace("laplace", "lapalce"))
    store = tmp_path / "results.sqlite"
    with pytest.raises(InvalidInputError, match="lapalce"):
        uz.study.run(path, store=store, progress_bar=False)
    assert not store.exists()


@pytest.mark.parametrize("kwargs, error, needle", [
    ({"executor": "spark"}, InvalidInputError, "executor must be one of 'local', 'dask'"),
    ({"workers": 0}, InvalidInputError, "workers must be >= 1"),
    ({"address": "tcp://127.0.0.1:1"}, InvalidInputError, "address is for executor='dask'"),
    ({"executor": "dask", "address": "tcp://127.0.0.1:1", "workers": 2}, InvalidInputError,
     "the cluster decides"),
])
def test_bad_run_arguments_are_rejected_before_the_store(tmp_path, kwargs, error, needle):
    store = tmp_path / "results.sqlite"
    with pytest.raises(error, match=re.escape(needle)):
        uz.study.run(_write(tmp_path, _MINIMAL), store=store, progress_bar=False, **kwargs)
    assert not store.exists()
