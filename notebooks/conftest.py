"""Notebook 04 fits twelve methods on two networks (a few minutes on two cores): it
runs with the long tests (`make test-slow`, CI's second step), like the slow pages
of the user guide; the others run with `make test`."""

import pytest

SLOW_NOTEBOOKS = {"04_your_own_network.ipynb"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in SLOW_NOTEBOOKS:
            item.add_marker(pytest.mark.slow)
