"""Networks as :class:`uqzoo.Model`: uqzoo's MLP and the user's own.

- :class:`uqzoo.MLPSpec`: the fully connected network (and its fast paths);
- :func:`from_function`: any pure JAX function ``apply(params, X) -> logits``;
- :func:`from_flax` (Flax NNX) and :func:`from_equinox` (Equinox): modules of
  those libraries, each an optional extra (``pip install uqzoo[flax]``).

Every method, the evaluator, :func:`uqzoo.compare` and the posterior files
take any of them.
"""

from __future__ import annotations

from uqzoo.models._base import LIKELIHOODS, MAX_PARAMS, Model, fingerprint_of, unsupported
from uqzoo.models.function import FunctionModel, from_function

__all__ = ["LIKELIHOODS", "MAX_PARAMS", "FunctionModel", "Model", "fingerprint_of",
           "from_function", "unsupported"]
