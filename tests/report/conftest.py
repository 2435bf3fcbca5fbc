from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # report_checks.py, the checks the tests share

RUN_SIM = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "run-sim"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A private copy of the fixture run directory (five experiments on the simulated cluster)."""
    target = tmp_path / "run"
    shutil.copytree(RUN_SIM, target)
    return target


@pytest.fixture
def quick_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip matplotlib where a test is about the text: the chart files are still written, as a tiny SVG/PNG."""
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>'
    monkeypatch.setattr("hivedlab.checker.report.charts.draw", lambda data, salt="": (b"\x89PNG\r\n\x1a\n", svg))
