"""Fit several methods on one dataset and put their evaluations side by side.

This is what ``uqzoo compare`` (the README's main job) and the notebooks run.
It only composes: ``uz.fit`` for each method, ``uz.evaluate`` on the test
split, and a tidy table of the headline numbers. On binary target-detection
scenes the classical detectors of :mod:`uqzoo.detectors` are added as
reference rows, so every table answers "is a network worth it here?".

With ``reference=`` every method is also scored by how close its predictive
is to a reference posterior of the same network and prior
(:func:`uqzoo.fidelity`): a long, gated HMC run saved by ``uqzoo reference``
(:func:`uqzoo.reference_posterior`), or the comparison's own HMC fit
(``reference="hmc"``). That judges the methods on data without known true
probabilities, a user's own scene included. By default (``reference="auto"``)
such data get a reference sampled for the comparison where it is affordable
(:data:`AUTO_REFERENCE_SECONDS`), and the verdict says when it is not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uqzoo import headline
from uqzoo import methods as method_registry
from uqzoo import shift as under_shift
from uqzoo._limits import LONG_PREDICTION_WORK, MAX_PREDICTION_WORK, check_draws
from uqzoo._validation import (
    _show,
    check_choice,
    check_delta,
    check_levels,
    check_seed,
)
from uqzoo.comparison import options as compare_options
from uqzoo.errors import (
    ConvergenceWarning,
    DataWarning,
    InvalidInputError,
    InvalidTypeError,
    SlowFitWarning,
    UnsupportedModelError,
    UqzooError,
)
from uqzoo.methods import check_class_weight
from uqzoo.metrics.detection import DEFAULT_FARS, DetectionROC, PdAtFar, _check_fars
from uqzoo.metrics.intervals import SUMMARY_INTERVALS
from uqzoo.models import Model
from uqzoo.prior_shift import _as_prior, prior_shift
from uqzoo.spec import MLPSpec

__all__ = ["DEFAULT_NUM_DRAWS", "QUICK_CONFIGS", "Comparison", "DetectorResult",
           "ReferenceSettings", "Settings", "compare", "describe_data"]

# Settings that make every method finish in seconds to a minute on two CPU
# cores for the embedded default data (sim-teacher, 2×10 net, n_train 1000).
# They are deliberately modest; the published comparisons use the defaults.
QUICK_CONFIGS: dict[str, dict[str, Any]] = {
    # draws: compare's common budget, DEFAULT_NUM_DRAWS, split over the chains
    "hmc": {"num_warmup": 500, "num_chains": 2},
    "mfvi": {},
    "mc_dropout": {},
    "ensemble": {},
    "bootstrap": {},
    "swag": {},
    "laplace": {},
    "map": {},
    # SG-MCMC at their defaults (the common draw budget split over chains and cycles):
    # about 30 s each on 1,000 rows, compilation included (benchmarks/README.md,
    # "SG-MCMC defaults"), so they join the default set of every method.
    "sgld": {},
    "sghmc": {},
    "csgmcmc": {},
    # test-time augmentation of a MAP network: one MAP fit, the budget's draws are
    # augmented copies of each input
    "tta": {},
}


# The draws every method that can draw freely makes in a comparison, so that no
# method's intervals are judged on fewer draws than another's. 1000 is
# HMC's quick-setting total and more than any default level needs
# (uqzoo.metrics.min_draws: 39 at 95 %).
DEFAULT_NUM_DRAWS = 1000

# reference="auto" samples a reference posterior (uz.reference_posterior at its
# REFERENCE_OPTIONS) on data without true probabilities when HMC is among the
# methods (its cost is accepted already) or when HMC's time estimate of the
# reference run is at most this many seconds: the same bound past which compare
# warns that an HMC fit will be long (uqzoo.methods.hmc.LONG_FIT_SECONDS), so a
# default reference is never itself a long fit.
AUTO_REFERENCE_SECONDS = 120.0


def _draw_options(name: str, num_draws: int, config: Mapping[str, Any]) -> dict[str, Any]:
    """The options that make method ``name`` emit ``num_draws`` posterior draws.

    Each method's ``Config.budget_options`` says how (or that its draws are
    trained networks, to which the budget does not apply); options the
    caller set in ``configs`` win.
    """
    return dict(method_registry.get(name).Config.budget_options(num_draws, config))


@dataclasses.dataclass(frozen=True, eq=False)
class DetectorResult:
    """A classical detector's row of a comparison.

    Attributes
    ----------
    detector : uqzoo.detectors.Detector
        Fitted on the training split.
    scores : float64 ndarray of shape (N_test,)
    detection_roc : DetectionROC
    pd_at_far : PdAtFar
    fit_seconds : float
        Fitting and scoring time.
    """

    detector: Any
    scores: Any
    detection_roc: DetectionROC
    pd_at_far: PdAtFar
    fit_seconds: float


@dataclasses.dataclass(frozen=True)
class ReferenceSettings:
    """The reference posterior a comparison measured closeness to, and its gate.

    Attributes
    ----------
    source : str
        ``"hmc"`` (the comparison's own HMC fit), the path of the saved
        reference, or ``"posterior"`` (a Posterior passed in).
    row : str or None
        The table's row that is the reference itself (``"hmc"`` with
        ``reference="hmc"``): its fidelity is perfect by construction, and it
        is left out of a ranking by fidelity. None for an independent reference.
    gate : uqzoo.reference.ReferenceGate
        :func:`uqzoo.reference.reference_gate` of the reference: only when it
        passed is the reference the exact posterior within Monte Carlo error,
        and only then does the verdict rank by fidelity.
    level : float
        Credible level of the intervals compared (:data:`uqzoo.fidelity.DEFAULT_LEVEL`).
    num_draws : int
        The reference's draws S.
    n_points : int
        Test points scored.
    data_fingerprint : str
        The training data the reference (and every method) was fitted on.
    seed : int or None
        The seed a reference sampled for this comparison (``reference="auto"``)
        was drawn with: derived from the comparison's seed, other than the
        seed of the hmc row, so that the two are independent runs.
    """

    source: str
    row: str | None
    gate: Any
    level: float
    num_draws: int
    n_points: int
    data_fingerprint: str
    seed: int | None = None

    @property
    def passed(self) -> bool:
        """Whether the reference passed its gate."""
        return bool(self.gate.passed)


@dataclasses.dataclass(frozen=True)
class Settings:
    """What a comparison was run with, resolved: the report and the verdict read it.

    Attributes
    ----------
    levels : tuple of float
        Credible levels of the coverage, width and HCS columns.
    delta : float
        HCS threshold δ.
    interval : str
        ``"equal_tailed"`` or ``"order_statistic"``.
    num_draws : int
        The common draw budget.
    fars : tuple of float
        False-alarm rates of the table's Pd columns (empty unless binary).
    seed : int
    data_name : str
        The compared data set's name.
    n_test : int
        Test points every method was evaluated on.

    A :class:`Comparison` assembled by hand has no settings; the report then
    reads what it can from the reports (``interval``, ``num_draws``, ``seed``
    None).
    data : tuple of (str, str)
        The data described in words, label and text, as the report shows it
        (data set, points, classes, split, options, truth, source).
    reference : ReferenceSettings or None
        With ``reference=``: where the reference posterior came from and
        whether it passed its gate.
    test_fingerprint : str or None
        :func:`fingerprint_test_set` of the compared data, so that a report is
        never drawn from other data that share its name and size.
    reference_skipped : str or None
        With ``reference="auto"`` on data without true probabilities, why no
        reference posterior was sampled (too long by HMC's time estimate, or
        HMC's time not estimable); None otherwise.
    left_out : tuple of (str, str)
        Methods not fitted because the model lacks what they need (MC
        dropout on a model that declares no dropout), each with the reason.
    model : str or None
        The compared network in a few words (:meth:`uqzoo.Model.summary`).
    """

    levels: tuple[float, ...]
    delta: float
    interval: str | None
    num_draws: int | None
    fars: tuple[float, ...]
    seed: int | None
    data_name: str
    n_test: int | None
    data: tuple[tuple[str, str], ...]
    reference: ReferenceSettings | None = None
    test_fingerprint: str | None = None
    reference_skipped: str | None = None
    left_out: tuple[tuple[str, str], ...] = ()
    model: str | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """Result of :func:`compare`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per method: fit time, ``failed`` and ``flags`` (the kinds of
        the report's :class:`~uqzoo.evaluate.FitFailure`, e.g.
        ``"one_class, hcs_confident_misses"``) and the headline numbers of
        its :class:`~uqzoo.evaluate.EvalReport` (coverage and width per level
        where the truth is known, HCS size, accuracy, balanced accuracy,
        ECE, Brier, NLL, AURC; on binary data detection AUROC and Pd at each
        false-alarm rate with its Clopper–Pearson bounds). With classical
        detectors, a ``kind`` column says ``"posterior"`` or ``"detector"``;
        a detector row has only fit time and the detection columns (no
        intervals, no HCS, no failure check).
    reports : dict of str to EvalReport
    posteriors : dict of str to Posterior
    detectors : dict of str to DetectorResult
        Empty unless the classical detectors were run.
    shift : pandas.DataFrame or None
        With ``perturbations``: every method's ``EvalReport.shift`` (each
        metric clean and as mean ± sd over the perturbed copies), stacked
        with a ``method`` column first. The table also gains
        ``<column>_shift_mean`` and ``<column>_shift_sd`` beside each
        headline column (``[<perturbation>]`` appended with several).
    rankings : pandas.DataFrame or None
        With ``perturbations``: the methods ranked by each headline metric
        (accuracy, ECE, Brier, NLL, coverage by its distance to the level,
        detection AUROC), clean and shifted (see :func:`uqzoo.under_shift.rankings`).
    ranking_changes : tuple of str
        One plain sentence per metric and perturbation whose order of methods
        changes under shift, with the values and how many copies agree.
    recalibration : dict or None
        With ``recalibrate``: how the recalibrated rows were made --
        ``method`` (``"temperature"`` or ``"vector"``), ``calibration_fraction``,
        ``seed``, ``n_calibration`` (training points held out to fit the map),
        ``n_fit`` (training points every method and detector was fitted on)
        and ``rows``: for each recalibrated row (``"laplace+temperature"``) the
        row it recalibrates (``of``), the fitted map (``temperature``, or None
        for vector scaling; ``scale``, ``shift``), whether a minimum was found
        (``converged``) and the calibration NLL before and after.
    scores : tuple of Ranking
        The fits that did not fail ranked by proper scores
        (:func:`uqzoo.comparison.ranking.rank_methods`): with known true
        probabilities by the interval score (mean over levels) and NLL,
        otherwise by NLL and Brier, each with paired bootstrap intervals of
        every difference to the best. With a reference that passed its gate
        on data without true probabilities, the first is by closeness to the
        reference (mean per-point 1-Wasserstein distance) instead. The first
        one gives the table's ``rank`` column; the verdict recommends from them.
    fidelity : dict of str to Fidelity
        With ``reference``: each posterior row's closeness to the reference
        posterior on the test points (:func:`uqzoo.fidelity`), with the Monte
        Carlo yardstick of every score and the per-point values; the table
        holds the scores as ``fidelity_<score>`` columns. Empty otherwise.
    conformal : dict or None
        With ``conformal``: ``level``, ``alpha``, ``score``, ``mondrian``,
        ``calibration_fraction``, ``seed``, ``n_calibration``, ``n_fit`` and
        ``rules``: each row's calibrated
        :class:`~uqzoo.conformal.ConformalSets`. The judged sets are in
        ``reports[row].conformal``.
    failed_fits : dict of str to str
        Methods whose fit raised or returned non-finite draws, each with its
        ``failed_reason`` (what failed and how to fix it). Such a method has a
        table row with ``failed`` True, ``flags`` ``"fit_error"`` and the
        reason in a ``failed_reason`` column, but no report or posterior; the
        other methods are compared as usual.
    """

    table: pd.DataFrame
    reports: Mapping[str, Any]
    posteriors: Mapping[str, Any]
    detectors: Mapping[str, DetectorResult] = dataclasses.field(default_factory=dict)
    shift: pd.DataFrame | None = None
    rankings: pd.DataFrame | None = None
    ranking_changes: tuple[str, ...] = ()
    recalibration: Mapping[str, Any] | None = None
    settings: Settings | None = None
    scores: tuple[Any, ...] = ()
    fidelity: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    conformal: Mapping[str, Any] | None = None
    failed_fits: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        return format_table(self.table)


def _headline_columns(levels: Sequence[float], has_truth: bool,
                      fars: Sequence[float] = (), has_reference: bool = False) -> list[str]:
    return [c.key for c in headline.columns(levels, fars, where="comparison",
                                            has_truth=has_truth, has_reference=has_reference)]


def _is_detection_scene(data: Any) -> bool:
    """Binary data with pixel coordinates: an HSI target-detection scene."""
    return data.n_classes == 2 and data.coords_test is not None


def _detector_rows(data: Any, fars: tuple[float, ...]
                   ) -> tuple[list[dict[str, Any]], dict[str, DetectorResult]]:
    from uqzoo import detectors
    from uqzoo.metrics.detection import detection_roc, pd_at_far

    rows, results = [], {}
    is_target = data.y_test == 1
    scorable = 0 < int(is_target.sum()) < is_target.shape[0]
    for name in detectors.names():
        start = time.perf_counter()
        det = detectors.fit_detector(name, data.X_train, data.y_train, target_class=1)
        scores = det.score(data.X_test)
        seconds = time.perf_counter() - start
        row: dict[str, Any] = {"method": name, "kind": "detector", "fit_seconds": seconds}
        if scorable:
            roc = detection_roc(scores, is_target)
            pdf = pd_at_far(scores, is_target, far=fars)
            results[name] = DetectorResult(detector=det, scores=scores, detection_roc=roc,
                                           pd_at_far=pdf, fit_seconds=seconds)
            row["detection_auroc"] = roc.auroc
            for i, far in enumerate(pdf.far):
                key = f"{far:g}"
                row[f"pd_at_far@{key}"] = float(pdf.pd[i])
                row[f"pd_at_far_lower@{key}"] = float(pdf.lower[i])
                row[f"pd_at_far_upper@{key}"] = float(pdf.upper[i])
        rows.append(row)
    return rows, results


def _say_long_fits(options_of: Mapping[str, Mapping[str, Any]], spec: Model,
                   data: Any) -> None:
    """Warn (SlowFitWarning) before any fit starts about each fit expected to take long.

    A method module may offer ``time_estimate(spec, data, config)`` (HMC does:
    a few timed gradient evaluations × the iterations × leapfrog steps); one
    whose estimate is ``long`` is named, with the estimate and what shortens
    it, before the first fit of the comparison runs.
    """
    for name, options in options_of.items():
        estimate_time = getattr(method_registry.get(name), "time_estimate", None)
        if estimate_time is None:
            continue
        estimate = estimate_time(spec, data, method_registry.make_config(name, **options))
        if estimate is not None and estimate.long:
            warnings.warn(f"{estimate.message()} (compare configs={{{name!r}: {{...}}}})",
                          SlowFitWarning, stacklevel=3)


def format_table(table: pd.DataFrame) -> str:
    """The comparison table as aligned text, for terminals and logs."""
    with pd.option_context("display.width", 200, "display.max_columns", 50,
                           "display.float_format", "{:.4f}".format):
        return table.to_string()


def compare(data, methods: Sequence[str] | None = None, *, model: Model | None = None,
            seed: int = 0,
            levels: Sequence[float] = (0.8, 0.95), delta: float = 0.2,
            configs: Mapping[str, Mapping[str, Any]] | None = None,
            progress_bar: bool = True, detectors: bool | None = None,
            far: Sequence[float] = DEFAULT_FARS, num_draws: int = DEFAULT_NUM_DRAWS,
            interval: str = "equal_tailed", perturbations: object = None,
            copies: int = 10, class_weight: object = None,
            target_prior: object = None, recalibrate: str | None = None,
            reference: object = "auto", conformal: float | None = None,
            conformal_score: str = "lac", conformal_mondrian: bool = False,
            label_noise: float | None = None,
            label_noise_kind: str = "symmetric") -> Comparison:
    """Fit each method on ``data`` and evaluate it on the test split.

    Parameters
    ----------
    data : ClassificationData
    methods : str or sequence of str, optional
        Method names (``uz.methods.names()``); all of them by default. A single
        name is the same as a one-element list.
    model : Model, optional
        The network every method fits: :class:`uqzoo.MLPSpec` or your own
        (:func:`uqzoo.models.from_function`, ``from_flax``,
        ``from_equinox``). By default an MLP of 2 hidden layers of 10 tanh
        units (MC dropout's rate is its own option, ``configs={"mc_dropout":
        {"dropout": ...}}``). A method that needs what the model does not
        declare (MC dropout on a model without dropout) is left out, with a
        note in :attr:`Settings.left_out` and in the verdict.
    seed : int
        Seed of every fit (each method gets the same seed).
    levels : sequence of float
        Credible levels for coverage, width and High Confidence Sets.
    delta : float
        HCS threshold δ in (0, 0.5).
    configs : dict of method name to dict, optional
        Hyper-parameters per method; methods not named use their defaults.
    progress_bar : bool
    detectors : bool, optional
        Add the classical detectors (``uz.detectors``: ACE, CEM, matched
        filter, RX; class 1 the target) as reference rows. By default they
        are added on HSI target-detection scenes: binary data with pixel
        coordinates (``hsi-sim``, ``muufl-target``, ``from_hsi`` scenes), not
        on tabular data, whose features are not spectra. ``True`` needs
        binary data.
    far : sequence of float in (0, 1)
        False-alarm rates of the Pd columns (binary data).
    num_draws : int
        The common draw budget S of every method that can draw freely (HMC,
        MF-VI, MC dropout, SWAG, Laplace; HMC splits it over its chains), so
        that no method's intervals are judged on fewer draws than another's.
        Ensembles and bootstraps make one draw per trained member
        (``num_members``). A method's own ``num_samples`` in ``configs`` wins.
        The table's ``num_draws`` column shows each method's S.
    interval : {"equal_tailed", "order_statistic"}
        The interval the table's coverage and width use: percentile intervals
        (the default, as in the literature) or order-statistic intervals,
        which keep their level for any S (see :func:`uqzoo.evaluate`).
    perturbations : list, optional
        Evaluate every method also on ``copies`` perturbed copies of the test
        set per entry (family names, ``"family:low-high"``, ``(family, (low,
        high))`` or :class:`~uqzoo.perturb.Perturbation`; see
        :func:`uqzoo.evaluate`). The copies are made once, from ``seed``, and
        shared by all methods, so rankings are compared on the same data.
    copies : int
        Perturbed copies per perturbation (K >= 1).
    class_weight : None, "balanced", sequence or dict, optional
        A reweighted likelihood for every method (its ``class_weight``
        option; a method's own in ``configs`` wins): ``"balanced"`` keeps
        rare targets from being ignored, at the price of probabilities that
        refer to a balanced class prior -- see ``target_prior``.
    target_prior : None, "train", sequence or dict, optional
        Move every posterior's probabilities to this class prior before
        evaluation (:func:`uqzoo.prior_shift`): ``"train"`` is the training
        labels' frequencies (the scene's prior, when the split keeps it), a
        sequence or dict gives it. None (default) evaluates the
        probabilities as fit.
    recalibrate : {None, "temperature", "vector"}
        Also evaluate every fitted posterior after post-hoc recalibration
        (:func:`uqzoo.recalibrate`), as a row named ``"<method>+<recalibrate>"``
        of kind ``"recalibrated"`` beside its original (in the table,
        ``reports`` and ``posteriors``). The map is fitted on held-out data:
        a stratified ``uqzoo.recalibrate.DEFAULT_CALIBRATION_FRACTION`` (20 %)
        of the training set is split off first (:func:`uqzoo.calibration_split`
        with ``seed``) and every method -- and classical detector -- is fitted
        on the rest, so a recalibration is never fitted on points its network
        trained on (which would leave it too confident). The original rows then
        differ from a comparison without ``recalibrate``, which trains on all
        points; :attr:`Comparison.recalibration` records the split. A target
        prior is applied after the recalibration.
    reference : "auto", None, "hmc", path or Posterior
        ``"auto"`` (default): on data without true probabilities, sample a
        reference posterior for this comparison (:func:`uqzoo.reference_posterior`
        with its long defaults, a seed derived from ``seed`` and other than the
        hmc row's, so the hmc row is scored against an independent run) when
        ``"hmc"`` is among ``methods`` or HMC's time estimate of that run
        (:func:`uqzoo.methods.hmc.time_estimate`) is at most
        :data:`AUTO_REFERENCE_SECONDS` (120 s); otherwise none, and
        :attr:`Settings.reference_skipped` and the verdict say why and how to
        sample one (``uqzoo reference``). With true probabilities the
        coverage of the truth judges and no reference is sampled. None: no
        reference. Otherwise:
        also score every method's closeness to a reference posterior on the
        test points (:func:`uqzoo.fidelity`: agreement, total variation,
        1-Wasserstein distance, interval overlap and width ratio, each with
        its Monte Carlo yardstick), as ``fidelity_*`` columns of the table and
        in :attr:`Comparison.fidelity`. A path (``str`` or ``os.PathLike``) is
        a reference saved by ``uqzoo reference`` or
        :func:`uqzoo.reference_posterior` (loaded with
        :func:`uqzoo.load_posterior`); a Posterior is such a reference in
        memory. Either must have been sampled on the training data the
        methods fit (its recorded data fingerprint), else an error before
        any fit. ``"hmc"`` uses the comparison's own HMC fit (``"hmc"`` must
        be among ``methods``): it is then *not independent* of the HMC row,
        whose fidelity is perfect by construction and which a ranking by
        fidelity leaves out, and it is a reference only if it passes
        :func:`uqzoo.reference.reference_gate` (4 chains, R-hat ≤ 1.01, ESS ≥
        400; the quick settings do not). The gate's result is recorded in
        :attr:`Settings.reference`; only a reference that passed it ranks the
        methods, and only on data without true probabilities (with them, the
        interval score of the truth ranks). With a target prior, the
        reference is moved to it too.
    conformal : float in (0, 1), optional
        Also make split-conformal label sets at this level (e.g. 0.9) for
        every row (:func:`uqzoo.conformal.conformalize` of its posterior-mean
        predictive) and judge them beside the method's own sets at the same
        level: the table gains ``conformal_coverage``, ``conformal_set_size``,
        ``plain_set_coverage``, the conformal HCS's missed-target share and,
        with known truth, the worst-decile exact conditional coverage of both
        (``conformal_worst_decile``, ``plain_worst_decile``); every report
        holds the full :class:`~uqzoo.conformal.ConformalReport`. The
        calibration points are a stratified 20 % of the training set, split
        off before any fit with ``seed`` exactly as for ``recalibrate`` (with
        both, the same split serves both), and every method is fitted on the
        rest; :attr:`Comparison.conformal` records the split and each row's rule.
    conformal_score : {"lac", "aps"}
        The conformal sets' nonconformity score.
    conformal_mondrian : bool
        Class-conditional (Mondrian) calibration of the conformal sets.
    label_noise : float in [0, 1), optional
        Flip this share of the training labels before anything is fitted
        (:func:`uqzoo.datasets.with_label_noise`, seeded from ``seed``); the
        test set and its truth stay clean, so every method is judged on how
        it copes with noisy training labels. ``settings.data`` records it.
    label_noise_kind : {"symmetric", "class_conditional"}
        How flipped labels are chosen (class-conditional: the default pair
        flip, class k to k + 1).

    Returns
    -------
    Comparison
        A method whose fit failed (see :class:`~uqzoo.evaluate.FitFailure`)
        has ``failed`` True in the table: its accuracy and ECE can look
        excellent exactly then.

    Examples
    --------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("muufl-target", seed=0)
    >>> result = uz.compare(data, ["laplace"], progress_bar=False)      # doctest: +SKIP
    >>> result.table.loc[["laplace", "ace"], ["failed", "detection_auroc"]]  # doctest: +SKIP
    >>> result = uz.compare(data, ["hmc", "laplace"], reference="hmc")   # doctest: +SKIP
    >>> result.table["fidelity_wasserstein1"]                           # doctest: +SKIP
    >>> result.settings.reference.passed                                 # doctest: +SKIP
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
    # Checked as the command line and the files check them; a refining option left at
    # its default counts as not given, one set otherwise needs the option it refines.
    conformal, conformal_score, conformal_mondrian = compare_options.conformal(
        conformal,
        None if _is_default(conformal_score, compare_options.DEFAULT_CONFORMAL_SCORE)
        else conformal_score,
        None if _is_default(conformal_mondrian, False) else conformal_mondrian)
    label_noise, label_noise_kind = compare_options.label_noise(
        label_noise,
        None if _is_default(label_noise_kind, compare_options.DEFAULT_LABEL_NOISE_KIND)
        else label_noise_kind)
    if label_noise is not None:
        from uqzoo.datasets import with_label_noise

        data = with_label_noise(data, label_noise, label_noise_kind,
                                seed=label_noise_seed(seed))
    levels = check_levels(levels)
    delta = check_delta(delta)
    fars = tuple(float(f) for f in _check_fars(far))
    if detectors is None:
        detectors = _is_detection_scene(data)
    elif not isinstance(detectors, bool):
        raise InvalidTypeError(f"detectors must be True, False or None, got {_show(detectors)}")
    elif detectors and data.n_classes != 2:
        raise InvalidInputError(
            f"detectors=True needs binary target-detection data (class 1 the target); "
            f"data has {data.n_classes} classes")
    configs = dict(configs or {})
    unknown = sorted(set(configs) - set(names))
    if unknown:
        raise InvalidInputError(f"configs names methods {unknown} that are not compared")
    spec = model
    if spec is None:
        spec = MLPSpec(data.n_features, data.n_classes, hidden=(10, 10))
    elif not isinstance(spec, Model):
        raise InvalidTypeError(f"model must be a uqzoo.Model (uz.MLPSpec, "
                               f"uz.models.from_function(...)), got {_show(spec)}")

    num_draws = check_draws(num_draws, "num_draws")
    interval = check_choice(interval, "interval", SUMMARY_INTERVALS)
    # Made (and checked) before any fit, once for every method.
    shifted = under_shift.prepare(perturbations, copies, seed, data)
    fit_data, calibration, recalibration = _calibration_split(data, recalibrate, seed,
                                                              conformal is not None)
    conformal_record = _conformal_request(conformal, conformal_score, conformal_mondrian,
                                          calibration, seed, fit_data)
    # A saved reference is loaded and checked against the training data now, not
    # after the fits.
    given_reference, reference_source = _reference_request(reference, names, fit_data, spec,
                                                           recalibration is not None)
    reference_seed, reference_skipped = None, None
    if reference_source == "auto":
        reference_seed, reference_skipped = _auto_reference(names, spec, fit_data, data, seed)

    rows, reports, posteriors = [], {}, {}
    options_of = {name: {**_draw_options(name, num_draws, configs.get(name, {})),
                         **({} if class_weight is None else {"class_weight": class_weight}),
                         **configs.get(name, {})} for name in names}
    if isinstance(target_prior, str):
        if target_prior != "train":
            raise InvalidInputError(f"target_prior must be None, 'train', a sequence or a dict "
                                    f"of class probabilities, got {target_prior!r}")
        counts = np.bincount(data.y_train, minlength=data.n_classes)
        target_prior = (counts / counts.sum()).tolist()
    if target_prior is not None:            # checked now, not after the first fit
        _as_prior(target_prior, "target_prior", data.classes, data.n_classes)
    if class_weight is not None and not isinstance(class_weight, dict):
        check_class_weight(class_weight)        # a dict is checked by uz.fit, against labels
    _say_long_fits(options_of, spec, fit_data)
    n_points = data.n_test * (1 + (0 if shifted is None else copies * len(shifted)))
    work = {name: _prediction_work(options_of[name], num_draws, n_points, spec)
            for name in names}
    for name, estimate in work.items():
        if estimate > MAX_PREDICTION_WORK:
            raise InvalidInputError(
                f"predicting {name} would take about {estimate:.2g} operations (S = "
                f"{_draws_of(options_of[name], num_draws):,} draws × {n_points:,} test "
                f"points × ({spec.n_params:,} parameters + 30 × {spec.n_classes} classes)), "
                f"more than uqzoo's bound of {MAX_PREDICTION_WORK:.2g} (hours of work): "
                f"lower num_draws (--num-draws), or evaluate on fewer test points")
    for name in names:          # a bad option is an error before any fit, not a failed row
        method_registry.make_config(name, **{k: v for k, v in options_of[name].items()
                                             if not isinstance(v, dict)})
    failed_fits: dict[str, str] = {}
    left_out: dict[str, str] = {}
    said: set[str] = set()
    for name in names:
        options = options_of[name]
        start = time.perf_counter()
        try:
            with _data_warnings_once(said), warnings.catch_warnings():
                # A non-converged fit is reported in the table, not raised.
                warnings.simplefilter("ignore", ConvergenceWarning)
                post = method_registry.fit(name, spec, fit_data, seed=seed,
                                           progress_bar=progress_bar, **options)
        except UnsupportedModelError as exc:    # the model lacks what the method needs
            left_out[name] = str(exc)
            continue
        except Exception as exc:    # one method's failure must not sink the others' results
            failed_fits[name] = _fit_failure(name, exc)
            rows.append({"method": name, "kind": "posterior", "failed": True,
                         "flags": "fit_error", "failed_reason": failed_fits[name],
                         "n_test": int(data.n_test),
                         "fit_seconds": time.perf_counter() - start})
            continue
        fit_seconds = time.perf_counter() - start
        if reference_source == "hmc" and name == "hmc":
            given_reference = _own_reference(post, fit_data)
        versions = [(name, "posterior", post, fit_seconds)]
        if recalibration is not None:
            start = time.perf_counter()
            recalibrated = _recalibrated(post, recalibration, calibration, seed)
            versions.append((f"{name}+{recalibration['method']}", "recalibrated",
                             recalibrated, time.perf_counter() - start))
            recalibration["rows"][versions[-1][0]] = _map_of(name, recalibrated)
        for row_name, kind, version, seconds in versions:
            if target_prior is not None:        # after the recalibration: it composes
                version = prior_shift(version, target_prior)
            rule = None
            if conformal_record is not None:    # on the probabilities evaluated
                rule = _conformal_rule(version, conformal_record, calibration, seed)
                conformal_record["rules"][row_name] = rule
            with _data_warnings_once(said):
                report = evaluate(version, data, levels=levels, delta=delta, far=fars,
                                  interval=interval, perturbations=shifted, conformal=rule,
                                  progress_bar=bool(progress_bar)
                                  and work[name] > LONG_PREDICTION_WORK)
            posteriors[row_name], reports[row_name] = version, report
            # the row's name, not the report's method (a recalibrated row shares it)
            rows.append({**report.to_dict(), "method": row_name, "kind": kind,
                         "fit_seconds": seconds, "n_test": int(report.n_points)})
    detector_results: dict[str, DetectorResult] = {}
    if detectors:
        detector_rows, detector_results = _detector_rows(fit_data, fars)
        rows += detector_rows
    fidelity: dict[str, Any] = {}
    reference_settings = None
    if reference_seed is not None:
        given_reference = _sample_reference(spec, fit_data, reference_seed, progress_bar)
    if given_reference is not None:
        fidelity, reference_settings = _closeness(given_reference, reference_source, posteriors,
                                                  data, fit_data, target_prior, reference_seed)
        for row in rows:
            if row["method"] in fidelity:
                row.update(_fidelity_columns(fidelity[row["method"]]))
    if not reports:
        raise InvalidInputError("every method's fit failed, so there is nothing to compare: "
                                + "; ".join([*failed_fits.values(), *left_out.values()]))
    table = pd.DataFrame(rows).set_index("method")
    # True / False for fits, <NA> for detector rows (no failure check applies)
    table["failed"] = table["failed"].astype("boolean")
    scores = _scores(table, reports, seed, fidelity, reference_settings,
                     data.p_true_test is not None)
    table["rank"] = pd.array([scores[0].rank().get(str(n)) if scores else None
                              for n in table.index], dtype="Int64")
    cols = [c for c in _headline_columns(levels, data.p_true_test is not None,
                                         fars if data.n_classes == 2 else (),
                                         has_reference=bool(fidelity))
            if c in table.columns
            and (c != "kind" or detectors or recalibration is not None)]
    # a failed fit has no report to take its test points from: the verdict reads them here
    cols += ["n_test", "failed_reason"] if failed_fits else []
    settings = Settings(levels=tuple(levels), delta=delta, interval=interval,
                        num_draws=num_draws, fars=fars if data.n_classes == 2 else (),
                        seed=seed, data_name=str(data.name), n_test=int(data.n_test),
                        data=describe_data(data, recalibration, conformal_record),
                        reference=reference_settings, test_fingerprint=fingerprint_test_set(data),
                        reference_skipped=reference_skipped,
                        left_out=tuple(left_out.items()), model=spec.summary())
    if shifted is None:
        return Comparison(table=table[cols], reports=reports, posteriors=posteriors,
                          detectors=detector_results, recalibration=recalibration,
                          settings=settings, scores=scores, fidelity=fidelity,
                          conformal=conformal_record, failed_fits=failed_fits)
    shift = pd.concat([r.shift.assign(method=n) for n, r in reports.items()
                       if r.shift is not None], ignore_index=True)
    ranked, changes = under_shift.rankings(reports)
    return Comparison(table=table[cols + under_shift.table_columns(cols, table.columns)],
                      reports=reports, posteriors=posteriors, detectors=detector_results,
                      shift=shift[["method", *under_shift.SHIFT_COLUMNS]], rankings=ranked,
                      ranking_changes=changes, recalibration=recalibration,
                      settings=settings, scores=scores, fidelity=fidelity,
                      conformal=conformal_record, failed_fits=failed_fits)


