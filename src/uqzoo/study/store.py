"""The study store: one SQLite file, written only by the driver.

Tables
------
``tasks``
    One row per planned task, ``task_id`` the primary key: its labels
    (study, dataset, setting, method, variant, replicate), seeds, ``status``
    (``pending``, ``done`` or ``failed``), ``attempts``, the worker and its
    timings, the task-level metrics (:data:`TASK_METRICS`), the error and
    traceback of a failed task, and JSON columns: ``config_json`` (the task's
    settings, as hashed into its id), ``fit_config_json`` (the method's full
    config, defaults included), ``versions_json`` (the worker's packages),
    ``diagnostics_json``, ``warnings_json`` and ``report_json`` (every headline
    number of ``EvalReport.to_dict()``).
``levels``
    One row per task and credible level, primary key ``(task_id, level)``:
    :data:`LEVEL_METRICS` (coverage, interval width, interval score, High
    Confidence Set). The same numbers are also packed into
    ``tasks.levels_blob`` (float64, little-endian: a header m, the number of
    metric columns, then one row per level: the level, then
    ``LEVEL_METRICS[:m]``), written in the same transaction: :func:`load`
    reads 100,000 tasks in half the time from the blobs (one object per task
    instead of a dozen per level).

Which metrics
-------------
The metric columns are those of :data:`uqzoo.headline.HEADLINE` tagged
``"store"``, each with ``<name>_se`` where its entry has ``stderr`` (the
evaluator's standard error within the task): level-free ones in ``tasks``
(:data:`TASK_METRICS`, with the bookkeeping ``num_draws``, ``converged``,
``eval_failed``), those that take a level in ``levels``
(:data:`LEVEL_METRICS`). A metric tagged later is added to a store made
before it (below); its tasks read it as NaN.

Older stores grow by appending
-----------------------------
A run that opens a store made by an earlier uqzoo adds the columns it lacks
to ``tasks`` and ``levels`` (``ALTER TABLE ... ADD COLUMN``, NULL for the
tasks already there) and :func:`load` reads NULL where a store lacks a
column. :data:`LEVEL_METRICS` only ever grows at its end, so a blob's
columns are always its first m: a blob of the first stores has no header and
m = 9 (its first value is a level, in (0, 1); a header is at least 2), and
:func:`load` reads the columns a blob lacks as NaN (and leaves out those a
later uqzoo appended). Blobs with a header make a store format 2: a run that
opens a format-1 store marks it so (nothing is rewritten), and an earlier
uqzoo, which reads format 1 only, refuses it with one line naming the format.
``studies``
    Each study file planned into the store, by the SHA-256 of its text, with
    the text itself.
``runs``
    One row per ``run()``: when, where, which executor, how many tasks.

Guarantees
----------
The file is in WAL mode with ``synchronous=FULL``; each finished task is one
transaction (its ``tasks`` row and its ``levels`` rows together), so a driver
killed at any moment, even by SIGKILL, leaves every finished task complete
and no task half-written. A second run does only what is not ``done``
(``retry_failed`` adds the failed tasks). Readers (``load``, ``uqzoo study
status``) may read while a run writes. One run at a time: ``run()`` holds an
advisory lock on ``<store>.lock`` of the resolved file (released by the
operating system when the driver dies, so a killed run never blocks the
next). A symbolic link given as the store is refused, as by every uqzoo
writer: name the store's file itself. One study file per
study name: a store refuses a file whose text differs from the one it was
planned with under the same name, so no summary pools two settings.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from uqzoo import headline
from uqzoo._validation import _show
from uqzoo.errors import FileFormatError, InvalidInputError, InvalidTypeError, OutputPathError

if TYPE_CHECKING:
    import pandas as pd

    from uqzoo.study.studyfile import Study, Task

__all__ = ["CONFORMAL_METRICS", "FIDELITY_METRICS", "LEVEL_METRICS", "STATUSES", "TASK_METRICS",
           "Store", "load", "status_counts"]

# Format 2: the levels blob starts with a header (how many metric columns it holds),
# so its columns can grow. Format 1 stores are read as they are and upgraded to 2 when
# a run opens one (columns added, nothing rewritten); a uqzoo that reads format 1 only
# then refuses the store by its format instead of misreading its blobs.
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
# PRAGMA application_id: "uqzs" in ASCII, so a store is recognisable as one.
APPLICATION_ID = 0x75717A73
STATUSES = ("pending", "done", "failed")

LABELS = ("study", "dataset", "setting", "method", "variant", "replicate", "seed",
          "data_seed")
_KEPT = tuple(h for h in headline.HEADLINE if "store" in h.where)


def _with_stderr(entries: Iterable[headline.Headline]) -> tuple[str, ...]:
    """Each entry's name, followed by ``<name>_se`` where the evaluator gives its stderr."""
    return tuple(column for h in entries
                 for column in (h.name, *((f"{h.name}_se",) if h.stderr else ())))


