"""YAML as rest-server v1.2.0 reads a job: js-yaml 3 `safeLoad` semantics (YAML 1.2 core schema,
docs/openpai-model.md#yaml-dialect), with the position of every key, the places where PyYAML (YAML 1.1) would read a
value differently, and bounds on the work (nodes after alias expansion, nesting depth) instead of trusting the
input. Used by the protocol checks (`protocol`) and by validation."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_NODES = 100_000  # nodes built after alias expansion; a job has a few hundred
MAX_DEPTH = 100  # nesting levels; a job has about 6

# ---------------------------------------------------------------------------------------------------------------
# YAML: js-yaml 3.13 safeLoad (docs/openpai-model.md#yaml-dialect)
# ---------------------------------------------------------------------------------------------------------------

_STR, _NULL, _BOOL, _INT, _FLOAT, _TS, _MERGE = (
    "tag:yaml.org,2002:" + t for t in ("str", "null", "bool", "int", "float", "timestamp", "merge")
)
_JS_NULL = re.compile(r"^(?:~|null|Null|NULL)?$")
_JS_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_JS_INT = re.compile(
    r"^[-+]?(?:0b[01_]*[01][01_]*|0x[0-9a-fA-F_]*[0-9a-fA-F][0-9a-fA-F_]*|0[0-7_]*[0-7][0-7_]*|0"
    r"|[1-9][0-9_]*(?::[0-5]?[0-9])+|[1-9](?:[0-9_]*[0-9])?)$"
)
_JS_FLOAT = re.compile(
    r"^(?:[-+]?(?:0|[1-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_JS_TS = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$|^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
    r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?$"
)
_PY_RESOLVER = yaml.resolver.Resolver()
_IMPLICIT = "implicit:"


def _tag_of(node: ScalarNode) -> tuple[str, bool]:
    """(tag, resolved from a plain scalar without a written tag)."""
    if node.tag.startswith(_IMPLICIT):
        return node.tag[len(_IMPLICIT):], True
    return node.tag, False


class Timestamp(dict[str, Any]):
    """An unquoted date: js-yaml makes it a JavaScript Date, which ajv sees as an object
    (docs/openpai-model.md#yaml-dialect)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class _Resolver12(yaml.resolver.BaseResolver):
    """Plain scalars resolved like js-yaml's DEFAULT_SAFE_SCHEMA (YAML 1.2 core + timestamp + merge)."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode and implicit[0]:
            return _IMPLICIT + _js_tag(value)  # marked, so that the builder knows no tag was written
        # (BaseResolver comes next in every MRO this class is part of; types-PyYAML leaves it unannotated)
        tag: str = yaml.resolver.BaseResolver.resolve(self, kind, value, implicit)
        return tag


def _js_tag(value: str) -> str:
    if _JS_NULL.match(value):
        return _NULL
    if _JS_BOOL.match(value):
        return _BOOL
    if _JS_INT.match(value) and not value.endswith("_"):
        return _INT
    if _JS_FLOAT.match(value) and not value.endswith("_"):
        return _FLOAT
    if _JS_TS.match(value):
        return _TS
    if value == "<<":
        return _MERGE
    return _STR


class _PyComposer(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer,
                  _Resolver12):
    """The pure-Python composer, for a PyYAML without libyaml."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _Resolver12.__init__(self)


_Composer: type[_PyComposer] | type[_CComposer]
if yaml.__with_libyaml__:  # libyaml: about ten times faster
    from yaml._yaml import CParser

    class _CComposer(CParser, _Resolver12):
        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            _Resolver12.__init__(self)

    _Composer = _CComposer
else:  # pragma: no cover - PyYAML without libyaml
    _Composer = _PyComposer


class YamlError(Exception):
    """The rest-server's js-yaml would refuse the text (HTTP 500, docs/openpai-model.md#submission-pipeline); line/col
    are 1-based (0 = unknown)."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


@dataclass(frozen=True)
class DialectNote:
    """A value that PyYAML (YAML 1.1) reads differently from the rest-server's js-yaml (YAML 1.2)."""

    pointer: str
    line: int
    col: int
    message: str


@dataclass(frozen=True)
class ParsedYaml:
    data: Any
    positions: Mapping[str, tuple[int, int]]  # JSON pointer -> (line, col) of its key (items: of the item)
    dialect: tuple[DialectNote, ...]


def escape(key: str) -> str:
    """One JSON-pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def pointer_of(path: Iterator[Any] | tuple[Any, ...] | list[Any]) -> str:
    return "".join("/" + escape(str(part)) for part in path)


_DEEP_FLOW = re.compile(r"[\[{](?:\s*[\[{]){" + str(MAX_DEPTH) + "}")
_DEEP_BLOCK = re.compile(r"^ {" + str(4 * MAX_DEPTH) + "}", re.MULTILINE)


def parse_yaml(text: str, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH) -> ParsedYaml:
    """Parse one YAML document as js-yaml 3 `safeLoad` would; raises YamlError where js-yaml throws."""
    deep = _DEEP_FLOW.search(text) or _DEEP_BLOCK.search(text)  # refuse before the composer recurses
    if deep:
        line = text.count("\n", 0, deep.start()) + 1
        raise YamlError(f"nesting deeper than {MAX_DEPTH} levels; refusing to read it", line,
                        deep.start() - text.rfind("\n", 0, deep.start()))
    try:
        node = _Composer(text).get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(part for part in (exc.context, exc.problem) if part)
        raise YamlError(f"YAML syntax error: {what}", *_pos(mark)) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"YAML syntax error: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise YamlError("nesting too deep; refusing to read it") from None
    builder = _Builder(max_nodes, max_depth)
    data = None if node is None else builder.build(node, "", 0)
    return ParsedYaml(data, builder.positions, tuple(builder.dialect))


def _pos(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


class _Builder:
    """Nodes -> Python values with js-yaml's rules, counting work so that an alias bomb stops early."""

    def __init__(self, max_nodes: int, max_depth: int) -> None:
        self.max_nodes, self.max_depth, self.count = max_nodes, max_depth, 0
        self.positions: dict[str, tuple[int, int]] = {"": (1, 1)}
        self.dialect: list[DialectNote] = []

    def build(self, node: Node, ptr: str, depth: int) -> Any:
        self.count += 1
        if self.count > self.max_nodes:
            raise YamlError(
                f"the document expands to more than {self.max_nodes} values (aliases?); refusing to read it",
                *_pos(node.start_mark),
            )
        if depth > self.max_depth:
            raise YamlError(f"nesting deeper than {self.max_depth} levels; refusing to read it", *_pos(node.start_mark))
        if isinstance(node, ScalarNode):
            return self.scalar(node, ptr)
        if isinstance(node, SequenceNode):
            if node.tag not in ("tag:yaml.org,2002:seq",):
                raise YamlError(f"unsupported tag {node.tag} (the rest-server's js-yaml refuses it)",
                                *_pos(node.start_mark))
            items = []
            for i, child in enumerate(node.value):
                child_ptr = f"{ptr}/{i}"
                self.positions.setdefault(child_ptr, _pos(child.start_mark))
                items.append(self.build(child, child_ptr, depth + 1))
            return items
        if isinstance(node, MappingNode):
            if node.tag not in ("tag:yaml.org,2002:map",):
                raise YamlError(f"unsupported tag {node.tag} (the rest-server's js-yaml refuses it)",
                                *_pos(node.start_mark))
            return self.mapping(node, ptr, depth)
        raise YamlError("unsupported YAML node", *_pos(node.start_mark))  # pragma: no cover

    def mapping(self, node: MappingNode, ptr: str, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        overridable: set[str] = set()
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and _tag_of(key_node) == (_MERGE, True):
                self.merge(result, overridable, value_node, ptr, depth)
                continue
            if not isinstance(key_node, ScalarNode):
                raise YamlError("a mapping key must be a plain value, not a list or mapping",
                                *_pos(key_node.start_mark))
            key = _js_key(self.scalar(key_node, None))
            py_tag = _PY_RESOLVER.resolve(ScalarNode, key_node.value, (True, False))
            if _tag_of(key_node)[1] and py_tag != _STR:
                self.note(f"{ptr}/{escape(key)}", key_node, f"the key '{key}' is a {_kind(py_tag)} for PyYAML but a "
                          "string for the rest-server: quote it")
            if key in result and key not in overridable:
                raise YamlError(f"duplicated mapping key '{key}' (the rest-server refuses the job with HTTP 500)",
                                *_pos(key_node.start_mark))
            overridable.discard(key)
            child_ptr = f"{ptr}/{escape(key)}"
            self.positions[child_ptr] = _pos(key_node.start_mark)
            result[key] = self.build(value_node, child_ptr, depth + 1)
        return result

    def merge(self, result: dict[str, Any], overridable: set[str], node: Node, ptr: str, depth: int) -> None:
        sources = node.value if isinstance(node, SequenceNode) else [node]
        for source in sources:
            if not isinstance(source, MappingNode):
                raise YamlError("cannot merge mappings; the provided source object is unacceptable",
                                *_pos(source.start_mark))
            for key, value in self.mapping(source, ptr, depth).items():
                if key not in result:
                    result[key] = value
                    overridable.add(key)

    def scalar(self, node: ScalarNode, ptr: str | None) -> Any:
        (tag, implicit), text = _tag_of(node), node.value
        if implicit and ptr is not None:
            self.compare_with_pyyaml(node, tag, ptr)
        if tag == _STR:
            return text
        if tag == _NULL:
            if not _JS_NULL.match(text):
                raise YamlError(f"cannot resolve '{text}' as null", *_pos(node.start_mark))
            return None
        if tag == _BOOL:
            if not _JS_BOOL.match(text):
                raise YamlError(f"cannot resolve '{text}' as a boolean (YAML 1.2 has only true/false)",
                                *_pos(node.start_mark))
            return text.lower() == "true"
        if tag == _INT:
            value = _js_int(text)
            if value is None:
                raise YamlError(f"cannot resolve '{text}' as an integer", *_pos(node.start_mark))
            return value
        if tag == _FLOAT:
            value = _js_float(text)
            if value is None:
                raise YamlError(f"cannot resolve '{text}' as a number", *_pos(node.start_mark))
            return value
        if tag == _TS:
            return Timestamp(text)
        raise YamlError(f"unknown tag {tag} (the rest-server's js-yaml refuses it)", *_pos(node.start_mark))

    def compare_with_pyyaml(self, node: ScalarNode, tag: str, ptr: str) -> None:
        py_tag = _PY_RESOLVER.resolve(ScalarNode, node.value, (True, False))
        if py_tag == tag or tag == _MERGE:
            return
        text = node.value
        if py_tag == _BOOL:
            hint = f"use true or false (quote it if you mean the text '{text}')"
        else:
            hint = "quote it" if tag != _STR else "write it so both read it alike (e.g. quote it)"
        self.note(ptr, node, f"'{text}' is a {_kind(tag)} for the rest-server (YAML 1.2) but a "
                  f"{_kind(py_tag)} for PyYAML (YAML 1.1): {hint}")

    def note(self, ptr: str, node: Node, message: str) -> None:
        line, col = _pos(node.start_mark)
        self.dialect.append(DialectNote(ptr, line, col, message))


def _kind(tag: str) -> str:
    return {_STR: "string", _NULL: "null", _BOOL: "boolean", _INT: "integer", _FLOAT: "number",
            _TS: "date", _MERGE: "merge key"}.get(tag, tag)


def _js_key(value: Any) -> str:
    """JavaScript object keys are strings: String(value)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Timestamp):
        return value.text
    return js_number_text(value)


def js_number_text(value: float | int) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
    return str(value)


def _js_int(text: str) -> int | float | None:
    body = text.replace("_", "")
    sign = -1 if body.startswith("-") else 1
    body = body.lstrip("+-")
    try:
        if body.startswith("0b"):
            return sign * int(body[2:], 2)
        if body.startswith("0x"):
            return sign * int(body[2:], 16)
        if ":" in body:
            value = 0
            for part in body.split(":"):
                value = value * 60 + int(part)
            return sign * value
        if len(body) > 1 and body.startswith("0"):
            return sign * int(body, 8)
        return sign * int(body)
    except ValueError:
        return None


def _js_float(text: str) -> float | None:
    body = text.replace("_", "")
    lowered = body.lower()
    if lowered in (".inf", "+.inf"):
        return math.inf
    if lowered == "-.inf":
        return -math.inf
    if lowered == ".nan":
        return math.nan
    try:
        if ":" in body:
            sign = -1 if body.startswith("-") else 1
            value = 0.0
            for part in body.lstrip("+-").split(":"):
                value = value * 60 + float(part)
            return sign * value
        return float(body)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------------------
# JSON Schema (docs/openpai-model.md#task-roles)
# ---------------------------------------------------------------------------------------------------------------
