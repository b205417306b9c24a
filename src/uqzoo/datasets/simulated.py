"""``sim-teacher``: a classification problem whose class probabilities are known exactly.

Inputs are standard normal and the labels come from a fixed random "teacher"
network, so ``p_true_test`` is the exact P(y | x) and coverage of credible
intervals for class probabilities can be measured against it.
"""

from __future__ import annotations

import numpy as np

from uqzoo._validation import check_float, check_int, check_seed
from uqzoo.datasets._base import ClassificationData
from uqzoo.errors import InvalidInputError
from uqzoo.spec import MLPSpec

__all__ = ["load_sim_teacher", "teacher_logits"]

# The teacher is the study's network shape: 2 hidden layers of 10 tanh units.
TEACHER_HIDDEN = (10, 10)


def _teacher_params(spec: MLPSpec, teacher_seed: int) -> dict[str, np.ndarray]:
    """N(0, 1) weights and biases in the shared ``layers.i.weight`` (out, in) layout."""
    rng = np.random.default_rng(teacher_seed)
    # Layer by layer, weight before bias: the order the draws have always had.
    return {key: rng.normal(size=shape) for key, shape in spec.param_shapes().items()}


def _teacher_spec(params: dict[str, np.ndarray]) -> MLPSpec:
    """The architecture of a teacher from its parameters' shapes (tanh hidden layers)."""
    n_layers = len(params) // 2
    widths = tuple(int(params[f"layers.{i}.weight"].shape[0]) for i in range(n_layers))
    n_classes = 2 if widths[-1] == 1 else widths[-1]
    spec = MLPSpec(int(params["layers.0.weight"].shape[1]), n_classes, hidden=widths[:-1],
                   activation="tanh")
    shapes = {k: tuple(np.shape(v)) for k, v in params.items()}
    if spec.param_shapes() != shapes:
        raise InvalidInputError(
            f"teacher parameters must be an MLP in the shared layout with 1 output logit "
            f"for two classes or K >= 3 logits; got shapes {shapes}")
    return spec


def teacher_logits(params: dict[str, np.ndarray], X: np.ndarray,
                   logit_scale: float = 1.0) -> np.ndarray:
    """The teacher's logits f*(x), float64 of shape (N, n_outputs).

    The shared torch forward (:func:`uqzoo.nets.torch.forward_logits`) in float64.
    """
    import torch

    from uqzoo.nets import torch as tnet

    spec = _teacher_spec(params)
    with torch.no_grad():
        logits = tnet.forward_logits(spec, tnet.to_tensors(params, dtype=torch.float64),
                                     torch.as_tensor(np.asarray(X, dtype=np.float64)))
    return logit_scale * logits.numpy()


def _probabilities(spec: MLPSpec, logits: np.ndarray) -> np.ndarray:
    """(N, K) float64 class probabilities: the shared link (sigmoid or softmax)."""
    import torch

    from uqzoo.nets import torch as tnet

    return tnet.logits_to_proba(spec, torch.as_tensor(logits)).numpy()


