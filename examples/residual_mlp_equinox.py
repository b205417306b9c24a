"""A residual MLP in Equinox, as a uqzoo model.

Tabular data often favour a deeper network whose blocks each add a correction
to the representation (h + tanh(W h + b)). Equinox modules act on one row;
uqzoo vmaps them over the rows. Use it from Python (``make(n_features, K)``),
or name it on the command line:

    uqzoo compare --dataset sim-teacher --model examples/residual_mlp_equinox.py:make
"""

import equinox as eqx
import jax
import jax.numpy as jnp

import uqzoo as uz


class ResidualMLP(eqx.Module):
    """Linear -> tanh, two residual tanh blocks, linear head."""

    inp: eqx.nn.Linear
    blocks: list
    out: eqx.nn.Linear

    def __init__(self, in_features: int, n_outputs: int, key, width: int = 8,
                 depth: int = 2):
        keys = jax.random.split(key, depth + 2)
        self.inp = eqx.nn.Linear(in_features, width, key=keys[0])
        self.blocks = [eqx.nn.Linear(width, width, key=k) for k in keys[1:-1]]
        self.out = eqx.nn.Linear(width, n_outputs, key=keys[-1])

    def __call__(self, x):
        h = jnp.tanh(self.inp(x))
        for block in self.blocks:
            h = h + jnp.tanh(block(h))
        return self.out(h)


def make(in_features: int, n_classes: int) -> uz.Model:
    """The residual MLP for ``in_features`` inputs and ``n_classes`` classes."""
    n_outputs = 1 if n_classes == 2 else n_classes
    return uz.models.from_equinox(
        ResidualMLP(in_features, n_outputs, jax.random.key(0)),
        in_features=in_features, n_classes=n_classes, last_layer="out",
        init=lambda key: ResidualMLP(in_features, n_outputs, key))
