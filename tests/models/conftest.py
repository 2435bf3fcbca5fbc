"""The fixtures through which the public replay scenarios record their fidelity score (printed by tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.support.fidelity import SCORES, Scores


@pytest.fixture
def fidelity() -> Scores:
    return SCORES["hived-diff"]


@pytest.fixture
def fidelity_v2() -> Scores:
    return SCORES["hived-diff-v2"]
