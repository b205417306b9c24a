"""``uqzoo compare --config FILE.toml``: validation, the resolved config and its round trip."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.cli import main
from uqzoo.comparison.config import (
    CompareConfig,
    _string,
    config_data,
    read_config,
    write_config,
)

SMALL_RUN = """
[compare]
methods = ["laplace", "ensemble"]
num_draws = 40
levels = [0.8, 0.95]

[data]
dataset = "sim-teacher"
n_train = 200
n_test = 300

[methods.laplace]
num_epochs = 60

[methods.ensemble]
num_members = 3
num_epochs = 60
"""


def _file(tmp_path, text, name="run.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and all(n in err for n in needles), err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


# -- reading ------------------------------------------------------------------------------

def test_a_small_file_reads_with_defaults_for_what_it_leaves_out(tmp_path):
    config = read_config(_file(tmp_path, SMALL_RUN))
    assert config.dataset == "sim-teacher"
    assert dict(config.data) == {"n_train": 200, "n_test": 300}
    assert config.methods == ("laplace", "ensemble")
    assert config.configs == {"laplace": {"num_epochs": 60},
                              "ensemble": {"num_members": 3, "num_epochs": 60}}
    assert (config.levels, config.delta, config.seed, config.num_draws) == ((0.8, 0.95), 0.2,
                                                                           0, 40)
    assert (config.interval, config.settings) == ("equal_tailed", "quick")
    empty = read_config(_file(tmp_path, "", "empty.toml"))
    assert empty == CompareConfig()
    assert empty.method_names() == uz.methods.names()


@pytest.mark.parametrize("text, needles", [
    ("seed = 1\n", ["run.toml: seed: unknown key in a compare config file; allowed: compare, "
                    "data, spec, methods"]),
    ("[compare]\nseeds = 1\n", ["compare.seeds: unknown key in [compare]; allowed: methods, "
                                "seed, levels"]),
    ("[compare]\nseed = \"zero\"\n", ["compare.seed: must be an integer, got a string"]),
    ("[compare]\nseed = -1\n", ["compare.seed: must be >= 0, got -1"]),
    ("[compare]\nlevels = [0.8, 1.2]\n", ["compare.levels:", "(0.0, 1.0)", "1.2"]),
    ("[compare]\nlevels = 0.8\n", ["compare.levels: must be a non-empty array"]),
    ("[compare]\ndelta = 0.7\n", ["compare.delta:", "must be a number in (0, 0.5)",
                                  "got 0.7"]),
    ("[compare]\nnum_draws = 0\n", ["compare.num_draws: must be >= 1, got 0"]),
    ("[compare]\nnum_draws = 10000000\n", ["compare.num_draws:", "at most 1,048,576"]),
    ("[compare]\ninterval = \"hdi\"\n", ["compare.interval: must be one of equal_tailed, "
                                         "order_statistic, got 'hdi'"]),
    ("[compare]\nsettings = \"slow\"\n", ["compare.settings: must be one of quick, full"]),
    ("[compare]\nmethods = [\"hmc\", \"nope\"]\n", ["compare.methods[1]: unknown method "
                                                    "'nope'; allowed: hmc, mfvi"]),
    ("[compare]\nmethods = [\"hmc\", \"hmc\"]\n", ["compare.methods: lists 'hmc' twice"]),
    ("[compare]\nmethods = []\n", ["compare.methods: empty"]),
    ("[data]\ndataset = \"no-such\"\n", ["data.dataset: unknown data set 'no-such'; allowed: "
                                         "sim-teacher"]),
    ("[data]\nn_trian = 5\n", ["data.n_trian: unknown key in [data] of data set "
                               "'sim-teacher'; allowed: dataset, p, n_train"]),
    ("[data]\nn_train = 2.5\n", ["data.n_train: must be an integer (its default is 1000), "
                                 "got a number 2.5"]),
    ("[data]\ndataset = \"missing.csv\"\n", ["data.dataset: no such file", "missing.csv"]),
    ("[spec]\nhidden = \"10,10\"\n", ["spec.hidden: must be an array of integer widths"]),
    ("[spec]\nin_features = 3\n", ["spec.in_features: set by each data set"]),
    ("[spec]\nactivation = \"gelu\"\n", ["spec.activation:", "gelu"]),
    ("[spec]\nprior_scale = -1.0\n", ["spec.prior_scale:", "prior_scale"]),
    ("[spec]\nwidth = 3\n", ["spec.width: unknown key in [spec]; allowed: hidden"]),
    ("[methods.hmc]\nnum_chains = 2\n[compare]\nmethods = [\"laplace\"]\n",
     ["methods.hmc: 'hmc' is not compared; add it to compare.methods (laplace)"]),
    ("[methods.nope]\n", ["methods.nope: unknown method 'nope'"]),
    ("[methods.ensemble]\nnum_membrs = 3\n", ["methods.ensemble.num_membrs: unknown key in "
                                              "the options of method 'ensemble'; allowed: "]),
    ("[methods.ensemble]\nnum_members = \"three\"\n", ["methods.ensemble:", "num_members"]),
    ("[methods.ensemble]\nnum_members = 0\n", ["methods.ensemble:", "num_members"]),
    ("[methods]\nensemble = 3\n", ["methods.ensemble: must be a table"]),
    ("[compare]\nseed = 1\nseed = 2\n", ["run.toml: compare.seed: key given twice (line 3)"]),
    ("[compare\nseed = 1\n", ["run.toml: not valid TOML"]),
    ("[compare]\nseed = 1979-05-27\n", ["compare.seed: must be an integer"]),
    ("[compare]\nperturb = [\"noise\"]\ncopies = 1000000000\n",       # issue 25 item 3
     ["run.toml: compare.copies: copies must be at most 1,000", "1,000,000,000"]),
])
def test_mistakes_name_file_key_and_what_is_allowed(tmp_path, text, needles):
    with pytest.raises(uz.UqzooError) as caught:
        read_config(_file(tmp_path, text))
    message = str(caught.value)
    assert message.startswith("run.toml") or message.startswith(str(tmp_path)), message
    assert all(n in message for n in needles), message


def test_missing_or_unreadable_files_are_named(tmp_path):
    with pytest.raises(uz.FileFormatError, match="no such config file"):
        read_config(tmp_path / "none.toml")
    with pytest.raises(uz.FileFormatError, match="is a folder, not a config file"):
        read_config(tmp_path)
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(uz.FileFormatError, match="not a text"):
        read_config(tmp_path / "bin.toml")
    with pytest.raises(uz.InvalidTypeError, match=r"path must be a str or os\.PathLike"):
        read_config(3)


def test_a_data_file_behind_a_link_keeps_its_name_and_an_unreadable_type_is_named(tmp_path):
    # issue 25 item 8: a link data.csv -> blob.bin was reported as an unknown data set name,
    # without the file or the key
    (tmp_path / "blob.bin").write_bytes(b"label,x\n0,1\n")
    (tmp_path / "data.csv").symlink_to("blob.bin")
    (tmp_path / "linked.toml").write_text('[data]\ndataset = "data.csv"\ntarget = "label"\n')
    assert read_config(tmp_path / "linked.toml").dataset == str(tmp_path / "data.csv")
    (tmp_path / "blob.toml").write_text('[data]\ndataset = "blob.bin"\n')
    with pytest.raises(uz.InvalidInputError, match=r"^blob.toml: data.dataset: 'blob.bin' is a "
                                                   r"file of a type uqzoo does not read"):
        read_config(tmp_path / "blob.toml")


# -- files as data: paths relative to the config, "none" for None -------------------------

def _scene(folder):
    rng = np.random.default_rng(0)
    cube = rng.normal(size=(24, 24, 5)).astype(np.float32)
    mask = np.zeros((24, 24), np.uint8)
    mask[3:6, 3:6] = mask[15:18, 16:19] = mask[18:21, 4:7] = 1
    cube[mask == 1] += 2.0
    np.save(folder / "cube.npy", cube)
    np.save(folder / "mask.npy", mask)


def test_a_scene_file_with_its_options_reads_and_round_trips(tmp_path):
    (tmp_path / "data").mkdir()
    _scene(tmp_path / "data")
    path = _file(tmp_path, """
