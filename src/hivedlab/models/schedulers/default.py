"""Kubernetes' default scheduler of the 1.14/1.15 line, one pod at a time (docs/other-schedulers.md,
"Kubernetes' default scheduler").

`DefaultScheduler.schedule(pod, pods)` is one scheduling attempt: filter the nodes by resource fit (CPU, memory,
`nvidia.com/gpu`), score the feasible ones (least requested + balanced allocation) and take the best, rotating among
equal scores; with no feasible node, the FitError text and, where evicting lower-priority pods would make room, the
preemption (node and victims) Kubernetes would nominate. No virtual clusters, no gang: each pod on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivedlab.models.schedulers.resources import GPU, Node, Pod, free_on, histogram, insufficient, score, scored_on

SCHEDULER_NAME = "default-scheduler"
# the reason of the event a pod that fits no node gets (pkg/scheduler/scheduler.go, `recordSchedulingFailure`)
WAIT_REASON = "FailedScheduling"
_MIN_PRIORITY = -(2**31)
# a node the pod may not use, as the 1.14 predicates word it (pkg/scheduler/algorithm/predicates/error.go):
# OpenPAI's pods select `pai-worker` nodes; a TFJob's pod selects none, and the master's NoSchedule taint stops it
# (once its resources fit there: `DefaultScheduler._other_node_reason`)
NODE_SELECTOR = "node(s) didn't match node selector"
TAINTS = "node(s) had taints that the pod didn't tolerate"


@dataclass(frozen=True)
class Bind:
    node: str


@dataclass(frozen=True)
class Preemption:
    node: str
    victims: tuple[Pod, ...]


@dataclass(frozen=True)
class Unschedulable:
    """No node fits: the FailedScheduling message and, when some lower-priority pods stand in the way, the
    preemption."""

    message: str
    preemption: Preemption | None = None


def fit_error(reasons: Sequence[str], total_nodes: int) -> str:
    """`0/N nodes are available: <count reason>, ….` with the per-node reasons counted."""
    return f"0/{total_nodes} nodes are available: {histogram(reasons)}."


class DefaultScheduler:
    """One scheduler process: the nodes it knows and its round-robin position among equally good nodes.

    `other_nodes` are nodes that never fit a lab pod (the master), each failing with `other_reason`."""

    def __init__(self, nodes: Sequence[Node], other_nodes: int = 0, other_reason: str = NODE_SELECTOR) -> None:
        self.nodes = tuple(nodes)
        self.other_nodes = other_nodes
        self.other_reason = other_reason
        self._last_index = 0

    def schedule(self, pod: Pod, pods: Sequence[Pod]) -> Bind | Unschedulable:
        """One attempt for `pod`; `pods` are every pod holding a node (terminating ones included)."""
        feasible: list[tuple[int, Node]] = []
        reasons: list[str] = []
        for node in self.nodes:
            lacking = insufficient(pod.request, free_on(node, pods))
            if lacking:
                reasons += [f"Insufficient {name}" for name in lacking]
            else:
                feasible.append((score(node, scored_on(node.name, pods), pod.request), node))
        if feasible:
            best = max(points for points, _ in feasible)
            top = [node for points, node in feasible if points == best]
            chosen = top[self._last_index % len(top)]
            self._last_index += 1
            return Bind(chosen.name)
        reasons += self._other_node_reasons(pod) * self.other_nodes
        message = fit_error(reasons, len(self.nodes) + self.other_nodes)
        return Unschedulable(message, self.preemption(pod, pods))

    def _other_node_reasons(self, pod: Pod) -> list[str]:
        """Why the master (no GPU) does not fit, in 1.14's order (pkg/scheduler/algorithm/predicates/predicates.go):
        `predicatesOrdering` runs GeneralPred before PodToleratesNodeTaints and keeps a node's first failing
        predicate; GeneralPredicates itself reports every one of its failures, the resource fit's and the node
        selector's together. So a GPU pod lacks `nvidia.com/gpu` there (an OpenPAI pod also fails its node selector),
        and only a CPU-only pod without a selector meets the taint. (1.20 checks taints first: the rehearsal's
        wording, docs/simulator-vs-rehearsal.md `master-taint-wording`.)"""
        reasons = [f"Insufficient {GPU}"] if pod.request.gpu > 0 else []
        if self.other_reason == NODE_SELECTOR:
            reasons.append(NODE_SELECTOR)
        return reasons or [self.other_reason]

    def preemption(self, pod: Pod, pods: Sequence[Pod]) -> Preemption | None:
        """Kubernetes' choice: on each node, the fewest lower-priority pods whose eviction makes the pod fit
        (all lower ones removed, then reprieved from the highest priority down while the pod still fits); among
        the nodes, the lowest highest-victim priority, then the lowest sum of priorities, then the fewest victims,
        then node order."""
        candidates: list[tuple[tuple[int, int, int, int], Preemption]] = []
        for position, node in enumerate(self.nodes):
            victims = self._victims_on(node, pod, pods)
            if victims is None:
                continue
            key = (max(v.priority for v in victims), sum(v.priority - _MIN_PRIORITY for v in victims),
                   len(victims), position)
            candidates.append((key, Preemption(node.name, victims)))
        return min(candidates, key=lambda item: item[0])[1] if candidates else None

    def _victims_on(self, node: Node, pod: Pod, pods: Sequence[Pod]) -> tuple[Pod, ...] | None:
        on_node = [p for p in pods if p.node == node.name]
        lower = [p for p in on_node if p.priority < pod.priority]
        kept = [p for p in on_node if p.priority >= pod.priority]
        if not pod.request.fits_in(free_on(node, kept)):
            return None
        victims = []
        for candidate in sorted(lower, key=lambda p: (-p.priority, p.order)):
            if pod.request.fits_in(free_on(node, [*kept, candidate])):
                kept.append(candidate)
            else:
                victims.append(candidate)
        return tuple(sorted(victims, key=lambda p: p.name))