def _is_default(value: object, default: bool | str) -> bool:
    """Whether an option holds its default, a bool or a string (0 is not False)."""
    if isinstance(default, bool):
        return isinstance(value, (bool, np.bool_)) and bool(value) == default
    return isinstance(value, str) and value == default


def _draws_of(options: Mapping[str, Any], num_draws: int) -> int:
    """The most draws a method's options may make (its own count, or the budget)."""
    own = [int(v) for k, v in options.items()
           if k in ("num_samples", "num_members") and isinstance(v, (int, np.integer))]
    return max([int(num_draws), *own])


def _prediction_work(options: Mapping[str, Any], num_draws: int, n_points: int,
                     spec: Model) -> int:
    """Estimated operations of a method's predictive pass (see MAX_PREDICTION_WORK)."""
    return _draws_of(options, num_draws) * n_points * (spec.n_params + 30 * spec.n_classes)


def _fit_failure(name: str, exc: Exception) -> str:
    """A failed fit's reason: what failed, and how to fix it."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    steps = [f.name for f in dataclasses.fields(method_registry.get(name).Config)
             if f.name in ("step_size", "learning_rate")]
    if "finite" in message or "nan" in message.lower() or "overflow" in message.lower():
        what = "diverged (its parameters became non-finite)"
        fix = (f"lower its {' or '.join(steps)} (--set {name}.{steps[0]}=...)" if steps
               else "check its options against `uqzoo methods`")
    else:
        what = f"raised {type(exc).__name__}"
        fix = "check its options against `uqzoo methods`, or leave it out (--methods)"
    return f"{name}: the fit {what}: {message}; {fix}"


@contextlib.contextmanager
def _data_warnings_once(said: set[str]) -> Iterator[None]:
    """Within: a DataWarning whose message was already said in this comparison is dropped.

    Every fit and every evaluation checks the same data, and the filters that
    ``catch_warnings`` changes between methods reset Python's own once-per-place
    memory, so without this the same sentence about the data is shown once per
    method. Other warnings pass through unchanged.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        yield
    for w in caught:
        if issubclass(w.category, DataWarning):
            if str(w.message) in said:
                continue
            said.add(str(w.message))
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def _scores(table: pd.DataFrame, reports: Mapping[str, Any], seed: int,
            fidelity: Mapping[str, Any], reference: ReferenceSettings | None,
            has_truth: bool) -> tuple[Any, ...]:
    """The fits that did not fail, ranked by proper scores (one bootstrap seed for all);
    on data without truth by closeness to a gated reference first."""
    from uqzoo.comparison.ranking import rank_methods, ranked_fidelity

    failed = {name for name in reports if bool(table.loc[name, "failed"])}
    ranked = {name: report for name, report in reports.items() if name not in failed}
    return rank_methods(ranked, seed=seed,
                        fidelity=ranked_fidelity(fidelity, reference, has_truth=has_truth,
                                                 left_out=failed))


