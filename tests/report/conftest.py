from __future__ import annotations

import shutil
from pathlib import Path

import pytest

RUN_SIM = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "run-sim"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A private copy of the fixture run directory (five experiments on the simulated cluster)."""
    target = tmp_path / "run"
    shutil.copytree(RUN_SIM, target)
    return target
