"""The numbered lab scripts 00-02 run as programs, from the repository root, as students run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

EXAMPLE = "configs/group.example.yaml"  # named, so that a developer's own ./group.yaml at the root is not read


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    merged = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=merged, timeout=60)


def test_00_help_runs_without_the_package():
    done = subprocess.run([sys.executable, "-S", "-I", str(ROOT / "labs" / "00_check_env.py"), "--help"],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0 and "--gpu-container" in done.stdout


def test_01_prints_the_step_then_writes(tmp_path):
    done = run("labs/01_prepare_deploy.py", "--inventory", EXAMPLE, "--out", str(tmp_path / "d"), "--lang", "en",
               env={"HIVEDLAB_SSH_PASSWORD": "paiopen"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[实验手册 2.1 / manual step 2.1]")
    assert (tmp_path / "d" / "worker.csv").read_text() == "hostname-carol,192.0.2.12\nhostname-dan,192.0.2.13\n"


def test_02_step_number_follows_the_config():
    done = run("labs/02_switch_scheduler_config.py", "one-vc", "--inventory", EXAMPLE, "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[实验手册 4.5 / manual step 4.5]") and "GPU-NODE-POOL" in done.stdout
    assert run("labs/02_switch_scheduler_config.py", "two-vc").stdout.startswith("[实验手册 4.1")


def _bare_python(script: Path, *args: str) -> list[str]:
    """A Python without site-packages, as the system's Python is before `source .venv/bin/activate`."""
    return [sys.executable, "-S", "-s", str(script), *args]


def _bare_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}


def _copy_script_into(repo: Path, name: str) -> Path:
    labs = repo / "labs"
    labs.mkdir(parents=True)
    for file in ("find_venv.py", name):
        (labs / file).write_text((ROOT / "labs" / file).read_text(encoding="utf-8"), encoding="utf-8")
    return labs / name


def test_script_in_a_new_shell_reruns_itself_with_the_repository_venv(tmp_path):
    script = _copy_script_into(tmp_path, "03_vc_safety.py")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "venv python: $*"\n', encoding="utf-8")
    python.chmod(0o755)
    done = subprocess.run(_bare_python(script, "--seed", "3"), capture_output=True, text=True, timeout=60, cwd="/",
                          env=_bare_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"venv python: {script} --seed 3\n"


def test_script_without_a_venv_says_what_to_run(tmp_path):
    script = _copy_script_into(tmp_path, "06_gang.py")
    done = subprocess.run(_bare_python(script), capture_output=True, text=True, timeout=60, cwd="/", env=_bare_env())
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "make venv" in done.stderr and "Traceback" not in done.stderr
