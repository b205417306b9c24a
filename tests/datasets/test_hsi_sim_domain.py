"""hsi-sim's held-out domain: the test half under another illumination and clutter mix,
its truth exact (checked against the generating formula, written out independently)."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

import uqzoo as uz
from uqzoo.datasets import hsi_sim
from uqzoo.errors import InvalidInputError

SMALL = dict(size=32, n_bands=6, progress_bar=False, standardize=False)


@pytest.fixture(scope="module")
def scenes():
    return {shift: uz.datasets.load("hsi-sim", seed=1, domain_shift=shift, **SMALL)
            for shift in ("none", "weak", "strong")}


def _bayes_posterior(data, X_raw):
    """P(y = 1 | x') by brute force: a full-covariance Gaussian per (a_vis, c), weighted by
    the (a_vis, c, y) frequencies of the test half read from the scene's maps."""
    opts = data.meta["options"]
    shift = data.meta.get("domain_shift", {"gain": 1.0, "offset": 0.0})
    g, off = shift["gain"], shift["offset"]
    band_idx = np.unique(np.round(np.linspace(0, 210, opts["n_bands"])).astype(np.int64))
    model = hsi_sim.SceneModel(opts["target"], opts["noise"], band_idx)
    half = opts["size"] // 2
    visible = data.meta["visible_abundance"][:, half:].ravel()
    component = data.meta["component"][:, half:].ravel()
    hits = np.round(data.meta["abundance"][:, half:].ravel() * hsi_sim.SUPERSAMPLE ** 2)
    label = (hits >= opts["a_min"] * hsi_sim.SUPERSAMPLE ** 2 - 1e-9).astype(int)
    mass = np.zeros((X_raw.shape[0], 2))
    B = band_idx.size
    for (v, c, y_), count in zip(*np.unique(np.stack([visible, component, label], 1), axis=0,
                                            return_counts=True), strict=True):
        c = int(c)
        cov_c = (model.eigvecs[c] * model.eigvals[c]) @ model.eigvecs[c].T
        mean = g * (v * model.target + (1 - v) * model.means[c]) + off
        cov = g ** 2 * ((1 - v) ** 2 * cov_c + model.noise ** 2 * np.eye(B))
        mass[:, int(y_)] += count * np.exp(multivariate_normal.logpdf(X_raw, mean, cov))
    return mass[:, 1] / mass.sum(axis=1)


@pytest.mark.parametrize("shift", ["none", "weak", "strong"])
def test_held_out_domain_truth_is_the_exact_bayes_posterior(scenes, shift):
    data = scenes[shift]
    X_raw = np.asarray(data.X_test, dtype=np.float64)
    # float32 storage of x moves the log-density by ~1e-5 at most here
    np.testing.assert_allclose(data.p_true_test[:, 1], _bayes_posterior(data, X_raw),
                               atol=1e-4)


@pytest.mark.parametrize("shift", ["weak", "strong"])
def test_shift_moves_the_test_inputs_and_leaves_training_alone(scenes, shift):
    none, shifted = scenes["none"], scenes[shift]
    domain = hsi_sim.DOMAIN_SHIFTS[shift]
    np.testing.assert_array_equal(shifted.X_train, none.X_train)
    np.testing.assert_array_equal(shifted.y_train, none.y_train)
    np.testing.assert_array_equal(shifted.y_test, none.y_test)
    half = 16
    same = (shifted.meta["component"][:, half:] == none.meta["component"][:, half:]).ravel()
    assert 0 < same.sum() < same.size          # the clutter mix changed, not everywhere
    # where the component is unchanged the pixel is the same draw, seen as g x + c
    np.testing.assert_allclose(shifted.X_test[same],
                               domain["gain"] * none.X_test[same] + domain["offset"],
                               rtol=1e-6, atol=1e-7)
    assert shifted.meta["domain_shift"] == {"name": shift, **domain}


def test_perturbation_truth_composes_with_the_domain_shift(scenes):
    data = scenes["strong"]
    D = data.n_features
    again = hsi_sim.shifted_p_true(data, np.asarray(data.X_test, np.float64), np.eye(D),
                                   np.zeros(D), np.zeros(D))
    # the identity change of the shifted pixels is no change (float32 storage of x aside);
    # without composing with the domain shift the truth would be that of g x + c seen as x
    np.testing.assert_allclose(again, data.p_true_test[:, 1], atol=1e-4)


def test_unknown_domain_shift_is_refused():
    with pytest.raises(InvalidInputError, match="domain_shift must be one of"):
        uz.datasets.load("hsi-sim", domain_shift="medium", **SMALL)
