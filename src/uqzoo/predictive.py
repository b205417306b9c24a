"""The predictive engine: parameter draws × inputs → probabilities, chunked over N.

Every method emits parameter draws in the shared layout, so this one engine
serves all of them. Two entry points:

- :func:`proba_draws` materialises the (S, N, K) probabilities, for
  small N;
- :func:`summarize` streams over N in chunks and keeps only what the
  evaluator needs per point -- posterior-mean probabilities, equal-tailed
  interval bounds at several levels, and the expected entropy -- so memory is
  O(S × chunk), never O(S × N). This is what turns a posterior into numbers
  for a scene of millions of pixels.

Equal-tailed bounds follow ``np.quantile``'s default ("linear") definition:
the level-L interval is [Q((1 - L)/2), Q((1 + L)/2)].
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from uqzoo._channels import InputAugmentation
from uqzoo._progress import progress_bar as progress
from uqzoo._quantiles import SUMMARY_INTERVALS, quantile_plan
from uqzoo._validation import (
    DEFAULT_LEVELS,
    as_float_matrix,
    check_choice,
    check_int,
    check_levels,
)
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.models import Model
from uqzoo.nets import torch as tnet
from uqzoo.spec import MLPSpec
from uqzoo.transform import LOGIT_TRANSFORMS, LogitTransform, check_transform

__all__ = [
    "DEFAULT_LEVELS",
    "LOGIT_TRANSFORMS",
    "LogitTransform",
    "PredictiveSummary",
    "augmented_draws",
    "augmented_summarize",
    "default_workers",
    "logit_draws",
    "proba_draws",
    "run_workers",
    "summarize",
]

# Work-buffer budget per chunk, in float32 elements: a worker's largest
# buffer holds S × chunk × K (or, linearised, S × chunk × widest layer)
# elements. 2**22 elements = 16 MiB; a worker holds about five such buffers (the logits twice,
# draw-major and point-major, probabilities, entropies, sort),
# so a chunk costs tens of MiB whatever N is, far below the 2 GiB the engine
# promises.
_CHUNK_ELEMENTS = 2**22
# Row cap: a draw group's activations, chunk × ~200 floats, should stay in the
# per-core L2 cache (2 MiB here); 256-2048 rows ran within 10 % of each other.
_MAX_CHUNK_ROWS = 2048

# Draws go through the network in groups of G1, hidden-major: a group's first
# layer is one dense (G1·h1, D + 1) × (D + 1, n) product with Xᵀ (a row of ones
# appended for the biases), G1 chosen so that the product has about
# _FIRST_LAYER_WIDTH rows (enough to run at the machine's matmul peak, few
# enough that the group's activations stay in cache). Each later layer is one
# batched product of the G1 draws' (h_out, h_in) weights with their (h_in, n)
# activations, long rows of n points that a small matrix product handles well.
# Measured per point with S = 1000 and a 200-10-10-1 net on one core (thread
# CPU time, 2,048-row chunks): first layer 25.4 µs (the peak-FLOP figure is
# 26), 10×10 layer 4.6, 10×1 layer 1.4, the (S, n) → (n, S) transpose 1.0;
# the logits 43 µs in all, against 57 µs for the point-major layout this
# replaced (X·W products, later layers as block-diagonal products that spent
# most of their FLOPs on zeros).
_FIRST_LAYER_WIDTH = 200

# Any other model runs through its own JAX ``apply``, vmapped over the draws
# (_ModelForward). Its chunk is sized from XLA's own account of the compiled
# program's working memory (temporaries and output per row, read off a probe
# chunk of _PROBE_ROWS rows), so that one chunk's buffers stay within
# _GENERIC_BYTES, the same 16 MiB as the MLP's buffers. Measured with S = 1000
# and the 2-10-10-1 MLP written as a JAX function (80 kB a row): 256-row chunks
# on two worker threads ran within 4 % of MLPSpec's fused forward, 16-row ones
# 2.2× slower (per-chunk overhead), 1024-row ones 1.3× (cache).
_GENERIC_BYTES = 2**24
_PROBE_ROWS = 64
# Where XLA gives no memory account: each draw taken to hold this many floats a row.
_GENERIC_WIDTH = 1024

_INPLACE_ACTIVATIONS = {"tanh": torch.Tensor.tanh_, "relu": torch.Tensor.relu_,
                        "sigmoid": torch.Tensor.sigmoid_}

@dataclasses.dataclass(frozen=True, eq=False)
class PredictiveSummary:
    """Per-point summary of the posterior predictive.

    Attributes
    ----------
    mean : ndarray of shape (N, K), float64
        Posterior-mean class probabilities.
    levels : tuple of float
        Credible levels, ascending.
    lower, upper : ndarray of shape (L, N, K), float64
        Equal-tailed interval bounds; index i belongs to ``levels[i]``.
    expected_entropy : ndarray of shape (N,), float64, or None
        Mean over draws of the entropy (nats) of each draw's class
        probabilities; ``entropy(mean) - expected_entropy`` is the mutual
        information (the epistemic part of the predictive entropy).
    num_draws : int
        S, the number of parameter draws summarised.
    interval_kind : {"equal_tailed", "order_statistic"}
        How the bounds were read from the S draws
        (:func:`uqzoo.metrics.quantile_plan`).
    """

    mean: np.ndarray
    levels: tuple[float, ...]
    lower: np.ndarray
    upper: np.ndarray
    expected_entropy: np.ndarray | None
    num_draws: int
    interval_kind: str = "equal_tailed"

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds, each (N, K), of the interval at ``level``."""
        matches = [i for i, lv in enumerate(self.levels) if math.isclose(lv, level)]
        if not matches:
            raise InvalidInputError(
                f"level {level} was not summarised; available levels: {self.levels}"
            )
        return self.lower[matches[0]], self.upper[matches[0]]

    @property
    def n_points(self) -> int:
        return self.mean.shape[0]


