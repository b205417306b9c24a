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
  (the original class labels, or null for 0..K-1), ``versions``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from uqzoo.errors import FileFormatError, InvalidTypeError

__all__ = ["save_posterior", "load_posterior", "to_datatree"]

FORMAT = "uqzoo.posterior/1"
_ENGINE = "h5netcdf"


def _versions() -> dict[str, str]:
    import importlib.metadata as md
    out = {}
    for pkg in ("uqzoo", "numpy", "torch", "jax", "numpyro", "xarray"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


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
    coords = {d: np.arange(n) for d, n in zip(lead_dims, lead_shape)}
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
        stats[key] = (("chain", "draw") + tuple(f"{key}_dim_{i}" for i in range(len(rest))),
                      value)
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
        "spec": json.dumps(posterior.spec.to_dict()),
        "warnings": json.dumps(list(posterior.warnings)),
        "classes": json.dumps(None if posterior.classes is None else list(posterior.classes)),
        "versions": json.dumps(_versions()),
    })
    tree = xr.DataTree(dataset=root)
    for name, ds in groups.items():
        tree[name] = xr.DataTree(dataset=ds)
    return tree


def save_posterior(posterior, path) -> None:
    """Write ``posterior`` to ``path`` (netCDF4/HDF5), atomically.

    The tree is written to a temporary file in the same folder and renamed
    over ``path`` only once complete, so an interrupted save leaves any
    earlier file at ``path`` intact.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if not path.parent.exists():
        raise FileFormatError(f"path's folder {str(path.parent)!r} does not exist")
    tree = to_datatree(posterior)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        tree.to_netcdf(tmp, engine=_ENGINE)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _unpack_params(ds: xr.Dataset, spec, leading: bool) -> dict[str, np.ndarray]:
    out = {}
    for key in spec.param_shapes():
        if key not in ds:
            raise FileFormatError(f"saved posterior lacks parameter {key!r}")
        arr = ds[key].values
        if leading:
            arr = arr.reshape((-1,) + arr.shape[2:])
        out[key] = arr
    return out


def load_posterior(path):
    """Read a posterior written by :meth:`Posterior.save`.

    Raises
    ------
    FileFormatError
        If the file is missing, unreadable, truncated, or not a uqzoo posterior.
    """
    from uqzoo.posterior import Posterior
    from uqzoo.spec import MLPSpec

    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(f"no posterior file at {str(path)!r}")
    try:
        with xr.open_datatree(path, engine=_ENGINE) as tree:
            tree = tree.load()
    except Exception as exc:  # h5py/netCDF raise many types for a bad file
        raise FileFormatError(
            f"{str(path)!r} is not a readable netCDF file (truncated or foreign?): {exc}"
        ) from exc
    attrs = tree.attrs
    if attrs.get("uqzoo_format") != FORMAT:
        raise FileFormatError(
            f"{str(path)!r} is not a uqzoo posterior (uqzoo_format attribute is "
            f"{attrs.get('uqzoo_format')!r}, expected {FORMAT!r})"
        )
    try:
        spec = MLPSpec.from_dict(json.loads(attrs["spec"]))
        post_ds = tree["posterior"].to_dataset()
        chains, draws = post_ds.sizes["chain"], post_ds.sizes["draw"]
        params = _unpack_params(post_ds, spec, leading=True)
        stats_ds = tree["sample_stats"].to_dataset()
        stats = {k: stats_ds[k].values for k in stats_ds.data_vars}
        diag_ds = tree["diagnostics"].to_dataset()
        diagnostics = {k: diag_ds[k].values for k in diag_ds.data_vars}
        for k, v in diag_ds.attrs.items():
            try:
                diagnostics[k] = np.asarray(json.loads(v))
            except (json.JSONDecodeError, TypeError):
                diagnostics[k] = v
        for k, v in list(diagnostics.items()):
            if isinstance(v, np.ndarray) and v.ndim == 0:
                diagnostics[k] = v.item()
        anchor = None
        if "anchor" in tree.children:
            anchor = _unpack_params(tree["anchor"].to_dataset(), spec, leading=False)
        return Posterior(
            spec=spec, method=attrs["method"], config=json.loads(attrs["config"]),
            seed=int(attrs["seed"]), draws=params, sample_shape=(chains, draws),
            sample_stats=stats, diagnostics=diagnostics, predictive=attrs["predictive"],
            anchor=anchor, converged=json.loads(attrs["converged"]),
            warnings=tuple(json.loads(attrs["warnings"])),
            classes=json.loads(attrs.get("classes", "null")),
        )
    except FileFormatError:
        raise
    except Exception as exc:
        raise FileFormatError(f"{str(path)!r} is a damaged uqzoo posterior: {exc}") from exc
