"""Saving and loading posteriors: netCDF through ``xarray.DataTree``, ArviZ schema.

Layout of a saved posterior (no pickle anywhere; every value is an array or a
JSON string attribute):

- ``/posterior``: one variable per parameter, named by its state_dict key,
  dims ``(chain, draw, <key>_dim_0, ...)``;
- ``/sample_stats``: per-draw statistics, dims ``(chain, draw, ...)``;
- ``/diagnostics``: convergence summaries, loss/ELBO traces, timings;
- ``/anchor``: the linearisation point of a "glm" predictive (Laplace);
- root attributes: ``uqzoo_format``, ``method``, ``seed``, ``predictive``,
  ``converged``, and JSON strings ``config``, ``spec``, ``warnings``, ``classes``
  (the original class labels, or null for 0..K-1), ``versions``, and, only for
  a recalibrated posterior, ``logit_transform`` (:func:`uqzoo.recalibrate`:
  kind, scale, shift and how it was fitted; files without it load with none),
  and, only for a test-time-augmented posterior (``tta``), ``input_augmentation``
  (the augmentation steps, their seed and the training statistics they use:
  data, no code; files without it load with none).

What a save guarantees
----------------------
- **Atomic and durable.** The file is serialised in memory, written to a
  temporary file with a short name (``.uqz-<pid>-XXXXXXXX.tmp``, so any legal
  final name works) in the target's folder, flushed to disk (``fsync``), moved
  over the target with ``os.replace``, and the folder is flushed too. A crash,
  kill or power loss leaves either the old file or the new one, never a
  mixture; concurrent writers each replace the file whole (the last one wins).
- **Clean.** On any error, Ctrl-C included, the temporary file is removed.
  Temporaries that a killed save left behind are removed by the next save into
  that folder, once their writer process is gone and they are a minute old.
- **Never through a link, never over a file unasked.** A symbolic link at the
  path is refused (naming the link and its target), never followed; an
  existing file is replaced only with ``overwrite=True`` (``--overwrite``), and
  then the path itself is replaced, by rename. Without ``overwrite`` the new
  file is hard-linked into place, so a file that appears meanwhile is not
  replaced either.
- **Polite.** Anything that is
  not a regular file (a directory, device, FIFO, socket) is never replaced. A
  new file gets the permissions the umask gives (``0o666 & ~umask``); an
  existing file keeps its mode. A read-only existing file (no write permission)
  is refused, not silently replaced -- make it writable or remove it first.
- **Clear failures.** A missing or unwritable folder, a too-long name, a full
  disk, a quota or a read-only filesystem raise
  :class:`~uqzoo.errors.OutputPathError` (an ``OSError``) naming the path;
  the existing file stays as it was.

What a load guarantees
----------------------
The file is opened with h5py and its whole structure is checked *before any
data is read*:

- only hard links inside this file: external links and soft links are refused,
  and so are external storage (data kept in another file) and virtual datasets;
- only the four groups above; ``/posterior`` and ``/anchor`` hold exactly the
  spec's parameters (with the spec's shapes, float dtype); ``/sample_stats``
  variables lead with ``(chain, draw)``; every variable is a plain number
  array (bool, int or float); unknown groups, unknown parameters and
  non-numeric variables are errors (sample statistics and diagnostics may
  carry any names, as they differ by method, but each is checked the same way);
- every declared size is bounded: parameter draws by the spec and
  :data:`~uqzoo._limits.MAX_DRAW_BYTES`, sample statistics and
  diagnostics by :data:`MAX_AUX_ELEMENTS` per variable, and every variable must
  be backed by the bytes the file stores (uncompressed, or deflate-compressed
  at most 1032:1, zlib's maximum), and all of them together by 64 times the
  file's size (plus 16 MiB), so a small file cannot declare gigabytes;
- no CF decoding: a variable that asks for one (``scale_factor``,
  ``add_offset``, ``_Unsigned``, ``missing_value``, ``valid_*``, ``units``,
  ``calendar``, a non-NaN ``_FillValue``) is refused rather than silently
  rescaled or masked;
- every root attribute is parsed against its declared type (``converged`` is
  JSON ``true``/``false``/``null``, ``warnings`` a JSON list of strings,
  ``seed`` a decimal integer, ``config`` a JSON object, ...); root attributes
  uqzoo does not define are ignored, never read.

Any violation is a :class:`~uqzoo.errors.FileFormatError` naming what is
wrong; a hostile file can neither make uqzoo read another file's bytes nor
allocate more memory than its own contents justify.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr

from uqzoo._files import (
    check_output_file,
    check_output_folder,
    staged_folder,
    write_file_atomically,
)
from uqzoo._limits import MAX_DEFLATE_RATIO
from uqzoo._version import versions
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError

__all__ = [
    "MAX_AUX_ELEMENTS",
    "check_output_file",
    "check_output_folder",
    "read_posterior",
    "save_posterior",
    "staged_folder",
    "to_datatree",
    "write_file_atomically",
]

FORMAT = "uqzoo.posterior/2"
# Format 1 (uqzoo 0.1) is read and upgraded on load, see _upgrade_format_1.
_OLD_FORMATS = ("uqzoo.posterior/1",)
_ENGINE: Literal["h5netcdf"] = "h5netcdf"

# One sample statistic or diagnostic holds at most 2**28 elements (2 GiB at
# float64). The largest a fit within uqzoo's own limits writes is of that
# order: the (members, epochs) loss trace (MAX_TRACE_ELEMENTS) and Laplace's
# P × P precision (MAX_MATRIX_ELEMENTS).
MAX_AUX_ELEMENTS = 2**28

# An attribute uqzoo reads (JSON config, spec, ...) is a few kB; 16 MiB is far
# beyond any real one and keeps a crafted attribute from costing more.
_MAX_ATTRIBUTE_BYTES = 2**24

# Variables per group: diagnostics hold a few dozen; a file with more is not ours.
_MAX_VARIABLES = 10_000

# A deflate-compressed variable may declare at most this many times the bytes it stores.
_MAX_DEFLATE_RATIO = MAX_DEFLATE_RATIO

# All the variables of a file together may declare at most this many times the
# file's size, plus the slack: uqzoo writes uncompressed (ratio 1), and zlib
# shrinks float draws by less than 2:1; 64:1 leaves room for constant
# diagnostics (an all-False divergence flag), while a 2 MB file of zeros can
# no longer declare gigabytes. The slack covers small files of such flags.
_MAX_FILE_RATIO = 64
_FILE_RATIO_SLACK = 2**24

_GROUPS = ("posterior", "sample_stats", "diagnostics", "anchor")
# Attributes that make CF decoding rescale, mask or reinterpret values.
_CF_ATTRIBUTES = ("scale_factor", "add_offset", "_Unsigned", "missing_value", "valid_min",
                  "valid_max", "valid_range", "units", "calendar")


def _param_dataset(params: dict[str, np.ndarray], lead_dims: tuple[str, ...],
                   lead_shape: tuple[int, ...]) -> xr.Dataset:
    data_vars = {}
    for key, value in params.items():
        value = np.asarray(value)
        arr = value.reshape(lead_shape + value.shape[len(lead_shape) and 1:]) \
            if lead_shape else value
        rest = arr.shape[len(lead_dims):]
        dims = lead_dims + tuple(f"{key}_dim_{i}" for i in range(len(rest)))
        data_vars[key] = (dims, arr)
    coords = {d: np.arange(n) for d, n in zip(lead_dims, lead_shape, strict=True)}
    return xr.Dataset(data_vars, coords=coords)


def to_datatree(posterior) -> xr.DataTree:
    """The posterior as an ``xarray.DataTree`` with ArviZ group names."""
    chains, draws = posterior.sample_shape
    groups = {
        "posterior": _param_dataset(posterior.draws, ("chain", "draw"), (chains, draws)),
    }
    stats = {}
    for key, value in posterior.sample_stats.items():
        rest = value.shape[2:]
        stats[key] = (("chain", "draw", *(f"{key}_dim_{i}" for i in range(len(rest)))), value)
    groups["sample_stats"] = xr.Dataset(
        stats, coords={"chain": np.arange(chains), "draw": np.arange(draws)})
    diag_vars, diag_attrs = {}, {}
    for key, value in posterior.diagnostics.items():
        if isinstance(value, str):
            diag_attrs[key] = value
            continue
        arr = np.asarray(value)
        if arr.dtype == object or arr.dtype.kind in "US":
            diag_attrs[key] = json.dumps(np.asarray(value).tolist())
            continue
        diag_vars[key] = (tuple(f"{key}_dim_{i}" for i in range(arr.ndim)), arr)
    groups["diagnostics"] = xr.Dataset(diag_vars, attrs=diag_attrs)
    if posterior.anchor is not None:
        groups["anchor"] = _param_dataset(posterior.anchor, (), ())
    root = xr.Dataset(attrs={
        "uqzoo_format": FORMAT,
        "method": posterior.method,
        "seed": str(posterior.seed),  # str: netCDF has no unsigned 64-bit attribute type
        "predictive": posterior.predictive,
        "converged": json.dumps(posterior.converged),
        "config": json.dumps(posterior.config),
        **_model_attrs(posterior.spec),
        "warnings": json.dumps(list(posterior.warnings)),
        "classes": json.dumps(None if posterior.classes is None else list(posterior.classes)),
        "versions": json.dumps(versions()),
    })
    if posterior.logit_transform is not None:
        root.attrs["logit_transform"] = json.dumps(posterior.logit_transform.to_dict())
    if getattr(posterior, "input_augmentation", None) is not None:
        root.attrs["input_augmentation"] = json.dumps(posterior.input_augmentation.to_dict())
    tree = xr.DataTree(dataset=root)
    for name, ds in groups.items():
        tree[name] = xr.DataTree(dataset=ds)
    return tree


def _model_attrs(model) -> dict[str, str]:
    """What a file records of its model: the MLP's spec (rebuilt from the file alone), or
    any other model's description, and always the fingerprint a loader checks."""
    from uqzoo.spec import MLPSpec

    described = ({"spec": json.dumps(model.to_dict())} if isinstance(model, MLPSpec)
                 else {"model": json.dumps(model.describe())})
    return {**described, "model_fingerprint": model.fingerprint()}


