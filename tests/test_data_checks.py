"""The data-fit warnings (uqzoo._data_checks): they fire where the data cannot be judged,
through uz.fit and uz.evaluate, and stay quiet on the embedded data sets.

pyproject.toml ignores the two count warnings in the rest of the suite (tiny
test data); ``pytest.warns`` and the explicit filters below see them anyway.
"""

import warnings

import numpy as np
import pytest

import uqzoo as uz
from uqzoo import _data_checks
from uqzoo.errors import DataWarning
from uqzoo.methods._config import class_weights
from uqzoo.metrics.detection import DEFAULT_FARS


def _scene(n_train_targets, n_test_targets, n_background=300, seed=0):
    """Binary data with pixel coordinates (a detection scene)."""
    rng = np.random.default_rng(seed)
    y_train = np.r_[np.zeros(n_background, int), np.ones(n_train_targets, int)]
    y_test = np.r_[np.zeros(n_background, int), np.ones(n_test_targets, int)]
    X_train = rng.normal(size=(len(y_train), 3)) + y_train[:, None]
    X_test = rng.normal(size=(len(y_test), 3)) + y_test[:, None]
    coords = np.stack(np.unravel_index(np.arange(len(y_test)), (100, 100)), 1)
    return uz.ClassificationData(X_train, y_train, X_test, y_test, 2, coords_test=coords,
                                 meta={"image_shape": (100, 100)}, name="scene")


def _draws(data, S=4):
    p = np.clip(0.2 + 0.6 * data.y_test, 0.01, 0.99)
    return np.broadcast_to(np.stack([1 - p, p], -1), (S, data.n_test, 2)).copy()


def test_a_class_with_few_training_rows_warns_in_fit():
    data = _scene(n_train_targets=5, n_test_targets=30)
    spec = uz.MLPSpec(3, 2, hidden=(3,))
    with pytest.warns(DataWarning, match=r"class 1 \(1\) has 5 training rows \(fewer than 20\)"):
        uz.fit("laplace", spec, data, num_epochs=5, convergence_window=None,
               progress_bar=False)
    one = _scene(n_train_targets=1, n_test_targets=30)
    with pytest.warns(DataWarning, match=r"1 training row \(fewer.*prior 0.0033"):
        _data_checks.check_fit(one, None)


def test_a_class_weight_above_100_warns_in_fit():
    # one target among 2000 rows: "balanced" weighs it 1000
    y = np.r_[np.zeros(1999, int), 1]
    per_class = class_weights("balanced", y, 2)
    assert per_class[1] == pytest.approx(1000.0)
    messages = _data_checks.class_weight_problems(per_class, ("background", "target"))
    assert len(messages) == 1 and "class 1 (target) has class weight 1000" in messages[0]
    assert not _data_checks.class_weight_problems(np.array([1.0, 100.0]))   # 100 is allowed
    data = _scene(n_train_targets=25, n_test_targets=30)
    spec = uz.MLPSpec(3, 2, hidden=(3,))
    with pytest.warns(DataWarning, match="class weight 101 \\(above 100\\)"):
        uz.fit("laplace", spec, data, class_weight=(1.0, 101.0), num_epochs=5,
               convergence_window=None, progress_bar=False)


def test_too_few_test_targets_warn_in_evaluate_and_land_in_the_report():
    data = _scene(n_train_targets=40, n_test_targets=3)
    with pytest.warns(DataWarning, match=r"test set holds 3 target pixels \(fewer than 20\)"):
        report = uz.evaluate(_draws(data), data)
    assert any("3 target pixels" in w for w in report.warnings)
    # enough targets, or data without pixel coordinates: nothing to say
    for quiet in (_scene(n_train_targets=40, n_test_targets=20),
                  uz.ClassificationData(data.X_train, data.y_train, data.X_test, data.y_test, 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", DataWarning)
            assert not any("target pixel" in w for w in uz.evaluate(_draws(quiet), quiet).warnings)


def test_background_notes_name_the_fars_the_scene_cannot_resolve():
    y = np.r_[np.zeros(4340, int), np.ones(660, int)]     # hsi-sim's default test set
    notes = _data_checks.background_notes(y, DEFAULT_FARS)
    assert len(notes) == 1 and notes[0].startswith("Pd@FAR 0.001 rests on 4340")
    assert _data_checks.background_notes(y, (0.01,)) == []


@pytest.mark.parametrize("name", ["sim-teacher", "gaussian-mixture", "hsi-sim"])
def test_quiet_on_the_embedded_data(name):
    options = {"progress_bar": False} if name == "hsi-sim" else {}
    data = uz.datasets.load(name, seed=0, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        for weight in (None, "balanced"):
            per_class = class_weights(weight, data.y_train, data.n_classes)
            assert _data_checks.check_fit(data, per_class) == ()
        assert _data_checks.check_evaluation(data, DEFAULT_FARS) == ()


def test_warnings_point_at_the_callers_line():
    data = _scene(n_train_targets=40, n_test_targets=3)
    with pytest.warns(DataWarning) as caught:
        uz.evaluate(_draws(data), data)
    assert caught[0].filename == __file__
