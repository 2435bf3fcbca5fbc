"""A tiny scripted Kubeflow contrast run (`hivedlab run kubeflow-gang`) that writes its evidence log in the shape
docs/kubeflow-on-kubernetes.md ("What the evidence log holds") describes: the runner's plan, submit, step and end
records, and the TFJobs, PodGroups, pods and events of one namespace as the API serves them.

Names follow the real programs (kubeflow/tf-operator v0.5.3): the runner names a TFJob and its PodGroup
`<file stem>-<member>-<experiment>-<run tag>` in a namespace `hivedlab-<experiment>-<scheduler>-<run tag>` (the
simulator: `default`); tf-operator names a pod `<TFJob>-<replica type>-<index>` with the labels `tf-job-name`,
`tf-replica-type`, `tf-replica-index` (`GenGeneralName`, `GenLabels`), keeps every condition of the TFJob with the
current one last and true (`pkg/controller.v1beta2/tensorflow/status.go`, `setCondition`), and writes its events on
the TFJob (`SuccessfulCreatePod`, `ExitedWithCode: Pod: <namespace>.<pod> exited with code N`, `TFJobSucceeded`)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hivedlab.evidence import EvidenceWriter, format_time

T0 = datetime(2026, 3, 2, 8, 0, 0, tzinfo=timezone.utc)
EXPERIMENT = "kubeflow-gang"


class KubeflowRun:
    """Write one contrast run's log; each method writes the records the cluster would produce for that change."""

    def __init__(self, path: Path, source: str, scheduler: str, namespace: str, tag: str) -> None:
        path.unlink(missing_ok=True)
        self.writer = EvidenceWriter(path, source)
        self.namespace, self.tag, self.seed = namespace, tag, f"{source}/{tag}"
        self.counter = 0
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.writer.write_action("plan", {"experiment": EXPERIMENT, "plan": f"labs/experiments/{EXPERIMENT}.yaml",
                                          "cluster": "k8s" if source == "k8s" else "sim", "scheduler": scheduler,
                                          "seed": None, "members": ["alice"]}, time=self._time())

    def _time(self) -> str:
        return format_time(T0 + timedelta(seconds=self.counter))

    def _uid(self) -> str:
        self.counter += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/{self.counter}"))

    def _meta(self, name: str, owner: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace, "uid": self._uid()}
        if owner is not None:
            meta["ownerReferences"] = [{"apiVersion": "kubeflow.org/v1beta2", "kind": "TFJob", "name": owner,
                                        "controller": True, "blockOwnerDeletion": True,
                                        "uid": self.objects[("tfjobs", owner)]["metadata"]["uid"]}]
        return meta

    def _write(self, watch_type: str, resource: str, obj: dict[str, Any]) -> None:
        self.objects[(resource, obj["metadata"]["name"])] = obj
        self.writer.write_object(watch_type, resource, obj, time=self._time())

    def submit(self, key: str, stem: str, user: str = "alice") -> str:
        """The runner creates the PodGroup, then the TFJob; the operator's PodGroup of the same name is that one."""
        name = f"{stem}-{user}-{EXPERIMENT}-{self.tag}"
        self.writer.write_action("submit", {"user": user, "job": key, "job_name": name, "framework_name": name,
                                            "protocol": f"kind: TFJob\nmetadata:\n  name: {name}\n",
                                            "expect": "accepted", "reply": {"status": 201, "body": {"status": 201}}},
                                 time=self._time())
        self._write("ADDED", "tfjobs", {"apiVersion": "kubeflow.org/v1beta1", "kind": "TFJob",
                                        "metadata": self._meta(name), "spec": {}})
        self._write("ADDED", "podgroups", {"apiVersion": "scheduling.incubator.k8s.io/v1alpha1", "kind": "PodGroup",
                                           "metadata": self._meta(name, owner=name), "spec": {"minMember": 2},
                                           "status": {}})
        return name

    def conditions(self, tfjob: str, *types: str) -> None:
        """The TFJob's conditions: every type given, the last one true; Running turns false once it succeeded."""
        done = types[-1] in ("Succeeded", "Failed")
        conditions = [{"type": t, "reason": f"TFJob{t}", "message": f"TFJob {tfjob} is {t.lower()}.",
                       "status": "False" if done and t == "Running" else "True"} for t in types]
        obj = self.objects[("tfjobs", tfjob)]
        self._write("MODIFIED", "tfjobs", {**obj, "status": {"conditions": conditions}})

    def podgroup(self, name: str, phase: str, watch_type: str = "MODIFIED") -> None:
        obj = self.objects[("podgroups", name)]
        self._write(watch_type, "podgroups", {**obj, "status": {"phase": phase}})

    def pod(self, tfjob: str, role: str, index: int, node: str | None = None, phase: str = "Pending",
            exit_code: int | None = None, watch_type: str = "MODIFIED") -> str:
        name = f"{tfjob}-{role}-{index}"
        old = self.objects.get(("pods", name))
        meta = old["metadata"] if old else {**self._meta(name, owner=tfjob), "labels": {
            "group-name": "kubeflow.org", "tf-job-name": tfjob, "tf-replica-type": role,
            "tf-replica-index": str(index)}}
        status: dict[str, Any] = {"phase": phase}
        if phase in ("Running", "Succeeded", "Failed"):
            state = ({"running": {"startedAt": "2026-03-02T08:00:00Z"}} if exit_code is None else
                     {"terminated": {"exitCode": exit_code, "startedAt": "2026-03-02T08:00:00Z"}})
            status["containerStatuses"] = [{"name": "tensorflow", "state": state}]
        spec = {"nodeName": node} if node else {}
        self._write("ADDED" if old is None else watch_type, "pods",
                    {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
        return name

    def event(self, kind: str, name: str, reason: str, message: str, count: int = 1) -> None:
        """An event on the object; written again with its count raised when it repeats (core/v1 `count`)."""
        key = ("events", f"{name}.{reason}.{message}")
        old = self.objects.get(key)
        involved = self.objects[({"Pod": "pods", "TFJob": "tfjobs", "PodGroup": "podgroups"}[kind], name)]
        event = old or {"apiVersion": "v1", "kind": "Event", "metadata": self._meta(f"{name}.{self.counter:016x}"),
                        "involvedObject": {"kind": kind, "name": name, "namespace": self.namespace,
                                           "uid": involved["metadata"]["uid"]},
                        "reason": reason, "message": message, "type": "Normal"}
        self.objects[key] = event = {**event, "count": count}
        self.writer.write_object("ADDED" if old is None else "MODIFIED", "events", event, time=self._time())

    def end(self) -> None:
        self.writer.write_action("end", {"status": "finished"}, time=self._time())
        self.writer.close()


def write_gang_run(path: Path, source: str, scheduler: str = "kube-batch", *, exit_code: int = 0,
                   unschedulable: int = 3, ps_node: str = "k8s-g2") -> Path:
    """One TFJob (worker 0 + PS) under a gang scheduler: kube-batch finds the gang unschedulable a few times, then
    binds both; worker 0 ends, tf-operator marks the TFJob Succeeded and deletes the PodGroup. A simulated run is in
    namespace `default` with run tag `s1`, a real one in the runner's namespace with a time tag."""
    tag = "s1" if source == "sim" else "20261127t015613"
    namespace = "default" if source == "sim" else f"hivedlab-{EXPERIMENT}-{scheduler}-{tag}"
    run = KubeflowRun(path, source, scheduler, namespace, tag)
    job = run.submit("job1", "tfjob-gang-1")
    run.conditions(job, "Created")
    pods = {"worker": run.pod(job, "worker", 0), "ps": run.pod(job, "ps", 0)}
    for pod in pods.values():
        run.event("TFJob", job, "SuccessfulCreatePod", f"Created pod: {pod}")
    for count in range(1, unschedulable + 1):
        run.event("PodGroup", job, "Unschedulable", "2/0 tasks in gang unschedulable: 0 nodes are available", count)
    run.podgroup(job, "Pending")
    for role, node in (("worker", "k8s-g1"), ("ps", ps_node)):
        run.pod(job, role, 0, node=node)
        run.event("Pod", pods[role], "Scheduled", f"Successfully assigned {namespace}/{pods[role]} to {node}")
    run.podgroup(job, "Running")
    for role, node in (("worker", "k8s-g1"), ("ps", ps_node)):
        run.pod(job, role, 0, node=node, phase="Running")
    run.conditions(job, "Created", "Running")
    run.pod(job, "worker", 0, node="k8s-g1", phase="Succeeded" if exit_code == 0 else "Failed", exit_code=exit_code)
    for count in (1, 2):  # written again at the next sync
        run.event("TFJob", job, "ExitedWithCode", f"Pod: {namespace}.{pods['worker']} exited with code {exit_code}",
                  count)
    run.conditions(job, "Created", "Running", "Succeeded")
    run.event("TFJob", job, "TFJobSucceeded", f"TFJob {job} successfully completed.")
    run.podgroup(job, "Running", watch_type="DELETED")
    run.end()
    return path
