"""Fast, deterministic stand-ins for fitted posteriors, for tests of what comes after a fit.

``stand_in_fit`` has ``uz.fit``'s signature: tests monkeypatch it over a
method's ``fit`` so that ``compare`` and the report run in seconds.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

import uqzoo as uz
from uqzoo.posterior import Posterior

# method -> (inverse regularisation C, sd of the draws around the fit, seed)
STAND_INS = {"laplace": (1.0, 0.3, 1), "ensemble": (0.05, 0.05, 2)}


def stand_in_fit(name, spec, data, seed=0, progress_bar=False, **config):
    """Draws around a logistic regression of the training data: fast, deterministic."""
    C, sd, draw_seed = STAND_INS[name]
    spec = uz.MLPSpec(data.n_features, data.n_classes, hidden=())
    lr = LogisticRegression(C=C).fit(data.X_train, data.y_train)
    rng = np.random.default_rng(draw_seed)
    draws = {"layers.0.weight": lr.coef_[None] + sd * rng.normal(size=(40, *lr.coef_.shape)),
             "layers.0.bias": lr.intercept_[None]
             + sd * rng.normal(size=(40, *lr.intercept_.shape))}
    prior = np.bincount(data.y_train, minlength=data.n_classes) / data.n_train
    return Posterior(spec=spec, method=name, config={}, seed=seed, draws=draws,
                     diagnostics={"class_prior": prior})
