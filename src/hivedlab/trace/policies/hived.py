"""HiveD: the project's HiveD model (`hivedlab.models.hived`) decides every placement and preemption.

Each VC owns the cells `trace.cells` derives from its share; inside a VC jobs start in submit order. A job is first
asked for as a guaranteed affinity group (priority 0) on each server type its VC has cells of; when none binds, as
an opportunistic group (priority -1) on the whole cluster, which HiveD preempts when the owner of the cells needs
them. A job's pods follow the placement rules: one pod of all its GPUs when it fits one server, else one pod per
whole server. The model's binds are mirrored into the shared `Cluster` so that every metric reads the same state.
"""

from __future__ import annotations

from collections.abc import Sequence

from hivedlab.models.hived import (
    PHASE_PREEMPTING,
    Bind,
    HivedScheduler,
    PodRef,
    Preempt,
    load_config,
)
from hivedlab.trace.cells import VcCells, hived_config, leaf_type
from hivedlab.trace.cluster import Cluster, Slot, servers_needed
from hivedlab.trace.policies.base import Dispatch, Policy, Running
from hivedlab.trace.workload import Job, demand

GUARANTEED = 0
OPPORTUNISTIC = -1


class HivedPolicy(Policy):
    name = "hived"

    def __init__(self, cluster: Cluster, cells: VcCells) -> None:
        super().__init__(cluster, sorted(cells.cells))
        self.cells = cells
        config = load_config(hived_config(cluster.types, cluster.names, cluster.type_of, cells))
        self.model = HivedScheduler(config)
        self.nodes = frozenset(self.model.reported_nodes)
        self.server_of = {name: s for s, name in enumerate(cluster.names)}
        self.pods: dict[str, list[PodRef]] = {}  # running job -> its pods in the model
        self.job_of_pod: dict[str, str] = {}
        self.guaranteed_used: dict[tuple[str, int], int] = {}
        self.job_type: dict[str, int] = {}

    def release(self, job_id: str) -> Running:
        for pod in self.pods.pop(job_id):
            self.model.delete_allocated_pod(pod)
            del self.job_of_pod[pod.name]
        t = self.job_type.pop(job_id)
        run = super().release(job_id)
        if not run.lent:
            key = (run.job.vc, t)
            self.guaranteed_used[key] -= run.gpus
        return run

    def dispatch_pass(self, out: Dispatch) -> None:
        self.dispatch_in_vc_order(out, self._try)


    def _try(self, job: Job, out: Dispatch) -> bool:
        for t in self._types(job):
            if self._fits_cells(job, t) and self._run(job, t, GUARANTEED, out):
                return True
        if self.cluster.place(job) is None:
            return False
        return any(self._run(job, t, OPPORTUNISTIC, out) for t in self._types(job, opportunistic=True))

    def _types(self, job: Job, opportunistic: bool = False) -> list[int]:
        cluster = self.cluster
        single = [t for t in cluster.single_order if job.gpus <= cluster.types[t].gpus]
        multi = [t for t in cluster.multi_order if job.gpus > cluster.types[t].gpus]
        owned = self.cells.cells.get(job.vc, {})
        return [t for t in single + multi if opportunistic or t in owned]

    def _fits_cells(self, job: Job, t: int) -> bool:
        """A necessary condition, checked before asking the model: the VC's free GPUs on this type hold the job."""
        held = _held(job.gpus, self.cluster.types[t].gpus)
        return self.guaranteed_used.get((job.vc, t), 0) + held <= self.cells.gpus(job.vc, t)

    def _run(self, job: Job, t: int, priority: int, out: Dispatch) -> bool:
        st = self.cluster.types[t]
        per_pod = job.gpus if job.gpus <= st.gpus else st.gpus
        count = 1 if job.gpus <= st.gpus else servers_needed(job.gpus, st.gpus)
        spec = {"virtualCluster": job.vc, "priority": priority, "leafCellType": leaf_type(st),
                "leafCellNumber": per_pod,
                "affinityGroup": {"name": job.id, "members": [{"podNumber": count, "leafCellNumber": per_pod}]}}
        pods = [PodRef("trace", f"{job.id}#{i}", f"{job.id}#{i}") for i in range(count)]
        result = self.model.schedule(pods[0], spec, self.nodes, PHASE_PREEMPTING)
        if isinstance(result, Preempt):
            victims = sorted({self.job_of_pod[p.name] for ps in result.victims.values() for p in ps})
            for victim in victims:
                self.preempt(victim, out)
            result = self.model.schedule(pods[0], spec, self.nodes, PHASE_PREEMPTING)
        if not isinstance(result, Bind):
            self.model.delete_unallocated_pod(pods[0])
            return False
        binds = [result]
        self.model.add_allocated_pod(pods[0], spec, result.bind_info)
        for pod in pods[1:]:
            more = self.model.schedule(pod, spec, self.nodes, PHASE_PREEMPTING)
            assert isinstance(more, Bind), f"pod {pod.name} of an allocated group did not bind: {more}"
            self.model.add_allocated_pod(pod, spec, more.bind_info)
            binds.append(more)
        self.pods[job.id] = pods
        for pod in pods:
            self.job_of_pod[pod.name] = job.id
        self.job_type[job.id] = t
        slots = self._slots(job, t, binds)
        lent = priority == OPPORTUNISTIC
        if not lent:
            key = (job.vc, t)
            self.guaranteed_used[key] = self.guaranteed_used.get(key, 0) + sum(s.gpus for s in slots)
        self.start(job, slots, lent, out)
        return True

    def _slots(self, job: Job, t: int, binds: Sequence[Bind]) -> list[Slot]:
        st = self.cluster.types[t]
        if len(binds) == 1 and job.gpus <= st.gpus:
            cpu, mem = demand(job, st)
            return [Slot(self.server_of[binds[0].node], job.gpus, cpu, mem)]
        return self.cluster.whole_servers([self.server_of[b.node] for b in binds])


def _held(gpus: int, node_gpus: int) -> int:
    return gpus if gpus <= node_gpus else servers_needed(gpus, node_gpus) * node_gpus
