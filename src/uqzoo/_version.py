"""The version of uqzoo, and of the packages a result depends on -- each in one place.

``__version__`` is read from the installed package's metadata, so
``pyproject.toml`` is its only source. :func:`versions` is what a saved
posterior (``versions`` attribute) and a study row (``versions`` column)
record, so that a result can be traced to the software that made it.
"""

from __future__ import annotations

import contextlib
import platform
from importlib import metadata

__all__ = ["RECORDED_PACKAGES", "__version__", "versions"]

try:
    __version__ = metadata.version("uqzoo")
except metadata.PackageNotFoundError:     # a source tree on sys.path, not installed
    __version__ = "0+unknown"

# The packages whose versions can change a result: the numerics (numpy, scipy,
# torch, JAX), the samplers and optimisers, and the data and study layers.
RECORDED_PACKAGES = ("uqzoo", "numpy", "scipy", "torch", "jax", "jaxlib", "numpyro", "optax",
                     "pandas", "xarray", "dask", "distributed")


def versions() -> dict[str, str]:
    """Python's version and those of :data:`RECORDED_PACKAGES` that are installed."""
    out = {"python": platform.python_version()}
    for package in RECORDED_PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out
