"""Random malformed input at every public entry point finds only uqzoo errors.

Each test replaces one argument of a valid call by a value drawn from a pool
of junk (wrong types, wrong shapes, NaN/inf, empty arrays, out-of-range
numbers, ragged lists, foreign or truncated files). The call must either
raise one of uqzoo's errors -- ``InvalidInputError`` (a ``ValueError``),
``InvalidTypeError`` (a ``TypeError``), ``FileFormatError`` or, for paths
that cannot be written, ``OutputPathError`` (an ``OSError``) -- whose message
is a sentence, not an empty string, or succeed with finite numbers (the
drawn value happened to be valid). A raw numpy/torch/JAX/xarray exception, or
a NaN in a result, fails the test.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import tempfile
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import uqzoo as uz
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError, OutputPathError

UQZOO_ERRORS = (InvalidInputError, InvalidTypeError, FileFormatError, OutputPathError)
SETTINGS = settings(max_examples=100, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

# -- the junk pool ------------------------------------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([2**64, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.text(max_size=5), st.binary(max_size=4),
    st.just(1 + 2j), st.just(object()),
)


@st.composite
def _arrays(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    kind = draw(st.sampled_from(["float", "int", "bool", "nan", "inf", "object", "str",
                                 "complex", "float16", "uint8", "neg"]))
    size = int(np.prod(shape)) if shape else 1
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    base = rng.normal(size=size).reshape(shape)
    if kind == "int":
        return rng.integers(-2, 5, size=size).reshape(shape)
    if kind == "bool":
        return base > 0
    if kind == "nan":
        out = base.copy()
        out.flat[:1] = np.nan
        return out
    if kind == "inf":
        out = base.copy()
        out.flat[-1:] = -np.inf
        return out
    if kind == "object":
        return np.array([None] * size, dtype=object).reshape(shape)
    if kind == "str":
        return np.full(shape, "x")
    if kind == "complex":
        return base + 1j
    if kind == "float16":
        return base.astype(np.float16)
    if kind == "uint8":
        return rng.integers(0, 255, size=size).astype(np.uint8).reshape(shape)
    return -np.abs(base) - 1.0


_ragged = st.sampled_from([[[1.0, 2.0], [3.0]], [[1.0], "a"], [[[]]], [], [[]], ((1, 2), (3,))])
_mappings = st.sampled_from([{}, {"a": 1}, {"layers.0.weight": np.zeros(3)}])

junk = st.one_of(_scalars, _arrays(), _ragged, _mappings)


# Fields documented to hold ±inf on purpose: a detection threshold of +inf
# means "declare nothing" (the first point of a ROC curve, as in scikit-learn's
# roc_curve), and is the threshold of a Pd at a false-alarm rate no finite
# threshold reaches.
_INFINITE_BY_DESIGN = frozenset({"threshold", "thresholds"})


def _all_finite(value, seen=None) -> bool:
    """True when every number reachable in ``value`` is finite (but documented ±inf)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return True
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value)))
    if isinstance(value, (float, np.floating)):
        return math.isfinite(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_all_finite(getattr(value, f.name), seen) for f in dataclasses.fields(value)
                   if f.name not in _INFINITE_BY_DESIGN)
    if isinstance(value, dict):
        return all(_all_finite(v, seen) for v in value.values())
    if isinstance(value, (tuple, list)):
        return all(_all_finite(v, seen) for v in value)
    return True


def only_uqzoo_errors(fn, *args, **kwargs):
    """Call fn; a uqzoo error passes, a result must be finite, anything else fails."""
    try:
        result = fn(*args, **kwargs)
    except UQZOO_ERRORS as exc:
        assert str(exc).strip(), f"{type(exc).__name__} raised with an empty message"
        return None
    assert _all_finite(result), f"{fn.__name__} returned a non-finite number silently"
    return result


# -- valid baselines ------------------------------------------------------------------

SPEC = uz.MLPSpec(3, 2, hidden=(4,))
SPEC3 = uz.MLPSpec(3, 3, hidden=(4,))
DRAWS = SPEC.init_params(seed=0, num=5)
RNG = np.random.default_rng(0)
X = RNG.normal(size=(8, 3)).astype(np.float32)
Y = np.array([0, 1, 0, 1, 1, 0, 1, 0])


