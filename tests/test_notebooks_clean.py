"""The committed notebooks are executed, small and show the verdict; CI executes every one.

A reader on GitHub sees what git holds, so the notebooks are committed with
their outputs: tables, figures and the verdict, run top to bottom with fixed
seeds (``jupyter execute --inplace``). Executing them again is nbmake's job in
CI (``--nbmake`` in pytest's addopts, ``notebooks`` in its testpaths); this
checks what git holds, reading the files as plain JSON.
"""

import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXPECTED = ["01_quickstart.ipynb", "02_compare_methods_hsi.ipynb", "03_coverage_study.ipynb",
            "04_your_own_network.ipynb"]
CI_WARNINGS_HOOK = "_ci_warnings.apply()"
# Each notebook's figures at their documented sizes stay well under this; a
# larger file means an output that should not be committed (a huge table, a
# high-dpi figure, widget state).
MAX_BYTES = 1_000_000
# The notebooks that compare methods print the verdict.
WITH_VERDICT = ["02_compare_methods_hsi.ipynb", "03_coverage_study.ipynb",
                "04_your_own_network.ipynb"]


def test_the_notebooks_are_there():
    assert [p.name for p in NOTEBOOKS] == EXPECTED


def _code_cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    return nb, [c for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_executed_in_order_and_small(path):
    nb, cells = _code_cells(path)
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size} bytes"
    # run top to bottom in one kernel: counts 1, 2, ..., n
    assert [c["execution_count"] for c in cells] == list(range(1, len(cells) + 1)), \
        f"{path.name}: execute it top to bottom (jupyter execute --inplace)"
    images = 0
    for index, cell in enumerate(nb["cells"]):
        where = f"{path.name} cell {index}"
        assert "attachments" not in cell, f"{where} has attachments"
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", f"{where} raised {output.get('ename')}"
            if output["output_type"] == "stream":
                # a warning or a progress bar would show as stderr
                assert output["name"] == "stdout", f"{where} wrote to stderr: {output['text']}"
            images += "image/png" in output.get("data", {})
    assert images >= 1, f"{path.name} shows no figure"
    assert "widgets" not in nb["metadata"], f"{path.name} stores widget state"


@pytest.mark.parametrize("name", WITH_VERDICT)
def test_the_verdict_is_visible(name):
    _, cells = _code_cells(ROOT / "notebooks" / name)
    cell = next(c for c in cells if "verdict(" in "".join(c["source"]))
    text = "".join(t for o in cell["outputs"] if o["output_type"] == "stream"
                   for t in o["text"])
    first = text.strip().splitlines()[0]
    assert first.endswith(".") and len(first.split()) >= 4, first


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_warnings_are_errors_when_ci_runs_the_notebook(path):
    """The first code cell asks nbmake to install pytest's warning filters in the kernel."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    hook = first["metadata"].get("nbmake", {}).get("post_cell_execute", [])
    assert CI_WARNINGS_HOOK in "\n".join(hook)


def test_pytest_runs_the_notebooks():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pytest_options = options["tool"]["pytest"]["ini_options"]
    assert "notebooks" in pytest_options["testpaths"]
    assert "--nbmake" in pytest_options["addopts"].split()
    assert any(dep.startswith("nbmake") for dep in
               options["project"]["optional-dependencies"]["test"])


def test_ci_warning_filters_are_pytests_plus_the_kernel_only_ones(monkeypatch):
    import warnings

    monkeypatch.syspath_prepend(str(ROOT / "notebooks"))
    import _ci_warnings

    with warnings.catch_warnings():
        entries = _ci_warnings.apply()
        pytest_entries = tomllib.loads((ROOT / "pyproject.toml").read_text(
            encoding="utf-8"))["tool"]["pytest"]["ini_options"]["filterwarnings"]
        assert entries == [*pytest_entries, *_ci_warnings.KERNEL_ONLY]
        with pytest.raises(UserWarning, match="a notebook's own warning"):
            warnings.warn("a notebook's own warning", UserWarning, stacklevel=1)
        from tqdm import TqdmWarning
        warnings.warn("IProgress not found. Please update jupyter", TqdmWarning, stacklevel=1)
