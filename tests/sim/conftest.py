from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sim.simkit import OPEN_WRITERS


@pytest.fixture(autouse=True)
def _close_writers() -> Iterator[None]:
    yield
    while OPEN_WRITERS:
        OPEN_WRITERS.pop().close()
