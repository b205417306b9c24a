"""Exceptions raised at uqzoo's public boundary.

Every error a user can provoke with bad input is one of these. Each subclasses
the built-in exception a Python user would expect (``ValueError`` for a bad
value, ``TypeError`` for a bad type) so ``except ValueError`` keeps working,
and each message names the argument, the bad value and what is allowed.
"""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "DataWarning",
    "FileFormatError",
    "InvalidInputError",
    "InvalidTypeError",
    "OutputPathError",
    "SlowFitWarning",
    "UnsupportedModelError",
    "UqzooError",
]


class UqzooError(Exception):
    """Base class of every exception uqzoo raises on purpose."""


class InvalidInputError(UqzooError, ValueError):
    """An argument has the right type but a value that is not allowed."""


class InvalidTypeError(UqzooError, TypeError):
    """An argument has a type that is not allowed."""


class UnsupportedModelError(UqzooError, TypeError):
    """A method needs something of the model that the model does not declare.

    MC dropout needs to know where dropout applies, Laplace's last-layer
    subset needs the model's last layer, the Pyro backends and HMC's input
    rotation need :class:`uqzoo.MLPSpec`. The message names the method, the
    missing capability and how to declare it; :func:`uqzoo.compare` leaves
    such a method out with a note instead of failing.
    """


class FileFormatError(UqzooError, ValueError):
    """A file is unreadable, truncated, or not the kind of file expected."""


class OutputPathError(UqzooError, OSError):
    """A file or folder cannot be written where asked.

    Raised before any work when an output path is unusable (its folder is
    missing or not writable, a directory stands where a file is meant, the
    name is too long for the filesystem, the existing file is read-only or
    not a regular file), and when a write fails on the way (full disk,
    read-only filesystem, quota). It subclasses ``OSError``, the built-in a
    Python user catches for file-system trouble; ``errno`` and ``filename``
    are set when the operating system reported the failure.
    """

    def __str__(self) -> str:
        # OSError's own __str__ shows "[Errno N] strerror: filename" once errno
        # is set, which would hide the sentence that names the path and the fix.
        return str(self.args[0]) if self.args else ""


class ConvergenceWarning(UserWarning):
    """A fit finished but its diagnostics say it did not converge."""


class SlowFitWarning(UserWarning):
    """A fit is expected to take long; said before it starts, with what to change."""


class DataWarning(UserWarning):
    """The data are accepted but something in them will make a fit poor or misleading."""
