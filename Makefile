# The two set-up commands of the README:
#   make demo   install into .venv and compare the UQ methods on the embedded default data
#   make test   install into .venv and run the test suite (what .ci/run calls)
# .ci/run then runs `make test-slow`: the long statistical runs marked `slow`.
# Both start from nothing on a fresh machine; PYTHON picks the interpreter (>= 3.11).

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
# torch first, pinned: the CPU wheel. An unpinned torch (or a package that
# depends on it, installed first) would pull a multi-GB CUDA build.
TORCH   = torch==2.13.0

.PHONY: install demo test test-slow test-all lint bench notebooks docs clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e ".[test,pyro]"
	@touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/uqzoo compare

# Every test but the long statistical runs (marked `slow`: samplers against
# quadrature and against NumPyro, interval coverage over replicates, false-alarm
# rates, runs on a real scene), which `make test-slow` runs and CI runs after
# `make test`, on the same two workers.
test: install lint
	$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow"

test-slow: install
	$(PY) -m pytest -q -n 2 --dist loadgroup -m slow

test-all: install lint
	$(PY) -m pytest -q -n 2 --dist loadgroup

# ruff (pyflakes, pycodestyle, isort, bugbear, pyupgrade, numpy rules) and mypy
# over the package, whose public signatures ship typed (py.typed).
lint: install
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy

# Execute the notebooks in place, top to bottom with their fixed seeds, so that
# git holds their tables, figures and verdicts (tests/test_notebooks_clean.py
# checks it; CI executes them again through nbmake). Run after any change that
# alters what they show, and commit the result.
notebooks: install
	$(VENV)/bin/jupyter execute --inplace --kernel_name=python3 notebooks/*.ipynb

# The documentation site (user guide and the API reference generated from the
# docstrings) into site/, warnings as errors: a broken link or a docstring that
# cannot be parsed fails the build. CI builds it after the tests.
docs: install
	$(PY) -m pip install --quiet -e ".[docs]"
	$(VENV)/bin/mkdocs build --strict

bench: install
	$(PY) -m pip install --quiet -e ".[bench]"
	@echo "see benchmarks/README.md for each script"

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache site
