"""Every public hived-diff-v2 scenario (both phases, suggested nodes, pinned cells, untyped specs, restarts) replayed
and compared step by step with HiveD v0.3.4's recorded decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.scoring import PUBLIC_V2, check_scenario, check_texts, load_scenario

SCENARIOS = sorted(PUBLIC_V2.glob("*.json"))


def test_scenarios_present() -> None:
    assert len(SCENARIOS) == 60
    ops = [op for path in SCENARIOS for op in load_scenario(path)["ops"]]
    assert len(ops) == 2575
    kinds = {op["op"] for op in ops}
    assert kinds == {"schedule", "delete", "node_bad", "node_healthy", "restart"}


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_public_v2_scenario(path: Path, fidelity_v2: dict[str, tuple[int, int]]) -> None:
    check_scenario(path, fidelity_v2)


@pytest.mark.parametrize("path", SCENARIOS[:20], ids=[p.stem for p in SCENARIOS[:20]])
def test_v2_wait_and_error_texts_agree(path: Path) -> None:
    """Not part of the matching rule, but HiveD's own reason and message texts are reproduced too."""
    check_texts(path)
