"""The trace's data: jobs, server types, the cluster, the VCs' shares, and the jobs left out with their reason."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


class TraceInputError(Exception):
    """Input that cannot be read at all (a missing file, a document that is not the format): exit 2, one line."""


@dataclass(frozen=True, slots=True)
class Job:
    """One job as every policy sees it: `submit` and `duration` in seconds of virtual time; `cpu` and `memory_mb`
    None when the trace does not say (the job then asks for its GPUs' proportional part of a server)."""

    id: str
    vc: str
    user: str
    submit: float
    gpus: int
    duration: float
    cpu: float | None = None
    memory_mb: float | None = None


@dataclass(frozen=True, slots=True)
class ServerType:
    """`count` servers with `gpus` GPUs each; CPU and memory per server."""

    name: str
    gpus: int
    count: int
    cpu: float
    memory_mb: float


@dataclass(frozen=True, slots=True)
class LeftOut:
    job: str
    reason: str


@dataclass(frozen=True)
class Workload:
    """A trace ready to replay: jobs sorted by submit time, the cluster, each VC's share (summing to 1)."""

    jobs: tuple[Job, ...]
    server_types: tuple[ServerType, ...]
    shares: Mapping[str, float]
    source: str
    left_out: tuple[LeftOut, ...] = field(default=())

    @property
    def total_gpus(self) -> int:
        return sum(t.gpus * t.count for t in self.server_types)


def per_gpu(server: ServerType) -> tuple[float, float]:
    """CPU and memory that go with one GPU of this server type."""
    return server.cpu / server.gpus, server.memory_mb / server.gpus


def demand(job: Job, server: ServerType) -> tuple[float, float]:
    """The job's CPU and memory on servers of this type: its own figures, or its GPUs' proportional part."""
    cpu_each, mem_each = per_gpu(server)
    cpu = job.cpu if job.cpu is not None else cpu_each * job.gpus
    mem = job.memory_mb if job.memory_mb is not None else mem_each * job.gpus
    return cpu, mem


def largest_remainder(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Split `total` whole units in proportion to `weights` (Hamilton's method): floors first, then one more unit to
    the largest remainders, ties to the name first in order."""
    weight_sum = sum(weights.values())
    if weight_sum <= 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * w / weight_sum for k, w in weights.items()}
    out = {k: int(v) for k, v in exact.items()}
    left = total - sum(out.values())
    order = sorted(weights, key=lambda k: (-(exact[k] - out[k]), k))
    for k in order[:left]:
        out[k] += 1
    return out


def normalized_shares(raw: Mapping[str, float]) -> dict[str, float]:
    total = sum(raw.values())
    return {vc: value / total for vc, value in sorted(raw.items())} if total > 0 else {}
