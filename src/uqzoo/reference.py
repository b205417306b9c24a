"""A reference posterior: a long, checked NUTS run that other methods are judged against.

On simulated data a method can be judged by the coverage of a known true
probability; on a user's own scene there is no truth. There is, however, the
exact Bayesian posterior of the same network and prior, and HMC run long
enough -- and checked -- samples it. Izmailov et al. (2021) judge SWAG, MF-VI,
deep ensembles and others by their agreement with, and total variation to,
such an HMC reference; :func:`uqzoo.fidelity` computes those scores and more.

:func:`reference_posterior` runs multi-chain NUTS (:mod:`uqzoo.methods.hmc`)
with long defaults and puts the result through a gate (:class:`ReferenceGate`):

- split R-hat ≤ :data:`RHAT_MAX` (1.01) of the predictive probability at every
  monitored training point and of the log density;
- bulk and tail ESS ≥ :data:`ESS_MIN` (400) of the same quantities;
- at most :data:`DIVERGENCE_RATE_MAX` of the kept transitions divergent;
- at least :data:`MIN_CHAINS` chains.

A run that fails the gate is returned and can be saved, but it warns, carries
the reasons in ``warnings``, is ``converged=False`` and is refused as a
reference by :func:`check_reference` (and so by :func:`uqzoo.fidelity`).

The reference records the fingerprint of the training data it was sampled on
(:func:`data_fingerprint`, a SHA-256 of the training inputs and labels) in its
``diagnostics``; it survives :meth:`~uqzoo.Posterior.save` and
:func:`~uqzoo.load_posterior`, so a saved reference can be reused across
comparisons and studies, and using it with other data is an error.

References
----------
Izmailov, Vikram, Hoffman, Wilson (2021). What are Bayesian neural network
posteriors really like? ICML.
Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of
MCMC. Bayesian Analysis 16(2).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from uqzoo._validation import _show, check_float
from uqzoo.errors import ConvergenceWarning, InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    from uqzoo.models import Model
    from uqzoo.posterior import Posterior

__all__ = [
    "DIVERGENCE_RATE_MAX",
    "ESS_MIN",
    "MIN_CHAINS",
    "REFERENCE_OPTIONS",
    "RHAT_MAX",
    "ReferenceGate",
    "check_reference",
    "data_fingerprint",
    "reference_gate",
    "reference_posterior",
]

# Vehtari et al. (2021), section 4: "we recommend running at least four chains
# ... and using the sample only if R-hat < 1.01", with bulk- and tail-ESS of at
# least 400 (100 per chain for 4 chains) before quantiles and their MC errors
# are trusted.
RHAT_MAX = 1.01
ESS_MIN = 400.0
# Stan's guidance is that any divergence may bias the draws; a reference
# tolerates one in a thousand kept transitions, isolated divergences that long
# runs on saturated tanh networks show, and no more. Pass
# ``max_divergence_rate=0.0`` for Stan's strict reading.
DIVERGENCE_RATE_MAX = 1e-3
# R-hat compares independent starts; Vehtari et al. (2021) recommend four.
MIN_CHAINS = 4
# The HMC settings a reference runs with unless told otherwise: 4 chains of
# 1000 kept draws after 1000 warm-up iterations (Stan's default lengths), and
# the predictive R-hat/ESS monitored at 50 training points, not the 10 of an
# ordinary fit, so that the gate sees more of the input space.
REFERENCE_OPTIONS: dict[str, Any] = {"num_chains": 4, "num_warmup": 1000,
                                     "num_samples": 4000, "num_diagnostic_points": 50}

# Keys the reference adds to the posterior's diagnostics (JSON-plain: they
# survive save/load as a netCDF attribute and a scalar variable).
_FINGERPRINT_KEY = "data_fingerprint"
_RATE_KEY = "reference_max_divergence_rate"
_FINGERPRINT_PREFIX = "sha256:"


@dataclasses.dataclass(frozen=True)
class ReferenceGate:
    """Whether an HMC run may serve as a reference posterior, and why not.

    Attributes
    ----------
    passed : bool
        Every check below held.
    rhat_max : float
        Largest split R-hat over the monitored predictive probabilities and the
        log density (NaN when none could be computed).
    ess_bulk_min, ess_tail_min : float
        Smallest bulk and tail ESS over the same quantities.
    divergence_rate : float
        Divergent kept transitions / kept draws.
    messages : tuple of str
        One sentence per failed check, naming the numbers and what to change.
    """

    passed: bool
    rhat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergence_rate: float
    messages: tuple[str, ...]


def data_fingerprint(data: Any) -> str:
    """SHA-256 of a data set's training inputs, labels and class count.

    Two data sets have the same fingerprint exactly when their ``X_train``
    (float32), ``y_train`` and ``n_classes`` are equal; the test split does
    not enter, since a posterior depends on the training data only.

    Parameters
    ----------
    data : ClassificationData

    Returns
    -------
    str
        ``"sha256:"`` followed by 64 hex digits.

    Examples
    --------
    >>> import uqzoo as uz
    >>> from uqzoo.reference import data_fingerprint
    >>> data = uz.datasets.load("sim-teacher", n_train=50, n_test=10, seed=0)
    >>> data_fingerprint(data)[:7]
    'sha256:'
    """
    from uqzoo.datasets import ClassificationData

    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(f"data must be a ClassificationData, got {_show(data)}")
    from uqzoo._data_checks import training_fingerprint

    return training_fingerprint(data.X_train, data.y_train, data.n_classes)


def reference_gate(posterior: Posterior, *,
                   max_divergence_rate: float | None = None) -> ReferenceGate:
    """Judge an HMC posterior against the reference gate (see the module docstring).

    Parameters
    ----------
    posterior : Posterior
        An HMC posterior (``method == "hmc"``), as :func:`reference_posterior`
        or ``uz.fit("hmc", ...)`` returns it, or as loaded from a file.
    max_divergence_rate : float in [0, 1], optional
        Divergences allowed per kept draw; by default the rate the reference
        was made with, else :data:`DIVERGENCE_RATE_MAX`.

    Returns
    -------
    ReferenceGate

    Examples
    --------
    >>> from uqzoo.reference import reference_gate
    >>> gate = reference_gate(ref)                                # doctest: +SKIP
    >>> gate.passed, gate.rhat_max                                # doctest: +SKIP
    (True, 1.004)
    """
    _check_hmc(posterior, "posterior")
    diag = posterior.diagnostics
    if max_divergence_rate is None:
        max_divergence_rate = float(diag.get(_RATE_KEY, DIVERGENCE_RATE_MAX))
    max_divergence_rate = check_float(max_divergence_rate, "max_divergence_rate",
                                      low=0.0, high=1.0)
    messages = []
    chains, per_chain = posterior.sample_shape
    if chains < MIN_CHAINS:
        messages.append(f"{chains} chain(s); a reference needs at least {MIN_CHAINS} "
                        f"independent starts for R-hat to compare (num_chains={MIN_CHAINS})")

    def stat(name: str) -> np.ndarray:
        return np.atleast_1d(np.asarray(diag.get(name, np.nan), dtype=np.float64)).ravel()

    monitored = {stat_name: np.concatenate([stat(f"{stat_name}_predictive"),
                                            stat(f"{stat_name}_lp")])
                 for stat_name in ("rhat", "ess_bulk", "ess_tail")}
    predictive = stat("rhat_predictive")
    if np.all(np.isnan(predictive)):
        messages.append("the predictive R-hat could not be computed at any monitored point "
                        "(too few draws per chain, or constant probabilities)")
    if np.isnan(stat("rhat_lp")).all():
        messages.append("the log density's R-hat is missing (not recorded by this backend, "
                        "or too few draws); the gate needs it")
    finite = {k: v[np.isfinite(v)] for k, v in monitored.items()}
    rhat_max = float(finite["rhat"].max()) if finite["rhat"].size else float("nan")
    bulk_min = float(finite["ess_bulk"].min()) if finite["ess_bulk"].size else float("nan")
    tail_min = float(finite["ess_tail"].min()) if finite["ess_tail"].size else float("nan")
    lengths = (f"num_warmup={posterior.config.get('num_warmup')}, "
               f"num_samples={posterior.config.get('num_samples')}")
    if rhat_max > RHAT_MAX:
        n_bad = int((finite["rhat"] > RHAT_MAX).sum())
        messages.append(f"split R-hat reaches {rhat_max:.4f} (> {RHAT_MAX}) on {n_bad} of "
                        f"{finite['rhat'].size} monitored quantities: the chains disagree; "
                        f"run longer ({lengths})")
    for label, value in (("bulk", bulk_min), ("tail", tail_min)):
        if value < ESS_MIN:
            messages.append(f"{label} ESS falls to {value:.0f} (< {ESS_MIN:.0f}); raise "
                            f"num_samples ({lengths})")
    num_draws = chains * per_chain
    num_divergent = int(diag.get("num_divergent", 0))
    rate = num_divergent / num_draws
    if rate > max_divergence_rate:
        messages.append(f"{num_divergent} of {num_draws} kept transitions diverged (rate "
                        f"{rate:.2g} > {max_divergence_rate:g}); raise target_accept (now "
                        f"{posterior.config.get('target_accept')})")
    return ReferenceGate(passed=not messages, rhat_max=rhat_max, ess_bulk_min=bulk_min,
                         ess_tail_min=tail_min, divergence_rate=rate,
                         messages=tuple(messages))


def reference_posterior(spec: Model, data: Any, config: Any = None, *, seed: int,
                        max_divergence_rate: float = DIVERGENCE_RATE_MAX,
                        progress_bar: bool = True, **options: Any) -> Posterior:
    """Sample a reference posterior with long multi-chain NUTS, and gate it.

    Parameters
    ----------
    spec : Model
    data : ClassificationData
        Only the training split is used; its fingerprint is recorded.
    config : uqzoo.methods.hmc.Config, optional
        A prepared HMC configuration; by default ``hmc.Config`` with
        :data:`REFERENCE_OPTIONS`.
    seed : int
    max_divergence_rate : float in [0, 1]
        Divergent kept transitions allowed per kept draw
        (:data:`DIVERGENCE_RATE_MAX`); recorded with the reference.
    progress_bar : bool
    **options
        HMC options (fields of ``hmc.Config``) that replace those of
        ``config`` or of the defaults.

    Returns
    -------
    Posterior
        An HMC posterior whose ``diagnostics`` hold ``"data_fingerprint"``
        and ``"reference_max_divergence_rate"``. When the gate is not met
        it is ``converged=False``, its ``warnings`` say why, and
        :func:`check_reference` refuses it.

    Warns
    -----
    ConvergenceWarning
        When the gate is not met (one warning listing every reason), beside
        the HMC fit's own convergence warnings.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, seed=0)   # doctest: +SKIP
    >>> spec = uz.MLPSpec(data.n_features, 2, hidden=(5, 5))            # doctest: +SKIP
    >>> ref = uz.reference_posterior(spec, data, seed=0)                # doctest: +SKIP
    >>> uz.reference.reference_gate(ref).passed                         # doctest: +SKIP
    True
    >>> ref.save("ref.nc")                                              # doctest: +SKIP

    References
    ----------
    Izmailov et al. (2021). What are Bayesian neural network posteriors
    really like? ICML.
    Vehtari et al. (2021). Rank-normalization, folding, and localization.
    Bayesian Analysis 16(2).
    """
    from uqzoo import methods
    from uqzoo.methods import hmc

    if config is None:
        config = hmc.Config(**REFERENCE_OPTIONS)
    elif not isinstance(config, hmc.Config):
        raise InvalidTypeError(f"config must be a uqzoo.methods.hmc.Config or None, got "
                               f"{_show(config)}")
    settings = dataclasses.asdict(config)
    unknown = sorted(set(options) - set(settings))
    if unknown:
        raise InvalidInputError(f"unknown HMC option(s) {unknown}; allowed: {sorted(settings)}")
    settings.update(options)
    rate = check_float(max_divergence_rate, "max_divergence_rate", low=0.0, high=1.0)
    fingerprint = data_fingerprint(data)
    post = methods.fit("hmc", spec, data, seed, progress_bar=progress_bar, **settings)
    diagnostics = {**post.diagnostics, _FINGERPRINT_KEY: fingerprint, _RATE_KEY: rate}
    post = dataclasses.replace(post, diagnostics=diagnostics)
    gate = reference_gate(post)
    if gate.passed:
        return post
    text = "; ".join(gate.messages)
    message = f"reference_posterior: the reference gate is not met, so this is no reference: {text}"
    warnings.warn(message, ConvergenceWarning, stacklevel=2)
    return dataclasses.replace(post, converged=False, warnings=(*post.warnings, message))


def check_reference(reference: Posterior, data: Any = None, *,
                    require_gate: bool = True) -> ReferenceGate:
    """Refuse a posterior that is not a reference, or not a reference of ``data``.

    Parameters
    ----------
    reference : Posterior
        Made by :func:`reference_posterior` (possibly saved and loaded).
    data : ClassificationData, optional
        When given, the reference must have been sampled on its training data.
    require_gate : bool
        Refuse a reference that did not pass its gate (default). False lets
        an exploratory run be compared against, its gate still returned.

    Returns
    -------
    ReferenceGate

    Raises
    ------
    InvalidInputError
        Not an HMC posterior made by :func:`reference_posterior`; made from
        other training data than ``data``; or, with ``require_gate``, its
        gate not met.

    Examples
    --------
    >>> from uqzoo.reference import check_reference
    >>> check_reference(ref, data).passed                          # doctest: +SKIP
    True
    """
    from uqzoo._validation import check_bool

    require_gate = check_bool(require_gate, "require_gate")
    _check_hmc(reference, "reference")
    recorded = reference.diagnostics.get(_FINGERPRINT_KEY)
    if not isinstance(recorded, str) or not recorded.startswith(_FINGERPRINT_PREFIX):
        raise InvalidInputError(
            "reference has no data fingerprint, so the data it was sampled on is unknown: "
            "sample one with uqzoo.reference_posterior (or `uqzoo reference`)")
    if data is not None:
        expected = data_fingerprint(data)
        if recorded != expected:
            raise InvalidInputError(
                f"reference belongs to other training data (fingerprint {recorded[:19]}...) "
                f"than data {getattr(data, 'name', '?')!r} (fingerprint {expected[:19]}...); "
                f"sample a reference on this data with uqzoo.reference_posterior")
    gate = reference_gate(reference)
    if require_gate and not gate.passed:
        raise InvalidInputError("reference did not pass the reference gate: "
                                + "; ".join(gate.messages)
                                + " (require_gate=False uses it anyway)")
    return gate


def _check_hmc(posterior: object, name: str) -> None:
    # Imported here: ``uqzoo --help`` registers this module's subcommand and must
    # not load torch (uqzoo.posterior imports the predictive engine).
    from uqzoo.posterior import Posterior

    if not isinstance(posterior, Posterior):
        raise InvalidTypeError(f"{name} must be a uqzoo.Posterior, got {_show(posterior)}")
    if posterior.method != "hmc":
        raise InvalidInputError(f"{name} must be an HMC posterior (method 'hmc'), got "
                                f"method {posterior.method!r}")
