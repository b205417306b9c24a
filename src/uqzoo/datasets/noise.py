"""Label noise: flip a stated share of the training labels, keep the test set clean.

Real labels are wrong now and then (a mislabelled slide, a field walked in
the wrong season). :func:`with_label_noise` makes that happen on purpose, in
the training set only, so a method is fitted on noisy labels and judged on
the clean test labels and, where known, the clean true probabilities: the
question is whether its uncertainty stays honest about the *true* classes
(Mehrtens et al. 2023 find that ensembles gain accuracy under label noise
without a lower ECE).
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Literal

import numpy as np

from uqzoo._validation import _show, as_array, check_seed, choices
from uqzoo.datasets._base import ClassificationData
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["LABEL_NOISE_KINDS", "LabelNoiseKind", "check_kind", "check_rate", "with_label_noise"]

LabelNoiseKind = Literal["symmetric", "class_conditional"]
LABEL_NOISE_KINDS = choices(LabelNoiseKind)


def check_rate(rate: object, name: str = "rate") -> float:
    """A label-noise rate in [0, 1), as a float.

    ``name`` is what the user typed (``label_noise``, ``--label-noise``, or a
    file's key as ``run.toml: compare.label_noise:``): every caller checks the
    rate here, and only the name differs.
    """
    what = (f"{name} must be a rate in [0, 1) such as 0.1 (the share of training labels "
            "flipped), got")
    if isinstance(rate, (bool, np.bool_)) or not isinstance(rate, numbers.Real):
        raise InvalidTypeError(f"{what} {_show(rate)}")
    value = float(rate)
    if not 0.0 <= value < 1.0:                              # nan and inf fail this too
        raise InvalidInputError(f"{what} {value!r}")
    return value


def check_kind(kind: object, name: str = "kind") -> str:
    """A label-noise kind, one of :data:`LABEL_NOISE_KINDS` (see :func:`check_rate`)."""
    what = (f"{name} must be one of {', '.join(LABEL_NOISE_KINDS)} (how a flipped label is "
            "chosen), got")
    if not isinstance(kind, str):
        raise InvalidTypeError(f"{what} {_show(kind)}")
    if kind not in LABEL_NOISE_KINDS:
        raise InvalidInputError(f"{what} {kind!r}")
    return kind


def _check_transition(transition: object, n_classes: int) -> np.ndarray:
    """A (K, K) matrix of flip probabilities: zero diagonal, each row summing to one."""
    if transition is None:
        # The pair flip of Han et al. (2018): class k is mistaken for class k + 1.
        return np.roll(np.eye(n_classes), 1, axis=1)
    arr = as_array(transition, "transition", "a (K, K) matrix of flip probabilities")
    if arr.shape != (n_classes, n_classes) or not np.issubdtype(arr.dtype, np.number) \
            or np.iscomplexobj(arr):
        raise InvalidInputError(
            f"transition must be a real ({n_classes}, {n_classes}) matrix (row k: the "
            f"probabilities of the new label of a flipped row of class k), got {_show(arr)}")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)) or arr.min() < 0:
        raise InvalidInputError("transition must hold finite, non-negative probabilities")
    if np.any(np.diag(arr) != 0):
        raise InvalidInputError(
            f"transition must have a zero diagonal (a flip changes the label), got diagonal "
            f"{np.diag(arr).tolist()}")
    sums = arr.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0, atol=1e-9):
        raise InvalidInputError(
            f"every row of transition must sum to 1, got row sums {sums.tolist()}")
    return arr / sums[:, None]


def with_label_noise(data: ClassificationData, rate: float, kind: str = "symmetric", *,
                     seed: int = 0, transition: object = None) -> ClassificationData:
    """A copy of ``data`` whose training labels are flipped at a stated rate.

    Exactly ``round(rate * n_train)`` training rows, chosen uniformly without
    replacement by ``seed``, get a label other than their own:

    - ``"symmetric"``: uniform over the other K − 1 classes;
    - ``"class_conditional"``: drawn from row k of ``transition`` for a row of
      class k, so that some classes are mistaken for particular others. The
      default ``transition`` is the pair flip of Han et al. (2018): class k
      becomes class k + 1 (K − 1 becomes 0); for two classes both kinds swap
      the label.

    The test set (``X_test``, ``y_test``, ``p_true_test``) is unchanged, so a
    fit on noisy labels is judged against the clean truth.

    Parameters
    ----------
    data : ClassificationData
    rate : float in [0, 1)
        Share of the training rows whose label is flipped.
    kind : {"symmetric", "class_conditional"}
    seed : int
        Seed of the choice of rows and of their new labels.
    transition : array of shape (K, K), optional
        With ``kind="class_conditional"`` only: row k gives the probability of
        each new label for a flipped row of class k; zero diagonal, rows
        summing to one.

    Returns
    -------
    ClassificationData
        With the noisy ``y_train`` and ``meta["label_noise"]``: ``rate``,
        ``kind``, ``seed``, ``n_flipped``, ``flipped_rows`` (sorted row
        indices into the training set), ``clean_labels`` (their labels before
        the flip) and ``transition`` (the (K, K) matrix used, as lists).

    Raises
    ------
    InvalidInputError
        ``rate`` outside [0, 1); an unknown ``kind``; a ``transition`` that is
        not a (K, K) zero-diagonal row-stochastic matrix, or one given with
        ``kind="symmetric"``; data that already carry label noise; flips that
        would leave fewer than two classes in training.
    InvalidTypeError
        ``rate`` that is not a number, ``kind`` that is not a string.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, seed=0)
    >>> noisy = uz.datasets.with_label_noise(data, 0.1, seed=0)
    >>> int((noisy.y_train != data.y_train).sum()), noisy.meta["label_noise"]["n_flipped"]
    (20, 20)
    >>> bool((noisy.y_test == data.y_test).all())
    True

    References
    ----------
    Han, B., et al. (2018). Co-teaching: robust training of deep neural
    networks with extremely noisy labels. NeurIPS.
    Mehrtens, H. A., et al. (2023). Benchmarking common uncertainty estimation
    methods with histopathological images under domain shift and label noise.
    Medical Image Analysis 89.
    """
    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(f"data must be a ClassificationData, got {_show(data)}")
    rate = check_rate(rate)
    kind = check_kind(kind)
    seed = check_seed(seed)
    if "label_noise" in data.meta:
        raise InvalidInputError(
            "data already carry label noise (meta['label_noise']); add noise to the clean data "
            "once, at the total rate wanted")
    K = data.n_classes
    if kind == "symmetric":
        if transition is not None:
            raise InvalidInputError(
                "transition applies to kind='class_conditional', not kind='symmetric'")
        matrix = (np.ones((K, K)) - np.eye(K)) / (K - 1)
    else:
        matrix = _check_transition(transition, K)
    y = np.array(data.y_train, dtype=np.int64)
    n_flip = round(rate * y.shape[0])
    rows_rng, label_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    rows = np.sort(rows_rng.choice(y.shape[0], size=n_flip, replace=False))
    clean = y[rows]
    # One uniform per row against the cumulative row of its class: inverse-CDF sampling,
    # vectorised over rows whatever their class.
    cumulative = np.cumsum(matrix[clean], axis=1)
    u = label_rng.random(n_flip)[:, None]
    new = np.minimum((u >= cumulative).sum(axis=1), K - 1)
    # A zero-probability class can only be reached through rounding at the top; step
    # back to the last class the row can take.
    for i in np.flatnonzero(matrix[clean, new] == 0):
        new[i] = np.flatnonzero(matrix[clean[i]] > 0)[-1]
    y[rows] = new
    if np.unique(y).size < 2:
        raise InvalidInputError(
            f"label noise at rate={rate:g} ({kind}) leaves a single class in the training "
            "labels; use a smaller rate or another transition")
    record: dict[str, Any] = {
        "rate": rate, "kind": kind, "seed": seed, "n_flipped": int(n_flip),
        "flipped_rows": rows, "clean_labels": clean, "transition": matrix.tolist(),
    }
    return dataclasses.replace(data, y_train=y, meta={**data.meta, "label_noise": record})
