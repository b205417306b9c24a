"""Evaluation under shift: per-copy evaluations gathered into mean ± sd beside the clean value.

:func:`uqzoo.evaluate` (``perturbations=``) and :func:`uqzoo.compare` call
these; the perturbed copies come from :mod:`uqzoo.perturb`. Kept apart from
the evaluator so that it stays one pass over the test points: every copy is
evaluated by the same ``evaluate`` call as the clean data, and only the
resulting tables are combined here.

Conventions: the spread over copies is the sample standard deviation
(``ddof=1``; NaN with one copy); a metric a copy cannot compute (NaN, e.g. the
HCS accuracy of an empty set, or coverage when the copy has no ``p_true``)
is left out of that metric's mean and sd, and ``k`` counts the copies that
entered.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from uqzoo import headline as headlines
from uqzoo._limits import check_copies
from uqzoo._progress import progress_bar as progress
from uqzoo._validation import _show, check_seed
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = [
    "ShiftPlan",
    "headline",
    "headline_keys",
    "mean_sd",
    "plan",
    "prepare",
    "rankings",
    "run",
    "shift_key",
    "summary_lines",
    "table_columns",
    "text",
]

SHIFT_COLUMNS = ["perturbation", "family", "low", "high", "metric", "variant", "level",
                 "class", "clean", "mean", "sd", "k"]
COPY_COLUMNS = ["perturbation", "family", "copy", "magnitude", "p_true", "key", "value"]
@dataclasses.dataclass(frozen=True)
class _Item:
    label: str
    perturbation: Any                  # uqzoo.perturb.Perturbation
    copies: Any = None                 # uqzoo.perturb.PerturbedCopies, when made beforehand


@dataclasses.dataclass(frozen=True)
class ShiftPlan:
    """Validated ``perturbations``, ``copies`` and ``seed`` of one evaluation."""

    items: tuple[_Item, ...]
    k: int
    seed: int


def _same_data(a: Any, b: Any) -> bool:
    if a is b:
        return True
    return (a.X_train.shape == b.X_train.shape and a.X_test.shape == b.X_test.shape
            and np.array_equal(a.y_test, b.y_test) and np.array_equal(a.X_train, b.X_train)
            and np.array_equal(a.X_test, b.X_test))


def plan(perturbations: object, copies: object, seed: object, posterior_or_draws: object,
         data: object) -> ShiftPlan | None:
    """Check the shift options of :func:`uqzoo.evaluate` before any work; None without them.

    ``perturbations`` is a list whose entries are a family name, a
    ``"family:low-high"`` string, a ``(family, (low, high))`` pair, a
    :class:`~uqzoo.perturb.Perturbation` or ready-made
    :class:`~uqzoo.perturb.PerturbedCopies` of the same data (a single entry
    needs no list).
    """
    if perturbations is None:
        return None
    if not hasattr(posterior_or_draws, "summarize"):
        raise InvalidInputError(
            "perturbations need a fitted Posterior, which can predict on the perturbed "
            f"inputs; got {_show(posterior_or_draws)} (draws are fixed to one test set)")
    return _parse(perturbations, copies, seed, data)


def prepare(perturbations: object, copies: object, seed: object,
            data: object) -> list[Any] | None:
    """The copies of every perturbation, made once for all methods of a comparison.

    Validates as :func:`plan` does (before any fit) and returns one
    :class:`~uqzoo.perturb.PerturbedCopies` per entry; None without
    perturbations.
    """
    if perturbations is None:
        return None
    from uqzoo import perturb
    shift_plan = _parse(perturbations, copies, seed, data)
    return [item.copies if item.copies is not None else
            perturb.copies(data, item.perturbation, shift_plan.k, seed=shift_plan.seed)
            for item in shift_plan.items]


def _parse(perturbations: object, copies: object, seed: object, data: object) -> ShiftPlan:
    from uqzoo import perturb
    from uqzoo.datasets import ClassificationData

    k = check_copies(copies, "copies")
    seed = check_seed(seed)
    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(
            f"perturbations need a ClassificationData as data_or_labels (its X_test is "
            f"perturbed), got {_show(data)}")
    entries: list[object]
    if isinstance(perturbations, (str, perturb.Perturbation, perturb.PerturbedCopies)):
        entries = [perturbations]
    elif isinstance(perturbations, Sequence) and not isinstance(perturbations, bytes):
        entries = list(perturbations)
    else:
        raise InvalidTypeError(
            f"perturbations must be a list of family names ({', '.join(perturb.names())}), "
            f"(family, (low, high)) pairs or Perturbation objects; got {_show(perturbations)}")
    if not entries:
        raise InvalidInputError("perturbations must name at least one family, got an empty "
                                "list")
    items = []
    for i, entry in enumerate(entries):
        what = f"perturbations[{i}]"
        if isinstance(entry, perturb.PerturbedCopies):
            if not _same_data(entry.source, data):
                raise InvalidInputError(
                    f"{what} holds copies of other data ({entry.source!r}) than the data "
                    f"evaluated ({data!r})")
            items.append(_Item(entry.perturbation.label, entry.perturbation, entry))
            continue
        if isinstance(entry, perturb.Perturbation):
            pert = entry
        elif isinstance(entry, str):
            pert = perturb.Perturbation.parse(entry)
        elif isinstance(entry, (tuple, list)) and len(entry) == 2 \
                and isinstance(entry[0], str):
            pert = perturb.Perturbation(entry[0], entry[1])
        else:
            raise InvalidTypeError(
                f"{what} must be a family name, 'family:low-high', (family, (low, high)) or "
                f"a Perturbation; got {_show(entry)}")
        perturb._check_fits(data, pert)
        items.append(_Item(pert.label, pert))
    labels = [item.label for item in items]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise InvalidInputError(f"perturbations must not repeat a perturbation, got "
                                f"{repeated} more than once")
    return ShiftPlan(tuple(items), k, seed)


def _copies_of(item: _Item, data: Any, k: int, seed: int) -> Iterator[tuple[int, float, Any]]:
    if item.copies is not None:
        for i, (magnitude, copy) in enumerate(zip(item.copies.magnitudes, item.copies,
                                                  strict=True)):
            yield i, float(magnitude), copy
    else:
        from uqzoo import perturb
        yield from perturb.iter_copies(data, item.perturbation, k, seed)


def _row_keys(table: pd.DataFrame) -> list[tuple]:
    """(metric, variant, level or None, class or None) of every row, in order."""
    return [(metric, variant, None if pd.isna(level) else float(level),
             None if pd.isna(cls) else cls)
            for metric, variant, level, cls in zip(table.metric, table.variant, table.level,
                                                   table["class"], strict=True)]


def _headline_values(report: Any) -> dict[str, float]:
    """The numeric headline values of one copy's report (its metrics, not its sizes)."""
    fars = report.pd_at_far.far if report.pd_at_far is not None else ()
    keys = {c.key for c in headlines.columns(report.levels, fars) if c.headline.group != "fit"}
    out = {}
    for key, value in report.to_dict().items():
        if key in keys and isinstance(value, (int, float, np.integer, np.floating)) and not \
                isinstance(value, (bool, np.bool_)):
            out[key] = float(value)
    return out


