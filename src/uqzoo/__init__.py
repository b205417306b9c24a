"""uqzoo: judge which uncertainty-quantification method to trust for a small network.

>>> import uqzoo as uz
>>> data = uz.datasets.load("sim-teacher", seed=0)          # doctest: +SKIP
>>> spec = uz.MLPSpec(data.n_features, data.n_classes)      # doctest: +SKIP
>>> post = uz.fit("hmc", spec, data, seed=0)                # doctest: +SKIP
>>> report = uz.evaluate(post, data)                        # doctest: +SKIP

Every public name is imported on first use (PEP 562), so ``import uqzoo`` and
``uqzoo --help`` do not pay for torch, JAX, matplotlib, pandas or xarray.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from uqzoo._version import __version__

# public name -> module that defines it (a submodule itself when the name is one)
_EXPORTS: dict[str, str] = {
    "datasets": "uqzoo.datasets",
    "detectors": "uqzoo.detectors",
    "methods": "uqzoo.methods",
    "metrics": "uqzoo.metrics",
    "models": "uqzoo.models",
    "Model": "uqzoo.models",
    "perturb": "uqzoo.perturb",
    "plots": "uqzoo.plots",
    "report": "uqzoo.comparison.report",
    "comparison": "uqzoo.comparison",
    "conformal": "uqzoo.conformal",
    "headline": "uqzoo.headline",
    "study": "uqzoo.study",
    "Comparison": "uqzoo.comparison.compare",
    "compare": "uqzoo.comparison.compare",
    "ClassificationData": "uqzoo.datasets",
    "EvalReport": "uqzoo.evaluate",
    "evaluate": "uqzoo.evaluate",
    "ConvergenceWarning": "uqzoo.errors",
    "DataWarning": "uqzoo.errors",
    "FileFormatError": "uqzoo.errors",
    "InvalidInputError": "uqzoo.errors",
    "InvalidTypeError": "uqzoo.errors",
    "OutputPathError": "uqzoo.errors",
    "UqzooError": "uqzoo.errors",
    "UnsupportedModelError": "uqzoo.errors",
    "load_posterior": "uqzoo.posterior",
    "fit": "uqzoo.methods",
    "Posterior": "uqzoo.posterior",
    "LogitTransform": "uqzoo.transform",
    "PredictiveSummary": "uqzoo.predictive",
    "proba_draws": "uqzoo.predictive",
    "summarize": "uqzoo.predictive",
    "MLPSpec": "uqzoo.spec",
    "prior_shift": "uqzoo.prior_shift",
    "calibration_split": "uqzoo.recalibrate",
    "recalibrate": "uqzoo.recalibrate",
    "UQClassifier": "uqzoo.sklearn",
    "write_report": "uqzoo.comparison.report",
    "Fidelity": "uqzoo.fidelity",
    "fidelity": "uqzoo.fidelity",
    "reference_posterior": "uqzoo.reference",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'uqzoo' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    is_module = (module_name.rsplit(".", 1)[-1] == name
                 and name not in _FUNCTIONS_NAMED_LIKE_THEIR_MODULE)
    value = module if is_module else getattr(module, name)
    globals()[name] = value          # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


# ``uz.evaluate``, ``uz.compare`` and ``uz.recalibrate`` are functions defined
# in submodules of the same name. Importing such a submodule (``from
# uqzoo.evaluate import ...``) makes the import system bind the *module* to the
# package attribute, which would then hide the function; the package keeps the
# function instead.
_FUNCTIONS_NAMED_LIKE_THEIR_MODULE = frozenset({"compare", "evaluate", "fidelity",
                                                "prior_shift", "recalibrate"})


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FUNCTIONS_NAMED_LIKE_THEIR_MODULE and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from uqzoo import (
        conformal,
        datasets,
        detectors,
        methods,
        metrics,
        models,
        perturb,
        plots,
        report,
        study,
    )
    from uqzoo.comparison.compare import Comparison, compare
    from uqzoo.comparison.report import write_report
    from uqzoo.datasets import ClassificationData
    from uqzoo.errors import (
        ConvergenceWarning,
        FileFormatError,
        InvalidInputError,
        InvalidTypeError,
        UnsupportedModelError,
        UqzooError,
    )
    from uqzoo.evaluate import EvalReport, evaluate
    from uqzoo.fidelity import Fidelity, fidelity
    from uqzoo.methods import fit
    from uqzoo.models import Model
    from uqzoo.posterior import Posterior, load_posterior
    from uqzoo.predictive import PredictiveSummary, proba_draws, summarize
    from uqzoo.prior_shift import prior_shift
    from uqzoo.recalibrate import calibration_split, recalibrate
    from uqzoo.reference import reference_posterior
    from uqzoo.sklearn import UQClassifier
    from uqzoo.spec import MLPSpec
    from uqzoo.transform import LogitTransform
