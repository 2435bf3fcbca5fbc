"""Every public hived-diff scenario replayed and compared step by step with HiveD v0.3.4's recorded decisions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hivedlab.models.hived import load_config
from hivedlab.models.hived_replay import replay
from tests.support.scoring import PUBLIC, check_scenario, check_texts, load_scenario

SCENARIOS = sorted(PUBLIC.glob("*.json"))


def test_scenarios_present() -> None:
    assert len(SCENARIOS) == 60


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_public_scenario(path: Path, fidelity: dict[str, tuple[int, int]]) -> None:
    check_scenario(path, fidelity)


@pytest.mark.parametrize("path", SCENARIOS[:20], ids=[p.stem for p in SCENARIOS[:20]])
def test_wait_and_error_texts_agree(path: Path) -> None:
    """Not part of the matching rule, but HiveD's own reason and message texts are reproduced too."""
    check_texts(path)


def test_init_line_orders_chains_by_name() -> None:
    scenario = load_scenario(PUBLIC / "pub-0024-random.json")
    init = next(iter(replay(load_config(yaml.safe_load(scenario["config"])), [])))
    # chains sorted by name: H100-RACK, H100-X-NODE, K80-RACK, L4-RACK
    assert init["nodes"] == ["n13", "n14", "n15", "n16", "n17", "n18", "n19", "n1", "n2", "n3", "n4", "n5", "n6",
                             "n7", "n8", "n9", "n10", "n11", "n12", "n20", "n21"]
