"""The fidelity validation study (experiments/fidelity_validation): its file validates and
is the design its README describes. The study itself takes hours and is not run here."""

from __future__ import annotations

from pathlib import Path

import uqzoo as uz
from uqzoo.reference import ESS_MIN, MIN_CHAINS

STUDY = Path(__file__).resolve().parents[2] / "experiments" / "fidelity_validation" / "study.toml"


def test_fidelity_validation_study_has_a_gated_reference_and_well_specified_teacher():
    study = uz.study.read_study(STUDY)
    assert {m.name for m in study.methods} == {"hmc", "mfvi", "mc_dropout", "ensemble",
                                               "bootstrap", "swag", "laplace"}
    assert {d.name for d in study.datasets} == {"sim-teacher", "gaussian-mixture"}
    assert study.replicates >= 10
    # every task samples (or shares) its replicate's reference, long enough for the gate
    assert study.reference is not None
    assert study.reference["num_chains"] >= MIN_CHAINS
    assert study.reference["num_samples"] >= ESS_MIN
    assert all(t.config["reference"] == study.reference for t in study.tasks())
    # well specified: the teacher is drawn from the prior every method fits with
    teacher = next(d for d in study.datasets if d.name == "sim-teacher")
    assert teacher.fixed["teacher_prior"] == study.spec["prior"]
    assert study.spec["hidden"] == list(uz.datasets.options("sim-teacher")["teacher_hidden"])
