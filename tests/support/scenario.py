"""A tiny scripted OpenPAI v1.2.0 + HiveD cluster that writes evidence logs in the shape a real cluster produces.

Used by `make_fixtures.py` (the committed logs) and by tests that need a variant. Objects follow
docs/openpai-model.md#framework-pods-and-events (names, labels, annotations, Framework status) and
docs/hived-config-and-cells.md (bind annotations, FailedScheduling wait messages). Times are explicit: `at(seconds)`
moves the scenario clock.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hivedlab.evidence import EMULATED_NODE_LABEL, EvidenceWriter, format_time
from hivedlab.rehearsal.kubelet import Worker, node_object, node_status
from tests.support.paths import FIXTURES

T0 = datetime(2026, 3, 2, 8, 0, 0, tzinfo=timezone.utc)
TWO_VC = (FIXTURES / "logs" / "two-vc.yaml").read_text(encoding="utf-8")
ONE_VC = (FIXTURES / "logs" / "one-vc.yaml").read_text(encoding="utf-8")
WAIT = "Pod is waiting for preemptible or free resource to appear: "
PRIORITY = {"prod": 100, "test": 10, "oppo": -1}


def _real_node(node: dict[str, Any]) -> dict[str, Any]:
    """The emulated kubelet's Node as a real kubelet registers it: no emulation label, a real kubelet's version."""
    labels = {k: v for k, v in node["metadata"]["labels"].items() if k != EMULATED_NODE_LABEL}
    info = {**node["status"]["nodeInfo"], "kubeletVersion": "v1.15.2", "containerRuntimeVersion": "docker://19.3.5"}
    return {**node, "metadata": {**node["metadata"], "labels": labels}, "spec": {},
            "status": {**node["status"], "nodeInfo": info}}


def _k8s_time(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Job:
    user: str
    key: str
    name: str
    vc: str
    priority: str
    tasks: int
    gang: bool
    framework: str
    uid: str
    pods: dict[int, dict[str, Any]] = field(default_factory=dict)
    attempt: int = 0
    task_codes: dict[int, tuple[str, int | None]] = field(default_factory=dict)


class Scenario:
    """Write one evidence log. Every method writes the records a real cluster would produce for that change."""

    def __init__(self, path: Path, source: str = "k8s", seed: str = "x", actions: bool = True) -> None:
        path.unlink(missing_ok=True)
        self.actions = actions  # False: a `hivedlab watch` log (objects only, no runner records)
        self.writer = EvidenceWriter(path, source)
        self.now = T0
        self.rv = 1000
        self.seed = seed
        self.counter = 0
        self.jobs: dict[str, Job] = {}
        self.skew: dict[str, float] = {}  # node -> seconds its clock is ahead
        self.nodes: dict[str, dict[str, Any]] = {}  # node name -> its Node as last recorded

    # -- plumbing ------------------------------------------------------------------------------------
    def at(self, seconds: float) -> Scenario:
        moment = T0 + timedelta(seconds=seconds)
        if moment < self.now:  # a recorder's own clock never runs backwards (the grader flags such a log as forged)
            raise ValueError(f"scenario time goes back from {(self.now - T0).total_seconds()} s to {seconds} s")
        self.now = moment
        return self

    @property
    def elapsed(self) -> float:
        return (self.now - T0).total_seconds()

    def _time(self) -> str:
        return format_time(self.now)

    def _uid(self) -> str:
        self.counter += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/{self.counter}"))

    def _rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def close(self) -> None:
        self.writer.close()

    def raw_object(self, watch_type: str, resource: str, obj: dict[str, Any]) -> None:
        self.writer.write_object(watch_type, resource, obj, time=self._time())

    def node(self, name: str, ready: bool, watch_type: str = "MODIFIED", cordoned: bool = False) -> None:
        """A Node as the OpenPAI backend's watcher records it: the rehearsal kubelet's registration and Ready condition
        (`hivedlab.rehearsal.kubelet`) as a real kubelet's (no emulation mark), listed (no kind/apiVersion, as a
        list's items) or changed; `cordoned`: with `spec.unschedulable` set (`kubectl cordon`; uncordon removes it)."""
        node = self.nodes.get(name) or _real_node(node_object(Worker(name, "10.0.0.2", 1)))
        if name not in self.nodes:
            node["metadata"] = {**node["metadata"], "uid": self._uid(), "creationTimestamp": _k8s_time(T0)}
        node = {**node, "metadata": {**node["metadata"], "resourceVersion": self._rv()},
                "spec": {"unschedulable": True} if cordoned else {},
                "status": {**node["status"], **node_status(ready, self.now.timestamp())["status"]}}
        self.nodes[name] = node
        listed = {k: v for k, v in node.items() if k not in ("kind", "apiVersion")} if watch_type == "LISTED" else node
        self.writer.write_object(watch_type, "nodes", listed, time=self._time())

    # -- runner actions ------------------------------------------------------------------------------
    def plan(self, experiment: str, cluster: str = "pai", members: tuple[str, ...] = ("alice", "bob")) -> None:
        if not self.actions:
            return
        self.writer.write_action(
            "plan",
            {"experiment": experiment, "plan": f"labs/experiments/{experiment}.yaml", "cluster": cluster,
             "seed": None, "members": list(members)},
            time=self._time(),
        )

    def config(self, name: str) -> None:
        text = TWO_VC if name == "two-vc" else ONE_VC
        if not self.actions:
            return
        self.writer.write_action("config-switch", {"name": name, "text": text}, time=self._time())

    def step(self, index: int, status: str = "reached") -> None:
        if not self.actions:
            return
        self.writer.write_action("step", {"index": index, "status": status}, time=self._time())

    def end(self, status: str = "finished", reason: str | None = None) -> None:
        body = {"status": status} | ({"reason": reason} if reason else {})
        if not self.actions:
            return
        self.writer.write_action("end", body, time=self._time())

    def submit(
        self, user: str, key: str, protocol_name: str, vc: str, priority: str, tasks: int = 1, gang: bool = True,
        status: int = 202, message: str | None = None,
    ) -> Job:
        name = f"{protocol_name}-{user}-1"
        fw = hashlib.md5(f"{user}~{name}".encode()).hexdigest()
        job = Job(user, key, name, vc, priority, tasks, gang, fw, self._uid())
        body: Any = (
            {"status": 202, "message": f"Update job {name} for user {user} successfully."}
            if status < 300 else {"code": "InvalidProtocolError", "message": message}
        )
        if status < 300:
            self.jobs[key + user] = job
        if not self.actions:
            return job
        self.writer.write_action(
            "submit",
            {"user": user, "job": key, "job_name": name, "framework_name": fw,
             "protocol": f"protocolVersion: 2\nname: {name}\n", "expect": "accepted" if status < 300 else "rejected",
             "reply": {"status": status, "body": body}},
            time=self._time(),
        )
        return job

    # -- Framework -----------------------------------------------------------------------------------
    def framework(self, job: Job, state: str, code: int | None = None, watch_type: str = "MODIFIED",
                  retry_delay_s: int | None = None) -> None:
        task_statuses = []
        for index in range(job.tasks):
            pod = job.pods.get(index)
            task_state, task_code = job.task_codes.get(
                index, ("TaskAttemptRunning" if pod else "TaskAttemptCreationPending", None))
            attempt: dict[str, Any] = {"id": 0, "startTime": _k8s_time(self.now), "instanceUID": None,
                                       "podName": f"{job.framework}-train-{index}",
                                       "podUID": pod["metadata"]["uid"] if pod else None,
                                       "podNodeName": pod["spec"].get("nodeName") if pod else None,
                                       "completionStatus": None}
            if task_code is not None:
                attempt["completionStatus"] = {"code": task_code, "phrase": _PHRASE.get(task_code, "Unknown"),
                                               "type": {"name": "Failed", "attributes": ["Transient"]}}
            task_statuses.append({"index": index, "state": task_state, "attemptStatus": attempt,
                                  "retryPolicyStatus": {"totalRetriedCount": 0, "accountableRetriedCount": 0}})
        fw = {
            "apiVersion": "frameworkcontroller.microsoft.com/v1",
            "kind": "Framework",
            "metadata": {
                "name": job.framework, "namespace": "default", "uid": job.uid, "resourceVersion": self._rv(),
                "creationTimestamp": _k8s_time(T0), "generation": 1,
                "labels": {"userName": job.user, "virtualCluster": job.vc},
                "annotations": {"jobName": job.name, "logPathInfix": job.framework,
                                "totalGpuNumber": str(job.tasks), "config": f"protocolVersion: 2\nname: {job.name}\n"},
            },
            "spec": {"executionType": "Start", "retryPolicy": {"fancyRetryPolicy": True, "maxRetryCount": 0},
                     "taskRoles": [{"name": "train", "taskNumber": job.tasks,
                                    "frameworkAttemptCompletionPolicy": {"minFailedTaskCount": 1,
                                                                         "minSucceededTaskCount": 1}}]},
            "status": {
                "state": state,
                "startTime": _k8s_time(T0),
                "attemptStatus": {
                    "id": job.attempt, "instanceUID": f"{job.attempt}_{job.uid}",
                    "configMapName": f"{job.framework}-attempt",
                    "completionStatus": None if code is None else {"code": code,
                                                                   "phrase": _PHRASE.get(code, "Unknown")},
                    "taskRoleStatuses": [{"name": "train", "podGracefulDeletionTimeoutSec": 600,
                                          "taskStatuses": task_statuses}],
                },
                "retryPolicyStatus": {"totalRetriedCount": job.attempt, "accountableRetriedCount": 0,
                                      **({} if retry_delay_s is None else {"retryDelaySec": retry_delay_s})},
                "completionTime": _k8s_time(self.now) if state == "Completed" else None,
            },
        }
        self.writer.write_object(watch_type, "frameworks", fw, time=self._time())

    # -- pods ----------------------------------------------------------------------------------------
    def pod_add(self, job: Job, index: int, write: bool = True) -> dict[str, Any]:
        name = f"{job.framework}-train-{index}"
        priority = PRIORITY[job.priority]
        group = "null" if not job.gang else (
            f"\n  name: {job.user}~{job.name}/default\n  members:\n  - podNumber: {job.tasks}\n    leafCellNumber: 1")
        spec_text = (f"virtualCluster: {job.vc}\npriority: {priority}\npinnedCellId: null\nleafCellType: null\n"
                     f"leafCellNumber: 1\naffinityGroup: {group}\n")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name, "namespace": "default", "uid": self._uid(), "resourceVersion": self._rv(),
                "creationTimestamp": _k8s_time(self.now),
                "labels": {"userName": job.user, "virtualCluster": job.vc, "type": "kube-launcher-task",
                           "FC_FRAMEWORK_NAME": job.framework, "FC_TASKROLE_NAME": "train",
                           "FC_TASK_INDEX": str(index)},
                "annotations": {
                    "container.apparmor.security.beta.kubernetes.io/app": "unconfined",
                    "rest-server/port-scheduling-spec": '{"schedulePortStart":15000,"schedulePortEnd":40000,'
                                                        '"ports":{}}',
                    "hivedscheduler.microsoft.com/pod-scheduling-spec": spec_text,
                    "FC_FRAMEWORK_NAMESPACE": "default", "FC_FRAMEWORK_NAME": job.framework,
                    "FC_TASKROLE_NAME": "train", "FC_TASK_INDEX": str(index),
                    "FC_CONFIGMAP_NAME": f"{job.framework}-attempt",
                    "FC_POD_NAME": name, "FC_FRAMEWORK_ATTEMPT_ID": str(job.attempt),
                    "FC_FRAMEWORK_ATTEMPT_INSTANCE_UID": f"{job.attempt}_{job.uid}", "FC_CONFIGMAP_UID": job.uid,
                    "FC_TASK_ATTEMPT_ID": "0",
                },
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"{job.framework}-attempt",
                                     "uid": job.uid, "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": {
                "schedulerName": f"hivedscheduler-ds-{job.vc}", "priorityClassName": f"{job.framework}-priority",
                "priority": -(((126 - max(-1, priority)) << 23) + 1234), "hostNetwork": True, "restartPolicy": "Never",
                "serviceAccountName": "runtime-account",
                "initContainers": [{"name": "init", "image": "openpai/openpai-runtime:v1.2.0",
                                    "env": [{"name": "GANG_ALLOCATION", "value": "true" if job.gang else "false"}]}],
                "containers": [{
                    "name": "app", "image": "openpai/pai.example.pytorch", "command": ["/usr/local/pai/runtime"],
                    "resources": {"limits": {"cpu": "2", "memory": "4096Mi", "github.com/fuse": "1",
                                             "hivedscheduler.microsoft.com/pod-scheduling-enable": "1"}},
                    "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {
                        "fieldPath": "metadata.annotations['hivedscheduler.microsoft.com/pod-leaf-cell-isolation']"}}}],
                    "terminationMessagePath": "/tmp/pai-termination-log",
                }],
            },
            "status": {"phase": "Pending", "qosClass": "Guaranteed"},
        }
        job.pods[index] = pod
        if write:
            self.writer.write_object("ADDED", "pods", pod, time=self._time())
        return pod

    def pod_added_late(self, job: Job, index: int) -> None:
        """Write the ADDED record of a pod made with `pod_add(write=False)` (its events came first)."""
        self.writer.write_object("ADDED", "pods", job.pods[index], time=self._time())

    def _update(self, job: Job, index: int, watch_type: str = "MODIFIED") -> None:
        pod = job.pods[index]
        pod["metadata"]["resourceVersion"] = self._rv()
        self.writer.write_object(watch_type, "pods", pod, time=self._time())

    def pod_wait(self, job: Job, index: int, reason: str) -> None:
        pod = job.pods[index]
        message = f"0/3 nodes are available: 1 {WAIT}{reason}, 2 node(s) didn't match node selector."
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                        "message": message, "lastTransitionTime": _k8s_time(self.now)}]
        self.event(pod, "FailedScheduling", message, "Warning", f"hivedscheduler-ds-{job.vc}")
        self._update(job, index)

    def pod_bind(self, job: Job, index: int, node: str, gpus: tuple[int, ...] = (0,)) -> None:
        pod = job.pods[index]
        leaves = ",".join(str(g) for g in gpus)
        pod["spec"]["nodeName"] = node
        pod["metadata"]["annotations"]["hivedscheduler.microsoft.com/pod-leaf-cell-isolation"] = leaves
        pod["metadata"]["annotations"]["hivedscheduler.microsoft.com/pod-bind-info"] = (
            f"node: {node}\nleafCellIsolation:\n- {gpus[0]}\ncellChain: GPU-NODE-POOL\naffinityGroupBindInfo:\n"
            f"- podPlacements:\n  - physicalNode: {node}\n    physicalLeafCellIndices:\n    - {gpus[0]}\n"
            f"    preassignedCellTypes:\n    - GPU-NODE\n")
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True",
                                        "lastTransitionTime": _k8s_time(self.now)}]
        self._update(job, index)

    def pod_run(self, job: Job, index: int) -> None:
        pod = job.pods[index]
        node_now = self.now + timedelta(seconds=self.skew.get(pod["spec"].get("nodeName", ""), 0))
        pod["status"].update(phase="Running", hostIP="10.0.0.2", podIP="10.0.0.2", startTime=_k8s_time(self.now))
        pod["status"]["containerStatuses"] = [{"name": "app", "ready": True, "restartCount": 0,
                                               "image": "openpai/pai.example.pytorch",
                                               "state": {"running": {"startedAt": _k8s_time(node_now)}}}]
        job.task_codes[index] = ("TaskAttemptRunning", None)
        self._update(job, index)

    def pod_exit(self, job: Job, index: int, code: int = 0) -> None:
        pod = job.pods[index]
        started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
        pod["status"]["containerStatuses"][0]["state"] = {"terminated": {
            "exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": started,
            "finishedAt": _k8s_time(self.now)}}
        job.task_codes[index] = ("TaskAttemptCompleted", code)
        self._update(job, index)

    def pod_delete(self, job: Job, index: int, code: int | None = None, graceful: bool = True) -> None:
        pod = job.pods[index]
        if graceful:
            pod["metadata"]["deletionTimestamp"] = _k8s_time(self.now)
            pod["metadata"]["deletionGracePeriodSeconds"] = 30
            self._update(job, index)
        if code is not None:
            job.task_codes[index] = ("TaskAttemptCompleted", code)
        self._update(job, index, "DELETED")

    def event(self, pod: dict[str, Any], reason: str, message: str, kind: str = "Normal",
              component: str = "default-scheduler") -> dict[str, Any]:
        meta = pod["metadata"]
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{self.counter:016x}", "namespace": "default", "uid": self._uid(),
                         "resourceVersion": self._rv(), "creationTimestamp": _k8s_time(self.now)},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": meta["name"], "uid": meta["uid"],
                               "apiVersion": "v1", "resourceVersion": meta["resourceVersion"]},
            "reason": reason, "message": message, "source": {"component": component},
            "firstTimestamp": _k8s_time(self.now), "lastTimestamp": _k8s_time(self.now), "count": 1, "type": kind,
            "eventTime": None, "reportingComponent": "", "reportingInstance": "",
        }
        self.writer.write_object("ADDED", "events", event, time=self._time())
        return event

    def preempt(self, victim: Job, index: int, preemptor: Job, preemptor_index: int, node: str) -> None:
        """The preemptor's scheduler deletes the victim pod and records `Preempted` on it
        (docs/openpai-model.md#waiting-preemption-and-stop)."""
        pod = victim.pods[index]
        by = preemptor.pods[preemptor_index]["metadata"]["name"]
        self.event(pod, "Preempted", f"by default/{by} on node {node}")
        self.pod_delete(victim, index, code=-101)

    def retry(self, job: Job) -> None:
        """FrameworkController starts a new framework attempt: same pod names, new uids
        (docs/openpai-model.md#waiting-preemption-and-stop)."""
        job.attempt += 1
        job.pods.clear()
        job.task_codes.clear()


_PHRASE = {0: "Succeeded", -101: "PodExternalDeleted", -210: "StopFrameworkRequested",
           -220: "FrameworkAttemptCompletion"}


def relist(sc: Scenario, jobs: list[Job], resource_version: str | None = None) -> None:
    """A watch restart: the watcher re-lists and records every live pod again (same uid and resourceVersion)."""
    sc.writer.write_action("watch", {"event": "reconnect", "resource": "pods", "detail": "connection reset"},
                           time=sc._time())
    for job in jobs:
        for index in sorted(job.pods):
            sc.writer.write_object("LISTED", "pods", job.pods[index], time=sc._time())
    sc.writer.write_action("watch", {"event": "listed", "resource": "pods",
                                     "resource_version": resource_version or str(sc.rv)},
                           time=sc._time())


DEFAULT_WAIT_FOR_BENCH = "insufficient capacity when scheduling in VC default"
