"""``uqzoo``: the command line.

    uqzoo compare                      # all methods on the embedded default data
    uqzoo compare --dataset hsi-sim --methods hmc,ensemble,laplace --out results/
    uqzoo fit ensemble --dataset breast-cancer --set num_members=10 --out post.nc
    uqzoo evaluate post.nc --dataset breast-cancer
    uqzoo compare --dataset cube.mat --labels mask.mat --unlabelled none --split blocks
    uqzoo fit laplace --dataset table.csv --target label --out post.nc
    uqzoo compare --config run.toml --out results/    # the whole run from a file
    uqzoo compare --config results/config.toml --out again/   # repeat it exactly
    uqzoo compare --dataset hsi-sim --perturb illumination:0.8-1.2 --copies 10 --out DIR
    uqzoo compare --dataset hsi-sim --recalibrate temperature --out DIR
    uqzoo compare --dataset gaussian-mixture --conformal 0.9 --out DIR
    uqzoo reference --dataset breast-cancer --out ref.nc   # a gated HMC reference posterior
    uqzoo compare --dataset breast-cancer --reference ref.nc --out DIR   # closeness to it
    uqzoo datasets | uqzoo methods

``--dataset`` is a built-in data set's name, or a file: a hyperspectral cube
(``.mat``, ``.npz``, ``.npy``, ENVI ``.hdr``; the scene options below go to
``uz.datasets.from_hsi``) or a ``.csv`` table with ``--target COLUMN``
(``uz.datasets.from_csv``). The same options give the same split in ``fit``,
``evaluate`` and ``compare``.

``compare`` prints a table that fits 120 columns (method, draws S, fit seconds,
convergence, coverage and width per level, HCS share, accuracy, ECE, NLL, and
detection AUROC and rank where present), the verdict's sentences under it, and
each warning as one line; ``--wide`` prints every column instead.
``compare --out DIR`` writes ``DIR/report.html`` (one self-contained page:
verdict, table, figures; see :mod:`uqzoo.comparison.report`), ``results.csv`` and
``results.parquet`` (the whole table), the posteriors, loose plots,
and ``DIR/config.toml``: the run's resolved configuration, every default
filled in. ``compare --config FILE`` runs a config file (see
:mod:`uqzoo.comparison.config`); it holds the whole run, so the flags that set
data, network, methods or settings cannot be combined with it (an error names
them), only ``--out``, ``--overwrite``, ``--no-progress`` and ``--wide``.

Bad arguments end with a one-line error and exit status 2, never a traceback.
Every ``--out`` is checked before any data is loaded or any method fitted (its
folder exists and is writable, a file is not a folder and a folder not a file,
the name fits the file system), and written atomically: ``compare --out DIR``
fills a temporary sibling folder and renames it to DIR at the end, so an
interrupted or failed run leaves nothing half-written; an existing non-empty DIR
is replaced only with ``--overwrite``. Ctrl-C ends with one line and exit
status 130.

The ``uqzoo`` command owns its process, so it gives JAX one CPU device per
core it may run on before JAX starts (``jax_num_cpu_devices``), and HMC's
chains (``chain_method="auto"``) then run in parallel, one per core; a
setting of the user's (``JAX_NUM_CPU_DEVICES``, or
``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``) is kept. The
library never does this on its own: a Python program calls
``jax.config.update("jax_num_cpu_devices", n)`` itself, right after
``import jax``. ``uqzoo study`` runs its tasks in worker processes of one
device each.

Exit status: 0 success; 1 from ``compare`` when a method's fit failed (it is a
row marked FAILED with its reason; the other methods are reported and
written), from ``reference`` when the gate is not met, from ``study run`` when
a task failed; 2 a bad argument or unusable file (one line); 130 Ctrl-C
(143 a termination signal).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import textwrap
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# --dataset values with these endings are files, not built-in data set names
# (one list for the flags and for config files).
from uqzoo._validation import check_delta
from uqzoo.comparison.config import HSI_FILES, INTERVALS, TABLE_FILES
from uqzoo.errors import ConvergenceWarning, DataWarning, SlowFitWarning, UqzooError

DEFAULT_DATASET = "sim-teacher"
# The printed table's width: a terminal of 120 columns shows it unwrapped.
TABLE_WIDTH = 120
# compare's exit status when some method's fit failed (the others are reported);
# as `study run` when a task failed.
EXIT_METHOD_FAILED = 1


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _parse_options(items: list[str] | None, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UqzooError(f"{what} must look like key=value, got {item!r}")
        out[key.strip()] = _parse_value(value.strip())
    return out


def _parse_levels(text: str) -> tuple[float, ...]:
    try:
        levels = tuple(float(t) for t in text.split(","))
    except ValueError:
        levels = (math.nan,)
    if not all(0.0 < level < 1.0 for level in levels):     # nan and inf fail this too
        raise UqzooError(f"--levels must be comma-separated credible levels, each a number "
                         f"in (0, 1) such as 0.8,0.95, got {text!r}")
    return levels


# Options of a data set read from a file: flag -> (keyword, converter, file kinds).
_FILE_FLAGS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "--target": ("target", "text", ("table",)),
    "--labels": ("labels", "text", ("hsi",)),
    "--cube-key": ("cube_key", "text", ("hsi",)),
    "--labels-key": ("labels_key", "text", ("hsi",)),
    "--unlabelled": ("unlabelled", "unlabelled", ("hsi",)),
    "--target-class": ("target_class", "label", ("hsi",)),
    "--class-names": ("class_names", "names", ("hsi", "table")),
    "--split": ("split", "text", ("hsi", "table")),
    "--group-column": ("group_column", "text", ("table",)),
    "--split-fraction": ("split_fraction", "float", ("hsi",)),
    "--test-size": ("test_size", "float", ("hsi", "table")),
    "--block-size": ("block_size", "block", ("hsi",)),
    "--guard": ("guard", "int", ("hsi",)),
}


def _flag_dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def _convert(flag: str, kind: str, text: str) -> Any:
    """A file option's value from its text; a bad one is a one-line error."""
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "unlabelled":
            return None if text.strip().lower() == "none" else int(text)
        if kind == "block":
            sides = [int(t) for t in text.split(",")]
            if len(sides) not in (1, 2):
                raise ValueError(text)
            return sides[0] if len(sides) == 1 else tuple(sides)
    except ValueError:
        expected = {"int": "an integer", "float": "a number",
                    "unlabelled": "an integer label or none",
                    "block": "a block side in pixels, or HEIGHT,WIDTH"}[kind]
        raise UqzooError(f"{flag} must be {expected}, got {text!r}") from None
    if kind == "label":
        value = _parse_value(text)        # 3 -> 3, true -> True, plane -> "plane"
        return value if isinstance(value, (int, float, str)) else text
    if kind == "names":
        return [t.strip() for t in text.split(",")]
    return text


