"""Running a study: one task, the executors, and the driver that fills the store.

- :func:`run_task` is pure: a task's data, fit and evaluation follow from the
  task alone (its seeds derive from its id), so a result does not depend on
  the executor, the worker count or the order tasks run in.
- Executors: ``"local"``, a process pool on this machine
  (``concurrent.futures``, spawned processes), and ``"dask"``,
  ``dask.distributed``: a ``LocalCluster`` when no address is given, any
  running scheduler otherwise (one started by dask-jobqueue on SLURM or PBS,
  say).
- Each worker process limits its own threads (OpenMP, MKL, OpenBLAS, XLA via
  environment variables set before torch or JAX start, and
  ``torch.set_num_threads``) to ``threads`` = cores ÷ workers, so that
  workers do not oversubscribe the cores.
- The driver alone writes the store (:mod:`uqzoo.study.store`), one
  transaction per finished task; a task that raises is recorded as failed
  with its error, and rerun with ``retry_failed=True``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import re
import socket
import sys
import time
import traceback
import uuid
import warnings
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

from uqzoo._progress import progress_bar as progress
from uqzoo._validation import _show, check_choice, check_int
from uqzoo._version import versions
from uqzoo.errors import InvalidInputError, InvalidTypeError, UqzooError
from uqzoo.study.store import _LEVEL_HEADLINES, _TASK_HEADLINES, CONFORMAL_METRICS, Store
from uqzoo.study.studyfile import LABEL_NOISE_OPTIONS, Study, Task, read_study

__all__ = ["EXECUTORS", "RunSummary", "run", "run_task", "thread_environment"]

EXECUTORS = ("local", "dask")
# Thread-count variables of the numerical libraries under torch, numpy and scipy.
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# -- one task --------------------------------------------------------------------------------

def _stderr(table: Any, metric: str, level: float | None = None) -> float:
    """The evaluator's standard error of a metric: that of its row over all classes,
    or of its one per-class row (the detection AUROC's class 1, the HCS of a binary
    problem); NaN where it has no row, or several classes share it without one over
    all (the HCS accuracy pooled over several judged classes)."""
    import numpy as np

    rows = table[table.metric == metric]
    if level is None:
        rows = rows[rows.level.isna()]
    else:
        rows = rows[np.isclose(rows.level.astype(float), level)]
    overall = rows[rows["class"].isna()]
    if len(overall):
        return float(overall.stderr.iloc[0])
    return float(rows.stderr.iloc[0]) if len(rows) == 1 else math.nan


def _stored(report: Any, numbers: dict[str, Any], entries: Sequence[Any],
            level: float | None = None) -> dict[str, float]:
    """The store's columns of ``entries`` (headlines tagged "store"): each one's headline
    number (``report.to_dict()``, the HCS's pooled over the judged classes; NaN where
    the report has none) and, where it has one, its standard error as ``<name>_se``."""
    out: dict[str, float] = {}
    for entry in entries:
        out[entry.name] = float(numbers.get(entry.key(level), math.nan))
        if entry.stderr:
            out[f"{entry.name}_se"] = _stderr(report.table, entry.name, level)
    return out


def _task_metrics(report: Any) -> dict[str, Any]:
    out: dict[str, Any] = _stored(report, report.to_dict(), _TASK_HEADLINES)
    out["num_draws"] = int(report.num_draws)
    out["converged"] = report.converged
    out["eval_failed"] = bool(report.failures)
    out["eval_flags"] = ", ".join(dict.fromkeys(f.kind for f in report.failures))
    return out


def _level_metrics(report: Any) -> list[dict[str, float]]:
    numbers = report.to_dict()
    return [{"level": float(level), **_stored(report, numbers, _LEVEL_HEADLINES, level)}
            for level in report.levels]


def _fidelity_metrics(fid: Any, gate_passed: bool) -> dict[str, Any]:
    """A task's closeness to its reference: ``fidelity_<score>`` and its MC floor, and
    whether the reference passed its gate (the store's columns)."""
    out: dict[str, Any] = {"reference_gate_passed": gate_passed}
    for score in fid.scores:
        out[f"fidelity_{score.name}"] = score.value
        out[f"fidelity_{score.name}_mc_floor"] = score.mc_floor
    return out


def _conformal_metrics(report: Any) -> dict[str, Any]:
    """A task's split-conformal sets (the store's :data:`CONFORMAL_METRICS`): NaN where
    the report has none (the worst deciles need true probabilities)."""
    numbers = report.to_dict()
    return {name: float(numbers.get(name, math.nan)) for name in CONFORMAL_METRICS}


# A worker's last references, by what makes them (data setting, replicate, network,
# options, seed): the methods of one replicate share one reference, so a worker
# that runs several of them samples it once. Two: a worker holds at most a few
# tasks of one replicate in a row (tasks go replicate by replicate).
_REFERENCES: dict[str, Any] = {}
_REFERENCES_KEPT = 2


def _reference_of(task: Task, spec: Any, data: Any) -> Any:
    """The task's reference posterior (uz.reference_posterior), sampled once per worker."""
    from uqzoo.reference import reference_posterior

    config = task.config
    key = json.dumps({k: config[k] for k in ("dataset", "replicate", "seed", "spec",
                                             "reference")}, sort_keys=True)
    seed = task.reference_seed
    assert seed is not None                     # the task has a reference
    if key not in _REFERENCES:
        _REFERENCES[key] = reference_posterior(spec, data, seed=seed,
                                               progress_bar=False, **config["reference"])
        while len(_REFERENCES) > _REFERENCES_KEPT:
            _REFERENCES.pop(next(iter(_REFERENCES)))
    return _REFERENCES[key]


_SKIP = object()


def _plain(value: Any, max_size: int = 16) -> Any:
    """JSON-ready diagnostics: scalars, short arrays as lists, nested dicts; long
    arrays (loss traces, per-draw statistics) and other objects are left out."""
    import numpy as np

    def convert(v: Any) -> Any:
        if isinstance(v, (bool, int, float, str)) or v is None:
            return v
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.ndarray):
            return v.tolist() if v.size <= max_size else _SKIP
        if isinstance(v, dict):
            items = {str(k): convert(x) for k, x in v.items()}
            return {k: x for k, x in items.items() if x is not _SKIP}
        if isinstance(v, (list, tuple)):
            items_ = [convert(x) for x in v] if len(v) <= max_size else [_SKIP]
            return _SKIP if any(x is _SKIP for x in items_) else items_
        return _SKIP

    out = convert(value)
    return None if out is _SKIP else out


