"""The shared MAP trainer: gradients, optimisers, vectorisation, early stopping, seeds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import uqzoo as uz
from uqzoo.methods import _config, _trainer
from uqzoo.nets import torch as tnet


def _problem(n=120, d=4, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    if n_classes == 2:
        y = (X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(np.int64)
    else:
        y = np.argmax(X[:, :n_classes] + 0.5 * rng.normal(size=(n, n_classes)), axis=1)
    return X, y


def _plan(spec, n, **kw):
    base = dict(spec=spec, optimizer="adam", momentum=0.9, batch_size=None, n_train=n,
                dropout=0.0, weighted=False, early_stopping=False, patience=5, hook=None)
    return _trainer._Plan(**{**base, **kw})


def _reference_objective(spec, params, X, y, w, masks, n_train):
    """One member's objective written out independently of the trainer, masks (N, h_i).

    The weight decay is Σ_k ‖θ_k‖² / (2·sd_k²·N) with sd_k the prior sd of
    parameter k (prior_scale/√fan_in for weights under the fan-in prior): the
    negative log prior without its normalising constant, which the trainer
    leaves out of the reported loss.
    """
    act = {"tanh": jnp.tanh, "relu": jax.nn.relu, "sigmoid": jax.nn.sigmoid}[spec.activation]
    h = X
    for i in range(spec.n_layers):
        h = h @ params[f"layers.{i}.weight"].T + params[f"layers.{i}.bias"]
        if i < spec.n_layers - 1:
            h = act(h)
            if masks is not None:
                h = h * masks[i]
    if spec.n_classes == 2:
        nll = jax.nn.softplus(jnp.where(y == 1, -h[:, 0], h[:, 0]))
    else:
        nll = -jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], 1)[:, 0]
    data = jnp.mean(nll * w) if w is not None else jnp.mean(nll)
    sds = _prior_sds(spec)
    penalty = sum(jnp.sum(p * p) / sds[k] ** 2 for k, p in params.items())
    return data + penalty / (2 * n_train)


def _prior_sds(spec):
    """Written out: weights s/√fan_in under "fan_in", every parameter s under "iid"."""
    return {k: spec.prior_scale / np.sqrt(shape[1])
            if spec.prior == "fan_in" and k.endswith("weight") else spec.prior_scale
            for k, shape in spec.param_shapes().items()}


@pytest.mark.parametrize("hidden, activation, n_classes, per_member_rows", [
    ((6, 5), "tanh", 2, False),
    ((6,), "relu", 3, True),
    ((), "sigmoid", 3, False),
    ((4, 3), "sigmoid", 2, True),
])
def test_fused_objective_and_gradient_are_each_members_own(hidden, activation, n_classes,
                                                           per_member_rows):
    """All members in one computation (shared X as one wide first-layer product, or
    member-major minibatch rows; weights; dropout masks): each member's loss and
    gradient equal that member's objective evaluated alone."""
    M, n, batch = 3, 40, 25
    spec = uz.MLPSpec(4, n_classes, hidden=hidden, activation=activation, prior_scale=0.7)
    X, y = _problem(n=n, n_classes=n_classes)
    rng = np.random.default_rng(2)
    w = rng.integers(0, 3, size=(M, n)).astype(np.float64)
    masks = [(rng.random((M, n, h)) > 0.3) / 0.7 for h in hidden]
    if per_member_rows:
        rows = np.stack([rng.permutation(n)[:batch] for _ in range(M)])
        Xm, ym, wm = X[rows], y[rows], np.take_along_axis(w, rows, 1)
        masks = [m[:, :batch] for m in masks]
        X_arg, y_arg = Xm, ym                                     # (M, B, D), (M, B)
    else:
        Xm, ym, wm = np.repeat(X[None], M, 0), np.repeat(y[None], M, 0), w
        X_arg, y_arg = X, y                                       # (N, D), (N,)
    plan = _plan(spec, n, weighted=True)
    # Float64, so that the two computations differ by rounding alone -- about
    # n·ε64 ≈ 1e-14 of the magnitudes -- and any difference of structure (a
    # member seeing another's rows, weights, masks or parameters) shows.
    with jax.enable_x64(True):
        params = {k: jnp.asarray(v, jnp.float64) for k, v in spec.init_params(1, num=M).items()}
        mask_args = [jnp.asarray(mk) for mk in masks] if hidden else None
        # Both jitted: op-by-op JAX would spend the test's time compiling each primitive.
        (total, loss), grads = jax.jit(_trainer._value_and_grad, static_argnums=0)(
            plan, params, jnp.asarray(X_arg, jnp.float64), jnp.asarray(y_arg),
            jnp.asarray(wm), mask_args)
        reference = jax.jit(jax.vmap(jax.value_and_grad(_reference_objective, argnums=1),
                                     in_axes=(None, 0, 0, 0, 0, 0, None)),
                            static_argnums=(0, 6))
        ref_loss, ref_grads = reference(spec, params, jnp.asarray(Xm, jnp.float64),
                                        jnp.asarray(ym), jnp.asarray(wm), mask_args, n)
        # To numpy inside the context: outside it JAX would truncate to float32.
        total, loss, ref_loss = np.asarray(total), np.asarray(loss), np.asarray(ref_loss)
        grads, ref_grads = jax.device_get(grads), jax.device_get(ref_grads)
    assert loss.shape == (M,) and loss.dtype == np.float64
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    np.testing.assert_allclose(total, np.sum(ref_loss), rtol=1e-12)
    for k in params:
        np.testing.assert_allclose(grads[k], ref_grads[k], rtol=1e-10, atol=1e-13)


