"""Node faults: when a node's Ready condition changed during the log, from the Node records a real cluster's watcher
writes (`hivedlab.backends.watcher`: each node when listed, then each change of its Ready condition), and what the
evidence shows of the pods on it meanwhile (docs/checker.md#node-faults). The simulator records no Node: its logs have
no fault.

HiveD counts a node bad while it is not Ready and healthy again once it is (docs/hived-config-and-cells.md); the log
shows that only where a pod's FailedScheduling event names the node in HiveD's words ("have to use at least one bad
node …"), which `bad_marks` collects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hivedlab.checker.judging.timeline.facts import Attempt, JobTimeline, Mark, Outage, Wait
from hivedlab.models.hived.config import node_name

_BAD_NODE = re.compile(r"at least one bad node (\S+)")


@dataclass
class NodeReadiness:
    """Folds Node records into outages, one record at a time."""

    ready: dict[str, bool] = field(default_factory=dict)  # node -> Ready as last recorded
    open: dict[str, Outage] = field(default_factory=dict)  # node -> the outage under way
    done: list[Outage] = field(default_factory=list)

    def feed(self, watch_type: str, node: dict[str, object], mark: Mark) -> None:
        meta = node.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not name or watch_type == "BOOKMARK":
            return
        name = str(name)
        status, reason = _ready_condition(node)
        ready = status == "True" and watch_type != "DELETED"
        known = self.ready.get(name)
        self.ready[name] = ready
        if not ready and name not in self.open:
            # not Ready when first seen: since before the log (no start); else it turned not Ready here
            self.open[name] = Outage(name, None if known is None else mark, None, status or "", reason)
        elif ready and name in self.open:
            self.done.append(_ended(self.open.pop(name), mark))

    def result(self) -> tuple[Outage, ...]:
        """The outages in which the node's Ready changed within the log (one not Ready from its first record to the
        end of the log never changed: it is no fault of the log's), in the order they began."""
        found = [*self.done, *(o for o in self.open.values() if o.start is not None)]
        return tuple(sorted(found, key=lambda o: (o.start.seq if o.start else -1, o.node)))


def _ended(outage: Outage, mark: Mark) -> Outage:
    return Outage(outage.node, outage.start, mark, outage.status, outage.reason)


def _ready_condition(node: dict[str, object]) -> tuple[str | None, str]:
    status = node.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return str(condition.get("status")), str(condition.get("reason") or "")
    return None, ""


def _within(outage: Outage, t: float) -> bool:
    return (outage.start is None or outage.start.t <= t) and (outage.end is None or t <= outage.end.t)


def on_node(outage: Outage, attempt: Attempt) -> bool:
    """Whether the pod sat on the node at some time in the outage: bound to it before the outage ended, not ended
    before it began."""
    if attempt.node != outage.node or attempt.bound is None:
        return False
    ended = attempt.ended
    return (outage.end is None or attempt.bound.seq <= outage.end.seq) and \
        (ended is None or outage.start is None or ended.seq >= outage.start.seq)


def bad_marks(outage: Outage, attempts: Iterable[Attempt]) -> tuple[tuple[Attempt, Wait], ...]:
    """The waits, during the outage, whose HiveD reason names the node as bad, each with its pod."""
    found = []
    for attempt in attempts:
        for wait in attempt.waits:
            named = _BAD_NODE.search(wait.message)
            if named and node_name(named.group(1)) == outage.node and _within(outage, wait.mark.t):
                found.append((attempt, wait))
    return tuple(sorted(found, key=lambda pair: pair[1].mark.seq))


def touched(outage: Outage, jobs: Iterable[JobTimeline]) -> tuple[tuple[JobTimeline, Attempt], ...]:
    """The pods the outage touched, as the evidence shows them: on the node during it, or waiting with HiveD's
    reason naming it bad."""
    found: dict[str, tuple[JobTimeline, Attempt]] = {}
    for job in jobs:
        for attempt in job.attempts:
            if on_node(outage, attempt) or bad_marks(outage, (attempt,)):
                found[attempt.uid] = (job, attempt)
    return tuple(found.values())
