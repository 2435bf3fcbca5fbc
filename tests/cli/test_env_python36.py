"""The machine check and the numbered lab scripts on the lab machines' system Python (3.6): what they may parse,
call and import, checked from the source, and runs under each old Python that is installed."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.envcheck_runs import SCRIPT, validate
from tests.support.local import DOCKER, nvidia_smi_script, write_program
from tests.support.old_pythons import OLD_PYTHONS, OLD_VERSIONS, bare_env, old_python_or_skip
from tests.support.paths import ROOT

# ------------------------------------------------------------ Python 3.6 compatibility

# What the lab machines' system Python (Ubuntu 18.04: 3.6) runs before hivedlab is installed: the lab scripts (until
# find_venv re-runs them in .venv), the package's __init__, the machine check that labs/00_check_env.py imports, and
# the Python check `make venv` runs first.
LABS = ROOT / "labs"
ENVCHECK = ROOT / "src" / "hivedlab" / "envcheck"
PY36_FILES = [*sorted(LABS.glob("*.py")), ROOT / "src" / "hivedlab" / "__init__.py", *sorted(ENVCHECK.glob("*.py")),
              ROOT / "scripts" / "check_python.py"]
PY36_IDS = [path.relative_to(ROOT).as_posix() for path in PY36_FILES]

NEWER_MODULES = {"contextvars", "dataclasses", "graphlib", "importlib.metadata", "importlib.resources", "tomllib",
                 "zoneinfo"}
NEWER_ATTRIBUTES = {"fromisoformat", "fromisocalendar", "removeprefix", "removesuffix", "nullcontext", "time_ns",
                    "monotonic_ns", "isascii", "cached_property"}
NEWER_TYPING = {"Literal", "TypedDict", "Protocol", "Final", "final", "runtime_checkable", "Annotated", "ParamSpec",
                "Concatenate", "TypeAlias", "TypeGuard", "Self", "Never", "LiteralString", "Unpack", "Required",
                "NotRequired", "OrderedDict", "SupportsIndex", "get_origin", "get_args"}
# builtins that only 3.9 subscripts at run time (PEP 585); so are collections.abc's and collections' classes
PEP_585_BUILTINS = {"list", "dict", "set", "frozenset", "tuple", "type"}
COLLECTIONS_MODULES = ("abc", "collections", "collections.abc")


def test_the_python_3_6_files_are_all_there():
    names = set(PY36_IDS)
    assert {"labs/00_check_env.py", "labs/find_venv.py", "src/hivedlab/__init__.py",
            "src/hivedlab/envcheck/__init__.py", "src/hivedlab/envcheck/probes.py"} <= names
    assert len([n for n in names if n.startswith("labs/0")]) >= 8


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_parses_as_python_3_6(path):
    ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 6))


def _newer_apis(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            found.append("from __future__ import")
        if isinstance(node, ast.ImportFrom) and node.module in NEWER_MODULES:
            found.append(f"from {node.module} import")
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name in NEWER_MODULES]
        if isinstance(node, ast.ImportFrom) and node.module == "typing":
            found += [f"typing.{a.name}" for a in node.names if a.name in NEWER_TYPING]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "typing":
            found += [f"typing.{node.attr}"] if node.attr in NEWER_TYPING else []
        if isinstance(node, ast.Call):
            found += [f"{kw.arg}=" for kw in node.keywords if kw.arg in ("capture_output", "text")]
        if isinstance(node, ast.Attribute) and node.attr in NEWER_ATTRIBUTES:
            found.append(node.attr)
        if isinstance(node, ast.JoinedStr):
            found.append("f-string")  # legal in 3.6, but '=' specifiers are not: keep .format() throughout
    return found


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_avoids_apis_newer_than_python_3_6(path):
    assert _newer_apis(ast.parse(path.read_text(encoding="utf-8"))) == []


def _annotations(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs,
                             arguments.kwarg]:
                if argument is not None and argument.annotation is not None:
                    found.append(argument.annotation)
            if node.returns is not None:
                found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def _collections_names(tree: ast.AST) -> set[str]:
    """The names bound by `from collections.abc import ...` or `from collections import ...`."""
    return {alias.asname or alias.name for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module in COLLECTIONS_MODULES
            for alias in node.names}


def _newer_annotation_syntax(annotation: ast.expr, collections_names: set[str]) -> list[str]:
    """PEP 604 (`X | Y`) and PEP 585 (`list[str]`, `collections.abc.Callable[...]`) in an annotation, quoted ones
    too: Python 3.6 evaluates most annotations when it defines the function, and ast.parse(feature_version=(3, 6))
    lets both through."""
    found = []
    for node in ast.walk(annotation):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            found.append(f"{ast.unparse(node)} (PEP 604)")
        if isinstance(node, ast.Subscript):
            base = node.value
            in_collections = isinstance(base, ast.Attribute) and ast.unparse(base.value) in COLLECTIONS_MODULES
            generic = in_collections or (isinstance(base, ast.Name) and base.id in PEP_585_BUILTINS | collections_names)
            found += [f"{ast.unparse(node)} (PEP 585)"] if generic else []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += _newer_annotation_syntax(ast.parse(node.value, mode="eval").body, collections_names)
    return found


def _newer_annotations(tree: ast.AST) -> list[str]:
    names = _collections_names(tree)
    return [text for annotation in _annotations(tree) for text in _newer_annotation_syntax(annotation, names)]


def test_the_annotation_check_sees_pep_604_and_585():
    tree = ast.parse("import typing\nfrom collections.abc import Iterator\nfrom typing import Callable\n"
                     "def f(a: list[str] | None, *b: 'dict[str, int]', c: typing.List[int] = [],\n"
                     "      d: collections.abc.Callable[[], int] = None) -> typing.Optional[tuple[int]]:\n"
                     "    e: Iterator[int] = iter([])\n"
                     "def g(h: Callable[[], float], i: typing.Dict[str, 'typing.Optional[int]']) -> None: ...\n")
    assert _newer_annotations(tree) == [
        "list[str] | None (PEP 604)", "list[str] (PEP 585)", "dict[str, int] (PEP 585)",
        "collections.abc.Callable[[], int] (PEP 585)", "tuple[int] (PEP 585)", "Iterator[int] (PEP 585)"]


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_annotations_use_no_pep_604_or_585_syntax(path):
    assert _newer_annotations(ast.parse(path.read_text(encoding="utf-8"))) == []


def _nodes_in_try(tree: ast.AST) -> set[int]:
    return {id(inner) for node in ast.walk(tree) if isinstance(node, ast.Try)
            for statement in node.body for inner in ast.walk(statement)}


def _nodes_after_the_venv_step(tree: ast.Module) -> set[int]:
    """What a numbered script runs after `use_repository_venv()` in its `if __name__ == "__main__":` block, i.e. in
    .venv's Python."""
    after: set[int] = set()
    for block in (node for node in tree.body if isinstance(node, ast.If)):
        started = False
        for statement in block.body:
            if started:
                after |= {id(inner) for inner in ast.walk(statement)}
            call = statement.value if isinstance(statement, ast.Expr) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "use_repository_venv":
                started = True
    return after


