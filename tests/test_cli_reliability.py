"""Hostile inputs that once ended in a traceback, a hang or a silent answer: one line, exit 2."""

import time
from pathlib import Path

import pytest

from uqzoo.cli import main

SMALL_STUDY = Path(__file__).parents[1] / "experiments" / "examples" / "small.toml"


@pytest.mark.parametrize("address, needle", [
    ("bogus", "must look like tcp://HOST:PORT"),
    ("tcp://", "must look like tcp://HOST:PORT"),
    ("tcp://host:notaport", "port 'notaport' must be an integer in 1..65535"),
    ("udp://1.2.3.4:5", "scheme 'udp' is not one Dask listens on"),
])
def test_a_malformed_dask_address_is_one_line_before_any_connection(address, needle,
                                                                    tmp_path, capsys):
    start = time.perf_counter()
    code = main(["study", "run", str(SMALL_STUDY), "--store", str(tmp_path / "s.sqlite"),
                 "--executor", "dask", "--address", address, "--no-progress"])
    assert code == 2 and time.perf_counter() - start < 30
    err = capsys.readouterr().err
    assert err.startswith("uqzoo: error:") and needle in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []          # no store made either
