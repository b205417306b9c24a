"""Simulated problems whose exact P(y | x) is *not* a draw from the network prior.

``sim-teacher`` draws its truth from the very prior HMC samples, so HMC is well
specified by construction there. The problems here have exact class
probabilities that no method owns:

- ``gaussian-mixture``: class-conditional Gaussians, whose Bayes posterior is
  a logistic function of a linear (shared covariance) or quadratic (unequal
  covariances) score of x;
- ``nonlinear-logistic``: a logistic model whose logit is a fixed sum of
  non-linear features of x (a sine, an interaction, a square, an absolute
  value), smooth but not a small tanh network.

Both return ``p_true_test`` exactly, so coverage of credible intervals for the
class probabilities can be measured against them as on ``sim-teacher``.
"""

from __future__ import annotations

import math

import numpy as np

from uqzoo._validation import check_choice, check_float, check_int, check_seed
from uqzoo.datasets._base import ClassificationData
from uqzoo.errors import InvalidInputError

__all__ = ["load_gaussian_mixture", "load_nonlinear_logistic",
           "shifted_p_true_gaussian_mixture"]

COVARIANCES = ("shared", "unequal")
# nonlinear-logistic's logit standard deviation before logit_scale, chosen as
# on sim-teacher so that about half of the points have 0.05 < P(y=1|x) < 0.95
# (a normal logit with sd 4.4 leaves |z| < logit(0.95) = 2.94 half the time).
LOGIT_SD = 4.5
# Upper bounds keep a typo from asking numpy for an impossible allocation:
# 2**28 float64 values are 2 GiB, the simulators' working precision.
_MAX_VALUES = 2**28


