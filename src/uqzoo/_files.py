"""Writing files a user keeps: output-path checks and atomic, durable writes.

Every file uqzoo writes for a user (a saved posterior, a report, a config,
a study export) goes through :func:`write_file_atomically` or
:func:`staged_folder`, after :func:`check_output_file` or
:func:`check_output_folder` checked the path before any work. The guarantees
(atomic and durable, clean on error, polite to links and permissions, clear
failures) are listed in :mod:`uqzoo.io`; they are kept here, below every
module that writes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from uqzoo.errors import InvalidTypeError, OutputPathError

__all__ = ["check_output_file", "check_output_folder", "refuse_link", "staged_folder",
           "write_file_atomically"]

# Temporaries of our saves: a fixed short prefix with the writer's pid, so a
# later save can tell them apart from anything else and from live writers.
_TMP_RE = re.compile(r"\.uqz-(\d+)-[a-z0-9_]{8}\.tmp")
# A temporary untouched this long, whose writer is gone, is an orphan. A live
# writer keeps touching its file while it writes, and its pid is alive.
_STALE_AFTER_SECONDS = 60.0


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


def _overwrite_option(what: str) -> str:
    """How the user says "replace it": the flag on the command line, else the keyword."""
    return "--overwrite" if what.startswith("--") else "overwrite=True"


def refuse_link(path: object, what: str = "path") -> Path:
    """Refuse a symbolic link at the final component of ``path``, naming its target.

    A write through a link would change the file it points to -- a file the
    user never named (as root, a system file). Links in the folders above are
    followed: only the final component is what the user asks to be written.

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        How the path is named in error messages (``"path"``, ``"--out"``).

    Returns
    -------
    pathlib.Path
        ``path``, unchanged.

    Raises
    ------
    OutputPathError
        If ``path`` is a symbolic link (dangling or not).
    """
    given = _as_path(path, what)
    try:
        st = os.lstat(given)
    except (FileNotFoundError, NotADirectoryError):
        return given
    except OSError as exc:
        raise _os_failure(exc, "inspect", given) from None
    if stat.S_ISLNK(st.st_mode):
        try:
            points_to = os.readlink(given)
        except OSError:
            points_to = "?"
        raise _output_error(f"{what} {str(given)!r} is a symbolic link to {points_to!r}; uqzoo "
                            f"never writes through a link: name a file itself (remove the "
                            f"link, or give its target's path)", filename=str(given))
    return given


def check_output_file(path: object, what: str = "path", *,
                      example: str = "posterior.nc", overwrite: bool = False) -> Path:
    """Check that a file can be written at ``path``, before any work is done.

    The rule of every file uqzoo writes: a symbolic link at ``path`` is
    refused (never followed), and an existing file is replaced only with
    ``overwrite`` (``--overwrite`` on the command line).

    Parameters
    ----------
    path : str or os.PathLike
    what : str
        How the path is named in error messages (``"path"``, ``"--out"``).
    example : str
        The file name suggested when ``path`` is a directory (``"report.html"``
        for a report).
    overwrite : bool
        Allow replacing an existing regular file.

    Returns
    -------
    pathlib.Path
        The file that will be written: ``path`` with the links of its folders
        resolved (never a link itself).

    Raises
    ------
    OutputPathError
        If the folder is missing, not a folder or not writable, the name is too
        long, or ``path`` is a symbolic link, a directory, a device, a FIFO or a
        socket, an existing file without ``overwrite``, or an existing
        read-only file.
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
    refuse_link(given, what)
    overwrite = _check_overwrite(overwrite)
    try:
        is_dir = stat.S_ISDIR(os.stat(given).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        is_dir = False
    except OSError as exc:
        raise _os_failure(exc, "inspect", given) from None
    if is_dir:
        raise _output_error(f"{what} {str(given)!r} is a directory; give a file path "
                            f"such as {str(given / example)!r}")
    # The folders' links resolved, the final component kept (it is no link).
    target = Path(os.path.realpath(given.parent)) / given.name
    _check_folder(target.parent, what, given)
    _check_name_length(target, what, given)
    _check_replaceable(target, what, given, overwrite)
    return target


def _check_overwrite(overwrite: object) -> bool:
    if not isinstance(overwrite, bool):
        raise InvalidTypeError(f"overwrite must be True or False, got {overwrite!r}")
    return overwrite


def _check_replaceable(target: Path, what: str, given: Path,
                       overwrite: bool) -> os.stat_result | None:
    """The existing file at ``target`` (or None): a regular, writable file we may replace."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_failure(exc, "inspect", given) from None
    if stat.S_ISLNK(st.st_mode):
        refuse_link(target, what)
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
    if not overwrite:
        raise _output_error(f"{what} {str(given)!r} exists; uqzoo replaces a file only when "
                            f"asked: pass {_overwrite_option(what)}, or choose a new name",
                            filename=str(target))
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
        The folder, the links of its parents resolved (never a link itself).

    Raises
    ------
    OutputPathError
        If ``path`` is a symbolic link, a file, a non-empty folder without
        ``overwrite``, or its parent is missing or not writable, or the name is
        too long.
    """
    given = _as_path(path, what)
    _check_name_length(given, what, given)
    refuse_link(given, what)
    overwrite = _check_overwrite(overwrite)
    target = Path(os.path.realpath(given.parent)) / given.name
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
                          what: str = "path", *, overwrite: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically and durably (see the module docstring).

    The one writer of every file uqzoo writes for a user. A symbolic link at
    ``path`` is refused; an existing file is replaced (the path itself, by
    rename) only with ``overwrite``; without it the new file is linked into
    place, which fails rather than replace a file that appeared meanwhile.

    Parameters
    ----------
    path : str or os.PathLike
    data : bytes-like
    what : str
        How the path is named in error messages.
    overwrite : bool
        Replace an existing regular file (``--overwrite`` on the command line).

    Returns
    -------
    pathlib.Path
        The file written (the links of its folders resolved).

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
    target = check_output_file(path, what, overwrite=overwrite)
    folder = target.parent
    _remove_stale_temporaries(folder)
    given = _as_path(path, what)
    existing = _check_replaceable(target, what, given, overwrite)
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
        _check_replaceable(target, what, given, overwrite)
        if overwrite or not _link_into_place(tmp, target, what, given):
            os.replace(tmp, target)     # replaces the path (a link there: the link)
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


def _link_into_place(tmp: str, target: Path, what: str, given: Path) -> bool:
    """Publish ``tmp`` at ``target`` only if nothing is there (a hard link never
    replaces); False where the file system has no hard links (then the caller
    renames, after its own check)."""
    try:
        os.link(tmp, target, follow_symlinks=False)
    except FileExistsError:
        raise _output_error(f"{what} {str(given)!r} appeared while uqzoo wrote it; it was "
                            f"left as it is (pass {_overwrite_option(what)} to replace it)",
                            filename=str(target)) from None
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                         errno.EMLINK, errno.ENOSYS):
            return False
        raise
    os.unlink(tmp)
    return True


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
        if isinstance(exc, OutputPathError) and str(staging) in str(exc):
            # A write inside named the temporary folder, which the user never asked
            # for and which is gone now: name the file where it was meant to appear.
            moved = _output_error(str(exc).replace(str(staging), str(target)), None,
                                  (exc.filename or "").replace(str(staging), str(target)))
            moved.errno, moved.strerror = exc.errno, exc.strerror
            raise moved from exc
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