def mean_sd(values: Sequence[float]) -> tuple[float, float, int]:
    arr = np.asarray(values, dtype=np.float64)
    finite = arr[np.isfinite(arr)]
    k = int(finite.size)
    mean = float(finite.mean()) if k else math.nan
    sd = float(finite.std(ddof=1)) if k > 1 else math.nan
    return mean, sd, k


def run(shift_plan: ShiftPlan, data: Any, clean_table: pd.DataFrame,
        evaluate_copy: Callable[[Any], Any], progress_bar: bool = False
        ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Evaluate every copy; return (``shift``, ``shift_copies``) of :class:`~uqzoo.EvalReport`.

    ``shift`` has one row per row of the clean table and perturbation
    (:data:`SHIFT_COLUMNS`); ``shift_copies`` one row per copy and headline
    value of its ``to_dict`` (:data:`COPY_COLUMNS`).
    """
    clean_keys = _row_keys(clean_table)
    clean = dict(zip(clean_keys, clean_table.value.astype(float), strict=True))
    shift_rows: list[dict[str, Any]] = []
    copy_rows: list[dict[str, Any]] = []
    for item in shift_plan.items:
        pert = item.perturbation
        per_row: dict[tuple, list[float]] = {}
        order: list[tuple] = list(clean_keys)
        copies = _copies_of(item, data, shift_plan.k, shift_plan.seed)
        copies = progress(copies, total=len(item.copies) if item.copies is not None
                          else shift_plan.k, desc=f"shift {item.label}", unit="copy",
                          enabled=progress_bar)
        n_copies = 0
        for i, magnitude, copy in copies:
            n_copies += 1
            report = evaluate_copy(copy)
            truth = copy.meta["perturbation"]["p_true"]
            table = report.table
            for key, value in zip(_row_keys(table), table.value.astype(float), strict=True):
                if key not in per_row and key not in clean:
                    order.append(key)
                per_row.setdefault(key, []).append(value)
            for name, value in _headline_values(report).items():
                copy_rows.append(dict(perturbation=item.label, family=pert.family, copy=i,
                                      magnitude=magnitude, p_true=truth, key=name,
                                      value=value))
        for key in dict.fromkeys(order):
            metric, variant, level, cls = key
            values = per_row.get(key, [])
            # A row missing from a copy (coverage without p_true) counts as not computed.
            values = values + [math.nan] * (n_copies - len(values))
            mean, sd, k = mean_sd(values)
            shift_rows.append(dict(
                perturbation=item.label, family=pert.family, low=pert.low, high=pert.high,
                metric=metric, variant=variant, level=math.nan if level is None else level,
                **{"class": cls}, clean=clean.get(key, math.nan), mean=mean, sd=sd, k=k))
    shift = pd.DataFrame(shift_rows, columns=SHIFT_COLUMNS)
    shift["class"] = shift["class"].astype(clean_table["class"].dtype)
    return shift, pd.DataFrame(copy_rows, columns=COPY_COLUMNS)


def table_columns(headline_columns: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The shift columns of a comparison table, in the order of their headline columns."""
    out = []
    for name in headline_columns:
        out += [c for c in columns if c.startswith(f"{name}_shift_")]
    return out


def shift_key(key: str, label: str, labels: Sequence[str], stat: str) -> str:
    """``ece_shift_mean`` (one perturbation) or ``ece_shift_mean[noise:20-40]`` (several)."""
    base = f"{key}_shift_{stat}"
    return base if len(labels) == 1 else f"{base}[{label}]"


def headline(shift_copies: pd.DataFrame, clean: Mapping[str, Any]) -> dict[str, float]:
    """Mean and sd over the copies of every numeric headline value in ``clean`` (to_dict)."""
    out: dict[str, float] = {}
    labels = list(dict.fromkeys(shift_copies.perturbation))
    for label in labels:
        sub = shift_copies[shift_copies.perturbation == label]
        by_key = {key: group.value.to_numpy() for key, group in sub.groupby("key", sort=False)}
        for key in clean:
            if key not in by_key:
                continue
            mean, sd, _ = mean_sd(by_key[key])
            out[shift_key(key, label, labels, "mean")] = mean
            out[shift_key(key, label, labels, "sd")] = sd
    return out


def headline_columns(clean: Mapping[str, Any], levels: Sequence[float]
                     ) -> list[headlines.Column]:
    """The headline metrics shown under shift (summary, CLI, figures), those in ``clean``."""
    return [c for c in headlines.columns(levels, where="shift") if c.key in clean]


def headline_keys(clean: Mapping[str, Any], levels: Sequence[float]) -> list[str]:
    """The keys of :func:`headline_columns`."""
    return [c.key for c in headline_columns(clean, levels)]


def text(reports: Mapping[str, Any], changes: Sequence[str]) -> str:
    """Plain-text account of a comparison under shift: per perturbation, one row per
    method with each headline metric as ``mean ± sd (clean)``, then the ranking changes."""
    first = next(iter(reports.values()))
    keys = headline_keys(first.to_dict(), first.levels)
    lines = []
    for label in dict.fromkeys(first.shift_copies.perturbation):
        cells: dict[str, dict[str, str]] = {}
        truth, n = "", 0
        for name, report in reports.items():
            clean = report.to_dict()
            sub = report.shift_copies[report.shift_copies.perturbation == label]
            truth = ", ".join(dict.fromkeys(sub.p_true))
            n = sub["copy"].nunique()
            row = {}
            for key in keys:
                mean, sd, k = mean_sd(sub.value[sub.key == key].to_numpy())
                row[key] = f"{mean:.4f} ± {sd:.4f} ({clean[key]:.4f})" if k else "n/a"
            cells[name] = row
        lines.append(f"\nunder {label}: mean ± sd over {n} copies (clean value in "
                     f"brackets); p_true {truth}")
        with pd.option_context("display.width", 250, "display.max_columns", 50):
            lines.append(pd.DataFrame(cells).T.to_string())
    lines.append("")
    lines += list(changes) or ["No ranking of the methods by a headline metric changes "
                               "under shift."]
    return "\n".join(lines)


def summary_lines(shift_copies: pd.DataFrame, clean: Mapping[str, Any],
                  levels: Sequence[float]) -> list[str]:
    """Lines of :meth:`EvalReport.summary`: headline metrics, mean ± sd over copies (clean)."""
    lines = []
    keys = headline_keys(clean, levels)
    for label in dict.fromkeys(shift_copies.perturbation):
        sub = shift_copies[shift_copies.perturbation == label]
        truth = ", ".join(dict.fromkeys(sub.p_true))
        parts = []
        for key in keys:
            values = sub.value[sub.key == key].to_numpy()
            if key not in clean or values.size == 0:
                continue
            mean, sd, _ = mean_sd(values)
            parts.append(f"{key} {mean:.4f} ± {sd:.4f} (clean {clean[key]:.4f})")
        n = sub["copy"].nunique()
        lines.append(f"  under {label} ({n} copies, p_true {truth}):")
        lines += [f"    {part}" for part in parts]
    return lines


def _ranked_keys(clean: Mapping[str, Any], levels: Sequence[float]
                 ) -> list[tuple[str, str, float | None]]:
    """(key, direction, nominal level) of the ranking metrics present in a to_dict."""
    return [(c.key, str(c.headline.better), c.at if c.headline.better == "nominal" else None)
            for c in headlines.columns(levels, where="shift")
            if c.headline.better and c.key in clean]


def _badness(values: np.ndarray, direction: str, nominal: float | None) -> np.ndarray:
    if direction == "higher":
        return -values
    if direction == "nominal":
        return np.abs(values - float(nominal))  # type: ignore[arg-type]
    return values


def rankings(reports: Mapping[str, Any]) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Methods ranked by each headline metric, clean and under each perturbation.

    Parameters
    ----------
    reports : dict of method name to EvalReport
        Evaluated on the same copies (``shift_copies`` with the same
        perturbations and copy indices), as :func:`uqzoo.compare` does.

    Returns
    -------
    table : pandas.DataFrame
        Columns ``perturbation, metric, criterion, method, clean, clean_rank,
        shift_mean, shift_sd, shift_rank, changed``; rank 1 is best.
    changes : tuple of str
        One plain sentence per (perturbation, metric) whose order of methods
        differs clean and shifted, with the values and, for every pair that
        swapped, in how many copies the new order holds. Failed fits are
        ranked too, marked ``[failed]``.
    """
    columns = ["perturbation", "metric", "criterion", "method", "clean", "clean_rank",
               "shift_mean", "shift_sd", "shift_rank", "changed"]
    names = [n for n, r in reports.items() if getattr(r, "shift_copies", None) is not None]
    if len(names) < 2:
        return pd.DataFrame(columns=columns), ()
    cleans = {n: reports[n].to_dict() for n in names}
    # A failed fit (uqzoo.evaluate.FitFailure) can rank first exactly because it failed.
    shown = {n: f"{n} [failed]" if cleans[n].get("failed") else n for n in names}
    copies = {n: reports[n].shift_copies for n in names}
    labels = list(dict.fromkeys(copies[names[0]].perturbation))
    rows: list[dict[str, Any]] = []
    sentences: list[str] = []
    for label in labels:
        for key, direction, nominal in _ranked_keys(cleans[names[0]], reports[names[0]].levels):
            per_copy = {}
            for n in names:
                sub = copies[n][(copies[n].perturbation == label) & (copies[n].key == key)]
                per_copy[n] = pd.Series(sub.value.to_numpy(), index=sub["copy"].to_numpy())
            clean = np.array([cleans[n].get(key, math.nan) for n in names], dtype=float)
            stats = [mean_sd(per_copy[n].to_numpy()) for n in names]
            shifted = np.array([s[0] for s in stats])
            if not (np.isfinite(clean).all() and np.isfinite(shifted).all()):
                continue
            # Stable sorts: ties keep the methods' order.
            clean_order = list(np.argsort(_badness(clean, direction, nominal), kind="stable"))
            shift_order = list(np.argsort(_badness(shifted, direction, nominal),
                                          kind="stable"))
            changed = clean_order != shift_order
            criterion = (f"closest to {nominal:g} is best" if direction == "nominal"
                         else f"{direction} is better")
            for j, n in enumerate(names):
                rows.append(dict(perturbation=label, metric=key, criterion=criterion, method=n,
                                 clean=clean[j], clean_rank=clean_order.index(j) + 1,
                                 shift_mean=shifted[j], shift_sd=stats[j][1],
                                 shift_rank=shift_order.index(j) + 1, changed=changed))
            if not changed:
                continue
            k = stats[0][2]
            clean_text = ", ".join(f"{shown[names[j]]} {clean[j]:.4g}" for j in clean_order)
            shift_text = ", ".join(f"{shown[names[j]]} {shifted[j]:.4g} ± {stats[j][1]:.2g}"
                                   for j in shift_order)
            swaps = []
            for a_pos, a in enumerate(clean_order):
                for b in clean_order[a_pos + 1:]:
                    if shift_order.index(b) < shift_order.index(a):
                        both = pd.concat([per_copy[names[a]], per_copy[names[b]]], axis=1,
                                         join="inner").dropna()
                        bad = _badness(both.to_numpy(), direction, nominal)
                        wins = int((bad[:, 1] < bad[:, 0]).sum())
                        swaps.append(f"{names[b]} beats {names[a]} in {wins} of "
                                     f"{len(both)} copies")
            sentences.append(
                f"Under {label} ({k} copies) the ranking by {key} ({criterion}) changes: "
                f"clean, best first: {clean_text}; shifted: {shift_text}. "
                + "; ".join(swaps) + ".")
    return pd.DataFrame(rows, columns=columns), tuple(sentences)
