"""Is the data fit to judge? The one helper behind the ``DataWarning`` of ``fit`` and ``evaluate``.

Three things make a comparison's numbers meaningless while every call
succeeds: a class with a handful of training rows (a method then fits those
rows, and ``target_prior="train"`` turns a prior of 1/4800 into "FAILED
one_class" for every method), a test set with too few targets for the Pd at a
false-alarm rate to mean anything, and a class weight so large that one row
outweighs the rest of the data. Each check returns the sentences that say
what is wrong and what to change; :func:`warn` issues them as one
:class:`uqzoo.errors.DataWarning` each.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from uqzoo.errors import DataWarning

__all__ = ["MAX_CLASS_WEIGHT", "MIN_CLASS_ROWS", "MIN_TEST_TARGETS", "background_notes",
           "check_evaluation", "check_fit", "class_weight_problems", "target_count_problems",
           "training_problems", "warn"]

# Fewer rows of a class than this and a network fits those rows rather than the
# class: 20 is where scikit-learn's and most texts' rules of thumb for a
# per-class sample start, and where a proportion's standard error (≤ 0.11)
# first lets a class-conditional rate be told from 0 or 1.
MIN_CLASS_ROWS = 20
# Pd is a proportion of the test targets: with n of them its Clopper–Pearson
# 95 % interval at Pd = 0.5 is about ±1/√n wide -- ±0.23 at 20 targets, ±0.6
# at 3 -- so below 20 the Pd@FAR columns cannot rank methods.
MIN_TEST_TARGETS = 20
# A weight of 100 makes one row count as 100: a class of one row then moves the
# fit as much as 100 rows of the others, and a single mislabelled pixel
# decides it. "balanced" reaches it once a class is 1 in 200 of the rows.
MAX_CLASS_WEIGHT = 100.0
# A false-alarm rate f is estimated from the background's scores: with n
# background points about n·f of them lie above the threshold, so fewer than
# 10/f leaves under 10 false alarms to place the threshold by.
_FALSE_ALARMS_NEEDED = 10


def training_fingerprint(X_train: np.ndarray, y_train: np.ndarray, n_classes: int) -> str:
    """``"sha256:"`` and the SHA-256 of training inputs (float32), labels and class count:
    which data a posterior was fitted on (see :func:`uqzoo.reference.data_fingerprint`)."""
    import hashlib

    X = np.ascontiguousarray(X_train, dtype=np.float32)
    y = np.ascontiguousarray(y_train, dtype=np.int64)
    digest = hashlib.sha256(b"uqzoo-data-fingerprint-v1\0")
    digest.update(f"{X.shape}|{y.shape}|{n_classes}\0".encode())
    digest.update(X.tobytes())
    digest.update(y.tobytes())
    return "sha256:" + digest.hexdigest()


def _name(k: int, class_names: Sequence[str] | None) -> str:
    return f"class {k}" if not class_names else f"class {k} ({class_names[k]})"


def training_problems(y_train: np.ndarray, n_classes: int,
                      class_names: Sequence[str] | None = None) -> list[str]:
    """One sentence per class with fewer than ``MIN_CLASS_ROWS`` training rows."""
    counts = np.bincount(np.asarray(y_train, dtype=np.int64), minlength=n_classes)
    return [f"{_name(k, class_names)} has {int(counts[k])} training row"
            f"{'' if counts[k] == 1 else 's'} (fewer than {MIN_CLASS_ROWS}): a fit learns those "
            f"rows, not the class, and target_prior='train' makes its prior "
            f"{counts[k] / counts.sum():.2g}; give it more training rows (a scene: "
            f"from_hsi's default split='stratified' puts every class on both sides "
            f"where it can)"
            for k in range(n_classes) if counts[k] < MIN_CLASS_ROWS]


def class_weight_problems(per_class: np.ndarray | None,
                          class_names: Sequence[str] | None = None) -> list[str]:
    """One sentence per class whose weight c_k exceeds ``MAX_CLASS_WEIGHT``."""
    if per_class is None:
        return []
    return [f"{_name(k, class_names)} has class weight {float(c):.4g} (above "
            f"{MAX_CLASS_WEIGHT:g}): each of its rows counts as {float(c):.0f}, so a few rows "
            f"decide the fit; label more of the class or cap its weight"
            for k, c in enumerate(np.asarray(per_class)) if c > MAX_CLASS_WEIGHT]


def target_count_problems(y_test: np.ndarray, fars: Sequence[float]) -> list[str]:
    """A sentence when a detection test set holds under ``MIN_TEST_TARGETS`` targets (class 1)."""
    n_targets = int(np.sum(np.asarray(y_test) == 1))
    if not fars or n_targets >= MIN_TEST_TARGETS:
        return []
    return [f"the test set holds {n_targets} target pixel{'' if n_targets == 1 else 's'} "
            f"(fewer than {MIN_TEST_TARGETS}): Pd at FAR "
            f"{', '.join(f'{f:g}' for f in fars)} moves by 1/{max(n_targets, 1)} per target "
            f"and its interval spans most of [0, 1]; test on more targets"]


def background_notes(y_test: np.ndarray, fars: Sequence[float]) -> list[str]:
    """A sentence per FAR that the test background is too small to resolve (< 10/FAR points).

    Not a warning: at the default FAR 1e-3 it holds for every scene under
    10,000 test background pixels, the embedded ``hsi-sim`` (4,340) included;
    the command line prints it once, as a note.
    """
    n_background = int(np.sum(np.asarray(y_test) == 0))
    short = [f for f in fars if n_background < _FALSE_ALARMS_NEEDED / f]
    if not short:
        return []
    return [f"Pd@FAR {', '.join(f'{f:g}' for f in short)} rests on {n_background} test "
            f"background pixels, fewer than the {_FALSE_ALARMS_NEEDED}/FAR that put "
            f"{_FALSE_ALARMS_NEEDED} false alarms above its threshold; read it as Pd at the "
            f"lowest FAR the scene resolves, 1/{n_background}"]


def warn(messages: Sequence[str], stacklevel: int = 2) -> tuple[str, ...]:
    """Issue each message as a :class:`DataWarning` (pointing ``stacklevel`` up); return them."""
    for message in messages:
        warnings.warn(message, DataWarning, stacklevel=stacklevel + 1)
    return tuple(messages)


def check_evaluation(data: object, fars: Sequence[float]) -> tuple[str, ...]:
    """Warn when a detection scene's test set cannot resolve Pd@FAR; return the sentences.

    A detection scene is binary data with pixel coordinates (class 1 the
    target); other data, and bare label arrays, have nothing to check.
    """
    if (getattr(data, "n_classes", None) != 2 or getattr(data, "coords_test", None) is None):
        return ()
    return warn(target_count_problems(data.y_test, fars), stacklevel=3)   # type: ignore[attr-defined]


def check_fit(data: object, per_class_weight: np.ndarray | None) -> tuple[str, ...]:
    """Warn about classes with too few training rows and class weights above the cap."""
    names = getattr(data, "class_names", None)
    problems = training_problems(data.y_train, data.n_classes, names)   # type: ignore[attr-defined]
    return warn(problems + class_weight_problems(per_class_weight, names), stacklevel=3)
