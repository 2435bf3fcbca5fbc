"""hived-diff-v2 scenarios the project wrote itself (tests/fixtures/hived-diff-v2/derived/), each reproducing a corner
the public corpus does not reach, with HiveD v0.3.4's decisions taken from its code path (the README there says how).
They are held to the same matching rules as the public scenarios but kept out of the public fidelity score."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from tests.support.scoring import check_scenario, load_scenario, replay_scenario

DERIVED = FIXTURES / "hived-diff-v2" / "derived"
SCENARIOS = sorted(DERIVED.glob("*.json"))


def test_scenarios_present() -> None:
    assert [p.stem for p in SCENARIOS] == ["deleted-victim-kept-after-restarts"]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_derived_v2_scenario(path: Path) -> None:
    scores: dict[str, tuple[int, int]] = {}
    check_scenario(path, scores)
    assert list(scores.values()) == [(len(load_scenario(path)["ops"]),) * 2]


def test_a_deleted_victim_is_named_on_the_node_it_was_bound_to() -> None:
    """The issue's corner: low-1, deleted after the second restart, still fills slot 0 of its group, and the next
    Preempting call names it on hostname-dan, its node, not on an empty node name."""
    scenario = load_scenario(DERIVED / "deleted-victim-kept-after-restarts.json")
    steps = replay_scenario(scenario)
    assert [op["op"] for op in scenario["ops"][6:9]] == ["restart", "delete", "schedule"]
    assert steps[8]["victims"] == {"hostname-dan": ["low-1"]}
    assert steps[9]["victims"] == {"hostname-dan": ["low-1"]}  # the preemptor's second pod sees the same
    assert steps[11]["result"] == "bind"  # the next restart re-adds no pod of the group: its cells are free again
