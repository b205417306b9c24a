"""``hsi-sim``: a Megascene-like synthetic hyperspectral scene with an exact P(y = 1 | x).

The generative model
--------------------
Every pixel has a clutter component c (vegetation, soil or man-made), a
physical target abundance a and an occlusion fraction o, and its spectrum is

    x = a_vis · t + (1 − a_vis) · b + σ ε,    a_vis = a · (1 − o),
    b ~ N(μ_c, Σ_c),  ε ~ N(0, I_B),

independently across pixels given (a, o, c). t is one green man-made target
spectrum per scene (the library's ``green_target`` set), μ_c and Σ_c the mean
and covariance of the real USGS library spectra of category c. The label is
y = 1 when a ≥ a_min.

- c comes from a spatial layout: Voronoi patches, each patch one component.
- a comes from target discs of random radius, rasterised on a k × k
  sub-pixel grid (k = ``SUPERSAMPLE``): a pixel's abundance is the fraction
  of its sub-pixel centres inside any disc, so it takes exactly the values
  j / k², sub-pixel discs and disc edges included.
- o is a per-disc occlusion fraction on the grid {0, 0.1, ..., max_occlusion}
  (a pixel touched by several discs takes the largest o).

The truth
---------
Given (a, o, c), x is Gaussian with mean a_vis t + (1 − a_vis) μ_c and
covariance (1 − a_vis)² Σ_c + σ² I. ``p_true_test`` is

    P(y = 1 | x) = Σ_{a ≥ a_min, o, c} π(a, o, c) N(x; ·) / Σ_{a, o, c} π(a, o, c) N(x; ·)

with π the joint frequency of (a, o, c) over the test half of the scene.
Because every pixel's (a, o) lie exactly on the grid, this is the exact Bayes
posterior of a pixel drawn uniformly from the test half: the spatial layout
enters only through those frequencies (the truth does not look at a pixel's
neighbours; that is the standard per-pixel choice). With Σ_c = V Λ Vᵀ, each
Gaussian is (1 − a_vis)² Λ + σ² diagonal in the basis V, so each component is
rotated once and every (a_vis, c) costs two matrix products over pixels.

Covariances: 119–265 spectra per category in 211 bands give rank-deficient,
ill-conditioned sample covariances, so Σ_c = (1 − λ) S_c + λ diag(S_c) with
λ = ``SHRINKAGE`` (shrinkage toward the diagonal keeps every per-band variance
and makes Σ_c positive definite); the sensor noise σ² I then bounds every
direction of the model covariance away from zero.

Defaults
--------
One disc per 60 pixels, radii uniform on 0.3–3 px, a_min = 0.5, 30 % of discs
occluded with o up to 0.8, σ = 0.01, the "Plastic Tarp GDS339 Green" target,
211 bands. They were tuned so that the scene is genuinely uncertain in the
range a comparison needs (4–12 % of test pixels with 0.05 < p_true < 0.95):
measured 6–10 % over seeds 0–14 at size 100, 7.7–9.1 % over seeds 0–5 at
size 200, with 14–16 % target pixels. Uncertainty comes from near-threshold
sub-pixel abundances and above all from occlusion, which makes a disc with
a ≥ a_min look exactly like a smaller unoccluded one (same a_vis).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np

from uqzoo._progress import progress_bar as progress
from uqzoo._validation import check_choice, check_float, check_int, check_seed
from uqzoo.datasets._base import ClassificationData
from uqzoo.datasets._standardize import standardize as _standardize
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["DOMAIN_SHIFTS", "SceneModel", "library_target_names", "load_hsi_sim",
           "scene_log_likelihoods", "shifted_log_likelihoods", "shifted_p_true"]

LIBRARY_FILE = "spectral_library_usgs_10nm.npz"
COMPONENTS = ("vegetation", "soil", "manmade")
# Share of patches of each component: a vegetated scene with bare soil and
# some built surfaces, the mix of the Megascene-like study scenes.
COMPONENT_WEIGHTS = (0.5, 0.3, 0.2)
# 8 × 8 sub-pixel samples: abundances on a 1/64 grid, fine enough that a
# disc's edge looks continuous and coarse enough to keep the number of
# distinct (a, o) values, hence the cost of the truth, small.
SUPERSAMPLE = 8
OCCLUSION_STEP = 0.1
# Shrinkage toward the diagonal of the library sample covariances (see module
# docstring); 0.1 makes the smallest eigenvalue a fair fraction of the band
# variances while keeping the band-to-band structure that makes clutter
# realistic.
SHRINKAGE = 0.1
# Pixels per chunk in the truth: bounds memory to chunk × distinct a_vis × C.
TRUTH_CHUNK = 4096
DEFAULT_TARGET = "Plastic Tarp GDS339 Green"
# The held-out domains of ``domain_shift``: the test half seen under another
# illumination, x' = gain · x + offset (a dimmer sun or thin cloud scales the
# reflectance; haze adds path radiance, here a flat offset in reflectance
# units, against spectra of about 0.05–0.5), over a different mix of clutter
# components. "weak": 10 % dimmer, a slight haze, a little more built-up land;
# "strong": 30 % dimmer, a heavy haze, a built-up area where man-made clutter,
# the class the target belongs to, dominates.
DOMAIN_SHIFTS: dict[str, dict[str, Any]] = {
    "weak": {"gain": 0.9, "offset": 0.01, "component_weights": (0.4, 0.3, 0.3)},
    "strong": {"gain": 0.7, "offset": 0.03, "component_weights": (0.2, 0.2, 0.6)},
}


def _library() -> np.lib.npyio.NpzFile:
    path = resources.files("uqzoo.datasets") / "data" / LIBRARY_FILE
    return np.load(str(path))


def library_target_names() -> list[str]:
    """Names of the green target spectra ``hsi-sim`` can implant."""
    with _library() as lib:
        return [str(n) for n in lib["name"][lib["green_target"]]]


class SceneModel:
    """The clutter components and target of one scene, in ``n_bands`` bands.

    Attributes
    ----------
    means : float64 (C, B)
        μ_c.
    eigvals : float64 (C, B)
        Eigenvalues Λ_c of the shrunk covariances Σ_c.
    eigvecs : float64 (C, B, B)
        Eigenvectors V_c (columns).
    target : float64 (B,)
        t.
    noise : float
        σ.
    wavelengths_nm : float32 (B,)
    """

    def __init__(self, target: str, noise: float, band_idx: np.ndarray) -> None:
        with _library() as lib:
            spectra = lib["spectra_filled"].astype(np.float64)[:, band_idx]
            category = lib["category"]
            green = lib["green_target"]
            names = lib["name"]
            self.wavelengths_nm = lib["wavelengths_nm"][band_idx]
        means, eigvals, eigvecs = [], [], []
        for comp in COMPONENTS:
            # The green targets are man-made too; keep them out of the clutter
            # so the target is not part of its own background model.
            members = spectra[(category == comp) & ~green]
            cov = np.cov(members, rowvar=False)
            cov = (1 - SHRINKAGE) * cov + SHRINKAGE * np.diag(np.diag(cov))
            lam, vec = np.linalg.eigh(cov)
            means.append(members.mean(axis=0))
            eigvals.append(np.maximum(lam, 0.0))
            eigvecs.append(vec)
        self.means = np.array(means)
        self.eigvals = np.array(eigvals)
        self.eigvecs = np.array(eigvecs)
        self.target = spectra[np.flatnonzero(names == target)[0]]
        self.noise = noise

    def sample(self, visible: np.ndarray, component: np.ndarray,
               rng: np.random.Generator) -> np.ndarray:
        """Draw spectra (N, B) for per-pixel a_vis (N,) and component (N,)."""
        n, n_bands = visible.shape[0], self.target.shape[0]
        X = np.empty((n, n_bands))
        xi = rng.normal(size=(n, n_bands))
        eps = rng.normal(size=(n, n_bands))
        for c in range(len(COMPONENTS)):
            rows = component == c
            b = self.means[c] + (xi[rows] * np.sqrt(self.eigvals[c])) @ self.eigvecs[c].T
            v = visible[rows, None]
            X[rows] = v * self.target + (1 - v) * b + self.noise * eps[rows]
        return X


def scene_log_likelihoods(model: SceneModel, X: np.ndarray,
                          visible_values: np.ndarray) -> np.ndarray:
    """log N(x; a_vis t + (1 − a_vis) μ_c, (1 − a_vis)² Σ_c + σ² I).

    Parameters
    ----------
    model : SceneModel
    X : array (N, B)
        Raw (unstandardised) spectra.
    visible_values : array (V,)
        The distinct a_vis values.

    Returns
    -------
    float64 array (N, V, C)
    """
    X = np.asarray(X, dtype=np.float64)
    n, n_bands = X.shape
    v = np.asarray(visible_values, dtype=np.float64)
    out = np.empty((n, v.size, len(COMPONENTS)))
    for c in range(len(COMPONENTS)):
        vec = model.eigvecs[c]
        d = X @ vec - model.means[c] @ vec                       # (N, B)
        e = model.target @ vec - model.means[c] @ vec            # (B,)
        var = (1 - v)[:, None] ** 2 * model.eigvals[c] + model.noise ** 2   # (V, B)
        w = 1.0 / var
        quad = (d * d) @ w.T - 2 * v * (d @ (w * e).T) + v ** 2 * (w @ (e * e))
        log_det = np.log(var).sum(axis=1)
        out[:, :, c] = -0.5 * (quad + log_det + n_bands * np.log(2 * np.pi))
    return out


def shifted_log_likelihoods(model: SceneModel, X: np.ndarray, visible_values: np.ndarray,
                            matrix: np.ndarray, offset: np.ndarray,
                            noise_var: np.ndarray) -> np.ndarray:
    """log-likelihoods of x' = A x + b + η, η ~ N(0, diag(noise_var)), x from the scene model.

    x' given (a_vis, c) is Gaussian with mean A(a_vis t + (1 − a_vis) μ_c) + b
    and covariance (1 − a_vis)² P_c + Q, P_c = A Σ_c Aᵀ, Q = σ² A Aᵀ +
    diag(noise_var). With Q = L Lᵀ and L⁻¹ P_c L⁻ᵀ = U Λ̃ Uᵀ, the covariance is
    L U ((1 − a_vis)² Λ̃ + I) Uᵀ Lᵀ: diagonal in one basis per component for
    every a_vis, as in :func:`scene_log_likelihoods`, which is the case A = I,
    b = 0, noise_var = 0.

    Parameters
    ----------
    model : SceneModel
    X : array (N, D')
        Transformed raw spectra x'.
    visible_values : array (V,)
    matrix : array (D', B)
        A; it must have full row rank unless ``noise_var`` > 0 (Q positive definite).
    offset : array (D',)
        b.
    noise_var : array (D',)
        Variance of the extra noise η per output feature.

    Returns
    -------
    float64 array (N, V, C)
    """
    X = np.asarray(X, dtype=np.float64)
    A = np.asarray(matrix, dtype=np.float64)
    b = np.asarray(offset, dtype=np.float64)
    n_out = A.shape[0]
    v = np.asarray(visible_values, dtype=np.float64)
    Q = model.noise ** 2 * (A @ A.T) + np.diag(np.asarray(noise_var, dtype=np.float64))
    chol = np.linalg.cholesky(Q)
    whiten = np.linalg.solve(chol, np.eye(n_out))                     # L⁻¹
    log_det_q = 2.0 * np.log(np.diag(chol)).sum()
    out = np.empty((X.shape[0], v.size, len(COMPONENTS)))
    for c in range(len(COMPONENTS)):
        root = whiten @ A @ (model.eigvecs[c] * np.sqrt(model.eigvals[c]))   # L⁻¹ A Σ_c^½
        lam, vec = np.linalg.eigh(root @ root.T)
        lam = np.maximum(lam, 0.0)
        basis = vec.T @ whiten                                        # Uᵀ L⁻¹
        d = (X - b - A @ model.means[c]) @ basis.T                    # (N, D')
        e = basis @ (A @ (model.target - model.means[c]))             # (D',)
        var = (1 - v)[:, None] ** 2 * lam + 1.0                       # (V, D')
        w = 1.0 / var
        quad = (d * d) @ w.T - 2 * v * (d @ (w * e).T) + v ** 2 * (w @ (e * e))
        log_det = np.log(var).sum(axis=1) + log_det_q
        out[:, :, c] = -0.5 * (quad + log_det + n_out * np.log(2 * np.pi))
    return out


def shifted_p_true(data: ClassificationData, X: np.ndarray, matrix: np.ndarray,
                   offset: np.ndarray, noise_var: np.ndarray) -> np.ndarray:
    """Exact P(y = 1 | x') of an ``hsi-sim`` test pixel seen through x' = A x + b + η.

    The generator's own model (its options and (a_vis, c, y) prior, from
    ``data.meta``) with the sensor change applied to the spectrum before the
    Bayes posterior is taken; :mod:`uqzoo.perturb` uses it for the
    perturbation families that lose information (extra noise, dead bands,
    missing features). Arguments as :func:`shifted_log_likelihoods`, ``X`` in
    raw (unstandardised) reflectance.

    Returns
    -------
    float64 array (N,)
    """
    options = data.meta["options"]
    band_idx = np.unique(np.round(np.linspace(0, 210, options["n_bands"])).astype(np.int64))
    model = SceneModel(options["target"], options["noise"], band_idx)
    if not np.array_equal(model.wavelengths_nm, data.meta["wavelengths_nm"]):
        raise InvalidInputError("data.meta does not describe an hsi-sim scene's bands")
    prior = data.meta["prior"]
    values = prior["visible_values"]
    domain = data.meta.get("domain_shift")
    if domain is not None:
        # The test pixels are already x_d = g x + c·1; a change A x_d + b of them is
        # A g x + (A c·1 + b) of the scene's own spectra.
        matrix = np.asarray(matrix, dtype=np.float64)
        offset = matrix @ np.full(matrix.shape[1], domain["offset"]) + np.asarray(offset)
        matrix = domain["gain"] * matrix
    return _posterior(lambda rows: shifted_log_likelihoods(model, rows, values, matrix, offset,
                                                           noise_var),
                      X, prior["counts"], progress_bar=False)


def _truth(model: SceneModel, X: np.ndarray, visible: np.ndarray, component: np.ndarray,
           label: np.ndarray, progress_bar: bool, gain: float = 1.0, offset: float = 0.0
           ) -> tuple[np.ndarray, dict]:
    """P(y = 1 | x) with the joint frequency of (a_vis, c, y) in the same pixels as prior.

    Only a_vis, c and y enter: the likelihood depends on (a, o) through
    a_vis = a(1 − o) alone, so π(a_vis, c, y) = Σ over the (a, o) that give
    a_vis and whose a is on the side of a_min that gives y. With ``gain`` or
    ``offset``, ``X`` holds x' = gain · x + offset of the scene's spectra x.
    """
    values, v_index = np.unique(visible, return_inverse=True)
    n_comp = len(COMPONENTS)
    counts = np.zeros((values.size, n_comp, 2))
    np.add.at(counts, (v_index, component, label), 1.0)
    if gain == 1.0 and offset == 0.0:
        def loglik(rows: np.ndarray) -> np.ndarray:
            return scene_log_likelihoods(model, rows, values)
    else:
        n_bands = model.target.shape[0]

        def loglik(rows: np.ndarray) -> np.ndarray:
            return shifted_log_likelihoods(model, rows, values, gain * np.eye(n_bands),
                                           np.full(n_bands, offset), np.zeros(n_bands))
    p1 = _posterior(loglik, X, counts, progress_bar)
    prior = {"visible_values": values, "counts": counts}
    return p1, prior


def _posterior(log_likelihoods: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
               counts: np.ndarray, progress_bar: bool) -> np.ndarray:
    """P(y = 1 | x) from per-(a_vis, c) log-likelihoods (n, V, C) and the (V, C, 2) counts."""
    with np.errstate(divide="ignore"):
        log_prior = np.log(counts / counts.sum())                # (V, C, 2)
    p1 = np.empty(X.shape[0])
    starts = range(0, X.shape[0], TRUTH_CHUNK)
    # delay: the bar appears only when the truth takes longer than a second.
    for start in progress(starts, desc="hsi-sim p_true", unit="chunk", enabled=progress_bar,
                          delay=1.0):
        stop = start + TRUTH_CHUNK
        loglik = log_likelihoods(X[start:stop])                         # (n, V, C)
        joint = loglik[:, :, :, None] + log_prior[None]                 # (n, V, C, 2)
        flat = joint.reshape(joint.shape[0], -1, 2)
        top = flat.max(axis=(1, 2), keepdims=True)
        with np.errstate(divide="ignore"):  # a class absent from the prior: log 0
            log_y = np.log(np.exp(flat - top).sum(axis=1)) + top[:, 0, :]   # (n, 2)
        p1[start:stop] = np.exp(log_y[:, 1] - np.logaddexp(log_y[:, 0], log_y[:, 1]))
    return p1


def _layout(size: int, n_targets: int, radius: tuple[float, float],
            occluded_fraction: float, max_occlusion: float, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Component map, covered sub-pixel counts (a = hits / k²), occlusion map and Voronoi
    patch of every pixel, each (size, size)."""
    # Voronoi patches about 15 pixels across.
    n_patches = max(len(COMPONENTS), round(size * size / 225))
    seeds = rng.uniform(0, size, size=(n_patches, 2))
    seed_component = rng.choice(len(COMPONENTS), size=n_patches, p=COMPONENT_WEIGHTS)
    rows, cols = np.mgrid[0:size, 0:size] + 0.5
    nearest = np.empty((size, size), dtype=np.int64)
    best = np.full((size, size), np.inf)
    for j, (r0, c0) in enumerate(seeds):
        dist = (rows - r0) ** 2 + (cols - c0) ** 2
        closer = dist < best
        best[closer] = dist[closer]
        nearest[closer] = j
    component = seed_component[nearest]

    k = SUPERSAMPLE
    covered = np.zeros((size * k, size * k), dtype=bool)
    occlusion = np.zeros((size, size))
    centres = rng.uniform(0, size, size=(n_targets, 2))
    radii = rng.uniform(radius[0], radius[1], size=n_targets)
    n_levels = round(max_occlusion / OCCLUSION_STEP)
    is_occluded = rng.random(n_targets) < occluded_fraction
    levels = rng.integers(1, n_levels + 1, size=n_targets) if n_levels > 0 else \
        np.zeros(n_targets, dtype=np.int64)
    disc_occlusion = np.where(is_occluded, levels * OCCLUSION_STEP, 0.0)
    for (r0, c0), rad, occ in zip(centres, radii, disc_occlusion, strict=True):
        lo_r, hi_r = max(0, int((r0 - rad) * k)), min(size * k, int(np.ceil((r0 + rad) * k)) + 1)
        lo_c, hi_c = max(0, int((c0 - rad) * k)), min(size * k, int(np.ceil((c0 + rad) * k)) + 1)
        if lo_r >= hi_r or lo_c >= hi_c:
            continue
        sub_r = (np.arange(lo_r, hi_r) + 0.5) / k
        sub_c = (np.arange(lo_c, hi_c) + 0.5) / k
        inside = (sub_r[:, None] - r0) ** 2 + (sub_c[None, :] - c0) ** 2 <= rad * rad
        if not inside.any():
            continue
        covered[lo_r:hi_r, lo_c:hi_c] |= inside
        # Occlusion belongs to the pixels the disc touches.
        pr, pc = np.nonzero(inside)
        pix_r, pix_c = (pr + lo_r) // k, (pc + lo_c) // k
        occlusion[pix_r, pix_c] = np.maximum(occlusion[pix_r, pix_c], occ)
    hits = covered.reshape(size, k, size, k).sum(axis=(1, 3))
    occlusion = np.where(hits > 0, occlusion, 0.0)
    return component, hits, occlusion, nearest


def load_hsi_sim(*, size: int = 100, n_targets: int | None = None,
                 radius: tuple[float, float] = (0.3, 3.0), a_min: float = 0.5,
                 occluded_fraction: float = 0.3, max_occlusion: float = 0.8,
                 noise: float = 0.01, target: str = DEFAULT_TARGET,
                 n_bands: int = 211, standardize: bool = True, seed: int = 0,
                 progress_bar: bool = True, domain_shift: str = "none") -> ClassificationData:
    """A synthetic hyperspectral target-detection scene with exact ``p_true_test``.

    See the module docstring for the model. The left half of the scene
    (columns < size // 2) trains, the right half tests. With
    ``domain_shift``, the right half is a held-out domain: its patches draw
    their clutter component from another mix and its spectra are seen under
    another illumination, x' = g x + c (:data:`DOMAIN_SHIFTS`). The truth
    stays exact: x' given (a_vis, c) is Gaussian with mean g(a_vis t +
    (1 − a_vis) μ_c) + c and covariance g²((1 − a_vis)² Σ_c + σ² I)
    (:func:`shifted_log_likelihoods` with A = g I), and the prior is the
    (a_vis, c, y) frequency of the shifted test half.

    Parameters
    ----------
    size : int
        The scene is ``size`` × ``size`` pixels (>= 8).
    n_targets : int or None
        Number of target discs; ``None`` gives one per 60 pixels.
    radius : (float, float)
        Disc radii are uniform on this range, in pixels.
    a_min : float in (0, 1]
        y = 1 when the physical abundance a >= a_min.
    occluded_fraction : float in [0, 1]
        Fraction of discs partly under foliage.
    max_occlusion : float in [0, 0.9]
        An occluded disc's o is uniform on {0.1, 0.2, ..., max_occlusion}.
    noise : float
        Sensor noise standard deviation σ, in reflectance units.
    target : str
        Name of the green target spectrum (see :func:`library_target_names`).
    n_bands : int
        Number of bands, evenly subsampled from the 211 of 400–2500 nm
        (fewer bands make tests fast; the study uses 211).
    standardize : bool
        Standardise each band with training statistics (``meta["mean"]``,
        ``meta["scale"]``). An affine map per band leaves P(y | x) unchanged.
    seed : int
        Seed of the layout and the spectra.
    progress_bar : bool
        Show a tqdm bar while the truth is computed (when it takes over 1 s).
    domain_shift : {"none", "weak", "strong"}
        Make the test half a held-out domain (see above); the training half
        is the same as without it for the same seed.

    Returns
    -------
    ClassificationData
        Binary (``"background"``, ``"target"``), ``X_*`` of shape (N, n_bands),
        ``p_true_test`` (N_test, 2), ``coords_train``/``coords_test`` the (row,
        column) of every pixel, and in ``meta``: ``image_shape``,
        ``abundance``, ``occlusion``, ``visible_abundance``, ``component``
        maps (size, size), ``wavelengths_nm``, ``prior`` (the (a_vis, c, y)
        counts used by the truth), ``uncertain_fraction`` (share of test
        pixels with 0.05 < p_true < 0.95) and ``timing_s``; with a domain
        shift also ``domain_shift`` (its name, ``gain``, ``offset`` and test
        ``component_weights``).

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("hsi-sim", size=32, n_bands=20, seed=0)
    >>> data.X_test.shape, data.p_true_test.shape
    ((512, 20), (512, 2))
    >>> shifted = uz.datasets.load("hsi-sim", size=32, n_bands=20, seed=0, domain_shift="strong")
    >>> bool((shifted.X_train == data.X_train).all()), shifted.meta["domain_shift"]["gain"]
    (True, 0.7)

    References
    ----------
    Kokaly, R. F. et al. (2017). USGS Spectral Library Version 7. USGS Data
    Series 1035. doi:10.3133/ds1035.
    """
    size = check_int(size, "size", minimum=8, maximum=2048)  # 2048² px × 211 bands ≈ 3.5 GiB
    if n_targets is None:
        n_targets = max(1, round(size * size / 60))
    n_targets = check_int(n_targets, "n_targets", minimum=0)
    if isinstance(radius, (str, bytes)) or not hasattr(radius, "__len__") or len(radius) != 2:
        raise InvalidTypeError(f"radius must be a pair (min, max) of pixel radii, got {radius!r}")
    r_lo = check_float(radius[0], "radius[0]", low=0.0, low_open=True)
    r_hi = check_float(radius[1], "radius[1]", low=r_lo, high=size / 2)
    a_min = check_float(a_min, "a_min", low=0.0, high=1.0, low_open=True)
    occluded_fraction = check_float(occluded_fraction, "occluded_fraction", low=0.0, high=1.0)
    max_occlusion = check_float(max_occlusion, "max_occlusion", low=0.0, high=0.9)
    noise = check_float(noise, "noise", low=0.0, low_open=True)
    names = library_target_names()
    target = check_choice(target, "target", names)
    n_bands = check_int(n_bands, "n_bands", minimum=1, maximum=211)
    if not isinstance(standardize, (bool, np.bool_)):
        raise InvalidTypeError(f"standardize must be True or False, got {standardize!r}")
    seed = check_seed(seed)
    if not isinstance(progress_bar, (bool, np.bool_)):
        raise InvalidTypeError(f"progress_bar must be True or False, got {progress_bar!r}")
    domain_shift = check_choice(domain_shift, "domain_shift", ("none", *DOMAIN_SHIFTS))
    domain = None if domain_shift == "none" else {"name": domain_shift,
                                                  **DOMAIN_SHIFTS[domain_shift]}

    t0 = time.perf_counter()
    band_idx = np.unique(np.round(np.linspace(0, 210, n_bands)).astype(np.int64))
    model = SceneModel(target, noise, band_idx)
    # A third stream for the shifted domain: the first two, hence the training half,
    # are those of the scene without it (spawned children depend on their index only).
    layout_rng, spectra_rng, domain_rng = (np.random.default_rng(s) for s in
                                           np.random.SeedSequence(seed).spawn(3))
    component, hits, occlusion, patch = _layout(size, n_targets, (r_lo, r_hi),
                                                occluded_fraction, max_occlusion, layout_rng)
    if domain is not None:
        redrawn = domain_rng.choice(len(COMPONENTS), size=int(patch.max()) + 1,
                                    p=domain["component_weights"])
        component = component.copy()
        component[:, size // 2:] = redrawn[patch[:, size // 2:]]
    abundance = hits / SUPERSAMPLE ** 2
    # a ≥ a_min compared on the integer grid so that no rounding decides a label.
    label_map = (hits >= a_min * SUPERSAMPLE ** 2 - 1e-9).astype(np.int64)
    visible = abundance * (1 - occlusion)
    # Round a_vis to 12 decimals so products that are equal in exact
    # arithmetic are one grid value, in the sample and in the prior alike.
    visible = np.round(visible, 12)

    rows, cols = np.mgrid[0:size, 0:size]
    coords = np.stack([rows.ravel(), cols.ravel()], axis=1)
    flat_v, flat_c, flat_y = visible.ravel(), component.ravel(), label_map.ravel()
    X = model.sample(flat_v, flat_c, spectra_rng)
    t_sample = time.perf_counter() - t0

    train = coords[:, 1] < size // 2
    test = ~train
    if len(np.unique(flat_y[train])) < 2:
        raise InvalidInputError(
            f"the training half of this scene has no pixel with a >= a_min={a_min}; "
            f"use more targets (n_targets={n_targets}), larger radius={radius} "
            "or a smaller a_min"
        )
    if domain is None:
        p1, prior = _truth(model, X[test], flat_v[test], flat_c[test], flat_y[test],
                           progress_bar)
    else:
        X[test] = domain["gain"] * X[test] + domain["offset"]
        p1, prior = _truth(model, X[test], flat_v[test], flat_c[test], flat_y[test],
                           progress_bar, gain=domain["gain"], offset=domain["offset"])
    t_truth = time.perf_counter() - t0 - t_sample

    X_train, X_test = X[train], X[test]
    meta = {
        "options": {"size": size, "n_targets": n_targets, "radius": (r_lo, r_hi),
                    "a_min": a_min, "occluded_fraction": occluded_fraction,
                    "max_occlusion": max_occlusion, "noise": noise, "target": target,
                    "n_bands": int(band_idx.size), "standardize": bool(standardize),
                    "seed": seed},
        "image_shape": (size, size),
        "train_region": "columns < size // 2",
        "component": component, "component_names": COMPONENTS,
        "abundance": abundance, "occlusion": occlusion, "visible_abundance": visible,
        "wavelengths_nm": model.wavelengths_nm,
        "prior": prior,
        "uncertain_fraction": float(np.mean((p1 > 0.05) & (p1 < 0.95))),
        "standardized": bool(standardize),
        "timing_s": {"sample": t_sample, "truth": t_truth},
        "citation": "Kokaly, R.F., et al., 2017, USGS Spectral Library Version 7, "
                    "USGS Data Series 1035, doi:10.3133/ds1035",
    }
    if domain is not None:
        meta["options"]["domain_shift"] = domain_shift
        meta["domain_shift"] = domain
    if standardize:
        X_train, X_test, stats = _standardize(X_train, X_test)
        meta.update(stats)
    return ClassificationData(
        X_train=X_train, y_train=flat_y[train], X_test=X_test, y_test=flat_y[test],
        n_classes=2, p_true_test=np.stack([1 - p1, p1], axis=1),
        class_names=("background", "target"), name="hsi-sim", meta=meta,
        coords_train=coords[train], coords_test=coords[test],
    )
