"""What rest-server v1.2.0 does with `POST /api/v2/jobs` up to the reply, in its pipeline order
(docs/openpai-model.md#submission-pipeline): parse, protocol schema, semantic checks, HiveD schema, HiveD checks
and pod-specs, then the controller's checks.

`admit_job` returns the accepted job (202) or raises `Rejection` with the status, code and message the rest-server
would answer (docs/openpai-model.md#admission-errors, docs/openpai-model.md#error-replies).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from hivedlab.models.openpai import hived_spec, js_yaml
from hivedlab.models.openpai import protocol as proto

MAX_BODY_BYTES = 100 * 1024  # body-parser's default limit (docs/openpai-model.md#yaml-dialect)


@dataclass(frozen=True)
class Rejection(Exception):
    """The rest-server's error reply: `code` is "" for an uncaught exception (HTTP 500 with no code)."""

    status: int
    code: str
    message: str
    pointer: str = ""
    stage: str = ""

    def __str__(self) -> str:
        return f"{self.status} {self.code or '(no code)'}: {self.message}"


@dataclass(frozen=True)
class TaskRolePlan:
    name: str
    instances: int
    pod_scheduling_spec: dict[str, Any]  # the HiveD annotation as a mapping
    # as written; None/0 -> the Framework's default applies (docs/openpai-model.md#task-roles)
    min_failed_instances: int | None
    min_succeeded_instances: int | None
    # deployment pre/post commands and placeholders applied (docs/openpai-model.md#rendering-and-defaults)
    commands: tuple[str, ...]
    resources: dict[str, Any]  # resourcePerInstance


@dataclass(frozen=True)
class AdmittedJob:
    user: str
    name: str
    virtual_cluster: str
    priority: int
    # as HiveD sees it (`gangAllocation === true`, docs/openpai-model.md#gang-allocation-and-affinity-groups)
    gang: bool
    task_roles: tuple[TaskRolePlan, ...]
    protocol: dict[str, Any]  # defaults applied


def parse_body(body: Mapping[str, Any] | str | bytes) -> Any:
    """Body parsing and js-yaml safeLoad (docs/openpai-model.md#submission-pipeline steps 1-2.1)."""
    if isinstance(body, Mapping):
        return body
    raw = body.encode("utf-8") if isinstance(body, str) else body
    if len(raw) > MAX_BODY_BYTES:
        raise Rejection(413, "", "request entity too large", stage="body")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejection(500, "", "the body is not UTF-8 text", stage="yaml_parse") from None
    try:
        return js_yaml.parse_yaml(text).data
    except js_yaml.YamlError as exc:
        raise Rejection(500, "", exc.message, stage="yaml_parse") from None


def check_protocol(data: Any) -> None:
    """Protocol schema then semantic checks (docs/openpai-model.md#checks-after-the-schema); raises the first
    Rejection."""
    issues = [i for i in proto.schema_issues(data) if i.stage == proto.STAGE_SCHEMA]
    if issues:
        raise Rejection(400, "InvalidProtocolError", _ajv_like(issues), issues[0].pointer, "schema")
    semantic = proto.semantic_issues(data)
    if semantic:
        raise Rejection(400, "InvalidProtocolError", semantic[0].message, semantic[0].pointer, "semantic")


def _ajv_like(issues: list[proto.Issue]) -> str:
    """The rest-server answers with the JSON-stringified ajv error array; ours has the same shape, our wording."""
    errors = [{"keyword": i.keyword, "dataPath": i.pointer.replace("/", "."), "message": i.message} for i in issues]
    return json.dumps(errors, ensure_ascii=False)


