"""The package's layers (docs/architecture.md): no import circle, no arrow upwards,
no private module of another package.

Read from the source with ``ast`` (every import, also those inside functions,
except ``if TYPE_CHECKING:`` blocks), so a lazy import counts as a dependency too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import uqzoo

SRC = Path(uqzoo.__file__).resolve().parent.parent

# Lowest first. A module may import from its own layer and the layers below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    # core: errors, checks, limits, files, the models and the small shared definitions
    ("errors", "_validation", "_version", "_limits", "_files", "_progress", "_quantiles",
     "_data_checks", "headline", "tomlfile", "models", "spec", "transform", "_channels"),
    # the model core, the predictive engine, the posterior type and its files
    ("nets", "predictive", "posterior", "io"),
    # data and methods (each knows nothing of metrics), and what acts on a posterior
    ("datasets", "methods", "detectors", "perturb", "recalibrate", "prior_shift"),
    # judging a posterior
    ("metrics", "evaluate", "shift", "fidelity", "reference", "conformal"),
    # applications on the library
    ("comparison", "plots", "study", "sklearn", "testing"),
    ("cli",),
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "uqzoo").rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(node) for block in ast.walk(tree)
               if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
               for node in ast.walk(block)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "uqzoo"}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            if module.split(".")[0] != "uqzoo":
                continue
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.add(child if child in known else module)
    return {m for m in found if m in known and m != name}


GRAPH = {name: _imports(name, path, set(_modules())) for name, path in _modules().items()}


def _layer(module: str) -> int:
    if module == "uqzoo":
        return len(LAYERS)                  # the façade: above everything
    top = module.split(".")[1]
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_every_module_has_a_layer(module):
    _layer(module)


def test_no_arrow_points_upwards():
    upward = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
              if _layer(d) > _layer(m)]
    assert not upward, upward


def test_no_private_module_of_another_package():
    """``uqzoo.<pkg>._x`` is private to ``uqzoo.<pkg>``; the core's ``uqzoo._x`` are shared."""
    crossing = [f"{m} -> {d}" for m, deps in GRAPH.items() for d in deps
                if any(part.startswith("_") for part in d.split(".")[2:])
                and d.split(".")[:2] != m.split(".")[:2]]
    assert not crossing, crossing


def test_no_import_circle():
    # A package's __init__ re-exporting its own modules is not a circle.
    edges = {m: {d for d in deps if not d.startswith(m + ".")} for m, deps in GRAPH.items()}
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert not circles, circles


def test_the_checker_sees_lazy_imports():
    """The checker is worth something only if it finds an import inside a function."""
    assert "uqzoo.io" in GRAPH["uqzoo.posterior"]          # Posterior.save imports io lazily
