"""docs/architecture.md's drawing of the import graph is the graph the code has now, and that graph keeps the layers:
no arrow up or sideways, no cycle, no module outside the contract (scripts/import_graph.py)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.support.paths import ROOT


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


import_graph = _load_script()
LAYERS = import_graph.Layers((("cli",), ("checker.report", "checker.grading"), ("plans",), ("basics", "models.hived")))


@pytest.fixture(scope="module")
def current() -> tuple[set[tuple[str, str]], set[str]]:
    edges, unplaced = import_graph.collapse(import_graph.package_imports(), import_graph.read_layers())
    return edges, unplaced


def test_the_drawing_in_the_page_is_the_current_graph(current) -> None:
    page = import_graph.PAGE.read_text(encoding="utf-8")
    drawn = import_graph.splice(page, import_graph.mermaid(current[0], import_graph.read_layers()))
    assert drawn == page, f"docs/architecture.md's import graph is stale; run: {import_graph.COMMAND}"


def test_the_graph_keeps_the_layers(current) -> None:
    edges, unplaced = current
    assert import_graph.problems(edges, unplaced, import_graph.read_layers()) == []


def test_the_checkers_rooms_are_parts_of_their_own(current) -> None:
    edges, _ = current
    drawn = {part for edge in edges for part in edge}
    assert {f"checker.{room}" for room in ("judging", "report", "grading", "validate", "streams")} <= drawn


def test_a_module_belongs_to_the_longest_part_it_is_in() -> None:
    layers = import_graph.Layers((("models.hived", "models.hived_replay"),))
    assert layers.part_of("hivedlab.models.hived.cell") == "models.hived"
    assert layers.part_of("hivedlab.models.hived_replay") == "models.hived_replay"
    assert layers.part_of("hivedlab.models.openpai") is None
    assert layers.is_container("hivedlab.models") and not layers.is_container("hivedlab.models.openpai")


def test_a_new_module_inside_a_part_is_drawn_as_that_part() -> None:
    imports = [("hivedlab.plans.rule_params", "hivedlab.basics.text"),
               ("hivedlab.plans.loader", "hivedlab.plans.rule_params")]
    edges, unplaced = import_graph.collapse(imports, LAYERS)
    assert edges == {("plans", "basics")} and unplaced == set()


def test_an_arrow_up_or_sideways_a_cycle_and_an_unplaced_module_are_problems() -> None:
    imports = [("hivedlab.basics.text", "hivedlab.plans.loader"), ("hivedlab.plans.loader", "hivedlab.basics.files"),
               ("hivedlab.checker.report.build", "hivedlab.checker.grading.grader"),
               ("hivedlab.cli.main", "hivedlab.env_record")]
    edges, unplaced = import_graph.collapse(imports, LAYERS)
    found = import_graph.problems(edges, unplaced, LAYERS)
    assert found == [
        "basics → plans goes up a layer",
        "checker.report → checker.grading joins two parts of one layer, which may not import each other",
        "import cycle: basics → plans",
        "hivedlab.env_record is in no part of the layers contract ([tool.importlinter] in pyproject.toml)",
    ]


def test_the_drawing_has_a_subgraph_per_layer_and_an_arrow_per_dependency() -> None:
    drawing = import_graph.mermaid({("cli", "plans"), ("plans", "basics")}, LAYERS)
    assert drawing.splitlines()[:2] == ["```mermaid", "flowchart TD"]
    assert drawing.count("subgraph ") == 4
    assert "  cli --> plans\n  plans --> basics\n```" in drawing
    assert '    checker_report["checker.report"]' in drawing


def test_splice_replaces_only_the_block_between_the_markers() -> None:
    page = f"intro\n{import_graph.BEGIN}\nold\n{import_graph.END}\nrest\n"
    assert import_graph.splice(page, "new") == f"intro\n{import_graph.BEGIN}\nnew\n{import_graph.END}\nrest\n"


def test_the_pages_layers_block_lists_the_contracts_layers() -> None:
    """The words beside the drawing: each line of the Layers block that does not start with a blank is one layer,
    its parts before the description (two blanks or more)."""
    section = import_graph.PAGE.read_text(encoding="utf-8").split("\n## Layers\n", 1)[1]
    block = section.split("```\n", 2)[1]
    written = tuple(tuple(line.split("  ")[0].strip().split(" | ")) for line in block.splitlines()
                    if line and not line.startswith(" "))
    assert written == import_graph.read_layers().layers