def _torch_loop(spec, X, y, init, steps, optimizer, lr, lrs=None):
    """Plain per-member torch training with weight decay = the prior (the reference).

    One parameter group per tensor, each with its own weight decay 1/(sd_k²·N).
    """
    sds = _prior_sds(spec)
    out = []
    for m in range(next(iter(init.values())).shape[0]):
        net = tnet.MLP(spec)
        net.load_state_dict({k: torch.tensor(v[m]) for k, v in init.items()})
        groups = [{"params": [p], "weight_decay": 1.0 / (sds[k] ** 2 * len(y))}
                  for k, p in net.named_parameters()]
        if optimizer == "adam":
            opt = torch.optim.Adam(groups, lr=lr)
        else:
            opt = torch.optim.SGD(groups, lr=lr, momentum=0.9)
        Xt, yt = torch.from_numpy(X), torch.from_numpy(y.astype(np.float32))
        for step in range(steps):
            if lrs is not None:
                for group in opt.param_groups:
                    group["lr"] = float(lrs[step])
            opt.zero_grad()
            logit = net(Xt)[:, 0]
            torch.nn.functional.binary_cross_entropy_with_logits(logit, yt).backward()
            opt.step()
        out.append({k: v.detach().numpy() for k, v in net.state_dict().items()})
    return {k: np.stack([o[k] for o in out]) for k in init}


@pytest.mark.parametrize("optimizer, schedule", [("adam", False), ("adam", True),
                                                 ("sgd", True)])
def test_full_batch_training_matches_a_torch_loop(optimizer, schedule):
    """optax's Adam / SGD with momentum equal torch.optim's, per-epoch rates included."""
    spec = uz.MLPSpec(4, 2, hidden=(6, 5))
    X, y = _problem()
    init = spec.init_params(3, num=2)
    steps = 40
    lrs = np.linspace(0.05, 0.01, steps).astype(np.float32) if schedule else None
    config = _trainer.TrainingConfig(optimizer=optimizer, learning_rate=0.02, num_epochs=steps)
    ours = _trainer.train(spec, X, y, init, config, keys=_trainer.member_keys([0, 1]),
                          learning_rates=lrs)
    ref = _torch_loop(spec, X, y, init, steps, optimizer, 0.02, lrs)
    assert ours.loss.shape == (2, steps) and ours.num_steps == steps
    for k in init:
        # float32 arithmetic in a different order: agreement to a few ulp of the
        # parameters' scale after 40 steps.
        np.testing.assert_allclose(ours.params[k], ref[k], atol=2e-5)
    assert np.all(ours.loss[:, -1] < ours.loss[:, 0])
    # The first epoch reports the objective at the initial parameters: mean
    # cross-entropy + Σ_k ‖θ_k‖²/(2·sd_k²·N) (the prior's normalising constant
    # left out), here in float64 through torch. Every term is positive, so each
    # float32 sum is within (n - 1)·ε32 relative; the two errors add.
    sds = _prior_sds(spec)
    for m in range(2):
        net = tnet.MLP(spec).double()
        net.load_state_dict({k: torch.tensor(v[m], dtype=torch.float64)
                             for k, v in init.items()})
        with torch.no_grad():
            nll = torch.nn.functional.binary_cross_entropy_with_logits(
                net(torch.from_numpy(X).double())[:, 0], torch.from_numpy(y).double())
        expected = float(nll) + 0.5 / len(y) * sum(
            float(np.sum(v[m].astype(np.float64) ** 2)) / sds[k] ** 2 for k, v in init.items())
        np.testing.assert_allclose(ours.loss[m, 0], expected,
                                   rtol=2 * len(y) * np.finfo(np.float32).eps)


