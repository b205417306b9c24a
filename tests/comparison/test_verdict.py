"""The verdict's recommendation and the proper-score ranking behind it (issue #26 item 2)."""

import numpy as np
import pandas as pd
import pytest

import uqzoo as uz
from uqzoo.comparison.compare import Comparison
from uqzoo.comparison.ranking import Ranking, rank_methods
from uqzoo.comparison.verdict import verdict
from uqzoo.errors import InvalidInputError

N, S = 2000, 400


def truth_and_labels(seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, N)
    p = 1 / (1 + np.exp(-z))
    return rng, z, p, (rng.random(N) < p).astype(int)


def logit_draws(rng, centre, spread):
    """(S, N, 2) draws whose logits are N(centre, spread²)."""
    q = 1 / (1 + np.exp(-(centre + spread * rng.normal(size=(S, N)))))
    return np.stack([1 - q, q], -1)


def known_truth_reports(seed=0, tau=0.4):
    """"right": a posterior N(c, τ²) with c ~ N(z, τ²) -- the truth lies in its central
    interval at exactly the nominal rate; "narrow": the same centres, τ/5; "wide": 3τ."""
    rng, z, p, y = truth_and_labels(seed)
    centre = z + tau * rng.normal(size=N)
    truth = np.stack([1 - p, p], -1)
    return {name: uz.evaluate(logit_draws(rng, centre, spread), y, levels=(0.8, 0.95),
                              p_true=truth)
            for name, spread in (("narrow", tau / 5), ("right", tau), ("wide", 3 * tau))}


def comparison(reports):
    table = pd.DataFrame([{**r.to_dict(), "method": n, "n_test": r.n_points}
                          for n, r in reports.items()]).set_index("method")
    return Comparison(table=table, reports=reports, posteriors={})


def test_known_truth_recommends_the_posterior_that_covers():
    reports = known_truth_reports()
    v = verdict(comparison(reports))
    assert v.recommended == "right"
    assert v.sentences[0].startswith("Trust right: interval score of the true probability")
    assert v.answer == v.sentences[0]
    ranking = v.rankings[0]
    assert ranking.metric == "interval_score" and ranking.methods[0] == "right"
    # every difference to the best is positive and its paired interval excludes 0
    for name in ("narrow", "wide"):
        estimate, low, high = ranking.difference[name]
        assert 0 < low <= estimate <= high
    assert ranking.tied == ("right",)
    assert "Ranked by interval score" in v.sentences[1]


def test_identical_methods_are_tied():
    reports = known_truth_reports()
    reports["copy"] = reports["right"]
    ranking = rank_methods(reports)[0]
    assert set(ranking.tied) == {"right", "copy"}
    assert ranking.difference[ranking.tied[1]][:3] == (0.0, 0.0, 0.0)


def test_the_same_replicates_for_every_method():
    # Paired: a method's replicate scores depend on the seed only, not on who else
    # is ranked, so a difference's interval is the same with or without others.
    reports = known_truth_reports()
    both = rank_methods({k: reports[k] for k in ("right", "wide")}, seed=3)[0]
    three = rank_methods(reports, seed=3)[0]
    assert both.difference["wide"] == three.difference["wide"]


def test_without_truth_ranks_by_nll_and_brier_and_says_coverage_is_unchecked():
    rng, z, _, y = truth_and_labels(1)
    reports = {"right": uz.evaluate(logit_draws(rng, z, 0.1), y, levels=(0.8,)),
               "flat": uz.evaluate(logit_draws(rng, 0 * z, 0.1), y, levels=(0.8,))}
    v = verdict(comparison(reports))
    assert [r.metric for r in v.rankings] == ["nll", "brier"]
    assert v.recommended == "right"
    assert v.sentences[0].startswith("Trust right: NLL of the test labels")
    assert "coverage cannot be checked" in v.sentences[0]


def test_no_method_is_trustworthy_when_every_one_misses_far_too_often():
    reports = known_truth_reports()
    rng, z, p, y = truth_and_labels(0)
    truth = np.stack([1 - p, p], -1)
    # unbiased but noisy centres (logit sd 0.3) with intervals 10-20× too narrow:
    # not failed, but their intervals hold the truth a few times in a hundred
    off = {name: uz.evaluate(logit_draws(rng, z + 0.3 * rng.normal(size=N), spread), y,
                             levels=(0.8, 0.95), p_true=truth)
           for name, spread in (("a", 0.015), ("b", 0.03))}
    assert not any(r.failures for r in off.values())
    v = verdict(comparison(off))
    assert v.recommended is None
    assert v.sentences[0].startswith("No method is trustworthy here: the best-scoring fit")
    assert "misses the true probability more than 2.5×" in v.sentences[0]
    del reports


def test_every_fit_failed():
    table = pd.DataFrame({"failed": [True, True], "flags": ["one_class", "chance"],
                          "nll": [0.6, 0.7]}, index=pd.Index(["a", "b"], name="method"))
    v = verdict(table)
    assert v.recommended is None
    assert v.sentences[0] == ("No method is trustworthy here: every fit failed "
                              "(a (one_class) and b (chance)).")


def test_a_bare_table_is_ranked_by_its_point_values():
    table = pd.DataFrame({"failed": [False, False, True], "nll": [0.5, 0.4, 0.1]},
                         index=pd.Index(["a", "b", "c"], name="method"))
    v = verdict(table)
    assert v.recommended == "b" and v.rankings[0].methods == ("b", "a")
    assert "point values only" in v.sentences[1]


def test_rank_methods_refuses_other_test_sets_and_unknown_metrics():
    reports = known_truth_reports()
    rng, z, _, y = truth_and_labels(5)
    reports["other"] = uz.evaluate(logit_draws(rng, z, 0.3), y, levels=(0.8,))
    with pytest.raises(InvalidInputError, match="same test set"):
        rank_methods(reports)
    with pytest.raises(InvalidInputError, match=r"metrics must be among .*got 'ece'"):
        rank_methods({"right": reports["right"]}, ["ece"])
    assert rank_methods({}) == ()
    assert Ranking.from_values("nll", {"x": 0.3, "y": 0.2}).methods == ("y", "x")
