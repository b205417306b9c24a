"""Run the README's demo (`uqzoo compare`, what `make demo` runs); write its table into README.md.

The README shows the printed table and the verdict's first sentence between the markers
``<!-- demo:start -->`` and ``<!-- demo:end -->``; this script replaces what
lies between them with what the command prints now, so the README never shows
a pasted, outdated table. tests/test_docs.py checks that the table's columns
are those the command prints (without running the demo).

Usage (from the repository root; a few minutes, longest for HMC)::

    python docs/readme_demo.py            # rewrite README.md
    python docs/readme_demo.py --check    # only print the new block
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import sys

START = "<!-- demo:start -->"
END = "<!-- demo:end -->"
# The demo exactly as `make demo` runs it, without progress bars.
DEMO_ARGS = ["compare", "--no-progress"]
README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def demo_output() -> str:
    """What ``uqzoo compare`` prints: its table and the verdict's first sentence, as printed."""
    import textwrap

    import uqzoo.comparison.verdict as verdict_module
    from uqzoo.cli import TABLE_WIDTH, _use_every_core, main

    verdicts = []
    original = verdict_module.verdict

    def recording(*args, **kwargs):
        verdicts.append(original(*args, **kwargs))
        return verdicts[-1]

    # main(argv) called from Python leaves JAX's devices alone; the `uqzoo` command
    # gives JAX a device per core, and so does this script, to show what it prints.
    _use_every_core()
    buffer = io.StringIO()
    verdict_module.verdict = recording          # the command looks it up when it prints
    try:
        with contextlib.redirect_stdout(buffer):
            status = main(DEMO_ARGS)
    finally:
        verdict_module.verdict = original
    if status != 0:
        raise SystemExit(f"uqzoo {' '.join(DEMO_ARGS)} exited with status {status}")
    lines = buffer.getvalue().splitlines()
    # The first lines name the data and the methods; the table follows the first blank line.
    start = lines.index("") + 1
    table = lines[start:lines.index("", start)]
    first = textwrap.fill(verdicts[-1].sentences[0], width=TABLE_WIDTH)
    if first not in buffer.getvalue():
        raise SystemExit("the verdict's first sentence is not printed as expected")
    return "\n".join(table) + "\n\n" + first + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the demo markers replaced by ``block`` in a code fence."""
    head, sep, rest = text.partition(START)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"README.md lacks the markers {START} and {END}")
    return f"{head}{START}\n```text\n{block}```\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="print the block, change nothing")
    args = parser.parse_args(argv)
    block = demo_output()
    if args.check:
        sys.stdout.write(block)
        return 0
    README.write_text(replace_block(README.read_text(encoding="utf-8"), block), encoding="utf-8")
    print(f"rewrote the demo table in {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
