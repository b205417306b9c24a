"""A study's ``conformal`` option: every task judges split-conformal sets (issue 23)."""

from __future__ import annotations

import pytest

import uqzoo as uz

STUDY = '''
[study]
levels = [0.8]
{extra}
[[datasets]]
name = "gaussian-mixture"
options = {{ n_train = 200, n_test = 300 }}
[[methods]]
name = "map"
config = {{ num_epochs = 100 }}
'''


def _tasks(tmp_path, extra: str):
    path = tmp_path / "s.toml"
    path.write_text(STUDY.format(extra=extra))
    return uz.study.expand(path)


def test_conformal_tasks_hold_out_a_split_and_report_the_sets(tmp_path):
    [plain] = _tasks(tmp_path, "")
    [task] = _tasks(tmp_path, 'conformal = 0.9\nconformal_score = "aps"')
    assert "conformal" not in plain.config and plain.id != task.id
    assert task.config["conformal"] == {"level": 0.9, "score": "aps"}
    result = uz.study.run_task(task)
    report = result["report"]
    for key in ("conformal_coverage", "conformal_set_size", "conformal_worst_decile",
                "plain_set_coverage", "plain_worst_decile"):
        assert 0.0 <= report[key] <= 2.0, key
    assert report["conformal_set_size"] >= 1.0        # APS sets are never empty


@pytest.mark.parametrize("extra, needle", [
    ("conformal = 1.5", "study.conformal: must be a level in (0, 1)"),
    ('conformal = 0.9\nconformal_score = "raps"', "must be one of lac, aps"),
    ('conformal_score = "aps"', "needs conformal = LEVEL"),
])
def test_a_bad_conformal_option_names_the_key(tmp_path, extra, needle):
    with pytest.raises(uz.InvalidInputError) as caught:
        _tasks(tmp_path, extra)
    assert needle in str(caught.value)
