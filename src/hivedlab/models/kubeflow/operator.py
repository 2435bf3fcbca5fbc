"""What tf-operator v0.5 makes of a TFJob (docs/kubeflow-on-kubernetes.md, "The pods the operator makes"): its
defaults, the pod of each replica and the TFJob's conditions, as the `tf-operator.v1beta2` controller started with
`--enable-gang-scheduling` writes them. Pure data in, data out; each rule names the function of
kubeflow/tf-operator v0.5.0 it follows.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

# pkg/apis/tensorflow/v1beta2/register.go: the GroupVersion the controller owns its pods with
OPERATOR_API = "kubeflow.org/v1beta2"
# pkg/controller.v1beta2/tensorflow/controller.go, the label keys; GetGroupNameLabelValue is the API group
LABEL_GROUP_NAME = "group-name"
GROUP_NAME = "kubeflow.org"
LABEL_JOB_NAME = "tf-job-name"
LABEL_REPLICA_TYPE = "tf-replica-type"
LABEL_REPLICA_INDEX = "tf-replica-index"
LABEL_JOB_ROLE = "tf-job-role"
# pkg/apis/tensorflow/v1beta2/constants.go
CONTAINER = "tensorflow"
PORT_NAME = "tfjob-port"
PORT = 2222
DEFAULT_RESTART_POLICY = "Never"
# pkg/controller.v1beta2/tensorflow/pod.go, gangSchedulerName
GANG_SCHEDULER = "kube-batch"
# pkg/apis/tensorflow/v1beta2/types.go, the replica types, in the order setTypeNamesToCamelCase fixes their case
REPLICA_TYPES = ("PS", "Worker", "Chief", "Master", "Evaluator")
CHIEF_TYPES = ("Chief", "Master")  # v1beta2.IsChieforMaster
TF_CONFIG = "TF_CONFIG"


def defaulted(tfjob: Mapping[str, Any]) -> dict[str, Any]:
    """The TFJob after `scheme.Scheme.Default` (pkg/apis/tensorflow/v1beta2/defaults.go, `SetDefaults_TFJob`):
    cleanPodPolicy Running, replica types in their own case, replicas 1, restartPolicy Never, and the port
    `tfjob-port: 2222` on the `tensorflow` container (the first container when none has that name)."""
    job = copy.deepcopy(dict(tfjob))
    spec = job.setdefault("spec", {})
    spec.setdefault("cleanPodPolicy", "Running")
    specs = spec.get("tfReplicaSpecs") or {}
    renamed: dict[str, Any] = {}
    for role, replica in specs.items():
        proper = next((t for t in REPLICA_TYPES if t.lower() == str(role).lower()), str(role))
        renamed[proper] = replica
    spec["tfReplicaSpecs"] = renamed
    for replica in renamed.values():
        replica.setdefault("replicas", 1)
        if not replica.get("restartPolicy"):
            replica["restartPolicy"] = DEFAULT_RESTART_POLICY
        containers = ((replica.get("template") or {}).get("spec") or {}).get("containers") or []
        if containers:
            target = next((c for c in containers if c.get("name") == CONTAINER), containers[0])
            ports = target.setdefault("ports", [])
            if not any(p.get("name") == PORT_NAME for p in ports):
                ports.append({"name": PORT_NAME, "containerPort": PORT})
    return job


def replicas_by_type(tfjob: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(replica type, replicas) in the manifest's order."""
    specs = (tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}
    return [(str(role), int(replica.get("replicas", 1))) for role, replica in specs.items()]