@pytest.mark.slow
def test_vectorised_members_equal_a_per_member_loop():
    """Minibatches, dropout and data weights: each member depends only on its own key."""
    spec = uz.MLPSpec(4, 2, hidden=(6, 5))
    X, y = _problem(n=96)
    M = 3
    init = spec.init_params(4, num=M)
    seeds = [11, 12, 13]
    weights = np.random.default_rng(5).integers(0, 3, size=(M, len(y))).astype(np.float32)
    config = _trainer.TrainingConfig(num_epochs=30, batch_size=32, learning_rate=0.01)
    together = _trainer.train(spec, X, y, init, config, keys=_trainer.member_keys(seeds),
                              weights=weights, dropout=0.2)
    for m in range(M):
        alone = _trainer.train(spec, X, y, {k: v[m:m + 1] for k, v in init.items()}, config,
                               keys=_trainer.member_keys([seeds[m]]),
                               weights=weights[m:m + 1], dropout=0.2)
        for k in init:
            np.testing.assert_allclose(together.params[k][m], alone.params[k][0], atol=1e-5)
        np.testing.assert_allclose(together.loss[m], alone.loss[0], rtol=1e-5)
    assert together.num_steps == 30 * (96 // 32)
    # The members really differ (different keys, inits and weights).
    assert not np.allclose(together.params["layers.0.weight"][0],
                           together.params["layers.0.weight"][1])


def test_class_weights_step_on_the_weight_averaged_loss():
    """normalize_weights: the step descends L / w̄, w̄ the mean weight of the step's rows.

    Full batch w̄ is a constant: SGD on L / w̄ at rate η is SGD on L at rate η / w̄
    (the same minimiser, the weighted likelihood's MAP, and the same path).
    """
    spec = uz.MLPSpec(4, 2, hidden=(6,))
    X, y = _problem(n=96)
    init = spec.init_params(2, num=2)
    weights = np.where(y == 1, 40.0, 0.5).astype(np.float32)[None].repeat(2, 0)
    mean_weight = float(weights[0].astype(np.float64).mean())
    keys = _trainer.member_keys([1, 2])

    def run(learning_rate, normalize):
        config = _trainer.TrainingConfig(optimizer="sgd", learning_rate=learning_rate,
                                         num_epochs=25, convergence_window=None)
        return _trainer.train(spec, X, y, init, config, keys=keys, weights=weights,
                              normalize_weights=normalize)

    normalised, rescaled = run(0.05, True), run(0.05 / mean_weight, False)
    for k in init:
        np.testing.assert_allclose(normalised.params[k], rescaled.params[k], atol=1e-5)
    # the reported loss stays the weighted objective L, not L / w̄
    np.testing.assert_allclose(normalised.loss, rescaled.loss, rtol=1e-4)


def test_one_heavy_row_in_a_minibatch_does_not_blow_up_sgd():
    """A class of 1 in 2000 under "balanced" weighs 1000: in a batch of 64 unnormalised
    its row makes the step ~15× an unweighted one; normalised, the step is a weighted
    average of per-row gradients."""
    spec = uz.MLPSpec(4, 2, hidden=(10, 10))
    X, _ = _problem(n=2000)
    y = np.zeros(2000, np.int64)
    y[0] = 1
    X[0] = 3.0
    weights = _config.row_weights("balanced", y, 2)[None]
    assert weights.max() == pytest.approx(1000.0)
    config = _trainer.OptimizerConfig(optimizer="sgd", learning_rate=0.25, num_epochs=30,
                                      batch_size=64)
    init = spec.init_params(0, num=1)
    keys = _trainer.member_keys([3])
    steady = _trainer.train(spec, X, y, init, config, keys=keys, weights=weights,
                            normalize_weights=True)
    assert np.all(np.isfinite(steady.loss))
    size = max(float(np.abs(v).max()) for v in steady.params.values())
    try:
        wild = _trainer.train(spec, X, y, init, config, keys=keys, weights=weights)
    except uz.InvalidInputError as exc:              # "training diverged"
        assert "diverged" in str(exc)
    else:
        assert max(float(np.abs(v).max()) for v in wild.params.values()) > 2 * size


def test_early_stopping_returns_the_best_epoch():
    spec = uz.MLPSpec(4, 2, hidden=(6, 5), prior_scale=100.0)   # weak prior: it overfits
    X, y = _problem(n=60)
    X_val, y_val = _problem(n=60, seed=1)
    y = np.where(np.random.default_rng(0).random(60) < 0.3, 1 - y, y)  # label noise
    init = spec.init_params(5, num=2)
    config = _trainer.TrainingConfig(num_epochs=600, learning_rate=0.05,
                                     validation_fraction=0.2, patience=20)
    result = _trainer.train(spec, X, y, init, config, keys=_trainer.member_keys([0, 1]),
                            X_val=X_val, y_val=y_val)
    assert result.val_loss is not None
    stopped = result.stopped_epoch
    assert np.all(stopped < 600)
    for m in range(2):
        best = int(np.nanargmin(result.val_loss[m]))
        assert best == stopped[m] - config.patience - 1
        assert np.all(np.isnan(result.loss[m, stopped[m]:]))
        # Training the member for exactly best + 1 epochs reproduces the returned parameters.
        again = _trainer.train(spec, X, y, {k: v[m:m + 1] for k, v in init.items()},
                               _trainer.TrainingConfig(num_epochs=best + 1,
                                                       learning_rate=0.05),
                               keys=_trainer.member_keys([m]))
        for k in init:
            np.testing.assert_allclose(result.params[k][m], again.params[k][0], atol=1e-5)


def test_fit_members_is_seeded():
    spec = uz.MLPSpec(4, 2, hidden=(6, 5))
    X, y = _problem(n=80)
    data = uz.ClassificationData(X, y, X[:5], y[:5], n_classes=2)
    config = _trainer.TrainingConfig(num_epochs=30, batch_size=32)
    a, info_a = _trainer.fit_members(spec, data, config, seed=7, num_members=2)
    b, _ = _trainer.fit_members(spec, data, config, seed=7, num_members=2)
    c, info_c = _trainer.fit_members(spec, data, config, seed=8, num_members=2)
    for k in a.params:
        np.testing.assert_array_equal(a.params[k], b.params[k])
    assert not np.array_equal(a.params["layers.0.weight"], c.params["layers.0.weight"])
    assert info_a["init_seeds"] != info_c["init_seeds"]
    assert len(set(info_a["init_seeds"])) == 2


def test_bad_input_is_rejected_at_the_boundary():
    spec = uz.MLPSpec(4, 2, hidden=(3,))
    X, y = _problem(n=20)
    init = spec.init_params(0, num=2)
    keys = _trainer.member_keys([0, 1])
    with pytest.raises(uz.InvalidInputError, match="optimizer"):
        _trainer.TrainingConfig(optimizer="rmsprop")
    with pytest.raises(uz.InvalidInputError, match="learning_rate"):
        _trainer.TrainingConfig(learning_rate=0.0)
    with pytest.raises(uz.InvalidTypeError, match="num_epochs"):
        _trainer.TrainingConfig(num_epochs=2.5)
    with pytest.raises(uz.InvalidInputError, match="validation_fraction"):
        _trainer.TrainingConfig(validation_fraction=0.7)
    with pytest.raises(uz.InvalidInputError, match="batch_size"):
        _trainer.train(spec, X, y, init, _trainer.TrainingConfig(batch_size=50), keys=keys)
    with pytest.raises(uz.InvalidInputError, match="weights"):
        _trainer.train(spec, X, y, init, _trainer.TrainingConfig(num_epochs=2), keys=keys,
                       weights=np.ones((3, 20)))
    with pytest.raises(uz.InvalidInputError, match="learning_rates"):
        _trainer.train(spec, X, y, init, _trainer.TrainingConfig(num_epochs=2), keys=keys,
                       learning_rates=np.ones(3))
    with pytest.raises(uz.InvalidInputError, match="diverged"):
        _trainer.train(spec, X * 1e4, y, init,
                       _trainer.TrainingConfig(num_epochs=50, optimizer="sgd",
                                               learning_rate=1e3), keys=keys)
