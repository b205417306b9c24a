"""Study files: TOML read, validated before anything runs, and expanded into tasks.

A study file names the data-generating settings, the methods, the network and
the replicates::

    [study]
    name = "small"              # default: the file's stem
    replicates = 3              # default 1
    levels = [0.5, 0.8, 0.9, 0.95]
    delta = 0.2                 # High Confidence Set threshold
    seed = 0                    # changes every replicate's data and every fit
    conformal = 0.9             # optional: also split-conformal label sets at this level
    conformal_score = "lac"     # or "aps" (with conformal only)

    [spec]                      # uz.MLPSpec without in_features / n_classes
    hidden = [10, 10]
    activation = "tanh"

    [[datasets]]
    name = "sim-teacher"                        # uz.datasets.names()
    options = { n_test = 2000 }                 # fixed options
    grid = { p = [2, 5], n_train = [200, 1000] }  # every combination

    [[methods]]
    name = "ensemble"                           # uz.methods.names()
    config = { num_epochs = 200 }
    grid = { num_members = [5, 10] }
    label = "ensemble"                          # default: the name

    [reference]                 # optional: closeness to the exact posterior per task
    num_warmup = 1000           # HMC options (uqzoo.methods.hmc.Config) on top of
    num_samples = 4000          # uqzoo.reference.REFERENCE_OPTIONS

With ``[reference]`` (even empty: ``[reference]`` alone takes the defaults),
every task also samples a reference posterior of its data with
:func:`uqzoo.reference_posterior` -- seeded from the data setting and the
replicate, so every method of one replicate is judged against the same
reference, and a worker samples it once for all of them -- and scores its fit
by :func:`uqzoo.fidelity` on the test split: one more metric per task
(``fidelity_*`` columns of :func:`uqzoo.study.load`). Without the table nothing
of it runs, and the tasks' ids are those of a study without it.

A data set's ``options`` and ``grid`` also take ``label_noise`` (a rate in
[0, 1)) and ``label_noise_kind`` (``"symmetric"``, the default, or
``"class_conditional"``): the runner flips that share of the training labels
after loading (:func:`uqzoo.datasets.with_label_noise`, seeded from the
replicate's data seed), so ``grid = { label_noise = [0.0, 0.1, 0.2] }`` is a
label-noise axis; the test set stays clean.

``options``/``config`` hold fixed values and ``grid`` lists the values to
cross, so an option whose value is itself a list (``radius = [0.3, 3.0]``)
is never mistaken for a grid. A data set's ``seed`` is not an option here:
each replicate draws its own data (see :class:`Task`).

Everything is checked before a task runs: unknown keys, wrong types, empty
grids, unknown methods or data sets, a key given twice (in the TOML, or in
both ``options`` and ``grid``), two entries that give the same task. Every
method configuration of the grid is built with ``uz.methods.make_config``, so
a bad hyper-parameter fails here and not hours into a run; data-set options
are checked against the type of their default, and in full by the loader when
the task runs. Errors name the file, the key and what is allowed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from uqzoo import tomlfile as toml
from uqzoo._limits import MAX_STUDY_TASKS, check_study_tasks
from uqzoo._validation import DEFAULT_LEVELS, _show
from uqzoo.errors import InvalidInputError, InvalidTypeError, UqzooError

__all__ = ["Study", "Task", "expand", "read_study"]

DEFAULT_DELTA = 0.2

_TOP_KEYS = ("study", "spec", "datasets", "methods", "reference")
_STUDY_KEYS = ("name", "description", "replicates", "levels", "delta", "seed", "conformal",
               "conformal_score")
_ENTRY_KEYS = ("name", "label", "options", "grid")
_METHOD_KEYS = ("name", "label", "config", "grid")
# Data-set options the runner sets itself: the data seed comes from the task, and
# a worker has no terminal for a progress bar.
_RUNNER_OPTIONS = ("seed", "progress_bar")
# Data-set options of every data set, applied by the runner after loading.
LABEL_NOISE_OPTIONS = ("label_noise", "label_noise_kind")
# Seeds fit in 31 bits: every backend (numpy, torch, JAX keys) takes them as is.
_SEED_BITS = 31
# Task ids are the first 16 hex digits (64 bits) of a SHA-256: among a million
# tasks the chance that two share an id is 3e-8, and expand() checks anyway.
_ID_HEX = 16


# -- the parts of a study ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Entry:
    """One ``[[datasets]]`` or ``[[methods]]`` entry, validated.

    ``fixed`` and ``grid`` are JSON-ready (lists, not tuples); ``grid`` keeps
    the keys sorted so that its combinations, and hence labels, do not depend
    on the order of the file.
    """

    kind: str                      # "datasets" or "methods"
    index: int
    name: str
    label: str
    fixed: dict[str, Any]
    grid: tuple[tuple[str, tuple[Any, ...]], ...]

    @property
    def key(self) -> str:
        return f"{self.kind}[{self.index}]"

    def combinations(self) -> list[tuple[dict[str, Any], str]]:
        """Every (options, setting label) of the grid, labels like ``"n_train=200, p=5"``."""
        keys = [k for k, _ in self.grid]
        out = []
        for values in itertools.product(*(v for _, v in self.grid)):
            combo = dict(zip(keys, values, strict=True))
            label = ", ".join(f"{k}={_label_value(v)}" for k, v in combo.items())
            out.append(({**self.fixed, **combo}, label))
        return out


def _label_value(value: object) -> str:
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)


def _field_types(config_cls: type) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(config_cls)}


def _check_method_value(value: Any, annotation: str | None) -> Any:
    """Ints become floats for float fields, so ``1`` and ``1.0`` give the same task."""
    if annotation is None or isinstance(value, bool) or not isinstance(value, int):
        return value
    parts = {p.strip() for p in annotation.split("|")}
    return float(value) if "float" in parts and "int" not in parts else value


def _read_entry(raw: object, kind: str, index: int, path: Path) -> _Entry:
    from uqzoo import datasets
    from uqzoo import methods as registry

    key = f"{kind}[{index}]"
    table = toml.check_table(raw, path, key)
    allowed_keys = _ENTRY_KEYS if kind == "datasets" else _METHOD_KEYS
    toml.check_keys(table, allowed_keys, path, key, f"a [[{kind}]] entry")
    if "name" not in table:
        raise InvalidInputError(f"{toml.where(path, key)}: missing key 'name'")
    name = toml.check_str(table["name"], path, f"{key}.name")
    known = datasets.names() if kind == "datasets" else registry.names()
    if name not in known:
        what = "data set" if kind == "datasets" else "method"
        raise InvalidInputError(
            f"{toml.where(path, key + '.name')}: unknown {what} {name!r}; allowed: "
            f"{toml.allowed(known)}")
    label = toml.check_str(table.get("label", name), path, f"{key}.label")
    if not label.strip():
        raise InvalidInputError(f"{toml.where(path, key + '.label')}: must not be empty")
    fixed_key = "options" if kind == "datasets" else "config"
    fixed = toml.normalise(toml.check_table(table.get(fixed_key, {}), path, f"{key}.{fixed_key}"),
                       path, f"{key}.{fixed_key}")
    grid_raw = toml.normalise(toml.check_table(table.get("grid", {}), path, f"{key}.grid"),
                          path, f"{key}.grid")

    if kind == "datasets":
        defaults = datasets.options(name)
        allowed = [k for k in defaults if k not in _RUNNER_OPTIONS] + list(LABEL_NOISE_OPTIONS)

        def check(option: str, value: Any, where: str) -> Any:
            if option in LABEL_NOISE_OPTIONS:
                return _check_label_noise(option, value, path, where)
            if option in _RUNNER_OPTIONS:
                raise InvalidInputError(
                    f"{toml.where(path, where)}: set by the study runner (each replicate "
                    f"draws its own data), not by the study file; allowed: "
                    f"{toml.allowed(allowed)}")
            if option not in defaults:
                raise InvalidInputError(
                    f"{toml.where(path, where)}: unknown option of data set {name!r}; "
                    f"allowed: {toml.allowed(allowed)}")
            return toml.check_option_value(value, defaults[option], path, where)
    else:
        types = _field_types(registry.get(name).Config)
        allowed = list(types)

        def check(option: str, value: Any, where: str) -> Any:
            if option not in types:
                raise InvalidInputError(
                    f"{toml.where(path, where)}: unknown option of method {name!r}; "
                    f"allowed: {toml.allowed(allowed)}")
            return _check_method_value(value, types[option])

    fixed = {k: check(k, v, f"{key}.{fixed_key}.{k}") for k, v in fixed.items()}
    grid: list[tuple[str, tuple[Any, ...]]] = []
    for option in sorted(grid_raw):
        values = grid_raw[option]
        where = f"{key}.grid.{option}"
        if option in fixed:
            raise InvalidInputError(
                f"{toml.where(path, where)}: {option!r} is given twice, in {fixed_key} and in "
                f"grid; give it in one of them")
        if not isinstance(values, list):
            raise InvalidTypeError(
                f"{toml.where(path, where)}: a grid lists the values to try, e.g. "
                f"{option} = [1, 2]; got {toml.type_name(values)} {_show(values)}")
        if not values:
            raise InvalidInputError(f"{toml.where(path, where)}: empty grid; list at least one "
                                    "value")
        if option not in allowed:
            check(option, values[0], where)              # raises, naming the key
        checked = tuple(check(option, v, f"{where}[{i}]") for i, v in enumerate(values))
        texts = [json.dumps(v, sort_keys=True) for v in checked]
        if len(set(texts)) != len(texts):
            repeated = next(v for v in texts if texts.count(v) > 1)
            raise InvalidInputError(f"{toml.where(path, where)}: lists {repeated} twice")
        grid.append((option, checked))
    combinations = math.prod(len(values) for _, values in grid)
    try:          # before the combinations are built: a 3000 × 3000 grid fills memory
        check_study_tasks(combinations, " × ".join(f"{len(v):,} {option}" for option, v in grid))
    except InvalidInputError as exc:
        raise InvalidInputError(f"{toml.where(path, key + '.grid')}: {exc}") from None
    entry = _Entry(kind, index, name, label, fixed, tuple(grid))
    if kind == "methods":
        for combo, _ in entry.combinations():
            try:
                registry.make_config(name, **combo)
            except UqzooError as exc:
                raise type(exc)(f"{toml.where(path, key)} ({name}, {_show(combo, 120)}): "
                                f"{exc}") from None
    return entry


def _check_label_noise(option: str, value: Any, path: Path, where: str) -> Any:
    """``label_noise`` (a rate in [0, 1)) or ``label_noise_kind`` of a data set, checked as
    compare's options of the same names (:mod:`uqzoo.datasets.noise`)."""
    from uqzoo.datasets.noise import check_kind, check_rate

    if option == "label_noise":
        return check_rate(value, toml.subject(path, where))
    return check_kind(value, toml.subject(path, where))


