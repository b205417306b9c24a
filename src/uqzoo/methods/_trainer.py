"""The one MAP trainer under ``mc_dropout``, ``ensemble``, ``bootstrap``, ``swag`` and ``laplace``.

All M members of an ensemble (bootstrap replicates, MultiSWAG runs) are
trained together as **one compiled computation**: an epoch of all members is
a pure JAX function over parameters stacked on a leading member axis (the
layout of ``torch.func.stack_module_state``), ``lax.scan`` runs a block of
epochs without returning to Python, and ``jax.jit`` compiles the block once
per problem shape. Python only sees one call per block (to update the
progress bar), never one per step or per member. Because the input ``X`` is
shared by all members, the first layer of every member becomes a single
large (N, D) × (D, M·h) matrix product, which is where a per-member loop
loses most.

The network, its likelihood and its prior are :mod:`uqzoo.nets.jax`'s
(``forward_logits``, ``log_likelihood_terms``, ``log_prior``); nothing of
the model is written here. Member m's objective is its negative log
posterior per training row, under the spec's prior -- each parameter j
N(0, sd_j²) with sd_j from ``spec.prior_sd`` (the fan-in prior by default:
weights sd = prior_scale/√fan_in, biases sd = prior_scale; ``prior="iid"``:
every sd = prior_scale):

    L_m(θ_m) = (1/B) Σ_i w_mi · nll_mi(θ_m) − (log_prior(θ_m) − log_prior(0)) / N
             = (1/B) Σ_i w_mi · nll_mi(θ_m) + Σ_j θ_mj² / (2 · sd_j² · N)

over the B rows of the step (B = N full batch; with minibatches the data
term is the unbiased batch mean), N training rows, ``w_mi`` per-member data
weights (resample counts for the bootstrap, all ones otherwise). The
minimiser is the MAP and the "weight decay" equals the prior: an L2 term of
the loss, as ``weight_decay`` in ``torch.optim.Adam``, not the decoupled
decay of AdamW. ``log_prior(0)``, the prior's normalising constant, moves
neither gradient nor optimum; it is left out so that the reported loss is
the familiar data term plus L2 penalty (the values of earlier releases).
Gradients are ``jax.value_and_grad`` of Σ_m L_m: members share no
parameter, so its gradient holds every member's own.

Optimisers are optax's: ``optax.adam`` with torch.optim.Adam's constants and
``optax.sgd`` with momentum, which are torch.optim.Adam and
``torch.optim.SGD(momentum=..., dampening=0)`` step for step, so a torch loop
is a faithful reference (``tests/methods/test_trainer.py`` checks it). The
learning rate is injected state (``optax.inject_hyperparams``), set every
epoch from a per-epoch schedule (SWAG's) or the constant
``learning_rate``.

Convergence: a member trains until its loss plateaus, within the
``num_epochs`` budget. After every epoch the mean training loss over the last
W = ``convergence_window`` epochs is compared with the mean over the W
epochs before; the member has plateaued, and stops (its parameters frozen),
once the decrease is at most ``convergence_rtol`` times the loss or within
what epoch-to-epoch noise explains (3 standard errors of the difference of
the two means), the rule :func:`uqzoo.methods._diagnostics.window_change`
applies to MF-VI's ELBO. With ``validation_fraction > 0`` the rule is early
stopping instead: a member stops after ``patience`` epochs without a lower
validation loss. A member that has not stopped when the budget runs out has
not converged; :func:`convergence` turns that into ``Posterior.converged =
False`` and a message naming the reason. The decision is made inside the
compiled loop, member by member, so it is deterministic and a member's
stopping epoch depends only on its own trajectory.

Randomness: every member has its own JAX key; epoch e uses ``fold_in(key, e)``
for its minibatch permutation and dropout masks, so a member's trajectory
depends only on its own key and initial parameters -- training it alone
gives the same member as training it inside the vectorised stack.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from uqzoo._progress import progress_bar as progress
from uqzoo._validation import check_choice, check_float, check_int
from uqzoo.errors import InvalidInputError
from uqzoo.methods._config import check_class_weight, row_weights
from uqzoo.methods._diagnostics import Convergence
from uqzoo.models import Model
from uqzoo.nets import jax as nets_jax
from uqzoo.spec import MLPSpec

__all__ = [
    "OPTIMIZERS",
    "Convergence",
    "OptimizerConfig",
    "TrainResult",
    "TrainingConfig",
    "convergence",
    "fit_members",
    "member_keys",
    "member_seeds",
    "split_validation",
    "train",
    "training_diagnostics",
    "training_warnings",
]

OPTIMIZERS = ("adam", "sgd")

# Adam constants of torch.optim.Adam's defaults, so a torch loop is a faithful reference.
_ADAM_BETA1, _ADAM_BETA2, _ADAM_EPS = 0.9, 0.999, 1e-8
# About this many progress-bar updates per fit; each is one return to Python.
_TARGET_BLOCKS = 25


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """How the shared MAP trainer optimises; every trained method's ``Config`` extends it.

    Parameters
    ----------
    optimizer : {"adam", "sgd"}
        Adam (torch defaults β = (0.9, 0.999), ε = 1e-8) or SGD with momentum.
    learning_rate : float
        Step size (> 0).
    momentum : float
        Momentum of SGD, in [0, 1); ignored by Adam.
    num_epochs : int
        Passes over the training data (one step per epoch full batch): the
        budget (default 5000). A :class:`TrainingConfig` stops each member
        earlier once its loss plateaus -- after 650-1800 epochs on the
        development problems of ``convergence_rtol`` -- and reports a member
        that has not as not converged.
    batch_size : int or None
        Rows per minibatch (a fresh permutation each epoch, the last partial
        batch dropped); ``None`` trains full batch.
    class_weight : None, "balanced" or sequence of float
        Reweight each training row's log-likelihood by its class's weight c_k:
        the fit targets p(θ) · Π_i p(y_i | x_i, θ)^c_{y_i} instead of the
        posterior. ``None`` (default) is the posterior itself. ``"balanced"``
        sets c_k = N / (K · n_k) (scikit-learn's rule; the weights sum to N),
        so that every class carries the same total evidence -- the posterior
        one would get from a training set with equal classes, the same points
        per class repeated. Its probabilities then estimate P(y | x) under
        class prior π_k ∝ c_k n_k (uniform for "balanced"), not under the
        training prior: :func:`uqzoo.prior_shift` maps them back to the
        scene's prior. A sequence gives c_k per class, in the order of
        ``data.classes`` (``uz.fit`` also takes a dict label → weight).
    """

    optimizer: str = "adam"
    learning_rate: float = 1e-2
    momentum: float = 0.9
    num_epochs: int = 5000
    batch_size: int | None = None
    class_weight: str | tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "optimizer", check_choice(self.optimizer, "optimizer", OPTIMIZERS))
        set_(self, "learning_rate", check_float(self.learning_rate, "learning_rate", low=0.0,
                                                low_open=True))
        set_(self, "momentum", check_float(self.momentum, "momentum", low=0.0, high=1.0,
                                           high_open=True))
        set_(self, "num_epochs", check_int(self.num_epochs, "num_epochs", minimum=1))
        if self.batch_size is not None:
            set_(self, "batch_size", check_int(self.batch_size, "batch_size", minimum=1))
        set_(self, "class_weight", check_class_weight(self.class_weight))


@dataclasses.dataclass(frozen=True)
class TrainingConfig(OptimizerConfig):
    """:class:`OptimizerConfig` plus a stopping rule: a plateau, or early stopping.

    For methods that keep the end point of training (ensemble, bootstrap, MC
    dropout, Laplace); SWAG samples along the trajectory and extends
    :class:`OptimizerConfig` only. ``num_epochs`` is the budget: a member
    stops earlier when its rule says it has converged, and a member that has
    not converged within the budget makes the posterior ``converged=False``.

    Parameters
    ----------
    validation_fraction : float
        Fraction of the training rows held out for early stopping, in [0, 0.5);
        0 (default) stops at a plateau of the training loss instead.
    patience : int
        Stop a member after this many epochs without a lower validation loss;
        its parameters revert to the best epoch (early stopping only).
    convergence_window : int or None
        W, in epochs (default 100): a member has plateaued when the mean
        training loss over its last W epochs is lower than over the W before
        by at most ``convergence_rtol`` of the loss, or by no more than 3
        standard errors of the difference of the two means. ``None`` trains
        every member for the whole budget and makes no convergence check
        (``converged`` is then None). Ignored with early stopping.
    convergence_rtol : float
        Relative decrease per window still counted as a plateau (default
        1e-5). Measured on development data (sim-teacher, gaussian-mixture,
        nonlinear-logistic at seed 100, n_train 1000; 2×10 tanh, full-batch
        Adam at 0.01, 20-40 members): the windowed loss of a member falls by
        up to 4e-3 per 100 epochs at epoch 500 and 7e-4 at epoch 1000, then
        reaches a floor of 1e-7 to 1e-4 where Adam's steps jitter about the
        minimum (the noise term absorbs that). With 1e-5 members stop after
        650-1800 epochs, their loss within 1.3e-5 of its value after 6000
        epochs on sim-teacher (1e-3 with rtol 1e-4, which stops them after
        500-1350 epochs). A plateau is not a minimum: on nonlinear-logistic
        one member of 20 left its plateau later for a basin 0.24 % lower.
    """

    validation_fraction: float = 0.0
    patience: int = 50
    convergence_window: int | None = 100
    convergence_rtol: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        set_ = object.__setattr__
        set_(self, "validation_fraction", check_float(
            self.validation_fraction, "validation_fraction", low=0.0, high=0.5,
            high_open=True))
        set_(self, "patience", check_int(self.patience, "patience", minimum=1))
        if self.convergence_window is not None:
            set_(self, "convergence_window", check_int(
                self.convergence_window, "convergence_window", minimum=2, maximum=100_000))
        set_(self, "convergence_rtol", check_float(
            self.convergence_rtol, "convergence_rtol", low=0.0, high=1.0))


def _early_stopping(config: OptimizerConfig) -> tuple[float, int]:
    """(validation_fraction, patience); (0, 1), i.e. none, for a config without them."""
    if isinstance(config, TrainingConfig):
        return config.validation_fraction, config.patience
    return 0.0, 1


def _plateau_rule(config: OptimizerConfig) -> tuple[int, float]:
    """(window, rtol) of the plateau rule; window 0 when it does not apply.

    It applies to a :class:`TrainingConfig` without early stopping and with a
    ``convergence_window``; SWAG's :class:`OptimizerConfig` runs its whole
    schedule.
    """
    if (isinstance(config, TrainingConfig) and config.validation_fraction == 0
            and config.convergence_window is not None):
        return config.convergence_window, config.convergence_rtol
    return 0, 0.0


class TrainResult(NamedTuple):
    """What :func:`train` returns.

    Attributes
    ----------
    params : dict of ndarray
        Trained parameters, each (M, *param_shape), float32 (the best epoch's
        when early stopping is on).
    loss : ndarray of shape (M, E), float32
        Training objective per epoch (mean over the epoch's batches): the mean
        weighted NLL plus ‖θ‖²/(2·prior_scale²·N), the negative log posterior
        per row without the prior's normalising constant; NaN after a member
        stopped early. E is the number of epochs run.
    val_loss : ndarray of shape (M, E) or None
        Mean validation negative log-likelihood per epoch, when early stopping is on.
    stopped_epoch : ndarray of shape (M,), int
        Epoch after which each member stopped (E when it never stopped).
    hook_state : pytree or None
        The final state of the per-epoch hook (e.g. SWAG moments), leading axis M.
    seconds : float
        Wall time of the training (compilation included).
    num_steps : int
        Optimiser steps per member actually run.
    stopped : ndarray of shape (M,), bool
        Whether each member stopped by its rule (plateau or early stopping)
        within the budget; all False when no rule applies.
    """

    params: dict[str, np.ndarray]
    loss: np.ndarray
    val_loss: np.ndarray | None
    stopped_epoch: np.ndarray
    hook_state: Any
    seconds: float
    num_steps: int
    stopped: np.ndarray | None = None


# -- seeds ------------------------------------------------------------------------------


def member_seeds(seed_sequence: np.random.SeedSequence, num: int) -> list[int]:
    """``num`` independent 32-bit integer seeds spawned from ``seed_sequence``."""
    return [int(child.generate_state(1)[0]) for child in seed_sequence.spawn(num)]


def member_keys(seeds: list[int]) -> jax.Array:
    """Stacked JAX keys, one per member, shape (M,) of key dtype."""
    return jnp.stack([jax.random.key(s) for s in seeds])


def split_validation(n: int, fraction: float,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, validation) of a random split; validation empty when fraction = 0."""
    if fraction <= 0:
        return np.arange(n), np.arange(0)
    n_val = max(1, round(fraction * n))
    if n - n_val < 2:
        raise InvalidInputError(
            f"validation_fraction={fraction} leaves {n - n_val} training rows of {n}; "
            f"lower it or pass more data"
        )
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


# -- the computation of all members (pure JAX) ------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Plan:
    """Static (hashable) description of a training run; one compilation per plan."""

    spec: Model
    optimizer: str
    momentum: float
    batch_size: int | None
    n_train: int
    dropout: float
    weighted: bool
    early_stopping: bool
    patience: int
    hook: Any
    plateau_window: int = 0
    plateau_rtol: float = 0.0
    normalize_weights: bool = False


def _where_members(flag: jax.Array, new, old):
    """Per member, ``old`` where ``flag`` (M,) is set, else ``new``.

    Leaves with a leading member axis are selected member by member; scalar
    leaves are shared by all members (optax's step counts and injected
    learning rate) and keep their ``new`` value: a frozen member never steps
    again, so the shared counters need not stop for it.
    """
    def select(a, b):
        if a.ndim == 0:
            return a
        return jnp.where(flag.reshape(flag.shape + (1,) * (a.ndim - 1)), b, a)
    return jax.tree_util.tree_map(select, new, old)


def _objective(plan: _Plan, params, X, y, w, masks):
    """Σ_m L_m(θ_m) and, as auxiliary output, every member's L_m, shape (M,).

    The forward pass, the likelihood and the prior are :mod:`uqzoo.nets.jax`'s.

    Parameters
    ----------
    params : dict of arrays (M, *param_shape)
    X : array (N, D) shared by all members, or (M, B, D) each member's own rows
    y : int array (N,) or (M, B)
    w : array (M, N) or (M, B) of data weights, or None (all ones)
    masks : list of (M, N, h_i) dropout multipliers per hidden layer, or None

    Notes
    -----
    ``log_prior`` carries the Gaussian's normalising constant
    P·(log prior_scale + ½ log 2π); it is subtracted (as ``log_prior`` at
    θ = 0) so the reported loss is the data term plus ‖θ‖²/(2·prior_scale²·N),
    as torch's ``weight_decay`` reports it. A constant moves neither the
    gradient nor the optimum, and without it the relative drop that
    :func:`training_warnings` reads is not diluted.
    """
    spec = plan.spec
    logits = nets_jax.forward_logits(spec, params, X, hidden_masks=masks)   # (M, N, out)
    nll = -nets_jax.log_likelihood_terms(spec, logits, y)                 # (M, N)
    if w is not None:
        nll = nll * w
    zero = jax.tree_util.tree_map(jnp.zeros_like, params)
    prior_penalty = nets_jax.log_prior(spec, zero) - nets_jax.log_prior(spec, params)
    per_member = jnp.mean(nll, axis=-1) + prior_penalty / plan.n_train
    step_loss = per_member
    if plan.normalize_weights and w is not None:
        # Class weights: the step descends L_m / w̄_m, w̄_m the mean weight of the
        # step's rows. Full batch w̄_m is a constant, so the minimiser -- the MAP of
        # the weighted likelihood -- is L_m's; what changes is that a step is a
        # weighted *average* of per-row gradients, never Σ w / B of them. Without
        # it one row of weight 1000 in a batch of 64 (a 1-in-2000 class,
        # "balanced") makes an SGD step 15× the unweighted one and SWAG diverges.
        # With minibatches w̄_m varies by batch: a self-normalised (ratio) estimate
        # of the full-batch direction, biased by O(1/B). The reported loss stays L_m.
        step_loss = per_member / jax.lax.stop_gradient(jnp.mean(w, axis=-1))
    # Members share no parameter, so the gradient of the sum is every member's own.
    return jnp.sum(step_loss), per_member


_value_and_grad = jax.value_and_grad(_objective, argnums=1, has_aux=True)


def _dropout_masks(plan: _Plan, keys, n_rows: int):
    """Per-row dropout multipliers (M, N, h_i) per hidden layer, from each member's key."""
    if plan.dropout <= 0:
        return None
    keep_prob = 1.0 - plan.dropout
    masks = []
    assert isinstance(plan.spec, MLPSpec), "dropout is the MLP's (mc_dropout checks first)"
    for i, width in enumerate(plan.spec.hidden):
        keep = jax.vmap(lambda k, i=i, width=width: jax.random.bernoulli(
            jax.random.fold_in(k, i), keep_prob, (n_rows, width)))(keys)
        masks.append(jnp.where(keep, 1.0 / keep_prob, 0.0).astype(jnp.float32))
    return masks


def _optimizer(plan: _Plan) -> optax.GradientTransformation:
    """``optax.adam`` or ``optax.sgd`` with the learning rate as injected state.

    The learning rate lives in the state (``state.hyperparams["learning_rate"]``,
    float32 ()) so that a per-epoch schedule -- SWAG's -- is data, not a
    recompilation; :func:`_set_learning_rate` writes it before each epoch.
    The other constants are static: torch.optim.Adam's defaults (its
    ``m̂ / (√v̂ + ε)`` with ε outside the root is optax's with eps_root = 0, both
    bias-corrected from step 1) and torch.optim.SGD's heavy ball
    (``optax.trace``: buf = g + momentum·buf from buf = 0, i.e. dampening 0, no
    Nesterov). The prior is in the loss -- torch's coupled ``weight_decay`` --
    not AdamW's decoupled decay.
    """
    if plan.optimizer == "adam":
        return optax.inject_hyperparams(optax.adam, static_args=("b1", "b2", "eps"))(
            learning_rate=0.0, b1=_ADAM_BETA1, b2=_ADAM_BETA2, eps=_ADAM_EPS)
    return optax.inject_hyperparams(optax.sgd, static_args=("momentum",))(
        learning_rate=0.0, momentum=plan.momentum)


def _set_learning_rate(opt_state, lr):
    """The optax state with its injected learning rate replaced by ``lr`` (float32 ())."""
    return opt_state._replace(hyperparams={**opt_state.hyperparams, "learning_rate": lr})


class _State(NamedTuple):
    """Carry of the scan over epochs; leaves have a leading member axis M unless noted.

    params : dict, float32 (M, out, in) / (M, out)  current parameters
    opt : optax state                               ``InjectStatefulHyperparamsState``
        of :func:`_optimizer`: ``count`` int32 () and ``hyperparams``
        {"learning_rate": float32 ()} shared by all members; ``inner_state``
        Adam's ``ScaleByAdamState(count int32 (), mu, nu)`` or SGD's
        ``TraceState(trace)``, mu / nu / trace dicts like params
    step : int32 ()                                 optimiser steps taken (shared)
    key : key (M,)                                  each member's JAX key
    best_params : dict like params                  parameters at the best validation loss
    best_val : float32 (M,)                         best validation loss (inf at start)
    wait : int32 (M,)                               epochs since the last improvement
    stopped : bool (M,)                             early-stopped members are frozen
    stopped_epoch : int32 (M,)                      epoch after which it stopped
    hook : pytree with leading M                    state of the per-epoch hook
    loss_window : float32 (M, 2W)                   the last 2W epoch losses, oldest
                                                    first, NaN before they exist
                                                    (W = 0 without the plateau rule)
    """

    params: Any
    opt: Any
    step: jax.Array
    key: jax.Array
    best_params: Any
    best_val: jax.Array
    wait: jax.Array
    stopped: jax.Array
    stopped_epoch: jax.Array
    hook: Any
    loss_window: jax.Array


def _plateaued(window_losses: jax.Array, window: int, rtol: float) -> jax.Array:
    """Per member (M,): has the loss plateaued over ``window_losses`` (M, 2W)?

    The decrease of the mean over the last W epochs from the mean over the W
    before is at most max(rtol · |last mean|, 3 standard errors of the
    difference) -- :func:`uqzoo.methods._diagnostics.window_change`'s rule,
    here in JAX inside the compiled loop. False while fewer than 2W epochs
    have run (NaN entries).
    """
    previous, last = window_losses[:, :window], window_losses[:, window:]
    last_mean = jnp.mean(last, axis=1)
    decrease = jnp.mean(previous, axis=1) - last_mean
    noise = 3.0 * jnp.sqrt((jnp.var(previous, axis=1, ddof=1)
                            + jnp.var(last, axis=1, ddof=1)) / window)
    tolerance = jnp.maximum(rtol * jnp.maximum(jnp.abs(last_mean), 1e-12), noise)
    return jnp.all(jnp.isfinite(window_losses), axis=1) & (decrease <= tolerance)


def _fold(keys, data):
    return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, data)


def _epoch(plan: _Plan, state: _State, epoch, lr, X, y, w, X_val, y_val):
    """One epoch of all members; returns the new state and (train loss, val loss), each (M,)."""
    keys_epoch = _fold(state.key, epoch)
    optimizer = _optimizer(plan)
    opt = _set_learning_rate(state.opt, lr)

    def descend(params, opt, X, y, w, masks):
        """One optimiser step of all members; returns (params, opt, per-member loss (M,))."""
        (_, loss), grads = _value_and_grad(plan, params, X, y, w, masks)
        updates, opt = optimizer.update(grads, opt, params)
        return optax.apply_updates(params, updates), opt, loss

    if plan.batch_size is None:
        masks = _dropout_masks(plan, _fold(keys_epoch, 1), X.shape[0])
        params, opt, train_loss = descend(state.params, opt, X, y,
                                          w if plan.weighted else None, masks)
        step = state.step + 1
    else:
        n, batch = X.shape[0], plan.batch_size
        num_batches = n // batch
        perms = jax.vmap(lambda k: jax.random.permutation(jax.random.fold_in(k, 0), n))(
            keys_epoch)                                                   # (M, n)
        batches = perms[:, :num_batches * batch].reshape(-1, num_batches, batch)
        keys_dropout = _fold(keys_epoch, 1)

        def batch_step(carry, inputs):
            params, opt = carry
            rows, index = inputs                                          # rows (M, B)
            masks = _dropout_masks(plan, _fold(keys_dropout, index), batch)
            wb = jnp.take_along_axis(w, rows, axis=1) if plan.weighted else None
            params, opt, loss = descend(params, opt, X[rows], y[rows], wb, masks)
            return (params, opt), loss

        (params, opt), losses = jax.lax.scan(
            batch_step, (state.params, opt), (batches.transpose(1, 0, 2), jnp.arange(num_batches)))
        train_loss = jnp.mean(losses, axis=0)
        step = state.step + num_batches

    best_params, best_val, wait = state.best_params, state.best_val, state.wait
    stopped, stopped_epoch = state.stopped, state.stopped_epoch
    val_loss = jnp.full(train_loss.shape, jnp.nan, jnp.float32)
    frozen = state.stopped
    if plan.early_stopping:
        # A member that stopped keeps its parameters; the work is still done
        # (vectorised members run in lockstep) but discarded.
        params = _where_members(frozen, params, state.params)
        opt = _where_members(frozen, opt, state.opt)
        train_loss = jnp.where(frozen, jnp.nan, train_loss)
        val_loss = -jnp.mean(nets_jax.log_likelihood_terms(
            plan.spec, nets_jax.forward_logits(plan.spec, params, X_val), y_val), axis=-1)
        improved = (val_loss < best_val) & ~frozen
        best_params = _where_members(improved, best_params, params)
        best_val = jnp.where(improved, val_loss, best_val)
        wait = jnp.where(improved, 0, jnp.where(frozen, wait, wait + 1))
        newly_stopped = ~frozen & (wait >= plan.patience)
        stopped_epoch = jnp.where(newly_stopped, epoch + 1, stopped_epoch)
        stopped = frozen | newly_stopped
        val_loss = jnp.where(frozen, jnp.nan, val_loss)

    loss_window = state.loss_window
    if plan.plateau_window:
        # A member that plateaued keeps its parameters (the work is done in
        # lockstep and discarded, as for early stopping).
        params = _where_members(frozen, params, state.params)
        opt = _where_members(frozen, opt, state.opt)
        train_loss = jnp.where(frozen, jnp.nan, train_loss)
        loss_window = jnp.concatenate([loss_window[:, 1:], train_loss[:, None]], axis=1)
        newly_stopped = ~frozen & _plateaued(loss_window, plan.plateau_window,
                                             plan.plateau_rtol)
        stopped_epoch = jnp.where(newly_stopped, epoch + 1, stopped_epoch)
        stopped = frozen | newly_stopped

    hook_state = state.hook
    if plan.hook is not None:
        updated = jax.vmap(plan.hook.update, in_axes=(0, 0, None))(state.hook, params, epoch)
        hook_state = _where_members(frozen, updated, state.hook)

    new = _State(params, opt, step, state.key, best_params, best_val, wait, stopped,
                 stopped_epoch, hook_state, loss_window)
    return new, (train_loss, val_loss)


def _block(plan: _Plan, state: _State, epochs, lrs, active, X, y, w, X_val, y_val):
    """A block of epochs: ``lax.scan`` over epochs; padding epochs are computed and discarded.

    Discarding with a select, rather than skipping with ``lax.cond``, is what
    keeps the loop fast: on the benchmark problem the conditional made an epoch
    take 5.3 ms instead of 3.5 ms (measured), while the padding costs less than
    one block.
    """

    def body(carry, inputs):
        epoch, lr, is_active = inputs
        new, (loss, val) = _epoch(plan, carry, epoch, lr, X, y, w, X_val, y_val)
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(is_active, a, b), new, carry)
        return new, (jnp.where(is_active, loss, jnp.nan), jnp.where(is_active, val, jnp.nan))

    return jax.lax.scan(body, state, (epochs, lrs, active))