def _data(**overrides):
    args = dict(X_train=X, y_train=Y, X_test=X[:4], y_test=Y[:4], n_classes=2)
    args.update(overrides)
    return uz.ClassificationData(**args)


DATA = _data()


def _posterior(**overrides):
    args = dict(spec=SPEC, method="ensemble", config={}, seed=0, draws=DRAWS)
    args.update(overrides)
    return uz.Posterior(**args)


POSTERIOR = _posterior()

# -- MLPSpec and ClassificationData ------------------------------------------------------

@SETTINGS
@given(field=st.sampled_from(["in_features", "n_classes", "hidden", "activation",
                              "prior_scale", "prior"]), value=junk)
def test_mlpspec(field, value):
    only_uqzoo_errors(uz.MLPSpec, **{"in_features": 3, "n_classes": 2, field: value})


@SETTINGS
@given(field=st.sampled_from(["X_train", "y_train", "X_test", "y_test", "n_classes",
                              "p_true_test", "class_names", "name", "meta",
                              "coords_train", "coords_test"]), value=junk)
def test_classification_data(field, value):
    only_uqzoo_errors(_data, **{field: value})


# -- the predictive engine -------------------------------------------------------------

@SETTINGS
@given(key=st.sampled_from([*list(SPEC.param_shapes()), None]), value=junk,
       use_anchor=st.booleans())
def test_predict_proba_draws_and_summarize_with_bad_draws(key, value, use_anchor):
    draws = value if key is None else {**DRAWS, key: value}
    anchor = {k: v[0] for k, v in DRAWS.items()} if use_anchor else None
    only_uqzoo_errors(uz.proba_draws, SPEC, draws, X, anchor=anchor)
    only_uqzoo_errors(uz.summarize, SPEC, draws, X, anchor=anchor)


@SETTINGS
@given(arg=st.sampled_from(["spec", "X", "levels", "chunk_size", "anchor"]), value=junk)
def test_summarize_and_predict_proba_draws_arguments(arg, value):
    args = {"spec": SPEC, "draws": DRAWS, "X": X, "chunk_size": None, "anchor": None}
    args[arg] = value
    levels = value if arg == "levels" else (0.5, 0.9)
    summary_args = {k: v for k, v in args.items() if k != "levels"}
    only_uqzoo_errors(uz.summarize, levels=levels, **summary_args)
    if arg != "levels":
        only_uqzoo_errors(uz.proba_draws, **args)


@SETTINGS
@given(n_classes=st.sampled_from([2, 3]), rows=st.integers(0, 3), cols=st.integers(0, 5))
def test_x_of_the_wrong_shape(n_classes, rows, cols):
    spec = SPEC if n_classes == 2 else SPEC3
    draws = spec.init_params(seed=1, num=3)
    only_uqzoo_errors(uz.summarize, spec, draws, np.ones((rows, cols)))


# -- Posterior, save and load ------------------------------------------------------------

@SETTINGS
@given(field=st.sampled_from(["spec", "method", "config", "seed", "draws", "sample_shape",
                              "sample_stats", "diagnostics", "predictive", "anchor",
                              "converged", "warnings"]),
       value=junk)
def test_posterior_construction(field, value):
    only_uqzoo_errors(_posterior, **{field: value})


@SETTINGS
@given(arg=st.sampled_from(["X", "num_samples", "seed", "levels", "chunk_size"]), value=junk)
def test_posterior_methods(arg, value):
    if arg in ("X", "num_samples", "seed"):
        kwargs = {"X": X, arg: value}
        only_uqzoo_errors(POSTERIOR.predict_proba_draws, **kwargs)
    if arg in ("X", "levels", "chunk_size"):
        kwargs = {"X": X, arg: value}
        only_uqzoo_errors(POSTERIOR.summarize, **kwargs)


