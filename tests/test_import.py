"""``import uqzoo`` and ``uqzoo --help`` are light: heavy dependencies load on use.

Checked by which modules a fresh interpreter has loaded, not by timing (a
timed test is noise on a shared machine; the time is in the README).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "jax", "numpyro", "matplotlib", "pandas", "xarray", "scipy", "arviz",
         "h5netcdf", "sklearn")


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    return {m.split(".")[0] for m in json.loads(out.stdout.strip().splitlines()[-1])}


def test_import_uqzoo_loads_no_heavy_dependency():
    assert not _loaded_after("import uqzoo") & set(HEAVY)


def test_cli_help_loads_no_heavy_dependency():
    code = ("import contextlib, io, uqzoo.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    uqzoo.cli.main(['--help'])")
    assert not _loaded_after(code) & set(HEAVY)


@pytest.mark.parametrize("name", ["MLPSpec", "fit", "evaluate", "datasets", "Posterior",
                                  "summarize", "FileFormatError", "plots"])
def test_public_names_resolve_on_first_use(name):
    import uqzoo
    assert name in dir(uqzoo) and name in uqzoo.__all__
    assert getattr(uqzoo, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    import uqzoo
    with pytest.raises(AttributeError, match="no_such_name"):
        uqzoo.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", ["evaluate", "fidelity"])
def test_functions_named_like_their_module_stay_functions(name):
    """Importing the submodule first must not make ``uz.evaluate`` the module."""
    code = (f"import uqzoo.{name}\nimport uqzoo\n"
            f"assert callable(uqzoo.{name}) and uqzoo.{name}.__name__ == {name!r}, "
            f"uqzoo.{name}")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