def _read_spec(raw: object, path: Path) -> dict[str, Any]:
    """The study's ``[spec]``, complete (every option, defaults filled in): it enters
    every task's id."""
    from uqzoo.spec import MLPSpec

    given = toml.read_spec(raw, path)
    if "model" in given:                # the user's network: the file that makes it
        return dict(given)
    options: dict[str, Any] = {k: tuple(v) if k == "hidden" else v for k, v in given.items()}
    made = MLPSpec(1, 2, **options)
    return {"hidden": list(made.hidden), "activation": made.activation,
            "prior_scale": float(made.prior_scale), "prior": made.prior}


def _read_conformal(head: Mapping[str, Any], path: Path) -> dict[str, Any] | None:
    """``conformal`` (a level in (0, 1)) and ``conformal_score`` of ``[study]``, checked as
    compare's options of the same names (:mod:`uqzoo.comparison.options`)."""
    from uqzoo.comparison import options

    level, score, _ = options.conformal(head.get("conformal"), head.get("conformal_score"),
                                        names=options.Names.file(path, "study"))
    return None if level is None else {"level": level, "score": score}


def _read_reference(raw: object, path: Path) -> dict[str, Any]:
    """``[reference]``: HMC options on top of :data:`uqzoo.reference.REFERENCE_OPTIONS`,
    built into an ``hmc.Config`` now (a bad one fails here), returned complete."""
    from uqzoo import methods as registry
    from uqzoo.reference import REFERENCE_OPTIONS

    table = toml.normalise(toml.check_table(raw, path, "reference"), path, "reference")
    types = _field_types(registry.get("hmc").Config)
    toml.check_keys(table, tuple(types), path, "reference",
                    "[reference] (the HMC options of the reference posterior)")
    options = {**REFERENCE_OPTIONS,
               **{k: _check_method_value(v, types[k]) for k, v in table.items()}}
    try:
        config = registry.make_config("hmc", **options)
    except UqzooError as exc:
        raise type(exc)(f"{toml.where(path, 'reference')}: {exc}") from None
    return json.loads(_canonical(dataclasses.asdict(config)))