def _sample_labels(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of the (N, K) probabilities."""
    u = rng.random((p.shape[0],))
    cum = np.cumsum(p, axis=1)
    return np.minimum((u[:, None] >= cum).sum(axis=1), p.shape[1] - 1).astype(np.int64)


def load_sim_teacher(*, p: int = 5, n_train: int = 1000, n_test: int = 5000,
                     n_classes: int = 2, seed: int = 0, teacher_seed: int = 0,
                     logit_scale: float = 1.0) -> ClassificationData:
    """Simulated classification with an exactly known P(y | x).

    x ~ N(0, I_p); the true probabilities are π(x) = σ(f*(x)) for two classes
    (one output logit) and softmax(f*(x)) for K > 2 classes (K logits), where
    f* is a fixed random *teacher* network p → 10 → 10 → (1 or K), tanh,
    with all weights and biases N(0, 1) drawn from ``teacher_seed``;
    y ~ Categorical(π(x)). The features are not standardised: they are
    standard normal by construction.

    With N(0, 1) weights the logit has a standard deviation of about 2.5
    whatever ``p`` is (the tanh layers bound it), so π(x) is spread over
    (0, 1) — for the default (p = 5, teacher_seed = 0) about half of the
    test points have 0.05 < π < 0.95 — and the problem is neither trivial nor
    hopeless. ``logit_scale`` multiplies f* to make it sharper (> 1) or
    noisier (< 1).

    Parameters
    ----------
    p : int
        Number of features.
    n_train, n_test : int
        Number of training and test points.
    n_classes : int
        K >= 2.
    seed : int
        Seed of the data (x and y); the teacher does not depend on it.
    teacher_seed : int
        Seed of the teacher's weights.
    logit_scale : float
        Positive factor on the teacher's logits.

    Returns
    -------
    ClassificationData
        ``X_train`` (n_train, p), ``X_test`` (n_test, p), ``p_true_test``
        (n_test, K) exact. ``meta["teacher"]`` holds the teacher's weights in
        the shared parameter layout (``"layers.0.weight"`` of shape (10, p),
        ...), ``meta["p_true_train"]`` the exact training probabilities.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", p=5, n_train=100, n_test=50, seed=1)
    >>> data.p_true_test.shape
    (50, 2)
    """
    # Upper bounds keep a typo from asking numpy for an impossible allocation.
    p = check_int(p, "p", minimum=1, maximum=100_000)
    n_train = check_int(n_train, "n_train", minimum=2, maximum=100_000_000)
    n_test = check_int(n_test, "n_test", minimum=1, maximum=100_000_000)
    # 2**28 values are 2 GiB in float64, the simulator's working precision.
    if (n_train + n_test) * p > 2**28:
        raise InvalidInputError(
            f"(n_train + n_test) × p must be at most 2**28 values (2 GiB of float64), got "
            f"({n_train} + {n_test}) × {p}"
        )
    n_classes = check_int(n_classes, "n_classes", minimum=2, maximum=1000)
    seed = check_seed(seed)
    teacher_seed = check_seed(teacher_seed, "teacher_seed")
    logit_scale = check_float(logit_scale, "logit_scale", low=0.0, low_open=True)

    spec = MLPSpec(p, n_classes, hidden=TEACHER_HIDDEN, activation="tanh")
    params = _teacher_params(spec, teacher_seed)
    # Training and test draws come from separate child streams, so n_test does
    # not change the training set and vice versa.
    train_rng, test_rng = (np.random.default_rng(s) for s in
                           np.random.SeedSequence(seed).spawn(2))
    X_train = train_rng.normal(size=(n_train, p))
    p_train = _probabilities(spec, teacher_logits(params, X_train, logit_scale))
    y_train = _sample_labels(p_train, train_rng)
    X_test = test_rng.normal(size=(n_test, p))
    p_test = _probabilities(spec, teacher_logits(params, X_test, logit_scale))
    y_test = _sample_labels(p_test, test_rng)

    if np.unique(y_train).size < 2:
        raise InvalidInputError(
            f"the {n_train} training labels drawn with seed={seed} are all class "
            f"{int(y_train[0])}; use a larger n_train or another seed/teacher_seed"
        )
    meta = {
        "options": {"p": p, "n_train": n_train, "n_test": n_test, "n_classes": n_classes,
                    "seed": seed, "teacher_seed": teacher_seed, "logit_scale": logit_scale},
        "teacher": params,
        "teacher_hidden": TEACHER_HIDDEN,
        "teacher_activation": "tanh",
        "p_true_train": p_train,
        "standardized": False,
        "description": "x ~ N(0, I_p); y ~ Categorical(link(logit_scale * f*(x))), "
                       "f* a random 2x10 tanh teacher with N(0, 1) weights",
    }
    return ClassificationData(
        X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
        n_classes=n_classes, p_true_test=p_test,
        class_names=tuple(f"class {k}" for k in range(n_classes)),
        name="sim-teacher", meta=meta,
    )
