"""Alias of :mod:`uqzoo.comparison.config`, kept for one release: import from there."""

from uqzoo.comparison.config import *  # noqa: F403
from uqzoo.comparison.config import __all__  # noqa: F401
