"""kube-batch v0.4 as Kubeflow's gang-scheduling guide uses it (docs/other-schedulers.md, "kube-batch"):
one scheduling session over PodGroups, with the `allocate` action and the gang, priority, predicates and nodeorder
plugins.

`KubeBatch.session(groups, pods)` runs one session on a snapshot: the groups are taken by priority, then not-ready
before ready, then creation (a group with fewer pods than `minMember` too: v0.4's gang plugin registers its validity
check in its `OnSessionOpen`, after `framework.OpenSession`'s `openSession` has run the checks, so none applies); each
group's pending pods are placed one by one on the best node with room (room taken by earlier allocations of the
same session counts as used) until one finds none; a group's allocations become binds only once it has
`minMember` pods allocated or running (all-or-nothing), otherwise they are dropped at the end of the session and
every pending pod of the group gets the group's FitError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hivedlab.models.schedulers.resources import Node, Pod, Resources, free_on, score, scored_on

SCHEDULER_NAME = "kube-batch"
# the reason of the event a task that found no node gets: v1.PodReasonUnschedulable (pkg/scheduler/cache/cache.go,
# `taskUnschedulable`), not the default scheduler's FailedScheduling
WAIT_REASON = "Unschedulable"
# the gang plugin (pkg/scheduler/plugins/gang): its validJobFn's words for a group short of members (registered too
# late to run in v0.4, see above; the message table still knows them), and OnSessionClose's
# "<pending>/<tasks> tasks in gang unschedulable: <FitError>" for a group that waits
NOT_ENOUGH_VALID_TASKS = "Not enough valid tasks for gang-scheduling"
GANG_UNSCHEDULABLE = "tasks in gang unschedulable"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"  # what tf-operator writes on each pod of a TFJob
# pkg/apis/scheduling/v1alpha1/types.go: the PodGroup's condition type, its reason for a gang short of room
PODGROUP_UNSCHEDULABLE = "Unschedulable"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
# pkg/scheduler/cache/cache.go `RecordJobStatusEvent`: the event on a PodGroup whose phase is Pending or Unknown,
# "<pending tasks>/<tasks> tasks in gang unschedulable: <the job's FitError>"
GANG_EVENT = ("Warning", PODGROUP_UNSCHEDULABLE, "{}/{} " + GANG_UNSCHEDULABLE + ": {}")


@dataclass(frozen=True)
class PodGroup:
    """A PodGroup as tf-operator creates it: `min_member` = every replica of the TFJob."""

    name: str
    min_member: int
    priority: int = 0
    order: int = 0  # creation order
    queue: str = "default"


@dataclass
class SessionResult:
    binds: list[tuple[Pod, str]] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)  # pod uid -> the group's FitError
    # group -> its tasks allocated in this session though the group was not ready: they stay `Allocated` in the
    # session (framework/session.go `Allocate`), so the session's close does not count them as pending
    held: dict[str, int] = field(default_factory=dict)


# pkg/scheduler/api/resource_info.go: the margins `FitDelta` adds to each requested resource (10 millicores,
# 10 MiB, 10 milli-GPUs)
MIN_MILLI_CPU, MIN_MEMORY_MB, MIN_MILLI_GPU = 10, 10, 10


def fit_delta(free: Resources, request: Resources) -> Resources:
    """`NodeInfo.Idle.FitDelta(task.Resreq)`: what a node has left for the task, less a margin, for each resource the
    task requests (others keep the node's idle amount); negative where it lacks. GPUs in milli-GPUs here, so a node
    with exactly the GPUs asked for still counts as lacking them when something else did not fit."""
    gpu = free.gpu * 1000 - (request.gpu * 1000 + MIN_MILLI_GPU) if request.gpu > 0 else free.gpu * 1000
    cpu = free.cpu_milli - (request.cpu_milli + MIN_MILLI_CPU) if request.cpu_milli > 0 else free.cpu_milli
    memory = free.memory_mb - (request.memory_mb + MIN_MEMORY_MB) if request.memory_mb > 0 else free.memory_mb
    return Resources(gpu, cpu, memory)


def fit_error(deltas: dict[str, Resources]) -> str:
    """v0.4's job FitError (pkg/scheduler/api/job_info.go, `JobInfo.FitError`): per node that passed the predicates
    but lacked room for the last task tried, the resources its `fit_delta` is short of."""
    if not deltas:
        return "0 nodes are available"
    reasons: dict[str, int] = {}
    for free in deltas.values():
        for amount, name in ((free.cpu_milli, "cpu"), (free.memory_mb, "memory"), (free.gpu, "GPU")):
            if amount < 0:
                reasons[name] = reasons.get(name, 0) + 1
    listed = ", ".join(sorted(f"{count} insufficient {name}" for name, count in reasons.items()))
    return f"0/{len(deltas)} nodes are available, {listed}."


@dataclass(frozen=True)
class GroupAtClose:
    """A PodGroup's tasks when a session closes: how many there are, how many are allocated or bound (`allocated`,
    `api.AllocatedStatus`), how many of those run, how many succeeded."""

    min_member: int
    tasks: int
    allocated: int
    running: int
    succeeded: int = 0

    @property
    def pending(self) -> int:
        return self.tasks - self.allocated - self.succeeded


def closed_status(previous: Mapping[str, Any], group: GroupAtClose, fit_error: str, session: str,
                  at: str) -> dict[str, Any]:
    """The status kube-batch v0.4 writes on a PodGroup as a session closes: the gang plugin's `OnSessionClose` sets
    the `Unschedulable` condition (reason `NotEnoughResources`, "<minMember - ready>/<tasks> tasks in gang
    unschedulable: <FitError>") on a group short of ready tasks (allocated, bound, running or succeeded) and never
    clears it; `framework/session.go` `jobStatus` makes the phase `Unknown` when tasks run while the condition was set
    in this session, `Running` only when *more* than `minMember` tasks are allocated (so a group of exactly
    `minMember` running tasks stays `Pending`), else `Pending`; the counts of running and succeeded tasks
    (`omitempty`)."""
    status = dict(previous)
    conditions = [dict(c) for c in previous.get("conditions") or []]
    ready = group.allocated + group.succeeded
    unschedulable = ready < group.min_member
    if unschedulable:
        condition = {"type": PODGROUP_UNSCHEDULABLE, "status": "True", "transitionID": session,
                     "lastTransitionTime": at, "reason": NOT_ENOUGH_RESOURCES,
                     "message": f"{group.min_member - ready}/{group.tasks} {GANG_UNSCHEDULABLE}: {fit_error}"}
        index = next((i for i, c in enumerate(conditions) if c.get("type") == PODGROUP_UNSCHEDULABLE), None)
        if index is None:
            conditions.append(condition)
        else:
            conditions[index] = condition
    if group.running and unschedulable:
        status["phase"] = "Unknown"
    else:
        status["phase"] = "Running" if group.allocated > group.min_member else "Pending"
    if conditions:
        status["conditions"] = conditions
    for key, count in (("running", group.running), ("succeeded", group.succeeded)):
        if count:
            status[key] = count
        else:
            status.pop(key, None)
    return status


class KubeBatch:
    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)

    def session(self, groups: Sequence[PodGroup], pods: Sequence[Pod]) -> SessionResult:
        """One session. `pods`: every pod of the groups and every pod holding a node (bound pods have `node`)."""
        result = SessionResult()
        placed = [p for p in pods if p.node is not None]
        members = {g.name: [p for p in pods if p.group == g.name] for g in groups}

        def ready(group: PodGroup) -> bool:
            return sum(1 for p in members[group.name] if p.node is not None) >= group.min_member

        for group in sorted(groups, key=lambda g: (-g.priority, ready(g), g.order, g.name)):
            self._allocate(group, members[group.name], placed, result)
        return result

    def _allocate(self, group: PodGroup, members: list[Pod], placed: list[Pod], result: SessionResult) -> None:
        pending = sorted((p for p in members if p.node is None), key=lambda p: (-p.priority, p.order))
        if not pending:
            return
        running = sum(1 for p in members if p.node is not None)
        allocated: list[tuple[Pod, str]] = []
        deltas: dict[str, Resources] = {}
        for pod in pending:
            deltas.clear()  # allocate.go: NodesFitDelta is reset for each task; the last task tried words the error
            node = self._best_node(pod, placed, deltas)
            if node is None:
                break  # allocate.go: a task that finds no node ends the group's turn ("the last processed")
            allocated.append((pod, node))
            placed.append(Pod(pod.uid, pod.name, pod.priority, pod.request, pod.order, node, pod.group))
        if running + len(allocated) >= group.min_member:
            result.binds.extend(allocated)
            return
        message = fit_error(deltas)
        result.held[group.name] = len(allocated)
        for pod in pending:
            result.unschedulable[pod.uid] = message

    def _best_node(self, pod: Pod, placed: list[Pod], deltas: dict[str, Resources]) -> str | None:
        best: tuple[int, str] | None = None
        for node in self.nodes:
            free = free_on(node, placed)
            if not pod.request.fits_in(free):
                deltas[node.name] = fit_delta(free, pod.request)
                continue
            points = score(node, scored_on(node.name, placed), pod.request)
            if best is None or points > best[0]:
                best = (points, node.name)
        return best[1] if best else None
