"""The ``tta`` method: a MAP network whose draws are its predictions on augmented inputs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.cli import main
from uqzoo.methods.tta import InputAugmentation, augment, parse_augmentations


@pytest.fixture(scope="module")
def data():
    return uz.datasets.load("sim-teacher", n_train=200, n_test=100, seed=0)


@pytest.fixture(scope="module")
def spec(data):
    return uz.MLPSpec(data.n_features, data.n_classes, hidden=(5,))


def _fit(spec, data, seed=0, **options):
    options = {"num_epochs": 100, "num_samples": 30, **options}
    return uz.fit("tta", spec, data, seed=seed, progress_bar=False, **options)


def test_registered_fits_evaluates_saves_and_loads(data, spec, tmp_path):
    assert "tta" in uz.methods.names()
    post = _fit(spec, data, augmentations=["illumination:0.9-1.1", "gaussian_noise:0.2"])
    assert post.method == "tta" and post.num_draws == 30 and post.sample_shape == (1, 30)
    assert post.config["augmentations"] == ["illumination:0.9-1.1", "gaussian_noise:0.2"]
    draws = post.predict_proba_draws(data.X_test)
    assert draws.shape == (30, data.n_test, 2)
    report = uz.evaluate(post, data, levels=(0.8,))
    assert np.isfinite(report.to_dict()["ece"])
    path = tmp_path / "tta.nc"
    post.save(path)
    loaded = uz.load_posterior(path)
    assert loaded.input_augmentation is not None
    assert loaded.input_augmentation.describe() == post.input_augmentation.describe()
    np.testing.assert_array_equal(loaded.predict_proba_draws(data.X_test), draws)
    again = uz.evaluate(loaded, data, levels=(0.8,))
    assert again.to_dict()["ece"] == report.to_dict()["ece"]


def test_the_same_seed_gives_the_same_draws_and_rows_do_not_depend_on_their_batch(data,
                                                                                   spec):
    a = _fit(spec, data, augmentations=["gaussian_noise:0.3", "band_dropout:0.2"])
    b = _fit(spec, data, augmentations=["gaussian_noise:0.3", "band_dropout:0.2"])
    X = data.X_test
    np.testing.assert_array_equal(a.predict_proba_draws(X), b.predict_proba_draws(X))
    other = _fit(spec, data, seed=1, augmentations=["gaussian_noise:0.3"])
    assert not np.array_equal(a.predict_proba_draws(X), other.predict_proba_draws(X))
    # A point's draws are a function of the point: the rows 40-59 alone, in reverse order.
    whole = a.predict_proba_draws(X)
    part = a.predict_proba_draws(X[40:60][::-1])[:, ::-1]
    np.testing.assert_allclose(part, whole[:, 40:60], atol=1e-6)
    # The streamed summary in small chunks equals the quantiles of the draws.
    s = a.summarize(X, levels=(0.8,), chunk_size=7)
    np.testing.assert_allclose(s.mean, whole.mean(axis=0), atol=1e-6)
    np.testing.assert_allclose(s.lower[0], np.quantile(whole, 0.1, axis=0), atol=1e-6)
    np.testing.assert_allclose(s.upper[0], np.quantile(whole, 0.9, axis=0), atol=1e-6)


@pytest.mark.parametrize("augmentations", [[], ["gaussian_noise:0"], ["illumination:1"]])
def test_without_augmentation_it_is_the_map_network(data, spec, augmentations):
    tta = _fit(spec, data, augmentations=augmentations, num_samples=4)
    point = uz.fit("map", spec, data, seed=0, num_epochs=100, progress_bar=False)
    np.testing.assert_allclose(tta.predict_proba_draws(data.X_test),
                               np.repeat(point.predict_proba_draws(data.X_test), 4, axis=0),
                               atol=1e-6)


def test_the_spread_grows_with_the_magnitude(data, spec):
    spreads = [float(_fit(spec, data, augmentations=[f"gaussian_noise:{m}"])
                     .predict_proba_draws(data.X_test)[..., 1].std(axis=0).mean())
               for m in (0.05, 0.2, 0.8)]
    assert 0 < spreads[0] < spreads[1] < spreads[2], spreads


def test_the_noise_is_gaussian_with_the_asked_sd(data):
    """x' - x over 100 rows × D features × 20 draws: mean 0 and sd 0.3 · training sd,
    each within 5 standard errors."""
    aug = InputAugmentation.from_data([("gaussian_noise", 0.3, 0.3, None)], data, seed=0)
    X = np.asarray(data.X_test)
    noise = np.stack([aug.apply(X, s) - X for s in range(20)]).astype(np.float64)
    noise /= 0.3 * np.asarray(data.X_train).std(axis=0)       # raw features: unit sd
    n = noise.size
    assert abs(noise.mean()) < 5 / np.sqrt(n)
    assert abs(noise.std() - 1) < 5 * np.sqrt(0.5 / n)
    # Draws are independent: the correlation of two draws' noise is 0 within 5 SE.
    assert abs(np.corrcoef(noise[0].ravel(), noise[1].ravel())[0, 1]) < 5 / np.sqrt(
        noise[0].size)


@pytest.mark.parametrize("augmentations, error, needle", [
    (["gaussian_noise:-1"], uz.InvalidInputError,
     "augmentations entry 'gaussian_noise:-1': magnitude of gaussian_noise"),
    (["spectral_shift:0.7"], uz.InvalidInputError, "spectral_shift"),
    (["illumination:0"], uz.InvalidInputError, "illumination"),
    (["band_dropout:1.5"], uz.InvalidInputError, "band_dropout"),
    (["blur:1"], uz.InvalidInputError, "augmentations entry 'blur:1'"),
    (["gaussian_noise:a-b"], uz.InvalidInputError, "must be written FAMILY[:LOW-HIGH]"),
    (3, uz.InvalidTypeError, "augmentations must be a list of augmentations"),
])
def test_bad_augmentations_are_one_clear_error(data, spec, augmentations, error, needle):
    with pytest.raises(error) as info:
        uz.fit("tta", spec, data, seed=0, augmentations=augmentations, progress_bar=False)
    assert needle in str(info.value)


def test_a_dropout_fraction_must_leave_a_feature(data, spec):
    with pytest.raises(uz.InvalidInputError, match="must leave at least one"):
        _fit(spec, data, augmentations=["missing_features:0.95"])


def test_a_spectral_family_on_named_features_is_a_data_warning(data, spec):
    import dataclasses

    names = tuple(f"x{j}" for j in range(data.n_features))
    table = dataclasses.replace(data, meta={**data.meta, "feature_names": names})
    with pytest.warns(uz.DataWarning, match="models hyperspectral acquisition"):
        _fit(spec, table, augmentations=["illumination:0.9-1.1"], num_epochs=20)


def test_parse_augmentations_canonical_labels():
    assert parse_augmentations("offset:-0.02-0.02") == ("offset:-0.02-0.02",)
    assert parse_augmentations(["band_dropout(interpolate):0.1"]) == (
        "band_dropout(interpolate):0.1",)
    assert parse_augmentations("offset:-0.01") == ("offset:-0.01",)
    assert parse_augmentations([]) == ()


def test_augment_any_posterior_cycles_its_draws(data, spec, tmp_path):
    base = uz.fit("ensemble", spec, data, seed=0, num_members=3, num_epochs=50,
                  progress_bar=False)
    post = augment(base, data, ["gaussian_noise:0.2"], num_samples=7, seed=3)
    assert post.method == "ensemble" and post.num_draws == 7
    np.testing.assert_array_equal(post.draws["layers.0.weight"][3],
                                  base.draws["layers.0.weight"][0])
    path = tmp_path / "aug.nc"
    post.save(path)
    np.testing.assert_array_equal(uz.load_posterior(path).predict_proba_draws(data.X_test),
                                  post.predict_proba_draws(data.X_test))
    with pytest.raises(uz.InvalidInputError, match="already has an input augmentation"):
        augment(post, data)


def test_recalibration_sees_the_augmented_draws(data, spec):
    post = _fit(spec, data, augmentations=["gaussian_noise:0.3"])
    recal = uz.recalibrate(post, data, method="temperature", seed=0)
    assert recal.input_augmentation is post.input_augmentation
    assert recal.logit_transform.temperature > 0


def test_a_file_with_a_bad_augmentation_is_refused(data, spec, tmp_path):
    import h5py

    path = tmp_path / "tta.nc"
    _fit(spec, data).save(path)
    with h5py.File(path, "r+") as f:
        value = json.loads(f.attrs["input_augmentation"])
        value["steps"][0]["high"] = -4.0
        f.attrs["input_augmentation"] = json.dumps(value)
    with pytest.raises(uz.FileFormatError, match="input_augmentation"):
        uz.load_posterior(path)


SMALL = ["--data-option", "n_train=200", "--data-option", "n_test=200", "--hidden", "5",
         "--set", "tta.num_epochs=100", "--set", "tta.num_samples=40"]


def test_cli_compares_map_and_tta(tmp_path, capsys):
    assert main(["compare", "--methods", "map,tta", "--no-progress", "--out",
                 str(tmp_path / "out"), *SMALL, "--set", "map.num_epochs=100"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("method "))
    table = lines[start + 1:lines.index("", start)]
    # A name carries a * when the evaluator flags the row (a fit error would too).
    assert sorted(line.split()[0].rstrip("*") for line in table if line[:3] in ("map", "tta")
                  ) == ["map", "tta"], out
    results = pd.read_csv(tmp_path / "out" / "results.csv", index_col="method")
    assert results.loc["tta", "num_draws"] == 40
    assert "fit_error" not in str(results.loc["tta"].get("flags", "")), out


def test_cli_bad_augmentation_exits_2_with_one_line(tmp_path, capsys):
    code = main(["compare", "--methods", "tta", "--no-progress", *SMALL,
                 "--set", "tta.augmentations=gaussian_noise:-1"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and "gaussian_noise" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
