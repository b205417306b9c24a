"""Exceptions raised at uqzoo's public boundary.

Every error a user can provoke with bad input is one of these. Each subclasses
the built-in exception a Python user would expect (``ValueError`` for a bad
value, ``TypeError`` for a bad type) so ``except ValueError`` keeps working,
and each message names the argument, the bad value and what is allowed.
"""

from __future__ import annotations

__all__ = [
    "UqzooError",
    "InvalidInputError",
    "InvalidTypeError",
    "FileFormatError",
    "ConvergenceWarning",
    "DataWarning",
]


class UqzooError(Exception):
    """Base class of every exception uqzoo raises on purpose."""


class InvalidInputError(UqzooError, ValueError):
    """An argument has the right type but a value that is not allowed."""


class InvalidTypeError(UqzooError, TypeError):
    """An argument has a type that is not allowed."""


class FileFormatError(UqzooError, ValueError):
    """A file is unreadable, truncated, or not the kind of file expected."""


class ConvergenceWarning(UserWarning):
    """A fit finished but its diagnostics say it did not converge."""


class DataWarning(UserWarning):
    """The data are accepted but something in them will make a fit poor or misleading."""
