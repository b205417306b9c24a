"""The headline metrics: one table that says what each column of a comparison means.

Every flat key of :meth:`uqzoo.EvalReport.to_dict`, every column of
:attr:`uqzoo.Comparison.table` and of the report's table, the metrics
ranked under shift and those averaged over a study's replicates are read
from :data:`HEADLINE` -- the one place that lists them -- and so are the
metric columns a study's store keeps per task (:mod:`uqzoo.study.store`).
A key is the metric's name, with ``@<level>`` (or ``@<false-alarm rate>``)
for metrics that take one: ``"ece"``, ``"coverage@0.8"``, ``"pd_at_far@0.01"``.
Consumers build keys from the levels they were given (:func:`columns`) and
never parse them back; :func:`parse_key` exists for one case only, a bare
user table handed to :func:`uqzoo.comparison.report.verdict` without its levels.

Examples
--------
>>> from uqzoo import headline
>>> [c.key for c in headline.columns(levels=(0.8,), where="shift")]
['coverage@0.8', 'interval_width@0.8', 'accuracy', 'ece', 'brier', 'nll', 'detection_auroc']
>>> headline.get("ece").better
'lower'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Literal

from uqzoo.errors import InvalidInputError

__all__ = ["HEADLINE", "Column", "Headline", "columns", "get", "parse_key", "ranked"]

Axis = Literal["level", "far"]
Better = Literal["higher", "lower", "nominal"]
Where = Literal["comparison", "report", "shift", "study", "store"]


@dataclasses.dataclass(frozen=True)
class Headline:
    """One headline quantity.

    Attributes
    ----------
    name : str
        Its name: the ``metric`` of :attr:`EvalReport.table` where it comes
        from there, and the key prefix.
    label, description : str
        Column header and its one-line meaning (the report's legend).
    group : str
        The report's column group (``"fit"``, ``"level"``, ``"accuracy"``,
        ``"calibration"``, ``"selective"``, ``"detection"``, ``"groups"``).
    axis : {"level", "far"} or None
        The key takes a credible level or a false-alarm rate.
    better : {"higher", "lower", "nominal"} or None
        Which way is better; ``"nominal"``: closest to the level (coverage).
        None for descriptive columns.
    needs_truth : bool
        Defined only with known true probabilities.
    needs_reference : bool
        Defined only against a reference posterior (``uz.compare(reference=...)``,
        a study with ``[reference]``): closeness to the exact posterior.
    where : frozenset of str
        Where it is shown: ``"comparison"`` (a column of
        ``Comparison.table``), ``"report"`` (the report's wider table),
        ``"shift"`` (mean ± sd under perturbation, and ranked there when it
        has a direction), ``"study"`` (averaged over replicates by
        :func:`uqzoo.study.summarize`), ``"store"`` (kept per task by a
        study's store: columns of :func:`uqzoo.study.load`, per level where
        it takes a level).
    stderr : bool
        The evaluator reports its within-task standard error (the ``stderr``
        of its row in :attr:`EvalReport.table`), which a study keeps as
        ``<name>_se``; only meaningful with ``"store"``.
    """

    name: str
    label: str
    description: str
    group: str
    axis: Axis | None = None
    better: Better | None = None
    needs_truth: bool = False
    where: frozenset[str] = frozenset()
    needs_reference: bool = False
    stderr: bool = False

    def key(self, at: float | None = None) -> str:
        """The flat key: ``name`` or ``name@<at>``."""
        if self.axis is None:
            return self.name
        if at is None:
            raise InvalidInputError(f"{self.name} takes a {self.axis}; got none")
        return f"{self.name}@{float(at):g}"


def _h(name: str, label: str, description: str, group: str, where: str = "", **kw) -> Headline:
    return Headline(name, label, description, group, where=frozenset(where.split()), **kw)


_L = "{L}"
# In display order: fit columns, then per level, then the rest, then per FAR.
HEADLINE: tuple[Headline, ...] = (
    _h("kind", "kind", "posterior (a fitted method), recalibrated (that posterior after "
       "temperature or vector scaling fitted on held-out training data; its fit s is the "
       "recalibration's) or detector (a classical detector: scores only)", "fit",
       "comparison report"),
    _h("num_draws", "S", "posterior draws S (one per member for ensembles and bootstraps)",
       "fit", "comparison report"),
    _h("fit_seconds", "fit s", "wall-clock seconds to fit", "fit", "comparison report study"),
    _h("converged", "converged", "the method's own convergence check (— : it has none)",
       "fit", "comparison report"),
    _h("failed", "failed", "the fit failed (see flags), whatever its accuracy", "fit",
       "comparison report"),
    _h("flags", "flags", "how it failed: one_class, chance, below_chance_ranking, "
       "hcs_confident_misses, hcs_confident_false_alarms", "fit", "comparison report"),
    _h("warning_flags", "warnings", "the same checks where the data, not the fit, are to "
       "blame, or the excess is too small to call a failure (uz.evaluate: FitFailure "
       "severity \"warning\")", "fit", "comparison report"),
    _h("rank", "rank", "rank by the comparison's score: the interval score of the "
       "true probability (mean over levels) where it is known, else the mean per-point "
       "1-Wasserstein distance to a reference posterior that passed its gate (the reference "
       "row itself unranked), else NLL of the test labels; 1 is best, failed fits unranked "
       "(the verdict gives the bootstrap intervals of each difference to the best)", "fit",
       "comparison report"),
    _h("n_test", "N test", "test points evaluated", "fit", "report"),
    _h("coverage", "coverage", f"share of test points whose level-{_L} interval holds the "
       f"true probability (nominal {_L}); red: below, blue: above the nominal level beyond "
       "Monte Carlo error, green: within it", "level", "comparison report shift study store",
       axis="level", better="nominal", needs_truth=True, stderr=True),
    _h("interval_width", "width", f"mean width of the level-{_L} credible interval", "level",
       "comparison report shift study store", axis="level", stderr=True),
    _h("interval_score", "interval score", f"interval score of the level-{_L} interval "
       f"for the true probability (Gneiting & Raftery 2007: width + 2/(1 − {_L}) × distance "
       "outside; lower is better)", "level", "comparison report study store", axis="level",
       better="lower", needs_truth=True, stderr=True),
    _h("hcs_proportion", "HCS %", "share of points in the High Confidence Set", "level",
       "comparison report study store", axis="level"),
    _h("hcs_size", "HCS size", "points in the High Confidence Set", "level", "report store",
       axis="level"),
    _h("hcs_errors", "HCS wrong", "confident decisions of the High Confidence Set that were "
       "wrong (confident misses + confident false alarms)", "level", "report", axis="level"),
    _h("hcs_accuracy", "HCS accuracy", "accuracy of the High Confidence Set's decisions",
       "level", "study store", axis="level", better="higher", stderr=True),
    _h("hcs_missed_targets", "HCS missed", "targets the High Confidence Set confidently "
       "dismissed", "level", "store", axis="level", better="lower"),
    _h("accuracy", "accuracy", "accuracy of the posterior-mean prediction", "accuracy",
       "comparison report shift study store", better="higher", stderr=True),
    _h("balanced_accuracy", "balanced", "mean recall over classes", "accuracy",
       "comparison report store", better="higher"),
    _h("ece", "ECE", "expected calibration error, top-label, 15 equal-width bins",
       "calibration", "comparison report shift study store", better="lower"),
    _h("ece_quantile", "ECE q", "ECE with 15 equal-mass bins", "calibration", "report",
       better="lower"),
    _h("adaptive_ece", "ECE adapt.", "adaptive-binning ECE (Ding et al.)", "calibration",
       "report store", better="lower"),
    _h("classwise_ece", "ECE cw", "class-wise ECE, mean over classes", "calibration",
       "report", better="lower"),
    _h("mce", "MCE", "maximum calibration error, top-label", "calibration", "report",
       better="lower"),
    _h("brier", "Brier", "Brier score, sum over classes (0-2)", "calibration",
       "comparison report shift study store", better="lower"),
    _h("nll", "NLL", "negative log-likelihood per point (nats)", "calibration",
       "comparison report shift study store", better="lower"),
    _h("aurc", "AURC", "area under the risk–coverage curve (lower is better)", "selective",
       "comparison report store", better="lower"),
    _h("eaurc", "E-AURC", "AURC minus its optimum", "selective", "report", better="lower"),
    _h("auarc", "AUARC", "area under the accuracy–rejection curve", "selective", "",
       better="higher"),
    _h("misclassification_auroc", "misclass. AUROC", "how well confidence separates right "
       "from wrong predictions", "selective", "report", better="higher"),
    # Closeness to a reference posterior (uqzoo.fidelity), at its 90 % level: the
    # name is "fidelity_" + a key of uqzoo.fidelity.METRICS.
    _h("fidelity_agreement", "agree ref", "share of test points whose top label equals the "
       "reference posterior's (1: perfect)", "fidelity", "comparison report study store",
       better="higher", needs_reference=True),
    _h("fidelity_total_variation", "TV ref", "total variation between the predictive mean and "
       "the reference posterior's, mean over test points (0: perfect)", "fidelity",
       "comparison report study store", better="lower", needs_reference=True),
    _h("fidelity_wasserstein1", "W1 ref", "1-Wasserstein distance between the draws of each "
       "class probability and the reference posterior's, mean over test points (0: perfect; "
       "the verdict ranks by it on data without true probabilities)", "fidelity",
       "comparison report study store", better="lower", needs_reference=True),
    _h("fidelity_interval_overlap", "overlap ref", "share of (test point, class) pairs whose "
       "90 % interval meets the reference posterior's (1: perfect)", "fidelity",
       "comparison report study store", better="higher", needs_reference=True),
    _h("fidelity_width_ratio", "width/ref", "total 90 % interval width / the reference "
       "posterior's (1: perfect; < 1 too narrow, > 1 too wide)", "fidelity",
       "comparison report study store", needs_reference=True),
    # Split-conformal label sets (uz.compare(conformal=level), uz.evaluate(conformal=...)):
    # at the one conformal level, so no @level; present only where conformal sets were made.
    _h("conformal_coverage", "conf. coverage", "share of test points whose split-conformal "
       "label set (calibrated on held-out training data) holds the label; nominal: the "
       "conformal level", "conformal", "comparison report study store"),
    _h("conformal_set_size", "conf. size", "mean number of labels in the conformal set",
       "conformal", "comparison report study store", better="lower"),
    _h("conformal_singleton_rate", "conf. single", "share of conformal sets with one label",
       "conformal", "report store", better="higher"),
    _h("conformal_worst_decile", "conf. worst 10%", "exact conditional coverage "
       "P(y ∈ C(x) | x) = Σ_{k∈C(x)} p_true,k, mean over the 10 % of test points where it "
       "is lowest", "conformal", "comparison report study store", better="higher",
       needs_truth=True),
    _h("plain_set_coverage", "own coverage", "coverage of the model's own label set at the "
       "conformal level (its most probable labels until their probability reaches the "
       "level), without calibration", "conformal", "comparison report study store"),
    _h("plain_set_size", "own size", "mean number of labels in the model's own set",
       "conformal", "report study store"),
    _h("plain_worst_decile", "own worst 10%", "exact conditional coverage of the model's own "
       "set, mean over the worst 10 % of test points", "conformal",
       "comparison report study store", better="higher", needs_truth=True),
    _h("conformal_hcs_missed_rate", "conf. HCS missed", "share of test targets the conformal "
       "High Confidence Set (threshold by conformal risk control at α = 1 − level) "
       "confidently dismissed; bounded by α in expectation", "conformal",
       "comparison report study store", better="lower"),
    _h("mean_predictive_entropy", "entropy", "mean entropy of the predictive mean",
       "uncertainty", "store", stderr=True),
    _h("mean_mutual_information", "mutual inf.", "mean mutual information (epistemic part)",
       "uncertainty", "store", stderr=True),
    _h("detection_auroc", "AUROC", "detection AUROC, class 1 the target", "detection",
       "comparison report shift store", better="higher", stderr=True),
    # Per test group (data with groups_test, e.g. split="groups"): the median over the
    # groups of each group's metric, as Mehrtens et al. (2023) report ECE over slides.
    _h("ece_group_median", "ECE med. group", "median over the test groups of each group's "
       "ECE (top-label, 15 equal-width bins)", "groups", "", better="lower"),
    _h("auarc_group_median", "AUARC med. group", "median over the test groups of each "
       "group's AUARC with balanced accuracy", "groups", "", better="higher"),
    _h("balanced_accuracy_group_median", "balanced med. group", "median over the test "
       "groups of each group's balanced accuracy", "groups", "", better="higher"),
    _h("detection_auroc_group_median", "AUROC med. group", "median over the test groups "
       "(with targets and background) of each group's detection AUROC", "groups", "",
       better="higher"),
    _h("pd_at_far", f"Pd@FAR {_L}", f"probability of detection at false-alarm rate {_L}",
       "detection", "comparison report", axis="far", better="higher"),
    _h("pd_at_far_lower", "lower", "Clopper–Pearson 95 % lower bound of Pd", "detection",
       "comparison report", axis="far"),
    _h("pd_at_far_upper", "upper", "Clopper–Pearson 95 % upper bound of Pd", "detection",
       "comparison report", axis="far"),
)

_BY_NAME = {h.name: h for h in HEADLINE}


def get(name: str) -> Headline:
    """The entry of headline ``name`` (``"ece"``, ``"coverage"``, ...)."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        raise InvalidInputError(
            f"no headline metric {name!r}; known: {', '.join(_BY_NAME)}") from None


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: its key, its entry and the level (or FAR) it is at."""

    key: str
    headline: Headline
    at: float | None = None

    @property
    def label(self) -> str:
        return self.headline.label.replace(_L, f"{self.at:g}" if self.at is not None else "")

    @property
    def title(self) -> str:
        """The label with its level or rate: ``"coverage 0.8"``, ``"Pd@FAR 0.01"``."""
        if self.at is None or _L in self.headline.label:
            return self.label
        return f"{self.label} {self.at:g}"

    @property
    def description(self) -> str:
        return self.headline.description.replace(
            _L, f"{self.at:g}" if self.at is not None else "")

    @property
    def group(self) -> str:
        return f"level {self.at:g}" if self.headline.axis == "level" else self.headline.group


def columns(levels: Iterable[float] = (), fars: Iterable[float] = (), *,
            where: Where | None = None, has_truth: bool = True, has_reference: bool = True,
            names: Sequence[str] | None = None) -> list[Column]:
    """The headline columns in display order: fit columns, each level's, the rest, each FAR's.

    Parameters
    ----------
    levels, fars : iterables of float
        The credible levels and false-alarm rates the keys are made for.
    where : {"comparison", "report", "shift", "study", "store"}, optional
        Only the entries shown there (all, without it).
    has_truth : bool
        Leave out entries that need known true probabilities when False.
    has_reference : bool
        Leave out the closeness to a reference posterior when False.
    names : sequence of str, optional
        Only these entries.
    """
    chosen = [h for h in HEADLINE
              if (where is None or where in h.where or (where == "report" and "comparison"
                                                         in h.where))
              and (has_truth or not h.needs_truth)
              and (has_reference or not h.needs_reference)
              and (names is None or h.name in names)]
    levels, fars = list(levels), list(fars)
    fit = [Column(h.key(), h) for h in chosen if h.group == "fit"]
    per_level = [Column(h.key(lv), h, float(lv)) for lv in levels
                 for h in chosen if h.axis == "level"]
    rest = [Column(h.key(), h) for h in chosen if h.axis is None and h.group != "fit"]
    per_far = [Column(h.key(far), h, float(far)) for far in fars
               for h in chosen if h.axis == "far"]
    return fit + per_level + rest + per_far


def ranked() -> list[tuple[str, Better]]:
    """(name, better) of the metrics that methods are ranked by under shift."""
    return [(h.name, h.better) for h in HEADLINE if "shift" in h.where and h.better]


def parse_key(key: str) -> Column | None:
    """The column a flat key names, or None for a key that is no headline.

    Only for a table that arrives without its levels (a user's own DataFrame);
    everything uqzoo makes carries its levels and builds its keys instead.
    """
    name, at, value = str(key).partition("@")
    entry = _BY_NAME.get(name)
    if entry is None or (entry.axis is None) != (not at):
        return None
    if entry.axis is None:
        return Column(key, entry)
    try:
        number = float(value)
    except ValueError:
        return None
    return Column(key, entry, number) if entry.key(number) == key else None
