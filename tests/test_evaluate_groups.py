"""evaluate on data with test groups: each group's metrics by the pooled metric's own
function, and their medians beside the pooled figures."""

import numpy as np
import pytest

import uqzoo as uz
from uqzoo.evaluate import GROUP_METRICS


def _grouped_draws(n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] + rng.normal(size=600) > 0).astype(int) if n_classes == 2 else \
        rng.integers(0, n_classes, 600)
    site = np.repeat(np.arange(12), 50)
    data = uz.datasets.from_arrays(X, y, groups=site, split="groups", test_size=0.5,
                                   seed=seed)
    alpha = rng.uniform(0.5, 3, size=(1, data.n_test, n_classes))
    draws = rng.dirichlet(np.ones(n_classes), size=(100, data.n_test)) * 0.3 \
        + 0.7 * alpha / alpha.sum(-1, keepdims=True)
    return data, draws


@pytest.mark.parametrize("n_classes", [2, 3])
def test_per_group_metrics_are_the_metric_on_each_groups_rows(n_classes):
    data, draws = _grouped_draws(n_classes)
    report = uz.evaluate(draws, data, levels=(0.8,))
    mean = draws.mean(axis=0)
    groups = report.groups
    assert list(groups.columns) == ["group", "n_points", *GROUP_METRICS]
    assert sorted(groups.group) == sorted(data.meta["test_groups"])
    for _, row in groups.iterrows():
        rows = data.groups_test == row.group
        p, y = mean[rows], data.y_test[rows]
        assert row.n_points == rows.sum()
        assert row.ece == pytest.approx(uz.metrics.ece(p, y), abs=1e-12)
        assert row.auarc == pytest.approx(uz.metrics.auarc(p, y), abs=1e-12)
        assert row.balanced_accuracy == pytest.approx(uz.metrics.balanced_accuracy(p, y),
                                                      abs=1e-12)
        if n_classes == 2:
            assert row.detection_auroc == pytest.approx(
                uz.metrics.detection_auroc(p[:, 1], y == 1), abs=1e-12)
        else:
            assert np.isnan(row.detection_auroc)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_medians_sit_beside_the_pooled_figures(n_classes):
    data, draws = _grouped_draws(n_classes, seed=1)
    report = uz.evaluate(draws, data, levels=(0.8,))
    d = report.to_dict()
    for metric in GROUP_METRICS:
        key = f"{metric}_group_median"
        if metric == "detection_auroc" and n_classes != 2:
            assert key not in d
            continue
        expected = float(np.median(report.groups[metric]))
        assert d[key] == pytest.approx(expected, abs=1e-15)
        assert report.value(key) == pytest.approx(expected, abs=1e-15)
    # the pooled figures are still those of all test points together
    assert d["ece"] == pytest.approx(uz.metrics.ece(draws.mean(0), data.y_test), abs=1e-12)
    assert "median over 6 test groups" in report.summary()


def test_median_of_an_even_count_is_the_mean_of_the_middle_two():
    y = np.array([0, 1] * 8)
    p1 = np.where(np.arange(16) % 3 == 0, 0.9, 0.2)
    draws = np.stack([1 - p1, p1], -1)[None].repeat(20, 0)
    groups = np.repeat([0, 1, 2, 3], 4)
    data = uz.ClassificationData(np.zeros((16, 1)), y, np.zeros((16, 1)), y, 2,
                                 groups_test=groups)
    report = uz.evaluate(draws, data, levels=(0.8,))
    per_group = [uz.metrics.ece(draws[0, groups == g], y[groups == g]) for g in range(4)]
    middle = sorted(per_group)[1:3]
    assert report.to_dict()["ece_group_median"] == pytest.approx(sum(middle) / 2, abs=1e-15)


def test_group_without_targets_has_no_auroc_and_is_left_out_of_its_median():
    y = np.array([0, 0, 0, 0, 0, 1, 0, 1])
    p1 = np.linspace(0.1, 0.9, 8)
    draws = np.stack([1 - p1, p1], -1)[None].repeat(20, 0)
    groups = np.array(["a"] * 4 + ["b"] * 4)
    data = uz.ClassificationData(np.zeros((8, 1)), y, np.zeros((8, 1)), y, 2,
                                 groups_test=groups)
    report = uz.evaluate(draws, data, levels=(0.8,))
    assert np.isnan(report.groups.set_index("group").loc["a", "detection_auroc"])
    row = report.table[report.table.metric == "detection_auroc_group_median"].iloc[0]
    assert row.variant.startswith("median over 1 of 2 test groups")
    assert row.value == report.groups.set_index("group").loc["b", "detection_auroc"]


def test_data_without_groups_report_none():
    data, draws = _grouped_draws()
    plain = uz.ClassificationData(data.X_train, data.y_train, data.X_test, data.y_test, 2)
    report = uz.evaluate(draws, plain, levels=(0.8,))
    assert report.groups is None
    assert not any(k.endswith("_group_median") for k in report.to_dict())