@pytest.fixture(scope="module")
def saved_posterior_bytes():
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "post.nc")
        _posterior(sample_stats={"loss": np.zeros((1, 5))},
                   diagnostics={"elapsed": 1.5}).save(path)
        with open(path, "rb") as f:
            return f.read()


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0.0, 0.999), flip=st.integers(0, 2**16))
def test_load_truncated_or_corrupted_posterior(saved_posterior_bytes, cut, flip):
    data = bytearray(saved_posterior_bytes[:int(len(saved_posterior_bytes) * cut)])
    if data and flip % 3 == 0:
        data[flip % len(data)] ^= 0xFF
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bad.nc")
        with open(path, "wb") as f:
            f.write(bytes(data))
        only_uqzoo_errors(uz.load_posterior, path)


def test_load_foreign_files(tmp_path):
    import xarray as xr
    text = tmp_path / "notes.nc"
    text.write_text("not a netCDF file")
    foreign = tmp_path / "foreign.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(foreign, engine="h5netcdf")
    npz = tmp_path / "arrays.npz"
    np.savez(npz, a=np.zeros(3))
    for path in (text, foreign, npz, tmp_path / "missing.nc", tmp_path):
        with pytest.raises(FileFormatError):
            uz.load_posterior(path)
    # a uqzoo file whose spec attribute was tampered with
    good = tmp_path / "good.nc"
    POSTERIOR.save(good)
    tree = xr.open_datatree(good, engine="h5netcdf").load()
    tree.attrs["spec"] = '{"in_features": -1}'
    tampered = tmp_path / "tampered.nc"
    tree.to_netcdf(tampered, engine="h5netcdf")
    with pytest.raises(FileFormatError):
        uz.load_posterior(tampered)


@SETTINGS
@given(value=junk)
def test_save_and_load_path_arguments(value):
    if isinstance(value, (str, bytes)):
        value = os.path.join(tempfile.gettempdir(), "uqzoo-no-such-dir", "x.nc") \
            if isinstance(value, str) else value
    only_uqzoo_errors(POSTERIOR.save, value)
    only_uqzoo_errors(uz.load_posterior, value)


# -- uz.fit: validated before any fitting ---------------------------------------------

def _no_fitting(*args, **kwargs):
    raise AssertionError("fit ran although its arguments are invalid")


@SETTINGS
@given(arg=st.sampled_from(["method", "spec", "data", "seed", "config"]), value=junk)
def test_fit_rejects_bad_arguments_before_fitting(arg, value):
    valid_seed = (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                  and 0 <= value < 2**63)
    assume(not (arg == "seed" and valid_seed))
    args = {"method": "ensemble", "spec": SPEC, "data": DATA, "seed": 0}
    config = {}
    if arg == "config":
        config = {"no_such_option": value}
    else:
        args[arg] = value
    module = uz.methods.get("ensemble")
    with mock.patch.object(module, "fit", _no_fitting):
        with pytest.raises(UQZOO_ERRORS):
            uz.fit(args["method"], args["spec"], args["data"], args["seed"],
                   progress_bar=False, **config)


@pytest.mark.parametrize("method", uz.methods.names())
def test_fit_rejects_spec_data_mismatch_and_unknown_keys_for_every_method(method):
    try:
        module = uz.methods.get(method)
    except ImportError:
        pytest.skip(f"method {method!r} is not implemented yet")
    cases = [
        ((uz.MLPSpec(4, 2), DATA), {}, "in_features"),
        ((uz.MLPSpec(3, 3), DATA), {}, "n_classes"),
        ((SPEC, DATA), {"no_such_option": 1}, "no_such_option"),
    ]
    with mock.patch.object(module, "fit", _no_fitting):
        for (spec, data), config, match in cases:
            with pytest.raises(InvalidInputError, match=match):
                uz.fit(method, spec, data, seed=0, progress_bar=False, **config)


# -- datasets ---------------------------------------------------------------------------

@SETTINGS
@given(name=st.one_of(junk, st.sampled_from(["no-such-set", "SIM-TEACHER", ""])))
def test_datasets_load_names(name):
    with pytest.raises(UQZOO_ERRORS):
        uz.datasets.load(name)


@SETTINGS
@given(option=st.sampled_from(["p", "n_train", "n_test", "n_classes", "seed",
                               "teacher_seed", "logit_scale", "no_such_option"]),
       value=junk)
