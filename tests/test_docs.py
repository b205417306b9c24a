"""The examples a user reads run: README.md's and the user guide's.

Every Python block of README.md and of each page of docs/guide is executed, in
the page's order and in one namespace per page, in a temporary folder that
holds the user files the pages read (a CSV table, a cube, its mask and a label
image). Every ``uqzoo`` command line of their shell blocks runs too, in the
same folder after the Python block before it, with small options where the
page's data would make it slow (smaller simulated data; the first of the
methods a line names, or one cheap method where it names none). The README's
demo table is written by docs/readme_demo.py; here only its columns are
checked against those the command prints, without running the demo.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT))
                              for p in (ROOT / "docs" / "guide").glob("*.md"))]
# Pages whose examples fit and compare several methods and run a study take 15-30 s
# each on two busy cores: they run with the long tests (`make test-slow`, in CI too).
SLOW_PAGES = {"docs/guide/comparing.md", "docs/guide/own-data.md", "docs/guide/own-network.md",
              "docs/guide/studies.md"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)

# Data options that keep an example's command quick; what the line asks for stays.
SMALL_DATA = {"sim-teacher": ["n_train=300", "n_test=500"],
              "hsi-sim": ["size=20", "n_bands=8"]}
# A `compare` line that names no methods compares all eleven, HMC included; one
# that names several runs here with the first (the others run in the Python examples).
CHEAP_METHOD = "laplace"
# Lines that need what a test machine has not, with the reason.
NOT_RUN = {"--address": "needs a running Dask scheduler"}


def blocks(page: str) -> list[tuple[str, str]]:
    """The fenced code blocks of a page: (language, code), in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def command_lines(code: str) -> list[str]:
    """The ``uqzoo`` command lines of a shell block (a trailing backslash continues a line)."""
    joined = code.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip().startswith("uqzoo ")]


def small(line: str) -> list[str] | None:
    """The arguments of a command line with the small options added; None: not run here."""
    if any(marker in line for marker in NOT_RUN):
        return None
    args = shlex.split(line, comments=True)[1:]
    command = args[0]
    if command in ("compare", "fit", "reference"):
        dataset = args[args.index("--dataset") + 1] if "--dataset" in args else "sim-teacher"
        for option in SMALL_DATA.get(dataset, []):
            args += ["--data-option", option]
        args.append("--no-progress")
    if command == "compare":
        if "--methods" in args:
            at = args.index("--methods") + 1
            args[at] = args[at].split(",")[0]
        elif "--config" not in args:
            args += ["--methods", CHEAP_METHOD]
        if "--out" in args:
            args.append("--overwrite")        # two examples of a page may share a folder
    return args


def write_user_files(folder: Path) -> None:
    """The files the examples read: measurements.csv, scene.npz, mask.npy, classes.npy,
    and the repository's examples/ (the model files the pages name, as from a checkout)."""
    shutil.copytree(ROOT / "examples", folder / "examples", dirs_exist_ok=True)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 3))
    label = np.where(X[:, 0] + 0.5 * rng.normal(size=240) > 0, "pass", "fail")
    rows = [f"{a:.4f},{b:.4f},{c:.4f},{y}" for (a, b, c), y in zip(X, label, strict=True)]
    (folder / "measurements.csv").write_text("f1,f2,f3,label\n" + "\n".join(rows) + "\n")
    H = W = 30
    classes = rng.integers(1, 4, size=(H, W))            # three classes, 0 = unlabelled
    classes[rng.random((H, W)) < 0.1] = 0
    mask = (rng.random((H, W)) < 0.15).astype(np.int64)
    signature = rng.normal(size=8)
    cube = rng.normal(size=(H, W, 8)) + mask[..., None] * signature + classes[..., None] * 0.3
    np.savez(folder / "scene.npz", cube=cube)
    np.save(folder / "mask.npy", mask)
    np.save(folder / "classes.npy", classes)


@pytest.mark.parametrize("page", [pytest.param(page, marks=pytest.mark.slow)
                                  if page in SLOW_PAGES else page for page in PAGES])
def test_the_examples_of_the_page_run(page, tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from uqzoo.cli import main

    monkeypatch.chdir(tmp_path)
    write_user_files(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    ran = 0
    for number, (language, code) in enumerate(blocks(page)):
        if language == "python":
            exec(compile(code, f"{page}, block {number}", "exec"), namespace)
            ran += 1
        elif language == "bash":
            for line in command_lines(code):
                args = small(line)
                if args is None:
                    continue
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    status = main(args)
                assert status == 0, f"{page}: `{line}` exited with {status}"
                ran += 1
        plt.close("all")
    assert ran, f"{page} has no example"


def test_every_page_of_the_guide_is_tested_and_in_the_site():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    guide = sorted(p.name for p in (ROOT / "docs" / "guide").glob("*.md"))
    assert guide, "docs/guide is empty"
    for name in guide:
        assert f"guide/{name}" in nav, f"docs/guide/{name} is not in mkdocs.yml's nav"


def test_no_command_line_is_left_out_but_for_its_reason():
    left_out = [line for page in PAGES for language, code in blocks(page)
                if language == "bash" for line in command_lines(code) if small(line) is None]
    assert all("--address" in line for line in left_out), left_out


class _EveryColumn:
    """A stand-in comparison table that has every column asked for (one row of zeros)."""

    class _Columns:
        def __contains__(self, key: object) -> bool:
            return True

    columns = _Columns()
    index = ("m",)

    def __len__(self) -> int:
        return 1

    def __getitem__(self, key: str):
        import pandas as pd

        return pd.Series([0], index=list(self.index))


def test_the_readme_demo_table_has_the_columns_compare_prints():
    """The header of the README's demo table is the one `uqzoo compare` prints for its data."""
    from uqzoo.cli import narrow_table

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- demo:start -->")[1].split("<!-- demo:end -->")[0]
    shown = [line for line in block.splitlines() if line.startswith("method ")]
    assert len(shown) == 1, "README.md: the demo block holds no table; run docs/readme_demo.py"
    # the demo's data have true probabilities and two classes; its levels are the CLI default
    printed = narrow_table(_EveryColumn(), (0.8, 0.95)).splitlines()[0]
    assert shown[0].split() == printed.split()
