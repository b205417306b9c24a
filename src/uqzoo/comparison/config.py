"""Comparison config files: ``uqzoo compare --config FILE.toml``.

A config file holds one whole comparison: the data, the network, the methods
with their options, and the settings of the evaluation::

    [compare]
    methods = ["laplace", "ensemble"]   # default: every method (uz.methods.names())
    seed = 0                            # seed of every fit
    levels = [0.8, 0.95]                # credible levels
    delta = 0.2                         # High Confidence Set threshold, in (0, 0.5)
    num_draws = 1000                    # common draw budget S of the methods that draw freely
    interval = "equal_tailed"           # or "order_statistic"
    settings = "quick"                  # "quick" (uqzoo.comparison.compare.QUICK_CONFIGS) or "full"
    perturb = ["illumination:0.8-1.2"]  # also evaluate under shift (uz.perturb); optional
    copies = 10                         # perturbed copies per perturbation
    target_prior = "train"              # move probabilities to the training prior; optional
    recalibrate = "temperature"         # or "vector": also each method recalibrated; optional
    conformal = 0.9                     # also split-conformal label sets at this level; optional
    conformal_score = "lac"             # or "aps"
    conformal_mondrian = false          # class-conditional calibration
    reference = "auto"                  # "auto" (default), "none", "hmc" or a saved reference
    label_noise = 0.1                   # flip this share of training labels; optional
    label_noise_kind = "symmetric"      # or "class_conditional" (class k to k + 1)

    [data]
    dataset = "sim-teacher"             # a name (uz.datasets.names()) or a file
    n_train = 200                       # the data set's options

    [spec]                              # uz.MLPSpec without in_features / n_classes
    hidden = [10, 10]
    activation = "tanh"
    prior_scale = 1.0
    # or, alone: your own network, FILE.py:FACTORY (the file is imported as Python;
    # FACTORY(in_features, n_classes) returns a uz.Model)
    # model = "my_net.py:make"

    [methods.ensemble]                  # one table per method: its Config's fields
    num_members = 10
    num_epochs = 200

Every key may be left out; the defaults are those of ``uqzoo compare``.
``[data]`` takes, beside ``dataset``, the options of a built-in data set
(``uz.datasets.options(name)``), or for a file those of
:func:`uqzoo.datasets.from_csv` (a ``.csv`` table: ``target`` names the label
column; ``read_csv = { sep = ";" }`` passes options to pandas) or
:func:`uqzoo.datasets.from_hsi` (a ``.mat``, ``.npz``, ``.npy`` or ENVI
``.hdr`` cube: ``labels``, ``unlabelled``, ``target_class``, ``split``,
``test_size``, ``guard``, ...). Relative paths are relative to the config
file's folder. TOML has no null: the string ``"none"`` stands for None where an
option takes it (``unlabelled = "none"`` for a 0/1 target mask).

The file is validated before any data is loaded or any method fitted:
unknown keys, wrong types and out-of-range values are errors that name the
file, the key and what is allowed (the helpers of
:mod:`uqzoo.study.studyfile`, which validates study files the same way), and
each method's options are built into its ``Config``.

:meth:`CompareConfig.resolved` fills in every default (each method's full
``Config``, with the draw budget applied), and :meth:`CompareConfig.to_toml`
writes it: ``uqzoo compare --out DIR`` saves it as ``DIR/config.toml``, and
``uqzoo compare --config DIR/config.toml`` repeats the run exactly.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from uqzoo import tomlfile as toml
from uqzoo._limits import check_copies
from uqzoo._quantiles import SUMMARY_INTERVALS
from uqzoo._validation import _show
from uqzoo.errors import InvalidInputError, InvalidTypeError, UqzooError

__all__ = ["DATA_FILES", "SETTINGS", "CompareConfig", "config_data", "data_kind",
           "data_options", "read_config", "write_config"]

# --dataset / data.dataset values with these endings are files, not names.
HSI_FILES = (".mat", ".npz", ".npy", ".hdr")
TABLE_FILES = (".csv",)
DATA_FILES = {"hsi": HSI_FILES, "table": TABLE_FILES}
# A label image may also be a picture.
_LABEL_FILES = (*HSI_FILES, ".png")

SETTINGS = ("quick", "full")
DEFAULT_DATASET = "sim-teacher"
# The defaults of `uqzoo compare`; levels differ from uz.evaluate's four.
DEFAULT_COMPARE_LEVELS = (0.8, 0.95)
DEFAULT_DELTA = 0.2
# The intervals compare (and uz.evaluate) summarise with: their one list.
INTERVALS = SUMMARY_INTERVALS

_TOP_KEYS = ("compare", "data", "spec", "methods")
_COMPARE_KEYS = ("methods", "seed", "levels", "delta", "num_draws", "interval", "settings",
                 "perturb", "copies", "target_prior", "recalibrate", "reference", "conformal",
                 "conformal_score", "conformal_mondrian", "label_noise", "label_noise_kind")
# Perturbed copies per perturbation when a config names perturbations.
DEFAULT_COPIES = 10
# Spec fields the data decide.
# Options of a file's loader that the config does not take: arrays, or set
# through the file itself.
_FILE_EXCLUDED = ("path", "cube", "X_test", "y_test", "p_true_test", "read_csv_options")
_NONE = "none"


def data_kind(dataset: str) -> str | None:
    """``"hsi"`` or ``"table"`` when ``dataset`` names a file by its ending, else None."""
    suffix = Path(dataset).suffix.lower()
    for kind, endings in DATA_FILES.items():
        if suffix in endings:
            return kind
    return None


def _loader(kind: str | None):
    from uqzoo import datasets
    return {"hsi": datasets.from_hsi, "table": datasets.from_csv}.get(kind or "")


def data_options(dataset: str) -> dict[str, Any]:
    """The options ``[data]`` takes for ``dataset``, with their defaults."""
    from uqzoo import datasets

    kind = data_kind(dataset)
    if kind is None:
        return datasets.options(dataset)
    loader = _loader(kind)
    out = {p.name: (None if p.default is inspect.Parameter.empty else p.default)
           for p in inspect.signature(loader).parameters.values()
           if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
           and p.name not in _FILE_EXCLUDED}
    if kind == "table":
        out["read_csv"] = None
    return out


def config_data(dataset: str, options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``[data]`` of a config from a loader call's arguments (as the CLI's flags make).

    A file's path becomes absolute, and so does a label image's; a table's
    options that :func:`uqzoo.datasets.from_csv` does not name go to
    ``read_csv`` (they are pandas.read_csv's).
    """
    kind = data_kind(dataset)
    out = dict(options)
    if kind is None:
        return dataset, out
    if kind == "table":
        known = data_options(dataset)
        extra = {k: out.pop(k) for k in list(out) if k not in known}
        if extra:
            out["read_csv"] = {**dict(out.get("read_csv") or {}), **extra}
    labels = out.get("labels")
    if isinstance(labels, str) and Path(labels).is_file():
        out["labels"] = os.path.abspath(labels)
    return os.path.abspath(dataset), out         # links kept, as _resolve_path