def _file_kind(dataset: str) -> str | None:
    """"hsi" or "table" when --dataset names a file, None for a built-in name."""
    suffix = Path(dataset).suffix.lower()
    if suffix in HSI_FILES:
        return "hsi"
    if suffix in TABLE_FILES:
        return "table"
    return None


_KEYWORD = re.compile(r"\b(" + "|".join(keyword for keyword, _, _ in _FILE_FLAGS.values())
                      + r")=('?)([^\s',;)]*)\2")


def _in_flags(message: str) -> str:
    """A from_hsi message with its keywords as the flags a command-line user types."""
    def flag(match: re.Match) -> str:
        value = "none" if match.group(3) == "None" else match.group(3)
        return f"--{match.group(1).replace('_', '-')} {value}"
    return _KEYWORD.sub(flag, message)


def _load_data(args):
    return _read_data(*_data_request(args))


def _data_request(args) -> tuple[str, dict[str, Any]]:
    """--dataset and its loader's options from the flags, checked before anything is read."""
    options = _parse_options(args.data_option, "--data-option")
    given = {flag: spec for flag, spec in _FILE_FLAGS.items()
             if getattr(args, _flag_dest(flag), None) is not None}
    kind = _file_kind(args.dataset)
    if kind is None:
        if given:
            if Path(args.dataset).is_file():
                raise UqzooError(
                    f"--dataset {args.dataset!r} is a file of a type uqzoo does not read; use "
                    f"{', '.join(HSI_FILES)} (a hyperspectral cube) or .csv (a table)")
            raise UqzooError(
                f"{', '.join(given)} applies only when --dataset is a file (a cube: "
                f"{', '.join(HSI_FILES)}; a table: .csv); for the built-in data set "
                f"{args.dataset!r} use --data-option KEY=VALUE")
        return args.dataset, options
    if not Path(args.dataset).is_file():
        raise UqzooError(f"--dataset {args.dataset!r}: no such file")
    for flag, (keyword, converter, kinds) in given.items():
        if kind not in kinds:
            what = "a hyperspectral cube" if kind == "hsi" else "a .csv table"
            raise UqzooError(f"{flag} does not apply to --dataset {args.dataset!r}, {what}")
        if keyword in options:
            raise UqzooError(f"{flag} and --data-option {keyword}=... both set {keyword}; "
                             "give one")
        options[keyword] = _convert(flag, converter, getattr(args, _flag_dest(flag)))
    if kind == "table" and options.get("target") is None:
        raise UqzooError(f"--dataset {args.dataset!r} is a table: name its label column "
                         "with --target COLUMN")
    return args.dataset, options


def _read_data(dataset: str, options: dict[str, Any], config_file: str | None = None):
    """Load what _data_request (or a config file) asked for; describe a scene."""
    from uqzoo.comparison.config import CompareConfig

    try:
        data = CompareConfig(dataset=dataset, data=options).load_data()
    except UqzooError as exc:
        if config_file is not None:       # a config file's keys are the loader's keywords
            raise type(exc)(f"{config_file}: data: {exc}") from exc
        if _file_kind(dataset) == "hsi":
            raise type(exc)(_in_flags(str(exc))) from exc
        raise
    if _file_kind(dataset) != "hsi":
        return data
    used = data.meta["options"]
    guard = (f", guard band {used['guard']} px ({len(data.meta['guard_coords'])} training "
             "pixels dropped)" if used["split"] != "random" else "")
    print(f"scene {data.meta['image_shape'][0]}×{data.meta['image_shape'][1]}: "
          f"split {used['split']!r}{guard}; pixels per class (train / test / guard):")
    counts = zip(data.classes or (), data.class_names or (), data.meta["class_counts_train"],
                 data.meta["class_counts_test"], data.meta["class_counts_guard"], strict=True)
    for label, name, n_train, n_test, n_guard in counts:
        shown = name if str(label) == name else f"{label} ({name})"
        print(f"  {shown}: {n_train} / {n_test} / {n_guard}")
    if used["split"] == "random":
        flag = "split = \"blocks\"" if config_file is not None else "--split blocks"
        print("note: a random pixel split tests pixels whose neighbours trained, so its "
              f"scores are optimistic; {flag} measures new places")
    return data


_MODEL_HELP = ("your own network as FILE.py:FACTORY: the file is imported as Python (it "
               "runs, as any script you start would) and FACTORY(in_features, n_classes) "
               "must return a uqzoo.Model; replaces --hidden, --activation and the priors")


def _spec(args, data):
    from uqzoo.spec import MLPSpec
    if getattr(args, "model", None) is not None:
        from uqzoo.models import from_file
        _no_mlp_options_with_model(args)
        return from_file(args.model, data.n_features, data.n_classes, what="--model")
    try:
        hidden = tuple(int(h) for h in args.hidden.split(",") if h.strip())
    except ValueError:
        raise UqzooError(
            f"--hidden must be comma-separated widths like 10,10, got {args.hidden!r}") from None
    return MLPSpec(data.n_features, data.n_classes, hidden=hidden, activation=args.activation,
                   prior_scale=args.prior_scale, prior=args.prior)


