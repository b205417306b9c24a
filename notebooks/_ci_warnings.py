"""Warnings as errors inside a notebook's kernel, as pytest makes them in tests.

nbmake runs each notebook in a kernel of its own, which pytest's
``filterwarnings`` setting never reaches. The first code cell of every
notebook carries nbmake metadata (``post_cell_execute``) that calls
:func:`apply`, so a warning raised while CI executes a notebook fails it,
with the same short ignore list as the tests. Someone running the notebooks
in Jupyter is unaffected: only nbmake reads that metadata.
"""

from __future__ import annotations

import builtins
import importlib
import tomllib
import warnings
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

# Warnings only a Jupyter kernel sees, not ours to fix, in pytest's form.
KERNEL_ONLY = [
    # numpyro.util imports tqdm.auto at import time; inside a kernel without
    # ipywidgets tqdm then warns that it falls back to its text bar.
    "ignore:IProgress not found:tqdm.TqdmWarning",
]


def _category(name: str) -> type[Warning]:
    if not name:
        return Warning
    if "." not in name:
        return getattr(builtins, name)
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def apply(pyproject: Path = PYPROJECT) -> list[str]:
    """Install pytest's ``filterwarnings`` entries of ``pyproject`` in this process.

    Entries read as pytest reads them, ``action:message:category:module``
    with regular expressions, later entries taking precedence. Returns them.
    """
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    entries = [*config["tool"]["pytest"]["ini_options"]["filterwarnings"], *KERNEL_ONLY]
    for entry in entries:
        action, message, category, module = [*entry.split(":"), "", "", ""][:4]
        warnings.filterwarnings(action.strip(), message=message.strip(),
                                category=_category(category.strip()), module=module.strip())
    return entries
