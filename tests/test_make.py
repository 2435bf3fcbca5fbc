"""`make venv` (and so `make run`) checks the Python first: an old one gets a zh+en message on how to get 3.10+,
before venv or pip run (pip's own error names a missing package, not the Python)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.old_pythons import OLD_VERSIONS, bare_env, old_python_or_skip
from tests.support.paths import ROOT

CHECK = ROOT / "scripts" / "check_python.py"


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_make_venv_with_an_old_python_says_how_to_get_a_new_one(tmp_path: Path, version: str) -> None:
    python = old_python_or_skip(version)
    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    venv = tmp_path / "venv"
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "venv", f"PYTHON={python}", f"VENV={venv}"],
                          capture_output=True, text=True, env=bare_env(), timeout=60)
    assert done.returncode != 0 and not venv.exists()
    assert f"hivedlab needs Python 3.10 or newer; {python} is Python {version}." in done.stderr
    assert "hivedlab 需要 Python 3.10 或更新版本" in done.stderr
    assert "ppa:deadsnakes/ppa" in done.stderr and "make run PYTHON=python3.10" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_new_enough_python_passes_silently() -> None:
    done = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
