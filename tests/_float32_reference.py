"""Float64 reference forward and rigorous float32 rounding-error bounds.

Tests of the forwards and of the predictive engine compare float32 results
with an exact (float64) reference. The tolerance is not a magic number: it is
the standard worst-case bound for a float32 dot product of length n computed
in any order, |fl(w·h + b) - (w·h + b)| <= γ_{n+1} (|w|·|h| + |b|) with
γ_n = n u / (1 - n u), u = 2**-24 (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., §3.1), propagated through the layers with the
activations' Lipschitz constant 1, plus a few ulp for each elementwise
function (tanh, exp, sigmoid).
"""

from __future__ import annotations

import numpy as np

from uqzoo.spec import MLPSpec

U32 = 2.0**-24          # unit roundoff of float32
ELEMENTWISE_ULPS = 4    # tanh/exp/log1p/sigmoid: libm and SLEEF are within 1-4 ulp


def gamma(n: int) -> float:
    return n * U32 / (1 - n * U32)


_ACT = {
    "tanh": np.tanh,
    "relu": lambda a: np.maximum(a, 0.0),
    "sigmoid": lambda a: 1.0 / (1.0 + np.exp(-a)),
}


def forward64(spec: MLPSpec, params: dict, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact-ish (float64) logits of one parameter set, and their float32 error bound.

    Returns
    -------
    logits : (N, n_outputs) float64
    bound : (N, n_outputs) float64, a bound on |float32 forward - logits|
    """
    h = np.asarray(X, dtype=np.float64)
    err = np.zeros_like(h)
    for i in range(spec.n_layers):
        w = np.asarray(params[f"layers.{i}.weight"], dtype=np.float64)
        b = np.asarray(params[f"layers.{i}.bias"], dtype=np.float64)
        a = h @ w.T + b
        magnitude = np.abs(h) @ np.abs(w.T) + np.abs(b)
        err = err @ np.abs(w.T) + gamma(w.shape[1] + 1) * (magnitude + err @ np.abs(w.T))
        if i < spec.n_layers - 1:
            h = _ACT[spec.activation](a)
            err = err + ELEMENTWISE_ULPS * U32 * np.abs(h)
        else:
            h = a
    return h, err


def proba64(spec: MLPSpec, logits: np.ndarray, logit_bound: np.ndarray):
    """Probabilities (N, K) from float64 logits, and the float32 error bound.

    σ and softmax are 1-Lipschitz in the max norm of the logits, and their
    float32 evaluation adds a few ulp of the result.
    """
    if spec.n_classes == 2:
        z = logits[:, 0]
        p1 = 1.0 / (1.0 + np.exp(-z))
        p = np.stack([1.0 - p1, p1], axis=-1)
        dz = logit_bound[:, :1]
    else:
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
        dz = 2 * logit_bound.max(axis=-1, keepdims=True)   # shifts of all logits
    return p, dz + (ELEMENTWISE_ULPS + spec.n_classes) * U32


def draws_proba64(spec: MLPSpec, draws: dict, X: np.ndarray):
    """A plain per-draw loop: (S, N, K) float64 probabilities and (S, N, K) bounds."""
    S = next(iter(draws.values())).shape[0]
    probs, bounds = [], []
    for s in range(S):
        z, dz = forward64(spec, {k: v[s] for k, v in draws.items()}, X)
        p, dp = proba64(spec, z, dz)
        probs.append(p)
        bounds.append(np.broadcast_to(dp, p.shape))
    return np.stack(probs), np.stack(bounds)
