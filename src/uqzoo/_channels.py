"""The perturbation families as channels on a feature matrix, and test-time augmentation.

:mod:`uqzoo.perturb` builds perturbed copies of a data set from these
families; :class:`InputAugmentation` applies them to the inputs of every
predictive draw (the ``tta`` method, :mod:`uqzoo.methods.tta`). Both read the
one family table here, which sits in the core so that the predictive engine,
the posterior type and its files can use it without importing data sets.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from uqzoo._validation import _show, check_choice, check_float, check_seed
from uqzoo.errors import InvalidInputError, InvalidTypeError

__all__ = ["FAMILIES", "FILLS", "Family", "InputAugmentation", "check_magnitude", "family"]

FILLS = ("zero", "interpolate")


# -- the channel a family applies ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Context:
    """Raw-unit statistics of one data set, computed once for all its copies.

    Attributes
    ----------
    center, scale : float64 (D,) or None
        The standardisation ``X_std = (X_raw - center) / scale``; None when
        the stored features are raw.
    train_mean, train_sd : float64 (D,)
        Raw training mean and (population) standard deviation per feature.
    train_rms : float
        Root mean square of all raw training values: the signal level of the
        ``noise`` family's SNR.
    """

    center: np.ndarray | None
    scale: np.ndarray | None
    train_mean: np.ndarray
    train_sd: np.ndarray
    train_rms: float

    @classmethod
    def of(cls, data: Any) -> _Context:
        meta = data.meta
        center = scale = None
        if meta.get("standardized") and "mean" in meta and "scale" in meta:
            center = np.asarray(meta["mean"], dtype=np.float64).reshape(-1)
            scale = np.asarray(meta["scale"], dtype=np.float64).reshape(-1)
            if center.shape != (data.n_features,) or scale.shape != (data.n_features,):
                raise InvalidInputError(
                    f"data.meta['mean'] and ['scale'] must hold one value per feature "
                    f"({data.n_features}), got shapes {center.shape} and {scale.shape}")
        ctx = cls(center, scale, np.zeros(0), np.zeros(0), 0.0)
        train = ctx.to_raw(data.X_train)
        return cls(center, scale, train.mean(axis=0), train.std(axis=0),
                   float(np.sqrt(np.mean(train * train))))

    def to_raw(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return X if self.scale is None else X * self.scale + self.center

    def from_raw(self, X: np.ndarray) -> np.ndarray:
        return X if self.scale is None else (X - self.center) / self.scale


@dataclasses.dataclass(frozen=True)
class _Channel:
    """x' = gain · M x + offset + η, η ~ N(0, diag(noise_var)), on the ``observed`` features.

    Features not observed hold values that carry no information about x (a
    constant, or an interpolation of observed ones), so the truth drops them.

    Attributes
    ----------
    X : float64 (N, D)
        The perturbed raw test features.
    gain : float
    mix : float64 (D, D) or None
        M; None is the identity.
    offset : float
    noise_var : float64 (D,) or float
    observed : bool (D,) or None
        None: every feature.
    details : dict
        What this copy did (for ``meta["perturbation"]``).
    """

    X: np.ndarray
    gain: float = 1.0
    mix: np.ndarray | None = None
    offset: float = 0.0
    noise_var: np.ndarray | float = 0.0
    observed: np.ndarray | None = None
    details: dict = dataclasses.field(default_factory=dict)

    def restricted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(X', A, b, noise variance) on the observed features: the truth's channel."""
        D = self.X.shape[1]
        keep = np.ones(D, dtype=bool) if self.observed is None else self.observed
        mix = np.eye(D) if self.mix is None else self.mix
        A = self.gain * mix[keep]
        b = np.full(int(keep.sum()), float(self.offset))
        noise_var = np.broadcast_to(np.asarray(self.noise_var, dtype=np.float64), (D,))[keep]
        return self.X[:, keep], A, b, np.array(noise_var)


def _n_dropped(fraction: float, D: int) -> int:
    # The nearest whole number of features, halves rounded up.
    return math.floor(fraction * D + 0.5)


def _t_illumination(X: np.ndarray, gain: float, rng: np.random.Generator, ctx: _Context,
                    fill: str | None) -> _Channel:
    return _Channel(X=gain * X, gain=gain)


def _t_offset(X: np.ndarray, b: float, rng: np.random.Generator, ctx: _Context,
              fill: str | None) -> _Channel:
    return _Channel(X=X + b, offset=b)


