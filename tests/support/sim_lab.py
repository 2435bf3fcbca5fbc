"""One `hivedlab run all` on the simulated cluster per test session, shared by every test that reads a whole lab.

Running the five experiments and drawing their charts takes seconds; a dozen tests only read what such a run wrote.
The `sim_lab` fixture (tests/conftest.py) makes the run once per session. Under pytest-xdist every worker is a
process of its own with its own session fixtures, so the first worker to ask makes the run in the folder all workers
share (the parent of each worker's base temp folder) while holding a file lock, and the others wait for it and read
the same folder: one run per `pytest -n N`, as without xdist.

The run is read-only for the tests: a test that changes a run directory copies it first (`SimLab.copy_to`). The
fixture checks at the end of the session that the folder still holds what the run wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from filelock import FileLock

from hivedlab.basics.files import write_atomic
from hivedlab.cli.main import main

SEED = 1  # the default seed of `hivedlab run`
ARGS = ("run", "all", "--cluster", "sim", "--seed", str(SEED))  # the report in the default language, Chinese


@dataclass(frozen=True)
class SimLab:
    """What `hivedlab run all --cluster sim --out OUT` did: its exit code, what it printed, and the run directory."""

    out: Path
    code: int
    stdout: str
    stderr: str
    digest: str  # of every file under out, as the run left it

    def copy_to(self, folder: Path) -> Path:
        """A private copy of the run directory, for a test that changes it."""
        target = folder / "run"
        shutil.copytree(self.out, target)
        return target


def tree_digest(folder: Path) -> str:
    """SHA-256 over every file's relative path and bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def session_folder(basetemp: Path) -> Path:
    """The folder one test session's processes share: the base temp folder, or its parent under xdist."""
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def shared_sim_lab(folder: Path) -> SimLab:
    """The session's run in `folder`: made by the first process to ask, read back by the others."""
    record = folder / "sim-lab.json"
    with FileLock(str(folder / "sim-lab.lock")):
        if not record.is_file():
            write_atomic(record, json.dumps(asdict(_run(folder / "sim-lab")), default=str))
    data = json.loads(record.read_text(encoding="utf-8"))
    return SimLab(**{**data, "out": Path(data["out"])})


def _run(out: Path) -> SimLab:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main([*ARGS, "--out", str(out)])
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return SimLab(out, code, stdout.getvalue(), stderr.getvalue(), tree_digest(out) if out.is_dir() else "")
