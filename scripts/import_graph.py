#!/usr/bin/env python3
"""Draw the package's import graph, collapsed to the parts of the layers contract, into docs/architecture.md.

The parts and their order come from the layers contract of `pyproject.toml` (`[tool.importlinter]`, the contract
whose container is `hivedlab`); the imports from the code itself (grimp, which import-linter uses; type-only imports
count). Every module belongs to the longest part its name starts with (`hivedlab.plans.loader` → `plans`), so a new
module inside a part needs nothing but a rerun. The drawing is a Mermaid flowchart, one subgraph per layer, one
arrow per part → part dependency, written between the marker comments of the page.

Exit 1, with the reasons, when an arrow goes up a layer or sideways between two parts of one layer, when the parts
import each other in a cycle, or when a module belongs to no part (it is outside every contract: add it to a layer).

    .venv/bin/python scripts/import_graph.py          # rewrite the drawing in docs/architecture.md
    .venv/bin/python scripts/import_graph.py --check  # only say whether the page's drawing is the current one
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "hivedlab"
PYPROJECT = ROOT / "pyproject.toml"
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- import-graph:begin (scripts/import_graph.py writes this block) -->"
END = "<!-- import-graph:end -->"
COMMAND = ".venv/bin/python scripts/import_graph.py"
ENTRY = frozenset({f"{PACKAGE}.__main__"})  # `python -m hivedlab`: runs the CLI, belongs to no layer

Edge = tuple[str, str]


@dataclass(frozen=True)
class Layers:
    """The layers contract: layers top to bottom, each a tuple of parts (names below the package)."""

    layers: tuple[tuple[str, ...], ...]

    def level(self, part: str) -> int:
        return next(i for i, layer in enumerate(self.layers) if part in layer)

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(part for layer in self.layers for part in layer)

    def part_of(self, module: str) -> str | None:
        """The longest part `module` is, or is inside; None for a module in no part."""
        name = module.removeprefix(f"{PACKAGE}.")
        inside = [p for p in self.parts if module != PACKAGE and (name == p or name.startswith(p + "."))]
        return max(inside, key=len) if inside else None

    def is_container(self, module: str) -> bool:
        """The package itself or a folder holding parts (`hivedlab.checker`): in no part, and not meant to be."""
        if module == PACKAGE:
            return True
        name = module.removeprefix(f"{PACKAGE}.")
        return any(p.startswith(name + ".") for p in self.parts)


def read_layers(pyproject: Path = PYPROJECT) -> Layers:
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract.get("type") == "layers" and contract.get("containers") == [PACKAGE]:
            return Layers(tuple(tuple(p.strip() for p in layer.split("|")) for layer in contract["layers"]))
    raise SystemExit(f"{pyproject.name}: no layers contract with the container {PACKAGE!r}")


def collapse(imports: Iterable[Edge], layers: Layers) -> tuple[set[Edge], set[str]]:
    """Module imports → part → part dependencies (a part's imports of itself dropped), and the unplaced modules."""
    edges: set[Edge] = set()
    unplaced: set[str] = set()
    for importer, imported in imports:
        ends = []
        for module in (importer, imported):
            part = layers.part_of(module)
            if part is None and not layers.is_container(module) and module not in ENTRY:
                unplaced.add(module)
            ends.append(part)
        source, target = ends
        if source is not None and target is not None and source != target:
            edges.add((source, target))
    return edges, unplaced


def package_imports(package: str = PACKAGE) -> list[Edge]:
    """Every direct import between the package's modules, as grimp reads them from the source."""
    import grimp

    graph = grimp.build_graph(package, cache_dir=None)
    return [(m, imported) for m in sorted(graph.modules) for imported in graph.find_modules_directly_imported_by(m)]


def cycles(edges: Iterable[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    succ: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in succ[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for node in succ:
        if node not in index:
            visit(node)
    return sorted(found)


def problems(edges: set[Edge], unplaced: set[str], layers: Layers) -> list[str]:
    """What breaks the layers: arrows up or sideways, cycles, modules in no part."""
    found = []
    for a, b in sorted(edges):
        if layers.level(a) > layers.level(b):
            found.append(f"{a} → {b} goes up a layer")
        elif layers.level(a) == layers.level(b):
            found.append(f"{a} → {b} joins two parts of one layer, which may not import each other")
    found += [f"import cycle: {' → '.join(c)}" for c in cycles(edges)]
    found += [f"{m} is in no part of the layers contract ([tool.importlinter] in pyproject.toml)"
              for m in sorted(unplaced)]
    return found


def node_id(part: str) -> str:
    return part.replace(".", "_")


def mermaid(edges: set[Edge], layers: Layers) -> str:
    """The drawing: a top-down flowchart, one subgraph per layer (top layer first), one arrow per dependency."""
    lines = ["```mermaid", "flowchart TD"]
    for number, layer in enumerate(layers.layers, 1):
        lines.append(f'  subgraph layer{number}["layer {number}"]')
        lines += [f'    {node_id(part)}["{part}"]' for part in layer]
        lines.append("  end")
    lines += [f"  {node_id(a)} --> {node_id(b)}" for a, b in sorted(edges, key=lambda e: (
        layers.parts.index(e[0]), layers.parts.index(e[1])))]
    lines.append("```")
    return "\n".join(lines)


def splice(page: str, drawing: str) -> str:
    """`page` with the text between the markers replaced by `drawing`."""
    start, stop = page.find(BEGIN), page.find(END)
    if start < 0 or stop < start:
        raise SystemExit(f"{PAGE.relative_to(ROOT)}: the markers {BEGIN!r} … {END!r} are missing")
    return page[: start + len(BEGIN)] + "\n" + drawing + "\n" + page[stop:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the page's drawing is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))  # this checkout's package, installed or not
    layers = read_layers()
    edges, unplaced = collapse(package_imports(), layers)
    found = problems(edges, unplaced, layers)
    for line in found:
        print(f"import_graph: {line}", file=sys.stderr)
    page = PAGE.read_text(encoding="utf-8")
    updated = splice(page, mermaid(edges, layers))
    if args.check and updated != page:
        print(f"import_graph: {PAGE.relative_to(ROOT)}'s drawing is not the current graph; run: {COMMAND}",
              file=sys.stderr)
        return 1
    if not args.check and updated != page:
        PAGE.write_text(updated, encoding="utf-8")
        print(f"import_graph: {PAGE.relative_to(ROOT)} updated ({len(edges)} arrows)")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
