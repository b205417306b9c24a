"""The comparison application: fit several methods on one data set, judge them, report.

It sits on the library and composes it; nothing in the library imports it.

- :mod:`~uqzoo.comparison.compare` -- :func:`uqzoo.compare` and its result
  :class:`Comparison` (with the resolved :class:`Settings` it ran with);
- :mod:`~uqzoo.comparison.config` -- the TOML config file that repeats a run
  (``uqzoo compare --config``);
- :mod:`~uqzoo.comparison.verdict` -- judging a comparison's table: failures,
  coverage against Monte Carlo error, calibration, recalibration, shift;
- :mod:`~uqzoo.comparison.report` -- the self-contained HTML page.
"""


from __future__ import annotations

import importlib
from typing import Any

# name -> module; imported on first use, so that ``uqzoo --help`` (which reads the
# config module's constants) does not pay for pandas and matplotlib.
# (``compare`` and ``verdict`` name submodules here; the functions are
# ``uz.compare`` and ``uqzoo.comparison.verdict.verdict``.)
_EXPORTS = {"Comparison": "compare", "Settings": "compare", "render_report": "report",
            "write_report": "report", "Verdict": "verdict", "report_table": "verdict"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'uqzoo.comparison' has no attribute {name!r}")
    return getattr(importlib.import_module(f"uqzoo.comparison.{_EXPORTS[name]}"), name)