# -- tasks ---------------------------------------------------------------------------------

def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def _derive_seed(purpose: str, text: str) -> int:
    digest = hashlib.sha256(f"uqzoo-study/{purpose}\0{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - _SEED_BITS)


def task_id(config: Mapping[str, Any]) -> str:
    """The stable id of a task: SHA-256 of its canonical JSON config, 16 hex digits."""
    return hashlib.sha256(_canonical(config).encode()).hexdigest()[:_ID_HEX]


@dataclasses.dataclass(frozen=True)
class Task:
    """One fit and evaluation of a study: frozen, with a stable id and seeds.

    Attributes
    ----------
    id : str
        16 hex digits of the SHA-256 of ``config_json``: the same settings give
        the same id in any file, order or process.
    seed : int
        Seed of the fit, derived from ``id``.
    data_seed : int
        Seed of the data set (its ``seed`` option), derived from the data
        setting, the replicate and the study seed only, not from the method:
        every method of one replicate sees the same data (common random
        numbers), so differences between methods are not data noise.
    study : str
        The study's name (not part of the id).
    dataset, setting : str
        The data set's label and its grid values (``"n_train=200, p=5"``;
        empty without a grid).
    method, variant : str
        The method's label and its grid values.
    replicate : int
    config_json : str
        Canonical JSON of everything :func:`run_task` needs: ``dataset``
        (``name``, ``options``), ``method`` (``name``, ``config``), ``spec``,
        ``levels``, ``delta``, ``replicate``, the study ``seed`` and, with a
        ``[reference]`` table, ``reference`` (its HMC options).
    """

    id: str
    seed: int
    data_seed: int
    study: str
    dataset: str
    setting: str
    method: str
    variant: str
    replicate: int
    config_json: str

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, study: str = "", dataset: str = "",
                    setting: str = "", method: str = "", variant: str = "") -> Task:
        """The task of ``config`` (the layout of ``config_json``), with its id and seeds."""
        text = _canonical(config)
        identity = hashlib.sha256(text.encode()).hexdigest()[:_ID_HEX]
        data_part = {"dataset": config["dataset"], "replicate": config["replicate"],
                     "seed": config["seed"]}
        return cls(id=identity, seed=_derive_seed("fit", identity),
                   data_seed=_derive_seed("data", _canonical(data_part)), study=study,
                   dataset=dataset or config["dataset"]["name"], setting=setting,
                   method=method or config["method"]["name"], variant=variant,
                   replicate=int(config["replicate"]), config_json=text)

    @property
    def config(self) -> dict[str, Any]:
        """A fresh copy of the task's configuration (see ``config_json``)."""
        return json.loads(self.config_json)

    @property
    def reference_seed(self) -> int | None:
        """Seed of the task's reference posterior (None without ``[reference]``).

        Derived from the data setting, the replicate, the study seed, the
        network and the reference options, not from the method: every method of
        one replicate is judged against the same reference, and an HMC task is
        a second, independent run beside it.
        """
        config = self.config
        if config.get("reference") is None:
            return None
        part = {key: config[key] for key in ("dataset", "replicate", "seed", "spec",
                                             "reference")}
        return _derive_seed("reference", _canonical(part))

    def __repr__(self) -> str:
        setting = f" [{self.setting}]" if self.setting else ""
        variant = f" [{self.variant}]" if self.variant else ""
        return (f"Task({self.id}: {self.method}{variant} on {self.dataset}{setting}, "
                f"replicate {self.replicate}, seed {self.seed})")