# -- output paths: checked before any work, written atomically ------------------------------

def save_posterior(posterior, path, *, overwrite: bool = False, what: str = "path") -> None:
    """Write ``posterior`` to ``path`` (netCDF4/HDF5), atomically and durably.

    The tree is serialised in memory (so HDF5 never sees a failing disk; this
    needs memory for one copy of the file, about the size of the draws),
    written to a short-named temporary file in the same folder, flushed, and
    renamed over ``path``; see the module docstring for the guarantees.

    Parameters
    ----------
    posterior : Posterior
    path : str or os.PathLike
    overwrite : bool
        Replace an existing file at ``path``.
    what : str
        How the path is named in error messages (``"--out"`` on the command line).

    Raises
    ------
    OutputPathError
        If ``path`` cannot be written (missing or read-only folder, a symbolic
        link, a directory or device at ``path``, an existing file without
        ``overwrite``, a read-only file, a full disk, ...). Any earlier file at
        ``path`` is then intact.
    """
    target = check_output_file(path, what, overwrite=overwrite)
    # Serialising to memory first keeps HDF5 away from a failing disk: a full
    # disk while h5netcdf wrote the file left a half-closed HDF5 handle whose
    # close() at garbage collection crashed the interpreter.
    data = to_datatree(posterior).to_netcdf(engine=_ENGINE)
    write_file_atomically(target, data, what, overwrite=overwrite)


