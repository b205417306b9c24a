"""uqzoo: judge which uncertainty-quantification method to trust for a small network.

>>> import uqzoo as uz
>>> data = uz.datasets.load("sim-teacher", seed=0)          # doctest: +SKIP
>>> spec = uz.MLPSpec(data.n_features, data.n_classes)      # doctest: +SKIP
>>> post = uz.fit("hmc", spec, data, seed=0)                # doctest: +SKIP
>>> report = uz.evaluate(post, data)                        # doctest: +SKIP
"""

from uqzoo import datasets, methods, metrics, plots
from uqzoo.compare import Comparison, compare
from uqzoo.datasets import ClassificationData
from uqzoo.evaluate import EvalReport, evaluate
from uqzoo.errors import (
    ConvergenceWarning,
    FileFormatError,
    InvalidInputError,
    InvalidTypeError,
    UqzooError,
)
from uqzoo.io import load_posterior
from uqzoo.methods import fit
from uqzoo.posterior import Posterior
from uqzoo.predictive import PredictiveSummary, predict_proba_draws, summarize
from uqzoo.spec import MLPSpec

__version__ = "0.1.0"

__all__ = [
    "ClassificationData", "Comparison", "ConvergenceWarning", "EvalReport", "FileFormatError", "InvalidInputError",
    "InvalidTypeError", "MLPSpec", "Posterior", "PredictiveSummary", "UqzooError",
    "compare", "datasets", "evaluate", "fit", "load_posterior", "methods", "metrics", "plots", "predict_proba_draws", "summarize",
]
