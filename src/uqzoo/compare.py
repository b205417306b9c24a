"""Alias of :mod:`uqzoo.comparison.compare`, kept for one release: import from there."""

from uqzoo.comparison.compare import *  # noqa: F403
from uqzoo.comparison.compare import __all__  # noqa: F401
