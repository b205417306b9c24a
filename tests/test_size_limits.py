"""Every size a user passes is bounded at the public boundary, with the limit in the error.

Absurd counts (a typo of 10**9 for 10**3) used to spin in a Python loop or end
in a raw ``MemoryError`` after a long wait; now each is an ``InvalidInputError``
naming the argument, the value and the limit, raised before any work.
"""

from unittest import mock

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.methods import _config
from uqzoo.metrics import _common


@pytest.mark.parametrize("method, options, needle", [
    ("ensemble", {"num_members": 10**9}, "num_members must be at most 10,000"),
    ("bootstrap", {"num_members": 10**5}, "num_members must be at most 10,000"),
    ("ensemble", {"num_epochs": 10**15}, "num_epochs must be at most 10,000,000"),
    ("ensemble", {"num_members": 1000, "num_epochs": 10**6},
     "num_members × num_epochs = 1,000 × 1,000,000 must be at most 268,435,456"),
    ("laplace", {"num_samples": 10**12}, "num_samples must be at most 1,048,576"),
    ("laplace", {"num_epochs": 10**8}, "num_epochs must be at most"),
    ("mc_dropout", {"num_samples": 2**21}, "num_samples must be at most 1,048,576"),
    ("mc_dropout", {"num_epochs": 10**15}, "num_epochs must be at most"),
    ("swag", {"num_runs": 10**6}, "num_runs must be at most 10,000"),
    ("swag", {"num_runs": 10_000, "max_rank": 1000, "num_samples": 10_000},
     "num_runs × max_rank must be at most 1,048,576"),
    ("swag", {"num_epochs": 10**15}, "num_epochs must be at most"),
    ("mfvi", {"num_steps": 10**15}, "num_steps must be at most 10,000,000"),
    ("mfvi", {"num_samples": 10**12}, "num_samples must be at most 1,048,576"),
    ("mfvi", {"num_particles": 10**9}, "num_particles must be at most 10,000"),
    ("hmc", {"num_samples": 10**12}, "num_samples must be at most 1,048,576"),
    ("hmc", {"num_chains": 10**6}, "num_chains must be at most 10,000"),
    ("hmc", {"num_chains": 3, "num_samples": 1000},
     "num_samples (1000) must be a multiple of num_chains (3)"),
    ("hmc", {"num_warmup": 10**12}, "num_warmup must be at most 10,000,000"),
    ("hmc", {"num_samples": 1000, "thinning": 100_000},
     "num_warmup + (num_samples / num_chains) × thinning = 25,000,500 iterations per chain"),
])
def test_absurd_method_sizes_are_clear_errors(method, options, needle):
    with pytest.raises(uz.InvalidInputError) as info:
        uz.methods.make_config(method, **options)
    assert needle in str(info.value)


@pytest.mark.parametrize("method", uz.methods.names())
def test_the_defaults_and_the_limits_themselves_are_allowed(method):
    uz.methods.make_config(method)
    limits = {"ensemble": {"num_members": _config.MAX_MEMBERS, "num_epochs": 10_000},
              "hmc": {"num_chains": 1, "num_samples": _config.MAX_DRAWS, "num_warmup": 0},
              "mfvi": {"num_steps": _config.MAX_ITERATIONS,
                       "num_samples": _config.MAX_DRAWS},
              "laplace": {"num_epochs": _config.MAX_ITERATIONS,
                          "num_samples": _config.MAX_DRAWS}}
    if method in limits:
        uz.methods.make_config(method, **limits[method])


def _fit_must_not_start(*args, **kwargs):
    raise AssertionError("the trainer ran although the sizes are out of bounds")


@pytest.mark.parametrize("method, options, needle", [
    ("ensemble", {"num_members": 100}, "num_members = 100 parameter vectors of"),
    ("mc_dropout", {"num_samples": 100}, "num_samples = 100 parameter vectors of"),
    ("laplace", {"num_samples": 100}, "num_samples = 100 parameter vectors of"),
    ("swag", {"num_samples": 100}, "num_samples = 100 parameter vectors of"),
])
def test_draws_too_large_for_memory_are_refused_before_training(method, options, needle):
    # 3 -> 4000 -> 4000 -> 1: 1.6e7 parameters (within the spec's bound), 64 MiB per
    # float32 draw: 100 draws are 6 GiB
    spec = uz.MLPSpec(3, 2, hidden=(4_000, 4_000))
    with mock.patch("uqzoo.methods._trainer.fit_members", _fit_must_not_start):
        with pytest.raises(uz.InvalidInputError) as info:
            uz.fit(method, spec, _small_data(), seed=0, progress_bar=False, **options)
    assert needle in str(info.value) and "GiB" in str(info.value)


def test_a_network_beyond_the_parameter_bound_is_refused_before_allocating():
    # 3 -> 60000 -> 60000 -> 1: 3.6e9 parameters, 13 GiB per float32 draw
    with pytest.raises(uz.InvalidInputError, match=r"3,600,360,001 parameters .* at most "
                                                   r"16,777,216 \(2\*\*24\)"):
        uz.MLPSpec(3, 2, hidden=(60_000, 60_000))


def _small_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(int)
    return uz.ClassificationData(X_train=X, y_train=y, X_test=X[:5], y_test=y[:5],
                                 n_classes=2)


def test_laplace_full_hessian_of_a_large_network_is_refused_before_training():
    spec = uz.MLPSpec(3, 2, hidden=(200, 200))          # ~41 000 parameters
    with mock.patch("uqzoo.methods._trainer.fit_members", _fit_must_not_start):
        with pytest.raises(uz.InvalidInputError, match="hessian='diag' or subset='last_layer'"):
            uz.fit("laplace", spec, _small_data(), seed=0, progress_bar=False, num_samples=10)


@pytest.mark.parametrize("metric", ["ece", "mce", "rmsce", "classwise_ece",
                                    "calibration_bins", "reliability_curve"])
def test_absurd_bin_counts_are_clear_errors(metric):
    p = np.array([[0.2, 0.8], [0.6, 0.4], [0.9, 0.1]])
    fn = getattr(uz.metrics, metric)
    with pytest.raises(uz.InvalidInputError, match="n_bins must be at most 1,000,000"):
        fn(p, [1, 0, 0], n_bins=10**12)
    fn(p, [1, 0, 0], n_bins=_common.MAX_BINS)          # the limit itself is allowed


def test_classwise_bins_are_bounded_by_classes_times_bins():
    K = 64
    p = np.full((3, K), 1.0 / K)
    with pytest.raises(uz.InvalidInputError, match="n_bins × number of classes"):
        uz.metrics.classwise_ece(p, [0, 1, 2], n_bins=_common.MAX_BINS)


def test_streaming_accumulators_bound_their_bins_like_the_metrics():
    from uqzoo.metrics.streaming import CalibrationAccumulator, ClasswiseCalibrationAccumulator
    with pytest.raises(uz.InvalidInputError, match="n_bins"):
        CalibrationAccumulator(2, n_bins=10**12)
    with pytest.raises(uz.InvalidInputError, match="n_bins"):
        ClasswiseCalibrationAccumulator(1000, n_bins=_common.MAX_BINS)
    assert CalibrationAccumulator(2, n_bins=_common.MAX_BINS).n_bins == _common.MAX_BINS