_block_jit = jax.jit(_block, static_argnums=0)


# -- the public entry point ----------------------------------------------------------------


def train(spec: Model, X: np.ndarray, y: np.ndarray, init_params: Mapping[str, np.ndarray],
          config: OptimizerConfig, *, keys: jax.Array, weights: np.ndarray | None = None,
          X_val: np.ndarray | None = None, y_val: np.ndarray | None = None,
          dropout: float = 0.0, learning_rates: np.ndarray | None = None,
          hook: Any = None, progress_bar: bool = False, desc: str = "train",
          normalize_weights: bool = False) -> TrainResult:
    """Train M networks to the MAP together, as one vectorised compiled computation.

    Parameters
    ----------
    spec : Model
        The network and its prior (``spec.prior_sd`` sets each parameter's weight decay).
    X : array of shape (N, D)
    y : int array of shape (N,)
        Labels in 0..K-1.
    init_params : dict of arrays
        Initial parameters with a leading member axis M.
    config : OptimizerConfig
        Optimiser, learning rate, epochs, batch size; a :class:`TrainingConfig`
        adds a stopping rule (a plateau of the training loss, or early stopping).
    keys : JAX key array of shape (M,)
        One key per member (minibatch permutations and dropout masks).
    weights : array of shape (M, N), optional
        Per-member data weights (bootstrap resample counts); all ones when omitted.
    X_val, y_val : arrays, optional
        Validation rows for early stopping (required when and only used when
        ``config.validation_fraction > 0``).
    dropout : float
        Per-row dropout rate on hidden units during training, in [0, 1).
    learning_rates : array of shape (num_epochs,), optional
        A per-epoch learning-rate schedule; constant ``config.learning_rate``
        when omitted.
    hook : object, optional
        Hashable object with ``init(params) -> state`` and
        ``update(state, params, epoch) -> state``, pure JAX functions of one
        member, run after every epoch (SWAG's moment collection).
    progress_bar : bool
    desc : str
        Label of the progress bar.
    normalize_weights : bool
        Step on the objective divided by the mean weight of the step's rows
        (per member), so that the step size does not grow with the largest
        weight; full batch the minimiser is unchanged. :func:`fit_members`
        turns it on with class weights.

    Returns
    -------
    TrainResult

    Examples
    --------
    Two members of a one-hidden-layer network trained side by side for 20 epochs on a
    linearly separable problem:

    >>> import numpy as np, uqzoo as uz
    >>> from uqzoo.methods import _trainer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(64, 3)).astype("float32"); y = (X[:, 0] > 0).astype(int)
    >>> spec = uz.MLPSpec(3, 2, hidden=(4,))
    >>> result = _trainer.train(spec, X, y, spec.init_params(0, num=2),
    ...                         _trainer.TrainingConfig(num_epochs=20),
    ...                         keys=_trainer.member_keys([1, 2]))
    >>> result.params["layers.0.weight"].shape, result.loss.shape
    ((2, 4, 3), (2, 20))
    """
    start = time.perf_counter()
    params = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in spec.check_draws(init_params,
                                                                             "init_params").items()}
    num_members = next(iter(params.values())).shape[0]
    # Device copies under their own names (the arguments stay numpy arrays).
    X_dev = jnp.asarray(X, dtype=jnp.float32)
    y_dev = jnp.asarray(y, dtype=jnp.int32)
    n = X_dev.shape[0]
    if config.batch_size is not None and config.batch_size > n:
        raise InvalidInputError(
            f"batch_size must be at most the {n} training rows, got {config.batch_size}")
    validation_fraction, patience = _early_stopping(config)
    early = validation_fraction > 0
    plateau_window, plateau_rtol = _plateau_rule(config)
    if early and (X_val is None or y_val is None or len(y_val) == 0):
        raise InvalidInputError("early stopping needs validation rows X_val, y_val")
    X_val_dev = jnp.asarray(X_val if early else np.zeros((1, X_dev.shape[1])),
                            dtype=jnp.float32)
    y_val_dev = jnp.asarray(y_val if early else np.zeros(1), dtype=jnp.int32)
    weighted = weights is not None
    w = jnp.asarray(weights, dtype=jnp.float32) if weighted else jnp.ones((), jnp.float32)
    if weighted and w.shape != (num_members, n):
        raise InvalidInputError(f"weights must have shape (M, N) = {(num_members, n)}, "
                                f"got {tuple(w.shape)}")
    dropout = check_float(dropout, "dropout", low=0.0, high=1.0, high_open=True)
    num_epochs = config.num_epochs
    if learning_rates is None:
        lrs = np.full(num_epochs, config.learning_rate, dtype=np.float32)
    else:
        lrs = np.asarray(learning_rates, dtype=np.float32)
        if lrs.shape != (num_epochs,) or not np.all(np.isfinite(lrs)) or np.any(lrs < 0):
            raise InvalidInputError(
                f"learning_rates must be {num_epochs} finite non-negative values, "
                f"got shape {lrs.shape}")

    plan = _Plan(spec=spec, optimizer=config.optimizer, momentum=float(config.momentum),
                 batch_size=config.batch_size, n_train=int(n), dropout=float(dropout),
                 weighted=weighted, early_stopping=early, patience=patience, hook=hook,
                 plateau_window=plateau_window, plateau_rtol=float(plateau_rtol),
                 normalize_weights=bool(normalize_weights) and weighted)
    hook_state = (jax.vmap(hook.init)(params) if hook is not None else ())
    members = _State(
        params=params, opt=_optimizer(plan).init(params), step=jnp.zeros((), jnp.int32), key=keys,
        best_params=params, best_val=jnp.full(num_members, jnp.inf, jnp.float32),
        wait=jnp.zeros(num_members, jnp.int32), stopped=jnp.zeros(num_members, bool),
        stopped_epoch=jnp.full(num_members, num_epochs, jnp.int32), hook=hook_state,
        loss_window=jnp.full((num_members, 2 * plateau_window), jnp.nan, jnp.float32))
    if keys.shape != (num_members,):
        raise InvalidInputError(f"keys must hold one key per member ({num_members}), "
                                f"got shape {keys.shape}")

    # Blocks of a power-of-two length so that nearby num_epochs share one compilation;
    # the last block is padded with inactive epochs, whose updates are discarded.
    block = 1 << max(0, math.ceil(math.log2(max(1, num_epochs / _TARGET_BLOCKS))))
    num_blocks = math.ceil(num_epochs / block)
    padded = num_blocks * block
    epochs = np.arange(padded, dtype=np.int32)
    active = epochs < num_epochs
    lrs_padded = np.zeros(padded, dtype=np.float32)
    lrs_padded[:num_epochs] = lrs

    bar = progress(total=num_epochs, desc=desc, unit="epoch", enabled=progress_bar)
    losses, val_losses = [], []
    try:
        for b in range(num_blocks):
            sl = slice(b * block, (b + 1) * block)
            members, (loss, val) = _block_jit(plan, members, epochs[sl], lrs_padded[sl],
                                              active[sl], X_dev, y_dev, w, X_val_dev,
                                              y_val_dev)
            losses.append(np.asarray(loss))
            val_losses.append(np.asarray(val))
            bar.update(min(num_epochs, (b + 1) * block) - b * block)
            if (early or plateau_window) and bool(np.all(np.asarray(members.stopped))):
                break
    finally:
        bar.close()
    run = min(num_epochs, len(losses) * block)
    stopped_all = np.asarray(members.stopped)
    if (early or plateau_window) and stopped_all.all():
        # The traces end at the last member's stop, not at the end of its block.
        run = int(np.asarray(members.stopped_epoch).max())
    loss = np.concatenate(losses)[:run].T
    val_loss = np.concatenate(val_losses)[:run].T if early else None
    final = members.best_params if early else members.params
    params_out = {k: np.array(v) for k, v in final.items()}  # writable copies
    bad = [k for k, v in params_out.items() if not np.all(np.isfinite(v))]
    if bad:
        raise InvalidInputError(
            f"training diverged (non-finite parameters in {bad}); lower learning_rate "
            f"(now {config.learning_rate}) or standardise the features")
    hook_out = jax.tree_util.tree_map(np.array, members.hook) if hook is not None else None
    stopped_epoch = np.minimum(np.asarray(members.stopped_epoch), run)
    return TrainResult(params=params_out, loss=loss, val_loss=val_loss,
                       stopped_epoch=stopped_epoch, hook_state=hook_out,
                       seconds=time.perf_counter() - start,
                       num_steps=int(members.step),
                       stopped=stopped_all.copy())


