"""Test-suite settings shared by every test module."""

import os
from pathlib import Path

import matplotlib
from hypothesis import settings

matplotlib.use("Agg")  # no screen on CI machines

# XLA compilation is most of the time of a short fit (a quick 20-epoch fit
# compiles for about 1 s and trains for 0.1 s), and the suite compiles the same
# programs again in each xdist worker, each CLI subprocess and each notebook
# kernel. JAX's persistent cache shares them: these environment variables are
# read when jax is first imported, here and in every child process. Compiled
# programs are keyed by their HLO, backend and flags, so a hit runs exactly
# what a fresh compilation would. `.jax_cache/` is git-ignored; capped at 1 GB.
_JAX_CACHE = Path(__file__).resolve().parent.parent / ".jax_cache"
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(_JAX_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(2**30))

# CI runs the property tests derandomised, so a green main stays green; run
# `UQZOO_HYPOTHESIS_PROFILE=explore pytest` to search fresh examples locally.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=500)
settings.load_profile(os.environ.get("UQZOO_HYPOTHESIS_PROFILE", "ci"))
