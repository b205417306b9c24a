"""Confidence intervals on every row of the evaluation table: a streamed Poisson bootstrap.

Which bootstrap, and why
------------------------
The test set is resampled by giving every test point i, in every replicate
b = 1..B, an independent weight w_bi ~ Poisson(1) -- the **Poisson
bootstrap** (Hanley & MacGibbon 2006; Chamandy et al. 2012, "Estimating
uncertainty for massive data streams"). The classic bootstrap draws N points
with replacement, a Multinomial(N; 1/N, ...) count per point, which ties all
N counts together and so needs the whole test set at once. Poisson(1) counts
are independent across points and Multinomial(N, 1/N) → Poisson(1)
marginally as N grows, so each chunk of a scene of millions of pixels (or a
Dask partition) draws its own weights and adds weighted sums to B running
totals: memory O(B × statistics), one pass, no second copy of the data.

The weights are a pure function of (seed, replicate, point index):
replicate b's weights come from a Philox counter-based generator whose
counter starts at b · 2¹⁹², read at the point's global index, and are mapped
to Poisson(1) by the inverse CDF on 64-bit uniforms (exact to 2⁻⁶⁴). So the
intervals do not depend on the chunk size, the worker count or the order of
the chunks, and the same seed gives every method the *same* replicates --
differences between methods can be bootstrapped pairwise.

**Stratified by class** (default): within replicate b the weights of class k
are rescaled to sum to its test count n_k, w'_bi = w_bi · n_k / W_bk
(W_bk = Σ_{i: y_i = k} w_bi), so every replicate keeps the test set's class
prior, as a stratified bootstrap does. That is right when the class counts
are fixed by design (a test set resampled to a prior, per-class metrics,
rare targets that an unstratified replicate could lose altogether); it
leaves out the variability of the class mix, so for a test set drawn i.i.d.
from the population use ``stratified=False``. In the rare replicate where a
class draws total weight 0 (probability e^{−n_k}), its points keep weight 1.

Sums and ratios of sums are exact streaming: accuracy, per-class recall,
balanced accuracy, Brier, NLL, mean entropies, interval width and coverage,
every equal-width ECE/MCE/RMSCE bin total (top-label, positive-class,
class-wise) and every HCS count; the binned errors and recalls of those
totals are the metric modules' own formulas (``calibration.bin_errors``,
``calibration.classwise_errors``, ``selective.class_recalls``). Metrics that
need a global sort are computed at the end, per replicate, on the kept
(N, K) posterior-mean probabilities by the same functions that implement
each metric's ``sample_weight`` (frequency weights, as scikit-learn's), with
the sorts made once per evaluation (``_RankPlan``) and the replicates'
weights as (G, N) matrices. Each reduces to the unweighted metric when all
weights are 1 and, for integer weights, to the metric of the sample in which
point i appears w_i times:

- misclassification and detection AUROC: weighted Mann–Whitney, ties ½;
- AURC (tie-aware trapezoid; the mean-over-k form through harmonic numbers
  H(x) = ψ(x + 1) + γ over each point's block of positions), E-AURC (with
  the oracle AURC at the replicate's weighted error count), AUARC (the
  rejection grid in units of weight, a point on a grid boundary split);
- quantile-binned ECE: equal-*weight* bins, the edges re-chosen per
  replicate;
- adaptive ECE/MCE (Ding et al.): the bins are the full sample's, held
  fixed -- the interval does not include the variability of the bin
  choice, whose data-driven rules have no weighted form;
- Pd at a false-alarm rate: the threshold re-chosen on each replicate's
  weighted background. Its ``pd_at_far_lower`` / ``pd_at_far_upper`` rows
  are interval bounds themselves and get no interval.

The interval is the percentile interval (Efron) at ``confidence``, default
0.95: the (1 − c)/2 and (1 + c)/2 quantiles of the B replicate values, NaN
replicates (a ratio with an empty denominator) left out.

Cost: O(B × N) time, memory O(B × statistics + B × block) in the stream and
O(N × block) at the end. Measured on a shared 2-core machine with one BLAS
thread: about 0.3 µs per point and replicate at N = 20,000 (B = 500 added 4 s
to a 2.5 s evaluation) and 1 µs at N = 200,000 (B = 50 added 10 s), most of it
in the sort-based rows; so a scene of 10⁶ pixels at B = 1000 takes of the
order of a quarter of an hour, B = 200 a few minutes. (On an oversubscribed
machine, OpenBLAS's own threads made the per-chunk products ten times
slower: ``OPENBLAS_NUM_THREADS=1`` helps there.)

References
----------
Efron, B., Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
Hanley, J. A., MacGibbon, B. (2006). Creating non-parametric bootstrap samples
using Poisson frequencies. Computer Methods and Programs in Biomedicine 83(1), 57–62.
Chamandy, N., Muralidharan, O., Najmi, A., Naik, S. (2012). Estimating
uncertainty for massive data streams. Google technical report.
Salmon, J. K., Moraes, M. A., Dror, R. O., Shaw, D. E. (2011). Parallel random
numbers: as easy as 1, 2, 3. SC'11. (Philox.)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from uqzoo._validation import check_float, check_int, check_seed
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics import calibration as cal
from uqzoo.metrics import detection as det
from uqzoo.metrics import selective as sel
from uqzoo.metrics._common import ratio, total_weight
from uqzoo.metrics.uncertainty import entropy_of

__all__ = ["DEFAULT_CONFIDENCE", "BootstrapAccumulator", "BootstrapResult", "PoissonWeights",
           "check_bootstrap"]

DEFAULT_CONFIDENCE = 0.95
# Replicates at most: the running totals hold B × K × (statistics) float64s,
# tens of MB at this bound for a binary problem.
MAX_REPLICATES = 100_000
# The running totals may hold at most this many bytes (2 GiB).
_MAX_TOTAL_BYTES = 2**31
# Weights generated and multiplied per block: B × block ≤ 2**22 (4 MiB of uint8 weights,
# 32 MiB as float64 in the product).
_BLOCK_ELEMENTS = 2**22
# Per-replicate weights at the end: G replicates × N points ≤ 2**21 float64 (16 MiB per
# temporary: larger blocks measured slower, their temporaries miss the cache).
_RANK_ELEMENTS = 2**21
# Distinguishes the bootstrap's random stream from every other use of a seed.
_STREAM = 0x626F6F74                    # "boot"


def _poisson_thresholds() -> np.ndarray:
    """floor(P(X ≤ k) · 2⁶⁴) for X ~ Poisson(1), k = 0, 1, ... while below 2⁶⁴.

    A 64-bit uniform integer u gives X = #{k : u ≥ threshold_k}: the inverse
    CDF, exact up to the 2⁻⁶⁴ rounding of each threshold. P(X ≥ 19) < 2⁻⁶⁴,
    so the tail beyond is never drawn.
    """
    from fractions import Fraction
    # e⁻¹ as a fraction accurate far beyond 2⁻⁶⁴ (its series to 40 terms)
    e_inv = sum(Fraction((-1) ** j, math.factorial(j)) for j in range(40))
    out: list[int] = []
    cdf, term = Fraction(0), Fraction(e_inv)
    for k in range(64):
        cdf += term
        value = math.floor(cdf * 2**64)
        if value >= 2**64:
            break
        out.append(value)
        term /= k + 1
    return np.array(out, dtype=np.uint64)


_THRESHOLDS = _poisson_thresholds()


def _lookup_table() -> np.ndarray:
    """Poisson(1) value of each top-16-bit prefix of u, or −1 where a threshold splits it."""
    top = np.arange(2**16, dtype=np.uint64) << np.uint64(48)
    lo = np.searchsorted(_THRESHOLDS, top, side="right")
    hi = np.searchsorted(_THRESHOLDS, top | np.uint64(2**48 - 1), side="right")
    return np.where(lo == hi, lo, -1).astype(np.int8)


_TABLE = _lookup_table()


def _poisson_from_raw(raw: np.ndarray) -> np.ndarray:
    """Poisson(1) counts (uint8) from uniform uint64s, by the inverse CDF."""
    k = _TABLE[raw >> np.uint64(48)]
    split = k < 0                      # 18 of 65,536 prefixes straddle a threshold
    if split.any():
        k[split] = np.searchsorted(_THRESHOLDS, raw[split], side="right")
    return k.astype(np.uint8)


class PoissonWeights:
    """Poisson(1) bootstrap weights w[b, i], addressable by replicate and global point index.

    Parameters
    ----------
    num_replicates : int >= 1
    seed : int

    Examples
    --------
    >>> from uqzoo.metrics.bootstrap import PoissonWeights
    >>> w = PoissonWeights(3, seed=0)
    >>> a = w.block(0, 10)
    >>> import numpy as np
    >>> bool(np.array_equal(a, np.concatenate([w.block(0, 4), w.block(4, 10)], axis=1)))
    True
    """

    def __init__(self, num_replicates: int, seed: int) -> None:
        self.num_replicates = check_int(num_replicates, "bootstrap", minimum=1,
                                        maximum=MAX_REPLICATES)
        self.seed = check_seed(seed)
        self._key = np.random.SeedSequence(self.seed, spawn_key=(_STREAM,)).generate_state(
            2, np.uint64)
        # One generator whose counter is moved for each draw: setting the state
        # costs a third of constructing a Philox (measured 9 µs against 27 µs).
        self._generator = np.random.Philox(key=self._key)

    def _raw(self, replicate: int, start: int, stop: int) -> np.ndarray:
        # Philox yields four 64-bit words per counter step; replicate b owns
        # counters from b · 2**192, point i reads word i of that stream. The
        # state below is exactly Philox(key, counter=b · 2**192 + start // 4)'s.
        first = start // 4
        steps = -(-stop // 4) - first
        counter = (replicate << 192) + first
        state = self._generator.state
        state["state"]["counter"] = np.array(
            [(counter >> (64 * i)) & 0xFFFF_FFFF_FFFF_FFFF for i in range(4)], dtype=np.uint64)
        state["buffer_pos"] = 4                 # buffer empty: the next draw starts afresh
        state["has_uint32"] = 0
        self._generator.state = state
        return self._generator.random_raw(4 * steps)[start - 4 * first: stop - 4 * first]

    def block(self, start: int, stop: int, replicates: range | None = None) -> np.ndarray:
        """Weights of points start..stop-1, uint8 of shape (B', stop − start)."""
        reps = range(self.num_replicates) if replicates is None else replicates
        raw = np.empty((len(reps), stop - start), dtype=np.uint64)
        for row, b in enumerate(reps):
            raw[row] = self._raw(b, start, stop)
        return _poisson_from_raw(raw)              # one pass over all replicates


def check_bootstrap(bootstrap: object, confidence: object) -> tuple[int | None, float]:
    """Validated (B or None, confidence level) of :func:`uqzoo.evaluate`'s options."""
    if bootstrap is not None:
        bootstrap = check_int(bootstrap, "bootstrap", minimum=1, maximum=MAX_REPLICATES)
    level = check_float(confidence, "bootstrap_confidence", low=0.0, high=1.0, low_open=True,
                        high_open=True)
    return bootstrap, level


@dataclasses.dataclass(frozen=True, eq=False)
class BootstrapResult:
    """The bootstrap behind a table's ``ci_low`` / ``ci_high`` columns.

    Attributes
    ----------
    num_replicates : int
        B.
    seed : int
    confidence : float
        Level of the percentile intervals.
    stratified : bool
        Whether each replicate kept the test set's class counts.
    replicates : float64 ndarray of shape (B, R)
        Replicate values of the R table rows (row order of ``table``); NaN
        columns for rows without an interval.
    original : float64 ndarray of shape (R,)
        The same weighted formulas with every weight 1: they reproduce the
        table's ``value`` up to float rounding (the adaptive-ECE rows exactly
        so, their bins being the full sample's), a check that each replicate
        computes the metric its row names.
    """

    num_replicates: int
    seed: int
    confidence: float
    stratified: bool
    replicates: np.ndarray
    original: np.ndarray


class _Layout:
    """Column offsets of the per-point statistics whose weighted sums are accumulated."""

    def __init__(self, K: int, L: int, n_bins: int, C: int, with_truth: bool,
                 with_entropy: bool) -> None:
        self.K, self.L, self.n_bins, self.C = K, L, n_bins, C
        self.with_truth, self.with_entropy = with_truth, with_entropy
        self.slices: dict[str, slice] = {}
        size = 0

        def add(name: str, width: int) -> None:
            nonlocal size
            self.slices[name] = slice(size, size + width)
            size += width

        for name in ("hit", "brier", "nll", "entropy"):
            add(name, 1)
        if with_entropy:
            add("mi", 1)
        for kind in ("top", "pos") if K == 2 else ("top",):
            for part in ("count", "conf", "outcome"):
                add(f"{kind}_{part}", n_bins)
        for part in ("count", "conf", "outcome"):
            add(f"classwise_{part}", K * n_bins)
        add("width", L * K)
        add("row_width", L)
        if with_truth:
            add("cover", L * K)
            add("row_cover", L)
        for part in ("pos", "neg", "pos_hit", "neg_miss"):
            add(f"hcs_{part}", L * C)
        self.size = size

    def __getitem__(self, name: str) -> slice:
        return self.slices[name]


def _bins_onehot(F: np.ndarray, base: slice, index: np.ndarray, values: object,
                 rows: np.ndarray) -> None:
    """Put each point's value in the column of its bin."""
    F[rows, base.start + index] = values


class BootstrapAccumulator:
    """Weighted running totals of every per-point statistic, per replicate and class.

    ``update`` takes one chunk of the evaluator's stream together with the
    chunk's global start index (the weights depend on it, not on the
    chunking); ``merge`` adds two accumulators over disjoint points.
    """

    def __init__(self, weights: PoissonWeights, n_classes: int, levels: Sequence[float],
                 n_bins: int, hcs_classes: Sequence[int], with_truth: bool,
                 with_entropy: bool, stratified: bool = True) -> None:
        if not isinstance(weights, PoissonWeights):
            raise InvalidTypeError(f"weights must be PoissonWeights, got {type(weights).__name__}")
        self.weights = weights
        self.stratified = bool(stratified)
        self.hcs_classes = tuple(int(c) for c in hcs_classes)
        self.layout = _Layout(n_classes, len(levels), n_bins, len(self.hcs_classes),
                              with_truth, with_entropy)
        B, K, m = weights.num_replicates, n_classes, self.layout.size
        if B * K * m * 8 > _MAX_TOTAL_BYTES:
            raise InvalidInputError(
                f"bootstrap={B} replicates of {m} statistics for {K} classes need "
                f"{B * K * m * 8 / 2**30:.1f} GiB of running totals, more than "
                f"{_MAX_TOTAL_BYTES // 2**30} GiB; use fewer replicates")
        self.sums = np.zeros((B, K, m))             # Σ_i∈k w_bi f_i
        self.weight_sums = np.zeros((B, K))         # W_bk
        self.unit_sums = np.zeros((K, m))           # Σ_i∈k f_i
        self.counts = np.zeros(K, dtype=np.int64)   # n_k

    # -- streaming ------------------------------------------------------------------------

    def features(self, mean: np.ndarray, y: np.ndarray, lower: np.ndarray,
                 upper: np.ndarray, truth: np.ndarray | None, hcs_pos: np.ndarray,
                 hcs_neg: np.ndarray, expected_entropy: np.ndarray | None) -> np.ndarray:
        """The (n, m) per-point statistics of one chunk (conventions of the accumulators)."""
        lay = self.layout
        n, K = mean.shape
        L, nb, C = lay.L, lay.n_bins, lay.C
        F = np.zeros((n, lay.size))
        rows = np.arange(n)
        pred = mean.argmax(axis=1)
        F[:, lay["hit"].start] = pred == y
        F[:, lay["brier"].start] = np.clip(cal.brier_per_point(mean, y), 0.0, 2.0)
        F[:, lay["nll"].start] = cal.nll_per_point(mean, y)
        total_entropy = entropy_of(mean)
        F[:, lay["entropy"].start] = total_entropy
        if lay.with_entropy and expected_entropy is not None:
            F[:, lay["mi"].start] = np.maximum(total_entropy - expected_entropy, 0.0)
        for kind, confidence in (("top", "top_label"), ("pos", "positive_class")):
            if f"{kind}_count" not in lay.slices:
                continue
            conf, outcome = cal.confidence_and_outcome(mean, y, confidence)
            index = cal.equal_width_index(conf, nb)
            _bins_onehot(F, lay[f"{kind}_count"], index, 1.0, rows)
            _bins_onehot(F, lay[f"{kind}_conf"], index, conf, rows)
            _bins_onehot(F, lay[f"{kind}_outcome"], index, outcome, rows)
        for k in range(K):
            index = cal.equal_width_index(mean[:, k], nb) + k * nb
            _bins_onehot(F, lay["classwise_count"], index, 1.0, rows)
            _bins_onehot(F, lay["classwise_conf"], index, mean[:, k], rows)
            _bins_onehot(F, lay["classwise_outcome"], index, y == k, rows)
        width = np.clip(upper - lower, 0.0, 1.0)                           # (L, n, K)
        F[:, lay["width"]] = width.transpose(1, 0, 2).reshape(n, L * K)
        F[:, lay["row_width"]] = width.mean(axis=2).T
        if lay.with_truth:
            assert truth is not None
            cover = (lower <= truth) & (truth <= upper)                     # (L, n, K)
            F[:, lay["cover"]] = cover.transpose(1, 0, 2).reshape(n, L * K)
            F[:, lay["row_cover"]] = cover.sum(axis=2).T / K
        is_target = y[:, None] == np.asarray(self.hcs_classes)[None, :]    # (n, C)
        for part, mask in (("pos", hcs_pos), ("neg", hcs_neg),
                           ("pos_hit", hcs_pos & is_target[None]),
                           ("neg_miss", hcs_neg & is_target[None])):
            F[:, lay[f"hcs_{part}"]] = mask.transpose(1, 0, 2).reshape(n, L * C)
        return F

    def update(self, start: int, y: np.ndarray, F: np.ndarray) -> BootstrapAccumulator:
        """Add points start..start+n-1 with labels y (n,) and statistics F (n, m)."""
        n = y.shape[0]
        K = self.layout.K
        for k in range(K):
            member = y == k
            self.counts[k] += int(member.sum())
            self.unit_sums[k] += F[member].sum(axis=0)
        B = self.weights.num_replicates
        step = max(1, _BLOCK_ELEMENTS // B)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            W = self.weights.block(start + lo, start + hi)                  # (B, h) uint8
            yb, Fb = y[lo:hi], F[lo:hi]
            for k in range(K):
                member = yb == k
                if not member.any():
                    continue
                Wk = W[:, member].astype(np.float64)
                self.sums[:, k] += Wk @ Fb[member]
                self.weight_sums[:, k] += Wk.sum(axis=1)
        return self

    def merge(self, other: BootstrapAccumulator) -> BootstrapAccumulator:
        """A new accumulator holding both (disjoint points, same weights and layout)."""
        if (self.weights.num_replicates, self.weights.seed, self.layout.slices,
                self.stratified) != (other.weights.num_replicates, other.weights.seed,
                                     other.layout.slices, other.stratified):
            raise InvalidInputError("cannot merge bootstrap accumulators with different "
                                    "replicates, seeds, statistics or stratification")
        merged = object.__new__(BootstrapAccumulator)
        merged.__dict__.update(self.__dict__)
        merged.sums = self.sums + other.sums
        merged.weight_sums = self.weight_sums + other.weight_sums
        merged.unit_sums = self.unit_sums + other.unit_sums
        merged.counts = self.counts + other.counts
        return merged

    # -- per-replicate totals --------------------------------------------------------------

    def class_scale(self) -> tuple[np.ndarray, np.ndarray]:
        """(scale (B, K), fallback (B, K) bool): w'_bi = scale[b, y_i] · w_bi, or 1 where fallback.

        Stratified: scale = n_k / W_bk; a present class with W_bk = 0 falls back
        to unit weights. Unstratified: scale 1, no fallback.
        """
        B, K = self.weight_sums.shape
        if not self.stratified:
            return np.ones((B, K)), np.zeros((B, K), dtype=bool)
        fallback = (self.weight_sums == 0) & (self.counts[None, :] > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(self.weight_sums > 0,
                             self.counts[None, :] / np.where(self.weight_sums > 0,
                                                             self.weight_sums, 1.0), 0.0)
        return scale, fallback

    def totals(self, unit: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(T (R, m), class weights (R, K), class hits (R, K)) of every replicate.

        ``unit``: the original sample instead (R = 1, every weight 1).
        """
        hit = self.layout["hit"].start
        if unit:
            return (self.unit_sums.sum(axis=0)[None], self.counts[None].astype(float),
                    self.unit_sums[None, :, hit])
        scale, fallback = self.class_scale()
        class_sums = np.where(fallback[..., None], self.unit_sums[None],
                              scale[..., None] * self.sums)
        class_weights = np.where(fallback, self.counts[None, :].astype(float),
                                 scale * self.weight_sums)
        return class_sums.sum(axis=1), class_weights, class_sums[:, :, hit]

    def point_weights(self, y: np.ndarray, replicates: range) -> np.ndarray:
        """(G, N) float64 weights of all N points in the given replicates, stratified."""
        scale, fallback = self.class_scale()
        W = self.weights.block(0, y.shape[0], replicates).astype(np.float64)
        rows = np.asarray(replicates)
        W *= scale[rows][:, y]
        fb = fallback[rows][:, y]
        W[fb] = 1.0
        return W


# -- metrics from totals (vectorised over R replicates) -----------------------------------------

def sum_metrics(T: np.ndarray, layout: _Layout, hcs_classes: Sequence[int], n: np.ndarray
                ) -> dict[tuple, np.ndarray]:
    """Replicate values of the sum-based rows, keyed (metric, kind, level index, class).

    ``n`` (R,): each replicate's total weight (N when stratified).
    """
    lay = layout
    K = lay.K
    out: dict[tuple, np.ndarray] = {}

    def col(name: str) -> np.ndarray:
        return T[:, lay[name]]

    out[("accuracy",)] = col("hit")[:, 0] / n
    out[("brier",)] = col("brier")[:, 0] / n
    out[("nll",)] = col("nll")[:, 0] / n
    out[("mean_predictive_entropy",)] = col("entropy")[:, 0] / n
    if lay.with_entropy:
        out[("mean_mutual_information",)] = col("mi")[:, 0] / n
    for kind in ("top", "pos") if K == 2 else ("top",):
        e, m, r = cal.bin_errors(col(f"{kind}_count"), col(f"{kind}_conf"),
                                 col(f"{kind}_outcome"), n)
        out[("ece", kind)], out[("mce", kind)], out[("rmsce", kind)] = e, m, r
    per_class = cal.classwise_errors(col("classwise_count"), col("classwise_conf"),
                                     col("classwise_outcome"), n, K)          # (R, K)
    out[("classwise_ece",)] = per_class.mean(axis=1)
    for k in range(K):
        out[("classwise_ece", k)] = per_class[:, k]
    return out | _interval_hcs(T, lay, hcs_classes, n)


def _interval_hcs(T: np.ndarray, lay: _Layout, hcs_classes: Sequence[int], n: np.ndarray
                  ) -> dict[tuple, np.ndarray]:
    K, L, C = lay.K, lay.L, lay.C
    out: dict[tuple, np.ndarray] = {}
    n2 = n[:, None]
    width = T[:, lay["width"]].reshape(-1, L, K) / n2[..., None]
    row_width = T[:, lay["row_width"]] / n2
    for i in range(L):
        out[("interval_width", i)] = row_width[:, i]
        for k in range(K):
            out[("interval_width", i, k)] = width[:, i, k]
    if lay.with_truth:
        cover = T[:, lay["cover"]].reshape(-1, L, K) / n2[..., None]
        row_cover = T[:, lay["row_cover"]] / n2
        for i in range(L):
            out[("coverage", i)] = row_cover[:, i]
            for k in range(K):
                out[("coverage", i, k)] = cover[:, i, k]
    pos = T[:, lay["hcs_pos"]].reshape(-1, L, C)
    neg = T[:, lay["hcs_neg"]].reshape(-1, L, C)
    pos_hit = T[:, lay["hcs_pos_hit"]].reshape(-1, L, C)
    neg_miss = T[:, lay["hcs_neg_miss"]].reshape(-1, L, C)
    size = pos + neg
    accuracy = ratio(pos_hit + neg - neg_miss, size)
    for i in range(L):
        for j, k in enumerate(hcs_classes):
            out[("hcs_size", i, k)] = size[:, i, j]
            out[("hcs_proportion", i, k)] = size[:, i, j] / n
            out[("hcs_accuracy", i, k)] = accuracy[:, i, j]
            out[("hcs_missed_targets", i, k)] = neg_miss[:, i, j]
            out[("hcs_detected_targets", i, k)] = pos_hit[:, i, j]
            out[("hcs_false_targets", i, k)] = pos[:, i, j] - pos_hit[:, i, j]
    return out


def recall_metrics(class_hits: np.ndarray, class_weights: np.ndarray
                   ) -> dict[tuple, np.ndarray]:
    """Per-class recall and balanced accuracy from weighted hits (R, K) and weights (R, K)."""
    recall, balanced = sel.class_recalls(class_hits, class_weights)
    out: dict[tuple, np.ndarray] = {("balanced_accuracy",): balanced}
    for k in range(class_hits.shape[1]):
        out[("recall", k)] = recall[:, k]
    return out


# -- sort-based rows: the metric modules' weighted paths, sorted once ----------------------

class _RankPlan:
    """What the sort-based metrics need of the (N, K) means, sorted once per evaluation.

    The metrics run once per group of replicates on the same arrays; sorting
    them again for every group cost as much as the metrics themselves. So the
    bootstrap calls the metric modules' weighted functions (those behind each
    metric's ``sample_weight``) with the orders made here.
    """

    def __init__(self, mean: np.ndarray, y: np.ndarray, detection: bool) -> None:
        N, K = mean.shape
        self.mean, self.y, self.detection = mean, y, detection
        self.pred = mean.argmax(axis=1)
        self.conf = np.take_along_axis(mean, self.pred[:, None], axis=1)[:, 0]
        self.error = self.pred != y
        self.up = np.argsort(self.conf, kind="stable")
        self.down = np.argsort(-self.conf, kind="stable")
        self.binned = {}
        for kind, confidence in (("top", "top_label"), ("pos", "positive_class")):
            if kind == "pos" and K != 2:
                continue
            c, o = cal.confidence_and_outcome(mean, y, confidence)
            self.binned[kind] = (c, o.astype(np.float64), np.argsort(c, kind="stable"))
        # Ding's bins are contiguous runs of the descending confidence order
        counts = cal.adaptive_binning(mean, y).count
        self.adaptive_bins = counts.shape[0]
        self.adaptive_index = np.empty(N, dtype=np.int64)
        self.adaptive_index[self.down] = np.repeat(np.arange(counts.shape[0]), counts)
        self.score = mean[:, 1] if detection else None
        if self.score is not None:
            self.score_up = np.argsort(self.score, kind="stable")
            self.score_down = np.argsort(-self.score, kind="stable")


def rank_metrics(plan: _RankPlan, W: np.ndarray, n_bins: int, fars: Sequence[float]
                 ) -> dict[tuple, np.ndarray]:
    """Replicate values of the sort-based rows for point weights W (G, N).

    Each is the ``sample_weight`` path of its metric, on the plan's orders.
    The adaptive (Ding) bins are the full sample's, held fixed: their
    data-driven rule has no weighted form.
    """
    n = total_weight(W)
    out: dict[tuple, np.ndarray] = {}
    for kind, (c, o, order) in plan.binned.items():
        out[("ece_quantile", kind)] = cal.quantile_bin_errors(c, o, W, n_bins, n, order)[0]
    totals = cal.weighted_bin_totals(plan.conf, ~plan.error, plan.adaptive_index,
                                     plan.adaptive_bins, W)
    out[("adaptive_ece",)], out[("adaptive_mce",)], _ = cal.bin_errors(*totals, n)
    trapezoid, mean_over_k = sel.weighted_aurc(plan.error, plan.conf, W, n, plan.down)
    out[("aurc", "trapezoid")] = trapezoid
    out[("aurc", "mean_over_k")] = mean_over_k
    out[("eaurc",)] = trapezoid - sel.optimal_aurc_real(n, W @ plan.error.astype(np.float64))
    out[("auarc",)] = sel.weighted_auarc(plan.y, ~plan.error, plan.mean.shape[1], W, n, plan.up)
    out[("misclassification_auroc",)] = det.weighted_auroc(plan.conf, ~plan.error, W, plan.up)
    if plan.score is not None:
        is_target = plan.y == 1
        out[("detection_auroc",)] = det.weighted_auroc(plan.score, is_target, W, plan.score_up)
        pd_far = det.weighted_pd_at_far(plan.score, is_target, W, np.asarray(fars, dtype=float),
                                        plan.score_down, DEFAULT_CONFIDENCE)
        for i in range(len(fars)):
            out[("pd_at_far", i)] = pd_far.pd[:, i]
            out[("far_achieved", i)] = pd_far.far_achieved[:, i]
    return out


def percentile_interval(values: np.ndarray, confidence: float
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) percentile interval of each column of (B, R) replicate values, NaN-aware."""
    tail = (1 - confidence) / 2
    finite = np.isfinite(values)
    low = np.full(values.shape[1], np.nan)
    high = np.full(values.shape[1], np.nan)
    ok = finite.any(axis=0)
    if ok.any():
        low[ok] = np.nanquantile(values[:, ok], tail, axis=0)
        high[ok] = np.nanquantile(values[:, ok], 1 - tail, axis=0)
    return low, high


# -- rows of the table ------------------------------------------------------------------------

def _row_key(metric: str, variant: str, level_index: int | None, class_index: int | None,
             far_index: int | None) -> tuple | None:
    """The key of a table row among the replicate values; None: no interval for it."""
    kind = "pos" if variant.startswith("positive_class") else "top"
    if metric in ("ece", "mce", "rmsce"):
        if "quantile" in variant:
            return ("ece_quantile", kind) if metric == "ece" else None
        return (metric, kind)
    if metric == "aurc":
        return ("aurc", "mean_over_k" if variant.startswith("mean_over_k") else "trapezoid")
    if metric in ("pd_at_far", "far_achieved"):
        return (metric, far_index)
    if metric in ("pd_at_far_lower", "pd_at_far_upper"):
        return None                      # interval bounds themselves
    if metric == "detection_auroc":
        return (metric,)
    key: tuple = (metric,)
    if level_index is not None:
        key += (level_index,)
    if class_index is not None:
        key += (class_index,)
    return key


def table_replicates(acc: BootstrapAccumulator, table: Any, mean: np.ndarray, y: np.ndarray,
                     levels: Sequence[float], classes: Sequence[Any], n_bins: int,
                     fars: Sequence[float], unit: bool = False) -> np.ndarray:
    """Replicate values (B, R) of the R rows of the evaluation ``table``.

    ``unit``: one row of values for the original sample (every weight 1),
    which must reproduce the table's own values -- the check that each
    weighted formula is the metric it stands for.
    """
    N, K = mean.shape
    T, class_weights, class_hits = acc.totals(unit=unit)
    values = sum_metrics(T, acc.layout, acc.hcs_classes, total_weight(class_weights))
    values |= recall_metrics(class_hits, class_weights)
    plan = _RankPlan(mean, y, detection=K == 2 and 0 < int(np.sum(y == 1)) < N)
    R = T.shape[0]
    rank: dict[tuple, np.ndarray] = {}
    group = max(1, _RANK_ELEMENTS // max(N, 1))
    for b0 in range(0, R, group):
        reps = range(b0, min(b0 + group, R))
        W = np.ones((1, N)) if unit else acc.point_weights(y, reps)
        part = rank_metrics(plan, W, n_bins, fars)
        for key, v in part.items():
            rank.setdefault(key, np.empty(R))[b0:b0 + len(reps)] = v
    values |= rank
    level_of = {round(float(level), 12): i for i, level in enumerate(levels)}
    class_of = {c: i for i, c in enumerate(classes)}
    far_of = {f"far={far:g}": i for i, far in enumerate(fars)}
    out = np.full((R, len(table)), np.nan)
    import pandas as pd

    rows = zip(table["metric"].tolist(), table["variant"].tolist(),
               table["level"].astype(float).tolist(), table["class"].tolist(), strict=True)
    for r, (metric, variant, level, cls) in enumerate(rows):
        row_key = _row_key(metric, variant,
                           None if math.isnan(level) else level_of.get(round(level, 12)),
                           None if pd.isna(cls) else class_of[cls], far_of.get(variant))
        if row_key is not None and row_key in values:
            out[:, r] = values[row_key]
    return out


def attach(acc: BootstrapAccumulator, table: Any, mean: np.ndarray, y: np.ndarray,
           levels: Sequence[float], classes: Sequence[Any], n_bins: int,
           fars: Sequence[float], confidence: float) -> tuple[Any, BootstrapResult]:
    """The table with ``ci_low`` / ``ci_high`` columns, and the replicates behind them."""
    replicates = table_replicates(acc, table, mean, y, levels, classes, n_bins, fars)
    original = table_replicates(acc, table, mean, y, levels, classes, n_bins, fars,
                                unit=True)[0]
    low, high = percentile_interval(replicates, confidence)
    table = table.assign(ci_low=low, ci_high=high)
    return table, BootstrapResult(num_replicates=acc.weights.num_replicates,
                                  seed=acc.weights.seed, confidence=confidence,
                                  stratified=acc.stratified, replicates=replicates,
                                  original=original)