# Closeness to a reference posterior, with the study's [reference] only: each
# fidelity headline and its Monte Carlo floor, and whether the reference passed its
# gate. Added to stores made before them when a run opens one (NULL for old tasks).
FIDELITY_METRICS = (*(f"{h.name}{suffix}" for h in _KEPT if h.needs_reference
                      for suffix in ("", "_mc_floor")), "reference_gate_passed")
# Split-conformal label sets, with the study's ``conformal`` option only: the
# headlines of group "conformal" (conformal_coverage, conformal_set_size, plain_*,
# ...), at the study's one conformal level. Added to older stores like the above.
CONFORMAL_METRICS = tuple(h.name for h in _KEPT if h.group == "conformal")
# Task-level metrics (one value per task; *_se the evaluator's standard errors),
# then the task's bookkeeping: draws, the method's own convergence check and
# whether the evaluation found the fit failed.
# (The runner fills the fidelity and conformal ones from their own objects.)
_TASK_HEADLINES = tuple(h for h in _KEPT if h.axis is None and not h.needs_reference
                        and h.group != "conformal")
TASK_METRICS: tuple[str, ...] = (*_with_stderr(_TASK_HEADLINES), "num_draws", "converged",
                                 "eval_failed", *FIDELITY_METRICS, *CONFORMAL_METRICS)
# Metrics per credible level, in the order of the levels blob: the first stores'
# nine, then any tagged since, appended (never reordered: a blob holds a prefix).
_FIRST_LEVEL_METRICS = ("coverage", "coverage_se", "interval_width", "interval_width_se",
                        "hcs_size", "hcs_proportion", "hcs_accuracy", "hcs_accuracy_se",
                        "hcs_missed_targets")
_LEVEL_HEADLINES = tuple(h for h in _KEPT if h.axis == "level")
_TAGGED_LEVEL_METRICS = _with_stderr(_LEVEL_HEADLINES)
LEVEL_METRICS: tuple[str, ...] = (
    *_FIRST_LEVEL_METRICS,
    *(m for m in _TAGGED_LEVEL_METRICS if m not in _FIRST_LEVEL_METRICS))
if set(LEVEL_METRICS) != set(_TAGGED_LEVEL_METRICS) or any(
        h.axis == "far" for h in _KEPT):
    # A blob column untagged would leave the layout with a column no one fills.
    raise RuntimeError("uqzoo.headline: the store keeps per-level metrics "
                       f"{LEVEL_METRICS} but {_TAGGED_LEVEL_METRICS} are tagged 'store' "
                       "(a level metric of the store stays tagged; none takes a FAR)")
# Wall times in the worker, and its CPU time for the task (CPU well below wall
# time means the worker waited for a core: an oversubscribed machine).
TIMINGS = ("started", "finished", "load_seconds", "fit_seconds", "eval_seconds",
           "task_seconds", "cpu_seconds", "reference_seconds", "fidelity_seconds")
# The REAL columns a run adds to a store made before them (ALTER TABLE ... ADD
# COLUMN, NULL for the tasks already there); load() reads NULL where a store lacks
# them. The first stores had all of TIMINGS but the reference's two.
_ADDED_COLUMNS = {"tasks": (*TIMINGS, *TASK_METRICS), "levels": LEVEL_METRICS}
_JSON_COLUMNS = ("fit_config_json", "versions_json", "diagnostics_json", "warnings_json",
                 "report_json")