def replicas(tfjob: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(replica type, index) of every pod the TFJob asks for, replica types in the manifest's order."""
    return [(role, index) for role, count in replicas_by_type(tfjob) for index in range(count)]


def pod_name(job: str, replica_type: str, index: int) -> str:
    """pkg/common/jobcontroller/util.go, `GenGeneralName`: `<job>-<type in lower case>-<index>`."""
    return f"{job}-{replica_type.lower()}-{index}".replace("/", "-")


def _port(replica: Mapping[str, Any]) -> int:
    """pkg/controller.v1beta2/tensorflow/util.go, `GetPortFromTFJob`: the `tfjob-port` of the `tensorflow`
    container."""
    for container in ((replica.get("template") or {}).get("spec") or {}).get("containers") or []:
        if container.get("name") == CONTAINER:
            for port in container.get("ports") or []:
                if port.get("name") == PORT_NAME:
                    return int(port.get("containerPort", PORT))
    return PORT


def tf_config(tfjob: Mapping[str, Any], replica_type: str, index: int, namespace: str) -> str:
    """pkg/controller.v1beta2/tensorflow/tensorflow.go, `genTFConfigJSONStr` and `genClusterSpec`: every replica but
    the evaluator as `<pod name>.<namespace>.svc:<port>`, this pod's type and index, environment `cloud`; JSON as Go
    writes it (map keys sorted, no spaces)."""
    job = str((tfjob.get("metadata") or {}).get("name"))
    cluster: dict[str, list[str]] = {}
    for role, replica in ((tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}).items():
        if role == "Evaluator":
            continue
        port = _port(replica)
        cluster[role.lower()] = [f"{pod_name(job, role, i)}.{namespace}.svc:{port}"
                                 for i in range(int(replica.get("replicas", 1)))]
    config = {"cluster": dict(sorted(cluster.items())), "task": {"type": replica_type.lower(), "index": index},
              "environment": "cloud"}
    return json.dumps(config, separators=(",", ":"))


def master_role(tfjob: Mapping[str, Any], replica_type: str, index: int) -> bool:
    """pkg/controller.v1beta2/tensorflow/pod.go, `reconcilePods`: the chief (or master) when there is one, else
    worker 0."""
    specs = (tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}
    if any(role in CHIEF_TYPES for role in specs):
        return replica_type in CHIEF_TYPES
    return replica_type == "Worker" and index == 0


def other_scheduler(tfjob: Mapping[str, Any]) -> bool:
    """pod.go, `isNonGangSchedulerSet`: some replica's template names a scheduler other than kube-batch."""
    specs = (tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}
    return any(str(((r.get("template") or {}).get("spec") or {}).get("schedulerName") or "") not in ("", GANG_SCHEDULER)
               for r in specs.values())


def _requests_from_limits(container: dict[str, Any]) -> None:
    """Kubernetes v1.14 pkg/apis/core/v1/defaults.go, `SetDefaults_Pod`: a limit without a request gets the limit as
    its request when the API server stores the pod."""
    resources = container.get("resources")
    if not isinstance(resources, dict) or not resources.get("limits"):
        return
    requests = resources.setdefault("requests", {})
    for name, amount in resources["limits"].items():
        requests.setdefault(name, amount)


def operator_pod(tfjob: Mapping[str, Any], replica_type: str, index: int, *, namespace: str, job_uid: str,
                 gang_scheduling: bool = True) -> dict[str, Any]:
    """The pod tf-operator v0.5 creates for one replica of a TFJob, as the API server stores it (no uid, status or
    resourceVersion yet): pkg/controller.v1beta2/tensorflow/pod.go `createNewPod` and pkg/control/pod_control.go
    `GetPodFromTemplate`.

    - name `GenGeneralName`; labels: the template's, then `group-name: kubeflow.org`, `tf-job-name`,
      `tf-replica-type` (lower case), `tf-replica-index`, and `tf-job-role: master` on the master role
      (`GenLabels`); annotations: the template's, nothing added (kube-batch's group name comes from the manifest);
    - owner: the TFJob, `kubeflow.org/v1beta2`, controller and blockOwnerDeletion (`GenOwnerReference`);
    - spec: the template's, each container with `TF_CONFIG` appended (`setClusterSpec`), the replica's restart
      policy (`ExitCode` runs as `Never`, `setRestartPolicy`), and with gang scheduling on, `schedulerName:
      kube-batch` unless a template names another scheduler (then it is left alone); priority 0 (no
      PriorityClass: the admission plugin's default)."""
    job = defaulted(tfjob)
    name = str(job["metadata"]["name"])
    replica = job["spec"]["tfReplicaSpecs"][replica_type]
    template = copy.deepcopy(replica.get("template") or {})
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    labels = dict(meta.get("labels") or {})
    labels.update({LABEL_GROUP_NAME: GROUP_NAME, LABEL_JOB_NAME: name.replace("/", "-"),
                   LABEL_REPLICA_TYPE: replica_type.lower(), LABEL_REPLICA_INDEX: str(index)})
    if master_role(job, replica_type, index):
        labels[LABEL_JOB_ROLE] = "master"
    config = tf_config(job, replica_type, index, namespace)
    for container in spec.get("containers") or []:
        container["env"] = [*(container.get("env") or []), {"name": TF_CONFIG, "value": config}]
        _requests_from_limits(container)
    policy = replica["restartPolicy"]
    spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
    if gang_scheduling and not other_scheduler(job):
        spec["schedulerName"] = GANG_SCHEDULER
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("priority", 0)
    owner = {"apiVersion": OPERATOR_API, "kind": "TFJob", "name": name, "uid": job_uid, "controller": True,
             "blockOwnerDeletion": True}
    metadata = {"name": pod_name(name, replica_type, index), "namespace": namespace, "labels": labels,
                "annotations": dict(meta.get("annotations") or {}), "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def operator_podgroup(tfjob: Mapping[str, Any], job_uid: str) -> dict[str, Any]:
    """The PodGroup tf-operator v0.5 makes when the TFJob has none of its name (pkg/common/jobcontroller/
    jobcontroller.go `SyncPodGroup`, with controller.go's `getTotalReplicas`): named after the TFJob, owned by it,
    `minMember` every replica."""
    name = str(tfjob["metadata"]["name"])
    owner = {"apiVersion": OPERATOR_API, "kind": "TFJob", "name": name, "uid": job_uid, "controller": True,
             "blockOwnerDeletion": True}
    metadata = {"name": name, "namespace": tfjob["metadata"].get("namespace", ""), "ownerReferences": [owner]}
    return {"apiVersion": "scheduling.incubator.k8s.io/v1alpha1", "kind": "PodGroup", "metadata": metadata,
            "spec": {"minMember": len(replicas(defaulted(tfjob)))}}


# pkg/controller.v1beta2/tensorflow/status.go and job.go: each condition's reason and message
_CONDITIONS = {
    "Created": ("TFJobCreated", "TFJob {} is created."),
    "Running": ("TFJobRunning", "TFJob {} is running."),
    "Succeeded": ("TFJobSucceeded", "TFJob {} successfully completed."),
    "Failed": ("TFJobFailed", "TFJob {} has failed because {} {} replica(s) failed."),
}


def with_condition(conditions: list[dict[str, Any]], kind: str, name: str, at: str,
                   failed: tuple[int, str] = (0, "")) -> list[dict[str, Any]]:
    """status.go, `setCondition` and `filterOutCondition`: a condition of a new type (or status) replaces the old one
    of its type and goes last; Succeeded or Failed turns Running false; nothing changes once the job failed.
    `failed`: how many replicas of which type failed (the Failed message)."""
    if any(c["type"] == "Failed" and c["status"] == "True" for c in conditions):
        return conditions
    current = next((c for c in conditions if c["type"] == kind), None)
    reason, message = _CONDITIONS[kind]
    if current is not None and current["status"] == "True" and current["reason"] == reason:
        return conditions
    kept = []
    for condition in conditions:
        if condition["type"] == kind:
            continue
        if kind in ("Succeeded", "Failed") and condition["type"] == "Running":
            condition = {**condition, "status": "False"}
        kept.append(condition)
    text = message.format(name, *failed) if kind == "Failed" else message.format(name)
    return [*kept, {"type": kind, "status": "True", "reason": reason, "message": text, "lastUpdateTime": at,
                    "lastTransitionTime": at}]


def creation_order(tfjob: Mapping[str, Any], type_order: list[str]) -> list[tuple[str, int]]:
    """The order one reconcile pass creates a new TFJob's pods and services in (pkg/controller.v1beta2/tensorflow/
    controller.go `reconcileTFJobs`: `for rtype, spec := range tfjob.Spec.TFReplicaSpecs`, each type's pods by index
    (pod.go `reconcilePods`), then its services (service.go `reconcileServices`)). Go ranges over a map in an order
    of its own choosing each time; `type_order` is that order (the replica types, permuted by the caller)."""
    pods = replicas(tfjob)
    return [(rtype, index) for order in type_order for rtype, index in pods if rtype == order]


# The events tf-operator v0.5's `tf-operator.v1beta2` records on a TFJob (source component `tf-operator`, the
# controller's name: jobcontroller.go `NewJobController`), as (type, reason, message format):
OPERATOR_COMPONENT = "tf-operator"
# pod.go `createNewPod`, with gang scheduling on and a template naming another scheduler: once per pod it creates
SCHEDULER_NAME_SET = ("Warning", "SettedPodTemplateSchedulerName",
                      "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten")
CREATED_POD = ("Normal", "SuccessfulCreatePod", "Created pod: {}")  # pkg/control/pod_control.go `createPods`
CREATED_SERVICE = ("Normal", "SuccessfulCreateService", "Created service: {}")  # service_control.go `createServices`
# pod.go `reconcilePods`: every pass that finds a pod's tensorflow container terminated, `<namespace>.<pod>`
EXITED = ("Normal", "ExitedWithCode", "Pod: {}.{} exited with code {}")
# status.go `updateStatusSingle`: worker 0 exited 0 (no chief), or every worker succeeded
SUCCEEDED = ("Normal", "TFJobSucceeded", "TFJob {} successfully completed.")
# job.go `deletePodsAndServices` (cleanPodPolicy Running: each running pod, and the service of its name) through
# pod_control.go `DeletePod` and service_control.go `DeleteService`; jobcontroller.go `DeletePodGroup`
DELETED_POD = ("Normal", "SuccessfulDeletePod", "Deleted pod: {}")
DELETED_SERVICE = ("Normal", "SuccessfulDeleteService", "Deleted service: {}")
DELETED_PODGROUP = ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: {}")


def involved_object(tfjob: Mapping[str, Any], uid: str) -> dict[str, str]:
    """How an event names the TFJob: in the operator's GroupVersion (the scheme it registered the type under)."""
    meta = tfjob.get("metadata") or {}
    return {"apiVersion": OPERATOR_API, "kind": "TFJob", "name": str(meta.get("name")),
            "namespace": str(meta.get("namespace", "")), "uid": uid}
