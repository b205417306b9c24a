"""Test-suite settings shared by every test module."""

import os
from pathlib import Path

import jax
import matplotlib
from hypothesis import settings

matplotlib.use("Agg")  # no screen on CI machines

# XLA compilation is most of the time of a short fit (a quick 20-epoch fit
# compiles for about 1 s and trains for 0.1 s), and the suite compiles the same
# programs again in each xdist worker and again for each new NumPyro sampler.
# JAX's persistent cache shares them; a hit runs exactly what a fresh
# compilation would (entries are keyed by HLO, backend and flags). Only the
# test processes use it: set through jax.config, not the environment, so the
# CLI subprocesses that tests kill or starve of disk never write a torn entry.
# The size cap turns on JAX's file lock, which keeps the two workers from
# reading each other's half-written entries. `.jax_cache/` is git-ignored.
jax.config.update("jax_compilation_cache_dir",
                  str(Path(__file__).resolve().parent.parent / ".jax_cache"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_compilation_cache_max_size", 2**30)

# CI runs the property tests derandomised, so a green main stays green; run
# `UQZOO_HYPOTHESIS_PROFILE=explore pytest` to search fresh examples locally.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("UQZOO_HYPOTHESIS_PROFILE", "ci"))
