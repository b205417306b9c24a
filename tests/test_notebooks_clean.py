"""The committed notebooks carry no outputs, and CI executes every one of them.

Executing them is nbmake's job (``--nbmake`` in pytest's addopts, ``notebooks``
in its testpaths); this checks what git holds, reading the files as plain JSON.
"""

import json
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXPECTED = ["01_quickstart.ipynb", "02_compare_methods_hsi.ipynb", "03_coverage_study.ipynb"]
CI_WARNINGS_HOOK = "_ci_warnings.apply()"


def test_the_notebooks_are_there():
    assert [p.name for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_no_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["nbformat"] == 4
    for index, cell in enumerate(nb["cells"]):
        where = f"{path.name} cell {index}"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{where} has outputs: strip them before committing"
            assert cell["execution_count"] is None, f"{where} has an execution count"
        assert "attachments" not in cell, f"{where} has attachments"
    assert "widgets" not in nb["metadata"], f"{path.name} stores widget state"


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