def _import_allowed(path: Path, name: str, in_try: bool, after_venv_step: bool) -> bool:
    """The standard library everywhere; besides it, what each kind of 3.6 file may import."""
    if name.split(".")[0] in sys.stdlib_module_names:
        return True
    in_envcheck = name == "hivedlab.envcheck" or name.startswith("hivedlab.envcheck.")
    if path.parent == ENVCHECK:  # its own modules (`from . import`, `from .probes import`), docker only if installed
        sibling = name.startswith(".") and not name.startswith("..")
        return sibling or in_envcheck or (name == "docker" and in_try)
    if path == SCRIPT:
        return in_envcheck
    if path == LABS / "find_venv.py":  # the probe whether hivedlab is installed
        return name == "hivedlab" and in_try
    if path.parent == LABS:  # hivedlab once find_venv has re-run the script with .venv's Python
        return name == "find_venv" or (name.split(".")[0] == "hivedlab" and after_venv_step)
    return False


def _foreign_imports(path: Path, source: str) -> list[str]:
    tree = ast.parse(source)
    in_try, after_venv_step = _nodes_in_try(tree), _nodes_after_the_venv_step(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        else:
            continue
        found += [f"line {node.lineno}: {name}" for name in names
                  if not _import_allowed(path, name, id(node) in in_try, id(node) in after_venv_step)]
    return found


def test_the_import_check_sees_what_a_3_6_file_may_not_import():
    source = ("import json\nimport yaml\nfrom . import probes\nfrom .. import basics\nfrom hivedlab.basics import x\n"
              "import docker\ntry:\n    import docker\nexcept ImportError:\n    pass\n")
    assert _foreign_imports(ENVCHECK / "new.py", source) == [
        "line 2: yaml", "line 4: ..", "line 5: hivedlab.basics", "line 6: docker"]
    assert _foreign_imports(LABS / "09_new.py", "from find_venv import use_repository_venv\nimport hivedlab\n"
                            "if __name__ == '__main__':\n    from hivedlab import a\n    use_repository_venv()\n"
                            "    from hivedlab import b\n") == ["line 2: hivedlab", "line 4: hivedlab"]
    assert _foreign_imports(SCRIPT, "from hivedlab.envcheck import main\nimport hivedlab.cli\n") == [
        "line 2: hivedlab.cli"]


@pytest.mark.parametrize("path", PY36_FILES, ids=PY36_IDS)
def test_imports_only_the_standard_library(path):
    assert _foreign_imports(path, path.read_text(encoding="utf-8")) == []


PYTHON36, NO_PYTHON36 = OLD_PYTHONS["3.6"]
needs_python36 = pytest.mark.skipif(PYTHON36 is None, reason=NO_PYTHON36)
NUMBERED = sorted(path.name for path in LABS.glob("0[1-9]_*.py"))


@needs_python36
@pytest.mark.usefixtures("proc_net")  # the script reads it from --proc-net
def test_script_runs_under_python_3_6(fake_bin, tmp_path):
    write_program(fake_bin, "nvidia-smi", nvidia_smi_script(tmp_path))
    write_program(fake_bin, "docker", f'cat "{DOCKER / "docker-info-nvidia-default.json"}"\n')
    records = []
    for python in (PYTHON36, sys.executable):
        out = tmp_path / f"rec-{len(records)}.json"
        done = subprocess.run([python, "-S", str(SCRIPT), "--member", "Carol", "--no-sdk", "--linux-user", "",
                               "--proc-net", str(tmp_path / "proc-net"), "--out", str(out), "--lang", "en"],
                              capture_output=True, text=True, env=bare_env(), timeout=60, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        record = json.loads(out.read_text(encoding="utf-8"))
        validate(record)
        records.append({k: v for k, v in record.items() if k != "recorded_at"})
    assert records[0] == records[1]  # Python 3.6 writes the record this Python writes


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_the_machine_check_starts_under_each_old_python(version):
    done = subprocess.run([old_python_or_skip(version), "-S", "-s", str(SCRIPT), "--help"], capture_output=True,
                          text=True, env=bare_env(), timeout=60, cwd="/")
    assert done.returncode == 0 and "--gpu-container" in done.stdout, done.stderr


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_a_numbered_script_re_runs_itself_in_the_venv_under_each_old_python(version):
    """find_venv imports on the old Python, then re-runs the script with the checkout's .venv, or says to run
    `make venv`."""
    done = subprocess.run([old_python_or_skip(version), "-S", "-s", str(LABS / "03_vc_safety.py"), "--help"],
                          capture_output=True, text=True, env=bare_env(), timeout=120, cwd="/")
    if (ROOT / ".venv" / "bin" / "python").exists():
        assert done.returncode == 0, done.stderr
        assert "VC safety" in done.stdout and "usage:" in done.stdout
    else:
        assert done.returncode == 2 and "make venv" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_every_numbered_script_without_a_venv_says_what_to_run_under_each_old_python(tmp_path, version):
    python = old_python_or_skip(version)
    labs = tmp_path / "labs"
    labs.mkdir()
    for name in ("find_venv.py", *NUMBERED):
        (labs / name).write_text((LABS / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert len(NUMBERED) == 7
    for name in NUMBERED:
        done = subprocess.run([python, "-S", "-s", str(labs / name)], capture_output=True, text=True,
                              env=bare_env(), timeout=60, cwd="/")
        assert done.returncode == 2 and done.stdout == "", (name, done.stderr)
        assert done.stderr.count("\n") == 1 and "make venv" in done.stderr and "Traceback" not in done.stderr, name