@dataclasses.dataclass(frozen=True)
class CompareConfig:
    """One comparison: what ``uqzoo compare`` runs (see the module docstring).

    Attributes
    ----------
    dataset : str
        A built-in data set's name, or the path of a ``.csv`` table or a
        hyperspectral cube.
    data : dict
        The loader's options (``uz.datasets.load``, ``from_csv``, ``from_hsi``).
    spec : dict
        ``uz.MLPSpec`` fields other than ``in_features`` and ``n_classes``.
    methods : tuple of str
        Methods to compare, in table order; empty: all of them.
    configs : dict of str to dict
        Options per method; on top of the quick settings unless ``settings``
        is ``"full"``.
    levels : tuple of float
    delta : float
    seed : int
    num_draws : int or None
        Draw budget; None: ``uqzoo.comparison.compare.DEFAULT_NUM_DRAWS``.
    interval : str
    settings : {"quick", "full"}
    perturb : tuple of str
        Perturbations to evaluate every method under, as ``family:low-high``
        labels (:class:`uqzoo.perturb.Perturbation`); empty: none.
    copies : int
        Perturbed copies per perturbation.
    target_prior : "train", tuple of float or None
        The class prior every posterior's probabilities are moved to before
        evaluation (:func:`uqzoo.prior_shift`); None: as fit.
    recalibrate : "temperature", "vector" or None
        Also evaluate every method after post-hoc recalibration, fitted on a
        held-out part of the training data (``uz.compare(recalibrate=...)``);
        None: no recalibration.
    conformal : float or None
        Also make split-conformal label sets at this level for every method
        (``uz.compare(conformal=...)``); None: not.
    conformal_score : {"lac", "aps"}
    conformal_mondrian : bool
    reference : str or None
        ``"auto"`` (default: a reference posterior sampled where affordable on
        data without true probabilities, see ``uz.compare``), ``"hmc"`` (the
        comparison's own HMC fit) or the path of a reference posterior saved by
        ``uqzoo reference``: every method is also scored by its closeness to it
        (``uz.compare(reference=...)``); None (``"none"`` in a file): not. A
        relative path in a file is relative to the file's folder.
    label_noise : float or None
        Share of training labels flipped before the fits
        (``uz.compare(label_noise=...)``); None: none.
    label_noise_kind : {"symmetric", "class_conditional"}
    source : str
        Where the config came from (a file, or the command line); not compared.
    """

    dataset: str = DEFAULT_DATASET
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    spec: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    methods: tuple[str, ...] = ()
    configs: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    levels: tuple[float, ...] = DEFAULT_COMPARE_LEVELS
    delta: float = DEFAULT_DELTA
    seed: int = 0
    num_draws: int | None = None
    interval: str = "equal_tailed"
    settings: str = "quick"
    perturb: tuple[str, ...] = ()
    copies: int = DEFAULT_COPIES
    target_prior: str | tuple[float, ...] | None = None
    recalibrate: str | None = None
    reference: str | None = "auto"
    conformal: float | None = None
    conformal_score: str = "lac"
    conformal_mondrian: bool = False
    label_noise: float | None = None
    label_noise_kind: str = "symmetric"
    source: str = dataclasses.field(default="", compare=False)

    # -- what a run needs ------------------------------------------------------------

    def method_names(self) -> list[str]:
        from uqzoo import methods as registry
        return list(self.methods) if self.methods else registry.names()

    def method_options(self) -> dict[str, dict[str, Any]]:
        """Options of every compared method: the quick settings (unless ``settings`` is
        ``"full"``) with this config's own on top."""
        from uqzoo.comparison.compare import QUICK_CONFIGS

        out = {}
        for name in self.method_names():
            base = {} if self.settings == "full" else dict(QUICK_CONFIGS.get(name, {}))
            out[name] = {**base, **self.configs.get(name, {})}
        return out

    def load_data(self):
        """The data set: ``uz.datasets.load``, ``from_csv`` or ``from_hsi`` with ``data``."""
        from uqzoo import datasets

        options = {k: _as_argument(v) for k, v in self.data.items()}
        kind = data_kind(self.dataset)
        if kind is None:
            return datasets.load(self.dataset, **options)
        if kind == "table":
            target = options.pop("target", None)
            if target is None:
                raise InvalidInputError(f"{self.dataset!r} is a table: name its label column "
                                        "with target")
            read_csv = dict(options.pop("read_csv", None) or {})
            return datasets.from_csv(self.dataset, target, **options, **read_csv)
        labels = options.pop("labels", None)
        return datasets.from_hsi(self.dataset, labels, **options)

    def make_spec(self, data):
        """The network for ``data``: ``uz.MLPSpec`` with ``spec``'s fields, or the model of
        ``spec["model"]`` (``FILE.py:FACTORY``)."""
        from uqzoo.spec import MLPSpec

        if "model" in self.spec:
            from uqzoo.models import from_file
            return from_file(self.spec["model"], data.n_features, data.n_classes)

        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                  for k, v in self.spec.items()}
        return MLPSpec(data.n_features, data.n_classes, **fields)

    def run(self, data=None, *, progress_bar: bool = True):
        """Load the data (unless given), fit and compare: a
        :class:`~uqzoo.comparison.compare.Comparison`."""
        from uqzoo.comparison.compare import DEFAULT_NUM_DRAWS, compare

        if data is None:
            data = self.load_data()
        return compare(data, self.method_names(), model=self.make_spec(data), seed=self.seed,
                       levels=self.levels, delta=self.delta, configs=self.method_options(),
                       progress_bar=progress_bar,
                       num_draws=DEFAULT_NUM_DRAWS if self.num_draws is None else self.num_draws,
                       interval=self.interval, perturbations=list(self.perturb) or None,
                       copies=self.copies, target_prior=self.target_prior,
                       recalibrate=self.recalibrate, reference=self.reference,
                       conformal=self.conformal, conformal_score=self.conformal_score,
                       conformal_mondrian=self.conformal_mondrian,
                       label_noise=self.label_noise, label_noise_kind=self.label_noise_kind)

    # -- resolving and writing ------------------------------------------------------

    def resolved(self) -> CompareConfig:
        """This config with every default filled in, each method's options its full
        ``Config`` (the draw budget applied); runs exactly as this one does.

        Raises the method's own error for an option its ``Config`` refuses.
        """
        from uqzoo import methods as registry
        from uqzoo.comparison.compare import DEFAULT_NUM_DRAWS, _draw_options

        num_draws = DEFAULT_NUM_DRAWS if self.num_draws is None else self.num_draws
        configs = {}
        for name, options in self.method_options().items():
            full = {**_draw_options(name, num_draws, options), **options}
            made = registry.make_config(name, **full)
            defaults = {f.name: f.default for f in dataclasses.fields(made)}
            configs[name] = {k: _plain(v) for k, v in dataclasses.asdict(made).items()
                             if not (v is None and defaults.get(k) is None)}
        defaults = data_options(self.dataset)
        data = {k: _plain(v) for k, v in defaults.items()
                if v is not None and k not in self.data}
        data.update({k: _plain(v) for k, v in self.data.items()})
        data = {k: data[k] for k in sorted(data, key=lambda k: list(defaults).index(k)
                                           if k in defaults else len(defaults))}
        spec = ({k: _plain(v) for k, v in self.spec.items()} if "model" in self.spec
                else {**toml.spec_defaults(), **{k: _plain(v) for k, v in self.spec.items()}})
        return dataclasses.replace(self, data=data, spec=spec,
                                   methods=tuple(self.method_names()), configs=configs,
                                   num_draws=num_draws, levels=tuple(self.levels))

    def to_dict(self) -> dict[str, Any]:
        """The config as TOML-ready tables (``compare``, ``data``, ``spec``, ``methods``)."""
        head: dict[str, Any] = {}
        if self.methods:
            head["methods"] = list(self.methods)
        head.update(seed=self.seed, levels=list(self.levels), delta=self.delta)
        if self.num_draws is not None:
            head["num_draws"] = self.num_draws
        head.update(interval=self.interval, settings=self.settings)
        if self.perturb:
            head.update(perturb=list(self.perturb), copies=self.copies)
        if self.target_prior is not None:
            head["target_prior"] = (self.target_prior if isinstance(self.target_prior, str)
                                    else list(self.target_prior))
        if self.recalibrate is not None:
            head["recalibrate"] = self.recalibrate
        if self.reference != "auto":
            head["reference"] = _NONE if self.reference is None else self.reference
        if self.conformal is not None:
            head.update(conformal=self.conformal, conformal_score=self.conformal_score,
                        conformal_mondrian=self.conformal_mondrian)
        if self.label_noise is not None:
            head.update(label_noise=self.label_noise, label_noise_kind=self.label_noise_kind)
        defaults = data_options(self.dataset)
        data = {"dataset": self.dataset}
        for key, value in self.data.items():
            data[key] = _tomlable(value, defaults.get(key), f"data.{key}")
        from uqzoo import methods as registry

        methods = {}
        for name, options in self.configs.items():
            fields = {f.name: f.default for f in dataclasses.fields(registry.get(name).Config)}
            methods[name] = {k: _tomlable(v, fields.get(k), f"methods.{name}.{k}")
                             for k, v in options.items()}
        out = {"compare": head, "data": _drop_none(data),
               "spec": _drop_none({k: _plain(v) for k, v in self.spec.items()}),
               "methods": {k: _drop_none(v) for k, v in methods.items()}}
        return out

    def to_toml(self) -> str:
        """The config as a TOML file that :func:`read_config` reads back to an equal
        config (checked here)."""
        tables = self.to_dict()
        lines = ["# uqzoo compare: the configuration of a run. Repeat it exactly with",
                 "#   uqzoo compare --config config.toml --out NEW_FOLDER", ""]
        for name in ("compare", "data", "spec"):
            lines.append(f"[{name}]")
            lines += [f"{_key(k)} = {_value(v)}" for k, v in tables[name].items()]
            lines.append("")
        for method, options in tables["methods"].items():
            lines.append(f"[methods.{_key(method)}]")
            lines += [f"{_key(k)} = {_value(v)}" for k, v in options.items()]
            lines.append("")
        text = "\n".join(lines)
        if tomllib.loads(text) != {k: v for k, v in tables.items() if v or k != "methods"}:
            raise AssertionError("the TOML written does not read back as the config; "
                                 "please report this")  # a bug of the writer, not the user's
        return text