def _t_noise(X: np.ndarray, snr_db: float, rng: np.random.Generator, ctx: _Context,
             fill: str | None) -> _Channel:
    sd = ctx.train_rms / 10.0 ** (snr_db / 20.0)
    return _Channel(X=X + sd * rng.standard_normal(X.shape), noise_var=sd * sd,
                    details={"noise_sd": sd})


def _dropped(D: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(D, size=_n_dropped(fraction, D), replace=False))


def _t_band_dropout(X: np.ndarray, fraction: float, rng: np.random.Generator, ctx: _Context,
                    fill: str | None) -> _Channel:
    D = X.shape[1]
    dead = _dropped(D, fraction, rng)
    observed = np.ones(D, dtype=bool)
    observed[dead] = False
    out = X.copy()
    if fill == "interpolate" and dead.size:
        live = np.flatnonzero(observed)
        pos = np.searchsorted(live, dead)
        left = live[np.maximum(pos - 1, 0)]
        right = live[np.minimum(pos, live.size - 1)]
        # Past the first or last live band the nearest live band is copied.
        left = np.where(pos == 0, right, left)
        right = np.where(pos == live.size, left, right)
        span = np.where(right > left, right - left, 1)
        w_right = np.where(right > left, (dead - left) / span, 0.0)
        out[:, dead] = X[:, left] * (1 - w_right) + X[:, right] * w_right
    else:
        out[:, dead] = 0.0
    return _Channel(X=out, observed=observed,
                    details={"dead_features": dead.tolist(), "fill": fill or "zero"})


def _shift_matrix(D: int, shift: float) -> np.ndarray:
    """x'_b = (1 − |s|) x_b + |s| x_{b ± 1}, the edge band repeated."""
    s = abs(shift)
    step = 1 if shift >= 0 else -1
    M = (1 - s) * np.eye(D)
    idx = np.arange(D)
    M[idx, np.clip(idx + step, 0, D - 1)] += s
    return M


def _t_spectral_shift(X: np.ndarray, shift: float, rng: np.random.Generator, ctx: _Context,
                      fill: str | None) -> _Channel:
    M = _shift_matrix(X.shape[1], shift)
    return _Channel(X=X @ M.T, mix=M)


def _t_gaussian_noise(X: np.ndarray, scale: float, rng: np.random.Generator, ctx: _Context,
                      fill: str | None) -> _Channel:
    sd = scale * ctx.train_sd
    return _Channel(X=X + sd * rng.standard_normal(X.shape), noise_var=sd * sd)


def _t_missing_features(X: np.ndarray, fraction: float, rng: np.random.Generator,
                        ctx: _Context, fill: str | None) -> _Channel:
    D = X.shape[1]
    missing = _dropped(D, fraction, rng)
    observed = np.ones(D, dtype=bool)
    observed[missing] = False
    out = X.copy()
    out[:, missing] = ctx.train_mean[missing]
    return _Channel(X=out, observed=observed, details={"missing_features": missing.tolist()})


# -- the registry -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Family:
    """One perturbation family: what its magnitude is and where it is allowed.

    Attributes
    ----------
    name : str
    kind : {"hsi", "tabular"}
        The data it models (every family is defined on any data set).
    magnitude : str
        What the number is, with its unit.
    model : str
        What the family does to a feature vector x.
    default : (float, float)
        The magnitude range :func:`copies` uses when given none.
    low, high : float or None
        The physical domain of the magnitude (None: unbounded).
    low_open, high_open : bool
        Whether the bound itself is excluded.
    keeps_truth : bool
        The map is invertible: every copy keeps ``p_true_test`` unchanged.
    """

    name: str
    kind: str
    magnitude: str
    model: str
    default: tuple[float, float]
    low: float | None
    high: float | None
    low_open: bool
    high_open: bool
    keeps_truth: bool
    transform: Callable[..., _Channel] = dataclasses.field(repr=False)

    def domain(self) -> str:
        """The allowed magnitudes as an interval, e.g. ``(0, inf)``."""
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        return f"{'(' if self.low_open or self.low is None else '['}{lo}, {hi}" \
               f"{')' if self.high_open or self.high is None else ']'}"


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("illumination", "hsi", "gain", "x' = g x", (0.8, 1.2),
           0.0, None, True, False, True, _t_illumination),
    Family("offset", "hsi", "offset (raw units)", "x' = x + b", (0.0, 0.05),
           None, None, False, False, True, _t_offset),
    # 0 dB: noise as strong as the signal; 100 dB: 1e-5 of it, below what a
    # standardised float32 feature resolves once its mean is subtracted.
    Family("noise", "hsi", "SNR (dB)", "x' = x + τ ε, τ = RMS / 10^(SNR/20)", (20.0, 40.0),
           0.0, 100.0, False, False, False, _t_noise),
    Family("band_dropout", "hsi", "fraction of bands dead",
           "round(fraction × D) random bands read 0 (or are interpolated)", (0.02, 0.1),
           0.0, 1.0, False, True, False, _t_band_dropout),
    # |s| <= 0.5: a misregistration of up to half a band, where the
    # resampling's inverse has entries of at most 2 (so float32 storage loses
    # nothing the truth relies on).
    Family("spectral_shift", "hsi", "shift (bands)",
           "x'_b = (1 − |s|) x_b + |s| x_(b ± 1)", (-0.5, 0.5),
           -0.5, 0.5, False, False, True, _t_spectral_shift),
    Family("gaussian_noise", "tabular", "noise sd / training sd",
           "x'_j = x_j + scale · sd_j · ε", (0.1, 0.5),
           0.0, None, False, False, False, _t_gaussian_noise),
    Family("missing_features", "tabular", "fraction of features missing",
           "round(fraction × D) random features set to their training mean", (0.1, 0.3),
           0.0, 1.0, False, True, False, _t_missing_features),
)}


