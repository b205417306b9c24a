"""A griffe extension for the API reference: read uqzoo's numpydoc the way numpydoc does.

Two habits of the docstrings that numpydoc accepts and griffe's numpy parser does
not, mended on the docstring text before griffe parses it (the source is not
changed):

- a singular ``Example`` section header is read as ``Examples``, so that its
  doctest lines are shown as code rather than as a paragraph;
- a paragraph that follows a ``Parameters`` (or ``Attributes``, ``Other
  Parameters``) list after a blank line, at the list's own indentation and not
  shaped like an entry (``name : type``), is the docstring's closing remark:
  it is given a ``Notes`` header instead of being read as a parameter.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_LISTS = {"parameters", "attributes", "other parameters"}
# "name", "name : type", "x, y : arrays", "*args", "**options : object"
_ENTRY = re.compile(r"^\*{0,2}\w+(\s*,\s*\*{0,2}\w+)*\s*(:.*)?$")


def _is_header(lines: list[str], i: int) -> bool:
    return (i + 1 < len(lines) and lines[i].strip() != ""
            and set(lines[i + 1].strip()) == {"-"} and not lines[i].startswith(" "))


def mend(text: str) -> str:
    """``text`` with ``Example`` headers renamed and closing remarks given a ``Notes`` header."""
    lines = text.split("\n")
    out: list[str] = []
    section = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if _is_header(lines, i):
            name = line.strip()
            if name == "Example":
                out += ["Examples", "--------"]
                section = "examples"
            else:
                out += [line, lines[i + 1]]
                section = name.lower()
            i += 2
            continue
        if (section in _LISTS and line and not line[0].isspace() and i > 0
                and lines[i - 1].strip() == "" and not _ENTRY.match(line.strip())):
            out += ["Notes", "-----"]
            section = "notes"
        out.append(line)
        i += 1
    return "\n".join(out)


class NumpydocHabits(griffe.Extension):
    """Mend each object's docstring text before griffe parses it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = mend(obj.docstring.value)