# -- values -------------------------------------------------------------------------------

def _plain(value: Any) -> Any:
    """Tuples as lists, numpy scalars as Python ones: TOML-ready data."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def _as_argument(value: Any) -> Any:
    """A config value as a loader argument: lists as tuples."""
    if isinstance(value, list):
        return tuple(_as_argument(v) for v in value)
    return value


def _tomlable(value: Any, default: Any, key: str) -> Any:
    """None as the string "none", where it is not the default (and so is omitted)."""
    value = _plain(value)
    if value is None:
        return None if default is None else _NONE
    return value


def _drop_none(table: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if v is not None}


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\u{code:04X}"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"cannot write the non-finite number {value} to a config")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()
                                if v is not None) + " }"
    raise InvalidTypeError(f"cannot write {_show(value)} to a config file")


def write_config(config: CompareConfig, path: str | os.PathLike, *,
                 overwrite: bool = False) -> Path:
    """Write ``config`` as TOML, atomically (:func:`uqzoo.io.write_file_atomically`:
    a link at ``path`` is refused, an existing file replaced only with ``overwrite``)."""
    from uqzoo.io import write_file_atomically

    if not isinstance(config, CompareConfig):
        raise InvalidTypeError(f"config must be a CompareConfig, got {_show(config)}")
    return write_file_atomically(path, config.to_toml().encode("utf-8"), what="path",
                                 overwrite=overwrite)


# -- reading ------------------------------------------------------------------------------

def _none_for(value: Any, default: Any, annotation: str | None = None) -> Any:
    """The string "none" as None where the option takes None and is not a string."""
    if value != _NONE:
        return value
    takes_none = default is None or (annotation is not None and "None" in annotation)
    if isinstance(default, str) and not takes_none:
        return value
    return None


def _read_compare(raw: object, path: Path) -> dict[str, Any]:
    from uqzoo import methods as registry
    from uqzoo._limits import check_draws

    head = toml.check_table(raw, path, "compare")
    toml.check_keys(head, _COMPARE_KEYS, path, "compare", "[compare]")
    out: dict[str, Any] = {}
    if "methods" in head:
        names = head["methods"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InvalidTypeError(f"{toml.where(path, 'compare.methods')}: must be an array of "
                                   f"method names like [\"laplace\", \"ensemble\"], got "
                                   f"{toml.type_name(names)} {_show(names)}")
        if not names:
            raise InvalidInputError(f"{toml.where(path, 'compare.methods')}: empty; name at least "
                                    f"one of {', '.join(registry.names())} (or leave the key "
                                    "out to compare them all)")
        for i, name in enumerate(names):
            if name not in registry.names():
                raise InvalidInputError(f"{toml.where(path, f'compare.methods[{i}]')}: unknown "
                                        f"method {name!r}; allowed: "
                                        f"{', '.join(registry.names())}")
            if names.index(name) != i:
                raise InvalidInputError(f"{toml.where(path, 'compare.methods')}: lists {name!r} "
                                        "twice")
        out["methods"] = tuple(names)
    out["seed"] = toml.check_int(head.get("seed", 0), path, "compare.seed", 0)
    if out["seed"] >= 2**32:
        raise InvalidInputError(f"{toml.where(path, 'compare.seed')}: must be < 2**32, got "
                                f"{out['seed']}")
    out["levels"] = toml.read_levels(head.get("levels", list(DEFAULT_COMPARE_LEVELS)), path,
                                     "compare.levels")
    out["delta"] = toml.read_delta(head.get("delta", DEFAULT_DELTA), path, "compare.delta")
    if "num_draws" in head:
        draws = toml.check_int(head["num_draws"], path, "compare.num_draws", 1)
        try:
            out["num_draws"] = check_draws(draws, "num_draws")
        except UqzooError as exc:
            raise type(exc)(f"{toml.where(path, 'compare.num_draws')}: {exc}") from None
    for key, allowed in (("interval", INTERVALS), ("settings", SETTINGS)):
        if key in head:
            value = toml.check_str(head[key], path, f"compare.{key}")
            if value not in allowed:
                raise InvalidInputError(f"{toml.where(path, 'compare.' + key)}: must be one of "
                                        f"{', '.join(allowed)}, got {value!r}")
            out[key] = value
    out.update(_read_perturb(head, path))
    if "target_prior" in head:
        out["target_prior"] = _read_target_prior(head["target_prior"], path)
    if "recalibrate" in head:
        from uqzoo.comparison import options

        value = toml.check_str(head["recalibrate"], path, "compare.recalibrate")
        out["recalibrate"] = None if value == _NONE else options.recalibrate(
            value, options.Names.file(path, "compare"))
    out.update(_read_conformal(head, path))
    out.update(_read_label_noise(head, path))
    if "reference" in head:
        value = toml.check_str(head["reference"], path, "compare.reference")
        if not value.strip():
            raise InvalidInputError(f"{toml.where(path, 'compare.reference')}: must be \"hmc\" "
                                    "(the comparison's own HMC fit) or the path of a reference "
                                    "saved by `uqzoo reference`, got an empty string")
        out["reference"] = (None if value == _NONE else value if value in ("hmc", "auto")
                            else _resolve_path(value, path.parent))
    return out


def _read_target_prior(value: object, path: Path) -> str | tuple[float, ...]:
    """``target_prior``: "train" or an array of class probabilities (checked against the
    data's classes when the comparison starts, before any fit)."""
    where = toml.where(path, "compare.target_prior")
    if value == "train":
        return "train"
    if not isinstance(value, list) or not value:
        raise InvalidTypeError(f"{where}: must be \"train\" or an array of class "
                               f"probabilities, got {toml.type_name(value)} {_show(value)}")
    return tuple(toml.check_number(v, path, f"compare.target_prior[{i}]")
                 for i, v in enumerate(value))


def _read_conformal(head: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """``conformal`` (a level in (0, 1)), ``conformal_score``, ``conformal_mondrian``,
    checked as every caller of compare checks them (:mod:`uqzoo.comparison.options`)."""
    from uqzoo.comparison import options

    level, score, mondrian = options.conformal(
        head.get("conformal"), head.get("conformal_score"), head.get("conformal_mondrian"),
        options.Names.file(path, "compare"))
    if level is None:
        return {}
    return {"conformal": level, "conformal_score": score, "conformal_mondrian": mondrian}


def _read_label_noise(head: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """``label_noise`` (a rate in [0, 1)) and ``label_noise_kind`` of ``[compare]``,
    checked as every caller of compare checks them (:mod:`uqzoo.comparison.options`)."""
    from uqzoo.comparison import options

    rate, kind = options.label_noise(head.get("label_noise"), head.get("label_noise_kind"),
                                     options.Names.file(path, "compare"))
    if rate is None:
        return {}
    return {"label_noise": rate, "label_noise_kind": kind}


def _read_perturb(head: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """``perturb`` (labels, checked by uz.perturb) and ``copies`` of ``[compare]``."""
    from uqzoo.perturb import Perturbation

    out: dict[str, Any] = {}
    texts = head.get("perturb", [])
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise InvalidTypeError(f"{toml.where(path, 'compare.perturb')}: must be an array of "
                               f"perturbations like [\"illumination:0.8-1.2\"], got "
                               f"{toml.type_name(texts)} {_show(texts)}")
    labels = []
    for i, text in enumerate(texts):
        try:
            labels.append(Perturbation.parse(text).label)
        except UqzooError as exc:
            raise type(exc)(f"{toml.where(path, f'compare.perturb[{i}]')}: {exc}") from None
    for i, label in enumerate(labels):
        if labels.index(label) != i:
            raise InvalidInputError(f"{toml.where(path, 'compare.perturb')}: lists {label!r} "
                                    "twice")
    if labels:
        out["perturb"] = tuple(labels)
    if "copies" in head:
        if not labels:
            raise InvalidInputError(f"{toml.where(path, 'compare.copies')}: needs perturb (the "
                                    "perturbations to make copies of)")
        copies = toml.check_int(head["copies"], path, "compare.copies", 1)
        try:
            out["copies"] = check_copies(copies, "copies")
        except UqzooError as exc:
            raise type(exc)(f"{toml.where(path, 'compare.copies')}: {exc}") from None
    return out


def _resolve_path(text: str, folder: Path) -> str:
    # Absolute, but links kept: a link data.csv -> blob.bin stays a .csv by name,
    # which is what chose its loader (resolving it made the name a built-in's).
    path = Path(os.path.expanduser(text))
    return os.path.abspath(path if path.is_absolute() else folder / path)


def _read_data(raw: object, path: Path) -> tuple[str, dict[str, Any]]:
    from uqzoo import datasets

    table = toml.normalise(toml.check_table(raw, path, "data"), path, "data")
    dataset = toml.check_str(table.pop("dataset", DEFAULT_DATASET), path, "data.dataset")
    kind = data_kind(dataset)
    if kind is None:
        if dataset not in datasets.names():
            if Path(_resolve_path(dataset, path.parent)).is_file():
                raise InvalidInputError(
                    f"{toml.where(path, 'data.dataset')}: {dataset!r} is a file of a type "
                    f"uqzoo does not read; name a file ending in "
                    f"{', '.join(HSI_FILES + TABLE_FILES)}, or a built-in data set")
            raise InvalidInputError(
                f"{toml.where(path, 'data.dataset')}: unknown data set {dataset!r}; allowed: "
                f"{', '.join(datasets.names())}, or a file ending in "
                f"{', '.join(HSI_FILES + TABLE_FILES)}")
    else:
        dataset = _resolve_path(dataset, path.parent)
        if not Path(dataset).is_file():
            raise InvalidInputError(f"{toml.where(path, 'data.dataset')}: no such file {dataset!r}")
    defaults = data_options(dataset)
    what = (f"data set {dataset!r}" if kind is None else
            "a .csv table (uz.datasets.from_csv)" if kind == "table" else
            "a hyperspectral cube (uz.datasets.from_hsi)")
    toml.check_keys(table, ["dataset", *defaults], path, "data", f"[data] of {what}")
    options: dict[str, Any] = {}
    for key, value in table.items():
        where = f"data.{key}"
        default = defaults[key]
        value = _none_for(value, default)
        if key == "read_csv":
            options[key] = toml.check_table(value, path, where)
            continue
        if kind is not None and default is None and value is not None:
            value = _check_file_option(key, value, path, where)
        elif value is not None:
            value = toml.check_option_value(value, default, path, where)
        if key == "labels" and isinstance(value, str) and \
                Path(value).suffix.lower() in _LABEL_FILES:
            value = _resolve_path(value, path.parent)
        options[key] = value
    if kind == "table" and "target" not in options:
        raise InvalidInputError(f"{toml.where(path, 'data.target')}: missing; {dataset!r} is a "
                                "table: name its label column, e.g. target = \"label\"")
    return dataset, options


# Types of file options whose default is None (the loader checks values in full).
_FILE_OPTION_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "target": ((str,), "a column name (string)"),
    "labels": ((str,), "a file name or a variable of the cube's file (string)"),
    "cube_key": ((str,), "a variable name (string)"),
    "labels_key": ((str,), "a variable name (string)"),
    "name": ((str,), "a string"),
    "target_class": ((str, int, float, bool), "a label value or a class name"),
    "split_fraction": ((int, float), "a number"),
    "test_size": ((int, float), "a number"),
    "guard": ((int,), "an integer"),
    "n_classes": ((int,), "an integer"),
    "block_size": ((int, list), "an integer or [height, width]"),
    "class_names": ((list,), "an array of strings"),
}


def _check_file_option(key: str, value: Any, path: Path, where: str) -> Any:
    types: tuple[type, ...]
    types, expected = _FILE_OPTION_TYPES.get(key, ((object,), "a value"))
    bad = isinstance(value, bool) and bool not in types
    if bad or not isinstance(value, types):
        raise InvalidTypeError(f"{toml.where(path, where)}: must be {expected}, got "
                               f"{toml.type_name(value)} {_show(value)}")
    entries: list[Any] = value if isinstance(value, list) else []
    if key == "class_names" and not all(isinstance(v, str) for v in entries):
        raise InvalidTypeError(f"{toml.where(path, where)}: must be an array of strings, got "
                               f"{_show(value)}")
    if key == "block_size" and isinstance(value, list) and (
            len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                       for v in value)):
        raise InvalidTypeError(f"{toml.where(path, where)}: must be an integer or [height, width], "
                               f"got {_show(value)}")
    return value


def _read_methods(raw: object, path: Path, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    from uqzoo import methods as registry

    table = toml.check_table(raw, path, "methods")
    configs: dict[str, dict[str, Any]] = {}
    for name, options in table.items():
        key = f"methods.{name}"
        if name not in registry.names():
            raise InvalidInputError(f"{toml.where(path, key)}: unknown method {name!r}; allowed: "
                                    f"{', '.join(registry.names())}")
        if name not in names:
            raise InvalidInputError(f"{toml.where(path, key)}: {name!r} is not compared; add it "
                                    f"to compare.methods ({', '.join(names)}) or remove "
                                    "this table")
        options = toml.normalise(toml.check_table(options, path, key), path, key)
        fields = {f.name: f for f in dataclasses.fields(registry.get(name).Config)}
        toml.check_keys(options, list(fields), path, key, f"the options of method {name!r}")
        checked = {}
        for option, value in options.items():
            field = fields[option]
            default = None if field.default is dataclasses.MISSING else field.default
            annotation = str(field.type)
            value = _none_for(value, default, annotation)
            if isinstance(value, int) and not isinstance(value, bool):
                parts = {p.strip() for p in annotation.split("|")}
                if "float" in parts and "int" not in parts:
                    value = float(value)
            checked[option] = value
        try:
            registry.make_config(name, **checked)
        except UqzooError as exc:
            raise type(exc)(f"{toml.where(path, key)}: {exc}") from None
        configs[name] = checked
    return configs


def read_config(path: str | os.PathLike) -> CompareConfig:
    """Read and validate a comparison config file (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file.

    Returns
    -------
    CompareConfig

    Raises
    ------
    FileFormatError
        Missing or unreadable file, invalid TOML, a key given twice.
    InvalidInputError, InvalidTypeError
        Unknown keys, methods or data sets, bad values or types; the message
        names the file and the key.

    Example
    -------
    >>> import pathlib, tempfile
    >>> from uqzoo.comparison.config import read_config
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.toml"
    >>> _ = path.write_text('[compare]\\nmethods = ["laplace"]\\n[data]\\n'
    ...                     'dataset = "iris"\\n[methods.laplace]\\nnum_epochs = 200\\n')
    >>> config = read_config(path)
    >>> config.dataset, config.methods, dict(config.configs)
    ('iris', ('laplace',), {'laplace': {'num_epochs': 200}})
    """
    from uqzoo import methods as registry

    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or os.PathLike, got {_show(path)}")
    path = Path(os.fspath(path))
    raw, _ = toml.read_toml(path, "config file")    # TOML errors named by key and line
    toml.check_keys(raw, _TOP_KEYS, path, "", "a compare config file")
    head = _read_compare(raw.get("compare", {}), path)
    dataset, data = _read_data(raw.get("data", {}), path)
    spec = toml.read_spec(raw.get("spec", {}), path)
    names = list(head.get("methods", ())) or registry.names()
    configs = _read_methods(raw.get("methods", {}), path, names)
    return CompareConfig(dataset=dataset, data=data, spec=spec, configs=configs,
                         source=str(path), **head)