def _prepare(spec: Model, draws: Mapping, X: object, anchor: Mapping | None
             ) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray] | None]:
    if not isinstance(spec, Model):
        raise InvalidTypeError(f"spec must be a uqzoo.Model, got {type(spec).__name__}")
    draws = spec.check_draws(draws)
    X = as_float_matrix(X, "X", n_features=spec.in_features)
    if anchor is not None:
        anchor = spec.check_params(anchor, "anchor")
    return draws, X, anchor


def _chunk_size(spec: Model, num_draws: int, chunk_size: int | None,
                linearized: bool = False) -> int:
    """Rows per chunk, so that no per-chunk buffer exceeds ``_CHUNK_ELEMENTS``.

    The fast forward keeps (chunk, S, K) arrays per chunk (its logits once
    draw-major and once point-major), and a draw group's hidden activations
    (G1 · widest hidden layer, chunk); the
    linearised forward holds (S, chunk, widest layer) activations and
    tangents. So memory is O(S × chunk × width), never O(S × N).
    """
    if chunk_size is not None:
        return check_int(chunk_size, "chunk_size", minimum=1)
    if not isinstance(spec, MLPSpec):           # no program at hand: the fixed guess
        per_row = 4 * num_draws * max(spec.n_classes, _GENERIC_WIDTH) * (2 if linearized else 1)
        return max(1, min(_MAX_CHUNK_ROWS, _GENERIC_BYTES // per_row))
    if linearized:
        per_row = num_draws * max(spec.layer_sizes[1:])
        return max(1, _CHUNK_ELEMENTS // per_row)
    group = min(num_draws, max(1, _FIRST_LAYER_WIDTH // spec.layer_sizes[1]))
    per_row = max(num_draws * spec.n_classes, group * max(spec.layer_sizes[1:]))
    return max(1, min(_MAX_CHUNK_ROWS, _CHUNK_ELEMENTS // per_row))


class _Forward:
    """Logits of all draws for a chunk of rows, point-major: (n, S, n_outputs).

    Draws are processed in groups (see the constants above), hidden-major:
    the chunk is transposed once to (D + 1, n) with a row of ones, a group's
    first layer is one product with the group's weights stacked row-wise,
    biases as the last column, (G1·h1, D + 1), and each later layer one
    batched product (G1, h_out, h_in) × (G1, h_in, n) plus the biases.
    Activations are applied in place; the last layer writes its (G1·n_out, n)
    rows of the draw-major logits, and one transpose per chunk gives the
    (n, S·n_outputs) row-per-point layout the quantile selection needs.

    With an ``anchor`` the network is linearised around it instead
    (:func:`uqzoo.nets.torch.linearized_logits`, draw-major, then transposed).
    A ``transform`` (recalibration) is applied in place to the finished
    logits, so every path below -- probabilities, means, bounds, entropies --
    sees the transformed ones.
    """

    def __init__(self, spec: MLPSpec, draws: Mapping[str, np.ndarray],
                 anchor: Mapping[str, np.ndarray] | None,
                 transform: LogitTransform | None = None):
        self._set_transform(spec, draws, transform)
        self.mlp = spec
        S = self.num_draws
        self.activation = _INPLACE_ACTIVATIONS[spec.activation]
        self.anchor: dict[str, torch.Tensor] | None = None
        if anchor is not None:
            self.params = tnet.to_tensors(draws)
            self.anchor = tnet.to_tensors(anchor)
            return
        sizes = spec.layer_sizes
        # groups: (s0, s1, first layer (g·h1, D + 1) with the biases as last
        # column, later layers as (weights (g, out, in), biases (g, out, 1))).
        self.groups = []
        for s0, s1 in _split(S, max(1, _FIRST_LAYER_WIDTH // sizes[1])):
            w, b = draws["layers.0.weight"][s0:s1], draws["layers.0.bias"][s0:s1]
            first = np.concatenate([w, b[..., None]], axis=2).reshape(-1, sizes[0] + 1)
            later = [(_tensor(draws[f"layers.{i}.weight"][s0:s1]),
                      _tensor(draws[f"layers.{i}.bias"][s0:s1, :, None]))
                     for i in range(1, spec.n_layers)]
            self.groups.append((s0, s1, _tensor(first), later))
        widest_group = max(s1 - s0 for s0, s1, _, _ in self.groups)
        self.hidden_width = widest_group * max(spec.hidden, default=0)

    def chunk_rows(self, chunk_size: int | None) -> int:
        """Rows per chunk: ``chunk_size``, or what keeps the work buffers in budget."""
        return _chunk_size(self.spec, self.num_draws, chunk_size,
                           linearized=self.anchor is not None)

    def _set_transform(self, spec: Model, draws: Mapping[str, np.ndarray],
                       transform: LogitTransform | None) -> None:
        self.spec = spec
        self.num_draws = next(iter(draws.values())).shape[0]
        self.scale: torch.Tensor | None = None
        self.shift: torch.Tensor | None = None
        if transform is not None:
            self.scale = torch.from_numpy(transform.scale.astype(np.float32))
            if np.any(transform.shift != 0):
                self.shift = torch.from_numpy(transform.shift.astype(np.float32))

    def workspace(self, rows: int) -> tuple[torch.Tensor, ...]:
        """Flat buffers reused across chunks: two for a group's hidden activations,
        one for the transposed inputs with a row of ones, (D + 1, n), and one for
        the draw-major logits, (S·n_outputs, n); a chunk of n ≤ ``rows`` rows
        views their first elements as contiguous matrices."""
        if self.anchor is not None:
            return torch.empty(1), torch.empty(1), torch.empty(1), torch.empty(1)
        size = max(1, rows * self.hidden_width)
        return (torch.empty(size), torch.empty(size),
                torch.empty((self.spec.in_features + 1) * rows),
                torch.empty(self.num_draws * self.spec.n_outputs * rows))

    def logits(self, X: torch.Tensor, out: torch.Tensor,
               workspace: tuple[torch.Tensor, ...]) -> torch.Tensor:
        """Fill ``out`` (n, S·n_outputs) with the logits of chunk X (n, D); return it."""
        self._raw_logits(X, out, workspace)
        if self.scale is not None:
            # (n, S, n_outputs): the per-logit scale and shift broadcast over draws.
            view = out.view(X.shape[0], self.num_draws, -1)
            view.mul_(self.scale)
            if self.shift is not None:
                view.add_(self.shift)
        return out

    def _raw_logits(self, X: torch.Tensor, out: torch.Tensor,
                    workspace: tuple[torch.Tensor, ...]) -> torch.Tensor:
        n = X.shape[0]
        if self.anchor is not None:
            lin = tnet.linearized_logits(self.mlp, self.anchor, self.params, X)
            out.view(n, self.num_draws, -1).copy_(lin.transpose(0, 1))
            return out
        n_out = self.spec.n_outputs
        act = self.activation
        XT = workspace[2][:(self.spec.in_features + 1) * n].view(-1, n)
        XT[:-1].copy_(X.T)
        XT[-1].fill_(1.0)
        logits = workspace[3][:self.num_draws * n_out * n].view(-1, n)  # (S·n_out, n)
        for s0, s1, first, later in self.groups:
            g = s1 - s0
            rows = logits[s0 * n_out:s1 * n_out]
            if not later:                      # no hidden layer: logistic/softmax regression
                torch.mm(first, XT, out=rows)
                continue
            h = torch.mm(first, XT, out=workspace[0][:first.shape[0] * n].view(-1, n))
            act(h)
            for i, (weight, bias) in enumerate(later, start=1):
                fan_in, fan_out = weight.shape[2], weight.shape[1]
                if i == len(later):
                    target = rows.view(g, n_out, n)
                else:
                    target = workspace[i % 2][:g * fan_out * n].view(g, fan_out, n)
                torch.baddbmm(bias, weight, h.view(g, fan_in, n), out=target)
                if i < len(later):
                    act(target)
                h = target
        out.copy_(logits.T)
        return out


class _ModelForward(_Forward):
    """The same logits for any :class:`uqzoo.Model`: ``vmap`` of its ``apply`` over the draws.

    One jitted program per model (cached, :func:`_model_program`) evaluates
    all S draws on a chunk; the last chunk is padded to the chunk's rows so
    that every chunk runs the one compiled shape. With an ``anchor`` the
    model is linearised there (``jax.linearize``: f(θ*) + J(θ*)(θ_s − θ*),
    the Laplace "glm" predictive), the Jacobian never formed. Worker threads
    call the one compiled program concurrently (JAX releases the GIL while
    it runs), as they run the MLP's torch forward.
    """

    def __init__(self, spec: Model, draws: Mapping[str, np.ndarray],
                 anchor: Mapping[str, np.ndarray] | None,
                 transform: LogitTransform | None = None):
        import jax.numpy as jnp

        self._set_transform(spec, draws, transform)
        self.jax_anchor = (None if anchor is None
                           else {k: jnp.asarray(v) for k, v in anchor.items()})
        self.jax_draws = {k: jnp.asarray(v) for k, v in draws.items()}
        self.program = _model_program(spec, anchor is not None)
        self.rows = 0                        # the compiled chunk's rows, set by workspace

    def workspace(self, rows: int) -> tuple[torch.Tensor, ...]:
        self.rows = rows
        return ()

    def chunk_rows(self, chunk_size: int | None) -> int:
        if chunk_size is not None:
            return check_int(chunk_size, "chunk_size", minimum=1)
        probe = np.zeros((_PROBE_ROWS, self.spec.in_features), np.float32)
        args = ((self.jax_draws, probe) if self.jax_anchor is None
                else (self.jax_anchor, self.jax_draws, probe))
        try:
            memory = self.program.lower(*args).compile().memory_analysis()
            per_row = (memory.temp_size_in_bytes + memory.output_size_in_bytes) / _PROBE_ROWS
        except Exception:               # a backend without the account: the fixed guess
            return super().chunk_rows(None)
        return max(1, min(_MAX_CHUNK_ROWS, int(_GENERIC_BYTES // max(per_row, 1.0))))

    def _raw_logits(self, X: torch.Tensor, out: torch.Tensor,
                    workspace: tuple[torch.Tensor, ...]) -> torch.Tensor:
        n = X.shape[0]
        x = X.numpy()
        if n < self.rows:
            x = np.concatenate([x, np.zeros((self.rows - n, x.shape[1]), x.dtype)])
        args = ((self.jax_draws, x) if self.jax_anchor is None
                else (self.jax_anchor, self.jax_draws, x))
        z = np.array(self.program(*args))[:, :n]         # (S, n, n_outputs), a writable copy
        out.view(n, self.num_draws, -1).copy_(torch.from_numpy(z.transpose(1, 0, 2)))
        return out


@functools.lru_cache(maxsize=32)
def _model_program(model: Model, linearized: bool) -> Any:
    """Jitted (S, n, n_outputs) logits of S draws at n rows: ``vmap(model.apply)``,
    or with ``linearized`` the first-order expansion at an anchor."""
    import jax

    if not linearized:
        return jax.jit(jax.vmap(model.apply, in_axes=(0, None)))

    def linear(anchor, draws, X):
        at_anchor, tangent = jax.linearize(lambda p: model.apply(p, X), anchor)
        delta = jax.tree_util.tree_map(lambda d, a: d - a, draws, anchor)
        return at_anchor[None] + jax.vmap(tangent)(delta)

    return jax.jit(linear)


def _make_forward(spec: Model, draws: Mapping[str, np.ndarray],
                  anchor: Mapping[str, np.ndarray] | None,
                  transform: LogitTransform | None) -> _Forward:
    """The MLP's fused forward, or any model's own (:class:`_ModelForward`)."""
    if isinstance(spec, MLPSpec):
        return _Forward(spec, draws, anchor, transform)
    return _ModelForward(spec, draws, anchor, transform)


def _split(total: int, size: int) -> list[tuple[int, int]]:
    """[0, total) in near-equal consecutive pieces of at most ``size``."""
    pieces = -(-total // size)
    bounds = np.linspace(0, total, pieces + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


def _tensor(array: np.ndarray) -> torch.Tensor:
    """A float32 torch view of ``array``; read-only arrays (a dataset's) are copied.

    torch cannot share memory it may not write and warns when asked to; a
    chunk's copy costs little next to the S forward passes it feeds.
    """
    array = np.ascontiguousarray(array, dtype=np.float32)
    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(array)


def _row_mean(values: torch.Tensor) -> np.ndarray:
    """Mean over the last axis of an (n, S) float32 tensor, float64 accumulation.

    Sums blocks of 128 in float32 (vectorised, error ~1e-7 relative) and the
    block sums in float64: 15x cheaper than ``sum(dtype=float64)``, which
    converts every element.
    """
    S = values.shape[-1]
    full = S - S % 128
    total = values[:, :full].unflatten(1, (-1, 128)).sum(2).double().sum(1) if full \
        else torch.zeros(values.shape[0], dtype=torch.float64)
    if full < S:
        total += values[:, full:].double().sum(1)
    return (total / S).numpy()


def _binary_proba(logits: torch.Tensor) -> torch.Tensor:
    """(..., 1) logits to (..., 2) probabilities [σ(-z), σ(z)], exact in both tails."""
    return torch.cat([torch.sigmoid(-logits), torch.sigmoid(logits)], dim=-1)


@torch.no_grad()
def proba_draws(spec: Model, draws: Mapping, X: object, *,
                        anchor: Mapping | None = None,
                        chunk_size: int | None = None,
                        logit_transform: LogitTransform | None = None) -> np.ndarray:
    """Class probabilities of every parameter draw at every point (the engine).

    :meth:`Posterior.predict_proba_draws` is the user-facing form: it takes
    only X, subsamples draws and applies the posterior's predictive ("glm"
    linearisation); this function evaluates whatever parameters it is given.

    Parameters
    ----------
    spec : Model
        :class:`uqzoo.MLPSpec` (a fused torch forward) or any other model
        (its ``apply``, vmapped over the draws).
    draws : dict of arrays
        Parameter draws in the shared layout, each with a leading S axis.
    X : array of shape (N, D)
    anchor : dict of arrays, optional
        When given, the network is linearised around these parameters (the
        Laplace "glm" predictive) instead of evaluated at each draw.
    chunk_size : int, optional
        Rows per chunk; by default sized to keep each work buffer under 16 MiB.
    logit_transform : LogitTransform, optional
        Applied to every draw's logits before the sigmoid or softmax
        (recalibration, :func:`uqzoo.recalibrate`).

    Returns
    -------
    ndarray of shape (S, N, K), float32

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> spec = uz.MLPSpec(3, 2, hidden=(4,))
    >>> draws = spec.init_params(seed=0, num=5)
    >>> uz.proba_draws(spec, draws, np.zeros((7, 3))).shape
    (5, 7, 2)
    """
    return _draw_by_draw(spec, draws, X, anchor, chunk_size, logit_transform,
                         probabilities=True)


@torch.no_grad()
def logit_draws(spec: Model, draws: Mapping, X: object, *, anchor: Mapping | None = None,
                chunk_size: int | None = None,
                logit_transform: LogitTransform | None = None) -> np.ndarray:
    """The logits of every parameter draw at every point, before any link.

    What :func:`proba_draws` feeds to the sigmoid or softmax (post-hoc
    recalibration fits its transform on these). Arguments as
    :func:`proba_draws`.

    Returns
    -------
    ndarray of shape (S, N, n_outputs), float32
        ``n_outputs`` is 1 for two classes (the logit of class 1), K otherwise.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> from uqzoo.predictive import logit_draws
    >>> spec = uz.MLPSpec(3, 2, hidden=(4,))
    >>> draws = spec.init_params(seed=0, num=5)
    >>> logit_draws(spec, draws, np.zeros((7, 3))).shape
    (5, 7, 1)
    """
    return _draw_by_draw(spec, draws, X, anchor, chunk_size, logit_transform,
                         probabilities=False)


def _draw_by_draw(spec: Model, draws: Mapping, X: object, anchor: Mapping | None,
                  chunk_size: int | None, logit_transform: LogitTransform | None,
                  probabilities: bool) -> np.ndarray:
    """(S, N, K) probabilities or (S, N, n_outputs) logits of every draw, by chunk."""
    draws, X, anchor = _prepare(spec, draws, X, anchor)     # checks spec first
    width = spec.n_classes if probabilities else spec.n_outputs
    forward = _make_forward(spec, draws, anchor, check_transform(spec, logit_transform))
    S, N = forward.num_draws, X.shape[0]
    chunk = min(N, forward.chunk_rows(chunk_size))
    workspace = forward.workspace(chunk)
    logits_buf = torch.empty(chunk, S * spec.n_outputs)
    out = np.empty((S, N, width), dtype=np.float32)
    for start in range(0, N, chunk):
        xc = _tensor(X[start:start + chunk])
        n = xc.shape[0]
        z = forward.logits(xc, logits_buf[:n], workspace).view(n, S, spec.n_outputs)
        if probabilities:
            z = _binary_proba(z) if spec.n_classes == 2 else torch.softmax(z, dim=-1)
        out[:, start:start + n] = z.transpose(0, 1).numpy()
    return out


def _ranks(plan: list[tuple[int, int, float]]) -> list[int]:
    """The sorted distinct ranks a quantile plan reads."""
    return sorted({r for lo, hi, _ in plan for r in (lo, hi)})


def _interpolate(selected: np.ndarray, ranks: list[int], plan) -> np.ndarray:
    """Quantiles from sorted values; ``selected`` has the plan's ranks on the last axis."""
    index = {r: i for i, r in enumerate(ranks)}
    out = []
    for lo, hi, frac in plan:
        a = selected[..., index[lo]]
        b = selected[..., index[hi]]
        out.append(a + frac * (b - a))
    return np.stack(out)                                    # (2L, ...)


def _select_in_place(values: np.ndarray) -> None:
    """Put the order statistics of each row (last axis) in place, float32.

    A full in-place sort, not ``np.partition`` with the 2-4 ranks per level:
    numpy sorts float32 rows with a SIMD sorting network (x86-simd-sort,
    AVX-512/AVX2), while a partition with several ranks falls back to scalar
    introselect. Measured on rows of 1000 float32 (2-core Xeon, AVX-512):
    sort 2.0 µs/row, partition at the 16 ranks of 4 levels 34 µs/row,
    ``torch.topk``/``kthvalue`` 12-16 µs/row.
    """
    values.sort(axis=-1)


class _Summarizer:
    """Per-chunk statistics into preallocated (N, ...) outputs.

    One instance per worker thread: it owns the worker's buffers, which are
    reused for every chunk (fresh multi-MiB allocations page-fault on every
    chunk and cost as much as the tanh). Chunks write disjoint rows of the
    outputs, so workers never share a written element.
    """

    def __init__(self, forward: _Forward, X: np.ndarray, chunk: int, ranks, plan,
                 mean, lower, upper, expected_entropy):
        self.forward, self.X, self.ranks, self.plan = forward, X, ranks, plan
        self.mean, self.lower, self.upper = mean, lower, upper
        self.expected_entropy = expected_entropy
        S, K = forward.num_draws, forward.spec.n_classes
        self.workspace = forward.workspace(chunk)
        self.logits = torch.empty(chunk, S * forward.spec.n_outputs)
        self.prob = torch.empty(chunk, S * (1 if K == 2 else K))
        self.entropy = torch.empty(chunk, S) if K > 2 else None
        # K > 2: probabilities transposed to (n, K, S), rows contiguous for selection.
        self.by_class = torch.empty(chunk, K, S) if K > 2 else None

    def __call__(self, start: int, stop: int) -> None:
        with torch.no_grad():
            if self.forward.spec.n_classes == 2:
                self._binary(start, stop)
            else:
                self._multiclass(start, stop)

    def _binary(self, start: int, stop: int) -> None:
        n = stop - start
        z = self.forward.logits(_tensor(self.X[start:stop]), self.logits[:n],
                                self.workspace)                        # (n, S)
        p = torch.sigmoid(z, out=self.prob[:n])
        # Float32 per element, float64 accumulation over the S draws.
        self.mean[start:stop, 1] = _row_mean(p)
        # Binary entropy from the logit, stable in both tails: H = softplus(z) - p·z.
        ent = torch.nn.functional.softplus(z)
        ent.addcmul_(p, z, value=-1.0)
        self.expected_entropy[start:stop] = _row_mean(ent)
        # Class 0 from σ(-z), not 1 - mean: keeps its precision when p ≈ 1.
        self.mean[start:stop, 0] = _row_mean(torch.neg(z, out=p).sigmoid_())
        # Order statistics commute with the monotone sigmoid: select on the
        # logits, map only the selected ranks.
        zn = z.numpy()
        _select_in_place(zn)
        sel = zn[:, self.ranks].astype(np.float64)
        # exp overflows to inf for logits beyond ±709 (a strong recalibration can
        # scale them there); 1 / (1 + inf) = 0 is then the right probability.
        with np.errstate(over="ignore"):
            q1 = _interpolate(1.0 / (1.0 + np.exp(-sel)), self.ranks, self.plan)  # (2L, n)
        self.lower[:, start:stop, 1] = q1[0::2]
        self.upper[:, start:stop, 1] = q1[1::2]
        # σ(-z) is decreasing, so class 0's lower bound at level L interpolates
        # σ(-z) at the ranks of class 1's upper bound, with the same fractions:
        # Q_q(1 - p) = 1 - Q_{1-q}(p) exactly, without the cancellation of 1 - p.
        with np.errstate(over="ignore"):
            q0 = _interpolate(1.0 / (1.0 + np.exp(sel)), self.ranks, self.plan)
        self.lower[:, start:stop, 0] = q0[1::2]
        self.upper[:, start:stop, 0] = q0[0::2]

    def _multiclass(self, start: int, stop: int) -> None:
        n, S, K = stop - start, self.forward.num_draws, self.forward.spec.n_classes
        z = self.forward.logits(_tensor(self.X[start:stop]), self.logits[:n],
                                self.workspace).view(n, S, K)
        logp = torch.log_softmax(z, dim=-1)
        p = torch.exp(logp, out=self.prob[:n].view(n, S, K))
        assert self.by_class is not None and self.entropy is not None    # set for K > 2
        by_class = self.by_class[:n]
        by_class.copy_(p.transpose(1, 2))                                  # (n, K, S)
        self.mean[start:stop] = _row_mean(by_class.view(n * K, S)).reshape(n, K)
        ent = torch.sum(logp.mul_(p), dim=2, out=self.entropy[:n])        # -H per draw
        self.expected_entropy[start:stop] = -_row_mean(ent)
        values = by_class.numpy()
        _select_in_place(values)
        q = _interpolate(values[..., self.ranks].astype(np.float64), self.ranks, self.plan)
        self.lower[:, start:stop] = q[0::2]
        self.upper[:, start:stop] = q[1::2]


def run_workers(work: Callable[[int], None], n_workers: int, name: str) -> None:
    """``work(0)``, ..., ``work(n_workers - 1)`` in a thread pool, each thread with one
    torch thread (its own OpenMP/MKL setting), or ``work(0)`` in the caller's thread.

    ``torch.set_num_threads`` sets the calling thread's count and records the
    count that threads started later begin with, so each worker hands back the
    caller's count when it is done: the call leaves the process as it found it.
    """
    if n_workers == 1:
        work(0)
        return
    caller_threads = torch.get_num_threads()

    def pooled(worker: int) -> None:
        torch.set_num_threads(1)
        try:
            work(worker)
        finally:
            torch.set_num_threads(caller_threads)

    with ThreadPoolExecutor(n_workers, thread_name_prefix=name) as pool:
        for future in [pool.submit(pooled, w) for w in range(n_workers)]:
            future.result()


def default_workers() -> int:
    """Worker threads :func:`summarize` uses by default: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                     # not on Linux
        return max(1, os.cpu_count() or 1)


def summarize(spec: Model, draws: Mapping, X: object,
              levels: Sequence[float] = DEFAULT_LEVELS, *,
              anchor: Mapping | None = None, chunk_size: int | None = None,
              interval: str = "equal_tailed", workers: int | None = None,
              progress_bar: bool = False,
              logit_transform: LogitTransform | None = None) -> PredictiveSummary:
    """Stream the posterior predictive over X in chunks and summarise each point.

    Parameters
    ----------
    spec, draws, X
        The network, its S parameter draws (shared layout, leading S axis) and
        the (N, D) points, as :func:`proba_draws`.
    levels : sequence of float in (0, 1)
        Credible levels of the equal-tailed intervals, all computed in one pass.
    anchor : dict of arrays, optional
        As :func:`proba_draws` (Laplace "glm").
    chunk_size : int, optional
        Rows per chunk. Memory is O(S × chunk_size × K) per worker.
    interval : {"equal_tailed", "order_statistic"}
        Percentile intervals interpolated as ``np.quantile`` does, or
        order-statistic intervals that hold a new exchangeable draw with
        probability at least the level for any S (see
        :func:`uqzoo.metrics.min_draws`).
    workers : int, optional
        Worker threads the chunks are spread over; by default the cores
        available to the process (:func:`default_workers`). With 1, the
        chunks run in the calling thread and torch uses its own intra-op
        threads as the caller set them.
    progress_bar : bool
        Show a tqdm bar over chunks.
    logit_transform : LogitTransform, optional
        As :func:`proba_draws`.

    Returns
    -------
    PredictiveSummary
        ``mean`` (N, K), ``lower``/``upper`` (L, N, K), ``expected_entropy`` (N,).

    Notes
    -----
    Bounds equal ``np.quantile(p, q, axis=0)`` (linear interpolation) of the
    (S, N, K) probabilities up to float32 rounding, means and entropies are
    accumulated in float64. For two classes the quantiles are selected on the
    logits and mapped through the sigmoid: order statistics commute with a
    monotone map, so the result equals ``np.quantile`` of the probabilities
    while the selection runs on one column.

    Chunks are spread over ``workers`` threads, each running torch
    single-threaded: the per-chunk work is many small products and a numpy
    sort, which scale better across chunks than inside each operation.
    torch's thread count is per thread (an OpenMP setting), so the caller's
    ``torch.get_num_threads()`` is never changed, also when several threads
    call ``summarize`` at once. Results agree across worker counts and
    chunkings to float32 rounding, not bitwise (a different BLAS thread
    count or block shape may round differently); the same call on the same
    machine with the same settings is bit-identical.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> spec = uz.MLPSpec(3, 2, hidden=(4,))
    >>> draws = spec.init_params(seed=0, num=50)
    >>> s = uz.summarize(spec, draws, np.zeros((7, 3)), levels=(0.8, 0.95))
    >>> s.mean.shape, s.lower.shape
    ((7, 2), (2, 7, 2))
    """
    levels = check_levels(levels)
    draws, X, anchor = _prepare(spec, draws, X, anchor)
    forward = _make_forward(spec, draws, anchor, check_transform(spec, logit_transform))
    S, N, K = forward.num_draws, X.shape[0], spec.n_classes
    chunk = min(N, forward.chunk_rows(chunk_size))
    interval = check_choice(interval, "interval", SUMMARY_INTERVALS)
    plan, unbounded = quantile_plan(S, levels, interval)
    ranks = _ranks(plan)
    L = len(levels)
    mean = np.empty((N, K))
    lower = np.empty((L, N, K))
    upper = np.empty((L, N, K))
    expected_entropy = np.empty(N)

    starts = list(range(0, N, chunk))
    workers = default_workers() if workers is None else check_int(workers, "workers",
                                                                  minimum=1, maximum=1024)
    n_workers = min(workers, len(starts))
    bar = progress(total=len(starts), desc="summarize", unit="chunk", enabled=progress_bar)
    lock = threading.Lock()
    pending = iter(starts)

    def work(worker: int) -> None:
        summarizer = _Summarizer(forward, X, chunk, ranks, plan, mean, lower, upper,
                                 expected_entropy)
        # Each worker takes the next chunk when it is free, so a worker slowed by
        # another process does not leave the others idle at the end. A chunk's
        # result does not depend on which worker computes it.
        while True:
            with lock:
                start = next(pending, None)
            if start is None:
                return
            summarizer(start, min(start + chunk, N))
            with lock:
                bar.update(1)

    try:
        run_workers(work, n_workers, "uqzoo-summarize")
    finally:
        bar.close()
    # Too few draws for an order-statistic interval at these levels: the honest
    # interval is the whole range.
    lower[list(unbounded)] = 0.0
    upper[list(unbounded)] = 1.0
    return PredictiveSummary(mean=mean, levels=levels, lower=lower, upper=upper,
                             expected_entropy=expected_entropy, num_draws=S,
                             interval_kind=interval)


# -- test-time augmentation: each draw sees its own augmented copy of X ---------------------

def _augmented(spec: Model, draws: Mapping, X: object, augmentation: InputAugmentation,
               draw_index: Sequence[int] | np.ndarray | None, anchor: Mapping | None,
               logit_transform: LogitTransform | None, probabilities: bool) -> np.ndarray:
    """(S, N, K) probabilities or (S, N, n_outputs) logits, draw s at augmentation
    ``draw_index[s]`` of X: the engine's forward on each draw's own inputs."""
    draws, X, anchor = _prepare(spec, draws, X, anchor)
    if augmentation.n_features != spec.in_features:
        raise InvalidInputError(f"the input augmentation is for {augmentation.n_features} "
                                f"features; the network takes {spec.in_features}")
    S = next(iter(draws.values())).shape[0]
    index = range(S) if draw_index is None else [int(i) for i in draw_index]
    if len(index) != S:
        raise InvalidInputError(f"draw_index must name one augmentation per draw ({S}), got "
                                f"{len(index)}")
    width = spec.n_classes if probabilities else spec.n_outputs
    out = np.empty((S, X.shape[0], width), dtype=np.float32)
    for s, augment in enumerate(index):
        one = {k: v[s:s + 1] for k, v in draws.items()}
        out[s] = _draw_by_draw(spec, one, augmentation.apply(X, augment), anchor, None,
                               logit_transform, probabilities)[0]
    return out


@torch.no_grad()
def augmented_draws(spec: Model, draws: Mapping, X: object,
                    augmentation: InputAugmentation, *,
                    draw_index: Sequence[int] | np.ndarray | None = None,
                    anchor: Mapping | None = None,
                    logit_transform: LogitTransform | None = None,
                    probabilities: bool = True) -> np.ndarray:
    """Probabilities (or logits) of every draw on its own augmented copy of X.

    Test-time augmentation (:mod:`uqzoo.methods.tta`): draw s is the network
    with parameters ``draws[s]`` applied to ``augmentation.apply(X,
    draw_index[s])``. Arguments as :func:`proba_draws`; ``draw_index`` says
    which augmentation each draw uses (0..S-1 by default: a subset of a
    posterior's draws keeps its augmentations).

    Returns
    -------
    ndarray of shape (S, N, K), float32
        Or (S, N, n_outputs) logits with ``probabilities=False``.
    """
    check_transform(spec, logit_transform)
    return _augmented(spec, draws, X, augmentation, draw_index, anchor, logit_transform,
                      probabilities)


def augmented_summarize(spec: Model, draws: Mapping, X: object,
                        levels: Sequence[float] = DEFAULT_LEVELS, *,
                        augmentation: InputAugmentation, anchor: Mapping | None = None,
                        chunk_size: int | None = None, interval: str = "equal_tailed",
                        progress_bar: bool = False,
                        logit_transform: LogitTransform | None = None) -> PredictiveSummary:
    """:func:`summarize` of :func:`augmented_draws`, streamed over X in chunks.

    The same summary (means, interval bounds as ``np.quantile``, expected
    entropy) from each chunk's (S, n, K) probabilities; memory O(S × chunk ×
    D). Runs in the calling thread.
    """
    levels = check_levels(levels)
    draws, X, anchor = _prepare(spec, draws, X, anchor)
    check_transform(spec, logit_transform)
    S, N, K = next(iter(draws.values())).shape[0], X.shape[0], spec.n_classes
    if chunk_size is None:
        chunk = max(1, min(_MAX_CHUNK_ROWS,
                           _CHUNK_ELEMENTS // (S * max(K, spec.in_features))))
    else:
        chunk = check_int(chunk_size, "chunk_size", minimum=1)
    chunk = min(max(N, 1), chunk)
    interval = check_choice(interval, "interval", SUMMARY_INTERVALS)
    plan, unbounded = quantile_plan(S, levels, interval)
    ranks = _ranks(plan)
    L = len(levels)
    mean, expected_entropy = np.empty((N, K)), np.empty(N)
    lower, upper = np.empty((L, N, K)), np.empty((L, N, K))
    starts = list(range(0, N, chunk))
    bar = progress(total=len(starts), desc="summarize", unit="chunk", enabled=progress_bar)
    try:
        for start in starts:
            stop = min(start + chunk, N)
            p = _augmented(spec, draws, X[start:stop], augmentation, None, anchor,
                           logit_transform, True).astype(np.float64)       # (S, n, K)
            mean[start:stop] = p.mean(axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                plogp = np.where(p > 0, p * np.log(p), 0.0)
            expected_entropy[start:stop] = -plogp.sum(axis=2).mean(axis=0)
            values = np.sort(np.moveaxis(p, 0, -1), axis=-1)              # (n, K, S)
            q = _interpolate(values[..., ranks], ranks, plan)              # (2L, n, K)
            lower[:, start:stop] = q[0::2]
            upper[:, start:stop] = q[1::2]
            bar.update(1)
    finally:
        bar.close()
    lower[list(unbounded)] = 0.0
    upper[list(unbounded)] = 1.0
    return PredictiveSummary(mean=mean, levels=levels, lower=lower, upper=upper,
                             expected_entropy=expected_entropy, num_draws=S,
                             interval_kind=interval)
