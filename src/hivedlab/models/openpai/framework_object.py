"""FrameworkController v0.8.0's `Framework` object of an OpenPAI v1.2.0 job as the API serves it: spec, attempt and
task statuses, completion codes (docs/openpai-model.md#framework-pods-and-events). Pure, like the pod builders in
`objects`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hivedlab.models.openpai import naming
from hivedlab.models.openpai.jobstate import DIAGNOSTICS, exit_spec
from hivedlab.models.openpai.objects import FC_GROUP_VERSION, JobInfo


@dataclass(frozen=True)
class TaskState:
    """FC's status of one task (its current attempt)."""

    task_role: str
    index: int
    state: str  # FC task state
    start: str
    transition: str
    attempt_id: int = 0
    attempt_start: str = ""
    pod_uid: str | None = None
    node: str | None = None
    host_ip: str | None = None
    run_time: str | None = None
    completion_time: str | None = None
    code: int | None = None
    retried: int = 0
    accountable_retried: int = 0


@dataclass(frozen=True)
class FrameworkState:
    """FC's status of a Framework (its current attempt)."""

    state: str
    start: str
    transition: str
    resource_version: str
    uid: str
    attempt_id: int
    attempt_start: str
    configmap_uid: str
    tasks: tuple[TaskState, ...]
    execution_type: str = "Start"
    run_time: str | None = None
    attempt_completion_time: str | None = None
    completion_time: str | None = None
    code: int | None = None
    trigger: tuple[str, int, str] | None = None  # (task role, index, message)
    retried: int = 0
    accountable_retried: int = 0
    retry_delay_sec: int | None = None


def _completion_status(code: int | None, diagnostics: str = "") -> dict[str, Any] | None:
    if code is None:
        return None
    spec = exit_spec(code)
    return {
        "code": code,
        "phrase": spec.phrase,
        "type": spec.completion_type(),
        "diagnostics": diagnostics or DIAGNOSTICS.get(code, ""),
    }


def _task_status(job: JobInfo, fw: FrameworkState, task: TaskState) -> dict[str, Any]:
    pod_name = naming.pod_name(job.framework, task.task_role, task.index)
    return {
        "index": task.index,
        "startTime": task.start,
        "completionTime": task.completion_time,
        "state": task.state,
        "transitionTime": task.transition,
        "deletionPending": False,
        "retryPolicyStatus": {
            "totalRetriedCount": task.retried,
            "accountableRetriedCount": task.accountable_retried,
            "retryDelaySec": None,
        },
        "attemptStatus": {
            "id": task.attempt_id,
            "startTime": task.attempt_start,
            "runTime": task.run_time,
            "completionTime": task.completion_time,
            "instanceUID": f"{task.attempt_id}_{task.pod_uid}" if task.pod_uid else None,
            "podName": pod_name,
            "podUID": task.pod_uid,
            "podNodeName": task.node,
            "podIP": task.host_ip,
            "podHostIP": task.host_ip,
            "completionStatus": _completion_status(task.code),
        },
    }


def _framework_spec(job: JobInfo) -> dict[str, Any]:
    roles = []
    for role in job.task_roles:
        roles.append(
            {
                "name": role.fc_name,
                "taskNumber": role.instances,
                "frameworkAttemptCompletionPolicy": {
                    "minFailedTaskCount": role.min_failed,
                    "minSucceededTaskCount": role.min_succeeded,
                },
                "task": {"retryPolicy": role.retry.as_dict(), "podGracefulDeletionTimeoutSec": 600},
            }
        )
    return {"executionType": "Start", "retryPolicy": job.retry.as_dict(), "taskRoles": roles}


def framework_object(job: JobInfo, fw: FrameworkState) -> dict[str, Any]:
    """The Framework as FrameworkController v0.8.0 serves it (docs/openpai-model.md#the-framework-object); pod
    templates are left out of the spec."""
    trigger = None
    if fw.trigger is not None:
        trigger = {"taskRoleName": fw.trigger[0], "taskIndex": fw.trigger[1], "message": fw.trigger[2]}
    completion = _completion_status(fw.code)
    if completion is not None:
        completion["trigger"] = trigger
    spec = _framework_spec(job)
    spec["executionType"] = fw.execution_type
    total_gpu = sum(r.gpu * r.instances for r in job.task_roles)
    return {
        "apiVersion": FC_GROUP_VERSION,
        "kind": "Framework",
        "metadata": {
            "name": job.framework,
            "namespace": naming.NAMESPACE,
            "uid": fw.uid,
            "resourceVersion": fw.resource_version,
            "creationTimestamp": fw.start,
            "labels": {"userName": job.user, "virtualCluster": job.virtual_cluster},
            "annotations": {
                "jobName": job.job_name,
                "logPathInfix": job.framework,
                "config": job.config_text,
                "totalGpuNumber": str(total_gpu),
            },
        },
        "spec": spec,
        "status": {
            "startTime": fw.start,
            "completionTime": fw.completion_time,
            "state": fw.state,
            "transitionTime": fw.transition,
            "retryPolicyStatus": {
                "totalRetriedCount": fw.retried,
                "accountableRetriedCount": fw.accountable_retried,
                "retryDelaySec": fw.retry_delay_sec,
            },
            "attemptStatus": {
                "id": fw.attempt_id,
                "startTime": fw.attempt_start,
                "runTime": fw.run_time,
                "completionTime": fw.attempt_completion_time,
                "instanceUID": f"{fw.attempt_id}_{fw.configmap_uid}",
                "configMapName": naming.configmap_name(job.framework),
                "configMapUID": fw.configmap_uid,
                "completionStatus": completion,
                "taskRoleStatuses": [
                    {
                        "name": role.fc_name,
                        "podGracefulDeletionTimeoutSec": 600,
                        "taskStatuses": [_task_status(job, fw, t) for t in fw.tasks if t.task_role == role.fc_name],
                    }
                    for role in job.task_roles
                ],
            },
        },
    }
