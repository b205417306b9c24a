"""Alias of :mod:`uqzoo.comparison.report`, kept for one release: import from there."""

from uqzoo.comparison.report import *  # noqa: F403
from uqzoo.comparison.report import __all__  # noqa: F401
