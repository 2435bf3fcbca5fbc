"""What every policy shares: queues in submit order, the running jobs, and the one result of a dispatch."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hivedlab.trace.cluster import Cluster, Slot
from hivedlab.trace.workload import Job


@dataclass(slots=True)
class Running:
    job: Job
    slots: list[Slot]
    lent: bool  # runs on GPUs beyond its VC's quota or cells: may be preempted

    @property
    def gpus(self) -> int:
        return sum(s.gpus for s in self.slots)


@dataclass
class Dispatch:
    """What a dispatch did, in order: (True, run) for a job it started, (False, run) for a running job it preempted
    (queued again)."""

    events: list[tuple[bool, Running]] = field(default_factory=list)


class Queue:
    """Waiting jobs in submit order; a preempted job goes back to its place by its submit time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Job]] = []
        self._seq = 0

    def push(self, job: Job, order: int) -> None:
        heapq.heappush(self._heap, (job.submit, order, job))

    def head(self) -> Job | None:
        return self._heap[0][2] if self._heap else None

    def pop(self) -> Job:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)

    def jobs(self) -> Iterable[Job]:
        return (entry[2] for entry in self._heap)


class Policy:
    """A scheduler over one `Cluster`: `enqueue` and `release` change state, `dispatch` starts what it can."""

    name = ""

    def __init__(self, cluster: Cluster, vcs: Sequence[str]) -> None:
        self.cluster = cluster
        self.vcs = list(vcs)
        self.queues: dict[str, Queue] = {vc: Queue() for vc in self.vcs}
        self.running: dict[str, Running] = {}
        self.order: dict[str, int] = {}
        self.version = 0  # bumped whenever GPUs are given back: a blocked queue is tried again only after that
        self.blocked: dict[str, int] = {}

    def queue_of(self, job: Job) -> Queue:
        return self.queues[job.vc]

    def enqueue(self, job: Job) -> None:
        order = self.order.setdefault(job.id, len(self.order))
        self.queue_of(job).push(job, order)

    def release(self, job_id: str) -> Running:
        """A job ended (or was preempted): its GPUs go back."""
        run = self.running.pop(job_id)
        self.cluster.give_back(run.slots)
        self.version += 1
        return run

    def start(self, job: Job, slots: list[Slot], lent: bool, out: Dispatch) -> None:
        self.cluster.take(slots)
        run = Running(job, slots, lent)
        self.running[job.id] = run
        out.events.append((True, run))

    def preempt(self, job_id: str, out: Dispatch) -> None:
        run = self.release(job_id)
        self.enqueue(run.job)
        out.events.append((False, run))

    def waiting(self) -> Iterable[Job]:
        for queue in self.queues.values():
            yield from queue.jobs()

    def heads(self) -> Iterable[Job]:
        for queue in self.queues.values():
            head = queue.head()
            if head is not None:
                yield head

    def clusters(self) -> Sequence[Cluster]:
        return (self.cluster,)

    def never_runs(self, job: Job) -> str | None:
        """Why this policy could never start the job (it is then left out of this policy's replay), or None."""
        if not self.cluster.fits_anywhere(job.gpus):
            return f"asks for {job.gpus} GPUs, more than the cluster can place"
        return None

    def dispatch(self, now: float) -> Dispatch:
        """Passes over the queues until one starts and preempts nothing: a job preempted late in a pass is queued
        again in a VC the pass already went by."""
        out = Dispatch()
        while True:
            before = len(out.events)
            self.dispatch_pass(out)
            if len(out.events) == before:
                return out

    def dispatch_pass(self, out: Dispatch) -> None:
        raise NotImplementedError

    def dispatch_in_vc_order(self, out: Dispatch, try_start: Callable[[Job, Dispatch], bool]) -> None:
        """FIFO inside each VC, the VCs in the order of their head's submission: a VC whose head cannot start is
        blocked until something changes (`version`)."""
        for vc in self.vcs_by_head():
            queue = self.queues[vc]
            while queue.head() is not None:
                job = queue.pop()  # first: a preemption may queue a job of this VC ahead of it
                if not try_start(job, out):
                    self.enqueue(job)
                    self.blocked[vc] = self.version
                    break

    def vcs_by_head(self) -> list[str]:
        """The VCs whose head job may start now, earliest head first."""
        ready = []
        for vc, queue in self.queues.items():
            head = queue.head()
            if head is not None and self.blocked.get(vc) != self.version:
                ready.append((head.submit, self.order[head.id], vc))
        ready.sort()
        return [vc for _, _, vc in ready]


def held_by_vc(running: Mapping[str, Running]) -> dict[str, int]:
    out: dict[str, int] = {}
    for run in running.values():
        out[run.job.vc] = out.get(run.job.vc, 0) + run.gpus
    return out
