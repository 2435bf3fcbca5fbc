"""Reading and writing the project's files: read with one error shape, written whole or not at all.

Every reader raises `HivedlabError` with one line: `<path>: cannot read (<why>)`, `<path>: not UTF-8 text`,
`<path>: line N: not valid YAML (<problem>)` or `<path>: line N: not valid JSON (<problem>)`.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from hivedlab.basics.errors import HivedlabError

# libyaml's loader when PyYAML was built with it (several times faster on large HiveD configs), else PyYAML's own
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(path: str | Path, name: str | None = None) -> str:
    """A UTF-8 text file (`-` is standard input); `name` replaces the path in the error (e.g. a relative one)."""
    where = name or str(path)
    try:
        if str(path) == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise HivedlabError(f"{where}: not UTF-8 text") from None
    except OSError as exc:
        raise HivedlabError(f"{where}: cannot read ({exc.strerror or exc})") from None


def parse_yaml(text: str, where: str) -> Any:
    """YAML text as data; `where` names it in the error."""
    try:
        return yaml.load(text, Loader=YAML_LOADER)  # a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise HivedlabError(f"{where}:{line} not valid YAML ({problem})") from None


def read_yaml(path: str | Path, name: str | None = None) -> Any:
    return parse_yaml(read_text(path, name), name or str(path))


def read_json(path: str | Path, name: str | None = None) -> Any:
    where = name or str(path)
    text = read_text(path, name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HivedlabError(f"{where}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise HivedlabError(f"{where}: not valid JSON (nested too deeply)") from None


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file whole or not at all: a temp file in the same folder, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(data)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as text:
                text.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; reports and charts are for others to read too
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
