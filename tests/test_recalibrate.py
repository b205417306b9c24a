"""Post-hoc recalibration (issue 15): temperature and vector scaling against closed
forms and known truth, the engine applying the map to every draw, save/load
(old files included), and clear errors for bad input.

Tolerances come from the optimiser's own stopping gradient (|Δθ| ≤ |g| / curvature
near a minimum), from float32 rounding, or from the Fisher information of
the fitted parameter -- never a bare constant.
"""

import contextlib
import math
import warnings

import h5py
import numpy as np
import pytest
from scipy import optimize, special, stats

import uqzoo as uz
from _float32_reference import U32, forward64, proba64
from uqzoo.datasets import ClassificationData
from uqzoo.predictive import logit_draws
from uqzoo.recalibrate import calibration_split
from uqzoo.testing import tiny_data
from uqzoo.transform import LogitTransform

# A seeded statistical check may fail by chance with this probability at most.
FALSE_ALARM = 1e-4
Z = float(stats.norm.isf(FALSE_ALARM / 2))


def linear_posterior(weight, bias, n_draws=None):
    """A posterior of logistic/softmax regression (no hidden layer) with given draws.

    ``weight`` (S, n_out, D) or (n_out, D); its logits are exactly X @ w.T + b.
    """
    weight = np.asarray(weight, dtype=np.float32)
    bias = np.asarray(bias, dtype=np.float32)
    if weight.ndim == 2:
        weight, bias = weight[None], bias[None]
    n_out, D = weight.shape[1:]
    spec = uz.MLPSpec(D, 2 if n_out == 1 else n_out, hidden=())
    return uz.Posterior(spec=spec, method="map", config={}, seed=0,
                        draws={"layers.0.weight": weight, "layers.0.bias": bias})


def constant_logit_case(z0, n, n_pos):
    """n points whose logit is z0 (one draw), n_pos of them labelled 1."""
    post = linear_posterior(np.zeros((1, 1)), np.array([z0]))
    X = np.zeros((n, 1), dtype=np.float32)
    y = (np.arange(n) < n_pos).astype(int)
    return post, X, y


# -- closed forms -------------------------------------------------------------------------

@pytest.mark.parametrize("z0, n, n_pos", [(2.0, 1000, 700), (-3.0, 500, 120), (0.5, 80, 61)])
def test_temperature_matches_the_closed_form_for_a_single_logit(z0, n, n_pos):
    # One logit z0 for every point, n_pos of n labelled 1: the NLL is minimised
    # where σ(z0 / T) = n_pos / n, i.e. T* = z0 / logit(n_pos / n), exactly.
    post, X, y = constant_logit_case(z0, n, n_pos)
    fitted = uz.recalibrate(post, method="temperature", calibration=(X, y))
    f = n_pos / n
    T_star = z0 / special.logit(f)
    info = fitted.logit_transform.info
    # The mean NLL as a function of u = log T has curvature (z0/T)² f (1 − f) at
    # T*; L-BFGS stopped at gradient g, so |u − u*| ≤ |g| / curvature to first
    # order (twice that covers the second-order term).
    curvature = (z0 / T_star) ** 2 * f * (1 - f)
    bound = 2 * info["gradient_max"] / curvature + 4 * np.finfo(float).eps
    assert info["converged"]
    assert abs(math.log(fitted.logit_transform.temperature) - math.log(T_star)) <= bound
    # and NLL at the optimum is the binary entropy of f
    entropy = -(f * math.log(f) + (1 - f) * math.log(1 - f))
    # the excess NLL near the minimum is curvature/2 · Δu², plus float64 rounding
    assert abs(info["nll_after"] - entropy) <= curvature * bound**2 / 2 \
        + 8 * np.finfo(float).eps * entropy


