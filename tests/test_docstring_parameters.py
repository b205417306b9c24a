"""Every parameter a public docstring documents is in its signature.

The API reference is built with ``mkdocs build --strict``, where griffe turns a
documented parameter that the signature lacks into an error; that build runs
last in CI and needs the docs extra. This test catches the same mistake in the
fast suite: it walks what ``docs/api/*.md`` renders (``::: target``, its public
members and methods) and compares each numpydoc ``Parameters`` list with
``inspect.signature``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

API = Path(__file__).resolve().parents[1] / "docs" / "api"
_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")


def _targets() -> list[str]:
    found = []
    for page in sorted(API.glob("*.md")):
        found += re.findall(r"^:::\s*(\S+)", page.read_text(), flags=re.M)
    return found


def _resolve(target: str) -> object:
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(target)


def _documented(doc: str) -> list[str]:
    """The names in a numpydoc ``Parameters`` section (entries at its indentation)."""
    lines = inspect.cleandoc(doc).split("\n")
    names: list[str] = []
    for i, line in enumerate(lines[:-1]):
        if line.strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"}:
            body = lines[i + 2:]
            for j, entry in enumerate(body):
                if j + 1 < len(body) and body[j + 1].strip() and set(body[j + 1].strip()) == {"-"}:
                    break  # the next section's header
                if entry and not entry.startswith(" "):
                    if (match := _ENTRY.match(entry)) is None:
                        break
                    names += [n.strip().lstrip("*") for n in match.group(1).split(",")]
            break
    return names


def _callables(obj: object, seen: set[int]) -> list[tuple[str, object]]:
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    out: list[tuple[str, object]] = []
    if inspect.ismodule(obj):
        for name, member in vars(obj).items():
            if not name.startswith("_") and getattr(member, "__module__", None) == obj.__name__:
                out += _callables(member, seen)
    elif inspect.isclass(obj):
        out.append((obj.__qualname__, obj))
        for name, member in vars(obj).items():
            if not name.startswith("_") and inspect.isfunction(member):
                out.append((f"{obj.__qualname__}.{name}", member))
            elif isinstance(member, (classmethod, staticmethod)) and not name.startswith("_"):
                out.append((f"{obj.__qualname__}.{name}", member.__func__))
    elif callable(obj):
        out.append((getattr(obj, "__qualname__", repr(obj)), obj))
    return out


def _cases() -> list[tuple[str, object]]:
    seen: set[int] = set()
    cases: list[tuple[str, object]] = []
    for target in _targets():
        cases += _callables(_resolve(target), seen)
    return cases


def test_the_walk_finds_the_public_api():
    names = {name for name, _ in _cases()}
    assert {"compare", "fit", "load_posterior"} <= names


@pytest.mark.parametrize(("name", "obj"), _cases(), ids=lambda v: v if isinstance(v, str) else "")
def test_documented_parameters_are_in_the_signature(name, obj):
    doc = inspect.getdoc(obj)
    if not doc:
        return
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return
    params = signature.parameters
    if any(p.kind in (p.VAR_KEYWORD,) for p in params.values()):
        return
    stray = [n for n in _documented(doc) if n not in params]
    assert not stray, f"{name} documents {stray}, which its signature {signature} lacks"