def family(name: object, what: str = "family") -> Family:
    """The family called ``name``; an error naming ``what`` and the families otherwise."""
    if not isinstance(name, str):
        raise InvalidTypeError(
            f"{what} must be a perturbation family name ({', '.join(FAMILIES)}), got "
            f"{_show(name)}")
    return FAMILIES[check_choice(name, what, list(FAMILIES))]


def check_magnitude(fam: Family, value: object, what: str) -> float:
    return check_float(value, f"{what} of {fam.name} ({fam.magnitude})", low=fam.low,
                       high=fam.high, low_open=fam.low_open, high_open=fam.high_open)



# -- test-time augmentation: one augmented copy of the inputs per predictive draw ------------

# At most this many augmentation steps: a longer list is no augmentation anyone
# means, and a file may not declare an unbounded one.
MAX_STEPS = 64

# splitmix64's constants (Steele, Lea and Flood 2014): a fast bijective mixer of
# 64-bit words, used to turn a row's bits and a draw's key into noise.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 of every element of a uint64 array (wrapping arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _row_keys(X: np.ndarray) -> np.ndarray:
    """One 64-bit key per row of a float32 matrix, a function of the row's values only."""
    bits = np.ascontiguousarray(X, dtype=np.float32).view(np.uint32).astype(np.uint64)
    columns = _splitmix(np.arange(1, X.shape[1] + 1, dtype=np.uint64))
    return _splitmix(_splitmix(bits ^ columns).sum(axis=1, dtype=np.uint64))


