"""Fidelity: how close a method's posterior predictive is to a reference posterior's.

Coverage of a known true probability judges a method only on simulated data.
On any data, real scenes included, a method can instead be judged by how
closely it reproduces the predictive of a long, checked HMC run of the same
network and prior (:func:`uqzoo.reference_posterior`), as Izmailov et al.
(2021) judge SWAG, MF-VI and deep ensembles by their agreement and total
variation to an HMC reference. :func:`fidelity` streams both posteriors over
the points X in the engine's chunks (memory O(S × chunk), never O(S × N)) and
scores, per point and then averaged over the points:

=====================  =======  =============================================
metric                 perfect  per point
=====================  =======  =============================================
``agreement``          1        top label of the method's predictive mean
                                equals the reference's
``total_variation``    0        ½ Σ_k |m_k − m_ref,k| between predictive means
``wasserstein1``       0        1-Wasserstein distance between the method's and
                                the reference's draws of p_k, mean over classes
``interval_overlap``   1        the method's level-L equal-tailed interval of
                                p_k meets the reference's (share of (point,
                                class) pairs)
``width_ratio``        1        Σ interval widths / Σ the reference's (< 1:
                                too narrow, > 1: too wide)
=====================  =======  =============================================

For two classes, class 0's probability is 1 − p₁, whose distances, intervals
and widths equal class 1's, so only class 1 is scored.

Monte Carlo error
-----------------
Even a method that equals the reference exactly does not score perfectly:
both predictives are estimated from finitely many draws. Each score carries
``mc_floor``, the expected distance from the perfect score under "method =
reference" from Monte Carlo alone, and ``mc_sd``, its standard deviation.
They are what a second reference run with another seed scores, and are
printed beside every figure as the yardstick. Derivation, per point i (and
class k), with ESS the effective sample size of each posterior's draws --
for HMC the smallest bulk (for means and distributions) or tail (for
interval bounds) ESS recorded at its monitored points, conservative; for
every other method S, its draws being independent:

- predictive mean: its MC error is ε ~ N(0, τ²) with τ² = Var_a(p)/ESS_a +
  Var_b(p)/ESS_b (the two posteriors' errors are independent). Total
  variation's term |ε| has mean √(2/π)·τ and standard deviation
  √(1 − 2/π)·τ.
- agreement: with m̄ the average of the two means, margin d = m̄_top −
  m̄_second and σ_j² = Var_j(p_top − p_second)/ESS_j, the labels differ with
  probability P = Φ(−d/σ_a)Φ(d/σ_b) + Φ(d/σ_a)Φ(−d/σ_b) (the estimated
  margins fall on opposite sides of 0); the term has mean P, sd √(P(1 − P)).
- 1-Wasserstein: W₁ = ∫ |F_a − F_b| dx, and F_a(x) − F_b(x) has variance
  F(1 − F)(1/ESS_a + 1/ESS_b); so E W₁ ≈ √(2/π) √(1/ESS_a + 1/ESS_b)
  ∫ √(F(1 − F)) dx (del Barrio, Giné & Matrán 1999), the integral read off
  the reference's sorted draws; sd as for total variation.
- interval bounds: a quantile q estimated from ESS draws has standard error
  σ_q ≈ (Q(q + δ) − Q(q − δ))/2 with δ = √(q(1 − q)/ESS) (the order-statistic
  MCSE of Vehtari et al. 2021). Intervals of width w miss each other with
  probability Φ(−w/√(σ²_upper,a + σ²_lower,b)) + Φ(−w/√(σ²_upper,b +
  σ²_lower,a)); a width's error has variance σ²_lower + σ²_upper per
  posterior.

Averaging over N points, a score's floor is the mean of the per-point means;
its sd is at most the mean of the per-point sds (the sd of a mean is at most
the mean of the sds, with equality when the points' errors are perfectly
correlated -- they share the draws), so ``mc_sd`` is conservative. The width
ratio's error is Σ_i e_i / Σ_i w_ref,i, with sd at most Σ_i s_i / Σ_i w_ref,i
and mean absolute value √(2/π) times that. :meth:`FidelityScore.within_mc_error`
asks |score − perfect| ≤ mc_floor + k·mc_sd.

References
----------
Izmailov, Vikram, Hoffman, Wilson (2021). What are Bayesian neural network
posteriors really like? ICML.
del Barrio, Giné, Matrán (1999). Central limit theorems for the Wasserstein
distance between the empirical and the true distributions. Annals of
Probability 27(2).
Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of
MCMC. Bayesian Analysis 16(2).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch
from scipy.special import ndtr

from uqzoo import predictive as engine
from uqzoo._validation import _show, as_float_matrix, check_float, check_int
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.posterior import Posterior

__all__ = ["DEFAULT_LEVEL", "METRICS", "Fidelity", "FidelityScore", "fidelity"]

# The 90 % interval: wide enough to say something about the tails, narrow
# enough that its bounds' tail ESS stays near the bulk ESS (Vehtari et al. 2021
# report quantile MCSEs for 5 % and 95 %).
DEFAULT_LEVEL = 0.9


class _MetricInfo(NamedTuple):
    perfect: float
    description: str


# The scores, in display order, each with its perfect value: the one list
# that the result, its table and the tests read.
METRICS: dict[str, _MetricInfo] = {
    "agreement": _MetricInfo(1.0, "share of points whose top label equals the reference's"),
    "total_variation": _MetricInfo(0.0, "total variation between predictive means, "
                                        "mean over points"),
    "wasserstein1": _MetricInfo(0.0, "1-Wasserstein distance between the draws of each "
                                     "class probability, mean over points and classes"),
    "interval_overlap": _MetricInfo(1.0, "share of (point, class) pairs whose interval meets "
                                         "the reference's"),
    "width_ratio": _MetricInfo(1.0, "total interval width / the reference's "
                                    "(< 1 too narrow, > 1 too wide)"),
}

_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_SQRT_1_2_PI = math.sqrt(1.0 - 2.0 / math.pi)

# Per-chunk sums, in this order, one row per chunk (summed in chunk order at
# the end, so a result does not depend on which worker ran which chunk).
_SUMS = ("agree", "agree_floor", "agree_sd", "tv", "tv_floor", "tv_sd", "w1", "w1_floor",
         "w1_sd", "overlap", "overlap_floor", "overlap_sd", "width", "ref_width", "width_sd",
         "pairs")


@dataclasses.dataclass(frozen=True)
class FidelityScore:
    """One fidelity score with its Monte Carlo yardstick.

    Attributes
    ----------
    name : str
        A key of :data:`METRICS`.
    value : float
    perfect : float
        The score of a method equal to the reference, with infinitely many draws.
    mc_floor : float
        Expected |value − perfect| from Monte Carlo error alone, were the
        method equal to the reference (see the module docstring).
    mc_sd : float
        Standard deviation of |value − perfect| under the same hypothesis
        (an upper bound).
    """

    name: str
    value: float
    perfect: float
    mc_floor: float
    mc_sd: float

    @property
    def deviation(self) -> float:
        """|value − perfect|."""
        return abs(self.value - self.perfect)

    def within_mc_error(self, k: float = 3.0) -> bool:
        """Whether the deviation is within what Monte Carlo error explains:
        ``deviation <= mc_floor + k · mc_sd``."""
        k = check_float(k, "k", low=0.0)
        return bool(self.deviation <= self.mc_floor + k * self.mc_sd)


@dataclasses.dataclass(frozen=True, eq=False)
class Fidelity:
    """:func:`fidelity`'s result: scores against a reference, with MC errors.

    Attributes
    ----------
    scores : tuple of FidelityScore
        One per :data:`METRICS` entry, in that order.
    method : str
        The judged posterior's method.
    level : float
        Credible level of the intervals compared.
    n_points : int
        N, the points scored.
    num_draws, reference_draws : int
        S of the method and of the reference.
    ess, reference_ess : (float, float)
        (bulk, tail) effective sample sizes the MC errors used.
    per_point : dict of ndarray, each of shape (N,)
        ``"agree"`` (bool), ``"total_variation"``, ``"wasserstein1"`` (mean
        over scored classes), ``"overlap"`` (share of scored classes),
        ``"width"``, ``"reference_width"`` (mean over scored classes), float32:
        for maps of where a method departs from the reference.
    """

    scores: tuple[FidelityScore, ...]
    method: str
    level: float
    n_points: int
    num_draws: int
    reference_draws: int
    ess: tuple[float, float]
    reference_ess: tuple[float, float]
    per_point: Mapping[str, np.ndarray]

    def __getitem__(self, name: str) -> FidelityScore:
        for score in self.scores:
            if score.name == name:
                return score
        raise InvalidInputError(f"no fidelity score {name!r}; scores: {list(METRICS)}")

    def to_rows(self) -> list[dict[str, Any]]:
        """Tidy rows, one per score: method, metric, value, perfect, mc_floor, mc_sd, level."""
        return [{"method": self.method, "metric": s.name, "value": s.value,
                 "perfect": s.perfect, "mc_floor": s.mc_floor, "mc_sd": s.mc_sd,
                 "level": self.level} for s in self.scores]

    def __str__(self) -> str:
        lines = [f"fidelity of {self.method!r} to the reference ({self.n_points} points, "
                 f"{self.level:.0%} intervals; MC yardstick: floor ± sd)"]
        for s in self.scores:
            lines.append(f"  {s.name:<17} {s.value:8.4f}   (perfect {s.perfect:g}; MC "
                         f"{s.mc_floor:.4f} ± {s.mc_sd:.4f})")
        return "\n".join(lines)


def _ess(posterior: Posterior) -> tuple[float, float]:
    """(bulk, tail) ESS of a posterior's draws: the smallest recorded at its
    monitored predictive points (MCMC), else S (independent draws)."""
    out = []
    for kind in ("ess_bulk_predictive", "ess_tail_predictive"):
        values = np.asarray(posterior.diagnostics.get(kind, np.nan), dtype=np.float64)
        values = values[np.isfinite(values)]
        out.append(float(values.min()) if values.size else float(posterior.num_draws))
    return out[0], out[1]


def _w1_grid(s_a: int, s_b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices and weights that turn sorted draws into W₁ = ∫₀¹ |F_a⁻¹(u) − F_b⁻¹(u)| du.

    The empirical quantile functions are steps at multiples of 1/S_a and
    1/S_b; on each piece of their merged breakpoints both are constant.
    """
    cuts = np.union1d(np.arange(s_a + 1) / s_a, np.arange(s_b + 1) / s_b)
    mid = (cuts[:-1] + cuts[1:]) / 2
    ia = np.minimum((mid * s_a).astype(np.int64), s_a - 1)
    ib = np.minimum((mid * s_b).astype(np.int64), s_b - 1)
    return ia, ib, np.diff(cuts).astype(np.float32)