def fit_members(spec: Model, data, config: OptimizerConfig, *, seed: int, num_members: int,
                dropout: float = 0.0, resample: Callable | None = None,
                learning_rates: np.ndarray | None = None, hook: Any = None,
                progress_bar: bool = False, desc: str = "train",
                default_batch_size: int | None = None) -> tuple[TrainResult, dict]:
    """Seeded training of ``num_members`` MAP networks on ``data``'s training rows.

    The seed is split (``numpy.random.SeedSequence.spawn``) into: the
    validation split, the member initialisations, the member JAX keys and the
    resampling, so each is reproducible and independent of the others.

    Parameters
    ----------
    resample : callable, optional
        ``resample(y_train, num_members, rng) -> counts (M, N)``; the counts become
        the per-member data weights (the bootstrap).
    default_batch_size : int, optional
        The method's default batch size: when ``config.batch_size`` is this
        default and exceeds the rows left for training, train full batch
        instead of raising (a batch size the user chose still must fit).

    Returns
    -------
    (TrainResult, info)
        ``info`` holds ``init_seeds``, ``train_index``, ``val_index``, ``counts``
        and ``batch_size``, the batch size used (None: full batch).
    """
    ss_split, ss_init, ss_keys, ss_resample = np.random.SeedSequence(seed).spawn(4)
    X, y = data.X_train, data.y_train
    train_idx, val_idx = split_validation(len(y), _early_stopping(config)[0],
                                          np.random.default_rng(ss_split))
    X_tr, y_tr = X[train_idx], y[train_idx]
    if (default_batch_size is not None and config.batch_size == default_batch_size
            and default_batch_size >= len(y_tr)):
        config = dataclasses.replace(config, batch_size=None)
    init_seeds = member_seeds(ss_init, num_members)
    init = {k: np.stack([spec.init_params(s)[k] for s in init_seeds])
            for k in spec.param_shapes()}
    keys = member_keys(member_seeds(ss_keys, num_members))
    counts = None
    if resample is not None:
        counts = resample(y_tr, num_members, np.random.default_rng(ss_resample))
    weights = counts
    per_row = row_weights(config.class_weight, y_tr, spec.n_classes)
    if per_row is not None:          # a reweighted likelihood: c_{y_i} on every row's term
        weights = per_row[None] * (1.0 if counts is None else counts)
        weights = np.broadcast_to(weights, (num_members, len(y_tr)))
    result = train(spec, X_tr, y_tr, init, config, keys=keys, weights=weights,
                   X_val=X[val_idx] if len(val_idx) else None,
                   y_val=y[val_idx] if len(val_idx) else None, dropout=dropout,
                   learning_rates=learning_rates, hook=hook, progress_bar=progress_bar,
                   desc=desc, normalize_weights=per_row is not None)
    info = {"init_seeds": init_seeds, "train_index": train_idx, "val_index": val_idx,
            "counts": counts, "batch_size": config.batch_size}
    return result, info


