"""Every public hived-diff-v2 scenario (both phases, suggested nodes, pinned cells, untyped specs, restarts) replayed
and compared step by step with HiveD v0.3.4's recorded decisions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivedlab.cluster.hived import load_config
from hivedlab.cluster.replay import replay

from .scoring import PUBLIC_V2, first_mismatch

SCENARIOS = sorted(PUBLIC_V2.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_scenarios_present() -> None:
    assert len(SCENARIOS) == 60
    ops = [op for path in SCENARIOS for op in _load(path)["ops"]]
    assert len(ops) == 2575
    kinds = {op["op"] for op in ops}
    assert kinds == {"schedule", "delete", "node_bad", "node_healthy", "restart"}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_public_v2_scenario(path: Path, fidelity_v2: dict[str, tuple[int, int]]) -> None:
    scenario = _load(path)
    lines = list(replay(load_config(yaml.safe_load(scenario["config"])), scenario["ops"]))
    assert lines[0]["op"] == "init" and lines[0]["result"] == "ok"
    steps = lines[1:]
    assert [line["i"] for line in steps] == list(range(len(scenario["ops"])))
    good = first_mismatch(scenario["ops"], scenario["expected"], steps)
    fidelity_v2[scenario["name"]] = (good, len(scenario["ops"]))
    if good < len(scenario["ops"]):
        op = {k: v for k, v in scenario["ops"][good].items() if k != "config"}
        pytest.fail(f"step {good}: op {op} expected {scenario['expected'][good]} got {steps[good]}")


@pytest.mark.parametrize("path", SCENARIOS[:20], ids=[p.stem for p in SCENARIOS[:20]])
def test_v2_wait_and_error_texts_agree(path: Path) -> None:
    """Not part of the matching rule, but HiveD's own reason and message texts are reproduced too."""
    scenario = _load(path)
    steps = list(replay(load_config(yaml.safe_load(scenario["config"])), scenario["ops"]))[1:]
    for exp, got in zip(scenario["expected"], steps, strict=True):
        for key in ("reason", "message"):
            if key in exp:
                assert got.get(key) == exp[key]