def _cmd_compare(args) -> int:
    from uqzoo.comparison.compare import format_table
    from uqzoo.io import check_output_folder

    if args.out is not None:        # "" is a mistake to report, not "no --out"
        check_output_folder(args.out, overwrite=args.overwrite, what="--out")
    config, data = _compare_config(args)
    # Every default filled in (each method's whole Config): the run below, and
    # the config.toml that repeats it.
    config = config.resolved()
    config_text = config.to_toml()        # before the fits: a value TOML cannot hold fails now
    names = list(config.methods)
    print(textwrap.fill(f"uqzoo compare: {data!r}", width=TABLE_WIDTH,
                        subsequent_indent="    "))
    print(textwrap.fill(f"methods: {', '.join(names)}  (seed {config.seed}; "
                        f"{'default' if config.settings == 'full' else 'quick'} settings)",
                        width=TABLE_WIDTH, subsequent_indent="    "))
    result = config.run(data, progress_bar=not args.no_progress)
    if result.settings is not None and result.settings.model:
        print(f"network: {result.settings.model}")
    print()
    if args.wide:
        # The shift columns are printed per perturbation below (all are in results.csv).
        print(format_table(result.table[[c for c in result.table.columns
                                         if "_shift_" not in c]]))
    else:
        print(narrow_table(result.table, config.levels))
    _print_verdict(result)
    legend = []
    if data.p_true_test is not None:
        legend.append("cov@L (coverage@L): share of test points whose level-L interval holds "
                      "the true probability (nominal L); w@L: mean interval width; "
                      f"HCS%@L: % of test points in the High Confidence Set (δ = "
                      f"{config.delta:g}).")
    legend.append(f"S (num_draws): posterior draws per method (a common budget of "
                  f"{config.num_draws} for methods that draw freely; one per member for "
                  f"ensembles); intervals: {config.interval.replace('_', '-')}.")
    print()
    for text in legend:
        print(textwrap.fill(text, width=TABLE_WIDTH))
    if result.fidelity:
        print(_closeness_text(result))
    if result.recalibration is not None:
        rec = result.recalibration
        print(f"recalibrated rows (METHOD+{rec['method']}): {rec['method']} scaling fitted on "
              f"{rec['n_calibration']} training points held out; every method trained on "
              f"the other {rec['n_fit']}.")
    if result.conformal is not None:
        con = result.conformal
        print(textwrap.fill(
            f"conformal columns: split-conformal {con['score'].upper()} label sets at level "
            f"{con['level']:g} ({'Mondrian' if con['mondrian'] else 'marginal'}), calibrated "
            f"on {con['n_calibration']} training points held out; every method trained on "
            f"the other {con['n_fit']}; 'own' columns: each method's own sets (its most "
            "probable labels up to the level), uncalibrated.", width=TABLE_WIDTH))
    # A note every report carries is about the data, not a method: said once.
    shared = set.intersection(*(set(r.warnings) for r in result.reports.values())
                              ) if len(result.reports) > 1 else set()
    for note in [w for w in (next(iter(result.reports.values())).warnings if shared else ())
                 if w in shared]:
        print(f"\nnote on the data: {note}")
    for name, reason in result.failed_fits.items():
        print(f"\nFAILED {name} (fit): {reason}")
    for name, report in result.reports.items():
        own = [w for w in report.warnings if w not in shared]
        for failure in report.failures:
            print(f"\nFAILED {name} ({failure.kind}): {failure.message}")
        if report.converged is False:
            print(f"\nWARNING: {name} did not converge: {'; '.join(own)}")
        elif own:
            print(f"\nnote on {name}: {'; '.join(own)}")
    if result.shift is not None:
        from uqzoo import shift as under_shift
        print(under_shift.text(result.reports, result.ranking_changes))
    if result.settings is not None and result.settings.fars and data.coords_test is not None:
        from uqzoo._data_checks import background_notes
        for note in background_notes(data.y_test, result.settings.fars):
            print(f"\nnote: {note}")
    if args.out is not None:
        _write_compare_outputs(args, config_text, result, data)
    # the other methods' results are reported; the status says one failed
    return EXIT_METHOD_FAILED if result.failed_fits else 0


def _closeness_text(result) -> str:
    """Each method's closeness to the reference, every score beside its MC yardstick."""
    reference = result.settings.reference
    gate = ("passed its gate" if reference.passed else
            "did NOT pass its gate, so it is no reference: " + "; ".join(reference.gate.messages))
    source = ("the comparison's own hmc fit (not independent of the hmc row)"
              if reference.row is not None else
              f"sampled for this comparison, seed {reference.seed}" if reference.source == "auto"
              else reference.source)
    lines = ["", textwrap.fill(f"closeness to the exact posterior (reference: {source}, "
                               f"{reference.num_draws} draws; {gate}); each score with its "
                               "Monte Carlo floor ± sd:", width=TABLE_WIDTH)]
    for name, fid in result.fidelity.items():
        parts = [f"{s.name} {s.value:.4f} (MC {s.mc_floor:.4f} ± {s.mc_sd:.4f})"
                 for s in fid.scores]
        lines.append(textwrap.fill(f"  {name}: " + ", ".join(parts), width=TABLE_WIDTH,
                                   subsequent_indent="    "))
    return "\n".join(lines)


def _cell(value: Any, kind: str) -> str:
    """One table cell: '-' for a missing value (a detector row has no draws)."""
    import pandas as pd

    if value is None or bool(pd.isna(value)):
        return "-"
    if kind == "bool":
        return "yes" if bool(value) else "no"
    if kind == "int":
        return f"{int(value)}"
    if kind == "seconds":
        return f"{float(value):.1f}"
    if kind == "percent":
        return f"{100 * float(value):.1f}"
    return f"{float(value):.3f}"


