"""Every public hived-diff scenario replayed and compared step by step with HiveD v0.3.4's recorded decisions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivedlab.cluster.hived import load_config
from hivedlab.cluster.replay import replay

from .scoring import PUBLIC, first_mismatch

SCENARIOS = sorted(PUBLIC.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_scenarios_present() -> None:
    assert len(SCENARIOS) == 60


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_public_scenario(path: Path, fidelity: dict[str, tuple[int, int]]) -> None:
    scenario = _load(path)
    lines = list(replay(load_config(yaml.safe_load(scenario["config"])), scenario["ops"]))
    assert lines[0]["op"] == "init" and lines[0]["result"] == "ok"
    steps = lines[1:]
    assert [line["i"] for line in steps] == list(range(len(scenario["ops"])))
    good = first_mismatch(scenario["ops"], scenario["expected"], steps)
    fidelity[scenario["name"]] = (good, len(scenario["ops"]))
    if good < len(scenario["ops"]):
        pytest.fail(f"step {good}: op {scenario['ops'][good]} expected {scenario['expected'][good]} got {steps[good]}")


@pytest.mark.parametrize("path", SCENARIOS[:20], ids=[p.stem for p in SCENARIOS[:20]])
def test_wait_and_error_texts_agree(path: Path) -> None:
    """Not part of the matching rule, but HiveD's own reason and message texts are reproduced too."""
    scenario = _load(path)
    steps = list(replay(load_config(yaml.safe_load(scenario["config"])), scenario["ops"]))[1:]
    for exp, got in zip(scenario["expected"], steps, strict=True):
        for key in ("reason", "message"):
            if key in exp:
                assert got.get(key) == exp[key]


def test_init_line_orders_chains_by_name() -> None:
    scenario = _load(PUBLIC / "pub-0024-random.json")
    init = next(iter(replay(load_config(yaml.safe_load(scenario["config"])), [])))
    # chains sorted by name: H100-RACK, H100-X-NODE, K80-RACK, L4-RACK
    assert init["nodes"] == ["n13", "n14", "n15", "n16", "n17", "n18", "n19", "n1", "n2", "n3", "n4", "n5", "n6",
                             "n7", "n8", "n9", "n10", "n11", "n12", "n20", "n21"]
