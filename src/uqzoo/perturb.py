"""``uz.perturb``: named, seeded test-time perturbations, for evaluation under shift.

One fixed test set hides how a method behaves when acquisition conditions
change. Test-and-evaluation practice evaluates a model on K augmented copies
of its test set and reports every metric as mean ± sd over the copies; each
family here is a named transform of the *test* features with a magnitude
range, and :func:`copies` draws each copy's magnitude uniformly from the
range and records it. Labels and the training split are never changed: the
shift is in the sensor, not in the scene.

Families (magnitude; default range; what happens to ``p_true_test``):

- ``illumination``: gain g > 0, x' = g x; 0.8–1.2; unchanged.
- ``offset``: b in raw units, x' = x + b; 0–0.05; unchanged.
- ``noise``: SNR in dB (0–100), x' = x + τ ε; 20–40; recomputed on Gaussian
  generators.
- ``band_dropout``: fraction of bands dead, [0, 1); 0.02–0.1; recomputed on
  Gaussian generators.
- ``spectral_shift``: shift in bands, |s| ≤ 0.5; −0.5–0.5; unchanged.
- ``gaussian_noise``: noise sd over each feature's training sd, ≥ 0;
  0.1–0.5; recomputed on Gaussian generators.
- ``missing_features``: fraction of features missing, [0, 1); 0.1–0.3;
  recomputed on Gaussian generators.

The first five model hyperspectral acquisition (spectra in reflectance), the
last two tabular data; every family is defined on any data set. Each acts on
the data's *raw* features: standardised data (``meta["standardized"]`` with
``meta["mean"]``, ``meta["scale"]``) are mapped back, perturbed and
standardised again with the same training statistics, as a deployed model
would see them.

The truth
---------
A copy's ``p_true_test`` is the Bayes posterior P(y | x') given the perturbed
point and the copy's magnitude (known to the truth, not to the model):

- **unchanged** for ``illumination``, ``offset`` and ``spectral_shift``: each
  is an invertible map of x, so P(y | x') = P(y | x) exactly, on any data that
  has a ``p_true_test``;
- **recomputed exactly** for the families that lose information (``noise``,
  ``band_dropout``, ``missing_features``, ``gaussian_noise``) on ``hsi-sim``
  and ``gaussian-mixture``, whose class-conditional models are Gaussian:
  every family here is an affine-Gaussian channel x' = A x + b + η on the
  features that still carry information, so the perturbed generator is
  Gaussian again and its Bayes posterior is computed
  (:func:`uqzoo.datasets.hsi_sim.shifted_p_true`,
  :func:`uqzoo.datasets.known_truth.shifted_p_true_gaussian_mixture`);
- **unavailable** (None) for those families elsewhere (``sim-teacher``,
  ``nonlinear-logistic``): P(y | x') = E[P(y | x) | x'] is an integral with no
  closed form there.

Each copy's ``meta["perturbation"]`` says which, and why.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from uqzoo._channels import (  # the family table, shared with test-time augmentation
    FAMILIES,
    FILLS,
    Family,
    _Context,
    _n_dropped,
    _shift_matrix,  # noqa: F401  # the spectral-shift matrix, read by the truth's tests
    family,
)
from uqzoo._channels import check_magnitude as _check_magnitude
from uqzoo._limits import check_copies
from uqzoo._validation import _show, check_choice, check_seed
from uqzoo.errors import DataWarning, InvalidInputError, InvalidTypeError

__all__ = [
    "FAMILIES",
    "Family",
    "Perturbation",
    "PerturbedCopies",
    "apply",
    "band_dropout",
    "copies",
    "gaussian_noise",
    "illumination",
    "iter_copies",
    "missing_features",
    "names",
    "noise",
    "offset",
    "spectral_shift",
]

# Truth kinds recorded in each copy's meta["perturbation"]["p_true"].
TRUTH_KINDS = ("unchanged", "recomputed", "unavailable")




def names() -> list[str]:
    """The perturbation families, in a stable order.

    Example
    -------
    >>> import uqzoo as uz
    >>> uz.perturb.names()[:3]
    ['illumination', 'offset', 'noise']
    """
    return list(FAMILIES)


def _family(name: object, what: str = "family") -> Family:
    return family(name, what)




def _num(value: float) -> str:
    """The shortest text that reads back as ``value`` (``0.8``, not ``0.8000000000000002``)."""
    text = f"{value:.15g}"
    return text if float(text) == value else repr(value)


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*(?:-|,|\.\.)\s*({_NUMBER})\s*$")
_SINGLE = re.compile(rf"^\s*({_NUMBER})\s*$")
_FILL_SUFFIX = re.compile(r"^(\w+)\((\w+)\)$")


@dataclasses.dataclass(frozen=True)
class Perturbation:
    """A perturbation family with its magnitude range, validated on construction.

    Parameters
    ----------
    family : str
        One of :func:`names`.
    magnitude : (float, float) or float, optional
        The range each copy draws its magnitude from uniformly (a single
        number: every copy uses it); the family's ``default`` when omitted.
        Both ends must lie in the family's physical domain, low <= high.
    fill : {"zero", "interpolate"}, optional
        ``band_dropout`` only: what a dead band reads (default ``"zero"``).

    Examples
    --------
    >>> import uqzoo as uz
    >>> p = uz.perturb.Perturbation("illumination", (0.8, 1.2))
    >>> p.label, p.describe()
    ('illumination:0.8-1.2', 'illumination, gain 0.8 to 1.2')
    >>> uz.perturb.Perturbation.parse("spectral_shift:-0.5-0.5").magnitude
    (-0.5, 0.5)
    """

    family: str
    magnitude: tuple[float, float] | float | None = None
    fill: str | None = None

    def __post_init__(self) -> None:
        fam = _family(self.family)
        rng_ = self.magnitude
        if rng_ is None:
            lo, hi = fam.default
        elif isinstance(rng_, (str, bytes)) or not isinstance(rng_, (Sequence, np.ndarray)):
            lo = hi = _check_magnitude(fam, rng_, "magnitude")
        else:
            if len(rng_) != 2:
                raise InvalidInputError(
                    f"magnitude must be a number or a pair (low, high) for {fam.name} "
                    f"({fam.magnitude}, allowed {fam.domain()}), got {_show(rng_)}")
            lo = _check_magnitude(fam, rng_[0], "magnitude low")
            hi = _check_magnitude(fam, rng_[1], "magnitude high")
            if lo > hi:
                raise InvalidInputError(
                    f"magnitude must be a range (low, high) with low <= high for {fam.name}, "
                    f"got ({lo:g}, {hi:g})")
        fill = self.fill
        if fill is not None:
            if fam.name != "band_dropout":
                raise InvalidInputError(
                    f"fill applies to band_dropout only, not to {fam.name}; got fill={fill!r}")
            fill = check_choice(fill, "fill", FILLS)
        elif fam.name == "band_dropout":
            fill = "zero"
        object.__setattr__(self, "magnitude", (lo, hi))
        object.__setattr__(self, "fill", fill)

    @property
    def low(self) -> float:
        return self._range[0]

    @property
    def high(self) -> float:
        return self._range[1]

    @property
    def _range(self) -> tuple[float, float]:
        lo, hi = self.magnitude  # type: ignore[misc]  # a pair after __post_init__
        return float(lo), float(hi)

    @property
    def label(self) -> str:
        """``family:low-high`` (the form :meth:`parse` and ``--perturb`` read)."""
        name = self.family if self.fill in (None, "zero") else f"{self.family}({self.fill})"
        return f"{name}:{_num(self.low)}-{_num(self.high)}"

    def describe(self) -> str:
        """The family with what its magnitude means, for tables and figures."""
        fam = FAMILIES[self.family]
        span = f"{self.low:g}" if self.low == self.high else f"{self.low:g} to {self.high:g}"
        fill = f", {self.fill} fill" if self.fill not in (None, "zero") else ""
        return f"{self.family}, {fam.magnitude} {span}{fill}"

    @classmethod
    def parse(cls, text: object) -> Perturbation:
        """``FAMILY``, ``FAMILY:LOW-HIGH`` (also ``LOW,HIGH``) or ``FAMILY:VALUE``.

        Negative numbers are written with their sign: ``offset:-0.02-0.02``.
        ``band_dropout(interpolate)`` names the fill, as :attr:`label` does.
        """
        if not isinstance(text, str):
            raise InvalidTypeError(f"a perturbation must be written FAMILY[:LOW-HIGH], got "
                                   f"{_show(text)}")
        family, sep, span = text.partition(":")
        family = family.strip()
        fill = None
        named_fill = _FILL_SUFFIX.match(family)
        if named_fill:
            family, fill = named_fill.group(1), named_fill.group(2)
        _family(family, "perturbation family")
        if not sep:
            return cls(family, fill=fill)
        pair = _RANGE.match(span)
        single = _SINGLE.match(span)
        if pair:
            return cls(family, (float(pair.group(1)), float(pair.group(2))), fill)
        if single:
            return cls(family, float(single.group(1)), fill)
        raise InvalidInputError(
            f"perturbation {text!r} must be written FAMILY[:LOW-HIGH] with numbers, e.g. "
            f"illumination:0.8-1.2 or offset:-0.02-0.02; got range {span!r}")


def _as_perturbation(family: object, magnitude: object = None,
                     fill: str | None = None) -> Perturbation:
    if isinstance(family, Perturbation):
        if magnitude is not None or fill is not None:
            raise InvalidInputError(
                "magnitude and fill must not be given with a Perturbation: it has its own")
        return family
    if isinstance(family, str) and ":" in family:
        parsed = Perturbation.parse(family)
        if magnitude is not None:
            raise InvalidInputError(
                f"family {family!r} already names its range; do not pass magnitude as well")
        return Perturbation(parsed.family, parsed.magnitude, fill)
    _family(family)
    return Perturbation(str(family), magnitude, fill)  # type: ignore[arg-type]


# -- the truth ----------------------------------------------------------------------------

def _gaussian_truths() -> dict[str, tuple[Callable[..., np.ndarray], tuple[str, ...]]]:
    """Generators whose truth survives an affine-Gaussian channel: name -> (function, meta keys)."""
    from uqzoo.datasets import hsi_sim, known_truth
    return {
        "hsi-sim": (hsi_sim.shifted_p_true, ("options", "prior", "wavelengths_nm")),
        "gaussian-mixture": (known_truth.shifted_p_true_gaussian_mixture,
                             ("means", "covariances", "balance")),
    }


@dataclasses.dataclass(frozen=True)
class _Truth:
    kind: str
    note: str
    function: Callable[..., np.ndarray] | None = None


def _truth_for(data: Any, fam: Family) -> _Truth:
    if data.p_true_test is None:
        return _Truth("unavailable", "the data have no p_true_test")
    if fam.keeps_truth:
        return _Truth("unchanged", f"{fam.name} is an invertible map of x, so "
                                   "P(y | x') = P(y | x)")
    known = _gaussian_truths().get(data.name)
    if known is not None and all(key in data.meta for key in known[1]):
        return _Truth("recomputed", f"the exact Bayes posterior of the {data.name} generator "
                                    f"with {fam.name} applied before it", known[0])
    return _Truth("unavailable", (
        f"{fam.name} loses information, and P(y | x') = E[P(y | x) | x'] has no closed form "
        f"for {data.name!r} (exact only for the Gaussian generators "
        f"{', '.join(_gaussian_truths())})"))


# -- applying -----------------------------------------------------------------------------

def _check_data(data: object) -> Any:
    from uqzoo.datasets import ClassificationData
    if not isinstance(data, ClassificationData):
        raise InvalidTypeError(
            f"data must be a ClassificationData (uz.datasets.load, from_arrays, ...), got "
            f"{_show(data)}")
    return data


# Families whose model assumes the features are the bands of a spectrum, in
# wavelength order: a gain on every band, a dead detector element, a shift
# that mixes each band with its neighbour. On a table of named features
# (heights, prices) they model nothing physical.
_SPECTRAL_FAMILIES = ("illumination", "band_dropout", "spectral_shift")


def _check_fits(data: Any, pert: Perturbation) -> None:
    """Data-dependent limits: a fraction family must leave one feature; a spectral
    family on a table of named features is legal but suspect (a warning)."""
    meta = data.meta
    if (pert.family in _SPECTRAL_FAMILIES and "feature_names" in meta
            and "wavelengths_nm" not in meta):
        warnings.warn(
            f"perturbation {pert.family} models hyperspectral acquisition (features are the "
            f"bands of a spectrum), but {data.name!r} is a table of named features; for "
            "tabular data use gaussian_noise or missing_features", DataWarning, stacklevel=3)
    if pert.family in ("band_dropout", "missing_features"):
        D = data.n_features
        if _n_dropped(pert.high, D) > D - 1:
            raise InvalidInputError(
                f"magnitude high ({pert.family}: fraction of features) = {pert.high:g} would "
                f"remove {_n_dropped(pert.high, D)} of the data's {D} features; it must leave "
                f"at least one (fraction < {(D - 0.5) / D:.4g})")


def _perturbed(data: Any, pert: Perturbation, magnitude: float, seed: int, ctx: _Context,
               truth: _Truth, copy: int | None = None) -> Any:
    fam = FAMILIES[pert.family]
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore", invalid="ignore"):     # reported below, in words
        channel = fam.transform(ctx.to_raw(data.X_test), magnitude, rng, ctx, pert.fill)
        X_test = ctx.from_raw(channel.X)
    limit = float(np.finfo(np.float32).max)
    if not np.all(np.isfinite(X_test)) or np.abs(X_test).max() > limit:
        raise InvalidInputError(
            f"{pert.family} at magnitude {magnitude:g} ({fam.magnitude}) makes the perturbed "
            f"test features overflow (beyond float32's {limit:.3g}); use a magnitude nearer "
            f"its default range {fam.default[0]:g}-{fam.default[1]:g}")
    p_true = None
    if truth.kind == "unchanged":
        p_true = data.p_true_test
    elif truth.function is not None:
        X_obs, A, b, noise_var = channel.restricted()
        p1 = truth.function(data, X_obs, A, b, noise_var)
        p_true = np.stack([1.0 - p1, p1], axis=1)
    meta = dict(data.meta)
    meta["perturbation"] = {
        "family": pert.family, "magnitude": float(magnitude), "range": pert.magnitude,
        "seed": seed, "copy": copy, "p_true": truth.kind, "p_true_note": truth.note,
        **({"fill": pert.fill} if pert.fill is not None else {}), **channel.details,
    }
    if "uncertain_fraction" in meta:
        if p_true is None:
            del meta["uncertain_fraction"]
        else:
            meta["uncertain_fraction"] = float(np.mean((p_true[:, 1] > 0.05)
                                                       & (p_true[:, 1] < 0.95)))
    return dataclasses.replace(data, X_test=X_test, p_true_test=p_true, meta=meta)


def apply(data: Any, family: str | Perturbation, magnitude: float, *, seed: int = 0,
          fill: str | None = None) -> Any:
    """One perturbed copy of ``data``'s test set at a fixed magnitude.

    Parameters
    ----------
    data : ClassificationData
    family : str or Perturbation
        A family name (:func:`names`); a Perturbation gives its family and fill.
    magnitude : float
        In the family's domain (``uz.perturb.FAMILIES[family].domain()``).
    seed : int
        Seed of the copy's randomness (noise, which bands die).
    fill : {"zero", "interpolate"}, optional
        ``band_dropout`` only.

    Returns
    -------
    ClassificationData
        The same training split, labels and classes; ``X_test`` perturbed;
        ``p_true_test`` as the module docstring says; ``meta["perturbation"]``
        records the family, magnitude, seed, what happened to the truth and
        the copy's details (dead bands, noise sd).

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("gaussian-mixture", p=3, n_train=100, n_test=50)
    >>> dim = uz.perturb.apply(data, "illumination", 0.5)
    >>> bool((dim.X_test == (0.5 * data.X_test)).all()), dim.meta["perturbation"]["p_true"]
    (True, 'unchanged')
    """
    data = _check_data(data)
    if isinstance(family, Perturbation):
        pert = Perturbation(family.family, magnitude, fill if fill is not None else family.fill)
    else:
        pert = Perturbation(_family(family).name, magnitude, fill)
    seed = check_seed(seed)
    _check_fits(data, pert)
    return _perturbed(data, pert, pert.low, seed, _Context.of(data),
                      _truth_for(data, FAMILIES[pert.family]))


@dataclasses.dataclass(frozen=True, eq=False)
class PerturbedCopies(Sequence):
    """K perturbed copies of one data set's test split (what :func:`copies` returns).

    A sequence of ClassificationData: ``len(c)``, ``c[i]``, ``for d in c``.

    Attributes
    ----------
    perturbation : Perturbation
    seed : int
        The seed :func:`copies` was given.
    magnitudes : float64 ndarray of shape (K,)
        Each copy's magnitude, uniform on the range.
    seeds : tuple of int
        Each copy's own seed: ``copies[i]`` equals
        ``apply(source, perturbation, magnitudes[i], seed=seeds[i])``.
    datasets : tuple of ClassificationData
    truth : {"unchanged", "recomputed", "unavailable"}
        What every copy's ``p_true_test`` is (see the module docstring).
    truth_note : str
        Why.
    source : ClassificationData
        The clean data.
    """

    perturbation: Perturbation
    seed: int
    magnitudes: np.ndarray
    seeds: tuple[int, ...]
    datasets: tuple[Any, ...]
    truth: str
    truth_note: str
    source: Any

    def __len__(self) -> int:
        return len(self.datasets)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Any, ...]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return self.datasets[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.datasets)

    def __repr__(self) -> str:
        return (f"PerturbedCopies({self.perturbation.describe()}, k={len(self)}, "
                f"seed={self.seed}, p_true {self.truth}, data={self.source.name!r})")


def _plan(data: Any, pert: Perturbation, k: int, seed: int
          ) -> tuple[np.ndarray, tuple[int, ...]]:
    """Magnitudes and per-copy seeds: copy i depends on (seed, i) only, not on k."""
    first, *rest = np.random.SeedSequence(seed).spawn(k + 1)
    magnitudes = np.random.default_rng(first).uniform(pert.low, pert.high, size=k)
    if pert.low == pert.high:
        magnitudes[:] = pert.low
    seeds = tuple(int(s.generate_state(1, np.uint64)[0] >> np.uint64(1)) for s in rest)
    return magnitudes, seeds


def iter_copies(data: Any, perturbation: Perturbation, k: int, seed: int
                ) -> Iterator[tuple[int, float, Any]]:
    """``(i, magnitude, copy)`` for i < k, built one at a time (memory: one copy).

    The same copies as :func:`copies` with the same arguments.
    """
    data = _check_data(data)
    k = check_copies(k, "k")
    seed = check_seed(seed)
    _check_fits(data, perturbation)
    magnitudes, seeds = _plan(data, perturbation, k, seed)
    ctx = _Context.of(data)
    truth = _truth_for(data, FAMILIES[perturbation.family])
    for i in range(k):
        yield i, float(magnitudes[i]), _perturbed(data, perturbation, float(magnitudes[i]),
                                                  seeds[i], ctx, truth, copy=i)


def copies(data: Any, family: str | Perturbation, k: int = 10, *, seed: int = 0,
           magnitude: tuple[float, float] | float | None = None,
           fill: str | None = None) -> PerturbedCopies:
    """K perturbed copies of the test set, each with its magnitude drawn from a range.

    Parameters
    ----------
    data : ClassificationData
    family : str or Perturbation
        A family name (:func:`names`), ``"family:low-high"``, or a Perturbation.
    k : int
        Number of copies (>= 1).
    seed : int
        Seeds the magnitudes and every copy's randomness. Copy i depends on
        (seed, i) only: the first 10 of 20 copies are the 10 copies.
    magnitude : (float, float) or float, optional
        The range (a number: every copy uses it); the family's default when
        omitted (``uz.perturb.FAMILIES[family].default``).
    fill : {"zero", "interpolate"}, optional
        ``band_dropout`` only: a dead band reads 0 (a dead detector element,
        what a model sees unless the pipeline repairs bad bands; default) or
        is interpolated linearly from its nearest live neighbours.

    Returns
    -------
    PerturbedCopies
        The copies, their magnitudes and seeds, and what their ``p_true_test``
        is. Memory: K copies of the data (use :func:`iter_copies`, or
        ``uz.evaluate(..., perturbations=[family])``, to hold one at a time).

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("gaussian-mixture", p=3, n_train=100, n_test=50)
    >>> c = uz.perturb.copies(data, "gaussian_noise", k=3, seed=0, magnitude=(0.1, 0.5))
    >>> len(c), c.truth, bool(((c.magnitudes >= 0.1) & (c.magnitudes <= 0.5)).all())
    (3, 'recomputed', True)
    """
    data = _check_data(data)
    pert = _as_perturbation(family, magnitude, fill)
    k = check_copies(k, "k")
    seed = check_seed(seed)
    _check_fits(data, pert)
    magnitudes, seeds = _plan(data, pert, k, seed)
    datasets = tuple(d for _, _, d in iter_copies(data, pert, k, seed))
    truth = _truth_for(data, FAMILIES[pert.family])
    magnitudes.setflags(write=False)
    return PerturbedCopies(perturbation=pert, seed=seed, magnitudes=magnitudes, seeds=seeds,
                           datasets=datasets, truth=truth.kind, truth_note=truth.note,
                           source=data)


# -- one public function per family: what each models -------------------------------------

def illumination(data: Any, gain: float, *, seed: int = 0) -> Any:
    """Scale every raw feature by a gain g > 0: a change of illumination.

    Models a different sun elevation or irradiance, or a radiometric
    calibration error: the recorded spectrum (noise included) is multiplied
    by g, as when the reflectance retrieval assumes the nominal irradiance.
    Invertible, so ``p_true_test`` is unchanged. The seed is unused (the map
    is deterministic) and accepted for a uniform signature.

    Example
    -------
    >>> import uqzoo as uz
    >>> data = uz.datasets.load("sim-teacher", p=2, n_train=50, n_test=10)
    >>> bool((uz.perturb.illumination(data, 2.0).X_test == 2 * data.X_test).all())
    True
    """
    return apply(data, "illumination", gain, seed=seed)


def offset(data: Any, offset: float, *, seed: int = 0) -> Any:
    """Add one constant to every raw feature: an additive (atmospheric) offset.

    Models path radiance or adjacency light left by an imperfect atmospheric
    correction, in reflectance units for spectra (real path radiance falls
    with wavelength; a flat offset is its first-order term). Invertible, so
    ``p_true_test`` is unchanged.
    """
    return apply(data, "offset", offset, seed=seed)


def noise(data: Any, snr_db: float, *, seed: int = 0) -> Any:
    """Add white Gaussian sensor noise at a signal-to-noise ratio in dB.

    Models a noisier sensor or a shorter integration time: x' = x + τ ε with
    one τ for all bands, τ = RMS / 10^(SNR/20) where RMS is the root mean
    square of all raw training values, so SNR = 10 log10(signal power / noise
    power). The noise adds to the noise the data already have. Loses
    information: ``p_true_test`` is recomputed on ``hsi-sim`` and
    ``gaussian-mixture`` (variance τ² added to the generator's), None
    elsewhere.
    """
    return apply(data, "noise", snr_db, seed=seed)


def band_dropout(data: Any, fraction: float, *, fill: str = "zero", seed: int = 0) -> Any:
    """Kill a fraction of the bands: dead or saturated detector elements.

    round(fraction × D) bands, drawn at random, read 0 in raw units
    (``fill="zero"``: a dead detector element, what a model sees unless the
    pipeline repairs bad bands) or are interpolated linearly along the band
    index from their nearest live neighbours (``fill="interpolate"``: a
    bad-band repair; the edge bands copy the nearest live one). Either way a
    dead band carries no information, so the exact truth is the posterior
    given the live bands: recomputed on ``hsi-sim`` and ``gaussian-mixture``,
    None elsewhere. ``meta["perturbation"]["dead_features"]`` lists them.
    """
    return apply(data, "band_dropout", fraction, seed=seed, fill=fill)


def spectral_shift(data: Any, shift: float, *, seed: int = 0) -> Any:
    """Shift the spectrum by a fraction of a band: spectral misregistration.

    Models a smile / keystone or wavelength-calibration error: each band
    reads (1 − |s|) of itself and |s| of its neighbour toward higher band
    index for s > 0 (lower for s < 0), linear interpolation of the recorded
    spectrum with the edge band repeated, |s| <= 0.5. The resampling is an
    invertible linear map, so ``p_true_test`` is unchanged.
    """
    return apply(data, "spectral_shift", shift, seed=seed)


def gaussian_noise(data: Any, scale: float, *, seed: int = 0) -> Any:
    """Add Gaussian noise to each feature, ``scale`` times its training sd.

    Models measurement error in tabular features (a cheaper instrument, a
    rounding or transcription error): x'_j = x_j + scale · sd_j · ε with sd_j
    the raw training standard deviation of feature j. Loses information:
    ``p_true_test`` is recomputed on ``gaussian-mixture`` and ``hsi-sim``,
    None elsewhere.
    """
    return apply(data, "gaussian_noise", scale, seed=seed)


def missing_features(data: Any, fraction: float, *, seed: int = 0) -> Any:
    """Lose a fraction of the feature columns, imputed as at training (training mean).

    Models a feature that is no longer recorded at deployment (a sensor
    offline, a form field dropped): round(fraction × D) columns, drawn at
    random, are missing for every test point and imputed with their raw
    training mean. The truth is the posterior given the remaining features:
    recomputed on ``gaussian-mixture`` and ``hsi-sim``, None elsewhere.
    ``meta["perturbation"]["missing_features"]`` lists them.
    """
    return apply(data, "missing_features", fraction, seed=seed)
