"""The conformance suite every registered method passes.

:func:`check_method` fits a method on tiny data and checks the contract all
methods share (scikit-learn's ``check_estimator`` in spirit):

1. it returns a :class:`~uqzoo.Posterior` of that method with the seed used;
2. ``predict_proba_draws`` gives finite (S, N, K) probabilities in [0, 1]
   whose rows sum to one, S = the posterior's number of draws;
3. the same seed gives bit-identical draws (and sample statistics), another
   seed different draws;
4. the inputs -- data arrays, spec and config dict -- are left unmodified;
5. the config round-trips: ``uz.methods.make_config(name, **post.config)``
   equals the config the fit was given;
6. ``save`` / ``load_posterior`` round-trips bit-exactly: draws, config, seed,
   spec, sample_stats, diagnostics, convergence flag and warnings, and the
   loaded posterior predicts the same probabilities.

Every check that could not be run is listed in the report's ``skipped``, with
the reason. A ``ConvergenceWarning`` from the tiny fits is expected, recorded
in ``notes`` and not raised. A failed check raises ``AssertionError`` naming
the method and what went wrong.

Example
-------
>>> from uqzoo.testing import check_method
>>> report = check_method("hmc", num_warmup=20, num_samples=40)   # doctest: +SKIP
>>> report.passed                                                   # doctest: +SKIP
['returns a Posterior', 'probabilities (S, N, K) sum to one', ...]
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import math
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ConformanceReport", "check_method", "method_available", "tiny_data"]


@dataclasses.dataclass
class ConformanceReport:
    """What :func:`check_method` did.

    Attributes
    ----------
    method : str
    passed : list of str
        Names of the checks that ran and passed.
    skipped : list of (str, str)
        (check, reason) for every check that did not run.
    notes : list of str
        Anything else worth knowing (e.g. convergence warnings of the tiny fits).
    """

    method: str
    passed: list[str] = dataclasses.field(default_factory=list)
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"conformance of {self.method!r}: {len(self.passed)} passed, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  ok    {name}" for name in self.passed]
        lines += [f"  skip  {name}: {why}" for name, why in self.skipped]
        lines += [f"  note  {note}" for note in self.notes]
        return "\n".join(lines)


def method_available(name: str) -> tuple[bool, str]:
    """(True, "") if method ``name`` is registered and its module exists, else (False, why)."""
    from uqzoo.methods import REGISTRY
    if name not in REGISTRY:
        return False, f"{name!r} is not in the method registry"
    if importlib.util.find_spec(REGISTRY[name]) is None:
        return False, f"module {REGISTRY[name]} does not exist yet"
    return True, ""


def tiny_data(n_classes: int = 2, seed: int = 0, n_train: int = 40, n_test: int = 15,
              n_features: int = 3):
    """A small simulated :class:`~uqzoo.ClassificationData` for contract checks.

    Labels come from a softmax of a random linear function of standard normal
    inputs, so every class is present and the problem is learnable.
    """
    from uqzoo.datasets import ClassificationData

    rng = np.random.default_rng(seed)
    n = n_train + n_test
    X = rng.normal(size=(n, n_features))
    W = rng.normal(size=(n_features, n_classes)) * 2.0
    logits = X @ W
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random((n, 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    y[:n_classes] = np.arange(n_classes)          # every class present in training
    return ClassificationData(X[:n_train], y[:n_train], X[n_train:], y[n_train:],
                              n_classes=n_classes, p_true_test=p[n_train:], name="tiny")


def _fail(method: str, check: str, detail: str) -> AssertionError:
    return AssertionError(f"method {method!r} fails '{check}': {detail}")


def _same(a: Any, b: Any) -> bool:
    """Exact equality for arrays (dtype, shape and values, NaN equal NaN) and scalars."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _compare_dicts(method: str, check: str, what: str, a: dict, b: dict) -> None:
    if set(a) != set(b):
        raise _fail(method, check, f"{what} keys differ: {sorted(set(a) ^ set(b))}")
    for key in a:
        if not _same(a[key], b[key]):
            raise _fail(method, check, f"{what}[{key!r}] differs after the round trip "
                                       f"({type(a[key]).__name__} vs {type(b[key]).__name__})")