# -- loading: the structure is checked before any data is read -------------------------------

class _Bad(Exception):
    """A schema violation; turned into FileFormatError with the path in front."""


def _members(group, where: str) -> list[str]:
    """Names in ``group``, each checked to be a hard link (an object of this file)."""
    import h5py
    names = list(group.keys())
    if len(names) > _MAX_VARIABLES:
        raise _Bad(f"{where} holds {len(names)} entries, more than the {_MAX_VARIABLES} "
                   f"uqzoo allows")
    for name in names:
        # getlink=True inspects the link itself; following it could open another file.
        link = group.get(name, getlink=True)
        if not isinstance(link, h5py.HardLink):
            kind = type(link).__name__
            raise _Bad(f"{where}/{name} is a {kind}, a link to data elsewhere; uqzoo reads only "
                       f"data stored in the file itself")
    return names


def _check_storage(dset, where: str) -> None:
    """Refuse data kept outside the file (external storage, virtual datasets) and
    declared sizes that the stored bytes cannot back."""
    import h5py
    dcpl = dset.id.get_create_plist()
    layout = dcpl.get_layout()
    if layout == h5py.h5d.VIRTUAL or dset.is_virtual:
        raise _Bad(f"{where} is a virtual dataset (its data live in other files); uqzoo reads "
                   f"only data stored in the file itself")
    if dcpl.get_external_count() > 0 or dset.external:
        raise _Bad(f"{where} uses external storage (its data live in another file); uqzoo "
                   f"reads only data stored in the file itself")
    allowed = {h5py.h5z.FILTER_DEFLATE, h5py.h5z.FILTER_SHUFFLE, h5py.h5z.FILTER_FLETCHER32}
    filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
    unknown = [f for f in filters if f not in allowed]
    if unknown:
        raise _Bad(f"{where} is stored with HDF5 filter(s) {unknown}; uqzoo reads uncompressed "
                   f"or deflate-compressed data only")


