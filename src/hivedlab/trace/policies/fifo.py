"""FIFO: one queue for the whole cluster, no VCs; the head job blocks every job behind it (head-of-line)."""

from __future__ import annotations

from collections.abc import Sequence

from hivedlab.trace.cluster import Cluster
from hivedlab.trace.policies.base import Dispatch, Policy, Queue
from hivedlab.trace.workload import Job

ALL = "*"


class FifoPolicy(Policy):
    name = "fifo"

    def __init__(self, cluster: Cluster, vcs: Sequence[str]) -> None:
        super().__init__(cluster, vcs)
        self.queues = {ALL: Queue()}

    def queue_of(self, job: Job) -> Queue:
        return self.queues[ALL]

    def dispatch_pass(self, out: Dispatch) -> None:
        queue = self.queues[ALL]
        if self.blocked.get(ALL) == self.version:
            return
        while (job := queue.head()) is not None:
            slots = self.cluster.place(job)
            if slots is None:
                self.blocked[ALL] = self.version
                break
            queue.pop()
            self.start(job, slots, False, out)
