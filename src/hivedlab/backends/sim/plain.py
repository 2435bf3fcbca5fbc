"""The simulated cluster without HiveD: the same OpenPAI v1.2.0 (rest-server, FrameworkController, kubelet) with
Kubernetes' default scheduler or kube-batch deciding where pods go (docs/other-schedulers.md).

The rest-server still admits jobs against the run's HiveD config (its VC quota check is part of OpenPAI, not of
the scheduler), and the nodes and their GPUs, CPUs and memory are read from that config's physical cluster.
The API shows what a cluster without HiveD holds (`hivedlab.backends.sim.served`): an OpenPAI job's pods as the
rest-server makes them without HiveD (`nvidia.com/gpu`, no HiveD annotation), named after the deciding scheduler;
a job given as a Kubeflow manifest (`manifests`) as a TFJob whose pods tf-operator v0.5 made from it. The
schedulers read each pod's request from the pod the API shows, and their events keep each scheduler's own words.

Size: over 400 lines because the schedulers' glue and what tf-operator v0.5 does with a TFJob's pods (creation in one
pass, the parameter server, success and clean-up, its events) are hooks of one simulated cluster overriding
FrameworkController's, and share its jobs, pods and API store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hivedlab.backends.protocol import Reply, SubmitResult
from hivedlab.backends.sim import served
from hivedlab.backends.sim.cluster import SimCluster
from hivedlab.backends.sim.jobs import SimJob, TaskKey
from hivedlab.backends.sim.recorder import ObjectEvents
from hivedlab.backends.sim.store import ApiStore, Clock
from hivedlab.basics.errors import HivedlabError
from hivedlab.basics.files import read_text
from hivedlab.basics.resources import JOBS
from hivedlab.evidence import EvidenceWriter
from hivedlab.models.kubeflow import operator
from hivedlab.models.kubeflow.manifests import ManifestError, for_run, manifest_file, parse_manifests
from hivedlab.models.openpai import naming
from hivedlab.models.openpai.hived_spec import resource_units
from hivedlab.models.openpai.jobstate import CODE_SUCCEEDED, AttemptCompletion
from hivedlab.models.openpai.objects import PodState
from hivedlab.models.schedulers import default as k8s_default
from hivedlab.models.schedulers import kube_batch
from hivedlab.models.schedulers.resources import Node, Pod, Resources

SCHEDULERS = ("hived", "default", "kube-batch")
COMPONENTS = {"default": k8s_default.SCHEDULER_NAME, "kube-batch": kube_batch.SCHEDULER_NAME}
WAIT_REASONS = {"default": k8s_default.WAIT_REASON, "kube-batch": kube_batch.WAIT_REASON}


def nodes_of_config(config: Mapping[str, Any]) -> list[Node]:
    """The node-level cells of a HiveD config's physical cluster, in config order, with what their SKUs add up to."""
    physical = config.get("physicalCluster") or {}
    types = physical.get("cellTypes") or {}
    units = resource_units(config)

    def leaves(cell_type: str) -> tuple[int, str]:
        if cell_type in units:
            return 1, cell_type
        body = types.get(cell_type) or {}
        count, sku = leaves(str(body.get("childCellType")))
        return int(body.get("childCellNumber") or 0) * count, sku

    def walk(cell: Mapping[str, Any], cell_type: str) -> list[Node]:
        body = types.get(cell_type) or {}
        if body.get("isNodeLevel") or cell_type in units:
            count, sku = leaves(cell_type)
            unit = units[sku]
            capacity = Resources(int(unit.gpu) * count, int(unit.cpu) * count * 1000, int(unit.memory) * count)
            return [Node(str(cell.get("cellAddress")), capacity)]
        child_type = str(body.get("childCellType"))
        return [node for child in cell.get("cellChildren") or () for node in walk(child, child_type)]

    return [node for cell in physical.get("physicalCells") or () for node in walk(cell, str(cell.get("cellType")))]


_NAMED_POD = re.compile(rf"(?<={naming.NAMESPACE}/)([a-z0-9.-]+)")


