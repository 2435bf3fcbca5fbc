"""Dominant Resource Fairness between VCs (Ghodsi et al., NSDI 2011), weighted by the VCs' shares.

A VC's dominant share is the largest of its fractions of the cluster's GPUs, CPUs and memory, divided by its
weight. Whenever resources are free, the VC with the smallest dominant share (earliest head job on a tie) starts
its head job; a VC whose head does not fit is passed over until resources are given back. No preemption, so a VC
never gets back GPUs that others hold.
"""

from __future__ import annotations

from collections.abc import Mapping

from hivedlab.trace.cluster import Cluster
from hivedlab.trace.policies.base import Dispatch, Policy, Running


class DrfPolicy(Policy):
    name = "drf"

    def __init__(self, cluster: Cluster, weights: Mapping[str, float]) -> None:
        super().__init__(cluster, sorted(weights))
        self.weights = dict(weights)
        self.totals = (float(cluster.total_gpus), sum(cluster.free_cpu), sum(cluster.free_mem))
        self.usage: dict[str, list[float]] = {vc: [0.0, 0.0, 0.0] for vc in self.vcs}

    def dominant_share(self, vc: str) -> float:
        used = self.usage[vc]
        share = max(u / t for u, t in zip(used, self.totals, strict=True) if t > 0)
        return share / self.weights[vc] if self.weights[vc] > 0 else float("inf")

    def release(self, job_id: str) -> Running:
        run = super().release(job_id)
        self._account(run, -1.0)
        return run

    def _account(self, run: Running, sign: float) -> None:
        used = self.usage[run.job.vc]
        for slot in run.slots:
            used[0] += sign * slot.gpus
            used[1] += sign * slot.cpu
            used[2] += sign * slot.memory_mb

    def dispatch_pass(self, out: Dispatch) -> None:
        candidates = set(self.vcs_by_head())
        while candidates:
            vc = min(candidates, key=lambda v: (self.dominant_share(v), self._head_key(v)))
            job = self.queues[vc].head()
            slots = None if job is None else self.cluster.place(job)
            if job is None or slots is None:
                if job is not None:
                    self.blocked[vc] = self.version
                candidates.discard(vc)
                continue
            self.queues[vc].pop()
            self.start(job, slots, False, out)
            self._account(self.running[job.id], 1.0)


    def _head_key(self, vc: str) -> tuple[float, int]:
        head = self.queues[vc].head()
        return (head.submit, self.order[head.id]) if head is not None else (float("inf"), 0)