_REFERENCE_ALLOWED = ("'auto', None, 'hmc' (the comparison's own HMC fit), the path of a reference "
                      "saved by `uqzoo reference` / uz.reference_posterior, or such a "
                      "Posterior")


def _reference_request(reference: object, names: Sequence[str], fit_data: Any,
                       spec: Model, recalibrated: bool) -> tuple[Any, str | None]:
    """(the reference posterior or None, its source) -- ``"hmc"``: made after the HMC fit.

    A saved or given reference is checked against the training data here, before
    any fit; its gate is judged later (a reference that fails it is still scored
    against, and said to be no reference).
    """
    from uqzoo.posterior import Posterior, load_posterior
    from uqzoo.reference import check_reference

    if reference is None:
        return None, None
    if isinstance(reference, str) and reference == "auto":
        return None, "auto"
    if isinstance(reference, str) and reference == "hmc":
        if "hmc" not in names:
            raise InvalidInputError(
                f"reference='hmc' uses the comparison's own HMC fit, but methods are "
                f"{list(names)}: add 'hmc' to methods, or pass a saved reference (allowed: "
                f"{_REFERENCE_ALLOWED})")
        return None, "hmc"
    if isinstance(reference, Posterior):
        post, source, shown = reference, "posterior", "a Posterior"
    elif isinstance(reference, (str, os.PathLike)):
        path = os.fspath(reference)
        if not os.path.isfile(path):
            raise InvalidInputError(f"reference={path!r}: no such file; allowed: "
                                    f"{_REFERENCE_ALLOWED}")
        try:
            post = load_posterior(path)
        except UqzooError as exc:
            raise type(exc)(f"reference={path!r}: {exc}; allowed: {_REFERENCE_ALLOWED}"
                            ) from None
        source, shown = str(path), repr(str(path))
    else:
        raise InvalidTypeError(f"reference must be {_REFERENCE_ALLOWED}; got "
                               f"{_show(reference)}")
    try:
        check_reference(post, fit_data, require_gate=False)
    except InvalidInputError as exc:
        hint = (" (with recalibrate the methods train on the training data less the "
                "calibration split, which is other training data)" if recalibrated else "")
        raise InvalidInputError(f"reference={shown} is refused: {exc}{hint}; allowed: "
                                f"{_REFERENCE_ALLOWED}, sampled on this comparison's "
                                f"training data") from None
    if post.spec.fingerprint() != spec.fingerprint():
        # the exact posterior of another network or prior is not what the methods approximate
        raise InvalidInputError(
            f"reference={shown} is refused: it is a posterior of {post.spec}, the comparison "
            f"fits {spec}; pass model= the reference's network, or sample a reference of this "
            f"one (uqzoo reference with the same --hidden, --activation, --prior-scale)")
    return post, source