def narrow_table(table, levels) -> str:
    """The comparison table in at most ``TABLE_WIDTH`` (120) columns, as aligned text.

    Method, draws S, fit seconds, converged, coverage and interval width at
    each level (coverage where the true probabilities are known), the share in
    the High Confidence Set at the first level, accuracy, ECE, NLL, and the
    detection AUROC and ``rank`` where the table has them. A failed fit's name
    carries a ``*``. Levels that do not fit in 120 columns are left out (the
    line under the table says so); ``results.csv`` and ``--wide`` hold all.
    """
    columns: list[tuple[str, str, str]] = [("num_draws", "S", "int"),
                                           ("fit_seconds", "fit s", "seconds"),
                                           ("converged", "conv", "bool")]
    per_level = [[(f"coverage@{lv:g}", f"cov@{lv:g}", "float"),
                  (f"interval_width@{lv:g}", f"w@{lv:g}", "float")] for lv in levels]
    tail = [(f"hcs_proportion@{levels[0]:g}", f"HCS%@{levels[0]:g}", "percent"),
            ("accuracy", "acc", "float"), ("ece", "ECE", "float"), ("nll", "NLL", "float"),
            ("detection_auroc", "AUROC", "float"), ("rank", "rank", "int")]
    failed = table["failed"] if "failed" in table.columns else None
    names = [f"{name}*" if failed is not None and _cell(failed.get(name), "bool") == "yes"
             else str(name) for name in table.index]

    def render(cols: list[tuple[str, str, str]]) -> list[str]:
        present = [c for c in cols if c[0] in table.columns]
        cells = [[_cell(table[key].iloc[i], kind) for key, _, kind in present]
                 for i in range(len(table))]
        widths = [max([len(head)] + [len(row[j]) for row in cells])
                  for j, (_, head, _) in enumerate(present)]
        name_width = max([len("method")] + [len(n) for n in names])
        lines = ["method".ljust(name_width) + "".join(
            " " + head.rjust(w) for (_, head, _), w in zip(present, widths, strict=True))]
        for name, row in zip(names, cells, strict=True):
            lines.append(name.ljust(name_width) + "".join(
                " " + c.rjust(w) for c, w in zip(row, widths, strict=True)))
        return lines

    shown = len(levels)
    lines = render(columns + [c for group in per_level for c in group] + tail)
    while shown > 1 and max(len(line) for line in lines) > TABLE_WIDTH:
        shown -= 1
        lines = render(columns + [c for group in per_level[:shown] for c in group] + tail)
    if shown < len(levels):
        lines.append(f"(levels {', '.join(f'{lv:g}' for lv in levels[shown:])} left out "
                     "to fit 120 columns: --wide or results.csv)")
    if failed is not None and any(failed.fillna(False)):
        lines.append("* failed: see FAILED below")
    return "\n".join(lines)


def _print_verdict(result) -> None:
    """The verdict's sentences under the table, wrapped to the table's width."""
    from uqzoo.comparison.verdict import verdict

    sentences = verdict(result).sentences
    if sentences:
        print()
    for sentence in sentences:
        print(textwrap.fill(sentence, width=TABLE_WIDTH))


# With --config the file holds the whole run; these flags may still be given.
_FLAGS_WITH_CONFIG = ("config", "out", "overwrite", "no_progress", "wide")


def _compare_config(args):
    """The run's CompareConfig and data: from --config FILE, or from the flags."""
    from uqzoo._limits import check_draws
    from uqzoo.comparison.config import CompareConfig, config_data, read_config

    if args.config is not None:
        clashes = sorted(f"--{dest.replace('_', '-')}" for dest in _explicit_dests(args)
                         if dest not in _FLAGS_WITH_CONFIG)
        if clashes:
            raise UqzooError(
                f"{', '.join(clashes)} cannot be combined with --config {args.config!r}: the "
                "file holds the whole run (set it there; with --config only --out, "
                "--overwrite, --no-progress and --wide may be given)")
        config = read_config(args.config)
        data = _read_data(config.dataset, dict(config.data),
                          config_file=Path(args.config).name)
        return config, data
    dataset, options = _data_request(args)
    perturb, copies = _perturbations(args)     # checked before the data are read
    recalibrate = _recalibration(args)
    conformal = _conformal(args)
    noise = _label_noise(args)
    reference = _reference(args)
    if args.methods is not None and not args.methods.strip():
        # '' once meant "all methods": leaving --methods out says that
        from uqzoo import methods as registry
        raise UqzooError(f"--methods must name at least one method "
                         f"({', '.join(registry.names())}), got ''; leave --methods out to "
                         "compare them all")
    check_delta(args.delta, "--delta")
    _parse_levels(args.levels)
    data = _read_data(dataset, options)
    names = args.methods.split(",") if args.methods else None
    configs: dict[str, dict[str, Any]] = {}
    for key, value in _parse_options(args.set, "--set").items():
        method, dot, option = key.partition(".")
        if not dot or (names is not None and method not in names):
            raise UqzooError(f"--set must look like method.option=value for a compared "
                             f"method ({', '.join(names or ['any method'])}), got {key!r}")
        configs.setdefault(method, {})[option] = value
    if args.class_weight is not None:
        if args.class_weight != "balanced":
            raise UqzooError(f"--class-weight must be 'balanced' (per-class weights: --set "
                             f"METHOD.class_weight=[...]), got {args.class_weight!r}")
        from uqzoo import methods as registry
        for name in names or registry.names():          # a method's own --set wins
            configs.setdefault(name, {}).setdefault("class_weight", "balanced")
    target_prior = None
    if args.target_prior is not None:
        target_prior = "train" if args.target_prior == "train" else _parse_levels_like(
            args.target_prior, "--target-prior")
    if args.model is not None:
        from uqzoo.models.source import check_source
        _no_mlp_options_with_model(args)
        spec = {"model": check_source(args.model, "--model")}
    else:
        spec = {k: v for k, v in _spec(args, data).to_dict().items()
                if k not in ("in_features", "n_classes")}
    dataset, options = config_data(dataset, options)
    config = CompareConfig(
        dataset=dataset, data=options, spec=spec,
        methods=tuple(names or ()), configs=configs, levels=_parse_levels(args.levels),
        delta=args.delta, seed=args.seed,
        num_draws=None if args.num_draws is None else check_draws(args.num_draws,
                                                                    "--num-draws"),
        interval=args.interval, settings="full" if args.full else "quick",
        perturb=perturb, copies=copies, target_prior=target_prior, recalibrate=recalibrate,
        reference=reference, source="the command line", **conformal, **noise)
    return config, data


def _label_noise(args) -> dict[str, Any]:
    """--label-noise RATE [--label-noise-kind], checked before the data are read."""
    from uqzoo.comparison import options

    rate, kind = options.label_noise(_number(args.label_noise), args.label_noise_kind,
                                     options.FLAGS)
    return {} if rate is None else {"label_noise": rate, "label_noise_kind": kind}


