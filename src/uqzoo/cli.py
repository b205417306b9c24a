"""``uqzoo``: the command line.

    uqzoo compare                      # all methods on the embedded default data
    uqzoo compare --dataset hsi-sim --methods hmc,ensemble,laplace --out results/
    uqzoo fit ensemble --dataset breast-cancer --set num_members=10 --out post.nc
    uqzoo evaluate post.nc --dataset breast-cancer
    uqzoo datasets | uqzoo methods

Bad arguments end with a one-line error and exit status 2, never a traceback.
Every ``--out`` is checked before any data is loaded or any method fitted (its
folder exists and is writable, a file is not a folder and a folder not a file,
the name fits the file system), and written atomically: ``compare --out DIR``
fills a temporary sibling folder and renames it to DIR at the end, so an
interrupted or failed run leaves nothing half-written; an existing non-empty DIR
is replaced only with ``--overwrite``. Ctrl-C ends with one line and exit
status 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from uqzoo.errors import UqzooError

DEFAULT_DATASET = "sim-teacher"


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
        return tuple(float(t) for t in text.split(","))
    except ValueError:
        raise UqzooError(
            f"--levels must be comma-separated numbers in (0, 1), got {text!r}") from None


def _load_data(args):
    from uqzoo import datasets
    return datasets.load(args.dataset, **_parse_options(args.data_option, "--data-option"))


def _spec(args, data):
    from uqzoo.spec import MLPSpec
    try:
        hidden = tuple(int(h) for h in args.hidden.split(",") if h.strip())
    except ValueError:
        raise UqzooError(
            f"--hidden must be comma-separated widths like 10,10, got {args.hidden!r}") from None
    return MLPSpec(data.n_features, data.n_classes, hidden=hidden, activation=args.activation,
                   prior_scale=args.prior_scale, dropout=args.dropout)


def _cmd_compare(args) -> int:
    from uqzoo import methods as registry
    from uqzoo.compare import QUICK_CONFIGS, compare, format_table
    from uqzoo.io import check_output_folder, staged_folder

    if args.out:
        check_output_folder(args.out, overwrite=args.overwrite, what="--out")
    data = _load_data(args)
    names = args.methods.split(",") if args.methods else registry.names()
    configs: dict[str, dict[str, Any]] = {}
    for name in names:
        configs[name] = {} if args.full else dict(QUICK_CONFIGS.get(name, {}))
    for key, value in _parse_options(args.set, "--set").items():
        method, dot, option = key.partition(".")
        if not dot or method not in names:
            raise UqzooError(f"--set must look like method.option=value for a compared "
                             f"method ({', '.join(names)}), got {key!r}")
        configs[method][option] = value
    print(f"uqzoo compare: {data!r}")
    print(f"methods: {', '.join(names)}  (seed {args.seed}; "
          f"{'default' if args.full else 'quick'} settings)")
    result = compare(data, names, spec=_spec(args, data), seed=args.seed,
                     levels=_parse_levels(args.levels), delta=args.delta, configs=configs,
                     progress_bar=not args.no_progress)
    print()
    print(format_table(result.table))
    if data.p_true_test is not None:
        print("\ncoverage@L: share of test points whose level-L interval holds the true "
              "probability (nominal L);\ninterval_width@L: mean width; hcs_proportion@L: "
              f"share in the High Confidence Set (δ = {args.delta:g}).")
    for name, report in result.reports.items():
        if report.converged is False:
            print(f"\nWARNING: {name} did not converge: {'; '.join(report.warnings)}")
    if args.out:
        # Written into a temporary sibling folder that becomes --out only when
        # complete: Ctrl-C or a full disk here leaves no half-written results.
        with staged_folder(args.out, overwrite=args.overwrite, what="--out") as staging:
            result.table.to_csv(staging / "comparison.csv")
            for name, post in result.posteriors.items():
                post.save(staging / f"{name}.nc")
            _save_plots(result.reports, data, staging)
        print(f"\nwrote {args.out}: comparison.csv, one posterior .nc per method, and plots")
    return 0


def _save_plots(reports, data, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from uqzoo import plots
    fig = plots.coverage_plot(reports)
    fig.savefig(out / "coverage.png", dpi=120)
    fig = plots.risk_coverage_plot(reports)
    fig.savefig(out / "risk_coverage.png", dpi=120)
    for name, report in reports.items():
        fig = plots.reliability_diagram(report)
        fig.savefig(out / f"reliability_{name}.png", dpi=120)
        if report.coords is not None and report.image_shape is not None:
            fig = plots.hsi_maps(report, data)
            fig.savefig(out / f"maps_{name}.png", dpi=120)


def _cmd_fit(args) -> int:
    from uqzoo import methods as registry
    from uqzoo.io import check_output_file
    check_output_file(args.out, what="--out")      # before the fit, not after it
    data = _load_data(args)
    post = registry.fit(args.method, _spec(args, data), data, seed=args.seed,
                        progress_bar=not args.no_progress,
                        **_parse_options(args.set, "--set"))
    post.save(args.out)
    print(f"{post!r}\nsaved to {args.out}")
    return 0


def _cmd_evaluate(args) -> int:
    from uqzoo.evaluate import evaluate
    from uqzoo.io import check_output_file, load_posterior, write_file_atomically
    if args.out:
        check_output_file(args.out, what="--out")
    post = load_posterior(args.posterior)
    data = _load_data(args)
    report = evaluate(post, data, levels=_parse_levels(args.levels), delta=args.delta)
    print(report.summary())
    if args.out:
        write_file_atomically(args.out, report.table.to_csv(index=False).encode(),
                              what="--out")
        print(f"wrote {args.out}")
    return 0


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
                   help=f"dataset name (uqzoo datasets); default {DEFAULT_DATASET}")
    p.add_argument("--data-option", action="append", metavar="KEY=VALUE",
                   help="dataset option, e.g. n_train=2000 (repeatable)")


def _add_net_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hidden", default="10,10", help="hidden widths, e.g. 10,10 ('' = none)")
    p.add_argument("--activation", default="tanh", help="tanh, relu or sigmoid")
    p.add_argument("--prior-scale", type=float, default=1.0, help="prior sd of every weight")
    p.add_argument("--dropout", type=float, default=0.1,
                   help="dropout rate of hidden units (used by mc_dropout only)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="uqzoo", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")

    p = sub.add_parser("compare", help="fit methods on a dataset and compare their UQ")
    _add_data_args(p)
    _add_net_args(p)
    p.add_argument("--methods", help="comma-separated method names; default: all")
    p.add_argument("--levels", default="0.8,0.95", help="credible levels, comma-separated")
    p.add_argument("--delta", type=float, default=0.2, help="HCS threshold δ in (0, 0.5)")
    p.add_argument("--full", action="store_true",
                   help="use each method's default settings instead of the quick ones")
    p.add_argument("--set", action="append", metavar="METHOD.OPTION=VALUE",
                   help="a method option, e.g. hmc.num_samples=1000 (repeatable)")
    p.add_argument("--out", help="folder for the table (CSV), posteriors (.nc) and plots; "
                                 "new or empty, its parent must exist")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing non-empty --out folder (as a whole, at the end)")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("fit", help="fit one method and save its posterior (.nc)")
    p.add_argument("method")
    _add_data_args(p)
    _add_net_args(p)
    p.add_argument("--set", action="append", metavar="OPTION=VALUE", help="a method option")
    p.add_argument("--out", required=True, help="path of the posterior file (.nc)")
    p.set_defaults(func=_cmd_fit)

    p = sub.add_parser("evaluate", help="evaluate a saved posterior on a dataset's test split")
    p.add_argument("posterior")
    _add_data_args(p)
    p.add_argument("--levels", default="0.5,0.8,0.9,0.95")
    p.add_argument("--delta", type=float, default=0.2)
    p.add_argument("--out", help="write the tidy metrics table to this CSV")
    p.set_defaults(func=_cmd_evaluate)

    sub.add_parser("datasets", help="list dataset names").set_defaults(func=_cmd_datasets)
    sub.add_parser("methods", help="list methods and their options").set_defaults(
        func=_cmd_methods)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 on bad input, 130 on Ctrl-C)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        return args.func(args)
    except UqzooError as exc:  # InvalidInputError, FileFormatError, OutputPathError, ...
        # One line: messages may quote HDF5 or OS errors that span several.
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"uqzoo: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Outputs are staged, so nothing half-written is left; 130 = 128 + SIGINT,
        # the shell's convention for a run stopped by Ctrl-C.
        print("uqzoo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
