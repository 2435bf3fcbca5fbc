"""Collects the hived-diff fidelity score while the public scenarios run and prints it at the end."""

from __future__ import annotations

from typing import Any

import pytest

FIDELITY: dict[str, tuple[int, int]] = {}  # v1 scenario -> (steps before first mismatch, steps)
FIDELITY_V2: dict[str, tuple[int, int]] = {}  # the same for the v2 corpus


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for corpus, scores in (("hived-diff", FIDELITY), ("hived-diff-v2", FIDELITY_V2)):
        if not scores:
            continue
        passing = sum(1 for good, total in scores.values() if good == total)
        good = sum(g for g, _ in scores.values())
        total = sum(t for _, t in scores.values())
        terminalreporter.write_line(
            f"{corpus} fidelity: {passing}/{len(scores)} scenarios, {good}/{total} steps"
        )


@pytest.fixture
def fidelity() -> dict[str, tuple[int, int]]:
    return FIDELITY


@pytest.fixture
def fidelity_v2() -> dict[str, tuple[int, int]]:
    return FIDELITY_V2