def _check_sizes(p: object, n_train: object, n_test: object) -> tuple[int, int, int]:
    p = check_int(p, "p", minimum=1, maximum=100_000)
    n_train = check_int(n_train, "n_train", minimum=2, maximum=100_000_000)
    n_test = check_int(n_test, "n_test", minimum=1, maximum=100_000_000)
    if (n_train + n_test) * p > _MAX_VALUES:
        raise InvalidInputError(
            f"(n_train + n_test) × p must be at most 2**28 values (2 GiB of float64), got "
            f"({n_train} + {n_test}) × {p}")
    return p, n_train, n_test


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Separate child streams for training and test data: n_test never changes the
    training set, and vice versa."""
    train, test = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(train), np.random.default_rng(test)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    # exp(-logaddexp(0, -z)) is exact in both tails.
    return np.exp(-np.logaddexp(0.0, -z))


def _binary(p1: np.ndarray) -> np.ndarray:
    """(N,) P(y = 1 | x) to the (N, 2) class probabilities."""
    return np.stack([1.0 - p1, p1], axis=1)


def _check_two_classes(y: np.ndarray, seed: int, name: str) -> None:
    if np.unique(y).size < 2:
        raise InvalidInputError(
            f"the {y.size} training labels of {name} drawn with seed={seed} are all class "
            f"{int(y[0])}; use a larger n_train, a less extreme class balance or another seed")


def _log_normal(X: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """log N(x; mean, L Lᵀ) of each row of X (N, p), with L = ``chol``."""
    z = np.linalg.solve(chol, (X - mean).T)                            # (p, N)
    log_det = 2 * np.sum(np.log(np.diag(chol)))
    return -0.5 * (np.sum(z * z, axis=0) + log_det + mean.shape[0] * math.log(2 * math.pi))


def shifted_p_true_gaussian_mixture(data: ClassificationData, X: np.ndarray,
                                    matrix: np.ndarray, offset: np.ndarray,
                                    noise_var: np.ndarray) -> np.ndarray:
    """Exact P(y = 1 | x') of a ``gaussian-mixture`` point seen through x' = A x + b + η.

    η ~ N(0, diag(noise_var)) independent of x; x' | y is then
    N(A μ_y + b, A Σ_y Aᵀ + diag(noise_var)), and the Bayes posterior is the
    generator's with these moments (means, covariances and balance from
    ``data.meta``). :mod:`uqzoo.perturb` uses it for the perturbation
    families that lose information (extra noise, missing features).

    Parameters
    ----------
    data : ClassificationData
        Made by :func:`load_gaussian_mixture`.
    X : array (N, D')
        Transformed points x'.
    matrix : array (D', p)
        A; full row rank unless ``noise_var`` > 0.
    offset, noise_var : array (D',)

    Returns
    -------
    float64 array (N,)
    """
    A = np.asarray(matrix, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    means, covs = np.asarray(data.meta["means"]), np.asarray(data.meta["covariances"])
    balance = float(data.meta["balance"])
    log_density = []
    for k in range(2):
        cov = A @ covs[k] @ A.T + np.diag(np.asarray(noise_var, dtype=np.float64))
        log_density.append(_log_normal(X, A @ means[k] + offset, np.linalg.cholesky(cov)))
    return _sigmoid(log_density[1] - log_density[0] + math.log(balance) - math.log1p(-balance))


def load_gaussian_mixture(*, p: int = 5, n_train: int = 1000, n_test: int = 5000,
                          separation: float = 2.0, balance: float = 0.5,
                          covariance: str = "shared", seed: int = 0,
                          truth_seed: int = 0) -> ClassificationData:
    """Two Gaussian classes with the exact Bayes posterior as ``p_true_test``.

    y ~ Bernoulli(``balance``); x | y ~ N(μ_y, Σ_y) in p dimensions. The class
    means differ by ``separation`` Mahalanobis units along a random direction
    (from ``truth_seed``), and Σ_0 is a random correlation structure (a
    random rotation of eigenvalues spread over [0.5, 2]), so the features are
    correlated and not all informative. With ``covariance="shared"`` Σ_1 = Σ_0
    and the exact posterior is logistic in a *linear* score of x (what LDA
    assumes); with ``"unequal"`` Σ_1 is a second random covariance and the
    score is quadratic (QDA):

        log P(y=1|x)/P(y=0|x) = log N(x; μ_1, Σ_1) - log N(x; μ_0, Σ_0)
                                + log(balance / (1 - balance)).

    Features are not standardised (their scale is O(1) by construction).

    Parameters
    ----------
    p : int
        Number of features.
    n_train, n_test : int
        Number of training and test points.
    separation : float
        Mahalanobis distance between the class means under Σ_0 (> 0); 2 gives
        a Bayes error of about 16 % for balanced classes, 1 about 31 %.
    balance : float
        P(y = 1), in (0, 1).
    covariance : {"shared", "unequal"}
        Linear or quadratic exact decision boundary.
    seed : int
        Seed of the data (x and y).
    truth_seed : int
        Seed of the class means and covariances.

    Returns
    -------
    ClassificationData
        Exact ``p_true_test`` (n_test, 2); ``meta`` holds the means
        (``"means"``, (2, p)), covariances (``"covariances"``, (2, p, p)),
        ``"balance"`` and ``"p_true_train"``.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("gaussian-mixture", p=3, n_train=100, n_test=50)
    >>> data.p_true_test.shape, data.meta["covariance"]
    ((50, 2), 'shared')

    References
    ----------
    Hastie, Tibshirani, Friedman (2009). The Elements of Statistical Learning,
    2nd ed., §4.3 (linear and quadratic discriminant analysis).
    """
    p, n_train, n_test = _check_sizes(p, n_train, n_test)
    separation = check_float(separation, "separation", low=0.0, low_open=True, high=100.0)
    balance = check_float(balance, "balance", low=0.0, high=1.0, low_open=True,
                          high_open=True)
    covariance = check_choice(covariance, "covariance", COVARIANCES)
    seed = check_seed(seed)
    truth_seed = check_seed(truth_seed, "truth_seed")

    truth = np.random.default_rng(truth_seed)

    def random_covariance() -> np.ndarray:
        rotation, _ = np.linalg.qr(truth.normal(size=(p, p)))
        return (rotation * np.geomspace(0.5, 2.0, p)) @ rotation.T

    cov0 = random_covariance()
    cov1 = cov0 if covariance == "shared" else random_covariance()
    chol0 = np.linalg.cholesky(cov0)
    direction = truth.normal(size=p)
    # Scale the direction to the requested Mahalanobis length under Σ_0:
    # d = L u with |u| = separation gives d' Σ_0^{-1} d = separation².
    unit = direction / np.linalg.norm(direction)
    shift = chol0 @ (separation * unit)
    means = np.stack([-shift / 2, shift / 2])
    covs = np.stack([cov0, cov1])
    chols = np.stack([chol0, np.linalg.cholesky(cov1)])

    def log_density(X: np.ndarray, k: int) -> np.ndarray:
        return _log_normal(X, means[k], chols[k])

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        y = (rng.random(n) < balance).astype(np.int64)
        X = means[y] + np.einsum("nij,nj->ni", chols[y], rng.normal(size=(n, p)))
        log_odds = (log_density(X, 1) - log_density(X, 0)
                    + math.log(balance) - math.log1p(-balance))
        return X, y, _binary(_sigmoid(log_odds))

    train_rng, test_rng = _streams(seed)
    X_train, y_train, p_train = draw(train_rng, n_train)
    X_test, y_test, p_test = draw(test_rng, n_test)
    _check_two_classes(y_train, seed, "gaussian-mixture")
    meta = {
        "options": {"p": p, "n_train": n_train, "n_test": n_test, "separation": separation,
                    "balance": balance, "covariance": covariance, "seed": seed,
                    "truth_seed": truth_seed},
        "means": means, "covariances": covs, "balance": balance, "covariance": covariance,
        "p_true_train": p_train, "standardized": False,
        "description": "y ~ Bernoulli(balance); x | y ~ N(mu_y, Sigma_y); p_true the exact "
                       "Bayes posterior (linear score for shared, quadratic for unequal "
                       "covariances)",
    }
    return ClassificationData(X_train, y_train, X_test, y_test, n_classes=2,
                              p_true_test=p_test, class_names=("class 0", "class 1"),
                              name="gaussian-mixture", meta=meta)


def nonlinear_logit(X: np.ndarray, coefficients: np.ndarray, logit_scale: float
                    ) -> np.ndarray:
    """The logit of ``nonlinear-logistic``: a fixed weighted sum of non-linear features.

    f(x) = scale · (c_0 + c_1 sin(2 x_1) + c_2 x_2 x_3 + c_3 (x_4² - 1)/√2
                    + c_4 (|x_5| - √(2/π)) / 0.6 + Σ_{j>5} c_j x_j / √(p - 5))

    (features beyond those present are dropped; each term has mean 0 and
    variance about 1 under x ~ N(0, I), so the coefficients set its share).
    """
    p = X.shape[1]
    columns = [np.ones(X.shape[0]), np.sin(2 * X[:, 0])]
    if p >= 3:
        columns.append(X[:, 1] * X[:, 2])
    if p >= 4:
        columns.append((X[:, 3] ** 2 - 1) / math.sqrt(2))
    if p >= 5:
        columns.append((np.abs(X[:, 4]) - math.sqrt(2 / math.pi)) / 0.6)
    if p > 5:
        columns.append(X[:, 5:].sum(axis=1) / math.sqrt(p - 5))
    features = np.stack(columns, axis=1)
    return logit_scale * features @ coefficients


def load_nonlinear_logistic(*, p: int = 5, n_train: int = 1000, n_test: int = 5000,
                            logit_scale: float = 1.0, seed: int = 0,
                            truth_seed: int = 0) -> ClassificationData:
    """Logistic regression on fixed non-linear features of x, with exact P(y | x).

    x ~ N(0, I_p); P(y = 1 | x) = σ(f(x)) with f = :func:`nonlinear_logit`: a
    sine of x_1, the interaction x_2 x_3, a centred square of x_4, a centred
    absolute value of x_5 and a linear term in the rest, weighted by random
    coefficients (from ``truth_seed``: a random direction scaled so that the
    logit's standard deviation is :data:`LOGIT_SD` = 4.5, plus an N(0, 0.5²)
    intercept). The truth is smooth and spread over (0, 1) like
    ``sim-teacher``'s, but has a shape no small tanh network matches exactly.

    Parameters
    ----------
    p : int
        Number of features (>= 2).
    n_train, n_test : int
        Number of training and test points.
    logit_scale : float
        Positive factor on the logit (> 1 sharper, < 1 noisier).
    seed, truth_seed : int
        Seeds of the data and of the coefficients.

    Returns
    -------
    ClassificationData
        Exact ``p_true_test`` (n_test, 2); ``meta["coefficients"]`` and
        ``meta["p_true_train"]``.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("nonlinear-logistic", p=4, n_train=100, n_test=50)
    >>> data.p_true_test.shape
    (50, 2)
    """
    p, n_train, n_test = _check_sizes(p, n_train, n_test)
    if p < 2:
        raise InvalidInputError(f"p must be at least 2 for nonlinear-logistic, got {p}")
    logit_scale = check_float(logit_scale, "logit_scale", low=0.0, low_open=True, high=1e3)
    seed = check_seed(seed)
    truth_seed = check_seed(truth_seed, "truth_seed")
    truth = np.random.default_rng(truth_seed)
    # Random weights of the non-linear terms, scaled so the logit's standard
    # deviation is LOGIT_SD whatever truth_seed is (each term has unit variance
    # and they are uncorrelated under x ~ N(0, I)); a small random intercept.
    n_terms = min(p, 6) - 1
    weights = truth.normal(size=n_terms)
    coefficients = np.concatenate([[0.5 * truth.normal()],
                                   LOGIT_SD * weights / np.linalg.norm(weights)])

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        X = rng.normal(size=(n, p))
        p1 = _sigmoid(nonlinear_logit(X, coefficients, logit_scale))
        y = (rng.random(n) < p1).astype(np.int64)
        return X, y, _binary(p1)

    train_rng, test_rng = _streams(seed)
    X_train, y_train, p_train = draw(train_rng, n_train)
    X_test, y_test, p_test = draw(test_rng, n_test)
    _check_two_classes(y_train, seed, "nonlinear-logistic")
    meta = {
        "options": {"p": p, "n_train": n_train, "n_test": n_test, "logit_scale": logit_scale,
                    "seed": seed, "truth_seed": truth_seed},
        "coefficients": coefficients, "p_true_train": p_train, "standardized": False,
        "description": "x ~ N(0, I_p); y ~ Bernoulli(sigmoid(f(x))), f a fixed sum of "
                       "sin, interaction, square, abs and linear features",
    }
    return ClassificationData(X_train, y_train, X_test, y_test, n_classes=2,
                              p_true_test=p_test, class_names=("class 0", "class 1"),
                              name="nonlinear-logistic", meta=meta)