def _quantile(sorted_rows: np.ndarray, q: float) -> np.ndarray:
    """``np.quantile(rows, q, axis=-1)`` (linear) of rows already sorted, float64."""
    pos = q * (sorted_rows.shape[-1] - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, sorted_rows.shape[-1] - 1)
    a = sorted_rows[..., lo].astype(np.float64)
    return a + (pos - lo) * (sorted_rows[..., hi].astype(np.float64) - a)


def _bound(sorted_rows: np.ndarray, q: float, ess: float) -> tuple[np.ndarray, np.ndarray]:
    """Quantile q of each row and its MC standard error (order-statistic MCSE)."""
    delta = math.sqrt(q * (1 - q) / ess)
    se = (_quantile(sorted_rows, min(q + delta, 1.0))
          - _quantile(sorted_rows, max(q - delta, 0.0))) / 2
    return _quantile(sorted_rows, q), se


def _phi_ratio(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """P(e < x) for e ~ N(0, s²): Φ(x / s), and for s = 0 the step 1{x > 0}.

    So an event that needs an error beyond a zero margin has probability 0
    when there is no error: two identical degenerate intervals meet, and
    a zero-noise tie keeps its label.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        out = ndtr(x / s)
    return np.where(s > 0, out, (x > 0).astype(np.float64))


class _Side:
    """One posterior's forward pass and per-worker buffers."""

    def __init__(self, post: Posterior, chunk: int):
        self.post = post
        self.forward = engine._make_forward(post.spec, post.draws, post._anchor(),
                                            post.logit_transform)
        self.S = self.forward.num_draws
        self.K = post.spec.n_classes
        self.chunk = chunk

    def buffers(self) -> tuple[Any, torch.Tensor]:
        return (self.forward.workspace(self.chunk),
                torch.empty(self.chunk, self.S * self.post.spec.n_outputs))

    def draws(self, X: np.ndarray, buffers) -> np.ndarray:
        """Probabilities of the chunk, (rows, classes scored, S) float32, unsorted.

        Two classes: class 1 only, (n, 1, S); otherwise (n, K, S).
        """
        if self.post.input_augmentation is not None:   # each draw on its own inputs
            proba = engine.augmented_draws(self.post.spec, self.post.draws, X,
                                           self.post.input_augmentation,
                                           anchor=self.post._anchor(),
                                           logit_transform=self.post.logit_transform)
            scored = proba[:, :, 1:] if self.K == 2 else proba     # (S, n, classes scored)
            return np.ascontiguousarray(scored.transpose(1, 2, 0))
        workspace, logits = buffers
        n = X.shape[0]
        z = self.forward.logits(engine._tensor(X), logits[:n], workspace)
        if self.K == 2:
            return torch.sigmoid(z).numpy()[:, None, :]
        p = torch.softmax(z.view(n, self.S, self.K), dim=-1)
        return p.transpose(1, 2).contiguous().numpy()


def _moments(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance over draws (last axis), float64 accumulation."""
    mean = p.mean(axis=-1, dtype=np.float64)
    var = np.maximum(np.square(p, dtype=np.float64).mean(axis=-1) - mean**2, 0.0)
    return mean, var


@torch.no_grad()
def _score_chunk(a: np.ndarray, b: np.ndarray, ess_a: tuple[float, float],
                 ess_b: tuple[float, float], level: float, grid, ffc: np.ndarray
                 ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Sums of the per-point terms of one chunk, and its per-point scores.

    a, b : (n, C, S_a) and (n, C, S_b) probabilities of the method and the
    reference; C = 1 (two classes, class 1) or K.
    """
    n, C = a.shape[:2]
    binary = C == 1
    mean_a, var_a = _moments(a)
    mean_b, var_b = _moments(b)
    # -- agreement, with the probability that MC error alone flips the label
    if binary:
        top_a, top_b = mean_a[:, 0] > 0.5, mean_b[:, 0] > 0.5
        margin = np.abs(mean_a[:, 0] + mean_b[:, 0] - 1.0)        # m̄₁ − m̄₀, |2m̄₁ − 1|
        sig_a = np.sqrt(4 * var_a[:, 0] / ess_a[0])              # Var(p₁ − p₀) = 4 Var(p₁)
        sig_b = np.sqrt(4 * var_b[:, 0] / ess_b[0])
    else:
        top_a, top_b = mean_a.argmax(1), mean_b.argmax(1)
        avg = (mean_a + mean_b) / 2
        order = np.argsort(-avg, axis=1, kind="stable")[:, :2]
        rows = np.arange(n)
        margin = avg[rows, order[:, 0]] - avg[rows, order[:, 1]]
        diff_a = a[rows, order[:, 0]] - a[rows, order[:, 1]]      # (n, S_a)
        diff_b = b[rows, order[:, 0]] - b[rows, order[:, 1]]
        sig_a = np.sqrt(_moments(diff_a)[1] / ess_a[0])
        sig_b = np.sqrt(_moments(diff_b)[1] / ess_b[0])
    agree = top_a == top_b
    flip = (_phi_ratio(-margin, sig_a) * _phi_ratio(margin, sig_b)
            + _phi_ratio(margin, sig_a) * _phi_ratio(-margin, sig_b))
    # -- total variation between the means
    tau = np.sqrt(var_a / ess_a[0] + var_b / ess_b[0])                 # (n, C)
    half = 1.0 if binary else 0.5              # two classes: ½(|Δ₀| + |Δ₁|) = |Δ₁|
    tv = half * np.abs(mean_a - mean_b).sum(1)
    tau_sum = half * tau.sum(1)
    # -- 1-Wasserstein between the draws, per class
    a.sort(axis=-1)
    b.sort(axis=-1)
    ia, ib, du = grid
    flat_a, flat_b = a.reshape(n * C, -1), b.reshape(n * C, -1)
    w1 = (np.abs(flat_a[:, ia] - flat_b[:, ib]) @ du).astype(np.float64).reshape(n, C)
    spread = (np.diff(flat_b, axis=1) @ ffc).astype(np.float64).reshape(n, C)  # ∫√(F(1−F))
    w1_scale = math.sqrt(1 / ess_a[0] + 1 / ess_b[0]) * spread
    # -- intervals at the level, with their bounds' MC errors
    q_lo, q_hi = (1 - level) / 2, (1 + level) / 2
    lo_a, se_lo_a = _bound(a, q_lo, ess_a[1])
    hi_a, se_hi_a = _bound(a, q_hi, ess_a[1])
    lo_b, se_lo_b = _bound(b, q_lo, ess_b[1])
    hi_b, se_hi_b = _bound(b, q_hi, ess_b[1])
    overlap = np.maximum(lo_a, lo_b) <= np.minimum(hi_a, hi_b)          # (n, C)
    width_b = hi_b - lo_b
    miss = np.minimum(_phi_ratio(-width_b, np.hypot(se_hi_a, se_lo_b))
                      + _phi_ratio(-width_b, np.hypot(se_hi_b, se_lo_a)), 1.0)
    width_a = hi_a - lo_a
    width_sd = np.sqrt(se_lo_a**2 + se_hi_a**2 + se_lo_b**2 + se_hi_b**2)
    sums = np.array([
        agree.sum(), flip.sum(), np.sqrt(flip * (1 - flip)).sum(),
        tv.sum(), _SQRT_2_PI * tau_sum.sum(), _SQRT_1_2_PI * tau_sum.sum(),
        w1.sum(), _SQRT_2_PI * w1_scale.sum(), _SQRT_1_2_PI * w1_scale.sum(),
        overlap.sum(), miss.sum(), np.sqrt(miss * (1 - miss)).sum(),
        width_a.sum(), width_b.sum(), width_sd.sum(), n * C,
    ], dtype=np.float64)
    per_point = {"agree": agree, "total_variation": tv, "wasserstein1": w1.mean(1),
                 "overlap": overlap.mean(1), "width": width_a.mean(1),
                 "reference_width": width_b.mean(1)}
    return sums, per_point


def fidelity(posterior: Posterior, reference: Posterior, X: object, *,
             data: Any = None, level: float = DEFAULT_LEVEL, require_gate: bool = True,
             chunk_size: int | None = None, workers: int | None = None) -> Fidelity:
    """Score how closely a posterior's predictive matches a reference posterior's.

    Parameters
    ----------
    posterior : Posterior
        The method to judge (any method; another HMC run included).
    reference : Posterior
        Made by :func:`uqzoo.reference_posterior` (possibly saved and loaded);
        its gate must have passed unless ``require_gate=False``.
    X : array of shape (N, D)
        The points to score: a test split, or a whole scene's pixels.
    data : ClassificationData, optional
        The data both were fitted on; the reference must have been sampled on
        its training split (its recorded fingerprint), else an error.
    level : float in (0, 1)
        Credible level of the equal-tailed intervals compared. Default 0.9.
    require_gate : bool
        Refuse a reference whose gate did not pass (default).
    chunk_size : int, optional
        Rows per chunk; by default the engine's (a chunk's buffers stay at
        tens of MiB whatever N is).
    workers : int, optional
        Threads the chunks are spread over (default: the available cores).

    Returns
    -------
    Fidelity
        Scores (agreement, total_variation, wasserstein1, interval_overlap,
        width_ratio) with their MC floors and sds, and per-point arrays of
        shape (N,).

    Examples
    --------
    >>> import uqzoo as uz                                          # doctest: +SKIP
    >>> ref = uz.reference_posterior(spec, data, seed=0)            # doctest: +SKIP
    >>> post = uz.fit("swag", spec, data, seed=0)                   # doctest: +SKIP
    >>> fid = uz.fidelity(post, ref, data.X_test, data=data)        # doctest: +SKIP
    >>> fid["agreement"].value, fid["agreement"].mc_floor           # doctest: +SKIP
    (0.97, 0.004)
    >>> print(fid)                                                  # doctest: +SKIP

    References
    ----------
    Izmailov, Vikram, Hoffman, Wilson (2021). What are Bayesian neural
    network posteriors really like? ICML.
    del Barrio, Giné, Matrán (1999). Annals of Probability 27(2).
    Vehtari et al. (2021). Bayesian Analysis 16(2).
    """
    from uqzoo.reference import check_reference

    if not isinstance(posterior, Posterior):
        raise InvalidTypeError(f"posterior must be a uqzoo.Posterior, got {_show(posterior)}")
    check_reference(reference, data, require_gate=require_gate)
    # Every fit records the training data it saw (files from before that carry
    # none, and are scored as they are).
    theirs = posterior.diagnostics.get("data_fingerprint")
    ours = reference.diagnostics["data_fingerprint"]
    if isinstance(theirs, str) and theirs != ours:
        raise InvalidInputError(
            f"posterior was fitted on other training data (fingerprint {theirs[:19]}...) "
            f"than the reference was sampled on ({ours[:19]}...); fidelity compares two "
            f"posteriors of the same data: fit the {posterior.method} posterior on the "
            f"reference's data")
    for attr in ("in_features", "n_classes"):
        if getattr(posterior.spec, attr) != getattr(reference.spec, attr):
            raise InvalidInputError(
                f"posterior and reference disagree on spec.{attr}: "
                f"{getattr(posterior.spec, attr)} vs {getattr(reference.spec, attr)}")
    if (posterior.classes is not None and reference.classes is not None
            and tuple(posterior.classes) != tuple(reference.classes)):
        raise InvalidInputError(f"posterior and reference label their classes differently: "
                                f"{posterior.classes} vs {reference.classes}")
    level = check_float(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    X = as_float_matrix(X, "X", n_features=reference.spec.in_features)
    N = X.shape[0]
    if chunk_size is None:
        chunk = min(engine._chunk_size(p.spec, p.num_draws, None, p.predictive == "glm")
                    for p in (posterior, reference))
    else:
        chunk = check_int(chunk_size, "chunk_size", minimum=1)
    chunk = min(chunk, N)
    workers = engine.default_workers() if workers is None else check_int(
        workers, "workers", minimum=1, maximum=1024)
    side_a, side_b = _Side(posterior, chunk), _Side(reference, chunk)
    ess_a, ess_b = _ess(posterior), _ess(reference)
    grid = _w1_grid(side_a.S, side_b.S)
    F = np.arange(1, side_b.S) / side_b.S
    ffc = np.sqrt(F * (1 - F)).astype(np.float32)
    starts = list(range(0, N, chunk))
    sums = np.zeros((len(starts), len(_SUMS)))
    per_point = {"agree": np.empty(N, bool), "total_variation": np.empty(N, np.float32),
                 "wasserstein1": np.empty(N, np.float32), "overlap": np.empty(N, np.float32),
                 "width": np.empty(N, np.float32), "reference_width": np.empty(N, np.float32)}
    n_workers = min(workers, len(starts))
    def work(worker: int) -> None:
        buf_a, buf_b = side_a.buffers(), side_b.buffers()
        for i in range(worker, len(starts), n_workers):
            start = starts[i]
            stop = min(start + chunk, N)
            xc = X[start:stop]
            with torch.no_grad():
                row, points = _score_chunk(side_a.draws(xc, buf_a), side_b.draws(xc, buf_b),
                                           ess_a, ess_b, level, grid, ffc)
            sums[i] = row
            for key, values in points.items():
                per_point[key][start:stop] = values

    engine.run_workers(work, n_workers, "uqzoo-fidelity")
    total = dict(zip(_SUMS, sums.sum(axis=0), strict=True))
    pairs = total["pairs"]
    ref_width = total["ref_width"]
    ratio_sd = total["width_sd"] / ref_width if ref_width > 0 else float("nan")
    values = {
        "agreement": (total["agree"] / N, total["agree_floor"] / N, total["agree_sd"] / N),
        "total_variation": (total["tv"] / N, total["tv_floor"] / N, total["tv_sd"] / N),
        "wasserstein1": (total["w1"] / pairs, total["w1_floor"] / pairs,
                         total["w1_sd"] / pairs),
        "interval_overlap": (total["overlap"] / pairs, total["overlap_floor"] / pairs,
                             total["overlap_sd"] / pairs),
        "width_ratio": (total["width"] / ref_width if ref_width > 0 else float("nan"),
                        _SQRT_2_PI * ratio_sd, ratio_sd),
    }
    scores = tuple(FidelityScore(name, float(values[name][0]), info.perfect,
                                 float(values[name][1]), float(values[name][2]))
                   for name, info in METRICS.items())
    return Fidelity(scores=scores, method=posterior.method, level=level, n_points=N,
                    num_draws=side_a.S, reference_draws=side_b.S, ess=ess_a,
                    reference_ess=ess_b, per_point=per_point)
