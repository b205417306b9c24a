"""Reading uqzoo's TOML files (study files and compare config files), with errors
that name the file, the key and what is allowed.

One reader and one set of checks for both kinds of file, so a mistake reads
the same wherever it is made: ``study.toml: methods[0].num_samples: must be an
integer, got a string '10'``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from uqzoo._limits import MAX_CONFIG_BYTES
from uqzoo._validation import _show
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError, UqzooError

__all__ = ["SPEC_FROM_DATA", "allowed", "check_int", "check_keys", "check_number",
           "check_option_value", "check_str", "check_table", "normalise", "read_delta",
           "read_levels", "read_spec", "read_toml", "spec_defaults", "subject", "type_name",
           "where"]

# MLPSpec fields every data set sets itself; a file may set the others.
SPEC_FROM_DATA = ("in_features", "n_classes")


def where(path: Path, key: str) -> str:
    return f"{path.name}: {key}" if key else path.name


def subject(path: Path, key: str) -> str:
    """``key`` of the file as the subject of a shared check's message ("NAME must be
    ..."), so that it reads as every other file message: ``run.toml: compare.conformal:
    must be ...``."""
    return f"{where(path, key)}:"


def allowed(keys: Sequence[str]) -> str:
    return ", ".join(keys)


def check_keys(table: Mapping, names: Sequence[str], path: Path, key: str,
               what: str) -> None:
    for name in table:
        if name not in names:
            at = f"{key}.{name}" if key else name
            raise InvalidInputError(
                f"{where(path, at)}: unknown key in {what}; allowed: {allowed(names)}")


def check_table(value: object, path: Path, key: str) -> dict:
    if not isinstance(value, dict):
        raise InvalidTypeError(
            f"{where(path, key)}: must be a table ({{ key = value, ... }}), got "
            f"{_show(value)}")
    return value


def type_name(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


def check_str(value: object, path: Path, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{where(path, key)}: must be a string, got "
                               f"{type_name(value)} {_show(value)}")
    return value


def check_int(value: object, path: Path, key: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{where(path, key)}: must be an integer, got "
                               f"{type_name(value)} {_show(value)}")
    if value < minimum:
        raise InvalidInputError(f"{where(path, key)}: must be >= {minimum}, got {value}")
    return value


def check_number(value: object, path: Path, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(f"{where(path, key)}: must be a number, got "
                               f"{type_name(value)} {_show(value)}")
    if not math.isfinite(value):
        raise InvalidInputError(f"{where(path, key)}: must be finite, got {value}")
    return float(value)


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.\-]+)\s*=""")


def _duplicate_key(text: str) -> tuple[str, int] | None:
    """(key, line) of the first key assigned twice in one table, for tomllib's
    "Cannot overwrite a value", which does not say which key."""
    seen: set[tuple[str, str]] = set()
    table = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = f"{header.group(1)}#{number}" if line.lstrip().startswith("[[") \
                else header.group(1)
            continue
        assign = _ASSIGN.match(line)
        if assign:
            name = assign.group(1).strip("\"'")
            if (table, name) in seen:
                return (f"{table.split('#')[0]}.{name}" if table else name), number
            seen.add((table, name))
    return None