def _own_reference(post: Any, fit_data: Any) -> Any:
    """The comparison's HMC fit as a reference: marked with the data it was fit on."""
    from uqzoo.reference import data_fingerprint

    # "data_fingerprint": the diagnostics key uqzoo.reference_posterior records and
    # uqzoo.reference.check_reference reads.
    diagnostics = {**post.diagnostics, "data_fingerprint": data_fingerprint(fit_data)}
    return dataclasses.replace(post, diagnostics=diagnostics)


def _closeness(reference: Any, source: str | None, posteriors: Mapping[str, Any], data: Any,
               fit_data: Any, target_prior: object, seed: int | None = None
               ) -> tuple[dict[str, Any], ReferenceSettings]:
    """Every posterior row's fidelity to the reference on the test points, and the
    reference's settings (its gate judged here, and recorded whatever it says)."""
    from uqzoo.fidelity import DEFAULT_LEVEL, fidelity
    from uqzoo.reference import data_fingerprint, reference_gate

    gate = reference_gate(reference)
    # The rows' probabilities were moved to the target prior: so is the reference.
    against = reference if target_prior is None else prior_shift(reference, target_prior)
    scored = {name: fidelity(post, against, data.X_test, data=fit_data, level=DEFAULT_LEVEL,
                             require_gate=False)
              for name, post in posteriors.items()}
    settings = ReferenceSettings(
        source=str(source), row="hmc" if source == "hmc" else None, gate=gate,
        level=DEFAULT_LEVEL, num_draws=int(reference.num_draws), n_points=int(data.n_test),
        data_fingerprint=data_fingerprint(fit_data), seed=seed)
    return scored, settings


