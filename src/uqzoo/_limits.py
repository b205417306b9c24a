"""The size limits every fit and every file shares, and the checks that apply them.

Every count a user passes to a fit is bounded, as the spec's widths and the
dataset loaders already are, so that a typo (``num_members=10**9`` for
``10**3``) ends in an error that names the argument, the value and the
limit -- not in a Python loop that spins for days or a raw ``MemoryError``
hours later. Each limit is chosen from the memory or time the quantity costs;
the reason sits next to it. A posterior file is checked against the same
limits when it is loaded (:mod:`uqzoo.io`), so this module sits below both.
"""

from __future__ import annotations

from typing import Any

from uqzoo._validation import check_int
from uqzoo.errors import InvalidInputError

__all__ = ["MAX_CONFIG_BYTES", "MAX_COPIES", "MAX_DEFLATE_RATIO", "MAX_DRAWS", "MAX_DRAW_BYTES",
           "MAX_ITERATIONS", "MAX_MATRIX_ELEMENTS", "MAX_MEMBERS", "MAX_SKIPROWS",
           "MAX_STUDY_TASKS", "MAX_TRACE_ELEMENTS", "check_chain_sizes", "check_copies",
           "check_draw_memory", "check_draws", "check_iterations", "check_members",
           "check_study_tasks", "check_trace"]

# Networks trained (or chains run) side by side: num_members, num_chains,
# num_runs. The vectorised trainer holds every member's parameters, gradients
# and two Adam moments plus its (rows, width) activations at once: 10**4
# members of the default 2×10 network on 1000 rows already need
# 10**4 × 1000 × 20 × 4 bytes = 0.8 GB of activations alone.
MAX_MEMBERS = 10_000

# Parameter draws S one fit may produce. The Monte Carlo error of a posterior
# mean falls as 1/sqrt(S): at 2**20 draws it is 1/1024 of a posterior standard
# deviation, so more draws buy nothing, and 2**20 draws of the default
# 631-parameter network already hold 2.6 GB of float32.
MAX_DRAWS = 2**20

# Epochs, optimiser steps and sampler iterations per chain. At a typical
# 1 ms per full-batch step, 10**7 steps already take about three hours; the
# loss and ELBO traces keep one float per step.
MAX_ITERATIONS = 10_000_000

# Members × epochs: the (M, E) float32 loss trace a trained method keeps in
# its diagnostics (and writes into its saved file) is at most 1 GiB.
MAX_TRACE_ELEMENTS = 2**28

# S × n_params × 4 bytes: the float32 parameter draws a posterior holds in
# memory (and the file it saves to) stay under 4 GiB.
MAX_DRAW_BYTES = 2**32

# Work of one method's predictive pass in a comparison, estimated as
# S draws × N points × (P parameters + 30 K): the forward pass's multiply-adds
# plus the per-point interval quantiles over S (a sort, about log2 S ≤ 20
# steps per class, with a margin). 2**40 (1.1e12) is some minutes on a laptop's
# cores; a full default run (1,000 draws) stays below it up to ~100,000 test
# points of a 10-wide network on 1,000 features. Prediction memory is bounded
# by chunking (O(S × chunk)), so time, not memory, is what this caps.
MAX_PREDICTION_WORK = 2**40
# Above this estimate (about ten seconds) a comparison shows a progress bar
# while it predicts.
LONG_PREDICTION_WORK = 2**34

# Entries of one dense float64 matrix a fit builds (Laplace's full GGN
# precision, P × P): 2**28 entries are 2 GiB, and its Cholesky factor and
# inverse need as much again each.
MAX_MATRIX_ELEMENTS = 2**28

# Perturbed copies of a test set per perturbation (--copies, evaluate(copies=),
# perturb.copies(k=)). The spread over K copies is reported as an sd, whose
# relative standard error is about 1/sqrt(2(K - 1)): 2 % at K = 1000, so more
# copies buy nothing, while each is a full evaluation of the test set (and
# perturb.copies holds all K in memory).
MAX_COPIES = 1000

# Tasks one study may expand to: data-set settings × method variants ×
# replicates. Each task is one fit; at a second a fit, 10**5 tasks already
# take more than a day, and the expansion itself holds every task in memory.
MAX_STUDY_TASKS = 100_000

# Bytes of a study or compare config file. The largest real ones are a few
# KB; a bound keeps a mistaken --config /dev/zero or a huge file from being
# read into memory (and a FIFO is refused for not being a regular file).
MAX_CONFIG_BYTES = 2**20