def _check_backed(dset, where: str) -> None:
    """The declared size must be backed by stored bytes: no never-written data."""
    import h5py
    declared = math.prod(dset.shape) * dset.dtype.itemsize
    stored = dset.id.get_storage_size()
    dcpl = dset.id.get_create_plist()
    deflated = any(dcpl.get_filter(i)[0] == h5py.h5z.FILTER_DEFLATE
                   for i in range(dcpl.get_nfilters()))
    limit = stored * (_MAX_DEFLATE_RATIO if deflated else 1)
    if declared > limit:
        raise _Bad(f"{where} declares shape {dset.shape} ({declared:,} bytes) but the file "
                   f"stores only {stored:,} bytes for it; uqzoo does not read data that was "
                   f"never written")


def _check_total(datasets: list[Any], file_size: int) -> None:
    """All variables together may declare at most _MAX_FILE_RATIO times the file's size
    (plus _FILE_RATIO_SLACK): each one's own bound (1032:1 when deflated) would let a
    small file of many compressed variables of zeros declare gigabytes."""
    declared = sum(math.prod(d.shape) * d.dtype.itemsize for d in datasets)
    limit = _MAX_FILE_RATIO * file_size + _FILE_RATIO_SLACK
    if declared > limit:
        raise _Bad(f"its variables declare {declared:,} bytes in all, more than "
                   f"{_MAX_FILE_RATIO} times the file's {file_size:,} bytes (plus "
                   f"{_FILE_RATIO_SLACK // 2**20} MiB); uqzoo writes its files uncompressed, "
                   "and compressed draws shrink by far less: a compression bomb?")


def _is_scale(dset) -> bool:
    """A netCDF dimension scale (``chain``, ``draw``, ``<var>_dim_<i>``): never read."""
    import h5py
    return bool(h5py.h5ds.is_scale(dset.id))


def _read_attr(obj, name: str, where: str) -> Any:
    """One attribute, its size checked before it is read."""
    attr_id = obj.attrs.get_id(name)
    too_large = _Bad(f"attribute {name!r} of {where} is larger than "
                     f"{_MAX_ATTRIBUTE_BYTES // 2**20} MiB")
    if attr_id.get_storage_size() > _MAX_ATTRIBUTE_BYTES:
        raise too_large
    value = obj.attrs[name]
    # A variable-length string reports 16 bytes of storage (its heap reference),
    # whatever its length: measured once read (attributes are never compressed,
    # so this costs no more than the file's own bytes), before any JSON parsing,
    # which would cost ~15 times as much.
    if isinstance(value, (str, bytes)) and len(value) > _MAX_ATTRIBUTE_BYTES:
        raise too_large
    return value


