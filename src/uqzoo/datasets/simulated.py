"""``sim-teacher``: a classification problem whose class probabilities are known exactly.

Inputs are standard normal and the labels come from a fixed random "teacher"
network, so ``p_true_test`` is the exact P(y | x) and coverage of credible
intervals for class probabilities can be measured against it.

The teacher's width, activation and prior are options, so the same loader
makes truths that the fitted network matches exactly (well specified) and
truths it does not (mis-specified); see :func:`load_sim_teacher`.
"""

from __future__ import annotations

import math

import numpy as np

from uqzoo._validation import check_choice, check_float, check_int, check_seed
from uqzoo.datasets._base import ClassificationData
from uqzoo.errors import InvalidInputError
from uqzoo.spec import ACTIVATIONS, MLPSpec

__all__ = ["TEACHER_PRIORS", "load_sim_teacher", "teacher_logits"]

# The default teacher is the study's network shape: 2 hidden layers of 10 tanh units.
TEACHER_HIDDEN = (10, 10)
# The teacher's weight distribution; the names are MLPSpec's ``prior`` options.
TEACHER_PRIORS = ("iid", "fan_in")
# The default teacher is a draw of the default network's prior (MLPSpec's
# defaults, read from it, not re-typed), so the embedded default data of
# ``uqzoo compare`` is well specified for its default 2×10 tanh network: HMC
# samples the posterior of the very prior the truth was drawn from.
_DEFAULT_SPEC = MLPSpec(1, 2)
DEFAULT_TEACHER_PRIOR = _DEFAULT_SPEC.prior
DEFAULT_TEACHER_PRIOR_SCALE = _DEFAULT_SPEC.prior_scale


def _teacher_params(spec: MLPSpec, teacher_seed: int, prior: str = "iid",
                    prior_scale: float = 1.0) -> dict[str, np.ndarray]:
    """Teacher weights and biases in the shared ``layers.i.weight`` (out, in) layout.

    ``"iid"``: every weight and bias N(0, s²); ``"fan_in"``: weights of a layer
    with n inputs N(0, s²/n), biases N(0, s²) (Neal 1996), s = ``prior_scale``.
    """
    rng = np.random.default_rng(teacher_seed)
    params = {}
    # Layer by layer, weight before bias: the order the draws have always had, so
    # the default (iid, s = 1) teacher is the same, bit for bit, as before these
    # options existed.
    for key, shape in spec.param_shapes().items():
        sd = prior_scale
        if prior == "fan_in" and key.endswith(".weight"):
            sd = prior_scale / math.sqrt(shape[1])
        params[key] = sd * rng.normal(size=shape)     # 1.0 * x is x, exactly
    return params


def _teacher_spec(params: dict[str, np.ndarray], activation: str = "tanh") -> MLPSpec:
    """The architecture of a teacher from its parameters' shapes and its activation."""
    n_layers = len(params) // 2
    widths = tuple(int(params[f"layers.{i}.weight"].shape[0]) for i in range(n_layers))
    n_classes = 2 if widths[-1] == 1 else widths[-1]
    spec = MLPSpec(int(params["layers.0.weight"].shape[1]), n_classes, hidden=widths[:-1],
                   activation=activation)
    shapes = {k: tuple(np.shape(v)) for k, v in params.items()}
    if spec.param_shapes() != shapes:
        raise InvalidInputError(
            f"teacher parameters must be an MLP in the shared layout with 1 output logit "
            f"for two classes or K >= 3 logits; got shapes {shapes}")
    return spec


