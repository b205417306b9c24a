"""Label noise and held-out groups from the command line, the config file and a study."""

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.cli import main
from uqzoo.comparison.config import read_config
from uqzoo.errors import InvalidInputError

SMALL_DATA = ["--data-option", "n_train=200", "--data-option", "n_test=300"]


def _sites_csv(tmp_path, one_group=False, class_in_one_site=False):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    site = np.repeat(["a", "b", "c", "d"], 30)
    y = (X[:, 0] > 0).astype(int)
    if one_group:
        site[:] = "a"
    if class_in_one_site:
        site = np.where(y == 1, "east", "west")     # whichever site tests, a class is lost
    path = tmp_path / "sites.csv"
    pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "site": site, "label": y}).to_csv(
        path, index=False)
    return str(path)


@pytest.mark.parametrize("argv, needle", [
    (["--label-noise", "1.0"], "--label-noise must be a rate in [0, 1) such as 0.1"),
    (["--label-noise", "-0.1"], "--label-noise must be a rate in [0, 1)"),
    (["--label-noise", "ten"], "--label-noise must be a rate in [0, 1)"),
    (["--label-noise", "0.1", "--label-noise-kind", "pairwise"],
     "--label-noise-kind must be one of symmetric, class_conditional (how a flipped label is "
     "chosen), got 'pairwise'"),
    (["--label-noise-kind", "symmetric"], "--label-noise-kind needs --label-noise RATE"),
])
def test_bad_label_noise_exits_2_with_one_line(argv, needle, capsys):
    assert main(["compare", "--methods", "laplace", "--no-progress", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("kind, needle", [
    ("one_group", "split='groups' needs at least two groups"),
    ("class_out", "no training rows would be left"),
])
def test_bad_groups_exit_2_with_one_line(tmp_path, capsys, kind, needle):
    path = _sites_csv(tmp_path, one_group=kind == "one_group",
                      class_in_one_site=kind == "class_out")
    argv = ["compare", "--methods", "laplace", "--no-progress", "--dataset", path,
            "--target", "label", "--group-column", "site", "--split", "groups"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_compare_with_label_noise_and_held_out_groups(tmp_path):
    path = _sites_csv(tmp_path)
    data = uz.datasets.from_csv(path, "label", group_column="site", split="groups", seed=0)
    result = uz.compare(data, ["laplace"], configs={"laplace": {"num_epochs": 50}},
                        num_draws=50, progress_bar=False, reference=None, label_noise=0.2)
    report = result.reports["laplace"]
    assert report.groups is not None and set(report.groups.group) == set(data.groups_test)
    assert "ece_group_median" in report.to_dict()
    described = dict(result.settings.data)
    assert described["label noise"].startswith(f"{round(0.2 * data.n_train)} training labels")
    with pytest.raises(InvalidInputError, match=r"label_noise must be a rate in \[0, 1\)"):
        uz.compare(data, ["laplace"], progress_bar=False, label_noise=1.0)


def test_config_file_reads_writes_and_checks_label_noise(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[compare]\nmethods = ["laplace"]\nlabel_noise = 0.1\n'
                    'label_noise_kind = "class_conditional"\n[data]\ndataset = "sim-teacher"\n')
    config = read_config(path)
    assert (config.label_noise, config.label_noise_kind) == (0.1, "class_conditional")
    assert "label_noise = 0.1" in config.to_toml()
    for bad, needle in (("label_noise = 1.5", "must be a rate in [0, 1)"),
                        ('label_noise = 0.1\nlabel_noise_kind = "x"', "must be one of"),
                        ('label_noise_kind = "symmetric"', "needs label_noise = RATE")):
        path.write_text(f"[compare]\n{bad}\n")
        with pytest.raises(InvalidInputError, match=None) as info:
            read_config(path)
        assert needle in str(info.value)


def test_study_label_noise_axis(tmp_path):
    path = tmp_path / "noise.toml"
    path.write_text('[study]\nlevels = [0.9]\n[[datasets]]\nname = "sim-teacher"\n'
                    'options = { n_train = 100, n_test = 100 }\n'
                    'grid = { label_noise = [0.0, 0.3] }\n'
                    '[[methods]]\nname = "laplace"\n'
                    'config = { num_epochs = 20, num_samples = 20 }\n')
    tasks = uz.study.expand(path)
    assert [t.setting for t in tasks] == ["label_noise=0.0", "label_noise=0.3"]
    for bad, needle in (("[1.0]", "must be a rate in [0, 1)"),
                        ('["a"]', "must be a rate in [0, 1) such as 0.1")):
        path.write_text(path.read_text().replace("[0.0, 0.3]", bad))
        with pytest.raises(uz.errors.UqzooError) as info:
            uz.study.expand(path)
        assert needle in str(info.value)
        path.write_text(path.read_text().replace(bad, "[0.0, 0.3]"))


def test_study_task_fits_on_noisy_labels(monkeypatch, tmp_path):
    from uqzoo.study import runner

    path = tmp_path / "noise.toml"
    path.write_text('[study]\nlevels = [0.9]\n[[datasets]]\nname = "sim-teacher"\n'
                    'options = { n_train = 100, n_test = 100, label_noise = 0.3 }\n'
                    '[[methods]]\nname = "laplace"\n'
                    'config = { num_epochs = 20, num_samples = 20 }\n')
    [task] = uz.study.expand(path)
    seen = {}
    real_fit = uz.methods.fit

    def spy(name, spec, data, **kwargs):
        seen["data"] = data
        return real_fit(name, spec, data, **kwargs)

    monkeypatch.setattr(uz.methods, "fit", spy)
    result = runner.run_task(task)
    assert result["status"] == "done"
    record = seen["data"].meta["label_noise"]
    assert record["n_flipped"] == 30 and record["kind"] == "symmetric"