@dataclasses.dataclass(frozen=True)
class Study:
    """A validated study file (see the module docstring for its format).

    Attributes
    ----------
    path : pathlib.Path
    name, description : str
    replicates : int
    levels : tuple of float
    delta : float
    seed : int
    spec : dict
        ``hidden``, ``activation``, ``prior_scale``, ``prior``.
    source : str
        The file's text, kept in the store beside the results.
    reference : dict or None
        The ``[reference]`` table's HMC options, complete (defaults filled in);
        None: no fidelity.
    conformal : dict or None
        ``{"level": L, "score": "lac" | "aps"}`` from ``conformal`` (and
        ``conformal_score``) of ``[study]``: every task holds out a stratified
        20 % of its training data (seeded by the task), fits on the rest and
        judges split-conformal label sets at level L beside the method's own
        (:func:`uqzoo.conformal.conformalize`; ``conformal_*`` and
        ``plain_set_*`` keys of the task's report). None: not, and the tasks'
        ids are those of a study without the key.
    """

    path: Path
    name: str
    description: str
    replicates: int
    levels: tuple[float, ...]
    delta: float
    seed: int
    spec: dict[str, Any]
    datasets: tuple[_Entry, ...]
    methods: tuple[_Entry, ...]
    source: str
    reference: dict[str, Any] | None = None
    conformal: dict[str, Any] | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    def tasks(self) -> list[Task]:
        """Every task: data sets × settings × methods × variants × replicates.

        Raises InvalidInputError when two entries give the same task.
        """
        tasks: list[Task] = []
        origin: dict[str, str] = {}
        labelled: dict[tuple[str, str, str, str, int], tuple[_Entry, _Entry]] = {}
        for data_entry in self.datasets:
            for options, setting in data_entry.combinations():
                for method_entry in self.methods:
                    for config, variant in method_entry.combinations():
                        for replicate in range(self.replicates):
                            full = {
                                "dataset": {"name": data_entry.name, "options": options},
                                "method": {"name": method_entry.name, "config": config},
                                "spec": self.spec, "levels": list(self.levels),
                                "delta": self.delta, "replicate": replicate,
                                "seed": self.seed,
                            }
                            if self.reference is not None:
                                full["reference"] = self.reference
                            if self.conformal is not None:
                                full["conformal"] = self.conformal
                            task = Task.from_config(
                                full, study=self.name, dataset=data_entry.label,
                                setting=setting, method=method_entry.label, variant=variant)
                            here = f"{data_entry.key} × {method_entry.key}"
                            if task.id in origin:
                                raise InvalidInputError(
                                    f"{toml.where(self.path, here)}: gives the same task as "
                                    f"{origin[task.id]} ({task!r}); remove one")
                            origin[task.id] = here
                            # Results are told apart by their labels: two entries with
                            # one label would be pooled by load() and summarize().
                            labels = (task.dataset, task.setting, task.method, task.variant,
                                      replicate)
                            other_data, other_method = labelled.setdefault(
                                labels, (data_entry, method_entry))
                            if other_method is not method_entry:
                                raise InvalidInputError(
                                    f"{toml.where(self.path, method_entry.key + '.label')}: "
                                    f"{method_entry.label!r} is also the label of "
                                    f"{other_method.key}; give each entry its own label")
                            if other_data is not data_entry:
                                raise InvalidInputError(
                                    f"{toml.where(self.path, data_entry.key + '.label')}: "
                                    f"{data_entry.label!r} is also the label of "
                                    f"{other_data.key} (setting {setting!r}); give each "
                                    "entry its own label")
                            tasks.append(task)
        return tasks


