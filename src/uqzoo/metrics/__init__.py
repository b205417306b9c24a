"""Metrics on plain numpy arrays: intervals, coverage, HCS, calibration, selective prediction.

Notation: draws (S, N, K); probs = posterior-mean probabilities (N, K);
y (N,) labels in 0..K-1; p_true (N, K) when known.
"""

from uqzoo.metrics.calibration import (
    NLL_CLIP,
    AdaptiveBins,
    CalibrationBins,
    ReliabilityCurve,
    adaptive_binning,
    adaptive_ece,
    adaptive_mce,
    brier,
    calibration_bins,
    classwise_ece,
    ece,
    mce,
    nll,
    reliability_curve,
    rmsce,
)
from uqzoo.metrics.coverage import CoverageResult, IntervalWidth, coverage, interval_width
from uqzoo.metrics.hcs import HCSSummary, HighConfidenceSet, hcs_summary, high_confidence_set
from uqzoo.metrics.intervals import DEFAULT_LEVELS, CredibleInterval, credible_interval
from uqzoo.metrics.selective import (
    RiskCoverageCurve,
    accuracy,
    auarc,
    aurc,
    balanced_accuracy,
    eaurc,
    misclassification_auroc,
    risk_coverage_curve,
)
from uqzoo.metrics.streaming import (
    CalibrationAccumulator,
    ClasswiseCalibrationAccumulator,
    HCSAccumulator,
    IntervalAccumulator,
    IntervalSummary,
    ScoreAccumulator,
    ScoreSummary,
)
from uqzoo.metrics.uncertainty import (
    expected_entropy,
    interval_width_score,
    max_probability,
    mutual_information,
    predictive_entropy,
)

__all__ = [
    "DEFAULT_LEVELS",
    "NLL_CLIP",
    "AdaptiveBins",
    "CalibrationAccumulator",
    "CalibrationBins",
    "ClasswiseCalibrationAccumulator",
    "CoverageResult",
    "CredibleInterval",
    "HCSAccumulator",
    "HCSSummary",
    "HighConfidenceSet",
    "IntervalAccumulator",
    "IntervalSummary",
    "IntervalWidth",
    "ReliabilityCurve",
    "RiskCoverageCurve",
    "ScoreAccumulator",
    "ScoreSummary",
    "accuracy",
    "adaptive_binning",
    "adaptive_ece",
    "adaptive_mce",
    "auarc",
    "aurc",
    "balanced_accuracy",
    "brier",
    "calibration_bins",
    "classwise_ece",
    "coverage",
    "credible_interval",
    "eaurc",
    "ece",
    "expected_entropy",
    "hcs_summary",
    "high_confidence_set",
    "interval_width",
    "interval_width_score",
    "max_probability",
    "mce",
    "misclassification_auroc",
    "mutual_information",
    "nll",
    "predictive_entropy",
    "reliability_curve",
    "risk_coverage_curve",
    "rmsce",
]
