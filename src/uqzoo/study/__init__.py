"""Simulated-coverage studies: methods × data-generating settings × replicates.

A study file (TOML, :mod:`uqzoo.study.studyfile`) expands into frozen tasks
with stable ids; :func:`run` runs the unfinished ones on a local process pool
or a Dask cluster and records each, as it finishes, in a SQLite store
(:mod:`uqzoo.study.store`) that a killed run resumes from; :func:`load` and
:func:`summarize` turn the store into tidy tables, :mod:`uqzoo.study.plots`
into figures.

>>> import uqzoo as uz
>>> uz.study.run("experiments/examples/small.toml", store="small.sqlite")  # doctest: +SKIP
>>> summary = uz.study.summarize(uz.study.load("small.sqlite"))            # doctest: +SKIP
>>> uz.study.plots.coverage_plot(summary)                                  # doctest: +SKIP

Nothing heavy is imported until a task runs or a table is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from uqzoo.study.analysis import summarize
from uqzoo.study.runner import RunSummary, run, run_task
from uqzoo.study.store import load
from uqzoo.study.studyfile import Study, Task, expand, read_study

if TYPE_CHECKING:
    from uqzoo.study import plots

__all__ = ["RunSummary", "Study", "Task", "expand", "load", "plots", "read_study", "run",
           "run_task", "summarize"]


def __getattr__(name: str) -> Any:
    if name == "plots":                    # matplotlib only when figures are wanted
        return importlib.import_module("uqzoo.study.plots")
    raise AttributeError(f"module 'uqzoo.study' has no attribute {name!r}")
