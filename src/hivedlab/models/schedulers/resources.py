"""What both models share: a pod's request, a node's capacity, what is free on a node, and node scoring
(docs/other-schedulers.md, "Shared by both models")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GPU = "nvidia.com/gpu"
MAX_PRIORITY = 10  # Kubernetes' MaxPriority for one priority function
# what the priorities count for a pod that requests no CPU or memory (Kubernetes v1.14
# pkg/scheduler/algorithm/priorities/util/non_zero.go, `GetNonzeroRequests`): 100 millicores, 200 MiB
DEFAULT_CPU_MILLI = 100
DEFAULT_MEMORY_MB = 200


@dataclass(frozen=True)
class Resources:
    """Requested or free amounts: whole GPUs, CPU in millicores, memory in MiB."""

    gpu: int = 0
    cpu_milli: int = 0
    memory_mb: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.gpu + other.gpu, self.cpu_milli + other.cpu_milli, self.memory_mb + other.memory_mb)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.gpu - other.gpu, self.cpu_milli - other.cpu_milli, self.memory_mb - other.memory_mb)

    def fits_in(self, free: Resources) -> bool:
        return self.gpu <= free.gpu and self.cpu_milli <= free.cpu_milli and self.memory_mb <= free.memory_mb


@dataclass(frozen=True)
class Node:
    name: str
    capacity: Resources


@dataclass(frozen=True)
class Pod:
    """A pod as a scheduler sees it. `order` is its place in the queue (creation order); `group` its PodGroup."""

    uid: str
    name: str
    priority: int
    request: Resources
    order: int = 0
    node: str | None = None
    group: str = ""


def used_on(node: str, pods: Iterable[Pod]) -> Resources:
    total = Resources()
    for pod in pods:
        if pod.node == node:
            total = total + pod.request
    return total


def free_on(node: Node, pods: Iterable[Pod]) -> Resources:
    return node.capacity - used_on(node.name, pods)


def nonzero(request: Resources) -> Resources:
    """The request as the priorities count it: no CPU or no memory counts as the defaults above."""
    return Resources(request.gpu, request.cpu_milli or DEFAULT_CPU_MILLI, request.memory_mb or DEFAULT_MEMORY_MB)


def scored_on(node: str, pods: Iterable[Pod]) -> Resources:
    """What the pods on a node add up to for the priorities (`NodeInfo.NonZeroRequest`)."""
    total = Resources()
    for pod in pods:
        if pod.node == node:
            total = total + nonzero(pod.request)
    return total


def insufficient(request: Resources, free: Resources) -> list[str]:
    """The resources a node lacks for the request, named as Kubernetes names them."""
    missing = []
    if request.cpu_milli > free.cpu_milli:
        missing.append("cpu")
    if request.memory_mb > free.memory_mb:
        missing.append("memory")
    if request.gpu > free.gpu:
        missing.append(GPU)
    return missing


def _fraction(requested: int, capacity: int) -> float:
    return requested / capacity if capacity > 0 else 1.0


def score(node: Node, used: Resources, request: Resources) -> int:
    """LeastRequested plus BalancedResourceAllocation on CPU and memory, each 0–10 (GPUs are not scored); `used` as
    `scored_on` counts it, and the request counted the same way (pkg/scheduler/algorithm/priorities/
    resource_allocation.go of Kubernetes v1.14, `PriorityMap`)."""
    cap = node.capacity
    after = used + nonzero(request)
    least = 0
    for want, total in ((after.cpu_milli, cap.cpu_milli), (after.memory_mb, cap.memory_mb)):
        least += (total - want) * MAX_PRIORITY // total if total > 0 and want <= total else 0
    least //= 2
    cpu, memory = _fraction(after.cpu_milli, cap.cpu_milli), _fraction(after.memory_mb, cap.memory_mb)
    balanced = 0 if cpu >= 1 or memory >= 1 else int((1 - abs(cpu - memory)) * MAX_PRIORITY)
    return least + balanced


def histogram(reasons: Sequence[str]) -> str:
    """`N reason` counts, sorted as text, joined by commas (both schedulers' FitError style)."""
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))
