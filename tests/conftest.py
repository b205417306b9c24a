"""Test-suite settings shared by every test module."""

import os

import matplotlib
from hypothesis import settings

matplotlib.use("Agg")  # no screen on CI machines

# CI runs the property tests derandomised, so a green main stays green; run
# `UQZOO_HYPOTHESIS_PROFILE=explore pytest` to search fresh examples locally.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("UQZOO_HYPOTHESIS_PROFILE", "ci"))