def _string_attr(obj, name: str, where: str) -> str:
    import h5py
    attr_id = obj.attrs.get_id(name)
    if attr_id.shape != () or h5py.check_string_dtype(attr_id.dtype) is None:
        raise _Bad(f"attribute {name!r} of {where} must be a string, got "
                   f"{attr_id.dtype} of shape {attr_id.shape}")
    value = _read_attr(obj, name, where)
    if isinstance(value, (bytes, np.bytes_)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad(f"attribute {name!r} of {where} is not UTF-8 text") from None
    if not isinstance(value, str):
        raise _Bad(f"attribute {name!r} of {where} must be a string, got {type(value).__name__}")
    return value


def _json(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        # ValueError: not JSON, or an integer of more than 4300 digits;
        # RecursionError: nested deeper than the parser's stack allows.
        raise _Bad(f"attribute {name!r} is not valid JSON: {text[:80]!r}") from None


def _check_variable(dset, where: str, numeric_kinds: str) -> None:
    """A data variable: numeric dtype, no CF decoding asked for (storage checked before)."""
    dtype = dset.dtype
    if dtype.kind not in numeric_kinds or dtype.names is not None or dtype.shape != ():
        raise _Bad(f"{where} has dtype {dtype}; expected a plain "
                   f"{'float' if numeric_kinds == 'f' else 'bool, int or float'} array")
    names = set(dset.attrs.keys())
    cf = sorted(names & set(_CF_ATTRIBUTES))
    if cf:
        raise _Bad(f"{where} carries CF decoding attribute(s) {cf}; uqzoo stores values as "
                   f"they are and does not rescale, mask or convert them")
    if "_FillValue" in names:
        fill = np.asarray(_read_attr(dset, "_FillValue", where))
        if fill.size != 1 or fill.dtype.kind != "f" or not np.isnan(fill).all():
            raise _Bad(f"{where} has _FillValue {fill!r}; uqzoo writes NaN only and does not "
                       f"mask values")
    if "dtype" in names and _string_attr(dset, "dtype", where) != "bool":
        raise _Bad(f"{where} has a 'dtype' attribute other than 'bool'")


def _read(dset, where: str, leading: bool = False) -> np.ndarray:
    """The data of a checked variable, in native byte order; int8 marked
    ``dtype='bool'`` back to bool; ``leading``: (chain, draw) merged into S."""
    arr = np.asarray(dset[()])
    if arr.dtype.byteorder not in ("=", "|"):
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if "dtype" in dset.attrs:                      # xarray stores bool as int8 + this marker
        if arr.dtype.kind not in "iub" or (arr.size and not np.isin(arr, (0, 1)).all()):
            raise _Bad(f"{where} is marked bool but holds values other than 0 and 1")
        arr = arr.astype(bool)
    return arr.reshape((-1, *arr.shape[2:])) if leading else arr


def _params(group, spec, where: str,
            lead: tuple[int, ...] | None) -> tuple[dict[str, Any], tuple[int, ...]]:
    """The checked datasets of ``spec``'s parameters in ``group``, and the leading shape.

    ``lead`` None: the parameters lead with (chain, draw), returned; ``()``: none.
    """
    from uqzoo._limits import MAX_DRAW_BYTES

    expected = spec.param_shapes()
    datasets = {}
    for name, obj in _variables(group, where):
        if name not in expected:
            raise _Bad(f"{where} holds {name!r}, which is not a parameter of the spec "
                       f"(expected {list(expected)})")
        _check_variable(obj, f"{where}/{name}", "f")
        datasets[name] = obj
    missing = [k for k in expected if k not in datasets]
    if missing:
        raise _Bad(f"{where} lacks parameter(s) {missing}")
    n_lead = 2 if lead is None else 0
    found: tuple[int, ...] | None = lead
    for key, shape in expected.items():
        got = tuple(datasets[key].shape)
        if len(got) != n_lead + len(shape) or got[n_lead:] != shape:
            want = ("chain", "draw", *shape) if n_lead else shape
            raise _Bad(f"{where}/{key} has shape {got}; the spec implies {want}")
        if found is None:
            found = got[:2]
        elif n_lead and got[:2] != found:
            raise _Bad(f"{where}/{key} has (chain, draw) = {got[:2]}, other parameters {found}")
    assert found is not None        # the spec has at least one parameter
    if n_lead:
        nbytes = math.prod(found) * spec.n_params * 4
        if nbytes > MAX_DRAW_BYTES:
            raise _Bad(f"{where} declares {found[0]} × {found[1]} draws of {spec.n_params:,} "
                       f"parameters ({nbytes / 2**30:.1f} GiB as float32), more than the "
                       f"{MAX_DRAW_BYTES // 2**30} GiB a posterior may hold")
    for key in expected:
        _check_backed(datasets[key], f"{where}/{key}")
    return {key: datasets[key] for key in expected}, found


def _variables(group, where: str) -> Iterator[tuple[str, Any]]:
    """(name, dataset) of each variable of ``group`` but netCDF dimension scales,
    its storage checked (inline in this file) before anything else looks at it."""
    import h5py
    for name in _members(group, where):
        obj = group[name]
        if not isinstance(obj, h5py.Dataset):
            raise _Bad(f"{where}/{name} is not a variable")
        _check_storage(obj, f"{where}/{name}")
        if not _is_scale(obj):
            yield name, obj


def _aux(group, where: str, lead: tuple[int, ...] | None) -> dict[str, Any]:
    """The checked datasets of sample statistics (leading ``lead``) or diagnostics (None)."""
    checked = {}
    for name, obj in _variables(group, where):
        _check_variable(obj, f"{where}/{name}", "biuf")
        if lead is not None and tuple(obj.shape[:2]) != lead:
            raise _Bad(f"{where}/{name} has shape {obj.shape}; sample statistics lead with "
                       f"(chain, draw) = {lead}")
        size = math.prod(obj.shape)
        if size > MAX_AUX_ELEMENTS:
            raise _Bad(f"{where}/{name} declares shape {obj.shape} ({size:,} elements), more "
                       f"than the {MAX_AUX_ELEMENTS:,} (2**28) uqzoo reads per variable")
        _check_backed(obj, f"{where}/{name}")
        checked[name] = obj
    return checked


def _diagnostic_attrs(group, where: str) -> dict[str, Any]:
    """String diagnostics: JSON values (lists become arrays), or plain text."""
    out: dict[str, Any] = {}
    for name in group.attrs.keys():
        if name == "_NCProperties" or name.startswith("_Netcdf4"):   # netCDF bookkeeping
            continue
        text = _string_attr(group, name, where)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            out[name] = text              # a plain string diagnostic
            continue
        try:
            out[name] = np.asarray(value)
        except ValueError:
            raise _Bad(f"attribute {name!r} of {where} is a ragged JSON array") from None
    return out


def _root_attrs(f, fmt: str, model) -> dict[str, Any]:
    """The root attributes uqzoo defines, each parsed against its declared type."""
    def optional(name: str) -> str | None:
        return _string_attr(f, name, "the root") if name in f.attrs else None

    def text(name: str) -> str:
        value = optional(name)
        if value is None:
            raise _Bad(f"the root attribute {name!r} is missing")
        return value

    out: dict[str, Any] = {"method": text("method"), "predictive": text("predictive")}
    seed = text("seed")
    if not re.fullmatch(r"[0-9]{1,20}", seed):
        raise _Bad(f"attribute 'seed' must be a decimal integer, got {seed[:80]!r}")
    out["seed"] = int(seed)
    converged = text("converged")
    if converged not in ("true", "false", "null"):
        raise _Bad(f"attribute 'converged' must be JSON true, false or null, got "
                   f"{converged[:80]!r}")
    out["converged"] = json.loads(converged)
    config = _json(text("config"), "config")
    if not isinstance(config, dict):
        raise _Bad(f"attribute 'config' must be a JSON object, got {type(config).__name__}")
    out["config"] = config
    out.update(_file_model(optional, fmt, model))
    warnings = _json(text("warnings"), "warnings")
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise _Bad(f"attribute 'warnings' must be a JSON list of strings, got "
                   f"{json.dumps(warnings)[:80]}")
    out["warnings"] = tuple(warnings)
    classes_text = optional("classes")      # absent in files saved before labels were kept
    classes = None if classes_text is None else _json(classes_text, "classes")
    if classes is not None and not isinstance(classes, list):
        raise _Bad(f"attribute 'classes' must be a JSON list or null, got "
                   f"{json.dumps(classes)[:80]}")
    out["classes"] = classes
    out["logit_transform"] = _logit_transform(optional("logit_transform"), out["spec"])
    out["input_augmentation"] = _input_augmentation(optional("input_augmentation"),
                                                    out["spec"])
    versions_text = optional("versions")
    if versions_text is not None:
        versions = _json(versions_text, "versions")
        if not isinstance(versions, dict):
            raise _Bad("attribute 'versions' must be a JSON object")
    return out


def _file_model(optional, fmt: str, model) -> dict[str, Any]:
    """The file's model: its MLPSpec, or the ``model`` the caller passed, checked against
    the fingerprint the file records."""
    from uqzoo.models import Model, fingerprint_of
    from uqzoo.spec import MLPSpec

    if model is not None and not isinstance(model, Model):
        raise InvalidTypeError(f"model must be a uqzoo.Model or None, got {type(model).__name__}")
    spec_text, model_text = optional("spec"), optional("model")
    recorded = optional("model_fingerprint")
    out: dict[str, Any] = {}
    if spec_text is not None:
        spec = _json(spec_text, "spec")
        if not isinstance(spec, dict) or not isinstance(spec.get("hidden"), list):
            raise _Bad("attribute 'spec' must be a JSON object with a 'hidden' list")
        if fmt == "uqzoo.posterior/1":
            spec.setdefault("prior", "iid")      # the only prior format 1 knew
        try:
            out["spec"] = MLPSpec.from_dict(spec)
            out["legacy_dropout"] = spec.get("dropout")
        except (TypeError, ValueError) as exc:
            raise _Bad(f"attribute 'spec' does not describe a valid MLPSpec: {exc}") from None
        described = out["spec"].describe()
        if recorded is None:
            recorded = out["spec"].fingerprint()
    elif model_text is not None:
        described = _json(model_text, "model")
        if not isinstance(described, dict):
            raise _Bad("attribute 'model' must be a JSON object")
        if recorded is None:
            recorded = fingerprint_of(described)
        if model is None:
            raise InvalidInputError(
                f"the file holds a posterior of your own model ({_described(described)}); "
                f"load it with that model: uz.load_posterior(path, model=...), or on the "
                f"command line --model FILE.py:FACTORY")
    else:
        raise _Bad("the root attribute 'spec' (or 'model') is missing")
    if model is not None:
        if model.fingerprint() != recorded:
            raise InvalidInputError(
                f"model does not match the file's: the file was fitted with "
                f"{_described(described)} (fingerprint {recorded}), model is "
                f"{model.summary()} (fingerprint {model.fingerprint()})")
        out["spec"] = model
    return out


def _described(description: dict) -> str:
    """A model description in a few words, for messages."""
    params = description.get("params")
    count = (f", {sum(math.prod(p.get('shape', [])) for p in params):,} parameters"
             if isinstance(params, list) and all(isinstance(p, dict) for p in params) else "")
    return f"{description.get('kind', '?')} {description.get('name', '')}".strip() + count


# Format 1's timing keys and the one name each has now.
_FORMAT_1_TIMINGS = {"fit_seconds": "seconds", "train_seconds": "seconds_training",
                     "laplace_seconds": "seconds_curvature", "warmup_seconds": "seconds_warmup",
                     "sampling_seconds": "seconds_sampling", "seconds_pyro": "seconds_chains"}


def _upgrade_format_1(attrs: dict[str, Any], diagnostics: dict[str, Any]) -> None:
    """Give a format-1 posterior the meanings of format 2, in place.

    Format 1 kept MC dropout's rate in the spec, counted HMC's ``num_samples``
    per chain, and named timings in five ways (its specs, whose prior was
    always "iid", are read by :func:`_root_attrs`).
    """
    config, method = attrs["config"], attrs["method"]
    if method == "mc_dropout" and config.get("dropout") is None:
        config["dropout"] = attrs["legacy_dropout"]
    if method == "hmc" and isinstance(config.get("num_samples"), int) \
            and isinstance(config.get("num_chains"), int):
        config["num_samples"] *= config["num_chains"]
    if method == "mfvi":        # its "seconds" was the whole fit, "fit_seconds" the optimiser
        if "fit_seconds" in diagnostics:
            diagnostics["seconds_optimization"] = diagnostics.pop("fit_seconds")
    elif "seconds" in diagnostics and "fit_seconds" in diagnostics:
        diagnostics.pop("fit_seconds")
    for old, new in _FORMAT_1_TIMINGS.items():
        if old in diagnostics and new not in diagnostics:
            diagnostics[new] = diagnostics.pop(old)


def _logit_transform(text: str | None, spec) -> Any:
    """The recalibration map of the root attribute ``logit_transform`` (absent: None)."""
    from uqzoo.errors import InvalidInputError
    from uqzoo.transform import LogitTransform

    if text is None:
        return None
    value = _json(text, "logit_transform")
    try:
        transform = LogitTransform.from_dict(value)
    except (InvalidInputError, InvalidTypeError) as exc:
        raise _Bad(f"attribute 'logit_transform' is not a valid logit transform: {exc}") from None
    if transform.n_outputs != spec.n_outputs:
        raise _Bad(f"attribute 'logit_transform' acts on {transform.n_outputs} logits; the "
                   f"spec's network has {spec.n_outputs} (n_outputs)")
    return transform


def _input_augmentation(text: str | None, spec) -> Any:
    """The test-time augmentation of the root attribute ``input_augmentation`` (absent: None)."""
    from uqzoo._channels import InputAugmentation
    from uqzoo.errors import InvalidInputError

    if text is None:
        return None
    try:
        augmentation = InputAugmentation.from_dict(_json(text, "input_augmentation"))
    except (InvalidInputError, InvalidTypeError) as exc:
        raise _Bad(f"attribute 'input_augmentation' is not a valid input augmentation: "
                   f"{exc}") from None
    if augmentation.n_features != spec.in_features:
        raise _Bad(f"attribute 'input_augmentation' augments {augmentation.n_features} "
                   f"features; the spec's network takes {spec.in_features}")
    return augmentation


def read_posterior(path, model=None) -> dict[str, Any]:
    """The fields of a posterior written by :meth:`Posterior.save`, as keyword
    arguments of :class:`~uqzoo.Posterior` (:func:`uqzoo.load_posterior` makes it).

    ``model``: the :class:`uqzoo.Model` the posterior was fitted with; needed
    for any model but :class:`uqzoo.MLPSpec` (whose spec the file holds), and
    checked against the fingerprint the file records.

    The file's structure is checked before any data is read; see the module
    docstring for what is refused.

    Raises
    ------
    FileFormatError
        If the file is missing, unreadable, truncated, not a uqzoo posterior,
        or breaks the schema (links or storage outside the file, sizes the spec
        does not allow, unexpected variables, CF decoding attributes, a root
        attribute of the wrong type).
    """
    import h5py

    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(f"no posterior file at {str(path)!r}")
    where = str(path)
    try:
        f = h5py.File(path, "r")
    except Exception as exc:  # h5py raises OSError, or others on odd files
        raise FileFormatError(
            f"{where!r} is not a readable netCDF file (truncated or foreign?): {exc}"
        ) from exc
    try:
        with f:
            fmt = _string_attr(f, "uqzoo_format", "the root") \
                if "uqzoo_format" in f.attrs else None
            if fmt != FORMAT and fmt not in _OLD_FORMATS:
                raise FileFormatError(
                    f"{where!r} is not a uqzoo posterior (uqzoo_format attribute is "
                    f"{fmt!r}, expected {FORMAT!r} or an older {_OLD_FORMATS})")
            attrs = _root_attrs(f, fmt, model)
            spec = attrs["spec"]
            groups = _members(f, "")
            unknown = sorted(set(groups) - set(_GROUPS))
            if unknown:
                raise _Bad(f"the file holds group(s) {unknown}; a uqzoo posterior has only "
                           f"{list(_GROUPS)}")
            for name in groups:
                if not isinstance(f[name], h5py.Group):
                    raise _Bad(f"/{name} is not a group")
            for name in ("posterior", "sample_stats", "diagnostics"):
                if name not in groups:
                    raise _Bad(f"the file lacks the /{name} group")
            # Everything is checked first; only then is any data read.
            draw_sets, lead = _params(f["posterior"], spec, "/posterior", None)
            stat_sets = _aux(f["sample_stats"], "/sample_stats", lead)
            diag_sets = _aux(f["diagnostics"], "/diagnostics", None)
            anchor_sets = _params(f["anchor"], spec, "/anchor", ())[0] \
                if "anchor" in groups else None
            _check_total([*draw_sets.values(), *stat_sets.values(), *diag_sets.values(),
                          *(anchor_sets or {}).values()], path.stat().st_size)
            diag_attrs = _diagnostic_attrs(f["diagnostics"], "/diagnostics")
            draws = {k: _read(d, f"/posterior/{k}", leading=True) for k, d in draw_sets.items()}
            stats = {k: _read(d, f"/sample_stats/{k}") for k, d in stat_sets.items()}
            diagnostics: dict[str, Any] = {k: _read(d, f"/diagnostics/{k}")
                                           for k, d in diag_sets.items()}
            diagnostics.update(diag_attrs)
            anchor = None if anchor_sets is None else {
                k: _read(d, f"/anchor/{k}") for k, d in anchor_sets.items()}
    except (FileFormatError, InvalidInputError, InvalidTypeError):
        raise
    except _Bad as exc:
        raise FileFormatError(f"{where!r} is not a valid uqzoo posterior: {exc}") from None
    except Exception as exc:  # h5py errors on damaged files come in many types
        raise FileFormatError(
            f"{where!r} is not a readable netCDF file (truncated or foreign?): {exc}"
        ) from exc
    for key, value in list(diagnostics.items()):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            diagnostics[key] = value.item()
    if fmt == "uqzoo.posterior/1":
        _upgrade_format_1(attrs, diagnostics)
    return dict(
        spec=spec, method=attrs["method"], config=attrs["config"], seed=attrs["seed"],
        draws=draws, sample_shape=(lead[0], lead[1]), sample_stats=stats,
        diagnostics=diagnostics,
        predictive=attrs["predictive"], anchor=anchor, converged=attrs["converged"],
        warnings=attrs["warnings"], classes=attrs["classes"],
        logit_transform=attrs["logit_transform"],
        input_augmentation=attrs["input_augmentation"],
    )

