"""The Kubernetes objects of an OpenPAI v1.2.0 job as the API serves them: Pods and core/v1 Events
(docs/openpai-model.md#framework-pods-and-events), with the annotations HiveD writes at bind time; the job's
FrameworkController `Framework` is built by `framework_object`.

Builders are pure: frozen state in, a fresh JSON-ready dict out. The simulated cluster keeps the state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from hivedlab.models.hived import annotations as hived_annotations
from hivedlab.models.openpai import naming
from hivedlab.models.openpai.jobstate import RetryPolicy

FC_GROUP_VERSION = "frameworkcontroller.microsoft.com/v1"
RUNTIME_IMAGE = "openpai/openpai-runtime:v1.2.0"
PORT_SPEC = '{"schedulePortStart":15000,"schedulePortEnd":40000,"ports":{"ssh":{"count":1},"http":{"count":1}}}'


class _JsYamlDumper(yaml.SafeDumper):
    """Dump like js-yaml 3 (rest-server's dumper): sequences indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def dump_scheduling_spec(spec: dict[str, Any]) -> str:
    """The pod-scheduling-spec annotation text, keys in the order given
    (docs/openpai-model.md#the-spec-per-task-role lists rest-server's order)."""
    return yaml.dump(spec, Dumper=_JsYamlDumper, sort_keys=False, default_flow_style=False, allow_unicode=True)


@dataclass(frozen=True)
class TaskRoleInfo:
    name: str  # protocol name (PAI_CURRENT_TASK_ROLE_NAME)
    instances: int
    scheduling_spec: dict[str, Any]
    min_failed: int
    min_succeeded: int
    commands: tuple[str, ...]
    cpu: int
    memory_mb: int
    gpu: int
    retry: RetryPolicy
    scheduling_spec_text: str = ""  # the annotation text, when already dumped (it is the same for every pod)

    @property
    def fc_name(self) -> str:
        return naming.fc_name(self.name)


@dataclass(frozen=True)
class JobInfo:
    user: str
    job_name: str
    virtual_cluster: str
    priority: int
    gang: bool
    submission_time: str  # RFC 3339
    submit_epoch_s: int
    config_text: str  # the submitted YAML (Framework annotation `config`)
    task_roles: tuple[TaskRoleInfo, ...]
    retry: RetryPolicy
    docker_image: str = ""

    @property
    def framework(self) -> str:
        return naming.framework_name(self.user, self.job_name)

    def role(self, fc_name: str) -> TaskRoleInfo:
        return next(r for r in self.task_roles if r.fc_name == fc_name)


@dataclass(frozen=True)
class PodState:
    """One pod instance (one task attempt) of a job."""

    task_role: str  # FC task-role name
    index: int
    uid: str
    resource_version: str
    created: str
    framework_attempt_id: int
    configmap_uid: str
    task_attempt_id: int
    phase: str = "Pending"  # Pending | Running | Succeeded | Failed
    node: str | None = None
    host_ip: str | None = None
    isolation: str | None = None
    bind_info: str | None = None
    scheduled_at: str | None = None
    unschedulable: str | None = None  # last FailedScheduling message while Pending
    nominated_node: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    exit_code: int | None = None
    deletion_timestamp: str | None = None

    def name(self, framework: str) -> str:
        return f"{framework}-{self.task_role}-{self.index}"


def _pod_labels(job: JobInfo, pod: PodState) -> dict[str, str]:
    return {
        "FC_FRAMEWORK_NAME": job.framework,
        "FC_TASKROLE_NAME": pod.task_role,
        "FC_TASK_INDEX": str(pod.index),
        "type": "kube-launcher-task",
        "userName": job.user,
        "virtualCluster": job.virtual_cluster,
    }


def _pod_annotations(job: JobInfo, role: TaskRoleInfo, pod: PodState) -> dict[str, str]:
    fw = job.framework
    annotations = {
        "FC_CONFIGMAP_NAME": naming.configmap_name(fw),
        "FC_CONFIGMAP_UID": pod.configmap_uid,
        "FC_FRAMEWORK_ATTEMPT_ID": str(pod.framework_attempt_id),
        "FC_FRAMEWORK_ATTEMPT_INSTANCE_UID": f"{pod.framework_attempt_id}_{pod.configmap_uid}",
        "FC_FRAMEWORK_NAME": fw,
        "FC_FRAMEWORK_NAMESPACE": naming.NAMESPACE,
        "FC_POD_NAME": pod.name(fw),
        "FC_TASKROLE_NAME": pod.task_role,
        "FC_TASK_ATTEMPT_ID": str(pod.task_attempt_id),
        "FC_TASK_INDEX": str(pod.index),
        "container.apparmor.security.beta.kubernetes.io/app": "unconfined",
        "rest-server/port-scheduling-spec": PORT_SPEC,
        hived_annotations.SCHEDULING_SPEC: role.scheduling_spec_text or dump_scheduling_spec(role.scheduling_spec),
    }
    # written by HiveD at bind time (docs/hived-config-and-cells.md#bind-info-and-the-pod-annotations)
    if pod.isolation is not None:
        annotations[hived_annotations.LEAF_CELL_ISOLATION] = pod.isolation
        annotations[hived_annotations.BIND_INFO] = pod.bind_info or ""
    return annotations


def _containers(job: JobInfo, role: TaskRoleInfo) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    limits = {
        "cpu": str(role.cpu),
        "memory": f"{role.memory_mb}Mi",
        "github.com/fuse": "1",
        hived_annotations.SCHEDULING_ENABLE: "1",
    }
    init = {
        "name": "init",
        "image": RUNTIME_IMAGE,
        "env": [
            {"name": "USER_CMD", "value": "\n".join(role.commands)},
            {"name": "GANG_ALLOCATION", "value": "true" if job.gang else "false"},
        ],
    }
    app = {
        "name": "app",
        "image": job.docker_image,
        "command": ["/usr/local/pai/runtime"],
        "resources": {"limits": dict(limits), "requests": dict(limits)},
        "env": [
            {"name": "PAI_JOB_NAME", "value": naming.job_id(job.user, job.job_name)},
            {"name": "PAI_USER_NAME", "value": job.user},
            {"name": "PAI_CURRENT_TASK_ROLE_NAME", "value": role.name},
            {
                "name": "NVIDIA_VISIBLE_DEVICES",
                "valueFrom": {
                    "fieldRef": {"fieldPath": f"metadata.annotations['{hived_annotations.LEAF_CELL_ISOLATION}']"},
                },
            },
        ],
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN", "IPC_LOCK", "DAC_READ_SEARCH"], "drop": ["MKNOD"]}},
        "terminationMessagePath": "/tmp/pai-termination-log",
    }
    return [init], [app]


def _container_status(pod: PodState, image: str) -> dict[str, Any]:
    status: dict[str, Any] = {"name": "app", "image": image, "ready": False, "restartCount": 0}
    if pod.finished_at is not None and pod.started_at is not None:
        code = pod.exit_code if pod.exit_code is not None else 0
        status["state"] = {
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": pod.started_at,
                "finishedAt": pod.finished_at,
                "containerID": f"docker://{pod.uid.replace('-', '')}",
            }
        }
    elif pod.started_at is not None:
        status["ready"] = True
        status["state"] = {"running": {"startedAt": pod.started_at}}
        status["containerID"] = f"docker://{pod.uid.replace('-', '')}"
    else:
        status["state"] = {"waiting": {"reason": "PodInitializing"}}
    return status


