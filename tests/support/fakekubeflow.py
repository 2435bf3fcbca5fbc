"""What a plain Kubernetes cluster with Kubeflow's training operator and a scheduler does, on the fake API
(`tests.support.k8s_crd_server`), one `tick()` at a time (the test's sleep calls it, so a run is fast and exact).
Each behaviour names the upstream function it follows; tests/backends/sim/test_served_pods.py holds the pods it
makes to `hivedlab.models.kubeflow.operator`, written from the same sources:

- the operator creates all the pods of a new TFJob in one tick, replica type by replica type in the manifest's order,
  each type's pods by index (tf-operator v0.5's one worker thread creates them in one pass: `--threadiness` 1,
  cmd/tf-operator.v1beta2/app/options/options.go; controller.go `reconcileTFJobs`; Go's map order, which the fake
  fixes as the manifest's), and deletes a TFJob's pods with it; a job whose pods all run for `run_ticks` ticks
  succeeds (its PS, which never exits, is deleted: cleanPodPolicy Running, job.go `deletePodsAndServices`, and the
  PodGroup of the job's name: jobcontroller.go `DeletePodGroup`). For a `kubeflow.org/v1beta1` TFJob it is tf-operator
  v0.5's `tf-operator.v1beta2` started with `--enable-gang-scheduling`, as Kubeflow v0.5's tf-job-operator package
  deploys it (its CRD serves v1beta1 and v1beta2): the pod is `createNewPod`'s (kubeflow/tf-operator v0.5.0,
  pkg/controller.v1beta2/tensorflow/pod.go), and it records its events on the TFJob as `hivedlab.models.kubeflow.
  operator` lists them (`SettedPodTemplateSchedulerName` per pod when a template names another scheduler,
  `SuccessfulCreatePod`, `SuccessfulCreateService`, `ExitedWithCode`, `TFJobSucceeded`, `SuccessfulDeletePod`,
  `SuccessfulDeleteService`, `SuccessfulDeletePodGroup`); for a `kubeflow.org/v1` TFJob the training operator v1's
  labels, and no events;
- the scheduler named by the pods binds them on four nodes of one GPU each: `default-scheduler` one pod at a time
  (a pod that does not fit gets FailedScheduling with Kubernetes v1.14's FitError), a gang scheduler a PodGroup's
  pods all at once, only when all of them exist and fit (otherwise each pod gets kube-batch v0.4's `Unschedulable`
  with the job's FitError, and the PodGroup its "tasks in gang unschedulable" event), as docs/other-schedulers.md
  describes.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from hivedlab.rehearsal.kubelet import Worker, finished_status, node_object, running_status
from tests.support.k8s_crd_server import FakeKubeApi

NODES = ("k8s-g1", "k8s-g2", "k8s-g3", "k8s-g4")
GANG = "scheduling.k8s.io/group-name"  # kube-batch v0.4, pkg/apis/scheduling/v1alpha1/labels.go
OPERATOR_V0_5 = "kubeflow.org/v1beta2"  # the GroupVersion tf-operator.v1beta2 owns its pods with (GenOwnerReference)


@dataclass
class _Job:
    namespace: str
    name: str
    api_version: str
    uid: str
    specs: dict[str, Any]  # tfReplicaSpecs as the manifest gives them
    pods: list[tuple[str, str, int, dict[str, Any]]]  # (pod name, replica type, index, pod template)
    created: int = 0
    running_ticks: int = 0
    done: bool = False
    said: set[str] = field(default_factory=set)  # pods already told why they wait
    group_told: bool = False  # the PodGroup's own event recorded
    events: dict[tuple[str, str], str] = field(default_factory=dict)  # (reason, message) -> the event's name


def _gpus(pod: dict[str, Any]) -> int:
    return sum(int((c.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu", 0))
               for c in pod["spec"]["containers"])


class FakeKubeflow:
    def __init__(self, api: FakeKubeApi, run_ticks: int = 10, emulated: bool = False) -> None:
        self.api, self.run_ticks = api, run_ticks
        # the rehearsal cluster (`rehearsal up --kubeflow`): hivedlab.rehearsal.kubelet's own Nodes and pod statuses
        self.emulated = emulated
        if emulated:
            api.nodes = [node_object(Worker(node["metadata"]["name"], f"10.0.0.{i + 1}",
                                            int(node["status"]["allocatable"].get("nvidia.com/gpu", 0))))
                         for i, node in enumerate(api.nodes)]
        self.jobs: dict[str, _Job] = {}
        self.ticks = 0
        self._stop = threading.Event()
        api.on_change.append(self._changed)

    def run_in_background(self, tick_s: float) -> threading.Thread:
        """Tick on wall time until `stop()` (for a run through the CLI, which waits on wall time)."""
        thread = threading.Thread(target=self._loop, args=(tick_s,), name="fake-kubeflow", daemon=True)
        thread.start()
        return thread

    def _loop(self, tick_s: float) -> None:
        while not self._stop.wait(tick_s):
            self.tick()

    def stop(self) -> None:
        self._stop.set()

    def _changed(self, resource: str, watch_type: str, obj: dict[str, Any]) -> None:
        """Called by the API with its lock held: remember new TFJobs; a deleted TFJob takes its pods."""
        if resource != "tfjobs":
            return
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if watch_type == "ADDED":
            pods = []
            for role, spec in obj["spec"]["tfReplicaSpecs"].items():
                for index in range(int(spec.get("replicas", 1))):
                    pods.append((f"{meta['name']}-{role.lower()}-{index}", role.lower(), index, spec["template"]))
            self.jobs[key] = _Job(meta["namespace"], meta["name"], obj["apiVersion"], meta["uid"],
                                  obj["spec"]["tfReplicaSpecs"], pods)
        elif watch_type == "DELETED":
            self.jobs.pop(key, None)

    def tick(self) -> None:
        with self.api.cond:  # one step of the whole cluster; the API answers between steps
            self.ticks += 1
            self._delete_orphans()
            for job in list(self.jobs.values()):
                if not job.created:
                    self._create_pods(job)
            self._schedule()
            self._progress()

    # -- the operator ------------------------------------------------------------------------------------------------
    def _labels(self, job: _Job, role: str, index: int) -> dict[str, str]:
        if job.api_version.endswith("/v1beta1"):
            # tf-operator v0.5, pkg/common/jobcontroller/jobcontroller.go `GenLabels` and pod.go `createNewPod`; the
            # master role (tf-job-role) is the chief, or worker 0 without one (`reconcilePods`)
            labels = {"group-name": "kubeflow.org", "tf-job-name": job.name, "tf-replica-type": role,
                      "tf-replica-index": str(index)}
            chief = any(r.lower() in ("chief", "master") for r in job.specs)
            if (role in ("chief", "master")) if chief else (role == "worker" and index == 0):
                labels["tf-job-role"] = "master"
            return labels
        return {"training.kubeflow.org/job-name": job.name, "training.kubeflow.org/replica-type": role,
                "training.kubeflow.org/replica-index": str(index),
                "training.kubeflow.org/operator-name": "tfjob-controller"}

    def _tf_config(self, job: _Job, role: str, index: int) -> str:
        """tf-operator v0.5, pkg/controller.v1beta2/tensorflow/tensorflow.go `genTFConfigJSONStr`: every replica but
        the evaluator at `<pod>.<namespace>.svc:2222` (the default `tfjob-port`), encoded as Go's json.Marshal does."""
        cluster = {r.lower(): [f"{job.name}-{r.lower()}-{i}.{job.namespace}.svc:2222"
                               for i in range(int(spec.get("replicas", 1)))]
                   for r, spec in job.specs.items() if r != "Evaluator"}
        return json.dumps({"cluster": dict(sorted(cluster.items())), "task": {"type": role, "index": index},
                           "environment": "cloud"}, separators=(",", ":"))

    def _pod_spec(self, job: _Job, role: str, index: int, template: dict[str, Any]) -> dict[str, Any]:
        """tf-operator v0.5's pod spec: the template's, with the `tfjob-port` default (pkg/apis/tensorflow/v1beta2/
        defaults.go `setDefaultPort`), `TF_CONFIG` (pod.go `setClusterSpec`), the replica's restart policy
        (`setRestartPolicy`, default Never), kube-batch unless a template names another scheduler (`createNewPod`);
        requests defaulted from limits and priority 0 by the API server (Kubernetes v1.14 `SetDefaults_Pod`, the
        Priority admission plugin)."""
        spec = json.loads(json.dumps(template["spec"]))
        replica = next(v for r, v in job.specs.items() if r.lower() == role)
        for position, container in enumerate(spec["containers"]):
            if container.get("name") == "tensorflow" or (position == 0 and not any(
                    c.get("name") == "tensorflow" for c in spec["containers"])):
                ports = container.setdefault("ports", [])
                if not any(p.get("name") == "tfjob-port" for p in ports):
                    ports.append({"name": "tfjob-port", "containerPort": 2222})
            container["env"] = [*container.get("env", []), {"name": "TF_CONFIG",
                                                            "value": self._tf_config(job, role, index)}]
            limits = (container.get("resources") or {}).get("limits")
            if limits:
                container["resources"]["requests"] = {**limits, **container["resources"].get("requests", {})}
        policy = replica.get("restartPolicy") or "Never"
        spec["restartPolicy"] = "Never" if policy == "ExitCode" else policy
        if not _other_scheduler(job.specs):
            spec["schedulerName"] = "kube-batch"
        spec.setdefault("schedulerName", "default-scheduler")
        spec["priority"] = 0
        return spec

    def _create_pods(self, job: _Job) -> None:
        """Every pod of the job in one pass, each type's services after its pods (`reconcilePods`, then
        `reconcileServices`), with the operator's events on the TFJob; first, with gang scheduling on, a PodGroup of
        the TFJob's name unless there is one (jobcontroller.go `SyncPodGroup`, minMember every replica)."""
        group = "scheduling.incubator.k8s.io"
        if job.api_version.endswith("/v1beta1") and self.api.group_of("podgroups") == group and not any(
                g["metadata"]["name"] == job.name for g in self.api.items("podgroups", job.namespace)):
            owner = {"apiVersion": OPERATOR_V0_5, "kind": "TFJob", "name": job.name, "uid": job.uid,
                     "controller": True, "blockOwnerDeletion": True}
            self.api.put("podgroups", {
                "apiVersion": f"{group}/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": job.name, "namespace": job.namespace, "ownerReferences": [owner]},
                "spec": {"minMember": len(job.pods)}})
        for position, (name, role, index, template) in enumerate(job.pods):
            self._create_pod(job, name, role, index, template)
            job.created += 1
            if position + 1 == len(job.pods) or job.pods[position + 1][1] != role:
                for other, other_role, _, _ in job.pods:
                    if other_role == role:
                        self._job_event(job, "Normal", "SuccessfulCreateService", f"Created service: {other}")

    def _create_pod(self, job: _Job, name: str, role: str, index: int, template: dict[str, Any]) -> None:
        meta = template.get("metadata") or {}
        if job.api_version.endswith("/v1beta1"):
            spec = self._pod_spec(job, role, index, template)
            owner = {"apiVersion": OPERATOR_V0_5, "kind": "TFJob", "name": job.name, "uid": job.uid,
                     "controller": True, "blockOwnerDeletion": True}
            if _other_scheduler(job.specs):  # pod.go `createNewPod`, gang scheduling on
                self._job_event(job, "Warning", "SettedPodTemplateSchedulerName", "Another scheduler is specified "
                                "when gang-scheduling is enabled and it will not be overwritten")
        else:
            spec = {"schedulerName": template["spec"].get("schedulerName", "default-scheduler"),
                    "containers": template["spec"]["containers"]}
            owner = {"kind": "TFJob", "name": job.name, "apiVersion": job.api_version}
        self.api.put("pods", {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": job.namespace,
                         "labels": {**(meta.get("labels") or {}), **self._labels(job, role, index)},
                         "annotations": dict(meta.get("annotations") or {}), "ownerReferences": [owner]},
            "spec": spec, "status": {"phase": "Pending"}})
        self._job_event(job, "Normal", "SuccessfulCreatePod", f"Created pod: {name}")  # pod_control.go `createPods`
        if job.created == 0:
            self.api.update("tfjobs", f"{job.namespace}/{job.name}", lambda o: o.setdefault("status", {}).update(
                conditions=[_condition("Created", "TFJobCreated", f"TFJob {job.name} is created.")]))

    def _job_event(self, job: _Job, kind: str, reason: str, message: str) -> None:
        """An event tf-operator v0.5 records on the TFJob (source `tf-operator`); a repeat of the same reason and
        message bumps the event's count (client-go's `EventCorrelator`). The training operator v1's: none."""
        if not job.api_version.endswith("/v1beta1"):
            return
        name = job.events.get((reason, message))
        if name is not None:
            self.api.update("events", f"{job.namespace}/{name}",
                            lambda o: o.update(count=o["count"] + 1))
            return
        name = job.events[(reason, message)] = f"{job.name}.{uuid.uuid4().hex[:16]}"
        self.api.put("events", {
            "kind": "Event", "apiVersion": "v1", "metadata": {"name": name, "namespace": job.namespace},
            "involvedObject": {"kind": "TFJob", "apiVersion": OPERATOR_V0_5, "name": job.name,
                               "namespace": job.namespace, "uid": job.uid},
            "reason": reason, "message": message, "type": kind, "source": {"component": "tf-operator"},
            "count": 1})

    def _delete_orphans(self) -> None:
        """The garbage collector: the pods and the operator's PodGroups of a deleted TFJob go with it."""
        owners = {(j.namespace, j.name) for j in self.jobs.values()}
        for resource in ("pods", "podgroups"):
            for obj in self.api.items(resource):
                meta = obj["metadata"]
                refs = meta.get("ownerReferences") or ([{}] if resource == "pods" else [])
                if refs and (meta["namespace"], refs[0].get("name")) not in owners:
                    self.api.remove(resource, f"{meta['namespace']}/{meta['name']}")

    # -- the scheduler -----------------------------------------------------------------------------------------------
    def _free(self) -> list[str]:
        used = [pod["spec"].get("nodeName") for pod in self.api.items("pods")
                if _gpus(pod) and pod["status"].get("phase") in ("Pending", "Running") and pod["spec"].get("nodeName")]
        return [node for node in NODES if node not in used]

    def _schedule(self) -> None:
        pending = [p for p in self.api.items("pods") if not p["spec"].get("nodeName")]
        pending.sort(key=lambda p: int(p["metadata"]["resourceVersion"]))
        done: set[str] = set()
        for pod in pending:
            if pod["metadata"]["name"] in done:
                continue
            if pod["spec"]["schedulerName"] == "default-scheduler":
                # Kubernetes v1.14 pkg/scheduler/core/generic_scheduler.go, `FitError.Error`: every node lacks a GPU
                self._place([pod], "FailedScheduling", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
                continue
            group = pod["metadata"]["annotations"].get(GANG)
            members = [p for p in pending if p["metadata"]["annotations"].get(GANG) == group
                       and p["metadata"]["namespace"] == pod["metadata"]["namespace"]]
            done |= {p["metadata"]["name"] for p in members}
            job = self.jobs.get(f"{pod['metadata']['namespace']}/{group}")
            if job is None or job.created < len(job.pods):
                continue  # the gang is not whole yet: not valid for a session
            # kube-batch v0.4 pkg/scheduler/cache/cache.go, `RecordJobStatusEvent`: each waiting task gets the job's
            # FitError (pkg/scheduler/api/job_info.go `FitError`: the last task tried lacked a GPU on every node)
            # through `taskUnschedulable`, the PodGroup "<pending>/<tasks> tasks in gang unschedulable: <FitError>"
            # the gang plugin's `OnSessionClose`: the PodGroup's Unschedulable condition (NotEnoughResources), its
            # phase Pending (framework/session.go `jobStatus`: Running only with more than minMember allocated)
            fit_error = "0/4 nodes are available, 4 insufficient GPU."
            if not self._place(members, "Unschedulable", fit_error) and not job.group_told:
                job.group_told = True
                message = f"{len(members)}/{len(job.pods)} tasks in gang unschedulable: {fit_error}"
                self._group_event(job, message)
                condition = {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources",
                             "message": message}
                status = {"phase": "Pending", "conditions": [condition]}
                self.api.update("podgroups", f"{job.namespace}/{job.name}",
                                functools.partial(_set_status, status=status))

    def _place(self, pods: list[dict[str, Any]], reason: str, message: str) -> bool:
        """Bind all the pods, or none and tell each why (once); whether they were bound."""
        free = self._free()
        if sum(_gpus(p) for p in pods) > len(free):
            for pod in pods:
                job = self._job_of(pod)
                if job is not None and pod["metadata"]["name"] not in job.said:
                    job.said.add(pod["metadata"]["name"])
                    self._event(pod, reason, message)
            return False
        for pod in pods:
            node = free.pop(0) if _gpus(pod) else NODES[0]
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            self.api.update("pods", key, functools.partial(_run_on, node=node, emulated=self.emulated))
            # both record it: Kubernetes v1.14 scheduler.go `bind`; kube-batch v0.4.2 cache.go `Bind`
            self._event(pod, "Scheduled", f"Successfully assigned {key} to {node}")
        return True

    def _group_event(self, job: _Job, message: str) -> None:
        """An event on the job's PodGroup, as kube-batch records it (reason `Unschedulable`, a Warning)."""
        group = self.api.items("podgroups", job.namespace)
        uid = next((g["metadata"].get("uid") for g in group if g["metadata"]["name"] == job.name), "")
        self.api.put("events", {
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": f"{job.name}.{uuid.uuid4().hex[:12]}", "namespace": job.namespace},
            "involvedObject": {"kind": "PodGroup", "apiVersion": "scheduling.incubator.k8s.io/v1alpha1",
                               "name": job.name, "namespace": job.namespace, "uid": uid},
            "reason": "Unschedulable", "message": message, "type": "Warning"})

    def _event(self, pod: dict[str, Any], reason: str, message: str) -> None:
        meta = pod["metadata"]
        self.api.put("events", {
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:12]}", "namespace": meta["namespace"]},
            "involvedObject": {"kind": "Pod", "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
            "reason": reason, "message": message, "type": "Normal" if reason == "Scheduled" else "Warning"})

    def _job_of(self, pod: dict[str, Any]) -> _Job | None:
        owner = (pod["metadata"].get("ownerReferences") or [{}])[0].get("name")
        return self.jobs.get(f"{pod['metadata']['namespace']}/{owner}")

    # -- training ----------------------------------------------------------------------------------------------------
    def _progress(self) -> None:
        for job in self.jobs.values():
            pods = [p for p in self.api.items("pods", job.namespace) if self._job_of(p) is job]
            if job.done or len(pods) < len(job.pods) or any(p["status"]["phase"] != "Running" for p in pods):
                continue
            job.running_ticks += 1
            key = f"{job.namespace}/{job.name}"
            if job.running_ticks == 1:
                running = _condition("Running", "TFJobRunning", f"TFJob {job.name} is running.")
                self.api.update("tfjobs", key, functools.partial(_add_condition, condition=running))
            if job.running_ticks < self.run_ticks:
                continue
            job.done = True
            ps = [p for p in pods if p["metadata"]["labels"].get("tf-replica-type", p["metadata"]["labels"].get(
                "training.kubeflow.org/replica-type")) == "ps"]
            for pod in pods:
                if pod in ps:
                    continue
                self.api.update("pods", f"{job.namespace}/{pod['metadata']['name']}",
                                functools.partial(_succeed, emulated=self.emulated))
                self._job_event(job, "Normal", "ExitedWithCode",  # pod.go `reconcilePods`
                                f"Pod: {job.namespace}.{pod['metadata']['name']} exited with code 0")
            # status.go `updateStatusSingle`: worker 0 succeeded
            self._job_event(job, "Normal", "TFJobSucceeded", f"TFJob {job.name} successfully completed.")
            self.api.update("tfjobs", key, functools.partial(_succeeded, name=job.name))
            for pod in ps:  # cleanPodPolicy Running: the PS, which never exits by itself, and its service
                self.api.remove("pods", f"{job.namespace}/{pod['metadata']['name']}")
                self._job_event(job, "Normal", "SuccessfulDeletePod", f"Deleted pod: {pod['metadata']['name']}")
                self._job_event(job, "Normal", "SuccessfulDeleteService",
                                f"Deleted service: {pod['metadata']['name']}")
            if self.api.remove("podgroups", key) is not None:
                self._job_event(job, "Normal", "SuccessfulDeletePodGroup", f"Deleted PodGroup: {job.name}")