def check_method(name: str, spec=None, data=None, **config: Any) -> ConformanceReport:
    """Run the conformance checks for method ``name``.

    Parameters
    ----------
    name : str
        A registered method (``uz.methods.names()``).
    spec : Model, optional
        Any :class:`uqzoo.Model` (the user's own too); defaults to an MLP of
        one hidden layer of 3 units on :func:`tiny_data`.
    data : ClassificationData, optional
        Defaults to :func:`tiny_data` (40 training rows, 3 features, 2 classes).
    **config
        The method's options; keep them small (few steps, few draws).

    Returns
    -------
    ConformanceReport

    Raises
    ------
    AssertionError
        On the first failed check, naming the method and the check.
    """
    from uqzoo._validation import PROBABILITY_SUM_ATOL
    from uqzoo.errors import ConvergenceWarning
    from uqzoo.methods import fit, make_config
    from uqzoo.posterior import Posterior, load_posterior
    from uqzoo.spec import MLPSpec

    report = ConformanceReport(method=name)
    data = tiny_data() if data is None else data
    spec = MLPSpec(data.n_features, data.n_classes, hidden=(3,)) if spec is None else spec
    if data.n_classes == 2:
        report.skipped.append(("K > 2 probabilities",
                               "the data have two classes; pass data with K > 2 to check"))

    arrays_before = {f.name: np.array(getattr(data, f.name), copy=True)
                     for f in dataclasses.fields(data)
                     if isinstance(getattr(data, f.name), np.ndarray)}
    spec_before = spec.fingerprint()
    config_before = copy.deepcopy(config)

    def run(seed: int):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            post = fit(name, spec, data, seed=seed, progress_bar=False, **config)
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                note = f"seed {seed}: ConvergenceWarning (expected on tiny fits): {w.message}"
                if note not in report.notes:
                    report.notes.append(note)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return post

    post = run(0)
    check = "returns a Posterior"
    if not isinstance(post, Posterior):
        raise _fail(name, check, f"got {type(post).__name__}")
    if post.method != name or post.seed != 0:
        raise _fail(name, check, f"method={post.method!r}, seed={post.seed} (expected {name!r}, 0)")
    report.passed.append(check)

    check = "probabilities (S, N, K) sum to one"
    proba = post.predict_proba_draws(data.X_test)
    want = (post.num_draws, data.n_test, data.n_classes)
    if proba.shape != want:
        raise _fail(name, check, f"shape {proba.shape}, expected (S, N, K) = {want}")
    if not np.all(np.isfinite(proba)) or proba.min() < 0 or proba.max() > 1:
        raise _fail(name, check, "probabilities are not finite values in [0, 1]")
    worst = float(np.abs(proba.sum(axis=-1) - 1).max())
    if worst > PROBABILITY_SUM_ATOL:
        raise _fail(name, check, f"a row sums to 1 ± {worst:.2e} (> {PROBABILITY_SUM_ATOL})")
    report.passed.append(check)

    check = "same seed, same draws"
    again = run(0)
    _compare_dicts(name, check, "draws", dict(post.draws), dict(again.draws))
    _compare_dicts(name, check, "sample_stats", dict(post.sample_stats), dict(again.sample_stats))
    report.passed.append(check)

    check = "another seed, different draws"
    other = run(1)
    if all(np.array_equal(post.draws[k], other.draws[k]) for k in post.draws):
        raise _fail(name, check, "seeds 0 and 1 gave identical draws")
    report.passed.append(check)

    check = "inputs unmodified"
    for field, before in arrays_before.items():
        if not _same(before, np.asarray(getattr(data, field))):
            raise _fail(name, check, f"data.{field} changed during the fit")
    if spec.fingerprint() != spec_before:
        raise _fail(name, check, "the spec changed during the fit")
    if config != config_before:
        raise _fail(name, check, f"the config dict changed: {config_before} -> {config}")
    report.passed.append(check)

    check = "config round-trip"
    given = make_config(name, **config)
    rebuilt = make_config(name, **post.config)
    if rebuilt != given:
        raise _fail(name, check, f"make_config(**post.config) = {rebuilt}, fit was given {given}")
    report.passed.append(check)

    check = "save/load round-trip"
    with tempfile.TemporaryDirectory(prefix="uqzoo-conformance-") as tmp:
        path = Path(tmp) / f"{name}.nc"
        post.save(path)
        loaded = load_posterior(path, model=None if isinstance(spec, MLPSpec) else spec)
    for attr in ("method", "seed", "config", "sample_shape", "converged", "warnings",
                 "predictive"):
        if getattr(loaded, attr) != getattr(post, attr):
            raise _fail(name, check, f"{attr}: saved {getattr(post, attr)!r}, "
                                     f"loaded {getattr(loaded, attr)!r}")
    if loaded.spec.fingerprint() != post.spec.fingerprint():
        raise _fail(name, check, f"spec: saved {post.spec}, loaded {loaded.spec}")
    _compare_dicts(name, check, "draws", dict(post.draws), dict(loaded.draws))
    _compare_dicts(name, check, "sample_stats", dict(post.sample_stats),
                   dict(loaded.sample_stats))
    _compare_dicts(name, check, "diagnostics", dict(post.diagnostics), dict(loaded.diagnostics))
    if (post.anchor is None) != (loaded.anchor is None):
        raise _fail(name, check, "the anchor was lost or invented")
    if post.anchor is not None and loaded.anchor is not None:
        _compare_dicts(name, check, "anchor", dict(post.anchor), dict(loaded.anchor))
    # What a file must reproduce is the predictive, not only the fields read above
    # (a recalibration map or an input augmentation lost on the way would change it).
    if not np.array_equal(loaded.predict_proba_draws(data.X_test), proba):
        raise _fail(name, check, "the loaded posterior predicts other probabilities")
    if not post.sample_stats:
        report.skipped.append(("sample_stats round-trip", "the method records no sample_stats"))
    report.passed.append(check)
    return report
