"""A simulated job: what OpenPAI admitted, FrameworkController's state of it, and its live pods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hivedlab.models.openpai.framework_object import FrameworkState, TaskState
from hivedlab.models.openpai.jobstate import (
    AttemptCompletion,
    CompletionPolicy,
    RetryPolicy,
    TaskOutcome,
    framework_retry_policy,
    task_retry_policy,
)
from hivedlab.models.openpai.objects import JobInfo, PodState, TaskRoleInfo, dump_scheduling_spec

TaskKey = tuple[str, int]  # (FC task-role name, task index)


def _int_field(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _min_count(value: Any, default: int) -> int:
    """A missing, null or 0 completion count gets FC's default (docs/openpai-model.md#task-roles)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value != 0 else default


def _docker_image(protocol: Mapping[str, Any], role: Mapping[str, Any]) -> str:
    wanted = role.get("dockerImage")
    for item in protocol.get("prerequisites") or ():
        if isinstance(item, Mapping) and item.get("type") == "dockerimage" and item.get("name") == wanted:
            return str(item.get("uri") or "")
    return str(wanted or "")


def job_info(admitted: Any, config_text: str, submission_time: str, submit_epoch_s: int) -> JobInfo:
    """JobInfo from `hivedlab.models.openpai.admission.AdmittedJob` (duck-typed: only its documented fields are
    read)."""
    protocol = admitted.protocol if isinstance(admitted.protocol, Mapping) else {}
    raw_roles = protocol.get("taskRoles") or {}
    roles = []
    image = ""
    extras = protocol.get("extras")
    extras = extras if isinstance(extras, Mapping) else {}
    # the Framework's own reading (docs/openpai-model.md#gang-allocation-and-affinity-groups)
    framework_gang = extras.get("gangAllocation") is not False
    for plan in admitted.task_roles:
        raw = raw_roles.get(plan.name) or {}
        image = image or _docker_image(protocol, raw)
        resources = plan.resources if isinstance(plan.resources, Mapping) else {}
        roles.append(
            TaskRoleInfo(
                name=plan.name,
                instances=int(plan.instances),
                scheduling_spec=dict(plan.pod_scheduling_spec),
                min_failed=_min_count(plan.min_failed_instances, 1),
                min_succeeded=_min_count(plan.min_succeeded_instances, int(plan.instances)),
                commands=tuple(str(c) for c in plan.commands),
                cpu=_int_field(resources.get("cpu"), 0),
                memory_mb=_int_field(resources.get("memoryMB"), 0),
                gpu=_int_field(resources.get("gpu"), 0),
                retry=task_retry_policy(framework_gang, _int_field(raw.get("taskRetryCount"), 0)),
                scheduling_spec_text=dump_scheduling_spec(dict(plan.pod_scheduling_spec)),
            )
        )
    return JobInfo(
        user=admitted.user,
        job_name=admitted.name,
        virtual_cluster=admitted.virtual_cluster,
        priority=int(admitted.priority),
        gang=bool(admitted.gang),
        submission_time=submission_time,
        submit_epoch_s=submit_epoch_s,
        config_text=config_text,
        task_roles=tuple(roles),
        retry=framework_retry_policy(_int_field(protocol.get("jobRetryCount"), 0)),
        docker_image=image,
    )


@dataclass
class SimJob:
    """Mutable simulator record of one submitted job (the objects it shows are built from frozen snapshots)."""

    key: str  # the plan's job key
    seq: int  # submission order
    info: JobInfo
    task_seconds: dict[TaskKey, float]
    framework: FrameworkState | None = None
    pods: dict[TaskKey, PodState] = field(default_factory=dict)
    outcomes: list[TaskOutcome] = field(default_factory=list)  # completed tasks of the current attempt
    recreate: set[TaskKey] = field(default_factory=set)  # tasks whose retry pod waits for the old pod's removal
    completing: AttemptCompletion | None = None
    stop_requested: bool = False
    waiting: bool = False
    ran: bool = False

    @property
    def task_keys(self) -> list[TaskKey]:
        return [(r.fc_name, i) for r in self.info.task_roles for i in range(r.instances)]

    def policies(self) -> dict[str, tuple[CompletionPolicy, int]]:
        return {r.fc_name: (CompletionPolicy(r.min_failed, r.min_succeeded), r.instances) for r in self.info.task_roles}

    def role_retry(self, task_role: str) -> RetryPolicy:
        return self.info.role(task_role).retry

    def spec(self, task_role: str) -> dict[str, Any]:
        return self.info.role(task_role).scheduling_spec

    def task(self, key: TaskKey) -> TaskState:
        assert self.framework is not None
        return next(t for t in self.framework.tasks if (t.task_role, t.index) == key)

    def set_task(self, key: TaskKey, **changes: Any) -> None:
        assert self.framework is not None
        tasks = tuple(replace(t, **changes) if (t.task_role, t.index) == key else t for t in self.framework.tasks)
        self.framework = replace(self.framework, tasks=tasks)

    def set_framework(self, **changes: Any) -> None:
        assert self.framework is not None
        self.framework = replace(self.framework, **changes)