def training_diagnostics(result: TrainResult, config: OptimizerConfig) -> dict:
    """The diagnostics every trained method records (loss traces, timings, stopping epochs)."""
    diag = {"loss": result.loss.astype(np.float32), "seconds_training": float(result.seconds),
            "num_steps": int(result.num_steps)}
    if result.val_loss is not None:
        diag["val_loss"] = result.val_loss.astype(np.float32)
    if result.val_loss is not None or _plateau_rule(config)[0]:
        diag["stopped_epoch"] = result.stopped_epoch.astype(np.int64)
    return diag


def _relative_decrease(loss: np.ndarray, window: int) -> np.ndarray:
    """(mean of the W epochs before the last W − mean of the last W) / |last mean|, (M,)."""
    previous = np.nanmean(loss[:, -2 * window:-window], axis=1)
    last = np.nanmean(loss[:, -window:], axis=1)
    return (previous - last) / np.maximum(np.abs(last), 1e-12)


def convergence(result: TrainResult, config: OptimizerConfig, what: str = "member"
                ) -> Convergence:
    """Did the members converge within the ``num_epochs`` budget? (see the module notes)

    Parameters
    ----------
    result : TrainResult
    config : OptimizerConfig
    what : str
        What a member is called in the message ("member", "network").

    Returns
    -------
    Convergence

    Examples
    --------
    A plateau window (100 epochs) longer than the whole run (50) cannot have been
    reached:

    >>> import numpy as np, uqzoo as uz
    >>> from uqzoo.methods import _trainer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(64, 3)).astype("float32"); y = (X[:, 0] > 0).astype(int)
    >>> spec = uz.MLPSpec(3, 2, hidden=(4,))
    >>> config = _trainer.TrainingConfig(num_epochs=50, convergence_window=100)
    >>> result = _trainer.train(spec, X, y, spec.init_params(0, num=2), config,
    ...                         keys=_trainer.member_keys([1, 2]))
    >>> _trainer.convergence(result, config).converged
    False
    """
    validation_fraction, patience = _early_stopping(config)
    window, rtol = _plateau_rule(config)
    if not (validation_fraction > 0 or window):
        return Convergence(None, ())
    stopped = (np.zeros(result.loss.shape[0], bool) if result.stopped is None
               else np.asarray(result.stopped, bool))
    if stopped.all():
        return Convergence(True, ())
    num, total = int((~stopped).sum()), stopped.size
    who = (f"{num} of {total} {what}s" if total > 1 else f"the {what}")
    whose = who + ("'" if total > 1 else "'s")
    budget = f"the num_epochs={config.num_epochs} budget"
    if validation_fraction > 0:
        message = (f"{whose} validation loss was still improving within the last {patience} "
                   f"epochs (patience) when {budget} ran out; raise num_epochs")
    elif config.num_epochs < 2 * window:
        message = (f"{budget} is shorter than the 2 × convergence_window = {2 * window} "
                   f"epochs the plateau check needs, so {who} could not be seen to converge; "
                   f"raise num_epochs")
    else:
        change = _relative_decrease(result.loss[~stopped], window)
        message = (f"{who} had not reached a plateau within {budget}: the mean training loss "
                   f"over the last {window} epochs was still {np.nanmax(change):.1e} "
                   f"(relative) below the {window} before, more than convergence_rtol="
                   f"{rtol:g} and the epoch-to-epoch noise allow; raise num_epochs or "
                   f"learning_rate")
    return Convergence(False, (message,))


def training_warnings(result: TrainResult, config: OptimizerConfig) -> list[str]:
    """The messages of :func:`convergence`: why a training run did not converge."""
    return list(convergence(result, config).messages)