def admit_job(
    protocol: Mapping[str, Any] | str,
    user: str,
    hived_config: Mapping[str, Any],
    vc_leaf_cells: Mapping[str, Mapping[str, int]] | None = None,
    *,
    existing_jobs: Collection[str] = (),
    user_vcs: Collection[str] | None = None,
) -> AdmittedJob:
    """Admit or reject a job exactly like rest-server v1.2.0 with HiveD enabled.

    `existing_jobs` holds `user~name` ids already submitted (409 on a repeat); `user_vcs` the VCs the user may use
    (default: every VC of the config and `default`, as for an admin).
    """
    data = parse_body(protocol)
    check_protocol(data)
    if not hived_spec.resource_units(hived_config):
        raise Rejection(500, "", "Cannot find skuTypes in hivedscheduler config.", stage="hived")
    hived_issues = [i for i in proto.schema_issues(data) if i.stage == proto.STAGE_HIVED_SCHEMA]
    if hived_issues:
        raise Rejection(400, "InvalidProtocolError", _ajv_like(hived_issues), hived_issues[0].pointer, "hived_schema")
    plan = hived_spec.plan_hived(data, user, hived_config, vc_leaf_cells)
    if plan.problems:
        first = plan.problems[0]
        raise Rejection(first.status, first.code, first.message, first.pointer, first.stage)
    job_id = f"{user}~{data['name']}"
    if job_id in existing_jobs:
        raise Rejection(409, "ConflictJobError", f"Job {job_id} already exists.", "/name", "submit")
    # every user has `default`, whether HiveD has it or not (docs/openpai-model.md#services-configuration)
    allowed = {*hived_spec.vc_leaf_cells(hived_config), "default"} if user_vcs is None else user_vcs
    if plan.virtual_cluster not in allowed:
        raise Rejection(403, "ForbiddenUserError", f"User {user} is not allowed to do operation in "
                        f"{plan.virtual_cluster}", "/defaults/virtualCluster", "submit")
    crash = hived_spec.dump_crash(plan.specs)
    if crash is not None:
        raise Rejection(crash.status, crash.code, crash.message, crash.pointer, crash.stage)
    return _admitted(data, user, plan)


def _admitted(data: Mapping[str, Any], user: str, plan: hived_spec.HivedPlan) -> AdmittedJob:
    full = with_defaults(data)
    roles = []
    for name, spec in data["taskRoles"].items():
        completion = spec.get("completion") or {}
        roles.append(TaskRolePlan(
            name=name,
            instances=int(spec.get("instances", 1)),
            pod_scheduling_spec=plan.specs[name],
            min_failed_instances=completion.get("minFailedInstances"),
            min_succeeded_instances=completion.get("minSucceededInstances"),
            commands=render_commands(data, name),
            resources=dict(spec["resourcePerInstance"]),
        ))
    return AdmittedJob(user, str(data["name"]), plan.virtual_cluster, int(plan.priority or 0), plan.gang,
                       tuple(roles), full)


_PLACEHOLDER = re.compile(r"<%\s*\$(parameters|script|output|data)((?:\.[^\s%]+|\[\d+\])*)\s*%>")


def render_commands(protocol: Mapping[str, Any], role: str) -> tuple[str, ...]:
    """The task role's commands with the default deployment's pre/post commands and placeholders rendered."""
    spec = protocol["taskRoles"][role]
    commands = list(spec.get("commands") or [])
    default = (protocol.get("defaults") or {}).get("deployment")
    for deployment in protocol.get("deployments") or []:
        if default is not None and deployment.get("name") == default:
            hooks = (deployment.get("taskRoles") or {}).get(role) or {}
            commands = list(hooks.get("preCommands") or []) + commands + list(hooks.get("postCommands") or [])
    prereqs = {(p.get("type"), p.get("name")): p for p in protocol.get("prerequisites") or []}
    scope = {"parameters": protocol.get("parameters") or {}}
    for kind in ("script", "output", "data"):
        if kind in spec:
            scope[kind] = prereqs.get((kind, spec[kind]), {})
    return tuple(_PLACEHOLDER.sub(lambda m: _lookup(scope, m), command.strip()) for command in commands)


def _lookup(scope: Mapping[str, Any], match: re.Match[str]) -> str:
    value: Any = scope.get(match.group(1))
    for part in re.findall(r"\.([^.\[]+)|\[(\d+)\]", match.group(2)):
        key = part[0] or part[1]
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return match.group(0)
    if value is None or isinstance(value, dict | list):
        return match.group(0) if value is None else json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return js_yaml.js_number_text(value) if isinstance(value, int | float) else str(value)


def with_defaults(protocol: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy with the defaults the rest-server and the Framework apply (docs/openpai-model.md#task-roles; the
    same page gives the top-level and per-role spec defaults too)."""
    out = copy.deepcopy(dict(protocol))
    out.setdefault("jobRetryCount", 0)
    defaults = out.setdefault("defaults", {})
    if isinstance(defaults, dict):
        defaults.setdefault("virtualCluster", "default")
    for spec in (out.get("taskRoles") or {}).values():
        if isinstance(spec, dict):
            spec.setdefault("instances", 1)
            spec.setdefault("taskRetryCount", 0)
    return out
