"""Collects the hived-diff fidelity score while the public scenarios run and prints it at the end."""

from __future__ import annotations

from typing import Any

import pytest

FIDELITY: dict[str, tuple[int, int]] = {}  # scenario -> (steps before first mismatch, steps)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIDELITY:
        return
    passing = sum(1 for good, total in FIDELITY.values() if good == total)
    good = sum(g for g, _ in FIDELITY.values())
    total = sum(t for _, t in FIDELITY.values())
    terminalreporter.write_line(
        f"hived-diff fidelity: {passing}/{len(FIDELITY)} scenarios, {good}/{total} steps"
    )


@pytest.fixture
def fidelity() -> dict[str, tuple[int, int]]:
    return FIDELITY
