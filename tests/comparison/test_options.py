"""compare's option families are checked once (uqzoo.comparison.options): Python, the
command line, a config file and a study file refuse the same values, each naming the
option as its user typed it."""

from __future__ import annotations

import pytest

import uqzoo as uz
from uqzoo import methods as method_registry
from uqzoo.cli import main
from uqzoo.comparison import options
from uqzoo.comparison.config import read_config
from uqzoo.errors import InvalidInputError, InvalidTypeError


@pytest.fixture(scope="module")
def tiny():
    return uz.datasets.load("sim-teacher", n_train=60, n_test=30, seed=0)


@pytest.fixture
def no_work(monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("work started before the options were checked")
    monkeypatch.setattr(method_registry, "fit", must_not_run)


# (the options as keyword arguments, what is wrong) -- the same mistake for every caller
CONFORMAL = [
    (dict(conformal=1.0), "must be a level in (0, 1)"),
    (dict(conformal=0.0), "must be a level in (0, 1)"),
    (dict(conformal=float("nan")), "must be a level in (0, 1)"),
    (dict(conformal=0.9, conformal_score="raps"), "must be one of lac, aps"),
    (dict(conformal_score="aps"), "needs"),
    (dict(conformal_mondrian=True), "needs"),
]
NOISE = [
    (dict(label_noise=1.0), "must be a rate in [0, 1)"),
    (dict(label_noise=-0.1), "must be a rate in [0, 1)"),
    (dict(label_noise=0.1, label_noise_kind="pairwise"),
     "must be one of symmetric, class_conditional"),
    (dict(label_noise_kind="class_conditional"), "needs"),
]
RECALIBRATE = [(dict(recalibrate="platt"), "must be one of temperature, vector")]


def _flags(kwargs):
    argv = []
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def _toml(kwargs):
    def value(v):
        if isinstance(v, bool):
            return str(v).lower()
        return f'"{v}"' if isinstance(v, str) else ("nan" if v != v else repr(v))
    return "".join(f"{k} = {value(v)}\n" for k, v in kwargs.items())


def _named_option(kwargs, needle):
    """The option a message is about: the refining one for "needs", else the last given."""
    if needle == "needs":
        return next(k for k in kwargs if k in ("conformal_score", "conformal_mondrian",
                                              "label_noise_kind"))
    return list(kwargs)[-1]


@pytest.mark.parametrize("kwargs, needle", CONFORMAL + NOISE + RECALIBRATE)
def test_every_caller_refuses_the_same_value_naming_it_as_typed(tmp_path, capsys, tiny,
                                                                 no_work, kwargs, needle):
    option = _named_option(kwargs, needle)
    with pytest.raises(InvalidInputError) as python:
        uz.compare(tiny, ["laplace"], progress_bar=False, reference=None, **kwargs)
    assert str(python.value).startswith(f"{option} ") and needle in str(python.value)

    assert main(["compare", "--methods", "laplace", "--no-progress", *_flags(kwargs)]) == 2
    err = capsys.readouterr().err
    flag = "--" + option.replace("_", "-")
    assert err.startswith(f"uqzoo: error: {flag} ") and needle in err and err.count("\n") == 1

    path = tmp_path / "run.toml"
    path.write_text("[compare]\n" + _toml(kwargs))
    with pytest.raises(InvalidInputError) as config:
        read_config(path)
    assert str(config.value).startswith(f"run.toml: compare.{option}: ")
    assert needle in str(config.value)


@pytest.mark.parametrize("kwargs, needle", [
    (k, n) for k, n in CONFORMAL if "conformal_mondrian" not in k])     # a study has no Mondrian
def test_a_study_file_refuses_the_conformal_values_compare_refuses(tmp_path, kwargs, needle):
    path = tmp_path / "s.toml"
    path.write_text("[study]\n" + _toml(kwargs) + '[[datasets]]\nname = "sim-teacher"\n'
                    '[[methods]]\nname = "laplace"\n')
    with pytest.raises(InvalidInputError) as caught:
        uz.study.read_study(path)
    option = _named_option(kwargs, needle)
    assert str(caught.value).startswith(f"s.toml: study.{option}: ")
    assert needle in str(caught.value)


@pytest.mark.parametrize("value, error", [(True, InvalidTypeError), ("0.9", InvalidTypeError),
                                          (2, InvalidInputError)])
def test_a_wrong_type_is_a_type_error_everywhere(tmp_path, value, error):
    with pytest.raises(error):
        options.conformal(value)
    path = tmp_path / "run.toml"
    path.write_text("[compare]\n" + _toml({"conformal": value}))
    with pytest.raises(error, match=r"run\.toml: compare\.conformal: must be a level"):
        read_config(path)
    path.write_text("[compare]\nconformal = 0.9\nconformal_mondrian = 1\n")
    with pytest.raises(InvalidTypeError, match="conformal_mondrian: must be true or false"):
        read_config(path)


def test_defaults_fill_in_and_good_values_pass_everywhere(tmp_path):
    assert options.conformal(None) == (None, "lac", False)
    assert options.conformal(0.9, "aps", True) == (0.9, "aps", True)
    assert options.label_noise(None) == (None, "symmetric")
    assert options.label_noise(0, "class_conditional") == (0.0, "class_conditional")
    path = tmp_path / "run.toml"
    path.write_text('[compare]\nconformal = 0.9\nlabel_noise = 0.2\n')
    config = read_config(path)
    assert (config.conformal, config.conformal_score, config.conformal_mondrian) == \
        (0.9, "lac", False)
    assert (config.label_noise, config.label_noise_kind) == (0.2, "symmetric")