# zlib cannot expand data by more than 1032:1 (zlib's documented maximum
# compression factor), so deflate-compressed data (a netCDF variable, an .npz
# member) may declare at most this many times the bytes it stores.
MAX_DEFLATE_RATIO = 1032

# Rows a CSV read may skip (pandas.read_csv's skiprows). pandas keeps every
# skipped row number in a set, ~100 bytes each: skiprows = 10**7 already took
# 0.9 GB and 6 s on an empty file. A preamble of a million lines is not one.
MAX_SKIPROWS = 1_000_000


def _at_most(value: object, name: str, minimum: int, maximum: int, why: str) -> int:
    """``value`` as an int in [minimum, maximum]; ``why`` says in the error why the cap is there."""
    value = check_int(value, name, minimum=minimum)
    if value > maximum:
        raise InvalidInputError(f"{name} must be at most {maximum:,} ({why}), got {value:,}")
    return value


def check_copies(value: object, name: str) -> int:
    """``value`` as an int in [1, MAX_COPIES] (perturbed copies per perturbation)."""
    return _at_most(value, name, 1, MAX_COPIES,
                    "the sd over 1000 copies is already known to 2 %, and each copy is a full "
                    "evaluation of the test set")


def check_study_tasks(count: int, what: str) -> None:
    """Raise unless a study of ``count`` tasks (``what`` says how they multiply) is allowed."""
    if count > MAX_STUDY_TASKS:
        raise InvalidInputError(
            f"{what} = {count:,} tasks, more than the {MAX_STUDY_TASKS:,} a study may hold "
            f"(each task is a fit: at a second each that is already more than a day); "
            f"split the study or list fewer values")


def check_iterations(value: object, name: str, *, minimum: int = 1) -> int:
    """``value`` as an int in [minimum, MAX_ITERATIONS] (epochs, steps, iterations)."""
    return _at_most(value, name, minimum, MAX_ITERATIONS,
                    "at ~1 ms per step that is already about three hours")


def check_members(value: object, name: str) -> int:
    """``value`` as an int in [1, MAX_MEMBERS] (members, chains, runs)."""
    return _at_most(value, name, 1, MAX_MEMBERS,
                    "each is a network run side by side with the others; their activations "
                    "alone would need tens of GB")


def check_draws(value: object, name: str, *, minimum: int = 1) -> int:
    """``value`` as an int in [minimum, MAX_DRAWS] (posterior draws S)."""
    return _at_most(value, name, minimum, MAX_DRAWS,
                    "2**20 draws: the Monte Carlo error is then 1/1024 of a posterior sd, and "
                    "the draws of the default network take 2.6 GB")


def check_chain_sizes(num_chains: int, draws_per_chain: int, num_warmup: int,
                      thinning: int) -> None:
    """Bound a sampler's total draws and its iterations per chain."""
    if num_chains * draws_per_chain > MAX_DRAWS:
        raise InvalidInputError(
            f"num_samples = {num_chains * draws_per_chain:,} must be at most {MAX_DRAWS:,} "
            f"draws (2**20: the Monte Carlo error is then 1/1024 of a posterior sd)")
    iterations = num_warmup + draws_per_chain * thinning
    if iterations > MAX_ITERATIONS:
        raise InvalidInputError(
            f"num_warmup + (num_samples / num_chains) × thinning = {iterations:,} iterations "
            f"per chain must be at most {MAX_ITERATIONS:,} (at ~1 ms per iteration that is "
            f"already about three hours)")


def check_trace(members: int, steps: int, members_name: str, steps_name: str) -> None:
    """Raise unless a (members, steps) float32 trace fits in MAX_TRACE_ELEMENTS."""
    if members * steps > MAX_TRACE_ELEMENTS:
        raise InvalidInputError(
            f"{members_name} × {steps_name} = {members:,} × {steps:,} must be at most "
            f"{MAX_TRACE_ELEMENTS:,} (2**28): the loss trace keeps one float32 per member and "
            f"{steps_name.removeprefix('num_').removesuffix('s')}, at most 1 GiB")


def check_draw_memory(spec: Any, count: int, name: str) -> None:
    """Raise unless ``count`` float32 parameter vectors of ``spec`` fit in MAX_DRAW_BYTES.

    Called at the start of a fit, where the spec is known: the config alone
    cannot tell how large one draw is.
    """
    nbytes = count * spec.n_params * 4
    if nbytes > MAX_DRAW_BYTES:
        raise InvalidInputError(
            f"{name} = {count:,} parameter vectors of {spec.n_params:,} float32 values need "
            f"{nbytes / 2**30:.1f} GiB, more than the {MAX_DRAW_BYTES // 2**30} GiB a posterior "
            f"may hold; lower {name} or use a smaller network")
