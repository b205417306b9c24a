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
  kind, scale, shift and how it was fitted; files without it load with none).

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
- **Polite.** A symlink is followed and its target rewritten. Anything that is
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
  :data:`~uqzoo.methods._config.MAX_DRAW_BYTES`, sample statistics and
  diagnostics by :data:`MAX_AUX_ELEMENTS` per variable, and every variable must
  be backed by the bytes the file stores (uncompressed, or deflate-compressed
  at most 1032:1, zlib's maximum), so a small file cannot declare gigabytes;
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

import contextlib
import errno
import json
import math
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr

from uqzoo.errors import FileFormatError, InvalidTypeError, OutputPathError

__all__ = [
    "MAX_AUX_ELEMENTS",
    "check_output_file",
    "check_output_folder",
    "load_posterior",
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

# zlib cannot expand data by more than 1032:1 (zlib's documented maximum
# compression factor), so a deflate-compressed variable may declare at most
# this many times the bytes it stores.
_MAX_DEFLATE_RATIO = 1032

# Temporaries of our saves: a fixed short prefix with the writer's pid, so a
# later save can tell them apart from anything else and from live writers.
_TMP_RE = re.compile(r"\.uqz-(\d+)-[a-z0-9_]{8}\.tmp")
# A temporary untouched this long, whose writer is gone, is an orphan. A live
# writer keeps touching its file while it writes, and its pid is alive.
_STALE_AFTER_SECONDS = 60.0

_GROUPS = ("posterior", "sample_stats", "diagnostics", "anchor")
# Attributes that make CF decoding rescale, mask or reinterpret values.
_CF_ATTRIBUTES = ("scale_factor", "add_offset", "_Unsigned", "missing_value", "valid_min",
                  "valid_max", "valid_range", "units", "calendar")


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
        "spec": json.dumps(posterior.spec.to_dict()),
        "warnings": json.dumps(list(posterior.warnings)),
        "classes": json.dumps(None if posterior.classes is None else list(posterior.classes)),
        "versions": json.dumps(_versions()),
    })
    if posterior.logit_transform is not None:
        root.attrs["logit_transform"] = json.dumps(posterior.logit_transform.to_dict())
    tree = xr.DataTree(dataset=root)
    for name, ds in groups.items():
        tree[name] = xr.DataTree(dataset=ds)
    return tree


# -- output paths: checked before any work, written atomically ------------------------------

