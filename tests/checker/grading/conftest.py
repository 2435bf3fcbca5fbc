"""The grading tests' shared fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from filelock import FileLock

from tests.support.grade_class import make_class
from tests.support.sim_lab import session_folder


@pytest.fixture(scope="session")
def generated_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated class (tests.support.grade_class), made once per test run (once for all xdist workers):
    honest simulated groups with their own inventories and seeds, and copies of one of them disguised each way.
    Read-only: grading it writes only into the test's own output folder."""
    folder = session_folder(tmp_path_factory.getbasetemp())
    done = folder / "grade-class.json"
    with FileLock(str(folder / "grade-class.lock")):
        if not done.is_file():
            done.write_text(json.dumps({"subs": str(make_class(folder / "grade-class"))}), encoding="utf-8")
    return Path(json.loads(done.read_text(encoding="utf-8"))["subs"])
