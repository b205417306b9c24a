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
    # the first sentence says what labels can judge: the mean prediction only
    assert v.sentences[0].startswith("The test labels judge the mean prediction only")
    assert "Trust the mean prediction of right: NLL of the test labels" in v.sentences[0]
    assert "coverage cannot be checked" in v.sentences[0]


def labelled_reports(seed=1, **spreads):
    """Reports on data without truth, one per name, draws N(z + shift, spread²) with S
    draws: ``name=(shift_sd, spread, S)``."""
    rng, z, _, y = truth_and_labels(seed)
    out = {}
    for name, (shift, spread, draws) in spreads.items():
        centre = z + shift * rng.normal(size=N)
        q = 1 / (1 + np.exp(-(centre + spread * rng.normal(size=(draws, N)))))
        out[name] = uz.evaluate(np.stack([1 - q, q], -1), y, levels=(0.8, 0.95))
    return out


def test_a_point_estimate_is_never_recommended_for_uncertainty():
    # "map" has the best mean prediction (the truth's logit itself) but one draw;
    # "noisy" is worse by far: the point estimate is passed over, named and why
    reports = labelled_reports(map=(0.0, 0.0, 1), noisy=(0.4, 0.4, 100))
    v = verdict(comparison(reports))
    assert v.rankings[0].best == "map"
    assert v.recommended == "noisy"
    assert "map (a point estimate: one draw" in v.answer
    assert "not recommended for uncertainty" in v.answer


def test_too_few_draws_for_the_levels_is_never_recommended():
    # 20 draws: too few for the 95 % level (39 needed), however good the mean
    reports = labelled_reports(few=(0.0, 0.05, 20), one=(0.0, 0.0, 1))
    v = verdict(comparison(reports))
    assert v.recommended is None
    assert v.answer.startswith("The test labels judge the mean prediction only")
    assert "No method is trustworthy here" in v.answer
    assert "20 draws, fewer than the 39 that level 0.95 needs" in v.answer


def test_a_tie_is_reported_as_a_tie_not_a_winner():
    reports = labelled_reports(a=(0.0, 0.2, 100))
    reports["b"] = reports["a"]
    reports["c"] = reports["a"]
    v = verdict(comparison(reports))
    assert v.recommended is None
    assert "a, b and c are tied by NLL of the test labels" in v.answer
    assert "none of them is named to trust" in v.answer


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