def _auto_reference(names: Sequence[str], spec: Model, fit_data: Any, data: Any,
                    seed: int) -> tuple[int | None, str | None]:
    """reference="auto", decided before any fit: (the reference's seed, None) to sample
    one, (None, why not) to skip it, (None, None) where the truth is known."""
    from uqzoo.methods import hmc
    from uqzoo.reference import REFERENCE_OPTIONS

    if data.p_true_test is not None:        # the coverage of the truth judges
        return None, None
    # Its own stream, other than every fit's (each fit is seeded with ``seed``).
    reference_seed = int(np.random.SeedSequence([seed, 0x5EF]).generate_state(1)[0])
    if "hmc" in names:
        return reference_seed, None
    estimate = hmc.time_estimate(spec, fit_data, hmc.Config(**REFERENCE_OPTIONS))
    if estimate is None:
        return None, "HMC's sampling time could not be estimated for this network"
    if estimate.seconds <= AUTO_REFERENCE_SECONDS:
        return reference_seed, None
    return None, (f"HMC's time estimate of a reference run here is "
                  f"{estimate.seconds:.3g} s, over the {AUTO_REFERENCE_SECONDS:g} s that "
                  f"reference='auto' spends without hmc among the methods")


def _sample_reference(spec: Model, fit_data: Any, seed: int, progress_bar: bool) -> Any:
    """The reference="auto" posterior: uz.reference_posterior at its defaults."""
    from uqzoo.reference import reference_posterior

    with warnings.catch_warnings():
        # A missed gate is reported (Settings.reference, the verdict), not raised.
        warnings.simplefilter("ignore", ConvergenceWarning)
        return reference_posterior(spec, fit_data, seed=seed, progress_bar=progress_bar)


