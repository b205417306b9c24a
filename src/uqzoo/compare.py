"""Fit several methods on one dataset and put their evaluations side by side.

This is what ``uqzoo compare`` (the README's main job) and the notebooks run.
It only composes: ``uz.fit`` for each method, ``uz.evaluate`` on the test
split, and a tidy table of the headline numbers.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from uqzoo import methods as method_registry
from uqzoo._validation import _show, check_float, check_levels, check_seed
from uqzoo.errors import ConvergenceWarning, InvalidInputError, InvalidTypeError
from uqzoo.spec import MLPSpec

__all__ = ["QUICK_CONFIGS", "Comparison", "compare"]

# Settings that make every method finish in seconds to a minute on two CPU
# cores for the embedded default data (sim-teacher, 2×10 net, n_train 1000).
# They are deliberately modest; the published comparisons use the defaults.
QUICK_CONFIGS: dict[str, dict[str, Any]] = {
    "hmc": {"num_warmup": 500, "num_samples": 500, "num_chains": 2},
    "mfvi": {},
    "mc_dropout": {},
    "ensemble": {},
    "bootstrap": {},
    "swag": {},
    "laplace": {},
}


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """Result of :func:`compare`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per method: fit time and the headline numbers of its
        :class:`~uqzoo.evaluate.EvalReport` (coverage and width per level
        where the truth is known, HCS size, ECE, Brier, NLL, AURC, accuracy).
    reports : dict of str to EvalReport
    posteriors : dict of str to Posterior
    """

    table: pd.DataFrame
    reports: Mapping[str, Any]
    posteriors: Mapping[str, Any]

    def __repr__(self) -> str:
        return format_table(self.table)


def _headline_columns(levels: Sequence[float], has_truth: bool) -> list[str]:
    cols = ["fit_seconds", "converged"]
    for level in levels:
        key = f"{level:g}"
        if has_truth:
            cols += [f"coverage@{key}"]
        cols += [f"interval_width@{key}", f"hcs_proportion@{key}"]
    cols += ["accuracy", "ece", "brier", "nll", "aurc"]
    return cols


def format_table(table: pd.DataFrame) -> str:
    """The comparison table as aligned text, for terminals and logs."""
    with pd.option_context("display.width", 200, "display.max_columns", 50,
                           "display.float_format", "{:.4f}".format):
        return table.to_string()


def compare(data, methods: Sequence[str] | None = None, *, spec: MLPSpec | None = None,
            seed: int = 0, levels: Sequence[float] = (0.8, 0.95), delta: float = 0.2,
            configs: Mapping[str, Mapping[str, Any]] | None = None,
            progress_bar: bool = True) -> Comparison:
    """Fit each method on ``data`` and evaluate it on the test split.

    Parameters
    ----------
    data : ClassificationData
    methods : str or sequence of str, optional
        Method names (``uz.methods.names()``); all of them by default. A single
        name is the same as a one-element list.
    spec : MLPSpec, optional
        The network; by default 2 hidden layers of 10 tanh units with
        ``dropout=0.1`` (the rate only MC dropout uses).
    seed : int
        Seed of every fit (each method gets the same seed).
    levels : sequence of float
        Credible levels for coverage, width and High Confidence Sets.
    delta : float
        HCS threshold δ in (0, 0.5).
    configs : dict of method name to dict, optional
        Hyper-parameters per method; methods not named use their defaults.
    progress_bar : bool

    Returns
    -------
    Comparison
    """
    from uqzoo.datasets import ClassificationData
    from uqzoo.evaluate import evaluate

    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(f"data must be a ClassificationData, got {_show(data)}")
    if methods is None:
        names = method_registry.names()
    elif isinstance(methods, str):
        names = [methods]               # a lone name, not its characters
    elif isinstance(methods, Sequence) and not isinstance(methods, bytes):
        names = list(methods)           # ordered: the table's rows follow it
    else:
        raise InvalidTypeError(
            f"methods must be a method name or a list of them "
            f"({', '.join(method_registry.names())}), got {_show(methods)}")
    if not names:
        raise InvalidInputError(
            f"methods must name at least one method "
            f"({', '.join(method_registry.names())}), got an empty list")
    for name in names:
        method_registry.get(name)  # validates the name
    if len(set(names)) != len(names):
        raise InvalidInputError(f"methods must not repeat a name, got {names}")
    seed = check_seed(seed)
    levels = check_levels(levels)
    delta = check_float(delta, "delta", low=0.0, high=0.5, low_open=True, high_open=True)
    configs = dict(configs or {})
    unknown = sorted(set(configs) - set(names))
    if unknown:
        raise InvalidInputError(f"configs names methods {unknown} that are not compared")
    if spec is None:
        spec = MLPSpec(data.n_features, data.n_classes, hidden=(10, 10), dropout=0.1)

    rows, reports, posteriors = [], {}, {}
    for name in names:
        start = time.perf_counter()
        with warnings.catch_warnings():
            # A non-converged fit is reported in the table, not raised.
            warnings.simplefilter("ignore", ConvergenceWarning)
            post = method_registry.fit(name, spec, data, seed=seed,
                                       progress_bar=progress_bar, **configs.get(name, {}))
        fit_seconds = time.perf_counter() - start
        report = evaluate(post, data, levels=levels, delta=delta)
        posteriors[name], reports[name] = post, report
        rows.append({"method": name, "fit_seconds": fit_seconds, **report.to_dict()})
    table = pd.DataFrame(rows).set_index("method")
    cols = [c for c in _headline_columns(levels, data.p_true_test is not None)
            if c in table.columns]
    return Comparison(table=table[cols], reports=reports, posteriors=posteriors)