def kubeflow_manifests(job_files: Mapping[str, str]) -> dict[str, str]:
    """The Kubeflow manifests (kube-batch form, jobs/kubeflow/kube-batch/) of the plan jobs that have one, by job key;
    `job_files`: each job's file under jobs/."""
    found = {}
    for key, file in job_files.items():
        path = JOBS / manifest_file(file, "kube-batch")
        if path.is_file():
            found[key] = read_text(path, f"the Kubeflow manifest of {key}")
    return found


class _ServedAs(ApiStore):
    """The API store, with each Pod and Event shown as this cluster would have it (`patch` returns the object to
    show)."""

    def __init__(self, writer: EvidenceWriter | None, clock: Clock,
                 patch: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
        super().__init__(writer, clock)
        self._patch = patch

    def emit(self, watch_type: str, resource: str, obj: dict[str, Any]) -> None:
        super().emit(watch_type, resource, self._patch(resource, obj))


@dataclass
class _TfJob:
    """A job given as a Kubeflow manifest: its TFJob as the run sent it, and what the operator made of it."""

    tfjob: dict[str, Any]
    uid: str
    podgroup: dict[str, Any] | None  # the manifest's PodGroup (a gang run), else the operator makes one
    group_uid: str
    status: dict[str, Any] = field(default_factory=dict)
    shown: bool = False
    deleted: bool = False
    group_deleted: bool = False
    requests: dict[str, Resources] = field(default_factory=dict)  # replica type -> what each of its pods asks
    exited: dict[str, int] = field(default_factory=dict)  # pod -> the exit code the operator has seen
    group_status: dict[str, Any] = field(default_factory=dict)  # the PodGroup's, as kube-batch writes it

    def replica_type(self, task_role: str) -> str:
        """The TFJob's replica type behind one of the simulated job's task roles (`worker` -> `Worker`)."""
        for role in (self.tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}:
            if str(role).lower() == task_role.lower():
                return str(role)
        name = self.tfjob["metadata"]["name"]
        raise HivedlabError(f"TFJob {name} has no replica type for the job's task role {task_role!r}")

    def pod_name(self, key: TaskKey) -> str:
        """The name of the pod the operator makes for one of the simulated job's tasks."""
        return operator.pod_name(self.tfjob["metadata"]["name"], self.replica_type(key[0]), key[1])


NO_HIVED_PRIORITY = 0  # the job priority OpenPAI v1.2.0 gives every job when HiveD is off


class PlainSimCluster(SimCluster):
    """A `hivedlab.backends.protocol.Backend` on virtual time whose pods Kubernetes' default scheduler
    (`scheduler="default"`) or kube-batch (`scheduler="kube-batch"`) places. `manifests`: a plan job's Kubeflow
    manifest (TFJob and PodGroup, the kube-batch form under jobs/kubeflow/) by job key; such a job's pods and job are
    tf-operator v0.5's."""

    def __init__(self, writer: EvidenceWriter | None, seed: int = 0, *, scheduler: str,
                 manifests: Mapping[str, str] | None = None, **options: Any) -> None:
        if scheduler not in COMPONENTS:
            raise HivedlabError(f"unknown scheduler {scheduler!r} (choose one of: {', '.join(SCHEDULERS)})")
        super().__init__(writer, seed, **options)
        self.scheduler_kind = scheduler
        self.component = COMPONENTS[scheduler]
        self.wait_reason = WAIT_REASONS[scheduler]
        self.manifests = dict(manifests or {})
        self.store = _ServedAs(writer, self.clock, self._served)
        self.model: Any = None
        self._tfjobs: dict[int, _TfJob] = {}  # job seq -> its TFJob
        self._by_framework: dict[str, SimJob] = {}
        self._pod_names: dict[str, str] = {}  # the OpenPAI model's pod name -> the name the API shows
        self.object_events = ObjectEvents(self.store, self.clock, self._event_nanos)

    def _start_hived(self, mapping: Any, name: str) -> None:
        """The config feeds the rest-server's admission and names the nodes; HiveD itself schedules nothing."""
        super()._start_hived(mapping, name)
        nodes = nodes_of_config(mapping)
        if self.scheduler_kind == "default":
            other = k8s_default.TAINTS if self.manifests else k8s_default.NODE_SELECTOR
            self.model = k8s_default.DefaultScheduler(nodes, self.other_nodes, other)
        else:
            self.model = kube_batch.KubeBatch(nodes)

    # -- submission: a Kubeflow job is created as its manifests --------------------------------------------------

    def submit(self, user: str, job_key: str, protocol: str) -> SubmitResult:
        result = super().submit(user, job_key, protocol)
        manifest = self.manifests.get(job_key)
        if manifest is None or not result.accepted:
            return result
        try:  # the manifests exactly as a run on a Kubernetes cluster sends them (the runner's for_run)
            text, name = for_run(manifest, result.job_name, gang=self.scheduler_kind != "default")
            documents = [d for d in parse_manifests(text).documents if isinstance(d, dict)]
        except ManifestError as exc:
            raise HivedlabError(f"{job_key}: its Kubeflow manifest: {exc.message}") from None
        tfjob = next((d for d in documents if d.get("kind") == "TFJob"), None)
        if tfjob is None:
            raise HivedlabError(f"{job_key}: its Kubeflow manifest holds no TFJob")
        podgroup = next((d for d in documents if d.get("kind") == "PodGroup"), None)
        for doc in (tfjob, podgroup):
            if doc is not None:
                doc["metadata"]["namespace"] = naming.NAMESPACE
        record = _TfJob(tfjob, self.store.uid("tfjob"), podgroup, self.store.uid("podgroup"))
        for role in (tfjob.get("spec") or {}).get("tfReplicaSpecs") or {}:
            pod = operator.operator_pod(tfjob, str(role), 0, namespace=naming.NAMESPACE, job_uid=record.uid)
            record.requests[str(role)] = served.pod_request(pod)
        self._tfjobs[self.jobs[(user, result.job_name)].seq] = record
        documents.sort(key=lambda d: d.get("kind") != "PodGroup")  # kubectl's order, as the k8s backend sends them
        created = [f"{d['kind']}/{d['metadata']['name']}" for d in documents]
        return replace(result, framework_name=name, reply=Reply(201, {"status": 201, "created": created}))

    # -- what the API shows ---------------------------------------------------------------------------------------

    def _job_of(self, framework: str) -> SimJob:
        job = self._by_framework.get(framework)
        if job is None:
            job = next(j for j in self.jobs.values() if j.info.framework == framework)
            self._by_framework[framework] = job
        return job

    def _served(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        if resource == "events":
            return self._served_event(obj)
        if resource != "pods":
            return obj
        labels = obj["metadata"]["labels"]
        job = self._job_of(labels["FC_FRAMEWORK_NAME"])
        record = self._tfjobs.get(job.seq)
        if record is not None:
            rtype = record.replica_type(labels["FC_TASKROLE_NAME"])
            pod = served.tfjob_pod(obj, record.tfjob, rtype, int(labels["FC_TASK_INDEX"]), record.uid)
            self._pod_names[obj["metadata"]["name"]] = pod["metadata"]["name"]
            return pod
        served.openpai_pod(obj, job.info.role(labels["FC_TASKROLE_NAME"]).gpu, self.component)
        obj["spec"]["priority"] = self._priority(job)
        spec, metadata = obj["spec"], obj["metadata"]
        if self.settings.tfjob:
            spec["priority"] = 0
            spec.pop("priorityClassName", None)
        if self.scheduler_kind == "kube-batch":
            metadata.setdefault("annotations", {})[kube_batch.GROUP_ANNOTATION] = labels.get("FC_FRAMEWORK_NAME", "")
        return obj

    def _served_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The event names the pod as the API shows it; a wait is a Warning (kube-batch's `taskUnschedulable`
        records `Unschedulable` as one, as the default scheduler does `FailedScheduling`)."""
        involved = event["involvedObject"]
        old = str(involved.get("name"))
        if old in self._pod_names:
            new = self._pod_names[old]
            involved["name"] = new
            event["metadata"]["name"] = new + event["metadata"]["name"][len(old):]
        event["message"] = _NAMED_POD.sub(lambda m: self._pod_names.get(m.group(1), m.group(1)), event["message"])
        if event.get("reason") == self.wait_reason:
            event["type"] = "Warning"
        return event

    def _emit_framework(self, job: SimJob, watch_type: str = "MODIFIED") -> None:
        """A Kubeflow job shows its TFJob, whose status the operator keeps, and its PodGroup instead of a Framework:
        kubectl creates the manifest's PodGroup and TFJob (or the operator, with gang scheduling on, makes a PodGroup
        for a TFJob without one: `SyncPodGroup`); the operator deletes the PodGroup once the job succeeded or failed
        (controller.go `reconcileTFJobs`); the run's stop deletes the TFJob and its PodGroup (the k8s backend's
        stop; an operator-made PodGroup goes with its owner)."""
        record = self._tfjobs.get(job.seq)
        if record is None:
            super()._emit_framework(job, watch_type)
            return
        if record.deleted:
            return
        if not record.shown or not job.stop_requested:
            status = self._tfjob_status(job, record)
            if record.shown and status == record.status:
                return
            record.status = status
            if not record.shown and record.podgroup is not None:
                self._emit_podgroup(record, "ADDED")
            self._emit_tfjob(record, "MODIFIED" if record.shown else "ADDED")
            if not record.shown and record.podgroup is None:
                record.podgroup = operator.operator_podgroup(record.tfjob, record.uid)
                self._emit_podgroup(record, "ADDED")
            record.shown = True
            if any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in status["conditions"]):
                self._emit_podgroup(record, "DELETED")
        if job.stop_requested:
            record.deleted = True
            self._emit_tfjob(record, "DELETED")
            self._emit_podgroup(record, "DELETED")

    def _emit_tfjob(self, record: _TfJob, watch_type: str) -> None:
        created = record.tfjob["metadata"].setdefault("creationTimestamp", self.clock.k8s_time())
        obj = served.stored(record.tfjob, uid=record.uid, resource_version=self.store.resource_version(),
                            created=created, status=record.status)
        self.store.emit(watch_type, "tfjobs", obj)

    def _emit_podgroup(self, record: _TfJob, watch_type: str) -> None:
        if record.podgroup is None or record.group_deleted:
            return
        record.group_deleted = watch_type == "DELETED"
        created = record.podgroup["metadata"].setdefault("creationTimestamp", self.clock.k8s_time())
        obj = served.stored(record.podgroup, uid=record.group_uid, resource_version=self.store.resource_version(),
                            created=created, status=record.group_status or None)
        self.store.emit(watch_type, "podgroups", obj)

    def _tfjob_status(self, job: SimJob, record: _TfJob) -> dict[str, Any]:
        """pkg/controller.v1beta2/tensorflow/status.go of tf-operator v0.5, `updateStatusSingle`: Created at once;
        Running once a worker (the chief, where there is one) runs; Succeeded or Failed as the operator decides the
        job's end (`_task_completed`), and never Running again (controller.go `reconcileTFJobs` then only cleans up);
        the start time at the first pass (`updateStatusSingle` sets it when none is set, the pass that creates the
        pods)."""
        name, now = record.tfjob["metadata"]["name"], self.clock.k8s_time()
        status = dict(record.status)
        conditions = operator.with_condition(list(status.get("conditions") or []), "Created", name, now)
        leaders = {"chief", "master"} & {role.lower() for role in record.tfjob["spec"]["tfReplicaSpecs"]} or {"worker"}
        running = [key for key, pod in job.pods.items() if pod.phase == "Running" and pod.deletion_timestamp is None]
        ended = any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True" for c in conditions)
        if any(key[0].lower() in leaders for key in running) and not ended:
            conditions = operator.with_condition(conditions, "Running", name, now)
        status.setdefault("startTime", now)
        fw = job.framework
        if not ended:
            succeeding = fw is not None and fw.code == CODE_SUCCEEDED and not job.stop_requested
            status["replicaStatuses"] = self._replica_statuses(job, record, succeeding)
        if fw is not None and fw.code is not None and not job.stop_requested:
            if fw.code == CODE_SUCCEEDED:
                conditions = operator.with_condition(conditions, "Succeeded", name, now)
                status.setdefault("completionTime", now)
            else:
                role = record.replica_type(fw.trigger[0]).lower() if fw.trigger else "worker"
                conditions = operator.with_condition(conditions, "Failed", name, now, failed=(1, role))
        status["conditions"] = conditions
        return status

    @staticmethod
    def _replica_statuses(job: SimJob, record: _TfJob, succeeded: bool) -> dict[str, dict[str, int]]:
        """status.go `initializeTFReplicaStatuses` and `updateTFJobReplicaStatuses` at a pass: per replica type, its
        pods running (`active`), succeeded and failed, zero counts omitted; in the pass after the job succeeded,
        controller.go `reconcileTFJobs` counts the still active ones as succeeded, and no pass counts again."""
        counts: dict[str, dict[str, int]] = {str(rtype): {} for rtype in record.tfjob["spec"]["tfReplicaSpecs"]}
        for key in job.task_keys:
            pod, task = job.pods.get(key), job.task(key)
            if pod is not None and pod.phase == "Running" and pod.deletion_timestamp is None:
                kind = "succeeded" if succeeded else "active"
            elif task.state == "Completed" and task.code is not None:
                kind = "succeeded" if task.code == CODE_SUCCEEDED else "failed"
            else:
                continue
            counted = counts[record.replica_type(key[0])]
            counted[kind] = counted.get(kind, 0) + 1
        return counts

    # -- what tf-operator does with a TFJob's pods --------------------------------------------------------------

    def _creation_order(self, job: SimJob) -> list[TaskKey]:
        """One pass of the operator's single worker thread (`--threadiness` 1, cmd/tf-operator.v1beta2/app/options/
        options.go) creates every pod of a new TFJob back to back, replica type by replica type in Go's map order
        (drawn from the seed), each by index (`operator.creation_order`)."""
        record = self._tfjobs.get(job.seq)
        if record is None:
            return super()._creation_order(job)
        types = [rtype for rtype, _ in operator.replicas_by_type(record.tfjob)]
        self.rng.shuffle(types)
        roles = {record.replica_type(role): role for role, _ in job.task_keys}
        return [(roles[rtype], index) for rtype, index in operator.creation_order(record.tfjob, types)]

    def _create_pod(self, job: SimJob, key: TaskKey, emit_framework: bool = True) -> None:
        """The pod, with the events tf-operator records on its TFJob (pod.go `createNewPod`): the warning that
        another scheduler is named (gang scheduling on, a template naming another scheduler), `SuccessfulCreatePod`,
        and after the last pod of a replica type, a `SuccessfulCreateService` for each of its pods
        (`reconcileServices`)."""
        record = self._tfjobs.get(job.seq)
        if record is None:
            super()._create_pod(job, key, emit_framework)
            return
        if operator.other_scheduler(record.tfjob):
            self._operator_event(record, operator.SCHEDULER_NAME_SET)
        super()._create_pod(job, key, emit_framework)
        self._operator_event(record, operator.CREATED_POD, record.pod_name(key))
        rtype = record.replica_type(key[0])
        count = dict(operator.replicas_by_type(record.tfjob))[rtype]
        if key[1] == count - 1:
            for index in range(count):
                self._operator_event(record, operator.CREATED_SERVICE, record.pod_name((key[0], index)))

    def _operator_event(self, record: _TfJob, what: tuple[str, str, str], *args: object) -> None:
        self.object_events.record(operator.involved_object(record.tfjob, record.uid), operator.OPERATOR_COMPONENT,
                                  what, *args)

    def _runs_until_deleted(self, job: SimJob, key: TaskKey) -> bool:
        """A parameter server never exits by itself (TensorFlow's `server.join()`): it runs until deleted."""
        record = self._tfjobs.get(job.seq)
        return record is not None and record.replica_type(key[0]) == "PS"

    def _task_completed(self, job: SimJob, key: TaskKey, code: int) -> None:
        """A TFJob's container exited: the operator's next pass (pod.go `reconcilePods`) records `ExitedWithCode` for
        every pod it finds terminated and, once the chief (without one, worker 0) succeeded or every worker did,
        marks the TFJob Succeeded (status.go `updateStatusSingle`); the pass after deletes the running pods and
        their services (cleanPodPolicy Running, job.go `deletePodsAndServices`) and the PodGroup (`DeletePodGroup`)."""
        record = self._tfjobs.get(job.seq)
        if record is None or job.completing is not None:
            super()._task_completed(job, key, code)
            return
        record.exited[record.pod_name(key)] = code
        for name, exit_code in record.exited.items():
            self._operator_event(record, operator.EXITED, naming.NAMESPACE, name, exit_code)
        running = [k for k, pod in job.pods.items() if pod.phase == "Running" and pod.deletion_timestamp is None]
        super()._task_completed(job, key, code)  # FrameworkController's policy may end it too: all workers done
        if not self._tfjob_succeeded(job, record):
            return
        name = record.tfjob["metadata"]["name"]
        self._operator_event(record, operator.SUCCEEDED, name)
        if job.completing is None:
            self._complete_attempt(job, AttemptCompletion(CODE_SUCCEEDED, key[0], key[1], f"TFJob {name} succeeded"))
        for other in running:
            self._operator_event(record, operator.DELETED_POD, record.pod_name(other))
            self._operator_event(record, operator.DELETED_SERVICE, record.pod_name(other))
        self._operator_event(record, operator.DELETED_PODGROUP, name)

    def _tfjob_succeeded(self, job: SimJob, record: _TfJob) -> bool:
        """status.go `updateStatusSingle`: every chief (or master) succeeded; without one, worker 0 or every worker."""
        succeeded = {(record.replica_type(role), index) for (role, index) in job.task_keys
                     if job.task((role, index)).code == CODE_SUCCEEDED}
        wanted = operator.replicas(record.tfjob)
        chiefs = [r for r in wanted if r[0] in operator.CHIEF_TYPES]
        if chiefs:
            return all(r in succeeded for r in chiefs)
        workers = [r for r in wanted if r[0] == "Worker"]
        return ("Worker", 0) in succeeded or (bool(workers) and all(r in succeeded for r in workers))

    # -- what the models see --------------------------------------------------------------------------------------

    def _priority(self, job: SimJob) -> int:
        # with HiveD off, OpenPAI v1.2.0 gives every job priority 0 (k8s.js: `let jobPriority = 0; if
        # (launcherConfig.enabledHived) ...`): an earlier job outranks a later one, whatever its jobPriorityClass
        return 0 if self.settings.tfjob else naming.k8s_priority(NO_HIVED_PRIORITY, job.info.submit_epoch_s)

    def _model_pod(self, job: SimJob, key: TaskKey, pod: PodState) -> Pod:
        """The pod as the scheduler sees it: its request as the served pod asks (the TFJob's template, or the
        OpenPAI task role's resources)."""
        record = self._tfjobs.get(job.seq)
        if record is not None:
            request = record.requests[record.replica_type(key[0])]
        else:
            role = job.info.role(key[0])
            request = Resources(role.gpu, role.cpu * 1000, role.memory_mb)
        return Pod(pod.uid, pod.name(job.info.framework), self._priority(job), request,
                   self._enqueued.get(pod.uid, (0, 0))[1], pod.node, job.info.framework)

    def _holding(self) -> list[Pod]:
        """Every pod that holds a node: bound and not yet removed (terminating ones still hold it)."""
        return [self._model_pod(job, key, pod) for job in self.jobs.values() for key, pod in job.pods.items()
                if pod.node is not None and pod.finished_at is None]

    def _hived_release(self, job: SimJob, pod: PodState) -> None:
        """Nothing to tell HiveD: it never placed this pod."""
        self._hived_pods.pop(pod.uid, None)

    # -- scheduling rounds ----------------------------------------------------------------------------------------

    def _schedule_round(self) -> None:
        if self.model is None:
            return
        if self.scheduler_kind == "default":
            for job, key, pod in self._pending():
                current = job.pods.get(key)
                if current is not None and current.uid == pod.uid and current.deletion_timestamp is None:
                    self._default_attempt(job, key, current)
        else:
            self._kube_batch_session()

    def _pending(self) -> list[tuple[SimJob, TaskKey, PodState]]:
        found = [(job, key, pod) for job in self.jobs.values() for key, pod in job.pods.items()
                 if pod.node is None and pod.deletion_timestamp is None]
        return sorted(found, key=lambda item: (-self._priority(item[0]), *self._enqueued[item[2].uid]))

    def _default_attempt(self, job: SimJob, key: TaskKey, pod: PodState) -> None:
        decision = self.model.schedule(self._model_pod(job, key, pod), self._holding())
        if isinstance(decision, k8s_default.Bind):
            self._bind_to(job, key, decision.node)
            return
        self._failed_scheduling(job, key, decision.message)
        preemption = decision.preemption
        if preemption is None or self._victims_terminating(job, job.pods[key]):
            return
        name = pod.name(job.info.framework)
        if job.pods[key].nominated_node != preemption.node:
            self._emit_pod(job, key, nominated_node=preemption.node)
        for victim in preemption.victims:
            self._delete_victim(victim.uid, name, preemption.node, self.component)

    def _victims_terminating(self, job: SimJob, pod: PodState) -> bool:
        node = pod.nominated_node
        if not node:
            return False
        mine = self._priority(job)
        return any(other.node == node and other.deletion_timestamp is not None and self._priority(other_job) < mine
                   for other_job in self.jobs.values() for other in other_job.pods.values())

    def _kube_batch_session(self) -> None:
        groups, pods = [], []
        for job in self.jobs.values():
            live = [(key, pod) for key, pod in job.pods.items() if pod.deletion_timestamp is None]
            if job.framework is None or not any(pod.node is None for _, pod in live):
                continue
            groups.append(kube_batch.PodGroup(job.info.framework, len(job.task_keys), self._priority(job), job.seq))
            pods += [self._model_pod(job, key, pod) for key, pod in live]
        if not groups:
            return
        wanted = {g.name for g in groups}
        others = [p for p in self._holding() if p.group not in wanted]
        result = self.model.session(groups, pods + others)
        where = {pod.uid: (job, key) for job in self.jobs.values() for key, pod in job.pods.items()}
        for pod, node in result.binds:
            self._bind_to(*where[pod.uid], node)
        for uid, message in result.unschedulable.items():
            job, key = where[uid]
            self._failed_scheduling(job, key, message)
        session = self.store.uid("session")
        for group in groups:
            job = next(j for j in self.jobs.values() if j.info.framework == group.name)
            errors = [result.unschedulable[p.uid] for p in job.pods.values() if p.uid in result.unschedulable]
            self._close_group(job, group.min_member, errors[0] if errors else kube_batch.fit_error({}), session,
                              result.held.get(group.name, 0))

    def _close_group(self, job: SimJob, min_member: int, fit_error: str, session: str, held: int = 0) -> None:
        """A Kubeflow job's PodGroup as the session closes (`kube_batch.closed_status`), and, while its phase is
        Pending or Unknown, kube-batch's `Unschedulable` event on it (cache.go `RecordJobStatusEvent`); `held`: its
        tasks the session allocated but did not bind (not pending at the close)."""
        record = self._tfjobs.get(job.seq)
        if record is None or record.podgroup is None or record.group_deleted:
            return
        live = [pod for pod in job.pods.values() if pod.deletion_timestamp is None]
        allocated = held + sum(1 for pod in live if pod.node is not None and pod.finished_at is None)
        group = kube_batch.GroupAtClose(min_member, len(live), allocated,
                                        sum(1 for pod in live if pod.phase == "Running"))
        status = kube_batch.closed_status(record.group_status, group, fit_error, session, self.clock.k8s_time())
        if status != record.group_status:
            record.group_status = status
            self._emit_podgroup(record, "MODIFIED")
        if status["phase"] in ("Pending", "Unknown"):
            meta = record.podgroup["metadata"]
            involved = {"apiVersion": str(record.podgroup["apiVersion"]), "kind": "PodGroup", "name": meta["name"],
                        "namespace": meta["namespace"], "uid": record.group_uid}
            self.object_events.record(involved, self.component, kube_batch.GANG_EVENT, group.pending, group.tasks,
                                      fit_error)

    def _bind_to(self, job: SimJob, key: TaskKey, node: str) -> None:
        """Bind as the scheduler does: the pod gets the node and a `Scheduled` event from the scheduler (Kubernetes
        v1.14 pkg/scheduler/scheduler.go, `bind`; kube-batch v0.4.2 pkg/scheduler/cache/cache.go, `Bind`, once the
        Binding is posted)."""
        self._hived_pods.pop(job.pods[key].uid, None)
        pod = self._emit_pod(job, key, node=node, host_ip=self.node_ips.get(node, ""),
                             scheduled_at=self.clock.k8s_time(), unschedulable=None)
        job.set_task(key, node=node, host_ip=pod.host_ip)
        name = pod.name(job.info.framework)
        self._add_event(job, pod, "Scheduled", f"Successfully assigned {naming.NAMESPACE}/{name} to {node}",
                        self.component)
        uid = pod.uid
        self._after(self._start_delay(job), lambda: self._container_start(job, key, uid))

    def _component(self, job: SimJob) -> str:
        return self.component
