"""The predictive engine against a plain per-draw loop and ``np.quantile``.

Reference values are float64 (``_float32_reference``); tolerances are the
worst-case float32 rounding bounds propagated to what is compared:
order statistics and their linear interpolation are 1-Lipschitz in the max
norm, so a quantile of float32 probabilities is within max_s(bound) of the
quantile of the exact ones, and a mean within the mean bound plus the
float32 summation error of the engine's blocks of 128 (γ_128).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import uqzoo as uz
from _float32_reference import U32, draws_proba64, gamma
from uqzoo import predictive
from uqzoo.errors import InvalidInputError
from uqzoo.predictive import _CHUNK_ELEMENTS, _chunk_size, proba_draws, summarize
from uqzoo.spec import MLPSpec

U64 = 2.0**-53          # unit roundoff of float64

LEVELS = (0.5, 0.8, 0.9, 0.95)


def make_case(hidden, n_classes, activation="tanh", num_draws=53, n_points=41, seed=0,
              in_features=6, scale=3.0):
    spec = MLPSpec(in_features, n_classes, hidden=hidden, activation=activation)
    draws = {k: (scale * v).astype(np.float32)
             for k, v in spec.init_params(seed=seed, num=num_draws).items()}
    X = np.random.default_rng(seed + 1).normal(size=(n_points, in_features)).astype(np.float32)
    return spec, draws, X


def reference_summary(spec, draws, X, levels):
    """Plain loop over draws in float64, then np.mean / np.quantile / entropy."""
    p, bound = draws_proba64(spec, draws, X)                  # (S, N, K) each
    lower = np.stack([np.quantile(p, (1 - lv) / 2, axis=0) for lv in levels])
    upper = np.stack([np.quantile(p, (1 + lv) / 2, axis=0) for lv in levels])
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(p), 0.0)
    entropy = -plogp.sum(-1).mean(0)
    return p, bound, p.mean(0), lower, upper, entropy


def entropy_tolerance(spec, bound):
    """|ΔH| per draw: dH/dz is at most 1 + log K in the max norm; plus float32
    rounding of the log/softplus terms and the summation."""
    K = spec.n_classes
    return (1 + np.log(K)) * bound.max(axis=(0, 2)) + (16 + K) * U32 * (1 + np.log(K)) \
        + gamma(128) * np.log(K)


SHAPES = [((), 2), ((), 3), ((8,), 2), ((10, 10), 2), ((10, 10), 4), ((5, 4, 3), 3)]


@pytest.mark.parametrize(("hidden", "n_classes"), SHAPES)
@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid"])
def test_summarize_equals_plain_loop_and_np_quantile(hidden, n_classes, activation):
    spec, draws, X = make_case(hidden, n_classes, activation)
    _p, bound, mean, lower, upper, entropy = reference_summary(spec, draws, X, LEVELS)
    s = summarize(spec, draws, X, LEVELS)
    worst = bound.max(axis=0)                                   # (N, K)
    assert s.mean.shape == (41, n_classes) and s.lower.shape == (4, 41, n_classes)
    assert s.mean.dtype == s.lower.dtype == np.float64
    assert s.levels == LEVELS and s.num_draws == 53 and s.n_points == 41
    assert np.all(np.abs(s.mean - mean) <= bound.mean(0) + gamma(128))
    assert np.all(np.abs(s.lower - lower) <= worst + 4 * U32)
    assert np.all(np.abs(s.upper - upper) <= worst + 4 * U32)
    assert np.all(np.abs(s.expected_entropy - entropy) <= entropy_tolerance(spec, bound))
    assert np.all(s.lower <= s.upper)
    # nested intervals: a higher level's interval contains a lower level's
    assert np.all(np.diff(s.lower, axis=0) <= 0) and np.all(np.diff(s.upper, axis=0) >= 0)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_proba_draws_equals_plain_loop(n_classes):
    spec, draws, X = make_case((10, 10), n_classes)
    p, bound = draws_proba64(spec, draws, X)
    got = proba_draws(spec, draws, X)
    assert got.shape == (53, 41, n_classes) and got.dtype == np.float32
    assert np.all(np.abs(got - p) <= bound + U32)
    for chunk in (1, 5):
        chunked = proba_draws(spec, draws, X, chunk_size=chunk)
        assert np.all(np.abs(chunked - p) <= bound + U32)


@pytest.mark.parametrize("num_draws", [1, 2, 3, 100])
def test_small_and_even_draw_counts_follow_np_quantile(num_draws):
    """S = 1 (every quantile is the draw), S = 2 (pure interpolation), odd and even S."""
    spec, draws, X = make_case((4,), 2, num_draws=num_draws, n_points=9)
    _p, bound, _mean, lower, upper, _ = reference_summary(spec, draws, X, (0.3, 0.99))
    s = summarize(spec, draws, X, (0.99, 0.3))
    assert s.levels == (0.3, 0.99)
    assert np.all(np.abs(s.lower - lower) <= bound.max(0) + 4 * U32)
    assert np.all(np.abs(s.upper - upper) <= bound.max(0) + 4 * U32)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_chunking_does_not_change_the_summary(n_classes):
    spec, draws, X = make_case((10, 10), n_classes, n_points=37)
    _, bound = draws_proba64(spec, draws, X)
    whole = summarize(spec, draws, X, LEVELS, chunk_size=37)
    for chunk in (1, 4, 36, 1000):
        part = summarize(spec, draws, X, LEVELS, chunk_size=chunk)
        # Different chunk shapes may pick different BLAS kernels, so equality
        # holds to the rounding bound, both sides being within it of exact.
        assert np.all(np.abs(part.lower - whole.lower) <= 2 * bound.max(0) + 8 * U32)
        assert np.all(np.abs(part.mean - whole.mean) <= 2 * bound.mean(0) + 2 * gamma(128))
        assert np.all(np.abs(part.expected_entropy - whole.expected_entropy)
                      <= 2 * entropy_tolerance(spec, bound))


def assert_within_rounding(a, b, spec, bound):
    """Two float32 summaries of the same draws, each within the rounding bound of
    the exact one, so within twice that bound of each other. Used wherever the
    two runs may use different BLAS kernels, block shapes or thread counts."""
    assert np.all(np.abs(a.lower - b.lower) <= 2 * bound.max(0) + 8 * U32)
    assert np.all(np.abs(a.upper - b.upper) <= 2 * bound.max(0) + 8 * U32)
    assert np.all(np.abs(a.mean - b.mean) <= 2 * bound.mean(0) + 2 * gamma(128))
    assert np.all(np.abs(a.expected_entropy - b.expected_entropy)
                  <= 2 * entropy_tolerance(spec, bound))


def test_worker_count_does_not_change_the_summary_beyond_rounding():
    spec, draws, X = make_case((10, 10), 2, n_points=50)
    _, bound = draws_proba64(spec, draws, X)
    one = summarize(spec, draws, X, chunk_size=7, workers=1)
    for workers in (2, 3):
        assert_within_rounding(summarize(spec, draws, X, chunk_size=7, workers=workers),
                               one, spec, bound)
    with pytest.raises(uz.InvalidInputError, match="workers"):
        summarize(spec, draws, X, workers=0)


def test_summarize_leaves_torch_threads_as_the_caller_set_them():
    import threading

    spec, draws, X = make_case((10, 10), 2, n_points=50)
    before = torch.get_num_threads()
    try:
        for caller in (1, 2, 3):
            torch.set_num_threads(caller)
            summarize(spec, draws, X, chunk_size=7, workers=2)
            assert torch.get_num_threads() == caller
            seen: list[int] = []
            fresh = threading.Thread(target=lambda out=seen: out.append(torch.get_num_threads()))
            fresh.start()
            fresh.join()
            assert seen == [caller]          # threads started later are not single-threaded
    finally:
        torch.set_num_threads(before)


def test_binary_bounds_are_symmetric_and_mean_sums_to_one():
    spec, draws, X = make_case((10,), 2)
    s = summarize(spec, draws, X, LEVELS)
    # each class's mean is its own float32 sigmoid, summed in blocks (γ_128)
    np.testing.assert_allclose(s.mean.sum(-1), 1.0, rtol=0, atol=4 * U32 + 2 * gamma(128))
    # Q_q(1 - p) = 1 - Q_{1-q}(p). Both sides come from the same float32 logits
    # through float64 sigmoids: each exp is within 4 ulp (numpy's SIMD exp
    # differs by CPU), the add, divide, interpolation (3 ops) and the
    # subtraction from 1 add one ulp each, on values at most 1.
    np.testing.assert_allclose(s.lower[:, :, 0], 1 - s.upper[:, :, 1], rtol=0,
                               atol=2 * (4 + 5) * U64 + U64)
    lo, hi = s.interval(0.9)
    np.testing.assert_array_equal(lo, s.lower[2])
    np.testing.assert_array_equal(hi, s.upper[2])
    with pytest.raises(uz.InvalidInputError, match=r"0\.7"):
        s.interval(0.7)


def test_glm_predictive_summarises_the_linearised_network():
    spec, draws, X = make_case((10, 10), 2, num_draws=31)
    anchor = {k: v.mean(axis=0) for k, v in draws.items()}
    p = proba_draws(spec, draws, X, anchor=anchor)           # (S, N, 2) float32
    s = summarize(spec, draws, X, LEVELS, anchor=anchor, chunk_size=41)
    q = np.quantile(p.astype(np.float64), [0.025, 0.975], axis=0)
    # same float32 logits on both sides; only the final sigmoid differs in
    # precision (float32 there, float64 here)
    np.testing.assert_allclose(s.lower[-1], q[0], rtol=0, atol=4 * U32)
    np.testing.assert_allclose(s.upper[-1], q[1], rtol=0, atol=4 * U32)
    # and the linearised network is not the network itself
    plain = proba_draws(spec, draws, X)
    assert np.abs(plain - p).max() > 1e-3


def test_summary_is_reproducible_and_inputs_are_not_mutated():
    """Same machine, same settings: bit-identical, the promise users rely on."""
    spec, draws, X = make_case((10, 10), 3)
    copies = {k: v.copy() for k, v in draws.items()}, X.copy()
    a = summarize(spec, draws, X, workers=2)
    b = summarize(spec, draws, X, workers=2)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.mean, b.mean)
    for k in draws:
        np.testing.assert_array_equal(draws[k], copies[0][k])
    np.testing.assert_array_equal(X, copies[1])


def test_saturated_logits_give_exact_tail_probabilities():
    """Huge logits: probabilities 0/1 in float32 but the small class stays exact."""
    spec = MLPSpec(1, 2, hidden=())
    draws = {"layers.0.weight": np.full((5, 1, 1), 40.0, np.float32),
             "layers.0.bias": np.linspace(0, 1, 5, dtype=np.float32)[:, None]}
    X = np.array([[1.0], [-1.0]], np.float32)
    s = summarize(spec, draws, X, (0.5,))
    b = np.linspace(0, 1, 5, dtype=np.float32).astype(np.float64)
    small_0 = 1 / (1 + np.exp(40.0 + b))        # P(y = 0) at x = 1
    small_1 = 1 / (1 + np.exp(40.0 - b))        # P(y = 1) at x = -1
    # relative float32 precision, not 1 - p's absolute 6e-8
    tol = 16 * U32
    np.testing.assert_allclose(s.mean[0, 0], small_0.mean(), rtol=tol)
    np.testing.assert_allclose(s.mean[1, 1], small_1.mean(), rtol=tol)
    np.testing.assert_allclose(s.lower[0, 0, 0], np.quantile(small_0, 0.25), rtol=tol)
    np.testing.assert_allclose(s.upper[0, 0, 0], np.quantile(small_0, 0.75), rtol=tol)
    np.testing.assert_allclose(s.lower[0, 1, 1], np.quantile(small_1, 0.25), rtol=tol)
    assert np.all(np.isfinite(s.expected_entropy)) and np.all(s.expected_entropy >= 0)


# -- memory: O(S × chunk), never O(S × N) ----------------------------------------------

@pytest.mark.parametrize(("hidden", "n_classes"), [((10, 10), 2), ((50,), 10), ((), 2),
                                                    ((200, 200), 3)])
@pytest.mark.parametrize("num_draws", [1, 10, 1000, 100_000])
def test_chunk_size_bounds_every_buffer_independently_of_n(hidden, n_classes, num_draws):
    spec = MLPSpec(30, n_classes, hidden=hidden)
    for linearized in (False, True):
        chunk = _chunk_size(spec, num_draws, None, linearized=linearized)
        assert chunk >= 1
        width = max(spec.layer_sizes[1:]) if linearized else spec.n_classes
        if chunk > 1:
            assert num_draws * chunk * width <= _CHUNK_ELEMENTS
        # a draw group's activations too
        group = min(num_draws, max(1, predictive._FIRST_LAYER_WIDTH // spec.layer_sizes[1]))
        if not linearized and chunk > 1:
            assert chunk * group * max(spec.layer_sizes[1:]) <= _CHUNK_ELEMENTS
    assert _chunk_size(spec, num_draws, 17) == 17


def _read_status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def test_peak_memory_is_far_below_one_s_by_n_array():
    """S × N float32 would be 200 MB here; the engine's peak growth must stay well
    below it (outputs are ~13 MB, work buffers a few MB per worker).

    Peak RSS depends on the allocator (glibc gives each worker thread its own
    arena, and may keep freed blocks), so the margin is wide: anything up to
    half of one S × N array passes; an engine that held the (S, N) draws, or
    two such arrays as numpy's quantile does, cannot. The precise figure
    lives in ``benchmarks/bench_evaluate_memory.py``."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                        # reset the peak-RSS counter
    except OSError:
        pytest.skip("peak RSS cannot be reset on this platform")
    spec, draws, X = make_case((4,), 2, num_draws=500, n_points=100_000, in_features=3)
    outputs = (2 + 2 * 4 * 2 + 1) * 100_000 * 8
    base = _read_status_kib("VmRSS") * 1024
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    s = summarize(spec, draws, X, LEVELS, chunk_size=256)
    peak = _read_status_kib("VmHWM") * 1024
    one_s_by_n = 500 * 100_000 * 4
    assert s.mean.shape == (100_000, 2)
    assert peak - base < outputs + one_s_by_n / 2