def _pod_status(job: JobInfo, pod: PodState) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": pod.phase, "qosClass": "Guaranteed"}
    conditions: list[dict[str, Any]] = []
    if pod.scheduled_at is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": pod.scheduled_at}
        )
        status["hostIP"] = pod.host_ip
        status["podIP"] = pod.host_ip  # hostNetwork: true
        status["startTime"] = pod.scheduled_at
        status["containerStatuses"] = [_container_status(pod, job.docker_image)]
        if pod.started_at is not None and pod.finished_at is None:
            conditions.append(
                {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": pod.started_at}
            )
    elif pod.unschedulable is not None:
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": pod.created,
                "reason": "Unschedulable",
                "message": pod.unschedulable,
            }
        )
    if pod.nominated_node is not None and pod.node is None:
        status["nominatedNodeName"] = pod.nominated_node
    status["conditions"] = conditions
    return status


def pod_object(job: JobInfo, pod: PodState) -> dict[str, Any]:
    """The Pod as the API server serves it (docs/openpai-model.md#pods): labels, annotations + HiveD's at bind,
    container resources."""
    fw = job.framework
    role = job.role(pod.task_role)
    init, app = _containers(job, role)
    metadata: dict[str, Any] = {
        "name": pod.name(fw),
        "namespace": naming.NAMESPACE,
        "uid": pod.uid,
        "resourceVersion": pod.resource_version,
        "creationTimestamp": pod.created,
        "labels": _pod_labels(job, pod),
        "annotations": _pod_annotations(job, role, pod),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": naming.configmap_name(fw),
                "uid": pod.configmap_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if pod.deletion_timestamp is not None:
        metadata["deletionTimestamp"] = pod.deletion_timestamp
        metadata["deletionGracePeriodSeconds"] = 30
    spec: dict[str, Any] = {
        "schedulerName": naming.scheduler_name(job.virtual_cluster),
        "priorityClassName": naming.priority_class_name(fw),
        "priority": naming.k8s_priority(job.priority, job.submit_epoch_s),
        "hostNetwork": True,
        "restartPolicy": "Never",
        "serviceAccountName": "runtime-account",
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "pai-worker", "operator": "In", "values": ["true"]}]}
                    ]
                }
            }
        },
        "imagePullSecrets": [{"name": "pai-secret"}],
        "initContainers": init,
        "containers": app,
    }
    if pod.node is not None:
        spec["nodeName"] = pod.node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": _pod_status(job, pod)}


@dataclass(frozen=True)
class EventState:
    """A core/v1 Event about a pod. `count`/`last` change when K8s aggregates a repeat."""

    name: str
    uid: str
    resource_version: str
    pod_name: str
    pod_uid: str
    reason: str  # Scheduled | FailedScheduling | Preempted
    message: str
    component: str  # the reporting scheduler, hivedscheduler-ds-<vc>
    first: str
    last: str
    count: int = 1

    @property
    def type(self) -> str:
        return "Warning" if self.reason == "FailedScheduling" else "Normal"  # K8s 1.15: Scheduled, Preempted


def event_object(event: EventState) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event.name,
            "namespace": naming.NAMESPACE,
            "uid": event.uid,
            "resourceVersion": event.resource_version,
            "creationTimestamp": event.first,
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": naming.NAMESPACE,
            "name": event.pod_name,
            "uid": event.pod_uid,
        },
        "reason": event.reason,
        "message": event.message,
        "source": {"component": event.component},
        "firstTimestamp": event.first,
        "lastTimestamp": event.last,
        "count": event.count,
        "type": event.type,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }
