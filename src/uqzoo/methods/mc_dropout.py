"""MC dropout as a posterior over weights: one mask per hidden layer, folded into the weights.

The network is trained with (per-row) dropout on every hidden layer. A
posterior draw is then one Bernoulli(1 - p) keep-mask per hidden unit, shared
by all rows, folded into the parameters: the outgoing weights of hidden unit
j of layer l (column j of ``layers.{l+1}.weight``) are multiplied by
``mask_j / (1 - p)``. The draw is an ordinary parameter set, so MC dropout
goes through the same predictive engine, save format and evaluation as
every other method.

This differs from the usual MC-dropout predictive, which draws a fresh mask
for every row: with per-row masks the S predictions at two points are
independent given the weights, with shared masks they come from the same S
thinned networks (the Bayesian reading of Gal & Ghahramani, in which a mask
is a draw of the weights). Marginally, for each single point, the two agree
in distribution. For comparison, :func:`per_row_proba_draws` computes the
per-row predictive; it is not a parameter posterior and is not a method of
:class:`~uqzoo.Posterior`.

References
----------
Gal, Y. and Ghahramani, Z. (2016). Dropout as a Bayesian approximation:
representing model uncertainty in deep learning. ICML.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from uqzoo._validation import as_float_matrix, check_float, check_int, check_seed
from uqzoo.errors import InvalidInputError
from uqzoo.methods import _trainer
from uqzoo.methods._config import (
    FreeDraws,
    check_draw_memory,
    check_draws,
    check_training_sizes,
    config_dict,
)
from uqzoo.models import Model, unsupported
from uqzoo.posterior import Posterior, check_anchored
from uqzoo.spec import MLPSpec

__all__ = ["Config", "fit", "fold_masks", "per_row_proba_draws"]


@dataclasses.dataclass(frozen=True)
class Config(FreeDraws, _trainer.TrainingConfig):
    """Hyper-parameters of MC dropout.

    Parameters
    ----------
    dropout : float
        Dropout rate p in (0, 1) on every hidden layer's units. Default 0.1,
        the rate uqzoo's comparisons have always used; Gal & Ghahramani (2016)
        choose p per data set on validation data, which is worth doing for
        yours. Without dropout there is no posterior, so 0 is an error.
        Measured on development data (sim-teacher, gaussian-mixture,
        nonlinear-logistic, seeds 100-102, n_train 1000, 2×10 tanh fan-in
        spec), p = 0.05 / 0.1 / 0.2 / 0.3 / 0.5 give a held-out NLL of
        0.339 / 0.348 / 0.360 / 0.371 / 0.398 and 80 % intervals covering
        p_true at 0.34 / 0.46 / 0.49 / 0.50 / 0.57: the validation-likelihood
        rule would pick the smallest rate, coverage the largest; 0.1 is kept
        between them.
    num_samples : int
        S, the number of mask draws (default 200).
    optimizer, learning_rate, momentum, num_epochs, batch_size, validation_fraction, patience
        The shared trainer's options (:class:`uqzoo.methods._trainer.TrainingConfig`).
    """

    dropout: float = 0.1
    num_samples: int = 200

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "dropout", check_float(
            self.dropout, "dropout", low=0.0, high=1.0, low_open=True, high_open=True))
        object.__setattr__(self, "num_samples", check_draws(self.num_samples, "num_samples"))
        check_training_sizes(self, 1, "members")


def _check_hidden(spec: Model) -> MLPSpec:
    """The MLP with a hidden layer that MC dropout masks; any other model is refused."""
    if not (isinstance(spec, MLPSpec) and spec.dropout_masks):
        raise unsupported("mc_dropout", spec, "to know where dropout applies (the hidden "
                          "units it masks)",
                          "uqzoo.MLPSpec declares its hidden layers; other models cannot "
                          "declare dropout yet, so compare the other methods")
    if not spec.hidden:
        raise InvalidInputError("mc_dropout needs at least one hidden layer; spec.hidden is ()")
    return spec


def fold_masks(spec: MLPSpec, params: dict[str, np.ndarray], masks: list[np.ndarray],
               rate: float) -> dict[str, np.ndarray]:
    """Parameter draws equal to the network with hidden-unit masks applied.

    Parameters
    ----------
    spec : MLPSpec
    params : dict of arrays
        One parameter set (no leading axis).
    masks : list of bool arrays, one per hidden layer, each (S, hidden[l])
        True keeps the unit.
    rate : float
        The dropout rate p; kept units are scaled by 1 / (1 - p).

    Returns
    -------
    dict of ndarray, each (S, *param_shape), float32

    Examples
    --------
    >>> import numpy as np, uqzoo as uz
    >>> spec = uz.MLPSpec(3, 2, hidden=(4,))
    >>> masks = [np.array([[True, False, True, True]])]
    >>> draws = fold_masks(spec, spec.init_params(0), masks, 0.25)
    >>> draws["layers.1.weight"][0, :, 1].tolist()
    [0.0]
    """
    num = masks[0].shape[0]
    out = {k: np.repeat(np.asarray(v, dtype=np.float32)[None], num, axis=0)
           for k, v in params.items()}
    for layer, mask in enumerate(masks):
        scale = mask.astype(np.float32) / np.float32(1.0 - rate)        # (S, h)
        out[f"layers.{layer + 1}.weight"] *= scale[:, None, :]
    return out


def fit(spec, data, config: Config, *, seed: int, progress_bar: bool = True) -> Posterior:
    """Train one network with dropout, then draw S shared masks folded into the weights.

    ``seed`` seeds the initialisation, the training dropout masks and the S draws. The other
    arguments are the :class:`uqzoo.methods.Method` protocol's; the fit uses ``data``'s
    training split.

    Returns
    -------
    Posterior
        S = ``num_samples`` parameter draws; ``anchor`` holds the trained
        weights (used by :func:`per_row_proba_draws`); ``diagnostics["loss"]``
        (1, epochs).

    Examples
    --------
    One network trained with 10 % dropout, then 30 masks shared across rows:

    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
    >>> post = uz.fit("mc_dropout", spec, data, seed=0, dropout=0.1, num_samples=30,
    ...               num_epochs=200, progress_bar=False)
    >>> post.predict_proba_draws(data.X_test).shape
    (30, 50, 2)
    """
    spec = _check_hidden(spec)
    check_draw_memory(spec, config.num_samples, "num_samples")
    rate = config.dropout
    ss_train, ss_draws = np.random.SeedSequence(seed).spawn(2)
    train_seed = int(ss_train.generate_state(1)[0])
    result, _ = _trainer.fit_members(spec, data, config, seed=train_seed, num_members=1,
                                     dropout=rate, progress_bar=progress_bar,
                                     desc="mc_dropout")
    trained = {k: v[0] for k, v in result.params.items()}
    rng = np.random.default_rng(ss_draws)
    masks = [rng.random((config.num_samples, width)) >= rate for width in spec.hidden]
    draws = fold_masks(spec, trained, masks, rate)
    diagnostics = _trainer.training_diagnostics(result, config)
    diagnostics["dropout_rate"] = float(rate)
    convergence = _trainer.convergence(result, config, what="network")
    return Posterior(spec=spec, method="mc_dropout", config=config_dict(config), seed=seed,
                     draws=draws, diagnostics=diagnostics, anchor=trained,
                     converged=convergence.converged,
                     warnings=tuple(f"mc_dropout: {m}" for m in convergence.messages))


def per_row_proba_draws(posterior: Posterior, X: object, num_samples: int | None = None,
                        seed: int = 0) -> np.ndarray:
    """The classic MC-dropout predictive: a fresh dropout mask for every row and draw.

    For comparison with the shared-mask parameter draws of :func:`fit`. Each
    of the S predictions at a point uses its own masks, independent across
    rows, so these are *not* parameter draws and cannot be saved as a
    posterior; they are returned as probabilities.

    Parameters
    ----------
    posterior : Posterior
        A ``mc_dropout`` posterior (its anchor holds the trained weights).
    X : array of shape (N, D)
    num_samples : int, optional
        S; the posterior's number of draws by default.
    seed : int
        Seeds the masks.

    Returns
    -------
    ndarray of shape (S, N, K), float32

    Examples
    --------
    Fresh masks for every row, instead of masks shared across rows:

    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", n_train=200, n_test=50, seed=0)
    >>> spec = uz.MLPSpec(data.n_features, 2)  # the default 2×10 tanh network
    >>> post = uz.fit("mc_dropout", spec, data, seed=0, dropout=0.1, num_samples=30,
    ...               num_epochs=200, progress_bar=False)
    >>> per_row_proba_draws(post, data.X_test, num_samples=20).shape
    (20, 50, 2)
    """
    import torch

    from uqzoo.nets import torch as tnet

    anchor = check_anchored(posterior, "mc_dropout", "per-row masks need the trained weights")
    spec = _check_hidden(posterior.spec)
    X = as_float_matrix(X, "X", n_features=spec.in_features)
    num = posterior.num_draws if num_samples is None else check_int(
        num_samples, "num_samples", minimum=1)
    rate = float(posterior.diagnostics["dropout_rate"])
    params = tnet.to_tensors({k: np.array(v) for k, v in anchor.items()})
    generator = torch.Generator().manual_seed(check_seed(seed))
    out = np.empty((num, X.shape[0], spec.n_classes), dtype=np.float32)
    # Chunk rows so each layer's (S, chunk, width) mask stays near 32 Mi elements (all
    # layers' are alive together). The chunking of earlier releases: the same seed
    # still draws the same masks row by row.
    chunk = max(1, 2**25 // (num * max(spec.hidden)))
    with torch.no_grad():
        for start in range(0, X.shape[0], chunk):
            rows = torch.from_numpy(np.array(X[start:start + chunk]))
            # Drawn layer by layer, as (S, rows, width): a fresh mask per row and draw.
            # Kept units are scaled by 1/(1 - p) in float32, as fold_masks does.
            masks = [(torch.rand((num, rows.shape[0], width), generator=generator) >= rate)
                     / (1.0 - rate) for width in spec.hidden]
            logits = tnet.forward_logits(spec, params, rows, hidden_masks=masks)
            out[:, start:start + chunk] = tnet.logits_to_proba(
                spec, logits, posterior.logit_transform).numpy()
    return out