def _other_scheduler(specs: dict[str, Any]) -> bool:
    """tf-operator v0.5, pod.go `isNonGangSchedulerSet`: some template names a scheduler other than kube-batch."""
    named = {str(v["template"]["spec"].get("schedulerName") or "") for v in specs.values()}
    return bool(named - {"", "kube-batch"})


def _condition(kind: str, reason: str, message: str) -> dict[str, str]:
    """A TFJob condition as tf-operator v0.5 writes it (pkg/controller.v1beta2/tensorflow/status.go,
    `updateTFJobConditions`; job.go `addTFJob` for Created)."""
    return {"type": kind, "status": "True", "reason": reason, "message": message}


def _add_condition(tfjob: dict[str, Any], condition: dict[str, str]) -> None:
    tfjob["status"]["conditions"].append(condition)


def _succeeded(tfjob: dict[str, Any], name: str) -> None:
    """status.go `setCondition`: Succeeded goes last and turns Running false (`filterOutCondition`)."""
    conditions = [{**c, "status": "False"} if c["type"] == "Running" else c for c in tfjob["status"]["conditions"]]
    tfjob["status"]["conditions"] = [*conditions,
                                     _condition("Succeeded", "TFJobSucceeded", f"TFJob {name} successfully completed.")]


def _set_status(obj: dict[str, Any], status: dict[str, Any]) -> None:
    obj["status"] = status


def _run_on(pod: dict[str, Any], node: str, emulated: bool = False) -> None:
    """The pod is bound to `node` and its container runs."""
    pod["spec"]["nodeName"] = node
    pod["status"].update(running_status(pod, Worker(node, "10.0.0.1", 1), time.time())["status"] if emulated else {
        "phase": "Running", "containerStatuses": [
            {"name": "tensorflow", "ready": True, "state": {"running": {"startedAt": "2026-11-26T00:00:00Z"}}}]})


def _succeed(pod: dict[str, Any], emulated: bool = False) -> None:
    """The pod's container exits 0."""
    pod["status"].update(finished_status(pod, 0, time.time())["status"] if emulated else {
        "phase": "Succeeded",
        "containerStatuses": [{"name": "tensorflow", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]})
