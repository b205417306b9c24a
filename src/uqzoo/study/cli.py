"""``uqzoo study``: run a study file, follow its store, export its results.

    uqzoo study run experiments/examples/small.toml --store small.sqlite --workers 2
    uqzoo study run study.toml --store s.sqlite --executor dask --address tcp://host:8786
    uqzoo study status small.sqlite
    uqzoo study export small.sqlite --format csv --out small.csv [--summary]

``run`` validates the whole file before any task runs (a bad file is a
one-line error, exit status 2), does only the tasks the store does not hold
yet (``--retry-failed`` adds the failed ones) and exits with 1 when some task
of the study is recorded as failed. Registered in :mod:`uqzoo.cli` by
:func:`add_study_parser`; imports nothing heavy until a command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from uqzoo.errors import UqzooError

__all__ = ["add_study_parser"]

# Errors shown by run and status: the most frequent first, at most this many.
_SHOWN_ERRORS = 5


def _failed_errors(con: Any, study: str | None = None) -> list[tuple[str, int]]:
    where, args = ("AND study = ?", (study,)) if study is not None else ("", ())
    return list(con.execute(
        f"SELECT error, COUNT(*) AS n FROM tasks WHERE status = 'failed' {where} "
        f"GROUP BY error ORDER BY n DESC, error LIMIT {_SHOWN_ERRORS}", args))


def _print_errors(errors: list[tuple[str, int]]) -> None:
    for error, count in errors:
        text = error if len(error) <= 200 else error[:197] + "..."
        print(f"  {count} × {text}")


def _cmd_run(args: argparse.Namespace) -> int:
    from uqzoo.study.runner import run
    from uqzoo.study.store import open_for_reading
    from uqzoo.study.studyfile import read_study

    study = read_study(args.file)               # validated before anything else happens
    summary = run(study, store=args.store, executor=args.executor, workers=args.workers,
                  address=args.address, threads=args.threads,
                  retry_failed=args.retry_failed, progress_bar=not args.no_progress)
    con = open_for_reading(args.store)
    try:
        ids = {t.id for t in study.tasks()}
        statuses = [s for i, s in con.execute("SELECT task_id, status FROM tasks")
                    if i in ids]
        failed = statuses.count("failed")
        errors = _failed_errors(con, study.name) if failed else []
    finally:
        con.close()
    print(f"study {summary.study!r}: {summary.total} tasks, {statuses.count('done')} done, "
          f"{failed} failed (this run: {summary.done} done, {summary.failed} failed in "
          f"{summary.seconds:.1f} s; {summary.skipped} already in the store)")
    if failed:
        print("failed tasks (errors, most frequent first):")
        _print_errors(errors)
        print(f"their tracebacks are in {args.store}; rerun them with --retry-failed")
    return 1 if failed else 0


def _cmd_status(args: argparse.Namespace) -> int:
    import datetime

    from uqzoo.study.store import open_for_reading, status_counts

    con = open_for_reading(args.store)
    try:
        studies = [row[0] for row in con.execute(
            "SELECT DISTINCT study FROM tasks ORDER BY study")]
        if not studies:
            print(f"{args.store}: no tasks")
        for study in studies:
            counts = status_counts(con, study)
            total = sum(counts.values())
            print(f"study {study!r}: {total} tasks: {counts['done']} done, "
                  f"{counts['failed']} failed, {counts['pending']} remaining")
            last = con.execute("SELECT started, finished, executor, workers, address, "
                               "n_done, n_failed, n_todo FROM runs WHERE study = ? "
                               "ORDER BY run_id DESC LIMIT 1", (study,)).fetchone()
            if last is not None:
                started, finished, executor, workers, address, n_done, n_failed, n_todo = last
                when = datetime.datetime.fromtimestamp(started).isoformat(" ", "seconds")
                where = address or f"{workers} workers"
                # A run stopped by Ctrl-C or a signal still records its end (the
                # driver's clean-up), with fewer tasks ended than it set out to do.
                if finished is None:
                    state = "still running, or killed before it could record its end"
                elif (n_done or 0) + (n_failed or 0) < (n_todo or 0):
                    state = "interrupted (stopped before its tasks ended; run again to resume)"
                else:
                    state = "finished"
                print(f"  last run {when} ({executor}, {where}): {state}"
                      + (f"; {n_done} done, {n_failed} failed of {n_todo}"
                         if finished is not None else ""))
            if counts["failed"]:
                print("  failed tasks (errors, most frequent first):")
                _print_errors(_failed_errors(con, study))
    finally:
        con.close()
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    import importlib.util
    import io

    from uqzoo.io import check_output_file, write_file_atomically
    from uqzoo.study.analysis import summarize
    from uqzoo.study.store import load

    if args.format == "parquet" and not any(importlib.util.find_spec(m) is not None
                                            for m in ("pyarrow", "fastparquet")):
        raise UqzooError("--format parquet needs pyarrow (pip install pyarrow); or use "
                         "--format csv")
    check_output_file(args.out, what="--out",      # before reading, not after
                      example=f"{'summary' if args.summary else 'results'}.{args.format}",
                      overwrite=args.overwrite)
    table = load(args.store, status=args.status)
    if args.summary:
        table = summarize(table)
    if args.format == "csv":
        data = table.to_csv(index=False).encode()
    else:
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        data = buffer.getvalue()
    write_file_atomically(args.out, data, what="--out", overwrite=args.overwrite)
    print(f"wrote {args.out}: {len(table)} rows"
          + (" (summary)" if args.summary else f" ({args.status} tasks × levels)"))
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") \
            from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def add_study_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``study run | status | export`` to the ``uqzoo`` command's subparsers."""
    parser = subparsers.add_parser(
        "study", help="run a simulated-coverage study file; follow and export its store",
        description=__doc__.split("\n")[0])
    actions = parser.add_subparsers(dest="study_command", required=True,
                                    metavar="{run,status,export}")

    p = actions.add_parser("run", help="run a study file's unfinished tasks into a store")
    p.add_argument("file", help="the study file (.toml)")
    p.add_argument("--store", required=True,
                   help="SQLite store of the results; created when missing, resumed if not")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local: a process pool here (default); dask: a Dask LocalCluster, "
                        "or the scheduler at --address")
    p.add_argument("--address", metavar="tcp://HOST:PORT",
                   help="a running Dask scheduler (with --executor dask)")
    p.add_argument("--workers", type=_positive_int,
                   help="worker processes here (default: the cores); not with --address")
    p.add_argument("--threads", type=_positive_int,
                   help="threads per worker process (default: cores ÷ workers)")
    p.add_argument("--retry-failed", action="store_true",
                   help="also rerun the tasks recorded as failed")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=_cmd_run)

    p = actions.add_parser("status", help="tasks done, failed and remaining in a store")
    p.add_argument("store")
    p.set_defaults(func=_cmd_status)

    p = actions.add_parser("export", help="write a store's results as CSV or Parquet")
    p.add_argument("store")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv")
    p.add_argument("--out", required=True, help="the file to write")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing file at --out (a symbolic link is always refused)")
    p.add_argument("--status", choices=("done", "failed", "pending", "all"), default="done",
                   help="which tasks (default: done)")
    p.add_argument("--summary", action="store_true",
                   help="the summary over replicates (uz.study.summarize), not every task")
    p.set_defaults(func=_cmd_export)
    return parser
