"""The README's quick start is exactly two commands, and what they and the walk-through call exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hivedlab.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start_commands(heading: str) -> list[str]:
    section = README.split(heading, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, f"no shell block under {heading}"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.parametrize("heading", ["## 快速开始", "## Quick start"])
def test_quick_start_is_make_run_and_make_test(heading):
    assert quick_start_commands(heading) == ["make run", "make test"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["run", "test"])
def test_make_targets_are_defined(target):
    done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "hivedlab run all" in done.stdout if target == "run" else "pytest" in done.stdout


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_hivedlab_command_in_the_readme_exists():
    code = re.findall(r"```.*?```|`[^`\n]+`", README, re.S)
    used = {name for span in code for name in re.findall(r"(?<![\w.])hivedlab ([a-z][a-z-]*)", span)}
    assert used, "the README names no command"
    assert used <= set(COMMANDS), used - set(COMMANDS)


def test_every_file_the_readme_points_to_exists():
    # the first layout's top-level folders, and the code's and the benchmarks' since the code moved to src/hivedlab/
    paths = set(re.findall(r"`((?:labs|configs|scripts|jobs|docs|cluster|tests|src|benchmarks)/[\w./-]+)`", README))
    paths |= set(re.findall(r"python3? (labs/\w+\.py)", README))
    missing = sorted(p for p in paths if not (ROOT / p).exists() and "<" not in p)
    assert paths and not missing, missing
