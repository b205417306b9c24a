"""A model named as ``FILE.py:FACTORY``: how the command line, config files and
study files (and the Dask workers that run them) reach a user's network.

The file is imported as Python -- it runs, with the user's permissions, as any
script the user starts would -- and ``FACTORY(in_features, n_classes)`` must
return a :class:`uqzoo.Model`. Nothing is pickled: a worker imports the same
file by its path.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from uqzoo.errors import InvalidInputError

__all__ = ["check_source", "from_file"]

_SOURCE = re.compile(r"^(?P<path>.+\.py):(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")


def check_source(text: object, what: str = "model", base: Path | None = None) -> str:
    """``FILE.py:FACTORY`` checked (the file exists and defines FACTORY), with the path
    made absolute (relative to ``base``, by default the working folder)."""
    if not isinstance(text, str) or not (match := _SOURCE.match(text.strip())):
        raise InvalidInputError(f"{what} must look like FILE.py:FACTORY (a Python file and "
                                f"the function in it that returns the model), got {text!r}")
    path = Path(match["path"]).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    if not path.is_file():
        raise InvalidInputError(f"{what}: no Python file at {str(path)!r}")
    source = f"{path.resolve()}:{match['name']}"
    _factory(source, what)
    return source


def from_file(text: str, in_features: int, n_classes: int, *, what: str = "model",
              base: Path | None = None) -> Any:
    """The model ``FACTORY(in_features, n_classes)`` of ``FILE.py:FACTORY`` returns.

    Examples
    --------
    >>> import pathlib, tempfile, uqzoo as uz
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "net.py").write_text(
    ...     "import uqzoo as uz\\n"
    ...     "def make(in_features, n_classes):\\n"
    ...     "    return uz.MLPSpec(in_features, n_classes, hidden=(4,))\\n")
    >>> uz.models.from_file(f"{folder}/net.py:make", 3, 2).hidden
    (4,)
    """
    from uqzoo.models._base import Model

    source = check_source(text, what, base)
    factory = _factory(source, what)
    try:
        model = factory(in_features=in_features, n_classes=n_classes)
    except InvalidInputError:
        raise
    except Exception as exc:
        raise InvalidInputError(f"{what}: {source} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, Model):
        raise InvalidInputError(f"{what}: {source} must return a uqzoo.Model (uz.MLPSpec, "
                                f"uz.models.from_function(...)), got {type(model).__name__}")
    if (model.in_features, model.n_classes) != (in_features, n_classes):
        raise InvalidInputError(
            f"{what}: {source} returned a model of {model.in_features} features and "
            f"{model.n_classes} classes; the data have {in_features} and {n_classes}")
    return model


def _factory(source: str, what: str) -> Any:
    path, name = source.rsplit(":", 1)
    # One module per file, named by its path, imported once per process.
    module_name = "uqzoo_user_model_" + hashlib.sha256(path.encode()).hexdigest()[:12]
    module = sys.modules.get(module_name)
    if module is None:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise InvalidInputError(f"{what}: {path!r} cannot be imported as Python")
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise InvalidInputError(f"{what}: importing {path!r} failed: "
                                    f"{type(exc).__name__}: {exc}") from exc
        sys.modules[module_name] = module
    factory = getattr(module, name, None)
    if not callable(factory):
        raise InvalidInputError(f"{what}: {path!r} defines no function {name!r}")
    return factory