def _row_normals(keys: np.ndarray, step_key: int, D: int) -> np.ndarray:
    """Standard normals (N, D), float64: Box-Muller on two hashed uniforms per element."""
    columns = _splitmix(np.arange(1, D + 1, dtype=np.uint64) ^ np.uint64(step_key))
    first = _splitmix(keys[:, None] ^ columns[None, :])
    second = _splitmix(first)
    u1 = ((first >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53     # in (0, 1)
    u2 = ((second >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


class _StepRandomness:
    """What a family's transform draws from, for one step of one predictive draw.

    Noise is a function of (seed, draw, step, row values): a draw's prediction
    at a point then depends on that point only, never on which other rows
    share its batch or where it sits in it, so any chunking of X gives the
    same draws. Which features drop out is one choice per draw (shared by
    all rows, as a dead detector element is), from the draw's generator.
    """

    def __init__(self, generator: np.random.Generator, step_key: int,
                 row_keys: Callable[[], np.ndarray]):
        self._generator = generator
        self._step_key = step_key
        self._row_keys = row_keys

    def standard_normal(self, shape: tuple[int, int]) -> np.ndarray:
        keys = self._row_keys()
        if tuple(shape) != (keys.shape[0], shape[1]):
            raise AssertionError(f"noise of shape {shape} for {keys.shape[0]} rows")
        return _row_normals(keys, self._step_key, int(shape[1]))

    def choice(self, *args: Any, **kwargs: Any) -> Any:
        return self._generator.choice(*args, **kwargs)


def _feature_vector(value: object, name: str, D: int | None, positive: bool = False
                    ) -> np.ndarray:
    arr = None
    if isinstance(value, (list, tuple, np.ndarray)) and not any(
            isinstance(v, (bool, str, bytes)) for v in value):
        try:
            arr = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
    if arr is None or arr.ndim != 1 or arr.size == 0 or (D is not None and arr.size != D):
        want = "one value per feature" if D is None else f"{D} values, one per feature"
        raise InvalidInputError(f"{name} must be a 1-D array of {want}, got {_show(value)}")
    if not np.all(np.isfinite(arr)) or (positive and np.any(arr <= 0)):
        raise InvalidInputError(f"{name} must hold finite{' positive' if positive else ''} "
                                "numbers")
    arr.flags.writeable = False
    return arr


@dataclasses.dataclass(frozen=True, eq=False)
class InputAugmentation:
    """Test-time augmentation: predictive draw s sees its own augmented copy of the inputs.

    Each step is a perturbation family (:mod:`uqzoo.perturb`) with a magnitude
    range; draw s applies the steps in order to the raw features of X (the
    data's standardisation undone, then redone, as :mod:`uqzoo.perturb`
    does), each step's magnitude drawn uniformly from its range for that
    draw. The draws are a function of (``seed``, s, the row): the same seed
    gives the same draws, and a point's draws do not depend on the other
    rows of X. Everything here is data (names, numbers, the training
    statistics the families need), saved with the posterior as JSON.

    Attributes
    ----------
    steps : tuple of (family, low, high, fill)
        The augmentations, applied in order; ``fill`` is ``"zero"`` or
        ``"interpolate"`` for ``band_dropout``, None otherwise.
    seed : int
    train_mean, train_sd : float64 ndarray of shape (D,)
        Raw training mean and standard deviation of each feature
        (``gaussian_noise`` scales by the sd, ``missing_features`` imputes the mean).
    train_rms : float
        Root mean square of the raw training values (``noise``'s signal level).
    center, scale : float64 ndarray of shape (D,), or None
        The data's standardisation ``X = (X_raw - center) / scale``; None
        when the features are raw.
    """

    steps: tuple[tuple[str, float, float, str | None], ...]
    seed: int
    train_mean: np.ndarray
    train_sd: np.ndarray
    train_rms: float
    center: np.ndarray | None = None
    scale: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if isinstance(self.steps, (str, bytes)) or not isinstance(self.steps, Sequence):
            raise InvalidTypeError(f"steps must be a sequence of (family, low, high, fill), "
                                   f"got {_show(self.steps)}")
        if len(self.steps) > MAX_STEPS:
            raise InvalidInputError(f"steps must hold at most {MAX_STEPS} augmentations, got "
                                    f"{len(self.steps)}")
        mean = _feature_vector(self.train_mean, "train_mean", None)
        D = mean.size
        set_(self, "train_mean", mean)
        sd = _feature_vector(self.train_sd, "train_sd", D)
        if np.any(sd < 0):
            raise InvalidInputError("train_sd must hold standard deviations (>= 0)")
        set_(self, "train_sd", sd)
        set_(self, "train_rms", check_float(self.train_rms, "train_rms", low=0.0))
        if (self.center is None) != (self.scale is None):
            raise InvalidInputError("center and scale must be given together (or neither)")
        if self.center is not None:
            set_(self, "center", _feature_vector(self.center, "center", D))
            set_(self, "scale", _feature_vector(self.scale, "scale", D, positive=True))
        set_(self, "seed", check_seed(self.seed))
        set_(self, "steps", tuple(self._check_step(step, D) for step in self.steps))

    @staticmethod
    def _check_step(step: object, D: int) -> tuple[str, float, float, str | None]:
        if isinstance(step, (str, bytes)) or not isinstance(step, Sequence) or len(step) != 4:
            raise InvalidInputError(f"an augmentation step must be (family, low, high, fill), "
                                    f"got {_show(step)}")
        fam = family(step[0], "augmentation family")
        low = check_magnitude(fam, step[1], "magnitude low")
        high = check_magnitude(fam, step[2], "magnitude high")
        if low > high:
            raise InvalidInputError(f"augmentation {fam.name}: magnitude low {low:g} must not "
                                    f"exceed high {high:g}")
        fill = step[3]
        if fam.name == "band_dropout":
            fill = check_choice("zero" if fill is None else fill, "fill", FILLS)
        elif fill is not None:
            raise InvalidInputError(f"fill applies to band_dropout only, not to {fam.name}; "
                                    f"got fill={fill!r}")
        if fam.name in ("band_dropout", "missing_features") and _n_dropped(high, D) > D - 1:
            raise InvalidInputError(
                f"augmentation {fam.name} at magnitude {high:g} would remove "
                f"{_n_dropped(high, D)} of the {D} features; it must leave at least one "
                f"(fraction < {(D - 0.5) / D:.4g})")
        return fam.name, low, high, fill

    @classmethod
    def from_data(cls, steps: Sequence[tuple[str, float, float, str | None]], data: Any,
                  seed: int) -> InputAugmentation:
        """The augmentation of ``data``'s features (its training statistics and
        standardisation) by ``steps``."""
        ctx = _Context.of(data)
        return cls(steps=tuple(steps), seed=seed, train_mean=ctx.train_mean,
                   train_sd=ctx.train_sd, train_rms=ctx.train_rms, center=ctx.center,
                   scale=ctx.scale)

    @property
    def n_features(self) -> int:
        """D, the number of features it augments."""
        return int(self.train_mean.size)

    def _context(self) -> _Context:
        return _Context(self.center, self.scale, self.train_mean, self.train_sd,
                        self.train_rms)

    def apply(self, X: np.ndarray, draw: int) -> np.ndarray:
        """Predictive draw ``draw``'s augmented copy of X: float32, shape (N, D)."""
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise InvalidInputError(f"X must have shape (N, {self.n_features}), got {X.shape}")
        if not self.steps:
            return X
        generator = np.random.default_rng([self.seed, check_seed(draw)])
        keys: list[np.ndarray] = []

        def row_keys() -> np.ndarray:
            if not keys:
                keys.append(_row_keys(X))
            return keys[0]

        ctx = self._context()
        raw = ctx.to_raw(X)
        with np.errstate(over="ignore", invalid="ignore"):   # reported below, in words
            for name, low, high, fill in self.steps:
                magnitude = low if low == high else float(generator.uniform(low, high))
                step_key = int(generator.integers(2**63))
                raw = FAMILIES[name].transform(
                    raw, magnitude, _StepRandomness(generator, step_key, row_keys), ctx,
                    fill).X
            out = ctx.from_raw(raw)
        limit = float(np.finfo(np.float32).max)
        if not np.all(np.isfinite(out)) or (out.size and np.abs(out).max() > limit):
            raise InvalidInputError(
                f"the augmentations {self.describe()} make the inputs overflow float32; use "
                "magnitudes nearer their families' default ranges")
        return out.astype(np.float32)

    def describe(self) -> str:
        """The steps as ``family:low-high`` labels, comma-separated."""
        return ", ".join(_label(name, low, high, fill) for name, low, high, fill in self.steps) \
            or "(none)"

    def to_dict(self) -> dict[str, Any]:
        """JSON-plain form (what a saved posterior holds); :meth:`from_dict` reads it."""
        def plain(a: np.ndarray | None) -> list[float] | None:
            return None if a is None else [float(v) for v in a]

        return {"steps": [{"family": n, "low": lo, "high": hi, "fill": f}
                          for n, lo, hi, f in self.steps],
                "seed": self.seed, "train_mean": plain(self.train_mean),
                "train_sd": plain(self.train_sd), "train_rms": self.train_rms,
                "center": plain(self.center), "scale": plain(self.scale)}

    @classmethod
    def from_dict(cls, value: object) -> InputAugmentation:
        """The augmentation :meth:`to_dict` wrote, checked as the constructor checks it."""
        keys = {"steps", "seed", "train_mean", "train_sd", "train_rms", "center", "scale"}
        if not isinstance(value, Mapping) or set(value) != keys:
            raise InvalidInputError(f"an input augmentation must be an object with the keys "
                                    f"{sorted(keys)}, got {_show(value)}")
        steps = value["steps"]
        if not isinstance(steps, list) or not all(
                isinstance(s, Mapping) and set(s) == {"family", "low", "high", "fill"}
                for s in steps):
            raise InvalidInputError("steps must be a list of objects with the keys family, "
                                    "low, high and fill")
        return cls(steps=tuple((s["family"], s["low"], s["high"], s["fill"]) for s in steps),
                   seed=value["seed"], train_mean=value["train_mean"],
                   train_sd=value["train_sd"], train_rms=value["train_rms"],
                   center=value["center"], scale=value["scale"])

    def __repr__(self) -> str:
        return f"InputAugmentation({self.describe()}, seed={self.seed}, D={self.n_features})"


def _label(name: str, low: float, high: float, fill: str | None) -> str:
    head = name if fill in (None, "zero") else f"{name}({fill})"
    return f"{head}:{low:.15g}-{high:.15g}"
