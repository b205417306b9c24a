"""A scikit-learn classifier over any uqzoo method: ``uz.UQClassifier``.

The estimator adapts the façade (``MLPSpec`` + ``uz.fit`` + ``Posterior``) to
scikit-learn's estimator contract, so a posterior approximator can sit in a
``Pipeline`` after a ``StandardScaler``, be scored by ``cross_val_score`` and
tuned by ``GridSearchCV``. Its credible intervals and High Confidence Sets
are one method call away (``predict_interval``, ``predict_hcs``).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from uqzoo._validation import _show, check_float, check_seed
from uqzoo.errors import InvalidInputError, InvalidTypeError
from uqzoo.metrics.hcs import HighConfidenceSet, high_confidence_set

__all__ = ["UQClassifier"]

# Keyword arguments of ``uz.fit`` that the estimator sets from its own
# parameters; in ``method_options`` they would collide with them.
_FIT_OWN_OPTIONS = {"seed": "random_state", "progress_bar": "progress_bar"}


def _seed_from_random_state(random_state: object) -> int:
    """uqzoo's integer seed from a scikit-learn ``random_state``.

    An int is the seed itself, so ``uz.fit(method, spec, data, seed=random_state)``
    repeats the estimator's fit. ``None`` draws a seed from NumPy's global
    ``RandomState`` (scikit-learn's meaning: a different fit each time unless
    the user seeded NumPy); a ``RandomState`` or ``Generator`` draws one from
    itself, advancing it.
    """
    if random_state is None or isinstance(random_state, np.random.RandomState):
        # None: NumPy's global RandomState singleton, as check_random_state gives it
        return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state,
                                                                     (bool, np.bool_)):
        return check_seed(random_state, "random_state")
    raise InvalidTypeError(
        f"random_state must be None, a non-negative int, a numpy RandomState or a numpy "
        f"Generator, got {_show(random_state)} of type {type(random_state).__name__}"
    )


def _check_method_options(method_options: object) -> dict[str, Any]:
    if method_options is None:
        return {}
    if not isinstance(method_options, Mapping):
        raise InvalidTypeError(
            f"method_options must be a dict of the method's options or None, got "
            f"{_show(method_options)}"
        )
    for key, own in _FIT_OWN_OPTIONS.items():
        if key in method_options:
            raise InvalidInputError(
                f"method_options must not hold {key!r}: set the estimator's {own} instead"
            )
    return dict(method_options)


class UQClassifier(ClassifierMixin, BaseEstimator):
    """A small Bayesian (or approximately Bayesian) neural-network classifier.

    Fits one of uqzoo's posterior approximators to all of ``X, y``; predicts
    with the posterior mean and reports credible intervals for each class
    probability and the High Confidence Set of Ries et al.

    Features are used as given: put a ``StandardScaler`` before the estimator
    in a ``Pipeline`` (as for scikit-learn's ``MLPClassifier``). The prior
    assumes features of unit scale.

    Parameters
    ----------
    method : str, default="laplace"
        A name from ``uz.methods.names()``: ``"hmc"``, ``"mfvi"``,
        ``"mc_dropout"``, ``"ensemble"``, ``"bootstrap"``, ``"swag"`` or
        ``"laplace"``.
    hidden : tuple of int, default=(10, 10)
        Widths of the hidden layers (:class:`uqzoo.MLPSpec`); ``()`` is
        Bayesian logistic / softmax regression.
    activation : {"tanh", "relu", "sigmoid"}, default="tanh"
    prior_scale : float, default=1.0
        Scale s of the Gaussian prior (:class:`uqzoo.MLPSpec`).
    prior : {"fan_in", "iid"}, default="fan_in"
        Weights N(0, s²/fan_in) and biases N(0, s²), or every parameter N(0, s²).
    model : uz.Model, callable or None, default=None
        Your own network in place of the MLP (``hidden``, ``activation``,
        ``prior_scale`` and ``prior`` are then not used): a :class:`uqzoo.Model`
        whose ``in_features`` and ``n_classes`` match the data, or a function
        ``model(in_features, n_classes) -> uz.Model`` called in ``fit`` (what
        a ``FILE.py:FACTORY`` names).
    method_options : dict or None, default=None
        The method's own hyper-parameters (fields of
        ``uz.methods.get(method).Config``), e.g. ``{"num_epochs": 200}`` or
        MC dropout's ``{"dropout": 0.1}``. Unknown keys are an error at ``fit``.
    progress_bar : bool, default=False
        Show the method's progress bar while fitting.
    random_state : None, int, numpy RandomState or Generator, default=None
        An int is the uqzoo seed of the fit (same int, same posterior);
        ``None`` draws a seed from NumPy's global random state, a
        ``RandomState`` or ``Generator`` from itself. The seed used is kept
        in ``posterior_.seed``.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
        The distinct labels of ``y``, sorted; column k of ``predict_proba``
        and of the interval bounds belongs to ``classes_[k]``.
    posterior_ : uqzoo.Posterior
        The fitted posterior: parameter draws, method, config, seed and
        diagnostics (``posterior_.converged``, ``posterior_.warnings``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` had string column names (a pandas DataFrame).

    Notes
    -----
    Everything happens in ``fit``; the constructor only stores its arguments.
    Networks compute in float32.

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.random.default_rng(0).normal(size=(80, 3))
    >>> y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    >>> clf = uz.UQClassifier("laplace", hidden=(5,), random_state=0,
    ...                       method_options={"num_epochs": 200, "num_samples": 100})
    >>> model = make_pipeline(StandardScaler(), clf).fit(X, y)
    >>> model.predict_proba(X[:2]).shape, clf.classes_.tolist()
    ((2, 2), ['no', 'yes'])
    >>> lower, upper = model[-1].predict_interval(model[0].transform(X[:2]), level=0.9)
    >>> bool(np.all(lower <= upper))
    True
    """

    def __init__(self, method: str = "laplace", *, hidden: tuple[int, ...] = (10, 10),
                 activation: str = "tanh", prior_scale: float = 1.0,
                 prior: str = "fan_in", model: Any = None,
                 method_options: Mapping[str, Any] | None = None,
                 progress_bar: bool = False, random_state: Any = None) -> None:
        self.method = method
        self.model = model
        self.hidden = hidden
        self.activation = activation
        self.prior_scale = prior_scale
        self.prior = prior
        self.method_options = method_options
        self.progress_bar = progress_bar
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> UQClassifier:
        """Fit the posterior to all rows of ``X, y``.

        Parameters
        ----------
        X : array-like of shape (N, D)
            Finite numeric features.
        y : array-like of shape (N,)
            Class labels of any one kind (str, int, float or bool), at
            least two distinct ones.

        Returns
        -------
        self
        """
        from uqzoo import datasets
        from uqzoo.methods import fit as fit_method

        options = _check_method_options(self.method_options)
        seed = _seed_from_random_state(self.random_state)
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        if np.unique(y).shape[0] < 2:
            raise InvalidInputError(
                f"y must hold at least two classes to train a classifier, got one class "
                f"{_show(y[0])}"
            )
        # ClassificationData needs a test split; the estimator keeps none, so a
        # one-row placeholder stands in. uz.fit reads the training split only.
        # Features are not standardised here: that is the Pipeline's scaler's job.
        data = datasets.from_arrays(X, y, X_test=X[:1], y_test=y[:1], standardize=False,
                                    name="UQClassifier")
        spec = self._network(data.n_features, data.n_classes)
        self.posterior_ = fit_method(self.method, spec, data, seed=seed,
                                     progress_bar=bool(self.progress_bar), **options)
        self.classes_ = np.asarray(data.classes)
        return self

    def _network(self, in_features: int, n_classes: int) -> Any:
        """The MLP of the constructor's options, or the ``model`` given."""
        from uqzoo.models import Model
        from uqzoo.spec import MLPSpec

        if self.model is None:
            return MLPSpec(in_features, n_classes, hidden=self.hidden,
                           activation=self.activation, prior_scale=self.prior_scale,
                           prior=self.prior)
        model = self.model if isinstance(self.model, Model) else None
        if model is None and callable(self.model):
            model = self.model(in_features, n_classes)
        if not isinstance(model, Model):
            raise InvalidTypeError(f"model must be None, a uqzoo.Model or a function "
                                   f"(in_features, n_classes) -> uqzoo.Model, got "
                                   f"{_show(self.model)}")
        return model

    def _summary(self, X: Any, levels: tuple[float, ...]):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.posterior_.summarize(X, levels=levels)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior-mean class probabilities.

        Returns
        -------
        ndarray of shape (N, K), float64
            Column k belongs to ``classes_[k]``; rows sum to one.
        """
        return self._summary(X, (0.5,)).mean

    def predict(self, X: Any) -> np.ndarray:
        """The label with the largest posterior-mean probability, shape (N,).

        Ties go to the first class in ``classes_``.
        """
        index = self.predict_proba(X).argmax(axis=1)     # checks fitted before classes_ is read
        return self.classes_[index]

    def predict_interval(self, X: Any, level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed credible interval of each class probability.

        Parameters
        ----------
        X : array-like of shape (N, D)
        level : float in (0, 1), default=0.9
            Posterior probability inside the interval.

        Returns
        -------
        lower, upper : ndarray of shape (N, K), float64
            Bounds for P(classes_[k] | x), from the quantiles (1 − level)/2
            and (1 + level)/2 of the posterior draws.
        """
        level = check_float(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
        return self._summary(X, (level,)).interval(level)

    def predict_hcs(self, X: Any, level: float = 0.8, delta: float = 0.2) -> HighConfidenceSet:
        """High Confidence Set membership from level-``level`` credible intervals.

        A point is confidently class c when its whole interval for P(c) lies
        above 1 − δ and confidently not c when it lies below δ
        (:func:`uqzoo.metrics.high_confidence_set`; the paper's α = δ = 0.2
        are the defaults).

        Parameters
        ----------
        X : array-like of shape (N, D)
        level : float in (0, 1), default=0.8
        delta : float in (0, 0.5), default=0.2

        Returns
        -------
        HighConfidenceSet
            ``members`` and ``decision`` of shape (N, C). The C judged columns
            are ``classes_[hcs.classes]``: the second class alone for two
            classes, every class one-vs-rest for more.

        References
        ----------
        Ries, D., et al. High confidence sets for uncertainty quantification
        in hyperspectral target detection (Sandia National Laboratories).
        """
        lower, upper = self.predict_interval(X, level)
        return high_confidence_set(lower, upper, delta=delta)
