"""The simulated cluster without HiveD: the same OpenPAI v1.2.0 (rest-server, FrameworkController, kubelet) with
Kubernetes' default scheduler or kube-batch deciding where pods go (docs/other-schedulers.md).

The rest-server still admits jobs against the run's HiveD config (its VC quota check is part of OpenPAI, not of
the scheduler), and the nodes and their GPUs, CPUs and memory are read from that config's physical cluster.
Pods name the deciding scheduler in `spec.schedulerName`; under kube-batch they carry tf-operator's PodGroup
annotation. Events keep each scheduler's own wording.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hivedlab.backends.sim.cluster import SimCluster
from hivedlab.backends.sim.jobs import SimJob, TaskKey
from hivedlab.backends.sim.store import ApiStore, Clock
from hivedlab.basics.errors import HivedlabError
from hivedlab.evidence import EvidenceWriter
from hivedlab.models.openpai import naming
from hivedlab.models.openpai.hived_spec import resource_units
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


class _ServedAs(ApiStore):
    """The API store, with each Pod shown as this cluster's scheduler would have it."""

    def __init__(self, writer: EvidenceWriter | None, clock: Clock, patch: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(writer, clock)
        self._patch = patch

    def emit(self, watch_type: str, resource: str, obj: dict[str, Any]) -> None:
        if resource == "pods":
            self._patch(obj)
        super().emit(watch_type, resource, obj)


class PlainSimCluster(SimCluster):
    """A `hivedlab.backends.protocol.Backend` on virtual time whose pods Kubernetes' default scheduler
    (`scheduler="default"`) or kube-batch (`scheduler="kube-batch"`) places."""

    def __init__(self, writer: EvidenceWriter | None, seed: int = 0, *, scheduler: str, **options: Any) -> None:
        if scheduler not in COMPONENTS:
            raise HivedlabError(f"unknown scheduler {scheduler!r} (choose one of: {', '.join(SCHEDULERS)})")
        super().__init__(writer, seed, **options)
        self.scheduler_kind = scheduler
        self.component = COMPONENTS[scheduler]
        self.wait_reason = WAIT_REASONS[scheduler]
        self.store = _ServedAs(writer, self.clock, self._served)
        self.model: Any = None

    def _start_hived(self, mapping: Any, name: str) -> None:
        """The config feeds the rest-server's admission and names the nodes; HiveD itself schedules nothing."""
        super()._start_hived(mapping, name)
        nodes = nodes_of_config(mapping)
        if self.scheduler_kind == "default":
            self.model = k8s_default.DefaultScheduler(nodes, self.other_nodes)
        else:
            self.model = kube_batch.KubeBatch(nodes)

    def _served(self, obj: dict[str, Any]) -> None:
        spec, metadata = obj.get("spec") or {}, obj.get("metadata") or {}
        spec["schedulerName"] = self.component
        if self.settings.tfjob:
            spec["priority"] = 0
            spec.pop("priorityClassName", None)
        if self.scheduler_kind == "kube-batch":
            labels = metadata.get("labels") or {}
            metadata.setdefault("annotations", {})[kube_batch.GROUP_ANNOTATION] = labels.get("FC_FRAMEWORK_NAME", "")

    # -- what the models see --------------------------------------------------------------------------------------

    def _priority(self, job: SimJob) -> int:
        return 0 if self.settings.tfjob else naming.k8s_priority(job.info.priority, job.info.submit_epoch_s)

    def _model_pod(self, job: SimJob, key: TaskKey, pod: PodState) -> Pod:
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

    def _bind_to(self, job: SimJob, key: TaskKey, node: str) -> None:
        """Bind as the scheduler does: the pod gets the node and a `Scheduled` event from the scheduler."""
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