def _dataset_options(name: str, options: dict[str, Any], data_seed: int) -> dict[str, Any]:
    from uqzoo import datasets

    defaults = datasets.options(name)
    out = {k: tuple(v) if isinstance(defaults.get(k), tuple) else v for k, v in options.items()}
    if "seed" in defaults:
        out["seed"] = data_seed
    if "progress_bar" in defaults:
        out["progress_bar"] = False
    return out


def _conformal_split(config: dict[str, Any], data: Any, seed: int) -> tuple[Any, Any]:
    """(data to fit on, held-out calibration (X, y) or None): with a study's ``conformal``
    a stratified 20 % of the training data, chosen by the task's seed, is held out."""
    if config.get("conformal") is None:
        return data, None
    from uqzoo.recalibrate import DEFAULT_CALIBRATION_FRACTION, calibration_split

    return calibration_split(data, DEFAULT_CALIBRATION_FRACTION, seed=seed)


def run_task(task: Task) -> dict[str, Any]:
    """Load the task's data, fit its method, evaluate: one result, plain data only.

    Pure: everything follows from ``task`` (data drawn with ``task.data_seed``,
    the fit seeded with ``task.seed``), so the metrics do not depend on where,
    when or beside what the task runs. Exceptions propagate; :func:`run`
    records them as failed tasks.

    Parameters
    ----------
    task : Task

    Returns
    -------
    dict
        ``task_id``, ``status`` ("done"), ``metrics`` (task-level: accuracy and
        its standard error, ECE, Brier, NLL, ..., ``num_draws`` S,
        ``converged``), ``levels`` (one dict per credible level: coverage,
        interval width and their standard errors, High Confidence Set size,
        proportion, accuracy), ``report`` (``EvalReport.to_dict()``),
        with a ``[reference]`` in the study also ``fidelity_<score>`` and
        ``fidelity_<score>_mc_floor`` among ``metrics`` (:func:`uqzoo.fidelity`
        of the fit against the replicate's reference posterior, on the test
        split) and ``reference_gate_passed``; the reference's time is
        ``reference_seconds`` of ``timings`` (0 when a worker reused it),
        ``fit_config`` (the method's full config), ``diagnostics``,
        ``warnings`` (messages raised during the task) and ``timings``
        (``load_seconds``, ``fit_seconds``, ``eval_seconds``). With
        ``conformal`` in the study the method is fitted without a held-out
        20 % of the training data and ``report`` and ``metrics`` also hold
        the conformal keys (``conformal_coverage``, ``plain_set_coverage``,
        ...: :data:`uqzoo.study.store.CONFORMAL_METRICS`; see
        :class:`~uqzoo.study.studyfile.Study`).

    Example
    -------
    >>> import pathlib, tempfile
    >>> import uqzoo as uz
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.toml"
    >>> _ = path.write_text('''
    ... [study]
    ... levels = [0.9]
    ... [[datasets]]
    ... name = "sim-teacher"
    ... options = { n_train = 200, n_test = 300 }
    ... [[methods]]
    ... name = "laplace"
    ... config = { num_epochs = 50, num_samples = 100 }
    ... ''')
    >>> [task] = uz.study.expand(path)
    >>> result = uz.study.run_task(task)
    >>> result["status"], result["metrics"]["num_draws"], len(result["levels"])
    ('done', 100, 1)
    """
    import numpy as np

    from uqzoo import datasets
    from uqzoo.evaluate import evaluate
    from uqzoo.methods import fit
    from uqzoo.spec import MLPSpec

    if not isinstance(task, Task):
        raise InvalidTypeError(f"task must be a uqzoo.study.Task, got {_show(task)}")
    config = task.config
    name = config["dataset"]["name"]
    options = _dataset_options(name, config["dataset"]["options"], task.data_seed)
    noise = {k: options.pop(k) for k in LABEL_NOISE_OPTIONS if k in options}
    spec_options = (dict(config["spec"]) if "model" in config["spec"]
                    else dict(config["spec"], hidden=tuple(config["spec"]["hidden"])))
    # Warnings of the task (convergence, data) are kept with its result: a worker's
    # stderr is lost on a cluster.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        data = datasets.load(name, **options)
        if noise:
            # Its own stream of the replicate's data seed: which labels flip follows the
            # data, not the fit.
            noise_seed = int(np.random.SeedSequence([task.data_seed, 0x1AB]).generate_state(1)[0])
            data = datasets.with_label_noise(data, noise["label_noise"],
                                             noise.get("label_noise_kind", "symmetric"),
                                             seed=noise_seed)
        t1 = time.perf_counter()
        if "model" in spec_options:     # FILE.py:FACTORY, imported by this worker
            from uqzoo.models import from_file
            spec = from_file(spec_options["model"], data.n_features, data.n_classes)
        else:
            spec = MLPSpec(data.n_features, data.n_classes, **spec_options)
        fit_data, calibration = _conformal_split(config, data, task.seed)
        posterior = fit(config["method"]["name"], spec, fit_data, seed=task.seed,
                        progress_bar=False, **config["method"]["config"])
        t2 = time.perf_counter()
        rule = None
        if calibration is not None:
            from uqzoo.conformal import conformalize

            rule = conformalize(posterior, calibration=calibration,
                                alpha=1.0 - config["conformal"]["level"],
                                score=config["conformal"]["score"])
        report = evaluate(posterior, data, levels=tuple(config["levels"]),
                          delta=config["delta"], conformal=rule)
        t3 = time.perf_counter()
        closeness: dict[str, Any] = {}
        if config.get("reference") is not None:
            from uqzoo.fidelity import fidelity
            from uqzoo.reference import reference_gate

            reference = _reference_of(task, spec, data)
            t4 = time.perf_counter()
            # require_gate=False: a reference that failed its gate is still scored
            # against, and reference_gate_passed (and its warning) says so
            fid = fidelity(posterior, reference, data.X_test, data=data, require_gate=False)
            closeness = _fidelity_metrics(fid, reference_gate(reference).passed)
            t5 = time.perf_counter()
    diagnostics = _plain(dict(posterior.diagnostics)) or {}
    diagnostics.update(sample_shape=list(posterior.sample_shape),
                       converged=posterior.converged, predictive=posterior.predictive,
                       posterior_warnings=list(posterior.warnings))
    return {
        "task_id": task.id,
        "status": "done",
        "metrics": {**_task_metrics(report), **closeness,
                    **(_conformal_metrics(report) if rule is not None else {})},
        "levels": _level_metrics(report),
        "report": _plain(report.to_dict()),
        "fit_config": _plain(dict(posterior.config)),
        "diagnostics": diagnostics,
        "warnings": list(dict.fromkeys(f"{w.category.__name__}: {w.message}"
                                       for w in caught)),
        "timings": {"load_seconds": t1 - t0, "fit_seconds": t2 - t1,
                    "eval_seconds": t3 - t2,
                    **({"reference_seconds": t4 - t3, "fidelity_seconds": t5 - t4}
                       if closeness else {})},
    }


