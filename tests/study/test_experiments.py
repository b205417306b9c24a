"""The committed experiments: study files validate, and the cluster example is sound.

The seed study itself takes hours and is not run here; its file, its
dask-jobqueue settings and its driver's ``--dry-run`` are checked, without
dask-jobqueue or a cluster.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import uqzoo as uz
from uqzoo.study.runner import thread_environment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
SEED_STUDY = EXPERIMENTS / "seed_study"

# Keys dask-jobqueue (0.8 and later) reads under jobqueue.<scheduler>: a typo in
# the example would be ignored silently by dask.config, so the test rejects it.
JOBQUEUE_KEYS = {
    "name", "cores", "memory", "processes", "python", "interface", "death-timeout",
    "local-directory", "shared-temp-directory", "extra", "worker-command",
    "worker-extra-args", "shebang", "queue", "account", "project", "walltime",
    "env-extra", "job-script-prologue", "job-cpu", "job-mem", "job-extra",
    "job-extra-directives", "job-directives-skip", "log-directory", "resource-spec",
    "scheduler-options", "memory-per-core-property-name",
}


def test_example_study_is_small():
    study = uz.study.read_study(EXPERIMENTS / "examples" / "small.toml")
    tasks = study.tasks()
    assert 10 <= len(tasks) <= 30
    assert {t.method for t in tasks} == {"ensemble", "mc_dropout", "laplace"}


def test_seed_study_mirrors_the_paper():
    study = uz.study.read_study(SEED_STUDY / "study.toml")
    tasks = study.tasks()
    assert study.spec["hidden"] == [10, 10] and study.spec["activation"] == "tanh"
    assert study.levels == (0.5, 0.8, 0.9, 0.95)
    assert study.replicates >= 20
    # the paper's seven posterior approximators and the three SG-MCMC samplers (issue #24);
    # the MAP baseline has no intervals to cover, and test-time augmentation's
    # intervals are sensitivity to its augmentations, not a posterior's
    assert {m.name for m in study.methods} == set(uz.methods.names()) - {"map", "tta"}
    assert {d.name for d in study.datasets} == {"sim-teacher", "gaussian-mixture"}
    assert study.spec["prior"] == "iid"      # the teacher's prior: well specified
    settings = {(t.dataset, t.setting) for t in tasks}
    assert len(tasks) == len(settings) * len(study.methods) * study.replicates == 400
    for task in tasks:
        config = task.config
        assert config["dataset"]["options"]["n_test"] >= 2000
        if task.method in ("hmc",):
            assert config["method"]["config"]["chain_method"] == "sequential"


def _shell_exports(lines: list[str]) -> dict[str, str]:
    exported: dict[str, str] = {}
    for line in lines:
        words = shlex.split(line)
        if words and words[0] == "export":
            for word in words[1:]:
                key, _, value = word.partition("=")
                exported[key] = value
    return exported


@pytest.mark.parametrize("scheduler", ["slurm", "pbs"])
def test_jobqueue_example_runs_one_thread_per_worker(scheduler):
    yaml = pytest.importorskip("yaml")            # comes with dask
    config = yaml.safe_load((SEED_STUDY / "jobqueue.yaml").read_text())
    settings = config["jobqueue"][scheduler]
    assert set(settings) <= JOBQUEUE_KEYS, set(settings) - JOBQUEUE_KEYS
    assert settings["cores"] == settings["processes"] >= 1      # one thread per worker
    assert str(settings["walltime"]).count(":") == 2
    exported = _shell_exports(settings["job-script-prologue"])
    expected = thread_environment(1)
    for key in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        assert exported[key] == expected[key]
    assert exported["XLA_FLAGS"].split() == expected["XLA_FLAGS"].split()


def test_cluster_driver_dry_run():
    pytest.importorskip("yaml")
    done = subprocess.run([sys.executable, str(SEED_STUDY / "run_cluster.py"), "--dry-run",
                           "--jobs", "4", "--scheduler", "pbs"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "seed_study: 400 tasks; 4 pbs jobs × 16 workers = 64 workers" in done.stdout


def test_readmes_list_the_experiments_and_mark_missing_results():
    index = (EXPERIMENTS / "README.md").read_text()
    assert "examples/small.toml" in index and "seed_study/" in index
    readme = (SEED_STUDY / "README.md").read_text()
    assert "## Results: not yet run" in readme or "## Results" in readme
    assert "uqzoo study run experiments/seed_study/study.toml" in readme
    assert "run_cluster.py" in readme and "jobqueue.yaml" in readme


def test_shift_and_noise_table_is_what_its_results_give():
    """The committed table is the summary of the committed results, and the config's
    method options are ones the methods take."""
    import importlib.util
    import tomllib

    import pandas as pd

    folder = EXPERIMENTS / "shift_and_noise"
    spec = importlib.util.spec_from_file_location("shift_and_noise_run", folder / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    config = tomllib.loads((folder / "config.toml").read_text())
    for method, options in config["methods"].items():
        uz.methods.make_config(method, **options)
    results = pd.read_csv(folder / "results.csv")
    assert len(results) == (config["replicates"] * len(config["shifts"])
                            * len(config["label_noise"]) * len(config["methods"]))
    table = run._markdown(run.summarize(results, tuple(config["levels"])))
    assert (folder / "table.md").read_text() == table + "\n"
    assert table.splitlines()[2] in (folder / "README.md").read_text()