def test_temperature_solves_the_score_equation_for_several_classes():
    # K = 3, every point with logits z: the optimal T solves
    # Σ_k f_k z_k = Σ_k softmax(z / T)_k z_k (observed = expected logit),
    # found here independently by bracketing root search.
    z = np.array([1.5, -0.5, 0.25])
    counts = np.array([330, 120, 150])
    n = counts.sum()
    f = counts / n
    weight = np.zeros((3, 1))
    post = linear_posterior(weight, z)
    X = np.zeros((n, 1), dtype=np.float32)
    y = np.repeat(np.arange(3), counts)
    fitted = uz.recalibrate(post, method="temperature", calibration=(X, y))

    def score(log_T):
        p = special.softmax(z / math.exp(log_T))
        return f @ z - p @ z

    u_star = optimize.brentq(score, -5, 5, xtol=1e-14)
    # curvature of the mean NLL in u = log T: Var_p(z / T) at the optimum
    p = special.softmax(z * math.exp(-u_star))
    curvature = float(p @ (z * math.exp(-u_star)) ** 2 - (p @ (z * math.exp(-u_star))) ** 2)
    bound = 2 * fitted.logit_transform.info["gradient_max"] / curvature + 1e-12
    assert abs(math.log(fitted.logit_transform.temperature) - u_star) <= bound


def newton_logistic(z, y, iterations=50):
    """Exact MLE of y ~ Bernoulli(σ(w z + b)) by Newton's method (float64), and its Hessian."""
    A = np.stack([z, np.ones_like(z)], axis=1)
    theta = np.array([1.0, 0.0])
    for _ in range(iterations):
        p = special.expit(A @ theta)
        grad = A.T @ (p - y) / len(y)
        H = (A * (p * (1 - p))[:, None]).T @ A / len(y)
        theta = theta - np.linalg.solve(H, grad)
    return theta, H


def test_vector_scaling_of_one_logit_is_platt_scaling():
    # Two classes: vector scaling is a logistic regression of y on the logit z.
    rng = np.random.default_rng(1)
    n = 600
    x = rng.normal(size=n)
    y = (rng.random(n) < special.expit(0.7 * 2.0 * x - 0.3)).astype(int)
    post = linear_posterior(np.array([[2.0]]), np.array([0.0]))
    fitted = uz.recalibrate(post, method="vector", calibration=(x[:, None], y))
    z = np.float32(2.0) * x.astype(np.float32)                 # the engine's float32 logits
    theta, H = newton_logistic(z.astype(np.float64), y)
    got = np.array([fitted.logit_transform.scale[0], fitted.logit_transform.shift[0]])
    # |θ − θ*| ≤ ||H⁻¹|| |g|: L-BFGS's stopping gradient through the inverse curvature
    g = fitted.logit_transform.info["gradient_max"]
    bound = 2 * np.linalg.norm(np.linalg.inv(H), 2) * g * math.sqrt(2) + 1e-10
    assert np.linalg.norm(got - theta) <= bound


# -- known truth ----------------------------------------------------------------------------

def logistic_data(n_train, n_test, w_true, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, len(w_true)))
    p1 = special.expit(X @ w_true)
    y = (rng.random(len(p1)) < p1).astype(int)
    p_true = np.stack([1 - p1, p1], axis=1)[n_train:]
    return ClassificationData(X[:n_train], y[:n_train], X[n_train:], y[n_train:], n_classes=2,
                              p_true_test=p_true, name="logistic")


def test_temperature_recovers_the_overconfidence_of_a_known_model():
    # Labels from σ(x·w*); the posterior's single draw has weights T*·w*, so its
    # logits are T* times the true ones and the best temperature is T*. The MLE
    # of β = 1/T has standard error 1/sqrt(I), I = Σ z_i² p_i (1 − p_i) (Fisher).
    w_true = np.array([1.0, -2.0, 0.5])
    T_star = 3.0
    data = logistic_data(5000, 10, w_true, seed=2)
    post = linear_posterior((T_star * w_true)[None, :], np.zeros(1))
    fitted = uz.recalibrate(post, data, method="temperature", seed=0, calibration_fraction=0.5)
    info = fitted.logit_transform.info
    assert info["calibration"] == "training split" and info["n_calibration"] == 2500
    beta = 1 / fitted.logit_transform.temperature
    z = np.asarray(data.X_train, dtype=np.float64) @ (T_star * w_true)
    p = special.expit(z / T_star)
    se = 1 / math.sqrt(np.sum(z**2 * p * (1 - p)) / 2)        # half the points calibrate
    assert abs(beta - 1 / T_star) < Z * se


