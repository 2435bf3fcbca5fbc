"""The run directory's names have one owner, `hivedlab.rundir`: no other module of src/ spells them as a path, and the
layout in docs/architecture.md is rundir's own table.

A path is a string constant (or a constant part of an f-string) without spaces or non-ASCII text that is one of the
run directory's file names, holds one as a `/`-separated segment, or starts with one of its folders and a `/`; or a
folder name joined with `/` onto a path. Prose (help text, messages, docstrings) may mention a name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hivedlab import rundir

SRC = Path(__file__).resolve().parents[1] / "src" / "hivedlab"
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
NAMES = {value for key, value in vars(rundir).items() if key.isupper() and isinstance(value, str)}
FILES = {name for name in NAMES if "." in name}
FOLDERS = NAMES - FILES
# the repository's shipped configs/hived/ and configs/hived/contrast/, whose names the run directory's copies share
SHIPPED_TREE = {("basics/resources.py", "hived"), ("lab_group/layouts.py", "contrast")}


def _docstrings(tree: ast.AST) -> set[int]:
    owners = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                                          ast.AsyncFunctionDef))]
    return {id(n.body[0].value) for n in owners
            if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def _path_name(text: str) -> str | None:
    """The run directory's name that `text`, read as a path, spells; None for prose or another path."""
    if not text.isascii() or any(c.isspace() for c in text):
        return None
    segments = text.split("/")
    hit = next((s for s in segments if s in FILES), None)
    if hit is None and len(segments) > 1 and segments[0] in FOLDERS:
        hit = segments[0]
    return hit


def spelt_names(source: str) -> list[tuple[int, str]]:
    """(line, name) for each of the run directory's names that `source` spells as a path."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            name = _path_name(node.value)
            if name is not None:
                found.append((node.lineno, name))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found += [(side.lineno, side.value) for side in (node.left, node.right)
                      if isinstance(side, ast.Constant) and isinstance(side.value, str) and side.value in FOLDERS]
    return sorted(set(found))


def test_the_detector_finds_a_spelt_path() -> None:
    source = '"""run.json is fine here."""\nA = root / "pai" / "submitted.json"\nB = f"{base}experiments/{x}"\n' \
             'C = "no run.json found"\nD = f"{folder}/evidence.jsonl"\n'
    assert spelt_names(source) == [(2, "pai"), (2, "submitted.json"), (3, "experiments"), (5, "evidence.jsonl")]


def test_no_module_but_rundir_spells_a_run_directory_name() -> None:
    spelt = []
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        if module == "rundir.py":
            continue
        spelt += [f"{module}:{line}: {name!r}" for line, name in spelt_names(path.read_text(encoding="utf-8"))
                  if (module, name) not in SHIPPED_TREE]
    assert not spelt, "spell these with hivedlab.rundir's names:\n" + "\n".join(spelt)


def test_the_docs_layout_is_rundirs_table() -> None:
    assert rundir.layout_block() in ARCHITECTURE.read_text(encoding="utf-8"), (
        "docs/architecture.md's \"Run directory\" block is not hivedlab.rundir.LAYOUT: replace it with the output of "
        "`PYTHONPATH=src python -c 'from hivedlab.rundir import layout_block; print(layout_block())'`")


def test_every_run_directory_name_is_in_the_layout() -> None:
    paths = " ".join(path for path, _ in rundir.LAYOUT)
    assert [name for name in sorted(NAMES) if name not in paths] == []