_SCHEMA = f"""
CREATE TABLE studies (
    sha256 TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    source TEXT NOT NULL,
    planned REAL NOT NULL
);
CREATE TABLE runs (
    run_id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    executor TEXT NOT NULL,
    workers INTEGER,
    address TEXT,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started REAL NOT NULL,
    finished REAL,
    n_todo INTEGER NOT NULL,
    n_done INTEGER NOT NULL DEFAULT 0,
    n_failed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    dataset TEXT NOT NULL,
    setting TEXT NOT NULL,
    method TEXT NOT NULL,
    variant TEXT NOT NULL,
    replicate INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    data_seed INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    run_id INTEGER,
    worker TEXT,
    {", ".join(f"{c} REAL" for c in TIMINGS)},
    {", ".join(f"{c} REAL" for c in TASK_METRICS)},
    eval_flags TEXT,
    error TEXT,
    config_json TEXT NOT NULL,
    {", ".join(f"{c} TEXT" for c in _JSON_COLUMNS)},
    traceback TEXT,
    levels_blob BLOB
);
CREATE INDEX tasks_status ON tasks (status);
CREATE TABLE levels (
    task_id TEXT NOT NULL REFERENCES tasks (task_id),
    level REAL NOT NULL,
    {", ".join(f"{c} REAL" for c in LEVEL_METRICS)},
    PRIMARY KEY (task_id, level)
) WITHOUT ROWID;
"""


def _as_path(path: object, what: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(f"{what} must be a path (str or os.PathLike), got {_show(path)}")
    return Path(os.fspath(path))


def _json(value: object) -> str:
    """Strict JSON: NaN and infinities become null (SQLite's JSON reads no NaN)."""
    def clean(v: object) -> object:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, Mapping):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return json.dumps(clean(value), sort_keys=True, allow_nan=False, default=str)


def _connect(path: Path, *, create: bool, what: str) -> sqlite3.Connection:
    """Open (or create) a store; checks that an existing file is one."""
    exists = path.exists()
    if not exists and not create:
        raise FileFormatError(f"{what} {str(path)!r}: no such store")
    if exists and not path.is_file():
        raise OutputPathError(f"{what} {str(path)!r} is not a file")
    if not exists and not path.parent.is_dir():
        raise OutputPathError(f"{what} {str(path)!r}: its folder {str(path.parent)!r} does "
                              "not exist")
    try:
        con = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise OutputPathError(f"{what} {str(path)!r}: cannot open: {exc}") from None
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id == 0 and not tables:
            if not create:
                raise FileFormatError(f"{what} {str(path)!r} is an empty file, not a uqzoo "
                                      "study store")
            # One script, one transaction: a store is created whole or not at all.
            con.executescript("BEGIN;" + _SCHEMA + f"PRAGMA application_id = {APPLICATION_ID};"
                              f"PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")
        elif app_id != APPLICATION_ID:
            raise FileFormatError(f"{what} {str(path)!r} is an SQLite file but not a uqzoo "
                                  "study store")
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version not in READABLE_VERSIONS:
            raise FileFormatError(f"{what} {str(path)!r} has store format {version}; this "
                                  f"uqzoo reads formats "
                                  f"{', '.join(map(str, READABLE_VERSIONS))}")
        if create:
            _add_columns(con, upgrade=version != SCHEMA_VERSION)
        con.execute("PRAGMA journal_mode = WAL")
        # FULL: each finished task is on disk when its commit returns (one fsync per
        # task of seconds: negligible), so even a power cut loses no finished task.
        con.execute("PRAGMA synchronous = FULL")
        con.execute("PRAGMA foreign_keys = ON")
    except sqlite3.OperationalError as exc:
        con.close()
        if "not a database" in str(exc) or "malformed" in str(exc):
            raise FileFormatError(f"{what} {str(path)!r} is not a uqzoo study store: {exc}") \
                from None
        verb = "write" if create else "read"
        raise OutputPathError(f"{what} {str(path)!r}: cannot {verb} it: {exc}") from None
    except sqlite3.DatabaseError as exc:
        con.close()
        raise FileFormatError(f"{what} {str(path)!r} is not a uqzoo study store: {exc}") \
            from None
    except BaseException:
        con.close()
        raise
    return con