def test_the_fit_minimises_the_nll_of_the_posterior_mean_predictive():
    # Several draws: the objective is −log mean_s σ(±z_s / T); compute it
    # independently and check T sits at its minimum.
    rng = np.random.default_rng(3)
    S, n = 40, 400
    weight = (2.0 + rng.normal(size=(S, 1, 2))).astype(np.float32)
    bias = rng.normal(size=(S, 1)).astype(np.float32) * 0.3
    post = linear_posterior(weight, bias)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (rng.random(n) < special.expit(X @ np.array([1.0, 1.5]))).astype(int)
    fitted = uz.recalibrate(post, method="temperature", calibration=(X, y))
    z = logit_draws(post.spec, post.draws, X)[..., 0].astype(np.float64)     # (S, n)
    sign = 2 * y - 1

    def nll(log_T):
        log_p = -np.logaddexp(0, -sign * z / math.exp(log_T))
        return -np.mean(special.logsumexp(log_p, axis=0) - math.log(S))

    u_hat = math.log(fitted.logit_transform.temperature)
    xatol = 1e-10
    u_best = optimize.minimize_scalar(nll, bounds=(u_hat - 1, u_hat + 1), method="bounded",
                                      options={"xatol": xatol}).x
    # the NLL's curvature at the optimum, by central differences (h = 1e-3)
    h = 1e-3
    curvature = (nll(u_best + h) - 2 * nll(u_best) + nll(u_best - h)) / h**2
    # Two evaluations of the NLL (numpy here, torch in the fit) differ by
    # rounding δ ≈ n_terms ε |NLL|, which blurs the minimiser by sqrt(2δ / curvature);
    # plus L-BFGS's stopping gradient through the curvature and the search's xatol.
    blur = math.sqrt(2 * S * np.finfo(float).eps * nll(u_best) / curvature)
    bound = 2 * fitted.logit_transform.info["gradient_max"] / curvature + blur + 2 * xatol
    assert abs(u_hat - u_best) <= bound
    assert fitted.logit_transform.info["nll_after"] == pytest.approx(nll(u_hat), rel=1e-9)
    assert fitted.logit_transform.info["nll_before"] == pytest.approx(nll(0.0), rel=1e-9)


# -- the engine applies the map to every draw ---------------------------------------------------

@pytest.mark.parametrize("n_classes", [2, 4])
def test_every_draw_and_every_engine_path_sees_the_transform(n_classes):
    data = tiny_data(n_classes=n_classes, n_train=60, n_test=30)
    spec = uz.MLPSpec(data.n_features, n_classes, hidden=(4,))
    draws = spec.init_params(seed=0, num=25)
    post = uz.Posterior(spec=spec, method="map", config={}, seed=0, draws=draws)
    n_out = spec.n_outputs
    transform = LogitTransform("vector", np.linspace(0.5, 2.0, n_out),
                               np.linspace(-0.3, 0.4, n_out))
    recal = uz.Posterior(spec=spec, method="map", config={}, seed=0, draws=draws,
                         logit_transform=transform)
    X = np.asarray(data.X_test)
    def map_rounding(z, z_map):
        # w and b rounded to float32 (half an ulp each), then one float32
        # multiply and one add (half an ulp of each result)
        return U32 * (2 * np.abs(transform.scale * z) + np.abs(transform.shift)
                      + np.abs(z_map))

    # float64 reference per draw with the rigorous float32 bound of the forward,
    # then the map: |w| times the forward's error, plus the map's own rounding.
    probs_ref, bounds = [], []
    for s in range(recal.num_draws):
        z, dz = forward64(spec, {k: v[s] for k, v in draws.items()}, X)
        z_map = transform.apply(z)
        dz_map = np.abs(transform.scale) * dz + map_rounding(z, z_map)
        p, dp = proba64(spec, z_map, dz_map)
        probs_ref.append(p)
        bounds.append(np.broadcast_to(dp, p.shape))
    ref, bound = np.stack(probs_ref), np.stack(bounds)
    probs = recal.predict_proba_draws(X)
    assert np.all(np.abs(probs - ref) <= bound)
    # summarize: the mean and the quantiles are 1-Lipschitz in the max norm of the draws
    summary = recal.summarize(X, levels=(0.8,))
    assert np.all(np.abs(summary.mean - ref.mean(axis=0)) <= bound.max(axis=0))
    lo, hi = summary.interval(0.8)
    q = np.quantile(ref, [0.1, 0.9], axis=0)
    assert np.all(np.abs(lo - q[0]) <= bound.max(axis=0))
    assert np.all(np.abs(hi - q[1]) <= bound.max(axis=0))
    # the logits themselves, and the untransformed posterior untouched
    raw = logit_draws(spec, draws, X)
    got = logit_draws(spec, draws, X, logit_transform=transform)
    expected = transform.apply(raw.astype(np.float64))
    assert np.all(np.abs(got - expected) <= map_rounding(raw, expected))
    assert post.logit_transform is None
    np.testing.assert_array_equal(post.predict_proba_draws(X), uz.proba_draws(spec, draws, X))


