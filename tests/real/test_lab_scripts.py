"""The numbered lab scripts 00-02 run as programs, from the repository root, as students run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    merged = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=merged, timeout=60)


def test_00_help_runs_without_the_package():
    done = subprocess.run([sys.executable, "-S", "-I", str(ROOT / "labs" / "00_check_env.py"), "--help"],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert done.returncode == 0 and "--gpu-container" in done.stdout


def test_01_prints_the_step_then_writes(tmp_path):
    done = run("labs/01_prepare_deploy.py", "--out", str(tmp_path / "d"), "--lang", "en",
               env={"HIVEDLAB_SSH_PASSWORD": "paiopen"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[实验手册 2.1 / manual step 2.1]")
    assert (tmp_path / "d" / "worker.csv").read_text() == "hostname-carol,192.0.2.12\nhostname-dan,192.0.2.13\n"


def test_02_step_number_follows_the_config():
    done = run("labs/02_switch_scheduler_config.py", "one-vc", "--lang", "en")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[实验手册 4.5 / manual step 4.5]") and "GPU-NODE-POOL" in done.stdout
    assert run("labs/02_switch_scheduler_config.py", "two-vc").stdout.startswith("[实验手册 4.1")
