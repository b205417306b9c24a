"""Convergence diagnostics: ArviZ's numbers, without touching ArviZ's logger."""

from __future__ import annotations

import logging
import warnings

import numpy as np

from uqzoo.methods import _diagnostics


def _arviz():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return arviz


def test_rhat_ess_equal_arviz_on_finite_quantities():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(4, 200, 3))
    got = _diagnostics.rhat_ess(values)
    az = _arviz()
    ds = az.convert_to_dataset({"q": values}, dims={"q": ["q0"]})
    # same function on the same array: equal to float64 rounding of a reordered sum
    np.testing.assert_allclose(got["rhat"], az.rhat(ds)["q"].values, rtol=1e-12)
    np.testing.assert_allclose(got["ess_bulk"], az.ess(ds, method="bulk")["q"].values,
                               rtol=1e-12)
    assert np.all(got["rhat"] < 1.05) and np.all(got["ess_bulk"] > 200)


def test_non_finite_and_too_short_inputs_give_nan_and_leave_the_logger_alone(monkeypatch):
    """The logger is the process's: another thread may be logging through it, so
    the diagnostics never change its level, even briefly."""
    logger = logging.getLogger("arviz")
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    def forbidden(*args):
        raise AssertionError("the diagnostics changed the arviz logger's level")

    monkeypatch.setattr(logger, "setLevel", forbidden)
    try:
        values = np.random.default_rng(1).normal(size=(2, 50, 3))
        values[1, 7, 2] = np.nan
        got = _diagnostics.rhat_ess(values)
        assert np.all(np.isfinite(got["rhat"][:2])) and np.isnan(got["rhat"][2])
        short = _diagnostics.rhat_ess(np.ones((1, 6, 2)))        # one chain, 6 draws
        assert np.all(np.isnan(short["ess_bulk"]))
        assert logger.level == logging.INFO
        assert not [r for r in records if "validation" in r.getMessage()
                    or "NaN" in r.getMessage()]
    finally:
        monkeypatch.undo()
        logger.removeHandler(handler)
        logger.setLevel(level)
