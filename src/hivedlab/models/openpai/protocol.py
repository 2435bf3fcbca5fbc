"""The v2 job protocol as rest-server v1.2.0 reads and checks it on submission (docs/openpai-model.md#the-job-protocol).

Three steps, in the rest-server's order:

1. `js_yaml.parse_yaml(text)`: js-yaml 3 `safeLoad` semantics (YAML 1.2 core schema,
   docs/openpai-model.md#yaml-dialect), in a module of its own.
2. `schema_issues(protocol)`: the JSON Schema of `configs/schemas/job-protocol.schema.json` (the protocol schema and
   the HiveD schema, docs/openpai-model.md#task-roles); each issue says which of the two schemas it belongs to.
3. `semantic_issues(protocol)`: the checks after the schema (docs/openpai-model.md#checks-after-the-schema) with the
   rest-server's messages.

Rendering (docs/openpai-model.md#rendering-and-defaults) is in `hivedlab.models.openpai.admission`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema

from hivedlab.basics.resources import SCHEMAS
from hivedlab.models.openpai.js_yaml import Timestamp, escape, js_number_text, pointer_of

SCHEMA_PATH = SCHEMAS / "job-protocol.schema.json"
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


@dataclass(frozen=True)
class JobNameRule:
    """What a job's name may hold (the schema's `definitions.name`, docs/openpai-model.md#top-level)."""

    characters: str  # the inside of a regex character class, e.g. `a-zA-Z0-9_-`
    max_length: int


@lru_cache(maxsize=1)
def job_name_rule() -> JobNameRule:
    """The job-name rule as the schema writes it: a pattern `^[<characters>]+$` and a maxLength."""
    name = job_schema()["definitions"]["name"]
    match = re.fullmatch(r"\^\[(?P<chars>[^\]]+)\]\+\$", name["pattern"])
    if match is None:
        raise ValueError(f"{SCHEMA_PATH.name}: the job name's pattern {name['pattern']} is not ^[...]+$")
    return JobNameRule(match["chars"], int(name["maxLength"]))


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
