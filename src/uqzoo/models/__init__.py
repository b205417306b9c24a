"""Networks as :class:`uqzoo.Model`: uqzoo's MLP and the user's own.

- :class:`uqzoo.MLPSpec`: the fully connected network (and its fast paths);
- :func:`from_function`: any pure JAX function ``apply(params, X) -> logits``;
- :func:`from_file`: ``FILE.py:FACTORY``, how the command line and config and
  study files name a model;
- :func:`from_flax` (Flax NNX) and :func:`from_equinox` (Equinox): modules of
  those libraries, each an optional extra (``pip install uqzoo[flax]``).

Every method, the evaluator, :func:`uqzoo.compare` and the posterior files
take any of them.
"""

from __future__ import annotations

from uqzoo.models._base import LIKELIHOODS, MAX_PARAMS, Model, fingerprint_of, unsupported
from uqzoo.models.adapters import from_equinox, from_flax
from uqzoo.models.function import FunctionModel, from_function
from uqzoo.models.source import from_file

__all__ = ["LIKELIHOODS", "MAX_PARAMS", "FunctionModel", "Model", "fingerprint_of",
           "from_equinox", "from_file", "from_flax", "from_function", "unsupported"]