def _fidelity_columns(fid: Any) -> dict[str, float]:
    """A Fidelity's scores as the table's ``fidelity_<score>`` columns (headline keys)."""
    return {headline.get(f"fidelity_{score.name}").key(): score.value for score in fid.scores}


def label_noise_seed(seed: int) -> int:
    """The seed of a comparison's label noise: its own stream from the comparison's seed,
    so that which labels flip does not follow the fits' random numbers."""
    return int(np.random.SeedSequence([seed, 0x1AB]).generate_state(1)[0])


def _calibration_split(data: Any, recalibrate: object, seed: int, conformal: bool = False
                       ) -> tuple[Any, Any, dict[str, Any] | None]:
    """(data to fit on, held-out calibration (X, y) or None, the recalibration record).

    Checked before any fit. Without ``recalibrate`` or ``conformal`` the methods fit on
    all of ``data``; with either, one split serves both.
    """
    from uqzoo.recalibrate import DEFAULT_CALIBRATION_FRACTION, calibration_split

    if recalibrate is None:
        if not conformal:
            return data, None, None
        fit_data, held_out = calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=seed)
        return fit_data, held_out, None
    method = compare_options.recalibrate(recalibrate)
    fit_data, (X, y) = calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=seed)
    record: dict[str, Any] = {
        "method": method, "calibration_fraction": DEFAULT_CALIBRATION_FRACTION, "seed": seed,
        "n_calibration": int(X.shape[0]), "n_fit": int(fit_data.n_train), "rows": {}}
    return fit_data, (X, y), record