# -- in a worker ----------------------------------------------------------------------------

def thread_environment(threads: int) -> dict[str, str]:
    """Environment variables that hold a process's numerical libraries to ``threads``.

    OpenMP, MKL, OpenBLAS (torch and numpy) and XLA (JAX: Eigen's thread pool
    and XLA's intra-op parallelism); they must be set before those libraries
    start, which is why executors set them in a fresh worker process.

    Example
    -------
    >>> from uqzoo.study.runner import thread_environment
    >>> thread_environment(1)["OMP_NUM_THREADS"]
    '1'
    """
    threads = check_int(threads, "threads", minimum=1)
    env = dict.fromkeys(_THREAD_VARIABLES, str(threads))
    kept = " ".join(flag for flag in os.environ.get("XLA_FLAGS", "").split()
                    if not flag.lstrip("-").startswith(("xla_cpu_multi_thread_eigen",
                                                        "intra_op_parallelism_threads")))
    eigen = "true" if threads > 1 else "false"
    env["XLA_FLAGS"] = (f"{kept} --xla_cpu_multi_thread_eigen={eigen} "
                        f"intra_op_parallelism_threads={threads}").strip()
    return env


_limited_to: int | None = None


def _limit_threads(threads: int | None) -> None:
    """Hold this worker process to ``threads`` threads (once; None leaves it as it is).

    Called only in worker processes the executors own -- never in the driver or
    a user's process, whose settings a library must not change.
    """
    global _limited_to
    if threads is None or _limited_to == threads:
        return
    os.environ.update(thread_environment(threads))
    import torch

    torch.set_num_threads(threads)
    _limited_to = threads


