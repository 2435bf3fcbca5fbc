"""The fixtures of the OpenPAI backend tests: a fake rest-server and HiveD, and closing what a test opened."""

from __future__ import annotations

import pytest

from tests.support.fakepai import FakePai
from tests.support.pai_world import OPEN, StubHived


@pytest.fixture(autouse=True)
def _close_everything():
    yield
    while OPEN:
        OPEN.pop().close()


@pytest.fixture
def world(serve, tmp_path):
    pai = FakePai(serve)
    hived = StubHived(serve)
    token_file = tmp_path / "tokens"
    token_file.write_text(f"alice: {pai.token('alice')}\nbob: {pai.token('bob')}\n")
    token_file.chmod(0o600)
    return pai, hived, token_file


