"""What rest-server v1.2.0 does with `POST /api/v2/jobs` up to the reply, in its pipeline order (spec/openpai.md §0.1):
parse, protocol schema, semantic checks, HiveD schema, HiveD checks and pod-specs, then the controller's checks.

`admit_job` returns the accepted job (202) or raises `Rejection` with the status, code and message the rest-server
would answer (§2.8, §4.3).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from cluster.openpai import hived_spec
from cluster.openpai import protocol as proto

MAX_BODY_BYTES = 100 * 1024  # body-parser's default limit (§1.6)


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
    min_failed_instances: int | None  # as written; None/0 -> the Framework's default applies (§1.3)
    min_succeeded_instances: int | None
    commands: tuple[str, ...]  # deployment pre/post commands and placeholders applied (§1.5)
    resources: dict[str, Any]  # resourcePerInstance


@dataclass(frozen=True)
class AdmittedJob:
    user: str
    name: str
    virtual_cluster: str
    priority: int
    gang: bool  # as HiveD sees it (`gangAllocation === true`, §2.5)
    task_roles: tuple[TaskRolePlan, ...]
    protocol: dict[str, Any]  # defaults applied


def parse_body(body: Mapping[str, Any] | str | bytes) -> Any:
    """Body parsing and js-yaml safeLoad (§0.1 steps 1-2.1)."""
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
        return proto.parse_yaml(text).data
    except proto.YamlError as exc:
        raise Rejection(500, "", exc.message, stage="yaml_parse") from None


def check_protocol(data: Any) -> None:
    """Protocol schema then semantic checks (§1.3, §1.4); raises the first Rejection."""
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
    # every user has `default`, whether HiveD has it or not (openpai.md §5.1)
    allowed = {*hived_spec.vc_leaf_cells(hived_config), "default"} if user_vcs is None else user_vcs
    if plan.virtual_cluster not in allowed:
        raise Rejection(403, "ForbiddenUserError", f"User {user} is not allowed to do operation in "
                        f"{plan.virtual_cluster}", "/defaults/virtualCluster", "submit")
    crash = hived_spec.dump_crash(plan.specs)
    if crash is not None:
        raise Rejection(crash.status, crash.code, crash.message, crash.pointer, crash.stage)
    return _admitted(data, user, plan)


def _admitted(data: Mapping[str, Any], user: str, plan: hived_spec.HivedPlan) -> AdmittedJob:
    full = proto.with_defaults(data)
    roles = []
    for name, spec in data["taskRoles"].items():
        completion = spec.get("completion") or {}
        roles.append(TaskRolePlan(
            name=name,
            instances=int(spec.get("instances", 1)),
            pod_scheduling_spec=plan.specs[name],
            min_failed_instances=completion.get("minFailedInstances"),
            min_succeeded_instances=completion.get("minSucceededInstances"),
            commands=proto.render_commands(data, name),
            resources=dict(spec["resourcePerInstance"]),
        ))
    return AdmittedJob(user, str(data["name"]), plan.virtual_cluster, int(plan.priority or 0), plan.gang,
                       tuple(roles), full)