[data]
dataset = "data/cube.npy"
labels = "data/mask.npy"
unlabelled = "none"
class_names = ["background", "plane"]
target_class = "plane"
split = "blocks"
block_size = [6, 8]
guard = 1
[compare]
methods = ["ensemble"]
""")
    config = read_config(path)
    assert config.dataset == str(tmp_path / "data" / "cube.npy")       # relative to the file
    assert config.data["labels"] == str(tmp_path / "data" / "mask.npy")
    assert config.data["unlabelled"] is None and config.data["block_size"] == [6, 8]
    data = config.load_data()
    assert data.meta["options"]["split"] == "blocks" and data.meta["options"]["guard"] == 1
    assert data.class_names == ("background", "plane")
    resolved = config.resolved()
    assert 'unlabelled = "none"' in resolved.to_toml()
    again = tmp_path / "elsewhere"
    again.mkdir()
    write_config(resolved, again / "config.toml")
    assert read_config(again / "config.toml") == resolved               # absolute paths
    assert np.array_equal(read_config(again / "config.toml").load_data().y_test, data.y_test)


def test_a_csv_table_with_pandas_options(tmp_path):
    frame = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 7,
                          "label": ["x", "y"] * 20})
    frame.to_csv(tmp_path / "t.csv", sep=";", index=False)
    config = read_config(_file(tmp_path, '[data]\ndataset = "t.csv"\ntarget = "label"\n'
                                         'read_csv = { sep = ";" }\ntest_size = 0.5\n'))
    data = config.load_data()
    assert data.n_features == 2 and data.classes == ("x", "y") and data.n_test == 20
    resolved = config.resolved()
    assert read_config(write_config(resolved, tmp_path / "c.toml")) == resolved
    # the CLI's flags give the same [data]: unknown keywords are read_csv's
    assert config_data(str(tmp_path / "t.csv"), {"target": "label", "sep": ";",
                                                 "test_size": 0.5}) == (
        config.dataset, {"target": "label", "test_size": 0.5, "read_csv": {"sep": ";"}})
    with pytest.raises(uz.InvalidInputError, match=r"data\.target: missing"):
        read_config(_file(tmp_path, '[data]\ndataset = "t.csv"\n', "no_target.toml"))
    with pytest.raises(uz.InvalidInputError, match=r"data\.guard: unknown key in .data. of a "
                                                   r"\.csv table"):
        read_config(_file(tmp_path, '[data]\ndataset = "t.csv"\ntarget = "label"\nguard = 2\n',
                          "guard.toml"))


# -- the resolved config ------------------------------------------------------------------

def test_resolved_config_fills_every_default_and_reads_back_equal(tmp_path):
    config = read_config(_file(tmp_path, SMALL_RUN))
    resolved = config.resolved()
    assert resolved.methods == ("laplace", "ensemble") and resolved.num_draws == 40
    assert resolved.spec["hidden"] == [10, 10] and resolved.spec["activation"] == "tanh"
    assert resolved.data["logit_scale"] == 1.0 and resolved.data["n_train"] == 200
    laplace = resolved.configs["laplace"]
    assert laplace["num_samples"] == 40            # the draw budget, made explicit
    assert laplace["num_epochs"] == 60 and laplace["hessian"] == "full"
    assert resolved.configs["ensemble"]["num_members"] == 3
    assert resolved.resolved() == resolved         # resolving twice changes nothing
    text = resolved.to_toml()
    assert tomllib.loads(text)["methods"]["ensemble"]["num_epochs"] == 60
    assert read_config(_file(tmp_path, text, "config.toml")) == resolved
    # the method options a run uses are those of the resolved config
    assert resolved.method_options() == {k: dict(v) for k, v in resolved.configs.items()}


def test_full_settings_drop_the_quick_options():
    quick = CompareConfig(methods=("hmc",)).resolved()
    full = CompareConfig(methods=("hmc",), settings="full").resolved()
    assert quick.configs["hmc"]["num_chains"] == 2           # QUICK_CONFIGS
    assert full.configs["hmc"]["num_chains"] == uz.methods.get("hmc").Config().num_chains


def test_strings_that_toml_must_escape_survive(tmp_path):
    odd = 'a "quoted" \\ back\tslash\x7f, ünïcode 😀 and a\nnew line'
    assert tomllib.loads(f"x = {_string(odd)}")["x"] == odd
    # written as it is (an activation no spec accepts; to_toml does not judge values)
    config = CompareConfig(dataset="iris", spec={"activation": odd}, methods=("laplace",))
    path = write_config(config, tmp_path / "odd.toml")
    assert tomllib.loads(path.read_text(encoding="utf-8"))["spec"]["activation"] == odd


# -- the command line ---------------------------------------------------------------------

def test_compare_flags_then_config_repeat_the_run_exactly(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    argv = ["compare", "--methods", "laplace,ensemble", "--no-progress",
            "--data-option", "n_train=200", "--data-option", "n_test=300",
            "--set", "ensemble.num_members=3", "--set", "ensemble.num_epochs=60",
            "--set", "laplace.num_epochs=60", "--num-draws", "40", "--out", str(first)]
    assert main(argv) == 0
    assert main(["compare", "--config", str(first / "config.toml"), "--no-progress",
                 "--out", str(second)]) == 0
    capsys.readouterr()
    text = (first / "config.toml").read_text()
    assert (second / "config.toml").read_text() == text
    assert read_config(first / "config.toml") == read_config(_file(tmp_path, SMALL_RUN)
                                                             ).resolved()
    a = pd.read_csv(first / "results.csv", index_col="method").drop(columns="fit_seconds")
    b = pd.read_csv(second / "results.csv", index_col="method").drop(columns="fit_seconds")
    pd.testing.assert_frame_equal(a, b)


def test_flags_that_the_file_holds_cannot_join_it(tmp_path, capsys, monkeypatch):
    path = _file(tmp_path, SMALL_RUN)
    monkeypatch.setattr(uz.methods, "fit", lambda *a, **k: pytest.fail("fitted"))
    assert main(["compare", "--config", str(path), "--seed", "0", "--set", "laplace.x=1",
                 "--full", "--dataset", "iris"]) == 2
    _one_line_error(capsys, "--dataset, --full, --seed, --set cannot be combined with "
                            f"--config {str(path)!r}", "only --out, --overwrite, "
                                                       "--no-progress and --wide")


def test_data_errors_of_a_config_name_the_file(tmp_path, capsys, monkeypatch):
    _scene(tmp_path)
    path = _file(tmp_path, '[data]\ndataset = "cube.npy"\nlabels = "mask.npy"\n'
                           'unlabelled = "none"\ntarget_class = "plane"\n')
    monkeypatch.setattr(uz.methods, "fit", lambda *a, **k: pytest.fail("fitted"))
    assert main(["compare", "--config", str(path), "--no-progress"]) == 2
    _one_line_error(capsys, "run.toml: data: ", "plane")


CLI_CASES = [
    ("[compare\nseed = 1\n", "run.toml: not valid TOML"),
    ("[compare]\nsede = 1\n", "run.toml: compare.sede: unknown key in [compare]; allowed:"),
    ("[compare]\nseed = \"one\"\n", "run.toml: compare.seed: must be an integer, got a "
                                    "string 'one'"),
    ("[compare]\ndelta = 0.9\n", "run.toml: compare.delta: must be a number in (0, 0.5) (the "
                                 "High Confidence Set's threshold δ, e.g. 0.2), got 0.9"),
]


def test_config_mistakes_on_the_command_line_exit_2_in_one_line(tmp_path):
    """As a user runs it: a real process, one line on stderr, exit status 2, no traceback.

    The cases share one interpreter (each would otherwise pay seconds of start-up);
    main() is what the ``uqzoo`` script runs.
    """
    paths = []
    for i, (text, _) in enumerate(CLI_CASES):
        (tmp_path / str(i)).mkdir()
        paths.append(str(_file(tmp_path / str(i), text)))
    script = ("import sys\nfrom uqzoo.cli import main\n"
              "for path in sys.argv[1:]:\n"
              "    code = main(['compare', '--config', path, '--no-progress'])\n"
              "    print('EXIT', code, file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", script, *paths], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert len(lines) == 2 * len(CLI_CASES), run.stderr
    for (_, needle), error, status in zip(CLI_CASES, lines[::2], lines[1::2], strict=True):
        assert error.startswith("uqzoo: error: ") and needle in error, error
        assert status == "EXIT 2"


def test_missing_config_file_as_a_real_command(tmp_path):
    run = subprocess.run([sys.executable, "-m", "uqzoo.cli", "compare", "--config",
                          str(tmp_path / "nope.toml")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2
    assert run.stderr == f"uqzoo: error: {tmp_path / 'nope.toml'}: no such config file\n"
