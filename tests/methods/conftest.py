"""Fixtures the per-method test files share: a small sim-teacher problem, its network,
and one fit of the file's method.

A test module sets ``METHOD`` (a registered name), ``OPTIONS`` (the fit's
options), and optionally ``DATA_SEED`` and ``FIT_SEED`` (default 0); each file
keeps its own seeds so its fit is the one its assertions were written for.
"""

from __future__ import annotations

import pytest

import uqzoo as uz


@pytest.fixture(scope="module")
def data(request):
    seed = getattr(request.module, "DATA_SEED", 0)
    # The teacher these files' assertions were written for: N(0, 1) weights, the
    # default teacher prior until sim-teacher's default became the fan-in prior.
    return uz.datasets.load("sim-teacher", n_train=200, n_test=60, seed=seed,
                            teacher_prior="iid")


@pytest.fixture(scope="module")
def spec(data):
    return uz.MLPSpec(data.n_features, data.n_classes, hidden=(8, 8))


@pytest.fixture(scope="module")
def post(request, spec, data):
    module = request.module
    return uz.fit(module.METHOD, spec, data, seed=getattr(module, "FIT_SEED", 0),
                  progress_bar=False, **module.OPTIONS)
