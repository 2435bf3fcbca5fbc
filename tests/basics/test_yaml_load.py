"""safe_load reads every document as PyYAML's safe loader does: the same data, the same error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from hivedlab.basics.files import YAML_LOADER
from hivedlab.basics.yaml_load import safe_load

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p for folder in ("configs", "labs", "jobs", "tests/fixtures") for p in (ROOT / folder).rglob("*.y*ml")
                 if p.stat().st_size < 200_000)

TRICKY = [
    "", "# only a comment\n", "~", "null", "x", "'quoted 1'", '"2"', "1", "-1_000", "0x1F", "0o17", "017", "0b101",
    "1:30", "1.5e3", ".inf", "-.Inf", ".nan", "yes", "No", "on", "OFF", "true", "2026-01-01", "2026-01-01T08:00:00Z",
    "2026-01-01 08:00:00.5 +01:00", "!!binary aGk=", "!!str 12", "!!int '7'", "!!float 3", "!!set {a, b}",
    "!!omap [a: 1, b: 2]", "!!pairs [a: 1, a: 2]", "a: 1\na: 2\nb: [1, {c: d}]\n", "a: &x [1, 2]\nb: *x\n",
    "base: &b {x: 1}\nmore:\n  <<: *b\n  y: 2\n", "<<: {a: 1}\nb: 2\n", "=: value\n", "? [1, 2]\n: list key\n",
    "? {a: 1}\n: map key\n", "1: int key\n2.5: float key\nnull: none\ntrue: bool\n2026-01-01: date\n",
    "- a\n- - b\n  - c\n- {d: e}\n", "!!python/object:os.system ls", "!custom 1", "a: !custom x\n",
    "a: [1, 2\n", "a: b: c\n", "- a\nb: c\n", "---\na: 1\n---\nb: 2\n", "\t- tab", "key: 'unterminated\n",
    "a: &x 1\nb: *y\n", "''", "- ''\n- \n- ~\n", "{a: , b: }", "\u00e9l\u00e8ve: \u4f5c\u4e1a\n",
    "[" * 500 + "]" * 500, "{a: " * 400 + "b" + "}" * 400, "a: " * 400 + "b\n", "[" * 1500 + "]" * 1500,
    "priority: 100\naffinityGroup:\n  name: dev0~job/default\n  members:\n  - podNumber: 1\n    leafCellNumber: 1\n",
]


def _outcome(load: Callable[[str], object], text: str) -> tuple[str, str]:
    try:
        return "data", repr(load(text))
    except yaml.YAMLError as exc:
        return type(exc).__name__, str(exc)


def _reference(text: str) -> object:
    return yaml.load(text, Loader=YAML_LOADER)


@pytest.mark.parametrize("text", TRICKY)
def test_a_tricky_document_reads_as_the_safe_loader_reads_it(text: str) -> None:
    assert _outcome(safe_load, text) == _outcome(_reference, text)


def test_every_shipped_yaml_file_reads_as_the_safe_loader_reads_it() -> None:
    assert len(SHIPPED) > 50
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        assert _outcome(safe_load, text) == _outcome(_reference, text), path


def test_an_alias_is_the_same_object_as_its_anchor() -> None:
    data = safe_load("a: &x [1]\nb: *x\n")
    assert data["a"] is data["b"]
