"""Servers and placement, the same rules for every policy (docs/trace.md#placement).

A job of up to one server's GPUs goes on one server (best fit: the fullest server it fits on, server types with the
fewest GPUs per server first); a bigger job takes whole servers (ceil(GPUs / server size) of them, server types with
the most GPUs per server first) and holds all their GPUs. `Cluster` keeps, per server type, the servers grouped by
their count of free GPUs, so that a placement costs a few dictionary look-ups and never a scan of the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivedlab.trace.workload import Job, ServerType, demand


@dataclass(frozen=True, slots=True)
class Slot:
    """`gpus` GPUs of one server held by a job."""

    server: int
    gpus: int
    cpu: float
    memory_mb: float


def servers_needed(gpus: int, node_gpus: int) -> int:
    return -(-gpus // node_gpus)


class Cluster:
    """Free GPUs, CPU and memory per server. `servers` lists (type index, GPUs) per server; by default every server
    of every type whole. A server smaller than its type's size (a private cluster's cell) takes single-server jobs
    only."""

    def __init__(self, types: Sequence[ServerType], servers: Sequence[tuple[int, int]] | None = None) -> None:
        self.types = tuple(types)
        if servers is None:
            servers = [(t, st.gpus) for t, st in enumerate(self.types) for _ in range(st.count)]
        self.type_of = [t for t, _ in servers]
        self.capacity = [g for _, g in servers]
        self.free = list(self.capacity)
        self.free_cpu = [self.types[t].cpu * g / self.types[t].gpus for t, g in servers]
        self.free_mem = [self.types[t].memory_mb * g / self.types[t].gpus for t, g in servers]
        self.names = [f"{self.types[t].name}-{i}" for i, (t, _) in enumerate(servers)]
        # per type: free GPU count -> servers with that many free (a dict as an ordered set)
        self.by_free: list[list[dict[int, None]]] = [[{} for _ in range(st.gpus + 1)] for st in self.types]
        for s, (t, g) in enumerate(servers):
            self.by_free[t][g][s] = None
        self.total_gpus = sum(self.capacity)
        self.used_gpus = 0
        self.single_order = sorted(range(len(self.types)), key=lambda t: (self.types[t].gpus, t))
        self.multi_order = sorted(range(len(self.types)), key=lambda t: (-self.types[t].gpus, t))

    # -- queries -------------------------------------------------------------------------------------------------
    def fits_anywhere(self, gpus: int) -> bool:
        """Whether some type could ever hold a job of this size (single server, or enough whole servers)."""
        return any(gpus <= st.gpus or servers_needed(gpus, st.gpus) <= st.count for st in self.types)

    def place(self, job: Job, types: Sequence[int] | None = None) -> list[Slot] | None:
        """A placement by the shared rules on free resources, or None; `types` limits the server types tried."""
        allowed = None if types is None else set(types)
        for t in self.single_order:
            st = self.types[t]
            if job.gpus > st.gpus or (allowed is not None and t not in allowed):
                continue
            cpu, mem = demand(job, st)
            buckets = self.by_free[t]
            for k in range(job.gpus, st.gpus + 1):
                for s in buckets[k]:
                    if self.free_cpu[s] >= cpu - 1e-9 and self.free_mem[s] >= mem - 1e-9:
                        return [Slot(s, job.gpus, cpu, mem)]
        for t in self.multi_order:
            st = self.types[t]
            if job.gpus <= st.gpus or (allowed is not None and t not in allowed):
                continue
            whole = self.by_free[t][st.gpus]
            need = servers_needed(job.gpus, st.gpus)
            if len(whole) >= need:
                return self.whole_servers(list(whole)[:need])
        return None

    def whole_servers(self, servers: Sequence[int]) -> list[Slot]:
        return [Slot(s, self.capacity[s], self.free_cpu[s], self.free_mem[s]) for s in servers]

    def free_gpus_of_type(self, t: int) -> int:
        return sum(k * len(servers) for k, servers in enumerate(self.by_free[t]))

    def stranded(self, smallest_single: int | None, any_multi: bool) -> int:
        """Free GPUs that no job at the head of a queue can use: on servers with fewer free GPUs than the smallest such
        job that fits one server; when only jobs bigger than a server head the queues, every free GPU of a server
        not wholly free."""
        total = 0
        for t, st in enumerate(self.types):
            limit = smallest_single if smallest_single is not None else (st.gpus if any_multi else 0)
            for k in range(1, min(limit, st.gpus + 1)):
                total += k * len(self.by_free[t][k])
        return total

    # -- changes ---------------------------------------------------------------------------------------------------
    def take(self, slots: Sequence[Slot]) -> None:
        for slot in slots:
            self._move(slot.server, -slot.gpus)
            self.free_cpu[slot.server] -= slot.cpu
            self.free_mem[slot.server] -= slot.memory_mb

    def give_back(self, slots: Sequence[Slot]) -> None:
        for slot in slots:
            self._move(slot.server, slot.gpus)
            self.free_cpu[slot.server] += slot.cpu
            self.free_mem[slot.server] += slot.memory_mb

    def _move(self, s: int, delta: int) -> None:
        t = self.type_of[s]
        before = self.free[s]
        after = before + delta
        if after < 0 or after > self.capacity[s]:
            raise ValueError(f"server {self.names[s]}: {before} free GPUs, change {delta}")
        del self.by_free[t][before][s]
        self.by_free[t][after][s] = None
        self.free[s] = after
        self.used_gpus -= delta