def _number(text: str | None) -> float | str | None:
    """A flag's number, or its text where it is none (the option's check then names
    the text as typed)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _parse_levels_like(text: str, flag: str) -> tuple[float, ...]:
    """Comma-separated numbers (e.g. class probabilities); a bad one is a one-line error."""
    try:
        return tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UqzooError(f"{flag} must be 'train' or comma-separated class probabilities like "
                         f"0.99,0.01, got {text!r}") from None


def _perturbations(args) -> tuple[tuple[str, ...], int]:
    """--perturb as ``family:low-high`` labels, and --copies; a bad one is a one-line error."""
    from uqzoo._limits import check_copies
    from uqzoo.comparison.config import DEFAULT_COPIES
    from uqzoo.perturb import Perturbation

    labels = tuple(Perturbation.parse(text).label for text in args.perturb or ())
    if args.copies is not None and not labels:
        raise UqzooError("--copies needs --perturb FAMILY[:LO-HI] (the perturbation to make "
                         "copies of)")
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UqzooError(f"--perturb names {', '.join(repeated)} more than once")
    copies = DEFAULT_COPIES if args.copies is None else check_copies(args.copies, "--copies")
    return labels, copies


def _recalibration(args) -> str | None:
    """--recalibrate, checked before the data are read; a bad one is a one-line error."""
    from uqzoo.comparison import options

    return options.recalibrate(args.recalibrate, options.FLAGS)


def _conformal(args) -> dict[str, Any]:
    """--conformal LEVEL [--conformal-score, --conformal-mondrian], checked before the data
    are read; a bad one is a one-line error."""
    from uqzoo.comparison import options

    level, score, mondrian = options.conformal(
        _number(args.conformal), args.conformal_score,
        True if args.conformal_mondrian else None, options.FLAGS)
    if level is None:
        return {}
    return {"conformal": level, "conformal_score": score, "conformal_mondrian": mondrian}


def _reference(args) -> str | None:
    """--reference: "auto" (the default), "none", "hmc" or an existing file, checked before
    the data are read."""
    value = args.reference
    if value is None or value == "auto":
        return "auto"
    if value == "none":
        return None
    if value == "hmc":
        names = args.methods.split(",") if args.methods else None
        if names is not None and "hmc" not in names:
            raise UqzooError(f"--reference hmc uses the comparison's own HMC fit, but --methods "
                             f"{args.methods!r} has no hmc: add it, or give --reference PATH "
                             "(a file written by `uqzoo reference`)")
        return "hmc"
    path = Path(value).expanduser()
    if not path.is_file():
        raise UqzooError(f"--reference must be 'auto', 'none', 'hmc' or the path of a reference "
                         f"written by "
                         f"`uqzoo reference --out PATH`; {value!r} is no such file")
    return str(path.resolve())


class _Unset(list):
    """Marks an option not given. A list, so that an "append" option given adds to a
    copy of it (a new object), never to the marker itself."""


def _explicit_dests(args) -> set[str]:
    """The compare options given on the command line, told apart from defaults.

    The command line is parsed again into a namespace that already holds a
    marker for every option: argparse then sets no defaults, and only the
    options given replace their marker.
    """
    scratch = argparse.ArgumentParser(add_help=False)
    _add_compare_args(scratch)
    unset = _Unset()
    namespace = argparse.Namespace(**dict.fromkeys(vars(args), unset))
    given, _ = scratch.parse_known_args(args.argv[1:], namespace=namespace)
    return {dest for dest, value in vars(given).items() if value is not unset}


def _write_compare_outputs(args, config_text: str, result, data) -> None:
    """--out: table, posteriors, plots, the resolved config and the HTML report."""
    from uqzoo.comparison.report import write_report
    from uqzoo.io import staged_folder, write_file_atomically

    # Written into a temporary sibling folder that becomes --out only when
    # complete: Ctrl-C or a full disk here leaves no half-written results.
    with staged_folder(args.out, overwrite=args.overwrite, what="--out") as staging:
        result.table.to_csv(staging / "results.csv")
        result.table.to_parquet(staging / "results.parquet", engine="pyarrow")
        for name, post in result.posteriors.items():
            post.save(staging / f"{name}.nc")
        if result.shift is not None:
            result.shift.to_csv(staging / "shift.csv", index=False)
            result.rankings.to_csv(staging / "rankings.csv", index=False)
        _save_plots(result.reports, data, staging, comparison=result)
        write_file_atomically(staging / "config.toml", config_text.encode("utf-8"))
        write_report(result, staging / "report.html", data=data, settings=config_text)
    written = "results.csv, results.parquet" \
        + (", shift.csv, rankings.csv" if result.shift is not None else "")
    print(f"\nwrote {args.out}: report.html, {written}, config.toml (repeat the run with "
          f"--config), one posterior .nc per method, and plots")


def _save_plots(reports, data, out: Path, comparison=None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from uqzoo import plots
    mapped = {name: rep for name, rep in reports.items()
              if rep.coords is not None and rep.image_shape is not None}
    # The maps' HCS level: Ries et al.'s 0.8 when it was evaluated, else the first level.
    level = next((lv for lv in next(iter(reports.values())).levels if abs(lv - 0.8) < 1e-9),
                 next(iter(reports.values())).levels[0])
    if comparison is not None and mapped and data.n_classes == 2:
        # Every method and classical detector on one page, ground truth and
        # confident errors marked.
        fig = plots.comparison_maps(comparison, data, level=level)
        fig.savefig(out / "maps.png", dpi=120)
    if data.p_true_test is not None:
        # Coverage needs the true probabilities: simulated data only.
        fig = plots.coverage_plot(reports)
        fig.savefig(out / "coverage.png", dpi=120)
    fig = plots.risk_coverage_plot(reports)
    fig.savefig(out / "risk_coverage.png", dpi=120)
    for name, report in reports.items():
        fig = plots.reliability_diagram(report)
        fig.savefig(out / f"reliability_{name}.png", dpi=120)
        if name in mapped:
            fig = plots.hsi_maps(report, data, level=level)
            fig.savefig(out / f"maps_{name}.png", dpi=120)
    if comparison is not None and comparison.shift is not None:
        from uqzoo import shift as under_shift
        first = next(iter(reports.values()))
        for key in under_shift.headline_keys(first.to_dict(), first.levels):
            # One figure per metric: clean and mean ± sd under each perturbation.
            fig = plots.shift_errorbars(reports, key)
            fig.savefig(out / f"shift_{key}.png", dpi=120)
    if comparison is not None and comparison.fidelity:
        # Closeness to the reference, per method but the reference's own row.
        reference = comparison.settings.reference
        shown = {n: f for n, f in comparison.fidelity.items() if n != reference.row}
        for name, fid in shown.items():
            plots.fidelity_plot(fid).savefig(out / f"fidelity_{name}.png", dpi=120)
        if shown and mapped:
            plots.fidelity_maps(shown, data).savefig(out / "fidelity_maps.png", dpi=120)


def _cmd_fit(args) -> int:
    from uqzoo import methods as registry
    from uqzoo.io import check_output_file
    # before the fit, not after it
    check_output_file(args.out, what="--out", overwrite=args.overwrite)
    data = _load_data(args)
    post = registry.fit(args.method, _spec(args, data), data, seed=args.seed,
                        progress_bar=not args.no_progress,
                        **_parse_options(args.set, "--set"))
    _save_posterior(post, args)
    print(f"{post!r}\nsaved to {args.out}")
    return 0


def _save_posterior(post, args) -> None:
    from uqzoo.io import save_posterior
    # errors name --out and --overwrite, the flags the user types
    save_posterior(post, args.out, overwrite=args.overwrite, what="--out")


def _cmd_evaluate(args) -> int:
    from uqzoo.evaluate import evaluate
    from uqzoo.io import check_output_file, write_file_atomically
    from uqzoo.posterior import load_posterior
    if args.out is not None:
        check_output_file(args.out, what="--out", example="metrics.csv",
                          overwrite=args.overwrite)
    data = _load_data(args)
    model = None
    if args.model is not None:
        from uqzoo.models import from_file
        model = from_file(args.model, data.n_features, data.n_classes, what="--model")
    post = load_posterior(args.posterior, model=model)
    report = evaluate(post, data, levels=_parse_levels(args.levels),
                      delta=check_delta(args.delta, "--delta"))
    print(report.summary())
    if args.out is not None:
        write_file_atomically(args.out, report.table.to_csv(index=False).encode(),
                              what="--out", overwrite=args.overwrite)
        print(f"wrote {args.out}")
    return 0


def _cmd_reference(args) -> int:
    from uqzoo.io import check_output_file
    from uqzoo.reference import reference_gate, reference_posterior

    # before the run, not after it
    check_output_file(args.out, what="--out", overwrite=args.overwrite)
    data = _load_data(args)
    with warnings.catch_warnings():
        # The gate's verdict is printed below; the warnings would repeat it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = reference_posterior(_spec(args, data), data, seed=args.seed,
                                  max_divergence_rate=args.max_divergence_rate,
                                  progress_bar=not args.no_progress,
                                  **_parse_options(args.set, "--set"))
    _save_posterior(ref, args)
    gate = reference_gate(ref)
    print(f"{ref!r}\nR-hat max {gate.rhat_max:.4f}, bulk ESS min {gate.ess_bulk_min:.0f}, "
          f"tail ESS min {gate.ess_tail_min:.0f}, divergence rate {gate.divergence_rate:.2g}")
    if gate.passed:
        print(f"reference gate met; saved to {args.out}")
        return 0
    print(f"reference gate NOT met -- saved to {args.out} but not usable as a reference:",
          *(f"  - {m}" for m in gate.messages), sep="\n")
    return 1


def _cmd_datasets(args) -> int:
    from uqzoo import datasets
    for name in datasets.names():
        print(name)
    return 0


def _cmd_methods(args) -> int:
    import dataclasses

    from uqzoo import methods as registry
    for name in registry.names():
        fields = ", ".join(f"{f.name}={f.default!r}" for f in
                           dataclasses.fields(registry.get(name).Config)
                           if f.default is not dataclasses.MISSING)
        print(f"{name}: {fields}")
    return 0


def _add_data_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default=DEFAULT_DATASET,
                   help=f"dataset name (uqzoo datasets; default {DEFAULT_DATASET}), or a file: "
                        "a hyperspectral cube (.mat, .npz, .npy, ENVI .hdr) or a .csv table")
    p.add_argument("--data-option", action="append", metavar="KEY=VALUE",
                   help="dataset option, e.g. n_train=2000 or, for a file, seed=1 (repeatable)")
    files = p.add_argument_group("data from a file (see uz.datasets.from_hsi / from_csv)")
    files.add_argument("--target", metavar="COLUMN", help=".csv: the label column")
    files.add_argument("--labels", metavar="FILE",
                       help="cube: the label image (.mat, .npz, .npy, .hdr, .png) or a "
                            "variable of the cube's file; default: found in the cube's file")
    files.add_argument("--cube-key", metavar="NAME", help="cube: variable of the cube")
    files.add_argument("--labels-key", metavar="NAME", help="cube: variable of the labels")
    files.add_argument("--unlabelled", metavar="VALUE",
                       help="cube: label of unlabelled pixels (default 0), or none when every "
                            "value is a class (a 0/1 target mask)")
    files.add_argument("--target-class", metavar="LABEL",
                       help="cube: target against background; a label value or a class name")
    files.add_argument("--class-names", metavar="A,B,...",
                       help="names of the classes, comma-separated, in label order")
    files.add_argument("--split", metavar="KIND",
                       help="cube: stratified (default: whole blocks, half of each class "
                            "testing, every class on both sides where the scene allows), "
                            "left-right, top-bottom, blocks, or random (optimistic: "
                            "neighbours of test pixels train); .csv: stratified (default) or "
                            "groups (whole groups of --group-column test)")
    files.add_argument("--group-column", metavar="COLUMN",
                       help=".csv: the column naming each row's group (a site, a hospital); "
                            "metrics are then also reported per test group")
    files.add_argument("--split-fraction", metavar="F",
                       help="cube: where left-right / top-bottom cut, as a share (default 0.5)")
    files.add_argument("--test-size", metavar="F",
                       help="share of each class that tests (stratified 0.5; blocks, random, "
                            ".csv 0.25)")
    files.add_argument("--block-size", metavar="N|H,W",
                       help="cube: block side(s) in pixels for --split blocks (default: 5×5 grid)")
    files.add_argument("--guard", metavar="PIXELS",
                       help="cube: training pixels this close to a test pixel are dropped "
                            "(default 2; spatial splits)")


def _no_mlp_options_with_model(args) -> None:
    """--model names the whole network: an MLP option beside it is a mistake."""
    given = [flag for flag, name, default in (("--hidden", "hidden", "10,10"),
                                              ("--activation", "activation", "tanh"),
                                              ("--prior-scale", "prior_scale", 1.0),
                                              ("--prior", "prior", "fan_in"))
             if getattr(args, name) != default]
    if given:
        raise UqzooError(f"--model sets the whole network; drop {', '.join(given)}")


def _add_net_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", metavar="FILE.py:FACTORY", help=_MODEL_HELP)
    p.add_argument("--hidden", default="10,10", help="hidden widths, e.g. 10,10 ('' = none)")
    p.add_argument("--activation", default="tanh", help="tanh, relu or sigmoid")
    p.add_argument("--prior-scale", type=float, default=1.0,
                   help="prior scale s (weights N(0, s²/fan_in), biases N(0, s²))")
    p.add_argument("--prior", default="fan_in",
                   help="fan_in (default) or iid (every weight and bias N(0, s²))")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _add_compare_args(p: argparse.ArgumentParser) -> None:
    _add_data_args(p)
    _add_net_args(p)
    p.add_argument("--methods", help="comma-separated method names; default: all")
    p.add_argument("--levels", default="0.8,0.95", help="credible levels, comma-separated")
    p.add_argument("--delta", type=float, default=0.2, help="HCS threshold δ in (0, 0.5)")
    p.add_argument("--full", action="store_true",
                   help="use each method's default settings instead of the quick ones")
    p.add_argument("--wide", action="store_true",
                   help="print every column of the table (results.csv holds them all)")
    p.add_argument("--num-draws", type=int, default=None, metavar="S",
                   help="common draw budget of the methods that draw freely "
                        "(default: uqzoo.comparison.compare.DEFAULT_NUM_DRAWS, 1000)")
    p.add_argument("--class-weight", default=None, metavar="balanced",
                   help="reweight the likelihood of every method so that each class carries "
                        "equal evidence (rare targets); probabilities then refer to a "
                        "balanced prior: see --target-prior")
    p.add_argument("--target-prior", default=None, metavar="train|P0,P1,...",
                   help="move every method's probabilities to this class prior before "
                        "evaluation (uz.prior_shift): 'train' (the training labels' "
                        "frequencies) or class probabilities")
    p.add_argument("--interval", choices=INTERVALS,
                   default="equal_tailed",
                   help="percentile intervals (default) or order-statistic intervals, "
                        "which keep their level for any number of draws")
    p.add_argument("--set", action="append", metavar="METHOD.OPTION=VALUE",
                   help="a method option, e.g. hmc.num_samples=1000 (repeatable)")
    p.add_argument("--perturb", action="append", metavar="FAMILY[:LO-HI]",
                   help="also evaluate on perturbed copies of the test set, e.g. "
                        "illumination:0.8-1.2, noise:20-40 (SNR dB), offset:-0.02-0.02; "
                        "families: illumination, offset, noise, band_dropout, spectral_shift, "
                        "gaussian_noise, missing_features (uz.perturb; repeatable)")
    p.add_argument("--copies", type=int, default=None, metavar="K",
                   help="perturbed copies per --perturb (default 10)")
    p.add_argument("--recalibrate", default=None, metavar="temperature|vector",
                   help="also evaluate every method after post-hoc recalibration "
                        "(uz.recalibrate), fitted on 20%% of the training data held out "
                        "(every method then trains on the other 80%%); rows "
                        "METHOD+temperature beside the originals")
    p.add_argument("--conformal", default=None, metavar="LEVEL",
                   help="also make split-conformal label sets at this level (e.g. 0.9) for "
                        "every method (uz.conformal), calibrated on 20%% of the training data "
                        "held out (every method then trains on the other 80%%), and judge them "
                        "beside each method's own sets: coverage, set size, worst-decile "
                        "conditional coverage where the truth is known")
    p.add_argument("--conformal-score", default=None, metavar="lac|aps",
                   help="nonconformity score of --conformal (default lac)")
    p.add_argument("--conformal-mondrian", action="store_true",
                   help="class-conditional (Mondrian) calibration of --conformal")
    p.add_argument("--label-noise", default=None, metavar="RATE",
                   help="flip this share of the training labels, in [0, 1), before every fit "
                        "(uz.datasets.with_label_noise, seeded from --seed); test labels and "
                        "truth stay clean")
    p.add_argument("--label-noise-kind", default=None, metavar="symmetric|class_conditional",
                   help="how --label-noise picks a new label: uniform over the other classes "
                        "(default) or class k to k + 1")
    p.add_argument("--reference", default=None, metavar="auto|none|hmc|PATH",
                   help="score every method's closeness to the exact posterior: 'auto' "
                        "(default) samples a gated reference posterior on data without true "
                        "probabilities when hmc is compared or HMC's time estimate of it is "
                        "at most 120 s (the verdict says when it does not); 'none' turns it "
                        "off; a reference written by `uqzoo reference --out PATH` on the same "
                        "data, "
                        "or 'hmc' (the comparison's own HMC fit: not independent of the hmc "
                        "row, and a reference only if it passes the gate, which the quick "
                        "settings' 2 chains never do: add --full or --set hmc.num_chains=4)")
    p.add_argument("--config", metavar="FILE.toml",
                   help="the whole run from a config file (see uqzoo.comparison.config); "
                        "--out DIR writes the resolved one as DIR/config.toml")
    p.add_argument("--out", help="folder for report.html, the table (results.csv), the "
                                 "resolved config.toml, posteriors (.nc) and plots; new or "
                                 "empty, its parent must exist")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing non-empty --out folder (as a whole, at the end)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="uqzoo", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("compare", help="fit methods on a dataset and compare their UQ",
                       epilog="exit status: 0 all fitted; 1 a method's fit failed (its row "
                              "says why; the others are reported); 2 a bad argument; "
                              "130 interrupted")
    _add_compare_args(p)
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("fit", help="fit one method and save its posterior (.nc)")
    p.add_argument("method")
    _add_data_args(p)
    _add_net_args(p)
    p.add_argument("--set", action="append", metavar="OPTION=VALUE", help="a method option")
    p.add_argument("--out", required=True, help="path of the posterior file (.nc)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing file at --out (a symbolic link is always refused)")
    p.set_defaults(func=_cmd_fit)

    p = sub.add_parser("evaluate", help="evaluate a saved posterior on a dataset's test split")
    p.add_argument("posterior")
    _add_data_args(p)
    p.add_argument("--model", metavar="FILE.py:FACTORY",
                   help="the network a posterior of your own model was fitted with; " +
                        _MODEL_HELP.split(": ", 1)[1].split("; replaces")[0])
    p.add_argument("--levels", default="0.5,0.8,0.9,0.95")
    p.add_argument("--delta", type=float, default=0.2)
    p.add_argument("--out", help="write the tidy metrics table to this CSV")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing file at --out (a symbolic link is always refused)")
    p.set_defaults(func=_cmd_evaluate)

    from uqzoo.reference import DIVERGENCE_RATE_MAX, REFERENCE_OPTIONS  # light: no torch
    p = sub.add_parser(
        "reference", help="sample a gated HMC reference posterior and save it (.nc)",
        description="Long multi-chain NUTS with the reference gate (R-hat <= 1.01, bulk and "
                    "tail ESS >= 400, divergences); exit status 1 when the gate is not met "
                    "(the file is still written, marked as no reference).")
    _add_data_args(p)
    _add_net_args(p)
    p.add_argument("--set", action="append", metavar="OPTION=VALUE",
                   help=f"an HMC option; defaults {REFERENCE_OPTIONS}")
    p.add_argument("--max-divergence-rate", type=float, default=DIVERGENCE_RATE_MAX,
                   help=f"divergent kept transitions allowed per draw (default "
                        f"{DIVERGENCE_RATE_MAX:g})")
    p.add_argument("--out", required=True, help="path of the reference file (.nc)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing file at --out (a symbolic link is always refused)")
    p.set_defaults(func=_cmd_reference)

    sub.add_parser("datasets", help="list dataset names").set_defaults(func=_cmd_datasets)
    sub.add_parser("methods", help="list methods and their options").set_defaults(
        func=_cmd_methods)

    from uqzoo.study.cli import add_study_parser  # study run | status | export
    add_study_parser(sub)
    return parser


# uqzoo's own notices: printed as one line each, never raised, even where the
# process turns warnings into errors (as the tests do).
_NOTICES = (SlowFitWarning, DataWarning, ConvergenceWarning)


def _one_line(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: ``uqzoo: Name: message``, no source line."""
    text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    print(f"uqzoo: {category.__name__}: {text}", file=sys.stderr)


