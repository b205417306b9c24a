"""Torch forward over the shared parameter layout (``torch.func`` friendly).

All functions accept one parameter set (``"layers.i.weight"`` of shape
(out, in)) or draws with leading batch axes (S, out, in): the matrix products
broadcast, so the same code serves a single network and a stack of them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

from uqzoo.models import Model
from uqzoo.spec import MLPSpec

if TYPE_CHECKING:
    from uqzoo.transform import LogitTransform

__all__ = [
    "MLP",
    "forward_logits",
    "linearized_logits",
    "log_likelihood",
    "log_likelihood_terms",
    "log_prior",
    "logits_to_proba",
    "predict_proba",
    "to_tensors",
]

_ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "sigmoid": torch.sigmoid}


def to_tensors(params: Mapping, dtype=torch.float32) -> dict[str, torch.Tensor]:
    """Numpy (or torch) arrays to torch tensors, without copying when possible."""
    return {k: torch.as_tensor(v, dtype=dtype) for k, v in params.items()}


def forward_logits(spec: MLPSpec, params: Mapping[str, torch.Tensor],
                   X: torch.Tensor, *,
                   hidden_masks: Sequence[torch.Tensor] | None = None) -> torch.Tensor:
    """Logits of the network.

    Parameters
    ----------
    spec : MLPSpec
    params : dict of tensors
        One parameter set, or draws with leading axes ``B`` (e.g. (S,)).
    X : tensor of shape (N, D), or (*B, N, D)
    hidden_masks : sequence of tensors, optional
        One multiplier per hidden layer, broadcastable to (*B, N, h_i), applied
        to that layer's output (dropout: 0 or 1/(1 - p)).

    Returns
    -------
    tensor of shape (*B, N, n_outputs)
    """
    act = _ACTIVATIONS[spec.activation]
    h = X
    last = spec.n_layers - 1
    for i in range(spec.n_layers):
        weight = params[f"layers.{i}.weight"]
        bias = params[f"layers.{i}.bias"]
        h = torch.matmul(h, weight.transpose(-1, -2)) + bias.unsqueeze(-2)
        if i < last:
            h = act(h)
            if hidden_masks is not None:
                h = h * hidden_masks[i]
    return h


def log_likelihood_terms(spec: Model, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """log p(y_i | x_i, θ) of each row, shape (*B, N): Bernoulli (one logit) or categorical.

    ``y`` holds integer labels in 0..K-1, shape (N,) or (*B, N).
    """
    if spec.n_classes == 2:
        z = logits[..., 0]
        # log σ(z) for y = 1 and log σ(-z) for y = 0, written stably.
        return -torch.nn.functional.softplus(torch.where(y == 1, -z, z))
    logp = torch.log_softmax(logits, dim=-1)
    index = y.expand(logp.shape[:-1]).unsqueeze(-1)
    return logp.gather(-1, index)[..., 0]


def log_likelihood(spec: MLPSpec, params: Mapping[str, torch.Tensor], X: torch.Tensor,
                   y: torch.Tensor) -> torch.Tensor:
    """Summed log-likelihood of labels y (N,) in 0..K-1, shape (*B,)."""
    return log_likelihood_terms(spec, forward_logits(spec, params, X), y).sum(-1)


def log_prior(spec: MLPSpec, params: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """log density of the spec's prior, N(0, ``spec.prior_sd(key)``²) per parameter, shape (*B,)."""
    total = torch.zeros(())
    for key, shape in spec.param_shapes().items():
        scale = spec.prior_sd(key)
        value = params[key]
        dims = tuple(range(value.dim() - len(shape), value.dim()))
        total = total + (-0.5 * (value / scale).square().sum(dim=dims)
                         - math.prod(shape) * (math.log(scale) + 0.5 * math.log(2 * math.pi)))
    return total


