"""Per-point uncertainty scores (higher = more uncertain, except max_probability)."""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from uqzoo._validation import as_probabilities
from uqzoo.metrics._common import check_bounds

__all__ = [
    "expected_entropy",
    "interval_width_score",
    "max_probability",
    "mutual_information",
    "predictive_entropy",
]


def max_probability(probs: object) -> np.ndarray:
    """Top-label confidence max_k p_k, shape (N,).

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> uz.metrics.max_probability(np.array([[0.3, 0.7], [0.5, 0.5]]))
    array([0.7, 0.5])
    """
    return as_probabilities(probs, "probs").max(axis=1).astype(np.float64)


def entropy_of(p: np.ndarray) -> np.ndarray:
    """Entropy in nats along the last axis, 0 log 0 = 0."""
    return 0.0 - xlogy(p, p).sum(axis=-1)  # 0.0 - x turns -0.0 into 0.0


def predictive_entropy(probs: object) -> np.ndarray:
    """Entropy (nats) of the posterior-mean probabilities, shape (N,): total uncertainty.

    Examples
    --------
    An even split carries ln 2 nats, a certain prediction none:

    >>> import numpy as np, uqzoo as uz
    >>> uz.metrics.predictive_entropy(np.array([[0.5, 0.5], [1.0, 0.0]]))
    array([0.69314718, 0.        ])
    """
    return entropy_of(as_probabilities(probs, "probs").astype(np.float64))


def expected_entropy(draws: object) -> np.ndarray:
    """Mean over draws of each draw's entropy (nats), shape (N,): aleatoric part.

    Parameters
    ----------
    draws : array of shape (S, N, K)

    Examples
    --------
    Two confident draws that disagree: each draw is certain, so the aleatoric part is 0:

    >>> import numpy as np, uqzoo as uz
    >>> d = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    >>> uz.metrics.expected_entropy(d)
    array([0.])
    """
    arr = as_probabilities(draws, "draws", ndim=3).astype(np.float64)
    return entropy_of(arr).mean(axis=0)


def mutual_information(draws: object) -> np.ndarray:
    """Mutual information between label and parameters, shape (N,): epistemic part.

    MI = H(mean over draws) − mean over draws of H(draw), in nats; never
    negative (rounding is clipped at 0).

    Parameters
    ----------
    draws : array of shape (S, N, K)

    Examples
    --------
    The same two draws: all of the uncertainty is epistemic, ln 2 nats:

    >>> import numpy as np, uqzoo as uz
    >>> d = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    >>> uz.metrics.mutual_information(d)
    array([0.69314718])

    References
    ----------
    Houlsby, N., Huszár, F., Ghahramani, Z., Lengyel, M. (2011). Bayesian
    active learning for classification and preference learning. arXiv:1112.5745.
    """
    arr = as_probabilities(draws, "draws", ndim=3).astype(np.float64)
    return np.maximum(entropy_of(arr.mean(axis=0)) - entropy_of(arr).mean(axis=0), 0.0)


def interval_width_score(lower: object, upper: object) -> np.ndarray:
    """Widest class-probability interval of each point, max_k (u_k − l_k), shape (N,).

    For binary problems both columns have the same width, so this is the
    width of the interval for P(y = 1).

    Parameters
    ----------
    lower, upper : array of shape (N, K)

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> uz.metrics.interval_width_score(np.array([[0.1, 0.6]]), np.array([[0.4, 0.9]]))
    array([0.3])
    """
    lo, hi = check_bounds(lower, upper)
    return (hi - lo).max(axis=-1)
