"""Sizes a reader can hold: no Python file over 400 lines without its reason, no function over 80 lines.

A file over the limit says why in its module docstring, on a line that starts `Size:` (one job that does not split
naturally, a table of cases, ...); a function has no such way out: it is split. Lengths count from the `def` line to
the last line of the body (decorators excluded), as `ast` reports them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import ROOT

ROOTS = ("src", "tests", "benchmarks", "scripts", "labs")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80


def python_files() -> list[Path]:
    return sorted(path for root in ROOTS for path in (ROOT / root).rglob("*.py"))


def offenders(path: Path, text: str) -> list[str]:
    """Each size a file breaks, as `path: name (n lines)`; `path` as given (relative to the repository in the test)."""
    found: list[str] = []
    tree = ast.parse(text, str(path))
    lines = len(text.splitlines())
    docstring = ast.get_docstring(tree) or ""
    if lines > MAX_FILE_LINES and not any(line.startswith("Size:") for line in docstring.splitlines()):
        found.append(f"{path}: file ({lines} lines > {MAX_FILE_LINES}, no `Size:` line in its docstring)")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.lineno}: {node.name} ({length} lines > {MAX_FUNCTION_LINES})")
    return found


def test_files_and_functions_keep_to_their_sizes() -> None:
    files = python_files()
    assert len(files) > 100  # the roots are where they were: an empty scan passes nothing
    found = [line for path in files for line in offenders(path.relative_to(ROOT), path.read_text(encoding="utf-8"))]
    assert not found, "over the sizes (split them, or say why in a `Size:` line):\n" + "\n".join(found)


def _body(n: int, indent: int = 4) -> str:
    return "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(n))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"""At the limit."""\n' + "x = 1\n" * (MAX_FILE_LINES - 1), []),
        ('"""Long."""\n' + "x = 1\n" * MAX_FILE_LINES,
         ["m.py: file (401 lines > 400, no `Size:` line in its docstring)"]),
        ('"""Long.\n\nSize: one table of cases.\n"""\n' + "x = 1\n" * MAX_FILE_LINES, []),
        ("def f():\n" + _body(MAX_FUNCTION_LINES - 1), []),
        ("@decorator\ndef f():\n" + _body(MAX_FUNCTION_LINES - 1), []),
        ("class C:\n    async def f(self):\n" + _body(MAX_FUNCTION_LINES, indent=8), ["m.py:2: f (81 lines > 80)"]),
    ],
    ids=["file-at-limit", "file-over-limit", "file-with-reason", "function-at-limit", "decorator-not-counted",
         "method-over-limit"],
)
def test_offenders_are_measured_as_stated(text: str, expected: list[str]) -> None:
    assert offenders(Path("m.py"), text) == expected
