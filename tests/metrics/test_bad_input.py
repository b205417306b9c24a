"""Bad input gets a uqzoo error that names the argument."""

import numpy as np
import pytest

from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import (
    adaptive_ece,
    aurc,
    brier,
    coverage,
    credible_interval,
    ece,
    high_confidence_set,
    interval_width,
    reliability_curve,
)

P = np.array([[0.2, 0.8], [0.6, 0.4]])
Y = np.array([1, 0])


@pytest.mark.parametrize("fn", [ece, brier, aurc, adaptive_ece])
@pytest.mark.parametrize("probs,match", [
    (np.array([[1.2, -0.2], [0.6, 0.4]]), r"\[0, 1\]"),
    (np.array([[0.3, 0.3], [0.6, 0.4]]), "sum to 1"),
    (np.array([[np.nan, 0.5], [0.6, 0.4]]), "finite"),
    (np.array([0.2, 0.8]), "shape"),
])
def test_bad_probabilities(fn, probs, match):
    with pytest.raises(InvalidInputError, match=match):
        fn(probs, Y)


@pytest.mark.parametrize("fn", [ece, brier, aurc, adaptive_ece])
def test_bad_labels(fn):
    with pytest.raises(InvalidInputError, match=r"labels in 0\.\.1"):
        fn(P, [1, 2])
    with pytest.raises(InvalidInputError, match="one label per row"):
        fn(P, [1, 0, 1])
    with pytest.raises(InvalidTypeError):
        fn(P, "ab")


def test_bad_bins_and_options():
    with pytest.raises(InvalidInputError, match="n_bins must be >= 1"):
        ece(P, Y, n_bins=0)
    with pytest.raises(InvalidTypeError, match="n_bins"):
        ece(P, Y, n_bins=2.5)
    with pytest.raises(InvalidInputError, match="confidence"):
        ece(P, Y, confidence="top")
    with pytest.raises(InvalidInputError, match="binning"):
        ece(P, Y, binning="equal_mass")
    with pytest.raises(InvalidInputError, match="K = 2"):
        ece(np.full((2, 3), 1 / 3), Y, confidence="positive_class")
    with pytest.raises(InvalidInputError, match="ci_level"):
        reliability_curve(P, Y, ci_level=1.0)
    with pytest.raises(InvalidInputError, match="method"):
        aurc(P, Y, method="rank")


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.2])
def test_levels_outside_open_unit_interval(level):
    draws = np.full((4, 2, 2), 0.5)
    with pytest.raises(InvalidInputError, match="level"):
        credible_interval(draws, level)
    with pytest.raises(InvalidInputError, match="level"):
        credible_interval(draws, (0.5, level))


def test_bad_draws_and_bounds():
    with pytest.raises(InvalidInputError, match=r"\(S, N, K\)"):
        credible_interval(np.full((2, 2), 0.5), 0.8)
    with pytest.raises(InvalidInputError, match="kind"):
        credible_interval(np.full((3, 2, 2), 0.5), 0.8, kind="central")
    lo = np.array([[0.1, 0.5]])
    with pytest.raises(InvalidInputError, match="lower must not exceed upper"):
        interval_width(lo, lo - 0.05)
    with pytest.raises(InvalidInputError, match="same shape"):
        coverage(lo, np.array([[0.2, 0.6], [0.2, 0.6]]), np.array([[0.5, 0.5]]))
    with pytest.raises(InvalidInputError, match="N = 1 rows"):
        coverage(lo, lo + 0.1, np.array([[0.5, 0.5], [0.5, 0.5]]))
    with pytest.raises(InvalidInputError, match="sum to 1"):
        coverage(lo, lo + 0.1, np.array([[0.5, 0.6]]))
    with pytest.raises(InvalidInputError, match="delta"):
        high_confidence_set(lo, lo + 0.1, delta=0.5)
