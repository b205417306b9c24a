"""A user's network named as FILE.py:FACTORY: the CLI, config files and study files.

The file is imported as Python; each test writes its own into a temporary
folder, so no test imports anything outside it.
"""

from __future__ import annotations

import pytest

import uqzoo as uz
from uqzoo.cli import main
from uqzoo.comparison.config import read_config
from uqzoo.errors import InvalidInputError

pytestmark = pytest.mark.xdist_group("models")

NET = """\
import jax.numpy as jnp
import numpy as np
import uqzoo as uz


def make(in_features, n_classes):
    out = 1 if n_classes == 2 else n_classes
    rng = np.random.default_rng(0)
    params = {"l1": {"w": rng.normal(0, 0.5, (in_features, 6)).astype(np.float32),
                     "b": np.zeros(6, np.float32)},
              "head": {"w": rng.normal(0, 0.3, (6, out)).astype(np.float32),
                       "b": np.zeros(out, np.float32)}}

    def residual_free_net(p, X):
        h = jnp.tanh(X @ p["l1"]["w"] + p["l1"]["b"])
        return h @ p["head"]["w"] + p["head"]["b"]

    return uz.models.from_function(residual_free_net, params, in_features=in_features,
                                   n_classes=n_classes, last_layer="head")


def not_a_model(in_features, n_classes):
    return "mlp"
"""


@pytest.fixture()
def net(tmp_path):
    (tmp_path / "net.py").write_text(NET)
    return tmp_path / "net.py"


def test_from_file_builds_the_model_and_names_every_mistake(net, tmp_path):
    model = uz.models.from_file(f"{net}:make", 4, 3)
    assert isinstance(model, uz.Model) and model.n_outputs == 3
    for text, message in [("net.py", "FILE.py:FACTORY"),
                          (f"{tmp_path}/absent.py:make", "no Python file"),
                          (f"{net}:nope", "defines no function 'nope'"),
                          (f"{net}:not_a_model", r"must return a uqzoo\.Model .*got str")]:
        with pytest.raises(InvalidInputError, match=message):
            uz.models.from_file(text, 4, 3)


def test_cli_fits_evaluates_and_compares_a_model_file(net, tmp_path, capsys):
    out = tmp_path / "post.nc"
    data = ["--dataset", "sim-teacher", "--data-option", "n_train=150",
            "--data-option", "n_test=100"]
    assert main(["fit", "laplace", *data, "--model", f"{net}:make", "--out", str(out),
                 "--set", "num_epochs=100", "--set", "num_samples=50", "--no-progress"]) == 0
    # The file holds no code: evaluating it needs the same model, and says so in one line.
    assert main(["evaluate", str(out), *data]) == 2
    assert "--model FILE.py:FACTORY" in capsys.readouterr().err
    assert main(["evaluate", str(out), *data, "--model", f"{net}:make"]) == 0
    assert main(["fit", "map", *data, "--model", f"{net}:make", "--hidden", "5",
                 "--out", str(tmp_path / "q.nc")]) == 2
    assert "--model sets the whole network; drop --hidden" in capsys.readouterr().err
    capsys.readouterr()
    assert main(["compare", *data, "--methods", "map,mc_dropout", "--model", f"{net}:make",
                 "--no-progress", "--set", "map.num_epochs=100"]) == 0
    printed = capsys.readouterr().out
    assert "network: model residual_free_net" in printed and "Left out" in printed


def test_compare_config_and_study_files_take_a_model(net, tmp_path):
    config = tmp_path / "compare.toml"
    config.write_text('[compare]\nmethods = ["map"]\n[data]\ndataset = "sim-teacher"\n'
                      'n_train = 120\nn_test = 80\n[spec]\nmodel = "net.py:make"\n'
                      '[methods.map]\nnum_epochs = 50\n')
    compared = read_config(config)
    result = compared.run(progress_bar=False)
    assert "residual_free_net" in result.settings.model
    assert 'model = "' in compared.resolved().to_toml()       # the run repeats from it
    study = tmp_path / "study.toml"
    study.write_text('[study]\nname = "own"\nreplicates = 1\nlevels = [0.9]\n'
                     '[spec]\nmodel = "net.py:make"\n'
                     '[[datasets]]\nname = "sim-teacher"\n'
                     'options = { p = 2, n_train = 100, n_test = 100 }\n'
                     '[[methods]]\nname = "map"\nconfig = { num_epochs = 30 }\n')
    parsed = uz.study.read_study(study)
    assert parsed.spec == {"model": f"{net.resolve()}:make"}
    store = tmp_path / "store.sqlite"
    summary = uz.study.run(study, store=store, executor="local", workers=1, threads=1,
                           progress_bar=False)
    assert (summary.done, summary.failed) == (1, 0)
    bad = tmp_path / "bad.toml"
    bad.write_text(study.read_text().replace('model = "net.py:make"',
                                             'model = "net.py:make"\nhidden = [3]'))
    with pytest.raises(InvalidInputError, match=r"spec\.model.*remove \['hidden'\]"):
        uz.study.read_study(bad)
