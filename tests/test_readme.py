"""The README: its quick start is exactly two commands, what it names exists, and its two languages say the same thing
in under 200 lines each."""

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


ENGLISH_ANCHOR = '<a id="english"></a>'
COMMAND_START = re.compile(r"(?:make|python3|hivedlab|scripts/[\w.]+|source|export)(?: |$)")


def language_parts(text: str) -> tuple[str, str]:
    """The Chinese part (first) and the English part, split at the English anchor."""
    zh, sep, en = text.partition(ENGLISH_ANCHOR)
    assert sep, "the README has no English part"
    return zh, en


def headings(part: str) -> list[str]:
    """The level of each Markdown heading outside code blocks, in order (`##`, `###`, …)."""
    found, fenced = [], False
    for line in part.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"(#{1,6}) ", line)):
            found.append(m.group(1))
    return found


def commands(part: str) -> list[str]:
    """Each command the part gives to copy, in order, without its placeholders (`姓名`, `NAME`) and comments: those
    are the language's own, the command is not."""
    spans = []
    for block_or_span in re.findall(r"```.*?```|`[^`\n]+`", part, re.S):
        if block_or_span.startswith("```"):
            spans += [line.split("#")[0] for line in block_or_span.strip("`").splitlines()[1:]]
        else:
            spans.append(block_or_span.strip("`"))
    found = []
    for span in (s.strip() for s in spans):
        if COMMAND_START.match(span):
            found.append(" ".join(w for w in span.split() if w.isascii() and not re.fullmatch(r"[A-Z]+", w)))
    return found


def test_each_language_part_is_under_200_lines():
    for part in language_parts(README):
        assert len(part.splitlines()) < 200, part.splitlines()[0]


def test_both_languages_have_the_same_structure():
    zh, en = language_parts(README)
    assert headings(zh) == headings(en)
    assert commands(zh) == commands(en)
    assert len(commands(zh)) >= 20, commands(zh)  # the student's steps, the TA's, the troubleshooting list


@pytest.mark.parametrize(
    ("zh", "en", "same"),
    [
        ("## a\n`hivedlab run gang --member 姓名`\n", "## a\n`hivedlab run gang --member NAME`\n", True),
        ("## a\n`hivedlab run gang`\n", "## a\n### b\n`hivedlab run gang`\n", False),
        ("`make run`\n`make test`\n", "`make test`\n`make run`\n", False),
        ("`python3 labs/06_gang.py --cluster pai`\n", "`python3 labs/06_gang.py`\n", False),
        ("`hivedlab run gang`\n", "`hivedlab run priority`\n", False),
        ("```sh\nhivedlab grade x/  # 每组\n```\n", "```sh\nhivedlab grade x/  # one per group\n```\n", True),
    ],
)
def test_the_structure_comparison_tells_parts_apart(zh, en, same):
    assert (headings(zh) == headings(en) and commands(zh) == commands(en)) is same


def test_a_student_copies_python3_never_python():
    assert not re.search(r"(?<![\w/])python (?:labs|scripts)/", README)


def test_the_readme_names_the_folder_make_run_writes():
    default = re.search(r"^OUT\s*\?=\s*(\S+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert default, "the Makefile sets no default OUT"
    for heading in ("## 快速开始", "## Quick start"):
        section = README.split(heading, 1)[1]
        make_run = next(line for line in section.splitlines() if line.startswith("make run"))
        assert f" {default.group(1)}/report.md" in make_run, make_run
