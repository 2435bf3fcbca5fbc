"""The v2 job protocol as rest-server v1.2.0 reads and checks it on submission (docs/openpai-model.md#the-job-protocol).

Three steps, in the rest-server's order:

1. `parse_yaml(text)`: js-yaml 3 `safeLoad` semantics (YAML 1.2 core schema, docs/openpai-model.md#yaml-dialect),
   with the position of every key, the places where PyYAML (YAML 1.1) would read a value differently, and bounds on
   the work (nodes after alias expansion, nesting depth) instead of trusting the input.
2. `schema_issues(protocol)`: the JSON Schema of `configs/schemas/job-protocol.schema.json` (the protocol schema and
   the HiveD schema, docs/openpai-model.md#task-roles); each issue says which of the two schemas it belongs to.
3. `semantic_issues(protocol)`: the checks after the schema (docs/openpai-model.md#checks-after-the-schema) with the
   rest-server's messages.

Rendering (docs/openpai-model.md#rendering-and-defaults) is in `hivedlab.models.openpai.admission`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hivedlab.basics.resources import SCHEMAS

SCHEMA_PATH = SCHEMAS / "job-protocol.schema.json"
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

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:  # noqa: D102
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

STAGE_SCHEMA, STAGE_HIVED_SCHEMA = "schema", "hived_schema"
_PREREQ_BRANCH: dict[str | None, int] = {"script": 0, "output": 0, "data": 1, "dockerimage": 2}


@dataclass(frozen=True)
class Issue:
    """One problem: `stage` as in the protocol cases, `pointer` at the offending key, `message` says what to change."""

    stage: str
    pointer: str
    message: str
    keyword: str = ""


def _python_patterns(node: Any) -> Any:
    """ECMAScript's `$` is the very end; Python's also matches before a final newline
    (docs/openpai-model.md#task-roles): use `\\Z`."""
    if isinstance(node, dict):
        out: dict[Any, Any] = {}
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                out[key] = _dollar_to_z(value)
            elif key == "patternProperties" and isinstance(value, dict):
                out[key] = {_dollar_to_z(k): _python_patterns(v) for k, v in value.items()}
            else:
                out[key] = _python_patterns(value)
        return out
    if isinstance(node, list):
        return [_python_patterns(v) for v in node]
    return node


def _dollar_to_z(pattern: str) -> str:
    return pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith(r"\$") else pattern


@lru_cache(maxsize=1)
def job_schema() -> dict[str, Any]:
    """The schema file as written (ECMAScript regexes), for editors and other tools."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))  # the file is one JSON object
    return schema


def _inline_refs(node: Any, definitions: Mapping[str, Any]) -> Any:
    """Replace each local `$ref` by its definition (the schema has no cycles): validation skips ref resolution."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/") and len(node) == 1:
            return _inline_refs(definitions[ref.rsplit("/", 1)[1]], definitions)
        return {k: _inline_refs(v, definitions) for k, v in node.items() if k != "definitions"}
    if isinstance(node, list):
        return [_inline_refs(v, definitions) for v in node]
    return node


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft7Validator:
    schema = job_schema()
    return jsonschema.Draft7Validator(_python_patterns(_inline_refs(schema, schema.get("definitions", {}))))


def schema_issues(protocol: Any) -> list[Issue]:
    """Every JSON-Schema problem (ajv runs with allErrors), protocol-schema issues first, then HiveD-schema ones."""
    issues = []
    for error in _validator().iter_errors(protocol):
        issues.extend(_describe(error))
    issues.sort(key=lambda i: (i.stage == STAGE_HIVED_SCHEMA, i.pointer))
    return issues


