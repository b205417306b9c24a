"""A spectral 1-D CNN in Flax NNX, as a uqzoo model.

For a hyperspectral pixel, neighbouring bands are correlated: a small
convolution slides along the spectrum (the pixel's features), a tanh, then a
linear head reads the channels. Use it from Python (``make(n_bands, 2)``), or
name it on the command line:

    uqzoo compare --dataset hsi-sim --model examples/spectral_cnn_flax.py:make
"""

import jax.numpy as jnp
from flax import nnx

import uqzoo as uz


class SpectralCNN(nnx.Module):
    """conv(kernel 5 along the bands, 4 channels) -> tanh -> linear head."""

    def __init__(self, n_bands: int, n_outputs: int, rngs: nnx.Rngs,
                 channels: int = 4, width: int = 5):
        self.conv = nnx.Conv(1, channels, kernel_size=(width,), padding="VALID", rngs=rngs)
        self.head = nnx.Linear(channels * (n_bands - width + 1), n_outputs, rngs=rngs)

    def __call__(self, x):
        h = jnp.tanh(self.conv(x[:, :, None]))            # (N, bands - width + 1, channels)
        return self.head(h.reshape(x.shape[0], -1))


def make(in_features: int, n_classes: int) -> uz.Model:
    """The CNN for ``in_features`` bands and ``n_classes`` classes (one logit for two)."""
    n_outputs = 1 if n_classes == 2 else n_classes
    return uz.models.from_flax(
        SpectralCNN(in_features, n_outputs, nnx.Rngs(0)),
        in_features=in_features, n_classes=n_classes, last_layer="head",
        init=lambda key: SpectralCNN(in_features, n_outputs, nnx.Rngs(key)))