def test_concurrent_calls_agree_and_restore_torch_threads():
    from concurrent.futures import ThreadPoolExecutor

    spec, draws, X = make_case((10, 10), 2, n_points=60)
    _, bound = draws_proba64(spec, draws, X)
    before = torch.get_num_threads()
    expected = summarize(spec, draws, X, chunk_size=8)
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: summarize(spec, draws, X, chunk_size=8), range(6)))
    assert torch.get_num_threads() == before
    for r in results:
        assert_within_rounding(r, expected, spec, bound)


@pytest.mark.parametrize(("n_classes", "num_draws"), [(2, 5), (2, 60), (3, 60)])
def test_order_statistic_summary_equals_credible_interval(n_classes, num_draws):
    """The streamed order-statistic bounds are credible_interval's, to float32 rounding;
    with too few draws for a level, the whole range [0, 1]."""
    from uqzoo.metrics import credible_interval
    spec, draws, X = make_case((10,), n_classes, num_draws=num_draws, n_points=23)
    p, bound = draws_proba64(spec, draws, X)
    ci = credible_interval(p, LEVELS, kind="order_statistic")
    s = summarize(spec, draws, X, LEVELS, interval="order_statistic")
    assert s.interval_kind == "order_statistic"
    assert np.all(np.abs(s.lower - ci.lower) <= bound.max(0) + 4 * U32)
    assert np.all(np.abs(s.upper - ci.upper) <= bound.max(0) + 4 * U32)
    if num_draws == 5:                      # 95 % needs S >= 39
        assert np.all(s.lower[-1] == 0.0) and np.all(s.upper[-1] == 1.0)   # 95 %: S < 39
    with pytest.raises(uz.InvalidInputError, match="interval"):
        summarize(spec, draws, X, interval="hdi")


def test_finiteness_check_rejects_every_non_finite_value_and_accepts_overflowing_sums():
    # The check sums X (a NaN or inf makes the sum non-finite) and falls back to
    # the element-wise test when the sum is not finite: finite values whose sum
    # overflows must pass, and +inf and -inf that sum to NaN must not.
    spec = MLPSpec(3, 2, hidden=(4,))
    draws = spec.init_params(seed=0, num=5)
    big = np.full((4, 3), 3e38, dtype=np.float32)          # finite; the sum overflows
    with np.errstate(over="ignore"):
        assert np.isinf(big.sum())
    assert uz.summarize(spec, draws, big).mean.shape == (4, 2)
    for bad, shown in ((np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")):
        X = np.zeros((4, 3), dtype=np.float32)
        X[2, 1] = bad
        with pytest.raises(InvalidInputError,
                           match=f"X must be finite; found {shown} at row 2, column 1"):
            uz.summarize(spec, draws, X)
    both = np.zeros((4, 3))
    both[0, 0], both[3, 2] = np.inf, -np.inf                # the sum is NaN
    with pytest.raises(InvalidInputError, match="found inf at row 0, column 0"):
        uz.summarize(spec, draws, both)