def _task_columns(con: sqlite3.Connection, table: str = "tasks") -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def _add_columns(con: sqlite3.Connection, upgrade: bool = False) -> None:
    """Add the metric and timing columns a store made before them lacks, and with
    ``upgrade`` mark it as of the current format, in one transaction."""
    missing = [(table, c) for table, wanted in _ADDED_COLUMNS.items()
               for present in (_task_columns(con, table),) for c in wanted
               if c not in present]
    if missing or upgrade:
        with _transaction(con):
            for table, column in missing:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {column} REAL")
            if upgrade:
                con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextlib.contextmanager
def _transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction; a write the file system refuses (disk full, read-only, I/O
    error) is rolled back whole and raised as an OutputPathError."""
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            if con.in_transaction:       # SQLite may already have rolled back (SQLITE_FULL)
                con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if con.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                con.execute("ROLLBACK")
        name = next((row[2] for row in con.execute("PRAGMA database_list")), "") or "the store"
        raise OutputPathError(
            f"study store {name!r} cannot be written: {exc}; nothing of this write was kept "
            "and every task finished before it is safe (free space or fix the folder's "
            "permissions, then run again to resume)") from None


class Store:
    """A study store opened for writing by the driver (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file; created with its schema when missing.
    """

    def __init__(self, path: object, *, what: str = "store") -> None:
        self.path = _as_path(path, what)
        self._what = what
        self._con: sqlite3.Connection | None = None
        self._lock: Any = None

    # -- opening and closing ------------------------------------------------------------
    def open(self) -> Store:
        """Open the file and take the run lock; raises if another run holds it."""
        if not self.path.parent.is_dir():
            raise OutputPathError(f"{self._what} {str(self.path)!r}: its folder "
                                  f"{str(self.path.parent)!r} does not exist")
        from uqzoo._files import refuse_link

        # The rule of every file uqzoo writes: never through a link.
        refuse_link(self.path, self._what)
        # The lock first: two runs starting at once must not both create the schema.
        # On the resolved file: a second driver through a link must meet the same lock.
        self._lock = _take_lock(Path(os.path.realpath(self.path)), self._what)
        try:
            self._con = _connect(self.path, create=True, what=self._what)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        if self._lock is not None:
            self._lock.close()             # releases the lock
            self._lock = None

    def __enter__(self) -> Store:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def con(self) -> sqlite3.Connection:
        if self._con is None:
            raise RuntimeError("Store is not open; use it as a context manager")
        return self._con

    # -- writing --------------------------------------------------------------------------
    def plan(self, study: Study, tasks: Sequence[Task]) -> None:
        """Record the study file and its tasks as pending (existing tasks are kept)."""
        rows = [(t.id, t.study, t.dataset, t.setting, t.method, t.variant, t.replicate,
                 t.seed, t.data_seed, t.config_json) for t in tasks]
        with _transaction(self.con) as con:
            other = con.execute("SELECT path, planned FROM studies WHERE name = ? AND "
                                "sha256 != ? ORDER BY planned LIMIT 1",
                                (study.name, study.sha256)).fetchone()
            if other is not None:
                # Tasks of both files would share the study's name: status would count
                # them together and summaries average different settings as replicates.
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(other[1]))
                raise InvalidInputError(
                    f"{self._what} {str(self.path)!r} already holds study {study.name!r} from "
                    f"another study file ({other[0]!r} as planned {when}, different text); "
                    "a store keeps one file per study name so that results are never pooled "
                    "across settings: run this file into a new store, or give it another "
                    "[study] name")
            con.execute("INSERT OR IGNORE INTO studies VALUES (?, ?, ?, ?, ?)",
                        (study.sha256, study.name, str(study.path), study.source, time.time()))
            con.executemany(
                "INSERT OR IGNORE INTO tasks (task_id, study, dataset, setting, method, "
                "variant, replicate, seed, data_seed, config_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def todo(self, tasks: Sequence[Task], *, retry_failed: bool = False) -> list[Task]:
        """The tasks of ``tasks`` still to run: pending ones, and failed ones on retry."""
        wanted = ("pending", "failed") if retry_failed else ("pending",)
        marks = ", ".join("?" * len(wanted))
        status = dict(self.con.execute(
            f"SELECT task_id, status FROM tasks WHERE status IN ({marks})", wanted))
        return [t for t in tasks if t.id in status]

    def start_run(self, study: str, executor: str, workers: int | None,
                  address: str | None, n_todo: int) -> int:
        with _transaction(self.con) as con:
            cursor = con.execute(
                "INSERT INTO runs (study, executor, workers, address, host, pid, started, "
                "n_todo) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (study, executor, workers, address, socket.gethostname(), os.getpid(),
                 time.time(), n_todo))
            return int(cursor.lastrowid or 0)

    def finish_run(self, run_id: int, n_done: int, n_failed: int) -> None:
        with _transaction(self.con) as con:
            con.execute("UPDATE runs SET finished = ?, n_done = ?, n_failed = ? "
                        "WHERE run_id = ?", (time.time(), n_done, n_failed, run_id))

    def record(self, result: Mapping[str, Any], run_id: int | None = None) -> None:
        """Write one finished task (done or failed) in one transaction."""
        task_id = result["task_id"]
        status = result["status"]
        if status not in ("done", "failed"):
            raise InvalidInputError(f"result status must be 'done' or 'failed', got "
                                    f"{status!r}")
        metrics = result.get("metrics") or {}
        timings = result.get("timings") or {}
        values: dict[str, Any] = {
            "status": status, "run_id": run_id, "worker": result.get("worker"),
            **{c: _real(timings.get(c)) for c in TIMINGS},
            **{c: _real(metrics.get(c)) for c in TASK_METRICS},
            "eval_flags": metrics.get("eval_flags"),
            "error": result.get("error"), "traceback": result.get("traceback"),
            "fit_config_json": _json_or_null(result.get("fit_config")),
            "versions_json": _json_or_null(result.get("versions")),
            "diagnostics_json": _json_or_null(result.get("diagnostics")),
            "warnings_json": _json_or_null(result.get("warnings")),
            "report_json": _json_or_null(result.get("report")),
        }
        level_rows = [(task_id, float(row["level"]), *(_real(row.get(c)) for c in LEVEL_METRICS))
                      for row in result.get("levels") or ()]
        values["levels_blob"] = _pack_levels(level_rows) if level_rows else None
        assignments = ", ".join(f"{c} = ?" for c in values)
        with _transaction(self.con) as con:
            cursor = con.execute(
                f"UPDATE tasks SET attempts = attempts + 1, {assignments} WHERE task_id = ?",
                (*values.values(), task_id))
            if cursor.rowcount != 1:
                raise InvalidInputError(f"task {task_id!r} was not planned in this store")
            con.execute("DELETE FROM levels WHERE task_id = ?", (task_id,))
            # named columns: a store extended by ALTER TABLE has them in another order
            con.executemany(
                f"INSERT INTO levels (task_id, level, {', '.join(LEVEL_METRICS)}) "
                f"VALUES ({', '.join('?' * (2 + len(LEVEL_METRICS)))})", level_rows)

    def counts(self, study: str | None = None) -> dict[str, int]:
        return status_counts(self.con, study)


def _real(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    value = float(value)            # type: ignore[arg-type]
    return value if math.isfinite(value) else None


def _pack_levels(rows: Sequence[tuple]) -> bytes:
    """Levels rows (task_id, level, *LEVEL_METRICS) as little-endian float64 bytes,
    after a header: the number of metric columns (see the module docstring)."""
    import numpy as np

    values = np.array([row[1:] for row in rows], dtype="<f8")   # None becomes NaN
    return np.concatenate(([float(len(LEVEL_METRICS))], values.ravel())).astype("<f8") \
        .tobytes()


# The metric columns of a blob without a header (the first stores of format 1), and
# the most a header may claim (a larger one is a damaged blob, not a later uqzoo).
_HEADERLESS_WIDTH = len(_FIRST_LEVEL_METRICS)
_MAX_BLOB_METRICS = 10_000


def _unpack_levels(blobs: Sequence[bytes | None], task_ids: Sequence[str]
                   ) -> tuple[Any, Any]:
    """The levels blobs of the tasks, as (levels per task, rows of level + LEVEL_METRICS).

    Vectorised over the tasks: one buffer, then one mask per blob width (a store
    written by several uqzoo versions holds a few widths); a column a blob lacks is
    NaN, one a later uqzoo appended is left out.
    """
    import numpy as np

    counts = np.array([0 if b is None else len(b) for b in blobs], dtype=np.int64)
    flat = np.frombuffer(b"".join(b for b in blobs if b is not None), dtype="<f8")
    if np.any(counts % 8):
        bad = int(np.flatnonzero(counts % 8)[0])
        raise FileFormatError(f"task {task_ids[bad]!r}: its levels_blob has {counts[bad]} "
                              "bytes, not whole float64 values")
    counts //= 8
    offsets = np.cumsum(counts) - counts
    has = counts > 0
    first = np.zeros(len(counts))
    first[has] = flat[offsets[has]]
    header = first >= 2.0                           # a level is in (0, 1)
    metrics = np.where(header, first, _HEADERLESS_WIDTH)
    body = counts - header
    whole = (metrics == np.floor(metrics)) & (metrics <= _MAX_BLOB_METRICS)
    width = 1 + np.where(whole, metrics, 0).astype(np.int64)
    bad_mask = has & (~whole | (body % width != 0))
    if bad_mask.any():
        bad = int(np.flatnonzero(bad_mask)[0])
        raise FileFormatError(f"task {task_ids[bad]!r}: its levels_blob is not whole rows "
                              f"of a level and {metrics[bad]:g} metrics")
    n_levels = np.where(has, body // width, 0)
    rows_per_task = np.maximum(n_levels, 1)      # a task without levels keeps one NaN row
    values = np.full((int(rows_per_task.sum()), 1 + len(LEVEL_METRICS)), np.nan)
    for m in np.unique(metrics[n_levels > 0]):
        chosen = (n_levels > 0) & (metrics == m)
        take = np.repeat(chosen, counts)            # the values of these blobs,
        take[offsets[chosen & header]] = False      # less their headers
        kept = 1 + min(int(m), len(LEVEL_METRICS))
        values[np.repeat(chosen, rows_per_task), :kept] = \
            flat[take].reshape(-1, 1 + int(m))[:, :kept]
    return rows_per_task, values


def _json_or_null(value: object) -> str | None:
    return None if value is None else _json(value)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)


def _take_lock(path: Path, what: str) -> Any:
    """An exclusive advisory lock on ``<store>.lock`` (POSIX flock; a no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:                                  # not POSIX: no lock
        return None
    lock_path = path.with_name(path.name + ".lock")
    try:
        # held (and the lock with it) until close(); a link there is not followed
        handle = open(lock_path, "a", opener=_no_follow)
    except IsADirectoryError:
        raise OutputPathError(f"{what} {str(path)!r}: its lock file {str(lock_path)!r} is a "
                              "folder; remove it or choose another store name") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputPathError(f"{what} {str(path)!r}: its lock file {str(lock_path)!r} "
                                  "is a symbolic link; uqzoo never writes through a link: "
                                  "remove it") from None
        raise OutputPathError(
            f"{what} {str(path)!r}: cannot create its lock file {str(lock_path)!r}: "
            f"{exc.strerror}; the store's folder must be writable") from None
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise OutputPathError(f"{what} {str(path)!r} is being written by another study run "
                              f"(it holds {lock_path.name}); wait for it or stop it") from None
    return handle


def status_counts(con: sqlite3.Connection, study: str | None = None) -> dict[str, int]:
    """Tasks per status (every status present, zero when none)."""
    where, args = ("WHERE study = ?", (study,)) if study is not None else ("", ())
    counts = dict.fromkeys(STATUSES, 0)
    counts.update(dict(con.execute(f"SELECT status, COUNT(*) FROM tasks {where} "
                                   "GROUP BY status", args)))
    return counts


def open_for_reading(path: object, what: str = "store") -> sqlite3.Connection:
    """A connection to an existing store, for reading."""
    return _connect(_as_path(path, what), create=False, what=what)


# -- reading --------------------------------------------------------------------------------

_TASK_COLUMNS = ("task_id", *LABELS, "status", "attempts", *TASK_METRICS, "eval_flags",
                 *TIMINGS, "worker", "error")


def load(store: object, *, status: str | Iterable[str] = "done") -> pd.DataFrame:
    """The results of a study store as a tidy DataFrame: one row per task and level.

    Parameters
    ----------
    store : str or os.PathLike
        A store written by :func:`uqzoo.study.run`.
    status : str or iterable of str
        Which tasks: ``"done"`` (default), ``"failed"``, ``"pending"``, several
        of them, or ``"all"``. Tasks without level rows (failed, pending) get
        one row with ``level`` NaN.

    Returns
    -------
    pandas.DataFrame
        Columns: ``task_id``, the labels (``study, dataset, setting, method,
        variant, replicate, seed, data_seed``), ``status``, ``attempts``,
        ``level`` and the per-level metrics, :data:`LEVEL_METRICS`
        (``coverage``, ``coverage_se``, ``interval_width``,
        ``interval_width_se``, ``hcs_size``, ``hcs_proportion``,
        ``hcs_accuracy``, ``hcs_accuracy_se``, ``hcs_missed_targets``,
        ``interval_score``, ``interval_score_se``; the interval score NaN
        without true probabilities), then the task-level metrics repeated on
        each of the task's rows, :data:`TASK_METRICS` (``accuracy``, ``ece``,
        ``brier``, ``nll``, ..., ``num_draws``, ``converged``; with a study's ``[reference]`` the
        ``fidelity_<score>`` columns, each with ``_mc_floor``, and
        ``reference_gate_passed``, else NaN / <NA>; with a study's ``conformal``
        the split-conformal sets at its level, :data:`CONFORMAL_METRICS`:
        ``conformal_coverage``, ``conformal_set_size``, ..., the model's own
        ``plain_set_coverage``, ..., else NaN, the ``*_worst_decile`` NaN also
        without true probabilities), the timings (``fit_seconds``,
        ``task_seconds``, ...), ``worker`` and ``error``. ``*_se`` columns
        are the evaluator's standard errors within one task; across replicates
        see :func:`uqzoo.study.summarize`. The metric columns are the
        headlines tagged ``"store"`` in :data:`uqzoo.headline.HEADLINE`; a
        task recorded before its store kept a metric reads it as NaN.

    Example
    -------
    >>> import uqzoo as uz
    >>> df = uz.study.load("results.sqlite")                 # doctest: +SKIP
    >>> df.groupby(["method", "level"]).coverage.mean()      # doctest: +SKIP
    """
    import numpy as np
    import pandas as pd

    wanted: tuple[str, ...]
    if isinstance(status, str):
        wanted = STATUSES if status == "all" else (status,)
    else:
        wanted = tuple(status)
    for s in wanted:
        if s not in STATUSES:
            raise InvalidInputError(f"status must be 'all' or among {', '.join(STATUSES)}; "
                                    f"got {_show(s)}")
    con = open_for_reading(store)
    try:
        marks = ", ".join("?" * len(wanted))
        present = _task_columns(con)        # a store older than a column reads it as NULL
        selected = ", ".join(c if c in present else f"NULL AS {c}" for c in _TASK_COLUMNS)
        cursor = con.execute(f"SELECT {selected}, levels_blob FROM tasks "
                             f"WHERE status IN ({marks}) ORDER BY rowid", wanted)
        tasks = pd.DataFrame.from_records(cursor.fetchall(),
                                          columns=[*_TASK_COLUMNS, "levels_blob"])
    finally:
        con.close()
    # A task without levels (failed, pending) keeps one row, with level NaN.
    rows_per_task, values = _unpack_levels(tasks.pop("levels_blob").tolist(),
                                           tasks["task_id"].tolist())
    owner = np.repeat(np.arange(len(tasks)), rows_per_task)
    for column in (*TASK_METRICS, *TIMINGS):
        tasks[column] = tasks[column].astype(np.float64)
    for column in ("converged", "eval_failed", "reference_gate_passed"):
        tasks[column] = tasks[column].map({1.0: True, 0.0: False}).astype("boolean")
    frame = tasks.take(owner).reset_index(drop=True)
    position = frame.columns.get_loc("attempts") + 1
    for i, column in enumerate(("level", *LEVEL_METRICS)):
        frame.insert(int(position) + i, column, values[:, i])
    return frame