def test_a_recalibrated_posterior_is_the_same_method_and_evaluates():
    data = tiny_data(n_train=200, n_test=40)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(3,))
    post = uz.Posterior(spec=spec, method="ensemble", config={"num_members": 5}, seed=7,
                        draws=spec.init_params(seed=1, num=30))
    recal = uz.recalibrate(post, data, method="vector", seed=1)
    assert (recal.method, recal.config, recal.seed, recal.num_draws) == \
        (post.method, post.config, post.seed, post.num_draws)
    assert "LogitTransform(vector" in repr(recal)
    report = uz.evaluate(recal, data, levels=(0.8,))
    assert report.method == "ensemble"
    assert np.all(np.isfinite(report.table.value[report.table.metric == "nll"]))


# -- save and load ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["temperature", "vector"])
def test_a_recalibrated_posterior_saves_and_loads(tmp_path, kind):
    data = tiny_data(n_classes=3, n_train=300, n_test=20)
    spec = uz.MLPSpec(data.n_features, 3, hidden=(3,))
    rng = np.random.default_rng(0)
    one = spec.init_params(seed=2, num=1)
    draws = {k: (3 * v + 0.1 * rng.normal(size=(10, *v.shape[1:]))).astype(np.float32)
             for k, v in one.items()}
    post = uz.Posterior(spec=spec, method="map", config={}, seed=0, draws=draws)
    # labels drawn from the first draw's own softmax at temperature 2: a
    # well-posed calibration problem (random networks know nothing of tiny_data)
    X = np.asarray(data.X_train)
    z = logit_draws(spec, post.draws, X)[0].astype(np.float64)
    p = special.softmax(z / 2, axis=-1)
    y = (rng.random((len(X), 1)) > np.cumsum(p, axis=1)).sum(axis=1)
    recal = uz.recalibrate(post, method=kind, calibration=(X, y))
    recal.save(tmp_path / "recal.nc")
    back = uz.load_posterior(tmp_path / "recal.nc")
    assert back.logit_transform is not None
    assert back.logit_transform.kind == kind
    np.testing.assert_array_equal(back.logit_transform.scale, recal.logit_transform.scale)
    np.testing.assert_array_equal(back.logit_transform.shift, recal.logit_transform.shift)
    assert back.logit_transform.info == recal.logit_transform.info
    np.testing.assert_array_equal(back.predict_proba_draws(data.X_test),
                                  recal.predict_proba_draws(data.X_test))


def test_a_file_without_a_transform_loads_as_before(tmp_path):
    # Files written before recalibration existed have no 'logit_transform' attribute.
    data = tiny_data()
    spec = uz.MLPSpec(data.n_features, 2, hidden=(3,))
    post = uz.Posterior(spec=spec, method="map", config={}, seed=0,
                        draws=spec.init_params(seed=2, num=4))
    post.save(tmp_path / "post.nc")
    with h5py.File(tmp_path / "post.nc", "a") as f:
        if "logit_transform" in f.attrs:
            del f.attrs["logit_transform"]
    back = uz.load_posterior(tmp_path / "post.nc")
    assert back.logit_transform is None
    np.testing.assert_array_equal(back.predict_proba_draws(data.X_test),
                                  post.predict_proba_draws(data.X_test))