def test_datasets_load_options(option, value):
    only_uqzoo_errors(uz.datasets.load, "sim-teacher",
                      **{"n_train": 20, "n_test": 10, option: value})


@SETTINGS
@given(arg=st.sampled_from(["X", "y", "X_test", "y_test", "test_size", "seed", "n_classes",
                            "class_names", "standardize", "p_true_test", "name"]),
       value=junk)
def test_datasets_from_arrays(arg, value):
    args = {"X": X, "y": Y}
    args[arg] = value
    if arg in ("X_test", "p_true_test") and not isinstance(value, type(None)):
        args.setdefault("y_test", Y[:4])
    only_uqzoo_errors(uz.datasets.from_arrays, **args)


@SETTINGS
@given(cube=junk, labels=junk)
def test_datasets_from_hsi(cube, labels):
    only_uqzoo_errors(uz.datasets.from_hsi, cube, labels)


@SETTINGS
@given(contents=st.binary(max_size=60), target=st.one_of(junk, st.just("y")))
def test_datasets_from_csv(contents, target):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "data.csv")
        with open(path, "wb") as f:
            f.write(contents)
        only_uqzoo_errors(uz.datasets.from_csv, path, target=target)


# -- metrics and evaluate ----------------------------------------------------------------

def _metrics():
    import uqzoo.metrics as metrics
    return metrics


P2 = np.column_stack([1 - np.linspace(0.1, 0.9, 8), np.linspace(0.1, 0.9, 8)])
PROB_METRICS = ["accuracy", "balanced_accuracy", "brier", "nll", "ece", "mce", "rmsce",
                "classwise_ece", "adaptive_ece", "adaptive_mce", "aurc", "eaurc", "auarc",
                "misclassification_auroc", "calibration_bins", "reliability_curve",
                "risk_coverage_curve", "adaptive_binning"]


@SETTINGS
@given(name=st.sampled_from(PROB_METRICS), which=st.sampled_from(["probs", "y"]), value=junk)
def test_probability_metrics(name, which, value):
    fn = getattr(_metrics(), name)
    args = {"probs": P2, "y": Y}
    args[which] = value
    only_uqzoo_errors(fn, args["probs"], args["y"])


DRAWS_P = np.stack([P2, P2[::-1], P2])                       # (S=3, N=8, K=2)


@SETTINGS
@given(name=st.sampled_from(["credible_interval", "expected_entropy", "mutual_information",
                             "predictive_entropy", "max_probability"]), value=junk)
def test_draw_metrics(name, value):
    only_uqzoo_errors(getattr(_metrics(), name), value)


@SETTINGS
@given(which=st.sampled_from(["lower", "upper", "p_true", "level", "delta", "side"]),
       value=junk)
def test_interval_metrics(which, value):
    m = _metrics()
    lower, upper = P2 - 0.05, P2 + 0.05
    lower, upper = np.clip(lower, 0, 1), np.clip(upper, 0, 1)
    args = {"lower": lower, "upper": upper, "p_true": P2, "level": 0.8, "delta": 0.2,
            "side": "both"}
    args[which] = value
    if which in ("lower", "upper", "p_true"):
        only_uqzoo_errors(m.coverage, args["lower"], args["upper"], args["p_true"])
        only_uqzoo_errors(m.interval_width, args["lower"], args["upper"])
    if which in ("lower", "upper", "delta", "side"):
        only_uqzoo_errors(m.high_confidence_set, args["lower"], args["upper"],
                          args["delta"], args["side"])
    if which == "level":
        only_uqzoo_errors(m.credible_interval, DRAWS_P, args["level"])


@SETTINGS
@given(arg=st.sampled_from(["posterior_or_draws", "data_or_labels", "levels", "delta",
                            "p_true", "chunk_size", "n_bins", "side"]), value=junk)
def test_evaluate(arg, value):
    from uqzoo.evaluate import evaluate
    args = {"posterior_or_draws": POSTERIOR, "data_or_labels": DATA}
    args[arg] = value
    only_uqzoo_errors(evaluate, **args)