@contextlib.contextmanager
def _notices_as_lines():
    """Within: every warning printed by :func:`_one_line`, uqzoo's own notices always."""
    with warnings.catch_warnings():
        for category in _NOTICES:
            warnings.filterwarnings("default", category=category)
        warnings.showwarning = _one_line
        yield


class _Interrupted(KeyboardInterrupt):
    """A termination signal (SIGTERM), unwound as Ctrl-C is."""


def _on_signal(signum, frame) -> None:
    """The first SIGINT or SIGTERM: unwind (removing staged outputs on the way); any
    further one is ignored, so that it cannot break that clean-up half-way."""
    import signal
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, signal.SIG_IGN)
    raise KeyboardInterrupt if signum == signal.SIGINT else _Interrupted


def _install_signal_handlers() -> bool:
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return False
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, _on_signal)
    return True


def _exit_now(status: int) -> None:
    """End the process at once after an interrupt: the interpreter's own shutdown
    (JAX/XLA threads, atexit handlers) is what crashed or printed tracebacks when a
    second signal arrived during it; every output is complete or removed by now."""
    import os
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 on bad input, 130 on Ctrl-C).

    Run as the ``uqzoo`` command (``argv`` None), a first SIGINT or SIGTERM
    unwinds the command -- staged outputs are removed -- with further signals
    ignored, prints one line and ends the process at once with 130 (SIGINT) or
    143 (SIGTERM), skipping the interpreter's shutdown.
    """
    command_line = argv is None and _install_signal_handlers()
    try:
        status = _main(argv)
    except KeyboardInterrupt as exc:
        # Outputs are staged, so nothing half-written is left; 130 = 128 + SIGINT,
        # the shell's convention for a run stopped by Ctrl-C (143: SIGTERM).
        print("uqzoo: interrupted", file=sys.stderr)
        status = 143 if isinstance(exc, _Interrupted) else 130
        if command_line:
            _exit_now(status)
    return status


# Commands that fit or evaluate models; the others never start JAX.
_COMPUTING_COMMANDS = frozenset({"compare", "fit", "evaluate", "reference"})


def cpu_devices_for_cli(environ: Mapping[str, str], configured: int,
                        cores: int) -> int | None:
    """The JAX CPU devices the ``uqzoo`` command asks for, or None to leave JAX's setting.

    One device per core (``cores``, those the process may run on), so that
    HMC's chains run in parallel (JAX runs one computation at a time per CPU
    device); None where the user chose already -- ``configured`` is JAX's
    ``jax_num_cpu_devices`` (-1 unless set, e.g. by ``JAX_NUM_CPU_DEVICES``),
    or ``XLA_FLAGS`` holds ``--xla_force_host_platform_device_count`` -- or
    where there is one core.

    Examples
    --------
    >>> cpu_devices_for_cli({}, -1, 2)
    2
    >>> cpu_devices_for_cli({"XLA_FLAGS": "--xla_force_host_platform_device_count=1"}, -1, 2)
    >>> cpu_devices_for_cli({}, 3, 2)
    >>> cpu_devices_for_cli({}, -1, 1)
    """
    if configured != -1 or "xla_force_host_platform_device_count" in environ.get("XLA_FLAGS", ""):
        return None
    return cores if cores > 1 else None


def _use_every_core() -> None:
    """Give JAX one CPU device per core for this process (see :func:`cpu_devices_for_cli`).

    Only the ``uqzoo`` command calls this, before JAX computes anything: a
    process-wide setting the library must not make for a Python caller.
    """
    import jax

    from uqzoo.predictive import default_workers

    wanted = cpu_devices_for_cli(os.environ, jax.config.values["jax_num_cpu_devices"],
                                  default_workers())
    if wanted is not None:
        # JAX refuses the setting once a computation has run; then keep its devices.
        with contextlib.suppress(RuntimeError):
            jax.config.update("jax_num_cpu_devices", wanted)


def _main(argv: list[str] | None) -> int:
    try:
        parser = build_parser()
        owns_process = argv is None
        argv = sys.argv[1:] if argv is None else list(argv)
        args = parser.parse_args(argv)
        if owns_process and args.command in _COMPUTING_COMMANDS:
            _use_every_core()
        args.argv = argv              # compare --config tells given flags from defaults
        if args.command is None:
            parser.print_help()
            return 0
        with _notices_as_lines():
            return args.func(args)
    except UqzooError as exc:  # InvalidInputError, FileFormatError, OutputPathError, ...
        # One line: messages may quote HDF5 or OS errors that span several.
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"uqzoo: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