def _describe(error: jsonschema.ValidationError) -> list[Issue]:
    path = list(error.absolute_path)
    stage = STAGE_HIVED_SCHEMA if path[:2] == ["extras", "hivedScheduler"] else STAGE_SCHEMA
    ptr = pointer_of(path)
    # jsonschema's stubs allow `Unset` for hand-made errors; those from validation carry keyword, schema and value
    kw = error.validator if isinstance(error.validator, str) else ""
    inst = error.instance
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    where = _where(path)
    if kw == "oneOf" and isinstance(inst, dict):
        branch = _PREREQ_BRANCH.get(inst.get("type"))
        if branch is None:
            return [Issue(stage, ptr + "/type" if "type" in inst else ptr,
                          "a prerequisite's type must be one of dockerimage, script, output, data", "enum")]
        return [issue for sub in error.context or [] if sub.schema_path and sub.schema_path[0] == branch
                for issue in _describe(sub)] or [Issue(stage, ptr, "this prerequisite does not match its type", kw)]
    if kw == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        name = missing[0] if missing else str(error.validator_value)
        return [Issue(stage, ptr, f"{where} is missing the required key '{name}': add it", kw)]
    if kw == "additionalProperties":
        allowed = sorted((schema.get("properties") or {}).keys())
        extras = [k for k in inst if k not in allowed] if isinstance(inst, dict) else []
        patterns = list((schema.get("patternProperties") or {}).keys())
        out = []
        for key in extras:
            if patterns and any(re.search(p, str(key)) for p in patterns):
                continue
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            if patterns and not allowed:
                rule = ("may contain only letters, digits and '_' and must not start with a digit"
                        if "a-zA-Z_" in patterns[0] else f"must match {patterns[0]}")
                msg = f"the name '{key}' is not allowed here: names {rule}"
            else:
                msg = f"unknown key '{key}' is not allowed here{hint}; allowed: {', '.join(allowed) or 'none'}"
            out.append(Issue(stage, f"{ptr}/{escape(str(key))}", msg, kw))
        return out or [Issue(stage, ptr, error.message, kw)]
    if kw == "type":
        want = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        got = _type_name(inst)
        return [Issue(stage, ptr, f"{where} must be {' or '.join(map(_article, want))}, not {got}", kw)]
    if kw == "enum":
        choices = error.validator_value if isinstance(error.validator_value, list) else []
        listed = ", ".join(json.dumps(v) for v in choices)
        return [Issue(stage, ptr, f"{where} must be one of {listed}, not {json.dumps(_jsonable(inst))}", kw)]
    if kw == "pattern":
        pattern = error.validator_value if isinstance(error.validator_value, str) else ""
        rule = "only letters, digits, '_' and '-'" if "a-zA-Z0-9_-" in pattern else pattern
        return [Issue(stage, ptr, f"{where} {json.dumps(inst)} may contain {rule}", kw)]
    if kw == "maxLength":
        return [Issue(stage, ptr, f"{where} is longer than {error.validator_value} characters: shorten it", kw)]
    if kw in ("minItems", "minProperties"):
        return [Issue(stage, ptr, f"{where} must not be empty", kw)]
    if kw == "minimum":
        return [Issue(stage, ptr, f"{where} must be at least {error.validator_value}, not {inst}", kw)]
    return [Issue(stage, ptr, f"{where}: {error.message}", kw)]


def _where(path: list[Any]) -> str:
    if not path:
        return "the job"
    if isinstance(path[-1], int):
        return f"'{path[-2]}[{path[-1]}]'" if len(path) > 1 else f"item {path[-1]}"
    return f"'{path[-1]}'"


def _article(type_name: str) -> str:
    return {"integer": "an integer", "object": "a mapping", "array": "a list", "null": "null"}.get(
        type_name, f"a {type_name}")


def _type_name(value: Any) -> str:
    if isinstance(value, Timestamp):
        return f"the date {value.text} (quote it to make it a string)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {js_number_text(value)}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    return "a list" if isinstance(value, list) else "a mapping"


def _jsonable(value: Any) -> Any:
    return value.text if isinstance(value, Timestamp) else value if not isinstance(value, dict | list) else str(value)


# ---------------------------------------------------------------------------------------------------------------
# Checks after the schema (docs/openpai-model.md#checks-after-the-schema)
# ---------------------------------------------------------------------------------------------------------------

STAGE_SEMANTIC = "semantic"


def semantic_issues(protocol: Mapping[str, Any]) -> list[Issue]:
    """The rest-server's checks in its order; the first one is the message it answers with."""
    issues: list[Issue] = []
    seen: set[tuple[str, str]] = set()
    for i, prereq in enumerate(protocol.get("prerequisites") or []):
        key = (prereq["type"], prereq["name"])
        if key in seen:
            issues.append(Issue(STAGE_SEMANTIC, f"/prerequisites/{i}/name",
                                f"Duplicate {key[0]} prerequisites {key[1]}."))
        seen.add(key)
    names: set[str] = set()
    for i, deployment in enumerate(protocol.get("deployments") or []):
        if deployment["name"] in names:
            issues.append(Issue(STAGE_SEMANTIC, f"/deployments/{i}/name",
                                f"Duplicate deployments {deployment['name']}."))
        names.add(deployment["name"])
    for role, spec in (protocol.get("taskRoles") or {}).items():
        for field, kind in (("dockerImage", "dockerimage"), ("script", "script"), ("data", "data"),
                            ("output", "output")):
            if field in spec and (kind, spec[field]) not in seen:
                issues.append(Issue(STAGE_SEMANTIC, f"/taskRoles/{escape(role)}/{field}",
                                    f"Prerequisite {spec[field]} does not exist."))
    default = (protocol.get("defaults") or {}).get("deployment")
    if default is not None and default not in names:
        issues.append(Issue(STAGE_SEMANTIC, "/defaults/deployment", f"Default deployment {default} does not exist."))
    return issues
