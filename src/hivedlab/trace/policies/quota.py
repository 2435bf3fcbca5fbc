"""Quota VCs, as YARN's capacity scheduler does it: each VC a quota of GPUs, FIFO inside it, no say in where its
GPUs are. A job starts on free GPUs if any server holds it, beyond its VC's quota too (idle quota is lent); a job
within its VC's unused quota that finds no room takes GPUs back by preemption from the VCs above their quota, never
more than a VC's excess, most recently started jobs first. Preemption is placement-aware (kinder to the quota
policy than YARN, which picks victims by queue only): it preempts only where that lets the waiting job start, on the
server or whole servers that cost the fewest GPUs (on a tie, the most recent jobs). A VC at or under its quota loses
nothing, wherever its jobs sit: that is how a VC's free quota can be unusable for its multi-GPU job (the sharing
anomaly)."""

from __future__ import annotations

from collections.abc import Mapping

from hivedlab.trace.cluster import Cluster, Slot, servers_needed
from hivedlab.trace.policies.base import Dispatch, Policy, Running
from hivedlab.trace.workload import Job


class QuotaPolicy(Policy):
    name = "quota"

    def __init__(self, cluster: Cluster, quota: Mapping[str, int]) -> None:
        super().__init__(cluster, sorted(quota))
        self.quota = dict(quota)
        self.used = dict.fromkeys(self.vcs, 0)
        self.on_server: list[dict[str, int]] = [{} for _ in cluster.capacity]  # server -> job -> GPUs
        self.started: dict[str, int] = {}  # job -> start sequence number
        self.starts = 0

    def release(self, job_id: str) -> Running:
        run = super().release(job_id)
        self.used[run.job.vc] -= run.gpus
        for slot in run.slots:
            del self.on_server[slot.server][job_id]
        del self.started[job_id]
        return run

    def dispatch_pass(self, out: Dispatch) -> None:
        self.dispatch_in_vc_order(out, self._try)

    def _try(self, job: Job, out: Dispatch) -> bool:
        within = self.used[job.vc] + _held(self.cluster, job) <= self.quota[job.vc]
        slots = self.cluster.place(job)
        if slots is None and within:
            slots = self._reclaim(job, out)
        if slots is None:
            return False
        self.used[job.vc] += sum(s.gpus for s in slots)
        self.start(job, slots, not within, out)
        for slot in slots:
            self.on_server[slot.server][job.id] = slot.gpus
        self.starts += 1
        self.started[job.id] = self.starts
        if any(used > self.quota[vc] for vc, used in self.used.items()):
            self.version += 1  # a VC above its quota: a blocked VC within its own may now take GPUs back
        return True

    def _victims(self, server: int, need: int, excess: dict[str, int]) -> list[str] | None:
        """Jobs on `server` of VCs above their quota whose GPUs, with the free ones, make `need`; None if none do.
        `excess` (GPUs each VC may still lose) is spent by the choice."""
        free = self.cluster.free[server]
        chosen: list[str] = []
        jobs = sorted(self.on_server[server], key=lambda j: -self.started[j])
        for job_id in jobs:
            if free >= need:
                break
            run = self.running[job_id]
            vc = run.job.vc
            if excess.get(vc, 0) >= run.gpus:
                excess[vc] -= run.gpus
                chosen.append(job_id)
                free += self.on_server[server][job_id]
        return chosen if free >= need else None

    def _cost(self, victims: list[str]) -> tuple[int, int]:
        """GPUs preempted, then (on a tie) the earliest start among the victims, later ones preferred."""
        return (sum(self.running[v].gpus for v in victims), -min((self.started[v] for v in victims), default=0))

    def _reclaim(self, job: Job, out: Dispatch) -> list[Slot] | None:
        """Preempt jobs of VCs above their quota where that lets `job` start; None when no choice would."""
        cluster = self.cluster
        over = {vc: used - self.quota[vc] for vc, used in self.used.items() if used > self.quota[vc]}
        if not over:
            return None
        best: tuple[tuple[int, int], list[str]] | None = None
        for t, st in enumerate(cluster.types):
            servers = [s for s in range(len(cluster.capacity)) if cluster.type_of[s] == t and self.on_server[s]]
            if job.gpus <= st.gpus:
                for s in servers:
                    victims = self._victims(s, job.gpus, dict(over))
                    if victims is not None and (best is None or self._cost(victims) < best[0]):
                        best = (self._cost(victims), victims)
                continue
            need = servers_needed(job.gpus, st.gpus) - len(cluster.by_free[t][st.gpus])
            budget = dict(over)
            chosen: list[str] = []
            for s in servers:
                if need <= 0:
                    break
                trial = dict(budget)
                victims = self._victims(s, st.gpus, trial)
                if victims is not None:
                    budget = trial
                    chosen += [v for v in victims if v not in chosen]
                    need -= 1
            if need <= 0 and (best is None or self._cost(chosen) < best[0]):
                best = (self._cost(chosen), chosen)
        if best is None:
            return None
        for victim in best[1]:
            if victim in self.running:
                self.preempt(victim, out)
        return cluster.place(job)


def _held(cluster: Cluster, job: Job) -> int:
    """GPUs the job holds wherever it goes: its own count when some server holds it, else whole servers."""
    if any(job.gpus <= st.gpus for st in cluster.types):
        return job.gpus
    node = max(st.gpus for st in cluster.types)
    return servers_needed(job.gpus, node) * node