def read_study(path: str | os.PathLike) -> Study:
    """Read and validate a study file.

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file (see :mod:`uqzoo.study.studyfile` for the format).

    Returns
    -------
    Study

    Raises
    ------
    FileFormatError
        Missing or unreadable file, invalid TOML, a key given twice.
    InvalidInputError, InvalidTypeError
        Unknown keys, methods or data sets, bad values or types, empty grids,
        two entries giving the same task; the message names the file and key.

    Example
    -------
    >>> import pathlib, tempfile
    >>> import uqzoo as uz
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.toml"
    >>> _ = path.write_text('''
    ... [study]
    ... replicates = 2
    ... [[datasets]]
    ... name = "sim-teacher"
    ... grid = { n_train = [200, 400] }
    ... [[methods]]
    ... name = "laplace"
    ... ''')
    >>> study = uz.study.read_study(path)
    >>> study.name, len(study.tasks())
    ('tiny', 4)
    """

    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or os.PathLike, got {_show(path)}")
    path = Path(os.fspath(path))
    raw, text = toml.read_toml(path)
    toml.check_keys(raw, _TOP_KEYS, path, "", "a study file")
    head = toml.check_table(raw.get("study", {}), path, "study")
    toml.check_keys(head, _STUDY_KEYS, path, "study", "[study]")
    name = toml.check_str(head.get("name", path.stem), path, "study.name")
    if not name.strip():
        raise InvalidInputError(f"{toml.where(path, 'study.name')}: must not be empty")
    description = toml.check_str(head.get("description", ""), path, "study.description")
    replicates = toml.check_int(head.get("replicates", 1), path, "study.replicates", 1)
    if replicates > MAX_STUDY_TASKS:
        raise InvalidInputError(
            f"{toml.where(path, 'study.replicates')}: must be at most {MAX_STUDY_TASKS:,} (the "
            f"tasks a study may hold; each is a fit), got {replicates:,}")
    seed = toml.check_int(head.get("seed", 0), path, "study.seed", 0)
    levels = toml.read_levels(head.get("levels", list(DEFAULT_LEVELS)), path, "study.levels")
    delta = toml.read_delta(head.get("delta", DEFAULT_DELTA), path, "study.delta")
    spec = _read_spec(raw.get("spec", {}), path)
    reference = _read_reference(raw["reference"], path) if "reference" in raw else None
    conformal = _read_conformal(head, path)
    entries: dict[str, tuple[_Entry, ...]] = {}
    for kind in ("datasets", "methods"):
        items = raw.get(kind)
        if items is None:
            raise InvalidInputError(f"{toml.where(path, kind)}: missing; a study needs at least "
                                    f"one [[{kind}]] entry")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise InvalidTypeError(f"{toml.where(path, kind)}: must be an array of tables "
                                   f"([[{kind}]] entries), got {_show(items)}")
        if not items:
            raise InvalidInputError(f"{toml.where(path, kind)}: empty; a study needs at least one "
                                    f"[[{kind}]] entry")
        entries[kind] = tuple(_read_entry(item, kind, i, path) for i, item in enumerate(items))
    study = Study(path=path, name=name, description=description, replicates=replicates,
                  levels=levels, delta=delta, seed=seed, spec=spec,
                  datasets=entries["datasets"], methods=entries["methods"], source=text,
                  reference=reference, conformal=conformal)
    # Counted before any task is built: a 3000 × 3000 grid would fill memory first.
    settings = sum(math.prod(len(v) for _, v in e.grid) for e in entries["datasets"])
    variants = sum(math.prod(len(v) for _, v in e.grid) for e in entries["methods"])
    try:
        check_study_tasks(settings * variants * replicates,
                          f"{settings:,} data-set settings × {variants:,} method variants × "
                          f"{replicates:,} replicates")
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path.name}: {exc}") from None
    study.tasks()                     # two entries giving one task fail here, not later
    return study


def expand(path: str | os.PathLike | Study) -> list[Task]:
    """The tasks of a study file, validated (see :func:`read_study`).

    Example
    -------
    >>> import pathlib, tempfile
    >>> import uqzoo as uz
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.toml"
    >>> _ = path.write_text('[[datasets]]\\nname = "sim-teacher"\\n'
    ...                     '[[methods]]\\nname = "laplace"\\n')
    >>> [task] = uz.study.expand(path)
    >>> len(task.id), task.method, task.dataset
    (16, 'laplace', 'sim-teacher')
    """
    study = path if isinstance(path, Study) else read_study(path)
    return study.tasks()