def _as_path(path: object, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"{what} must be a str or os.PathLike, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise InvalidTypeError(f"{what} must be a str or os.PathLike of str, got bytes {text!r}")
    if not text or "\0" in text:
        raise OutputPathError(f"{what} must be a non-empty path without NUL bytes, got {text!r}")
    return Path(text)


def _output_error(message: str, exc: OSError | None = None,
                  filename: str | None = None) -> OutputPathError:
    err = OutputPathError(message)
    if exc is not None:
        err.errno, err.strerror = exc.errno, exc.strerror
    err.filename = filename
    return err


def _os_failure(exc: OSError, action: str, path: Path) -> OutputPathError:
    """An OSError from a write turned into one sentence naming the path and the cause."""
    reasons = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "the file system is read-only",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EFBIG: "file too large for this file system or process limit",
        errno.ENAMETOOLONG: "name too long",
        errno.EIO: "input/output error",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return _output_error(f"could not {action} {str(path)!r}: {reason}", exc, str(path))


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    # os.umask can only read the mask by setting it, and the mask is
    # process-wide: another thread creating a file in between would get the
    # temporary value. Linux publishes it in /proc/self/status (since 4.7).
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link loop")):
        if test(mode):
            return name
    return "not a regular file"


def _check_folder(folder: Path, what: str, given: Path) -> None:
    """The folder a file or folder is created in: exists, is a directory, writable."""
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        raise _output_error(f"{what} {str(given)!r}: folder {str(folder)!r} does not exist; "
                            f"create it first") from None
    except OSError as exc:
        raise _os_failure(exc, "reach the folder of", given) from None
    if not stat.S_ISDIR(st.st_mode):
        raise _output_error(f"{what} {str(given)!r}: {str(folder)!r} is not a folder")
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only = False
    if read_only:
        raise _output_error(f"{what} {str(given)!r}: folder {str(folder)!r} is on a read-only "
                            f"file system", filename=str(folder))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _output_error(f"{what} {str(given)!r}: folder {str(folder)!r} is not writable "
                            f"(permission denied)", filename=str(folder))


def _check_name_length(target: Path, what: str, given: Path) -> None:
    try:
        name_max = os.pathconf(target.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255      # the limit of every common Linux, macOS and Windows file system
    size = len(os.fsencode(target.name))
    if size > name_max:
        raise _output_error(f"{what} {str(given)!r}: the file name is {size} bytes long; this "
                            f"file system allows at most {name_max}")


def check_output_file(path: object, what: str = "path") -> Path:
    """Check that a file can be written at ``path``, before any work is done.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        How the path is named in error messages (``"path"``, ``"--out"``).

    Returns
    -------
    pathlib.Path
        The file that will be written: ``path`` with symlinks resolved.

    Raises
    ------
    OutputPathError
        If the folder is missing, not a folder or not writable, the name is too
        long, or ``path`` is a directory, a device, a FIFO or a socket, or an
        existing read-only file.
    InvalidTypeError
        If ``path`` is not a str or os.PathLike.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from uqzoo.io import check_output_file
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> check_output_file(folder / "post.nc").name
    'post.nc'
    >>> check_output_file(folder, what="--out")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    uqzoo.errors.OutputPathError: --out '...' is a directory; give a file path such as ...
    """
    given = _as_path(path, what)
    _check_name_length(given, what, given)
    try:
        is_dir = stat.S_ISDIR(os.stat(given).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_dir = False
    except OSError as exc:
        raise _os_failure(exc, "inspect", given) from None
    if is_dir:
        raise _output_error(f"{what} {str(given)!r} is a directory; give a file path "
                            f"such as {str(given / 'posterior.nc')!r}")
    target = Path(os.path.realpath(given))
    _check_folder(target.parent, what, given)
    _check_name_length(target, what, given)
    _check_replaceable(target, what, given)
    return target


def _check_replaceable(target: Path, what: str, given: Path) -> os.stat_result | None:
    """The existing file at ``target`` (or None): a regular, writable file."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_failure(exc, "inspect", given) from None
    if not stat.S_ISREG(st.st_mode):
        raise _output_error(f"{what} {str(given)!r} is {_kind_of(st.st_mode)}; uqzoo only "
                            f"replaces regular files", filename=str(target))
    # A file without write permission is a file someone protected: replacing
    # it by rename would succeed (the folder is writable) but defeat that.
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        state = "read-only" if not st.st_mode & 0o222 else "not writable by this user"
        raise _output_error(f"{what} {str(given)!r} is {state} (mode "
                            f"{stat.S_IMODE(st.st_mode):04o}); make it writable or remove it "
                            f"to replace it", filename=str(target))
    return st


def check_output_folder(path: object, *, overwrite: bool = False,
                        what: str = "path") -> Path:
    """Check that a folder of results can be created at ``path``, before any work.

    Parameters
    ----------
    path : str or os.PathLike
        The folder; its parent must exist.
    overwrite : bool
        Allow replacing an existing non-empty folder (at the end, as a whole).
    what : str
        How the path is named in error messages.

    Returns
    -------
    pathlib.Path
        The folder, symlinks resolved.

    Raises
    ------
    OutputPathError
        If ``path`` is a file, a non-empty folder without ``overwrite``, or its
        parent is missing or not writable, or the name is too long.
    """
    given = _as_path(path, what)
    _check_name_length(given, what, given)
    target = Path(os.path.realpath(given))
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _os_failure(exc, "inspect", given) from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        kind = "a file" if stat.S_ISREG(st.st_mode) else _kind_of(st.st_mode)
        raise _output_error(f"{what} {str(given)!r} is {kind}; it must name a folder "
                            f"(new or empty)")
    _check_folder(target.parent, what, given)
    _check_name_length(target, what, given)
    if st is not None and not overwrite and _non_empty(target):
        raise _output_error(f"{what} {str(given)!r} is a folder that is not empty; choose a new "
                            f"folder, or pass overwrite (--overwrite) to replace it as a whole")
    return target


def _non_empty(folder: Path) -> bool:
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError as exc:
        raise _os_failure(exc, "list", folder) from None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True      # someone else's process (or an odd pid): leave its files alone
    return True


def _remove_stale_temporaries(folder: Path) -> None:
    """Remove temporaries of saves that were killed (their writer is gone, a minute old).

    Best effort: a folder we cannot list or a file we cannot remove is left as is.
    """
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        match = _TMP_RE.fullmatch(entry.name)
        if not match or int(match.group(1)) == os.getpid():
            continue        # not ours, or a concurrent save of this very process
        try:
            st = entry.stat(follow_symlinks=False)
            if now - st.st_mtime < _STALE_AFTER_SECONDS or _pid_alive(int(match.group(1))):
                continue
            if stat.S_ISREG(st.st_mode):
                os.unlink(entry.path)
            elif stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry.path)
        except OSError:
            continue


def _tmp_prefix() -> str:
    return f".uqz-{os.getpid()}-"


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk; not every file system can."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES):
            raise
    finally:
        os.close(fd)


def write_file_atomically(path: object, data: bytes | bytearray | memoryview,
                          what: str = "path") -> Path:
    """Write ``data`` to ``path`` atomically and durably (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
    data : bytes-like
    what : str
        How the path is named in error messages.

    Returns
    -------
    pathlib.Path
        The file written (symlinks resolved).

    Raises
    ------
    OutputPathError
        See :func:`check_output_file`; also when the write fails (full disk,
        quota, read-only file system). The previous file is then intact.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from uqzoo.io import write_file_atomically
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> write_file_atomically(folder / "notes.txt", b"hello").read_bytes()
    b'hello'
    """
    target = check_output_file(path, what)
    folder = target.parent
    _remove_stale_temporaries(folder)
    given = _as_path(path, what)
    existing = _check_replaceable(target, what, given)
    mode = (stat.S_IMODE(existing.st_mode) if existing is not None
            else 0o666 & ~_umask())
    try:
        fd, tmp = tempfile.mkstemp(prefix=_tmp_prefix(), suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _os_failure(exc, "create a temporary file next to", target) from None
    try:
        try:
            view = memoryview(data).cast("B")
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.chmod(tmp, mode)             # mkstemp creates 0o600
            if existing is not None and hasattr(os, "chown") and (
                    existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    # keep the owner and group where we may (root, or a group we are in)
                    os.chown(tmp, existing.st_uid, existing.st_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        # The target may have changed since it was checked.
        _check_replaceable(target, what, given)
        os.replace(tmp, target)
    except BaseException as exc:      # Ctrl-C too: never leave the temporary behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, OutputPathError):
            raise _os_failure(exc, "write", target) from exc
        raise
    try:
        _fsync_folder(folder)
    except OSError as exc:
        raise _os_failure(exc, "flush the folder of", target) from exc
    return target


@contextlib.contextmanager
def staged_folder(path: object, *, overwrite: bool = False,
                  what: str = "path") -> Iterator[Path]:
    """A temporary sibling folder that becomes ``path`` only if the block succeeds.

    Everything written into the yielded folder appears at ``path`` at once
    when the ``with`` block ends without error (an existing folder at ``path``
    is replaced as a whole, only with ``overwrite``); on any error, Ctrl-C
    included, the temporary folder is removed and ``path`` is untouched.

    Yields
    ------
    pathlib.Path
        The temporary folder to write into.
    """
    target = check_output_folder(path, overwrite=overwrite, what=what)
    parent = target.parent
    _remove_stale_temporaries(parent)
    try:
        staging = Path(tempfile.mkdtemp(prefix=_tmp_prefix(), suffix=".tmp", dir=parent))
    except OSError as exc:
        raise _os_failure(exc, "create a temporary folder next to", target) from None
    try:
        yield staging
        for entry in os.scandir(staging):          # durable before it becomes visible
            if entry.is_file(follow_symlinks=False):
                fd = os.open(entry.path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        os.chmod(staging, 0o777 & ~_umask())
        _publish_folder(staging, target, overwrite, what)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, OutputPathError):
            raise _os_failure(exc, "write", target) from exc
        raise
    _fsync_folder(parent)


def _publish_folder(staging: Path, target: Path, overwrite: bool, what: str) -> None:
    if not os.path.lexists(target):
        os.rename(staging, target)
        return
    if not os.path.isdir(target) or os.path.islink(target):
        raise _output_error(f"{what} {str(target)!r} appeared during the run and is not a "
                            f"folder; the results were not written")
    if not _non_empty(target):
        os.rename(staging, target)      # POSIX rename replaces an empty folder
        return
    if not overwrite:
        raise _output_error(f"{what} {str(target)!r} was filled by someone else during the "
                            f"run; the results were not written")
    # Swap: move the old folder aside under a temporary name (removed below,
    # or by a later save if we are killed in between), then move ours in.
    old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(), suffix=".tmp", dir=target.parent))
    os.rename(target, old / "old")
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old / "old", target)
        shutil.rmtree(old, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def save_posterior(posterior, path) -> None:
    """Write ``posterior`` to ``path`` (netCDF4/HDF5), atomically and durably.

    The tree is serialised in memory (so HDF5 never sees a failing disk; this
    needs memory for one copy of the file, about the size of the draws),
    written to a short-named temporary file in the same folder, flushed, and
    renamed over ``path``; see the module docstring for the guarantees.

    Raises
    ------
    OutputPathError
        If ``path`` cannot be written (missing or read-only folder, a directory
        or device at ``path``, a read-only file, a full disk, ...). Any earlier
        file at ``path`` is then intact.
    """
    target = check_output_file(path)
    # Serialising to memory first keeps HDF5 away from a failing disk: a full
    # disk while h5netcdf wrote the file left a half-closed HDF5 handle whose
    # close() at garbage collection crashed the interpreter (issue 9).
    data = to_datatree(posterior).to_netcdf(engine=_ENGINE)
    write_file_atomically(target, data)


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


def _is_scale(dset) -> bool:
    """A netCDF dimension scale (``chain``, ``draw``, ``<var>_dim_<i>``): never read."""
    import h5py
    return bool(h5py.h5ds.is_scale(dset.id))


def _read_attr(obj, name: str, where: str) -> Any:
    """One attribute, its size checked before it is read."""
    attr_id = obj.attrs.get_id(name)
    if attr_id.get_storage_size() > _MAX_ATTRIBUTE_BYTES:
        raise _Bad(f"attribute {name!r} of {where} is larger than "
                   f"{_MAX_ATTRIBUTE_BYTES // 2**20} MiB")
    return obj.attrs[name]


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
    from uqzoo.methods._config import MAX_DRAW_BYTES

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


def _root_attrs(f, fmt: str) -> dict[str, Any]:
    """The root attributes uqzoo defines, each parsed against its declared type."""
    from uqzoo.spec import MLPSpec

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
    spec = _json(text("spec"), "spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("hidden"), list):
        raise _Bad("attribute 'spec' must be a JSON object with a 'hidden' list")
    if fmt == "uqzoo.posterior/1":
        spec.setdefault("prior", "iid")      # the only prior format 1 knew
    try:
        out["spec"] = MLPSpec.from_dict(spec)
        out["legacy_dropout"] = spec.get("dropout")
    except (TypeError, ValueError) as exc:
        raise _Bad(f"attribute 'spec' does not describe a valid MLPSpec: {exc}") from None
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
    versions_text = optional("versions")
    if versions_text is not None:
        versions = _json(versions_text, "versions")
        if not isinstance(versions, dict):
            raise _Bad("attribute 'versions' must be a JSON object")
    return out


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


def load_posterior(path):
    """Read a posterior written by :meth:`Posterior.save`.

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

    from uqzoo.posterior import Posterior

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
            attrs = _root_attrs(f, fmt)
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
            diag_attrs = _diagnostic_attrs(f["diagnostics"], "/diagnostics")
            draws = {k: _read(d, f"/posterior/{k}", leading=True) for k, d in draw_sets.items()}
            stats = {k: _read(d, f"/sample_stats/{k}") for k, d in stat_sets.items()}
            diagnostics: dict[str, Any] = {k: _read(d, f"/diagnostics/{k}")
                                           for k, d in diag_sets.items()}
            diagnostics.update(diag_attrs)
            anchor = None if anchor_sets is None else {
                k: _read(d, f"/anchor/{k}") for k, d in anchor_sets.items()}
    except FileFormatError:
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
    try:
        return Posterior(
            spec=spec, method=attrs["method"], config=attrs["config"], seed=attrs["seed"],
            draws=draws, sample_shape=(lead[0], lead[1]), sample_stats=stats,
            diagnostics=diagnostics,
            predictive=attrs["predictive"], anchor=anchor, converged=attrs["converged"],
            warnings=attrs["warnings"], classes=attrs["classes"],
            logit_transform=attrs["logit_transform"],
        )
    except (TypeError, ValueError) as exc:
        raise FileFormatError(f"{where!r} is a damaged uqzoo posterior: {exc}") from exc