@pytest.mark.parametrize("text, needle", [
    ('{"kind": "platt", "scale": [1.0], "shift": [0.0], "info": {}}', "kind"),
    ('{"kind": "vector", "scale": [1.0, 2.0], "shift": [0.0, 0.0], "info": {}}', "n_outputs"),
    ('{"kind": "temperature", "scale": [-1.0], "shift": [0.0], "info": {}}', "temperature"),
    ('{"kind": "vector", "scale": ["a"], "shift": [0.0], "info": {}}', "scale"),
    ('[1, 2]', "logit_transform"),
])
def test_a_damaged_transform_in_a_file_is_a_clear_error(tmp_path, text, needle):
    data = tiny_data()
    spec = uz.MLPSpec(data.n_features, 2, hidden=(3,))
    post = uz.Posterior(spec=spec, method="map", config={}, seed=0,
                        draws=spec.init_params(seed=2, num=4),
                        logit_transform=LogitTransform.from_temperature(2.0, 1))
    post.save(tmp_path / "post.nc")
    with h5py.File(tmp_path / "post.nc", "a") as f:
        f.attrs["logit_transform"] = text
    with pytest.raises(uz.FileFormatError, match=needle):
        uz.load_posterior(tmp_path / "post.nc")


# -- the calibration split ---------------------------------------------------------------------

def test_calibration_split_is_stratified_disjoint_and_seeded():
    data = tiny_data(n_classes=3, n_train=300, n_test=20)
    fit_data, (X_cal, y_cal) = calibration_split(data, 0.25, seed=4)
    assert fit_data.n_train + len(y_cal) == data.n_train
    np.testing.assert_array_equal(fit_data.X_test, data.X_test)
    counts = np.bincount(data.y_train, minlength=3)
    np.testing.assert_array_equal(np.bincount(y_cal, minlength=3), np.round(0.25 * counts))
    # the held-out rows are exactly the training rows missing from fit_data
    rows = {tuple(r) for r in np.asarray(data.X_train)}
    kept = {tuple(r) for r in np.asarray(fit_data.X_train)}
    assert kept.isdisjoint({tuple(r) for r in X_cal}) and kept | {tuple(r) for r in X_cal} == rows
    again = calibration_split(data, 0.25, seed=4)[1][0]
    np.testing.assert_array_equal(again, X_cal)
    assert fit_data.meta["calibration_split"] == {"calibration_fraction": 0.25, "seed": 4,
                                                  "n_calibration": len(y_cal)}


# -- bad input -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small():
    data = tiny_data(n_train=60)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(3,))
    post = uz.Posterior(spec=spec, method="map", config={}, seed=0,
                        draws=spec.init_params(seed=0, num=3))
    return post, data


@pytest.mark.parametrize("kwargs, error, needle", [
    (dict(method="platt"), uz.InvalidInputError, r"method must be one of 'temperature', "
                                                  r"'vector'; got 'platt'"),
    (dict(calibration_fraction=0.0), uz.InvalidInputError,
     r"calibration_fraction must lie in \(0.0, 1.0\), got 0.0"),
    (dict(calibration_fraction=1.0), uz.InvalidInputError, r"calibration_fraction.*got 1.0"),
    (dict(calibration_fraction=1.5), uz.InvalidInputError, r"calibration_fraction.*got 1.5"),
    (dict(calibration_fraction="0.2"), uz.InvalidTypeError, r"calibration_fraction must be a "
                                                            r"real number, got '0.2'"),
    (dict(seed=-1), uz.InvalidInputError, r"seed must be an integer in \[0, 2\*\*63\), got -1"),
    (dict(num_samples=4), uz.InvalidInputError, r"num_samples must be <= 3, got 4"),
])
def test_bad_options_are_clear_errors(small, kwargs, error, needle):
    post, data = small
    with pytest.raises(error, match=needle):
        uz.recalibrate(post, data, **kwargs)