def _conformal_request(level: float | None, score: str, mondrian: bool, calibration: Any,
                       seed: int, fit_data: Any) -> dict[str, Any] | None:
    """The conformal record of checked options (:func:`uqzoo.comparison.options.conformal`),
    or None without ``conformal``."""
    from uqzoo.recalibrate import DEFAULT_CALIBRATION_FRACTION

    if level is None:
        return None
    return {"level": level, "alpha": 1.0 - level, "score": score, "mondrian": mondrian,
            "calibration_fraction": DEFAULT_CALIBRATION_FRACTION, "seed": seed,
            "n_calibration": int(calibration[0].shape[0]), "n_fit": int(fit_data.n_train),
            "rules": {}}


def _conformal_rule(version: Any, record: Mapping[str, Any], calibration: Any,
                    seed: int) -> Any:
    from uqzoo.conformal import conformalize

    return conformalize(version, calibration=calibration, alpha=record["alpha"],
                        score=record["score"], mondrian=record["mondrian"], seed=seed)


def _recalibrated(post: Any, recalibration: Mapping[str, Any], calibration: Any,
                  seed: int) -> Any:
    from uqzoo.recalibrate import recalibrate

    with warnings.catch_warnings():
        # A map fitted without a minimum is reported (recalibration rows, the
        # report's verdict), not raised.
        warnings.simplefilter("ignore", ConvergenceWarning)
        return recalibrate(post, method=recalibration["method"], seed=seed,
                           calibration=calibration)