def read_toml(path: Path, what: str = "study file") -> tuple[dict, str]:
    """The parsed table and the text of the TOML file ``path`` (``what`` names it in errors).

    Only a regular file of at most MAX_CONFIG_BYTES is read: ``/dev/zero`` or a
    huge file would fill memory, and a FIFO would block forever.
    """
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (then refused below).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise FileFormatError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise FileFormatError(f"{path}: is a folder, not a {what} (.toml)") from None
    except OSError as exc:
        raise FileFormatError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise FileFormatError(f"{path}: is a folder, not a {what} (.toml)")
        raise FileFormatError(f"{path}: not a regular file (a device, FIFO or socket); "
                              f"a {what} must be a .toml file")
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise FileFormatError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise FileFormatError(f"{path}: larger than {MAX_CONFIG_BYTES // 2**20} MiB, the most a "
                              f"{what} may hold (real ones are a few KB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFormatError(f"{path}: not a text (UTF-8) {what}: {exc}") from None
    try:
        return tomllib.loads(text), text
    except RecursionError:
        raise FileFormatError(f"{path.name}: tables or arrays nested too deeply to read; a "
                              f"{what} nests a few levels") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        duplicate = _duplicate_key(text) if "overwrite" in message else None
        if duplicate is not None:
            key, line = duplicate
            raise FileFormatError(
                f"{path.name}: {key}: key given twice (line {line}); each key may be set "
                "once per table") from None
        declared = re.match(r"Cannot declare \((.*)\) twice \(at line (\d+)", message)
        if declared:
            key = ".".join(part.strip().strip("'\"") for part in declared.group(1).split(",")
                           if part.strip())
            raise FileFormatError(
                f"{path.name}: [{key}]: table given twice (line {declared.group(2)}); "
                "declare each table once") from None
        if "twice" in message or "Duplicate" in message:
            raise FileFormatError(f"{path.name}: a key or table given twice: {message}") \
                from None
        raise FileFormatError(f"{path.name}: not valid TOML: {message}") from None


def normalise(value: object, path: Path, key: str) -> Any:
    """A TOML value as canonical JSON data (no dates, no NaN)."""
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{where(path, key)}: must be finite, got {value}")
        return value
    if isinstance(value, list):
        return [normalise(v, path, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: normalise(v, path, f"{key}.{k}") for k, v in value.items()}
    raise InvalidTypeError(f"{where(path, key)}: {type(value).__name__} values are not "
                           f"allowed in a uqzoo TOML file, got {_show(value)}")


def check_option_value(value: Any, default: object, path: Path, key: str) -> Any:
    """Check a data-set option against the type of its default; ints become floats
    where the default is a float, so ``1`` and ``1.0`` give the same task."""
    if default is None:
        return value
    if isinstance(default, bool):
        ok = isinstance(value, bool)
        expected = "a boolean"
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
        expected = "an integer"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        expected = "a number"
        if ok:
            value = float(value)
    elif isinstance(default, str):
        ok = isinstance(value, str)
        expected = "a string"
    elif isinstance(default, (tuple, list)):
        ok = isinstance(value, list) and len(value) == len(default)
        expected = f"an array of {len(default)} values"
        if ok:
            value = [check_option_value(v, d, path, f"{key}[{i}]")
                     for i, (v, d) in enumerate(zip(value, default, strict=True))]
    else:
        return value
    if not ok:
        raise InvalidTypeError(f"{where(path, key)}: must be {expected} (its default is "
                               f"{default!r}), got {type_name(value)} {_show(value)}")
    return value


def read_levels(value: object, path: Path, key: str) -> tuple[float, ...]:
    """A ``levels`` array: credible levels in (0, 1), sorted, none repeated."""
    from uqzoo._validation import check_levels

    if not isinstance(value, list) or not value:
        raise InvalidTypeError(f"{where(path, key)}: must be a non-empty array of levels in "
                               f"(0, 1), got {type_name(value)} {_show(value)}")
    for i, level in enumerate(value):
        check_number(level, path, f"{key}[{i}]")
    try:
        return check_levels(value, "levels")
    except UqzooError as exc:
        raise type(exc)(f"{where(path, key)}: {exc}") from None


def read_delta(value: object, path: Path, key: str) -> float:
    """The High Confidence Set threshold δ in (0, 0.5)."""
    from uqzoo._validation import check_delta

    return check_delta(check_number(value, path, key), subject(path, key))


def spec_defaults() -> dict[str, Any]:
    """The :class:`~uqzoo.MLPSpec` options a file may set, with their defaults (lists
    for tuples, as TOML has them)."""
    from uqzoo.spec import MLPSpec

    out = {}
    for field in dataclasses.fields(MLPSpec):
        if field.name not in SPEC_FROM_DATA:
            default = field.default
            out[field.name] = list(default) if isinstance(default, tuple) else default
    return out


def read_spec(raw: object, path: Path) -> dict[str, Any]:
    """The ``[spec]`` table of a file: the options it sets, checked and typed as their
    defaults are (``hidden`` a list of ints, ``prior_scale`` a float), or only
    ``model = "FILE.py:FACTORY"`` -- the user's own network, the path relative to
    the file's folder, made absolute."""
    from uqzoo.spec import MLPSpec

    table = normalise(check_table(raw, path, "spec"), path, "spec")
    if "model" in table:
        others = sorted(set(table) - {"model"})
        if others:
            raise InvalidInputError(f"{where(path, 'spec.model')}: the model file sets the "
                                    f"whole network; remove {others} from [spec]")
        from uqzoo.models.source import check_source
        try:
            return {"model": check_source(table["model"], "model",
                                          base=Path(path).parent)}
        except UqzooError as exc:
            raise type(exc)(f"{where(path, 'spec.model')}: {exc}") from None
    defaults = spec_defaults()
    names = list(defaults)
    for name in table:
        if name in SPEC_FROM_DATA:
            raise InvalidInputError(f"{where(path, 'spec.' + name)}: set by each data set, "
                                    f"not by the file; allowed: {allowed(names)}")
    check_keys(table, names, path, "spec", "[spec]")
    spec: dict[str, Any] = {}
    for name, value in table.items():
        at = f"spec.{name}"
        if name == "hidden":
            if not isinstance(value, list) or any(isinstance(h, bool) or not isinstance(h, int)
                                                  for h in value):
                raise InvalidTypeError(f"{where(path, at)}: must be an array of integer "
                                       f"widths like [10, 10], got {_show(value)}")
            argument: Any = tuple(value)
        else:
            value = argument = check_option_value(value, defaults[name], path, at)
        try:
            MLPSpec(1, 2, **{name: argument})
        except UqzooError as exc:
            raise type(exc)(f"{where(path, at)}: {exc}") from None
        spec[name] = value
    return spec
