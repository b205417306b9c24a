"""Classical hyperspectral target detectors, the reference rows beside the networks.

Each detector scores a pixel x from three statistics of the training pixels:
the target signature s (the mean spectrum of the training targets), and the
background mean μ and covariance Σ (of the training pixels of every other
class). Scores are float64 and higher means more target-like.

- ``matched_filter``: (s−μ)ᵀΣ⁻¹(x−μ) / (s−μ)ᵀΣ⁻¹(s−μ), an abundance
  estimate: 1 at x = s, 0 at x = μ;
- ``ace``: sign(m) · m² / ((s−μ)ᵀΣ⁻¹(s−μ) · (x−μ)ᵀΣ⁻¹(x−μ)) with
  m = (s−μ)ᵀΣ⁻¹(x−μ), in [−1, 1]: Kraut and Scharf's statistic (the
  squared whitened cosine) carrying the sign of the projection, the
  one-sided ACE. Targets add a positive abundance of s; a pixel pointing
  away from s (a shadow, a darker patch) is evidence against the target,
  but the two-sided statistic scores it as high as a target (on
  ``muufl-target``: detection AUROC 0.48 two-sided against 0.84 one-sided);
- ``cem``: sᵀR⁻¹x / sᵀR⁻¹s with R = Σ + μμᵀ, 1 at x = s;
- ``rx``: (x−μ)ᵀΣ⁻¹(x−μ), the squared Mahalanobis distance; it needs no
  targets and does not use s.

For background x ~ N(μ, Σ) and targets x = background + d (a fixed
spectral difference, so s = μ + d), the log-likelihood ratio is linear in
(s−μ)ᵀΣ⁻¹(x−μ), so the matched filter is
the Neyman–Pearson optimal detector there; ACE is its version for a
background of unknown scale (it is invariant to x − μ → c (x − μ), c > 0); CEM is
the matched filter on the uncentred correlation matrix (Harsanyi's
constrained energy minimisation); RX ignores the signature and scores how
unusual a pixel is.

**Shrinkage.** A scene gives a few thousand background pixels in 50–200
bands, so the sample covariance is noisy exactly in its smallest
eigenvalues, which Σ⁻¹ amplifies most. By default Σ is the Ledoit–Wolf
estimate (``sklearn.covariance.LedoitWolf``): the sample covariance S (1/n
normalisation) shrunk towards (tr S / D) I with the intensity ρ that
minimises the expected Frobenius error; it needs no tuning, is positive
definite whenever ρ > 0, and works with fewer pixels than bands. A float
``shrinkage`` ρ in [0, 1] applies the same target with a fixed intensity
(ρ = 0: the plain sample covariance). Everything is computed in float64
with a Cholesky factor and triangular solves, never an explicit inverse.

Examples
--------
>>> import uqzoo as uz
>>> data = uz.datasets.load("muufl-target", seed=0)
>>> det = uz.detectors.fit_detector("ace", data.X_train, data.y_train)
>>> scores = det.score(data.X_test)
>>> scores.shape, bool(-1 <= scores.min() and scores.max() <= 1)
((1296,), True)

References
----------
Manolakis, D. & Shaw, G. (2002). Detection algorithms for hyperspectral
imaging applications. IEEE Signal Processing Magazine 19(1), 29–43.
Kraut, S. & Scharf, L. L. (1999). The CFAR adaptive subspace detector is a
scale-invariant GLRT. IEEE Trans. Signal Processing 47(9), 2538–2541.
Reed, I. S. & Yu, X. (1990). Adaptive multiple-band CFAR detection of an
optical pattern with unknown spectral distribution. IEEE Trans. ASSP 38(10),
1760–1770.
Harsanyi, J. C. (1993). Detection and classification of subpixel spectral
signatures in hyperspectral image sequences. PhD thesis, Univ. of Maryland.
Ledoit, O. & Wolf, M. (2004). A well-conditioned estimator for
large-dimensional covariance matrices. J. Multivariate Analysis 88(2), 365–411.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable

import numpy as np
from scipy import linalg

from uqzoo._validation import _show, as_array, as_labels, check_choice, check_float
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["Detector", "ace", "cem", "fit_detector", "matched_filter", "names", "rx"]

SHRINKAGE_METHODS = ("ledoit-wolf",)
# Rows scored per block: (block, D) float64 temporaries stay a few MB for
# D ≤ 200 bands, whatever the scene's size.
_BLOCK_ROWS = 2**14


def _matched_filter(u: np.ndarray, z: np.ndarray) -> np.ndarray:
    return (z @ u) / (u @ u)


def _ace(u: np.ndarray, z: np.ndarray) -> np.ndarray:
    proj = z @ u
    energy = np.einsum("nd,nd->n", z, z)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = proj * np.abs(proj) / ((u @ u) * energy)
    # x = μ exactly: no direction, no evidence for the target.
    return np.where(energy > 0, out, 0.0)


def _rx(u: np.ndarray | None, z: np.ndarray) -> np.ndarray:
    return np.einsum("nd,nd->n", z, z)


# name -> (score of whitened pixels z given the whitened signature u,
#          uses the uncentred correlation matrix, needs training targets)
_DETECTORS: dict[str, tuple[Callable[..., np.ndarray], bool, bool]] = {
    "ace": (_ace, False, True),
    "cem": (_matched_filter, True, True),
    "matched_filter": (_matched_filter, False, True),
    "rx": (_rx, False, False),
}


def names() -> list[str]:
    """The detector names :func:`fit_detector` accepts."""
    return sorted(_DETECTORS)


@dataclasses.dataclass(frozen=True, eq=False)
class Detector:
    """A fitted classical detector: its statistics and a ``score`` method.

    Attributes
    ----------
    name : str
        One of :func:`names`.
    target_class : int
        The training label whose pixels define the signature.
    signature : float64 ndarray of shape (D,) or None
        Mean training-target spectrum s (None for ``rx`` fitted without targets).
    background_mean : float64 ndarray of shape (D,)
        μ, the mean of the training pixels of the other classes.
    background_covariance : float64 ndarray of shape (D, D)
        Σ after shrinkage.
    shrinkage : float
        The shrinkage intensity ρ applied (Ledoit–Wolf's estimate or the
        given value).
    shrinkage_method : str
        ``"ledoit-wolf"`` or ``"fixed"``.
    n_targets, n_background : int
        Training pixels behind the signature and behind μ and Σ.
    """

    name: str
    target_class: int
    signature: np.ndarray | None
    background_mean: np.ndarray
    background_covariance: np.ndarray
    shrinkage: float
    shrinkage_method: str
    n_targets: int
    n_background: int
    # lower Cholesky factor of Σ (of R = Σ + μμᵀ for CEM), and the signature
    # whitened by it: the score is a function of these two only
    _factor: np.ndarray = dataclasses.field(repr=False)
    _whitened_signature: np.ndarray | None = dataclasses.field(repr=False)

    @property
    def n_bands(self) -> int:
        return int(self.background_mean.shape[0])

    def score(self, X: object) -> np.ndarray:
        """Detection scores of pixels, higher meaning more target-like.

        Parameters
        ----------
        X : array of shape (N, D)
            Pixel spectra, preprocessed as the training pixels were.

        Returns
        -------
        float64 ndarray of shape (N,)
        """
        arr = _as_spectra(X, "X", n_bands=self.n_bands)
        fn, uncentred, _ = _DETECTORS[self.name]
        out = np.empty(arr.shape[0], dtype=np.float64)
        for start in range(0, arr.shape[0], _BLOCK_ROWS):
            block = arr[start:start + _BLOCK_ROWS].astype(np.float64)
            if not uncentred:
                block -= self.background_mean
            # z = L⁻¹ x for every row at once: solve L Z = Xᵀ.
            z = linalg.solve_triangular(self._factor, block.T, lower=True,
                                        check_finite=False).T
            out[start:start + _BLOCK_ROWS] = fn(self._whitened_signature, z)
        return out


def _as_spectra(X: object, name: str, n_bands: int | None = None,
                min_rows: int = 1) -> np.ndarray:
    """A finite real (N, D) array, not copied (the caller converts blocks to float64)."""
    arr = as_array(X, name, "a 2-D numeric array of spectra")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidTypeError(f"{name} must have a real numeric dtype, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise InvalidInputError(f"{name} must have shape (N, n_bands), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise InvalidInputError(
            f"{name} must hold at least {min_rows} pixel(s), got shape {arr.shape}")
    if n_bands is not None and arr.shape[1] != n_bands:
        raise InvalidInputError(
            f"{name} must have {n_bands} bands (columns), as the training pixels had; "
            f"got shape {arr.shape}")
    finite = np.isfinite(arr)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        raise InvalidInputError(
            f"{name} must be finite; found {arr[row, col]} at row {row}, column {col}")
    return arr


def _check_shrinkage(shrinkage: object) -> str | float:
    if isinstance(shrinkage, str):
        return check_choice(shrinkage, "shrinkage", SHRINKAGE_METHODS)
    if isinstance(shrinkage, numbers.Real) and not isinstance(shrinkage, bool):
        return check_float(shrinkage, "shrinkage", low=0.0, high=1.0)
    raise InvalidTypeError(
        f"shrinkage must be 'ledoit-wolf' or a number in [0, 1], got {_show(shrinkage)}")


def _background_covariance(bg: np.ndarray, shrinkage: str | float
                           ) -> tuple[np.ndarray, float, str]:
    if shrinkage == "ledoit-wolf":
        from sklearn.covariance import LedoitWolf
        lw = LedoitWolf(store_precision=False).fit(bg)
        return np.asarray(lw.covariance_, dtype=np.float64), float(lw.shrinkage_), "ledoit-wolf"
    rho = float(shrinkage)
    centred = bg - bg.mean(axis=0)
    sample = centred.T @ centred / bg.shape[0]          # 1/n, as Ledoit–Wolf's S
    mu = np.trace(sample) / sample.shape[0]
    cov = (1 - rho) * sample + rho * mu * np.eye(sample.shape[0])
    return cov, rho, "fixed"


def fit_detector(name: str, X_train: object, y_train: object, target_class: int = 1, *,
                 shrinkage: str | float = "ledoit-wolf") -> Detector:
    """Fit a classical detector's statistics on labelled training pixels.

    Parameters
    ----------
    name : {"ace", "cem", "matched_filter", "rx"}
    X_train : array of shape (N, D)
        Training pixel spectra.
    y_train : array of shape (N,)
        Integer training labels; ``target_class`` marks the targets, every
        other label is background.
    target_class : int
        The label of the target pixels (1 for uqzoo's binary scenes).
    shrinkage : "ledoit-wolf" or float in [0, 1]
        Covariance shrinkage towards (tr S / D) I (see the module notes).

    Returns
    -------
    Detector
        Call ``.score(X)`` for (N,) scores.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 4)); y = (np.arange(500) < 50).astype(int)
    >>> X[y == 1] += [2.0, 0.0, 0.0, 0.0]
    >>> det = uz.detectors.fit_detector("cem", X, y)
    >>> round(float(det.score(det.signature[None, :])[0]), 12)
    1.0

    References
    ----------
    Manolakis, D. & Shaw, G. (2002). IEEE Signal Processing Magazine 19(1), 29–43.
    """
    name = check_choice(name, "name", names())
    shrinkage = _check_shrinkage(shrinkage)
    X = _as_spectra(X_train, "X_train")
    y = as_labels(y_train, "y_train", n_rows=X.shape[0])
    if isinstance(target_class, (bool, np.bool_)) or not isinstance(target_class,
                                                                    numbers.Integral):
        raise InvalidTypeError(
            f"target_class must be an integer label, got {_show(target_class)}")
    target_class = int(target_class)
    _, uncentred, needs_targets = _DETECTORS[name]
    is_target = y == target_class
    n_targets = int(is_target.sum())
    n_background = X.shape[0] - n_targets
    present = sorted(int(v) for v in np.unique(y))
    if needs_targets and n_targets == 0:
        raise InvalidInputError(
            f"target_class={target_class} labels no training pixel (labels present: "
            f"{present}); {name} needs target pixels for its signature")
    if n_background < 2:
        raise InvalidInputError(
            f"{name} needs at least 2 background training pixels (labels other than "
            f"target_class={target_class}) for a covariance, got {n_background}")
    bg = X[~is_target].astype(np.float64)
    mean = bg.mean(axis=0)
    cov, rho, method = _background_covariance(bg, shrinkage)
    signature = X[is_target].astype(np.float64).mean(axis=0) if n_targets else None
    matrix = cov + np.outer(mean, mean) if uncentred else cov
    try:
        factor = linalg.cholesky(matrix, lower=True)
    except linalg.LinAlgError as exc:
        raise InvalidInputError(
            f"the background covariance of the {n_background} training pixels is singular "
            f"with shrinkage={shrinkage!r} (fewer pixels than bands, constant or collinear "
            f"bands); use shrinkage='ledoit-wolf' or a value in (0, 1]") from exc
    whitened = None
    if signature is not None:
        direction = signature if uncentred else signature - mean
        whitened = linalg.solve_triangular(factor, direction, lower=True)
        if needs_targets and not np.any(whitened):
            raise InvalidInputError(
                f"the target signature equals the background mean: {name} cannot tell "
                f"target_class={target_class} from the background")
    return Detector(name=name, target_class=target_class, signature=signature,
                    background_mean=mean, background_covariance=cov, shrinkage=rho,
                    shrinkage_method=method, n_targets=n_targets, n_background=n_background,
                    _factor=factor, _whitened_signature=whitened)


def _score(name: str, X_train: object, y_train: object, X_test: object, target_class: int,
           shrinkage: str | float) -> np.ndarray:
    return fit_detector(name, X_train, y_train, target_class,
                        shrinkage=shrinkage).score(X_test)


def matched_filter(X_train: object, y_train: object, X_test: object, target_class: int = 1,
                   *, shrinkage: str | float = "ledoit-wolf") -> np.ndarray:
    """Matched-filter scores (s−μ)ᵀΣ⁻¹(x−μ) / (s−μ)ᵀΣ⁻¹(s−μ) of ``X_test``, shape (N,).

    An estimate of the target abundance: 0 on the background mean, 1 on the
    signature. Arguments as :func:`fit_detector`.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(300, 3)); y = np.arange(300) % 5 == 0
    >>> X[y] += 1.0
    >>> uz.detectors.matched_filter(X, y.astype(int), X[:2]).shape
    (2,)

    References
    ----------
    Manolakis, D. & Shaw, G. (2002). IEEE Signal Processing Magazine 19(1), 29–43.
    """
    return _score("matched_filter", X_train, y_train, X_test, target_class, shrinkage)


def ace(X_train: object, y_train: object, X_test: object, target_class: int = 1, *,
        shrinkage: str | float = "ledoit-wolf") -> np.ndarray:
    """One-sided adaptive coherence estimator scores of ``X_test`` in [−1, 1], shape (N,).

    The squared cosine between (x − μ) and (s − μ) after whitening by Σ
    (Kraut and Scharf's statistic), with the sign of their inner product, so
    that pixels pointing away from the signature score low (see the module
    notes). Unchanged when x − μ is scaled by any c > 0. Arguments as
    :func:`fit_detector`.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(300, 3)); y = np.arange(300) % 5 == 0
    >>> X[y] += 1.0
    >>> s = uz.detectors.ace(X, y.astype(int), X[:3])
    >>> bool(((-1 <= s) & (s <= 1)).all())
    True

    References
    ----------
    Kraut, S. & Scharf, L. L. (1999). IEEE Trans. Signal Processing 47(9), 2538–2541.
    """
    return _score("ace", X_train, y_train, X_test, target_class, shrinkage)


def cem(X_train: object, y_train: object, X_test: object, target_class: int = 1, *,
        shrinkage: str | float = "ledoit-wolf") -> np.ndarray:
    """Constrained-energy-minimisation scores sᵀR⁻¹x / sᵀR⁻¹s of ``X_test``, shape (N,).

    R = Σ + μμᵀ is the background's uncentred correlation matrix (with Σ's
    shrinkage); the filter passes the signature with gain 1 and minimises the
    output energy on the background. Arguments as :func:`fit_detector`.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(300, 3)) + 5.0; y = np.arange(300) % 5 == 0
    >>> X[y] += 1.0
    >>> uz.detectors.cem(X, y.astype(int), X[:2]).dtype
    dtype('float64')

    References
    ----------
    Harsanyi, J. C. (1993). PhD thesis, Univ. of Maryland.
    """
    return _score("cem", X_train, y_train, X_test, target_class, shrinkage)


def rx(X_train: object, y_train: object, X_test: object, target_class: int = 1, *,
       shrinkage: str | float = "ledoit-wolf") -> np.ndarray:
    """RX anomaly scores: squared Mahalanobis distance of ``X_test`` from the background.

    (x − μ)ᵀΣ⁻¹(x − μ), shape (N,); the signature is not used, and
    ``y_train`` only says which pixels are background. Arguments as
    :func:`fit_detector`.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> X = np.random.default_rng(0).normal(size=(300, 3)); y = np.zeros(300, int)
    >>> float(uz.detectors.rx(X, y, X.mean(axis=0, keepdims=True))[0])
    0.0

    References
    ----------
    Reed, I. S. & Yu, X. (1990). IEEE Trans. ASSP 38(10), 1760–1770.
    """
    return _score("rx", X_train, y_train, X_test, target_class, shrinkage)
