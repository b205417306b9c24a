"""Every registered method passes the conformance suite (``uqzoo.testing``).

Adding a method is one line in ``TINY_CONFIGS``: its name and a configuration
small enough to fit the tiny data in a second or two. A method whose module
does not exist yet is reported as skipped, with the reason.
"""

import pytest

import uqzoo as uz
from uqzoo.testing import check_method, method_available, tiny_data

TINY_CONFIGS = {
    "hmc": dict(num_warmup=20, num_samples=20, num_chains=2),
    "mfvi": dict(num_steps=200, num_samples=20),
    "mc_dropout": dict(num_epochs=50, num_samples=20, dropout=0.2),
    "ensemble": dict(num_members=3, num_epochs=50),
    "bootstrap": dict(num_members=3, num_epochs=50),
    "swag": dict(num_epochs=40, num_samples=20, batch_size=20),
    "laplace": dict(num_samples=20),
    "map": dict(num_epochs=50),
    "sgld": dict(num_steps=200, num_burnin=50, num_samples=20, num_chains=2, batch_size=10),
    "sghmc": dict(num_steps=100, num_burnin=20, num_samples=20, num_chains=2, batch_size=10,
                  num_integration_steps=2),
    "csgmcmc": dict(num_steps=200, num_samples=20, num_chains=2, num_cycles=2, batch_size=10),
    "tta": dict(num_epochs=50, num_samples=20, augmentations=["gaussian_noise:0.2"]),
}


def test_the_table_covers_every_registered_method():
    assert sorted(TINY_CONFIGS) == sorted(uz.methods.names())


@pytest.mark.parametrize("name", list(TINY_CONFIGS))
def test_method_conforms(name):
    available, why = method_available(name)
    if not available:
        pytest.skip(why)
    report = check_method(name, **TINY_CONFIGS[name])
    assert "save/load round-trip" in report.passed
    assert len(report.passed) == 7, str(report)


# HMC's three-class run compiles a NUTS program of its own (~20 s on two quiet
# cores): a slow test (make test-slow, CI's second step).
@pytest.mark.parametrize("name", [pytest.param("hmc", marks=pytest.mark.slow), "mfvi"])
def test_three_classes_conform(name):
    report = check_method(name, data=tiny_data(n_classes=3), **TINY_CONFIGS[name])
    assert not any(check == "K > 2 probabilities" for check, _ in report.skipped)
    assert len(report.passed) == 7, str(report)


def test_suite_reports_what_it_skipped():
    report = check_method("mfvi", **TINY_CONFIGS["mfvi"])
    skipped = dict(report.skipped)
    assert "K > 2 probabilities" in skipped
    assert "sample_stats round-trip" in skipped
    assert "skip" in str(report)


def test_suite_catches_a_method_that_ignores_its_seed(monkeypatch):
    """The suite can fail: a method whose draws do not depend on the seed is caught."""
    from uqzoo.methods import mfvi

    real_fit = mfvi.fit

    def seedless_fit(spec, data, config, *, seed, progress_bar):
        return real_fit(spec, data, config, seed=0, progress_bar=progress_bar)

    monkeypatch.setattr(mfvi, "fit", seedless_fit)
    with pytest.raises(AssertionError, match="another seed, different draws"):
        check_method("mfvi", **TINY_CONFIGS["mfvi"])


def test_suite_catches_a_method_that_mutates_its_config(monkeypatch):
    from uqzoo.methods import mfvi

    real_fit = mfvi.fit

    def mutating_fit(spec, data, config, *, seed, progress_bar):
        post = real_fit(spec, data, config, seed=seed, progress_bar=progress_bar)
        return uz.Posterior(spec=post.spec, method=post.method,
                            config={**post.config, "num_steps": 1}, seed=post.seed,
                            draws=post.draws, diagnostics=post.diagnostics)

    monkeypatch.setattr(mfvi, "fit", mutating_fit)
    with pytest.raises(AssertionError, match="config round-trip"):
        check_method("mfvi", **TINY_CONFIGS["mfvi"])
