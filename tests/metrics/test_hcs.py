"""High Confidence Sets: strict thresholds, sides, one-vs-rest, monotonicity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uqzoo.errors import InvalidInputError
from uqzoo.metrics import credible_interval, hcs_summary, high_confidence_set


def binary_bounds(lo1, hi1):
    lo1, hi1 = np.asarray(lo1, float), np.asarray(hi1, float)
    return np.stack([1 - hi1, lo1], axis=-1), np.stack([1 - lo1, hi1], axis=-1)


def test_strict_inequalities_at_the_threshold():
    # interval for P(target): [0.1, 0.2] touches δ = 0.2 -> not in the set;
    # [0.8, 0.9] touches 1 - δ -> not in the set.
    lower, upper = binary_bounds([0.1, 0.8, 0.05, 0.81], [0.2, 0.9, 0.1999, 0.95])
    hcs = high_confidence_set(lower, upper, delta=0.2)
    assert hcs.classes == (1,)
    assert hcs.negative[:, 0].tolist() == [False, False, True, False]
    assert hcs.positive[:, 0].tolist() == [False, False, False, True]
    assert hcs.decision[:, 0].tolist() == [-1, -1, 0, 1]


def test_sides_and_summary_hand_case():
    lower, upper = binary_bounds([0.0, 0.01, 0.85, 0.9, 0.3], [0.1, 0.15, 0.95, 1.0, 0.7])
    y = np.array([0, 1, 1, 0, 1])
    both = hcs_summary(high_confidence_set(lower, upper), y)
    assert both.size.tolist() == [4]
    assert both.proportion.tolist() == [0.8]
    # members: 0 (neg, y=0 ok), 1 (neg, y=1 missed), 2 (pos, ok), 3 (pos, y=0 false)
    assert both.accuracy.tolist() == [0.5]
    assert both.missed_targets.tolist() == [1]
    assert both.detected_targets.tolist() == [1]
    assert both.false_targets.tolist() == [1]
    assert both.n_targets.tolist() == [3]
    neg = hcs_summary(high_confidence_set(lower, upper, side="negative"), y)
    assert neg.size.tolist() == [2] and neg.accuracy.tolist() == [0.5]
    pos = hcs_summary(high_confidence_set(lower, upper, side="positive"), y)
    assert pos.size.tolist() == [2] and pos.missed_targets.tolist() == [0]


def test_empty_set_has_nan_accuracy():
    lower, upper = binary_bounds([0.3], [0.7])
    s = hcs_summary(high_confidence_set(lower, upper), [1])
    assert s.size.tolist() == [0] and np.isnan(s.accuracy[0])


def test_one_vs_rest_for_three_classes():
    lower = np.array([[0.85, 0.0, 0.0], [0.3, 0.3, 0.1]])
    upper = np.array([[0.95, 0.1, 0.1], [0.5, 0.5, 0.3]])
    hcs = high_confidence_set(lower, upper)
    assert hcs.classes == (0, 1, 2)
    assert hcs.decision.tolist() == [[1, 0, 0], [-1, -1, -1]]


@pytest.mark.parametrize("delta", [0.0, 0.5, -0.1, 0.7])
def test_delta_outside_open_interval_rejected(delta):
    lower, upper = binary_bounds([0.1], [0.2])
    with pytest.raises(InvalidInputError, match="delta"):
        high_confidence_set(lower, upper, delta=delta)


def test_bad_side_rejected():
    lower, upper = binary_bounds([0.1], [0.2])
    with pytest.raises(InvalidInputError, match="side"):
        high_confidence_set(lower, upper, side="up")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.sampled_from([2, 3]),
       d1=st.floats(0.01, 0.49), d2=st.floats(0.01, 0.49))
def test_hcs_shrinks_as_delta_shrinks_and_level_grows(seed, K, d1, d2):
    rng = np.random.default_rng(seed)
    draws = rng.dirichlet(np.full(K, 0.3), size=(50, 40))
    ci = credible_interval(draws, (0.5, 0.8, 0.95))
    lo, hi = ci.lower, ci.upper
    small, large = sorted((d1, d2))
    for side in ("both", "negative", "positive"):
        a = high_confidence_set(lo, hi, delta=small, side=side).members
        b = high_confidence_set(lo, hi, delta=large, side=side).members
        assert np.all(a <= b)                      # smaller δ: subset
        assert np.all(np.diff(b.astype(int), axis=0) <= 0)   # higher level: subset