def logits_to_proba(spec: Model, logits: torch.Tensor,
                    transform: LogitTransform | None = None) -> torch.Tensor:
    """(..., N, n_outputs) logits to (..., N, K) probabilities.

    ``transform``: a posterior's recalibration map z ↦ scale · z + shift
    (:class:`uqzoo.transform.LogitTransform`), applied to the logits first.
    """
    if transform is not None:
        # copies: the transform's arrays are read-only, which torch cannot share
        logits = (logits * torch.tensor(transform.scale.tolist(), dtype=logits.dtype)
                  + torch.tensor(transform.shift.tolist(), dtype=logits.dtype))
    if spec.n_classes == 2:
        p = torch.sigmoid(logits)
        # sigmoid(-z) rather than 1 - sigmoid(z): exact in the tails.
        return torch.cat([torch.sigmoid(-logits), p], dim=-1)
    return torch.softmax(logits, dim=-1)


def predict_proba(spec: MLPSpec, params: Mapping[str, torch.Tensor],
                  X: torch.Tensor) -> torch.Tensor:
    """(..., N, K) class probabilities."""
    return logits_to_proba(spec, forward_logits(spec, params, X))


def linearized_logits(spec: MLPSpec, anchor: Mapping[str, torch.Tensor],
                      draws: Mapping[str, torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Logits of the network linearised at ``anchor`` (the Laplace "glm" predictive).

    f_lin(x, θ_s) = f(x, θ*) + J_θ f(x, θ*) (θ_s − θ*) for every draw θ_s,
    with the Jacobian-vector products taken by autodiff of
    :func:`forward_logits`, batched over the draws with ``torch.func.vmap``.

    Parameters
    ----------
    spec : MLPSpec
    anchor : dict of tensors
        θ*, one parameter set.
    draws : dict of tensors
        θ_s, with a leading axis S.
    X : tensor of shape (N, D)

    Returns
    -------
    tensor of shape (S, N, n_outputs)

    Notes
    -----
    The products come from reverse mode twice (the "double-vjp" trick: the
    vjp u ↦ Jᵀu is linear in u, so its own vjp at any u maps v to J v),
    not from ``torch.func.jvp``: torch's forward-mode levels are
    process-wide, so two threads of the predictive engine calling ``jvp`` at
    once fail ("Trying to access a forward AD level with an invalid index"),
    while reverse mode is thread-safe. In the same process the two cost the
    same within noise (benchmarks/README.md, Laplace section).

    Examples
    --------
    >>> import torch
    >>> from uqzoo.spec import MLPSpec
    >>> spec = MLPSpec(3, 2, hidden=(4,))
    >>> anchor = to_tensors(spec.init_params(0))
    >>> draws = to_tensors(spec.init_params(1, num=5))
    >>> linearized_logits(spec, anchor, draws, torch.zeros(7, 3)).shape
    torch.Size([5, 7, 1])
    """
    primals = {key: anchor[key] for key in spec.param_shapes()}
    tangents = {key: draws[key] - value for key, value in primals.items()}
    # torch.func transforms differentiate under an outer no_grad too (the engine's).
    forward = torch.func.vjp(lambda p: forward_logits(spec, p, X), primals)
    logits, pull_back = forward[0], forward[1]
    jvp = torch.func.vjp(lambda u: pull_back(u)[0], torch.zeros_like(logits))[1]
    return logits + torch.func.vmap(lambda t: jvp(t)[0])(tangents)


class MLP(nn.Module):
    """The spec's network as an ``nn.Module`` (state_dict keys match the layout).

    For interoperability (``torch.func.stack_module_state``, user code); the
    forward pass is :func:`forward_logits`. ``dropout`` > 0 drops hidden units
    per row in training mode, the usual MC-dropout placement.
    """

    def __init__(self, spec: MLPSpec, dropout: float = 0.0):
        super().__init__()
        self.spec = spec
        self.dropout = float(dropout)
        sizes = spec.layer_sizes
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(sizes))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        masks = None
        if self.training and self.dropout > 0:
            ones = X.new_ones
            masks = [nn.functional.dropout(ones((*X.shape[:-1], width)), self.dropout)
                     for width in self.spec.hidden]
        return forward_logits(self.spec, dict(self.named_parameters()), X, hidden_masks=masks)
