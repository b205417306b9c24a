"""Uncertainty scores: known values and the entropy decomposition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uqzoo.metrics import (
    expected_entropy,
    interval_width_score,
    max_probability,
    mutual_information,
    predictive_entropy,
)


def test_known_values():
    assert predictive_entropy(np.array([[0.5, 0.5]])) == pytest.approx([np.log(2)])
    assert predictive_entropy(np.array([[1.0, 0.0, 0.0]])).tolist() == [0.0]
    assert max_probability(np.array([[0.2, 0.5, 0.3]])).tolist() == [0.5]
    # two confident draws that disagree: all uncertainty is epistemic
    d = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    assert mutual_information(d) == pytest.approx([np.log(2)])
    assert expected_entropy(d).tolist() == [0.0]
    # identical draws: no epistemic part
    same = np.repeat(np.array([[[0.3, 0.7]]]), 5, axis=0)
    assert mutual_information(same) == pytest.approx([0.0], abs=1e-15)
    assert interval_width_score(np.array([[0.1, 0.2]]), np.array([[0.5, 0.4]])) == \
        pytest.approx([0.4])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(2, 6), S=st.integers(1, 30))
def test_decomposition_total_equals_aleatoric_plus_epistemic(seed, K, S):
    draws = np.random.default_rng(seed).dirichlet(np.full(K, 0.5), size=(S, 8))
    total = predictive_entropy(draws.mean(0))
    mi = mutual_information(draws)
    assert np.all(mi >= 0)
    assert total == pytest.approx(expected_entropy(draws) + mi, abs=1e-12)