@functools.cache
def _one_line(exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def execute(task: Task, threads: int | None = None) -> dict[str, Any]:
    """Run one task in a worker: :func:`run_task`, its failure caught, with timings,
    the worker's name and its package versions."""
    _limit_threads(threads)
    started = time.time()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    try:
        result = run_task(task)
    except Exception as exc:           # recorded as a failed task, never dropped
        result = {"task_id": task.id, "status": "failed", "error": _one_line(exc),
                  "traceback": traceback.format_exc()}
    result["timings"] = {**result.get("timings", {}), "started": started,
                         "finished": time.time(), "task_seconds": time.perf_counter() - t0,
                         "cpu_seconds": time.process_time() - cpu0}
    result["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    result["versions"] = versions()
    return result


def _failure(task: Task, error: str) -> dict[str, Any]:
    """The record of a task whose worker never returned (it died, or the executor failed)."""
    return {"task_id": task.id, "status": "failed", "error": error, "timings": {},
            "versions": None}


# -- executors ------------------------------------------------------------------------------

def _die_with(parent: int) -> None:
    """Make this worker die when its driver does, even by SIGKILL (Linux).

    A pool worker of a killed driver is reparented to init and idles forever,
    holding its memory (hundreds of MB of JAX and a data set): the kernel's
    parent-death signal ends it instead. Checked against ``parent`` after it is
    set, for a driver that died before.
    """
    if not sys.platform.startswith("linux"):
        return                               # elsewhere: the pool's own pipes only
    import ctypes
    import signal

    pr_set_pdeathsig = 1                     # <linux/prctl.h>
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def _init_local_worker(threads: int, parent: int | None = None) -> None:
    if parent is not None:
        _die_with(parent)
    _limit_threads(threads)


def _run_local(tasks: Sequence[Task], workers: int,
               threads: int) -> Generator[dict[str, Any], None, None]:
    """Results as tasks finish, from a pool of spawned processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # spawn, not fork: the driver may hold threads (JAX, torch, tqdm), and a forked
    # child of a threaded process can deadlock.
    pool = ProcessPoolExecutor(max_workers=workers,
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_local_worker,
                               initargs=(threads, os.getpid()))
    clean = False
    try:
        futures = {pool.submit(execute, task, threads): task for task in tasks}
        for future in as_completed(futures):
            task = futures.pop(future)
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                yield _failure(task, f"worker process died ({_one_line(exc)}); the pool "
                                     "stopped, so this task may not be the one that "
                                     "killed it; rerun with retry_failed")
            except Exception as exc:
                yield _failure(task, _one_line(exc))
        clean = True
    finally:
        # On an error or Ctrl-C, queued tasks are cancelled and nobody waits for
        # the running ones: what finished is already in the store.
        if not clean:
            # Running tasks would otherwise go on for minutes in orphaned workers
            # that only a terminal's Ctrl-C (sent to the whole process group)
            # stops; their results could no longer be stored. (Python 3.14 has
            # ProcessPoolExecutor.terminate_workers for this.)
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=clean, cancel_futures=not clean)


def _import_dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise UqzooError("executor 'dask' needs dask.distributed: pip install "
                         "'uqzoo[dask]' (or 'dask[distributed]')") from None
    return distributed


# The Dask comm schemes a scheduler listens on (distributed.comm registry).
_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
_ADDRESS = re.compile(r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[^\]]+\]|[^:/\s]+)"
                      r":(?P<port>[^/\s]*)/?")


def check_scheduler_address(address: str) -> str:
    """A Dask scheduler address checked by its form, before any connection is tried.

    ``tcp://HOST:PORT`` (or ``tls``, ``ws``, ``wss``, ``ucx``; ``HOST:PORT``
    means tcp), PORT an integer in 1..65535. A malformed address is refused
    here in one line instead of a Dask traceback or a long wait.
    """
    match = _ADDRESS.fullmatch(address.strip())
    allowed = ("must look like tcp://HOST:PORT (a running Dask scheduler, e.g. "
               "tcp://10.0.0.5:8786; schemes " + ", ".join(_SCHEMES[:-1]) + ")")
    if match is None:
        raise InvalidInputError(f"address {address!r} {allowed}")
    scheme = (match["scheme"] or "tcp").lower()
    if scheme not in _SCHEMES[:-1]:
        raise InvalidInputError(f"address {address!r}: scheme {scheme!r} is not one Dask "
                                f"listens on; it {allowed}")
    port = match["port"]
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InvalidInputError(f"address {address!r}: port {port!r} must be an integer in "
                                f"1..65535; the address {allowed}")
    return address.strip()


def _run_dask(tasks: Sequence[Task], workers: int | None, threads: int | None,
              address: str | None) -> Generator[dict[str, Any], None, None]:
    """Results as tasks finish, from a LocalCluster or the scheduler at ``address``."""
    distributed = _import_dask()
    cluster = None
    client = None
    futures: dict[Any, Task] = {}
    try:
        if address is None:
            # processes=True, one thread each: tasks hold the GIL in Python
            # stretches, so processes, not threads, are the parallel unit. The
            # environment reaches each worker process before it starts.
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address=":0",
                env=thread_environment(threads) if threads is not None else None)
            client = distributed.Client(cluster)
        else:
            try:
                client = distributed.Client(address, timeout="30s")
            except (OSError, ValueError, TypeError) as exc:
                raise UqzooError(f"address {address!r}: no Dask scheduler answers there "
                                 f"({_one_line(exc)})") from None
        token = uuid.uuid4().hex[:8]            # keys of one run never meet an older one's
        for task in tasks:
            future = client.submit(execute, task, threads, key=f"uqzoo-{task.id}-{token}",
                                   retries=0)
            futures[future] = task
        for future in distributed.as_completed(list(futures)):
            task = futures.pop(future)
            try:
                result = future.result()
            except Exception as exc:            # KilledWorker, a lost connection, ...
                result = _failure(task, _one_line(exc))
            future.release()
            yield result
    finally:
        if client is not None:
            if futures:
                client.cancel(list(futures))
            client.close()
        if cluster is not None:
            cluster.close()


# -- the driver -----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RunSummary:
    """What :func:`run` did.

    Attributes
    ----------
    study : str
    store : pathlib.Path
    total : int
        Tasks of the study.
    skipped : int
        Tasks already finished in the store before this run (done, and failed
        unless ``retry_failed``).
    done, failed : int
        Tasks this run finished, and how.
    seconds : float
        Wall time from the start of the executor to the last task recorded
        (the workers' shutdown after it is not counted).
    task_seconds : float
        Sum of the tasks' own wall times in their workers.
    store_seconds : float
        Time the driver spent writing the store.
    workers : int or None
    threads : int or None
        Threads each worker process was held to (None: left as it was).
    """

    study: str
    store: Path
    total: int
    skipped: int
    done: int
    failed: int
    seconds: float
    task_seconds: float
    store_seconds: float
    workers: int | None
    threads: int | None

    @property
    def remaining(self) -> int:
        return self.total - self.skipped - self.done - self.failed


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                     # not on Linux
        return max(1, os.cpu_count() or 1)


def run(study: str | os.PathLike | Study, *, store: str | os.PathLike,
        executor: str = "local", workers: int | None = None, address: str | None = None,
        threads: int | None = None, retry_failed: bool = False,
        progress_bar: bool = True) -> RunSummary:
    """Run a study's unfinished tasks and record each in the store as it finishes.

    Parameters
    ----------
    study : str, os.PathLike or Study
        The study file (validated before anything runs) or a read Study.
    store : str or os.PathLike
        The SQLite store; created when missing. A store already holding some
        of the tasks resumes: only tasks not ``done`` run (and not ``failed``,
        unless ``retry_failed``).
    executor : {"local", "dask"}
        ``"local"``: a pool of ``workers`` spawned processes on this machine.
        ``"dask"``: a Dask ``LocalCluster`` of ``workers`` processes, or the
        running scheduler at ``address``.
    workers : int, optional
        Worker processes of the pool or LocalCluster; default: the cores this
        process may use. Not with ``address`` (the cluster decides).
    address : str, optional
        A Dask scheduler, e.g. ``"tcp://10.0.0.5:8786"`` or a
        ``SLURMCluster``'s ``scheduler_address``; only with ``executor="dask"``.
    threads : int, optional
        Threads per worker process for torch, OpenMP/MKL/OpenBLAS and XLA.
        Default: cores ÷ workers on this machine; with ``address``, the
        workers are left as their cluster started them (start them with one
        thread each, see ``experiments/seed_study/README.md``).
    retry_failed : bool
        Also rerun the tasks recorded as failed.
    progress_bar : bool
        A tqdm bar with done / failed / remaining and an ETA.

    Returns
    -------
    RunSummary

    Notes
    -----
    Worker processes are spawned: a script that calls ``run`` must do so under
    ``if __name__ == "__main__":``. Tasks are independent and seeded from their
    ids, so the store's metrics are the same for any executor, worker count or
    interruption, given the same threads per worker on the same machine.

    Example
    -------
    >>> import uqzoo as uz
    >>> summary = uz.study.run("experiments/examples/small.toml",
    ...                        store="results.sqlite", workers=2)     # doctest: +SKIP
    >>> uz.study.summarize(uz.study.load("results.sqlite"))            # doctest: +SKIP
    """
    if not isinstance(study, Study):
        study = read_study(study)
    tasks = study.tasks()
    executor = check_choice(executor, "executor", EXECUTORS)
    if workers is not None:
        workers = check_int(workers, "workers", minimum=1, maximum=4096)
    if threads is not None:
        threads = check_int(threads, "threads", minimum=1, maximum=4096)
    if address is not None:
        if not isinstance(address, str) or not address:
            raise InvalidTypeError(f"address must be a scheduler address string, got "
                                   f"{_show(address)}")
        if executor != "dask":
            raise InvalidInputError(f"address is for executor='dask'; executor is "
                                    f"{executor!r}")
        if workers is not None:
            raise InvalidInputError("workers applies to a local pool or LocalCluster; with "
                                    "address the cluster decides its workers")
        address = check_scheduler_address(address)
    if executor == "dask":
        _import_dask()
    if address is None:
        workers = workers or _cores()
        threads = threads or max(1, _cores() // workers)

    with Store(store) as st:
        st.plan(study, tasks)
        # Replicate by replicate: a study stopped part-way then has every setting
        # and method at the same depth, so its partial table is balanced.
        # (Results do not depend on the order: each task's seed is its id's.)
        todo = sorted(st.todo(tasks, retry_failed=retry_failed), key=lambda t: t.replicate)
        statuses = dict(st.con.execute("SELECT task_id, status FROM tasks"))
        todo_ids = {t.id for t in todo}
        done_before = sum(statuses.get(t.id) == "done" for t in tasks)
        failed_before = sum(statuses.get(t.id) == "failed" and t.id not in todo_ids
                            for t in tasks)
        run_id = st.start_run(study.name, executor, workers, address, len(todo))
        done = failed = 0
        task_seconds = store_seconds = 0.0
        bar = progress(total=len(tasks), initial=done_before + failed_before, unit="task",
                       desc=study.name, dynamic_ncols=True, file=sys.stderr,
                       enabled=progress_bar)
        bar.set_postfix(done=done_before, failed=failed_before, remaining=len(todo))
        t0 = last = time.perf_counter()
        try:
            results: Generator[dict[str, Any], None, None] = (
                _run_local(todo, workers or 1, threads or 1) if executor == "local"
                else _run_dask(todo, workers, threads, address))
            with contextlib.closing(results):
                for result in results if todo else ():
                    t1 = time.perf_counter()
                    st.record(result, run_id)
                    last = time.perf_counter()
                    store_seconds += last - t1
                    task_seconds += result.get("timings", {}).get("task_seconds", 0.0)
                    if result["status"] == "done":
                        done += 1
                    else:
                        failed += 1
                    bar.update(1)
                    bar.set_postfix(done=done_before + done, failed=failed_before + failed,
                                    remaining=len(todo) - done - failed)
        finally:
            seconds = last - t0
            bar.close()
            with contextlib.suppress(Exception):  # never hide the error that got us here
                st.finish_run(run_id, done, failed)
    return RunSummary(study=study.name, store=Path(store), total=len(tasks),
                      skipped=done_before + failed_before, done=done, failed=failed,
                      seconds=seconds, task_seconds=task_seconds, store_seconds=store_seconds,
                      workers=workers, threads=threads)
