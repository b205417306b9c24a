"""The options of ``compare`` that come in families, each family checked once.

``uz.compare``, ``uqzoo compare``'s flags, a compare config file and a study
file all take the conformal options (``conformal``, ``conformal_score``,
``conformal_mondrian``) and the label-noise options (``label_noise``,
``label_noise_kind``), and ``recalibrate``. Each checks them here, with one function per family,
so that a value is allowed in one place exactly when it is allowed in all.
Only the name in a message differs: a caller passes its :class:`Names`, and a
mistake names what its user typed -- ``--conformal`` on the command line,
``run.toml: compare.conformal:`` in a file, ``conformal`` in Python.

A single value is checked by the module that owns it
(:func:`uqzoo.conformal.check_level`, :func:`uqzoo.datasets.noise.check_rate`,
...); a family adds what ties its options together: an option that refines
another (``conformal_score``) needs that other one set.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import numpy as np

from uqzoo import tomlfile as toml
from uqzoo._validation import _show
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["FLAGS", "PYTHON", "Names", "conformal", "label_noise", "recalibrate"]

# The defaults of the refining options, as uz.compare's signature has them.
DEFAULT_CONFORMAL_SCORE = "lac"
DEFAULT_LABEL_NOISE_KIND = "symmetric"


@dataclasses.dataclass(frozen=True)
class Names:
    """How one caller spells compare's options in its messages.

    Attributes
    ----------
    style : {"python", "flag", "file"}
        Keyword arguments (``conformal_score``), command-line flags
        (``--conformal-score``) or the keys of a TOML file's table.
    path : pathlib.Path or None
        The file (style ``"file"``).
    table : str
        The file's table holding the options (``"compare"``, ``"study"``).
    """

    style: Literal["python", "flag", "file"] = "python"
    path: Path | None = None
    table: str = ""

    @classmethod
    def file(cls, path: Path, table: str) -> Names:
        """The keys of ``[table]`` in the TOML file ``path``."""
        return cls("file", path, table)

    def __call__(self, option: str) -> str:
        """The subject of a message about ``option``: what the user typed."""
        if self.style == "flag":
            return "--" + option.replace("_", "-")
        if self.style == "file":
            assert self.path is not None        # Names.file always gives one
            return toml.subject(self.path, f"{self.table}.{option}")
        return option

    def setting(self, option: str, value: str) -> str:
        """``option`` set to ``value``, written as this caller's user writes it."""
        if self.style == "flag":
            return f"{self(option)} {value}"
        if self.style == "file":
            return f"{option} = {value}"
        return f"{option}={value}"

    def unset(self, what: str) -> str:
        """How this caller's user asks for ``what`` (an option's "off"), as a clause."""
        if self.style == "file":
            return f', or "none" (or leave the key out) for {what}'
        if self.style == "python":
            return f", or None for {what}"
        return ""                               # a flag left out

    def switch(self) -> str:
        """How this caller's user writes the two booleans."""
        return "true or false" if self.style == "file" else "True or False"


PYTHON = Names("python")
FLAGS = Names("flag")


def _needs(names: Names, option: str, needed: str, value: str, example: str) -> None:
    raise InvalidInputError(f"{names(option)} needs {names.setting(needed, value)} "
                            f"(e.g. {example})")


def conformal(level: object, score: object = None, mondrian: object = None,
              names: Names = PYTHON) -> tuple[float | None, str, bool]:
    """``(level or None, score, mondrian)`` of compare's conformal options, checked.

    ``score`` and ``mondrian`` None mean not given (their defaults, ``"lac"``
    and False, are filled in); given, each needs a ``level``. The level is
    checked by :func:`uqzoo.conformal.check_level`, the score by
    :func:`uqzoo.conformal.check_score`.

    Raises
    ------
    InvalidTypeError
        A value of the wrong type.
    InvalidInputError
        A level outside (0, 1), an unknown score, or a score or Mondrian
        calibration without a level.
    """
    from uqzoo.conformal import check_level, check_score

    if score is not None:
        score = check_score(score, names("conformal_score"))
    if mondrian is not None and not isinstance(mondrian, (bool, np.bool_)):
        raise InvalidTypeError(f"{names('conformal_mondrian')} must be {names.switch()}, got "
                               f"{_show(mondrian)}")
    if level is None:
        for option, given in (("conformal_score", score), ("conformal_mondrian", mondrian)):
            if given is not None:           # asked for sets, but none would be made
                _needs(names, option, "conformal", "LEVEL", "0.9, the label sets' coverage")
        return None, DEFAULT_CONFORMAL_SCORE, False
    return (check_level(level, names("conformal")),
            DEFAULT_CONFORMAL_SCORE if score is None else str(score), bool(mondrian))


def label_noise(rate: object, kind: object = None,
                names: Names = PYTHON) -> tuple[float | None, str]:
    """``(rate or None, kind)`` of compare's label-noise options, checked.

    ``kind`` None means not given (``"symmetric"`` is filled in); given, it
    needs a ``rate``. The rate is checked by
    :func:`uqzoo.datasets.noise.check_rate`, the kind by
    :func:`uqzoo.datasets.noise.check_kind`.

    Raises
    ------
    InvalidTypeError
        A value of the wrong type.
    InvalidInputError
        A rate outside [0, 1), an unknown kind, or a kind without a rate.
    """
    from uqzoo.datasets.noise import check_kind, check_rate

    if kind is not None:
        kind = check_kind(kind, names("label_noise_kind"))
    if rate is None:
        if kind is not None:
            _needs(names, "label_noise_kind", "label_noise", "RATE", "0.1")
        return None, DEFAULT_LABEL_NOISE_KIND
    return (check_rate(rate, names("label_noise")),
            DEFAULT_LABEL_NOISE_KIND if kind is None else str(kind))


def recalibrate(method: object, names: Names = PYTHON) -> str | None:
    """compare's ``recalibrate``, checked: None, or one of
    :data:`uqzoo.recalibrate.RECALIBRATION_METHODS`.

    Raises
    ------
    InvalidInputError
        Anything else (a file checks first that its value is a string).
    """
    from uqzoo.recalibrate import RECALIBRATION_METHODS

    if method is None:
        return None
    if not isinstance(method, str) or method not in RECALIBRATION_METHODS:
        raise InvalidInputError(
            f"{names('recalibrate')} must be one of {', '.join(RECALIBRATION_METHODS)} "
            f"(uz.recalibrate){names.unset('no recalibration')}, got {_show(method)}")
    return method