def teacher_logits(params: dict[str, np.ndarray], X: np.ndarray,
                   logit_scale: float = 1.0, activation: str = "tanh") -> np.ndarray:
    """The teacher's logits f*(x), float64 of shape (N, n_outputs).

    The shared torch forward (:func:`uqzoo.nets.torch.forward_logits`) in float64;
    ``activation`` is the teacher's (``data.meta["teacher_activation"]``).
    """
    import torch

    from uqzoo.nets import torch as tnet

    spec = _teacher_spec(params, check_choice(activation, "activation", ACTIVATIONS))
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
                     logit_scale: float = 1.0, teacher_hidden: tuple[int, ...] = TEACHER_HIDDEN,
                     teacher_activation: str = "tanh",
                     teacher_prior: str = DEFAULT_TEACHER_PRIOR,
                     teacher_prior_scale: float = DEFAULT_TEACHER_PRIOR_SCALE
                     ) -> ClassificationData:
    """Simulated classification with an exactly known P(y | x).

    x ~ N(0, I_p); the true probabilities are π(x) = σ(f*(x)) for two classes
    (one output logit) and softmax(f*(x)) for K > 2 classes (K logits), where
    f* is a fixed random *teacher* network p → ``teacher_hidden`` → (1 or K)
    with ``teacher_activation`` units, its weights drawn once from
    ``teacher_seed``; y ~ Categorical(π(x)). By default the teacher is
    p → 10 → 10 → 1, tanh, drawn from the default network's prior
    (``MLPSpec``'s: fan-in, s = 1 -- weights of a layer with n inputs
    N(0, 1/n), biases N(0, 1)), so the default data are well specified for
    uqzoo's default network and prior. The features are not standardised:
    they are standard normal by construction.

    The fan-in teacher is a weak signal: for the default (p = 5,
    teacher_seed = 0) its logit varies with x by a standard deviation of
    about 0.4, 38 % of the labels are class 1, the true probabilities' own
    detection AUROC is 0.61 and their argmax says class 1 on 8 % of the
    points -- a problem where the uncertainty, not the accuracy, is the
    question. With ``teacher_prior="iid"`` (every weight and bias N(0, 1),
    ``MLPSpec(prior="iid")``) the logit has a standard deviation of
    about 2.5 whatever ``p`` is, and π(x) is spread over (0, 1).
    ``logit_scale`` multiplies f* to make it sharper (> 1) or noisier (< 1).

    **Well- and mis-specified truths.** A fitted network ``MLPSpec(p, K,
    hidden, activation, prior_scale, prior)`` is *well specified* for this
    truth when its architecture is the teacher's (``hidden ==
    teacher_hidden``, ``activation == teacher_activation``): the truth is one
    of the functions it can represent. It is moreover *Bayes-consistent* when
    its prior is the one the teacher was drawn from (``prior ==
    teacher_prior``, ``prior_scale == teacher_prior_scale``, ``logit_scale ==
    1``): the truth is then a draw from exactly the prior that HMC samples, so
    HMC's intervals are calibrated by construction. Relative to the default
    fitted spec of uqzoo's comparisons (2 × 10 tanh):

    ====================================================  ==========================
    options                                               relative to a 2×10 tanh fit
    ====================================================  ==========================
    defaults (2×10 tanh teacher, fan-in prior, s = 1)     well specified; the prior
                                                          matches the default fit
                                                          (``prior="fan_in"``)
    ``teacher_prior="iid"``                               well specified; the prior
                                                          matches a fit with
                                                          ``prior="iid"``
    ``teacher_prior_scale`` ≠ the fit's ``prior_scale``,  well specified architecture,
    or ``logit_scale`` ≠ 1                                mis-specified prior
    ``teacher_hidden`` ≠ (10, 10), e.g. ``(30,)``          mis-specified
    ``teacher_activation="relu"``                          mis-specified (a piecewise-
                                                          linear truth)
    ====================================================  ==========================

    A wider or ReLU teacher is not a 2×10 tanh network for any weights, so
    every method fitting that spec is judged on a truth outside its model;
    ``gaussian-mixture`` and ``nonlinear-logistic`` are truths of yet another
    form. Under the fan-in prior (s = 1) a 2×10 tanh teacher is nearly flat
    in x (logit sd about 0.3 for p = 5), a weak signal; ``teacher_prior_scale
    = 2`` gives a logit sd near 1.

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
    teacher_hidden : tuple of int
        Widths of the teacher's hidden layers (default (10, 10)); ``()`` is a
        logistic-regression truth.
    teacher_activation : {"tanh", "relu", "sigmoid"}
        The teacher's non-linearity (default ``"tanh"``).
    teacher_prior : {"fan_in", "iid"}
        The teacher's weight distribution, named as ``MLPSpec.prior``:
        ``"fan_in"`` (default, ``MLPSpec``'s default) the weights of a layer
        with n inputs N(0, s²/n), biases N(0, s²) (Neal 1996); ``"iid"``
        every weight and bias N(0, s²).
    teacher_prior_scale : float
        s (default 1, ``MLPSpec``'s default ``prior_scale``).

    Returns
    -------
    ClassificationData
        ``X_train`` (n_train, p), ``X_test`` (n_test, p), ``p_true_test``
        (n_test, K) exact. ``meta["teacher"]`` holds the teacher's weights in
        the shared parameter layout (``"layers.0.weight"`` of shape
        (teacher_hidden[0], p), ...), ``meta["teacher_hidden"]``,
        ``meta["teacher_activation"]``, ``meta["teacher_prior"]`` and
        ``meta["teacher_prior_scale"]`` its architecture and prior,
        ``meta["p_true_train"]`` the exact training probabilities.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", p=5, n_train=100, n_test=50, seed=1)
    >>> data.p_true_test.shape
    (50, 2)
    >>> relu = uz.datasets.load("sim-teacher", n_train=100, n_test=50, teacher_hidden=(30,),
    ...                         teacher_activation="relu", teacher_prior="fan_in")
    >>> relu.meta["teacher"]["layers.0.weight"].shape
    (30, 5)

    References
    ----------
    Neal, R. M. (1996). Bayesian Learning for Neural Networks. Springer
    (the fan-in scaling of the prior, chapter 2).
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
    teacher_activation = check_choice(teacher_activation, "teacher_activation", ACTIVATIONS)
    teacher_prior = check_choice(teacher_prior, "teacher_prior", TEACHER_PRIORS)
    teacher_prior_scale = check_float(teacher_prior_scale, "teacher_prior_scale", low=0.0,
                                      low_open=True, high=1e3)
    if isinstance(teacher_hidden, (int, np.integer)) and not isinstance(teacher_hidden, bool):
        teacher_hidden = (int(teacher_hidden),)
    if isinstance(teacher_hidden, (str, bytes)) or not hasattr(teacher_hidden, "__iter__"):
        raise InvalidInputError(
            f"teacher_hidden must be a tuple of hidden-layer widths, got {teacher_hidden!r}")
    # Widths bounded so that the first layer's (width × p) weights stay small.
    teacher_hidden = tuple(check_int(h, "teacher_hidden entry", minimum=1, maximum=10_000)
                           for h in teacher_hidden)
    if len(teacher_hidden) > 10:
        raise InvalidInputError(
            f"teacher_hidden must have at most 10 layers, got {len(teacher_hidden)}")

    spec = MLPSpec(p, n_classes, hidden=teacher_hidden, activation=teacher_activation)
    params = _teacher_params(spec, teacher_seed, teacher_prior, teacher_prior_scale)
    # Training and test draws come from separate child streams, so n_test does
    # not change the training set and vice versa.
    train_rng, test_rng = (np.random.default_rng(s) for s in
                           np.random.SeedSequence(seed).spawn(2))
    X_train = train_rng.normal(size=(n_train, p))
    p_train = _probabilities(spec, teacher_logits(params, X_train, logit_scale,
                                                  teacher_activation))
    y_train = _sample_labels(p_train, train_rng)
    X_test = test_rng.normal(size=(n_test, p))
    p_test = _probabilities(spec, teacher_logits(params, X_test, logit_scale,
                                                 teacher_activation))
    y_test = _sample_labels(p_test, test_rng)

    if np.unique(y_train).size < 2:
        raise InvalidInputError(
            f"the {n_train} training labels drawn with seed={seed} are all class "
            f"{int(y_train[0])}; use a larger n_train or another seed/teacher_seed"
        )
    shape = (f"{'x'.join(map(str, teacher_hidden))} {teacher_activation}" if teacher_hidden
             else "linear")
    meta = {
        "options": {"p": p, "n_train": n_train, "n_test": n_test, "n_classes": n_classes,
                    "seed": seed, "teacher_seed": teacher_seed, "logit_scale": logit_scale,
                    "teacher_hidden": teacher_hidden, "teacher_activation": teacher_activation,
                    "teacher_prior": teacher_prior,
                    "teacher_prior_scale": teacher_prior_scale},
        "teacher": params,
        "teacher_hidden": teacher_hidden,
        "teacher_activation": teacher_activation,
        "teacher_prior": teacher_prior,
        "teacher_prior_scale": teacher_prior_scale,
        "p_true_train": p_train,
        "standardized": False,
        "description": f"x ~ N(0, I_p); y ~ Categorical(link(logit_scale * f*(x))), "
                       f"f* a random {shape} teacher with {teacher_prior} "
                       f"N(0, {teacher_prior_scale:g}^2) weights",
    }
    return ClassificationData(
        X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
        n_classes=n_classes, p_true_test=p_test,
        class_names=tuple(f"class {k}" for k in range(n_classes)),
        name="sim-teacher", meta=meta,
    )