def _map_of(name: str, post: Any) -> dict[str, Any]:
    transform = post.logit_transform
    info = transform.info
    return {"of": name, "temperature": transform.temperature,
            "scale": [float(v) for v in transform.scale],
            "shift": [float(v) for v in transform.shift],
            "converged": info.get("converged"), "nll_before": info.get("nll_before"),
            "nll_after": info.get("nll_after")}


def fingerprint_test_set(data: Any) -> str:
    """SHA-256 of a data set's test inputs and labels: which test set a result is of."""
    digest = hashlib.sha256()
    for array in (data.X_test, data.y_test):
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def describe_data(data: Any, recalibration: Mapping[str, Any] | None = None,
                  conformal: Mapping[str, Any] | None = None
                  ) -> tuple[tuple[str, str], ...]:
    """The data of a comparison in words: (label, text) pairs, as the report shows them."""
    items: list[tuple[str, str]] = [("data set", str(data.name))]
    meta = data.meta or {}
    description = meta.get("description")
    if isinstance(description, str):
        items.append(("what it is", description))
    items.append(("points", f"{data.n_train:,} train, {data.n_test:,} test"))
    items.append(("features", f"{data.n_features:,}"))
    names = data.class_names or tuple(str(c) for c in range(data.n_classes))
    items.append(("classes", f"{data.n_classes}: {', '.join(map(str, names))}"))
    counts = np.bincount(np.asarray(data.y_test, dtype=np.int64), minlength=data.n_classes)
    items.append(("test points per class",
                  ", ".join(f"{n}: {int(c):,}" for n, c in zip(names, counts, strict=True))))
    options = meta.get("options")
    split = _split_text(meta, options)
    if split:
        items.append(("split", split))
    if isinstance(options, Mapping):
        shown = ", ".join(f"{k}={_option_text(v)}" for k, v in options.items() if _is_plain(v))
        if shown:
            items.append(("options", shown))
    noise = meta.get("label_noise")
    if isinstance(noise, Mapping):
        items.append(("label noise",
                      f"{noise['n_flipped']:,} training labels ({float(noise['rate']):.0%}) "
                      f"flipped, {noise['kind']}, seed {noise['seed']}; test labels and truth "
                      "clean"))
    if recalibration:
        rec = recalibration
        items.append(("calibration split",
                      f"{rec['n_calibration']:,} training points "
                      f"({float(rec['calibration_fraction']):.0%} of each class, seed "
                      f"{rec['seed']}) held out to fit {rec['method']} scaling; every "
                      f"method and detector trained on the other {rec['n_fit']:,}"))
    if conformal:
        con = conformal
        kind = "Mondrian (per class)" if con["mondrian"] else "marginal"
        items.append(("conformal sets",
                      f"split-conformal {str(con['score']).upper()} label sets at level "
                      f"{float(con['level']):g}, {kind}, calibrated on "
                      f"{con['n_calibration']:,} training points "
                      f"({float(con['calibration_fraction']):.0%} of each class, seed "
                      f"{con['seed']}) held out before every fit; every method trained on "
                      f"the other {con['n_fit']:,}"))
    truth = ("known (simulated): coverage of the true probability is judged"
             if data.p_true_test is not None else
             "unknown: coverage cannot be judged, only calibration and selective risk")
    items.append(("true probabilities", truth))
    citation = meta.get("citation")
    if isinstance(citation, str):
        items.append(("source", citation))
    return tuple(items)


def _is_plain(value: object) -> bool:
    if isinstance(value, (str, bool, int, float, np.integer, np.floating)) or value is None:
        return True
    return isinstance(value, (tuple, list)) and len(value) <= 8 and all(
        isinstance(v, (str, bool, int, float)) for v in value)


def _option_text(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(map(str, value)) + ")"
    return str(value)


def _split_text(meta: Mapping, options: object) -> str:
    parts = []
    if isinstance(options, Mapping) and "split" in options:
        split = str(options["split"])
        parts.append(split)
        if split == "random" and "image_shape" in meta:
            parts.append("optimistic: test pixels' neighbours trained")
        guard = options.get("guard")
        if guard is not None and split != "random":
            parts.append(f"guard band {guard} px")
        if options.get("test_size") is not None:
            parts.append(f"test share {options['test_size']}")
    elif isinstance(options, Mapping) and options.get("test_size") is not None:
        parts.append(f"stratified random, test share {options['test_size']}")
    elif isinstance(options, Mapping) and "n_test" in options:
        parts.append("independent draws for training and testing (simulated)")
    if "image_shape" in meta:
        shape = tuple(int(s) for s in meta["image_shape"])
        parts.append(f"scene {shape[0]}×{shape[1]} pixels")
    return "; ".join(parts)
