"""Hand-made workloads for the trace tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hivedlab.trace.workload import Job, ServerType, Workload

EIGHT = ServerType("8gpu", 8, 2, 48, 524288)


def job(name: str, vc: str, submit: float, gpus: int, duration: float, cpu: float | None = None,
        memory_mb: float | None = None) -> Job:
    return Job(name, vc, "u", submit, gpus, duration, cpu, memory_mb)


def workload(jobs: Sequence[Job], shares: Mapping[str, float], types: Sequence[ServerType] = (EIGHT,)) -> Workload:
    return Workload(tuple(sorted(jobs, key=lambda j: (j.submit, j.id))), tuple(types), dict(shares), "hand-made")
