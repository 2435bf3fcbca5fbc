"""The package's import graph has no cycle, and the benchmarks import the package as the tests do (hivedlab.*).

import-linter (`make lint`) holds the package and the tests to the layers; the benchmarks are scripts, not a package
it can analyse, so their imports are read here from the source (docs/architecture.md#layers).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import grimp

from tests.support.paths import ROOT

BENCHMARKS = sorted((ROOT / "benchmarks").glob("*.py"))


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The import cycles (strongly connected components of more than one module, or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1 or module in graph.find_modules_directly_imported_by(module):
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def imported_modules(path: Path) -> set[str]:
    """The absolute module names a file imports (`from a.b import c`: `a.b`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_the_package_has_no_import_cycle() -> None:
    graph = grimp.build_graph("hivedlab", cache_dir=None)  # no cache folder left in the checkout
    assert len(graph.modules) > 100
    assert cycles(graph) == []


def test_the_benchmarks_import_only_what_exists_and_only_as_hivedlab() -> None:
    assert BENCHMARKS, "benchmarks/*.py"
    for path in BENCHMARKS:
        for name in imported_modules(path):
            top = name.split(".")[0]
            assert top not in {"cluster", "checker", "labs", "src"}, f"{path.name} imports {name}"
            if top in {"hivedlab", "tests"}:
                assert importlib.util.find_spec(name) is not None, f"{path.name} imports {name}, which does not exist"
