"""The objects the API server shows of the simulated cluster when HiveD schedules nothing (docs/other-schedulers.md,
"The pods"): an OpenPAI job's pods as OpenPAI v1.2.0's rest-server makes them without HiveD, and a Kubeflow job's
pods and TFJob as tf-operator v0.5 makes them (`hivedlab.models.kubeflow.operator`). Pure functions over the pod
objects the HiveD cluster's model builds (`hivedlab.models.openpai.objects.pod_object`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hivedlab.models.hived import annotations as hived
from hivedlab.models.kubeflow import operator
from hivedlab.models.schedulers.resources import GPU, Resources

_HIVED_ANNOTATIONS = (hived.SCHEDULING_SPEC, hived.LEAF_CELL_ISOLATION, hived.BIND_INFO)
_MEMORY_UNITS = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024**2, "K": 1000 / 1024**2, "M": 1000**2 / 1024**2,
                 "G": 1000**3 / 1024**2}


def openpai_pod(pod: dict[str, Any], gpu: int, scheduler_name: str) -> None:
    """OpenPAI v1.2.0's task pod with `launcherConfig.enabledHived` off (src/rest-server/src/models/v2/job/k8s.js,
    `generateTaskRole`): the app container asks for `nvidia.com/gpu` instead of HiveD's resource, no HiveD
    annotation, no device variable read from HiveD's annotation (a CPU-only task gets `NVIDIA_VISIBLE_DEVICES=none`),
    and no HiveD scheduler name. `scheduler_name` is the scheduler that places it."""
    metadata, spec = pod["metadata"], pod["spec"]
    for key in _HIVED_ANNOTATIONS:
        metadata.get("annotations", {}).pop(key, None)
    spec["schedulerName"] = scheduler_name
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        for part in ("limits", "requests"):
            amounts = resources.get(part)
            if isinstance(amounts, dict) and amounts.pop(hived.SCHEDULING_ENABLE, None) is not None:
                amounts[GPU] = str(gpu)
        env = [e for e in container.get("env") or [] if "valueFrom" not in e or not _reads_hived(e)]
        if len(env) != len(container.get("env") or []) and gpu == 0:
            env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"})
        container["env"] = env


def _reads_hived(env: Mapping[str, Any]) -> bool:
    path = str(((env.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", ""))
    return hived.LEAF_CELL_ISOLATION in path


def tfjob_pod(state: Mapping[str, Any], tfjob: Mapping[str, Any], replica_type: str, index: int, job_uid: str,
              ) -> dict[str, Any]:
    """The pod tf-operator v0.5 made for this replica, in the state the simulated pod `state` is in (uid, version,
    node, phase, container state, deletion)."""
    meta = state["metadata"]
    pod = operator.operator_pod(tfjob, replica_type, index, namespace=meta["namespace"], job_uid=job_uid)
    pod["metadata"].update({key: meta[key] for key in ("uid", "resourceVersion", "creationTimestamp")})
    if "deletionTimestamp" in meta:
        pod["metadata"]["deletionTimestamp"] = meta["deletionTimestamp"]
        pod["metadata"]["deletionGracePeriodSeconds"] = 30
    if "nodeName" in state["spec"]:
        pod["spec"]["nodeName"] = state["spec"]["nodeName"]
    status = copy.deepcopy(state.get("status") or {})
    image = next((str(c.get("image", "")) for c in pod["spec"].get("containers") or []
                  if c.get("name") == operator.CONTAINER), "")
    for container in status.get("containerStatuses") or []:
        container.update(name=operator.CONTAINER, image=image)
        waiting = (container.get("state") or {}).get("waiting")
        if waiting is not None:  # no init container to wait for: the kubelet says ContainerCreating
            waiting["reason"] = "ContainerCreating"
    status["qosClass"] = qos_class(pod["spec"].get("containers") or [])
    pod["status"] = status
    return pod


def qos_class(containers: list[dict[str, Any]]) -> str:
    """Kubernetes v1.14 pkg/apis/core/v1/helper/qos/qos.go, `GetPodQOS`: Guaranteed when every container limits
    and requests CPU and memory alike, BestEffort when none asks for anything, else Burstable."""
    asked, guaranteed = False, bool(containers)
    for container in containers:
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        asked = asked or bool(limits or requests)
        for name in ("cpu", "memory"):
            if name not in limits or str(limits[name]) != str(requests.get(name, limits[name])):
                guaranteed = False
    return "Guaranteed" if guaranteed else ("Burstable" if asked else "BestEffort")


def _cpu_milli(value: Any) -> int:
    text = str(value)
    return int(float(text[:-1])) if text.endswith("m") else int(float(text) * 1000)


def _memory_mb(value: Any) -> int:
    text = str(value)
    for unit, factor in sorted(_MEMORY_UNITS.items(), key=lambda item: -len(item[0])):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(float(text) / 1024**2)


def pod_request(pod: Mapping[str, Any]) -> Resources:
    """What a pod asks the scheduler for: the sum of its containers' requests (GPUs, CPU, memory)."""
    total = Resources()
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        total = total + Resources(int(requests.get(GPU, 0)), _cpu_milli(requests.get("cpu", 0)),
                                  _memory_mb(requests.get("memory", 0)))
    return total


def stored(manifest: Mapping[str, Any], *, uid: str, resource_version: str, created: str,
           status: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An object as the API server serves it (a TFJob, a PodGroup): the manifest as sent, with what the server adds
    and, for a TFJob, the operator's status."""
    obj = copy.deepcopy(dict(manifest))
    obj["metadata"].update(uid=uid, resourceVersion=resource_version, creationTimestamp=created)
    if status is not None:
        obj["status"] = copy.deepcopy(dict(status))
    return obj
