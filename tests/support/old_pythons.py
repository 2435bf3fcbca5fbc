"""The lab machines' old system Pythons (Ubuntu 18.04: 3.6, 20.04: 3.8) as the tests find them: on PATH, or in a
version manager's versions/ folder, where `python3.X` on PATH may be a pyenv shim that fails alone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

OLD_VERSIONS = ("3.6", "3.7", "3.8", "3.9")  # the lab machines' system Pythons: Ubuntu 18.04 has 3.6, 20.04 3.8


def pyenv_roots() -> list[Path]:
    """Where pyenv keeps its interpreters: $PYENV_ROOT, ~/.pyenv, and what `pyenv root` says."""
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    if shutil.which("pyenv"):
        try:
            roots.append(subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=10).stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    return list(dict.fromkeys(Path(root) for root in roots if root))


def installed(version: str) -> list[Path]:
    """The interpreters of `version` in pyenv's versions/ folders, newest first."""
    return [exe for root in pyenv_roots() for exe in sorted(root.glob(f"versions/{version}*/bin/python{version}"),
                                                            reverse=True)]


def find_old_python(version: str) -> tuple[str | None, str]:
    """A Python `version` that runs, and why none when there is none: `python3.X` on PATH may be a version manager's
    shim (pyenv) that fails unless that version is selected, while the interpreter itself sits in the manager's
    versions folder."""
    candidates = [shutil.which(f"python{version}") or "", *(str(exe) for exe in installed(version))]
    tried = []
    major, minor = (int(part) for part in version.split("."))
    for exe in dict.fromkeys(c for c in candidates if c):
        try:
            done = subprocess.run([exe, "-c", f"import sys; print(sys.version_info[:2] == ({major}, {minor}))"],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(f"{exe}: {exc}")
            continue
        if done.returncode == 0 and done.stdout.strip() == "True":
            return exe, ""
        tried.append(f"{exe}: exit {done.returncode} {(done.stderr or done.stdout).strip()[:80]}")
    where = "; ".join(tried) or f"no python{version} on PATH and none in $PYENV_ROOT or ~/.pyenv/versions/{version}*"
    return None, f"no working Python {version} ({where})"


OLD_PYTHONS = {version: find_old_python(version) for version in OLD_VERSIONS}


def old_python_or_skip(version: str) -> str:
    """The interpreter; a skip only where the machine has none of that version at all. One that is there but does
    not run fails the test, saying what was tried: a broken interpreter must not turn the check into a skip."""
    exe, why = OLD_PYTHONS[version]
    if exe is None:
        if installed(version):  # installed, yet none runs (a PATH shim that fails alone is no interpreter)
            pytest.fail(why)
        pytest.skip(why)
    return exe


def bare_env() -> dict[str, str]:
    """The environment of a new shell: none of this test run's PYTHON* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
