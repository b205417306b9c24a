"""The torch and JAX forwards over the shared layout, and the linearised forward.

Both forwards are checked against a float64 reference with the worst-case
float32 rounding bound of ``_float32_reference`` (so agreeing with each other
to float32 precision follows), for depth 0-3, every activation, K = 2 and
K > 2, one parameter set and a stack of draws.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from _float32_reference import U32, draws_proba64, forward64, gamma
from uqzoo.nets import jax as jnet
from uqzoo.nets import torch as tnet
from uqzoo.spec import ACTIVATIONS, MLPSpec

# torch.func's first use runs torch.jit.script inside torch, which torch 2.13
# itself deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning")

HIDDEN_BY_DEPTH = {0: (), 1: (7,), 2: (10, 10), 3: (6, 5, 4)}


def make_case(depth: int, activation: str, n_classes: int, seed: int, num_draws: int = 4):
    spec = MLPSpec(5, n_classes, hidden=HIDDEN_BY_DEPTH[depth], activation=activation)
    rng = np.random.default_rng(seed)
    # Weights ~3x torch's init scale so logits are O(1-10) and every
    # activation regime (saturation, relu's zero side) is exercised.
    draws = {k: (3 * v).astype(np.float32)
             for k, v in spec.init_params(seed=seed, num=num_draws).items()}
    X = rng.normal(size=(64, 5)).astype(np.float32)
    return spec, draws, X


CASES = [(d, a, k) for d in HIDDEN_BY_DEPTH for a in ACTIVATIONS for k in (2, 4)]


@pytest.mark.parametrize(("depth", "activation", "n_classes"), CASES)
def test_torch_and_jax_forwards_match_float64_within_float32_rounding(depth, activation,
                                                                      n_classes):
    spec, draws, X = make_case(depth, activation, n_classes, seed=depth * 10 + n_classes)
    ref_logits, ref_bound = zip(*(forward64(spec, {k: v[s] for k, v in draws.items()}, X)
                                  for s in range(4)), strict=True)
    ref_logits, ref_bound = np.stack(ref_logits), np.stack(ref_bound)

    torch_logits = tnet.forward_logits(spec, tnet.to_tensors(draws),
                                       torch.from_numpy(X)).numpy()
    jax_logits = np.asarray(jnet.forward_logits(
        spec, {k: jnp.asarray(v) for k, v in draws.items()}, jnp.asarray(X)))
    assert torch_logits.shape == jax_logits.shape == (4, 64, spec.n_outputs)
    assert torch_logits.dtype == jax_logits.dtype == np.float32
    # The bound is for the float64 value of the float32 result; add the final
    # rounding to float32 itself.
    tol = ref_bound + U32 * np.abs(ref_logits)
    assert np.all(np.abs(torch_logits - ref_logits) <= tol)
    assert np.all(np.abs(jax_logits - ref_logits) <= tol)

    ref_p, ref_p_bound = draws_proba64(spec, draws, X)
    torch_p = tnet.predict_proba(spec, tnet.to_tensors(draws), torch.from_numpy(X)).numpy()
    jax_p = np.asarray(jnet.predict_proba(spec, {k: jnp.asarray(v) for k, v in draws.items()},
                                          jnp.asarray(X)))
    assert torch_p.shape == jax_p.shape == (4, 64, n_classes)
    assert np.all(np.abs(torch_p - ref_p) <= ref_p_bound)
    assert np.all(np.abs(jax_p - ref_p) <= ref_p_bound)
    # and so the two backends agree with each other to twice the bound
    assert np.all(np.abs(torch_p - jax_p) <= 2 * ref_p_bound)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_single_parameter_set_equals_first_draw(n_classes):
    spec, draws, X = make_case(2, "tanh", n_classes, seed=3)
    one = {k: v[0] for k, v in draws.items()}
    stacked = tnet.forward_logits(spec, tnet.to_tensors(draws), torch.from_numpy(X))
    single = tnet.forward_logits(spec, tnet.to_tensors(one), torch.from_numpy(X))
    assert single.shape == (64, spec.n_outputs)
    _, bound = forward64(spec, one, X)
    assert np.all(np.abs(single.numpy() - stacked[0].numpy()) <= 2 * bound)
    jax_single = jnet.forward_logits(spec, {k: jnp.asarray(v) for k, v in one.items()},
                                     jnp.asarray(X))
    assert jax_single.shape == (64, spec.n_outputs)


@pytest.mark.parametrize("n_classes", [2, 5])
def test_probabilities_sum_to_one_and_binary_is_one_minus_p_p(n_classes):
    spec, draws, X = make_case(1, "relu", n_classes, seed=5)
    p = tnet.predict_proba(spec, tnet.to_tensors(draws), torch.from_numpy(X)).numpy()
    assert np.all(p >= 0) and np.all(p <= 1)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=(4 + n_classes) * U32 * 2)
    if n_classes == 2:
        z = tnet.forward_logits(spec, tnet.to_tensors(draws), torch.from_numpy(X)).numpy()
        p1 = 1 / (1 + np.exp(-z[..., 0].astype(np.float64)))
        np.testing.assert_allclose(p[..., 1], p1, rtol=8 * U32, atol=0)
        np.testing.assert_allclose(p[..., 0], 1 - p1, rtol=8 * U32, atol=1e-45)


def test_binary_probabilities_are_exact_in_the_tails():
    """σ(-z) instead of 1 - σ(z): the small class probability keeps its precision."""
    spec = MLPSpec(1, 2, hidden=())
    params = {"layers.0.weight": np.array([[1.0]], np.float32),
              "layers.0.bias": np.array([0.0], np.float32)}
    X = np.array([[30.0], [-30.0]], np.float32)
    p = tnet.predict_proba(spec, tnet.to_tensors(params), torch.from_numpy(X)).numpy()
    np.testing.assert_allclose(p[0, 0], np.exp(-30.0), rtol=8 * U32)
    np.testing.assert_allclose(p[1, 1], np.exp(-30.0), rtol=8 * U32)
    pj = np.asarray(jnet.predict_proba(spec, {k: jnp.asarray(v) for k, v in params.items()},
                                       jnp.asarray(X)))
    np.testing.assert_allclose(pj[0, 0], np.exp(-30.0), rtol=8 * U32)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_jax_log_likelihood_matches_float64(n_classes):
    spec, draws, X = make_case(2, "tanh", n_classes, seed=11, num_draws=3)
    y = np.random.default_rng(0).integers(0, n_classes, size=X.shape[0])
    ll = np.asarray(jnet.log_likelihood(spec, {k: jnp.asarray(v) for k, v in draws.items()},
                                        jnp.asarray(X), jnp.asarray(y)))
    p, _bound = draws_proba64(spec, draws, X)
    ref = np.log(p[:, np.arange(len(y)), y]).sum(axis=1)
    # d log p / d z is bounded by 1 (binary) or 2 (softmax) per point, plus
    # float32 rounding of the N-term sum.
    logit_err = np.stack([forward64(spec, {k: v[s] for k, v in draws.items()}, X)[1]
                          for s in range(3)]).max(axis=-1)
    tol = 2 * logit_err.sum(axis=1) + 8 * U32 * np.abs(np.log(p[:, np.arange(len(y)), y])).sum(1)
    assert ll.shape == (3,)
    assert np.all(np.abs(ll - ref) <= tol)



@pytest.mark.parametrize("prior", ["fan_in", "iid"])
def test_jax_log_prior_is_the_gaussian_density_of_every_parameter(prior):
    from scipy import stats

    spec = MLPSpec(4, 3, hidden=(5,), prior_scale=0.7, prior=prior)
    draws = spec.init_params(seed=3, num=2)
    got = np.asarray(jnet.log_prior(spec, {k: jnp.asarray(v) for k, v in draws.items()}))
    # weights N(0, 0.7²/fan_in) under "fan_in", every parameter N(0, 0.7²) under "iid"
    sds = {k: 0.7 / np.sqrt(v.shape[-1]) if prior == "fan_in" and k.endswith("weight")
           else 0.7 for k, v in draws.items()}
    ref = [sum(stats.norm(0, sds[k]).logpdf(v[s].astype(np.float64)).sum()
               for k, v in draws.items()) for s in range(2)]
    assert got.shape == (2,)
    # float32 sum of n_params terms of size up to |log pdf|
    terms = np.abs(np.concatenate([stats.norm(0, sds[k]).logpdf(v[0]).ravel()
                                   for k, v in draws.items()]))
    np.testing.assert_allclose(got, ref, rtol=0, atol=gamma(spec.n_params + 4) * terms.sum() * 4)


def test_jax_forward_with_shared_rows_equals_per_network_rows_and_applies_masks():
    """The fused first layer (one product for all stacked networks) computes the
    same logits as giving each network its own copy of the rows, to rounding."""
    spec, draws, X = make_case(2, "tanh", 2, seed=5, num_draws=4)
    params = {k: jnp.asarray(v) for k, v in draws.items()}
    shared = np.asarray(jnet.forward_logits(spec, params, jnp.asarray(X)))
    own = np.asarray(jnet.forward_logits(spec, params, jnp.broadcast_to(X, (4, *X.shape))))
    ref, bound = zip(*(forward64(spec, {k: v[s] for k, v in draws.items()}, X)
                       for s in range(4)), strict=True)
    tol = 2 * (np.stack(bound) + U32 * np.abs(np.stack(ref)))
    assert np.all(np.abs(shared - own) <= tol)
    # A mask that drops every unit of the last hidden layer leaves only the bias,
    # exactly: zeros times finite weights sum to zero in any order or kernel.
    masks = [jnp.ones((1, 10)), jnp.zeros((1, 10))]
    dropped = np.asarray(jnet.forward_logits(spec, params, jnp.asarray(X), hidden_masks=masks))
    np.testing.assert_allclose(dropped, np.broadcast_to(draws["layers.2.bias"][:, None, :],
                                                        dropped.shape), rtol=0, atol=0)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_torch_and_jax_likelihood_and_prior_agree(n_classes):
    """One likelihood and prior per framework; the two frameworks agree to rounding."""
    spec, draws, X = make_case(2, "tanh", n_classes, seed=13, num_draws=3)
    y = np.random.default_rng(2).integers(0, n_classes, size=X.shape[0])
    tp, jp = tnet.to_tensors(draws), {k: jnp.asarray(v) for k, v in draws.items()}
    lt = tnet.log_likelihood(spec, tp, torch.from_numpy(X), torch.from_numpy(y)).numpy()
    lj = np.asarray(jnet.log_likelihood(spec, jp, jnp.asarray(X), jnp.asarray(y)))
    p, _ = draws_proba64(spec, draws, X)
    logit_err = np.stack([forward64(spec, {k: v[s] for k, v in draws.items()}, X)[1]
                          for s in range(3)]).max(axis=-1)
    per_side = 2 * logit_err.sum(axis=1) + 8 * U32 * np.abs(
        np.log(p[:, np.arange(len(y)), y])).sum(1)
    assert lt.shape == lj.shape == (3,)
    assert np.all(np.abs(lt - lj) <= 2 * per_side)
    pt, pj = tnet.log_prior(spec, tp).numpy(), np.asarray(jnet.log_prior(spec, jp))
    np.testing.assert_allclose(pt, pj, rtol=4 * gamma(spec.n_params + 4))

def test_mlp_module_state_dict_matches_layout_and_forward():
    spec = MLPSpec(4, 3, hidden=(6, 5), activation="sigmoid")
    module = tnet.MLP(spec)
    state = module.state_dict()
    assert {k: tuple(v.shape) for k, v in state.items()} == spec.param_shapes()
    assert list(state) == list(spec.param_shapes())
    X = torch.from_numpy(np.random.default_rng(1).normal(size=(9, 4)).astype(np.float32))
    module.eval()
    with torch.no_grad():
        expected = module(X)
    got = tnet.forward_logits(spec, dict(state), X)
    # nn.Linear fuses the bias (addmm), the shared forward may not: both are
    # within the float32 bound of the exact logits, so within twice it of
    # each other.
    params = {k: v.numpy()[None] for k, v in state.items()}
    ref, bound = forward64(spec, {k: v[0] for k, v in params.items()}, X.numpy())
    tol = 2 * (bound + U32 * np.abs(ref))
    assert np.all(np.abs(got.numpy() - expected.numpy()) <= tol)


# -- the linearised forward (Laplace "glm" predictive) ----------------------------------

def _jvp_reference(spec, anchor, draws, X):
    """f(θ*) + J f(θ*) (θ_s - θ*) by torch.func.jvp, float64, one draw at a time."""
    anchor64 = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in anchor.items()}
    X64 = torch.as_tensor(X, dtype=torch.float64)
    out = []
    for s in range(next(iter(draws.values())).shape[0]):
        tangent = {k: torch.as_tensor(draws[k][s], dtype=torch.float64) - anchor64[k]
                   for k in anchor64}
        primal, jvp = torch.func.jvp(lambda p: tnet.forward_logits(spec, p, X64),
                                     (anchor64,), (tangent,))
        out.append(primal + jvp)
    return torch.stack(out).numpy()


@pytest.mark.parametrize(("depth", "activation", "n_classes"),
                         [(d, a, k) for d in (0, 1, 2, 3) for a in ACTIVATIONS
                          for k in (2, 3)])
def test_linearized_logits_equal_torch_func_jvp_in_float64(depth, activation, n_classes):
    spec, draws, X = make_case(depth, activation, n_classes, seed=depth + 20, num_draws=3)
    anchor = {k: v.mean(axis=0) for k, v in draws.items()}
    got = tnet.linearized_logits(
        spec, {k: torch.as_tensor(v, dtype=torch.float64) for k, v in anchor.items()},
        {k: torch.as_tensor(v, dtype=torch.float64) for k, v in draws.items()},
        torch.as_tensor(X, dtype=torch.float64)).numpy()
    ref = _jvp_reference(spec, anchor, draws, X)
    assert got.shape == (3, 64, spec.n_outputs)
    # Both are exact formulas evaluated in float64 in different orders: they
    # agree to float64 rounding of sums of O(10) terms of magnitude O(10).
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))


def test_linearized_logits_are_thread_safe():
    """The predictive engine calls it from worker threads at once.

    torch's forward-mode AD keeps its levels process-wide, so concurrent
    ``torch.func.jvp`` calls fail or mix tangents; every thread must get
    its own exact answer.
    """
    import concurrent.futures

    spec, draws, X = make_case(2, "tanh", 3, seed=31, num_draws=3)
    anchor = {k: v.mean(axis=0) for k, v in draws.items()}
    # Four different inputs, so a mixed-up tangent or primal shows.
    inputs = [X + shift for shift in range(4)]
    refs = [_jvp_reference(spec, anchor, draws, x) for x in inputs]
    anchor64 = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in anchor.items()}
    draws64 = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in draws.items()}

    def run(i):
        return tnet.linearized_logits(spec, anchor64, draws64,
                                      torch.as_tensor(inputs[i % 4], dtype=torch.float64)).numpy()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(32)))
    for i, got in enumerate(results):
        ref = refs[i % 4]
        # As in the float64 comparison above: rounding of O(10)-term sums.
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))


def test_linearized_logits_of_a_linear_model_are_the_model():
    """With no hidden layer the network is linear in θ, so linearising is exact."""
    spec, draws, X = make_case(0, "tanh", 3, seed=2)
    anchor = {k: v[0] for k, v in draws.items()}
    def as64(d):
        return {k: torch.as_tensor(v, dtype=torch.float64) for k, v in d.items()}
    X64 = torch.as_tensor(X, dtype=torch.float64)
    lin = tnet.linearized_logits(spec, as64(anchor), as64(draws), X64)
    exact = tnet.forward_logits(spec, as64(draws), X64)
    torch.testing.assert_close(lin, exact, rtol=0, atol=1e-12)


def test_linearized_logits_at_the_anchor_are_the_network():
    spec, draws, X = make_case(2, "tanh", 2, seed=4)
    anchor = {k: v[1] for k, v in draws.items()}
    def as64(d):
        return {k: torch.as_tensor(v, dtype=torch.float64) for k, v in d.items()}
    X64 = torch.as_tensor(X, dtype=torch.float64)
    same = {k: np.repeat(v[None], 2, axis=0) for k, v in anchor.items()}
    lin = tnet.linearized_logits(spec, as64(anchor), as64(same), X64)
    net = tnet.forward_logits(spec, as64(anchor), X64)
    torch.testing.assert_close(lin, net.expand(2, -1, -1), rtol=0, atol=1e-12)


def test_linearized_logits_match_finite_differences():
    """Independent of autograd: (f(θ* + εδ) - f(θ* - εδ)) / 2ε → J δ, error O(ε²)."""
    spec, draws, X = make_case(2, "sigmoid", 2, seed=8, num_draws=1)
    anchor = {k: v[0] for k, v in draws.items()}
    rng = np.random.default_rng(0)
    delta = {k: rng.normal(size=v.shape) for k, v in anchor.items()}
    def as64(d):
        return {k: torch.as_tensor(v, dtype=torch.float64) for k, v in d.items()}
    X64 = torch.as_tensor(X, dtype=torch.float64)
    def f(params):
        return tnet.forward_logits(spec, as64(params), X64).numpy()
    eps = 1e-5
    plus = {k: anchor[k] + eps * delta[k] for k in anchor}
    minus = {k: anchor[k] - eps * delta[k] for k in anchor}
    jvp_fd = (f(plus) - f(minus)) / (2 * eps)
    target = {k: (anchor[k] + delta[k])[None] for k in anchor}
    lin = tnet.linearized_logits(spec, as64(anchor), as64(target), X64).numpy()[0]
    # Central differences: truncation ~ε²·|f'''| and cancellation ~u64·|f|/ε,
    # both below 1e-8 for these O(10) logits.
    np.testing.assert_allclose(lin - f(anchor), jvp_fd, rtol=0, atol=1e-6)


def test_jax_forward_is_jittable_and_vmappable():
    spec, draws, X = make_case(2, "tanh", 2, seed=1)
    jd = {k: jnp.asarray(v) for k, v in draws.items()}
    batched = jax.jit(lambda p, x: jnet.forward_logits(spec, p, x))(jd, jnp.asarray(X))
    mapped = jax.vmap(lambda p: jnet.forward_logits(spec, p, jnp.asarray(X)))(jd)
    ref = np.stack([forward64(spec, {k: v[s] for k, v in draws.items()}, X)[0]
                    for s in range(4)])
    tol = np.stack([forward64(spec, {k: v[s] for k, v in draws.items()}, X)[1]
                    for s in range(4)]) + U32 * np.abs(ref)
    assert np.all(np.abs(np.asarray(batched) - ref) <= tol)
    assert np.all(np.abs(np.asarray(mapped) - ref) <= tol)
