"""The hived-diff matching rules (v1: tests/fixtures/hived-diff/README.md, v2: tests/fixtures/hived-diff-v2/README.md)
and the fidelity score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivedlab.models.hived import load_config
from hivedlab.models.hived_replay import replay
from tests.support.paths import FIXTURES

PUBLIC = FIXTURES / "hived-diff" / "public"
PUBLIC_V2 = FIXTURES / "hived-diff-v2" / "public"


def step_matches(op: dict[str, Any], expected: dict[str, Any], got: dict[str, Any] | None) -> bool:
    if got is None:
        return False
    if op.get("op") != "schedule":
        if expected.get("result") == "error":
            return got.get("result") == "error"
        return got.get("result") not in (None, "error")
    if got.get("result") != expected["result"]:
        return False
    if expected["result"] == "preempt" and op.get("phase") == "Filtering":
        return True  # v2: a Filtering-phase preempt records no victims and is compared on its kind
    if expected["result"] == "bind":
        return got.get("node") == expected["node"] and got.get("leafCellIsolation") == expected["leafCellIsolation"]
    if expected["result"] == "preempt":
        victims = got.get("victims") or {}
        return {n: set(p) for n, p in victims.items()} == {n: set(p) for n, p in expected["victims"].items()}
    return True


def first_mismatch(ops: list[dict[str, Any]], expected: list[dict[str, Any]], lines: list[dict[str, Any]]) -> int:
    """Index of the first step that does not match (len(ops) when all match); `lines` excludes the init line."""
    for i, (op, exp) in enumerate(zip(ops, expected, strict=True)):
        if not step_matches(op, exp, lines[i] if i < len(lines) else None):
            return i
    return len(ops)


def load_scenario(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def replay_scenario(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """The replay's lines for a scenario, the init line checked and left out."""
    lines = list(replay(load_config(yaml.safe_load(scenario["config"])), scenario["ops"]))
    assert lines[0]["op"] == "init" and lines[0]["result"] == "ok"
    steps = lines[1:]
    assert [line["i"] for line in steps] == list(range(len(scenario["ops"])))
    return steps


def check_scenario(path: Path, fidelity: dict[str, tuple[int, int]]) -> None:
    """Replay a scenario, record how far it matched, fail at the first step that does not."""
    scenario = load_scenario(path)
    steps = replay_scenario(scenario)
    good = first_mismatch(scenario["ops"], scenario["expected"], steps)
    fidelity[scenario["name"]] = (good, len(scenario["ops"]))
    if good < len(scenario["ops"]):
        op = {k: v for k, v in scenario["ops"][good].items() if k != "config"}
        pytest.fail(f"step {good}: op {op} expected {scenario['expected'][good]} got {steps[good]}")


def check_texts(path: Path) -> None:
    """HiveD's own wait reasons and error messages are reproduced word for word (not part of the matching rule)."""
    scenario = load_scenario(path)
    steps = replay_scenario(scenario)
    for exp, got in zip(scenario["expected"], steps, strict=True):
        for key in ("reason", "message"):
            if key in exp:
                assert got.get(key) == exp[key]