def test_bad_calibration_data_are_clear_errors(small):
    post, data = small
    X, y = np.asarray(data.X_test), np.asarray(data.y_test)
    with pytest.raises(uz.InvalidInputError, match="cannot be combined"):
        uz.recalibrate(post, calibration=(X, y), calibration_fraction=0.3)
    with pytest.raises(uz.InvalidTypeError, match=r"calibration must be a pair \(X, y\)"):
        uz.recalibrate(post, calibration=X)
    with pytest.raises(uz.InvalidInputError, match="calibration X must have 3 columns"):
        uz.recalibrate(post, calibration=(X[:, :2], y))
    with pytest.raises(uz.InvalidInputError, match=r"calibration y must hold labels in 0..1"):
        uz.recalibrate(post, calibration=(X, y + 5))
    with pytest.raises(uz.InvalidInputError, match="needs calibration data"):
        uz.recalibrate(post)
    with pytest.raises(uz.InvalidTypeError, match="posterior must be a uqzoo Posterior"):
        uz.recalibrate("post", data)
    with pytest.raises(uz.InvalidTypeError, match="data must be a ClassificationData"):
        uz.recalibrate(post, X)


def test_recalibrate_refuses_data_it_would_ignore_and_warns_on_too_little(small):
    # issue 25 item 7: data beside calibration= was ignored silently; one class or 1-2
    # points fitted T = 0.03 without a word; read-only labels leaked torch's warning
    post, data = small
    X, y = np.asarray(data.X_test), np.asarray(data.y_test)
    with pytest.raises(uz.InvalidInputError, match=r"given both data .* and calibration=\(X, "
                                                   r"y\).*not both"):
        uz.recalibrate(post, data, calibration=(X, y))
    one, X1, y1 = constant_logit_case(2.0, 30, 30)
    with pytest.warns(uz.DataWarning, match=r"hold only class 1 \(30 points\).*every class"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", uz.ConvergenceWarning)
            uz.recalibrate(one, method="temperature", calibration=(X1, y1))
    few, X2, y2 = constant_logit_case(2.0, 2, 1)
    with pytest.warns(uz.DataWarning, match=r"hold 2 points \(fewer than 20\)"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", uz.ConvergenceWarning)
            uz.recalibrate(few, method="temperature", calibration=(X2, y2))
    frozen, X3, y3 = constant_logit_case(2.0, 100, 70)
    X3, y3 = X3.astype(np.float32), y3.astype(np.int64)
    X3.setflags(write=False)
    y3.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # torch's "non-writable array" too
        uz.recalibrate(frozen, method="temperature", calibration=(X3, y3))


def test_a_transform_of_the_wrong_size_is_refused(small):
    post, _ = small
    with pytest.raises(uz.InvalidInputError, match=r"acts on 3 logits.*has 1 \(n_outputs\)"):
        uz.Posterior(spec=post.spec, method="map", config={}, seed=0, draws=post.draws,
                     logit_transform=LogitTransform("vector", np.ones(3), np.zeros(3)))
    with pytest.raises(uz.InvalidInputError, match="one positive scale 1/T"):
        LogitTransform("temperature", [1.0, 2.0], [0.0, 0.0])
    with pytest.raises(uz.InvalidInputError, match="temperature must lie in"):
        LogitTransform.from_temperature(0.0, 1)


@pytest.mark.parametrize("n_pos", [50, 25])
def test_calibration_data_without_a_minimum_warn(n_pos):
    # 50 of 50 correct with one logit: the NLL keeps falling as T → 0; 25 of 50
    # with one non-zero logit: the best probability is 1/2, reached only as T → ∞.
    post, X, y = constant_logit_case(2.0, 50, n_pos)
    one_class = pytest.warns(uz.DataWarning, match="only class 1") if n_pos == 50 \
        else contextlib.nullcontext()
    with one_class, pytest.warns(uz.ConvergenceWarning, match="found no minimum of the NLL"):
        fitted = uz.recalibrate(post, method="temperature", calibration=(X, y))
    assert not fitted.logit_transform.info["converged"]


# -- the predictive paths outside the engine ---------------------------------------------------

def test_the_nets_links_apply_the_transform():
    import jax.numpy as jnp
    import torch

    from uqzoo.nets import jax as jnet
    from uqzoo.nets import torch as tnet
    for K in (2, 3):
        spec = uz.MLPSpec(2, K, hidden=())
        n_out = spec.n_outputs
        transform = LogitTransform("vector", np.linspace(0.5, 1.5, n_out),
                                   np.linspace(-0.2, 0.3, n_out))
        z = np.random.default_rng(0).normal(size=(5, n_out))
        want = tnet.logits_to_proba(spec, torch.as_tensor(transform.apply(z))).numpy()
        got = tnet.logits_to_proba(spec, torch.as_tensor(z), transform).numpy()
        # float64 throughout: a few ulps of the result
        np.testing.assert_allclose(got, want, rtol=0, atol=8 * np.finfo(float).eps)
        got_jax = np.asarray(jnet.logits_to_proba(spec, jnp.asarray(z, dtype=jnp.float32),
                                                  transform))
        # float32 in JAX: the map's and the link's rounding (a few ulps each)
        np.testing.assert_allclose(got_jax, want, rtol=0, atol=8 * U32 * (1 + np.abs(z).max()))


def test_mc_dropout_per_row_draws_see_the_transform():
    from uqzoo.methods.mc_dropout import per_row_proba_draws
    data = tiny_data(n_train=40, n_test=30)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(4,))
    anchor = spec.init_params(seed=0)
    draws = spec.init_params(seed=1, num=10)
    common = dict(spec=spec, method="mc_dropout", config={}, seed=0, draws=draws,
                  anchor=anchor, diagnostics={"dropout_rate": 0.2})
    T = 2.5
    raw = uz.Posterior(**common)
    recal = uz.Posterior(**common, logit_transform=LogitTransform.from_temperature(T, 1))
    p_raw = per_row_proba_draws(raw, data.X_test, num_samples=8, seed=3)[..., 1].astype(float)
    p_recal = per_row_proba_draws(recal, data.X_test, num_samples=8, seed=3)[..., 1]
    # the same masks (same seed): σ(logit(p)/T), with p's float32 rounding (a few
    # ulps) carried through the logit (slope 1/(p(1-p))) and σ (slope ≤ 1/4)
    want = special.expit(special.logit(p_raw) / T)
    bound = 4 * U32 / (p_raw * (1 - p_raw)) / (4 * T) + 4 * U32
    assert np.all(np.abs(p_recal - want) <= bound)


def test_laplace_probit_mean_sees_the_transform():
    from uqzoo.methods.laplace import probit_mean
    data = tiny_data(n_train=60, n_test=25)
    spec = uz.MLPSpec(data.n_features, 2, hidden=(3,))
    # a Laplace posterior as the method stores it: MAP anchor, diagonal precision
    P = spec.n_params
    common = dict(spec=spec, method="laplace", config={}, seed=0,
                  draws=spec.init_params(seed=1, num=4), anchor=spec.init_params(seed=0),
                  diagnostics={"posterior_precision": np.linspace(0.5, 4.0, P),
                               "subset_index": np.arange(P)})
    w, b = 0.6, 0.25
    post = uz.Posterior(**common)
    recal = uz.Posterior(**common, logit_transform=LogitTransform("vector", [w], [b]))
    X = np.asarray(data.X_test)
    p0 = probit_mean(post, X)[:, 1]
    # the raw probit mean σ(μ / √(1 + π v / 8)) and μ (the MAP's logit) give v
    mu = forward64(spec, post.anchor, X)[0][:, 0]
    s0 = special.logit(p0)
    v = np.maximum((mu / s0) ** 2 - 1, 0) * 8 / math.pi
    want = special.expit((w * mu + b) / np.sqrt(1 + math.pi * w**2 * v / 8))
    got = probit_mean(recal, X)[:, 1]
    keep = np.abs(s0) > 0.05               # v is ill-determined where μ / √(...) ≈ 0
    # float64 throughout, v recovered through a division by s0
    assert np.all(np.abs(got - want)[keep] <= 1e3 * np.finfo(float).eps / np.abs(s0[keep]))
