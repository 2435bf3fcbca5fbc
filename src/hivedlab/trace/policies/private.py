"""Each VC alone: FIFO on a private cluster made of exactly its HiveD cells (one server per cell), no lending. The
reference that defines the sharing anomaly: a job that waits longer in the shared cluster than here."""

from __future__ import annotations

from collections.abc import Sequence

from hivedlab.trace.cells import VcCells
from hivedlab.trace.cluster import Cluster, servers_needed
from hivedlab.trace.policies.base import Dispatch, Policy, Running
from hivedlab.trace.workload import Job, ServerType


class PrivatePolicy(Policy):
    name = "private"

    def __init__(self, types: Sequence[ServerType], cells: VcCells) -> None:
        vcs = sorted(cells.cells)
        self.own = {vc: Cluster(types, [(t, size) for t, sizes in sorted(cells.cells[vc].items()) for size in sizes])
                    for vc in vcs}
        super().__init__(Cluster(types, []), vcs)

    def clusters(self) -> Sequence[Cluster]:
        return tuple(self.own.values())

    def never_runs(self, job: Job) -> str | None:
        cluster = self.own.get(job.vc)
        if cluster is None:
            return f"VC {job.vc} has no share"
        if not _fits(cluster, job.gpus):
            return f"asks for {job.gpus} GPUs, more than VC {job.vc}'s cells can place"
        return None

    def release(self, job_id: str) -> Running:
        run = self.running.pop(job_id)
        self.own[run.job.vc].give_back(run.slots)
        self.blocked.pop(run.job.vc, None)
        return run

    def dispatch_pass(self, out: Dispatch) -> None:
        for vc, queue in self.queues.items():
            if self.blocked.get(vc) == 0:
                continue
            cluster = self.own[vc]
            while (job := queue.head()) is not None:
                slots = cluster.place(job)
                if slots is None:
                    self.blocked[vc] = 0  # only a release in this VC's own cluster can unblock it
                    break
                queue.pop()
                cluster.take(slots)
                run = Running(job, slots, False)
                self.running[job.id] = run
                out.events.append((True, run))


def _fits(cluster: Cluster, gpus: int) -> bool:
    """Whether the empty cluster could hold the job: one cell big enough, or enough whole-server cells."""
    for t, st in enumerate(cluster.types):
        caps = [c for s, c in enumerate(cluster.capacity) if cluster.type_of[s] == t]
        if gpus <= st.gpus and any(c >= gpus for c in caps):
            return True
        if gpus > st.gpus and sum(1 for c in caps if c == st.gpus) >= servers_needed(gpus, st.gpus):
            return True
    return False
